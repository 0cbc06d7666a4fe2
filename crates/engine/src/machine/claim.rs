//! A person claims a pending plan ([`crate::claim`]).

use super::*;

/// Claim approval `approval_id` for `actor`: who may decide it may claim
/// it; the plan must be pending and the latest; the others' reminders wait
/// until the claim runs out; every card shows it.
pub(super) fn claim(t: &mut Transition, actor: &Actor, approval_id: ApprovalId, ctx: &Ctx) -> Result<(), Refusal> {
    require_person(actor, "claim a plan")?;
    let identity = authority::approver(&t.state, actor, &ctx.approvals, "claim a plan")?;
    check_decidable(&t.state, approval_id)?;
    let Some(proposal) = t.state.latest.as_mut() else {
        return Err(Refusal::Stale(format!("This plan was superseded by v{}.", t.state.session.version)));
    };
    let taken = crate::claim::take(proposal, &identity, &actor.label(), ctx.now, ctx.timers.claim_timeout_ms)?;
    let until = proposal.claim.as_ref().map(|c| c.until.clock()).unwrap_or_default();
    let pid = Some((proposal.approval_id, proposal.version));
    t.effects.push(Effect::UpdateCards { approval_id });
    let held = taken.moved.len();
    for (before, after) in taken.moved {
        t.effects.push(Effect::Cancel(before));
        t.effects.push(Effect::Schedule(after));
    }
    let verb = if taken.extended { "claim extended" } else { "claimed" };
    let detail = format!("{verb} by {} until {until} UTC; {held} reminder(s) held until then", actor.label());
    audit(t, actor, "claim", pid, detail, ctx);
    Ok(())
}

/// A reminder or the escalation of `approval_id` fires: a claim that ran
/// out by now comes off the cards (the ladder resumes), audited.
pub(super) fn claim_ran_out(t: &mut Transition, ctx: &Ctx) {
    let Some(proposal) = t.state.latest.as_mut() else { return };
    let Some(ended) = crate::claim::expire(proposal, ctx.now) else { return };
    let (id, pid) = (proposal.approval_id, Some((proposal.approval_id, proposal.version)));
    t.effects.push(Effect::UpdateCards { approval_id: id });
    let detail = format!("{}'s claim ran out at {} UTC without a decision; reminders resume", ended.by, ended.until.clock());
    audit(t, &Actor::Scheduler, "claim_expired", pid, detail, ctx);
}
