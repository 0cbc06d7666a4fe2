//! The pure domain of plangate.
//!
//! Read this crate first. It holds everything plangate *decides*, and nothing
//! that it *does*: the plan model and its rules ([`plan`]), reading plans out
//! of markdown ([`markdown`]) and step lists typed by people ([`list`]), the
//! approval state machine ([`machine::apply`] over the types of [`model`] and
//! [`command`]; its table is `docs/STATE_MACHINE.md`), decision receipts
//! ([`receipt`]) and what ran under an approval ([`ran`]), the agent-facing views ([`view`]), the `[PLAN_DECISION]`
//! texts ([`injection`]), the channel-neutral plan card ([`card`]), the
//! `/plan` text grammar ([`grammar`]) and the button codec ([`codec`]),
//! cross-session step namespaces ([`namespace`]), and how people review a
//! version: quorums, separation of duties, notes and exclusions
//! ([`review`]), what changed since the version before ([`diff`]), and who
//! took a pending plan on ([`claim`]).
//!
//! **Architecture invariant:** no I/O, no clock, no randomness, no async. Time
//! and random bytes are arguments; side effects are returned as
//! [`Effect`] values for the shell to perform after it has committed
//! the new state. That is what lets one state machine serve every channel and
//! lets tests drive it without a runtime.

pub mod amendment;
pub mod authority;
pub mod brief;
pub mod card;
pub mod chains;
pub mod claim;
pub mod codec;
pub mod command;
pub mod diff;
pub mod grammar;
pub mod harness;
pub mod ids;
pub mod injection;
pub mod keep_going;
pub mod list;
pub mod machine;
pub mod markdown;
pub mod model;
pub mod namespace;
pub mod permission;
pub mod plan;
pub mod project;
pub mod ran;
pub mod receipt;
pub mod refusal;
pub mod review;
pub mod scope;
pub mod step;
pub mod subagents;
pub mod text;
pub mod view;

pub use authority::StepUp;
pub use command::{AuditEvent, Command, Ctx, Decision, Effect, Terms, Transition, Verdict};
pub use harness::Harness;
pub use ids::{ApprovalId, QuestionId, SessionKey, Timestamp};
pub use machine::apply;
pub use model::review::{ApprovalPolicy, Review};
pub use model::subagents::SubagentRun;
pub use model::{
    Actor, ApprovalState, Claim, DecisionStatus, GateScope, Mode, Proposal, Question, QuestionStatus, Rung, Session, State, Timer,
    TimerKind, TimerPolicy,
};
pub use plan::{Plan, PlanError};
pub use project::{Project, ProjectPatterns};
pub use refusal::Refusal;
pub use scope::Scope;
pub use step::{Step, StepStatus, StepUpdate};

/// [`gate_call`] for a plain API call: `tool` with `input`, advice in the
/// API's terms, no plan file.
pub fn gate(
    session: &Session,
    scope: GateScope,
    policy: &plangate_gate::Policy,
    tool: &str,
    input: &serde_json::Value,
) -> plangate_gate::Verdict {
    gate_call(
        session,
        scope,
        policy,
        &GateCall { tool, input, harness: Harness::Api, plan_file: false, harness_plan_mode: false, paths: None },
    )
}

/// One tool call the gate judges, with what the harness's hook knows.
#[derive(Debug, Clone, Copy)]
pub struct GateCall<'a> {
    pub tool: &'a str,
    pub input: &'a serde_json::Value,
    /// Who asks: a denial's advice names this harness's tools.
    pub harness: Harness,
    /// The hook verified, on the agent's machine, that this call writes only
    /// the harness's own plan file (Claude Code: a `.md` file directly in
    /// its plans directory, no traversal, no link out). plangate cannot see
    /// that disk, so it trusts the hook, which is its own code; an agent that
    /// bypasses the hook bypasses the gate altogether.
    pub plan_file: bool,
    /// The harness says it is in its own plan mode (Claude Code's
    /// `permission_mode: "plan"`, which the model cannot switch on itself
    /// except by entering plan mode, which only restricts it).
    pub harness_plan_mode: bool,
    /// The files a file tool writes, as the hook normalized them on the
    /// agent's machine (links resolved, [`scope::Target`]). `None` (an API
    /// or MCP caller, an older hook): the gate normalizes the tool's own
    /// paths by their text alone, and any it cannot keep inside the
    /// working directory is outside.
    pub paths: Option<&'a [scope::Target]>,
}

