//! Amendments: steps added while an approved plan executes, and scope
//! widenings, opened, withdrawn and decided (see [`crate::amendment`]).

use super::*;

/// Steps added while executing: a new version of the plan, the approved
/// steps plus `added`, that waits for people like a proposal (own approval
/// id, card, reminders, timeout, quorum) while the session keeps executing
/// what was approved — with the gate shut until it is decided
/// ([`crate::amendment`]). A pending amendment the agent extends again is
/// superseded by the new one, which asks for every added step.
pub(super) fn open_amendment(
    t: &mut Transition,
    actor: &Actor,
    added: Vec<plan::Step>,
    widen: Vec<String>,
    ctx: &Ctx,
) -> Result<(), Refusal> {
    let reference = amendment::reference(&t.state);
    let Some(base) = t.state.latest.as_ref() else {
        return Err(Refusal::InvalidState("there is no approved plan to amend".to_string()));
    };
    let approval_id = ApprovalId(ctx.random);
    if base.approval_id == approval_id {
        return Err(Refusal::InvalidState("approval id collision; retry".to_string()));
    }
    // What it amends: the latest approved version, not an amendment that
    // waits or was turned down.
    // A flagged one was let through, never approved.
    let flagged = base.amends.as_ref().is_some_and(|a| a.flagged);
    let approved_base = matches!(base.status, DecisionStatus::Approved | DecisionStatus::Edited) && !flagged;
    let of_version = base.amends.as_ref().filter(|_| !approved_base).map_or(base.version, |a| a.of_version);
    // The plan every amendment of this execution threads under.
    let of_approval = Some(base.amends.as_ref().and_then(|a| a.of_approval).unwrap_or(base.approval_id));
    let version = t.state.session.version + 1;
    let mut approved = base.approved_plan().into_owned();
    approved.steps = t.state.session.steps.iter().filter(|s| reference.contains(&s.step.trim().to_string())).cloned().collect();
    // The approved scope is the session's: a turned-down widening is not part of it.
    let widen = amendment::widening(&t.state, widen);
    approved.scope = amendment::scope_of(&t.state.session.scope, &[]);
    let mut amended = approved.clone();
    amended.steps = t.state.session.steps.clone();
    amended.scope = amendment::scope_of(&t.state.session.scope, &widen);
    let changes = diff::diff(&approved, &amended, of_version);
    let requested_by = base.review.requested_by.clone();
    // An amendment of a plan that needed a passkey needs one too (and is
    // never approved by auto mode): its rules are the base's, stricter.
    let rules = ApprovalPolicy { step_up: ctx.approvals.step_up || base.review.step_up, ..ctx.approvals.clone() };
    let project = base.project.clone();
    let previous = t.state.latest.as_ref().map(|p| p.approval_id);
    // A decided base is on record already, unchanged.
    retire_pending(t, actor, version, ctx);
    let hash = plan::plan_hash(&amended, None);
    let added_texts: Vec<String> = added.iter().map(|s| format!("+ {}", s.step.trim())).collect();
    let mut proposal = Proposal {
        approval_id,
        session: t.state.session.key.clone(),
        version,
        plan: amended,
        markdown: None,
        plan_hash: hash.clone(),
        created_at: ctx.now,
        status: DecisionStatus::Pending,
        decided_by: None,
        decided_at: None,
        feedback: None,
        edited_plan: None,
        injection: None,
        superseded_by: None,
        timers: Vec::new(),
        released: false,
        review: Review::new(&rules, requested_by, Some(changes)),
        amends: Some(Amendment { of_version, of_approval, added, flagged: false, widen: widen.clone() }),
        project,
        previous,
        reminders_sent: 0,
        escalated: 0,
        claim: None,
        agent_left_at: None,
        ran: None,
    };
    super::execution::note_amendment(t, version, ctx);
    let auto = authority::auto_approval(&t.state.session, &rules);
    let session = &mut t.state.session;
    session.approved_steps = reference;
    session.scope_asked.extend(widen.iter().cloned());
    session.version = version;
    session.latest_approval = Some(approval_id);
    t.effects.push(Effect::WriteDocument { approval_id });
    let pid = Some((approval_id, version));
    let asks: Vec<String> = added_texts.into_iter().chain(widen.iter().map(|p| format!("+ scope: {p}"))).collect();
    let detail = format!("amends v{of_version} ({hash}): {}", asks.join("; "));
    if let Some(auto) = auto {
        // Auto mode is a standing "yes" to later versions; amendments are versions.
        proposal.status = DecisionStatus::Approved;
        proposal.decided_by = Some("auto".to_string());
        proposal.decided_at = Some(ctx.now);
        amendment::lock(session, &proposal.plan, &proposal.plan);
        let text = injection::amendment_approved(&proposal, "auto");
        proposal.injection = Some(text.clone());
        session.injection = Some(text);
        t.effects.push(Effect::PostCards { approval_id });
        if let Some(receipt) = Receipt::of(&proposal) {
            t.effects.push(Effect::AppendReceipt { approval_id, text: receipt.document_line(ctx.now) });
        }
        t.effects.push(Effect::Wake);
        t.state.latest = Some(proposal);
        t.opened_by = Some(auto);
        audit(t, actor, "amend", pid, detail, ctx);
        audit(t, &Actor::Agent, "approve", pid, "auto mode: amendment approved without a human decision".to_string(), ctx);
        if let Some(last) = t.audit.last_mut() {
            last.actor = "auto".to_string();
        }
        return Ok(());
    }
    // A scope is a boundary people drew: widening it always asks.
    if ctx.approvals.amendments == amendment::Policy::Flag && widen.is_empty() {
        // No wait: the steps go on, marked wherever the plan is shown, and
        // the amendment's card is the approvers' one notice of this batch.
        amendment::flag(&mut proposal, session, ctx.now);
        t.effects.push(Effect::PostCards { approval_id });
        if let Some(receipt) = Receipt::of(&proposal) {
            t.effects.push(Effect::AppendReceipt { approval_id, text: receipt.document_line(ctx.now) });
        }
        t.state.latest = Some(proposal);
        audit(t, actor, "amend", pid, format!("{detail}; {}", amendment::FLAGGED_AUDIT), ctx);
        return Ok(());
    }
    session.amendment_pending = Some(approval_id);
    proposal.timers = proposal_timers(session, approval_id, ctx);
    t.effects.extend(proposal.timers.iter().cloned().map(Effect::Schedule));
    t.effects.push(Effect::PostCards { approval_id });
    t.effects.push(Effect::Wake);
    t.state.latest = Some(proposal);
    audit(t, actor, "amend", pid, format!("{detail}; waiting for approval"), ctx);
    Ok(())
}

