//! The approval state machine: [`apply`]`(state, actor, command, ctx)`.
//!
//! One function serves every channel. The shell loads a session's [`State`],
//! calls [`apply`], commits the returned state, records and timers in one
//! transaction, and only then performs the [`Effect`]s. Nothing here does I/O.
//!
//! The types it works on live in [`crate::model`] (the state) and
//! [`crate::command`] (commands, effects, refusals) and are re-exported here.
//! The whole transition table is `docs/STATE_MACHINE.md`.

use crate::amendment::{self, Amendment};
use crate::authority::{self, Opening};
use crate::card::MAX_OPTIONS;
use crate::command::Terms;
use crate::diff;
use crate::harness::Harness;
use crate::ids::{ApprovalId, QuestionId};
use crate::injection;
use crate::plan::{self, Plan, PlanError, StepUpdate};
use crate::receipt::Receipt;
use crate::review::{self, Review};
use crate::subagents;

pub use crate::command::{AuditEvent, Command, Ctx, Effect, Refusal, Transition, Verdict};
pub use crate::model::{
    Actor, ApprovalState, DecisionStatus, GateScope, Mode, Proposal, Question, QuestionStatus, Session, State, Timer, TimerKind,
    TimerPolicy,
};

/// Apply one command. Pure: the same inputs always give the same output.
///
/// The short table (mode/approval → mode/approval; the full one, with every
/// effect and refusal, is `docs/STATE_MACHINE.md`):
///
/// | from | command (actor) | to |
/// |---|---|---|
/// | any | enter (agent, person) | plan/none; already plan: unchanged |
/// | plan/*, halted/* | propose (agent) | plan/pending, version+1, new id; a pending one is superseded |
/// | normal/* | propose (agent) | refused: enter plan mode first |
/// | plan/pending | approve / edit (person) | normal/approved, normal/edited |
/// | plan/pending | revise (person) | plan/rejected, rejection_count+1 |
/// | plan/pending | timeout (scheduler) | plan/timed_out |
/// | plan/pending | cancel (person) | halted/cancelled: read-only until a new approval or a release |
/// | any but executing or released | off = release (person, [`authority::check`], counted under a quorum) | normal/none, `released_by` set; a pending one is cancelled |
/// | normal/approved, normal/edited | update_plan closing every step (agent) | normal/none |
/// | any | a decision on a stale or decided id | unchanged, refused with who won |
/// | any | subagent open/close (agent), clear (person), expiry (scheduler) | unchanged; open runs block propose, approve, edit |
///
/// An agent can never decide, cancel, release or switch auto mode; only the
/// scheduler fires timers.
pub fn apply(state: &State, actor: &Actor, command: Command, ctx: &Ctx) -> Result<Transition, Refusal> {
    let mut t = Transition {
        state: state.clone(),
        retired: None,
        answered: None,
        effects: Vec::new(),
        audit: Vec::new(),
        taken_injection: None,
        changed: true,
        opened_by: None,
    };
    let name = command.name();
    match command {
        Command::Enter { reason } => enter(&mut t, actor, reason, ctx)?,
        Command::UpdatePlan { steps, merge, explanation } => update_plan(&mut t, actor, steps, merge, explanation, ctx)?,
        Command::Propose { plan, markdown, requested_by, harness } => propose(&mut t, actor, plan, markdown, requested_by, harness, ctx)?,
        Command::Decide { approval_id, verdict } => apply_verdict(&mut t, actor, approval_id, verdict, ctx)?,
        Command::Off => off(&mut t, actor, ctx)?,
        Command::CancelApproval(approval_id) => {
            require_person(actor, "cancel a plan")?;
            check_decidable(&t.state, approval_id)?;
            cancel(&mut t, actor, ctx)
        }
        Command::SetAuto(on) => {
            require_person(actor, "change auto mode")?;
            if on {
                t.opened_by = Some(authority::check(&t.state, actor, Opening::Auto, &ctx.approvals)?);
            }
            t.state.session.auto_approve = on;
            let detail = if on { "auto-approve on: later proposals approve themselves" } else { "auto-approve off" };
            audit(&mut t, actor, name, None, detail.to_string(), ctx);
        }
        Command::RegisterSubagent(run_id) => {
            require_agent(actor)?;
            subagents::check_run_id(&run_id)?;
            if let Some(detail) = subagents::open(&mut t, &run_id, ctx.now, ctx.timers.subagent_expiry_ms) {
                audit(&mut t, actor, name, None, detail, ctx);
            }
        }
        Command::UnregisterSubagent(run_id) => {
            require_agent(actor)?;
            t.changed = subagents::close(&mut t, &run_id);
            if t.changed {
                audit(&mut t, actor, name, None, run_id, ctx);
            }
        }
        Command::ClearSubagents { run_id } => {
            require_person(actor, "clear subagent runs")?;
            let detail = subagents::clear(&mut t, actor, run_id.as_deref())?;
            let latest = t.state.latest.as_ref().map(|p| (p.approval_id, p.version));
            audit(&mut t, actor, name, latest, detail, ctx);
        }
        Command::Ask { question, options, allow_freetext } => ask(&mut t, actor, question, options, allow_freetext, ctx)?,
        Command::Answer { question_id, answer } => answer_question(&mut t, actor, question_id, answer, ctx)?,
        Command::WidenScope { paths } => widen_scope(&mut t, actor, paths, ctx)?,
        Command::TakeInjection => {
            require_agent(actor)?;
            t.taken_injection = t.state.session.injection.take();
            t.changed = t.taken_injection.is_some();
        }
        Command::TimerFired(timer) => {
            if !matches!(actor, Actor::Scheduler) {
                return Err(Refusal::Forbidden("only the scheduler fires timers".to_string()));
            }
            timer_fired(&mut t, timer, ctx)
        }
    }
    // The structural half of the one check: whatever the command, a
    // transition that lets mutations run where they could not must carry
    // the authorization `authority::check` gave. A path that forgets it
    // fails closed here.
    if !authority::holds_open(&state.session) && authority::holds_open(&t.state.session) && t.opened_by.is_none() {
        return Err(Refusal::Forbidden(format!(
            "{name} would open the gate without the approval rules' check; refused, nothing changed (a bug in plangate: please report it)"
        )));
    }
    if t.changed {
        t.state.session.updated_at = ctx.now;
    }
    Ok(t)
}

