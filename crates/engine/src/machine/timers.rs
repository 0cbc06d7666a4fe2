//! What a fired timer does: nudge, escalate, time out, expire a subagent run.

use super::*;

pub(super) fn timer_fired(t: &mut Transition, timer: Timer, ctx: &Ctx) {
    if timer.kind == TimerKind::SubagentExpiry {
        if let Some(detail) = subagents::expiry_fired(t, &timer, ctx.now, ctx.timers.subagent_expiry_ms) {
            let latest = t.state.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending).map(|p| (p.approval_id, p.version));
            audit(t, &Actor::Scheduler, "subagent_expired", latest, detail, ctx);
        }
        return;
    }
    if let TimerKind::AgentNudge(number) = timer.kind {
        let session = &mut t.state.session;
        if !session.agent_timers.contains(&timer) {
            t.changed = false;
            return;
        }
        // Spent either way: the store keeps only the first of the chain
        // (`chains`), so a reminder still listed would hold back the next.
        session.agent_timers.retain(|x| *x != timer);
        if session.mode != Mode::Plan {
            return;
        }
        // One message at a time: a pending decision text matters more.
        if session.injection.is_none() {
            let waited = ctx.timers.nudges_ms.get(usize::from(number).saturating_sub(1)).copied().unwrap_or(0);
            session.injection = Some(injection::plan_nudge(waited, session.harness));
        }
        audit(t, &Actor::Scheduler, "agent_nudge", None, format!("reminder {number} to propose a plan"), ctx);
        return;
    }
    let current = t
        .state
        .latest
        .as_mut()
        .filter(|p| p.approval_id == timer.approval_id && p.status == DecisionStatus::Pending && p.timers.contains(&timer));
    let Some(proposal) = current else {
        // Decided, superseded, cancelled, or already fired: a stale timer does nothing.
        t.changed = false;
        return;
    };
    proposal.timers.retain(|x| *x != timer);
    let id = proposal.approval_id;
    if matches!(timer.kind, TimerKind::Nudge(_) | TimerKind::Escalate | TimerKind::Level(_)) {
        claim_ran_out(t, ctx);
    }
    let Some(proposal) = t.state.latest.as_mut() else { return };
    match timer.kind {
        TimerKind::Nudge(fired) => {
            // Fired late (the service was down, or the chat backlog held
            // it): the reminders also due by now go with it, and people get
            // one reminder numbered as the latest of them, not a burst.
            let mut number = fired;
            proposal.timers.retain(|x| match x.kind {
                TimerKind::Nudge(n) if x.due <= ctx.now => {
                    number = number.max(n);
                    false
                }
                _ => true,
            });
            proposal.reminders_sent = proposal.reminders_sent.max(number);
            t.effects.push(Effect::Nudge { approval_id: id, number });
            let pid = Some((id, proposal.version));
            audit(t, &Actor::Scheduler, "nudge", pid, format!("reminder {number}"), ctx);
        }
        TimerKind::Escalate => level_reached(t, 1, ctx),
        TimerKind::Level(level) => level_reached(t, level, ctx),
        TimerKind::AgentNudge(_) | TimerKind::SubagentExpiry => t.changed = false,
        TimerKind::Timeout => {
            let waited = ctx.now.0 - proposal.created_at.0;
            proposal.status = DecisionStatus::TimedOut;
            proposal.decided_by = Some("timeout".to_string());
            proposal.decided_at = Some(ctx.now);
            let session = &mut t.state.session;
            let text = if proposal.amends.is_some() {
                // Nobody approved the added steps: they go, the approved plan goes on.
                session.amendment_pending = None;
                let approved = &session.approved_steps;
                session.steps.retain(|s| approved.contains(&s.step.trim().to_string()));
                injection::amendment_timed_out(proposal, waited)
            } else {
                session.approval = ApprovalState::TimedOut;
                injection::timed_out(proposal, waited, session.harness)
            };
            proposal.injection = Some(text.clone());
            session.injection = Some(text);
            finish_decision(t, &Actor::Scheduler, "timeout", ctx);
        }
    }
}

/// Level `level` of the escalation ladder fell due (its timer is off the
/// proposal already). The first time, it becomes the proposal's highest
/// level reached (`Proposal::escalated`, committed with the timer's
/// removal, so a restart never reaches it again) and the repeats of the
/// levels below stop; with a `repeat`, its next round is scheduled. A
/// repeat of a level below one reached since, or due with the next level,
/// does nothing.
fn level_reached(t: &mut Transition, level: u8, ctx: &Ctx) {
    let Some(proposal) = t.state.latest.as_mut() else { return };
    let id = proposal.approval_id;
    if level < proposal.escalated {
        return; // a later level took over: this level's repeats end
    }
    let higher_due = proposal.timers.iter().any(|x| matches!(x.kind, TimerKind::Level(n) if n > level) && x.due <= ctx.now);
    if level == proposal.escalated && higher_due {
        return; // a repeat due with the next level: the next level takes over
    }
    let round = if level == proposal.escalated {
        // A repeat: how many rounds of this level came before, from its offset.
        let rung = ctx.timers.ladder.get(usize::from(level) - 1);
        match rung {
            Some(r) => {
                let since = u64::try_from(ctx.now.0 - proposal.created_at.0).unwrap_or(0).saturating_sub(r.after_ms);
                let every = r.repeat_ms.unwrap_or(u64::MAX).max(1);
                u16::try_from(since / every).unwrap_or(u16::MAX).max(1)
            }
            None => 1,
        }
    } else {
        proposal.escalated = level;
        proposal.timers.retain(|x| !matches!(x.kind, TimerKind::Level(n) if n < level));
        0
    };
    if let Some(every) = ctx.timers.ladder.get(usize::from(level) - 1).and_then(|r| r.repeat_ms) {
        let next = Timer { due: ctx.now.plus_ms(every), session: proposal.session.clone(), approval_id: id, kind: TimerKind::Level(level) };
        proposal.timers.push(next.clone());
        t.effects.push(Effect::Schedule(next));
    }
    t.effects.push(Effect::Escalate { approval_id: id, level, round });
    let pid = Some((id, proposal.version));
    let waited = crate::ids::humanize_ms(ctx.now.0 - proposal.created_at.0);
    let detail = match round {
        0 => format!("level {level}: no decision after {waited}"),
        n => format!("level {level} again (repeat {n}): no decision after {waited}"),
    };
    audit(t, &Actor::Scheduler, "escalate", pid, detail, ctx);
}
