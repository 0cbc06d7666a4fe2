//! The pure domain of plangate.
//!
//! Read this crate first. It holds everything plangate *decides*, and nothing
//! that it *does*: the plan model and its rules ([`plan`]), the approval state
//! machine ([`machine::apply`]), the agent-facing views ([`view`]), the
//! `[PLAN_DECISION]` texts ([`injection`]), the channel-neutral plan card
//! ([`card`]), the `/plan` text grammar ([`grammar`]) and the button codec
//! ([`codec`]), and cross-session step namespaces ([`namespace`]).
//!
//! **Architecture invariant:** no I/O, no clock, no randomness, no async. Time
//! and random bytes are arguments; side effects are returned as
//! [`machine::Effect`] values for the shell to perform after it has committed
//! the new state. That is what lets one state machine serve every channel and
//! lets tests drive it without a runtime.

pub mod card;
pub mod codec;
pub mod grammar;
pub mod ids;
pub mod injection;
pub mod machine;
pub mod namespace;
pub mod plan;
pub mod text;
pub mod view;

pub use ids::{ApprovalId, QuestionId, SessionKey, Timestamp};
pub use machine::{
    apply, Actor, ApprovalState, AuditEvent, Command, Ctx, DecisionStatus, Effect, Mode, Proposal, Question, QuestionStatus, Refusal,
    Session, State, Timer, TimerKind, TimerPolicy, Transition, Verdict,
};
pub use plan::{Plan, PlanError, Step, StepStatus};

/// The mutation gate for a session (DESIGN §5): normal mode (approved,
/// edited, or never in plan mode) allows; plan mode, pending included, is
/// default-deny under `policy` (see `plangate-gate`).
pub fn gate(session: &Session, policy: &plangate_gate::Policy, tool: &str, input: &serde_json::Value) -> plangate_gate::Verdict {
    match session.mode {
        Mode::Normal => plangate_gate::Verdict::Allow("not in plan mode: the plan was approved or plan mode is off".to_string()),
        Mode::Plan => plangate_gate::check_plan_mode(policy, tool, input),
    }
}
