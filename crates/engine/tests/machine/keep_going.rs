//! An agent that tries to stop while the approved plan's steps are open is
//! told to go on, escalating, then let go; progress starts the count again.

use super::*;
use plangate_engine::keep_going::Answer;

/// Approved, and the decision delivered (the agent took its injection).
fn executing() -> (State, ApprovalId) {
    let (s, id) = approved();
    (ok(&s, &Actor::Agent, Command::TakeInjection, &ctx(2)).state, id)
}

fn stop() -> Command {
    Command::Stopping { last_message: Some("Done with step 1. Shall I continue?".into()), waited_secs: None }
}

fn progressed(state: &State, step: &str, status: StepStatus) -> State {
    let update = Command::UpdatePlan { steps: vec![StepUpdate::status(step, status)], merge: true, explanation: None };
    ok(state, &Actor::Agent, update, &ctx(3)).state
}

#[test]
fn a_stop_with_open_steps_is_answered_with_the_next_step_until_the_cycles_run_out() {
    let (s, _) = executing();
    let first = s.session.steps[0].step.clone();
    let second = s.session.steps[1].step.clone();
    let mut s = progressed(&s, &first, StepStatus::Completed);
    let mut answers = Vec::new();
    for _ in 0..7 {
        let t = ok(&s, &Actor::Agent, stop(), &ctx(4));
        answers.push(t.keep_going.clone().unwrap());
        s = t.state;
    }
    assert_eq!(s.session.stop_count, 7);
    for a in &answers[..6] {
        assert!(matches!(a, Answer::KeepGoing(text) if text.contains(&second)), "{a:?}");
    }
    assert!(matches!(&answers[6], Answer::Stop(why) if why.contains("stalled")), "{:?}", answers[6]);
    // Progress starts the count again.
    let s = progressed(&s, &second, StepStatus::InProgress);
    assert_eq!(s.session.stop_count, 0);
    let t = ok(&s, &Actor::Agent, stop(), &ctx(5));
    assert!(matches!(t.keep_going, Some(Answer::KeepGoing(_))));
    assert!(audit(&t)[0].4.contains("Shall I continue?"), "{:?}", audit(&t));
}

#[test]
fn a_halted_untracked_or_finished_plan_lets_the_agent_stop_at_once() {
    // Nobody reported a step: plangate cannot tell the next one.
    let (s, _) = executing();
    let t = ok(&s, &Actor::Agent, stop(), &ctx(4));
    assert!(matches!(t.keep_going, Some(Answer::Stop(_))) && !t.changed);
    // Pending approval: wait for the decision (below).
    let (pending, _) = pending();
    assert!(matches!(ok(&pending, &Actor::Agent, stop(), &ctx(4)).keep_going, Some(Answer::AwaitDecision { .. })));
    // Planning.
    let planning = in_plan();
    assert!(matches!(ok(&planning, &Actor::Agent, stop(), &ctx(4)).keep_going, Some(Answer::Stop(_))));
    // Every step closed.
    let (s, _) = executing();
    let steps: Vec<String> = s.session.steps.iter().map(|st| st.step.clone()).collect();
    let mut s = progressed(&s, &steps[0], StepStatus::Completed);
    for step in &steps[1..] {
        s = progressed(&s, step, StepStatus::Completed);
    }
    assert!(matches!(ok(&s, &Actor::Agent, stop(), &ctx(4)).keep_going, Some(Answer::Stop(_))));
    // A person cannot "stop" for the agent.
    let (s, _) = executing();
    assert!(matches!(refused(&s, &alice(), stop(), &ctx(4)), Refusal::Forbidden(_)));
}

#[test]
fn auto_continue_off_leaves_only_the_three_instructions() {
    let (s, _) = executing();
    let first = s.session.steps[0].step.clone();
    let mut s = progressed(&s, &first, StepStatus::InProgress);
    let mut off = ctx(4);
    off.approvals.auto_continue.enabled = false;
    let mut last = None;
    for _ in 0..4 {
        let t = ok(&s, &Actor::Agent, stop(), &off);
        last = t.keep_going.clone();
        s = t.state;
    }
    assert!(matches!(last, Some(Answer::Stop(_))), "{last:?}");
}

/// Stop until the count runs out; the state with the stalled card.
fn stalled() -> (State, String) {
    let (s, _) = executing();
    let first = s.session.steps[0].step.clone();
    let second = s.session.steps[1].step.clone();
    let mut s = progressed(&s, &first, StepStatus::Completed);
    for _ in 0..7 {
        s = ok(&s, &Actor::Agent, stop(), &ctx(4)).state;
    }
    (s, second)
}

fn answer(q: &plangate_engine::Question, with: &str) -> Command {
    Command::Answer { question_id: Some(q.question_id), answer: with.to_string() }
}

