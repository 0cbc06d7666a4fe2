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

/// What the agent's configured permission rules say about a call the gate
/// let through: `deny` and `ask` rules hold at the gate too, so a denied
/// command is denied whether or not the harness would show a dialog for
/// it, and an `ask` command needs a person even where the harness's own
/// settings would run it silently. Read wide ([`plangate_engine::permission::Rule::restricts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByRules {
    Deny(String),
    Ask(String),
}

pub fn by_rules(settings: &Settings, agent: &str, call: &plangate_engine::GateCall) -> Option<ByRules> {
    let rules = &settings.raw.agents.get(agent)?.permissions;
    let call = plangate_engine::permission::Call { tool: call.tool, input: call.input, paths: call.paths };
    if let Some(rule) = rules.deny.iter().find(|r| r.restricts(&call)) {
        return Some(ByRules::Deny(format!("denied by plangate's rule {} for this agent", rule.shown())));
    }
    rules
        .ask
        .iter()
        .find(|r| r.restricts(&call))
        .map(|rule| ByRules::Ask(format!("plangate's rule {} for this agent asks a person before this runs", rule.shown())))
}
