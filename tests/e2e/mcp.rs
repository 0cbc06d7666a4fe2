//! `plangate mcp` end to end: rmcp's own client spawns the real binary over
//! stdio, against a real `plangate serve`; humans decide over the operator
//! API (and, for questions, with `/plan answer` in the fake Telegram chat).

use super::kit::{call_tool, Mcp};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN, OTHER_AGENT_TOKEN};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use reqwest::Method;
use rmcp::model::CallToolResult;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

async fn connect(s: &ServerProcess, session: Option<&str>) -> Mcp {
    let base = s.base.clone();
    let session = session.map(str::to_string);
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(move |cmd| {
        cmd.arg("mcp").env("PLANGATE_URL", &base).env("PLANGATE_TOKEN", AGENT_TOKEN).env_remove("PLANGATE_MCP_WAIT");
        match &session {
            Some(sid) => cmd.env("PLANGATE_SESSION", sid),
            None => cmd.env_remove("PLANGATE_SESSION"),
        };
    }))
    .expect("spawn plangate mcp");
    ().serve(transport).await.expect("MCP handshake")
}

/// The structured result of a successful call.
async fn ok(mcp: &Mcp, tool: &'static str, args: Value) -> Value {
    let r = call_tool(mcp, tool, &args).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
    r.structured_content.clone().unwrap_or_else(|| panic!("{tool}: no structured content"))
}

fn texts(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

/// The message of a call refused for its arguments: a tool error (isError)
/// the model can read, as rmcp itself reports arguments that do not parse.
async fn invalid(mcp: &Mcp, tool: &'static str, args: Value) -> String {
    match call_tool(mcp, tool, &args).await {
        Ok(r) if r.is_error == Some(true) => texts(&r),
        other => panic!("{tool}: expected a tool error, got {other:?}"),
    }
}

fn rotate_keys_plan() -> Value {
    json!({
        "title": "Rotate the API keys",
        "summary": "Keys leaked in a CI log; rotate and revoke.",
        "steps": [{"step": "Create new keys"}, {"step": "Deploy them"}, {"step": "Revoke the old keys"}],
        "risks": ["Clients with pinned keys break"]
    })
}

#[tokio::test]
async fn tools_and_their_schemas_come_from_the_api_types() {
    let s = ServerProcess::start(BIN, "").await;
    let mcp = connect(&s, Some("mcp-schema")).await;
    let tools = mcp.list_all_tools().await.expect("tools");
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ask_user_question",
            "check_tool",
            "enter_plan_mode",
            "exit_plan_mode",
            "get_namespace",
            "plan_mode_status",
            "take_decision_injection",
            "update_namespace",
            "update_plan"
        ]
    );
    let exit = tools.iter().find(|t| t.name == "exit_plan_mode").expect("exit_plan_mode");
    let schema = serde_json::to_string(&exit.input_schema).expect("schema");
    // The Plan and Step of the HTTP API: their fields and the step statuses.
    for needle in ["\"title\"", "\"steps\"", "\"acceptance_criteria\"", "\"in_progress\"", "\"markdown\"", "\"wait_seconds\""] {
        assert!(schema.contains(needle), "{needle} missing from {schema}");
    }
    mcp.cancel().await.expect("close");
}

