//! What Claude Code sends the hook and what the hook answers: the events,
//! the answers in Claude Code's JSON, and the parse of one event's input.

use super::*;

/// The events this hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    SessionStart,
    UserPromptSubmit,
    SubagentStart,
    SubagentStop,
    /// The main agent's turn ends: held to an approved plan whose steps are
    /// open ([`plangate_engine::keep_going`]).
    Stop,
}

impl Event {
    pub const ALL: [Event; 9] = [
        Event::PreToolUse,
        Event::PermissionRequest,
        Event::PostToolUse,
        Event::PostToolUseFailure,
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::SubagentStart,
        Event::SubagentStop,
        Event::Stop,
    ];

    /// The `hook_event_name` / `hookEventName`.
    pub fn name(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PermissionRequest => "PermissionRequest",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
            Event::Stop => "Stop",
        }
    }

    pub(super) fn from_name(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The gate's events: a failure there is a refusal of the call. The
    /// others gate nothing, and a failure must never block them.
    pub fn gates(self) -> bool {
        matches!(self, Event::PreToolUse | Event::PermissionRequest)
    }
}

/// What the hook tells Claude Code.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Exit 0 with empty stdout: no opinion, Claude Code's own rules apply.
    NoDecision,
    /// Context for Claude (`hookSpecificOutput.additionalContext`), without
    /// a decision: `PreToolUse`, `SessionStart`, `UserPromptSubmit`.
    Context { event: Event, text: String },
    /// A refusal of a `PreToolUse` or `PermissionRequest` call.
    Deny { event: Event, reason: String },
    /// `PermissionRequest` allow, with the tool input to run.
    Allow { updated_input: Value },
    /// `ExitPlanMode`'s `PermissionRequest` allowed because people approved
    /// the plan: with the permission mode Claude Code continues in
    /// (`updatedPermissions` `setMode`, for this session), when one is set.
    AllowPlan { updated_input: Value, mode: Option<&'static str> },
    /// `PreToolUse` allow with the tool input to run: plangate's own MCP
    /// tools, given Claude's session.
    AllowInput { updated_input: Value },
    /// `PreToolUse` `"ask"`: show the permission dialog (a pending plan
    /// whose dialog a plangate channel answers when the human decides).
    Ask(String),
    /// `{"continue": false}`: for events this hook does not know.
    Stop(String),
    /// `Stop`: `{"decision": "block", "reason": …}`, Claude goes on with
    /// the reason as its instruction.
    KeepGoing(String),
}

impl Answer {
    pub(super) fn deny(event: Event, reason: impl Into<String>) -> Answer {
        Answer::Deny { event, reason: reason.into() }
    }

    /// The bytes for stdout (empty for [`Answer::NoDecision`]).
    pub fn render(&self) -> String {
        let value = match self {
            Answer::NoDecision => return String::new(),
            Answer::Context { event, text } => json!({"hookSpecificOutput": {"hookEventName": event.name(), "additionalContext": text}}),
            Answer::Deny { event: Event::PermissionRequest, reason } => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason}}}),
            // Only the gate's events are ever denied; anything else reads as a `PreToolUse` deny.
            Answer::Deny { reason, .. } => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}),
            Answer::Allow { updated_input } => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedInput": updated_input}}}),
            Answer::AllowPlan { updated_input, mode: None } => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedInput": updated_input}}}),
            Answer::AllowPlan { updated_input, mode: Some(mode) } => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedInput": updated_input,
                    "updatedPermissions": [{"type": "setMode", "mode": mode, "destination": "session"}]}}}),
            Answer::AllowInput { updated_input } => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": updated_input}}),
            Answer::Ask(reason) => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": reason}}),
            Answer::Stop(reason) => json!({"continue": false, "stopReason": reason}),
            Answer::KeepGoing(reason) => json!({"decision": "block", "reason": reason}),
        };
        format!("{value}\n")
    }
}

/// A tool call the gate judges (`PreToolUse`, `PermissionRequest`).
pub(super) struct ToolCall {
    pub(super) event: Event,
    pub(super) session_id: String,
    pub(super) tool_name: String,
    pub(super) tool_input: Value,
    /// Pairs a `PreToolUse` with its `PostToolUse` (Claude Code 2.0.43+).
    pub(super) tool_use_id: Option<String>,
    /// Set when the call comes from inside a subagent.
    pub(super) agent_id: Option<String>,
    /// Claude Code's `permission_mode` is `"plan"`.
    pub(super) in_plan_mode: bool,
    /// The hook input's `cwd`: the project root when `CLAUDE_PROJECT_DIR`
    /// is not set (for the plans directory).
    pub(super) cwd: Option<String>,
}

