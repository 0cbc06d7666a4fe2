//! Who may open the gate: the one check every transition that lets
//! mutations run goes through.
//!
//! Four things let an agent mutate under the default gate scope: an
//! approval, an edit (an approval of the edited plan), a release (`/plan
//! off`, operator `release`) and auto mode (a standing "yes" to later
//! proposals). A person who may not do one of them must not be able to do
//! another: a requester refused Approve under separation of duties must not
//! simply release the session instead, and one approver must not release
//! what two must approve. So they share one function, [`check`], which
//! applies every rule of the round to every [`Opening`]:
//!
//! * **a person** — never the agent or the scheduler;
//! * **the approver list** — a chat identity must be on the approver list
//!   of one of the agent's destinations ([`Approvers`]); the operator, who
//!   holds everything, is on every list;
//! * **separation of duties** — under `forbid_self`, never the requester;
//! * **step-up** — where the operator's policy says `step_up`, a person's
//!   approval or edit counts only with a passkey confirmation for this plan
//!   hash ([`check_step_up`]), and no person may release the session while
//!   such a plan waits (a release would open the gate without one); the
//!   operator, who holds everything, needs none;
//! * **the quorum** — what needs `required` distinct approvers is counted
//!   (approvals by [`crate::review::record_approval`], releases by
//!   [`record_release`], both of which take the [`Authorized`] proof that
//!   only [`check`] makes); auto mode, which cannot count, is refused under
//!   a quorum.
//!
//! [`crate::machine::apply`] enforces the other half: a transition that
//! leaves the gate open where it was shut, or turns auto mode on, without an
//! [`Authorized`] from [`check`] is refused. A new path that forgets the
//! check fails closed instead of opening the gate.

use crate::ids::Timestamp;
use crate::model::{Actor, ApprovalPolicy, ApprovalState, DecisionStatus, Mode, Proposal, Session, State};
use crate::refusal::Refusal;

pub use crate::model::authority::{Approvers, ReleaseRequest};

/// A transition that lets mutations run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// Approve the pending plan (with or without a note or excluded steps).
    Approve,
    /// Approve an edited version of the pending plan.
    Edit,
    /// Release the session: no plan required.
    Release,
    /// Switch auto mode on: later proposals approve themselves.
    Auto,
}

impl Opening {
    /// Every opening, for tests that must cover them all.
    pub const ALL: [Opening; 4] = [Opening::Approve, Opening::Edit, Opening::Release, Opening::Auto];

    /// The verb refusals use: "someone else must {verb} it".
    pub fn verb(self) -> &'static str {
        match self {
            Opening::Approve => "approve",
            Opening::Edit => "edit",
            Opening::Release => "release",
            Opening::Auto => "turn on auto-approve for",
        }
    }
}

/// A person's passkey confirmation of their decision (WebAuthn step-up),
/// which the shell builds only after it verified an assertion of a passkey
/// registered by that person, for a challenge bound to the approval, this
/// plan hash, the person and a single-use nonce (`plangate_web::passkey`).
/// The engine then counts the approval only if `plan_hash` is still the
/// pending proposal's, and audits the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepUp {
    /// The passkey's credential id (base64url), for the audit.
    pub credential: String,
    /// The plan hash the challenge was bound to.
    pub plan_hash: String,
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

/// Proof that [`check`] passed: the only way to count an approval or a
/// release, and what [`crate::machine::apply`] looks for when a transition
/// opens the gate. Its fields are private, so nothing else can make one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorized {
    opening: Opening,
    identity: String,
    by: String,
    required: u32,
}

impl Authorized {
    pub fn opening(&self) -> Opening {
        self.opening
    }
    /// The identity that counts towards a quorum (`telegram:111`).
    pub fn identity(&self) -> &str {
        &self.identity
    }
    /// How receipts name them (`telegram:@alice`).
    pub fn by(&self) -> &str {
        &self.by
    }
    /// Distinct approvers the opening needs.
    pub fn required(&self) -> u32 {
        self.required
    }
}

