//! `plangate hook codex`: one Codex hook event in, one answer out.
//!
//! The agent is the owner of `PLANGATE_TOKEN` (server `PLANGATE_URL`, default
//! `http://127.0.0.1:8787`); the plangate session is Codex's `session_id`
//! (its thread id), mapped into the API's charset by
//! [`crate::session::sanitize`].
//!
//! Field names and output shapes are Codex's, checked against its published
//! hook schemas and their parser (openai/codex, `codex-rs/hooks`:
//! `schema/generated/{pre-tool-use,permission-request,stop}.command.{input,output}.schema.json`,
//! `src/schema.rs`, `src/engine/output_parser.rs`, `src/events/{pre_tool_use,permission_request,stop}.rs`;
//! Codex CLI 0.124 to 0.133, hooks generally available since 2026-05-14):
//!
//! | event | plangate's answer |
//! |---|---|
//! | `PreToolUse` | gate allows: no output (Codex's own rules apply); denies: `hookSpecificOutput.permissionDecision = "deny"` with `permissionDecisionReason` |
//! | `PermissionRequest` | gate denies: `hookSpecificOutput.decision = {"behavior": "deny", "message"}`; allows: relayed to the approvers ([`crate::permission`]): their allow is `{"behavior": "allow"}`, their deny as above, no answer in time is no output (the user is asked as usual) |
//! | `Stop`, a `<proposed_plan>` block in `last_assistant_message` | proposed; decided (at once or within the wait): `{"decision": "block", "reason": <the [PLAN_DECISION] text>}`, which Codex runs as its next prompt; still pending: `{"systemMessage"}` saying so, and Codex stops |
//! | `Stop` without a plan | an undelivered decision (one made after an earlier wait ended): `{"decision": "block", "reason": <it>}`; else, an approved plan with open steps (`POST …/stopping`): the next step, escalating, then a few continues, as `{"decision": "block", "reason"}`; otherwise no output |
//!
//! Codex reports every shell tool (`shell`, `shell_command`, `exec_command`)
//! as `Bash` with `tool_input = {"command": <string>}` (`description` too in
//! `PermissionRequest`), `apply_patch` with the patch as
//! `tool_input.command`, and MCP tools as `mcp__<server>__<tool>` with their
//! arguments: names the gate knows (`plangate_gate`), so they are passed on
//! unchanged.
//!
//! A decided injection is delivered once: after it goes into a `Stop`
//! answer the hook takes it (`POST …/injection/take`), so the next `Stop`
//! (or another integration) does not deliver it again.
//!
//! Never fail open. On the gate's events a server that is down or slow,
//! malformed input, a missing `session_id` or `tool_name` are a deny with the
//! reason. Input whose event cannot be told (not JSON, no
//! `hook_event_name`) and events this hook does not answer get exit 2 with
//! the reason on stderr: the one answer that blocks on every Codex event
//! (a JSON shape another event does not expect is a "failed" hook, and
//! failed hooks do not block). A panic is exit 2 too ([`fail_closed_on_panic`]).
//!
//! `Stop` is not a gate: whatever goes wrong there, Codex may stop (its next
//! tool call is still gated), so failures on `Stop` are a `systemMessage`
//! for the user and exit 0. Blocking a `Stop` makes Codex run again, and a
//! failure that repeats would loop.

use crate::client::{AgentError, Client, GateDecision, PlanFile, Timeouts};
use crate::codex::{extract_proposed_plan, CodexError};
use crate::proposal::{submit, FileRecall, NoRecall, ProposalBody, Recall};
use plangate_engine::plan::render_markdown;
use plangate_engine::view::DecisionView;
use plangate_engine::DecisionStatus;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a `Stop` with a plan waits for a decision unless
/// `PLANGATE_HOOK_WAIT` says otherwise: with the margin, Codex's own default
/// hook timeout (600 s).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(590);
/// The longest `PLANGATE_HOOK_WAIT` accepted: an hour with the margin. The
/// wait chains long-polls of at most 300 s each.
pub const MAX_WAIT_SECS: u64 = 3590;
/// The installed hook timeout is the wait plus this margin, so the hook
/// always answers before Codex gives up on it (a timed-out hook is a failed
/// one, and a failed `PreToolUse` hook does not block).
pub const TIMEOUT_MARGIN_SECS: u64 = 10;
/// The gate's answer, submitting a plan, taking an injection: each within this.
pub const QUICK_BUDGET: Duration = Duration::from_secs(2);
/// The exit code Codex reads as a block (with the reason on stderr).
pub const EXIT_BLOCK: i32 = 2;

