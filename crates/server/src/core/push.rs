//! The push job (`[push]`): a plan that waits reaches every device its
//! approvers subscribed on the plan page, after its chat cards, in the same
//! approval's queue and the same outbox, so a push survives a crash as a
//! card post does.
//!
//! A push carries only a fresh note id (crates/push): 32 random bytes whose
//! SHA-256 alone is written to the store (`push.note.<hash>`: approval,
//! version, approver, expiry) before the push leaves. `crate::push` serves
//! what the service worker exchanges it for. A device the job pushed to is
//! recorded (`push:<id>:v<n>:<subscription>` event keys), so a job run
//! again after a crash does not push twice; a push the service asked to
//! retry (429, 5xx, no answer) is tried again a few times; a subscription
//! it answered 404 or 410 for is removed, as is one past its expiry.
//!
//! A plan is pushed again, once per device each time, with each reminder
//! (to its approvers: a claim, which moves the reminders, stops these too)
//! and with each level of the escalation ladder (to the people the level
//! reaches, as `core::ladder` finds them: delegates for the away, nobody in
//! quiet hours). A level's person who is no approver of the plan sees its
//! card and cannot decide it from the notification (`crate::push`).

use super::Core;
use plangate_engine::{ApprovalId, DecisionStatus};
use plangate_push::note::{Note, NoteId};
use plangate_push::{Outcome, Subscription};
use plangate_store::StoreError;
use serde::{Deserialize, Serialize};
use tracing::warn;

/// Why a plan is pushed: which of its pushes a device gets once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(in crate::core) enum Round {
    /// Its card was posted.
    Card,
    /// Its n-th reminder.
    Reminder(u8),
    /// A level of the ladder (level, repeat round).
    Level(u8, u16),
}

impl Round {
    /// The part of a device's "pushed" event key that tells this push
    /// from the plan's others (`push:<id>:v<n><part>:<subscription>`; a
    /// card's key is the one before reminders were pushed).
    fn key_part(self) -> String {
        match self {
            Round::Card => String::new(),
            Round::Reminder(n) => format!(":r{n}"),
            Round::Level(level, round) => format!(":l{level}.{round}"),
        }
    }

    /// The audit's words for it.
    fn words(self) -> String {
        match self {
            Round::Card => String::new(),
            Round::Reminder(n) => format!("reminder {n} "),
            Round::Level(level, 0) => format!("escalation level {level} "),
            Round::Level(level, round) => format!("escalation level {level} (repeat {round}) "),
        }
    }
}

/// Attempts of one push job before the devices it could not reach are left.
const MAX_ATTEMPTS: u8 = 5;

/// How long a note opens its card: a push is shown at once or not at all,
/// but a phone in a drawer may show it hours later.
const NOTE_LIFETIME_MS: i64 = 24 * 60 * 60 * 1000;

impl Core {
    /// The subscriptions of `approvers` still valid at `now`; the ones
    /// past their expiry are removed on the way.
    pub(crate) async fn subscriptions_of(&self, approvers: Vec<String>, now: i64) -> Result<Vec<Subscription>, StoreError> {
        self.blocking(move |s| {
            let mut live = Vec::new();
            for (key, record) in s.cursors_with_prefix(plangate_push::subscription::KEY_PREFIX)? {
                match Subscription::from_record(&record) {
                    Some(sub) if sub.expires_at > now => {
                        if approvers.contains(&sub.approver) {
                            live.push(sub);
                        }
                    }
                    // Lapsed, or no longer readable: gone.
                    _ => {
                        s.swap_cursor(&key, Some(&record), None)?;
                    }
                }
            }
            Ok(live)
        })
        .await
    }

    /// Push pending approval `id` to each subscribed device of the people
    /// `round` reaches: its approvers, or a ladder level's people. `Some(n)`:
    /// some could not be reached, run again as attempt `n`.
    pub(super) async fn send_pushes(&self, id: ApprovalId, round: Round, attempts: u8) -> Option<u8> {
        let pusher = self.pusher()?;
        let (p, state) = self.proposal_and_state(id, None).await?;
        if p.status != DecisionStatus::Pending || state.session.latest_approval != Some(id) {
            return None;
        }
        let now = self.now();
        let people = match round {
            Round::Card | Round::Reminder(_) => self.approvers_of(&p, false),
            Round::Level(level, _) => {
                let config = self.settings.ladders.get(&p.session.agent).and_then(|l| l.get(usize::from(level).saturating_sub(1))).cloned();
                match config {
                    Some(config) => self.reached(&p.session.agent, &config, now.0).await.people.into_iter().map(|(who, _)| who).collect(),
                    None => Vec::new(),
                }
            }
        };
        let subs = match self.subscriptions_of(people, now.0).await {
            Ok(subs) => subs,
            Err(e) => {
                warn!(approval = %id, error = %e, "push subscriptions not read; no push sent");
                return (attempts + 1 < MAX_ATTEMPTS).then_some(attempts + 1);
            }
        };
        let pid = Some((id, p.version));
        let mut failed = false;
        for sub in subs {
            let sent = format!("push:{id}:v{}{}:{}", p.version, round.key_part(), sub.store_key());
            let probe = sent.clone();
            if self.blocking(move |s| s.seen(&probe)).await.unwrap_or(false) {
                continue; // pushed before a restart: never twice
            }
            let note_id = NoteId::from_random(rand::random());
            let note = Note { approval_id: id, version: p.version, approver: sub.approver.clone(), expires_at: now.0 + NOTE_LIFETIME_MS };
            let (key, record) = (note_id.store_key(), note.to_record());
            if let Err(e) = self.blocking(move |s| s.set_cursor(&key, &record)).await {
                warn!(approval = %id, error = %e, "push note not recorded; push not sent");
                failed = true;
                continue;
            }
            let approver = sub.approver.clone();
            match pusher.send(&sub, note_id.body(), now.0 / 1000).await {
                Outcome::Delivered => {
                    if let Err(e) = self.blocking(move |s| s.mark_seen(&sent)).await {
                        warn!(approval = %id, error = %e, "a push was sent but not recorded as sent");
                    }
                    self.audit(&p.session, "plangate", "push_sent", pid, format!("{}to a device of {approver}", round.words())).await;
                }
                Outcome::Gone(status) => {
                    let key = sub.store_key();
                    let removed = self.blocking(move |s| s.swap_cursor(&key, Some(&sub.to_record()), None)).await;
                    if let Err(e) = removed {
                        warn!(approval = %id, error = %e, "a gone push subscription was not removed");
                    }
                    let detail = format!("a device of {approver}: the push service answered {status}; its subscription was removed");
                    self.audit(&p.session, "plangate", "push_subscription_removed", pid, detail).await;
                }
                Outcome::Retry(why) => {
                    warn!(approval = %id, why = %why, "push not delivered; tried again");
                    let detail = format!("{}to a device of {approver} (attempt {}): {why}", round.words(), attempts + 1);
                    self.audit(&p.session, "plangate", "push_not_sent", pid, detail).await;
                    failed = true;
                }
                Outcome::Refused(why) => {
                    warn!(approval = %id, why = %why, "push refused by the push service");
                    self.audit(&p.session, "plangate", "push_not_sent", pid, format!("{}to a device of {approver}: {why}", round.words()))
                        .await;
                }
            }
        }
        (failed && attempts + 1 < MAX_ATTEMPTS).then_some(attempts + 1)
    }
}
