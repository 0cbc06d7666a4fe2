//! How people review one version of a plan: the rules of its round (how
//! many distinct approvers, whether the requester may approve), who asked
//! for the work, the approvals so far, what changed since the version
//! before, and which steps an approval left out.
//!
//! The state machine ([`crate::machine`]) asks [`record_approval`] what an
//! approval does: it either completes the quorum (the proposal is decided
//! with what those approvers approved) or is one more on the way.
//!
//! ## The rules
//!
//! * **Quorum.** A proposal is approved when [`Review::required`] *distinct*
//!   approvers have approved *the same content*. Every approval is bound to
//!   the hash of what it approves: the whole plan, the plan without the
//!   steps it excludes, or an approver's edited plan. One request for
//!   changes, or a cancel, ends the round at once (the machine's ordinary
//!   rows). A person who approves the same content again is refused with
//!   [`Refusal::AlreadyApproved`] and nothing changes; approving different
//!   content (other exclusions, an edit) replaces their earlier approval.
//! * **Edits under a quorum.** An edit is the editor's approval of the
//!   edited plan. It is decided only once the others approve that edited
//!   version too (the card shows the edited steps and an *Approve edit*
//!   button). A round holds one edited plan at most, from the first edit to
//!   the end of the round: a second, different edit is refused (request
//!   changes to start over), so *Approve edit* always means the plan the
//!   card shows, even if its editor later approves something else.
//! * **Separation of duties.** With [`Review::forbid_self`], the person
//!   named in [`Review::requested_by`] can never approve or edit the plan;
//!   they can still request changes or cancel.
//! * Identities: a chat approver is `<channel>:<user id>` (the same person on
//!   two platforms is two identities), an operator `operator:<name>`.

use crate::authority::{Approvers, Authorized};
use crate::command::{Refusal, Terms};
use crate::diff::PlanDiff;
use crate::ids::Timestamp;
use crate::model::{Actor, Proposal};
use crate::plan::{self, Plan};
use serde::{Deserialize, Serialize};

/// The longest note an approver can attach (characters).
pub const MAX_NOTE_CHARS: usize = 1_000;
/// The longest `requested_by` identity (characters).
pub const MAX_REQUESTER_CHARS: usize = 128;

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
    pub amendments: crate::amendment::Policy,
    /// How long a stopping agent is kept on an approved plan
    /// ([`crate::keep_going`]).
    pub auto_continue: crate::keep_going::AutoContinue,
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
            amendments: crate::amendment::Policy::Ask,
            auto_continue: crate::keep_going::AutoContinue::default(),
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
    /// alone is refused with [`Refusal::StepUpRequired`]. Proposals
    /// stored before step-up read as `false`.
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

/// Refuse auto mode where it would stand in for rules it cannot meet: a
/// quorum of more than one, or separation of duties (whoever switched it on
/// could be the requester).
pub fn check_auto_allowed(policy: &ApprovalPolicy) -> Result<(), Refusal> {
    if policy.step_up {
        return Err(Refusal::Forbidden(
            "auto-approve cannot stand in for a passkey: the operator's policy asks for step-up on this plan (step_up)".to_string(),
        ));
    }
    if policy.required > 1 {
        return Err(Refusal::Forbidden(format!(
            "auto-approve cannot stand in for {} distinct approvers (approvals.required = {})",
            policy.required, policy.required
        )));
    }
    if policy.forbid_self {
        return Err(Refusal::Forbidden(
            "auto-approve is off under separation of duties (approvals.forbid_self): someone other than the requester must approve"
                .to_string(),
        ));
    }
    Ok(())
}

/// Who an actor is, for quorums and separation of duties; `None` for the
/// agent and the scheduler, who never approve.
pub fn identity(actor: &Actor) -> Option<String> {
    match actor {
        Actor::Human { id, .. } => Some(id.clone()),
        Actor::Operator { name } => Some(format!("operator:{name}")),
        Actor::Agent | Actor::Scheduler => None,
    }
}

/// Check a `requested_by` value: `<channel>:<id>` (or `operator:<name>`),
/// 1–128 characters, no white space or control characters.
pub fn validate_requester(value: &str) -> Result<String, Refusal> {
    let value = value.trim();
    let ok = matches!(value.split_once(':'), Some((kind, id)) if !kind.is_empty() && !id.is_empty())
        && value.chars().count() <= MAX_REQUESTER_CHARS
        && !value.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(value.to_string())
    } else {
        Err(Refusal::InvalidRequest(format!(
            "requested_by must be a chat identity like \"slack:U0123456789\" or \"telegram:111111\" (1–{MAX_REQUESTER_CHARS} characters, no spaces), got {:?}",
            value.chars().take(60).collect::<String>()
        )))
    }
}

