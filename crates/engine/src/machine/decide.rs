//! People's decisions on a pending proposal: verdicts, the quorum count,
//! the release (`Off`) and the cancel.

use super::*;

pub(super) fn apply_verdict(
    t: &mut Transition,
    actor: &Actor,
    approval_id: ApprovalId,
    verdict: Verdict,
    step_up: Option<&StepUp>,
    ctx: &Ctx,
) -> Result<(), Refusal> {
    require_person(actor, "decide a plan")?;
    check_decidable(&t.state, approval_id)?;
    let latest_version = t.state.session.version;
    let open = &t.state.session.open_subagents;
    if !matches!(verdict, Verdict::Revise(_)) && !open.is_empty() {
        return Err(Refusal::SubagentsOpen(open.keys().cloned().collect()));
    }
    if let Verdict::Revise(feedback) = &verdict {
        if feedback.trim().is_empty() {
            return Err(Refusal::InvalidRequest(
                "feedback is required: say what should change so the agent can revise the plan".to_string(),
            ));
        }
    }
    if let Verdict::Edit(plan) = &verdict {
        plan::validate_plan(plan)?;
    }
    // Approvals and edits count towards the round's quorum first; only the
    // one that completes it decides.
    let (verdict, who) = match verdict {
        Verdict::Revise(feedback) => (Verdict::Revise(feedback), actor.label()),
        approving => match count_approval(t, actor, approving, step_up, ctx)? {
            Some(decided) => decided,
            None => return Ok(()),
        },
    };
    if amendment::pending(&t.state).is_some() {
        return decide_amendment(t, actor, verdict, who, ctx);
    }
    let session = &mut t.state.session;
    let h = session.harness;
    let Some(proposal) = t.state.latest.as_mut() else {
        return Err(Refusal::Stale(format!("This plan was superseded by v{latest_version}.")));
    };
    proposal.decided_by = Some(who.clone());
    proposal.decided_at = Some(ctx.now);
    let action = match verdict {
        Verdict::Approve | Verdict::ApproveWith(_) => {
            proposal.status = DecisionStatus::Approved;
            session.mode = Mode::Normal;
            session.approval = ApprovalState::Approved;
            // Execute (and show on the live card) what was approved, not a
            // list the agent rewrote while it waited.
            session.steps = proposal.approved_plan().steps.clone();
            amendment::lock(session, &proposal.approved_plan(), &proposal.plan);
            proposal.injection = Some(injection::with_review_terms(injection::approved(proposal, &who, h), proposal, h));
            "approve"
        }
        Verdict::Edit(plan) => {
            proposal.status = DecisionStatus::Edited;
            session.mode = Mode::Normal;
            session.approval = ApprovalState::Edited;
            session.steps = plan.steps.clone();
            amendment::lock(session, &plan, &proposal.plan);
            proposal.edited_plan = Some(plan);
            proposal.injection = Some(injection::with_review_terms(injection::edited(proposal, &who), proposal, h));
            "edit"
        }
        Verdict::Revise(feedback) => {
            proposal.status = DecisionStatus::Rejected;
            session.approval = ApprovalState::Rejected;
            session.rejection_count += 1;
            let feedback = crate::text::sanitize_for_injection(&feedback);
            proposal.feedback = Some(feedback.clone());
            proposal.injection = Some(injection::rejected(proposal, &who, &feedback, session.rejection_count, h));
            "revise"
        }
    };
    session.injection = proposal.injection.clone();
    finish_decision(t, actor, action, ctx);
    Ok(())
}

/// Count an approval or an edit towards the round's quorum
/// ([`review::record_approval`]). `Some((verdict, deciders))` when it
/// completes the quorum: the proposal carries the approved terms and the
/// caller decides it. `None` when it is one more on the way: the cards show
/// the progress, the proposal stays pending (its reminders and timeout go
/// on), and the approval is audited.
pub(super) fn count_approval(
    t: &mut Transition,
    actor: &Actor,
    verdict: Verdict,
    step_up: Option<&StepUp>,
    ctx: &Ctx,
) -> Result<Option<(Verdict, String)>, Refusal> {
    let (terms, edit, opening) = match verdict {
        Verdict::Approve => (Terms::default(), None, Opening::Approve),
        Verdict::ApproveWith(terms) => (terms, None, Opening::Approve),
        Verdict::Edit(plan) => (Terms::default(), Some(plan), Opening::Edit),
        Verdict::Revise(_) => return Err(Refusal::InvalidRequest("a request for changes is not an approval".to_string())),
    };
    let auth = authority::check(&t.state, actor, opening, &ctx.approvals)?;
    let Some(proposal) = t.state.latest.as_mut() else {
        return Err(Refusal::Stale(format!("This plan was superseded by v{}.", t.state.session.version)));
    };
    if let Some(credential) = authority::check_step_up(proposal, actor, step_up)? {
        let detail = format!("{} confirmed with passkey {credential} (plan {})", auth.by(), proposal.plan_hash);
        let pid = Some((proposal.approval_id, proposal.version));
        audit(t, actor, "step_up", pid, detail, ctx);
    }
    let Some(proposal) = t.state.latest.as_mut() else {
        return Err(Refusal::Stale(format!("This plan was superseded by v{}.", t.state.session.version)));
    };
    match review::record_approval(proposal, &auth, terms, edit, ctx.now)? {
        review::Counted::Reached { deciders, except, edit } => {
            proposal.review.excluded = except;
            t.opened_by = Some(auth);
            Ok(Some((edit.map(|plan| Verdict::Edit(*plan)).unwrap_or(Verdict::Approve), deciders)))
        }
        review::Counted::Waiting { detail } => {
            let (id, version) = (proposal.approval_id, proposal.version);
            t.effects.push(Effect::UpdateCards { approval_id: id });
            audit(t, actor, "approve", Some((id, version)), detail, ctx);
            Ok(None)
        }
    }
}

