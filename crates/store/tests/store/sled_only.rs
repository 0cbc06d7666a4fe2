//! What only the sled store has: its schema version check, flushes shared
//! and skipped, snapshots.

use crate::common::ctx;
use plangate_engine::{apply, Actor, Command, SessionKey};
use plangate_store::prelude::*;
use plangate_store::{Commit, SledStore, SCHEMA_VERSION};

/// The store's database opened by sled itself, to write what another
/// plangate would have. A store just dropped may still hold the file lock
/// for a moment (sled's I/O threads finish first): wait for it, as
/// `SledStore::open` does, rather than fail on a busy machine (seen once in CI).
fn raw_db(data_dir: &std::path::Path) -> sled::Db {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match sled::open(data_dir.join("db")) {
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other.unwrap(),
        }
    }
}

#[test]
fn schema_mismatch_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    drop(SledStore::open(dir.path()).unwrap());
    {
        let db = raw_db(dir.path());
        db.open_tree("meta").unwrap().insert("schema_version", "999").unwrap();
        db.flush().unwrap();
    }
    let err = SledStore::open(dir.path()).err().unwrap();
    assert!(err.to_string().contains("schema version 999"), "{err}");
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
        store.commit(commit).unwrap().written().unwrap();
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

/// A snapshot restores into an empty dir as the same data (documents too),
/// later ids never collide with restored ones, and a non-empty target or a
/// truncated file is refused.
#[test]
fn snapshot_restores_into_an_empty_dir_and_refuses_the_rest() {
    use plangate_store::SledStore;
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

/// A database of schema 1 (no `proposals_by_status` index) is upgraded when
/// opened: every proposal indexed, listings and counts right at once, the
/// version bumped, and an older plangate would now refuse it.
#[test]
fn a_schema_1_database_gets_its_status_index_when_opened() {
    use plangate_engine::{DecisionStatus, Verdict};
    let dir = tempfile::tempdir().unwrap();
    let (pending, approved) = {
        let store = SledStore::open(dir.path()).unwrap();
        let a = crate::common::propose(&store, &SessionKey::new("demo", "a"), 1);
        let b = crate::common::propose(&store, &SessionKey::new("demo", "b"), 2);
        let key = SessionKey::new("demo", "b");
        let before = store.load(&key).unwrap();
        let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
        let t = apply(&before, &alice, Command::Decide { approval_id: b.approval_id, verdict: Verdict::Approve }, &ctx(5, 9)).unwrap();
        store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
        (a.approval_id, b.approval_id)
    };
    // What plangate wrote before schema 2: the same trees without the index.
    {
        let db = raw_db(dir.path());
        assert!(db.drop_tree("proposals_by_status").unwrap());
        db.open_tree("meta").unwrap().insert("schema_version", "1").unwrap();
        db.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    let page = store.proposals_page(Some(DecisionStatus::Pending), None, 10).unwrap();
    assert_eq!(page.iter().map(|p| p.approval_id).collect::<Vec<_>>(), vec![pending]);
    let page = store.proposals_page(Some(DecisionStatus::Approved), None, 10).unwrap();
    assert_eq!(page.iter().map(|p| p.approval_id).collect::<Vec<_>>(), vec![approved]);
    assert_eq!(store.count_proposals(DecisionStatus::Pending).unwrap(), 1);
    assert_eq!(store.proposals_page(None, None, 10).unwrap().len(), 2);
    drop(store);
    let db = raw_db(dir.path());
    assert_eq!(db.open_tree("meta").unwrap().get("schema_version").unwrap().as_deref(), Some(SCHEMA_VERSION.as_bytes()));
}

/// A database of schema 2 stored every timer of an approval; opened, it
/// keeps the first of each chain (the proposal still holds the rest), and
/// an older plangate would now refuse it.
#[test]
fn a_schema_2_database_keeps_the_first_timer_of_each_chain_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("demo", "a");
    let timers = {
        let store = SledStore::open(dir.path()).unwrap();
        let p = crate::common::propose(&store, &key, 1);
        // What schema 2 stored: every timer.
        store.commit(Commit { timers_add: p.timers.clone(), ..Commit::default() }).unwrap().written().unwrap();
        assert_eq!(store.timers().unwrap().len(), 3);
        p.timers
    };
    {
        let db = raw_db(dir.path());
        db.open_tree("meta").unwrap().insert("schema_version", "2").unwrap();
        db.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.timers().unwrap(), vec![timers[0].clone(), timers[2].clone()], "the first nudge and the timeout");
    drop(store);
    let db = raw_db(dir.path());
    assert_eq!(db.open_tree("meta").unwrap().get("schema_version").unwrap().as_deref(), Some(SCHEMA_VERSION.as_bytes()));
}

/// A session an older plangate stored with a string rule its reader then
/// refused (a multi-line command, `sh:*` read back as a prefix) reads, its
/// rule as the exact command it was; and a record that does not decode at
/// all leaves every other session listed.
#[test]
fn old_string_rules_read_and_one_bad_record_hides_no_other_session() {
    use plangate_engine::permission::Match;
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("demo", "old");
    let other = SessionKey::new("demo", "other");
    {
        let store = SledStore::open(dir.path()).unwrap();
        for k in [&key, &other] {
            let before = store.load(k).unwrap();
            let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, 1)).unwrap();
            store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
        }
    }
    let session_key = |k: &SessionKey| [k.agent.as_bytes(), &[0], k.session_id.as_bytes()].concat();
    {
        // What the last wave wrote: the rules as `Tool(pattern)` strings.
        let db = raw_db(dir.path());
        let sessions = db.open_tree("sessions").unwrap();
        let mut record: serde_json::Value = serde_json::from_slice(&sessions.get(session_key(&key)).unwrap().unwrap()).unwrap();
        record["session_rules"] = serde_json::json!(["Bash(git commit -m \"$(cat <<'EOF'\nx\nEOF\n)\")", "Bash(sh:*)", "my tool"]);
        sessions.insert(session_key(&key), serde_json::to_vec(&record).unwrap()).unwrap();
        sessions.insert(b"demo\0broken", &b"{not json"[..]).unwrap();
        db.flush().unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    let state = store.load(&key).unwrap();
    let rules: Vec<&Match> = state.session.session_rules.iter().map(|r| r.what()).collect();
    assert_eq!(rules[0], &Match::Exact("git commit -m \"$(cat <<'EOF'\nx\nEOF\n)\"".into()));
    assert_eq!(rules[1], &Match::Exact("sh:*".into()));
    assert_eq!(state.session.session_rules[2].tool(), "my tool");
    let listed: Vec<SessionKey> = store.sessions().unwrap().into_iter().map(|s| s.key).collect();
    assert!(listed.contains(&key) && listed.contains(&other), "{listed:?}");
    assert!(store.load(&SessionKey::new("demo", "broken")).is_err(), "read by its key, the bad record still says so");
}

