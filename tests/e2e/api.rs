//! The agent and operator HTTP API (API.md) against the real binary.

use super::kit::{call, propose};
use plangate_testkit::server::{document, eventually, ServerProcess, OTHER_AGENT_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A plan with every field the API takes: summary, two steps, a risk.
fn full_plan(title: &str) -> Value {
    json!({"title": title, "summary": "why", "steps": [{"step": "read"}, {"step": "write"}], "risks": ["r"]})
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn walkthrough_propose_decide_decision() {
    let s = ServerProcess::start(BIN, "").await;
    let (st, v) = call(s.http.get(s.url("/healthz"))).await;
    assert_eq!((st, &v["status"], &v["waiting"]), (200, &json!("ok"), &json!(0)), "{v}");

    // A never-seen session is normal/none, version 0.
    let (st, v) = call(s.agent(Method::GET, "/v1/sessions/s1")).await;
    assert_eq!(st, 200);
    assert_eq!((v["mode"].as_str(), v["approval"].as_str(), v["version"].as_u64()), (Some("normal"), Some("none"), Some(0)));

    let d = propose(&s, "s1", &full_plan("Add retries")).await;
    assert_eq!(d["status"], "pending");
    assert_eq!(d["version"], 1);
    let id = d["approval_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    assert!(d["plan_hash"].as_str().unwrap().starts_with("sha256:"));
    let path = d["document_path"].as_str().unwrap();
    assert!(document(path).await.contains("# Add retries"));

    // Identical re-proposal while pending: same id and version.
    let (st, again) = call(s.agent(Method::POST, "/v1/sessions/s1/proposals").json(&full_plan("Add retries"))).await;
    assert_eq!(st, 201);
    assert_eq!((again["approval_id"].as_str(), again["version"].as_u64()), (Some(id.as_str()), Some(1)));

    let (st, v) = call(s.agent(Method::GET, "/v1/sessions/s1")).await;
    assert_eq!(st, 200);
    assert_eq!((v["mode"].as_str(), v["approval"].as_str(), v["approval_id"].as_str()), (Some("plan"), Some("pending"), Some(id.as_str())));

    // A long-poll is released by the decision itself.
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s1/decision?wait=30")));
    s.waiting(1).await;
    let (st, dec) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!(st, 200, "{dec}");
    assert_eq!(dec["status"], "approved");
    assert_eq!(dec["decided_by"], "operator:alice");
    let (st, waited) = waiter.await.unwrap();
    assert_eq!(st, 200);
    assert_eq!(waited["status"], "approved");
    assert!(waited["injection"].as_str().unwrap().starts_with("[PLAN_DECISION]: approved"));
    assert_eq!(waited["plan_hash"], d["plan_hash"]);

    // Injection: read once, then gone.
    let (_, inj) = call(s.agent(Method::POST, "/v1/sessions/s1/injection/take")).await;
    assert!(inj["injection"].as_str().unwrap().contains("approved"));
    let (_, inj) = call(s.agent(Method::POST, "/v1/sessions/s1/injection/take")).await;
    assert_eq!(inj, json!({"injection": null}));

    let (_, h) = call(s.agent(Method::GET, "/v1/sessions/s1/hydration")).await;
    let text = h["text"].as_str().unwrap();
    assert!(text.starts_with("[Your active plan was preserved across context compression]\n"), "{h}");
    assert!(text.ends_with("\n- [ ] read (pending)\n- [ ] write (pending)"), "{h}");

    let (st, list) = call(s.operator(Method::GET, "/v1/approvals?status=approved")).await;
    assert_eq!(st, 200);
    assert_eq!(list.as_array().unwrap().len(), 1);
    let (st, audit) = call(s.operator(Method::GET, "/v1/audit?session=s1")).await;
    assert_eq!(st, 200);
    let actions: Vec<_> = audit.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap().to_string()).collect();
    assert!(actions.contains(&"approve".to_string()), "{actions:?}");
    let approve = audit.as_array().unwrap().iter().find(|e| e["action"] == "approve").unwrap();
    assert_eq!(approve["actor"], "operator:alice");

    // The receipt lands in the document (a chat job, after the answer).
    eventually(std::time::Duration::from_secs(10), "the receipt in the document", || async {
        std::fs::read_to_string(path).unwrap().contains("Approved v1 by operator:alice")
    })
    .await;
}

#[tokio::test]
async fn revise_supersede_steps_subagents_questions() {
    let s = ServerProcess::start(BIN, "").await;
    let d1 = propose(&s, "s2", &full_plan("v1 plan")).await;
    let id1 = d1["approval_id"].as_str().unwrap().to_string();
    // Revise needs feedback.
    let (st, e) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id1}/decision")).json(&json!({"action": "revise", "actor": "bob"}))).await;
    assert_eq!((st, code(&e)), (422, "invalid_request"));
    let (st, dec) = call(
        s.operator(Method::POST, &format!("/v1/approvals/{id1}/decision"))
            .json(&json!({"action": "revise", "feedback": "smaller", "actor": "bob"})),
    )
    .await;
    assert_eq!(st, 200);
    assert_eq!((dec["status"].as_str(), dec["feedback"].as_str()), (Some("rejected"), Some("smaller")));
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/s2")).await;
    assert_eq!(
        (status["mode"].as_str(), status["approval"].as_str(), status["rejection_count"].as_u64()),
        (Some("plan"), Some("rejected"), Some(1))
    );

    // v2, then v3 supersedes v2; a decision on v2 is stale.
    let (_, d2) = call(s.agent(Method::POST, "/v1/sessions/s2/proposals").json(&full_plan("v2 plan"))).await;
    let (_, d3) = call(s.agent(Method::POST, "/v1/sessions/s2/proposals").json(&full_plan("v3 plan"))).await;
    assert_eq!((d2["version"].as_u64(), d3["version"].as_u64()), (Some(2), Some(3)));
    let id2 = d2["approval_id"].as_str().unwrap();
    let (st, e) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id2}/decision")).json(&json!({"action": "approve", "actor": "a"}))).await;
    assert_eq!((st, code(&e)), (409, "stale_approval"));
    assert!(e["error"]["message"].as_str().unwrap().contains("superseded by v3"), "{e}");
    // A decided approval: "already …".
    let (st, e) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id1}/decision")).json(&json!({"action": "approve", "actor": "a"}))).await;
    assert_eq!((st, code(&e)), (409, "stale_approval"));

    // Steps: rules refused with their name; merge works.
    let bad = json!({"steps": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]});
    let (st, e) = call(s.agent(Method::POST, "/v1/sessions/s2/steps").json(&bad)).await;
    assert_eq!((st, code(&e)), (422, "invalid_plan"));
    assert_eq!(e["error"]["details"]["rule"], "single_in_progress");
    let unverified = json!({"steps": [{"step": "a", "status": "completed", "acceptance_criteria": ["tests pass"]}]});
    let (st, e) = call(s.agent(Method::POST, "/v1/sessions/s2/steps").json(&unverified)).await;
    assert_eq!((st, e["error"]["details"]["rule"].as_str()), (422, Some("verified_before_completed")));
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/s2/steps").json(&json!({"steps": [{"step": "new one"}], "merge": true}))).await;
    assert_eq!(st, 200);
    assert_eq!(v["steps"].as_array().unwrap().len(), 3);

    // Subagents block approve but not revise.
    let (st, _) = call(s.agent(Method::POST, "/v1/sessions/s2/subagents").json(&json!({"run_id": "r1"}))).await;
    assert_eq!(st, 204);
    let id3 = d3["approval_id"].as_str().unwrap();
    let (st, e) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id3}/decision")).json(&json!({"action": "approve", "actor": "a"}))).await;
    assert_eq!((st, code(&e)), (409, "subagents_open"));
    assert_eq!(e["error"]["details"]["open_subagents"], json!(["r1"]));
    let (st, e) = call(s.agent(Method::POST, "/v1/sessions/s2/proposals").json(&full_plan("v4"))).await;
    assert_eq!((st, code(&e)), (409, "subagents_open"));
    let (st, _) = call(s.agent(Method::DELETE, "/v1/sessions/s2/subagents/r1")).await;
    assert_eq!(st, 204);

    // Questions: ask, one at a time, answered by a human (operator here via chat is covered elsewhere).
    let (st, q) =
        call(s.agent(Method::POST, "/v1/sessions/s2/questions").json(&json!({"question": "Which DB?", "options": ["pg", "sqlite"]}))).await;
    assert_eq!(st, 201);
    let qid = q["question_id"].as_str().unwrap().to_string();
    let (st, e) =
        call(s.agent(Method::POST, "/v1/sessions/s2/questions").json(&json!({"question": "Another?", "allow_freetext": true}))).await;
    assert_eq!((st, code(&e)), (409, "invalid_state"));
    let (st, a) = call(s.agent(Method::GET, &format!("/v1/sessions/s2/questions/{qid}?wait=0"))).await;
    assert_eq!((st, a), (200, json!({"status": "pending"})));
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/s2")).await;
    assert_eq!(status["pending_question"]["options"], json!(["pg", "sqlite"]));

    // Cancel by the operator halts the session: read-only, not released.
    let (st, dec) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id3}/decision")).json(&json!({"action": "cancel", "actor": "a"}))).await;
    assert_eq!((st, dec["status"].as_str()), (200, Some("cancelled")));
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/s2")).await;
    assert_eq!((status["mode"].as_str(), status["approval"].as_str()), (Some("halted"), Some("cancelled")));
    assert!(status.get("released_by").is_none(), "{status}");
    let gate = json!({"session_id": "s2", "tool": "Bash", "input": {"command": "rm -rf /srv"}});
    let (_, v) = call(s.agent(Method::POST, "/v1/gate").json(&gate)).await;
    assert_eq!(v["decision"], "deny", "operator cancel must not open the gate: {v}");
    // The operator's explicit release does, and says so.
    let (st, v) = call(s.operator(Method::POST, "/v1/operator/sessions/demo/s2/release").json(&json!({"actor": "a"}))).await;
    assert_eq!((st, v["released_by"].as_str()), (200, Some("operator:a")), "{v}");
    let (_, v) = call(s.agent(Method::POST, "/v1/gate").json(&gate)).await;
    assert_eq!(v["decision"], "allow", "{v}");
    let (st, v) = call(s.operator(Method::POST, "/v1/operator/sessions/nobody/s2/release").json(&json!({"actor": "a"}))).await;
    assert_eq!((st, code(&v)), (404, "not_found"), "{v}");
}

