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
use crate::command::{StepUp, Terms};
use crate::diff;
use crate::harness::Harness;
use crate::ids::{ApprovalId, QuestionId};
use crate::injection;
use crate::plan::{self, Plan, PlanError, StepUpdate};
use crate::receipt::Receipt;
use crate::review::{self, ApprovalPolicy, Review};
use crate::subagents;

mod amend;
mod claim;
mod decide;
mod execution;
#[cfg(test)]
pub(crate) mod fixtures;
mod permissions;
mod questions;
mod timers;

use amend::*;
use claim::*;
use decide::*;
use execution::*;
use permissions::*;
use questions::*;
use timers::*;

pub use crate::command::{AuditEvent, Command, Ctx, Effect, Transition, Verdict};
pub use crate::model::{
    Actor, ApprovalState, DecisionStatus, GateScope, Mode, Proposal, Question, QuestionStatus, Session, State, Timer, TimerKind,
    TimerPolicy,
};
pub use crate::refusal::Refusal;

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
        permission: None,
        rule_added: None,
        keep_going: None,
    };
    let name = command.name();
    match command {
        Command::Enter { reason } => enter(&mut t, actor, reason, ctx)?,
        Command::UpdatePlan { steps, merge, explanation } => update_plan(&mut t, actor, steps, merge, explanation, ctx)?,
        Command::Propose { plan, markdown, requested_by, harness, project } => {
            propose(&mut t, actor, Proposed { plan, markdown, requested_by, harness, project }, ctx)?
        }
        Command::Decide { approval_id, verdict } => apply_verdict(&mut t, actor, approval_id, verdict, None, ctx)?,
        Command::DecideConfirmed { approval_id, verdict, step_up } => {
            apply_verdict(&mut t, actor, approval_id, verdict, Some(&step_up), ctx)?
        }
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
        Command::Claim { approval_id } => claim(&mut t, actor, approval_id, ctx)?,
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
        Command::AskPermission { tool, input, paths, rules } => ask_permission(&mut t, actor, tool, input, paths, &rules, ctx)?,
        Command::AnswerPermission { question_id, answer } => answer_permission(&mut t, actor, question_id, answer, ctx)?,
        Command::ExpirePermission { question_id } => expire_permission(&mut t, actor, question_id, ctx)?,
        Command::PermissionWaiting { question_id, until } => permission_waiting(&mut t, actor, question_id, until)?,
        Command::WidenScope { paths } => widen_scope(&mut t, actor, paths, ctx)?,
        Command::TakeInjection => {
            require_agent(actor)?;
            t.taken_injection = t.state.session.injection.take();
            t.changed = t.taken_injection.is_some();
        }
        Command::Stopping { last_message, waited_secs } => stopping(&mut t, actor, last_message, waited_secs, ctx)?,
        Command::Todos { todos } => harness_todos(&mut t, actor, todos, ctx)?,
        Command::Called { tool, shown, outcome } => called(&mut t, actor, &tool, &shown, outcome, ctx)?,
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
    // A receipt of what ran closes the record of the command that ended
    // the plan ("update_plan … the plan is complete", then "receipt").
    t.audit.sort_by_key(|a| a.action == execution::RECEIPT_ACTION);
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
    end_session_permissions(t, ctx);
    if amendment::executing(&t.state.session) {
        seal(t, actor, crate::ran::Ending::Replanned, ctx);
    }
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
    // Progress (a step's status changed) starts the count of stops again.
    let progressed = merged.iter().any(|m| t.state.session.steps.iter().all(|s| s.step != m.step || s.status != m.status));
    if progressed {
        t.state.session.stop_count = 0;
        // It went on by itself: the stalled card has nothing left to ask.
        if t.state.session.pending_question.as_ref().is_some_and(|q| q.stalled.is_some()) {
            questions::expire_stalled(t, "the agent went on by itself", ctx);
        }
    }
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
        executed_steps_changed(t, actor, all_closed, crate::ran::Ending::Completed, &mut detail, ctx);
    }
    audit(t, actor, "update_plan", latest, detail, ctx);
    Ok(())
}

/// The executing plan's step statuses changed: its cards show the live
/// list, and when every step is closed (and no amendment waits) the plan
/// is complete.
pub(super) fn executed_steps_changed(
    t: &mut Transition,
    actor: &Actor,
    all_closed: bool,
    ending: crate::ran::Ending,
    detail: &mut String,
    ctx: &Ctx,
) {
    if let Some(p) = &t.state.latest {
        t.effects.push(Effect::UpdateCards { approval_id: p.approval_id });
    }
    if all_closed && t.state.session.amendment_pending.is_none() {
        seal(t, actor, ending, ctx);
        t.state.session.approval = ApprovalState::None;
        amendment::reset(&mut t.state.session);
        end_session_permissions(t, ctx);
        detail.push_str("; every step is closed, the plan is complete");
    }
}

