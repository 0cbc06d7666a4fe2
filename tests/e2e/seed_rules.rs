//! The seed's rules kept to the letter (issue #20), through the real binary:
//! a merge patch keeps what it does not carry, stuck subagents can be
//! cleared by a person and expire, namespaces are shared between the agents
//! the config names together.

use super::kit::call;
use plangate_testkit::server::{eventually, ServerProcess, AGENT_TOKEN, OTHER_AGENT_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

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

async fn open_runs(s: &ServerProcess, sid: &str) -> Value {
    let (st, v) = call(s.agent(Method::GET, &format!("/v1/sessions/{sid}"))).await;
    assert_eq!(st, 200, "{v}");
    v["open_subagents"].clone()
}

/// A pending plan with a subagent run open, whose approval is refused.
async fn stuck(s: &ServerProcess, sid: &str) -> String {
    let (st, _) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/enter"))).await;
    assert_eq!(st, 200);
    let (st, d) =
        call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/proposals")).json(&json!({"title": "Stuck", "steps": [{"step": "a"}]})))
            .await;
    assert_eq!(st, 201, "{d}");
    let (st, e) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/subagents")).json(&json!({"run_id": "crashed-child"}))).await;
    assert_eq!(st, 204, "{e}");
    let id = d["approval_id"].as_str().expect("id").to_string();
    let (st, e) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!((st, e["error"]["code"].as_str()), (409, Some("subagents_open")), "{e}");
    assert!(e["error"]["message"].as_str().unwrap_or("").contains("/plan subagents clear"), "{e}");
    id
}

#[tokio::test]
async fn an_operator_clears_a_stuck_subagent_audited_and_the_plan_can_be_approved() {
    let s = ServerProcess::start(BIN, "").await;
    let id = stuck(&s, "stuck-1").await;
    let clear = |agent: &str, sid: &str| s.operator(Method::POST, &format!("/v1/operator/sessions/{agent}/{sid}/subagents/clear"));

    // Bad calls: no actor, an unknown agent, a run that is not open, the agent's own token.
    let (st, e) = call(clear("demo", "stuck-1").json(&json!({}))).await;
    assert_eq!((st, e["error"]["code"].as_str()), (422, Some("invalid_request")), "{e}");
    let (st, e) = call(clear("ghost", "stuck-1").json(&json!({"actor": "ops"}))).await;
    assert_eq!((st, e["error"]["code"].as_str()), (404, Some("not_found")), "{e}");
    let (st, e) = call(clear("demo", "stuck-1").json(&json!({"actor": "ops", "run_id": "other-child"}))).await;
    assert_eq!((st, e["error"]["code"].as_str()), (422, Some("invalid_request")), "{e}");
    assert!(e["error"]["message"].as_str().unwrap_or("").contains("open: crashed-child"), "{e}");
    let (st, _) = call(
        s.http.post(s.url("/v1/operator/sessions/demo/stuck-1/subagents/clear")).bearer_auth(AGENT_TOKEN).json(&json!({"actor": "me"})),
    )
    .await;
    assert_eq!(st, 403);
    assert_eq!(open_runs(&s, "stuck-1").await, json!(["crashed-child"]));

    // The operator clears it: Status back, the audit says who, approval goes through.
    let (st, v) = call(clear("demo", "stuck-1").json(&json!({"actor": "ops"}))).await;
    assert_eq!((st, v["open_subagents"].clone()), (200, json!([])), "{v}");
    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?session=stuck-1")).await;
    let cleared = audit.as_array().expect("audit").iter().find(|e| e["action"] == "subagents_clear").cloned().expect("audited");
    assert_eq!(cleared["actor"], "operator:ops");
    assert_eq!(cleared["detail"], "operator:ops cleared 1 subagent run(s): crashed-child (the plan no longer waits for them)");
    let (st, e) = call(clear("demo", "stuck-1").json(&json!({"actor": "ops"}))).await;
    assert_eq!((st, e["error"]["code"].as_str()), (409, Some("invalid_state")), "nothing left to clear: {e}");
    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("approved")), "{d}");
}

