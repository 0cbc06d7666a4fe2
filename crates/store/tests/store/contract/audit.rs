//! The audit's part of the [`Store`](plangate_store::Store) contract: filters,
//! the chain (one, without gaps, across restarts and concurrent sessions),
//! and reading from a time.

use crate::common::Backend;
use plangate_engine::{ApprovalId, AuditEvent, SessionKey, Timestamp};
use plangate_store::{AuditQuery, Commit};

pub(super) fn event(n: i64, session: &str, approval: Option<u8>) -> AuditEvent {
    AuditEvent {
        at: Timestamp(n),
        agent: "demo".into(),
        session_id: session.into(),
        actor: "agent".into(),
        action: format!("a{n}"),
        approval_id: approval.map(|b| ApprovalId([b; 16])),
        version: None,
        detail: String::new(),
    }
}

pub(super) fn audit_filters_and_limits(b: &dyn Backend) {
    {
        let store = b.open();
        store.append_audit(&[event(1, "x", Some(1)), event(2, "y", None), event(3, "x", None)]).unwrap();
        store.append_audit(&[]).unwrap();
        store.commit(Commit { audit: vec![event(4, "y", Some(1))], ..Commit::default() }).unwrap().written().unwrap();
    }
    let store = b.open();
    let actions = |q: AuditQuery| store.audit(&q).unwrap().into_iter().map(|e| e.action).collect::<Vec<_>>();
    assert_eq!(actions(AuditQuery::default()), vec!["a1", "a2", "a3", "a4"]);
    assert_eq!(actions(AuditQuery { limit: 2, ..AuditQuery::default() }), vec!["a3", "a4"], "the newest, oldest first");
    assert_eq!(actions(AuditQuery { session_id: Some("x".into()), ..AuditQuery::default() }), vec!["a1", "a3"]);
    assert_eq!(actions(AuditQuery { approval_id: Some(ApprovalId([1; 16])), ..AuditQuery::default() }), vec!["a1", "a4"]);
    let q = AuditQuery { agent: Some("demo".into()), session_id: Some("y".into()), limit: 1, ..AuditQuery::default() };
    assert_eq!(actions(q), vec!["a4"]);
    assert!(actions(AuditQuery { agent: Some("other".into()), ..AuditQuery::default() }).is_empty());
    let since = |at: i64| Some(Timestamp(at));
    assert_eq!(actions(AuditQuery { since: since(3), ..AuditQuery::default() }), vec!["a3", "a4"]);
    assert_eq!(actions(AuditQuery { since: since(0), ..AuditQuery::default() }), vec!["a1", "a2", "a3", "a4"]);
    assert!(actions(AuditQuery { since: since(5), ..AuditQuery::default() }).is_empty());
    assert_eq!(actions(AuditQuery { since: since(2), approval_id: Some(ApprovalId([1; 16])), ..AuditQuery::default() }), vec!["a4"]);
    assert_eq!(actions(AuditQuery { since: since(2), limit: 1, ..AuditQuery::default() }), vec!["a4"]);
    let newest_of_one = AuditQuery { approval_id: Some(ApprovalId([1; 16])), limit: 1, ..AuditQuery::default() };
    assert_eq!(actions(newest_of_one), vec!["a4"], "an approval's newest, read forwards");
}

/// Every append, in a transition's commit or alone, is the chain's next
/// record: numbered from 1 without a gap, each linked to the one before,
/// also after the store was opened again; the head is the last record.
pub(super) fn the_audit_is_one_chain_that_verifies_across_a_restart(b: &dyn Backend) {
    {
        let store = b.open();
        assert_eq!(store.audit_head().unwrap(), None);
        store.append_audit(&[event(1, "x", Some(1)), event(2, "y", None)]).unwrap();
        store.commit(Commit { audit: vec![event(3, "y", Some(1)), event(4, "x", None)], ..Commit::default() }).unwrap().written().unwrap();
    }
    let store = b.open();
    store.append_audit(&[event(5, "x", None)]).unwrap();
    let records = crate::common::audit_chain(&*store);
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    assert_eq!(records.iter().map(|r| r.event["action"].as_str().unwrap()).collect::<Vec<_>>(), vec!["a1", "a2", "a3", "a4", "a5"]);
    plangate_audit::verify(&records, &[], None).unwrap();
    assert_eq!(store.audit_head().unwrap(), Some((5, records[4].hash)));
    let mut since = Vec::new();
    store
        .visit_audit_chain(Some(Timestamp(4)), &mut |r| {
            since.push(r.seq);
            since.is_empty()
        })
        .unwrap();
    assert_eq!(since, vec![4], "from the first at or after the time, until the visitor stops");
    // The plain reading of the audit is unchanged by the chain.
    assert_eq!(
        store.audit(&AuditQuery::default()).unwrap(),
        (1..=5)
            .map(|n| event(n, if n == 2 || n == 3 { "y" } else { "x" }, if n == 1 || n == 3 { Some(1) } else { None }))
            .collect::<Vec<_>>()
    );
}

/// Commits of different sessions run side by side (they share only the
/// chain's lock, and that only while their records are sealed): every
/// record they wrote is in one chain, numbered without a gap, each linked
/// to the one before.
pub(super) fn sessions_committing_at_once_append_to_one_chain(b: &dyn Backend) {
    let store = b.open();
    let store = &*store;
    std::thread::scope(|s| {
        for thread in 0..8u8 {
            s.spawn(move || {
                for round in 0..4u8 {
                    let key = SessionKey::new("demo", format!("s{thread}-{round}"));
                    crate::common::propose(store, &key, thread * 16 + round + 1);
                }
            });
        }
    });
    let records = crate::common::audit_chain(store);
    // Each proposal's session entered plan mode and proposed: two records or more.
    assert!(records.len() >= 64, "{} records", records.len());
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=records.len() as u64).collect::<Vec<_>>());
    plangate_audit::verify(&records, &[], None).unwrap();
    assert_eq!(store.audit_head().unwrap(), records.last().map(|r| (r.seq, r.hash)));
}

/// `since` finds its place in a long audit (sled bisects the log): every
/// starting time gives exactly the entries at or after it.
pub(super) fn audit_since_any_time_in_a_long_log(b: &dyn Backend) {
    let store = b.open();
    // 600 entries at even times, written in batches as transitions write them.
    for batch in 0..20 {
        let events: Vec<AuditEvent> = (0..30).map(|i| event((batch * 30 + i) * 2, "x", None)).collect();
        store.append_audit(&events).unwrap();
    }
    for at in [-5, 0, 1, 2, 3, 97, 98, 599, 600, 1001, 1196, 1198, 1199, 5000] {
        let got = store.audit(&AuditQuery { since: Some(Timestamp(at)), ..AuditQuery::default() }).unwrap();
        let expected = (0..600i64).map(|i| i * 2).filter(|t| *t >= at).count();
        assert_eq!(got.len(), expected, "since {at}");
        assert!(got.iter().all(|e| e.at.0 >= at) && got.windows(2).all(|w| w[0].at < w[1].at), "since {at}: in order");
    }
}
