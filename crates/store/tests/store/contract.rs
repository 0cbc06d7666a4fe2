//! The [`Store`] contract, run against sled and against PostgreSQL: what the
//! server relies on, whichever backend it runs on.

use crate::common::{ctx, propose, propose_storing_every_timer, Backend};
use plangate_delivery::{Delivery, Style};
use plangate_engine::namespace::{Namespace, NamespaceStep};
use plangate_engine::{
    apply, Actor, ApprovalId, Command, DecisionStatus, Plan, Question, QuestionStatus, SessionKey, Step, Timer, TimerKind, Timestamp,
    Verdict,
};
use plangate_store::{AuditQuery, Commit, Committed, OutboxEntry, PagePosition, Preempted, StoreError};

mod audit;
use audit::*;

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod sled {
            $( #[test] fn $name() { super::$name(&crate::common::SledBackend::new()) } )*
        }
        mod postgres {
            $( #[test] fn $name() { if let Some(pg) = crate::common::PgBackend::new() { super::$name(&pg) } } )*
        }
    };
}

contract!(
    commit_then_reopen_sees_everything,
    the_store_keeps_each_chains_first_timer_and_a_fired_one_brings_the_next,
    an_approval_id_is_never_reused,
    record_once_mark_seen_and_cursors,
    clock_jumps_neither_double_fire_nor_skip,
    due_timers_page_through_a_backlog_and_remove_in_batches,
    a_timer_is_identified_by_due_id_and_kind,
    listings_by_status_prefix_and_session,
    deliveries_documents_and_namespaces,
    questions_and_their_deliveries,
    audit_filters_and_limits,
    outbox_and_sequence_numbers,
    the_outbox_pages_after_a_seq,
    a_single_process_claims_everything_due,
    cursor_or_init_keeps_the_first_value,
    cursors_swap_only_from_what_was_read_and_list_by_prefix,
    many_rows_of_a_kind_in_one_commit,
    a_namespace_is_written_only_at_the_revision_it_was_read,
    namespace_merges_side_by_side_lose_nothing,
    an_always_rule_is_stored_with_the_answer_and_removable,
    pages_of_proposals_in_time_then_id_order,
    audit_since_any_time_in_a_long_log,
    whatever_an_agent_asks_the_store_reads_back,
    the_audit_is_one_chain_that_verifies_across_a_restart,
    sessions_committing_at_once_append_to_one_chain,
);

fn namespace_of(steps: &[&str]) -> Namespace {
    let steps =
        steps.iter().map(|s| NamespaceStep { step: Step::pending(*s), updated_by: "agent".into(), updated_at: Timestamp(5) }).collect();
    Namespace { steps }
}

/// A namespace write based on a stale read writes nothing and says
/// `Conflict`, whether the namespace was new or already there; after a
/// restart the revision still guards it.
fn a_namespace_is_written_only_at_the_revision_it_was_read(b: &dyn Backend) {
    let (one, two) = (namespace_of(&["a"]), namespace_of(&["a", "b"]));
    {
        let store = b.open();
        assert_eq!(store.namespace_revision("team").unwrap(), (Namespace::default(), 0), "none stored: revision 0");
        assert_eq!(store.set_namespace("team", &one, 0).unwrap(), Committed::Written(()));
        let err = store.set_namespace("team", &two, 0);
        assert!(matches!(err, Ok(Committed::Preempted(Preempted::Conflict))), "a second first write: {err:?}");
        assert!(
            matches!(store.set_namespace("new", &two, 3), Ok(Committed::Preempted(Preempted::Conflict))),
            "a namespace that is not there"
        );
        assert_eq!(store.namespace("new").unwrap(), Namespace::default());
    }
    let store = b.open();
    let (read, revision) = store.namespace_revision("team").unwrap();
    assert_eq!(read, one);
    assert_ne!(revision, 0);
    assert_eq!(store.set_namespace("team", &two, revision).unwrap(), Committed::Written(()));
    let err = store.set_namespace("team", &one, revision);
    assert!(matches!(err, Ok(Committed::Preempted(Preempted::Conflict))), "stale: {err:?}");
    let (read, newer) = store.namespace_revision("team").unwrap();
    assert_eq!(read, two, "the conflicting write left nothing");
    assert_ne!(newer, revision);
    assert_eq!(store.namespace("team").unwrap(), two);
}

