//! Questions the agent asks people, and their answers.

use super::*;

pub(super) fn ask(
    t: &mut Transition,
    actor: &Actor,
    question: String,
    options: Vec<String>,
    allow_freetext: bool,
    ctx: &Ctx,
) -> Result<(), Refusal> {
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
        permission: None,
        stalled: None,
    });
    t.effects.push(Effect::PostQuestion { question_id });
    audit(t, actor, "ask", None, format!("{question_id}: {question}"), ctx);
    Ok(())
}

pub(super) fn answer_question(
    t: &mut Transition,
    actor: &Actor,
    question_id: Option<QuestionId>,
    answer: String,
    ctx: &Ctx,
) -> Result<(), Refusal> {
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
    if let Some(stalled) = question.stalled {
        return answer_stalled(t, actor, question, stalled, &answer, ctx);
    }
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

/// A person answered the stalled card ([`crate::keep_going`]): Continue
/// leaves the agent an instruction to go on with the open step (taken by
/// the Claude Code channel, the next prompt or session start, or a waiting
/// call) and counts its stops afresh; Done cancels the open steps, which
/// ends the plan, and tells the agent so.
fn answer_stalled(
    t: &mut Transition,
    actor: &Actor,
    mut question: Question,
    stalled: crate::keep_going::Stalled,
    answer: &str,
    ctx: &Ctx,
) -> Result<(), Refusal> {
    use crate::keep_going::{CONTINUE, DONE};
    if !matches!(t.state.session.approval, ApprovalState::Approved | ApprovalState::Edited) || t.state.session.mode != Mode::Normal {
        t.state.session.pending_question = Some(question);
        expire_stalled(t, "the plan is no longer executing", ctx);
        return Err(Refusal::Stale("The plan is no longer executing; nothing to continue or end.".to_string()));
    }
    let who = actor.label();
    let id = question.question_id;
    let (text, detail) = if answer == CONTINUE {
        t.state.session.stop_count = 0;
        (crate::keep_going::continue_text(&t.state.session, &who), format!("{id}: continue from step {}", stalled.step + 1))
    } else if answer == DONE {
        let mut cancelled = Vec::new();
        for (n, step) in t.state.session.steps.iter_mut().enumerate() {
            if matches!(step.status, crate::plan::StepStatus::Pending | crate::plan::StepStatus::InProgress) {
                step.status = crate::plan::StepStatus::Cancelled;
                cancelled.push(n);
            }
        }
        // The harness's own list ends with it.
        for todo in t.state.session.todos.iter_mut() {
            if matches!(todo.status, crate::plan::StepStatus::Pending | crate::plan::StepStatus::InProgress) {
                todo.status = crate::plan::StepStatus::Cancelled;
            }
        }
        let list: Vec<String> = cancelled.iter().map(|n| (n + 1).to_string()).collect();
        let mut detail = format!("{id}: plan ended at step {}; cancelled step(s) {}", stalled.step + 1, list.join(", "));
        // The plan ends here: its receipt is sealed and the gate closes
        // as after a completion.
        let ending = crate::ran::Ending::EndedBy { by: who.clone() };
        super::executed_steps_changed(t, actor, true, ending, &mut detail, ctx);
        if let Some(p) = t.state.latest.as_ref() {
            let line = format!("- {} — {who} ended the plan here; step(s) {} cancelled", ctx.now.rfc3339(), list.join(", "));
            t.effects.push(Effect::AppendReceipt { approval_id: p.approval_id, text: line });
        }
        (crate::keep_going::done_text(&cancelled, &who), detail)
    } else {
        t.state.session.pending_question = Some(question);
        return Err(Refusal::InvalidRequest(format!("choose one of: {CONTINUE} | {DONE}")));
    };
    question.status = QuestionStatus::Answered;
    question.answer = Some(answer.to_string());
    question.answered_by = Some(who);
    question.answered_at = Some(ctx.now);
    // In place of any untaken text: the agent reported steps of the
    // approved plan, so it has had the decision; this is what it needs now.
    t.state.session.injection = Some(text);
    t.answered = Some(question);
    t.effects.push(Effect::UpdateQuestion { question_id: id });
    t.effects.push(Effect::Wake);
    let latest = t.state.latest.as_ref().map(|p| (p.approval_id, p.version));
    audit(t, actor, "stalled_answer", latest, detail, ctx);
    Ok(())
}

/// The stalled card has nothing left to ask: it expires, and its cards
/// say why.
pub(super) fn expire_stalled(t: &mut Transition, why: &str, ctx: &Ctx) {
    let Some(mut q) = t.state.session.pending_question.take_if(|q| q.stalled.is_some()) else { return };
    q.status = QuestionStatus::Expired;
    q.answered_at = Some(ctx.now);
    q.answer = Some(why.to_string());
    t.effects.push(Effect::UpdateQuestion { question_id: q.question_id });
    t.answered = Some(q);
}
