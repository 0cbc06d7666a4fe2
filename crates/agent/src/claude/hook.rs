//! `plangate hook claude`: one Claude Code hook event in, one answer out.
//!
//! The agent is the owner of `PLANGATE_TOKEN` (server `PLANGATE_URL`, default
//! `http://127.0.0.1:8787`); the plangate session is Claude's `session_id`,
//! mapped into the API's charset by [`crate::session::sanitize`].
//!
//! `ExitPlanMode` — its `tool_input.plan` markdown (or, for Claude Code
//! versions that leave it out, the `.md` file under `~/.claude/plans` that
//! `tool_input.planFilePath` names) — is submitted as a proposal
//! ([`crate::proposal::submit`]: enter plan mode if needed, propose, or
//! recognise the same plan sent before), then the hook waits for the
//! decision for at most `PLANGATE_HOOK_WAIT` seconds (default 50):
//!
//! | decision | `PreToolUse` | `PermissionRequest` |
//! |---|---|---|
//! | approved | no output (Claude's own rules still apply) | `allow`, `updatedInput` = the tool input |
//! | edited | no decision, the edited plan as `additionalContext` | `allow`, `updatedInput.plan` = the edited plan |
//! | changes requested | `deny`, the feedback as the reason | `deny`, the feedback as `message` |
//! | still pending | `deny`: "awaiting approval …; call ExitPlanMode again with the same plan" | same |
//! | timed out, cancelled, superseded | `deny` with what happened | same |
//!
//! plangate's own MCP tools (`mcp__plangate__<tool>`, [`crate::mcp::TOOLS`])
//! are where the hook and `plangate mcp` meet: the MCP server cannot know
//! which Claude session calls it (one server process serves a Claude Code
//! process, whose session changes on `/clear` or `--resume`), so once the gate
//! lets such a call through, the hook answers `permissionDecision: "allow"`
//! with `updatedInput` = the tool input plus `session_id` = Claude's session
//! (the one this hook gates). Claude Code's hooks reference, "PreToolUse
//! decision control": `updatedInput` "modifies the tool's input parameters
//! before execution. Replaces the entire input object … Combine with "allow"
//! to auto-approve"; added in Claude Code 2.0.10 ("PreToolUse hooks can now
//! modify tool inputs"). Auto-approving these is safe: they change nothing but
//! plangate's own state, and deny and ask rules still apply. If `updatedInput`
//! is lost on the way, the MCP server gets no session and refuses the call.
//!
//! Never fail open: a server that is down or slow, malformed input, a missing
//! `session_id` or `tool_name`, a plan over the 60,000-character cap — each is
//! a deny with the reason, and the process exits 0 so Claude Code reads it.
//! A panic prints a deny and exits 2 ([`fail_closed_on_panic`]); the installed
//! command adds `|| exit 2` for everything that happens before this code runs.
//! An event this hook does not handle is answered `{"continue": false}` with
//! a `stopReason`: it can only be there by mistake, and stopping is the one
//! answer every event understands. Outside the decision wait the hook answers
//! within about two seconds.

use crate::client::{AgentError, Client, GateDecision, Timeouts};
use crate::proposal::{submit, FileRecall, NoRecall, ProposalBody, Recall};
use plangate_engine::plan::render_markdown;
use plangate_engine::view::DecisionView;
use plangate_engine::DecisionStatus;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How long `ExitPlanMode` waits for a decision unless `PLANGATE_HOOK_WAIT` says otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);
/// The longest `PLANGATE_HOOK_WAIT` accepted (the server holds a request 300 s at most).
pub const MAX_WAIT_SECS: u64 = 290;
/// The installed hook timeout is the wait plus this margin, so the hook
/// always answers before Claude Code gives up on it.
pub const TIMEOUT_MARGIN_SECS: u64 = 10;
/// Everything but the decision wait must fit in this.
pub const QUICK_BUDGET: Duration = Duration::from_secs(2);
/// Hook input larger than this is refused (the API takes 1 MiB bodies).
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// The two events this hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PreToolUse,
    PermissionRequest,
}

