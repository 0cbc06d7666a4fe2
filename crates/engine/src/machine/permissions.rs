//! Permission prompts ([`crate::permission`]): the agent's hook asks, the
//! rules answer or a person does.

use super::*;
use crate::permission::{self, Call, Grade, Judged, PermissionAnswer, PermissionAsk, PermissionOutcome, Rule, Rules, StoredRule, WideVote};
use crate::scope::Target;
use plangate_gate::classes::RiskClass;
use serde_json::Value;

/// How many rules "for this session" a session keeps; an older one goes
/// first (each is one exact command or file, so a long session adds many).
const MAX_SESSION_RULES: usize = 200;
/// How many bytes of rules a session keeps (exact commands may be long:
/// 200 of 100 KiB would make every load of the session slow).
const MAX_SESSION_RULE_BYTES: usize = 1024 * 1024;
/// The longest deny reason that reaches the model.
const MAX_REASON_CHARS: usize = 1000;

/// The hook asks about a call the harness would ask its user about.
pub(super) fn ask_permission(
    t: &mut Transition,
    actor: &Actor,
    tool: String,
    input: Value,
    paths: Option<Vec<Target>>,
    rules: &Rules,
    ctx: &Ctx,
) -> Result<(), Refusal> {
    require_agent(actor)?;
    if tool.is_empty() || tool.chars().count() > 200 || tool.chars().any(char::is_control) {
        return Err(Refusal::InvalidRequest("tool must be 1–200 characters without control characters".to_string()));
    }
    let whole = serde_json::to_string_pretty(&input).unwrap_or_default();
    if whole.len() > permission::MAX_INPUT_BYTES {
        return Err(Refusal::InvalidRequest(format!(
            "the tool input is {} bytes; at most {} can be shown to a person, so answer this one at the terminal",
            whole.len(),
            permission::MAX_INPUT_BYTES
        )));
    }
    let call = Call { tool: &tool, input: &input, paths: paths.as_deref() };
    let judged = permission::judge(&call, rules, &t.state.session.session_rules);
    match &judged {
        Judged::Deny(rule) => audit(t, actor, "permission", None, format!("{tool} denied by the rule {rule}"), ctx),
        Judged::Allow { rule, from } => audit(t, actor, "permission", None, format!("{tool} allowed by {from}: {rule}"), ctx),
        Judged::Ask => {
            let rule = Rule::covering(&call);
            let (shown, shown_whole) = permission::render(&tool, &input);
            let risks: Vec<String> = plangate_gate::risk::risks(&tool, &input).into_iter().map(str::to_string).collect();
            if let Some(mut earlier) = t.state.session.pending_permission.take() {
                // The harness asks one thing at a time: a new request means
                // the earlier one's hook stopped waiting.
                expire(&mut earlier, "a newer permission request replaced it", ctx);
                t.state.session.permission_settled_at = Some(ctx.now);
                t.effects.push(Effect::UpdateQuestion { question_id: earlier.question_id });
                t.answered = Some(earlier);
            }
            let question_id = ApprovalId(ctx.random);
            let ask = PermissionAsk {
                tool: tool.clone(),
                input: whole,
                shown,
                shown_whole,
                risks,
                rule,
                outcome: None,
                wide_votes: Vec::new(),
                waiting_until: Some(ctx.now),
                required: rules.required,
            };
            let question = Question {
                question_id,
                session: t.state.session.key.clone(),
                // Which project: the one the session's latest plan named.
                question: card_text(
                    &ask,
                    question_id,
                    t.state.latest.as_ref().and_then(|p| p.project.as_ref()),
                    &t.state.outside_the_plan(&tool, &input),
                ),
                options: permission::OPTIONS.iter().map(|o| o.to_string()).collect(),
                allow_freetext: true,
                asked_at: ctx.now,
                status: QuestionStatus::Pending,
                answer: None,
                answered_by: None,
                answered_at: None,
                permission: Some(ask),
                stalled: None,
            };
            t.state.session.pending_permission = Some(question);
            t.effects.push(Effect::PostQuestion { question_id });
            audit(t, actor, "ask_permission", None, format!("{question_id}: {tool}"), ctx);
        }
    }
    t.permission = Some(judged);
    Ok(())
}