/// Eight writers merging into one namespace at once, each merging again on
/// a conflict: every step each of them was told is stored, is.
fn namespace_merges_side_by_side_lose_nothing(b: &dyn Backend) {
    let store = b.open();
    let store = &*store;
    std::thread::scope(|s| {
        for writer in 0..8 {
            s.spawn(move || {
                for n in 0..5 {
                    let update = vec![plangate_engine::StepUpdate::from(Step::pending(format!("w{writer} s{n}")))];
                    loop {
                        let (ns, revision) = store.namespace_revision("crowd").unwrap();
                        let merged = plangate_engine::namespace::merge(&ns, update.clone(), "w", Timestamp(1)).unwrap();
                        match store.set_namespace("crowd", &merged, revision) {
                            Ok(Committed::Written(())) => break,
                            Ok(Committed::Preempted(Preempted::Conflict)) => continue,
                            other => panic!("{other:?}"),
                        }
                    }
                }
            });
        }
    });
    assert_eq!(store.namespace("crowd").unwrap().steps.len(), 40);
}

/// What PostgreSQL writes with one statement per kind of row: audit records
/// keep the commit's order, a timer added twice is one timer (the later),
/// timers removed together go together.
fn many_rows_of_a_kind_in_one_commit(b: &dyn Backend) {
    let store = b.open();
    store
        .commit(Commit { audit: vec![event(7, "z", None), event(5, "z", None), event(6, "z", None)], ..Commit::default() })
        .unwrap()
        .written()
        .unwrap();
    let actions: Vec<String> = store.audit(&AuditQuery::default()).unwrap().into_iter().map(|e| e.action).collect();
    assert_eq!(actions, vec!["a7", "a5", "a6"]);
    let (a, b2, c) = (timer(10, 1, TimerKind::Nudge(0)), timer(20, 1, TimerKind::Nudge(1)), timer(30, 1, TimerKind::Timeout));
    let mut again = a.clone();
    again.session = SessionKey::new("demo", "later");
    store
        .commit(Commit { timers_add: vec![a.clone(), b2.clone(), c.clone(), again.clone()], ..Commit::default() })
        .unwrap()
        .written()
        .unwrap();
    let timers = store.timers().unwrap();
    assert_eq!(timers, vec![again, b2.clone(), c.clone()], "the later of a timer added twice");
    store.commit(Commit { timers_remove: vec![b2, c], ..Commit::default() }).unwrap().written().unwrap();
    assert_eq!(store.timers().unwrap().len(), 1);
}

/// The web secret every replica must agree on: the first value set wins,
/// later initializations read it back unchanged.
fn cursor_or_init_keeps_the_first_value(b: &dyn Backend) {
    let store = b.open();
    assert_eq!(store.cursor_or_init("web.secret", "aaaa").unwrap(), "aaaa");
    assert_eq!(store.cursor_or_init("web.secret", "bbbb").unwrap(), "aaaa");
    assert_eq!(store.cursor("web.secret").unwrap().as_deref(), Some("aaaa"));
}

/// Paired destinations and pairing codes: a swap writes only over the
/// value it expects (absent, or what was read), once; a prefix lists its
/// cursors in key order, `%` and `_` in it meaning themselves; and what was
/// swapped in survives a reopen.
fn cursors_swap_only_from_what_was_read_and_list_by_prefix(b: &dyn Backend) {
    {
        let store = b.open();
        assert!(store.swap_cursor("paired.code:a", None, Some("1")).unwrap(), "absent → created");
        assert!(!store.swap_cursor("paired.code:a", None, Some("2")).unwrap(), "a second creation writes nothing");
        assert!(!store.swap_cursor("paired.code:a", Some("9"), Some("2")).unwrap(), "a stale read writes nothing");
        assert!(store.swap_cursor("paired.code:a", Some("1"), Some("2")).unwrap());
        assert!(store.swap_cursor("paired.code:b", None, Some("x")).unwrap());
        assert!(store.swap_cursor("paired.code:b", Some("x"), None).unwrap(), "taken");
        assert!(!store.swap_cursor("paired.code:b", Some("x"), None).unwrap(), "taken once");
        assert!(store.swap_cursor("paired.code:b", None, None).unwrap(), "absent, as expected");
        assert!(!store.swap_cursor("paired.code:a", None, None).unwrap(), "present, not as expected");
        store.swap_cursor("paired_codeXz", None, Some("not under the prefix")).unwrap();
        store.swap_cursor("paired.code:c", None, Some("3")).unwrap();
        store.set_cursor("other", "o").unwrap();
    }
    let store = b.open();
    let listed = store.cursors_with_prefix("paired.code:").unwrap();
    assert_eq!(listed, vec![("paired.code:a".to_string(), "2".to_string()), ("paired.code:c".to_string(), "3".to_string())]);
    assert_eq!(store.cursors_with_prefix("paired_").unwrap().len(), 1, "`_` is itself, not any character");
    assert!(store.cursors_with_prefix("none:").unwrap().is_empty());
}