/// What the hook tells Claude Code.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Exit 0 with empty stdout: no opinion, Claude Code's own rules apply.
    NoDecision,
    /// `PreToolUse` without a decision, but with context for Claude.
    Context(String),
    Deny {
        event: Event,
        reason: String,
    },
    /// `PermissionRequest` allow, with the tool input to run.
    Allow {
        updated_input: Value,
    },
    /// `PreToolUse` allow with the tool input to run: plangate's own MCP
    /// tools, given Claude's session.
    AllowInput {
        updated_input: Value,
    },
    /// `PreToolUse` `"ask"`: show the permission dialog (a pending plan
    /// whose dialog a plangate channel answers when the human decides).
    Ask(String),
    /// `{"continue": false}`: for events this hook does not know.
    Stop(String),
}

impl Answer {
    fn deny(event: Event, reason: impl Into<String>) -> Answer {
        Answer::Deny { event, reason: reason.into() }
    }

    /// The bytes for stdout (empty for [`Answer::NoDecision`]).
    pub fn render(&self) -> String {
        let value = match self {
            Answer::NoDecision => return String::new(),
            Answer::Context(text) => json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": text}}),
            Answer::Deny { event: Event::PreToolUse, reason } => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}),
            Answer::Deny { event: Event::PermissionRequest, reason } => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason}}}),
            Answer::Allow { updated_input } => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedInput": updated_input}}}),
            Answer::AllowInput { updated_input } => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": updated_input}}),
            Answer::Ask(reason) => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": reason}}),
            Answer::Stop(reason) => json!({"continue": false, "stopReason": reason}),
        };
        format!("{value}\n")
    }
}

/// The hook's settings, from the environment.
pub struct Settings {
    pub client: Client,
    pub wait: Duration,
    pub recall: Box<dyn Recall>,
}

impl Settings {
    pub fn from_env() -> Result<Settings, AgentError> {
        Ok(Settings {
            client: Client::from_env(Timeouts::HOOK)?,
            wait: wait_from_env()?,
            recall: match FileRecall::from_env("claude") {
                Some(r) => Box::new(r),
                None => Box::new(NoRecall),
            },
        })
    }
}

/// `PLANGATE_HOOK_WAIT` in whole seconds, 0–290; [`DEFAULT_WAIT`] when unset.
pub fn wait_from_env() -> Result<Duration, AgentError> {
    match std::env::var("PLANGATE_HOOK_WAIT") {
        Err(_) => Ok(DEFAULT_WAIT),
        Ok(v) if v.trim().is_empty() => Ok(DEFAULT_WAIT),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(n) if n <= MAX_WAIT_SECS => Ok(Duration::from_secs(n)),
            _ => Err(AgentError::Usage(format!("PLANGATE_HOOK_WAIT must be whole seconds from 0 to {MAX_WAIT_SECS}, got {v:?}"))),
        },
    }
}

/// The exit code that makes Claude Code block the tool (or deny the
/// permission) whatever the event: every other non-zero code lets it run.
pub const EXIT_BLOCK: i32 = 2;

/// Block this call and exit: the reason on stderr (what Claude Code shows
/// Claude on exit 2), a `PreToolUse` deny on stdout for anything that reads
/// it, and exit code 2. Write errors are ignored: the exit code is the answer.
pub fn block_and_exit(reason: &str) -> ! {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{reason}");
    let mut out = std::io::stdout();
    let _ = out.write_all(Answer::deny(Event::PreToolUse, reason).render().as_bytes());
    let _ = out.flush();
    std::process::exit(EXIT_BLOCK)
}

/// From now on a panic anywhere in the process (any thread) blocks the call
/// ([`block_and_exit`]) instead of exiting 101, which Claude Code would take
/// for a non-blocking error and run the tool.
pub fn fail_closed_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        block_and_exit(&format!("plangate: the hook crashed ({info}), so this call is blocked"));
    }));
}

/// Read one event from stdin and answer it: what `plangate hook claude` prints.
pub async fn run() -> String {
    let mut input = Vec::new();
    let read = tokio::time::timeout(QUICK_BUDGET, tokio::io::stdin().take(MAX_INPUT_BYTES + 1).read_to_end(&mut input)).await;
    let answer = match read {
        Err(_) => Answer::deny(Event::PreToolUse, "plangate: the hook input did not arrive on stdin in time, so this call is blocked"),
        Ok(Err(e)) => Answer::deny(Event::PreToolUse, format!("plangate: cannot read the hook input ({e}), so this call is blocked")),
        Ok(Ok(_)) if input.len() as u64 > MAX_INPUT_BYTES => {
            Answer::deny(Event::PreToolUse, format!("plangate: the hook input is over {MAX_INPUT_BYTES} bytes, so this call is blocked"))
        }
        Ok(Ok(_)) => answer(&input, Settings::from_env).await,
    };
    answer.render()
}