/// The events this hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PreToolUse,
    PermissionRequest,
    Stop,
}

/// What the hook tells Codex.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Exit 0 with empty stdout: no opinion.
    NoDecision,
    /// The gate's deny, in the terms of `PreToolUse` or `PermissionRequest`.
    Deny { event: Event, reason: String },
    /// `PermissionRequest`: a person (or plangate's rule) allowed the call
    /// (`decision.behavior: "allow"`, the shape Codex shares with Claude
    /// Code's hooks; Codex 0.169.0 never fires this event under `codex
    /// exec`, so it is tested against this crate's contract only).
    Allow,
    /// `Stop`: `{"decision": "block", "reason": …}`; Codex goes on with the
    /// reason as its next prompt.
    Continue(String),
    /// `Stop`: `{"systemMessage": …}`; Codex stops and shows the message.
    LetStop(String),
    /// Exit 2, the reason on stderr: for input whose event is unknown.
    Block(String),
}

/// The process's answer: what goes to stdout and stderr, and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Answer {
    fn deny(event: Event, reason: impl Into<String>) -> Answer {
        match event {
            Event::Stop => Answer::LetStop(reason.into()),
            _ => Answer::Deny { event, reason: reason.into() },
        }
    }

    pub fn render(&self) -> Output {
        let json_out = |value: Value| Output { stdout: format!("{value}\n"), stderr: String::new(), code: 0 };
        match self {
            Answer::NoDecision => Output { stdout: String::new(), stderr: String::new(), code: 0 },
            Answer::Deny { event: Event::PermissionRequest, reason } => json_out(json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason}}})),
            Answer::Allow => json_out(json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})),
            Answer::Deny { reason, .. } => json_out(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}})),
            Answer::Continue(reason) => json_out(json!({"decision": "block", "reason": reason})),
            Answer::LetStop(message) => json_out(json!({"systemMessage": message})),
            Answer::Block(reason) => Output { stdout: String::new(), stderr: format!("{reason}\n"), code: EXIT_BLOCK },
        }
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
        let recall: Box<dyn Recall> = match FileRecall::from_env("codex") {
            Some(r) => Box::new(r),
            None => Box::new(NoRecall),
        };
        Ok(Settings {
            client: Client::from_env(Timeouts::HOOK)?.for_harness(plangate_engine::Harness::Codex),
            wait: wait_from_env()?,
            recall,
        })
    }
}

/// `PLANGATE_HOOK_WAIT` in whole seconds, 0–[`MAX_WAIT_SECS`]; [`DEFAULT_WAIT`] when unset or empty.
pub fn wait_from_env() -> Result<Duration, AgentError> {
    let raw = std::env::var("PLANGATE_HOOK_WAIT").unwrap_or_default();
    if raw.trim().is_empty() {
        return Ok(DEFAULT_WAIT);
    }
    plangate_basics::wait::parse_secs(raw.trim(), MAX_WAIT_SECS)
        .ok_or_else(|| AgentError::Usage(format!("PLANGATE_HOOK_WAIT must be whole seconds from 0 to {MAX_WAIT_SECS}, got {raw:?}")))
}

/// Set once the input is known to be a `Stop`: a panic then lets Codex stop
/// instead of blocking (which on `Stop` would make Codex run again).
static ANSWERING_STOP: AtomicBool = AtomicBool::new(false);