#[test]
fn a_stall_posts_a_card_whose_continue_sends_the_agent_back_to_the_open_step() {
    let (s, second) = stalled();
    let q = s.session.pending_question.clone().expect("the stalled card");
    assert!(q.stalled.is_some());
    assert_eq!(q.options, ["Continue", "Done"]);
    assert!(q.question.contains("stopped at step 2 of") && q.question.contains("Shall I continue?"), "{}", q.question);
    // Further stops are let go at once while people decide.
    let again = ok(&s, &Actor::Agent, stop(), &ctx(5));
    assert!(matches!(again.keep_going, Some(Answer::Stop(_))));
    // Only the two answers; an agent cannot answer it.
    assert!(matches!(refused(&s, &alice(), answer(&q, "yes"), &ctx(5)), Refusal::InvalidRequest(_)));
    assert!(matches!(refused(&s, &Actor::Agent, answer(&q, "Continue"), &ctx(5)), Refusal::Forbidden(_)));
    let t = ok(&s, &alice(), answer(&q, "Continue"), &ctx(6));
    let injection = t.state.session.injection.clone().unwrap();
    assert!(injection.starts_with("[PLAN_CONTINUE]") && injection.contains(&second), "{injection}");
    assert_eq!(t.state.session.stop_count, 0);
    assert!(t.state.session.pending_question.is_none());
    assert!(t.effects.iter().any(|e| matches!(e, Effect::UpdateQuestion { .. })));
    // The next stop is counted afresh: a reminder again.
    let next = ok(&t.state, &Actor::Agent, stop(), &ctx(7));
    assert!(matches!(next.keep_going, Some(Answer::KeepGoing(_))));
}

#[test]
fn done_on_a_stalled_card_cancels_the_open_steps_and_tells_the_agent() {
    let (s, _) = stalled();
    let q = s.session.pending_question.clone().unwrap();
    let t = ok(&s, &alice(), answer(&q, "Done"), &ctx(6));
    assert!(t.state.session.steps[1..].iter().all(|st| st.status == StepStatus::Cancelled));
    assert_eq!(t.state.session.steps[0].status, StepStatus::Completed);
    assert!(t.state.session.injection.as_deref().unwrap().starts_with("[PLAN_DONE]"));
    assert!(t.effects.iter().any(|e| matches!(e, Effect::AppendReceipt { .. })));
    assert!(audit(&t).iter().any(|a| a.4.contains("plan ended at step 2")), "{:?}", audit(&t));
    // Nothing is open: the agent may stop.
    assert!(matches!(ok(&t.state, &Actor::Agent, stop(), &ctx(7)).keep_going, Some(Answer::Stop(_))));
}

#[test]
fn progress_expires_the_stalled_card_and_an_agents_question_is_never_one() {
    let (s, second) = stalled();
    let t = ok(
        &s,
        &Actor::Agent,
        Command::UpdatePlan { steps: vec![StepUpdate::status(&second, StepStatus::InProgress)], merge: true, explanation: None },
        &ctx(6),
    );
    assert!(t.state.session.pending_question.is_none());
    assert_eq!(t.answered.as_ref().map(|q| q.status), Some(plangate_engine::QuestionStatus::Expired));
    // An agent's own question with the same options acts on nothing.
    let (s, _) = executing();
    let ask = Command::Ask { question: "Stalled?".into(), options: vec!["Continue".into(), "Done".into()], allow_freetext: false };
    let s = ok(&s, &Actor::Agent, ask, &ctx(4)).state;
    let q = s.session.pending_question.clone().unwrap();
    assert!(q.stalled.is_none());
    let t = ok(&s, &alice(), answer(&q, "Done"), &ctx(5));
    assert!(t.state.session.steps.iter().all(|st| st.status != StepStatus::Cancelled));
}

fn todo(content: &str, status: StepStatus) -> plangate_engine::keep_going::Todo {
    plangate_engine::keep_going::Todo { content: content.to_string(), status }
}

#[test]
fn the_harness_to_do_list_is_the_progress_where_no_step_is_reported() {
    let (s, _) = executing();
    let steps: Vec<String> = s.session.steps.iter().map(|st| st.step.clone()).collect();
    // Its own words: no plan step moves, but the list tells what is next.
    let own = vec![todo("Look at the code", StepStatus::Completed), todo("Write the backoff", StepStatus::Pending)];
    let t = ok(&s, &Actor::Agent, Command::Todos { todos: own.clone() }, &ctx(4));
    assert!(t.state.session.steps.iter().all(|st| st.status == StepStatus::Pending));
    let stop = ok(&t.state, &Actor::Agent, stop(), &ctx(5));
    assert!(
        matches!(&stop.keep_going, Some(Answer::KeepGoing(text)) if text.contains("to-do 2 of 2") && text.contains("Write the backoff")),
        "{:?}",
        stop.keep_going
    );
    // The same list again is no progress; a change is.
    let again = ok(&stop.state, &Actor::Agent, Command::Todos { todos: own }, &ctx(6));
    assert_eq!(again.state.session.stop_count, 1);
    // A to-do that repeats a step (numbered, other case) moves the step.
    let mirrored = vec![todo(&format!("1. {}.", steps[0].to_uppercase()), StepStatus::Completed), todo(&steps[1], StepStatus::InProgress)];
    let t = ok(&again.state, &Actor::Agent, Command::Todos { todos: mirrored }, &ctx(7));
    assert_eq!(t.state.session.stop_count, 0);
    assert_eq!(t.state.session.steps[0].status, StepStatus::Completed);
    assert_eq!(t.state.session.steps[1].status, StepStatus::InProgress);
    assert!(t.effects.iter().any(|e| matches!(e, Effect::UpdateCards { .. })));
    // Every step closed through the list: the plan is complete.
    let all: Vec<_> = steps.iter().map(|st| todo(st, StepStatus::Completed)).collect();
    let t = ok(&t.state, &Actor::Agent, Command::Todos { todos: all }, &ctx(8));
    assert!(audit(&t).iter().any(|a| a.4.contains("the plan is complete")), "{:?}", audit(&t));
}