#[tokio::test]
async fn bad_input_gets_the_contract_errors_and_changes_nothing() {
    let s = ServerProcess::start(BIN, "").await;
    let d = propose(&s, "bad", &full_plan("Plan")).await;
    let id = d["approval_id"].as_str().unwrap().to_string();
    let post = |path: &str, body: &str| s.agent(Method::POST, path).header("content-type", "application/json").body(body.to_string());

    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (post("/v1/sessions/bad/proposals", "{\"title\": "), 422, "invalid_request"),
        (post("/v1/sessions/bad/proposals", "{\"title\": \"x\", \"typo\": 1}"), 422, "invalid_request"),
        (post("/v1/sessions/bad/proposals", "{\"title\": 5}"), 422, "invalid_request"),
        (post("/v1/sessions/bad/proposals", "[1,2]"), 422, "invalid_request"),
        (post("/v1/sessions/bad/proposals", "{\"title\": \"  \"}"), 422, "invalid_plan"),
        (
            post(
                "/v1/sessions/bad/proposals",
                &json!({"title": "t", "steps": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]})
                    .to_string(),
            ),
            422,
            "invalid_plan",
        ),
        (
            post(
                "/v1/sessions/bad/proposals",
                &json!({"title": "t", "steps": [{"step": "a", "status": "completed", "acceptance_criteria": ["x"]}]}).to_string(),
            ),
            422,
            "invalid_plan",
        ),
        (post("/v1/sessions/bad/proposals", &json!({"markdown": "x".repeat(60_001)}).to_string()), 422, "invalid_plan"),
        (post("/v1/sessions/bad/proposals", &format!("{{\"title\": \"{}\"}}", "x".repeat(1_100_000))), 413, "payload_too_large"),
        (post(&format!("/v1/sessions/{}/enter", "a".repeat(200)), "{}"), 422, "invalid_request"),
        (post("/v1/sessions/a%2Fb/enter", "{}"), 422, "invalid_request"),
        (s.agent(Method::GET, "/v1/sessions/bad/decision?wait=301"), 422, "invalid_request"),
        (s.agent(Method::GET, "/v1/sessions/bad/decision?wait=abc"), 422, "invalid_request"),
        (s.agent(Method::GET, "/v1/sessions/never/decision"), 404, "not_found"),
        (
            s.operator(Method::POST, &format!("/v1/approvals/{}/decision", "0".repeat(32)))
                .json(&json!({"action": "approve", "actor": "a"})),
            404,
            "not_found",
        ),
        (s.operator(Method::POST, "/v1/approvals/zzz/decision").json(&json!({"action": "approve", "actor": "a"})), 404, "not_found"),
        (s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve"})), 422, "invalid_request"),
        (
            s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "yolo", "actor": "a"})),
            422,
            "invalid_request",
        ),
        (
            s.agent(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "agent"})),
            403,
            "forbidden",
        ),
        (s.agent(Method::GET, "/v1/approvals"), 403, "forbidden"),
        (s.operator(Method::GET, "/v1/sessions/bad"), 403, "forbidden"),
        (s.http.get(s.url("/v1/sessions/bad")), 401, "unauthorized"),
        (s.http.get(s.url("/v1/sessions/bad")).bearer_auth("nope-nope-nope"), 401, "unauthorized"),
        (post("/v1/sessions/fresh/proposals", &full_plan("outside plan mode").to_string()), 409, "invalid_state"),
    ];
    for (i, (req, status, expected)) in cases.into_iter().enumerate() {
        let (st, body) = call(req).await;
        assert_eq!((st, code(&body)), (status, expected), "case {i}: {body}");
        assert!(!body["error"]["message"].as_str().unwrap_or("").is_empty(), "case {i} has no message");
    }
    // Nothing changed: still v1 pending under the same id.
    let (_, d2) = call(s.agent(Method::GET, "/v1/sessions/bad/decision")).await;
    assert_eq!((d2["approval_id"].as_str(), d2["status"].as_str(), d2["version"].as_u64()), (Some(id.as_str()), Some("pending"), Some(1)));
    // Another agent cannot see this session: its own namespace is empty.
    let (_, other) = call(s.http.get(s.url("/v1/sessions/bad")).bearer_auth(OTHER_AGENT_TOKEN)).await;
    assert_eq!(other["version"], 0);
    // Decision on an already-decided approval.
    call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "a"}))).await;
    let (st, e) = call(
        s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "revise", "feedback": "x", "actor": "b"})),
    )
    .await;
    assert_eq!((st, code(&e)), (409, "stale_approval"));
    assert!(e["error"]["message"].as_str().unwrap().contains("already approved by operator:a"), "{e}");
}

