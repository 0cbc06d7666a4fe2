//! `GET /metrics` through the real binary, against the fake Telegram: behind
//! the operator token, valid Prometheus text, and every family counts what
//! happened (proposals, decisions by status and source, pending approvals,
//! time to decision, nudges, chat API errors, commit latency, gate verdicts).

use super::kit::{plan, propose};
use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::telegram::{FakeTelegram, Scripted};
use reqwest::Method;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// Every sample of a Prometheus text exposition: `name{labels}` → value.
/// Panics on a line that is not a comment, blank or `series value`.
pub(crate) fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let name = series.split('{').next().unwrap_or_default();
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'), "bad metric name in {line:?}");
        assert!(series.matches('{').count() == series.matches('}').count(), "unbalanced labels in {line:?}");
        samples.insert(series.to_string(), value);
    }
    assert!(text.trim_end().ends_with("# EOF"), "an exposition ends with # EOF");
    samples
}

pub(crate) async fn scrape(s: &ServerProcess) -> BTreeMap<String, f64> {
    let resp = s.operator(Method::GET, "/metrics").send().await.expect("scrape");
    assert_eq!(resp.status(), 200);
    let ctype = resp.headers()["content-type"].to_str().unwrap_or_default().to_string();
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    parse(&resp.text().await.expect("body"))
}

#[tokio::test]
async fn metrics_are_scraped_with_the_operator_token_and_count_what_happened() {
    let fake = FakeTelegram::start().await;
    let extra = format!("{}\n[approvals]\nnudges = [\"1s\"]\ntimeout = \"1h\"\n", crate::telegram::config(&fake));
    let s = ServerProcess::start_with(BIN, &["ops"], &extra).await;

    // Not without the operator token.
    let (st, _) = ServerProcess::send(s.http.get(s.url("/metrics"))).await;
    assert_eq!(st, 401);
    let (st, _) = ServerProcess::send(s.agent(Method::GET, "/metrics")).await;
    assert!(st == 401 || st == 403, "{st}");

    let before = scrape(&s).await;
    assert_eq!(before.get("plangate_pending_approvals"), Some(&0.0), "{before:?}");

    // One plan proposed, nudged once, then approved by the operator.
    s.agent(Method::POST, "/v1/sessions/m1/enter").send().await.expect("enter");
    let body = json!({"title": "Add retries", "steps": [{"step": "Read the client"}]});
    let (st, _) = ServerProcess::send(s.agent(Method::POST, "/v1/sessions/m1/proposals").json(&body)).await;
    assert_eq!(st, 201);
    let m = scrape(&s).await;
    assert_eq!(m.get("plangate_proposals_total{agent=\"demo\"}"), Some(&1.0), "{m:?}");
    assert_eq!(m.get("plangate_pending_approvals"), Some(&1.0), "{m:?}");
    eventually(Duration::from_secs(15), "a nudge counted", || async {
        scrape(&s).await.get("plangate_nudges_sent_total{platform=\"telegram\"}") == Some(&1.0)
    })
    .await;

    // The card edit after the decision fails once: a chat API error.
    fake.script("editMessageText", Scripted::Error { status: 400, description: "Bad Request: something".into() });
    s.decide_when_pending("m1", json!({"action": "approve", "actor": "alice"})).await;
    eventually(Duration::from_secs(15), "the failed edit counted", || async {
        scrape(&s).await.get("plangate_chat_api_errors_total{platform=\"telegram\",kind=\"refused\"}") == Some(&1.0)
    })
    .await;

    // Gate verdicts: an approved session may edit; another may not.
    for (session, verdict) in [("m1", "allow"), ("m2", "deny")] {
        let req = json!({"session_id": session, "tool": "Edit", "input": {"file_path": "/tmp/x"}});
        let (st, v) = ServerProcess::send(s.agent(Method::POST, "/v1/gate").json(&req)).await;
        assert_eq!((st, v["decision"].as_str()), (200, Some(verdict)), "{v}");
    }

    let m = scrape(&s).await;
    assert_eq!(m.get("plangate_decisions_total{status=\"approved\",source=\"operator\"}"), Some(&1.0), "{m:?}");
    assert_eq!(m.get("plangate_pending_approvals"), Some(&0.0), "{m:?}");
    assert_eq!(m.get("plangate_time_to_decision_seconds_count"), Some(&1.0), "{m:?}");
    assert!(m.get("plangate_time_to_decision_seconds_sum").is_some_and(|s| *s >= 1.0), "waited past the 1 s nudge: {m:?}");
    assert!(m.get("plangate_store_commit_seconds_count").is_some_and(|c| *c >= 3.0), "{m:?}");
    assert_eq!(m.get("plangate_gate_verdicts_total{verdict=\"allow\"}"), Some(&1.0), "{m:?}");
    assert_eq!(m.get("plangate_gate_verdicts_total{verdict=\"deny\"}"), Some(&1.0), "{m:?}");
    assert!(m.contains_key("plangate_outbox_backlog") && m.contains_key("plangate_waiting_long_polls"), "{m:?}");
}

/// After a restart the gauge is the store's count (taken in the background
/// once the server serves, so a large store does not delay the start), and
/// transitions move it from there.
#[tokio::test]
async fn the_pending_gauge_is_counted_from_the_store_after_a_restart() {
    let mut s = ServerProcess::start(BIN, "").await;
    for session in ["g1", "g2", "g3"] {
        propose(&s, session, &plan("Add retries", &["Read the client"])).await;
    }
    s.decide_when_pending("g3", json!({"action": "approve", "actor": "alice"})).await;
    s.restart().await;
    eventually(Duration::from_secs(15), "the pending gauge counted from the store", || async {
        scrape(&s).await.get("plangate_pending_approvals") == Some(&2.0)
    })
    .await;
    s.decide_when_pending("g1", json!({"action": "approve", "actor": "alice"})).await;
    assert_eq!(scrape(&s).await.get("plangate_pending_approvals"), Some(&1.0));
}

/// A clean shutdown leaves the gauge for the next start (on sled a count
/// reads the whole status index, which at a million pending approvals
/// costs a second and 60–120 MB of resident cache); a crash leaves
/// nothing, and the next start counts. Either way the gauge is the
/// store's count, through any mix of clean stops, crashes and decisions.
#[tokio::test]
async fn the_pending_gauge_survives_clean_stops_and_crashes_in_any_order() {
    let mut s = ServerProcess::start(BIN, "").await;
    for session in ["c1", "c2", "c3"] {
        propose(&s, session, &plan("Add retries", &["Read the client"])).await;
    }
    pending_is(&s, 3.0).await;
    assert!(s.terminate().await.success());
    s.restart().await;
    pending_is(&s, 3.0).await;
    // Moved by transitions from the count the shutdown left, and left again.
    s.decide_when_pending("c1", json!({"action": "approve", "actor": "alice"})).await;
    assert_eq!(scrape(&s).await.get("plangate_pending_approvals"), Some(&2.0));
    assert!(s.terminate().await.success());
    s.restart().await;
    pending_is(&s, 2.0).await;
    // A crash after a decision: nothing left behind, counted again.
    s.decide_when_pending("c2", json!({"action": "approve", "actor": "alice"})).await;
    s.kill9().await;
    s.restart().await;
    pending_is(&s, 1.0).await;
    assert!(s.terminate().await.success());
    s.restart().await;
    pending_is(&s, 1.0).await;
}

async fn pending_is(s: &ServerProcess, n: f64) {
    eventually(Duration::from_secs(15), "the pending gauge", || async { scrape(s).await.get("plangate_pending_approvals") == Some(&n) })
        .await
}