#[tokio::test]
async fn enter_update_propose_and_an_approver_approves() {
    let s = ServerProcess::start(BIN, "").await;
    let sid = "mcp-approve";
    let mcp = connect(&s, Some(sid)).await;

    let status = ok(&mcp, "enter_plan_mode", json!({"reason": "keys leaked"})).await;
    assert_eq!((status["session_id"].as_str(), status["mode"].as_str()), (Some(sid), Some("plan")));
    let steps = ok(&mcp, "update_plan", json!({"steps": [{"step": "Find every key", "status": "in_progress"}]})).await;
    assert_eq!(steps["steps"][0]["status"], "in_progress");
    // Planning: the gate refuses a write, allows a read.
    let verdict = ok(&mcp, "check_tool", json!({"tool": "Bash", "input": {"command": "rm -rf secrets/"}})).await;
    assert_eq!(verdict["decision"], "deny");
    let verdict = ok(&mcp, "check_tool", json!({"tool": "Bash", "input": {"command": "ls secrets"}})).await;
    assert_eq!(verdict["decision"], "allow");

    let approver = async { s.decide_when_pending(sid, json!({"action": "approve", "actor": "alice"})).await };
    let args = json!({"plan": rotate_keys_plan(), "wait_seconds": 30});
    let (result, decided) = tokio::join!(call_tool(&mcp, "exit_plan_mode", &args), approver);
    assert_eq!(decided["status"], "approved");
    let result = result.expect("exit_plan_mode");
    let decision = result.structured_content.clone().expect("decision");
    assert_eq!(decision["status"], "approved");
    assert_eq!(decision["decided_by"], "operator:alice");
    assert_eq!(decision["approval_id"], decided["approval_id"]);
    let injection = decision["injection"].as_str().expect("injection");
    assert!(injection.starts_with("[PLAN_DECISION]: approved"), "{injection}");
    assert!(texts(&result).contains("approved by operator:alice"), "{}", texts(&result));
    assert!(decision["document_path"].as_str().is_some_and(|p| p.ends_with(".md")));

    // The same plan again is the same approval, not a second round.
    let again = ok(&mcp, "exit_plan_mode", json!({"plan": rotate_keys_plan(), "wait_seconds": 0})).await;
    assert_eq!((again["approval_id"].as_str(), again["status"].as_str()), (decided["approval_id"].as_str(), Some("approved")));
    // exit_plan_mode delivered the decision text, so nothing delivers it again
    // (a channel, the next prompt, this tool).
    assert_eq!(ok(&mcp, "take_decision_injection", json!({})).await["injection"], json!(null));
    let status = ok(&mcp, "plan_mode_status", json!({})).await;
    assert_eq!(
        (status["mode"].as_str(), status["approval"].as_str(), status["version"].as_u64()),
        (Some("normal"), Some("approved"), Some(1))
    );
    mcp.cancel().await.expect("close");
}

#[tokio::test]
async fn revise_round_trip_then_pending_and_call_again() {
    let s = ServerProcess::start(BIN, "").await;
    // No PLANGATE_SESSION: the session is named per call.
    let mcp = connect(&s, None).await;
    let sid = "mcp-revise";
    ok(&mcp, "enter_plan_mode", json!({"session_id": sid})).await;
    let markdown = "# Rotate the API keys\n\n1. Create new keys\n2. Revoke the old keys\n";
    let approver = async {
        s.decide_when_pending(sid, json!({"action": "revise", "feedback": "Deploy the new keys before revoking", "actor": "bob"})).await
    };
    let args = json!({"session_id": sid, "markdown": markdown, "wait_seconds": 30});
    let (result, _) = tokio::join!(call_tool(&mcp, "exit_plan_mode", &args), approver);
    let result = result.expect("exit_plan_mode");
    let d = result.structured_content.clone().expect("decision");
    assert_eq!((d["status"].as_str(), d["feedback"].as_str()), (Some("rejected"), Some("Deploy the new keys before revoking")));
    assert!(d["injection"].as_str().unwrap_or("").contains("> Deploy the new keys before revoking"));
    let status = ok(&mcp, "plan_mode_status", json!({"session_id": sid})).await;
    assert_eq!((status["mode"].as_str(), status["approval"].as_str()), (Some("plan"), Some("rejected")));

    // The revised plan waits; calling again (with no plan) keeps waiting on it.
    let revised = "# Rotate the API keys\n\n1. Create new keys\n2. Deploy them\n3. Revoke the old keys\n";
    let pending = ok(&mcp, "exit_plan_mode", json!({"session_id": sid, "markdown": revised, "wait_seconds": 1})).await;
    assert_eq!((pending["status"].as_str(), pending["version"].as_u64()), (Some("pending"), Some(2)));
    let approver = async { s.decide_when_pending(sid, json!({"action": "approve", "actor": "bob"})).await };
    let (later, _) = tokio::join!(ok(&mcp, "exit_plan_mode", json!({"session_id": sid, "wait_seconds": 30})), approver);
    assert_eq!((later["status"].as_str(), later["approval_id"].as_str()), (Some("approved"), pending["approval_id"].as_str()));
    mcp.cancel().await.expect("close");
}

