//! The sled store's own tests (the contract both stores keep is in
//! `tests/store/contract.rs`).

use super::audit::head_of;
use super::proposals::PENDING_AT_CLOSE;
use super::*;
use crate::group::Turn;
use crate::prelude::*;
use crate::redo::{self, TreeId};
use crate::{AuditQuery, Commit};
use plangate_engine::{apply, Actor, AuditEvent, Command, Ctx, DecisionStatus, Plan, SessionKey, TimerPolicy, Timestamp, Verdict};
use std::sync::atomic::Ordering;

fn ctx(now: i64, r: u8) -> Ctx {
    Ctx {
        now: Timestamp(now),
        random: [r; 16],
        timers: TimerPolicy { nudges_ms: vec![600_000], timeout_ms: Some(86_400_000), ..TimerPolicy::default() },
        approvals: Default::default(),
    }
}

fn step(store: &SledStore, key: &SessionKey, actor: &Actor, command: Command, r: u8) -> Commit {
    let before = store.load(key).unwrap();
    let t = apply(&before, actor, command, &ctx(1000 + i64::from(r), r)).unwrap();
    Commit::of(&t, &before, None)
}

/// How a crash left an approve commit in the redo tree (see `redo`).
#[derive(Clone, Copy, Debug)]
enum CutShort {
    /// Both parts recorded, and the first writes made.
    BothParts,
    /// One whole record, as commits wrote it before records were split.
    Whole,
    /// Only the rest's part: the crash came before the chain's lock.
    RestOnly,
    /// Only the audit part: a damaged store (the rest always goes first).
    AuditOnly,
}

/// A session with a pending proposal whose approve commit `cut` left
/// behind; the store is closed (as by the crash) and its approval id returned.
fn approve_cut_short(dir: &std::path::Path, key: &SessionKey, cut: CutShort) -> plangate_engine::ApprovalId {
    use super::commit::{part_key, AUDIT_PART, REST_PART};
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    let store = SledStore::open(dir).unwrap();
    let c = step(&store, key, &Actor::Agent, Command::Enter { reason: None }, 1);
    store.commit(c).unwrap().written().unwrap();
    let plan = Command::Propose {
        plan: Plan::titled("p"),
        markdown: None,
        requested_by: None,
        harness: plangate_engine::Harness::Api,
        project: None,
    };
    store.commit(step(&store, key, &Actor::Agent, plan, 2)).unwrap().written().unwrap();
    let id = store.load(key).unwrap().latest.unwrap().approval_id;
    let c = step(&store, key, &alice, Command::Decide { approval_id: id, verdict: Verdict::Approve }, 3);
    let t = store.trees().unwrap();
    let events: Vec<_> = c.audit.iter().map(crate::chained::unsealed).collect();
    let (sealed, rest) = (t.sealed(&events, &mut head_of(&t).unwrap()).unwrap(), t.ops_of(&c, store.stripe(Some(key)).0).unwrap());
    match cut {
        CutShort::BothParts => {
            t.redo.insert(part_key(7, REST_PART), redo::encode(&rest)).unwrap();
            t.redo.insert(part_key(7, AUDIT_PART), redo::encode(&sealed)).unwrap();
        }
        CutShort::Whole => {
            t.redo.insert(7u64.to_be_bytes(), redo::encode_pair(&sealed, &rest)).unwrap();
        }
        CutShort::RestOnly => {
            t.redo.insert(part_key(7, REST_PART), redo::encode(&rest)).unwrap();
        }
        CutShort::AuditOnly => {
            t.redo.insert(part_key(7, AUDIT_PART), redo::encode(&sealed)).unwrap();
        }
    }
    if matches!(cut, CutShort::BothParts | CutShort::Whole) {
        // The commit dies after its records and its first writes (the
        // audit records, the proposal and its index entry): the session
        // and the timer removals never land.
        let ops: Vec<_> = sealed.into_iter().chain(rest).collect();
        assert!(ops.len() > 2 && ops.last().unwrap().tree == TreeId::Sessions);
        let proposal = ops.iter().position(|op| op.tree == TreeId::Proposals).unwrap();
        t.apply_ops(&ops[..=proposal]).unwrap();
        assert_eq!(store.proposal(&id).unwrap().unwrap().status, DecisionStatus::Approved);
        assert_eq!(store.load(key).unwrap().session.approval, plangate_engine::ApprovalState::Pending);
    }
    t.db.flush().unwrap();
    id
}

