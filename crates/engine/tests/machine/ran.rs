//! What ran under an approval: every call of the executing plan is counted
//! against its step, and the plan's end seals the receipt on its card.

use super::*;
use plangate_engine::ran::{CallOutcome, Ending};

fn call(shown: &str, outcome: CallOutcome) -> Command {
    Command::Called { tool: "Bash".into(), shown: shown.into(), outcome }
}

fn progressed(state: &State, step: &str, status: StepStatus) -> Transition {
    let update = Command::UpdatePlan { steps: vec![StepUpdate::status(step, status)], merge: true, explanation: None };
    ok(state, &Actor::Agent, update, &ctx(3))
}

#[test]
fn fifty_calls_over_three_steps_seal_into_a_receipt_of_exactly_those() {
    let (mut s, id) = approved();
    let texts: Vec<String> = s.session.steps.iter().map(|st| st.step.clone()).collect();
    for (n, text) in texts.iter().enumerate() {
        s = progressed(&s, text, StepStatus::InProgress).state;
        let calls = [20, 15, 15][n];
        for i in 0..calls {
            let outcome = if n == 1 && i < 2 { CallOutcome::OutOfScope } else { CallOutcome::Allowed };
            s = ok(&s, &Actor::Agent, call(&format!("cmd {n}.{i}"), outcome), &ctx(4)).state;
        }
        if n < 2 {
            s = progressed(&s, text, StepStatus::Completed).state;
        }
    }
    assert!(latest(&s).ran.is_none(), "sealed only at the end");
    let t = progressed(&s, &texts[2], StepStatus::Completed);
    let ran = t.state.latest.as_ref().unwrap().ran.clone().expect("sealed at completion");
    assert!(t.state.session.execution.is_none());
    assert_eq!(ran.ending, Ending::Completed);
    assert_eq!(ran.execution.approvals, vec![id]);
    let per_step: Vec<(usize, u32, u32)> = ran.execution.steps.iter().map(|s| (s.number, s.calls, s.out_of_scope)).collect();
    assert_eq!(per_step, vec![(1, 20, 0), (2, 15, 2), (3, 15, 0)]);
    assert_eq!(ran.execution.attempts.iter().map(|a| a.shown.as_str()).collect::<Vec<_>>(), ["cmd 1.0", "cmd 1.1"]);
    assert_eq!(ran.summary(), "50 calls, 0 asked, 2 denied (2 outside the scope) · completed");
    assert!(ran.intact());
    assert!(t.effects.contains(&Effect::UpdateCards { approval_id: id }));
    assert!(t.effects.iter().any(|e| matches!(e, Effect::AppendReceipt { text, .. } if text.contains(&ran.hash))));
    let receipt = audit(&t).into_iter().find(|a| a.1 == "receipt").expect("audited");
    assert!(receipt.4.contains(&ran.hash) && receipt.4.starts_with("50 calls"), "{receipt:?}");
    // The card shows it under its own heading.
    let card = plangate_engine::card::card(t.state.latest.as_ref().unwrap(), Some(&t.state), Timestamp(10));
    let text = plangate_engine::card::render_text(&card, false);
    assert!(text.contains("Ran\n• 50 calls, 0 asked, 2 denied (2 outside the scope) · completed"), "{text}");
    assert!(text.contains("• step 2: 15 calls (2 outside the scope)"), "{text}");
}

#[test]
fn nothing_is_counted_outside_an_execution_and_an_agent_alone_reports_calls() {
    let planning = in_plan();
    let t = ok(&planning, &Actor::Agent, call("rm -rf /", CallOutcome::Denied), &ctx(4));
    assert!(!t.changed && t.state.session.execution.is_none());
    let (s, _) = approved();
    assert!(matches!(refused(&s, &alice(), call("ls", CallOutcome::Allowed), &ctx(4)), Refusal::Forbidden(_)));
}

#[test]
fn planning_again_seals_what_ran_and_the_next_plan_counts_afresh() {
    let (s, first) = approved();
    let s = ok(&s, &Actor::Agent, call("cargo test", CallOutcome::Allowed), &ctx(4)).state;
    let t = ok(&s, &Actor::Agent, Command::Enter { reason: None }, &ctx(5));
    let ran = t.state.latest.as_ref().unwrap().ran.clone().expect("sealed on re-planning");
    assert_eq!((ran.ending, ran.execution.totals().calls, ran.execution.approvals), (Ending::Replanned, 1, vec![first]));
    assert!(t.state.session.execution.is_none());
}

#[test]
fn done_on_the_stalled_card_ends_the_plan_with_its_receipt_and_closes_the_gate() {
    let (s, _) = approved();
    let s = ok(&s, &Actor::Agent, Command::TakeInjection, &ctx(2)).state;
    let first = s.session.steps[0].step.clone();
    let mut s = ok(&s, &Actor::Agent, call("cargo build", CallOutcome::Allowed), &ctx(4)).state;
    s = progressed(&s, &first, StepStatus::Completed).state;
    for _ in 0..7 {
        s = ok(&s, &Actor::Agent, Command::Stopping { last_message: None, waited_secs: None }, &ctx(4)).state;
    }
    let q = s.session.pending_question.clone().expect("stalled card");
    let t = ok(&s, &alice(), Command::Answer { question_id: Some(q.question_id), answer: "Done".into() }, &ctx(6));
    let ran = t.state.latest.as_ref().unwrap().ran.clone().expect("sealed by Done");
    assert!(matches!(&ran.ending, Ending::EndedBy { by } if by.contains("alice")), "{:?}", ran.ending);
    assert_eq!(ran.execution.totals().calls, 1);
    assert!(!plangate_engine::amendment::executing(&t.state.session), "the plan ended: the gate closes");
}
