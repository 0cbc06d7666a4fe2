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
//! | `PermissionRequest` | the gate; `ExitPlanMode`'s plan dialog is answered by the human's decision; any other dialog the gate lets through is relayed to the approvers ([`crate::permission`]; `AskUserQuestion`'s questions as plangate questions, `ask_user`) | `decision.behavior`, or no decision (the terminal asks) |
//! | `PostToolUse`, `PostToolUseFailure` | the subagent tool finished: its run closes | no output |
//! | `SubagentStart`, `SubagentStop` | a subagent's own run (`agent:<agent_id>`) opens and closes | no output |
//! | `SessionStart` (`compact`, `resume`) | the session's hydration (its open steps as facts) | `additionalContext` |
//! | `UserPromptSubmit` | an untaken `[PLAN_DECISION]` (or `[PLAN_NUDGE]`), taken atomically; else, in Claude Code's plan mode, the plan-mode brief (`GET …/brief`) | `additionalContext` |
//! | `Stop` | the approved plan still has open steps (`POST …/stopping`, [`plangate_engine::keep_going`]): the next step, escalating, then a few continues | `{"decision": "block", "reason"}`, or no output |
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

use crate::client::{AgentError, Client, GateDecision, PlanFile, Stop, Timeouts};
use crate::proposal::{submit, FileRecall, NoRecall, ProposalBody, Recall};
use plangate_engine::plan::render_markdown;
use plangate_engine::view::DecisionView;
use plangate_engine::DecisionStatus;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

mod ask_user;
mod exit_plan;
#[cfg(test)]
mod tests;
mod wire;

use exit_plan::*;
use wire::*;
pub use wire::{Answer, Event};

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
pub use crate::hook_input::MAX_INPUT_BYTES;
/// Claude Code's subagent tool: `Agent` since 2.1.63, `Task` before (still
/// accepted as an alias, so older versions and old settings send it).
pub const SUBAGENT_TOOLS: [&str; 2] = ["Agent", "Task"];

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
        Ok(v) => plangate_basics::wait::parse_secs(v.trim(), MAX_WAIT_SECS)
            .ok_or_else(|| AgentError::Usage(format!("PLANGATE_HOOK_WAIT must be whole seconds from 0 to {MAX_WAIT_SECS}, got {v:?}"))),
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
    let answer = match crate::hook_input::read_stdin(QUICK_BUDGET).await {
        Err(why) => Answer::deny(Event::PreToolUse, why),
        Ok(input) => answer(&input, Settings::from_env).await,
    };
    answer.render()
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
        Input::Tool(call) => match tokio::time::timeout(QUICK_BUDGET, gate_and_track(&call, &settings)).await {
            // The gate let a permission dialog through: relay it to the
            // approvers (or plangate's rules), within the hook's wait.
            Ok(Answer::NoDecision) if call.event == Event::PermissionRequest => {
                let budget = settings.wait + 2 * QUICK_BUDGET;
                let relayed = async {
                    match call.tool_name.as_str() {
                        "AskUserQuestion" => ask_user::relay(&call, &settings).await,
                        _ => relay_permission(&call, &settings).await,
                    }
                };
                match tokio::time::timeout(budget, relayed).await {
                    Ok(answer) => answer,
                    Err(_) => Answer::NoDecision,
                }
            }
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
        Input::SessionStart { session_id, compacted } => {
            match tokio::time::timeout(QUICK_BUDGET, settings.client.hydration(&session_id, compacted)).await {
                Ok(Ok(Some(text))) => Answer::Context { event: Event::SessionStart, text },
                Ok(Ok(None)) => Answer::NoDecision,
                Ok(Err(e)) => Answer::Context { event: Event::SessionStart, text: unreachable_note(&e.to_string()) },
                Err(_) => Answer::Context { event: Event::SessionStart, text: unreachable_note("no answer in time") },
            }
        }
        // A stop gates nothing: plangate unreachable or slow, Claude stops.
        Input::Stopping { session_id, last_message, in_plan_mode } => {
            match tokio::time::timeout(QUICK_BUDGET, settings.client.stop(&session_id, last_message.as_deref(), None)).await {
                Ok(Ok(Stop::Continue(instruction))) => Answer::KeepGoing(instruction),
                Ok(Ok(Stop::AwaitDecision { .. })) => {
                    await_decision_at_stop(&session_id, last_message.as_deref(), in_plan_mode, &settings).await
                }
                _ => Answer::NoDecision,
            }
        }
        Input::Prompt { session_id, in_plan_mode } => {
            match tokio::time::timeout(QUICK_BUDGET, settings.client.take_injection(&session_id)).await {
                Ok(Ok(Some(text))) => Answer::Context { event: Event::UserPromptSubmit, text },
                // In Claude Code's own plan mode: the rules of this session,
                // before the first denial teaches them ([`plangate_engine::brief`]).
                Ok(Ok(None)) if in_plan_mode => match tokio::time::timeout(QUICK_BUDGET, settings.client.brief(&session_id)).await {
                    Ok(Ok(text)) if !text.is_empty() => Answer::Context { event: Event::UserPromptSubmit, text },
                    _ => Answer::NoDecision,
                },
                // Nothing waiting, or plangate unreachable: the prompt goes on as
                // typed (the gate still refuses changes while plangate is down).
                _ => Answer::NoDecision,
            }
        }
    }
}

