//! `plangate hook claude`: one Claude Code hook event in, one answer out.
//!
//! The agent is the owner of `PLANGATE_TOKEN` (server `PLANGATE_URL`, default
//! `http://127.0.0.1:8787`); the plangate session is Claude's `session_id`,
//! mapped into the API's charset by [`crate::session::sanitize`].
//!
//! Event names, input fields and output shapes are checked against Claude
//! Code's hooks reference (code.claude.com/docs/en/hooks) and the Agent SDK's
//! hook types (claude-agent-sdk-python 0.2.143, which bundles Claude Code
//! 2.1.240; its CHANGELOG for when each appeared). The events:
//!
//! | event | what the hook does | answer |
//! |---|---|---|
//! | `PreToolUse` | the mutation gate (`POST /v1/gate`); `ExitPlanMode` proposes and waits (below); the subagent tool opens a run; a call inside a subagent is its heartbeat | deny, or no decision |
//! | `PermissionRequest` | the gate; `ExitPlanMode`'s plan dialog is answered by the human's decision | `decision.behavior` |
//! | `PostToolUse`, `PostToolUseFailure` | the subagent tool finished: its run closes | no output |
//! | `SubagentStart`, `SubagentStop` | a subagent's own run (`agent:<agent_id>`) opens and closes | no output |
//! | `SessionStart` (`compact`, `resume`) | the session's hydration (its open steps as facts) | `additionalContext` |
//! | `UserPromptSubmit` | an untaken `[PLAN_DECISION]` (or `[PLAN_NUDGE]`), taken atomically | `additionalContext` |
//!
//! `ExitPlanMode` — its `tool_input.plan` markdown (or, for Claude Code
//! versions that leave it out, the `.md` file under `~/.claude/plans` that
//! `tool_input.planFilePath` names) — is submitted as a proposal
//! ([`crate::proposal::submit`]: enter plan mode if needed, propose, or
//! recognise the same plan sent before), then the hook waits for the
//! decision for at most `PLANGATE_HOOK_WAIT` seconds (default 50, at most
//! [`MAX_WAIT_SECS`]), chaining the server's long-polls (≤ 300 s each):
//!
//! | decision | `PreToolUse` | `PermissionRequest` |
//! |---|---|---|
//! | approved | no decision, the `[PLAN_DECISION]` (with the approved steps) as `additionalContext` | `allow`, `updatedInput` = the tool input |
//! | edited | no decision, the edited plan as `additionalContext` | `allow`, `updatedInput.plan` = the edited plan |
//! | changes requested | `deny`, the feedback as the reason | `deny`, the feedback as `message` |
//! | still pending | [`still_pending`]: `deny`, "awaiting approval …; call ExitPlanMode again with the same plan" | same |
//! | timed out, cancelled, superseded | `deny` with what happened | same |
//!
//! Once a final decision has been given to Claude this way, the hook takes
//! the session's injection (`POST …/injection/take`, best effort within
//! [`QUICK_BUDGET`]), so the same decision is not delivered again on the next
//! prompt or by another path.
//!
//! **Subagents.** Approve and Edit wait while subagent runs are open. The
//! hook opens and closes runs from Claude Code's own events, so the gate
//! works without the agent registering anything: `SubagentStart` /
//! `SubagentStop` open and close `agent:<agent_id>`, for foreground and
//! background subagents alike, and every tool call inside a subagent
//! (`PreToolUse` with `agent_id`) is that run's heartbeat. The subagent tool
//! itself (`Agent`, called `Task` before Claude Code 2.1.63;
//! [`SUBAGENT_TOOLS`]) opens nothing (see [`subagent_tool`] for why);
//! `PostToolUse` / `PostToolUseFailure` still close a `tool:<tool_use_id>`
//! run that an earlier plangate opened. A run nobody closes expires
//! (`[approvals] subagent_expiry`) or is cleared by a person.
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
//! Never fail open: for the gate's events (`PreToolUse`, `PermissionRequest`)
//! a server that is down or slow, malformed input, a missing `session_id` or
//! `tool_name`, a plan over the 60,000-character cap — each is a deny with the
//! reason, and the process exits 0 so Claude Code reads it. A panic prints a
//! deny and exits 2 ([`fail_closed_on_panic`]); the installed command adds
//! `|| exit 2` for everything that happens before this code runs. The other
//! events gate nothing, so a failure there is never a block: their answer is
//! no output (a `SessionStart` that cannot reach plangate says so as context),
//! and their installed command has no `|| exit 2` (exit 2 would erase the
//! user's prompt, or keep a stopping subagent running). An event this hook
//! does not handle is answered `{"continue": false}` with a `stopReason`: it
//! can only be there by mistake, and stopping is the one answer every event
//! understands. Outside the decision wait the hook answers within about two
//! seconds.

