//! The shapes agents see (`Status`, `Decision` of API.md), built from state.
//!
//! The HTTP API, the MCP server, the hook and the CLI all return these, so
//! an agent sees the same thing whichever door it knocks on.

use crate::diff::{DiffStep, PlanDiff};
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
    /// The steps added after approval and their approval
    /// ([`crate::amendment`]), while the session executes and its latest
    /// version is an amendment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendment: Option<AmendmentView>,
}

/// `"amendment"` of the session view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AmendmentView {
    pub approval_id: String,
    pub status: DecisionStatus,
    pub added: Vec<Step>,
    /// Let through without a decision (`[approvals] amendments = "flag"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flagged: bool,
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
            amendment: state.latest.as_ref().filter(|_| s.mode == Mode::Normal).and_then(|p| {
                let a = p.amends.as_ref()?;
                Some(AmendmentView { approval_id: p.approval_id.to_string(), status: p.status, added: a.added.clone(), flagged: a.flagged })
            }),
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
    /// For an approval given to an agent: the permission mode its harness
    /// continues in (Claude Code's `acceptEdits`, `default`, `auto`, or
    /// `keep`), from the operator's `[agents.<id>] after_approval`; set by
    /// the server, never by the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_approval: Option<String>,
    /// Who asked for the work (separation of duties), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// Distinct approvers this version needs; omitted when it is 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub required_approvals: u32,
    /// Each person's approval counts only once confirmed with their
    /// passkey (the operator's policy said `step_up`); omitted when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub step_up: bool,
    /// The approvals of this version's round, in the order they came (also
    /// while it is pending: the quorum's progress).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<ApprovalView>,
    /// Steps the approval left out (numbers of the proposed plan); `plan`
    /// then holds the remaining steps, which `plan_hash` is the hash of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_steps: Vec<DiffStep>,
    /// What changed since the previous version (v2 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<PlanDiff>,
    /// Where the agent runs, when it said ([`crate::project`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<crate::project::Project>,
}

/// One approval of a round, as `Decision.approvals` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalView {
    pub by: String,
    /// RFC 3339.
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Step numbers this approval left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<usize>,
    /// It approves the round's edited plan.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl DecisionView {
    pub fn of(p: &Proposal) -> DecisionView {
        let review = &p.review;
        let excluded = if p.edited_plan.is_none() { review.excluded.as_slice() } else { &[] };
        DecisionView {
            approval_id: p.approval_id.to_string(),
            version: p.version,
            status: p.status,
            plan_hash: p.effective_hash(),
            decided_by: p.decided_by.clone(),
            decided_at: p.decided_at.map(|t| t.rfc3339()),
            feedback: p.feedback.clone(),
            // The plan to execute when it is not the proposal: edited, or
            // approved except some steps.
            plan: p.edited_plan.clone().or_else(|| (!excluded.is_empty()).then(|| p.approved_plan().into_owned())),
            injection: p.injection.clone(),
            after_approval: None,
            requested_by: review.requested_by.clone(),
            required_approvals: review.required.max(1),
            step_up: review.step_up,
            approvals: review
                .approvals
                .iter()
                .map(|a| ApprovalView {
                    by: a.by.clone(),
                    at: a.at.rfc3339(),
                    note: a.note.clone(),
                    except: a.except.clone(),
                    edited: a.edited,
                })
                .collect(),
            excluded_steps: excluded
                .iter()
                .filter_map(|n| p.plan.steps.get(n - 1).map(|s| DiffStep { number: *n, step: s.step.clone() }))
                .collect(),
            changes: review.changes.clone(),
            project: p.project.clone(),
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
    /// Where the agent runs, when it said ([`crate::project`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<crate::project::Project>,
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
            project: p.project.clone(),
        }
    }
}

/// The first line of [`hydration`] after a compaction: the seed's marker,
/// which a later compaction's hook can recognise.
pub const HYDRATION_HEADER: &str = "[Your active plan was preserved across context compression]";
/// The first line after a session resumed: nothing was compressed, so it
/// does not say so.
pub const RESUMED_HEADER: &str = "[Your active plan, as it stands now that this session resumed]";

/// What happened to the agent's context before it is told its plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rehydration {
    /// The context was compacted.
    #[default]
    Compact,
    /// A session was resumed (`claude --resume`).
    Resume,
}

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
pub fn hydration(state: &State, after: Rehydration) -> Option<String> {
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
    let header = match after {
        Rehydration::Compact => HYDRATION_HEADER,
        Rehydration::Resume => RESUMED_HEADER,
    };
    let mut lines = vec![header.to_string(), crate::text::sanitize_for_injection(&fact).replace('\n', " ")];
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
