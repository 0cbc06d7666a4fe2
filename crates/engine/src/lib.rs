//! The pure domain of plangate.
//!
//! Read this crate first. It holds everything plangate *decides*, and nothing
//! that it *does*: the plan model and its rules ([`plan`]), reading plans out
//! of markdown ([`markdown`]) and step lists typed by people ([`list`]), the
//! approval state machine ([`machine::apply`] over the types of [`model`] and
//! [`command`]; its table is `docs/STATE_MACHINE.md`), decision receipts
//! ([`receipt`]), the agent-facing views ([`view`]), the `[PLAN_DECISION]`
//! texts ([`injection`]), the channel-neutral plan card ([`card`]), the
//! `/plan` text grammar ([`grammar`]) and the button codec ([`codec`]),
//! cross-session step namespaces ([`namespace`]), and how people review a
//! version: quorums, separation of duties, notes and exclusions
//! ([`review`]) and what changed since the version before ([`diff`]).
//!
//! **Architecture invariant:** no I/O, no clock, no randomness, no async. Time
//! and random bytes are arguments; side effects are returned as
//! [`Effect`] values for the shell to perform after it has committed
//! the new state. That is what lets one state machine serve every channel and
//! lets tests drive it without a runtime.

pub mod authority;
pub mod card;
pub mod codec;
pub mod command;
pub mod diff;
pub mod grammar;
pub mod ids;
pub mod injection;
pub mod list;
pub mod machine;
pub mod markdown;
pub mod model;
pub mod namespace;
pub mod plan;
pub mod receipt;
pub mod review;
pub mod subagents;
pub mod text;
pub mod view;

pub use command::{AuditEvent, Command, Ctx, Effect, Refusal, Terms, Transition, Verdict};
pub use ids::{ApprovalId, QuestionId, SessionKey, Timestamp};
pub use machine::apply;
pub use model::{
    Actor, ApprovalState, DecisionStatus, GateScope, Mode, Proposal, Question, QuestionStatus, Session, State, Timer, TimerKind,
    TimerPolicy,
};
pub use plan::{Plan, PlanError, Step, StepStatus, StepUpdate};
pub use review::{ApprovalPolicy, Review};
pub use subagents::SubagentRun;

/// The mutation gate for a session: may `tool` run with `input` now?
///
/// Mutations run only while the session is [`Mode::Normal`] *and*, under the
/// default [`GateScope::ApprovedPlan`], it executes a plan a human approved or
/// a person released it (`/plan off`). Everywhere else (plan mode, a halted
/// session after Cancel, an unknown session, one that never planned, one whose
/// plan completed) only what `plangate-gate` proves read-only under `policy`
/// runs, and a denial says how to get approval. Default-deny throughout.
pub fn gate(
    session: &Session,
    scope: GateScope,
    policy: &plangate_gate::Policy,
    tool: &str,
    input: &serde_json::Value,
) -> plangate_gate::Verdict {
    use plangate_gate::Verdict;
    let executing = matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited);
    let open = match (session.mode, scope) {
        (Mode::Normal, GateScope::PlanModeOnly) => Some("not in plan mode (gate scope: plan_mode_only)".to_string()),
        (Mode::Normal, GateScope::ApprovedPlan) if executing => Some("executing the plan a human approved".to_string()),
        (Mode::Normal, GateScope::ApprovedPlan) => session.released_by.as_ref().map(|who| format!("released by {who}: no plan required")),
        (Mode::Plan | Mode::Halted, _) => None,
    };
    if let Some(reason) = open {
        return Verdict::Allow(reason);
    }
    match plangate_gate::check_plan_mode(policy, tool, input) {
        Verdict::Allow(reason) => Verdict::Allow(reason),
        Verdict::Deny(reason) => Verdict::Deny(match session.mode {
            Mode::Plan => reason,
            Mode::Halted => format!(
                "{reason}. The last plan was cancelled, so this session is halted (read-only): propose a new plan and wait for a human to approve it, or ask a person to release the session (/plan off)"
            ),
            Mode::Normal => format!(
                "{reason}. This session holds no approved plan, and nothing may change without one: enter plan mode (enter_plan_mode, or POST /v1/sessions/{{id}}/enter), propose a plan, and wait for a human to approve it"
            ),
        }),
    }
}