use crate::client::{AgentError, Client, GateDecision, PlanFile, Timeouts};
use crate::proposal::{submit, FileRecall, NoRecall, ProposalBody, Recall};
use plangate_engine::plan::render_markdown;
use plangate_engine::view::DecisionView;
use plangate_engine::DecisionStatus;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How long `ExitPlanMode` waits for a decision unless `PLANGATE_HOOK_WAIT` says otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);
/// The longest `PLANGATE_HOOK_WAIT` accepted: with [`TIMEOUT_MARGIN_SECS`]
/// the installed hook timeout is 600 s, Claude Code's default and documented
/// timeout for command hooks ("Changed tool hook execution timeout from 60
/// seconds to 10 minutes", Claude Code 2.1.3). The wait chains the server's
/// long-polls, which hold a request 300 s at most.
pub const MAX_WAIT_SECS: u64 = 590;
/// The installed hook timeout is the wait plus this margin, so the hook
/// always answers before Claude Code gives up on it.
pub const TIMEOUT_MARGIN_SECS: u64 = 10;
/// Everything but the decision wait must fit in this.
pub const QUICK_BUDGET: Duration = Duration::from_secs(2);
/// The installed timeout of the events that never wait for a person.
pub const QUICK_TIMEOUT_SECS: u64 = 10;
/// Hook input larger than this is refused (the API takes 1 MiB bodies).
pub const MAX_INPUT_BYTES: u64 = 4 << 20;
/// Claude Code's subagent tool: `Agent` since 2.1.63, `Task` before (still
/// accepted as an alias, so older versions and old settings send it).
pub const SUBAGENT_TOOLS: [&str; 2] = ["Agent", "Task"];

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
}

impl Event {
    pub const ALL: [Event; 8] = [
        Event::PreToolUse,
        Event::PermissionRequest,
        Event::PostToolUse,
        Event::PostToolUseFailure,
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::SubagentStart,
        Event::SubagentStop,
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
        }
    }

    fn from_name(name: &str) -> Option<Event> {
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
    /// `PreToolUse` allow with the tool input to run: plangate's own MCP
    /// tools, given Claude's session.
    AllowInput { updated_input: Value },
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
            Answer::Context { event, text } => json!({"hookSpecificOutput": {"hookEventName": event.name(), "additionalContext": text}}),
            Answer::Deny { event: Event::PermissionRequest, reason } => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason}}}),
            // Only the gate's events are ever denied; anything else reads as a `PreToolUse` deny.
            Answer::Deny { reason, .. } => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}),
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
            client: Client::from_env(Timeouts::HOOK)?.for_harness(plangate_engine::Harness::ClaudeCode),
            wait: wait_from_env()?,
            recall: match FileRecall::from_env("claude") {
                Some(r) => Box::new(r),
                None => Box::new(NoRecall),
            },
        })
    }
}

/// `PLANGATE_HOOK_WAIT` in whole seconds, 0–[`MAX_WAIT_SECS`]; [`DEFAULT_WAIT`] when unset.
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

/// Set once the event being answered is known not to be one of the gate's:
/// then a crash must not block (exit 2 would erase the user's prompt, or keep
/// a stopping subagent running), only report.
static ANSWERING_NON_GATE: AtomicBool = AtomicBool::new(false);