#[test]
fn a_commit_cut_short_by_a_crash_is_finished_on_open() {
    for cut in [CutShort::BothParts, CutShort::Whole] {
        let dir = tempfile::tempdir().unwrap();
        let key = SessionKey::new("demo", "s1");
        let id = approve_cut_short(dir.path(), &key, cut);
        let store = SledStore::open(dir.path()).unwrap();
        let state = store.load(&key).unwrap();
        assert_eq!(state.session.approval, plangate_engine::ApprovalState::Approved, "{cut:?}");
        assert_eq!(state.latest.unwrap().approval_id, id);
        assert!(store.timers().unwrap().is_empty(), "{cut:?}: the approval's timers were cancelled");
        assert_eq!(store.trees().unwrap().redo.len(), 0);
        let actions: Vec<String> = store.audit(&AuditQuery::default()).unwrap().into_iter().map(|e| e.action).collect();
        assert_eq!(actions, vec!["enter", "propose", "approve"], "{cut:?}");
        assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 0, "{cut:?}: the count moved with the replay");
    }
}

#[test]
fn a_commit_that_never_reached_the_chain_is_dropped_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("demo", "s1");
    let id = approve_cut_short(dir.path(), &key, CutShort::RestOnly);
    let store = SledStore::open(dir.path()).unwrap();
    let state = store.load(&key).unwrap();
    assert_eq!(state.session.approval, plangate_engine::ApprovalState::Pending, "nothing of the approve landed");
    assert_eq!(store.proposal(&id).unwrap().unwrap().status, DecisionStatus::Pending);
    assert_eq!(store.trees().unwrap().redo.len(), 0, "the lone part is dropped");
    let actions: Vec<String> = store.audit(&AuditQuery::default()).unwrap().into_iter().map(|e| e.action).collect();
    assert_eq!(actions, vec!["enter", "propose"]);
    assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 1, "nor did its move of the count");
    // The chain goes on from its last record: the approve, made again, lands whole.
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    store.commit(step(&store, &key, &alice, Command::Decide { approval_id: id, verdict: Verdict::Approve }, 3)).unwrap().written().unwrap();
    assert_eq!(store.load(&key).unwrap().session.approval, plangate_engine::ApprovalState::Approved);
    let records = crate::testing::audit_chain(&store);
    assert_eq!(records.len(), 3);
    for pair in records.windows(2) {
        assert_eq!((pair[1].seq, pair[1].prev), (pair[0].seq + 1, pair[0].hash), "no gap where the dropped commit would have been");
    }
    assert!(records.iter().all(|r| r.is_sealed()));
}

#[test]
fn an_audit_part_without_the_rest_of_its_commit_is_refused_on_open() {
    let dir = tempfile::tempdir().unwrap();
    approve_cut_short(dir.path(), &SessionKey::new("demo", "s1"), CutShort::AuditOnly);
    let err = SledStore::open(dir.path()).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("without the rest of its writes"), "{err}");
}

