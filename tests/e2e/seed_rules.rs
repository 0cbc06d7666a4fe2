//! The seed's rules kept to the letter (issue #20), through the real binary:
//! a merge patch keeps what it does not carry, stuck subagents can be
//! cleared by a person and expire, namespaces are shared between the agents
//! the config names together.

use plangate_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    ServerProcess::send(req).await
}

/// A session executing an approved plan whose "run tests" step has an
/// acceptance criterion.
async fn executing(s: &ServerProcess, sid: &str) {
    let (st, _) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/enter"))).await;
    assert_eq!(st, 200);
    let plan = json!({"title": "Ship the fix", "steps": [
        {"step": "write the fix", "status": "in_progress", "active_form": "Writing the fix"},
        {"step": "run tests", "acceptance_criteria": ["cargo test is green"]}]});
    let (st, d) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/proposals")).json(&plan)).await;
    assert_eq!(st, 201, "{d}");
    let id = d["approval_id"].as_str().expect("id").to_string();
    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("approved")), "{d}");
}

#[tokio::test]
async fn a_merge_patch_keeps_the_criteria_it_does_not_carry_and_the_closure_gate_catches_them() {
    let s = ServerProcess::start(BIN, "").await;
    executing(&s, "merge-1").await;
    let steps = "/v1/sessions/merge-1/steps";

    // Without merge, completing the step without its criterion is refused…
    let whole = json!({"steps": [{"step": "write the fix", "status": "completed"}, {"step": "run tests", "status": "completed",
        "acceptance_criteria": ["cargo test is green"]}]});
    let (st, e) = call(s.agent(Method::POST, steps).json(&whole)).await;
    assert_eq!((st, e["error"]["code"].as_str()), (422, Some("invalid_plan")), "{e}");
    // …and so is the same completion as a merge patch: the step keeps its
    // acceptance criteria, which nobody verified.
    let patch = json!({"merge": true, "steps": [{"step": "run tests", "status": "completed"}]});
    let (st, e) = call(s.agent(Method::POST, steps).json(&patch)).await;
    assert_eq!((st, e["error"]["code"].as_str()), (422, Some("invalid_plan")), "a merge dropped the criteria: {e}");
    assert!(e["error"]["message"].as_str().unwrap_or("").contains("verified_before_completed"), "{e}");

    // A patch changes only the fields it carries.
    let patch =
        json!({"merge": true, "steps": [{"step": "run tests", "status": "in_progress"}, {"step": "write the fix", "status": "completed"}]});
    let (st, v) = call(s.agent(Method::POST, steps).json(&patch)).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["steps"],
        json!([{"step": "write the fix", "status": "completed", "active_form": "Writing the fix"},
               {"step": "run tests", "status": "in_progress", "acceptance_criteria": ["cargo test is green"]}])
    );
    // Verified, it completes, and the plan is complete.
    let patch =
        json!({"merge": true, "steps": [{"step": "run tests", "status": "completed", "verified_criteria": ["cargo test is green"]}]});
    let (st, v) = call(s.agent(Method::POST, steps).json(&patch)).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["steps"][1]["acceptance_criteria"], json!(["cargo test is green"]));
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/merge-1")).await;
    assert_eq!(status["approval"], "none", "every step closed: the plan is complete");
}
