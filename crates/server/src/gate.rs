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

/// What a policy routes a risky call by ([`plangate_policy::Facts`]), with
/// the classes the approved plan did not declare: `None` when no approved
/// plan executes (planning is the gate's business, and after the plan the
/// agent's own rules hold) or the gate's reading finds no
/// risk class in the call (only risky calls are routed: the rest run as
/// the plan's approval lets them). The project is the one the session's
/// plan named; the files are those the hook resolved inside the working
/// directory (unknown when any is outside or the tool is a shell).
pub fn risky_call(agent: &str, state: &plangate_engine::State, call: &plangate_engine::GateCall) -> Option<plangate_policy::Facts> {
    use plangate_engine::scope::Target;
    let plan = state.executing_plan()?;
    let classes = plangate_gate::classes::classes(call.tool, call.input);
    if classes.is_empty() {
        return None;
    }
    let undeclared = classes.iter().copied().filter(|c| !plan.allows.contains(c)).collect();
    let project = state.latest.as_ref().and_then(|p| p.project.as_ref());
    let paths = call.paths.and_then(|targets| {
        targets
            .iter()
            .map(|t| match t {
                Target::Path(p) => Some(p.clone()),
                Target::Outside(_) => None,
            })
            .collect::<Option<Vec<_>>>()
    });
    Some(plangate_policy::Facts {
        agent: agent.to_string(),
        project: project.map(|p| p.name.clone()),
        branch: project.and_then(|p| p.branch.clone()),
        host: project.and_then(|p| p.host.clone()),
        tool: Some(call.tool.to_string()),
        classes,
        undeclared,
        paths,
        steps: None,
    })
}

/// The sentence the agent reads with a routed call's verdict: the rule
/// that decided by its id (where it is written stays with the operator),
/// what the call does, and what happens next.
pub fn routed_reason(
    state: &plangate_engine::State,
    facts: &plangate_policy::Facts,
    route: Option<plangate_policy::Routed<'_>>,
    verdict: plangate_policy::CallVerdict,
    allowed: &str,
) -> String {
    use plangate_policy::{Action, CallVerdict};
    let ids = |classes: &[plangate_gate::classes::RiskClass]| classes.iter().map(|c| c.id()).collect::<Vec<_>>().join(", ");
    let does = facts.classes.iter().map(|c| c.says()).collect::<Vec<_>>().join(", ");
    match (route, verdict) {
        (Some(r), CallVerdict::Deny) => {
            format!("denied by the operator's policy rule {}: this {does} ({})", r.rule.id, ids(&facts.classes))
        }
        (Some(r), CallVerdict::Allow) if r.action == Action::Auto => {
            format!("{allowed}; {} allowed by the policy rule {}", ids(&facts.classes), r.rule.id)
        }
        (Some(r), CallVerdict::Allow) => format!("{allowed}; allowed by a person's grant (policy rule {})", r.rule.id),
        (Some(r), CallVerdict::Ask) => {
            let who = match r.action {
                Action::Quorum(n) => format!("{n} people"),
                _ => "a person".to_string(),
            };
            format!(
                "the operator's policy rule {} asks {who} before this runs: this {does} ({}). A person is asked to allow it",
                r.rule.id,
                ids(&facts.classes)
            )
        }
        (None, CallVerdict::Ask) => undeclared_reason(state, &facts.undeclared),
        (None, CallVerdict::Allow) if !facts.undeclared.is_empty() => {
            format!("{allowed}; {} allowed by a person's grant", ids(&facts.undeclared))
        }
        (None, _) => allowed.to_string(),
    }
}