/// Block this call and exit: the reason on stderr (Codex shows it to the
/// model on exit 2) and exit code 2. Write errors are ignored: the exit code
/// is the answer.
pub fn block_and_exit(reason: &str) -> ! {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{reason}");
    std::process::exit(EXIT_BLOCK)
}

/// From now on a panic anywhere in the process (any thread) blocks the call
/// ([`block_and_exit`]) instead of exiting 101, which Codex would take for a
/// failed hook and run the tool; on `Stop` it lets Codex stop, with the
/// reason as a `systemMessage`.
pub fn fail_closed_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        if ANSWERING_STOP.load(Ordering::SeqCst) {
            use std::io::Write;
            let out = Answer::LetStop(format!("plangate: the hook crashed ({info}); no plan decision was delivered")).render();
            let _ = std::io::stdout().write_all(out.stdout.as_bytes());
            let _ = std::io::stdout().flush();
            std::process::exit(0)
        }
        block_and_exit(&format!("plangate: the hook crashed ({info}), so this call is blocked"));
    }));
}

/// Read one event from stdin and answer it: what `plangate hook codex` prints.
pub async fn run() -> Output {
    let answer = match crate::hook_input::read_stdin(QUICK_BUDGET).await {
        // The event is unknown: exit 2, the block every event obeys.
        Err(why) => Answer::Block(why),
        Ok(input) => answer(&input, Settings::from_env).await,
    };
    answer.render()
}

/// The parsed parts of an event that matter here.
struct Input {
    event: Event,
    session_id: String,
    tool_name: String,
    tool_input: Value,
    /// `Stop`: the turn's final message (Codex sends `null` when there was none).
    last_message: Option<String>,
    /// `Stop`: Codex is already running again because a Stop hook blocked.
    stop_hook_active: bool,
    /// The session's working directory, which `apply_patch` paths are
    /// relative to and a plan's scope is held to.
    cwd: Option<String>,
}

fn parse(bytes: &[u8]) -> Result<Input, Answer> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Answer::Block(format!("plangate: the hook input is not valid JSON ({e}), so this call is blocked")))?;
    let event = match value.get("hook_event_name").and_then(Value::as_str) {
        Some("PreToolUse") => Event::PreToolUse,
        Some("PermissionRequest") => Event::PermissionRequest,
        Some("Stop") => Event::Stop,
        Some(other) => {
            return Err(Answer::Block(format!(
                "plangate hook codex answers PreToolUse, PermissionRequest and Stop only, not {other:?}; \
                 remove it from that event in hooks.json (`plangate hook install codex` writes the right entries)"
            )))
        }
        None => return Err(Answer::Block("plangate: the hook input has no hook_event_name, so this call is blocked".to_string())),
    };
    if event == Event::Stop {
        ANSWERING_STOP.store(true, Ordering::SeqCst);
    }
    let session_id = match value.get("session_id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(s) => crate::session::sanitize(s),
        None => return Err(Answer::deny(event, "plangate: the hook input has no session_id, so this call is blocked")),
    };
    let mut input = Input {
        event,
        session_id,
        tool_name: String::new(),
        tool_input: json!({}),
        last_message: None,
        stop_hook_active: false,
        cwd: None,
    };
    if event == Event::Stop {
        input.last_message = match value.get("last_assistant_message") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(Answer::LetStop("plangate: last_assistant_message is not a string; no plan was submitted".to_string())),
        };
        input.stop_hook_active = value.get("stop_hook_active").and_then(Value::as_bool).unwrap_or(false);
        return Ok(input);
    }
    input.tool_name = match value.get("tool_name").and_then(Value::as_str).filter(|t| !t.trim().is_empty()) {
        Some(t) => t.to_string(),
        None => return Err(Answer::deny(event, "plangate: the hook input has no tool_name, so this call is blocked")),
    };
    input.tool_input = value.get("tool_input").cloned().unwrap_or_else(|| json!({}));
    input.cwd = value.get("cwd").and_then(Value::as_str).map(str::to_string);
    Ok(input)
}

