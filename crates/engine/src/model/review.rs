//! What a proposal holds about its review (the rules of its round, who
//! asked, the approvals so far, what changed, the steps left out) and the
//! [`ApprovalPolicy`] a round is stamped with: plain values. The rules that
//! change them are in [`crate::review`].

use crate::diff::PlanDiff;
use crate::ids::Timestamp;
use crate::model::amendment;
use crate::model::authority::Approvers;
use crate::model::keep_going::AutoContinue;
use crate::plan::Plan;
use serde::{Deserialize, Serialize};

/// The rules a proposal's round is held to, from the configuration: passed
/// in [`crate::Ctx`] and stamped on each proposal when it is made, so a
/// round keeps the rules it started with. Every opening of the gate is
/// checked against them by [`crate::authority::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPolicy {
    /// Distinct approvers needed (at least 1).
    pub required: u32,
    /// The requester may not approve, edit or release.
    pub forbid_self: bool,
    /// Who may open the gate besides the operator: the approver lists of the
    /// agent's destinations. Read when a person acts, never stamped.
    pub approvers: Approvers,
    /// The requester the agent's configuration names, for a session with no
    /// proposal that names one (a release before any plan).
    pub requested_by: Option<String>,
    /// What steps added after approval do ([`crate::amendment::Policy`]).
    pub amendments: amendment::Policy,
    /// How long a stopping agent is kept on an approved plan
    /// ([`crate::keep_going`]).
    pub auto_continue: AutoContinue,
    /// A person's approval counts only with a passkey confirmation
    /// ([`crate::command::StepUp`]): the operator's policy said `step_up`
    /// for this plan. Stamped on the proposal like the quorum.
    pub step_up: bool,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        ApprovalPolicy {
            required: 1,
            forbid_self: false,
            approvers: Approvers::default(),
            requested_by: None,
            amendments: amendment::Policy::Ask,
            auto_continue: AutoContinue::default(),
            step_up: false,
        }
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One person's approval within a round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// Who, as an identity (`telegram:111`, `operator:alice`): what makes
    /// approvers distinct and what `requested_by` is compared with.
    pub approver: String,
    /// How receipts show them (`telegram:@alice`).
    pub by: String,
    pub at: Timestamp,
    /// The approver's note, sanitized like feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Step numbers (1-based, of the proposed plan) left out of the approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<usize>,
    /// This approval approves the round's edited plan ([`Review::edit`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
    /// The hash of exactly what this approval approves.
    pub approved_hash: String,
}

/// The edited plan of a round, awaiting the other approvers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    /// Who edited it, as receipts show them.
    pub by: String,
    pub plan: Plan,
    pub hash: String,
}

/// Everything about how people review one version; plain data, in the proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    /// Who asked for the work (`slack:U123`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// Distinct approvers needed. Proposals stored before quorums existed read as 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub required: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forbid_self: bool,
    /// The round's edited plan, from its first edit on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<Edit>,
    /// The approvals of this round, in the order they came.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Approval>,
    /// What changed since the version before (none for v1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<PlanDiff>,
    /// Once approved: the step numbers the decision left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<usize>,
    /// A person's approval (or edit) counts only when confirmed with a
    /// passkey of that person ([`crate::command::StepUp`]); a chat click
    /// alone is refused with
    /// [`Refusal::StepUpRequired`](crate::refusal::Refusal::StepUpRequired).
    /// Proposals stored before step-up read as `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub step_up: bool,
}

impl Default for Review {
    /// One approver, no requester: how proposals stored before reviews read.
    fn default() -> Self {
        Review::new(&ApprovalPolicy::default(), None, None)
    }
}

impl Review {
    /// The rules of a new round: `policy`, and who asked.
    pub fn new(policy: &ApprovalPolicy, requested_by: Option<String>, changes: Option<PlanDiff>) -> Review {
        Review {
            requested_by,
            required: policy.required.max(1),
            forbid_self: policy.forbid_self,
            edit: None,
            approvals: Vec::new(),
            changes,
            excluded: Vec::new(),
            step_up: policy.step_up,
        }
    }

    /// The approvals grouped by what they approve, in the order each
    /// content was first approved.
    pub fn tallies(&self) -> Vec<Vec<&Approval>> {
        let mut groups: Vec<Vec<&Approval>> = Vec::new();
        for a in &self.approvals {
            match groups.iter_mut().find(|g| g[0].approved_hash == a.approved_hash) {
                Some(group) => group.push(a),
                None => groups.push(vec![a]),
            }
        }
        groups
    }
}

/// The plan without the steps numbered in `except` (1-based).
pub fn without_steps(plan: &Plan, except: &[usize]) -> Plan {
    let steps = plan.steps.iter().enumerate().filter(|(i, _)| !except.contains(&(i + 1))).map(|(_, s)| s.clone()).collect();
    Plan { steps, ..plan.clone() }
}