fn require_agent(actor: &Actor) -> Result<(), Refusal> {
    if actor.is_agent() {
        Ok(())
    } else {
        Err(Refusal::Forbidden("only the agent itself can do this".to_string()))
    }
}

fn require_person(actor: &Actor, what: &str) -> Result<(), Refusal> {
    if actor.is_person() {
        Ok(())
    } else {
        Err(Refusal::Forbidden(format!("only a human approver can {what}; an agent can never {what}")))
    }
}

fn audit(t: &mut Transition, actor: &Actor, action: &str, proposal: Option<(ApprovalId, u32)>, detail: String, ctx: &Ctx) {
    t.audit.push(AuditEvent {
        at: ctx.now,
        agent: t.state.session.key.agent.clone(),
        session_id: t.state.session.key.session_id.clone(),
        actor: actor.label(),
        action: action.to_string(),
        approval_id: proposal.map(|p| p.0),
        version: proposal.map(|p| p.1),
        detail,
    });
}

fn enter(t: &mut Transition, actor: &Actor, reason: Option<String>, ctx: &Ctx) -> Result<(), Refusal> {
    if matches!(actor, Actor::Scheduler) {
        return Err(Refusal::Forbidden("the scheduler cannot enter plan mode".to_string()));
    }
    if t.state.session.mode == Mode::Plan {
        t.changed = false;
        return Ok(());
    }
    withdraw_amendment(t, ctx);
    let session = &mut t.state.session;
    session.mode = Mode::Plan;
    session.approval = ApprovalState::None;
    amendment::reset(session);
    session.rejection_count = 0;
    session.released_by = None;
    session.release_requests.clear();
    // A new planning round: an untaken injection about the previous plan
    // ("approved, plan mode is off") would now be false.
    session.injection = None;
    // Remind the agent (not the humans) if it plans without proposing.
    for (i, offset) in ctx.timers.nudges_ms.iter().enumerate().take(u8::MAX as usize) {
        let kind = TimerKind::AgentNudge(i as u8 + 1);
        let timer = Timer { due: ctx.now.plus_ms(*offset), session: session.key.clone(), approval_id: ApprovalId(ctx.random), kind };
        session.agent_timers.push(timer.clone());
        t.effects.push(Effect::Schedule(timer));
    }
    let detail = reason.map(|r| crate::text::sanitize_for_injection(&r)).unwrap_or_default();
    audit(t, actor, "enter", None, detail, ctx);
    Ok(())
}

