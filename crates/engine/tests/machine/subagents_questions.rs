//! Subagents, auto-close on update, questions and take_injection.

use super::*;

#[test]
fn subagents_register_and_unregister() {
    let s = in_plan();
    let t = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx(0));
    assert!(t.changed);
    assert!(t.effects.is_empty());
    assert_eq!(audit(&t), vec![("agent".into(), "subagent_open".into(), None, None, "run-1".into())]);
    let s = t.state;
    // Opening it again is a heartbeat: heard of now, not audited, no card.
    let t = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx_at(T0 + MIN, 0));
    assert!(t.changed && t.audit.is_empty() && t.effects.is_empty());
    assert_eq!(
        t.state.session.open_subagents["run-1"],
        SubagentRun { opened_at: Timestamp(T0), seen_at: Timestamp(T0 + MIN), expires_at: None }
    );
    assert!(matches!(refused(&s, &Actor::Agent, Command::RegisterSubagent(" ".into()), &ctx(0)), Refusal::InvalidRequest(_)));
    assert!(matches!(refused(&s, &Actor::Agent, Command::RegisterSubagent("a\nb".into()), &ctx(0)), Refusal::InvalidRequest(_)));
    assert!(matches!(refused(&s, &alice(), Command::RegisterSubagent("run-2".into()), &ctx(0)), Refusal::Forbidden(_)));
    assert!(matches!(refused(&s, &alice(), Command::UnregisterSubagent("run-1".into()), &ctx(0)), Refusal::Forbidden(_)));

    let t = ok(&s, &Actor::Agent, Command::UnregisterSubagent("run-1".into()), &ctx(0));
    assert!(t.state.session.open_subagents.is_empty());
    assert_eq!(audit(&t), vec![("agent".into(), "subagent_close".into(), None, None, "run-1".into())]);
    let t = ok(&t.state, &Actor::Agent, Command::UnregisterSubagent("run-1".into()), &ctx(0));
    assert!(!t.changed && t.audit.is_empty());
}

#[test]
fn subagents_open_block_propose_approve_and_edit_but_not_revise() {
    let s = ok(&in_plan(), &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx(0)).state;
    let r = refused(&s, &Actor::Agent, propose_cmd(plan()), &ctx(1));
    assert_eq!(r, Refusal::SubagentsOpen(vec!["run-1".into()]));

    let (s, id) = pending();
    let s = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx(0)).state;
    assert!(matches!(refused(&s, &alice(), decide(id, Verdict::Approve), &ctx(9)), Refusal::SubagentsOpen(_)));
    assert!(matches!(refused(&s, &alice(), decide(id, Verdict::Edit(edited_plan())), &ctx(9)), Refusal::SubagentsOpen(_)));
    assert!(matches!(refused(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx(2)), Refusal::SubagentsOpen(_)));
    ok(&s, &alice(), revise(id, "later"), &ctx(9));
    // Closing the run unblocks the approval.
    let s = ok(&s, &Actor::Agent, Command::UnregisterSubagent("run-1".into()), &ctx(0)).state;
    assert_eq!(ok(&s, &alice(), decide(id, Verdict::Approve), &ctx(9)).state.session.approval, ApprovalState::Approved);
}

// ----------------------------------------------- row: auto-close on update

#[test]
fn row_auto_close_when_every_step_of_the_approved_plan_is_closed() {
    let (s, id) = approved();
    let mut done: Vec<Step> = plan().steps.into_iter().map(|s| Step { status: StepStatus::Completed, ..s }).collect();
    done[1].status = StepStatus::Cancelled;
    let t = ok(&s, &Actor::Agent, Command::UpdatePlan { steps: updates(done), merge: false, explanation: None }, &ctx(0));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Normal, ApprovalState::None));
    let receipt = t.state.latest.as_ref().and_then(|p| p.ran.as_ref()).expect("what ran is sealed").document_line();
    assert_eq!(
        t.effects,
        vec![Effect::UpdateCards { approval_id: id }, Effect::AppendReceipt { approval_id: id, text: receipt }],
        "no timers are left to cancel"
    );
    let hash = t.state.latest.as_ref().and_then(|p| p.ran.as_ref()).map(|r| r.hash.clone()).unwrap_or_default();
    assert_eq!(
        audit(&t),
        vec![
            ("agent".into(), "update_plan".into(), Some(id), Some(1), "3 step(s); every step is closed, the plan is complete".into()),
            ("agent".into(), "receipt".into(), Some(id), Some(1), format!("0 calls, 0 asked, 0 denied · completed ({hash})")),
        ]
    );
    let unsealed = t.state.latest.as_ref().map(|p| Proposal { ran: None, ..p.clone() });
    assert_eq!(unsealed, s.latest, "the decision itself stays approved");
    // Once closed, further updates no longer touch the card.
    let t = ok(&t.state, &Actor::Agent, Command::UpdatePlan { steps: updates(steps(&["next"])), merge: false, explanation: None }, &ctx(0));
    assert!(t.effects.is_empty());
}