/// The parsed parts of an event that matter here.
struct Input {
    event: Event,
    session_id: String,
    tool_name: String,
    tool_input: Value,
}

fn parse(bytes: &[u8]) -> Result<Input, Answer> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        Answer::deny(Event::PreToolUse, format!("plangate: the hook input is not valid JSON ({e}), so this call is blocked"))
    })?;
    let event = match value.get("hook_event_name").and_then(Value::as_str) {
        Some("PreToolUse") => Event::PreToolUse,
        Some("PermissionRequest") => Event::PermissionRequest,
        Some(other) => {
            return Err(Answer::Stop(format!(
                "plangate hook claude answers PreToolUse and PermissionRequest only, not {other:?}; \
                 remove it from that event in .claude/settings.json (`plangate hook install claude` writes the right entries)"
            )))
        }
        None => return Err(Answer::deny(Event::PreToolUse, "plangate: the hook input has no hook_event_name, so this call is blocked")),
    };
    let session_id = match value.get("session_id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(s) => crate::session::sanitize(s),
        None => return Err(Answer::deny(event, "plangate: the hook input has no session_id, so this call is blocked")),
    };
    let tool_name = match value.get("tool_name").and_then(Value::as_str).filter(|s| !s.trim().is_empty()) {
        Some(t) => t.to_string(),
        None => return Err(Answer::deny(event, "plangate: the hook input has no tool_name, so this call is blocked")),
    };
    let tool_input = value.get("tool_input").cloned().unwrap_or_else(|| json!({}));
    Ok(Input { event, session_id, tool_name, tool_input })
}

/// Answer one event. `settings` is only consulted once the input is valid,
/// so a broken environment is reported in the event's own terms.
pub async fn answer(bytes: &[u8], settings: impl FnOnce() -> Result<Settings, AgentError>) -> Answer {
    let input = match parse(bytes) {
        Ok(i) => i,
        Err(answer) => return answer,
    };
    // Tell a plangate channel of this Claude process which session it is in
    // now (see `super::binding`); best effort, it never changes the answer.
    let claude = super::binding::ClaudeProcess::find();
    let bindings = super::binding::Bindings::from_env();
    if let (Some(b), Some(c)) = (&bindings, &claude) {
        let _ = b.record(c, &input.session_id);
    }
    let channel = matches!((&bindings, &claude), (Some(b), Some(c)) if b.channel_live(c));
    let settings = match settings() {
        Ok(s) => s,
        Err(e) => return Answer::deny(input.event, format!("plangate: {e}; this call is blocked until the hook is configured")),
    };
    if input.tool_name == "ExitPlanMode" {
        // Submitting (at most QUICK_BUDGET), the wait, and a margin: still
        // well inside the installed timeout (wait + TIMEOUT_MARGIN_SECS).
        let budget = settings.wait + 2 * QUICK_BUDGET;
        match tokio::time::timeout(budget, exit_plan_mode(&input, &settings, channel)).await {
            Ok(answer) => answer,
            Err(_) => Answer::deny(input.event, "plangate did not answer in time; call ExitPlanMode again with the same plan"),
        }
    } else {
        match tokio::time::timeout(QUICK_BUDGET, gate(&input, &settings)).await {
            Ok(answer) => answer,
            Err(_) => {
                Answer::deny(input.event, format!("plangate did not answer within {} s, so this call is blocked", QUICK_BUDGET.as_secs()))
            }
        }
    }
}

/// The tool of plangate's own MCP server that `tool_name` calls, if any.
fn own_mcp_tool(tool_name: &str) -> Option<&'static str> {
    let tool = tool_name.strip_prefix(crate::mcp::CLAUDE_TOOL_PREFIX)?;
    crate::mcp::TOOLS.iter().copied().find(|t| *t == tool)
}

