//! Which timers a store keeps: of each *chain*, the one due first.
//!
//! A pending proposal carries its reminders, escalation and timeout
//! ([`Proposal::timers`](crate::Proposal)), a session in plan mode its
//! reminders to the agent ([`Session::agent_timers`](crate::Session)). Those
//! lists are the truth: a timer that fires and is not on them does nothing
//! (the machine checks). So a store need not index every timer: it keeps,
//! of each chain, the earliest, and the transition that fires it (or
//! cancels it) puts the chain's next one in its place ([`kept_changes`]).
//! A pending approval is then two timer keys in the store instead of one
//! per nudge plus the timeout, and a proposal, a decision and plan mode
//! each write fewer keys (#32: the store's cost and its page table grow
//! with its number of keys).
//!
//! Chains are split where waiting differs: reminders to approvers wait in
//! the store while the chat backlog is full, and must not hold a timeout
//! or an escalation back behind them. A subagent run's expiry is a chain
//! of one (its timer is scheduled and cancelled by effects alone).

use crate::model::{State, Timer, TimerKind};
use crate::ApprovalId;

/// Timers that follow one another: only the first is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Chain {
    /// [`TimerKind::Nudge`]: may wait for the chat backlog.
    ApproverReminders,
    /// [`TimerKind::Level`] (and [`TimerKind::Escalate`]), [`TimerKind::Timeout`]: never wait.
    Deadlines,
    /// [`TimerKind::AgentNudge`].
    AgentReminders,
    /// [`TimerKind::SubagentExpiry`]: each run's own.
    SubagentExpiry,
}

impl TimerKind {
    pub fn chain(self) -> Chain {
        match self {
            TimerKind::Nudge(_) => Chain::ApproverReminders,
            TimerKind::Timeout | TimerKind::Escalate | TimerKind::Level(_) => Chain::Deadlines,
            TimerKind::AgentNudge(_) => Chain::AgentReminders,
            TimerKind::SubagentExpiry => Chain::SubagentExpiry,
        }
    }
}

/// Which chain a timer is on: its approval's (or agent reminders' or
/// subagent run's) id and the [`Chain`].
pub fn chain_of(timer: &Timer) -> (ApprovalId, Chain) {
    (timer.approval_id, timer.kind.chain())
}

/// Of each chain among `timers`, the one that fires first (by [`Timer`]'s
/// order: due time, then kind, as the stores order their keys), in that order.
pub fn heads<'a>(timers: impl IntoIterator<Item = &'a Timer>) -> Vec<Timer> {
    let mut heads: Vec<&Timer> = Vec::new();
    for timer in timers {
        match heads.iter_mut().find(|h| chain_of(h) == chain_of(timer)) {
            Some(head) if timer < *head => *head = timer,
            Some(_) => {}
            None => heads.push(timer),
        }
    }
    heads.sort();
    heads.into_iter().cloned().collect()
}

/// The timers a store keeps for `state`: the head of each chain of its
/// latest proposal and of its agent reminders. Subagent expiries are not
/// here: they are stored as scheduled.
pub fn kept(state: &State) -> Vec<Timer> {
    let proposal = state.latest.iter().flat_map(|p| p.timers.iter());
    heads(proposal.chain(state.session.agent_timers.iter()))
}

/// What going from `before` to `after` changes among the kept timers:
/// `(remove, add)`. A head that fired or was cancelled is removed, the
/// chain's next one (if any) added; a chain that did not change writes
/// nothing.
pub fn kept_changes(before: &State, after: &State) -> (Vec<Timer>, Vec<Timer>) {
    let (old, new) = (kept(before), kept(after));
    let removed = old.iter().filter(|t| !new.contains(t)).cloned().collect();
    let added = new.iter().filter(|t| !old.contains(t)).cloned().collect();
    (removed, added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SessionKey, Timestamp};

    fn timer(due: i64, id: u8, kind: TimerKind) -> Timer {
        Timer { due: Timestamp(due), session: SessionKey::new("a", "s"), approval_id: ApprovalId([id; 16]), kind }
    }

    #[test]
    fn each_chain_keeps_its_earliest_and_a_timeout_is_not_behind_a_reminder() {
        let timers = [
            timer(30, 1, TimerKind::Nudge(3)),
            timer(10, 1, TimerKind::Nudge(1)),
            timer(20, 1, TimerKind::Nudge(2)),
            timer(50, 1, TimerKind::Timeout),
            timer(40, 1, TimerKind::Escalate),
            timer(5, 2, TimerKind::Nudge(1)),
            timer(7, 3, TimerKind::AgentNudge(1)),
            timer(8, 3, TimerKind::AgentNudge(2)),
        ];
        assert_eq!(
            heads(&timers),
            vec![
                timer(5, 2, TimerKind::Nudge(1)),
                timer(7, 3, TimerKind::AgentNudge(1)),
                timer(10, 1, TimerKind::Nudge(1)),
                timer(40, 1, TimerKind::Escalate),
            ]
        );
    }

    #[test]
    fn a_fired_head_is_replaced_by_the_next_of_its_chain_and_nothing_else_moves() {
        let mut before = State::new(SessionKey::new("a", "s"));
        before.session.agent_timers = vec![timer(1, 9, TimerKind::AgentNudge(1)), timer(2, 9, TimerKind::AgentNudge(2))];
        let mut after = before.clone();
        // Reminder 1 fired: reminder 2 is the chain's head now.
        after.session.agent_timers.remove(0);
        assert_eq!(
            kept_changes(&before, &after),
            (vec![timer(1, 9, TimerKind::AgentNudge(1))], vec![timer(2, 9, TimerKind::AgentNudge(2))])
        );
        assert_eq!(kept_changes(&after, &after), (vec![], vec![]));
    }
}
