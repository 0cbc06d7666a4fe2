//! Retention through the real binary: `plangate prune --dry-run` reports
//! what would go and removes nothing; pruning removes decided approvals past
//! their age and old audit, and never a pending approval, its timers, or a
//! session's latest proposal.

use super::kit::{plan, propose_id};
use plangate_testkit::server::{eventually, ServerProcess, OPERATOR_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

async fn prune(s: &ServerProcess, dry_run: bool) -> Value {
    let (st, r) = ServerProcess::send(s.operator(Method::POST, &format!("/v1/operator/prune?dry_run={dry_run}"))).await;
    assert_eq!(st, 200, "{r}");
    r
}

#[tokio::test]
async fn prune_removes_old_decided_approvals_and_keeps_pending_work() {
    // Retention is a sled feature: sled here even in the PostgreSQL pass.
    let extra = format!("[retention]\ndecided_approvals = \"1s\"\naudit = \"1s\"\ninterval = \"1h\"\n{}", plangate_testkit::pg::SLED);
    let s = ServerProcess::start(BIN, &extra).await;
    let pending = propose_id(&s, "p1", &plan("Still waiting", &["one"])).await;
    let old = propose_id(&s, "d1", &plan("Done long ago", &["one"])).await;
    s.decide_when_pending("d1", json!({"action": "approve", "actor": "alice"})).await;
    let latest = propose_id(&s, "d1", &plan("The next plan", &["one"])).await;
    assert_ne!(old, latest);

    eventually(Duration::from_secs(15), "the decided approval is past its age", || async { prune(&s, true).await["approvals"] == 1 }).await;
    let dry = prune(&s, true).await;
    assert!(dry["audit"].as_u64().is_some_and(|n| n > 0), "{dry}");
    let out = tokio::process::Command::new(BIN)
        .args(["prune", "--dry-run", "--url", &s.base])
        .env("PLANGATE_OPERATOR_TOKEN", OPERATOR_TOKEN)
        .output()
        .await
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.starts_with("would prune: 1 decided approvals"), "{stdout}");
    let (st, _) = ServerProcess::send(s.operator(Method::GET, &format!("/v1/approvals/{old}"))).await;
    assert_eq!(st, 200, "a dry run removes nothing");

    let done = prune(&s, false).await;
    assert_eq!(done["approvals"], 1, "{done}");
    let (st, _) = ServerProcess::send(s.operator(Method::GET, &format!("/v1/approvals/{old}"))).await;
    assert_eq!(st, 404, "the old decided approval is gone");
    let (st, p) = ServerProcess::send(s.operator(Method::GET, &format!("/v1/approvals/{pending}"))).await;
    assert_eq!(st, 200, "a pending approval is never pruned");
    assert!(p["timers"].as_array().is_some_and(|t| !t.is_empty()), "its timers stay: {p}");
    let (st, _) = ServerProcess::send(s.operator(Method::GET, &format!("/v1/approvals/{latest}"))).await;
    assert_eq!(st, 200);
    let (st, status) = ServerProcess::send(s.agent(Method::GET, "/v1/sessions/p1")).await;
    assert_eq!(st, 200, "{status}");
    assert_eq!(prune(&s, true).await["approvals"], 0);
}