#[tokio::test]
async fn thirty_two_concurrent_deciders_exactly_one_wins() {
    let s = ServerProcess::start(BIN, "").await;
    let d = propose(&s, "race", &full_plan("Race")).await;
    let id = d["approval_id"].as_str().unwrap().to_string();
    let mut tasks = Vec::new();
    for i in 0..32 {
        let req = s
            .operator(Method::POST, &format!("/v1/approvals/{id}/decision"))
            .json(&json!({"action": "approve", "actor": format!("op{i}")}));
        tasks.push(tokio::spawn(call(req)));
    }
    let mut wins = 0;
    let mut winner = String::new();
    let mut stale = 0;
    for t in tasks {
        let (st, body) = t.await.unwrap();
        match st {
            200 => {
                wins += 1;
                winner = body["decided_by"].as_str().unwrap().to_string();
            }
            409 => {
                assert_eq!(code(&body), "stale_approval");
                stale += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((wins, stale), (1, 31));
    let (_, dec) = call(s.agent(Method::GET, "/v1/sessions/race/decision")).await;
    assert_eq!(dec["decided_by"].as_str(), Some(winner.as_str()));
}

#[tokio::test]
async fn kill_9_keeps_the_pending_approval_and_a_restart_releases_waiters() {
    let mut s = ServerProcess::start(BIN, "").await;
    let d = propose(&s, "durable", &full_plan("Survive")).await;
    let id = d["approval_id"].as_str().unwrap().to_string();
    s.kill9().await;
    s.restart().await;
    let (st, dec) = call(s.agent(Method::GET, "/v1/sessions/durable/decision")).await;
    assert_eq!(st, 200);
    assert_eq!((dec["approval_id"].as_str(), dec["status"].as_str()), (Some(id.as_str()), Some("pending")));
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/durable/decision?wait=30")));
    s.waiting(1).await;
    let (st, _) = call(
        s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "after-restart"})),
    )
    .await;
    assert_eq!(st, 200);
    let (st, waited) = waiter.await.unwrap();
    assert_eq!((st, waited["status"].as_str()), (200, Some("approved")));
    // And the acknowledged decision survives another kill -9.
    s.restart().await;
    let (_, dec) = call(s.agent(Method::GET, "/v1/sessions/durable/decision")).await;
    assert_eq!(dec["decided_by"], "operator:after-restart");
}

