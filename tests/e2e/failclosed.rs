//! Fail closed: when the store cannot commit (disk full, flush error), no
//! decision or timeout is reported, the gate stays shut, and `/healthz` says
//! degraded until commits succeed again.

use plangate_server::clock::{Clock, ManualClock, SystemClock};
use plangate_server::config::Settings;
use plangate_server::core::Core;
use plangate_store::prelude::*;
use plangate_store::testing::Faulty;
use plangate_store::SledStore;
use serde_json::{json, Value};
use std::sync::Arc;

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
    // A real store whose commits can be made to fail, as a full disk would.
    let store = Arc::new(Faulty::new(SledStore::open(dir.path()).unwrap()));
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
    store.break_writes(true);
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
    assert_eq!(store.inner().timers().unwrap().len(), 1);

    // Space is freed: the timer fires and health recovers.
    store.break_writes(false);
    plangate_server::scheduler::fire_due(&core).await;
    let (_, dec) = send(agent(reqwest::Method::GET, "/v1/sessions/s/decision")).await;
    assert_eq!(dec["status"], "timed_out");
    let (st, _) = send(http.get(format!("{base}/healthz"))).await;
    assert_eq!(st, 200);
}
