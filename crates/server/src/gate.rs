//! The mutation gate as the server applies it: the engine's [`gate`](plangate_engine::gate)
//! with the agent's configured policy.

use crate::config::Settings;
use plangate_engine::Session;
pub use plangate_gate::Verdict;

/// An agent the config does not know gets the strictest answers: the default
/// policy under [`plangate_engine::GateScope::ApprovedPlan`].
pub fn check(settings: &Settings, agent: &str, session: &Session, call: &plangate_engine::GateCall) -> Verdict {
    let default = plangate_gate::Policy::default();
    let config = settings.raw.agents.get(agent);
    let policy = config.map(|a| &a.gate).unwrap_or(&default);
    let scope = config.map(|a| a.gate_scope).unwrap_or_default();
    plangate_engine::gate_call(session, scope, policy, call)
}
