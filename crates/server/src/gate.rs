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

/// The risk classes of a call the gate let through that the approved plan
/// being carried out did not declare ([`plangate_gate::classes`]); empty
/// when no plan executes (planning is the gate's business, and after the
/// plan the agent's own rules hold) or the plan allows them all.
pub fn outside_the_plan(state: &plangate_engine::State, call: &plangate_engine::GateCall) -> Vec<plangate_gate::classes::RiskClass> {
    plangate_engine::permission::outside_the_plan(state, call.tool, call.input)
}

/// What the gate says of a call of undeclared classes: people are asked
/// (the harness's dialog, which the hook relays as a permission card with
/// the graded answers), naming what it does and what the plan allows.
pub fn undeclared_reason(state: &plangate_engine::State, classes: &[plangate_gate::classes::RiskClass]) -> String {
    let does: Vec<&str> = classes.iter().map(|c| c.says()).collect();
    let ids: Vec<&str> = classes.iter().map(|c| c.id()).collect();
    let allows: Vec<&str> = state.latest.as_ref().map(|p| p.plan.allows.iter().map(|c| c.id()).collect()).unwrap_or_default();
    let allowed = if allows.is_empty() { "no risk class".to_string() } else { allows.join(", ") };
    format!(
        "this {} ({}); not in the approved plan, which allows {allowed}. A person is asked to allow it",
        does.join(", "),
        ids.join(", ")
    )
}