/// The effects every decision shares: timers cancelled, cards updated,
/// receipt appended, waiters woken, audit written. The latest proposal has
/// its fate already; its [`Receipt`] words the document line and the audit,
/// as it words the cards.
pub(super) fn finish_decision(t: &mut Transition, actor: &Actor, action: &str, ctx: &Ctx) {
    // Requests to release a session whose plan was just decided are moot.
    t.state.session.release_requests.clear();
    let Some(proposal) = t.state.latest.as_mut() else { return };
    let id = proposal.approval_id;
    let pid = Some((id, proposal.version));
    let receipt = Receipt::of(proposal);
    for timer in proposal.timers.drain(..) {
        t.effects.push(Effect::Cancel(timer));
    }
    t.effects.push(Effect::UpdateCards { approval_id: id });
    if let Some(receipt) = &receipt {
        t.effects.push(Effect::AppendReceipt { approval_id: id, text: receipt.document_line(ctx.now) });
    }
    t.effects.push(Effect::Wake);
    audit(t, actor, action, pid, receipt.map(|r| r.sentence()).unwrap_or_default(), ctx);
}

/// A person releases the session (`/plan off`, operator `release`): no plan
/// is required any more and the gate opens. A pending proposal is cancelled
/// on the way. The only command besides an approval that lets mutations run
/// under [`GateScope::ApprovedPlan`], so it is worded and audited as what it
/// is: "released by …".
pub(super) fn off(t: &mut Transition, actor: &Actor, ctx: &Ctx) -> Result<(), Refusal> {
    require_person(actor, "release a session from planning")?;
    let auth = authority::check(&t.state, actor, Opening::Release, &ctx.approvals)?;
    let session = &t.state.session;
    if session.mode == Mode::Normal && session.released_by.is_some() {
        return Err(Refusal::InvalidState("the session is already released: no plan is required".to_string()));
    }
    if session.mode == Mode::Normal && matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited) {
        return Err(Refusal::InvalidState(format!(
            "the session is executing approved plan v{}; there is nothing to release",
            session.version
        )));
    }
    let who = match authority::record_release(&mut t.state.session, &auth, ctx.now)? {
        authority::Released::Reached { by } => by,
        authority::Released::Waiting { detail } => {
            let latest = t.state.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending).map(|p| (p.approval_id, p.version));
            audit(t, actor, "release_requested", latest, detail, ctx);
            return Ok(());
        }
    };
    t.opened_by = Some(auth);
    let session = &mut t.state.session;
    session.mode = Mode::Normal;
    session.approval = ApprovalState::None;
    session.released_by = Some(who.clone());
    amendment::reset(session);
    // Nothing was approved: the steps must not survive into normal mode,
    // where hydration would present them as work to do.
    session.steps.clear();
    for timer in session.agent_timers.drain(..) {
        t.effects.push(Effect::Cancel(timer));
    }
    let text = injection::released(&who);
    session.injection = Some(text.clone());
    match t.state.latest.as_mut().filter(|p| p.status == DecisionStatus::Pending) {
        Some(proposal) => {
            proposal.status = DecisionStatus::Cancelled;
            proposal.released = true;
            proposal.decided_by = Some(who.clone());
            proposal.decided_at = Some(ctx.now);
            proposal.injection = Some(text);
            finish_decision(t, actor, "release", ctx);
        }
        None => {
            t.effects.push(Effect::Wake);
            audit(t, actor, "release", None, format!("released by {who}: no plan required"), ctx);
        }
    }
    Ok(())
}

/// Cancel means "do not do this": the pending plan is cancelled and the
/// session is [`Mode::Halted`], read-only until a new plan is approved or a
/// person releases it. The caller has checked the approval is pending.
pub(super) fn cancel(t: &mut Transition, actor: &Actor, ctx: &Ctx) {
    let who = actor.label();
    let session = &mut t.state.session;
    session.mode = Mode::Halted;
    session.approval = ApprovalState::Cancelled;
    session.released_by = None;
    session.steps.clear();
    amendment::reset(session);
    session.amendment_pending = None;
    for timer in session.agent_timers.drain(..) {
        t.effects.push(Effect::Cancel(timer));
    }
    let Some(proposal) = t.state.latest.as_mut() else { return };
    proposal.status = DecisionStatus::Cancelled;
    proposal.decided_by = Some(who.clone());
    proposal.decided_at = Some(ctx.now);
    let text = injection::cancelled(proposal, &who);
    proposal.injection = Some(text.clone());
    session.injection = Some(text);
    finish_decision(t, actor, "cancel", ctx);
}