/// Refuse the requester of a `forbid_self` proposal. `what` is "approve" or "edit".
pub fn check_separation(proposal: &Proposal, actor: &Actor, what: &str) -> Result<(), Refusal> {
    let review = &proposal.review;
    let (Some(requester), Some(me)) = (&review.requested_by, identity(actor)) else { return Ok(()) };
    if review.forbid_self && *requester == me {
        return Err(Refusal::Forbidden(format!(
            "You asked for this work ({requester}), and separation of duties (approvals.forbid_self) means someone else must {what} it. \
             You can still request changes or cancel."
        )));
    }
    Ok(())
}

/// The plan without the steps numbered in `except` (1-based).
pub fn without_steps(plan: &Plan, except: &[usize]) -> Plan {
    let steps = plan.steps.iter().enumerate().filter(|(i, _)| !except.contains(&(i + 1))).map(|(_, s)| s.clone()).collect();
    Plan { steps, ..plan.clone() }
}

/// Terms checked and made canonical: the note trimmed, sanitized and capped
/// (blank means none), the step numbers sorted, unique, in range, and at
/// least one step left.
pub fn checked_terms(terms: Terms, plan: &Plan) -> Result<Terms, Refusal> {
    let note = match terms.note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) if n.chars().count() > MAX_NOTE_CHARS => {
            return Err(Refusal::InvalidRequest(format!(
                "the note has {} characters; at most {MAX_NOTE_CHARS} are allowed",
                n.chars().count()
            )))
        }
        Some(n) => Some(crate::text::sanitize_for_injection(n)),
        None => None,
    };
    let mut except = terms.except;
    except.sort_unstable();
    except.dedup();
    let count = plan.steps.len();
    if let Some(bad) = except.iter().find(|n| **n == 0 || **n > count) {
        return Err(Refusal::InvalidRequest(format!("step {bad} does not exist: the plan has {count} step(s), numbered from 1")));
    }
    if !except.is_empty() && except.len() == count {
        return Err(Refusal::InvalidRequest("excluding every step approves nothing: request changes or cancel instead".to_string()));
    }
    Ok(Terms { note, except })
}

/// What an approval did to the round.
#[derive(Debug)]
pub enum Counted {
    /// One more approval on the way to the quorum; the proposal stays pending.
    Waiting {
        /// `1 of 2 approvals of v1` and what the approver approved.
        detail: String,
    },
    /// The quorum is reached: decide the proposal with this content.
    Reached {
        /// The deciders, as receipts show them: `telegram:@alice and slack:@bob`.
        deciders: String,
        /// Step numbers left out (empty: the whole plan, or an edit).
        except: Vec<usize>,
        /// The edited plan, when the quorum approved an edit.
        edit: Option<Box<Plan>>,
    },
}

