//! The mutation gate as the server applies it: the engine's [`gate`](plangate_engine::gate)
//! with the agent's configured policy.

use crate::config::Settings;
use plangate_engine::Session;
pub use plangate_gate::Verdict;

pub fn check(settings: &Settings, agent: &str, session: &Session, tool: &str, input: &serde_json::Value) -> Verdict {
    let default = plangate_gate::Policy::default();
    let policy = settings.raw.agents.get(agent).map(|a| &a.gate).unwrap_or(&default);
    plangate_engine::gate(session, policy, tool, input)
}
