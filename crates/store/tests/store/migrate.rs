//! `sled_to_postgres`: everything a sled store holds arrives in PostgreSQL,
//! once, or nothing does.

use crate::common::{ctx, propose, TestSchema};
use plangate_delivery::{Delivery, Style};
use plangate_engine::namespace::Namespace;
use plangate_engine::{apply, Actor, ApprovalId, AuditEvent, Command, SessionKey, Timestamp, Verdict};
use plangate_store::migrate::sled_to_postgres;
use plangate_store::prelude::*;
use plangate_store::{AuditQuery, Commit, OutboxEntry, PgStore, SledStore, Store};
use std::path::Path;

fn delivery(destination: &str, message: &str) -> Delivery {
    Delivery {
        destination: destination.into(),
        channel: "slack".into(),
        chat: "C1".into(),
        message_id: message.into(),
        thread: Some("1.2".into()),
        style: Style::Text,
    }
}

/// A sled store with some of everything.
fn populate(dir: &Path) {
    let store = SledStore::open(dir).unwrap();
    let alice = Actor::Human { id: "slack:U1".into(), name: "slack:@alice".into() };
    for r in 1..=4u8 {
        let key = SessionKey::new(if r % 2 == 0 { "claude" } else { "codex" }, format!("s{r}"));
        let p = propose(&store, &key, r);
        store.add_delivery(&p.approval_id, &delivery("ops", &format!("m{r}"))).unwrap();
        store.add_delivery(&p.approval_id, &delivery("dev", &format!("n{r}"))).unwrap();
        store.set_document_path(&p.approval_id, &format!("plans/{}/plan-{r}.md", key.agent)).unwrap();
        if r == 2 {
            let before = store.load(&key).unwrap();
            let t =
                apply(&before, &alice, Command::Decide { approval_id: p.approval_id, verdict: Verdict::Approve }, &ctx(5000, 50)).unwrap();
            store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
        }
    }
    let key = SessionKey::new("codex", "asks");
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 60)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let before = store.load(&key).unwrap();
    let ask = Command::Ask { question: "which?".into(), options: vec!["a".into(), "b".into()], allow_freetext: true };
    let t = apply(&before, &Actor::Agent, ask, &ctx(2, 61)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let q = store.load(&key).unwrap().session.pending_question.unwrap();
    store.add_question_delivery(&q.question_id, &delivery("ops", "q1")).unwrap();
    // A permission request answered "always": a stored rule.
    let ask = Command::AskPermission {
        tool: "Bash".into(),
        input: serde_json::json!({"command": "cargo publish"}),
        paths: None,
        rules: Default::default(),
    };
    let before = store.load(&key).unwrap();
    let t = apply(&before, &Actor::Agent, ask, &ctx(3, 62)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let before = store.load(&key).unwrap();
    let always = plangate_engine::permission::PermissionAnswer::Allow { grade: plangate_engine::permission::Grade::Always };
    let t = apply(&before, &alice, Command::AnswerPermission { question_id: None, answer: always }, &ctx(4, 63)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    store.mark_seen("telegram:update:1").unwrap();
    assert!(store.record_once("nudge:x").unwrap());
    store.set_cursor("telegram.offset", "77").unwrap();
    store.set_namespace("team", &Namespace::default(), 0).unwrap().written().unwrap();
    let seqs: Vec<u64> = (0..3).map(|_| store.generate_seq().unwrap()).collect();
    let outbox = seqs.iter().map(|&seq| OutboxEntry { seq, work: vec![1, 2, seq as u8] }).collect();
    store.commit(Commit { outbox, ..Commit::default() }).unwrap().written().unwrap();
    store
        .append_audit(&[AuditEvent {
            at: Timestamp(9),
            agent: "codex".into(),
            session_id: "x".into(),
            actor: "operator".into(),
            action: "refused".into(),
            approval_id: None,
            version: None,
            detail: "no".into(),
        }])
        .unwrap();
}

/// Every reading the server does gives the same answer on both stores.
fn assert_same(sled: &dyn Store, pg: &dyn Store) {
    let sessions = sled.sessions().unwrap();
    assert_eq!(pg.permission_rules("codex").unwrap(), sled.permission_rules("codex").unwrap());
    assert_eq!(sled.permission_rules("codex").unwrap().len(), 1);
    assert_eq!(pg.sessions().unwrap(), sessions);
    for s in &sessions {
        assert_eq!(pg.load(&s.key).unwrap(), sled.load(&s.key).unwrap());
        if let Some(q) = &s.pending_question {
            assert_eq!(pg.question(&q.question_id).unwrap(), sled.question(&q.question_id).unwrap());
            assert_eq!(pg.question_deliveries(&q.question_id).unwrap(), sled.question_deliveries(&q.question_id).unwrap());
        }
    }
    let proposals = sled.proposals(None).unwrap();
    assert_eq!(pg.proposals(None).unwrap(), proposals);
    for p in &proposals {
        assert_eq!(pg.deliveries(&p.approval_id).unwrap(), sled.deliveries(&p.approval_id).unwrap());
        assert_eq!(pg.document_path(&p.approval_id).unwrap(), sled.document_path(&p.approval_id).unwrap());
        assert_eq!(
            pg.proposals_by_prefix(&p.approval_id.to_string()[..3]).unwrap(),
            sled.proposals_by_prefix(&p.approval_id.to_string()[..3]).unwrap()
        );
    }
    assert_eq!(pg.timers().unwrap(), sled.timers().unwrap());
    assert_eq!(pg.next_timer().unwrap(), sled.next_timer().unwrap());
    assert_eq!(pg.audit(&AuditQuery::default()).unwrap(), sled.audit(&AuditQuery::default()).unwrap());
    for key in ["telegram:update:1", "nudge:x", "unknown"] {
        assert_eq!(pg.seen(key).unwrap(), sled.seen(key).unwrap(), "{key}");
    }
    assert_eq!(pg.cursor("telegram.offset").unwrap(), sled.cursor("telegram.offset").unwrap());
    assert_eq!(pg.namespace("team").unwrap(), sled.namespace("team").unwrap());
    assert_eq!(pg.outbox().unwrap(), sled.outbox().unwrap());
}

#[test]
fn a_sled_store_arrives_whole_in_postgres() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let Some(db) = TestSchema::new() else { return };
    let report = sled_to_postgres(dir.path(), &db.options()).unwrap();
    assert_eq!(report.sessions, 5);
    assert_eq!(report.proposals, 4);
    assert_eq!((report.questions, report.permission_rules), (2, 1));
    assert_eq!(report.deliveries, 8);
    assert_eq!(report.question_deliveries, 1);
    assert_eq!(report.idempotency_keys, 2);
    assert_eq!((report.cursors, report.document_paths, report.namespaces, report.outbox), (1, 4, 1, 3));
    assert!(report.timers >= 7 && report.audit >= 12, "{report}");
    let text = report.to_string();
    assert_eq!(text.lines().count(), 13, "{text}");
    assert!(text.contains("sessions: 5\n") && text.contains("outbox entries: 3\n"), "{text}");

    let sled = SledStore::open(dir.path()).unwrap();
    let pg = db.open();
    assert_same(&sled, &pg);
    for s in sled.sessions().unwrap() {
        assert_eq!(pg.load_revision(&s.key).unwrap().1, 1, "sessions start at revision 1");
    }
    let max_seq = sled.outbox().unwrap().iter().map(|e| e.seq).max().unwrap();
    assert!(pg.generate_seq().unwrap() > max_seq);
    // Nobody holds the migrated outbox: the first replica claims it at once.
    assert_eq!(pg.claim_outbox(100).unwrap(), sled.outbox().unwrap());
    // New audit records follow the migrated ones.
    let event = AuditEvent { action: "after".into(), ..sled.audit(&AuditQuery::default()).unwrap().remove(0) };
    pg.append_audit(&[event]).unwrap();
    assert_eq!(pg.audit(&AuditQuery { limit: 1, ..AuditQuery::default() }).unwrap()[0].action, "after");
    // The migrated store works: a pending approval is decided there.
    let key = SessionKey::new("codex", "s1");
    let (before, revision) = pg.load_revision(&key).unwrap();
    let id = before.latest.as_ref().unwrap().approval_id;
    let bob = Actor::Human { id: "slack:U2".into(), name: "slack:@bob".into() };
    let t = apply(&before, &bob, Command::Decide { approval_id: id, verdict: Verdict::Revise("smaller, please".into()) }, &ctx(9000, 70))
        .unwrap();
    pg.commit(Commit { expected_revision: Some(revision), ..Commit::of(&t, &before, None) }).unwrap().written().unwrap();
    assert_eq!(pg.load_revision(&key).unwrap().1, 2);
}

#[test]
fn a_sled_dir_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let running = SledStore::open(dir.path()).unwrap();
    let Some(db) = TestSchema::new() else { return };
    let err = sled_to_postgres(dir.path(), &db.options()).unwrap_err().to_string();
    assert!(err.contains("is in use by a running plangate; stop it first"), "{err}");
    drop(running);
    let missing = sled_to_postgres(&dir.path().join("nothing here"), &db.options()).unwrap_err().to_string();
    assert!(missing.contains("there is no sled database"), "{missing}");
}