fn update_plan(
    t: &mut Transition,
    actor: &Actor,
    steps: Vec<StepUpdate>,
    merge: bool,
    explanation: Option<String>,
    ctx: &Ctx,
) -> Result<(), Refusal> {
    require_agent(actor)?;
    let merged = plan::update_steps(&t.state.session.steps, steps, merge)?;
    let executing = amendment::executing(&t.state.session);
    // While executing, the approved steps are locked and new ones wait for
    // people: an approval is not a key to whatever the agent writes next.
    let update = if executing {
        let flagged = &t.state.session.flagged_steps;
        amendment::check(&amendment::reference(&t.state), flagged, amendment::pending(&t.state), &merged)?
    } else {
        amendment::Update::Within
    };
    t.state.session.steps = merged;
    let session = &t.state.session;
    let mut detail = format!("{} step(s){}", session.steps.len(), if merge { ", merged" } else { "" });
    if let Some(e) = explanation {
        detail.push_str(": ");
        detail.push_str(&crate::text::sanitize_for_injection(&e));
    }
    let latest = t.state.latest.as_ref().map(|p| (p.approval_id, p.version));
    // Auto-close only while executing an approved plan. In plan mode it would
    // let the agent open its own gate by marking steps done, so there the
    // step list is recorded and the session stays in plan mode.
    let all_closed = !session.steps.is_empty() && session.steps.iter().all(|s| s.status.is_closed());
    if let amendment::Update::Amend(added) = update {
        audit(t, actor, "update_plan", latest, detail, ctx);
        return open_amendment(t, actor, added, Vec::new(), ctx);
    }
    if executing {
        if let Some((id, _)) = latest {
            t.effects.push(Effect::UpdateCards { approval_id: id });
        }
        if all_closed && t.state.session.amendment_pending.is_none() {
            t.state.session.approval = ApprovalState::None;
            amendment::reset(&mut t.state.session);
            detail.push_str("; every step is closed, the plan is complete");
        }
    }
    audit(t, actor, "update_plan", latest, detail, ctx);
    Ok(())
}

/// The timers of a new proposal (or amendment): approver reminders, the
/// escalation and the timeout, as the agent's policy asks.
fn proposal_timers(session: &Session, approval_id: ApprovalId, ctx: &Ctx) -> Vec<Timer> {
    let timer = |due, kind| Timer { due, session: session.key.clone(), approval_id, kind };
    let mut timers = Vec::new();
    for (i, offset) in ctx.timers.nudges_ms.iter().enumerate().take(u8::MAX as usize) {
        timers.push(timer(ctx.now.plus_ms(*offset), TimerKind::Nudge(i as u8 + 1)));
    }
    if let Some(escalate) = ctx.timers.escalate_ms {
        timers.push(timer(ctx.now.plus_ms(escalate), TimerKind::Escalate));
    }
    if let Some(timeout) = ctx.timers.timeout_ms {
        timers.push(timer(ctx.now.plus_ms(timeout), TimerKind::Timeout));
    }
    timers
}