/// The rules an opening of `state` is held to: the pending proposal's
/// stamped rules for its approval or edit; for a release, the strictest of
/// those and the current configuration (`policy`), with the requester of
/// the latest proposal, else the one the agent's configuration names; for
/// auto mode, the current configuration.
fn rules(state: &State, opening: Opening, policy: &ApprovalPolicy) -> (u32, bool, Option<String>) {
    let pending = state.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending);
    match (opening, pending) {
        (Opening::Approve | Opening::Edit, Some(p)) => (p.review.required.max(1), p.review.forbid_self, p.review.requested_by.clone()),
        (Opening::Release, Some(p)) => (
            p.review.required.max(policy.required).max(1),
            p.review.forbid_self || policy.forbid_self,
            p.review.requested_by.clone().or_else(|| policy.requested_by.clone()),
        ),
        (Opening::Release, None) => {
            let latest = state.latest.as_ref().and_then(|p| p.review.requested_by.clone());
            (policy.required.max(1), policy.forbid_self, latest.or_else(|| policy.requested_by.clone()))
        }
        // No pending proposal to approve: the machine refuses it as stale;
        // hold it to the configuration meanwhile.
        (Opening::Approve | Opening::Edit | Opening::Auto, _) => (policy.required.max(1), policy.forbid_self, policy.requested_by.clone()),
    }
}

/// Whether `actor` is one of the people who may decide `state`'s plans — a
/// person on the approver list (the operator is on every list) — and who
/// they are. The first half of [`check`], and the whole rule for what needs
/// no more than that: claiming a plan ([`crate::claim`]). `what` completes
/// the refusal ("… so you cannot {what} here").
pub fn approver(state: &State, actor: &Actor, policy: &ApprovalPolicy, what: &str) -> Result<String, Refusal> {
    let Some(identity) = identity(actor) else {
        return Err(Refusal::Forbidden(format!("only a human approver can {what}; an agent can never {what}")));
    };
    if !policy.approvers.admits(actor) {
        return Err(Refusal::Forbidden(format!(
            "You ({identity}) are not on the approver list of any destination of {}'s plans, so you cannot {what} here.",
            state.session.key.agent
        )));
    }
    Ok(identity)
}

/// The one check of every opening: a person, on the approver list, not the
/// requester under separation of duties, and — for auto mode, which cannot
/// be counted — no quorum. Approvals and releases under a quorum are then
/// counted with the returned proof.
pub fn check(state: &State, actor: &Actor, opening: Opening, policy: &ApprovalPolicy) -> Result<Authorized, Refusal> {
    let what = match opening {
        Opening::Approve | Opening::Edit => "decide a plan",
        Opening::Release => "release a session from planning",
        Opening::Auto => "change auto mode",
    };
    let identity = approver(state, actor, policy, what)?;
    let (required, forbid_self, requester) = rules(state, opening, policy);
    if forbid_self && requester.as_deref() == Some(identity.as_str()) {
        let requester = requester.unwrap_or_default();
        return Err(Refusal::Forbidden(format!(
            "You asked for this work ({requester}), and separation of duties (approvals.forbid_self) means someone else must {} it. \
             You can still request changes or cancel.",
            opening.verb()
        )));
    }
    if opening == Opening::Auto {
        check_auto_allowed(&ApprovalPolicy { required, forbid_self, ..ApprovalPolicy::default() })?;
    }
    let pending = state.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending);
    if opening == Opening::Release && matches!(actor, Actor::Human { .. }) && pending.is_some_and(|p| p.review.step_up) {
        return Err(Refusal::Forbidden(
            "The plan waiting here needs a passkey (the operator's policy says step_up), so it cannot be released from here: \
             approve it with your passkey, cancel it, or ask the operator."
                .to_string(),
        ));
    }
    Ok(Authorized { opening, identity, by: actor.label(), required })
}