/// A call of plangate's own MCP tool, allowed with Claude's session id in
/// its input (overriding any the model put there).
fn with_session(input: &Input) -> Answer {
    let mut updated = match &input.tool_input {
        Value::Object(map) => map.clone(),
        Value::Null => serde_json::Map::new(),
        _ => {
            return Answer::deny(input.event, format!("plangate: the input of {} is not a JSON object, so it is blocked", input.tool_name))
        }
    };
    updated.insert("session_id".to_string(), json!(input.session_id));
    Answer::AllowInput { updated_input: Value::Object(updated) }
}

async fn gate(input: &Input, settings: &Settings) -> Answer {
    match settings.client.gate(&input.session_id, &input.tool_name, &input.tool_input).await {
        Ok(verdict)
            if verdict.decision == GateDecision::Allow && input.event == Event::PreToolUse && own_mcp_tool(&input.tool_name).is_some() =>
        {
            with_session(input)
        }
        // Allow is no decision: Claude Code's own permission rules still apply.
        Ok(verdict) if verdict.decision == GateDecision::Allow => Answer::NoDecision,
        Ok(verdict) => Answer::deny(input.event, format!("plangate: {}", verdict.reason)),
        Err(e) => Answer::deny(input.event, format!("plangate could not check this call, so it is blocked: {e}")),
    }
}

async fn exit_plan_mode(input: &Input, settings: &Settings, channel: bool) -> Answer {
    let markdown = match plan_text(&input.tool_input) {
        Ok(m) => m,
        Err(why) => return Answer::deny(input.event, format!("plangate: {why}")),
    };
    let body = ProposalBody::markdown(markdown, None);
    let submitted = tokio::time::timeout(
        QUICK_BUDGET,
        submit(&settings.client, settings.recall.as_ref(), &input.session_id, &body, "Claude Code called ExitPlanMode"),
    )
    .await;
    let submitted = match submitted {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Answer::deny(input.event, format!("plangate could not submit the plan: {e}")),
        Err(_) => return Answer::deny(input.event, "plangate did not take the plan in time; call ExitPlanMode again with the same plan"),
    };
    let mut decision = submitted.decision;
    if !decision.is_final() {
        match settings.client.wait_decision(&input.session_id, settings.wait).await {
            Ok(Some(d)) if d.approval_id == decision.approval_id => decision = d,
            Ok(Some(d)) => {
                return Answer::deny(
                    input.event,
                    format!(
                        "plangate: plan v{} was replaced by v{} while waiting; call ExitPlanMode with your current plan",
                        decision.version, d.version
                    ),
                )
            }
            Ok(None) => {}
            Err(AgentError::Timeout { .. }) => {}
            Err(e) => return Answer::deny(input.event, format!("plangate could not learn the decision: {e}")),
        }
    }
    decide(input, &decision, submitted.recalled, channel)
}

/// The answer for a decision. `channel`: a plangate channel runs in this
/// Claude process, so a plan still pending leaves the dialog open for it to
/// answer when the human decides (instead of refusing the call).
fn decide(input: &Input, d: &DecisionView, recalled: bool, channel: bool) -> Answer {
    let by = d.decided_by.as_deref().unwrap_or("a human");
    match d.status {
        DecisionStatus::Approved => match input.event {
            Event::PreToolUse => Answer::NoDecision,
            Event::PermissionRequest => Answer::Allow { updated_input: input.tool_input.clone() },
        },
        DecisionStatus::Edited => {
            let edited = d.plan.as_ref().map(render_markdown).unwrap_or_default();
            match input.event {
                Event::PreToolUse => {
                    let injection = d.injection.clone().unwrap_or_else(|| {
                        format!("Plan v{} was approved with edits by {by}: execute the edited plan below, not your original.", d.version)
                    });
                    Answer::Context(format!("{injection}\n\nThe approved plan:\n\n{edited}"))
                }
                Event::PermissionRequest => {
                    let mut updated = input.tool_input.clone();
                    match updated.as_object_mut() {
                        Some(obj) => {
                            obj.insert("plan".to_string(), json!(edited));
                        }
                        None => updated = json!({"plan": edited}),
                    }
                    Answer::Allow { updated_input: updated }
                }
            }
        }
        DecisionStatus::Rejected => {
            let text = d.injection.clone().unwrap_or_else(|| {
                format!(
                    "{by} requested changes to plan v{}: {}\nRevise the plan and call ExitPlanMode again.",
                    d.version,
                    d.feedback.as_deref().unwrap_or("(no feedback)")
                )
            });
            let again = if recalled { "You sent the same plan again; it was already sent back. " } else { "" };
            Answer::deny(input.event, format!("plangate: {again}{text}"))
        }
        DecisionStatus::Pending if channel => {
            let reason = format!(
                "plangate: plan v{} awaits a human's approval (id {}); plangate's channel answers this dialog when they decide",
                d.version, d.approval_id
            );
            match input.event {
                Event::PreToolUse => Answer::Ask(reason),
                Event::PermissionRequest => Answer::NoDecision,
            }
        }
        DecisionStatus::Pending => Answer::deny(
            input.event,
            format!(
                "plangate: plan v{} is awaiting approval (id {}); call ExitPlanMode again with the same plan to check",
                d.version, d.approval_id
            ),
        ),
        DecisionStatus::Superseded => Answer::deny(
            input.event,
            format!("plangate: plan v{} was superseded by a newer proposal; call ExitPlanMode with your current plan", d.version),
        ),
        DecisionStatus::TimedOut | DecisionStatus::Cancelled => {
            let text = d.injection.clone().unwrap_or_else(|| format!("plan v{} was {}; it was not approved", d.version, d.status.as_str()));
            Answer::deny(input.event, format!("plangate: {text}"))
        }
    }
}