/// Block this call and exit: the reason on stderr (what Claude Code shows
/// Claude on exit 2), a `PreToolUse` deny on stdout for anything that reads
/// it, and exit code 2. While answering an event that gates nothing it is a
/// non-blocking error instead (stderr, exit 1). Write errors are ignored: the
/// exit code is the answer.
pub fn block_and_exit(reason: &str) -> ! {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{reason}");
    if ANSWERING_NON_GATE.load(Ordering::SeqCst) {
        std::process::exit(1)
    }
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

/// A tool call the gate judges (`PreToolUse`, `PermissionRequest`).
struct ToolCall {
    event: Event,
    session_id: String,
    tool_name: String,
    tool_input: Value,
    /// Pairs a `PreToolUse` with its `PostToolUse` (Claude Code 2.0.43+).
    tool_use_id: Option<String>,
    /// Set when the call comes from inside a subagent.
    agent_id: Option<String>,
    /// Claude Code's `permission_mode` is `"plan"`.
    in_plan_mode: bool,
    /// The hook input's `cwd`: the project root when `CLAUDE_PROJECT_DIR`
    /// is not set (for the plans directory).
    cwd: Option<String>,
}

/// The parsed parts of an event that matter here.
enum Input {
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
    },
    Prompt {
        session_id: String,
    },
    /// `SubagentStart` (`open`) or `SubagentStop`.
    Subagent {
        session_id: String,
        agent_id: Option<String>,
        open: bool,
    },
}

impl Input {
    fn session_id(&self) -> &str {
        match self {
            Input::Tool(call) => &call.session_id,
            Input::ToolDone { session_id, .. }
            | Input::SessionStart { session_id }
            | Input::Prompt { session_id }
            | Input::Subagent { session_id, .. } => session_id,
        }
    }

    fn event(&self) -> Event {
        match self {
            Input::Tool(call) => call.event,
            Input::ToolDone { event, .. } => *event,
            Input::SessionStart { .. } => Event::SessionStart,
            Input::Prompt { .. } => Event::UserPromptSubmit,
            Input::Subagent { open: true, .. } => Event::SubagentStart,
            Input::Subagent { open: false, .. } => Event::SubagentStop,
        }
    }
}

fn text_field(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(str::to_string)
}

fn parse(bytes: &[u8]) -> Result<Input, Answer> {
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
        Event::SessionStart => Input::SessionStart { session_id },
        Event::UserPromptSubmit => Input::Prompt { session_id },
        Event::SubagentStart | Event::SubagentStop => Input::Subagent { session_id, agent_id, open: event == Event::SubagentStart },
    })
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
        let _ = b.record(c, input.session_id());
    }
    let channel = matches!((&bindings, &claude), (Some(b), Some(c)) if b.channel_live(c));
    let settings = match settings() {
        Ok(s) => s,
        Err(e) if input.event().gates() => {
            return Answer::deny(input.event(), format!("plangate: {e}; this call is blocked until the hook is configured"))
        }
        Err(e) if input.event() == Event::SessionStart => {
            return Answer::Context { event: Event::SessionStart, text: format!("plangate's hook is not configured ({e}).") }
        }
        Err(_) => return Answer::NoDecision,
    };
    match input {
        Input::Tool(call) if call.tool_name == "ExitPlanMode" => {
            // Submitting (at most QUICK_BUDGET), the wait, and a margin: still
            // well inside the installed timeout (wait + TIMEOUT_MARGIN_SECS).
            let budget = settings.wait + 2 * QUICK_BUDGET;
            let (answer, session) = match tokio::time::timeout(budget, exit_plan_mode(&call, &settings, channel)).await {
                Ok((answer, delivered)) => (answer, delivered.then_some(&call.session_id)),
                Err(_) => (Answer::deny(call.event, "plangate did not answer in time; call ExitPlanMode again with the same plan"), None),
            };
            if let Some(session) = session {
                // Claude has this decision now: take it, so the next prompt (or
                // a channel) does not deliver it again. Best effort.
                let _ = tokio::time::timeout(QUICK_BUDGET, settings.client.take_injection(session)).await;
            }
            answer
        }
        Input::Tool(call) => match tokio::time::timeout(QUICK_BUDGET, gate(&call, &settings)).await {
            Ok(answer) => answer,
            Err(_) => {
                Answer::deny(call.event, format!("plangate did not answer within {} s, so this call is blocked", QUICK_BUDGET.as_secs()))
            }
        },
        Input::ToolDone { session_id, tool_name, tool_use_id, .. } => match (SUBAGENT_TOOLS.contains(&tool_name.as_str()), tool_use_id) {
            (true, Some(id)) => record(settings.client.close_subagent(&session_id, &tool_run(&id))).await,
            _ => Answer::NoDecision,
        },
        Input::Subagent { session_id, agent_id: Some(agent), open: true } => {
            record(settings.client.open_subagent(&session_id, &agent_run(&agent))).await
        }
        Input::Subagent { session_id, agent_id: Some(agent), open: false } => {
            record(settings.client.close_subagent(&session_id, &agent_run(&agent))).await
        }
        Input::Subagent { agent_id: None, .. } => Answer::NoDecision,
        Input::SessionStart { session_id } => match tokio::time::timeout(QUICK_BUDGET, settings.client.hydration(&session_id)).await {
            Ok(Ok(Some(text))) => Answer::Context { event: Event::SessionStart, text },
            Ok(Ok(None)) => Answer::NoDecision,
            Ok(Err(e)) => Answer::Context { event: Event::SessionStart, text: unreachable_note(&e.to_string()) },
            Err(_) => Answer::Context { event: Event::SessionStart, text: unreachable_note("no answer in time") },
        },
        Input::Prompt { session_id } => match tokio::time::timeout(QUICK_BUDGET, settings.client.take_injection(&session_id)).await {
            Ok(Ok(Some(text))) => Answer::Context { event: Event::UserPromptSubmit, text },
            // Nothing waiting, or plangate unreachable: the prompt goes on as
            // typed (the gate still refuses changes while plangate is down).
            _ => Answer::NoDecision,
        },
    }
}

