//! Claims: a person takes a pending plan on ("I am on it").
//!
//! A claim ([`Claim`], on the [`Proposal`]) names who is on the plan and
//! until when (`[approvals] claim_timeout`, 30 minutes by default, from
//! [`crate::TimerPolicy::claim_timeout_ms`]). Every card shows it, and the
//! reminders to the others wait: each approver reminder and the escalation
//! due before the claim runs out is moved to the moment it does
//! ([`take`]), so a claim stops the others' nudges and, when it runs out
//! without a decision, the ladder resumes where it stood. When several
//! reminders fall due at that moment, the first to fire takes the others
//! with it (`machine::timers`): people get one reminder, not a burst. The
//! timeout is never moved: a claim does not keep a plan alive.
//!
//! Who may claim is who may decide the plan ([`crate::authority::approver`],
//! and the shell's check of the venue); a decided or superseded plan cannot
//! be claimed; a claim that holds is refused to anyone else, and the
//! claimer claiming again extends it. A decision ends the claim with the
//! round, and cancels the moved timers with the others.

use crate::ids::Timestamp;
use crate::model::{Claim, Proposal, Timer, TimerKind};
use crate::refusal::Refusal;

/// What a claim did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The claimer held it already: the claim now runs from now.
    pub extended: bool,
    /// The timers moved to the end of the claim: `(before, after)`.
    pub moved: Vec<(Timer, Timer)>,
}

/// Claim `proposal` (pending: the caller checked) for the person
/// `identity`, named `by`, from `now` for `timeout_ms`; refused while
/// someone else's claim holds.
pub fn take(proposal: &mut Proposal, identity: &str, by: &str, now: Timestamp, timeout_ms: u64) -> Result<Taken, Refusal> {
    let extended = match proposal.claim.as_ref().filter(|c| c.holds(now)) {
        Some(c) if c.identity != identity => {
            return Err(Refusal::InvalidState(format!(
                "{} claimed v{} until {} UTC: they are on it. You can still decide it, or claim it once their claim runs out.",
                c.by,
                proposal.version,
                c.until.clock()
            )))
        }
        Some(_) => true,
        None => false,
    };
    let until = now.plus_ms(timeout_ms);
    proposal.claim = Some(Claim { by: by.to_string(), identity: identity.to_string(), at: now, until });
    let mut moved = Vec::new();
    for timer in proposal
        .timers
        .iter_mut()
        .filter(|t| matches!(t.kind, TimerKind::Nudge(_) | TimerKind::Escalate | TimerKind::Level(_)) && t.due < until)
    {
        let before = timer.clone();
        timer.due = until;
        moved.push((before, timer.clone()));
    }
    Ok(Taken { extended, moved })
}

/// The claim of `proposal` if it ran out by `now`, taken off the proposal.
pub fn expire(proposal: &mut Proposal, now: Timestamp) -> Option<Claim> {
    if proposal.claim.as_ref().is_some_and(|c| !c.holds(now)) {
        proposal.claim.take()
    } else {
        None
    }
}

/// What an open card says while the claim holds:
/// `🙋 Claimed by telegram:@alice until 14:32 UTC`.
pub fn card_line(claim: &Claim) -> String {
    format!("🙋 Claimed by {} until {} UTC", claim.by, claim.until.clock())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::fixtures::proposed;
    use crate::plan::Plan;

    const MIN: u64 = 60_000;

    fn timer(p: &Proposal, due: Timestamp, kind: TimerKind) -> Timer {
        Timer { due, session: p.session.clone(), approval_id: p.approval_id, kind }
    }

    #[test]
    fn a_claim_moves_the_reminders_and_the_escalation_due_before_its_end_and_never_the_timeout() {
        let start = Timestamp(1_000_000);
        let mut p = proposed(Plan::titled("Add retries"), start);
        p.timers = vec![
            timer(&p, start.plus_ms(10 * MIN), TimerKind::Nudge(1)),
            timer(&p, start.plus_ms(20 * MIN), TimerKind::Escalate),
            timer(&p, start.plus_ms(25 * MIN), TimerKind::Timeout),
            timer(&p, start.plus_ms(60 * MIN), TimerKind::Nudge(2)),
        ];
        let taken = take(&mut p, "telegram:111", "telegram:@alice", start, 30 * MIN).expect("claimed");
        let until = start.plus_ms(30 * MIN);
        assert!(!taken.extended);
        assert_eq!(taken.moved.len(), 2);
        let due: Vec<(TimerKind, Timestamp)> = p.timers.iter().map(|t| (t.kind, t.due)).collect();
        assert_eq!(
            due,
            vec![
                (TimerKind::Nudge(1), until),
                (TimerKind::Escalate, until),
                (TimerKind::Timeout, start.plus_ms(25 * MIN)),
                (TimerKind::Nudge(2), start.plus_ms(60 * MIN)),
            ]
        );
        assert_eq!(card_line(p.claim.as_ref().expect("claim")), "🙋 Claimed by telegram:@alice until 00:46 UTC");
    }

    #[test]
    fn a_claim_that_ran_out_is_taken_off_and_one_that_holds_is_not() {
        let start = Timestamp(0);
        let mut p = proposed(Plan::titled("Add retries"), start);
        take(&mut p, "telegram:111", "telegram:@alice", start, MIN).expect("claimed");
        assert_eq!(expire(&mut p, start.plus_ms(MIN - 1)), None);
        assert!(expire(&mut p, start.plus_ms(MIN)).is_some());
        assert_eq!(p.claim, None);
    }
}