/// Whether `actor`'s approval of `proposal` may count as far as step-up
/// goes: `Ok(None)` when the proposal needs no passkey (or the actor is the
/// operator); `Ok(Some(credential))` with a confirmation bound to this very
/// plan hash; a refusal otherwise. Nothing but the shell's verified
/// WebAuthn assertion makes a [`StepUp`] (it is not in any command a chat
/// or an agent can send), and a confirmation for another version of the
/// plan is stale.
pub fn check_step_up(proposal: &Proposal, actor: &Actor, step_up: Option<&StepUp>) -> Result<Option<String>, Refusal> {
    if !proposal.review.step_up || !matches!(actor, Actor::Human { .. }) {
        return Ok(None);
    }
    match step_up {
        None => Err(Refusal::StepUpRequired(format!(
            "The operator's policy asks for a passkey on \"{}\" v{}: your approval is not counted until you confirm it with your passkey on plangate's web page.",
            proposal.plan.title.trim(),
            proposal.version
        ))),
        Some(s) if s.plan_hash != proposal.plan_hash => Err(Refusal::Stale(format!(
            "That passkey confirmation was for another version of the plan ({}), not v{} ({}); confirm again.",
            s.plan_hash, proposal.version, proposal.plan_hash
        ))),
        Some(s) => Ok(Some(s.credential.clone())),
    }
}

/// The standing authorization of auto mode for a proposal the agent just
/// made: only while auto mode is on and the current rules allow it (no
/// quorum, no separation of duties). `None`: the proposal waits for people.
pub fn auto_approval(session: &Session, policy: &ApprovalPolicy) -> Option<Authorized> {
    if !session.auto_approve || check_auto_allowed(policy).is_err() {
        return None;
    }
    Some(Authorized { opening: Opening::Approve, identity: "auto".to_string(), by: "auto".to_string(), required: 1 })
}

/// Whether the session, as it stands, lets mutations run under the default
/// gate scope ([`crate::GateScope::ApprovedPlan`]); auto mode counts, as a
/// "yes" given in advance.
pub fn holds_open(session: &Session) -> bool {
    let executing = matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited);
    session.auto_approve || (session.mode == Mode::Normal && (executing || session.released_by.is_some()))
}

/// What a release request did.
#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    /// Enough distinct people asked: release, naming them all.
    Reached { by: String },
    /// One more on the way: `1 of 2 approvers asked to release demo/s1`.
    Waiting { detail: String },
}

/// Count `auth`'s request to release `session`: requests of earlier
/// versions lapse, a repeat by the same person changes nothing, and the
/// release happens once `auth.required()` distinct people asked.
pub fn record_release(session: &mut Session, auth: &Authorized, now: Timestamp) -> Result<Released, Refusal> {
    let version = session.version;
    let required = auth.required.max(1) as usize;
    session.release_requests.retain(|r| r.version == version);
    if session.release_requests.iter().any(|r| r.approver == auth.identity) {
        return Err(Refusal::AlreadyApproved(format!(
            "You already asked to release {} ({} of {required}); another approver must release it too (/plan off).",
            session.key,
            session.release_requests.len()
        )));
    }
    session.release_requests.push(ReleaseRequest { approver: auth.identity.clone(), by: auth.by.clone(), at: now, version });
    let have = session.release_requests.len();
    if have >= required {
        let names: Vec<&str> = session.release_requests.iter().map(|r| r.by.as_str()).collect();
        let by = match names.as_slice() {
            [rest @ .., last] if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => auth.by.clone(),
        };
        session.release_requests.clear();
        return Ok(Released::Reached { by });
    }
    Ok(Released::Waiting {
        detail: format!(
            "{have} of {required} approvers asked to release {} (approvals.required = {required}): {} more must release it too \
             (/plan off, or the operator's release), or approve the plan",
            session.key,
            required - have
        ),
    })
}
