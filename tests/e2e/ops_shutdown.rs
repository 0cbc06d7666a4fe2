//! A graceful shutdown (SIGTERM) answers every waiting long-poll within
//! seconds with a retryable `503 shutting_down`, and the agent client (what
//! the CLI, the hook and the MCP server use) retries against the restarted
//! server and gets the decision made there.

use plangate_agent::client::Timeouts;
use plangate_agent::Client;
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use reqwest::Method;
use serde_json::json;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

#[tokio::test]
async fn shutdown_answers_long_polls_503_and_clients_retry_against_the_restarted_server() {
    let mut s = ServerProcess::start(BIN, "").await;
    for session in ["g1", "g2"] {
        s.agent(Method::POST, &format!("/v1/sessions/{session}/enter")).send().await.expect("enter");
        let body = json!({"title": "Survive a restart", "steps": [{"step": "one"}]});
        let (st, _) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&body)).await;
        assert_eq!(st, 201);
    }
    // A raw long-poll, and the agent client's wait.
    let raw = tokio::spawn(s.agent(Method::GET, "/v1/sessions/g1/decision?wait=300").send());
    let client = Client::with_timeouts(&s.base, Some(AGENT_TOKEN.to_string()), Timeouts::CLI).expect("client");
    let waiting = tokio::spawn(async move { client.wait_decision("g2", Duration::from_secs(120)).await });
    s.waiting(2).await;

    let started = Instant::now();
    let status = s.terminate().await;
    assert!(status.success(), "graceful exit: {status:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let resp = raw.await.expect("task").expect("answered, not dropped");
    assert_eq!(resp.status(), 503);
    assert_eq!(resp.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let body: serde_json::Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["code"], "shutting_down", "{body}");

    // Back on the same port; the client's wait is still going, and sees the decision.
    s.restart_on_same_port().await;
    s.waiting(1).await;
    s.decide_when_pending("g2", json!({"action": "approve", "actor": "alice"})).await;
    let decision = waiting.await.expect("task").expect("the client retried").expect("a decision");
    assert_eq!(decision.status.as_str(), "approved");
}
