//! The sled store's own tests (the contract both stores keep is in
//! `tests/store/contract.rs`).

use super::*;
use plangate_engine::{apply, Actor, Command, Ctx, Plan, TimerPolicy, Verdict};

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

#[test]
fn a_commit_cut_short_by_a_crash_is_finished_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("demo", "s1");
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    let id = {
        let store = SledStore::open(dir.path()).unwrap();
        let c = step(&store, &key, &Actor::Agent, Command::Enter { reason: None }, 1);
        store.commit(c).unwrap().written().unwrap();
        let c = step(
            &store,
            &key,
            &Actor::Agent,
            Command::Propose {
                plan: Plan::titled("p"),
                markdown: None,
                requested_by: None,
                harness: plangate_engine::Harness::Api,
                project: None,
            },
            2,
        );
        store.commit(c).unwrap().written().unwrap();
        let id = store.load(&key).unwrap().latest.unwrap().approval_id;
        // The approve commit dies after its record and its first write
        // (the proposal): the session and the timer removals never land.
        let c = step(&store, &key, &alice, Command::Decide { approval_id: id, verdict: Verdict::Approve }, 3);
        let ops = store.ops_of(&c).unwrap();
        assert!(ops.len() > 2 && ops.last().unwrap().tree == TreeId::Sessions);
        store.redo.insert(7u64.to_be_bytes(), redo::encode(&ops)).unwrap();
        store.apply_ops(&ops[..1]).unwrap();
        store.db.flush().unwrap();
        assert_eq!(store.proposal(&id).unwrap().unwrap().status, DecisionStatus::Approved);
        assert_eq!(store.load(&key).unwrap().session.approval, plangate_engine::ApprovalState::Pending);
        id
    };
    let store = SledStore::open(dir.path()).unwrap();
    let state = store.load(&key).unwrap();
    assert_eq!(state.session.approval, plangate_engine::ApprovalState::Approved);
    assert_eq!(state.latest.unwrap().approval_id, id);
    assert!(store.timers().unwrap().is_empty(), "the approval's timers were cancelled");
    assert_eq!(store.redo.len(), 0);
    let actions: Vec<String> = store.audit(&AuditQuery::default()).unwrap().into_iter().map(|e| e.action).collect();
    assert_eq!(actions, vec!["enter", "propose", "approve"]);
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