fn commit_then_reopen_sees_everything(b: &dyn Backend) {
    let key = SessionKey::new("demo", "s1");
    let p = {
        let store = b.open();
        propose(&*store, &key, 7)
    };
    let store = b.open();
    let state = store.load(&key).unwrap();
    assert_eq!(state.latest.as_ref().unwrap().approval_id, p.approval_id);
    assert_eq!(store.proposal(&p.approval_id).unwrap().unwrap(), p);
    let timers = store.timers().unwrap();
    assert_eq!(timers.len(), 2, "the first of each chain: {timers:?}");
    assert_eq!(timers[0].kind, TimerKind::Nudge(1));
    assert_eq!(timers[1].kind, TimerKind::Timeout);
    assert_eq!(store.next_timer().unwrap().unwrap().due, Timestamp(601_000));
    assert_eq!(store.due_timers(Timestamp(601_000)).unwrap().len(), 1);
    assert_eq!(store.due_timers(Timestamp(600_999)).unwrap().len(), 0);
    let audit = store.audit(&AuditQuery::default()).unwrap();
    let actions: Vec<_> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, vec!["enter", "propose"]);
    assert_eq!(store.proposals_by_prefix(&p.approval_id.to_string()[..5]).unwrap().len(), 1);
    assert!(store.load(&SessionKey::new("demo", "never")).unwrap().latest.is_none());
    store.flush().unwrap();
}

fn an_approval_id_is_never_reused(b: &dyn Backend) {
    let store = b.open();
    propose(&*store, &SessionKey::new("demo", "a"), 9);
    let key = SessionKey::new("demo", "b");
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 1)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let before = store.load(&key).unwrap();
    let t = apply(
        &before,
        &Actor::Agent,
        Command::Propose {
            plan: Plan::titled("x"),
            markdown: None,
            requested_by: None,
            harness: plangate_engine::Harness::Api,
            project: None,
        },
        &ctx(2, 9),
    )
    .unwrap();
    let err = store.commit(Commit::of(&t, &before, None)).unwrap_err();
    assert!(matches!(err, StoreError::DuplicateId(_)), "{err}");
    // Nothing of the refused transaction was written.
    assert_eq!(store.load(&key).unwrap().session.version, 0);
    assert_eq!(store.audit(&AuditQuery { session_id: Some("b".into()), ..AuditQuery::default() }).unwrap().len(), 1);
}

fn record_once_mark_seen_and_cursors(b: &dyn Backend) {
    {
        let store = b.open();
        assert!(store.record_once("nudge:1").unwrap());
        assert!(!store.record_once("nudge:1").unwrap());
        assert!(store.seen("nudge:1").unwrap());
        assert!(!store.seen("nudge:2").unwrap());
        store.mark_seen("click:1").unwrap();
        store.mark_seen("click:1").unwrap();
        assert!(!store.record_once("click:1").unwrap(), "a seen key counts as recorded");
        assert_eq!(store.cursor("telegram.offset").unwrap(), None);
        store.set_cursor("telegram.offset", "41").unwrap();
        store.set_cursor("telegram.offset", "42").unwrap();
    }
    let store = b.open();
    assert!(store.seen("nudge:1").unwrap() && store.seen("click:1").unwrap());
    assert_eq!(store.cursor("telegram.offset").unwrap().as_deref(), Some("42"));
}

/// Wall-clock jumps: due times are wall-clock, and what fires is whatever
/// `due_timers(now)` returns for the clock the scheduler reads. A fired timer
/// leaves the store in the transaction of its transition, so a clock that
/// jumps back cannot fire it again, and a clock that jumps forward fires each
/// remaining timer exactly once.
fn clock_jumps_neither_double_fire_nor_skip(b: &dyn Backend) {
    let store = b.open();
    let key = SessionKey::new("demo", "jump");
    let p = propose(&*store, &key, 3);
    // Nudge 1 (due at 601 s) fires at its time.
    let nudge = store.due_timers(Timestamp(601_000)).unwrap().remove(0);
    let (before, revision) = store.load_revision(&key).unwrap();
    let t = apply(&before, &Actor::Scheduler, Command::TimerFired(nudge.clone()), &ctx(601_000, 9)).unwrap();
    let commit = Commit { expected_revision: Some(revision), ..Commit::of(&t, &before, Some(&nudge)) };
    store.commit(commit).unwrap().written().unwrap();
    // The clock jumps back an hour: nothing is due, nudge 1 cannot fire again.
    assert!(store.due_timers(Timestamp(601_000 - 3_600_000)).unwrap().is_empty());
    assert!(!store.timers().unwrap().contains(&nudge));
    // The clock jumps forward two days: the rest is due, each once, in order.
    let due = store.due_timers(Timestamp(2 * 86_400_000)).unwrap();
    let kinds: Vec<_> = due.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, vec![TimerKind::Nudge(2), TimerKind::Timeout]);
    for timer in due {
        let (before, revision) = store.load_revision(&key).unwrap();
        let t = apply(&before, &Actor::Scheduler, Command::TimerFired(timer.clone()), &ctx(2 * 86_400_000, 9)).unwrap();
        store.commit(Commit { expected_revision: Some(revision), ..Commit::of(&t, &before, Some(&timer)) }).unwrap().written().unwrap();
    }
    assert!(store.timers().unwrap().is_empty());
    assert_eq!(store.proposal(&p.approval_id).unwrap().unwrap().status, DecisionStatus::TimedOut);
}