/// The text a permission card shows under its title: what it risks, the
/// input as a person reads it, and what the wider answers grant.
fn card_text(ask: &PermissionAsk, id: QuestionId, project: Option<&crate::Project>, undeclared: &[RiskClass]) -> String {
    let mut out = String::new();
    if let Some(project) = project {
        out.push_str(&format!("📁 {}\n", project.label()));
    }
    if !undeclared.is_empty() {
        let what: Vec<String> = undeclared.iter().map(|c| format!("{} ({})", c.says(), c.id())).collect();
        out.push_str(&format!("🚧 Not in the approved plan: {}\n", what.join(" · ")));
    }
    if !ask.risks.is_empty() {
        out.push_str(&format!("⚠ {}\n", ask.risks.join(" · ")));
    }
    if ask.required > 1 {
        out.push_str(&format!("👥 The operator's policy asks {} approvers to allow this\n", ask.required));
    }
    out.push_str(&ask.shown);
    if !ask.shown_whole {
        out.push_str("\n(cut here: the whole input is attached)");
    }
    out.push_str(&format!("\n\n\"For this session\" and \"Always\" allow {}.", ask.rule.described()));
    if !matches!(ask.rule.what(), permission::Match::Exact(_) | permission::Match::Input(_)) {
        out.push_str(&format!(" Rule: {}", ask.rule.shown()));
    }
    out.push_str(&format!("\nTyped: /plan allow #{} once|session|always · /plan deny #{} [reason]", id.short(), id.short()));
    out
}

/// The distinct approvers a wider grant needs: the session's latest
/// plan's quorum, or the configured one.
fn quorum(t: &Transition, ctx: &Ctx) -> usize {
    let plan = t.state.latest.as_ref().map_or(1, |p| p.review.required);
    plan.max(ctx.approvals.required).max(1) as usize
}

fn expire(q: &mut Question, why: &str, ctx: &Ctx) {
    q.status = QuestionStatus::Expired;
    q.answered_at = Some(ctx.now);
    if let Some(ask) = q.permission.as_mut() {
        ask.outcome = Some(PermissionOutcome::Expired { why: why.to_string() });
    }
}

