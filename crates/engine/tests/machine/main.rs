//! Behavioural tests of the approval state machine, one (or more) per row of
//! the table in `docs/STATE_MACHINE.md`, plus the views (API.md shapes),
//! hydration and the injection envelope. Every test drives the public `apply`
//! only.

use plangate_engine::machine::describe_stale;
use plangate_engine::plan::{plan_hash, PlanError};
use plangate_engine::view::{self, DecisionView, StatusView};
use plangate_engine::*;
use plangate_engine::{card, subagents};
use serde_json::json;

// ---------------------------------------------------------------- fixtures

/// 2026-11-30T14:00:00Z
const T0: i64 = 1_796_047_200_000;
const MIN: i64 = 60_000;
const NUDGES: [u64; 3] = [600_000, 1_800_000, 3_600_000];
const TIMEOUT: u64 = 86_400_000;

fn key() -> SessionKey {
    SessionKey::new("demo", "s1")
}

fn policy() -> TimerPolicy {
    TimerPolicy {
        nudges_ms: NUDGES.to_vec(),
        timeout_ms: Some(TIMEOUT),
        ladder: Vec::new(),
        subagent_expiry_ms: None,
        ..TimerPolicy::default()
    }
}

fn ctx_at(now: i64, seed: u8) -> Ctx {
    Ctx { now: Timestamp(now), random: [seed; 16], timers: policy(), approvals: ApprovalPolicy::default() }
}

fn ctx(seed: u8) -> Ctx {
    ctx_at(T0, seed)
}

fn alice() -> Actor {
    Actor::Human { id: "telegram:111".into(), name: "telegram:@alice".into() }
}

fn bob() -> Actor {
    Actor::Human { id: "slack:U2".into(), name: "slack:@bob".into() }
}

fn operator() -> Actor {
    Actor::Operator { name: "ci".into() }
}

fn steps(texts: &[&str]) -> Vec<Step> {
    texts.iter().map(|t| Step::pending(*t)).collect()
}

/// Whole steps as `update_plan` updates (each carries every field).
fn updates(steps: Vec<Step>) -> Vec<StepUpdate> {
    steps.into_iter().map(StepUpdate::from).collect()
}

fn with_status(text: &str, status: StepStatus) -> Step {
    Step { status, ..Step::pending(text) }
}

fn plan() -> Plan {
    Plan {
        summary: Some("Retry transient failures".into()),
        steps: steps(&["Read the client", "Add backoff", "Test it"]),
        ..Plan::titled("Add retries")
    }
}

fn plan_v2() -> Plan {
    Plan { steps: steps(&["Read the client", "Add capped backoff", "Test it"]), ..plan() }
}

fn edited_plan() -> Plan {
    Plan { steps: steps(&["Read the client", "Add capped backoff"]), ..Plan::titled("Add retries (edited)") }
}

/// Apply and expect success.
fn ok(state: &State, actor: &Actor, command: Command, ctx: &Ctx) -> Transition {
    let name = command.name();
    match apply(state, actor, command, ctx) {
        Ok(t) => t,
        Err(e) => panic!("{name} by {} was refused: {e:?}", actor.label()),
    }
}

/// Apply and expect a refusal; the input state is untouched.
fn refused(state: &State, actor: &Actor, command: Command, ctx: &Ctx) -> Refusal {
    let before = state.clone();
    let name = command.name();
    let result = apply(state, actor, command, ctx);
    assert_eq!(state, &before);
    match result {
        Err(r) => r,
        Ok(t) => panic!("{name} by {} was accepted: {:?}", actor.label(), t.effects),
    }
}

/// (actor, action, approval id, version, detail)
type AuditRow = (String, String, Option<ApprovalId>, Option<u32>, String);

fn audit(t: &Transition) -> Vec<AuditRow> {
    t.audit.iter().map(|a| (a.actor.clone(), a.action.clone(), a.approval_id, a.version, a.detail.clone())).collect()
}

fn actions(t: &Transition) -> Vec<(String, String)> {
    t.audit.iter().map(|a| (a.actor.clone(), a.action.clone())).collect()
}

