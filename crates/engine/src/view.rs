//! The shapes agents see (`Status`, `Decision` of API.md), built from state.
//!
//! The HTTP API, the MCP server, the hook and the CLI all return these, so
//! an agent sees the same thing whichever door it knocks on.

use crate::ids::ApprovalId;
use crate::model::{ApprovalState, DecisionStatus, Mode, Proposal, State};
use crate::plan::{Plan, Step, StepStatus};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingQuestionView {
    pub question_id: String,
    pub question: String,
    pub options: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusView {
    pub agent: String,
    pub session_id: String,
    pub mode: Mode,
    pub approval: ApprovalState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub version: u32,
    pub rejection_count: u32,
    pub auto_approve: bool,
    pub steps: Vec<Step>,
    pub open_subagents: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_question: Option<PendingQuestionView>,
    /// Who released the session from planning (`/plan off`, operator
    /// `release`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_by: Option<String>,
}

impl StatusView {
    pub fn of(state: &State) -> StatusView {
        let s = &state.session;
        StatusView {
            agent: s.key.agent.clone(),
            session_id: s.key.session_id.clone(),
            mode: s.mode,
            approval: s.approval,
            approval_id: state.latest.as_ref().map(|p| p.approval_id.to_string()),
            title: state.latest.as_ref().map(|p| p.edited_plan.as_ref().unwrap_or(&p.plan).title.clone()),
            version: s.version,
            rejection_count: s.rejection_count,
            auto_approve: s.auto_approve,
            steps: s.steps.clone(),
            open_subagents: s.open_subagents.keys().cloned().collect(),
            pending_question: s.pending_question.as_ref().map(|q| PendingQuestionView {
                question_id: q.question_id.to_string(),
                question: q.question.clone(),
                options: q.options.clone(),
            }),
            released_by: s.released_by.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionView {
    pub approval_id: String,
    pub version: u32,
    pub status: DecisionStatus,
    pub plan_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub injection: Option<String>,
}

impl DecisionView {
    pub fn of(p: &Proposal) -> DecisionView {
        DecisionView {
            approval_id: p.approval_id.to_string(),
            version: p.version,
            status: p.status,
            plan_hash: p.effective_hash(),
            decided_by: p.decided_by.clone(),
            decided_at: p.decided_at.map(|t| t.rfc3339()),
            feedback: p.feedback.clone(),
            plan: p.edited_plan.clone(),
            injection: p.injection.clone(),
        }
    }

    pub fn is_final(&self) -> bool {
        self.status != DecisionStatus::Pending
    }
}

/// One line of `GET /v1/approvals`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalSummary {
    pub approval_id: String,
    pub agent: String,
    pub session_id: String,
    pub version: u32,
    pub title: String,
    pub status: DecisionStatus,
    pub created_at: String,
}

impl ApprovalSummary {
    pub fn of(p: &Proposal) -> ApprovalSummary {
        ApprovalSummary {
            approval_id: p.approval_id.to_string(),
            agent: p.session.agent.clone(),
            session_id: p.session.session_id.clone(),
            version: p.version,
            title: p.plan.title.clone(),
            status: p.status,
            created_at: p.created_at.rfc3339(),
        }
    }
}

/// The first line of [`hydration`]: the seed's marker, which a later
/// compaction's hook can recognise.
pub const HYDRATION_HEADER: &str = "[Your active plan was preserved across context compression]";

/// What the agent is told after its context was compacted (or a session
/// resumed): the seed's text. `None` when there is nothing to preserve: no
/// steps, or every step completed or cancelled. Otherwise the header, one
/// line of fact about where the plan stands, and only the pending and
/// in-progress steps, as facts rather than orders:
///
/// ```text
/// [Your active plan was preserved across context compression]
/// Plan v2 "Add retries" (approval …) was approved by a human; these steps remain.
/// - [>] Add backoff (in_progress)
/// - [ ] Test it (pending)
/// ```
pub fn hydration(state: &State) -> Option<String> {
    let s = &state.session;
    let active: Vec<&Step> = s.steps.iter().filter(|step| !step.status.is_closed()).collect();
    if active.is_empty() {
        return None;
    }
    let title = |p: &Proposal| p.edited_plan.as_ref().unwrap_or(&p.plan).title.clone();
    let fact = match (&state.latest, s.approval) {
        (Some(p), ApprovalState::Approved | ApprovalState::Edited) => {
            format!("Plan v{} \"{}\" (approval {}) was approved by a human; these steps remain.", p.version, title(p), p.approval_id)
        }
        (Some(p), ApprovalState::Pending) => {
            format!("Plan v{} \"{}\" is awaiting a human's approval; the session is in plan mode (read-only).", p.version, title(p))
        }
        (Some(p), ApprovalState::Rejected) => {
            format!("Changes were requested to plan v{} \"{}\"; the session is in plan mode (read-only).", p.version, title(p))
        }
        (Some(p), ApprovalState::TimedOut) => format!(
            "Plan v{} \"{}\" timed out without approval; the session is in plan mode (read-only) and the plan is not approved.",
            p.version,
            title(p)
        ),
        _ if s.mode == Mode::Plan => "The session is in plan mode (read-only); no plan has been proposed yet.".to_string(),
        _ if s.mode == Mode::Halted => "The last plan was cancelled; the session is halted (read-only).".to_string(),
        _ => "These steps remain.".to_string(),
    };
    let mut lines = vec![HYDRATION_HEADER.to_string(), crate::text::sanitize_for_injection(&fact).replace('\n', " ")];
    for step in active {
        let marker = if step.status == StepStatus::InProgress { "[>]" } else { "[ ]" };
        let text = crate::text::sanitize_for_injection(step.step.trim()).replace('\n', " ");
        lines.push(format!("- {marker} {text} ({})", step.status.as_str()));
    }
    Some(lines.join("\n"))
}

/// The short form people type, `#a1b2c3`.
pub fn short_ref(id: &ApprovalId) -> String {
    format!("#{}", id.short())
}