/// Record a subagent run opening or closing. These events gate nothing, so
/// a failure is only reported on stderr (a run left open expires, or a
/// person clears it) and the answer is always no output.
async fn record(call: impl std::future::Future<Output = Result<(), AgentError>>) -> Answer {
    match tokio::time::timeout(QUICK_BUDGET, call).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("plangate: could not record a subagent run: {e}"),
        Err(_) => eprintln!("plangate: could not record a subagent run within {} s", QUICK_BUDGET.as_secs()),
    }
    Answer::NoDecision
}

fn unreachable_note(why: &str) -> String {
    format!(
        "plangate could not be reached ({why}), so whether this session has an active plan is unknown; \
         plangate's gate blocks changes until it answers."
    )
}

/// The run of a subagent tool call: `tool:<tool_use_id>`.
fn tool_run(tool_use_id: &str) -> String {
    format!("tool:{tool_use_id}")
}

/// The run of a subagent itself: `agent:<agent_id>`.
fn agent_run(agent_id: &str) -> String {
    format!("agent:{agent_id}")
}

/// The tool of plangate's own MCP server that `tool_name` calls, if any.
fn own_mcp_tool(tool_name: &str) -> Option<&'static str> {
    let tool = tool_name.strip_prefix(crate::mcp::CLAUDE_TOOL_PREFIX)?;
    crate::mcp::TOOLS.iter().copied().find(|t| *t == tool)
}

/// A call of plangate's own MCP tool, allowed with Claude's session id in
/// its input (overriding any the model put there).
fn with_session(call: &ToolCall) -> Answer {
    let mut updated = match &call.tool_input {
        Value::Object(map) => map.clone(),
        Value::Null => serde_json::Map::new(),
        _ => return Answer::deny(call.event, format!("plangate: the input of {} is not a JSON object, so it is blocked", call.tool_name)),
    };
    updated.insert("session_id".to_string(), json!(call.session_id));
    Answer::AllowInput { updated_input: Value::Object(updated) }
}

async fn gate(call: &ToolCall, settings: &Settings) -> Answer {
    // A tool call inside a subagent is that subagent's heartbeat: its run
    // stays open (and does not expire) while it works. Best effort.
    let heartbeat = async {
        if let (Event::PreToolUse, Some(agent)) = (call.event, &call.agent_id) {
            let _ = settings.client.open_subagent(&call.session_id, &agent_run(agent)).await;
        }
    };
    let env = super::plan_file::Environment::current(call.cwd.as_deref());
    let plan_file = match super::plan_file::is_plan_file_write(&call.tool_name, &call.tool_input, &env) {
        true => PlanFile::Write { harness_plan_mode: call.in_plan_mode },
        false => PlanFile::No,
    };
    let paths = crate::scope_paths::targets(&call.tool_name, &call.tool_input, call.cwd.as_deref());
    let verdict = settings.client.gate_call(&call.session_id, &call.tool_name, &call.tool_input, plan_file, paths);
    let (verdict, ()) = tokio::join!(verdict, heartbeat);
    match verdict {
        Ok(verdict) if verdict.decision == GateDecision::Allow && call.event == Event::PreToolUse => {
            if own_mcp_tool(&call.tool_name).is_some() {
                with_session(call)
            } else if SUBAGENT_TOOLS.contains(&call.tool_name.as_str()) {
                subagent_tool(call)
            } else {
                // Allow is no decision: Claude Code's own permission rules still apply.
                Answer::NoDecision
            }
        }
        Ok(verdict) if verdict.decision == GateDecision::Allow => Answer::NoDecision,
        Ok(verdict) => Answer::deny(call.event, format!("plangate: {}", verdict.reason)),
        Err(e) => Answer::deny(call.event, format!("plangate could not check this call, so it is blocked: {e}")),
    }
}