#[test]
fn a_target_schema_with_data_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let Some(db) = TestSchema::new() else { return };
    let store = db.open();
    store.mark_seen("already here").unwrap();
    let err = sled_to_postgres(dir.path(), &db.options()).unwrap_err().to_string();
    assert!(err.contains("already holds plangate data (1 idempotency)"), "{err}");
    assert!(store.sessions().unwrap().is_empty(), "nothing was written");
    store.remove_outbox(0).unwrap();
    db.client().execute("DELETE FROM idempotency", &[]).unwrap();
    sled_to_postgres(dir.path(), &db.options()).unwrap();
    let err = sled_to_postgres(dir.path(), &db.options()).unwrap_err().to_string();
    assert!(err.contains("already holds plangate data (5 sessions"), "{err}");
}

/// Big stores move in seconds: 100,000 audit records and 20,000 event keys.
#[test]
fn a_big_store_migrates_quickly() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        let events: Vec<AuditEvent> = (0..100_000)
            .map(|i| AuditEvent {
                at: Timestamp(i),
                agent: "bulk".into(),
                session_id: format!("s{}", i % 100),
                actor: "agent".into(),
                action: "enter".into(),
                approval_id: Some(ApprovalId([(i % 250) as u8; 16])),
                version: None,
                detail: String::new(),
            })
            .collect();
        store.append_audit(&events).unwrap();
        let keys: Vec<String> = (0..20_000).map(|i| format!("update:{i}")).collect();
        store.commit(Commit { idempotency: keys, ..Commit::default() }).unwrap().written().unwrap();
    }
    let Some(db) = TestSchema::new() else { return };
    let started = std::time::Instant::now();
    let report = sled_to_postgres(dir.path(), &db.options()).unwrap();
    let took = started.elapsed();
    assert_eq!((report.audit, report.idempotency_keys), (100_000, 20_000));
    assert!(took < std::time::Duration::from_secs(60), "took {took:?}");
    eprintln!("migrated 120,000 records in {took:?}");
    let pg: PgStore = db.open();
    let q = AuditQuery { session_id: Some("s7".into()), limit: 3, ..AuditQuery::default() };
    let last: Vec<i64> = pg.audit(&q).unwrap().iter().map(|e| e.at.0).collect();
    assert_eq!(last, vec![99_707, 99_807, 99_907]);
}