/// A database of schema 3 holds audit records without their chain; opened,
/// they are chained in the order they were written, and appends go on
/// from there.
#[test]
fn a_schema_3_database_gets_its_audit_chained_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        crate::common::propose(&store, &SessionKey::new("demo", "a"), 1);
        crate::common::propose(&store, &SessionKey::new("demo", "b"), 2);
    }
    // What plangate wrote before schema 4: each record the event alone.
    let written = {
        let db = raw_db(dir.path());
        let audit = db.open_tree("audit").unwrap();
        let mut written = Vec::new();
        for entry in audit.iter() {
            let (key, value) = entry.unwrap();
            let mut map: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&value).unwrap();
            map.retain(|k, _| !k.starts_with("chain_"));
            audit.insert(key, serde_json::to_vec(&map).unwrap()).unwrap();
            written.push(serde_json::Value::Object(map));
        }
        db.open_tree("meta").unwrap().insert("schema_version", "3").unwrap();
        db.flush().unwrap();
        written
    };
    assert!(written.len() >= 4);
    let store = SledStore::open(dir.path()).unwrap();
    crate::common::propose(&store, &SessionKey::new("demo", "c"), 3);
    let records = crate::common::audit_chain(&store);
    plangate_audit::verify(&records, &[], None).unwrap();
    assert_eq!(records[0].seq, 1);
    assert_eq!(records.iter().take(written.len()).map(|r| r.event.clone()).collect::<Vec<_>>(), written);
    assert!(records.len() > written.len(), "appends go on after the chained records");
    drop(store);
    let db = raw_db(dir.path());
    assert_eq!(db.open_tree("meta").unwrap().get("schema_version").unwrap().as_deref(), Some(SCHEMA_VERSION.as_bytes()));
}
