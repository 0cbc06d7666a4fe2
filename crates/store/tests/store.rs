//! The sled store against its contract: atomic commits, ordering, durability.

use plangate_engine::{apply, Actor, Command, Ctx, Plan, SessionKey, Step, TimerKind, TimerPolicy, Timestamp};
use plangate_store::{AuditQuery, Commit, SledStore, Store, StoreError};

fn ctx(now: i64, r: u8) -> Ctx {
    Ctx {
        now: Timestamp(now),
        random: [r; 16],
        timers: TimerPolicy { nudges_ms: vec![600_000, 1_800_000], timeout_ms: Some(86_400_000), ..TimerPolicy::default() },
        approvals: Default::default(),
    }
}

fn propose(store: &SledStore, key: &SessionKey, r: u8) -> plangate_engine::Proposal {
    let before = store.load(key).unwrap();
    let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, r)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap();
    let before = store.load(key).unwrap();
    let plan = Plan { steps: vec![Step::pending("a")], ..Plan::titled(format!("plan {r}")) };
    let t = apply(&before, &Actor::Agent, Command::Propose { plan, markdown: None, requested_by: None }, &ctx(1000, r)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap();
    t.state.latest.unwrap()
}

#[test]
fn commit_then_reopen_sees_everything() {
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("demo", "s1");
    let p = {
        let store = SledStore::open(dir.path()).unwrap();
        propose(&store, &key, 7)
    };
    let store = SledStore::open(dir.path()).unwrap();
    let state = store.load(&key).unwrap();
    assert_eq!(state.latest.as_ref().unwrap().approval_id, p.approval_id);
    assert_eq!(store.proposal(&p.approval_id).unwrap().unwrap(), p);
    let timers = store.timers().unwrap();
    assert_eq!(timers.len(), 3);
    assert_eq!(timers[0].kind, TimerKind::Nudge(1));
    assert_eq!(timers[2].kind, TimerKind::Timeout);
    assert_eq!(store.next_timer().unwrap().unwrap().due, Timestamp(601_000));
    assert_eq!(store.due_timers(Timestamp(601_000)).unwrap().len(), 1);
    assert_eq!(store.due_timers(Timestamp(600_999)).unwrap().len(), 0);
    let audit = store.audit(&AuditQuery::default()).unwrap();
    let actions: Vec<_> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, vec!["enter", "propose"]);
    assert_eq!(store.proposals_by_prefix(&p.approval_id.to_string()[..5]).unwrap().len(), 1);
}

#[test]
fn an_approval_id_is_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    propose(&store, &SessionKey::new("demo", "a"), 9);
    let key = SessionKey::new("demo", "b");
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 1)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap();
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Agent, Command::Propose { plan: Plan::titled("x"), markdown: None, requested_by: None }, &ctx(2, 9))
        .unwrap();
    let err = store.commit(Commit::of(&t, &before, None)).unwrap_err();
    assert!(matches!(err, StoreError::DuplicateId(_)));
    // Nothing of the refused transaction was written.
    assert_eq!(store.load(&key).unwrap().session.version, 0);
}

#[test]
fn schema_mismatch_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    drop(SledStore::open(dir.path()).unwrap());
    {
        let db = sled::open(dir.path().join("db")).unwrap();
        db.open_tree("meta").unwrap().insert("schema_version", "999").unwrap();
        db.flush().unwrap();
    }
    let err = SledStore::open(dir.path()).err().unwrap();
    assert!(err.to_string().contains("schema version 999"), "{err}");
}

#[test]
fn record_once_and_cursors() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    assert!(store.record_once("nudge:1").unwrap());
    assert!(!store.record_once("nudge:1").unwrap());
    assert!(store.seen("nudge:1").unwrap());
    store.set_cursor("telegram.offset", "42").unwrap();
    assert_eq!(store.cursor("telegram.offset").unwrap().as_deref(), Some("42"));
}

/// A click that made a transition had its key written and flushed by that
/// commit; the hub's `mark_seen` after it costs no second flush. A key new to
/// the store (a refused click) is still made durable.
#[test]
fn mark_seen_after_the_commit_that_wrote_the_key_does_not_flush_again() {
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("demo", "click");
    {
        let store = SledStore::open(dir.path()).unwrap();
        let before = store.load(&key).unwrap();
        let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 1)).unwrap();
        let mut commit = Commit::of(&t, &before, None);
        commit.idempotency.push("telegram:update:7".into());
        store.commit(commit).unwrap();
        let after_commit = store.flush_stats();
        store.mark_seen("telegram:update:7").unwrap();
        assert_eq!(store.flush_stats().writes, after_commit.writes, "no second durable write for the same key");
        assert_eq!(store.flush_stats().flushes, after_commit.flushes, "no second flush for the same key");
        store.mark_seen("slack:action:refused").unwrap();
        assert_eq!(store.flush_stats().writes, after_commit.writes + 1, "a new key is made durable");
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert!(store.seen("telegram:update:7").unwrap() && store.seen("slack:action:refused").unwrap());
}

