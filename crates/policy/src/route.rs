//! Routing: which rule decides a plan or a call, and what the gate and the
//! proposal then do. The server and `plangate policy test` both call these
//! functions, so a replay answers exactly as the server would have.

use crate::rule::{Action, Rule};
use crate::Policy;
use plangate_gate::classes::RiskClass;
use serde::{Deserialize, Serialize};

/// What a rule may match, about one call or one plan. `project`, `branch`,
/// `host` and `paths` are what the agent's machine reported (its word, not
/// proof); `agent` is the token's; the classes are the gate's own reading.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The tool of a call; none for a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A call's risk classes, or the classes a plan allows.
    #[serde(default)]
    pub classes: Vec<RiskClass>,
    /// Of [`Facts::classes`], those the approved plan did not declare
    /// (a call's; empty for a plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undeclared: Vec<RiskClass>,
    /// The files a call writes or reads, relative to the working directory;
    /// a plan's scope. `None`: not known (a shell command, a plan without a
    /// scope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// A plan's number of steps (`min_steps`); none for a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
}

/// The rule that decided, and its action.
#[derive(Debug, Clone, Copy)]
pub struct Routed<'a> {
    pub action: Action,
    pub rule: &'a Rule,
}

impl Policy {
    /// The strongest rule that matches a risky call during an approved plan
    /// (the first written, among equals); `None` keeps the behaviour without
    /// a policy.
    pub fn route_call(&self, facts: &Facts) -> Option<Routed<'_>> {
        strongest(self.rules(), facts, false)
    }

    /// The strongest rule that matches a proposed plan; `auto` rules never do.
    pub fn route_plan(&self, facts: &Facts) -> Option<Routed<'_>> {
        strongest(self.rules(), facts, true)
    }

    /// The first written rule with `step_up = true` that matches a
    /// proposed plan: each person's approval of it then counts only when
    /// confirmed with their passkey. Not only the strongest rule's say: a
    /// passkey adds to whatever quorum the strongest rule asks for.
    pub fn step_up_plan(&self, facts: &Facts) -> Option<&Rule> {
        self.rules().iter().find(|r| r.step_up && r.matches(facts, true))
    }
}

fn strongest<'a>(rules: &'a [Rule], facts: &Facts, plan: bool) -> Option<Routed<'a>> {
    let mut best: Option<&Rule> = None;
    for rule in rules.iter().filter(|r| r.matches(facts, plan)) {
        if best.is_none_or(|b| rule.action.rank() > b.action.rank()) {
            best = Some(rule);
        }
    }
    best.map(|rule| Routed { action: rule.action, rule })
}

/// What the gate answers a risky call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallVerdict {
    Allow,
    /// A person is asked (the permission card).
    Ask,
    Deny,
}

impl CallVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            CallVerdict::Allow => "allow",
            CallVerdict::Ask => "ask",
            CallVerdict::Deny => "deny",
        }
    }
}

/// The gate's answer for a risky call the gate's grammar let through,
/// given the rule that routes it: `deny` refuses; `auto` allows without a
/// card; `one` and `quorum` ask people even for a class the plan declared
/// (the operator's rule, which no plan can widen), unless people already
/// granted exactly this call. Without a rule: a class the plan did not
/// declare asks, unless granted.
pub fn call_verdict(route: Option<Action>, undeclared: bool, granted: bool) -> CallVerdict {
    match route {
        Some(Action::Deny) => CallVerdict::Deny,
        Some(Action::Auto) => CallVerdict::Allow,
        Some(Action::One | Action::Quorum(_)) | None if granted => CallVerdict::Allow,
        Some(Action::One | Action::Quorum(_)) => CallVerdict::Ask,
        None if undeclared => CallVerdict::Ask,
        None => CallVerdict::Allow,
    }
}

/// What happens to a proposed plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict", content = "quorum")]
pub enum PlanVerdict {
    /// Proposed, decided as the configuration says.
    AsConfigured,
    /// Proposed, needing at least this many approvers.
    Quorum(u32),
    /// Refused (403).
    Refused,
}

impl std::fmt::Display for PlanVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanVerdict::AsConfigured => f.write_str("as configured"),
            PlanVerdict::Quorum(n) => write!(f, "quorum {n}"),
            PlanVerdict::Refused => f.write_str("refused"),
        }
    }
}

pub fn plan_verdict(route: Option<Action>) -> PlanVerdict {
    match route {
        Some(Action::Deny) => PlanVerdict::Refused,
        Some(Action::Quorum(n)) => PlanVerdict::Quorum(n),
        Some(Action::One | Action::Auto) | None => PlanVerdict::AsConfigured,
    }
}