/// The scheduler pages through a backlog of due timers: pages are disjoint,
/// in due order, cover exactly what `due_timers` returns, and a batch
/// removal takes exactly the timers it names.
fn due_timers_page_through_a_backlog_and_remove_in_batches(b: &dyn Backend) {
    let store = b.open();
    for r in 1..=5u8 {
        propose_storing_every_timer(&*store, &SessionKey::new("demo", format!("s{r}")), r);
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
    let store = b.open();
    let left = store.due_timers(now).unwrap();
    assert_eq!(left.len(), 5, "durably removed");
    assert!(left.iter().all(|t| t.kind == TimerKind::Nudge(2)));
    assert_eq!(store.timers().unwrap().len(), 10, "the timeouts are untouched");
}

fn timer(due: i64, id: u8, kind: TimerKind) -> Timer {
    Timer { due: Timestamp(due), session: SessionKey::new("demo", "t"), approval_id: ApprovalId([id; 16]), kind }
}

/// Timers are keyed by (due, id, kind): removing one with another due time
/// leaves the other, and order is due time first, negative times included.
fn a_timer_is_identified_by_due_id_and_kind(b: &dyn Backend) {
    let store = b.open();
    let early = timer(-5, 1, TimerKind::Nudge(1));
    let late = timer(500, 1, TimerKind::Nudge(1));
    let other_kind = timer(500, 1, TimerKind::AgentNudge(1));
    let expiry = timer(500, 0, TimerKind::SubagentExpiry);
    let commit = Commit { timers_add: vec![late.clone(), early.clone(), other_kind.clone(), expiry.clone()], ..Commit::default() };
    store.commit(commit).unwrap().written().unwrap();
    assert_eq!(store.timers().unwrap(), vec![early.clone(), expiry.clone(), late.clone(), other_kind.clone()]);
    store.remove_timer(&timer(499, 1, TimerKind::Nudge(1))).unwrap();
    assert_eq!(store.timers().unwrap().len(), 4, "a different due time is a different timer");
    store.remove_timer(&late).unwrap();
    assert_eq!(store.timers().unwrap(), vec![early.clone(), expiry, other_kind]);
    assert_eq!(store.next_timer().unwrap(), Some(early.clone()));
    // Adding the same timer again replaces it.
    store.commit(Commit { timers_add: vec![early.clone()], ..Commit::default() }).unwrap().written().unwrap();
    assert_eq!(store.timers().unwrap().len(), 3);
    store.remove_timers(&[]).unwrap();
}

fn listings_by_status_prefix_and_session(b: &dyn Backend) {
    let store = b.open();
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    let mut ids = Vec::new();
    for r in [0x21u8, 0x2f, 0x30] {
        ids.push(propose(&*store, &SessionKey::new("demo", format!("s{r:x}")), r).approval_id);
    }
    let key = SessionKey::new("demo", "s30");
    let before = store.load(&key).unwrap();
    let t = apply(&before, &alice, Command::Decide { approval_id: ids[2], verdict: Verdict::Approve }, &ctx(2000, 0x40)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();

    let pending: Vec<_> = store.proposals(Some(DecisionStatus::Pending)).unwrap().iter().map(|p| p.approval_id).collect();
    assert_eq!(pending, vec![ids[0], ids[1]]);
    assert_eq!(store.proposals(Some(DecisionStatus::Approved)).unwrap().len(), 1);
    assert_eq!(store.proposals(None).unwrap().len(), 3);
    let mut visited = Vec::new();
    store.visit_proposals(Some(DecisionStatus::Pending), &mut |p| visited.push(p.approval_id)).unwrap();
    visited.sort();
    assert_eq!(visited, vec![ids[0], ids[1]]);
    let mut all = 0;
    store.visit_proposals(None, &mut |_| all += 1).unwrap();
    assert_eq!(all, 3);
    assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 2, "counted without the plans");
    assert_eq!(store.count_proposals(DecisionStatus::Approved).unwrap(), 1);
    assert_eq!(store.count_proposals(DecisionStatus::Cancelled).unwrap(), 0);

    let by = |prefix: &str| store.proposals_by_prefix(prefix).unwrap().iter().map(|p| p.approval_id).collect::<Vec<_>>();
    assert_eq!(by("2"), vec![ids[0], ids[1]], "an odd number of hex digits");
    assert_eq!(by("21"), vec![ids[0]]);
    assert_eq!(by("2f2"), vec![ids[1]]);
    assert_eq!(by("").len(), 3);
    assert!(by("2F").is_empty(), "ids are lowercase");
    assert!(by("%").is_empty() && by("_").is_empty() && by("zz").is_empty());
    assert!(by("2é").is_empty() && by("é").is_empty(), "not hex, and no panic on a multi-byte character");

    let sessions: Vec<_> = store.sessions().unwrap().into_iter().map(|s| s.key.session_id).collect();
    assert_eq!(sessions, vec!["s21", "s2f", "s30"]);
}

/// Pages walk every proposal once, oldest first and by id within a
/// millisecond (every proposal here is made at t=1000), after the position
/// given, never more than the limit, filtered by status.
fn pages_of_proposals_in_time_then_id_order(b: &dyn Backend) {
    let store = b.open();
    let mut ids: Vec<ApprovalId> = [0x50u8, 0x21, 0x30, 0x2f, 0x61]
        .iter()
        .map(|r| propose(&*store, &SessionKey::new("demo", format!("s{r:x}")), *r).approval_id)
        .collect();
    let key = SessionKey::new("demo", "s30");
    let before = store.load(&key).unwrap();
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    let t = apply(&before, &alice, Command::Decide { approval_id: ids[2], verdict: Verdict::Approve }, &ctx(2000, 0x40)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let approved = ids.remove(2);
    ids.sort();

    let walk = |status: Option<DecisionStatus>, limit: usize| {
        let (mut seen, mut after, mut pages) = (Vec::new(), None, 0);
        loop {
            let page = store.proposals_page(status, after, limit).unwrap();
            assert!(page.len() <= limit);
            pages += 1;
            seen.extend(page.iter().map(|p| p.approval_id));
            match page.last() {
                Some(last) if page.len() == limit => after = Some(PagePosition::of(last)),
                _ => return (seen, pages),
            }
        }
    };
    assert_eq!(walk(Some(DecisionStatus::Pending), 2), (ids.clone(), 3), "two full pages, then an empty one");
    assert_eq!(walk(Some(DecisionStatus::Pending), 3), (ids.clone(), 2));
    assert_eq!(walk(Some(DecisionStatus::Pending), 100).0, ids);
    assert_eq!(walk(Some(DecisionStatus::Approved), 1), (vec![approved], 2));
    assert_eq!(walk(None, 2).0.len(), 5);
    assert!(store.proposals_page(None, None, 0).unwrap().is_empty());
    // After a position no proposal holds (a later time): nothing.
    let beyond = PagePosition { created_at: Timestamp(1001), approval_id: ApprovalId([0; 16]) };
    assert!(store.proposals_page(None, Some(beyond), 10).unwrap().is_empty());
    let early = PagePosition { created_at: Timestamp(999), approval_id: ApprovalId([0xff; 16]) };
    assert_eq!(store.proposals_page(None, Some(early), 10).unwrap().len(), 5);

    // The latest proposed first (one millisecond: by id, descending).
    let latest = |status, limit| store.latest_proposals(status, limit).unwrap().iter().map(|p| p.approval_id).collect::<Vec<_>>();
    let newest_first: Vec<ApprovalId> = ids.iter().rev().copied().collect();
    assert_eq!(latest(DecisionStatus::Pending, 100), newest_first);
    assert_eq!(latest(DecisionStatus::Pending, 2), newest_first[..2]);
    assert_eq!(latest(DecisionStatus::Approved, 5), vec![approved]);
    assert!(latest(DecisionStatus::Rejected, 5).is_empty());
    assert!(latest(DecisionStatus::Pending, 0).is_empty());
}

fn delivery(destination: &str, chat: &str, message: &str) -> Delivery {
    Delivery {
        destination: destination.into(),
        channel: "telegram".into(),
        chat: chat.into(),
        message_id: message.into(),
        thread: None,
        style: Style::Buttons,
    }
}

fn deliveries_documents_and_namespaces(b: &dyn Backend) {
    let id = ApprovalId([7; 16]);
    let other = ApprovalId([8; 16]);
    {
        let store = b.open();
        store.add_delivery(&id, &delivery("ops", "-100", "1")).unwrap();
        store.add_delivery(&id, &delivery("dev", "-200", "2")).unwrap();
        store.add_delivery(&id, &delivery("ops", "-100", "3")).unwrap();
        store.add_delivery(&other, &delivery("ops", "-100", "9")).unwrap();
        store.set_document_path(&id, "plans/demo/a.md").unwrap();
        let ns = Namespace {
            steps: vec![NamespaceStep { step: Step::pending("shared"), updated_by: "agent".into(), updated_at: Timestamp(5) }],
        };
        store.set_namespace("team.infra", &ns, 0).unwrap().written().unwrap();
    }
    let store = b.open();
    let ds = store.deliveries(&id).unwrap();
    assert_eq!(ds, vec![delivery("dev", "-200", "2"), delivery("ops", "-100", "3")], "one per destination and chat, the latest");
    assert_eq!(store.deliveries(&ApprovalId([9; 16])).unwrap(), vec![]);
    assert_eq!(store.document_path(&id).unwrap().as_deref(), Some("plans/demo/a.md"));
    assert_eq!(store.document_path(&other).unwrap(), None);
    assert_eq!(store.namespace("team.infra").unwrap().steps.len(), 1);
    assert_eq!(store.namespace("nobody").unwrap(), Namespace::default());
}

fn questions_and_their_deliveries(b: &dyn Backend) {
    let store = b.open();
    let key = SessionKey::new("demo", "q");
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 1)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let before = store.load(&key).unwrap();
    let ask = Command::Ask { question: "which db?".into(), options: vec!["pg".into(), "sled".into()], allow_freetext: false };
    let t = apply(&before, &Actor::Agent, ask, &ctx(2, 2)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let q: Question = store.load(&key).unwrap().session.pending_question.unwrap();
    assert_eq!(store.question(&q.question_id).unwrap().unwrap(), q);
    assert_eq!(q.status, QuestionStatus::Pending);
    assert_eq!(store.question(&ApprovalId([0; 16])).unwrap(), None);
    store.add_question_delivery(&q.question_id, &delivery("ops", "-1", "5")).unwrap();
    assert_eq!(store.question_deliveries(&q.question_id).unwrap(), vec![delivery("ops", "-1", "5")]);
    assert_eq!(store.deliveries(&q.question_id).unwrap(), vec![], "card and question deliveries are apart");
}

/// The server pages through the chat work it left in the outbox: its own
/// entries, in `seq` order, after the last one it saw.
fn the_outbox_pages_after_a_seq(b: &dyn Backend) {
    let store = b.open();
    let seqs = store.generate_seqs(5).unwrap();
    let entries: Vec<_> = seqs.iter().map(|&seq| OutboxEntry { seq, work: seq.to_be_bytes().to_vec() }).collect();
    store.commit(Commit { outbox: entries.clone(), ..Commit::default() }).unwrap().written().unwrap();
    assert_eq!(store.claim_outbox_page(None, 2).unwrap(), entries[..2], "the first page, oldest first");
    assert_eq!(store.claim_outbox_page(Some(seqs[1]), 2).unwrap(), entries[2..4], "the next, after the last one seen");
    assert_eq!(store.claim_outbox_page(Some(seqs[3]), 2).unwrap(), entries[4..], "a short page: nothing follows");
    assert!(store.claim_outbox_page(Some(seqs[4]), 2).unwrap().is_empty());
    store.remove_outbox_many(&[seqs[1], seqs[2]]).unwrap();
    let rest = vec![entries[0].clone(), entries[3].clone(), entries[4].clone()];
    assert_eq!(store.claim_outbox_page(None, 10).unwrap(), rest, "done entries are gone");
    assert_eq!(store.claim_outbox_page(Some(seqs[1]), 10).unwrap(), rest[1..], "after a seq that is gone");
    assert_eq!(store.claim_outbox_page(None, 10).unwrap(), rest, "a page claimed is not taken away from its claimer");
}

fn outbox_and_sequence_numbers(b: &dyn Backend) {
    let last = {
        let store = b.open();
        let seqs: Vec<u64> = (0..3).map(|_| store.generate_seq().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        let entries: Vec<_> = seqs.iter().rev().map(|&seq| OutboxEntry { seq, work: vec![seq as u8, 0, 255] }).collect();
        store.commit(Commit { outbox: entries, ..Commit::default() }).unwrap().written().unwrap();
        let outbox = store.outbox().unwrap();
        assert_eq!(outbox.iter().map(|e| e.seq).collect::<Vec<_>>(), seqs, "in seq order");
        store.remove_outbox(seqs[1]).unwrap();
        store.remove_outbox(12345).unwrap();
        seqs[2]
    };
    let store = b.open();
    assert_eq!(store.outbox().unwrap().len(), 2);
    let next = store.generate_seq().unwrap();
    assert!(next > last, "greater than any before, across restarts");
    let batch = store.generate_seqs(4).unwrap();
    assert_eq!(batch.len(), 4);
    assert!(batch[0] > next && batch.windows(2).all(|w| w[0] < w[1]), "a batch is increasing and after: {batch:?}");
    assert!(store.generate_seqs(0).unwrap().is_empty());
    store.renew_leases().unwrap();

    // Numbered by the store with the commit: increasing, after the rest,
    // shown to the caller before the commit lands, then removed in one go.
    let mut seen = Vec::new();
    let numbered = store
        .commit_numbered(Commit::default(), vec![vec![1], vec![2], vec![3]], &mut |seqs| seen = seqs.to_vec())
        .unwrap()
        .written()
        .unwrap();
    assert_eq!(numbered, seen);
    assert!(numbered[0] > batch[3] && numbered.windows(2).all(|w| w[0] < w[1]), "{numbered:?}");
    let works: Vec<Vec<u8>> = store.outbox().unwrap().into_iter().filter(|e| numbered.contains(&e.seq)).map(|e| e.work).collect();
    assert_eq!(works, vec![vec![1], vec![2], vec![3]]);
    store.remove_outbox_many(&[numbered[0], numbered[2], 999_999]).unwrap();
    assert_eq!(store.outbox().unwrap().len(), 3, "the two left before, and the middle one");
    assert!(store
        .commit_numbered(Commit::default(), Vec::new(), &mut |seqs| assert!(seqs.is_empty()))
        .unwrap()
        .written()
        .unwrap()
        .is_empty());
}

/// One process on its own store: the claims hand it every due timer, like
/// `due_timers_page`, and a commit's revision check passes.
fn a_single_process_claims_everything_due(b: &dyn Backend) {
    let store = b.open();
    for r in 1..=3u8 {
        propose(&*store, &SessionKey::new("demo", format!("c{r}")), r);
    }
    let now = Timestamp(1_801_000);
    let due = store.due_timers(now).unwrap();
    assert_eq!(store.claim_due_timers(now, None, 100).unwrap(), due);
    assert_eq!(store.claim_due_timers(now, None, 2).unwrap(), due[..2]);
    assert_eq!(store.claim_due_timers(now, Some(&due[1]), 100).unwrap(), due[2..]);
    assert_eq!(store.next_timer().unwrap().as_ref(), due.first());
    let key = SessionKey::new("demo", "c1");
    let (before, revision) = store.load_revision(&key).unwrap();
    let mut session = before.session.clone();
    session.updated_at = Timestamp(3000);
    store.commit(Commit { session: Some(session), expected_revision: Some(revision), ..Commit::default() }).unwrap().written().unwrap();
    assert_eq!(store.load(&key).unwrap().session.updated_at, Timestamp(3000));
}

/// A permission request answered "always": the rule is written by the
/// answer's own commit, listed per agent oldest first, survives a reopen,
/// and is removed by id.
fn an_always_rule_is_stored_with_the_answer_and_removable(b: &dyn Backend) {
    use plangate_engine::permission::{Grade, PermissionAnswer, Rules};
    let key = SessionKey::new("demo", "perm");
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@a".into() };
    {
        let store = b.open();
        let run = |actor: &Actor, command: Command, r: u8| {
            let before = store.load(&key).unwrap();
            let t = apply(&before, actor, command, &ctx(1000 + r as i64, r)).unwrap();
            store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
        };
        for (n, cmd) in ["cargo publish", "npm publish"].iter().enumerate() {
            let ask = Command::AskPermission {
                tool: "Bash".into(),
                input: serde_json::json!({"command": cmd}),
                paths: None,
                rules: Rules::default(),
            };
            run(&Actor::Agent, ask, 10 + n as u8);
            let answer = Command::AnswerPermission { question_id: None, answer: PermissionAnswer::Allow { grade: Grade::Always } };
            run(&alice, answer, 20 + n as u8);
        }
    }
    let store = b.open();
    let rules = store.permission_rules("demo").unwrap();
    let shown: Vec<String> = rules.iter().map(|r| r.rule.to_string()).collect();
    assert_eq!(shown, ["Bash(cargo publish)", "Bash(npm publish)"]);
    assert!(store.permission_rules("other").unwrap().is_empty());
    let asked = store.question(&ApprovalId([10; 16])).unwrap().unwrap();
    assert_eq!(asked.status, QuestionStatus::Answered);
    assert!(store.remove_permission_rule("demo", &rules[0].id).unwrap());
    assert!(!store.remove_permission_rule("demo", &rules[0].id).unwrap());
    assert!(!store.remove_permission_rule("other", &rules[1].id).unwrap());
    assert_eq!(store.permission_rules("demo").unwrap(), vec![rules[1].clone()]);
}

/// An approval's reminders are one chain and its timeout another: the store
/// holds the first of each (the proposal holds them all), and the
/// transition that fires one stores the next; a decision drops both.
fn the_store_keeps_each_chains_first_timer_and_a_fired_one_brings_the_next(b: &dyn Backend) {
    let store = b.open();
    let key = SessionKey::new("demo", "chains");
    let p = propose(store.as_ref(), &key, 3);
    let [n1, n2, timeout] = <[Timer; 3]>::try_from(p.timers.clone()).expect("two nudges and a timeout");
    assert_eq!(store.timers().unwrap(), vec![n1.clone(), timeout.clone()]);
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Scheduler, Command::TimerFired(n1.clone()), &ctx(n1.due.0, 4)).unwrap();
    store.commit(Commit::of(&t, &before, Some(&n1))).unwrap().written().unwrap();
    assert_eq!(store.timers().unwrap(), vec![n2.clone(), timeout.clone()]);
    let before = store.load(&key).unwrap();
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    let t =
        apply(&before, &alice, Command::Decide { approval_id: p.approval_id, verdict: Verdict::Approve }, &ctx(n2.due.0 - 1, 5)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    assert_eq!(store.timers().unwrap(), vec![], "a decision drops the stored timers of both chains");
}

/// Whatever tool and input an agent's hook sends (multi-line heredocs,
/// 6,000 characters, any unicode, a tool name with spaces), the request
/// and the grants answered to it are written by the engine and read back
/// by the store as they were: the session, the question and the stored
/// rule, and the grant still allows that very call. The store never
/// refuses what the engine wrote.
fn whatever_an_agent_asks_the_store_reads_back(b: &dyn Backend) {
    use plangate_engine::permission::{self, Call, Grade, Judged, PermissionAnswer, Rules};
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let store = b.open();
    let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@a".into() };
    let tool = prop_oneof![
        Just("Bash".to_string()),
        Just("PowerShell".to_string()),
        Just("exec_command".to_string()),
        Just("Write".to_string()),
        "[a-z ._:-]{1,20}",
        "\\PC{1,40}"
    ];
    let command = prop_oneof!["(?s)\\PC{0,200}", "[a-z ]{0,20}(\n[^\u{0}]{0,40}){1,5}", "x{4000,6000}", Just("sh:*".to_string())];
    let grade = prop_oneof![Just(Grade::Session), Just(Grade::Always)];
    let mut runner = TestRunner::new(Config { cases: 24, failure_persistence: None, ..Config::default() });
    let counter = std::sync::atomic::AtomicU32::new(0);
    runner
        .run(&(tool, command, grade), |(tool, command, grade)| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let key = SessionKey::new("demo", format!("prop-{n}"));
            let input = if tool == "exec_command" { serde_json::json!({"cmd": command}) } else { serde_json::json!({"command": command}) };
            let run = |actor: &Actor, command: Command, r: u8| {
                let before = store.load(&key).unwrap();
                let t = apply(&before, actor, command, &ctx(1000 + r as i64, r)).unwrap();
                store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
                t
            };
            // A file tool's files come normalized from the hook.
            let paths = (tool == "Write").then(|| vec![plangate_engine::scope::Target::Path(format!("src/{}.rs", n))]);
            let ask = Command::AskPermission { tool: tool.clone(), input: input.clone(), paths: paths.clone(), rules: Rules::default() };
            let asked = run(&Actor::Agent, ask, (n % 200) as u8);
            prop_assert_eq!(&store.load(&key).unwrap().session, &asked.state.session);
            let answer = Command::AnswerPermission { question_id: None, answer: PermissionAnswer::Allow { grade } };
            let answered = run(&alice, answer, (n % 200) as u8 + 1);
            let loaded = store.load(&key).unwrap();
            prop_assert_eq!(&loaded.session, &answered.state.session);
            let stored = store.permission_rules("demo").unwrap();
            let rules = Rules { stored: stored.clone(), ..Rules::default() };
            let call = Call { tool: &tool, input: &input, paths: paths.as_deref() };
            if let Some(added) = &answered.rule_added {
                prop_assert!(stored.contains(added));
            }
            let judged = permission::judge(&call, &rules, &loaded.session.session_rules);
            prop_assert!(matches!(judged, Judged::Allow { .. }), "{:?} for {:.80}", judged, tool);
            // The listings still see every session.
            prop_assert!(store.sessions().unwrap().iter().any(|s| s.key == key));
            for rule in stored {
                store.remove_permission_rule("demo", &rule.id).unwrap();
            }
            Ok(())
        })
        .unwrap();
}