/// Wall-clock jumps: due times are wall-clock, and what fires is whatever
/// `due_timers(now)` returns for the clock the scheduler reads. A fired timer
/// leaves the store in the transaction of its transition, so a clock that
/// jumps back cannot fire it again, and a clock that jumps forward fires each
/// remaining timer exactly once.
#[test]
fn clock_jumps_neither_double_fire_nor_skip() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    let key = SessionKey::new("demo", "jump");
    let p = propose(&store, &key, 3);
    // Nudge 1 (due at 601 s) fires at its time.
    let nudge = store.due_timers(Timestamp(601_000)).unwrap().remove(0);
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Scheduler, Command::TimerFired(nudge.clone()), &ctx(601_000, 9)).unwrap();
    store.commit(Commit::of(&t, &before, Some(&nudge))).unwrap();
    // The clock jumps back an hour: nothing is due, nudge 1 cannot fire again.
    assert!(store.due_timers(Timestamp(601_000 - 3_600_000)).unwrap().is_empty());
    assert!(!store.timers().unwrap().contains(&nudge));
    // The clock jumps forward two days: the rest is due, each once, in order.
    let due = store.due_timers(Timestamp(2 * 86_400_000)).unwrap();
    let kinds: Vec<_> = due.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, vec![TimerKind::Nudge(2), TimerKind::Timeout]);
    for timer in due {
        let before = store.load(&key).unwrap();
        let t = apply(&before, &Actor::Scheduler, Command::TimerFired(timer.clone()), &ctx(2 * 86_400_000, 9)).unwrap();
        store.commit(Commit::of(&t, &before, Some(&timer))).unwrap();
    }
    assert!(store.timers().unwrap().is_empty());
    assert_eq!(store.proposal(&p.approval_id).unwrap().unwrap().status, plangate_engine::DecisionStatus::TimedOut);
}

/// The scheduler pages through a backlog of due timers: pages are disjoint,
/// in due order, cover exactly what `due_timers` returns, and a batch
/// removal takes exactly the timers it names.
#[test]
fn due_timers_page_through_a_backlog_and_remove_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    for r in 1..=5u8 {
        propose(&store, &SessionKey::new("demo", format!("s{r}")), r);
    }
    // Both nudges of all five approvals are due; the timeouts are not.
    let now = Timestamp(1_801_000);
    let all = store.due_timers(now).unwrap();
    assert_eq!(all.len(), 10);
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = store.due_timers_page(now, after.as_ref(), 3).unwrap();
        assert!(page.len() <= 3);
        let last = page.len() < 3;
        after = page.last().cloned();
        paged.extend(page);
        if last {
            break;
        }
    }
    assert_eq!(paged, all, "pages cover the due timers once each, in order");
    assert!(paged.windows(2).all(|w| w[0].due <= w[1].due));

    let first_nudges: Vec<_> = all.iter().filter(|t| t.kind == TimerKind::Nudge(1)).cloned().collect();
    store.remove_timers(&first_nudges).unwrap();
    drop(store);
    let store = SledStore::open(dir.path()).unwrap();
    let left = store.due_timers(now).unwrap();
    assert_eq!(left.len(), 5, "durably removed");
    assert!(left.iter().all(|t| t.kind == TimerKind::Nudge(2)));
    assert_eq!(store.timers().unwrap().len(), 10, "the timeouts are untouched");
}

/// A snapshot restores into an empty dir as the same data (documents too),
/// later ids never collide with restored ones, and a non-empty target or a
/// truncated file is refused.
#[test]
fn snapshot_restores_into_an_empty_dir_and_refuses_the_rest() {
    use plangate_store::{SledStore, Store};
    let dir = tempfile::tempdir().unwrap();
    let store = SledStore::open(dir.path()).unwrap();
    for i in 0..50u64 {
        store.mark_seen(&format!("event-{i}")).unwrap();
    }
    let event = |n: u64| plangate_engine::AuditEvent {
        at: plangate_engine::Timestamp(n as i64),
        agent: "demo".into(),
        session_id: "s".into(),
        actor: "agent".into(),
        action: format!("a{n}"),
        approval_id: None,
        version: None,
        detail: String::new(),
    };
    store.append_audit(&[event(1), event(2)]).unwrap();
    std::fs::create_dir_all(dir.path().join("plans/demo")).unwrap();
    std::fs::write(dir.path().join("plans/demo/plan-x.md"), "# X\n").unwrap();
    let mut bytes = Vec::new();
    let stats = store.snapshot(dir.path(), &mut bytes).unwrap();
    assert_eq!(stats.documents, 1);

    let target = tempfile::tempdir().unwrap();
    let restored_dir = target.path().join("restored");
    SledStore::restore(&restored_dir, &mut bytes.as_slice()).unwrap();
    assert_eq!(std::fs::read_to_string(restored_dir.join("plans/demo/plan-x.md")).unwrap(), "# X\n");
    let restored = SledStore::open(&restored_dir).unwrap();
    assert!(restored.seen("event-49").unwrap());
    restored.append_audit(&[event(3)]).unwrap();
    let actions: Vec<String> = restored.audit(&plangate_store::AuditQuery::default()).unwrap().into_iter().map(|e| e.action).collect();
    assert_eq!(actions, vec!["a1", "a2", "a3"], "a new audit record does not overwrite a restored one");

    let err = SledStore::restore(&restored_dir, &mut bytes.as_slice()).unwrap_err().to_string();
    assert!(err.contains("not empty"), "{err}");
    let cut = &bytes[..bytes.len() - 20];
    let err = SledStore::restore(&target.path().join("cut"), &mut &cut[..]).unwrap_err().to_string();
    assert!(err.contains("truncated") || err.contains("damaged"), "{err}");
}