#[tokio::test]
async fn markdown_proposals_keep_the_text_verbatim() {
    let s = ServerProcess::start(BIN, "").await;
    call(s.agent(Method::POST, "/v1/sessions/md/enter")).await;
    let md = "# Migrate config\n\nMove to TOML.\n\n## Steps\n1. Parse old\n2. Write new\n";
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/md/proposals").json(&json!({"markdown": md}))).await;
    assert_eq!(st, 201, "{d}");
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/md")).await;
    assert_eq!(status["title"], "Migrate config");
    assert_eq!(status["steps"].as_array().unwrap().len(), 2);
    // The document is the markdown verbatim.
    assert_eq!(document(d["document_path"].as_str().unwrap()).await, md);
}

#[tokio::test]
async fn gate_endpoint_follows_the_session_mode() {
    let s = ServerProcess::start(BIN, "").await;
    let gate = |tool: &str, input: Value| s.agent(Method::POST, "/v1/gate").json(&json!({"session_id": "g", "tool": tool, "input": input}));
    // Never in plan mode: no approved plan, so read-only (the default scope).
    let (_, v) = call(gate("Write", json!({"file_path": "x"}))).await;
    assert_eq!(v["decision"], "deny", "{v}");
    assert!(v["reason"].as_str().unwrap().contains("enter plan mode"), "{v}");
    call(s.agent(Method::POST, "/v1/sessions/g/enter")).await;
    for (tool, input, expected) in [
        ("Write", json!({"file_path": "x"}), "deny"),
        ("Read", json!({"file_path": "x"}), "allow"),
        ("Bash", json!({"command": "ls -la"}), "allow"),
        ("Bash", json!({"command": "ls; rm -rf /"}), "deny"),
        ("Bash", json!({"command": "find . -delete"}), "deny"),
        ("mcp__github__create_issue", json!({}), "deny"),
        ("unknown_tool", json!({}), "deny"),
    ] {
        let (st, v) = call(gate(tool, input.clone())).await;
        assert_eq!(st, 200);
        assert_eq!(v["decision"], expected, "{tool} {input}: {v}");
        assert!(!v["reason"].as_str().unwrap().is_empty());
    }
    // Pending approval: still plan mode, still denied.
    call(s.agent(Method::POST, "/v1/sessions/g/proposals").json(&full_plan("gate"))).await;
    let (_, v) = call(gate("Edit", json!({}))).await;
    assert_eq!(v["decision"], "deny");
    // Approved: open.
    let (_, d) = call(s.agent(Method::GET, "/v1/sessions/g/decision")).await;
    let id = d["approval_id"].as_str().unwrap();
    call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "a"}))).await;
    let (_, v) = call(gate("Edit", json!({}))).await;
    assert_eq!(v["decision"], "allow");
}

