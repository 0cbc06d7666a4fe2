//! What only the PostgreSQL store has: several processes on one schema.
//! Two `PgStore`s in one test process stand for two replicas (each has its
//! own pool, replica id, listener and leader connections).

use crate::common::{admin, ctx, eventually, holds_for, propose, propose_storing_every_timer, TestSchema};
use plangate_engine::{apply, Actor, Command, Plan, SessionKey, Timestamp};
use plangate_store::prelude::*;
use plangate_store::{Commit, Committed, OutboxEntry, PgOptions, PgStore, Preempted, StoreError};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

/// Two replicas append at once, from several threads each, alone and in
/// transitions' commits: one chain, numbered without a gap, no record
/// linked to twice, and it verifies.
#[test]
fn two_replicas_appending_at_once_share_one_chain_without_gaps_or_forks() {
    let Some(db) = TestSchema::new() else { return };
    let stores = [Arc::new(db.open()), Arc::new(db.open())];
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let store = stores[i % 2].clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for n in 0..25 {
                    let event = plangate_engine::AuditEvent {
                        at: Timestamp(n),
                        agent: "demo".into(),
                        session_id: format!("t{i}"),
                        actor: "agent".into(),
                        action: "test".into(),
                        approval_id: None,
                        version: None,
                        detail: format!("{i}/{n}"),
                    };
                    if n % 2 == 0 {
                        store.append_audit(&[event.clone(), event]).unwrap();
                    } else {
                        store.commit(Commit { audit: vec![event], ..Commit::default() }).unwrap().written().unwrap();
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let records = crate::common::audit_chain(&*stores[1]);
    let expected = 8 * (13 * 2 + 12);
    assert_eq!(records.len(), expected);
    assert!(records.iter().enumerate().all(|(i, r)| r.seq == i as u64 + 1), "numbered 1.. without a gap");
    plangate_audit::verify(&records, &[], None).unwrap();
    assert_eq!(stores[0].audit_head().unwrap().map(|h| h.0), Some(expected as u64));
}

#[test]
fn revisions_count_commits_and_a_new_session_starts_at_zero() {
    let Some(db) = TestSchema::new() else { return };
    let store = db.open();
    let key = SessionKey::new("demo", "rev");
    let (state, revision) = store.load_revision(&key).unwrap();
    assert_eq!((state.session.version, revision), (0, 0));
    let t = apply(&state, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 1)).unwrap();
    store.commit(Commit { expected_revision: Some(0), ..Commit::of(&t, &state, None) }).unwrap().written().unwrap();
    assert_eq!(store.load_revision(&key).unwrap().1, 1);
    // Unconditional commits count too.
    let (state, _) = store.load_revision(&key).unwrap();
    store.commit(Commit { session: Some(state.session.clone()), ..Commit::default() }).unwrap().written().unwrap();
    assert_eq!(store.load_revision(&key).unwrap().1, 2);
    // A stale revision writes nothing.
    let refused = store.commit(Commit { session: Some(state.session), expected_revision: Some(1), ..Commit::default() }).unwrap();
    assert_eq!(refused, Committed::Preempted(Preempted::Conflict));
    assert_eq!(store.load_revision(&key).unwrap().1, 2);
    assert!(store.shared());
}

/// Two replicas apply different transitions to the same loaded revision at
/// the same moment: exactly one lands, the other writes nothing.
#[test]
fn racing_commits_on_one_revision_one_wins_one_conflicts() {
    let Some(db) = TestSchema::new() else { return };
    let (a, b) = (db.open(), db.open());
    assert_ne!(a.replica_id(), b.replica_id());
    let key = SessionKey::new("demo", "race");
    // Twice: a session that does not exist yet (revision 0), then an existing one.
    for round in 0..2u8 {
        let mut commits = Vec::new();
        for (store, r) in [(&a, 10 + round * 2), (&b, 11 + round * 2)] {
            let (before, revision) = store.load_revision(&key).unwrap();
            let command = if round == 0 {
                Command::Enter { reason: Some(format!("by {r}")) }
            } else {
                Command::Propose {
                    plan: Plan::titled(format!("plan {r}")),
                    markdown: None,
                    requested_by: None,
                    harness: plangate_engine::Harness::Api,
                    project: None,
                }
            };
            let t = apply(&before, &Actor::Agent, command, &ctx(100, r)).unwrap();
            commits.push(Commit { expected_revision: Some(revision), ..Commit::of(&t, &before, None) });
        }
        let barrier = Barrier::new(2);
        let results: Vec<Result<Committed, StoreError>> = std::thread::scope(|s| {
            let handles: Vec<_> = [&a, &b]
                .into_iter()
                .zip(commits)
                .map(|(store, commit)| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        store.commit(commit)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok = results.iter().filter(|r| matches!(r, Ok(Committed::Written(())))).count();
        let conflicts = results.iter().filter(|r| matches!(r, Ok(Committed::Preempted(Preempted::Conflict)))).count();
        assert_eq!((ok, conflicts), (1, 1), "round {round}: {results:?}");
        assert_eq!(a.load_revision(&key).unwrap().1, u64::from(round) + 1);
    }
    // The loser's proposal was not written.
    assert_eq!(a.proposals(None).unwrap().len(), 1);
    assert_eq!(a.audit(&Default::default()).unwrap().len(), 2, "one enter, one propose");
}

/// A timer fires once across replicas: the second commit that fired it
/// finds it gone and writes nothing. An event key is handled once.
#[test]
fn a_fired_timer_and_an_event_key_are_handled_once() {
    let Some(db) = TestSchema::new() else { return };
    let (a, b) = (db.open(), db.open());
    let key = SessionKey::new("demo", "once");
    propose(&a, &key, 5);
    let nudge = a.due_timers(Timestamp(601_000)).unwrap().remove(0);
    let fire = |store: &PgStore| {
        let (before, revision) = store.load_revision(&key).unwrap();
        let t = apply(&before, &Actor::Scheduler, Command::TimerFired(nudge.clone()), &ctx(601_000, 9)).unwrap();
        Commit { expected_revision: Some(revision), ..Commit::of(&t, &before, Some(&nudge)) }
    };
    a.commit(fire(&a)).unwrap().written().unwrap();
    let revision = b.load_revision(&key).unwrap().1;
    assert_eq!(b.commit(fire(&b)).unwrap(), Committed::Preempted(Preempted::TimerGone));
    assert_eq!(b.load_revision(&key).unwrap().1, revision, "nothing was written");

    let keyed = |store: &PgStore| {
        let (before, revision) = store.load_revision(&key).unwrap();
        let mut s = before.session.clone();
        s.updated_at = Timestamp(before.session.updated_at.0 + 1);
        Commit { session: Some(s), expected_revision: Some(revision), idempotency: vec!["telegram:update:1".into()], ..Commit::default() }
    };
    a.commit(keyed(&a)).unwrap().written().unwrap();
    let revision = b.load_revision(&key).unwrap().1;
    match b.commit(keyed(&b)) {
        Ok(Committed::Preempted(Preempted::AlreadyHandled(k))) => assert_eq!(k, "telegram:update:1"),
        other => panic!("expected AlreadyHandled, got {other:?}"),
    }
    assert_eq!(b.load_revision(&key).unwrap().1, revision, "nothing was written");
    assert!(b.seen("telegram:update:1").unwrap());
}

#[test]
fn record_once_is_true_exactly_once_across_replicas() {
    let Some(db) = TestSchema::new() else { return };
    let (a, b) = (db.open(), db.open());
    let wins = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for store in [&a, &b, &a, &b] {
            let wins = &wins;
            s.spawn(move || {
                for i in 0..25 {
                    if store.record_once(&format!("nudge:{i}")).unwrap() {
                        wins.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(wins.load(Ordering::Relaxed), 25);
}

/// Due timers are leased: two replicas claim disjoint sets; when a lease
/// runs out (its holder died) the other claims the timers; a renewed lease
/// holds.
#[test]
fn due_timers_are_claimed_by_one_replica_until_the_lease_runs_out() {
    let Some(db) = TestSchema::new() else { return };
    // Margins of 500 ms around each lease edge: at 600 ms with 200 ms
    // margins a loaded CI machine (4 builds on 2 cores) missed one.
    let lease = Duration::from_millis(1500);
    let a = PgStore::open(&db.options_with_lease(lease)).unwrap();
    let b = PgStore::open(&db.options_with_lease(lease)).unwrap();
    for r in 1..=5u8 {
        propose_storing_every_timer(&a, &SessionKey::new("demo", format!("s{r}")), r);
    }
    let now = Timestamp(1_801_000);
    let all = a.due_timers(now).unwrap();
    assert_eq!(all.len(), 10);

    let mine = a.claim_due_timers(now, None, 4).unwrap();
    assert_eq!(mine, all[..4], "the earliest, in order");
    let theirs = b.claim_due_timers(now, None, 100).unwrap();
    assert_eq!(theirs, all[4..], "the rest, none of a's");
    assert!(b.claim_due_timers(now, None, 100).unwrap() == theirs, "a replica's own claims come back to it");
    assert_eq!(a.claim_due_timers(now, None, 100).unwrap(), mine);
    // next_timer skips timers another live replica holds.
    assert_eq!(a.next_timer().unwrap().as_ref(), all.first());
    assert_eq!(b.next_timer().unwrap().as_ref(), all.get(4));
    // The listings ignore leases.
    assert_eq!(b.due_timers(now).unwrap(), all);

    // a renews half way through its lease; b cannot take a's timers
    // meanwhile, nor after the original lease.
    let not_a_s = || b.claim_due_timers(now, None, 100).unwrap().iter().all(|t| !mine.contains(t));
    assert!(holds_for(Duration::from_millis(750), not_a_s), "a's lease holds");
    a.renew_leases().unwrap();
    assert!(holds_for(Duration::from_millis(1000), not_a_s), "a renewed its lease");
    // a stops renewing (it died): after its lease b claims its timers too.
    assert!(eventually(Duration::from_secs(5), || b.claim_due_timers(now, None, 100).unwrap() == all), "b took a's timers over");
    assert!(a.claim_due_timers(now, None, 100).unwrap().is_empty(), "b holds them all now");
    // Paging after a timer works on claims too.
    assert_eq!(b.claim_due_timers(now, Some(&all[7]), 100).unwrap(), all[8..]);
}

/// Outbox entries are written leased to the committing replica; others
/// claim them only when that lease runs out, each entry to one replica.
#[test]
fn outbox_entries_go_to_one_replica_and_move_when_it_dies() {
    let Some(db) = TestSchema::new() else { return };
    // Margins of 500 ms around each lease edge: at 600 ms with 200 ms
    // margins a loaded CI machine (4 builds on 2 cores) missed one.
    let lease = Duration::from_millis(1500);
    let a = PgStore::open(&db.options_with_lease(lease)).unwrap();
    let b = PgStore::open(&db.options_with_lease(lease)).unwrap();
    let seqs: Vec<u64> = (0..6).map(|_| a.generate_seq().unwrap()).collect();
    let entries: Vec<_> = seqs.iter().map(|&seq| OutboxEntry { seq, work: seq.to_be_bytes().to_vec() }).collect();
    a.commit(Commit { outbox: entries.clone(), ..Commit::default() }).unwrap().written().unwrap();
    assert!(b.claim_outbox(100).unwrap().is_empty(), "a holds its own work");
    assert!(a.claim_outbox(100).unwrap().is_empty(), "a runs it after the commit, not through claims");
    assert_eq!(b.outbox().unwrap(), entries);

    assert!(holds_for(Duration::from_millis(750), || b.claim_outbox(100).unwrap().is_empty()), "a's lease holds");
    a.renew_leases().unwrap();
    assert!(holds_for(Duration::from_millis(1000), || b.claim_outbox(100).unwrap().is_empty()), "a renewed its lease");

    // a stops renewing (it died): after its lease b claims its entries.
    let mut first = Vec::new();
    assert!(eventually(Duration::from_secs(5), || {
        first = b.claim_outbox(4).unwrap();
        !first.is_empty()
    }));
    assert_eq!(first, entries[..4], "oldest first");
    let (from_a, from_b) = std::thread::scope(|s| {
        let x = s.spawn(|| a.claim_outbox(100).unwrap());
        let y = s.spawn(|| b.claim_outbox(100).unwrap());
        (x.join().unwrap(), y.join().unwrap())
    });
    let mut got: Vec<u64> = from_a.iter().chain(&from_b).map(|e| e.seq).collect();
    got.sort();
    assert_eq!(got, seqs[4..], "the rest, each to one replica");
    for e in &first {
        b.remove_outbox(e.seq).unwrap();
    }
    assert_eq!(a.outbox().unwrap().len(), 2);
}

/// A replica started after its predecessor died takes the dead one's work
/// over at once (not after the lease, a minute here); while the
/// predecessor is connected, its leases stay its own.
#[test]
fn a_successor_takes_over_a_dead_replicas_leases_at_once_and_a_live_ones_never() {
    let Some(db) = TestSchema::new() else { return };
    let lease = Duration::from_secs(60);
    let a = PgStore::open(&db.options_with_lease(lease)).unwrap();
    let b = PgStore::open(&db.options_with_lease(lease)).unwrap();
    let seqs: Vec<u64> = (0..6).map(|_| a.generate_seq().unwrap()).collect();
    let entries: Vec<_> = seqs.iter().map(|&seq| OutboxEntry { seq, work: seq.to_be_bytes().to_vec() }).collect();
    a.commit(Commit { outbox: entries.clone(), ..Commit::default() }).unwrap().written().unwrap();
    let key = SessionKey::new("demo", "s");
    propose_storing_every_timer(&a, &key, 1);
    assert!(!a.claim_due_timers(Timestamp(i64::MAX / 2), None, 100).unwrap().is_empty(), "a leases the due timers");

    let alive = b.take_over_from(a.replica_id(), 1, Duration::ZERO).unwrap();
    assert_eq!((alive.alive, alive.outbox, alive.timers), (true, 0, 0));
    assert!(b.claim_outbox(100).unwrap().is_empty(), "a live replica keeps its work");
    assert!(b.claim_due_timers(Timestamp(i64::MAX / 2), None, 100).unwrap().is_empty());

    let gone = a.replica_id().to_string();
    drop(a);
    let taken = b.take_over_from(&gone, 40, Duration::from_millis(100)).unwrap();
    assert!(!taken.alive, "a's connections closed with it");
    assert_eq!(taken.outbox, 6);
    assert!(taken.timers > 0);
    assert_eq!(b.claim_outbox(100).unwrap(), entries, "the dead replica's work, at once");
    assert!(!b.claim_due_timers(Timestamp(i64::MAX / 2), None, 100).unwrap().is_empty());
}

/// Paging through the outbox: a replica gets its own entries (however
/// often it renews them) and free ones, leased to it; another replica's
/// only once that one's lease ran out.
#[test]
fn outbox_pages_are_the_replicas_own_entries_and_free_ones() {
    let Some(db) = TestSchema::new() else { return };
    let lease = Duration::from_millis(1500);
    let a = PgStore::open(&db.options_with_lease(lease)).unwrap();
    let b = PgStore::open(&db.options_with_lease(lease)).unwrap();
    let seqs = a.generate_seqs(4).unwrap();
    let entries: Vec<_> = seqs.iter().map(|&seq| OutboxEntry { seq, work: seq.to_be_bytes().to_vec() }).collect();
    a.commit(Commit { outbox: entries[..2].to_vec(), ..Commit::default() }).unwrap().written().unwrap();
    b.commit(Commit { outbox: entries[2..].to_vec(), ..Commit::default() }).unwrap().written().unwrap();
    assert_eq!(a.claim_outbox_page(None, 10).unwrap(), entries[..2], "a's own, not b's");
    assert_eq!(b.claim_outbox_page(Some(seqs[0]), 10).unwrap(), entries[2..], "b's own, after a seq");
    assert!(a.claim_outbox(10).unwrap().is_empty(), "nobody's entries are free");

    // a renews its lease, b does not (it died): a takes b's over, and b's
    // entries are a's from then on.
    assert!(holds_for(Duration::from_millis(750), || a.claim_outbox(10).unwrap().is_empty()), "b's lease holds");
    a.renew_leases().unwrap();
    let mut page = Vec::new();
    assert!(eventually(Duration::from_secs(5), || {
        page = a.claim_outbox_page(Some(seqs[0]), 10).unwrap();
        page.len() > 1
    }));
    assert_eq!(page, entries[1..], "a's own and b's abandoned ones, in order");
    assert!(b.claim_outbox_page(None, 10).unwrap().is_empty(), "a holds them all now");
    assert!(b.claim_outbox(10).unwrap().is_empty());
}

/// A commit of one replica reaches the change listener of another.
#[test]
fn changes_of_one_replica_wake_the_listeners_of_another() {
    let Some(db) = TestSchema::new() else { return };
    let (a, b) = (db.open(), db.open());
    let heard: Arc<Mutex<Vec<Option<SessionKey>>>> = Arc::default();
    let sink = heard.clone();
    b.subscribe_changes(Arc::new(move |key| sink.lock().unwrap().push(key))).unwrap();
    assert!(eventually(Duration::from_secs(5), || heard.lock().unwrap().contains(&None)), "connected: everyone woken once");
    let key = SessionKey::new("demo", "wake me");
    propose(&a, &key, 3);
    assert!(
        eventually(Duration::from_secs(5), || heard.lock().unwrap().contains(&Some(key.clone()))),
        "heard: {:?}",
        heard.lock().unwrap()
    );
    // A refused commit notifies nobody.
    let before = heard.lock().unwrap().len();
    let other = SessionKey::new("demo", "refused");
    let (state, _) = a.load_revision(&other).unwrap();
    let refused = a.commit(Commit { session: Some(state.session), expected_revision: Some(7), ..Commit::default() }).unwrap();
    assert_eq!(refused, Committed::Preempted(Preempted::Conflict));
    assert!(holds_for(Duration::from_millis(300), || !heard.lock().unwrap()[before..].contains(&Some(other.clone()))));
}

/// Commits side by side: all of them heard, those that did not notify in
/// their own transaction through the notifier; its connection dropped, the
/// commits after it are heard all the same (sent again on a new one).
#[test]
fn commits_side_by_side_are_heard_and_survive_the_notifiers_lost_connection() {
    let Some(db) = TestSchema::new() else { return };
    let (a, b) = (db.open(), db.open());
    let heard: Arc<Mutex<Vec<Option<SessionKey>>>> = Arc::default();
    let sink = heard.clone();
    b.subscribe_changes(Arc::new(move |key| sink.lock().unwrap().push(key))).unwrap();
    assert!(eventually(Duration::from_secs(5), || heard.lock().unwrap().contains(&None)));
    // One commit per session, eight at once: each key is heard once only
    // if that commit's own notification arrives.
    let side_by_side = |round: &str| {
        let keys: Vec<SessionKey> = (0..8).map(|i| SessionKey::new("demo", format!("{round} {i}"))).collect();
        let start = Barrier::new(keys.len());
        std::thread::scope(|s| {
            for key in &keys {
                let (a, start) = (&a, &start);
                s.spawn(move || {
                    let session = a.load(key).unwrap().session;
                    start.wait();
                    a.commit(Commit { session: Some(session), ..Commit::default() }).unwrap().written().unwrap();
                });
            }
        });
        let all_heard = || keys.iter().all(|k| heard.lock().unwrap().contains(&Some(k.clone())));
        assert!(eventually(Duration::from_secs(10), all_heard), "{round}: heard {:?}", heard.lock().unwrap());
    };
    let notifier = format!("plangate notifier {}", a.replica_id());
    let connected = |admin: &mut postgres::Client| {
        let sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = left($1, 63)";
        admin.query_one(sql, &[&notifier]).unwrap().get::<_, i64>(0) == 1
    };
    let mut admin = admin();
    // Eight sessions committing at once: some commits overlap and go
    // through the notifier (which connects then).
    for round in 0..20 {
        side_by_side(&format!("before {round}"));
        if connected(&mut admin) {
            break;
        }
    }
    assert!(connected(&mut admin), "commits side by side use the notifier");
    let sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = left($1, 63)";
    assert_eq!(admin.execute(sql, &[&notifier]).unwrap(), 1);
    for round in 0..3 {
        side_by_side(&format!("after {round}"));
    }
    a.flush().unwrap();
}

/// The listener's connection dropped: it reconnects and says changes may
/// have been missed.
#[test]
fn a_listener_that_lost_its_connection_reconnects_and_wakes_everyone() {
    let Some(db) = TestSchema::new() else { return };
    let store = db.open();
    let nones = Arc::new(AtomicUsize::new(0));
    let count = nones.clone();
    store
        .subscribe_changes(Arc::new(move |key| {
            if key.is_none() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .unwrap();
    assert!(eventually(Duration::from_secs(5), || nones.load(Ordering::SeqCst) == 1));
    let mut admin = admin();
    let killed = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = left($1, 63)",
            &[&format!("plangate listener {}", store.replica_id())],
        )
        .unwrap();
    assert_eq!(killed, 1);
    assert!(eventually(Duration::from_secs(5), || nones.load(Ordering::SeqCst) >= 3), "lost (1) and reconnected (1)");
    let key = SessionKey::new("demo", "after");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    store.subscribe_changes(Arc::new(move |k| sink.lock().unwrap().push(k))).unwrap();
    assert!(eventually(Duration::from_secs(5), || heard.lock().unwrap().contains(&None)));
    // Another replica's commit is heard; this store's own is not (the
    // process that committed woke its waiters itself).
    let own = SessionKey::new("demo", "own");
    propose(&store, &own, 2);
    propose(&db.open(), &key, 1);
    assert!(eventually(Duration::from_secs(5), || heard.lock().unwrap().contains(&Some(key.clone()))));
    assert!(!heard.lock().unwrap().contains(&Some(own)), "its own commit is skipped");
}

struct Candidate {
    store: Option<PgStore>,
    leading: Arc<Mutex<bool>>,
    changes: Arc<AtomicUsize>,
}

fn candidate(db: &TestSchema, role: &str) -> Candidate {
    let store = db.open();
    let leading = Arc::new(Mutex::new(false));
    let changes = Arc::new(AtomicUsize::new(0));
    let (flag, count) = (leading.clone(), changes.clone());
    store
        .elect_leader(
            role,
            Arc::new(move |now| {
                *flag.lock().unwrap() = now;
                count.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    Candidate { store: Some(store), leading, changes }
}

fn leaders(cs: &[&Candidate]) -> Vec<usize> {
    cs.iter().enumerate().filter(|(_, c)| *c.leading.lock().unwrap()).map(|(i, _)| i).collect()
}

/// The pid of the connection holding the leader lock of `role`.
fn lock_holder(db: &TestSchema, role: &str) -> Option<i32> {
    let row = admin()
        .query_opt(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 \
             AND classid = hashtext($1)::oid AND objid = hashtext($2)::oid",
            &[&db.schema, &role],
        )
        .unwrap();
    row.map(|r| r.get(0))
}

/// Exactly one of two replicas leads a role; when the leader's connection
/// is cut (what a SIGKILL does), the other takes over within seconds.
#[test]
fn one_leader_and_a_takeover_when_its_connection_dies() {
    let Some(db) = TestSchema::new() else { return };
    let role = "telegram";
    let (a, b) = (candidate(&db, role), candidate(&db, role));
    assert!(eventually(Duration::from_secs(3), || leaders(&[&a, &b]).len() == 1));
    // And it stays that way.
    assert!(holds_for(Duration::from_secs(1), || leaders(&[&a, &b]).len() == 1), "{:?}", leaders(&[&a, &b]));
    let first = leaders(&[&a, &b])[0];
    // Another role is elected on its own.
    let c = candidate(&db, "slack");
    assert!(eventually(Duration::from_secs(3), || *c.leading.lock().unwrap()));

    let pid = lock_holder(&db, role).expect("the leader holds the lock");
    let started = std::time::Instant::now();
    assert!(admin().query_one("SELECT pg_terminate_backend($1)", &[&pid]).unwrap().get::<_, bool>(0));
    let other = 1 - first;
    assert!(eventually(Duration::from_secs(3), || leaders(&[&a, &b]) == vec![other]), "took over: {:?}", leaders(&[&a, &b]));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(lock_holder(&db, role).is_some_and(|p| p != pid));
    let old = [&a, &b][first];
    assert!(old.changes.load(Ordering::SeqCst) >= 2, "the old leader was told it stopped leading");
    // The old leader competes again and stays a follower.
    assert!(holds_for(Duration::from_millis(1500), || leaders(&[&a, &b]) == vec![other]), "{:?}", leaders(&[&a, &b]));
}

/// A replica that goes away (its store dropped) hands the role over.
#[test]
fn dropping_the_leader_hands_the_role_over() {
    let Some(db) = TestSchema::new() else { return };
    let (mut a, mut b) = (candidate(&db, "discord"), candidate(&db, "discord"));
    assert!(eventually(Duration::from_secs(3), || leaders(&[&a, &b]).len() == 1));
    let a_leads = *a.leading.lock().unwrap();
    let (leader, follower) = if a_leads { (&mut a, &b) } else { (&mut b, &a) };
    drop(leader.store.take());
    assert!(eventually(Duration::from_secs(3), || *follower.leading.lock().unwrap()), "the follower took over");
    assert!(!*leader.leading.lock().unwrap(), "the dropped leader was told it stopped");
}

#[test]
fn a_schema_migrated_by_a_newer_plangate_is_refused() {
    let Some(db) = TestSchema::new() else { return };
    drop(db.open());
    db.client().execute("INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')", &[]).unwrap();
    let err = PgStore::open(&db.options()).unwrap_err();
    assert!(matches!(err, StoreError::SchemaTooNew { found: 999, known: 5 }), "{err:?}");
    assert!(err.to_string().contains("upgrade plangate on every replica"), "{err}");
}

/// Replicas starting together migrate once, without tripping over each other.
#[test]
fn replicas_starting_together_migrate_once() {
    let Some(db) = TestSchema::new() else { return };
    let stores: Vec<PgStore> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| PgStore::open(&db.options()))).collect();
        handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
    });
    let ids: HashSet<&str> = stores.iter().map(|s| s.replica_id()).collect();
    assert_eq!(ids.len(), 4);
    let rows = db.client().query("SELECT version FROM schema_migrations", &[]).unwrap();
    assert_eq!(rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    drop(stores);
    // Opening again applies nothing and keeps the data.
    let store = db.open();
    store.mark_seen("k").unwrap();
    drop(store);
    assert!(db.open().seen("k").unwrap());
}

/// Before migration 4 every timer of an approval had its row; the
/// migration keeps the first of each chain (the proposal holds the rest).
/// Before migration 5 the audit had no chain: its records are chained at
/// the next open, in the order they were written.
#[test]
fn migrations_4_and_5_keep_the_first_timer_of_each_chain_and_chain_the_audit() {
    let Some(db) = TestSchema::new() else { return };
    let store = db.open();
    let p = propose(&store, &SessionKey::new("demo", "a"), 1);
    // What the schema held before: every timer (and the migration undone).
    store.commit(Commit { timers_add: p.timers.clone(), ..Commit::default() }).unwrap().written().unwrap();
    assert_eq!(store.timers().unwrap().len(), 3);
    drop(store);
    db.client()
        .batch_execute(
            "DELETE FROM schema_migrations WHERE version >= 4; DROP INDEX audit_chain; \
             ALTER TABLE audit DROP COLUMN chain_seq, DROP COLUMN chain_hash",
        )
        .unwrap();
    let store = db.open();
    assert_eq!(store.timers().unwrap(), vec![p.timers[0].clone(), p.timers[2].clone()], "the first nudge and the timeout");
    let records = crate::common::audit_chain(&store);
    assert!(records.len() >= 2 && records[0].seq == 1);
    plangate_audit::verify(&records, &[], None).unwrap();
}

#[test]
fn bad_options_and_an_unreachable_server_are_clear_errors() {
    let Some(db) = TestSchema::new() else { return };
    for schema in ["", "Public", "a;b", "1x"] {
        let err = PgStore::open(&PgOptions { schema: schema.into(), ..db.options() }).unwrap_err();
        assert!(err.to_string().contains("invalid PostgreSQL schema name"), "{err}");
    }
    let err = PgStore::open(&PgOptions::new("not a url ::")).unwrap_err();
    assert!(err.to_string().contains("URL"), "{err}");
    let err = PgStore::open(&PgOptions { schema: db.schema.clone(), ..PgOptions::new("postgres://postgres:hunter2@127.0.0.1:1/test") })
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(text.contains("is PostgreSQL running at 127.0.0.1:1/test"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn snapshots_and_pruning_say_what_to_use_instead() {
    let Some(db) = TestSchema::new() else { return };
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let err = store.snapshot(dir.path(), &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("pg_dump --schema=t_"), "{err}");
    let policy = plangate_store::PrunePolicy { decided_before: None, audit_before: None, batch: 10, dry_run: true };
    let err = store.prune(dir.path(), &policy).unwrap_err().to_string();
    assert!(err.contains("not supported on PostgreSQL"), "{err}");
}