/// The plan markdown of an `ExitPlanMode` call.
fn plan_text(tool_input: &Value) -> Result<String, String> {
    if let Some(plan) = tool_input.get("plan").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) {
        return Ok(plan.to_string());
    }
    match tool_input.get("planFilePath").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) {
        Some(path) => read_plan_file(path),
        None => Err("ExitPlanMode carried no plan (tool_input.plan is missing or empty), so it is blocked".to_string()),
    }
}

/// Claude Code's plans directory: `$CLAUDE_CONFIG_DIR/plans` or `~/.claude/plans`.
fn plans_dir() -> Option<PathBuf> {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    non_empty("CLAUDE_CONFIG_DIR").or_else(|| non_empty("HOME").map(|h| h.join(".claude"))).map(|d| d.join("plans"))
}

/// Read a plan file, but only a `.md` file inside Claude Code's plans
/// directory: the path comes from tool input, and the file's text goes to
/// the approvers' chats.
fn read_plan_file(path: &str) -> Result<String, String> {
    let refuse = || format!("ExitPlanMode's planFilePath {path:?} is not a .md file in Claude Code's plans directory, so it is blocked");
    let expanded = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    };
    let file = expanded.canonicalize().map_err(|e| format!("cannot read ExitPlanMode's plan file {path:?} ({e}), so it is blocked"))?;
    let root = plans_dir().and_then(|d| d.canonicalize().ok()).ok_or_else(refuse)?;
    if !file.starts_with(&root) || file.extension().is_none_or(|e| e != "md") {
        return Err(refuse());
    }
    let mut text = String::new();
    let read = std::fs::File::open(&file).and_then(|f| std::io::Read::read_to_string(&mut std::io::Read::take(f, 1 << 20), &mut text));
    read.map_err(|e| format!("cannot read ExitPlanMode's plan file {path:?} ({e}), so it is blocked"))?;
    if text.trim().is_empty() {
        return Err(format!("ExitPlanMode's plan file {path:?} is empty, so it is blocked"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
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
        let unknown = answer(br#"{"hook_event_name":"Stop","session_id":"s"}"#, no_settings).await;
        assert_eq!(rendered(&unknown)["continue"], false);
        let unconfigured = answer(br#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Read"}"#, no_settings).await;
        assert!(rendered(&unconfigured)["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .contains("PLANGATE_TOKEN"));
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
        let input = |tool_input: Value| Input {
            event: Event::PreToolUse,
            session_id: "claude-abc".into(),
            tool_name: "mcp__plangate__update_plan".into(),
            tool_input,
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
        let err = plan_text(&json!({"planFilePath": "/etc/passwd"})).err().unwrap_or_default();
        assert!(err.contains("blocked"), "{err}");
        assert!(plan_text(&json!({})).is_err());
        assert_eq!(plan_text(&json!({"plan": "# T"})), Ok("# T".to_string()));
    }
}