/// The gate let a subagent tool call through. Its run is opened by
/// `SubagentStart`, not here: Claude Code 2.1.328 launches subagents in the
/// background, firing `PostToolUse` and `SubagentStart` at the same
/// instant, and a call that Claude Code then refuses to start (its own
/// permission rules, the host's answer) gets no `PostToolUse` at all, so a
/// run opened here stayed open and the next `ExitPlanMode` was refused with
/// `subagents_open`. A call without a `tool_use_id` comes from a Claude
/// Code before 2.0.43, which has no `SubagentStart` either: such a subagent
/// could not be tracked, so it is blocked.
fn subagent_tool(call: &ToolCall) -> Answer {
    match &call.tool_use_id {
        Some(_) => Answer::NoDecision,
        None => Answer::deny(
            call.event,
            format!(
                "plangate: this {} call carries no tool_use_id (Claude Code before 2.0.43, which reports no SubagentStart), so \
                 plangate cannot track the subagent and it is blocked; update Claude Code",
                call.tool_name
            ),
        ),
    }
}

/// Propose, wait, answer. The flag says whether the answer hands Claude a
/// final decision (then its injection is taken: see [`answer`]).
async fn exit_plan_mode(call: &ToolCall, settings: &Settings, channel: bool) -> (Answer, bool) {
    let env = super::plan_file::Environment::current(call.cwd.as_deref());
    let markdown = match plan_text(&call.tool_input, &env) {
        Ok(m) => m,
        Err(why) => return (Answer::deny(call.event, format!("plangate: {why}")), false),
    };
    let body = ProposalBody::markdown(markdown, None);
    let submitted = tokio::time::timeout(
        QUICK_BUDGET,
        submit(&settings.client, settings.recall.as_ref(), &call.session_id, &body, "Claude Code called ExitPlanMode"),
    )
    .await;
    let submitted = match submitted {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return (Answer::deny(call.event, format!("plangate could not submit the plan: {e}")), false),
        Err(_) => {
            return (Answer::deny(call.event, "plangate did not take the plan in time; call ExitPlanMode again with the same plan"), false)
        }
    };
    let mut decision = submitted.decision;
    if !decision.is_final() {
        // Long-polls of at most 300 s each, chained up to the whole wait.
        match settings.client.wait_decision(&call.session_id, settings.wait).await {
            Ok(Some(d)) if d.approval_id == decision.approval_id => decision = d,
            Ok(Some(d)) => {
                let text = format!(
                    "plangate: plan v{} was replaced by v{} while waiting; call ExitPlanMode with your current plan",
                    decision.version, d.version
                );
                return (Answer::deny(call.event, text), false);
            }
            Ok(None) => {}
            Err(AgentError::Timeout { .. }) => {}
            Err(e) => return (Answer::deny(call.event, format!("plangate could not learn the decision: {e}")), false),
        }
    }
    let delivered = matches!(
        decision.status,
        DecisionStatus::Approved | DecisionStatus::Edited | DecisionStatus::Rejected | DecisionStatus::TimedOut | DecisionStatus::Cancelled
    );
    (decide(call, &decision, submitted.recalled, channel), delivered)
}

