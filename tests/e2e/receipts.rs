//! Issue 51, execution receipts, through the real binary: every call the
//! gate sees while an approved plan executes is counted against its step;
//! when the plan completes, the receipt (calls per step, the attempts that
//! did not simply run) is on every card, on the page, in the audit chain
//! and at `GET /v1/approvals/{id}/receipt`, also across a kill -9.

use super::kit::{audit, call, gate, gate_call};
use super::telegram::{start, CHAT};
use plangate_testkit::server::{ServerProcess, OTHER_AGENT_TOKEN};
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(15);
const STEPS: [&str; 3] = ["Read the uploader", "Add retries with backoff", "Test the retries"];

async fn steps(s: &ServerProcess, session: &str, status: &[&str; 3]) {
    let steps: Vec<Value> = STEPS.iter().zip(status).map(|(step, status)| json!({"step": step, "status": status})).collect();
    let (st, v) = call(s.agent(Method::POST, &format!("/v1/sessions/{session}/steps")).json(&json!({"steps": steps, "merge": true}))).await;
    assert_eq!(st, 200, "{v}");
}

/// `n` ordinary calls: reads, a test run, writes inside the scope.
async fn work(s: &ServerProcess, session: &str, n: usize) {
    for i in 0..n {
        let (verdict, reason) = match i % 3 {
            0 => gate(s, session, "Read", json!({"file_path": "src/uploader.rs"})).await,
            1 => gate(s, session, "Bash", json!({"command": "cargo test -p uploader"})).await,
            _ => {
                let body = json!({"session_id": session, "tool": "Edit", "input": {"file_path": "src/uploader.rs"},
                    "paths": [{"path": "src/uploader.rs"}]});
                gate_call(s, &body).await
            }
        };
        assert_eq!(verdict, "allow", "call {i}: {reason}");
    }
}

