//! Rows of the table for everything after a proposal but approve: revise, timeout, off, cancel, the agent never deciding, stale ids, auto mode.

use super::*;

#[test]
fn row_revise_goes_to_plan_rejected_with_feedback() {
    let (s, id) = pending();
    let now = T0 + 2 * MIN;
    let t = ok(&s, &alice(), revise(id, "  Cap the backoff at 30 s.\n"), &ctx_at(now, 9));
    let injection = "[PLAN_DECISION]: rejected\ntelegram:@alice requested changes to plan v1 \"Add retries\":\n\
                     > Cap the backoff at 30 s.\n\
                     Stay in plan mode, revise the plan to address this feedback, and propose it again.\n[/PLAN_DECISION]";
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::Rejected));
    assert_eq!(t.state.session.rejection_count, 1);
    assert_eq!(t.state.session.injection.as_deref(), Some(injection));
    let p = latest(&t.state);
    assert_eq!(p.status, DecisionStatus::Rejected);
    assert_eq!(p.feedback.as_deref(), Some("Cap the backoff at 30 s."));
    assert_eq!(p.decided_by.as_deref(), Some("telegram:@alice"));
    let receipt = "Changes requested on v1 by telegram:@alice: Cap the backoff at 30 s.";
    let mut expected: Vec<Effect> = timers(id, T0).into_iter().map(Effect::Cancel).collect();
    expected.push(Effect::UpdateCards { approval_id: id });
    // The document's receipt is the audit's sentence with the time after who decided.
    let text = format!("Changes requested on v1 by telegram:@alice at {}: Cap the backoff at 30 s.", rfc(now));
    expected.push(Effect::AppendReceipt { approval_id: id, text });
    expected.push(Effect::Wake);
    assert_eq!(t.effects, expected);
    assert_eq!(audit(&t), vec![("telegram:@alice".into(), "revise".into(), Some(id), Some(1), receipt.into())]);
}

#[test]
fn row_revise_requires_feedback() {
    let (s, id) = pending();
    for feedback in ["", "  \n\t "] {
        let r = refused(&s, &alice(), revise(id, feedback), &ctx(9));
        assert!(matches!(&r, Refusal::InvalidRequest(m) if m.contains("feedback is required")), "{r:?}");
    }
}

#[test]
fn row_revise_is_never_gated_by_subagents() {
    let (s, id) = pending();
    let s = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx(0)).state;
    let t = ok(&s, &alice(), revise(id, "wait for the subagent"), &ctx(9));
    assert_eq!(t.state.session.approval, ApprovalState::Rejected);
}

#[test]
fn row_third_rejection_asks_for_a_clarifying_question() {
    let mut s = in_plan();
    let mut injections = Vec::new();
    for round in 1..=4u8 {
        let p = Plan { steps: steps(&[&format!("attempt {round}")]), ..plan() };
        s = ok(&s, &Actor::Agent, propose_cmd(p), &ctx(round)).state;
        let id = ApprovalId([round; 16]);
        s = ok(&s, &alice(), revise(id, "no"), &ctx(100 + round)).state;
        assert_eq!(s.session.rejection_count, u32::from(round));
        injections.push(s.session.injection.clone().unwrap());
    }
    let clarify = "ask the user a clarifying question (ask_user_question) instead of guessing";
    assert!(!injections[0].contains(clarify) && !injections[1].contains(clarify));
    assert!(injections[0].contains("revise the plan to address this feedback, and propose it again"));
    assert!(injections[2].contains("This plan has been sent back 3 times. Before proposing again, ask the user a clarifying question"));
    assert!(injections[3].contains("sent back 4 times"));
    for i in &injections {
        assert_one_envelope(i, "rejected");
    }
}

// ------------------------------------------------------ row: timer: timeout

