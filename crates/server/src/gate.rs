//! The mutation gate as the server applies it: normal mode allows, plan mode
//! asks the default-deny policy of `plangate-gate` with the agent's settings.

use crate::config::Settings;
use plangate_engine::{Mode, Session};
pub use plangate_gate::Verdict;

pub fn check(settings: &Settings, agent: &str, session: &Session, tool: &str, input: &serde_json::Value) -> Verdict {
    match session.mode {
        Mode::Normal => Verdict::Allow("not in plan mode: the plan was approved or plan mode is off".to_string()),
        Mode::Plan => {
            let default = plangate_gate::Policy::default();
            let policy = settings.raw.agents.get(agent).map(|a| &a.gate).unwrap_or(&default);
            plangate_gate::check_plan_mode(policy, tool, input)
        }
    }
}