#[tokio::test]
async fn invalid_arguments_are_errors_naming_the_field() {
    let s = ServerProcess::start(BIN, "").await;
    let mcp = connect(&s, Some("mcp-invalid")).await;
    let m = invalid(&mcp, "update_plan", json!({"steps": [{"step": "a"}, {"step": "b", "status": "done"}]})).await;
    assert!(m.contains("steps[1].status") && m.contains("done"), "{m}");
    let m = invalid(&mcp, "update_plan", json!({"steps": [{"step": "a", "colour": "red"}]})).await;
    assert!(m.contains("steps[0]") && m.contains("colour"), "{m}");
    let m = invalid(&mcp, "check_tool", json!({"input": {}})).await;
    assert!(m.contains("tool"), "{m}");
    let m = invalid(&mcp, "plan_mode_status", json!({"session_id": "a/b"})).await;
    assert!(m.contains("session_id"), "{m}");
    let m = invalid(&mcp, "exit_plan_mode", json!({"plan": {"title": "x"}, "markdown": "# x"})).await;
    assert!(m.contains("plan"), "{m}");
    let m = invalid(&mcp, "exit_plan_mode", json!({"plan": {"steps": []}})).await;
    assert!(m.contains("title"), "{m}");
    let m = invalid(&mcp, "exit_plan_mode", json!({"wait_seconds": 301})).await;
    assert!(m.contains("wait_seconds"), "{m}");
    let m = invalid(&mcp, "ask_user_question", json!({"options": ["a"]})).await;
    assert!(m.contains("question"), "{m}");
    // A plan rule broken is invalid params naming the rule, from the engine.
    ok(&mcp, "enter_plan_mode", json!({})).await;
    let m =
        invalid(&mcp, "update_plan", json!({"steps": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]}))
            .await;
    assert!(m.contains("single_in_progress"), "{m}");
    // A refusal the agent can act on is a tool error it reads.
    let (st, _) = ServerProcess::send(s.agent(Method::POST, "/v1/sessions/mcp-invalid/subagents").json(&json!({"run_id": "r1"}))).await;
    assert_eq!(st, 204);
    let r = call_tool(&mcp, "exit_plan_mode", &json!({"plan": rotate_keys_plan(), "wait_seconds": 0})).await.expect("tool result");
    assert_eq!(r.is_error, Some(true));
    assert!(texts(&r).contains("subagents_open"), "{}", texts(&r));
    // And the server is still there.
    assert_eq!(ok(&mcp, "plan_mode_status", json!({})).await["open_subagents"], json!(["r1"]));
    mcp.cancel().await.expect("close");
}