/// The seed's behaviour is an explicit opt-in per agent: with
/// `gate_scope = "plan_mode_only"` a session that never planned may mutate,
/// and plan mode is still gated.
#[tokio::test]
async fn plan_mode_only_scope_is_an_explicit_opt_in() {
    const SEED_TOKEN: &str = "test-seed-agent-token-0123456789";
    let s = ServerProcess::start(BIN, &format!("[agents.seed]\ntoken = \"{SEED_TOKEN}\"\ngate_scope = \"plan_mode_only\"\n")).await;
    let gate = |token: &str, session: &str| {
        s.http
            .post(s.url("/v1/gate"))
            .bearer_auth(token)
            .json(&json!({"session_id": session, "tool": "Write", "input": {"file_path": "x"}}))
    };
    let (_, v) = call(gate(SEED_TOKEN, "free")).await;
    assert_eq!(v["decision"], "allow", "{v}");
    // The default agent in the same server stays strict.
    let (_, v) = call(gate(plangate_testkit::server::AGENT_TOKEN, "free")).await;
    assert_eq!(v["decision"], "deny", "{v}");
    call(s.http.post(s.url("/v1/sessions/free/enter")).bearer_auth(SEED_TOKEN)).await;
    let (_, v) = call(gate(SEED_TOKEN, "free")).await;
    assert_eq!(v["decision"], "deny", "{v}");
}