/// Answer one event. `settings` is only consulted once the input is valid,
/// so a broken environment is reported in the event's own terms.
pub async fn answer(bytes: &[u8], settings: impl FnOnce() -> Result<Settings, AgentError>) -> Answer {
    let input = match parse(bytes) {
        Ok(i) => i,
        Err(answer) => return answer,
    };
    let settings = match settings() {
        Ok(s) => s,
        Err(e) => return Answer::deny(input.event, format!("plangate: {e}; this call is blocked until the hook is configured")),
    };
    if input.event == Event::Stop {
        // Submitting, the wait, taking the injection, and a margin: inside
        // the installed timeout (wait + TIMEOUT_MARGIN_SECS).
        let budget = settings.wait + 3 * QUICK_BUDGET;
        return match tokio::time::timeout(budget, stop(&input, &settings)).await {
            Ok(answer) => answer,
            Err(_) => Answer::LetStop("plangate did not answer in time; no plan decision was delivered".to_string()),
        };
    }
    match tokio::time::timeout(QUICK_BUDGET, gate(&input, &settings)).await {
        // The gate let a permission dialog through: relay it to the
        // approvers (or plangate's rules), within the hook's wait.
        Ok(Gated::Answer(Answer::NoDecision)) if input.event == Event::PermissionRequest => {
            let paths = crate::scope_paths::targets(&input.tool_name, &input.tool_input, input.cwd.as_deref());
            let relay =
                crate::permission::relay(&settings.client, &input.session_id, &input.tool_name, &input.tool_input, paths, settings.wait);
            match tokio::time::timeout(settings.wait + 2 * QUICK_BUDGET, relay).await {
                Ok(crate::permission::Relayed::Allow { .. }) => Answer::Allow,
                Ok(crate::permission::Relayed::Deny { reason }) => Answer::deny(Event::PermissionRequest, reason),
                Ok(crate::permission::Relayed::Terminal { why }) => {
                    eprintln!("plangate: {why}; Codex asks here");
                    Answer::NoDecision
                }
                Err(_) => Answer::NoDecision,
            }
        }
        // People must allow this call (an ask rule, or a risk class the
        // approved plan did not declare): Codex's PreToolUse has no dialog
        // of its own to hand it to, and its approval policy may ask nobody,
        // so the hook relays it as a permission card itself and waits; no
        // answer is a deny.
        Ok(Gated::Ask(reason)) if input.event == Event::PreToolUse => {
            let paths = crate::scope_paths::targets(&input.tool_name, &input.tool_input, input.cwd.as_deref());
            let relay =
                crate::permission::relay(&settings.client, &input.session_id, &input.tool_name, &input.tool_input, paths, settings.wait);
            match tokio::time::timeout(settings.wait + 2 * QUICK_BUDGET, relay).await {
                Ok(crate::permission::Relayed::Allow { .. }) => Answer::NoDecision,
                Ok(crate::permission::Relayed::Deny { reason }) => Answer::deny(Event::PreToolUse, reason),
                Ok(crate::permission::Relayed::Terminal { why }) => {
                    Answer::deny(Event::PreToolUse, format!("plangate: {reason}; nobody allowed it ({why}), so it is blocked"))
                }
                Err(_) => Answer::deny(Event::PreToolUse, format!("plangate: {reason}; nobody allowed it in time, so it is blocked")),
            }
        }
        Ok(Gated::Ask(reason)) => Answer::deny(input.event, format!("plangate: {reason}")),
        Ok(Gated::Answer(answer)) => answer,
        Err(_) => {
            Answer::deny(input.event, format!("plangate did not answer within {} s, so this call is blocked", QUICK_BUDGET.as_secs()))
        }
    }
}