#[test]
fn row_timeout_of_the_current_id_goes_to_timed_out() {
    let (s, id) = pending();
    let all = timers(id, T0);
    // The first nudge already fired; the other two are still scheduled.
    let s = ok(&s, &Actor::Scheduler, Command::TimerFired(all[0].clone()), &ctx_at(T0 + 10 * MIN, 0)).state;
    let now = T0 + TIMEOUT as i64;
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(all[3].clone()), &ctx_at(now, 0));
    let injection = "[PLAN_DECISION]: timed_out\nNobody decided plan v1 \"Add retries\" within 1 d. It was NOT approved: \
                     do not execute it. Stay in plan mode; propose again or ask a question.\n[/PLAN_DECISION]";
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::TimedOut));
    assert_eq!(t.state.session.injection.as_deref(), Some(injection));
    let p = latest(&t.state);
    assert_eq!(p.status, DecisionStatus::TimedOut);
    assert_eq!(p.decided_by.as_deref(), Some("timeout"));
    assert_eq!(p.decided_at, Some(Timestamp(now)));
    assert!(p.timers.is_empty());
    assert_eq!(
        t.effects,
        vec![
            Effect::Cancel(all[1].clone()),
            Effect::Cancel(all[2].clone()),
            Effect::UpdateCards { approval_id: id },
            Effect::AppendReceipt { approval_id: id, text: format!("Timed out v1 after 1 d at {}: not approved", rfc(now)) },
            Effect::Wake,
        ]
    );
    assert_eq!(audit(&t), vec![("scheduler".into(), "timeout".into(), Some(id), Some(1), "Timed out v1 after 1 d: not approved".into())]);
}

#[test]
fn row_timeout_for_a_stale_id_changes_nothing() {
    let (s, v1) = pending();
    let s = ok(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx(2)).state;
    let stale = timers(v1, T0).pop().unwrap();
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(stale), &ctx_at(T0 + TIMEOUT as i64, 0));
    assert!(!t.changed);
    assert_eq!(t.state, s);
    assert!(t.effects.is_empty() && t.audit.is_empty());
    // ...and a timeout for an already decided proposal neither.
    let (s, id) = approved();
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(timers(id, T0).pop().unwrap()), &ctx(0));
    assert!(!t.changed && t.effects.is_empty());
    assert_eq!(t.state, s);
}

#[test]
fn row_nudge_timer_while_pending_reminds_approvers() {
    let (s, id) = pending();
    let all = timers(id, T0);
    let s = ok(&s, &Actor::Scheduler, Command::TimerFired(all[0].clone()), &ctx_at(T0 + 10 * MIN, 0)).state;
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(all[1].clone()), &ctx_at(T0 + 30 * MIN, 0));
    assert_eq!(t.effects, vec![Effect::Nudge { approval_id: id, number: 2 }]);
    assert_eq!(t.state.session.approval, ApprovalState::Pending);
    let p = latest(&t.state);
    assert_eq!(p.status, DecisionStatus::Pending);
    assert_eq!(p.timers, vec![all[2].clone(), all[3].clone()], "the fired nudge is no longer scheduled");
    assert_eq!(p.reminders_sent, 2);
    assert_eq!(audit(&t), vec![("scheduler".into(), "nudge".into(), Some(id), Some(1), "reminder 2".into())]);
}

/// After downtime (or while the chat backlog held reminders back) the first
/// reminder fires late: the ones also due by now go with it, as one
/// reminder numbered as the latest, and the store's next reminder is the
/// first still to come (`chains`).
#[test]
fn a_late_nudge_takes_the_reminders_also_due_with_it() {
    let (s, id) = pending();
    let all = timers(id, T0);
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(all[0].clone()), &ctx_at(T0 + 45 * MIN, 0));
    assert_eq!(t.effects, vec![Effect::Nudge { approval_id: id, number: 2 }]);
    assert_eq!(latest(&t.state).timers, vec![all[2].clone(), all[3].clone()]);
    assert_eq!(audit(&t), vec![("scheduler".into(), "nudge".into(), Some(id), Some(1), "reminder 2".into())]);
    assert_eq!(plangate_engine::chains::kept(&t.state), vec![all[2].clone(), all[3].clone()]);
    // Reminder 2 (from a store that kept every timer) is then stale.
    let t = ok(&t.state, &Actor::Scheduler, Command::TimerFired(all[1].clone()), &ctx_at(T0 + 45 * MIN, 0));
    assert!(!t.changed && t.effects.is_empty());
}

