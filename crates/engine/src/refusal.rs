//! Why a command was refused: the one error every rule of the engine
//! returns. A leaf (it knows only [`PlanError`]), so every module may
//! refuse without importing the commands, and nothing changes when one is
//! returned.

use crate::plan::PlanError;
use thiserror::Error;

/// Why a command was refused. Nothing changes when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refusal {
    #[error("{0}")]
    InvalidPlan(#[from] PlanError),
    #[error("{0}")]
    InvalidState(String),
    #[error("{} subagent run(s) are still open ({}); the plan can be proposed or approved once they close, expire, or a person clears them (/plan subagents clear)", .0.len(), .0.join(", "))]
    SubagentsOpen(Vec<String>),
    #[error("{0}")]
    Stale(String),
    /// The same person approved the same content again: nothing changes.
    #[error("{0}")]
    AlreadyApproved(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    InvalidRequest(String),
    /// The agent rewrote or removed a step a human approved.
    #[error("{0}")]
    ApprovedStepsLocked(String),
    /// The operator's policy asks for a passkey on this plan: the person's
    /// approval was not counted; the shell sends them the link to confirm
    /// it with their passkey.
    #[error("{0}")]
    StepUpRequired(String),
}