#[test]
fn concurrent_commits_share_flushes_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    std::thread::scope(|s| {
        for i in 0..16u8 {
            let store = &store;
            s.spawn(move || {
                let key = SessionKey::new("demo", format!("s{i}"));
                let c = step(store, &key, &Actor::Agent, Command::Enter { reason: None }, i);
                store.commit(c).unwrap().written().unwrap();
                let plan = Plan::titled(format!("plan {i}"));
                let c = step(
                    store,
                    &key,
                    &Actor::Agent,
                    Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
                    100 + i,
                );
                store.commit(c).unwrap().written().unwrap();
            });
        }
    });
    let stats = store.flush_stats();
    assert_eq!(stats.writes, 32);
    assert!(stats.flushes <= stats.writes);
    drop(store);
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.proposals(Some(DecisionStatus::Pending)).unwrap().len(), 16);
    assert_eq!(store.sessions().unwrap().len(), 16);
}

/// The newest recovery snapshot sled wrote under `db`: its file name is
/// `snap.<stable log offset in hex>`, the point a later open replays from.
fn newest_snapshot(db: &Path) -> u64 {
    std::fs::read_dir(db)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("snap.").and_then(|hex| u64::from_str_radix(hex, 16).ok()))
        .max()
        .unwrap_or(0)
}

#[test]
fn checkpoints_move_the_recovery_point_while_commits_run_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let opened_at = newest_snapshot(&dir.path().join("db"));
    // Every ~40 commits (once the last one is ten times its length behind),
    // while eight threads commit.
    store.set_checkpoint_after(64 * 1024);
    std::thread::scope(|s| {
        for thread in 0..8u16 {
            let store = &store;
            s.spawn(move || {
                for n in 0..40u16 {
                    let i = thread * 100 + n;
                    let key = SessionKey::new("demo", format!("s{i}"));
                    let ctx = |now: i64| Ctx {
                        now: Timestamp(now),
                        random: [(i >> 8) as u8, i as u8, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7],
                        timers: TimerPolicy { nudges_ms: vec![600_000], timeout_ms: Some(86_400_000), ..TimerPolicy::default() },
                        approvals: Default::default(),
                    };
                    let before = store.load(&key).unwrap();
                    let entered = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1000)).unwrap();
                    store.commit(Commit::of(&entered, &before, None)).unwrap().written().unwrap();
                    let plan = Plan { summary: Some("x".repeat(400)), ..Plan::titled(format!("plan {i}")) };
                    let propose = Command::Propose {
                        plan,
                        markdown: None,
                        requested_by: None,
                        harness: plangate_engine::Harness::Api,
                        project: None,
                    };
                    let proposed = apply(&entered.state, &Actor::Agent, propose, &ctx(2000)).unwrap();
                    store.commit(Commit::of(&proposed, &entered.state, None)).unwrap().written().unwrap();
                    store.mark_seen(&format!("event-{i}")).unwrap();
                }
            });
        }
    });
    assert!(store.checkpoints() >= 1, "checkpoints taken: {}", store.checkpoints());
    let moved_to = newest_snapshot(&dir.path().join("db"));
    assert!(moved_to > opened_at, "the recovery snapshot moved: {opened_at:#x} -> {moved_to:#x}");
    assert_eq!(store.proposals(Some(DecisionStatus::Pending)).unwrap().len(), 320);
    drop(store);
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.proposals(Some(DecisionStatus::Pending)).unwrap().len(), 320, "every commit survived the reopens");
    assert_eq!(store.sessions().unwrap().len(), 320);
    assert_eq!(store.timers().unwrap().len(), 640, "a nudge and a timeout each");
    assert!((0..8u16).flat_map(|t| (0..40u16).map(move |n| t * 100 + n)).all(|i| store.seen(&format!("event-{i}")).unwrap()));
}