#[test]
fn row_auto_close_after_an_edit() {
    let (s, id) = pending();
    let s = ok(&s, &alice(), decide(id, Verdict::Edit(edited_plan())), &ctx(9)).state;
    let done = edited_plan().steps.into_iter().map(|s| Step { status: StepStatus::Cancelled, ..s }).collect();
    let t = ok(&s, &Actor::Agent, Command::UpdatePlan { steps: updates(done), merge: false, explanation: None }, &ctx(0));
    assert_eq!(t.state.session.approval, ApprovalState::None);
}

#[test]
fn row_auto_close_not_while_steps_remain_open() {
    let (s, _) = approved();
    let update = vec![with_status("Read the client", StepStatus::Completed)];
    let t = ok(&s, &Actor::Agent, Command::UpdatePlan { steps: updates(update), merge: true, explanation: None }, &ctx(0));
    assert_eq!(t.state.session.approval, ApprovalState::Approved);
}

#[test]
fn deviation_completing_steps_in_plan_mode_never_leaves_plan_mode() {
    // The founding design had plan/* + all steps closed -> normal/none. The
    // engine deliberately does not do that in plan mode (docs/STATE_MACHINE.md,
    // "Auto-close"): the agent would open its own gate by marking steps done.
    let all_done = || Command::UpdatePlan {
        steps: updates(vec![with_status("a", StepStatus::Completed), with_status("b", StepStatus::Cancelled)]),
        merge: false,
        explanation: None,
    };
    let t = ok(&in_plan(), &Actor::Agent, all_done(), &ctx(0));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::None));
    assert!(t.effects.is_empty());

    let (s, id) = pending();
    let t = ok(&s, &Actor::Agent, all_done(), &ctx(0));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::Pending));
    assert_eq!(latest(&t.state).status, DecisionStatus::Pending);
    assert!(t.effects.is_empty());
    assert!(!t.effects.iter().any(|e| matches!(e, Effect::Cancel(_))));

    let s = ok(&s, &alice(), revise(id, "no"), &ctx(9)).state;
    let t = ok(&s, &Actor::Agent, all_done(), &ctx(0));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::Rejected));
}

// -------------------------------------------------------------- questions

#[test]
fn questions_ask_posts_one_question() {
    let t = ok(&in_plan(), &Actor::Agent, ask(&["v1", " v2 "], false), &ctx(0x42));
    let qid = ApprovalId([0x42; 16]);
    let q = t.state.session.pending_question.as_ref().unwrap();
    assert_eq!(q.question_id, qid);
    assert_eq!(q.question, "Which API?");
    assert_eq!(q.options, vec!["v1".to_string(), "v2".to_string()]);
    assert_eq!(q.status, QuestionStatus::Pending);
    assert_eq!(q.asked_at, Timestamp(T0));
    assert_eq!(t.effects, vec![Effect::PostQuestion { question_id: qid }]);
    assert_eq!(audit(&t), vec![("agent".into(), "ask".into(), None, None, format!("{qid}: Which API?"))]);

    let r = refused(&t.state, &Actor::Agent, ask(&["x"], false), &ctx(0x43));
    assert!(matches!(&r, Refusal::InvalidState(m) if m.contains("one question at a time")), "{r:?}");
    assert!(matches!(refused(&in_plan(), &alice(), ask(&["x"], false), &ctx(1)), Refusal::Forbidden(_)));
    for bad in [
        Command::Ask { question: "  ".into(), options: vec!["a".into()], allow_freetext: false },
        ask(&[], false),
        ask(&["a", " "], true),
        ask(&["a"; 11], false),
    ] {
        assert!(matches!(refused(&in_plan(), &Actor::Agent, bad, &ctx(1)), Refusal::InvalidRequest(_)));
    }
}

#[test]
fn questions_answer_by_option() {
    let s = ok(&in_plan(), &Actor::Agent, ask(&["v1", "v2"], false), &ctx(0x42)).state;
    let qid = ApprovalId([0x42; 16]);
    let now = T0 + MIN;
    let t = ok(&s, &bob(), answer(Some(qid), " v2 "), &ctx_at(now, 0));
    assert!(t.state.session.pending_question.is_none());
    let q = t.answered.as_ref().unwrap();
    assert_eq!(q.status, QuestionStatus::Answered);
    assert_eq!(q.answer.as_deref(), Some("v2"));
    assert_eq!(q.answered_by.as_deref(), Some("slack:@bob"));
    assert_eq!(q.answered_at, Some(Timestamp(now)));
    assert_eq!(t.effects, vec![Effect::UpdateQuestion { question_id: qid }, Effect::Wake]);
    assert_eq!(audit(&t), vec![("slack:@bob".into(), "answer".into(), None, None, format!("{qid}: v2"))]);
    // Answered: a second answer is stale, and the next question can be asked.
    assert!(matches!(refused(&t.state, &alice(), answer(Some(qid), "v1"), &ctx(0)), Refusal::Stale(_)));
    ok(&t.state, &Actor::Agent, ask(&["x"], false), &ctx(0x44));
}