fn pair(actor: &str, action: &str) -> (String, String) {
    (actor.to_string(), action.to_string())
}

fn timers(id: ApprovalId, created: i64) -> Vec<Timer> {
    let mut out: Vec<Timer> = NUDGES
        .iter()
        .enumerate()
        .map(|(i, ms)| Timer { due: Timestamp(created + *ms as i64), session: key(), approval_id: id, kind: TimerKind::Nudge(i as u8 + 1) })
        .collect();
    out.push(Timer { due: Timestamp(created + TIMEOUT as i64), session: key(), approval_id: id, kind: TimerKind::Timeout });
    out
}

fn enter(state: &State) -> State {
    ok(state, &Actor::Agent, Command::Enter { reason: None }, &ctx(0)).state
}

/// A session in plan mode, without the agent reminders entering schedules
/// (they are covered by their own tests), so effect lists stay about the row.
fn in_plan() -> State {
    let mut s = enter(&State::new(key()));
    s.session.agent_timers.clear();
    s
}

/// Enter schedules exactly one agent reminder per nudge offset.
fn only_agent_nudges(effects: &[Effect]) -> bool {
    effects.len() == NUDGES.len() && effects.iter().all(|e| matches!(e, Effect::Schedule(Timer { kind: TimerKind::AgentNudge(_), .. })))
}

fn propose_cmd(plan: Plan) -> Command {
    Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None }
}

fn decide(id: ApprovalId, verdict: Verdict) -> Command {
    Command::Decide { approval_id: id, verdict }
}

fn revise(id: ApprovalId, feedback: &str) -> Command {
    decide(id, Verdict::Revise(feedback.to_string()))
}

/// plan/pending with `plan()` as v1, id `[1; 16]`, proposed at T0.
fn pending() -> (State, ApprovalId) {
    let t = ok(&in_plan(), &Actor::Agent, propose_cmd(plan()), &ctx(1));
    (t.state, ApprovalId([1; 16]))
}

/// normal/approved: v1 approved by alice at T0 + 5 min.
fn approved() -> (State, ApprovalId) {
    let (s, id) = pending();
    let t = ok(&s, &alice(), decide(id, Verdict::Approve), &ctx_at(T0 + 5 * MIN, 9));
    (t.state, id)
}

fn latest(state: &State) -> &Proposal {
    state.latest.as_ref().expect("a latest proposal")
}

fn rfc(ms: i64) -> String {
    Timestamp(ms).rfc3339()
}

fn count_lines_starting(text: &str, prefix: &str) -> usize {
    text.lines().filter(|l| l.trim_start().to_ascii_lowercase().starts_with(&prefix.to_ascii_lowercase())).count()
}

fn count_substr(text: &str, needle: &str) -> usize {
    text.to_ascii_lowercase().matches(&needle.to_ascii_lowercase()).count()
}

/// Exactly one envelope: the header is the first line, the footer the last,
/// and neither marker appears anywhere else.
fn assert_one_envelope(text: &str, status: &str) {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first().copied(), Some(format!("[PLAN_DECISION]: {status}").as_str()), "{text}");
    assert_eq!(lines.last().copied(), Some("[/PLAN_DECISION]"), "{text}");
    assert_eq!(count_lines_starting(text, "[PLAN_DECISION]"), 1, "{text}");
    assert_eq!(count_lines_starting(text, "[/PLAN_DECISION]"), 1, "{text}");
    assert_eq!(count_substr(text, "[plan_decision"), 1, "{text}");
    assert_eq!(count_substr(text, "[/plan_decision"), 1, "{text}");
}

/// The agent asks " Which API? " with `options`.
fn ask(options: &[&str], freetext: bool) -> Command {
    Command::Ask { question: " Which API? ".into(), options: options.iter().map(|o| o.to_string()).collect(), allow_freetext: freetext }
}

/// A human's answer `text` to question `id` (the open one when `None`).
fn answer(id: Option<QuestionId>, text: &str) -> Command {
    Command::Answer { question_id: id, answer: text.into() }
}

mod claims;
mod deciding;
mod keep_going;
mod permissions;
mod planning;
mod ran;
mod subagents_questions;
mod views;