/// A commit written while another flush is under way is handed back
/// unflushed, and is durable once `flushed` returns, whether a flush of its
/// own covered it or a checkpoint in between did (the checkpoint's flush
/// before it closes the database: no second flush). Alone, it is flushed
/// in place.
#[test]
fn an_unflushed_commit_is_durable_once_flushed_returns_or_a_checkpoint_covered_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<SledStore> = Arc::new(SledStore::open(dir.path()).unwrap());
    let (first, second, third) = (SessionKey::new("demo", "s1"), SessionKey::new("demo", "s2"), SessionKey::new("demo", "s3"));
    let enter = |key: &SessionKey, r| step(&store, key, &Actor::Agent, Command::Enter { reason: None }, r);
    // Another writer's flush, under way while the commits below are written.
    let under_way = |store: &SledStore| match store.group.turn(store.group.issue()) {
        Turn::Lead(target) => target,
        _ => panic!("nobody else flushes"),
    };

    let before = store.flush_stats();
    let (_, flush) = store.commit_numbered_unflushed(enter(&third, 3), Vec::new(), &mut |_| {}).unwrap();
    assert!(matches!(flush, crate::Flush::Done), "a commit alone is flushed in place");
    assert_eq!(store.flush_stats().flushes, before.flushes + 1);

    let other = under_way(&store);
    let (committed, flush) = store.commit_numbered_unflushed(enter(&first, 1), vec![b"work".to_vec()], &mut |_| {}).unwrap();
    let seqs = committed.written().unwrap();
    assert_eq!(seqs.len(), 1);
    assert!(matches!(flush, crate::Flush::Pending(_)), "beside a flush, the flush is the caller's to await");
    store.group.finish(other, true);
    let before = store.flush_stats();
    runtime.block_on(crate::flushed(store.clone(), flush)).unwrap();
    assert_eq!(store.flush_stats().flushes, before.flushes + 1, "the other flush began before it: its waiter led one");

    let other = under_way(&store);
    let (_, flush) = store.commit_numbered_unflushed(enter(&second, 2), Vec::new(), &mut |_| {}).unwrap();
    assert!(matches!(flush, crate::Flush::Pending(_)));
    store.group.finish(other, true);
    store.checkpoint().unwrap();
    let before = store.flush_stats();
    runtime.block_on(crate::flushed(store.clone(), flush)).unwrap();
    assert_eq!(store.flush_stats().flushes, before.flushes, "the checkpoint's flush covered it");

    drop(store);
    let store = SledStore::open(dir.path()).unwrap();
    for key in [&first, &second, &third] {
        assert_eq!(store.load(key).unwrap().session.mode, plangate_engine::Mode::Plan);
    }
    assert_eq!(store.outbox().unwrap().len(), 1);
}

/// Commits waited for asynchronously, blocking writers (audit appends) and
/// checkpoints, all at once, all finish: whoever leads a flush holds the
/// open database from before it claims the lead, so a checkpoint waiting
/// for the write lock never stands between a leader and its waiters. (A
/// first version let an asynchronous waiter claim the lead and then ask
/// for the database: a blocking writer holding it waited for that leader,
/// the leader queued behind the checkpoint, the checkpoint behind the
/// writer.) A hang is reported after a minute instead of hanging the run.
#[test]
fn async_commits_blocking_writers_and_checkpoints_never_wait_on_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<SledStore> = Arc::new(SledStore::open(dir.path()).unwrap());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let worker = {
        let store = store.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let checkpoints = {
                let (store, stop) = (store.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        store.checkpoint().unwrap();
                    }
                })
            };
            let writers: Vec<_> = (0..4)
                .map(|w| {
                    let store = store.clone();
                    std::thread::spawn(move || {
                        for i in 0..100 {
                            let event = AuditEvent {
                                at: Timestamp(i),
                                agent: "demo".into(),
                                session_id: format!("w{w}"),
                                actor: "test".into(),
                                action: "note".into(),
                                approval_id: None,
                                version: None,
                                detail: String::new(),
                            };
                            store.append_audit(&[event]).unwrap();
                        }
                    })
                })
                .collect();
            runtime.block_on(async {
                let tasks: Vec<_> = (0..16)
                    .map(|s| {
                        let store = store.clone();
                        tokio::spawn(async move {
                            let key = SessionKey::new("demo", format!("s{s}"));
                            for _ in 0..25 {
                                let (store2, key2) = (store.clone(), key.clone());
                                let flush = tokio::task::spawn_blocking(move || {
                                    let before = store2.load(&key2).unwrap();
                                    let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 1)).unwrap();
                                    let commit = Commit::of(&t, &before, None);
                                    store2.commit_numbered_unflushed(commit, Vec::new(), &mut |_| {}).unwrap().1
                                })
                                .await
                                .unwrap();
                                let dyn_store: Arc<dyn crate::Store> = store.clone();
                                crate::flushed(dyn_store, flush).await.unwrap();
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.unwrap();
                }
            });
            writers.into_iter().for_each(|w| w.join().unwrap());
            stop.store(true, Ordering::Relaxed);
            checkpoints.join().unwrap();
            done_tx.send(()).unwrap();
        })
    };
    done_rx.recv_timeout(std::time::Duration::from_secs(60)).expect("commits, writers and checkpoints deadlocked");
    worker.join().unwrap();
    assert!(store.checkpoints() > 0);
}

