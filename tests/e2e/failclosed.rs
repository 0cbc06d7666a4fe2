//! Fail closed: when the store cannot commit (disk full, flush error), no
//! decision or timeout is reported, the gate stays shut, and `/healthz` says
//! degraded until commits succeed again.

use plangate_channel::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::{ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, Timestamp};
use plangate_server::clock::{Clock, ManualClock, SystemClock};
use plangate_server::config::Settings;
use plangate_server::core::Core;
use plangate_store::{AuditQuery, Commit, OutboxEntry, SledStore, Store, StoreError};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A real store whose commits can be made to fail, as a full disk would.
struct Flaky {
    inner: SledStore,
    broken: AtomicBool,
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        if self.broken.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable("No space left on device (simulated)".into()))
        } else {
            Ok(())
        }
    }
}

impl Store for Flaky {
    fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        self.inner.load(key)
    }
    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        self.inner.proposal(id)
    }
    fn proposals_by_prefix(&self, p: &str) -> Result<Vec<Proposal>, StoreError> {
        self.inner.proposals_by_prefix(p)
    }
    fn proposals(&self, s: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        self.inner.proposals(s)
    }
    fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        self.inner.sessions()
    }
    fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError> {
        self.inner.question(id)
    }
    fn commit(&self, commit: Commit) -> Result<(), StoreError> {
        self.check()?;
        self.inner.commit(commit)
    }
    fn next_timer(&self) -> Result<Option<Timer>, StoreError> {
        self.inner.next_timer()
    }
    fn due_timers_page(&self, now: Timestamp, after: Option<&Timer>, limit: usize) -> Result<Vec<Timer>, StoreError> {
        self.inner.due_timers_page(now, after, limit)
    }
    fn timers(&self) -> Result<Vec<Timer>, StoreError> {
        self.inner.timers()
    }
    fn generate_seq(&self) -> Result<u64, StoreError> {
        self.inner.generate_seq()
    }
    fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        self.inner.outbox()
    }
    fn remove_outbox(&self, seq: u64) -> Result<(), StoreError> {
        self.inner.remove_outbox(seq)
    }
    fn remove_timer(&self, t: &Timer) -> Result<(), StoreError> {
        self.check()?;
        self.inner.remove_timer(t)
    }
    fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        self.inner.deliveries(id)
    }
    fn add_delivery(&self, id: &ApprovalId, d: &Delivery) -> Result<(), StoreError> {
        self.inner.add_delivery(id, d)
    }
    fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        self.inner.question_deliveries(id)
    }
    fn add_question_delivery(&self, id: &ApprovalId, d: &Delivery) -> Result<(), StoreError> {
        self.inner.add_question_delivery(id, d)
    }
    fn append_audit(&self, e: &[AuditEvent]) -> Result<(), StoreError> {
        self.inner.append_audit(e)
    }
    fn audit(&self, q: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        self.inner.audit(q)
    }
    fn seen(&self, k: &str) -> Result<bool, StoreError> {
        self.inner.seen(k)
    }
    fn mark_seen(&self, k: &str) -> Result<(), StoreError> {
        self.inner.mark_seen(k)
    }
    fn record_once(&self, k: &str) -> Result<bool, StoreError> {
        self.inner.record_once(k)
    }
    fn cursor(&self, k: &str) -> Result<Option<String>, StoreError> {
        self.inner.cursor(k)
    }
    fn set_cursor(&self, k: &str, v: &str) -> Result<(), StoreError> {
        self.inner.set_cursor(k, v)
    }
    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError> {
        self.inner.document_path(id)
    }
    fn set_document_path(&self, id: &ApprovalId, p: &str) -> Result<(), StoreError> {
        self.inner.set_document_path(id, p)
    }
    fn namespace_revision(&self, n: &str) -> Result<(Namespace, u64), StoreError> {
        self.inner.namespace_revision(n)
    }
    fn set_namespace(&self, n: &str, ns: &Namespace, expected: u64) -> Result<(), StoreError> {
        self.inner.set_namespace(n, ns, expected)
    }
    fn flush(&self) -> Result<(), StoreError> {
        self.check()?;
        self.inner.flush()
    }
}

const CONFIG: &str = r#"
[server]
bind = "127.0.0.1:0"
data_dir = "unused"
operator_token = "operator-token-123"

[agents.demo]
token = "agent-token-demo-1"

[approvals]
nudges = []
timeout = "1s"
"#;

#[tokio::test]
async fn a_failing_store_reports_nothing_and_keeps_the_gate_shut() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::from_toml(CONFIG).unwrap();
    settings.data_dir = dir.path().to_path_buf();
    let store = Arc::new(Flaky { inner: SledStore::open(dir.path()).unwrap(), broken: AtomicBool::new(false) });
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let core = Core::with_clock(Arc::new(settings), store.clone(), clock.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = plangate_server::http::router(core.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let agent = |m: reqwest::Method, p: &str| http.request(m, format!("{base}{p}")).bearer_auth("agent-token-demo-1");
    let op = |m: reqwest::Method, p: &str| http.request(m, format!("{base}{p}")).bearer_auth("operator-token-123");
    let send = |r: reqwest::RequestBuilder| async move {
        let resp = r.send().await.unwrap();
        (resp.status().as_u16(), resp.json::<Value>().await.unwrap_or(Value::Null))
    };

    send(agent(reqwest::Method::POST, "/v1/sessions/s/enter")).await;
    let (st, d) = send(agent(reqwest::Method::POST, "/v1/sessions/s/proposals").json(&json!({"title": "t"}))).await;
    assert_eq!(st, 201);
    let id = d["approval_id"].as_str().unwrap().to_string();

    // The disk fills up.
    store.broken.store(true, Ordering::SeqCst);
    let (st, e) =
        send(op(reqwest::Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "a"}))).await;
    assert_eq!((st, e["error"]["code"].as_str()), (503, Some("storage_unavailable")));
    let (st, h) = send(http.get(format!("{base}/healthz"))).await;
    assert_eq!((st, h["status"].as_str()), (503, Some("degraded")));
    // Nothing was decided; the gate is still shut.
    let (_, dec) = send(agent(reqwest::Method::GET, "/v1/sessions/s/decision")).await;
    assert_eq!(dec["status"], "pending");
    let (_, g) = send(agent(reqwest::Method::POST, "/v1/gate").json(&json!({"session_id": "s", "tool": "Write", "input": {}}))).await;
    assert_eq!(g["decision"], "deny");
    // The timeout comes due but cannot commit: it is not reported, and stays scheduled.
    clock.advance(1100);
    plangate_server::scheduler::fire_due(&core).await;
    let (_, dec) = send(agent(reqwest::Method::GET, "/v1/sessions/s/decision")).await;
    assert_eq!(dec["status"], "pending");
    assert_eq!(store.inner.timers().unwrap().len(), 1);

    // Space is freed: the timer fires and health recovers.
    store.broken.store(false, Ordering::SeqCst);
    plangate_server::scheduler::fire_due(&core).await;
    let (_, dec) = send(agent(reqwest::Method::GET, "/v1/sessions/s/decision")).await;
    assert_eq!(dec["status"], "timed_out");
    let (st, _) = send(http.get(format!("{base}/healthz"))).await;
    assert_eq!(st, 200);
}