/// The parsed parts of an event that matter here.
pub(super) enum Input {
    Tool(ToolCall),
    /// `PostToolUse` / `PostToolUseFailure`.
    ToolDone {
        event: Event,
        session_id: String,
        tool_name: String,
        tool_use_id: Option<String>,
    },
    SessionStart {
        session_id: String,
        /// Claude Code's `source`: the context was compacted (`"compact"`),
        /// not a session resumed (`"resume"`): the first line says which.
        compacted: bool,
    },
    Prompt {
        session_id: String,
        /// Claude Code's `permission_mode` is `"plan"`: the brief is due.
        in_plan_mode: bool,
    },
    /// `Stop`, with Claude's last message.
    Stopping {
        session_id: String,
        last_message: Option<String>,
        /// Claude Code's `permission_mode` is `"plan"`: an approval that
        /// reaches Claude here must also tell it to leave plan mode.
        in_plan_mode: bool,
    },
    /// `SubagentStart` (`open`) or `SubagentStop`.
    Subagent {
        session_id: String,
        agent_id: Option<String>,
        open: bool,
    },
}

impl Input {
    pub(super) fn session_id(&self) -> &str {
        match self {
            Input::Tool(call) => &call.session_id,
            Input::ToolDone { session_id, .. }
            | Input::SessionStart { session_id, .. }
            | Input::Prompt { session_id, .. }
            | Input::Stopping { session_id, .. }
            | Input::Subagent { session_id, .. } => session_id,
        }
    }

    pub(super) fn event(&self) -> Event {
        match self {
            Input::Tool(call) => call.event,
            Input::ToolDone { event, .. } => *event,
            Input::SessionStart { .. } => Event::SessionStart,
            Input::Prompt { .. } => Event::UserPromptSubmit,
            Input::Stopping { .. } => Event::Stop,
            Input::Subagent { open: true, .. } => Event::SubagentStart,
            Input::Subagent { open: false, .. } => Event::SubagentStop,
        }
    }
}

pub(super) fn text_field(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(str::to_string)
}

pub(super) fn parse(bytes: &[u8]) -> Result<Input, Answer> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        Answer::deny(Event::PreToolUse, format!("plangate: the hook input is not valid JSON ({e}), so this call is blocked"))
    })?;
    let event = match value.get("hook_event_name").and_then(Value::as_str) {
        Some(name) => Event::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
            Answer::Stop(format!(
                "plangate hook claude answers {} only, not {name:?}; remove it from that event in .claude/settings.json \
                 (`plangate hook install claude` writes the right entries)",
                known.join(", ")
            ))
        })?,
        None => return Err(Answer::deny(Event::PreToolUse, "plangate: the hook input has no hook_event_name, so this call is blocked")),
    };
    if !event.gates() {
        ANSWERING_NON_GATE.store(true, Ordering::SeqCst);
    }
    let session_id = match text_field(&value, "session_id") {
        Some(s) => crate::session::sanitize(&s),
        None if event.gates() => return Err(Answer::deny(event, "plangate: the hook input has no session_id, so this call is blocked")),
        // Nothing to act on, and nothing to protect.
        None => return Err(Answer::NoDecision),
    };
    let tool_use_id = text_field(&value, "tool_use_id");
    let agent_id = text_field(&value, "agent_id");
    Ok(match event {
        Event::PreToolUse | Event::PermissionRequest => {
            let tool_name = text_field(&value, "tool_name")
                .ok_or_else(|| Answer::deny(event, "plangate: the hook input has no tool_name, so this call is blocked"))?;
            let tool_input = value.get("tool_input").cloned().unwrap_or_else(|| json!({}));
            let in_plan_mode = value.get("permission_mode").and_then(Value::as_str) == Some("plan");
            let cwd = text_field(&value, "cwd");
            Input::Tool(ToolCall { event, session_id, tool_name, tool_input, tool_use_id, agent_id, in_plan_mode, cwd })
        }
        Event::PostToolUse | Event::PostToolUseFailure => {
            Input::ToolDone { event, session_id, tool_name: text_field(&value, "tool_name").unwrap_or_default(), tool_use_id }
        }
        Event::SessionStart => {
            Input::SessionStart { session_id, compacted: value.get("source").and_then(Value::as_str) == Some("compact") }
        }
        Event::UserPromptSubmit => {
            Input::Prompt { session_id, in_plan_mode: value.get("permission_mode").and_then(Value::as_str) == Some("plan") }
        }
        Event::Stop => Input::Stopping {
            session_id,
            last_message: text_field(&value, "last_assistant_message"),
            in_plan_mode: value.get("permission_mode").and_then(Value::as_str) == Some("plan"),
        },
        Event::SubagentStart | Event::SubagentStop => Input::Subagent { session_id, agent_id, open: event == Event::SubagentStart },
    })
}