/// The pending count as the status index has it (what a start counted
/// before schema 5).
fn pending_in_index(store: &SledStore) -> u64 {
    let t = store.trees().unwrap();
    t.by_status.scan_prefix(super::keys::status_prefix(DecisionStatus::Pending)).count() as u64
}

fn propose(store: &SledStore, key: &SessionKey, title: &str, r: u8) {
    let command = Command::Propose {
        plan: Plan::titled(title),
        markdown: None,
        requested_by: None,
        harness: plangate_engine::Harness::Api,
        project: None,
    };
    store.commit(step(store, key, &Actor::Agent, command, r)).unwrap().written().unwrap();
}

fn decide(store: &SledStore, key: &SessionKey, verdict: Verdict, r: u8) {
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    let id = store.load(key).unwrap().latest.unwrap().approval_id;
    store.commit(step(store, key, &alice, Command::Decide { approval_id: id, verdict }, r)).unwrap().written().unwrap();
}

/// Proposals in 40 sessions (spread over the stripes), superseded, approved,
/// rejected; reopened and checkpointed: the kept count is the index's.
#[test]
fn the_pending_count_is_kept_by_the_commits_that_change_it() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<SessionKey> = (0..40).map(|i| SessionKey::new("demo", format!("s{i}"))).collect();
    {
        let store = SledStore::open(dir.path()).unwrap();
        assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 0, "a new store");
        // Approval ids are the context's random bytes: one `r` per proposal.
        for (i, key) in (0u8..).zip(&keys) {
            store.commit(step(&store, key, &Actor::Agent, Command::Enter { reason: None }, 1)).unwrap().written().unwrap();
            propose(&store, key, "v1", 10 + i);
        }
        assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 40);
        // A second version supersedes the first: still one pending each.
        for (i, key) in (0u8..).zip(&keys[..10]) {
            propose(&store, key, "v2", 60 + i);
        }
        assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 40);
        for key in &keys[10..25] {
            decide(&store, key, Verdict::Approve, 110);
        }
        for key in &keys[25..30] {
            decide(&store, key, Verdict::Revise("not this way".into()), 110);
        }
        assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 20);
        assert_eq!(pending_in_index(&store), 20);
        store.checkpoint().unwrap();
        assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 20, "after a checkpoint's reopen");
        let shares = store.trees().unwrap().meta.scan_prefix(super::keys::PENDING_SHARE_PREFIX).count();
        assert!(shares > 5, "the sessions' commits moved {shares} stripes' shares");
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 20, "after a reopen");
    assert_eq!(store.count_proposals(DecisionStatus::Approved).unwrap(), 15, "other statuses are counted in the index");
}