/// The timers of a new proposal (or amendment): approver reminders, the
/// escalation and the timeout, as the agent's policy asks.
fn proposal_timers(session: &Session, approval_id: ApprovalId, ctx: &Ctx) -> Vec<Timer> {
    let timer = |due, kind| Timer { due, session: session.key.clone(), approval_id, kind };
    let mut timers = Vec::new();
    for (i, offset) in ctx.timers.nudges_ms.iter().enumerate().take(u8::MAX as usize) {
        timers.push(timer(ctx.now.plus_ms(*offset), TimerKind::Nudge(i as u8 + 1)));
    }
    for (i, rung) in ctx.timers.ladder.iter().enumerate().take(u8::MAX as usize) {
        timers.push(timer(ctx.now.plus_ms(rung.after_ms), TimerKind::Level(i as u8 + 1)));
    }
    if let Some(timeout) = ctx.timers.timeout_ms {
        timers.push(timer(ctx.now.plus_ms(timeout), TimerKind::Timeout));
    }
    timers
}

/// What [`Command::Propose`] carries.
struct Proposed {
    plan: Plan,
    markdown: Option<String>,
    requested_by: Option<String>,
    harness: Harness,
    project: Option<crate::project::Project>,
}

fn propose(t: &mut Transition, actor: &Actor, proposed: Proposed, ctx: &Ctx) -> Result<(), Refusal> {
    let Proposed { plan, markdown, requested_by, harness, project } = proposed;
    require_agent(actor)?;
    let requested_by = requested_by.map(|r| review::validate_requester(&r)).transpose()?;
    let project = project.map(crate::project::Project::validate).transpose()?;
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
            // An agent that had stopped waiting for it waits again: its
            // card stops saying otherwise.
            let approval_id = latest.approval_id;
            let came_back = t.state.latest.as_mut().and_then(|p| p.agent_left_at.take()).is_some();
            t.changed = came_back;
            if came_back {
                t.effects.push(Effect::UpdateCards { approval_id });
            }
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
    let previous = t.state.latest.as_ref().map(|p| p.approval_id);
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
        project,
        previous,
        reminders_sent: 0,
        escalated: 0,
        claim: None,
        agent_left_at: None,
        ran: None,
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

/// The agent tries to stop ([`crate::keep_going`]): counted, and answered
/// with the next instruction, or let go.
fn stopping(t: &mut Transition, actor: &Actor, last_message: Option<String>, waited_secs: Option<u64>, ctx: &Ctx) -> Result<(), Refusal> {
    use crate::keep_going::{self, Answer};
    require_agent(actor)?;
    if let Some(answer) = stop_before_the_decision(t, actor, waited_secs, ctx) {
        t.keep_going = Some(answer);
        return Ok(());
    }
    if let Some(why) = keep_going::free_to_stop(&t.state.session) {
        t.changed = false;
        t.keep_going = Some(Answer::Stop(why.to_string()));
        return Ok(());
    }
    let n = t.state.session.stop_count.saturating_add(1);
    t.state.session.stop_count = n;
    let answer = keep_going::answer(&t.state.session, n, ctx.approvals.auto_continue.cycles(), t.state.session.harness);
    let said: String =
        last_message.map(|m| plangate_basics::text::cut_chars(&crate::text::sanitize_for_injection(&m), 200)).unwrap_or_default();
    let latest = t.state.latest.as_ref().map(|p| (p.approval_id, p.version));
    let detail = match &answer {
        Answer::KeepGoing(_) => format!("stop {n} with steps open: told to go on{}", quoted(&said)),
        Answer::Stop(why) => format!("{why}: let stop{}", quoted(&said)),
        Answer::AwaitDecision { .. } => format!("waits for the decision{}", quoted(&said)),
    };
    audit(t, actor, "stopping", latest, detail, ctx);
    // Stalled past every instruction and continue: people decide whether
    // it goes on (a card with Continue and Done in the plan's thread).
    if matches!(answer, Answer::Stop(_)) && t.state.session.pending_question.is_none() {
        post_stalled(t, actor, n, &said, ctx);
    }
    t.keep_going = Some(answer);
    Ok(())
}

/// A stop while the session's plan awaits people's decision: wait for it
/// (first ask), or, once the harness waited and gave up, record that the
/// agent left (the open card says a decision reaches it only when it
/// resumes) and let it stop. `None` when no plan is pending.
fn stop_before_the_decision(t: &mut Transition, actor: &Actor, waited_secs: Option<u64>, ctx: &Ctx) -> Option<crate::keep_going::Answer> {
    use crate::keep_going::Answer;
    // Decided between the harness's last wait and this stop, and not yet
    // delivered: the same answer, so the harness fetches the decision (at
    // once) instead of stopping with it untold.
    if let Some(decided) = t.state.latest.as_ref().filter(|p| p.status != DecisionStatus::Pending && p.amends.is_none()) {
        let undelivered = decided.injection.is_some() && t.state.session.injection == decided.injection;
        if undelivered && waited_secs.is_none() {
            t.changed = false;
            return Some(Answer::AwaitDecision { approval_id: decided.approval_id, version: decided.version });
        }
    }
    let latest = t.state.latest.as_mut().filter(|p| p.status == DecisionStatus::Pending && p.amends.is_none())?;
    let (approval_id, version) = (latest.approval_id, latest.version);
    let Some(waited) = waited_secs else {
        t.changed = false;
        return Some(Answer::AwaitDecision { approval_id, version });
    };
    if latest.agent_left_at.is_some() {
        t.changed = false;
        return Some(Answer::Stop("the plan awaits approval".to_string()));
    }
    latest.agent_left_at = Some(ctx.now);
    t.effects.push(Effect::UpdateCards { approval_id });
    let detail = format!("stopped after waiting {waited} s for the decision: the decision reaches it when it resumes");
    audit(t, actor, "stopping", Some((approval_id, version)), detail, ctx);
    Some(Answer::Stop("the plan awaits approval".to_string()))
}

/// The harness's own to-do list, seen while an approved plan executes:
/// kept (bounded, cut) as the plan's progress where the agent reports no
/// steps, a step whose text it repeats takes its status, and any change
/// counts as progress (the stops are counted afresh, a stalled card
/// expires). Outside an executing plan it is none of plangate's business.
fn harness_todos(t: &mut Transition, actor: &Actor, todos: Vec<crate::keep_going::Todo>, ctx: &Ctx) -> Result<(), Refusal> {
    use crate::keep_going::{Todo, MAX_TODOS, MAX_TODO_CHARS};
    require_agent(actor)?;
    let session = &mut t.state.session;
    let executing = session.mode == Mode::Normal && matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited);
    if !executing {
        t.changed = false;
        return Ok(());
    }
    let todos: Vec<Todo> = todos
        .into_iter()
        .take(MAX_TODOS)
        .map(|todo| Todo { content: plangate_basics::text::cut_chars(todo.content.trim(), MAX_TODO_CHARS), status: todo.status })
        .collect();
    let mut steps_moved = 0;
    for step in session.steps.iter_mut() {
        if let Some(todo) = todos.iter().find(|todo| crate::keep_going::same_work(&todo.content, &step.step)) {
            if step.status != todo.status {
                step.status = todo.status;
                steps_moved += 1;
            }
        }
    }
    let progressed = steps_moved > 0 || todos.iter().any(|todo| !session.todos.iter().any(|was| was == todo));
    if !progressed && todos.len() == session.todos.len() {
        t.changed = false;
        return Ok(());
    }
    let done = todos.iter().filter(|todo| todo.status == crate::plan::StepStatus::Completed).count();
    let mut detail = format!("to-do list: {done} of {} done; {steps_moved} plan step(s) updated", todos.len());
    session.todos = todos;
    let all_closed = !session.steps.is_empty() && session.steps.iter().all(|s| s.status.is_closed());
    if progressed {
        session.stop_count = 0;
        if session.pending_question.as_ref().is_some_and(|q| q.stalled.is_some()) {
            questions::expire_stalled(t, "the agent went on by itself", ctx);
        }
    }
    if steps_moved > 0 {
        executed_steps_changed(t, actor, all_closed, crate::ran::Ending::Completed, &mut detail, ctx);
    }
    let latest = t.state.latest.as_ref().map(|p| (p.approval_id, p.version));
    audit(t, actor, "todos", latest, detail, ctx);
    Ok(())
}

