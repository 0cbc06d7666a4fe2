use super::*;

fn no_settings() -> Result<Settings, AgentError> {
    Err(AgentError::Usage("PLANGATE_TOKEN is not set".to_string()))
}

fn rendered(answer: &Answer) -> Value {
    serde_json::from_str(&answer.render()).unwrap_or(Value::Null)
}

#[tokio::test]
async fn malformed_input_is_denied_in_the_events_own_terms() {
    let bad = answer(b"{not json", no_settings).await;
    assert_eq!(rendered(&bad)["hookSpecificOutput"]["permissionDecision"], "deny");
    let no_tool = answer(br#"{"hook_event_name":"PermissionRequest","session_id":"s"}"#, no_settings).await;
    let v = rendered(&no_tool);
    assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], "deny");
    assert!(v["hookSpecificOutput"]["decision"]["message"].as_str().unwrap_or("").contains("tool_name"));
    let no_session = answer(br#"{"hook_event_name":"PreToolUse","tool_name":"Bash"}"#, no_settings).await;
    assert!(rendered(&no_session)["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap_or("").contains("session_id"));
    let unknown = answer(br#"{"hook_event_name":"Notification","session_id":"s"}"#, no_settings).await;
    assert_eq!(rendered(&unknown)["continue"], false);
    let unconfigured = answer(br#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Read"}"#, no_settings).await;
    assert!(rendered(&unconfigured)["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap_or("").contains("PLANGATE_TOKEN"));
}

#[tokio::test]
async fn events_that_gate_nothing_are_never_denied() {
    // Unconfigured: the gate's events deny; the others pass quietly, and
    // SessionStart says why the plan could not be restored.
    for event in ["PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "SubagentStart", "SubagentStop"] {
        let input = format!(r#"{{"hook_event_name":"{event}","session_id":"s","tool_name":"Agent","tool_use_id":"t","agent_id":"a"}}"#);
        assert_eq!(answer(input.as_bytes(), no_settings).await, Answer::NoDecision, "{event}");
        // Without a session there is nothing to act on either.
        let input = format!(r#"{{"hook_event_name":"{event}"}}"#);
        assert_eq!(answer(input.as_bytes(), no_settings).await, Answer::NoDecision, "{event}");
    }
    let start = answer(br#"{"hook_event_name":"SessionStart","session_id":"s","source":"compact"}"#, no_settings).await;
    let v = rendered(&start);
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or("").contains("PLANGATE_TOKEN"), "{v}");
}

#[test]
fn context_names_its_event() {
    for event in [Event::PreToolUse, Event::SessionStart, Event::UserPromptSubmit] {
        let v = rendered(&Answer::Context { event, text: "x".into() });
        assert_eq!(v, json!({"hookSpecificOutput": {"hookEventName": event.name(), "additionalContext": "x"}}));
    }
    assert_eq!(Event::ALL.iter().filter(|e| e.gates()).count(), 2);
}

#[test]
fn no_decision_is_empty_output() {
    assert_eq!(Answer::NoDecision.render(), "");
}

#[test]
fn own_mcp_tools_get_claudes_session() {
    assert_eq!(own_mcp_tool("mcp__plangate__enter_plan_mode"), Some("enter_plan_mode"));
    assert_eq!(own_mcp_tool("mcp__plangate__nope"), None);
    assert_eq!(own_mcp_tool("mcp__other__enter_plan_mode"), None);
    let input = |tool_input: Value| ToolCall {
        event: Event::PreToolUse,
        session_id: "claude-abc".into(),
        tool_name: "mcp__plangate__update_plan".into(),
        tool_input,
        tool_use_id: None,
        agent_id: None,
        in_plan_mode: false,
        cwd: None,
    };
    let answer = with_session(&input(json!({"steps": [], "session_id": "elsewhere"})));
    let v = rendered(&answer);
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(v["hookSpecificOutput"]["updatedInput"], json!({"steps": [], "session_id": "claude-abc"}));
    assert_eq!(rendered(&with_session(&input(Value::Null)))["hookSpecificOutput"]["updatedInput"], json!({"session_id": "claude-abc"}));
    assert_eq!(rendered(&with_session(&input(json!([1]))))["hookSpecificOutput"]["permissionDecision"], "deny");
}

#[test]
fn plan_files_outside_the_plans_dir_are_refused() {
    let env = crate::claude::plan_file::Environment::current(None);
    let err = plan_text(&json!({"planFilePath": "/etc/passwd"}), &env).err().unwrap_or_default();
    assert!(err.contains("blocked"), "{err}");
    assert!(plan_text(&json!({}), &env).is_err());
    assert_eq!(plan_text(&json!({"plan": "# T"}), &env), Ok("# T".to_string()));
}
