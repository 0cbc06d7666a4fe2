//! The one door for a person's decision on an approval, from any venue.
//!
//! A click on a card, a `/plan accept` typed in a chat, a form on the web
//! page and an operator's `POST /v1/approvals/{id}/decision` (the CLI's
//! `plangate decide` included) all end here: [`Core::decide`] loads the
//! approval, checks the person against the [`ApproverIndex`] for the venue
//! (a refusal is audited), executes the engine command, and returns a
//! typed outcome. The callers only render it: a chat notice, a page, JSON.
//!
//! [`ApproverIndex`]: crate::approvers::ApproverIndex

use super::{Core, CoreError, ExecMeta, Executed};
use crate::approvers::{NotAllowed, Venue};
use plangate_engine::{Actor, ApprovalId, Proposal, Refusal, SessionKey};
use plangate_store::Preempted;
use std::sync::Arc;
use thiserror::Error;

/// What a person decides about an approval: the engine's, built by every
/// venue with its constructors.
pub use plangate_engine::Decision;

/// A decision, carried out.
pub struct Decided {
    /// The approval as the decision left it.
    pub proposal: Proposal,
    pub executed: Executed,
}

impl Decided {
    /// What to tell the person: the receipt ("Approved by …"), how far a
    /// quorum got ("1 of 2 approvals"), their claim ("Claimed v1 … until
    /// 14:32 UTC"), or that it was done.
    pub fn said(&self) -> String {
        let claimed = self.executed.transition.audit.iter().any(|a| a.action == "claim");
        if let Some(claim) = self.proposal.claim.as_ref().filter(|_| claimed) {
            return plangate_engine::card::claim_notice(&self.proposal, claim);
        }
        plangate_engine::card::receipt(&self.proposal)
            .or_else(|| plangate_engine::card::progress_notice(&self.proposal))
            .unwrap_or_else(|| "Done.".to_string())
    }
}

/// Why a decision was not carried out.
#[derive(Debug, Error)]
pub enum DecisionRefused {
    #[error("This plan no longer exists.")]
    NotFound,
    /// The person may not decide this agent's plans from this venue (audited).
    #[error(transparent)]
    NotAllowed(#[from] NotAllowed),
    /// The engine refused (separation of duties, stale, already decided;
    /// the ones about who decides are audited), or the store failed.
    #[error("{}", .0.to_person())]
    Core(#[from] CoreError),
}

impl DecisionRefused {
    /// Another replica handled this very event first (a platform's retry
    /// reaching a second replica): that replica answers the person.
    pub fn handled_elsewhere(&self) -> bool {
        matches!(self, DecisionRefused::Core(e) if e.handled_elsewhere())
    }
}

impl CoreError {
    /// The sentence for the person whose action failed.
    pub fn to_person(&self) -> String {
        match self {
            CoreError::Preempted(Preempted::AlreadyHandled(_)) => "That was already handled.".to_string(),
            CoreError::Preempted(_) => {
                "Others were deciding the same thing at the same moment; nothing changed here, look at the card and try again.".to_string()
            }
            CoreError::Refused(
                Refusal::Forbidden(m)
                | Refusal::Stale(m)
                | Refusal::InvalidState(m)
                | Refusal::InvalidRequest(m)
                | Refusal::AlreadyApproved(m),
            ) => m.clone(),
            CoreError::Refused(r) => r.to_string(),
            CoreError::Storage(_) => "plangate could not record that (storage trouble); nothing changed, try again shortly.".to_string(),
            CoreError::NotFound(m) => m.clone(),
        }
    }

    /// See [`DecisionRefused::handled_elsewhere`].
    pub fn handled_elsewhere(&self) -> bool {
        matches!(self, CoreError::Preempted(Preempted::AlreadyHandled(_)))
    }
}

/// How the audit names a person: their identity (`telegram:111`), which is
/// what approver lists hold.
fn audit_name(actor: &Actor) -> String {
    match actor {
        Actor::Human { id, .. } => id.clone(),
        other => other.label(),
    }
}

impl Core {
    /// Whether `actor` may decide plans of `key`'s agent from `venue`; a
    /// refusal is audited against the session (and the approval, if any).
    pub async fn authorize(
        &self,
        key: &SessionKey,
        approval: Option<(ApprovalId, u32)>,
        actor: &Actor,
        venue: Venue<'_>,
    ) -> Result<(), NotAllowed> {
        let who = audit_name(actor);
        let checked = match actor {
            Actor::Operator { .. } => Ok(()),
            Actor::Human { id, .. } => {
                let project = self.project_of(key, approval.map(|(id, _)| id)).await;
                self.pairing.approvers().check(&key.agent, project.as_ref(), id, venue)
            }
            Actor::Agent | Actor::Scheduler => Err(NotAllowed::NotApprover),
        };
        if let Err(why) = &checked {
            let place = match venue {
                Venue::Chat { channel, chat } => format!("in {channel} chat {chat}"),
                Venue::Web => "via web".to_string(),
                Venue::Email => "via email".to_string(),
                Venue::Push => "via push".to_string(),
                Venue::Operator => "by the operator API".to_string(),
            };
            self.audit(key, &who, "refused", approval, format!("{who} refused {place}: {why}")).await;
        }
        checked
    }

    /// The project a decision is about (routing by project bounds who
    /// decides it): the approval's, else the session's latest proposal's.
    async fn project_of(&self, key: &SessionKey, approval: Option<ApprovalId>) -> Option<plangate_engine::Project> {
        let proposal = match approval {
            Some(id) => self.blocking(move |s| s.proposal(&id)).await.ok().flatten(),
            None => self.load(key).await.ok().and_then(|state| state.latest),
        };
        proposal.and_then(|p| p.project)
    }

    /// Decide approval `id`: the one function every venue calls.
    pub async fn decide(
        self: &Arc<Self>,
        id: ApprovalId,
        actor: Actor,
        venue: Venue<'_>,
        decision: Decision,
        meta: ExecMeta,
    ) -> Result<Decided, DecisionRefused> {
        let p = self.blocking(move |s| s.proposal(&id)).await.map_err(CoreError::from)?.ok_or(DecisionRefused::NotFound)?;
        self.authorize(&p.session, Some((id, p.version)), &actor, venue).await?;
        let who = audit_name(&actor);
        let executed = match self.execute_on_proposal(p.clone(), actor, decision.command(id), meta).await {
            Ok(executed) => executed,
            Err(e @ CoreError::Refused(Refusal::StepUpRequired(_))) => {
                let detail = format!("{who}'s approval is not counted: the policy asks for a passkey (plan {})", p.plan_hash);
                self.audit(&p.session, &who, "step_up_required", Some((id, p.version)), detail).await;
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        let proposal = executed.transition.state.latest.as_ref().filter(|l| l.approval_id == id).cloned().unwrap_or(p);
        Ok(Decided { proposal, executed })
    }
}