#[test]
fn row_nudge_timer_after_the_decision_does_nothing() {
    let (s, id) = approved();
    let t = ok(&s, &Actor::Scheduler, Command::TimerFired(timers(id, T0)[0].clone()), &ctx(0));
    assert!(!t.changed);
    assert!(t.effects.is_empty() && t.audit.is_empty());
    assert_eq!(t.state, s);
}

// ------------------------------------------------------ row: off (human) = release

#[test]
fn row_off_by_human_releases_and_cancels_the_pending_approval() {
    let (s, id) = pending();
    let now = T0 + 4 * MIN;
    let t = ok(&s, &alice(), Command::Off, &ctx_at(now, 0));
    let injection = "[PLAN_DECISION]: released\nReleased by telegram:@alice: no plan required. Plan mode is off and no plan \
                     was approved; wait for the user's next instruction.\n[/PLAN_DECISION]";
    let session = &t.state.session;
    assert_eq!(
        (session.mode, session.approval, session.released_by.as_deref()),
        (Mode::Normal, ApprovalState::None, Some("telegram:@alice"))
    );
    assert_eq!(session.injection.as_deref(), Some(injection));
    let p = latest(&t.state);
    assert_eq!(p.status, DecisionStatus::Cancelled);
    assert_eq!(p.decided_by.as_deref(), Some("telegram:@alice"));
    assert_eq!(p.injection.as_deref(), Some(injection));
    let mut expected: Vec<Effect> = timers(id, T0).into_iter().map(Effect::Cancel).collect();
    expected.push(Effect::UpdateCards { approval_id: id });
    let receipt = "Released by telegram:@alice: no plan required (v1 not approved)";
    let text = format!("Released by telegram:@alice at {}: no plan required (v1 not approved)", rfc(now));
    expected.push(Effect::AppendReceipt { approval_id: id, text });
    expected.push(Effect::Wake);
    assert_eq!(t.effects, expected);
    assert_eq!(audit(&t), vec![("telegram:@alice".into(), "release".into(), Some(id), Some(1), receipt.into())]);
    // The card's Cancel, too late: nothing left to decide.
    let r = refused(&t.state, &bob(), decide(id, Verdict::Approve), &ctx(0));
    assert_eq!(r, Refusal::Stale("Plan v1 was already cancelled by telegram:@alice at 14:04 UTC.".into()));
}

#[test]
fn row_off_by_human_when_nothing_is_pending() {
    let t = ok(&in_plan(), &operator(), Command::Off, &ctx(0));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Normal, ApprovalState::None));
    assert_eq!(
        t.state.session.injection.as_deref(),
        Some(
            "[PLAN_DECISION]: released\nReleased by operator:ci: no plan required. Plan mode is off and no plan was approved; \
             wait for the user's next instruction.\n[/PLAN_DECISION]"
        )
    );
    assert_eq!(t.effects, vec![Effect::Wake]);
    assert_eq!(audit(&t), vec![("operator:ci".into(), "release".into(), None, None, "released by operator:ci: no plan required".into())]);

    // plan/rejected: the decided proposal stays as it was.
    let (s, id) = pending();
    let s = ok(&s, &alice(), revise(id, "no"), &ctx(2)).state;
    let t = ok(&s, &bob(), Command::Off, &ctx(3));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Normal, ApprovalState::None));
    assert_eq!(t.state.latest, s.latest);
    assert_eq!(t.effects, vec![Effect::Wake]);
}