#[test]
fn questions_answer_by_free_text() {
    let s = ok(&in_plan(), &Actor::Agent, ask(&["v1"], true), &ctx(0x42)).state;
    let t = ok(&s, &alice(), answer(None, "neither, use v3"), &ctx(0));
    assert_eq!(t.answered.unwrap().answer.as_deref(), Some("neither, use v3"));
    let s = ok(&in_plan(), &Actor::Agent, ask(&[], true), &ctx(0x42)).state;
    ok(&s, &operator(), answer(None, "anything"), &ctx(0));
}

#[test]
fn questions_wrong_option_and_wrong_actor_are_refused() {
    let s = ok(&in_plan(), &Actor::Agent, ask(&["v1", "v2"], false), &ctx(0x42)).state;
    let qid = ApprovalId([0x42; 16]);
    let r = refused(&s, &alice(), answer(Some(qid), "v3"), &ctx(0));
    assert_eq!(r, Refusal::InvalidRequest("choose one of: v1 | v2".into()));
    assert!(matches!(refused(&s, &alice(), answer(Some(qid), "  "), &ctx(0)), Refusal::InvalidRequest(_)));
    assert!(matches!(refused(&s, &alice(), answer(Some(ApprovalId([7; 16])), "v1"), &ctx(0)), Refusal::Stale(_)));
    for who in [Actor::Agent, Actor::Scheduler] {
        let r = refused(&s, &who, answer(Some(qid), "v1"), &ctx(0));
        assert!(matches!(r, Refusal::Forbidden(_)), "{r:?}");
    }
    assert!(matches!(refused(&in_plan(), &alice(), answer(None, "v1"), &ctx(0)), Refusal::Stale(_)));
}

// ---------------------------------------------------------- take_injection

#[test]
fn take_injection_reads_and_clears() {
    let (s, _) = approved();
    let expected = s.session.injection.clone().unwrap();
    let t = ok(&s, &Actor::Agent, Command::TakeInjection, &ctx_at(T0 + 9 * MIN, 0));
    assert!(t.changed);
    assert_eq!(t.taken_injection.as_deref(), Some(expected.as_str()));
    assert_eq!(t.state.session.injection, None);
    assert_eq!(t.state.session.updated_at, Timestamp(T0 + 9 * MIN));
    assert!(t.effects.is_empty() && t.audit.is_empty());
    assert_eq!(t.state.latest, s.latest, "the decision keeps its injection");
    let again = ok(&t.state, &Actor::Agent, Command::TakeInjection, &ctx(0));
    assert!(!again.changed);
    assert_eq!(again.taken_injection, None);
    assert_eq!(again.state, t.state);
    assert!(matches!(refused(&s, &alice(), Command::TakeInjection, &ctx(0)), Refusal::Forbidden(_)));
}

// ---------------------------------------------------- subagents: expiry, clear

const EXPIRY: u64 = 30 * 60_000;

fn ctx_expiring(now: i64) -> Ctx {
    Ctx { timers: TimerPolicy { subagent_expiry_ms: Some(EXPIRY), ..policy() }, ..ctx_at(now, 0) }
}

fn expiry_timer(run: &str, due: i64) -> Timer {
    Timer { due: Timestamp(due), session: key(), approval_id: subagents::timer_id(&key(), run), kind: TimerKind::SubagentExpiry }
}