/// A person answers the waiting prompt.
pub(super) fn answer_permission(
    t: &mut Transition,
    actor: &Actor,
    question_id: Option<QuestionId>,
    answer: PermissionAnswer,
    ctx: &Ctx,
) -> Result<(), Refusal> {
    require_person(actor, "answer a permission request")?;
    let Some(pending) = t.state.session.pending_permission.as_ref() else {
        return Err(Refusal::Stale(
            "No permission request is waiting: it was answered, or the agent stopped waiting and asks at its terminal.".to_string(),
        ));
    };
    if question_id.is_some_and(|id| id != pending.question_id) {
        return Err(Refusal::Stale("That permission request was already answered, or replaced by a newer one.".to_string()));
    }
    let Some(identity) = authority::identity(actor) else { return Err(Refusal::Forbidden("only a person can answer".to_string())) };
    if !ctx.approvals.approvers.admits(actor) {
        return Err(Refusal::Forbidden(format!(
            "You ({identity}) are not on the approver list of any destination of {}'s plans, so you cannot answer its permission requests.",
            t.state.session.key.agent
        )));
    }
    let requester = t.state.latest.as_ref().and_then(|p| p.review.requested_by.clone()).or_else(|| ctx.approvals.requested_by.clone());
    let forbid_self = ctx.approvals.forbid_self || t.state.latest.as_ref().is_some_and(|p| p.review.forbid_self);
    if matches!(answer, PermissionAnswer::Allow { .. }) && forbid_self && requester.as_deref() == Some(identity.as_str()) {
        return Err(Refusal::Forbidden(format!(
            "You asked for this work ({identity}), and separation of duties (approvals.forbid_self) means someone else must allow it. You can still deny it."
        )));
    }
    let answer = match answer {
        PermissionAnswer::Deny { reason: Some(r) } => {
            let r: String = injection_safe(&r).chars().take(MAX_REASON_CHARS).collect();
            PermissionAnswer::Deny { reason: (!r.is_empty()).then_some(r) }
        }
        other => other,
    };
    let policy_required = pending.permission.as_ref().map_or(0, |a| a.required) as usize;
    let required = quorum(t, ctx).max(policy_required);
    let Some(mut q) = t.state.session.pending_permission.take() else {
        return Err(Refusal::Stale("No permission request is waiting.".to_string()));
    };
    let id = q.question_id;
    // Nobody has waited for it for a while: the harness took the answer at
    // its terminal (and withdrew the hook), or the agent moved on. The tap
    // expires it; nothing is allowed or denied for no one.
    let unheard =
        q.permission.as_ref().and_then(|a| a.waiting_until).is_some_and(|until| ctx.now.0 > until.plus_ms(permission::HEARD_GRACE_MS).0);
    if unheard {
        let tool = q.permission.as_ref().map(|a| a.tool.clone()).unwrap_or_default();
        expire(&mut q, "nobody waited for an answer any more: it was answered at the terminal, or the agent moved on", ctx);
        t.state.session.permission_settled_at = Some(ctx.now);
        t.effects.push(Effect::UpdateQuestion { question_id: id });
        t.answered = Some(q);
        audit(t, actor, "permission", None, format!("{id}: {tool} expired: nobody waited any more when {identity} answered"), ctx);
        return Ok(());
    }
    let answer = match answer {
        // Under a quorum one person may allow this call, or deny it; a
        // grant that outlives the call (for the session, always) needs as
        // many distinct approvers as a plan does, and grants the narrowest
        // grade they asked for. A call the operator's policy routes to a
        // quorum (`required`) needs that many for "once" too.
        PermissionAnswer::Allow { grade } if required > 1 && (grade != Grade::Once || policy_required > 1) => {
            let Some(ask) = q.permission.as_mut() else { return Err(Refusal::InvalidState("not a permission request".to_string())) };
            if ask.wide_votes.iter().any(|v| v.by == identity) {
                let have = ask.wide_votes.len();
                t.state.session.pending_permission = Some(q);
                let or_once = if policy_required > 1 { "" } else { ", or allow it once" };
                return Err(Refusal::AlreadyApproved(format!(
                    "You already asked to allow this ({have} of {required} approvers); someone else must agree{or_once}."
                )));
            }
            ask.wide_votes.push(WideVote { by: identity.clone(), grade });
            let have = ask.wide_votes.len();
            if have < required {
                let tool = ask.tool.clone();
                t.state.session.pending_permission = Some(q);
                t.effects.push(Effect::UpdateQuestion { question_id: id });
                audit(
                    t,
                    actor,
                    "permission",
                    None,
                    format!("{id}: {tool} — {identity} asks to allow {} ({have} of {required} approvers)", grade_said(grade)),
                    ctx,
                );
                return Ok(());
            }
            let narrowest =
                [Grade::Once, Grade::Session].into_iter().find(|g| ask.wide_votes.iter().any(|v| v.grade == *g)).unwrap_or(Grade::Always);
            PermissionAnswer::Allow { grade: narrowest }
        }
        other => other,
    };
    let Some(ask) = q.permission.as_mut() else { return Err(Refusal::InvalidState("not a permission request".to_string())) };
    let mut created = String::new();
    match &answer {
        PermissionAnswer::Allow { grade: Grade::Session } => {
            let rules = &mut t.state.session.session_rules;
            if !rules.contains(&ask.rule) {
                rules.push(ask.rule.clone());
                let bytes = |rules: &[Rule]| rules.iter().map(Rule::size).sum::<usize>();
                while rules.len() > 1 && (rules.len() > MAX_SESSION_RULES || bytes(rules) > MAX_SESSION_RULE_BYTES) {
                    rules.remove(0);
                }
            }
            created = format!("; session rule {}", ask.rule.shown());
        }
        PermissionAnswer::Allow { grade: Grade::Always } => {
            t.rule_added = Some(StoredRule {
                agent: t.state.session.key.agent.clone(),
                id: hex::encode(&ctx.random[..8]),
                rule: ask.rule.clone(),
                created_by: identity.clone(),
                created_at: ctx.now,
                prompt: Some(id),
            });
            created = format!("; always rule {}", ask.rule.shown());
        }
        _ => {}
    }
    let tool = ask.tool.clone();
    ask.outcome = Some(PermissionOutcome::Answered { answer: answer.clone() });
    t.state.session.permission_settled_at = Some(ctx.now);
    q.status = QuestionStatus::Answered;
    q.answer = Some(answer.said());
    q.answered_by = Some(actor.label());
    q.answered_at = Some(ctx.now);
    t.answered = Some(q);
    t.effects.push(Effect::UpdateQuestion { question_id: id });
    t.effects.push(Effect::Wake);
    if let Some(execution) = t.state.session.execution.as_mut() {
        execution.answered(format!("{tool}: {} by {identity}", answer.said()));
    }
    audit(t, actor, "permission", None, format!("{id}: {tool} {} by {identity}{created}", answer.said()), ctx);
    Ok(())
}