/// The gate turned down a file tool outside the approved scope: an
/// amendment asks people to widen it ([`crate::scope`]). Nothing happens
/// for a path asked for before, or while another amendment waits (the gate
/// is shut then anyway).
pub(super) fn widen_scope(t: &mut Transition, actor: &Actor, paths: Vec<String>, ctx: &Ctx) -> Result<(), Refusal> {
    require_agent(actor)?;
    let session = &t.state.session;
    let mut fresh: Vec<String> = paths.into_iter().filter(|p| crate::scope::is_normalized(p) && !session.scope_asked.contains(p)).collect();
    fresh.dedup();
    if !amendment::executing(session) || session.scope.is_empty() || session.amendment_pending.is_some() || fresh.is_empty() {
        t.changed = false;
        return Ok(());
    }
    open_amendment(t, actor, Vec::new(), fresh, ctx)
}

/// The agent enters plan mode while an amendment waits: it is moot (a new
/// version will be proposed from plan mode), so it is withdrawn as
/// superseded and its reminders stop.
pub(super) fn withdraw_amendment(t: &mut Transition, ctx: &Ctx) {
    t.state.session.amendment_pending = None;
    let Some(old) = t.state.latest.as_mut().filter(|p| p.amends.is_some() && p.status == DecisionStatus::Pending) else {
        return;
    };
    old.status = DecisionStatus::Superseded;
    old.decided_at = Some(ctx.now);
    for timer in old.timers.drain(..) {
        t.effects.push(Effect::Cancel(timer));
    }
    t.effects.push(Effect::UpdateCards { approval_id: old.approval_id });
    if let Some(receipt) = Receipt::of(old) {
        t.effects.push(Effect::AppendReceipt { approval_id: old.approval_id, text: receipt.document_line(ctx.now) });
    }
}

/// The decision that completes an amendment's round (or a request for
/// changes to it). The session goes on executing either way: approved, the
/// added steps join the approved reference and the approval binds the
/// amended plan's hash; edited, the person's list is the new reference;
/// rejected, the added steps are dropped and the feedback reaches the agent
/// like a revise.
pub(super) fn decide_amendment(t: &mut Transition, actor: &Actor, verdict: Verdict, who: String, ctx: &Ctx) -> Result<(), Refusal> {
    let session = &mut t.state.session;
    let h = session.harness;
    let Some(proposal) = t.state.latest.as_mut() else {
        return Err(Refusal::Stale(format!("This plan was superseded by v{}.", session.version)));
    };
    session.amendment_pending = None;
    proposal.decided_by = Some(who.clone());
    proposal.decided_at = Some(ctx.now);
    let action = match verdict {
        Verdict::Approve | Verdict::ApproveWith(_) => {
            proposal.status = DecisionStatus::Approved;
            // Steps an approver left out go, whichever they are; the live
            // list keeps the progress the agent reported meanwhile.
            let kept = amendment::texts(&proposal.approved_plan().steps);
            session.steps.retain(|s| kept.contains(&s.step.trim().to_string()));
            amendment::lock(session, &proposal.approved_plan(), &proposal.plan);
            proposal.injection = Some(injection::with_review_terms(injection::amendment_approved(proposal, &who), proposal, h));
            "approve"
        }
        Verdict::Edit(plan) => {
            proposal.status = DecisionStatus::Edited;
            session.approval = ApprovalState::Edited;
            session.steps = plan.steps.clone();
            amendment::lock(session, &plan, &proposal.plan);
            proposal.edited_plan = Some(plan);
            proposal.injection = Some(injection::with_review_terms(injection::edited(proposal, &who), proposal, h));
            "edit"
        }
        Verdict::Revise(feedback) => {
            proposal.status = DecisionStatus::Rejected;
            let feedback = crate::text::sanitize_for_injection(&feedback);
            proposal.feedback = Some(feedback.clone());
            let approved = &session.approved_steps;
            session.steps.retain(|s| approved.contains(&s.step.trim().to_string()));
            proposal.injection = Some(injection::amendment_rejected(proposal, &who, &feedback, h));
            "revise"
        }
    };
    session.injection = proposal.injection.clone();
    finish_decision(t, actor, action, ctx);
    Ok(())
}