#[tokio::test]
async fn a_question_is_answered_in_chat() {
    let fake = FakeTelegram::start().await;
    let chat: i64 = -1001234567890;
    let alice: i64 = 111111;
    let config = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{chat}\"\napprovers = [\"telegram:{alice}\"]\n",
        fake.api_url()
    );
    let s = ServerProcess::start_with(BIN, &["ops"], &config).await;
    let mcp = connect(&s, Some("mcp-ask")).await;
    ok(&mcp, "enter_plan_mode", json!({})).await;

    let pending =
        ok(&mcp, "ask_user_question", json!({"question": "Which database?", "options": ["postgres", "sqlite"], "wait_seconds": 0})).await;
    assert_eq!(pending["status"], "pending");
    let qid = pending["question_id"].as_str().expect("question id").to_string();
    // Asked again while it waits: the same question, not a second one.
    let again =
        ok(&mcp, "ask_user_question", json!({"question": "Which database?", "options": ["postgres", "sqlite"], "wait_seconds": 0})).await;
    assert_eq!(again["question_id"].as_str(), Some(qid.as_str()));

    let answer = async {
        fake.wait_request("sendMessage", Duration::from_secs(15), |r| r.str("text").contains("Which database?")).await;
        fake.push_update(fake.message_update(chat, FakeTelegram::user(alice, Some("alice"), "Alice"), "/plan answer postgres", None));
    };
    let (answered, ()) = tokio::join!(ok(&mcp, "ask_user_question", json!({"question_id": qid, "wait_seconds": 30})), answer);
    assert_eq!((answered["status"].as_str(), answered["answer"].as_str()), (Some("answered"), Some("postgres")));
    assert_eq!(answered["answered_by"], "telegram:@alice");
    mcp.cancel().await.expect("close");
}

/// `update_plan` with `merge` patches only what it carries (the closure rule
/// still sees inherited criteria), and the step namespaces are reachable as
/// tools, shared with the agents the config names together.
#[tokio::test]
async fn merge_patches_and_shared_namespaces_through_mcp() {
    let s = ServerProcess::start(BIN, "[namespaces.release]\nagents = [\"demo\", \"other\"]\n").await;
    let mcp = connect(&s, Some("mcp-ns")).await;
    ok(&mcp, "enter_plan_mode", json!({})).await;
    let steps = json!([{"step": "Run tests", "status": "in_progress", "acceptance_criteria": ["green"]}]);
    ok(&mcp, "update_plan", json!({"steps": steps})).await;
    let refused = invalid(&mcp, "update_plan", json!({"merge": true, "steps": [{"step": "Run tests", "status": "completed"}]})).await;
    assert!(refused.contains("verified_before_completed"), "{refused}");
    let merged = ok(&mcp, "update_plan", json!({"merge": true, "steps": [{"step": "Run tests", "verified_criteria": ["green"]}]})).await;
    assert_eq!(
        merged["steps"],
        json!([{"step": "Run tests", "status": "in_progress", "acceptance_criteria": ["green"], "verified_criteria": ["green"]}])
    );

    // A shared namespace: this agent (demo) writes, agent `other` reads it.
    let ns = ok(&mcp, "update_namespace", json!({"name": "release", "steps": [{"step": "Tag v2"}, {"step": "Publish"}]})).await;
    assert_eq!((ns["shared"].as_bool(), ns["steps"][0]["updated_by"].as_str()), (Some(true), Some("demo/mcp-ns")));
    let ns = ok(&mcp, "update_namespace", json!({"name": "release", "steps": [{"step": "Tag v2", "status": "in_progress"}]})).await;
    assert_eq!(ns["steps"][0]["status"], "in_progress");
    let (st, theirs) = ServerProcess::send(s.http.get(s.url("/v1/namespaces/release")).bearer_auth(OTHER_AGENT_TOKEN)).await;
    assert_eq!(st, 200);
    assert_eq!(theirs["steps"], ns["steps"]);
    assert_eq!(ok(&mcp, "get_namespace", json!({"name": "release"})).await["steps"], ns["steps"]);
    // The rules hold across sessions: a second step in progress is refused.
    let e = invalid(&mcp, "update_namespace", json!({"name": "release", "steps": [{"step": "Publish", "status": "in_progress"}]})).await;
    assert!(e.contains("single_in_progress"), "{e}");
    let e = invalid(&mcp, "get_namespace", json!({"name": "../etc"})).await;
    assert!(e.contains("`name`"), "{e}");
    mcp.cancel().await.expect("close");
}