#[tokio::test]
async fn fifty_calls_over_three_steps_with_two_outside_the_scope_make_the_receipt_on_the_card() {
    let fake = FakeTelegram::start().await;
    let mut s = start(&fake).await;
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/r1/enter")).await;
    assert_eq!(st, 200, "{d}");
    let plan = json!({"title": "Add retries to the uploader", "steps": STEPS.iter().map(|s| json!({"step": s})).collect::<Vec<_>>(),
        "scope": {"paths": ["src/**"]}});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/r1/proposals").json(&plan)).await;
    assert_eq!(st, 201, "{d}");
    let id = d["approval_id"].as_str().unwrap_or_default().to_string();
    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!(st, 200, "{d}");
    let card = fake
        .wait_for(WAIT, |reqs| {
            reqs.iter().find(|r| r.method == "sendMessage" && r.keyboard().is_some() && r.chat_id() == Some(CHAT)).cloned()
        })
        .await;
    let card_id = card.message_id_sent().expect("the card's message id");
    // Posted, documented and edited to its decision: the card's work is
    // done, so the kills below can only repeat edits, never the post.
    fake.wait_request("editMessageText", WAIT, |r| r.field("message_id") == &json!(card_id) && r.str("text").contains("Approved v1")).await;

    steps(&s, "r1", &["in_progress", "pending", "pending"]).await;
    work(&s, "r1", 20).await;
    steps(&s, "r1", &["completed", "in_progress", "pending"]).await;
    work(&s, "r1", 13).await;
    // Two writes outside the scope: refused, and people asked to widen it.
    for path in ["docs/uploader.md", "Cargo.toml"] {
        let body = json!({"session_id": "r1", "tool": "Write", "input": {"file_path": path}, "paths": [{"path": path}]});
        let (verdict, reason) = gate_call(&s, &body).await;
        assert_eq!(verdict, "deny", "{path}: {reason}");
    }
    // The widening is turned down; the plan goes on within its scope.
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/r1")).await;
    let amendment = status["approval_id"].as_str().expect("the widening's approval id").to_string();
    assert_ne!(amendment, id, "{status}");
    let turn_down = json!({"action": "revise", "actor": "alice", "feedback": "stay in src/"});
    let (st, d) = call(s.operator(Method::POST, &format!("/v1/approvals/{amendment}/decision")).json(&turn_down)).await;
    assert_eq!(st, 200, "{d}");

    // A crash mid-plan loses no call already answered.
    s.kill9().await;
    s.restart().await;
    steps(&s, "r1", &["completed", "completed", "in_progress"]).await;
    // Live while it runs; an agent reads only its own.
    let receipt_path = format!("/v1/approvals/{id}/receipt");
    let (st, live) = call(s.agent(Method::GET, &receipt_path)).await;
    assert_eq!((st, live["final"].as_bool(), live["totals"]["calls"].as_u64()), (200, Some(false), Some(35)), "{live}");
    let (st, other) = call(reqwest::Client::new().get(s.url(&receipt_path)).bearer_auth(OTHER_AGENT_TOKEN)).await;
    assert_eq!((st, other["error"]["code"].as_str()), (404, Some("not_found")), "{other}");
    work(&s, "r1", 15).await;

    steps(&s, "r1", &["completed", "completed", "completed"]).await;
    let completed = Instant::now();
    // And a crash right after the completion: the card's edit is durable work.
    s.kill9().await;
    s.restart().await;
    let summary = "50 calls, 0 asked, 2 denied (2 outside the scope) · completed";
    let edit =
        fake.wait_request("editMessageText", WAIT, |r| r.field("message_id") == &json!(card_id) && r.str("text").contains(summary)).await;
    // How soon is not asserted here (a loaded machine is no place for a
    // timing): 181 ms on sled when this was written, 120 ms on PostgreSQL,
    // where the restarted process frees the killed one's outbox leases as
    // it starts (docs/OPERATIONS.md; before, they stayed the dead
    // process's for the lease, ≈ 3.1 s here). It arrives, after a kill -9
    // and a restart, within the fake's wait.
    eprintln!("the receipt reached the card {} ms after the completion", completed.elapsed().as_millis());
    let text = edit.str("text");
    for line in
        ["step 1: 20 calls", "step 2: 15 calls (2 outside the scope)", "step 3: 15 calls", "docs/uploader.md — outside the scope (step 2)"]
    {
        assert!(text.contains(line), "{line:?} not on the card: {text}");
    }

    // The same receipt as JSON, for CI; its hash is the audit chain's.
    let (st, r) = call(s.agent(Method::GET, &receipt_path)).await;
    assert_eq!(st, 200, "{r}");
    assert_eq!((r["final"].as_bool(), r["intact"].as_bool(), r["ending"]["how"].as_str()), (Some(true), Some(true), Some("completed")));
    assert_eq!(r["totals"], json!({"calls": 50, "asked": 0, "denied": 0, "out_of_scope": 2}));
    let per_step: Vec<(u64, u64)> =
        r["steps"].as_array().unwrap().iter().map(|s| (s["number"].as_u64().unwrap(), s["calls"].as_u64().unwrap())).collect();
    assert_eq!(per_step, vec![(1, 20), (2, 15), (3, 15)]);
    let attempts: Vec<&str> = r["attempts"].as_array().unwrap().iter().map(|a| a["shown"].as_str().unwrap()).collect();
    assert_eq!(attempts, ["Write docs/uploader.md", "Write Cargo.toml"]);
    assert_eq!(r["amendments"].as_array().map(Vec::len), Some(1), "{r}");
    let hash = r["hash"].as_str().unwrap();
    let recorded = audit(&s, "session=r1").await;
    let receipts: Vec<&Value> = recorded.iter().filter(|e| e["action"] == "receipt").collect();
    assert_eq!(receipts.len(), 1, "{receipts:?}");
    assert!(receipts[0]["detail"].as_str().unwrap().ends_with(&format!("({hash})")), "{receipts:?}");
    // The turned-down amendment's id answers with the same receipt.
    let (st, same) = call(s.operator(Method::GET, &format!("/v1/approvals/{amendment}/receipt"))).await;
    assert_eq!((st, same["hash"].as_str()), (200, Some(hash)), "{same}");
}

#[tokio::test]
async fn a_plan_that_never_ran_has_no_receipt_and_bad_ids_are_told_so() {
    let s = ServerProcess::start(env!("CARGO_BIN_EXE_plangate"), "").await;
    let (st, _) = call(s.agent(Method::POST, "/v1/sessions/n1/enter")).await;
    assert_eq!(st, 200);
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/n1/proposals").json(&json!({"title": "t", "steps": [{"step": "a"}]}))).await;
    assert_eq!(st, 201, "{d}");
    let id = d["approval_id"].as_str().unwrap();
    let (st, v) = call(s.operator(Method::GET, &format!("/v1/approvals/{id}/receipt"))).await;
    assert_eq!((st, v["error"]["code"].as_str()), (404, Some("no_receipt")), "{v}");
    assert!(v["error"]["message"].as_str().unwrap_or_default().contains("nothing ran under v1 (pending)"), "{v}");
    for bad in ["nope", "0123456789abcdef0123456789abcdef"] {
        let (st, v) = call(s.operator(Method::GET, &format!("/v1/approvals/{bad}/receipt"))).await;
        assert_eq!((st, v["error"]["code"].as_str()), (404, Some("not_found")), "{bad}: {v}");
    }
    let (st, _) = call(reqwest::Client::new().get(s.url(&format!("/v1/approvals/{id}/receipt")))).await;
    assert_eq!(st, 401);
}