#[test]
fn row_off_releases_a_never_planned_session_but_not_twice_nor_an_executing_one() {
    let t = ok(&State::new(key()), &alice(), Command::Off, &ctx(0));
    assert_eq!(t.state.session.released_by.as_deref(), Some("telegram:@alice"));
    let r = refused(&t.state, &bob(), Command::Off, &ctx(1));
    assert!(matches!(r, Refusal::InvalidState(_)), "{r:?}");
    let (s, _) = approved();
    assert!(matches!(refused(&s, &alice(), Command::Off, &ctx(0)), Refusal::InvalidState(_)));
    // Planning again takes the release back.
    let t = ok(&t.state, &Actor::Agent, Command::Enter { reason: None }, &ctx(2));
    assert_eq!((t.state.session.mode, t.state.session.released_by.as_deref()), (Mode::Plan, None));
}

// ------------------------------------------------------ row: cancel (human) = halt

#[test]
fn row_cancel_halts_the_session_instead_of_opening_the_gate() {
    let (s, id) = pending();
    let now = T0 + 4 * MIN;
    let t = ok(&s, &bob(), Command::CancelApproval(id), &ctx_at(now, 0));
    let session = &t.state.session;
    assert_eq!((session.mode, session.approval, session.released_by.as_deref()), (Mode::Halted, ApprovalState::Cancelled, None));
    assert!(session.steps.is_empty());
    let injection = "[PLAN_DECISION]: cancelled\nslack:@bob cancelled plan v1 \"Add retries\". Do not execute it. The session is \
                     halted: every change stays blocked until you propose a new plan and a human approves it, or a person releases \
                     the session. Wait for the user's next instruction.\n[/PLAN_DECISION]";
    assert_eq!(session.injection.as_deref(), Some(injection));
    assert_eq!(latest(&t.state).status, DecisionStatus::Cancelled);
    let receipt = "Cancelled v1 by slack:@bob: session halted (read-only)";
    assert_eq!(audit(&t), vec![("slack:@bob".into(), "cancel".into(), Some(id), Some(1), receipt.into())]);

    // The gate stays shut under both scopes, with a reason that says how to go on.
    let policy = plangate_gate::Policy::default();
    let rm = serde_json::json!({"command": "rm -rf /"});
    for scope in [GateScope::ApprovedPlan, GateScope::PlanModeOnly] {
        match gate(&t.state.session, scope, &policy, "Bash", &rm) {
            plangate_gate::Verdict::Deny(why) => assert!(why.contains("halted") && why.contains("/plan off"), "{why}"),
            allow => panic!("{scope:?}: {allow:?}"),
        }
    }
    // The agent can propose again straight away (still read-only); a new approval opens the gate.
    let t = ok(
        &t.state,
        &Actor::Agent,
        Command::Propose { plan: plan_v2(), markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
        &ctx_at(now + MIN, 2),
    );
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::Pending));
    // A person's release also ends the halt.
    let (s, id) = pending();
    let halted = ok(&s, &bob(), Command::CancelApproval(id), &ctx(1)).state;
    let t = ok(&halted, &alice(), Command::Off, &ctx(2));
    assert_eq!((t.state.session.mode, t.state.session.released_by.as_deref()), (Mode::Normal, Some("telegram:@alice")));
}

#[test]
fn row_cancel_button_on_a_stale_card_changes_nothing() {
    // v1's card is still in the chat while v2 waits: its Cancel must not
    // cancel v2.
    let (s, v1) = pending();
    let s = ok(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx(2)).state;
    let r = refused(&s, &alice(), Command::CancelApproval(v1), &ctx(3));
    assert_eq!(r, Refusal::Stale("This plan was superseded by v2.".into()));
    let v2 = ApprovalId([2; 16]);
    let s = ok(&s, &alice(), decide(v2, Verdict::Approve), &ctx_at(T0 + 5 * MIN, 4)).state;
    let r = refused(&s, &bob(), Command::CancelApproval(v2), &ctx(5));
    assert_eq!(r, Refusal::Stale("Plan v2 was already approved by telegram:@alice at 14:05 UTC.".into()));
    for who in [Actor::Agent, Actor::Scheduler] {
        let (s, id) = pending();
        assert!(matches!(refused(&s, &who, Command::CancelApproval(id), &ctx(0)), Refusal::Forbidden(_)));
    }
}

