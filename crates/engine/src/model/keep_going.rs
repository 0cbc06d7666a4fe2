//! What the state holds about keeping the agent on its plan: the harness's
//! own to-do list as last seen, the stalled card's question, and the
//! `[approvals] auto_continue` setting: plain values. The rules are in
//! [`crate::keep_going`].

use crate::plan::StepStatus;
use serde::{Deserialize, Serialize};

/// `[approvals] auto_continue`: after the escalating instructions, how many
/// more times a stop is answered with "continue".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoContinue {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "three")]
    pub max_cycles: u32,
}

fn yes() -> bool {
    true
}

fn three() -> u32 {
    3
}

impl Default for AutoContinue {
    fn default() -> Self {
        AutoContinue { enabled: true, max_cycles: 3 }
    }
}

impl AutoContinue {
    /// The continue cycles it allows.
    pub fn cycles(self) -> u32 {
        if self.enabled {
            self.max_cycles
        } else {
            0
        }
    }

    /// The strictest of several settings (the fewest cycles): a plan follows
    /// the strictest rule that applies, as the other approval settings do.
    pub fn strictest(settings: impl IntoIterator<Item = AutoContinue>) -> Option<AutoContinue> {
        settings.into_iter().min_by_key(|a| a.cycles()).map(|a| AutoContinue { enabled: a.cycles() > 0, max_cycles: a.cycles() })
    }
}

/// One item of the harness's own to-do list (Claude Code's `TodoWrite`:
/// `{"content", "status", "activeForm"}`), as last seen: progress where the
/// agent reports no plan steps. Unknown fields are ignored: the harness
/// may add any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    #[serde(default)]
    pub status: StepStatus,
}

/// What a stalled card asks, and remembers: the step the agent stopped at.
/// Set only by the engine (never from an agent's question), so an answer
/// to it may act on the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stalled {
    /// The open step the agent stopped at (0-based).
    pub step: usize,
}