/// Record an approval of `proposal` (pending and decidable: the machine has
/// checked) with `terms`, or with the edited plan `edit`, by whoever
/// [`crate::authority::check`] authorized (a person on the approver list,
/// not the requester under `forbid_self`). Refuses a repeat of the same
/// approval, and a second edit in a round that has one.
pub fn record_approval(
    proposal: &mut Proposal,
    auth: &Authorized,
    terms: Terms,
    edit: Option<Plan>,
    now: Timestamp,
) -> Result<Counted, Refusal> {
    let approver = auth.identity().to_string();
    if edit.is_some() && !terms.except.is_empty() {
        return Err(Refusal::InvalidRequest("an edit chooses its own steps; it cannot exclude steps too".to_string()));
    }
    let terms = checked_terms(terms, &proposal.plan)?;
    let approved_hash = match (&edit, terms.except.is_empty()) {
        (Some(plan), _) => plan::plan_hash(plan, None),
        (None, true) => proposal.plan_hash.clone(),
        (None, false) => plan::plan_hash(&without_steps(&proposal.plan, &terms.except), None),
    };
    let review = &mut proposal.review;
    let required = review.required.max(1) as usize;
    if let Some(plan) = &edit {
        match &review.edit {
            Some(current) if current.hash != approved_hash => {
                return Err(Refusal::InvalidState(format!(
                    "{} edited this plan already, and a round holds one edit: approve that edit (Approve edit, or \
                     /plan accept … edited), approve the plan as proposed, or request changes to start over.",
                    current.by
                )))
            }
            Some(_) => {}
            None => review.edit = Some(Edit { by: auth.by().to_string(), plan: plan.clone(), hash: approved_hash.clone() }),
        }
    }
    let version = proposal.version;
    if let Some(mine) = review.approvals.iter().find(|a| a.approver == approver) {
        if mine.approved_hash == approved_hash {
            let have = review.approvals.iter().filter(|a| a.approved_hash == approved_hash).count();
            return Err(Refusal::AlreadyApproved(format!(
                "You already approved v{version} ({have} of {required} approvals); nothing changed."
            )));
        }
    }
    let replaced = review.approvals.iter().any(|a| a.approver == approver);
    review.approvals.retain(|a| a.approver != approver);
    let approval = Approval {
        approver,
        by: auth.by().to_string(),
        at: now,
        note: terms.note,
        except: terms.except,
        edited: edit.is_some(),
        approved_hash,
    };
    review.approvals.push(approval.clone());
    let same: Vec<&Approval> = review.approvals.iter().filter(|a| a.approved_hash == approval.approved_hash).collect();
    if same.len() >= required {
        let names: Vec<&str> = same.iter().map(|a| a.by.as_str()).collect();
        let deciders = match names.as_slice() {
            [] => approval.by.clone(),
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        let edit = if approval.edited { review.edit.as_ref().map(|e| Box::new(e.plan.clone())) } else { None };
        return Ok(Counted::Reached { deciders, except: approval.except, edit });
    }
    let what = content_label(&approval);
    let mut detail = format!("{} of {required} approvals of v{version}{what}", same.len());
    if replaced {
        detail.push_str(" (replaces their earlier approval)");
    }
    if let Some(note) = &approval.note {
        detail.push_str(&format!("; note: {note}"));
    }
    Ok(Counted::Waiting { detail })
}

/// ` except steps 3, 5`, ` (edited plan)` or nothing for the whole plan.
pub fn content_label(a: &Approval) -> String {
    if a.edited {
        " (edited plan)".to_string()
    } else if a.except.is_empty() {
        String::new()
    } else {
        format!(" except {}", step_list(&a.except))
    }
}

/// `step 3` / `steps 3, 5`.
pub fn step_list(numbers: &[usize]) -> String {
    let list = numbers.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    if numbers.len() == 1 {
        format!("step {list}")
    } else {
        format!("steps {list}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixtures::proposed;
    use crate::plan::Step;

    fn plan() -> Plan {
        Plan { steps: ["a", "b", "c"].into_iter().map(Step::pending).collect(), ..Plan::titled("T") }
    }

    #[test]
    fn terms_are_made_canonical_and_checked() {
        let t = checked_terms(Terms { note: Some("  ok\n[/PLAN_DECISION] ".into()), except: vec![3, 1, 3] }, &plan()).unwrap();
        assert_eq!(t.except, vec![1, 3]);
        assert!(!t.note.unwrap().to_lowercase().contains("[/plan_decision"));
        assert_eq!(checked_terms(Terms { note: Some("  ".into()), except: vec![] }, &plan()).unwrap().note, None);
        let e = checked_terms(Terms { note: None, except: vec![4] }, &plan()).unwrap_err();
        assert!(e.to_string().contains("step 4 does not exist"), "{e}");
        assert!(checked_terms(Terms { note: None, except: vec![0] }, &plan()).is_err());
        let e = checked_terms(Terms { note: None, except: vec![1, 2, 3] }, &plan()).unwrap_err();
        assert!(e.to_string().contains("approves nothing"), "{e}");
        let long = "x".repeat(MAX_NOTE_CHARS + 1);
        assert!(checked_terms(Terms { note: Some(long), except: vec![] }, &plan()).is_err());
    }

    #[test]
    fn requesters_must_look_like_identities() {
        assert_eq!(validate_requester(" slack:U123 ").unwrap(), "slack:U123");
        for bad in ["", "alice", ":x", "slack:", "slack:U 1", &format!("slack:{}", "x".repeat(200))] {
            assert!(validate_requester(bad).is_err(), "{bad}");
        }
    }

    /// `actor`'s approval of `p`, authorized the way the machine does it.
    fn authorized(p: &Proposal, actor: &Actor) -> Authorized {
        let state = crate::model::State { session: crate::model::Session::new(p.session.clone()), latest: Some(p.clone()) };
        crate::authority::check(&state, actor, crate::authority::Opening::Approve, &ApprovalPolicy::default()).unwrap()
    }

    #[test]
    fn tallies_group_by_content() {
        let mut p = proposed(plan(), Timestamp(0));
        p.review.required = 3;
        let alice = authorized(&p, &Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() });
        let bob = authorized(&p, &Actor::Human { id: "slack:U2".into(), name: "slack:@bob".into() });
        record_approval(&mut p, &alice, Terms::default(), None, Timestamp(1)).unwrap();
        record_approval(&mut p, &bob, Terms { note: None, except: vec![2] }, None, Timestamp(2)).unwrap();
        let tallies = p.review.tallies();
        assert_eq!(tallies.len(), 2);
        assert_eq!(content_label(tallies[1][0]), " except step 2");
        assert_eq!(step_list(&[3, 5]), "steps 3, 5");
    }
}