// ----------------------------------------- the agent can never decide

#[test]
fn agent_can_never_approve_edit_revise_off_or_auto() {
    let (s, id) = pending();
    let commands = [
        decide(id, Verdict::Approve),
        decide(id, Verdict::Edit(plan())),
        revise(id, "looks fine to me"),
        Command::Off,
        Command::SetAuto(true),
        Command::SetAuto(false),
    ];
    for cmd in commands {
        for who in [Actor::Agent, Actor::Scheduler] {
            let r = refused(&s, &who, cmd.clone(), &ctx(9));
            assert!(matches!(&r, Refusal::Forbidden(m) if m.contains("only a human approver")), "{}: {r:?}", cmd.name());
        }
    }
    // Not even in plan/none, or in auto mode.
    assert!(matches!(refused(&in_plan(), &Actor::Agent, Command::Off, &ctx(0)), Refusal::Forbidden(_)));
}

#[test]
fn operator_can_do_what_a_human_approver_can() {
    let (s, id) = pending();
    let t = ok(&s, &operator(), decide(id, Verdict::Edit(edited_plan())), &ctx(9));
    assert_eq!(latest(&t.state).decided_by.as_deref(), Some("operator:ci"));
    let t = ok(&s, &operator(), revise(id, "no"), &ctx(9));
    assert_eq!(t.state.session.approval, ApprovalState::Rejected);
    let t = ok(&s, &operator(), Command::Off, &ctx(9));
    assert_eq!(latest(&t.state).status, DecisionStatus::Cancelled);
    let t = ok(&s, &operator(), Command::SetAuto(true), &ctx(9));
    assert!(t.state.session.auto_approve);
}

// ------------------------------------------ row: decision with a stale id

#[test]
fn row_decision_with_an_unknown_id_changes_nothing() {
    let (s, _) = pending();
    let r = refused(&s, &alice(), decide(ApprovalId([0xee; 16]), Verdict::Approve), &ctx(9));
    assert_eq!(r, Refusal::Stale("This plan was superseded by v1.".into()));
    let r = refused(&in_plan(), &alice(), revise(ApprovalId([0xee; 16]), "x"), &ctx(9));
    assert!(matches!(r, Refusal::Stale(_)));
}

#[test]
fn row_decision_on_an_already_decided_id_names_the_winner() {
    // Two approvers click at once: the first wins, the second is told who won.
    let (s, id) = pending();
    let s = ok(&s, &alice(), decide(id, Verdict::Approve), &ctx_at(T0 + 5 * MIN, 9)).state;
    for verdict in [Verdict::Approve, Verdict::Edit(edited_plan()), Verdict::Revise("no".into())] {
        let r = refused(&s, &bob(), decide(id, verdict), &ctx_at(T0 + 5 * MIN, 9));
        assert_eq!(r, Refusal::Stale("Plan v1 was already approved by telegram:@alice at 14:05 UTC.".into()));
    }
}