/// Claude stops while its plan awaits people (`ExitPlanMode`'s wait ran
/// out first): hold it here for the same wait, so a tap made meanwhile
/// reaches it without anyone typing in its terminal — the decision is the
/// `Stop` hook's reason to go on (and, approved while Claude Code is still
/// in plan mode, the instruction to call `ExitPlanMode` again, which the
/// approval then lets through). When nobody decides in time, plangate is
/// told Claude stopped waiting (its card says the decision reaches Claude
/// when it resumes) and Claude stops. Never a block on a failure.
async fn await_decision_at_stop(session_id: &str, last_message: Option<&str>, in_plan_mode: bool, settings: &Settings) -> Answer {
    let started = std::time::Instant::now();
    let decided = match settings.client.wait_decision(session_id, settings.wait).await {
        Ok(Some(d)) if d.is_final() => Some(d),
        _ => None,
    };
    let Some(d) = decided else {
        let waited = started.elapsed().as_secs();
        match tokio::time::timeout(QUICK_BUDGET, settings.client.stop(session_id, last_message, Some(waited))).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => eprintln!("plangate: could not say that Claude stopped waiting: {e}"),
            Err(_) => eprintln!("plangate: could not say that Claude stopped waiting: no answer in time"),
        }
        return Answer::NoDecision;
    };
    let Some(text) = d.injection.clone() else { return Answer::NoDecision };
    // Delivered here: not again on the next prompt.
    if !matches!(tokio::time::timeout(QUICK_BUDGET, settings.client.take_injection(session_id)).await, Ok(Ok(_))) {
        eprintln!("plangate: could not mark the decision delivered; it may come again with the next prompt");
    }
    let leave_plan_mode = in_plan_mode && matches!(d.status, DecisionStatus::Approved | DecisionStatus::Edited);
    Answer::KeepGoing(match leave_plan_mode {
        true => format!(
            "{text}\n\nClaude Code's plan mode is still on: call ExitPlanMode again with the same plan (plangate lets the approved plan through), then execute it."
        ),
        false => text,
    })
}

/// The gate's answer; for Claude Code's own to-do list (`TodoWrite`, which
/// the gate lets through), first its items as the approved plan's progress
/// ([`plangate_engine::keep_going::Todo`]). That is best effort: a list
/// plangate did not get only means it cannot tell which step is next.
async fn gate_and_track(call: &ToolCall, settings: &Settings) -> Answer {
    if call.event == Event::PreToolUse && call.tool_name == "TodoWrite" {
        if let Some(todos) = call.tool_input.get("todos").filter(|t| t.is_array()) {
            if let Err(e) = settings.client.todos(&call.session_id, todos).await {
                eprintln!("plangate: could not record the to-do list: {e}");
            }
        }
    }
    gate(call, settings).await
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
        // Claude Code's dialog, which the PermissionRequest hook relays to
        // the approvers: the ask rule's card.
        Ok(verdict) if verdict.decision == GateDecision::Ask && call.event == Event::PreToolUse => {
            Answer::Ask(format!("plangate: {}", verdict.reason))
        }
        Ok(verdict) => Answer::deny(call.event, format!("plangate: {}", verdict.reason)),
        Err(e) => Answer::deny(call.event, format!("plangate could not check this call, so it is blocked: {e}")),
    }
}

/// A permission dialog the gate let through, relayed
/// ([`crate::permission::relay`]): a person's (or a rule's) allow or deny,
/// or no decision, and Claude Code asks at its terminal.
async fn relay_permission(call: &ToolCall, settings: &Settings) -> Answer {
    let paths = crate::scope_paths::targets(&call.tool_name, &call.tool_input, call.cwd.as_deref());
    let relayed =
        crate::permission::relay(&settings.client, &call.session_id, &call.tool_name, &call.tool_input, paths, settings.wait).await;
    match relayed {
        crate::permission::Relayed::Allow { .. } => Answer::Allow { updated_input: call.tool_input.clone() },
        crate::permission::Relayed::Deny { reason } => Answer::deny(Event::PermissionRequest, reason),
        crate::permission::Relayed::Terminal { why } => {
            eprintln!("plangate: {why}; Claude Code asks here");
            Answer::NoDecision
        }
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