/// The gate's denial as the server words it: the client speaks for
/// [`plangate_engine::Harness::Codex`], so the advice already says how a
/// Codex agent gets a mutation through (a `<proposed_plan>` block at the end
/// of its turn), not plangate's MCP tools or API, which Codex cannot call.
async fn gate(input: &Input, settings: &Settings) -> Gated {
    let paths = crate::scope_paths::targets(&input.tool_name, &input.tool_input, input.cwd.as_deref());
    let gate = settings.client.gate_call(&input.session_id, &input.tool_name, &input.tool_input, PlanFile::No, paths);
    Gated::Answer(match gate.await {
        // Allow is no decision: Codex's own sandbox and approval rules still apply.
        Ok(verdict) if verdict.decision == GateDecision::Allow => Answer::NoDecision,
        Ok(verdict) if verdict.decision == GateDecision::Ask => return Gated::Ask(verdict.reason),
        Ok(verdict) => Answer::deny(input.event, format!("plangate: {}", verdict.reason)),
        Err(e) => Answer::deny(input.event, format!("plangate could not check this call, so it is blocked: {e}")),
    })
}

/// The gate's word on a call: an answer, or "people must allow it" (why).
enum Gated {
    Answer(Answer),
    Ask(String),
}

async fn stop(input: &Input, settings: &Settings) -> Answer {
    match input.last_message.as_deref().map(extract_proposed_plan) {
        Some(Ok(plan)) => propose(input, settings, ProposalBody::markdown(plan.markdown, None)).await,
        None | Some(Err(CodexError::NoBlock)) => deliver_undelivered(input, settings).await,
        // A broken block: tell the model once; if it breaks it again, stop.
        Some(Err(e)) if !input.stop_hook_active => Answer::Continue(format!(
            "plangate could not read your plan: {}. End your reply with the complete plan in one proposed_plan block, its opening and closing tags each on a line of its own.",
            unreadable(&e)
        )),
        Some(Err(e)) => Answer::LetStop(format!("plangate: the plan in the last message could not be read ({e}); it was not submitted")),
    }
}

/// Why a plan block could not be read, for the model: without angle
/// brackets, like every text of a `Stop` answer (Codex XML-escapes it, see
/// [`plangate_engine::Harness::Codex`]), so the tags are named, not written.
fn unreadable(e: &CodexError) -> String {
    match e {
        CodexError::NoBlock => "there is no proposed_plan block".to_string(),
        CodexError::Unterminated { line } => {
            format!("the proposed_plan block opened on line {line} is never closed (is the message cut off?)")
        }
        CodexError::Nested { line, outer } => {
            format!("line {line} opens a proposed_plan block inside the one opened on line {outer}; close the first one first")
        }
        CodexError::Empty { start, end } => format!("the proposed_plan block on lines {start}–{end} is empty"),
    }
}

/// No plan in this turn: a decision no earlier answer delivered (it came
/// after the wait) goes to Codex now.
async fn deliver_undelivered(input: &Input, settings: &Settings) -> Answer {
    match tokio::time::timeout(QUICK_BUDGET, settings.client.take_injection(&input.session_id)).await {
        Ok(Ok(Some(text))) => Answer::Continue(text),
        // Nothing to deliver: an approved plan with open steps keeps Codex
        // going ([`plangate_engine::keep_going`]); a failure lets it stop.
        Ok(Ok(None)) => {
            match tokio::time::timeout(QUICK_BUDGET, settings.client.stopping(&input.session_id, input.last_message.as_deref())).await {
                Ok(Ok(Some(instruction))) => Answer::Continue(instruction),
                _ => Answer::NoDecision,
            }
        }
        Ok(Err(e)) => Answer::LetStop(format!("plangate could not check this session for a plan decision: {e}")),
        Err(_) => Answer::LetStop("plangate did not answer in time; no plan decision was checked".to_string()),
    }
}