/// What Claude is told when the wait ends with the plan still pending.
///
/// Without a channel: a deny that tells Claude to call `ExitPlanMode` again
/// with the same plan; the decision then reaches Claude on the user's next
/// prompt (`UserPromptSubmit` delivers the untaken `[PLAN_DECISION]`), or
/// when it calls again. With a plangate channel running in this Claude
/// process (`channel`): the dialog is left open (`ask` for `PreToolUse`, no
/// decision for `PermissionRequest`), and the channel answers it when the
/// human decides (see [`super::channel`]).
fn still_pending(call: &ToolCall, d: &DecisionView, channel: bool) -> Answer {
    if channel {
        let reason = format!(
            "plangate: plan v{} awaits a human's approval (id {}); plangate's channel answers this dialog when they decide",
            d.version, d.approval_id
        );
        return match call.event {
            Event::PermissionRequest => Answer::NoDecision,
            _ => Answer::Ask(reason),
        };
    }
    Answer::deny(
        call.event,
        format!(
            "plangate: plan v{} is awaiting approval (id {}); call ExitPlanMode again with the same plan to check",
            d.version, d.approval_id
        ),
    )
}

fn decide(call: &ToolCall, d: &DecisionView, recalled: bool, channel: bool) -> Answer {
    let by = d.decided_by.as_deref().unwrap_or("a human");
    match d.status {
        DecisionStatus::Approved => match call.event {
            // The decision, with the approved steps, for Claude to execute.
            Event::PreToolUse => match &d.injection {
                Some(text) => Answer::Context { event: Event::PreToolUse, text: text.clone() },
                None => Answer::NoDecision,
            },
            _ => Answer::Allow { updated_input: call.tool_input.clone() },
        },
        DecisionStatus::Edited => {
            let edited = d.plan.as_ref().map(render_markdown).unwrap_or_default();
            match call.event {
                Event::PreToolUse => {
                    let injection = d.injection.clone().unwrap_or_else(|| {
                        format!("Plan v{} was approved with edits by {by}: execute the edited plan below, not your original.", d.version)
                    });
                    Answer::Context { event: Event::PreToolUse, text: format!("{injection}\n\nThe approved plan:\n\n{edited}") }
                }
                _ => {
                    let mut updated = call.tool_input.clone();
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
            Answer::deny(call.event, format!("plangate: {again}{text}"))
        }
        DecisionStatus::Pending => still_pending(call, d, channel),
        DecisionStatus::Superseded => Answer::deny(
            call.event,
            format!("plangate: plan v{} was superseded by a newer proposal; call ExitPlanMode with your current plan", d.version),
        ),
        DecisionStatus::TimedOut | DecisionStatus::Cancelled => {
            let text = d.injection.clone().unwrap_or_else(|| format!("plan v{} was {}; it was not approved", d.version, d.status.as_str()));
            Answer::deny(call.event, format!("plangate: {text}"))
        }
    }
}

/// The plan markdown of an `ExitPlanMode` call.
fn plan_text(tool_input: &Value, env: &super::plan_file::Environment) -> Result<String, String> {
    if let Some(plan) = tool_input.get("plan").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) {
        return Ok(plan.to_string());
    }
    match tool_input.get("planFilePath").and_then(Value::as_str).filter(|p| !p.trim().is_empty()) {
        Some(path) => read_plan_file(path, env),
        None => Err(
            "ExitPlanMode carried no plan, so it is blocked: write your plan to the plan file that plan mode names (Write), then call ExitPlanMode again"
                .to_string(),
        ),
    }
}

/// Read a plan file, but only a `.md` file inside Claude Code's plans
/// directory: the path comes from tool input, and the file's text goes to
/// the approvers' chats.
fn read_plan_file(path: &str, env: &super::plan_file::Environment) -> Result<String, String> {
    let refuse = || format!("ExitPlanMode's planFilePath {path:?} is not a .md file in Claude Code's plans directory, so it is blocked");
    let expanded = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    };
    let file = expanded.canonicalize().map_err(|e| format!("cannot read ExitPlanMode's plan file {path:?} ({e}), so it is blocked"))?;
    let root = env.plans_dir().and_then(|d| d.canonicalize().ok()).ok_or_else(refuse)?;
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
        let env = super::super::plan_file::Environment::current(None);
        let err = plan_text(&json!({"planFilePath": "/etc/passwd"}), &env).err().unwrap_or_default();
        assert!(err.contains("blocked"), "{err}");
        assert!(plan_text(&json!({}), &env).is_err());
        assert_eq!(plan_text(&json!({"plan": "# T"}), &env), Ok("# T".to_string()));
    }
}