#[test]
fn describe_stale_covers_every_fate() {
    let (s, id) = pending();
    let at = |m: i64| ctx_at(T0 + m * MIN, 9);
    let fate = |st: &State| describe_stale(latest(st), st.session.version);
    assert_eq!(fate(&s), "Plan v1 is still pending.");
    assert_eq!(
        fate(&ok(&s, &alice(), decide(id, Verdict::Approve), &at(1)).state),
        "Plan v1 was already approved by telegram:@alice at 14:01 UTC."
    );
    assert_eq!(
        fate(&ok(&s, &bob(), decide(id, Verdict::Edit(edited_plan())), &at(2)).state),
        "Plan v1 was already approved with edits by slack:@bob at 14:02 UTC."
    );
    assert_eq!(
        fate(&ok(&s, &bob(), revise(id, "x"), &at(3)).state),
        "Changes to plan v1 were already requested by slack:@bob at 14:03 UTC."
    );
    assert_eq!(fate(&ok(&s, &alice(), Command::Off, &at(4)).state), "Plan v1 was already cancelled by telegram:@alice at 14:04 UTC.");
    let timeout = timers(id, T0).pop().unwrap();
    assert_eq!(fate(&ok(&s, &Actor::Scheduler, Command::TimerFired(timeout), &at(1440)).state), "Plan v1 already timed out at 14:00 UTC.");
    // A pending proposal that is not the latest (a store's view) reads as superseded.
    assert_eq!(describe_stale(latest(&s), 3), "This plan was superseded by v3.");
}

// ------------------------------------------------------ row: auto mode

#[test]
fn row_auto_mode_on_is_audited_and_human_only() {
    let t = ok(&in_plan(), &alice(), Command::SetAuto(true), &ctx(0));
    assert!(t.state.session.auto_approve);
    assert!(t.effects.is_empty());
    assert_eq!(
        audit(&t),
        vec![("telegram:@alice".into(), "auto".into(), None, None, "auto-approve on: later proposals approve themselves".into())]
    );
    let t = ok(&t.state, &alice(), Command::SetAuto(false), &ctx(0));
    assert!(!t.state.session.auto_approve);
    assert_eq!(audit(&t)[0].4, "auto-approve off");
}

#[test]
fn row_auto_mode_later_proposals_approve_themselves() {
    let s = ok(&in_plan(), &alice(), Command::SetAuto(true), &ctx(0)).state;
    let t = ok(&s, &Actor::Agent, propose_cmd(plan()), &ctx(1));
    let id = ApprovalId([1; 16]);
    let hash = plan_hash(&plan(), None);
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Normal, ApprovalState::Approved));
    let p = latest(&t.state);
    assert_eq!(p.status, DecisionStatus::Approved);
    assert_eq!(p.decided_by.as_deref(), Some("auto"));
    assert_eq!(p.decided_at, Some(Timestamp(T0)));
    assert!(p.timers.is_empty());
    assert_eq!(
        t.effects,
        vec![
            Effect::WriteDocument { approval_id: id },
            Effect::PostCards { approval_id: id },
            Effect::AppendReceipt { approval_id: id, text: format!("Approved v1 by auto at {}", rfc(T0)) },
            Effect::Wake,
        ]
    );
    assert_eq!(
        audit(&t),
        vec![
            ("agent".into(), "propose".into(), Some(id), Some(1), format!("\"Add retries\" ({hash})")),
            ("auto".into(), "approve".into(), Some(id), Some(1), "auto mode: approved without a human decision".into()),
        ]
    );
    let injection = t.state.session.injection.clone().unwrap();
    assert!(injection.starts_with("[PLAN_DECISION]: approved\n"));
    assert!(injection.contains(&format!("(approval {id}, {hash}) was approved by auto.")));
    assert_eq!(p.injection.as_ref(), Some(&injection));
    assert_eq!(DecisionView::of(p).status, DecisionStatus::Approved);
}

#[test]
fn row_auto_mode_supersedes_a_proposal_pending_from_before() {
    let (s, v1) = pending();
    let s = ok(&s, &alice(), Command::SetAuto(true), &ctx(0)).state;
    assert_eq!(latest(&s).status, DecisionStatus::Pending, "turning auto on does not approve what is pending");
    let t = ok(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx(2));
    assert_eq!(t.retired.as_ref().map(|p| (p.approval_id, p.status)), Some((v1, DecisionStatus::Superseded)));
    assert_eq!(latest(&t.state).status, DecisionStatus::Approved);
}