#[test]
fn a_to_do_list_outside_an_executing_plan_is_not_kept_and_a_huge_one_is_cut() {
    let (s, _) = pending();
    let t = ok(&s, &Actor::Agent, Command::Todos { todos: vec![todo("x", StepStatus::Pending)] }, &ctx(4));
    assert!(!t.changed && t.state.session.todos.is_empty());
    let (s, _) = executing();
    let huge: Vec<_> = (0..500).map(|n| todo(&format!("{n} {}", "ü".repeat(10_000)), StepStatus::Pending)).collect();
    let t = ok(&s, &Actor::Agent, Command::Todos { todos: huge }, &ctx(4));
    assert_eq!(t.state.session.todos.len(), plangate_engine::keep_going::MAX_TODOS);
    assert!(t.state.session.todos.iter().all(|td| td.content.chars().count() <= plangate_engine::keep_going::MAX_TODO_CHARS));
    assert!(matches!(refused(&s, &alice(), Command::Todos { todos: Vec::new() }, &ctx(4)), Refusal::Forbidden(_)));
}

/// A stop while the plan awaits people: first the answer to wait for the
/// decision (nothing recorded); once the harness says it waited and gave
/// up, the proposal remembers when (the open card's Agent line), the cards
/// are updated and the audit says so, once; the same plan proposed again
/// (the agent back, waiting) takes the line away.
#[test]
fn a_stop_before_the_decision_waits_then_the_card_says_the_agent_left_until_it_asks_again() {
    let (s, id) = pending();
    let wait = ok(&s, &Actor::Agent, stop(), &ctx_at(T0 + MIN, 2));
    assert_eq!(wait.keep_going, Some(Answer::AwaitDecision { approval_id: id, version: 1 }));
    assert!(!wait.changed && wait.effects.is_empty() && audit(&wait).is_empty());

    let gave_up = Command::Stopping { last_message: None, waited_secs: Some(50) };
    let left = ok(&s, &Actor::Agent, gave_up.clone(), &ctx_at(T0 + 2 * MIN, 3));
    assert!(matches!(&left.keep_going, Some(Answer::Stop(why)) if why.contains("awaits approval")), "{:?}", left.keep_going);
    assert_eq!(latest(&left.state).agent_left_at, Some(Timestamp(T0 + 2 * MIN)));
    assert!(left.effects.contains(&Effect::UpdateCards { approval_id: id }), "{:?}", left.effects);
    assert!(audit(&left)[0].4.contains("stopped after waiting 50 s"), "{:?}", audit(&left));
    let text = plangate_engine::card::render_text(
        &plangate_engine::card::card(latest(&left.state), Some(&left.state), Timestamp(T0 + 3 * MIN)),
        false,
    );
    assert!(text.contains("The agent stopped waiting after 2 min; your decision reaches it when it resumes."), "{text}");

    let again = ok(&left.state, &Actor::Agent, gave_up, &ctx_at(T0 + 3 * MIN, 4));
    assert!(!again.changed && audit(&again).is_empty());

    let back = ok(&left.state, &Actor::Agent, propose_cmd(plan()), &ctx_at(T0 + 4 * MIN, 5));
    assert!(back.changed && latest(&back.state).agent_left_at.is_none());
    assert!(back.effects.contains(&Effect::UpdateCards { approval_id: id }));
    let text = plangate_engine::card::render_text(
        &plangate_engine::card::card(latest(&back.state), Some(&back.state), Timestamp(T0 + 5 * MIN)),
        false,
    );
    assert!(!text.contains("stopped waiting"), "{text}");
}

/// Decided between the harness's last wait and its stop, not yet
/// delivered: the stop is told to fetch the decision (it comes at once),
/// not to stop with it untold; once taken, stops are as before.
#[test]
fn a_decision_made_just_before_the_stop_is_fetched_not_dropped() {
    let (s, id) = approved();
    let t = ok(&s, &Actor::Agent, stop(), &ctx(4));
    assert_eq!(t.keep_going, Some(Answer::AwaitDecision { approval_id: id, version: 1 }));
    assert!(!t.changed);
    let (s, _) = executing();
    assert!(matches!(ok(&s, &Actor::Agent, stop(), &ctx(4)).keep_going, Some(Answer::Stop(_))));
}