/// A schema 4 database (no shares, maybe a clean shutdown's note) is
/// counted once when it is opened, and says schema 5 after.
#[test]
fn a_schema_4_store_is_counted_once_on_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        for i in 0..7u8 {
            let key = SessionKey::new("demo", format!("s{i}"));
            store.commit(step(&store, &key, &Actor::Agent, Command::Enter { reason: None }, 1)).unwrap().written().unwrap();
            propose(&store, &key, "p", 10 + i);
        }
        decide(&store, &SessionKey::new("demo", "s0"), Verdict::Approve, 30);
        // What schema 4 left: no shares, a note, version 4.
        let t = store.trees().unwrap();
        for key in t.meta.scan_prefix(super::keys::PENDING_SHARE_PREFIX).keys() {
            t.meta.remove(key.unwrap()).unwrap();
        }
        t.meta.insert(PENDING_AT_CLOSE, &99u64.to_be_bytes()).unwrap();
        t.meta.insert("schema_version", "4").unwrap();
        t.db.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 6);
    let t = store.trees().unwrap();
    assert_eq!(t.meta.get("schema_version").unwrap().as_deref(), Some(SCHEMA_VERSION.as_bytes()));
    assert_eq!(SCHEMA_VERSION, "5");
    assert!(t.meta.get(PENDING_AT_CLOSE).unwrap().is_none(), "the note is gone");
    drop(t);
    decide(&store, &SessionKey::new("demo", "s1"), Verdict::Approve, 31);
    assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 5, "the commits keep it from there");
}

/// A share that is not eight bytes is a damaged store, said so: never a
/// guess at the count.
#[test]
fn a_damaged_share_is_an_error_not_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    store.trees().unwrap().meta.insert(super::keys::pending_share_key(3), &[1u8, 2, 3]).unwrap();
    let err = store.count_proposals(DecisionStatus::Pending).unwrap_err().to_string();
    assert!(err.contains("damaged"), "{err}");
}

/// What a session does next in the property test below.
#[derive(Debug, Clone, Copy)]
enum Move {
    Propose,
    Approve,
    Revise,
    Cancel,
    Off,
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Whatever the engine commits, in whatever order across sessions, the
    /// kept count is the index's count: after every commit, and after a
    /// reopen.
    #[test]
    fn the_kept_pending_count_is_always_the_index_count(
        moves in proptest::collection::vec((0usize..6, proptest::prop_oneof![
            proptest::strategy::Just(Move::Propose),
            proptest::strategy::Just(Move::Approve),
            proptest::strategy::Just(Move::Revise),
            proptest::strategy::Just(Move::Cancel),
            proptest::strategy::Just(Move::Off),
        ]), 1..60)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(dir.path()).unwrap();
        let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
        for (i, (session, m)) in (1u8..).zip(&moves) {
            let key = SessionKey::new("demo", format!("s{session}"));
            let before = store.load(&key).unwrap();
            let latest = before.latest.as_ref().map(|p| p.approval_id);
            let (actor, command) = match (m, latest) {
                (Move::Propose, _) => (Actor::Agent, Command::Propose {
                    plan: Plan::titled("p"),
                    markdown: None,
                    requested_by: None,
                    harness: plangate_engine::Harness::Api,
                    project: None,
                }),
                (Move::Approve, Some(id)) => (alice.clone(), Command::Decide { approval_id: id, verdict: Verdict::Approve }),
                (Move::Revise, Some(id)) => (alice.clone(), Command::Decide { approval_id: id, verdict: Verdict::Revise("again".into()) }),
                (Move::Cancel, Some(id)) => (alice.clone(), Command::CancelApproval(id)),
                (Move::Off, _) => (Actor::Agent, Command::Off),
                (_, None) => (Actor::Agent, Command::Enter { reason: None }),
            };
            // A refused command commits nothing; the count must not move either.
            if let Ok(t) = apply(&before, &actor, command, &ctx(1000 + i64::from(i), i)) {
                store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
            }
            proptest::prop_assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), pending_in_index(&store));
        }
        let counted = store.count_proposals(DecisionStatus::Pending).unwrap();
        drop(store);
        let store = SledStore::open(dir.path()).unwrap();
        proptest::prop_assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), counted);
        proptest::prop_assert_eq!(counted, pending_in_index(&store));
    }
}