/// Steps added while executing: a new version of the plan, the approved
/// steps plus `added`, that waits for people like a proposal (own approval
/// id, card, reminders, timeout, quorum) while the session keeps executing
/// what was approved — with the gate shut until it is decided
/// ([`crate::amendment`]). A pending amendment the agent extends again is
/// superseded by the new one, which asks for every added step.
fn open_amendment(t: &mut Transition, actor: &Actor, added: Vec<plan::Step>, widen: Vec<String>, ctx: &Ctx) -> Result<(), Refusal> {
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
        review: Review::new(&ctx.approvals, requested_by, Some(changes)),
        amends: Some(Amendment { of_version, added, flagged: false, widen: widen.clone() }),
    };
    let auto = authority::auto_approval(&t.state.session, &ctx.approvals);
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
fn widen_scope(t: &mut Transition, actor: &Actor, paths: Vec<String>, ctx: &Ctx) -> Result<(), Refusal> {
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
fn withdraw_amendment(t: &mut Transition, ctx: &Ctx) {
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

fn propose(
    t: &mut Transition,
    actor: &Actor,
    plan: Plan,
    markdown: Option<String>,
    requested_by: Option<String>,
    harness: Harness,
    ctx: &Ctx,
) -> Result<(), Refusal> {
    require_agent(actor)?;
    let requested_by = requested_by.map(|r| review::validate_requester(&r)).transpose()?;
    if let Some(md) = &markdown {
        let chars = md.chars().count();
        if chars > plan::MAX_MARKDOWN_CHARS {
            return Err(PlanError::MarkdownTooLong { chars }.into());
        }
    }
    plan::validate_plan(&plan)?;
    let session = &t.state.session;
    if session.mode == Mode::Normal {
        return Err(Refusal::InvalidState(
            "the session is not in plan mode; enter plan mode (POST /v1/sessions/{id}/enter) before proposing".to_string(),
        ));
    }
    if !session.open_subagents.is_empty() {
        return Err(Refusal::SubagentsOpen(session.open_subagents.keys().cloned().collect()));
    }
    let hash = plan::plan_hash(&plan, markdown.as_deref());
    if let Some(latest) = &t.state.latest {
        if latest.status == DecisionStatus::Pending && latest.plan_hash == hash {
            // Hooks retry: the same text while pending is the same proposal.
            t.changed = false;
            return Ok(());
        }
    }
    let approval_id = ApprovalId(ctx.random);
    if t.state.latest.as_ref().map(|p| p.approval_id) == Some(approval_id) {
        return Err(Refusal::InvalidState("approval id collision; retry".to_string()));
    }
    let version = t.state.session.version + 1;
    // What changed since the version before (the plan it proposed, which is
    // what its approvers read).
    let changes = t.state.latest.as_ref().map(|previous| diff::diff(&previous.plan, &plan, previous.version));
    for timer in t.state.session.agent_timers.drain(..) {
        t.effects.push(Effect::Cancel(timer));
    }
    retire_pending(t, actor, version, ctx);
    let mut proposal = Proposal {
        approval_id,
        session: t.state.session.key.clone(),
        version,
        plan,
        markdown,
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
        review: Review::new(&ctx.approvals, requested_by, changes),
        amends: None,
    };
    let auto = authority::auto_approval(&t.state.session, &ctx.approvals);
    let session = &mut t.state.session;
    // Proposing again after a cancel resumes planning: still read-only.
    session.mode = Mode::Plan;
    session.harness = harness;
    session.released_by = None;
    session.release_requests.clear();
    session.version = version;
    session.steps = proposal.plan.steps.clone();
    amendment::reset(session);
    session.amendment_pending = None;
    session.latest_approval = Some(approval_id);
    t.effects.push(Effect::WriteDocument { approval_id });
    let pid = Some((approval_id, version));
    let title = proposal.plan.title.clone();
    // Auto mode is one person's standing "yes": it cannot stand in for a
    // quorum, nor for someone other than the requester.
    if let Some(auto) = auto {
        proposal.status = DecisionStatus::Approved;
        proposal.decided_by = Some("auto".to_string());
        proposal.decided_at = Some(ctx.now);
        let text = injection::approved(&proposal, "auto", session.harness);
        proposal.injection = Some(text.clone());
        session.injection = Some(text);
        session.mode = Mode::Normal;
        session.approval = ApprovalState::Approved;
        amendment::lock(session, &proposal.plan, &proposal.plan);
        t.effects.push(Effect::PostCards { approval_id });
        if let Some(receipt) = Receipt::of(&proposal) {
            t.effects.push(Effect::AppendReceipt { approval_id, text: receipt.document_line(ctx.now) });
        }
        t.effects.push(Effect::Wake);
        t.state.latest = Some(proposal);
        t.opened_by = Some(auto);
        audit(t, actor, "propose", pid, format!("{title:?} ({hash})"), ctx);
        audit(t, actor, "approve", pid, "auto mode: approved without a human decision".to_string(), ctx);
        if let Some(last) = t.audit.last_mut() {
            last.actor = "auto".to_string();
        }
        return Ok(());
    }
    session.approval = ApprovalState::Pending;
    proposal.timers = proposal_timers(session, approval_id, ctx);
    t.effects.extend(proposal.timers.iter().cloned().map(Effect::Schedule));
    t.effects.push(Effect::PostCards { approval_id });
    t.effects.push(Effect::Wake);
    t.state.latest = Some(proposal);
    audit(t, actor, "propose", pid, format!("{title:?} ({hash})"), ctx);
    Ok(())
}

/// The message for a click or call on an approval that is no longer
/// decidable: who decided it, or which version replaced it.
pub fn describe_stale(target: &Proposal, latest_version: u32) -> String {
    let v = target.version;
    let by = target.decided_by.as_deref().unwrap_or("someone");
    let at = target.decided_at.map(|t| format!(" at {} UTC", t.clock())).unwrap_or_default();
    match target.status {
        DecisionStatus::Pending if latest_version > v => format!("This plan was superseded by v{latest_version}."),
        DecisionStatus::Pending => format!("Plan v{v} is still pending."),
        DecisionStatus::Superseded => {
            format!("This plan was superseded by v{}.", target.superseded_by.unwrap_or(latest_version))
        }
        DecisionStatus::Approved => format!("Plan v{v} was already approved by {by}{at}."),
        DecisionStatus::Edited => format!("Plan v{v} was already approved with edits by {by}{at}."),
        DecisionStatus::Rejected => format!("Changes to plan v{v} were already requested by {by}{at}."),
        DecisionStatus::TimedOut => format!("Plan v{v} already timed out{at}."),
        DecisionStatus::Cancelled => format!("Plan v{v} was already cancelled by {by}{at}."),
    }
}

/// Refuse unless `approval_id` is the session's latest proposal and still pending.
fn check_decidable(state: &State, approval_id: ApprovalId) -> Result<(), Refusal> {
    let latest_version = state.session.version;
    let Some(proposal) = state.latest.as_ref().filter(|p| p.approval_id == approval_id) else {
        return Err(Refusal::Stale(format!("This plan was superseded by v{latest_version}.")));
    };
    if proposal.status != DecisionStatus::Pending {
        return Err(Refusal::Stale(describe_stale(proposal, latest_version)));
    }
    Ok(())
}

fn apply_verdict(t: &mut Transition, actor: &Actor, approval_id: ApprovalId, verdict: Verdict, ctx: &Ctx) -> Result<(), Refusal> {
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
        approving => match count_approval(t, actor, approving, ctx)? {
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

/// The decision that completes an amendment's round (or a request for
/// changes to it). The session goes on executing either way: approved, the
/// added steps join the approved reference and the approval binds the
/// amended plan's hash; edited, the person's list is the new reference;
/// rejected, the added steps are dropped and the feedback reaches the agent
/// like a revise.
fn decide_amendment(t: &mut Transition, actor: &Actor, verdict: Verdict, who: String, ctx: &Ctx) -> Result<(), Refusal> {
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

/// Count an approval or an edit towards the round's quorum
/// ([`review::record_approval`]). `Some((verdict, deciders))` when it
/// completes the quorum: the proposal carries the approved terms and the
/// caller decides it. `None` when it is one more on the way: the cards show
/// the progress, the proposal stays pending (its reminders and timeout go
/// on), and the approval is audited.
fn count_approval(t: &mut Transition, actor: &Actor, verdict: Verdict, ctx: &Ctx) -> Result<Option<(Verdict, String)>, Refusal> {
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
fn finish_decision(t: &mut Transition, actor: &Actor, action: &str, ctx: &Ctx) {
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
fn off(t: &mut Transition, actor: &Actor, ctx: &Ctx) -> Result<(), Refusal> {
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
fn cancel(t: &mut Transition, actor: &Actor, ctx: &Ctx) {
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

fn ask(t: &mut Transition, actor: &Actor, question: String, options: Vec<String>, allow_freetext: bool, ctx: &Ctx) -> Result<(), Refusal> {
    require_agent(actor)?;
    if let Some(q) = &t.state.session.pending_question {
        return Err(Refusal::InvalidState(format!("question {} is still waiting for an answer; one question at a time", q.question_id)));
    }
    let question = question.trim().to_string();
    if question.is_empty() || question.chars().count() > 2000 {
        return Err(Refusal::InvalidRequest("question must be 1–2000 characters".to_string()));
    }
    if options.len() > MAX_OPTIONS {
        return Err(Refusal::InvalidRequest(format!("at most {MAX_OPTIONS} options fit on a phone; use allow_freetext for more")));
    }
    let options: Vec<String> = options.into_iter().map(|o| o.trim().to_string()).collect();
    if options.iter().any(|o| o.is_empty() || o.chars().count() > 100) {
        return Err(Refusal::InvalidRequest("every option must be 1–100 characters".to_string()));
    }
    if options.is_empty() && !allow_freetext {
        return Err(Refusal::InvalidRequest("give options, or allow_freetext: true, or both".to_string()));
    }
    let question_id = ApprovalId(ctx.random);
    t.state.session.pending_question = Some(Question {
        question_id,
        session: t.state.session.key.clone(),
        question: question.clone(),
        options,
        allow_freetext,
        asked_at: ctx.now,
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
    });
    t.effects.push(Effect::PostQuestion { question_id });
    audit(t, actor, "ask", None, format!("{question_id}: {question}"), ctx);
    Ok(())
}

fn answer_question(t: &mut Transition, actor: &Actor, question_id: Option<QuestionId>, answer: String, ctx: &Ctx) -> Result<(), Refusal> {
    require_person(actor, "answer the agent's question")?;
    let Some(question) = t.state.session.pending_question.as_ref() else {
        return Err(Refusal::Stale("There is no open question; it may have been answered already.".to_string()));
    };
    if question_id.is_some_and(|id| id != question.question_id) {
        return Err(Refusal::Stale("That question was already answered or replaced.".to_string()));
    }
    let answer = answer.trim().to_string();
    if answer.is_empty() {
        return Err(Refusal::InvalidRequest("the answer is empty".to_string()));
    }
    if !question.allow_freetext && !question.options.contains(&answer) {
        return Err(Refusal::InvalidRequest(format!("choose one of: {}", question.options.join(" | "))));
    }
    let Some(mut question) = t.state.session.pending_question.take() else {
        return Err(Refusal::Stale("There is no open question.".to_string()));
    };
    question.status = QuestionStatus::Answered;
    question.answer = Some(answer.clone());
    question.answered_by = Some(actor.label());
    question.answered_at = Some(ctx.now);
    let id = question.question_id;
    // The answer also waits as text for the agent, in case no waiting call
    // takes it (the agent gave up waiting): after any untaken decision text,
    // in place of a reminder to propose, which an answer makes moot.
    let text = injection::answered(&question.question, &answer, &actor.label(), t.state.session.harness);
    let session = &mut t.state.session;
    session.injection = match session.injection.take() {
        Some(earlier) if !earlier.starts_with("[PLAN_NUDGE]") => Some(format!("{earlier}\n\n{text}")),
        _ => Some(text),
    };
    t.answered = Some(question);
    t.effects.push(Effect::UpdateQuestion { question_id: id });
    t.effects.push(Effect::Wake);
    audit(t, actor, "answer", None, format!("{id}: {answer}"), ctx);
    Ok(())
}

fn timer_fired(t: &mut Transition, timer: Timer, ctx: &Ctx) {
    if timer.kind == TimerKind::SubagentExpiry {
        if let Some(detail) = subagents::expiry_fired(t, &timer, ctx.now, ctx.timers.subagent_expiry_ms) {
            let latest = t.state.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending).map(|p| (p.approval_id, p.version));
            audit(t, &Actor::Scheduler, "subagent_expired", latest, detail, ctx);
        }
        return;
    }
    if let TimerKind::AgentNudge(number) = timer.kind {
        let session = &mut t.state.session;
        if session.mode != Mode::Plan || !session.agent_timers.contains(&timer) {
            t.changed = false;
            return;
        }
        session.agent_timers.retain(|x| *x != timer);
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
    match timer.kind {
        TimerKind::Nudge(number) => {
            t.effects.push(Effect::Nudge { approval_id: id, number });
            let pid = Some((id, proposal.version));
            audit(t, &Actor::Scheduler, "nudge", pid, format!("reminder {number}"), ctx);
        }
        TimerKind::Escalate => {
            t.effects.push(Effect::Escalate { approval_id: id });
            let pid = Some((id, proposal.version));
            let waited = crate::ids::humanize_ms(ctx.now.0 - proposal.created_at.0);
            audit(t, &Actor::Scheduler, "escalate", pid, format!("no decision after {waited}"), ctx);
        }
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

/// Take the latest proposal out of the state; a pending one is superseded by
/// `version` (its timers cancelled, its cards updated, its receipt written,
/// audited) and handed to the shell to store as retired. A decided one is on
/// record already and is left as it is.
fn retire_pending(t: &mut Transition, actor: &Actor, version: u32, ctx: &Ctx) {
    if let Some(mut old) = t.state.latest.take() {
        if old.status == DecisionStatus::Pending {
            old.status = DecisionStatus::Superseded;
            old.superseded_by = Some(version);
            old.decided_at = Some(ctx.now);
            for timer in old.timers.drain(..) {
                t.effects.push(Effect::Cancel(timer));
            }
            t.effects.push(Effect::UpdateCards { approval_id: old.approval_id });
            if let Some(receipt) = Receipt::of(&old) {
                t.effects.push(Effect::AppendReceipt { approval_id: old.approval_id, text: receipt.document_line(ctx.now) });
            }
            let who = Some((old.approval_id, old.version));
            audit(t, actor, "superseded", who, format!("superseded by v{version}"), ctx);
            t.retired = Some(old);
        }
    }
}
