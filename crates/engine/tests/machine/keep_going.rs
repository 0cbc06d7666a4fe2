//! An agent that tries to stop while the approved plan's steps are open is
//! told to go on, escalating, then let go; progress starts the count again.

use super::*;
use plangate_engine::keep_going::Answer;

fn stop() -> Command {
    Command::Stopping { last_message: Some("Done with step 1. Shall I continue?".into()) }
}

fn progressed(state: &State, step: &str, status: StepStatus) -> State {
    let update = Command::UpdatePlan { steps: vec![StepUpdate::status(step, status)], merge: true, explanation: None };
    ok(state, &Actor::Agent, update, &ctx(3)).state
}

#[test]
fn a_stop_with_open_steps_is_answered_with_the_next_step_until_the_cycles_run_out() {
    let (s, _) = approved();
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
    let (s, _) = approved();
    let t = ok(&s, &Actor::Agent, stop(), &ctx(4));
    assert!(matches!(t.keep_going, Some(Answer::Stop(_))) && !t.changed);
    // Planning, or pending approval.
    let (pending, _) = pending();
    assert!(matches!(ok(&pending, &Actor::Agent, stop(), &ctx(4)).keep_going, Some(Answer::Stop(_))));
    // Every step closed.
    let (s, _) = approved();
    let steps: Vec<String> = s.session.steps.iter().map(|st| st.step.clone()).collect();
    let mut s = progressed(&s, &steps[0], StepStatus::Completed);
    for step in &steps[1..] {
        s = progressed(&s, step, StepStatus::Completed);
    }
    assert!(matches!(ok(&s, &Actor::Agent, stop(), &ctx(4)).keep_going, Some(Answer::Stop(_))));
    // A person cannot "stop" for the agent.
    let (s, _) = approved();
    assert!(matches!(refused(&s, &alice(), stop(), &ctx(4)), Refusal::Forbidden(_)));
}

#[test]
fn auto_continue_off_leaves_only_the_three_instructions() {
    let (s, _) = approved();
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