async fn propose(input: &Input, settings: &Settings, body: ProposalBody) -> Answer {
    let session = &input.session_id;
    // The project is the one Codex works in, not the hook's own directory.
    let client = settings.client.clone().in_dir(input.cwd.as_deref().map(std::path::Path::new));
    let submitted =
        tokio::time::timeout(QUICK_BUDGET, submit(&client, settings.recall.as_ref(), session, &body, "Codex proposed a plan")).await;
    let submitted = match submitted {
        Ok(Ok(s)) => s,
        // The plan itself was refused (too long, no title…): the model can fix that, once.
        Ok(Err(e @ AgentError::Api { status: 422, .. })) if !input.stop_hook_active => {
            return Answer::Continue(format!(
                "plangate refused your plan: {e}. Fix it and end your reply with the plan in a proposed_plan block again."
            ))
        }
        Ok(Err(e)) => return Answer::LetStop(format!("plangate could not submit the plan: {e}")),
        Err(_) => return Answer::LetStop("plangate did not take the plan in time; it was not submitted".to_string()),
    };
    let mut decision = submitted.decision;
    if !decision.is_final() {
        match settings.client.wait_decision(session, settings.wait).await {
            Ok(Some(d)) if d.approval_id == decision.approval_id => decision = d,
            Ok(Some(d)) => {
                return Answer::LetStop(format!(
                    "plangate: plan v{} was replaced by v{} while waiting; v{} is the one a human decides",
                    decision.version, d.version, d.version
                ))
            }
            Ok(None) | Err(AgentError::Timeout { .. }) => {}
            Err(e) => return Answer::LetStop(format!("plangate could not learn the decision on plan v{}: {e}", decision.version)),
        }
    }
    deliver(input, settings, &decision, submitted.recalled).await
}