/// Post the stalled card: a question plangate asks the approvers, marked
/// so that only its answers act on the plan ([`questions::answer_stalled`]).
fn post_stalled(t: &mut Transition, actor: &Actor, stops: u32, said: &str, ctx: &Ctx) {
    let session = &t.state.session;
    let Some((step, _)) = crate::keep_going::next_open_step(session) else { return };
    let question_id = ApprovalId(ctx.random);
    t.state.session.pending_question = Some(Question {
        question_id,
        session: session.key.clone(),
        question: crate::keep_going::stalled_text(session, stops, said),
        options: vec![crate::keep_going::CONTINUE.to_string(), crate::keep_going::DONE.to_string()],
        allow_freetext: false,
        asked_at: ctx.now,
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
        permission: None,
        stalled: Some(crate::keep_going::Stalled { step }),
    });
    t.effects.push(Effect::PostQuestion { question_id });
    let latest = t.state.latest.as_ref().map(|p| (p.approval_id, p.version));
    audit(t, actor, "stalled", latest, format!("{question_id}: stopped at step {} of {}", step + 1, t.state.session.steps.len()), ctx);
}

fn quoted(said: &str) -> String {
    if said.is_empty() {
        String::new()
    } else {
        format!(" (it said: \"{said}\")")
    }
}