#[tokio::test]
async fn an_open_run_expires_without_a_heartbeat_and_survives_with_one() {
    let s = ServerProcess::start(BIN, "[approvals]\nsubagent_expiry = \"2s\"\n").await;
    let id = stuck(&s, "expire-1").await;
    let run = s.agent(Method::POST, "/v1/sessions/expire-1/subagents").json(&json!({"run_id": "crashed-child"}));

    // Heard of every half second for three seconds (past its first expiry
    // timer): still open. The time passing is the point here.
    let mut beat = tokio::time::interval(std::time::Duration::from_millis(500));
    for _ in 0..7 {
        beat.tick().await;
        assert_eq!(call(run.try_clone().expect("clone")).await.0, 204);
    }
    assert_eq!(open_runs(&s, "expire-1").await, json!(["crashed-child"]));
    // Silent: it expires on its persisted timer, audited by the scheduler.
    eventually(std::time::Duration::from_secs(15), "the run expires", || async { open_runs(&s, "expire-1").await == json!([]) }).await;
    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?session=expire-1")).await;
    let expired = audit.as_array().expect("audit").iter().find(|e| e["action"] == "subagent_expired").cloned().expect("audited");
    assert_eq!(expired["actor"], "scheduler");
    assert!(expired["detail"].as_str().unwrap_or("").starts_with("subagent run crashed-child expired: not heard of for"), "{expired}");
    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("approved")), "{d}");
}

/// `plangate namespace …` against the real server.
async fn namespace_cli(s: &ServerProcess, token: &str, args: &[&str], stdin: &str) -> (i32, Value, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(BIN)
        .arg("namespace")
        .args(args)
        .env("PLANGATE_URL", &s.base)
        .env("PLANGATE_TOKEN", token)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).await.expect("write");
    drop(input);
    let out = child.wait_with_output().await.expect("output");
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn namespaces_are_shared_between_the_agents_the_config_names_and_reachable_from_the_cli() {
    let s = ServerProcess::start(BIN, "[namespaces.release]\nagents = [\"demo\", \"other\"]\n").await;
    // Agent demo writes through the CLI, agent other through the API: one list.
    let (code, ns, err) = namespace_cli(
        &s,
        AGENT_TOKEN,
        &["update", "release", "-", "--session", "lead"],
        r#"[{"step": "Tag v2", "acceptance_criteria": ["CI green"]}, {"step": "Publish"}]"#,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(ns["steps"][0]["updated_by"], "demo/lead");
    let patch = json!({"session_id": "helper", "steps": [{"step": "Publish", "status": "in_progress"}]});
    let (st, v) = call(s.http.post(s.url("/v1/namespaces/release/steps")).bearer_auth(OTHER_AGENT_TOKEN).json(&patch)).await;
    assert_eq!(st, 200, "{v}");
    let (code, ns, err) = namespace_cli(&s, AGENT_TOKEN, &["show", "release"], "").await;
    assert_eq!(code, 0, "{err}");
    let who: Vec<(&str, &str)> = ns["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| (s["step"].as_str().unwrap_or(""), s["updated_by"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(who, [("Tag v2", "demo/lead"), ("Publish", "other/helper")]);
    // A patch merges like update_plan: the inherited criterion is checked.
    let (code, _, err) =
        namespace_cli(&s, OTHER_AGENT_TOKEN, &["update", "release", "-"], r#"{"steps": [{"step": "Tag v2", "status": "completed"}]}"#)
            .await;
    assert_eq!(code, 2);
    assert!(err.contains("verified_before_completed"), "{err}");
    let (code, _, err) = namespace_cli(&s, AGENT_TOKEN, &["update", "release", "-"], "not json").await;
    assert_eq!(code, 2);
    assert!(err.contains("not a JSON array of steps"), "{err}");
    let (code, _, err) = namespace_cli(&s, AGENT_TOKEN, &["show", "../up"], "").await;
    assert_eq!(code, 2, "{err}");

    // Any other name is private to each agent.
    let (code, _, err) = namespace_cli(&s, AGENT_TOKEN, &["update", "notes", "-", "--session", "lead"], r#"[{"step": "mine"}]"#).await;
    assert_eq!(code, 0, "{err}");
    let (code, theirs, _) = namespace_cli(&s, OTHER_AGENT_TOKEN, &["show", "notes"], "").await;
    assert_eq!((code, theirs["steps"].clone()), (0, json!([])));
}