fn grade_said(grade: Grade) -> &'static str {
    match grade {
        Grade::Once => "once",
        Grade::Session => "for this session",
        Grade::Always => "always",
    }
}

fn injection_safe(text: &str) -> String {
    crate::text::sanitize_for_injection(text)
}

/// The hook stopped waiting (the harness shows its own dialog now), or the
/// session moved on: the waiting prompt expires. Nothing happens when it
/// is no longer the waiting one.
pub(super) fn expire_permission(t: &mut Transition, actor: &Actor, question_id: QuestionId, ctx: &Ctx) -> Result<(), Refusal> {
    if actor.is_person() {
        return Err(Refusal::Forbidden("a person answers a permission request; only the agent's hook lets it expire".to_string()));
    }
    match t.state.session.pending_permission.take() {
        Some(mut q) if q.question_id == question_id => {
            expire(&mut q, "nobody answered in time; the agent asked at its terminal", ctx);
            t.state.session.permission_settled_at = Some(ctx.now);
            t.answered = Some(q);
            t.effects.push(Effect::UpdateQuestion { question_id });
            audit(t, actor, "permission", None, format!("{question_id}: expired, handed back to the terminal"), ctx);
        }
        other => {
            t.state.session.pending_permission = other;
            t.changed = false;
        }
    }
    Ok(())
}

/// The session's plan is replaced or done, or it plans again: what was
/// allowed "for this session" ends, and a waiting prompt expires.
pub(super) fn end_session_permissions(t: &mut Transition, ctx: &Ctx) {
    t.state.session.session_rules.clear();
    if let Some(mut q) = t.state.session.pending_permission.take() {
        expire(&mut q, "the session's plan changed", ctx);
        t.state.session.permission_settled_at = Some(ctx.now);
        t.effects.push(Effect::UpdateQuestion { question_id: q.question_id });
        t.answered = Some(q);
    }
}

/// The agent's hook waits for the request until `until` (a long-poll).
pub(super) fn permission_waiting(
    t: &mut Transition,
    actor: &Actor,
    question_id: QuestionId,
    until: crate::Timestamp,
) -> Result<(), Refusal> {
    require_agent(actor)?;
    let ask = t.state.session.pending_permission.as_mut().filter(|q| q.question_id == question_id).and_then(|q| q.permission.as_mut());
    match ask {
        Some(ask) if ask.waiting_until.is_none_or(|at| at.0 < until.0) => ask.waiting_until = Some(until),
        _ => t.changed = false,
    }
    Ok(())
}