/// The mutation gate for a session: may `call.tool` run with `call.input` now?
///
/// Mutations run only while the session is [`Mode::Normal`] *and*, under the
/// default [`GateScope::ApprovedPlan`], it executes a plan a human approved or
/// a person released it (`/plan off`). Everywhere else (plan mode, a halted
/// session after Cancel, an unknown session, one that never planned, one whose
/// plan completed) only what `plangate-gate` proves read-only under `policy`
/// runs, and a denial says how to get approval in the caller's harness's
/// terms. Default-deny throughout.
///
/// One exception, the harness's own plan file: Claude Code's native plan
/// mode has the model write its plan to a file before `ExitPlanMode`, and a
/// gate that refuses that write makes approval impossible. A call the hook
/// marked as writing only that file ([`GateCall::plan_file`]) is allowed
/// while planning: in plangate's plan mode, or in the harness's own plan
/// mode (a session still unknown to plangate, or halted after a Cancel and
/// about to propose again). `deny_tools` still wins.
pub fn gate_call(session: &Session, scope: GateScope, policy: &plangate_gate::Policy, call: &GateCall) -> plangate_gate::Verdict {
    use plangate_gate::Verdict;
    let executing = matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited);
    let open = match (session.mode, scope) {
        // Steps added after approval wait for people: until they decide,
        // nothing beyond what the policy proves read-only runs.
        (Mode::Normal, _) if session.amendment_pending.is_some() => None,
        (Mode::Normal, GateScope::PlanModeOnly) => Some("not in plan mode (gate scope: plan_mode_only)".to_string()),
        (Mode::Normal, GateScope::ApprovedPlan) if executing => Some("executing the plan a human approved".to_string()),
        (Mode::Normal, GateScope::ApprovedPlan) => session.released_by.as_ref().map(|who| format!("released by {who}: no plan required")),
        (Mode::Plan | Mode::Halted, _) => None,
    };
    if let Some(reason) = open {
        return match out_of_scope(session, call) {
            Some(found) => Verdict::Deny(scope_denial(session, call.tool, &found)),
            None => Verdict::Allow(reason),
        };
    }
    let planning = session.mode == Mode::Plan || call.harness_plan_mode;
    if call.plan_file && planning && !policy.deny_tools.iter().any(|t| t == call.tool) {
        return Verdict::Allow("writes only the harness's own plan file while planning".to_string());
    }
    match plangate_gate::check_plan_mode(policy, call.tool, call.input) {
        Verdict::Allow(reason) => Verdict::Allow(reason),
        Verdict::Deny(reason) if session.amendment_pending.is_some() => Verdict::Deny(format!(
            "{}. The approved plan was amended after it was approved (amendment v{}: steps added, or its scope widened): the amendment waits for a human's approval, and nothing may change until it is decided. Wait for the decision (GET /v1/sessions/{{id}}/decision?wait=N); rejected, the added steps are dropped (the scope stays as approved) and the approved plan goes on",
            reason.trim_end_matches('.'),
            session.version
        )),
        Verdict::Deny(reason) => Verdict::Deny(with_advice(session.mode, reason, call.harness)),
    }
}

/// The files of `call` that the approved plan's scope does not cover, if
/// it is a file tool of a session executing a scoped plan.
pub fn out_of_scope(session: &Session, call: &GateCall) -> Option<scope::OutOfScope> {
    if session.scope.is_empty() || !amendment::executing(session) {
        return None;
    }
    let targets: Vec<scope::Target> = match (call.paths, plangate_gate::paths::written_paths(call.tool, call.input)?) {
        // Files that cannot be told are outside every scope; the denial
        // says why in the place of a path.
        (_, Err(why)) => vec![scope::Target::Outside(format!("files plangate cannot tell ({why})"))],
        (Some(sent), Ok(_)) => sent.to_vec(),
        (None, Ok(raw)) => raw.iter().map(|p| scope::lexical(p, None)).collect(),
    };
    scope::check(&session.scope, &targets).err()
}

/// The paths an amendment should ask to widen the scope by, after
/// [`gate_call`] denied `call` for its scope: files inside the working
/// directory that the scope does not cover. The shell turns them into
/// [`Command::WidenScope`].
pub fn scope_widening(session: &Session, call: &GateCall) -> Option<Vec<String>> {
    out_of_scope(session, call).map(|found| found.widen).filter(|w| !w.is_empty())
}

/// Why a file tool outside the scope is denied, naming the scope.
fn scope_denial(session: &Session, tool: &str, found: &scope::OutOfScope) -> String {
    let tool = plangate_gate::text::shown(tool);
    let scope = session.scope.join(", ");
    let mut parts = Vec::new();
    if !found.outside.is_empty() {
        parts.push(format!(
            "`{tool}` writes {}, outside the session's working directory (or not normalized: `..`, an absolute path elsewhere, a link out of the tree), which no scope covers",
            found.outside.iter().map(|p| plangate_gate::text::shown(p)).collect::<Vec<_>>().join(", ")
        ));
    }
    if !found.widen.is_empty() {
        parts.push(format!(
            "`{tool}` writes {}, outside the approved plan's scope; a human is asked (once per path) to widen the scope: wait for the decision, or keep within it",
            found.widen.iter().map(|p| plangate_gate::text::shown(p)).collect::<Vec<_>>().join(", ")
        ));
    }
    format!("{}. The approved plan touches only {scope}", parts.join("; "))
}

/// A denial with, outside plan mode, how to get a plan approved in the
/// caller's harness.
fn with_advice(mode: Mode, reason: String, harness: Harness) -> String {
    if mode == Mode::Plan {
        return reason;
    }
    // Outside plan mode the gate's own "plan mode allows only read-only …"
    // would mislead; the advice below says what to do instead. A reason that
    // ends a sentence already must not get a second period.
    let reason = plangate_gate::text::without_plan_mode_advice(&reason).trim_end_matches('.');
    match mode {
        Mode::Plan => reason.to_string(),
        Mode::Halted => format!(
            "{reason}, and the last plan was cancelled, so this session is halted (read-only): to change anything, {}; or ask a person to release the session (/plan off)",
            harness.how_to_get_approval()
        ),
        Mode::Normal => format!(
            "{reason}, and this session holds no approved plan: nothing may change without one. To change anything, {}",
            harness.how_to_get_approval()
        ),
    }
}