/// The answer to a `Stop` whose plan has `d` as its Decision.
async fn deliver(input: &Input, settings: &Settings, d: &DecisionView, recalled: bool) -> Answer {
    match d.status {
        DecisionStatus::Pending => {
            return Answer::LetStop(format!(
                "plangate: plan v{} (approval {}) is waiting for a human; Codex stops here. When someone decides, the decision \
                 reaches Codex at the end of its next turn: send any message, for example \"continue\".",
                d.version, d.approval_id
            ))
        }
        DecisionStatus::Superseded => {
            return Answer::LetStop(format!("plangate: plan v{} was superseded by a newer proposal", d.version));
        }
        _ => {}
    }
    // Take the injection, so this decision is delivered once: by this answer.
    let taken = tokio::time::timeout(QUICK_BUDGET, settings.client.take_injection(&input.session_id)).await;
    let text = match taken {
        Ok(Ok(Some(text))) => Some(text),
        // Already taken: delivered before, when this same plan was sent back then.
        Ok(Ok(None)) if recalled => None,
        // Taken by someone else just now, or the server did not answer: this
        // answer still carries the decision.
        _ => d.injection.clone(),
    };
    let Some(mut text) = text else {
        return Answer::LetStop(format!(
            "plangate: plan v{} was already {} and Codex was told; nothing new to deliver",
            d.version,
            d.status.as_str()
        ));
    };
    if let (DecisionStatus::Edited, Some(plan)) = (d.status, d.plan.as_ref()) {
        text.push_str("\n\nThe approved plan:\n\n");
        text.push_str(&render_markdown(plan));
    }
    Answer::Continue(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_settings() -> Result<Settings, AgentError> {
        Err(AgentError::Usage("PLANGATE_TOKEN is not set".to_string()))
    }

    fn rendered(answer: &Answer) -> Value {
        serde_json::from_str(&answer.render().stdout).unwrap_or(Value::Null)
    }

    #[tokio::test]
    async fn malformed_input_blocks_and_unconfigured_denies_in_the_events_terms() {
        let bad = answer(b"{not json", no_settings).await.render();
        assert_eq!((bad.code, bad.stdout.as_str()), (EXIT_BLOCK, ""));
        assert!(bad.stderr.contains("not valid JSON"), "{}", bad.stderr);
        let unknown = answer(br#"{"hook_event_name":"PostToolUse","session_id":"s"}"#, no_settings).await.render();
        assert_eq!(unknown.code, EXIT_BLOCK);
        assert!(unknown.stderr.contains("\"PostToolUse\""), "{}", unknown.stderr);
        let no_tool = answer(br#"{"hook_event_name":"PermissionRequest","session_id":"s"}"#, no_settings).await;
        assert_eq!(rendered(&no_tool)["hookSpecificOutput"]["decision"]["behavior"], "deny");
        let unconfigured = answer(br#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Bash"}"#, no_settings).await;
        let reason = rendered(&unconfigured)["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap_or("").to_string();
        assert!(reason.contains("PLANGATE_TOKEN"), "{reason}");
        // On Stop nothing is gated: a broken setup lets Codex stop, and says why.
        let stop = answer(br#"{"hook_event_name":"Stop","session_id":"s","last_assistant_message":null}"#, no_settings).await;
        assert!(rendered(&stop)["systemMessage"].as_str().unwrap_or("").contains("PLANGATE_TOKEN"));
        let odd = answer(br#"{"hook_event_name":"Stop","session_id":"s","last_assistant_message":7}"#, no_settings).await;
        assert!(matches!(odd, Answer::LetStop(_)), "{odd:?}");
    }

    /// Codex XML-escapes what a `Stop` answer hands the model (0.169.0:
    /// `<hook_prompt …>[PLAN_DECISION] … present it again in a
    /// &lt;proposed_plan&gt; block`), so nothing plangate itself writes into
    /// one holds `<`, `>` or `&`: the plan-block advice of every
    /// `[PLAN_DECISION]` and `[PLAN_NUDGE]` text, and the hook's own answer
    /// to a block it cannot read (here, without a server: it asks none).
    #[tokio::test]
    async fn what_a_stop_answer_tells_codex_survives_its_escaping() {
        use plangate_engine::Harness;
        let h = Harness::Codex;
        let mut texts: Vec<String> =
            [h.how_to_propose(), h.how_to_revise(), h.how_to_go_on_unapproved(), h.how_to_ask(), h.how_to_execute(), h.quote_prefix()]
                .map(String::from)
                .to_vec();
        for e in [
            CodexError::NoBlock,
            CodexError::Unterminated { line: 1 },
            CodexError::Nested { line: 3, outer: 1 },
            CodexError::Empty { start: 1, end: 2 },
        ] {
            texts.push(unreadable(&e));
        }
        let settings = || -> Result<Settings, AgentError> {
            Ok(Settings { client: Client::new("http://127.0.0.1:9", None)?, wait: Duration::ZERO, recall: Box::new(NoRecall) })
        };
        let cut_off =
            br#"{"hook_event_name":"Stop","session_id":"s","stop_hook_active":false,"last_assistant_message":"<proposed_plan>\n# Plan\n"}"#;
        match answer(cut_off, settings).await {
            Answer::Continue(text) => {
                assert!(text.contains("proposed_plan block opened on line 1 is never closed"), "{text}");
                texts.push(text);
            }
            other => panic!("a cut-off plan is sent back: {other:?}"),
        }
        for text in texts {
            assert!(!text.contains(['<', '>', '&']), "Codex would show this escaped: {text}");
            assert!(!text.contains("enter_plan_mode") && !text.contains("update_plan"), "{text}");
        }
        // A gate denial is a `PreToolUse` reason, which Codex shows verbatim: there the tag is written out.
        assert!(h.how_to_get_approval().contains("<proposed_plan>"));
    }

    /// The output shapes Codex's parser accepts (`output_parser.rs`): no
    /// field it does not know, a non-empty reason with every block.
    #[test]
    fn every_answer_renders_in_codexs_shape() {
        assert_eq!(Answer::NoDecision.render(), Output { stdout: String::new(), stderr: String::new(), code: 0 });
        let deny = rendered(&Answer::deny(Event::PreToolUse, "no"));
        assert_eq!(
            deny,
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}})
        );
        let deny = rendered(&Answer::deny(Event::PermissionRequest, "no"));
        assert_eq!(
            deny,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "no"}}})
        );
        assert_eq!(rendered(&Answer::Continue("go".into())), json!({"decision": "block", "reason": "go"}));
        assert_eq!(rendered(&Answer::deny(Event::Stop, "why")), json!({"systemMessage": "why"}));
    }
}
