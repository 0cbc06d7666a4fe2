//! The email job (`[email]`): a plan's card by email to each approver who
//! has an address, with one-use decision links (crates/email), after its
//! chat cards, reminders and escalation, in the same approval's queue and
//! the same outbox, so an email survives a crash as a card post does.
//!
//! Each email gets fresh links: per action, a token of 32 random bytes
//! whose SHA-256 hash alone is written to the store (a cursor,
//! `email.link.<hash>`, holding the approval, version, approver and
//! action) before the email leaves. `crate::email` serves what the links
//! open. A recipient the job has sent to is recorded (`email:<id>:…`
//! event keys, as nudges are), so a job run again after a crash does not
//! mail them twice; a send that failed is tried again a few times.

use super::Core;
use crate::config::Settings;
use plangate_email::{Action, Link, Mailer, Reason, Token};
use plangate_engine::card::{document_file_name, nudge_text};
use plangate_engine::{ApprovalId, DecisionStatus, Effect, Proposal};
use plangate_store::StoreError;
use serde::{Deserialize, Serialize};
use tracing::warn;

/// Attempts of one email job before the recipients it could not reach are
/// left (each failure is audited `email_not_sent`).
const MAX_ATTEMPTS: u8 = 5;

/// Why a plan is mailed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(in crate::core) enum Mailing {
    /// Its card was posted.
    Proposed,
    /// Its n-th reminder.
    Reminder(u8),
    /// It waited too long: to the escalation destinations' approvers.
    /// Only in jobs queued before the ladder; a ladder level mails its own
    /// people (`core::ladder`).
    Escalated,
}

impl Mailing {
    /// The email an effect asks for, with its approval.
    pub(in crate::core) fn of(effect: &Effect) -> Option<(ApprovalId, Mailing)> {
        match effect {
            Effect::PostCards { approval_id } => Some((*approval_id, Mailing::Proposed)),
            Effect::Nudge { approval_id, number } => Some((*approval_id, Mailing::Reminder(*number))),
            _ => None,
        }
    }

    /// How the audit and the sent records name it.
    fn word(self) -> String {
        match self {
            Mailing::Proposed => "card".to_string(),
            Mailing::Reminder(n) => format!("reminder {n}"),
            Mailing::Escalated => "escalation".to_string(),
        }
    }
}

/// The sender of `[email]`, if set. The settings were validated; a sender
/// that still cannot be built is logged and email stays off.
pub(super) fn mailer(settings: &Settings) -> Option<Mailer> {
    let email = settings.raw.email.as_ref()?;
    Mailer::new(&email.smtp()).map_err(|e| tracing::error!(error = %e, "email is off: the [email] sender cannot be built")).ok()
}

impl Core {
    /// Mail pending approval `id` to each of its approvers with an
    /// address. `Some(n)`: some could not be reached, run again as attempt `n`.
    pub(super) async fn send_emails(&self, id: ApprovalId, mailing: Mailing, attempts: u8) -> Option<u8> {
        let (mailer, config, base) = (self.mailer.as_ref()?, self.settings.raw.email.as_ref()?, self.settings.email_public_url()?);
        let (p, state) = self.proposal_and_state(id, None).await?;
        // A decided, superseded or cancelled plan is never mailed.
        if p.status != DecisionStatus::Pending || state.session.latest_approval != Some(id) {
            return None;
        }
        let approvers = self.approvers_of(&p, mailing == Mailing::Escalated);
        let recipients: Vec<(&String, &String)> =
            approvers.iter().filter_map(|approver| config.approvers.get_key_value(approver)).collect();
        let now = self.now();
        let card = self.card_of(&p, &state, now);
        let reason = match mailing {
            Mailing::Proposed => Reason::Proposed,
            Mailing::Reminder(n) => Reason::Reminder(nudge_text(&p, n, now)),
            Mailing::Escalated => Reason::Escalated(plangate_engine::ids::humanize_ms(now.0 - p.created_at.0)),
        };
        let document = (document_file_name(&p), p.document());
        let pid = Some((id, p.version));
        let mut failed = false;
        for (approver, address) in recipients {
            let sent = format!("email:{id}:{}:{approver}", mailing.word());
            let probe = sent.clone();
            if self.blocking(move |s| s.seen(&probe)).await.unwrap_or(false) {
                continue; // sent before a restart: never twice
            }
            let links = match self.mint_links(&p, approver).await {
                Ok(links) => links,
                Err(e) => {
                    warn!(approval = %id, error = %e, "email links not recorded; email not sent");
                    failed = true;
                    continue;
                }
            };
            let links: Vec<(Action, String)> =
                links.into_iter().map(|(action, token)| (action, format!("{base}/e/{}", token.encode()))).collect();
            let email = plangate_email::render(address, &card, &reason, &links, document.clone());
            match mailer.send(&email).await {
                Ok(()) => {
                    if let Err(e) = self.blocking(move |s| s.mark_seen(&sent)).await {
                        warn!(approval = %id, error = %e, "an email was sent but not recorded as sent");
                    }
                    self.audit(&p.session, "plangate", "email_sent", pid, format!("{} to {approver}", mailing.word())).await;
                }
                Err(e) => {
                    warn!(approval = %id, error = %e, "email not sent");
                    let detail = format!("{} to {approver} (attempt {}): {e}", mailing.word(), attempts + 1);
                    self.audit(&p.session, "plangate", "email_not_sent", pid, detail).await;
                    failed = true;
                }
            }
        }
        (failed && attempts + 1 < MAX_ATTEMPTS).then_some(attempts + 1)
    }

    /// The approvers of `p`'s places (its agent's destinations that take
    /// its project; with `escalated`, the escalation ones), each once.
    pub(super) fn approvers_of(&self, p: &Proposal, escalated: bool) -> Vec<String> {
        let index = self.pairing.approvers();
        let mut approvers: Vec<String> = index
            .places(&p.session.agent)
            .iter()
            .filter(|place| place.escalation == escalated && place.takes(p.project.as_ref()))
            .flat_map(|place| place.approvers.iter().cloned())
            .collect();
        approvers.sort();
        approvers.dedup();
        approvers
    }

    /// One fresh link per action for `approver` on `p`: the tokens, whose
    /// hashes (only) are now in the store.
    pub(super) async fn mint_links(&self, p: &Proposal, approver: &str) -> Result<Vec<(Action, Token)>, StoreError> {
        let minted: Vec<(Action, Token)> = Action::ALL.iter().map(|action| (*action, Token::from_random(rand::random()))).collect();
        let records: Vec<(String, String)> = minted
            .iter()
            .map(|(action, token)| {
                let link =
                    Link { approval_id: p.approval_id, version: p.version, approver: approver.to_string(), action: *action, used_at: None };
                (token.store_key(), link.to_record())
            })
            .collect();
        self.blocking(move |s| records.iter().try_for_each(|(key, record)| s.set_cursor(key, record))).await?;
        Ok(minted)
    }
}