#[test]
fn subagent_expiry_is_a_persisted_timer_that_heartbeats_push_back_without_rescheduling() {
    let (s, id) = pending();
    // Opening a run while a card is open schedules its expiry and redraws the card.
    let t = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx_expiring(T0));
    let due = T0 + EXPIRY as i64;
    assert_eq!(t.effects, vec![Effect::Schedule(expiry_timer("run-1", due)), Effect::UpdateCards { approval_id: id }]);
    // A heartbeat 20 min later only moves `seen_at`.
    let t = ok(&t.state, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx_expiring(T0 + 20 * MIN));
    assert!(t.effects.is_empty() && t.audit.is_empty());
    let s = t.state;
    // The timer fires: heard of since, so a new timer at seen_at + expiry, nothing audited.
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(expiry_timer("run-1", due)), &ctx_expiring(due));
    let due2 = T0 + 20 * MIN + EXPIRY as i64;
    assert_eq!(t.effects, vec![Effect::Schedule(expiry_timer("run-1", due2))]);
    assert!(t.audit.is_empty());
    assert_eq!(t.state.session.open_subagents["run-1"].expires_at, Some(Timestamp(due2)));
    // The old timer again is stale: nothing changes.
    let s = t.state;
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(expiry_timer("run-1", due)), &ctx_expiring(due2));
    assert!(!t.changed);
    // Silent for the whole expiry: the run expires, audited, the card redrawn,
    // and the plan can be approved.
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(expiry_timer("run-1", due2)), &ctx_expiring(due2));
    assert!(t.state.session.open_subagents.is_empty());
    assert_eq!(t.effects, vec![Effect::UpdateCards { approval_id: id }]);
    assert_eq!(
        audit(&t),
        vec![(
            "scheduler".into(),
            "subagent_expired".into(),
            Some(id),
            Some(1),
            "subagent run run-1 expired: not heard of for 30 min since 14:20 UTC (expiry 30 min)".into()
        )]
    );
    ok(&t.state, &alice(), decide(id, Verdict::Approve), &ctx_expiring(due2));
    // Closing a run cancels its timer.
    let t = ok(&s, &Actor::Agent, Command::UnregisterSubagent("run-1".into()), &ctx_expiring(T0 + 21 * MIN));
    assert_eq!(t.effects, vec![Effect::Cancel(expiry_timer("run-1", due2)), Effect::UpdateCards { approval_id: id }]);
}

#[test]
fn subagent_expiry_off_keeps_runs_until_closed_or_cleared() {
    let s = ok(&in_plan(), &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx(0)).state;
    assert_eq!(s.session.open_subagents["run-1"].expires_at, None);
    // Expiry switched on later: the next heartbeat gives the run its timer.
    let t = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx_expiring(T0 + MIN));
    assert_eq!(t.effects, vec![Effect::Schedule(expiry_timer("run-1", T0 + MIN + EXPIRY as i64))]);
    // …and switched off again: the timer leaves the run open and untimed.
    let t = ok(&t.state, &Actor::Scheduler, Command::TimerFired(expiry_timer("run-1", T0 + MIN + EXPIRY as i64)), &ctx(0));
    assert_eq!((t.state.session.open_subagents["run-1"].expires_at, t.effects.len()), (None, 0));
}

#[test]
fn a_person_clears_stuck_subagents_audited_and_the_agent_cannot() {
    let (s, id) = pending();
    let s = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx_expiring(T0)).state;
    let s = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-2".into()), &ctx_expiring(T0)).state;
    assert!(matches!(refused(&s, &alice(), decide(id, Verdict::Approve), &ctx(9)), Refusal::SubagentsOpen(_)));
    for who in [Actor::Agent, Actor::Scheduler] {
        assert!(matches!(refused(&s, &who, Command::ClearSubagents { run_id: None }, &ctx(0)), Refusal::Forbidden(_)));
    }
    let r = refused(&s, &alice(), Command::ClearSubagents { run_id: Some("run-9".into()) }, &ctx(0));
    assert_eq!(r, Refusal::InvalidRequest("no open subagent run \"run-9\"; open: run-1, run-2".into()));

    // One run…
    let t = ok(&s, &alice(), Command::ClearSubagents { run_id: Some("run-2".into()) }, &ctx(0));
    assert_eq!(t.state.session.open_subagents.keys().collect::<Vec<_>>(), vec!["run-1"]);
    // …or all of them, with their timers, the card redrawn, who did it audited.
    let t = ok(&s, &operator(), Command::ClearSubagents { run_id: None }, &ctx(0));
    let due = T0 + EXPIRY as i64;
    assert_eq!(
        t.effects,
        vec![
            Effect::Cancel(expiry_timer("run-1", due)),
            Effect::Cancel(expiry_timer("run-2", due)),
            Effect::UpdateCards { approval_id: id }
        ]
    );
    assert_eq!(
        audit(&t),
        vec![(
            "operator:ci".into(),
            "subagents_clear".into(),
            Some(id),
            Some(1),
            "operator:ci cleared 2 subagent run(s): run-1, run-2 (the plan no longer waits for them)".into()
        )]
    );
    let s = t.state;
    assert!(matches!(refused(&s, &alice(), Command::ClearSubagents { run_id: None }, &ctx(0)), Refusal::InvalidState(_)));
    assert_eq!(ok(&s, &alice(), decide(id, Verdict::Approve), &ctx(9)).state.session.approval, ApprovalState::Approved);
}

#[test]
fn sessions_stored_with_a_list_of_run_ids_still_load() {
    let mut v = serde_json::to_value(&in_plan().session).unwrap();
    v["open_subagents"] = json!(["run-1"]);
    let session: Session = serde_json::from_value(v).unwrap();
    assert_eq!(session.open_subagents["run-1"], SubagentRun { opened_at: Timestamp(0), seen_at: Timestamp(0), expires_at: None });
}
