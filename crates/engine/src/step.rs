//! A step of a plan, its status, and the update an agent sends for one
//! (`Step` in `docs/API.md`, "Types"): plain values, below [`crate::plan`]
//! (which holds them and checks their rules) and [`crate::list`] (which
//! reads a status mark off a typed line).

use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

impl StepStatus {
    /// The mark shown before a step on a card.
    pub fn mark(self) -> &'static str {
        match self {
            StepStatus::Pending => "○",
            StepStatus::InProgress => "◐",
            StepStatus::Completed => "●",
            StepStatus::Cancelled => "✕",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Completed => "completed",
            StepStatus::Cancelled => "cancelled",
        }
    }

    /// Completed and cancelled steps need no more work.
    pub fn is_closed(self) -> bool {
        matches!(self, StepStatus::Completed | StepStatus::Cancelled)
    }
}

#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub step: String,
    #[serde(default)]
    pub status: StepStatus,
    /// The step as it is being done ("Adding retries"); OpenClaw and
    /// Claude Code's todo lists spell it `activeForm`.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "activeForm")]
    pub active_form: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_criteria: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verified_criteria: Vec<String>,
}

impl Step {
    pub fn pending(text: impl Into<String>) -> Step {
        Step {
            step: text.into(),
            status: StepStatus::Pending,
            active_form: None,
            acceptance_criteria: Vec::new(),
            verified_criteria: Vec::new(),
        }
    }
}

/// One step of an `update_plan` call (`POST …/steps`).
///
/// Without `merge` it is the whole step: absent fields take [`Step`]'s
/// defaults. With `merge` it is a *patch* of the step with the same text:
/// only the fields it carries change, so `{"step": "run tests", "status":
/// "completed"}` keeps the step's `acceptance_criteria` and the closure rule
/// (`verified_before_completed`) still applies to them. `null` is the same as
/// leaving a field out; an empty `active_form` or list clears it.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepUpdate {
    pub step: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StepStatus>,
    /// `activeForm` as OpenClaw's `update_plan` sends it is read too.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "activeForm")]
    pub active_form: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_criteria: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_criteria: Option<Vec<String>>,
}

impl StepUpdate {
    /// A patch that changes only the status of the step called `text`.
    pub fn status(text: impl Into<String>, status: StepStatus) -> StepUpdate {
        StepUpdate { step: text.into(), status: Some(status), active_form: None, acceptance_criteria: None, verified_criteria: None }
    }

    /// The whole step this update describes (absent fields: defaults).
    pub fn into_step(self) -> Step {
        let mut step = Step::pending(self.step.clone());
        self.patch(&mut step);
        step
    }

    /// Change the fields this update carries, and only those.
    pub fn patch(self, step: &mut Step) {
        step.step = self.step;
        if let Some(status) = self.status {
            step.status = status;
        }
        if let Some(form) = self.active_form {
            step.active_form = Some(form).filter(|f| !f.trim().is_empty());
        }
        if let Some(criteria) = self.acceptance_criteria {
            step.acceptance_criteria = criteria;
        }
        if let Some(verified) = self.verified_criteria {
            step.verified_criteria = verified;
        }
    }
}

/// A whole step as an update that carries every field (so, in a merge, it
/// replaces the step; an absent `active_form` clears it).
impl From<Step> for StepUpdate {
    fn from(step: Step) -> StepUpdate {
        StepUpdate {
            step: step.step,
            status: Some(step.status),
            active_form: Some(step.active_form.unwrap_or_default()),
            acceptance_criteria: Some(step.acceptance_criteria),
            verified_criteria: Some(step.verified_criteria),
        }
    }
}