/// OpenClaw's plan tool as it is: `update_plan {"plan": [{"step", "status",
/// "activeForm"}], "explanation"}`, and a proposal whose steps are under
/// `plan`, are read as plangate's own shapes (issue 48).
#[tokio::test]
async fn openclaw_plan_shapes_are_accepted_as_they_are() {
    let s = ServerProcess::start(BIN, "").await;
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/oc/enter")).await;
    assert_eq!(st, 200, "{v}");
    let update = json!({
        "explanation": "Exploring first",
        "plan": [
            {"step": "Read the uploader", "status": "in_progress", "activeForm": "Reading the uploader"},
            {"step": "Add retries", "status": "pending"}
        ]
    });
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/oc/steps").json(&update)).await;
    assert_eq!(st, 200, "{v}");
    let (_, view) = call(s.agent(Method::GET, "/v1/sessions/oc")).await;
    assert_eq!(view["steps"][0]["active_form"], "Reading the uploader", "{view}");
    let proposal = json!({"title": "Add retries", "plan": [{"step": "Read the uploader", "status": "completed"}, {"step": "Add retries"}]});
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/oc/proposals").json(&proposal)).await;
    assert_eq!(st, 201, "{v}");
    let (_, view) = call(s.agent(Method::GET, "/v1/sessions/oc")).await;
    let steps: Vec<&str> = view["steps"].as_array().map(|a| a.iter().filter_map(|s| s["step"].as_str()).collect()).unwrap_or_default();
    assert_eq!(steps, ["Read the uploader", "Add retries"], "{view}");
}

/// Issue 48, part 2: `enter` answers with the plan-mode brief in the API's
/// terms, naming where the plan goes and who decides.
#[tokio::test]
async fn enter_carries_the_plan_mode_brief() {
    let s = ServerProcess::start(BIN, "").await;
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/b1/enter")).await;
    assert_eq!(st, 200, "{v}");
    let brief = v["instructions"].as_str().unwrap_or_default();
    assert!(brief.starts_with("[PLAN_MODE]") && brief.contains("exit_plan_mode") && brief.chars().count() <= 1500, "{brief}");
    assert_eq!(v["mode"], "plan", "the status is still there: {v}");
    let (st, v) = call(s.agent(Method::GET, "/v1/sessions/b1/brief?harness=codex")).await;
    assert_eq!(st, 200, "{v}");
    assert!(v["instructions"].as_str().unwrap_or_default().contains("proposed_plan block"), "{v}");
}
