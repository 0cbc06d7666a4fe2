//! Rows of the table from entering plan mode to approve and edit: enter, update_plan, propose, approve, edit.

use super::*;

#[test]
fn row_enter_by_agent_from_normal_goes_to_plan_none() {
    let before = State::new(key());
    let reason = "explore the retry code\u{202E}";
    let t = ok(&before, &Actor::Agent, Command::Enter { reason: Some(reason.into()) }, &ctx(0));
    assert!(t.changed);
    assert_eq!(t.state.session.mode, Mode::Plan);
    assert_eq!(t.state.session.approval, ApprovalState::None);
    assert_eq!(t.state.session.version, 0);
    assert_eq!(t.state.session.updated_at, Timestamp(T0));
    assert!(only_agent_nudges(&t.effects), "{:?}", t.effects);
    assert_eq!(audit(&t), vec![("agent".into(), "enter".into(), None, None, "explore the retry code".into())]);
    assert!(t.retired.is_none() && t.answered.is_none() && t.taken_injection.is_none());
}

#[test]
fn row_enter_by_human_plan_on() {
    let t = ok(&State::new(key()), &alice(), Command::Enter { reason: None }, &ctx(0));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::None));
    assert!(only_agent_nudges(&t.effects));
    assert_eq!(audit(&t), vec![("telegram:@alice".into(), "enter".into(), None, None, String::new())]);
    let t = ok(&State::new(key()), &operator(), Command::Enter { reason: None }, &ctx(0));
    assert_eq!(actions(&t), vec![pair("operator:ci", "enter")]);
}

#[test]
fn row_enter_from_normal_approved_resets_approval_and_rejections() {
    let (s, id) = pending();
    let s = ok(&s, &alice(), revise(id, "more detail"), &ctx(2)).state;
    let s = ok(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx(3)).state;
    let v2 = ApprovalId([3; 16]);
    let s = ok(&s, &alice(), decide(v2, Verdict::Approve), &ctx(4)).state;
    assert_eq!((s.session.mode, s.session.approval, s.session.rejection_count), (Mode::Normal, ApprovalState::Approved, 1));
    let t = ok(&s, &bob(), Command::Enter { reason: None }, &ctx(5));
    assert_eq!(t.state.session.mode, Mode::Plan);
    assert_eq!(t.state.session.approval, ApprovalState::None);
    assert_eq!(t.state.session.rejection_count, 0);
    // The decided proposal is untouched but for the receipt of what ran under it.
    let ran = t.state.latest.as_ref().and_then(|p| p.ran.clone()).expect("what ran is sealed on it");
    assert_eq!(ran.ending, plangate_engine::ran::Ending::Replanned);
    assert_eq!(t.state.latest.as_ref().map(|p| Proposal { ran: None, ..p.clone() }), s.latest, "the decided proposal is untouched");
    assert_eq!(t.state.session.version, 2);
}

#[test]
fn row_enter_when_already_in_plan_mode_changes_nothing() {
    let s = in_plan();
    let t = ok(&s, &alice(), Command::Enter { reason: Some("again".into()) }, &ctx_at(T0 + MIN, 0));
    assert!(!t.changed);
    assert_eq!(t.state, s);
    assert!(t.effects.is_empty() && t.audit.is_empty());
}

#[test]
fn row_enter_by_scheduler_is_forbidden() {
    let r = refused(&State::new(key()), &Actor::Scheduler, Command::Enter { reason: None }, &ctx(0));
    assert!(matches!(r, Refusal::Forbidden(_)), "{r:?}");
}

// --------------------------------------------- row: plan/* update_plan

#[test]
fn row_update_plan_in_plan_mode_records_steps_and_stays() {
    let s = in_plan();
    let cmd = Command::UpdatePlan {
        steps: updates(vec![with_status("Read the client", StepStatus::InProgress), Step::pending("Add backoff")]),
        merge: false,
        explanation: Some("first pass\u{200B}".into()),
    };
    let t = ok(&s, &Actor::Agent, cmd, &ctx(0));
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Plan, ApprovalState::None));
    assert_eq!(t.state.session.steps.len(), 2);
    assert_eq!(t.state.session.steps[0].status, StepStatus::InProgress);
    assert!(t.effects.is_empty(), "no card is open: {:?}", t.effects);
    assert_eq!(audit(&t), vec![("agent".into(), "update_plan".into(), None, None, "2 step(s): first pass".into())]);
}

#[test]
fn row_update_plan_merge_joins_by_text_keeps_order_and_appends() {
    let s = in_plan();
    let s =
        ok(&s, &Actor::Agent, Command::UpdatePlan { steps: updates(steps(&["a", "b", "c"])), merge: false, explanation: None }, &ctx(0))
            .state;
    let update = vec![with_status(" b ", StepStatus::InProgress), Step::pending("d")];
    let t = ok(&s, &Actor::Agent, Command::UpdatePlan { steps: updates(update), merge: true, explanation: None }, &ctx(0));
    let got: Vec<(&str, StepStatus)> = t.state.session.steps.iter().map(|s| (s.step.as_str(), s.status)).collect();
    // The joined step keeps the text it was known by.
    assert_eq!(
        got,
        vec![("a", StepStatus::Pending), ("b", StepStatus::InProgress), ("c", StepStatus::Pending), ("d", StepStatus::Pending)]
    );
    assert_eq!(audit(&t)[0].4, "4 step(s), merged");
}

/// The seed: a merge "re-validates the merged result, catching inherited
/// unverified criteria". A patch changes only the fields it carries.
#[test]
fn row_update_plan_merge_patch_keeps_inherited_criteria_and_the_closure_gate_catches_them() {
    let guarded = Step {
        active_form: Some("Running the tests".into()),
        acceptance_criteria: vec!["cargo test is green".into()],
        ..with_status("Run tests", StepStatus::InProgress)
    };
    let s = ok(
        &in_plan(),
        &Actor::Agent,
        Command::UpdatePlan { steps: updates(vec![Step::pending("Write"), guarded.clone()]), merge: false, explanation: None },
        &ctx(0),
    )
    .state;
    let patch = |update: StepUpdate| Command::UpdatePlan { steps: vec![update], merge: true, explanation: None };

    // Completing by a patch that does not carry the criteria: they are
    // inherited, unverified, and the closure rule refuses, as it does without merge.
    let r = refused(&s, &Actor::Agent, patch(StepUpdate::status("Run tests", StepStatus::Completed)), &ctx(0));
    assert_eq!(
        r,
        Refusal::InvalidPlan(PlanError::UnverifiedCompletion { step: "Run tests".into(), missing: vec!["cargo test is green".into()] })
    );
    let whole = updates(vec![Step::pending("Write"), Step { status: StepStatus::Completed, ..guarded.clone() }]);
    assert!(matches!(
        refused(&s, &Actor::Agent, Command::UpdatePlan { steps: whole, merge: false, explanation: None }, &ctx(0)),
        Refusal::InvalidPlan(PlanError::UnverifiedCompletion { .. })
    ));

    // A patch of the status keeps every other field of the step.
    let t = ok(&s, &Actor::Agent, patch(StepUpdate::status("Write", StepStatus::Completed)), &ctx(0));
    assert_eq!(t.state.session.steps, vec![with_status("Write", StepStatus::Completed), guarded.clone()]);
    // Verified, it completes.
    let verified = StepUpdate {
        verified_criteria: Some(vec!["cargo test is green".into()]),
        ..StepUpdate::status("Run tests", StepStatus::Completed)
    };
    let t = ok(&t.state, &Actor::Agent, patch(verified), &ctx(0));
    assert_eq!(
        t.state.session.steps[1],
        Step { status: StepStatus::Completed, verified_criteria: vec!["cargo test is green".into()], ..guarded }
    );
}

#[test]
fn row_update_plan_refusals_name_the_rule() {
    let s = in_plan();
    let upd = |steps: Vec<Step>, merge: bool| Command::UpdatePlan { steps: updates(steps), merge, explanation: None };
    let rule = |r: Refusal| match r {
        Refusal::InvalidPlan(e) => {
            let msg = e.to_string();
            assert!(msg.contains(&format!("rule `{}`", e.rule())), "{msg}");
            e.rule()
        }
        other => panic!("not a plan refusal: {other:?}"),
    };

    let two = vec![with_status("a", StepStatus::InProgress), with_status("b", StepStatus::InProgress)];
    assert_eq!(rule(refused(&s, &Actor::Agent, upd(two, false), &ctx(0))), "single_in_progress");
    assert_eq!(rule(refused(&s, &Actor::Agent, upd(steps(&["a", " a"]), false), &ctx(0))), "unique_steps");
    // Duplicates inside one merge update are refused too, not collapsed.
    assert_eq!(rule(refused(&s, &Actor::Agent, upd(steps(&["a", "a"]), true), &ctx(0))), "unique_steps");
    assert_eq!(rule(refused(&s, &Actor::Agent, upd(steps(&["a", "  "]), false), &ctx(0))), "step_text_required");
    let unverified = Step {
        status: StepStatus::Completed,
        acceptance_criteria: vec!["tests pass".into(), "docs".into()],
        verified_criteria: vec![" tests pass ".into()],
        ..Step::pending("a")
    };
    let r = refused(&s, &Actor::Agent, upd(vec![unverified.clone()], false), &ctx(0));
    assert_eq!(r, Refusal::InvalidPlan(PlanError::UnverifiedCompletion { step: "a".into(), missing: vec!["docs".into()] }));
    // Whitespace-trimmed criteria cover each other.
    let verified = Step { verified_criteria: vec![" tests pass".into(), "docs ".into()], ..unverified };
    ok(&s, &Actor::Agent, upd(vec![verified], false), &ctx(0));

    // Merge re-checks the merged result: one in progress before, one added.
    let s = ok(&s, &Actor::Agent, upd(vec![with_status("a", StepStatus::InProgress), Step::pending("b")], false), &ctx(0)).state;
    let r = refused(&s, &Actor::Agent, upd(vec![with_status("b", StepStatus::InProgress)], true), &ctx(0));
    assert_eq!(rule(r), "single_in_progress");
    // ...while moving the one in progress is fine.
    let moved = vec![with_status("a", StepStatus::Pending), with_status("b", StepStatus::InProgress)];
    ok(&s, &Actor::Agent, upd(moved, true), &ctx(0));
}

#[test]
fn row_update_plan_by_a_human_is_forbidden() {
    let cmd = Command::UpdatePlan { steps: updates(steps(&["a"])), merge: false, explanation: None };
    assert!(matches!(refused(&in_plan(), &alice(), cmd.clone(), &ctx(0)), Refusal::Forbidden(_)));
    assert!(matches!(refused(&in_plan(), &Actor::Scheduler, cmd, &ctx(0)), Refusal::Forbidden(_)));
}

#[test]
fn row_update_plan_while_pending_leaves_the_open_card_alone() {
    let (s, _) = pending();
    let cmd = Command::UpdatePlan { steps: updates(steps(&["Read the client"])), merge: true, explanation: None };
    let t = ok(&s, &Actor::Agent, cmd, &ctx(0));
    // The open card shows the proposal, not the live list: nothing to refresh.
    assert!(t.effects.is_empty(), "{:?}", t.effects);
    assert_eq!(t.state.latest, s.latest);
    assert_eq!(t.state.session.approval, ApprovalState::Pending);
}

#[test]
fn row_update_plan_while_executing_refreshes_the_live_card() {
    let (s, id) = approved();
    let update = vec![with_status("Read the client", StepStatus::Completed), with_status("Add backoff", StepStatus::InProgress)];
    let t = ok(&s, &Actor::Agent, Command::UpdatePlan { steps: updates(update), merge: true, explanation: None }, &ctx(0));
    assert_eq!(t.effects, vec![Effect::UpdateCards { approval_id: id }]);
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Normal, ApprovalState::Approved));
    assert_eq!(audit(&t), vec![("agent".into(), "update_plan".into(), Some(id), Some(1), "3 step(s), merged".into())]);
    assert_eq!(t.state.latest, s.latest, "the decided proposal never changes");
}

// ------------------------------- row: plan/{none,rejected,timed_out} propose

#[test]
fn row_propose_from_none_posts_cards_and_schedules_timers() {
    let s = in_plan();
    let t = ok(&s, &Actor::Agent, propose_cmd(plan()), &ctx(1));
    let id = ApprovalId([1; 16]);
    let hash = plan_hash(&plan(), None);
    let mut expected = vec![Effect::WriteDocument { approval_id: id }];
    expected.extend(timers(id, T0).into_iter().map(Effect::Schedule));
    expected.push(Effect::PostCards { approval_id: id });
    expected.push(Effect::Wake);
    assert_eq!(t.effects, expected);

    let session = &t.state.session;
    assert_eq!((session.mode, session.approval, session.version), (Mode::Plan, ApprovalState::Pending, 1));
    assert_eq!(session.latest_approval, Some(id));
    assert_eq!(session.steps, plan().steps);
    let p = latest(&t.state);
    assert_eq!(p.approval_id, id);
    assert_eq!(p.version, 1);
    assert_eq!(p.status, DecisionStatus::Pending);
    assert_eq!(p.plan_hash, hash, "the plan hash is returned with the proposal");
    assert_eq!(p.created_at, Timestamp(T0));
    assert_eq!(p.timers, timers(id, T0));
    assert_eq!(p.document(), plan::render_markdown(&plan()));
    assert!(p.decided_by.is_none() && p.decided_at.is_none() && p.injection.is_none());
    assert!(t.retired.is_none());
    assert_eq!(audit(&t), vec![("agent".into(), "propose".into(), Some(id), Some(1), format!("\"Add retries\" ({hash})"))]);
}

#[test]
fn row_propose_schedules_exactly_what_the_timer_policy_says() {
    let c = Ctx {
        now: Timestamp(T0),
        random: [1; 16],
        timers: TimerPolicy { nudges_ms: vec![300_000], timeout_ms: None, ..TimerPolicy::default() },
        approvals: ApprovalPolicy::default(),
    };
    let t = ok(&in_plan(), &Actor::Agent, propose_cmd(plan()), &c);
    let id = ApprovalId([1; 16]);
    let nudge = Timer { due: Timestamp(T0 + 5 * MIN), session: key(), approval_id: id, kind: TimerKind::Nudge(1) };
    assert_eq!(
        t.effects,
        vec![Effect::WriteDocument { approval_id: id }, Effect::Schedule(nudge), Effect::PostCards { approval_id: id }, Effect::Wake]
    );
    let c = Ctx { timers: TimerPolicy::default(), ..c };
    let t = ok(&in_plan(), &Actor::Agent, propose_cmd(plan()), &c);
    assert!(!t.effects.iter().any(|e| matches!(e, Effect::Schedule(_))));
    assert!(latest(&t.state).timers.is_empty());
}

#[test]
fn row_propose_from_rejected_is_a_new_version_with_a_new_id() {
    let (s, v1) = pending();
    let s = ok(&s, &alice(), revise(v1, "cap the backoff"), &ctx(2)).state;
    let old = latest(&s).clone();
    let t = ok(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx_at(T0 + MIN, 3));
    let v2 = ApprovalId([3; 16]);
    assert_ne!(v1, v2);
    assert_eq!((t.state.session.approval, t.state.session.version), (ApprovalState::Pending, 2));
    assert_eq!(latest(&t.state).previous, Some(v1), "v2 names the version before it");
    assert_eq!(old.previous, None);
    assert_eq!(t.state.session.rejection_count, 1, "rejections are counted across versions");
    assert_eq!(latest(&t.state).approval_id, v2);
    assert_eq!(latest(&t.state).plan_hash, plan_hash(&plan_v2(), None));
    // The rejected v1 is decided: it is neither retired nor touched again.
    assert!(t.retired.is_none());
    assert!(!t.effects.iter().any(|e| e == &Effect::UpdateCards { approval_id: v1 }));
    assert_eq!(old.status, DecisionStatus::Rejected);
    assert_eq!(t.effects.first(), Some(&Effect::WriteDocument { approval_id: v2 }));
    assert_eq!(actions(&t), vec![pair("agent", "propose")]);
}

#[test]
fn row_propose_from_timed_out_is_a_new_version() {
    let (s, v1) = pending();
    let timeout = timers(v1, T0).pop().unwrap();
    let s = ok(&s, &Actor::Scheduler, Command::TimerFired(timeout), &ctx_at(T0 + TIMEOUT as i64, 0)).state;
    assert_eq!(s.session.approval, ApprovalState::TimedOut);
    let t = ok(&s, &Actor::Agent, propose_cmd(plan()), &ctx(7));
    assert_eq!((t.state.session.approval, t.state.session.version), (ApprovalState::Pending, 2));
    assert_eq!(latest(&t.state).approval_id, ApprovalId([7; 16]));
    // Even the identical plan: the old one is decided, so this is a new proposal.
    assert_eq!(latest(&t.state).plan_hash, plan_hash(&plan(), None));
    assert!(t.retired.is_none());
}

#[test]
fn row_propose_markdown_keeps_it_verbatim_and_hashes_it() {
    let md = "# Add retries\n\n## Steps\n1. Read the client\n2. Add backoff\n";
    let p = plan::plan_from_markdown(md, None).unwrap();
    let t = ok(
        &in_plan(),
        &Actor::Agent,
        Command::Propose {
            plan: p.clone(),
            markdown: Some(md.into()),
            requested_by: None,
            harness: plangate_engine::Harness::Api,
            project: None,
        },
        &ctx(1),
    );
    let proposal = latest(&t.state);
    assert_eq!(proposal.document(), md);
    assert_eq!(proposal.plan_hash, plan_hash(&p, Some(md)));
    assert_ne!(proposal.plan_hash, plan_hash(&p, None));

    let huge = "x".repeat(plan::MAX_MARKDOWN_CHARS + 1);
    let r = refused(
        &in_plan(),
        &Actor::Agent,
        Command::Propose { plan: p, markdown: Some(huge), requested_by: None, harness: plangate_engine::Harness::Api, project: None },
        &ctx(1),
    );
    assert!(matches!(&r, Refusal::InvalidPlan(e) if e.rule() == "markdown_length"), "{r:?}");
}

#[test]
fn row_propose_refusals() {
    let r = refused(&State::new(key()), &Actor::Agent, propose_cmd(plan()), &ctx(1));
    assert!(matches!(&r, Refusal::InvalidState(m) if m.contains("not in plan mode")), "{r:?}");
    let r = refused(&in_plan(), &Actor::Agent, propose_cmd(Plan::titled("  ")), &ctx(1));
    assert_eq!(r, Refusal::InvalidPlan(PlanError::TitleRequired));
    assert!(r.to_string().contains("title_required"));
    let dup = Plan { steps: steps(&["a", "a"]), ..Plan::titled("t") };
    assert!(matches!(refused(&in_plan(), &Actor::Agent, propose_cmd(dup), &ctx(1)), Refusal::InvalidPlan(_)));
    for who in [alice(), operator(), Actor::Scheduler] {
        assert!(matches!(refused(&in_plan(), &who, propose_cmd(plan()), &ctx(1)), Refusal::Forbidden(_)));
    }
    // The executing session (normal/approved) cannot propose without re-entering.
    let (s, _) = approved();
    assert!(matches!(refused(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx(2)), Refusal::InvalidState(_)));
}

#[test]
fn row_propose_refuses_an_id_collision_with_the_latest_proposal() {
    let (s, _) = pending();
    let r = refused(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx(1));
    assert!(matches!(&r, Refusal::InvalidState(m) if m.contains("collision")), "{r:?}");
}

// -------------------------------------------------- row: plan/pending propose

#[test]
fn row_identical_repropose_while_pending_is_idempotent() {
    let (s, id) = pending();
    let t = ok(&s, &Actor::Agent, propose_cmd(plan()), &ctx_at(T0 + MIN, 2));
    assert!(!t.changed);
    assert_eq!(t.state, s, "same id, same version, same timers");
    assert_eq!(latest(&t.state).approval_id, id);
    assert_eq!(t.state.session.version, 1);
    assert!(t.effects.is_empty() && t.audit.is_empty() && t.retired.is_none());
}

#[test]
fn row_repropose_while_pending_supersedes_the_old_proposal() {
    let (s, v1) = pending();
    let now = T0 + 3 * MIN;
    let t = ok(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx_at(now, 2));
    let v2 = ApprovalId([2; 16]);

    let mut expected: Vec<Effect> = timers(v1, T0).into_iter().map(Effect::Cancel).collect();
    expected.push(Effect::UpdateCards { approval_id: v1 });
    expected.push(Effect::AppendReceipt { approval_id: v1, text: format!("Superseded by v2 at {}", rfc(now)) });
    expected.push(Effect::WriteDocument { approval_id: v2 });
    expected.extend(timers(v2, now).into_iter().map(Effect::Schedule));
    expected.push(Effect::PostCards { approval_id: v2 });
    expected.push(Effect::Wake);
    assert_eq!(t.effects, expected);

    let old = t.retired.as_ref().expect("the superseded proposal is handed back for persisting");
    assert_eq!(old.approval_id, v1);
    assert_eq!(old.status, DecisionStatus::Superseded);
    assert_eq!(old.superseded_by, Some(2));
    assert_eq!(old.decided_at, Some(Timestamp(now)));
    assert!(old.timers.is_empty());
    assert_eq!(old.plan_hash, plan_hash(&plan(), None));

    assert_eq!(t.state.session.version, 2);
    assert_eq!(t.state.session.approval, ApprovalState::Pending);
    assert_eq!(t.state.session.latest_approval, Some(v2));
    assert_eq!(latest(&t.state).version, 2);
    assert_eq!(
        audit(&t),
        vec![
            ("agent".into(), "superseded".into(), Some(v1), Some(1), "superseded by v2".into()),
            ("agent".into(), "propose".into(), Some(v2), Some(2), format!("\"Add retries\" ({})", plan_hash(&plan_v2(), None))),
        ]
    );

    // v1 is now stale: a click on its card changes nothing and says why.
    let r = refused(&t.state, &alice(), decide(v1, Verdict::Approve), &ctx(3));
    assert_eq!(r, Refusal::Stale("This plan was superseded by v2.".into()));
    assert_eq!(describe_stale(old, 2), "This plan was superseded by v2.");
    assert_eq!(describe_stale(old, 5), "This plan was superseded by v2.", "names the version that replaced it");
}

// ------------------------------------------------------ row: approve(id)

#[test]
fn row_approve_current_id_goes_to_normal_approved() {
    let (s, id) = pending();
    let now = T0 + 5 * MIN;
    let t = ok(&s, &alice(), decide(id, Verdict::Approve), &ctx_at(now, 9));
    let hash = plan_hash(&plan(), None);
    let injection = format!(
        "[PLAN_DECISION]: approved\nPlan v1 \"Add retries\" (approval {id}, {hash}) was approved by telegram:@alice. \
         Plan mode is off: execute exactly this plan, step by step, and keep the step list current with update_plan.\n\
         The approved steps:\n1. Read the client\n2. Add backoff\n3. Test it\n\
         [/PLAN_DECISION]"
    );
    let mut expected: Vec<Effect> = timers(id, T0).into_iter().map(Effect::Cancel).collect();
    expected.push(Effect::UpdateCards { approval_id: id });
    expected.push(Effect::AppendReceipt { approval_id: id, text: format!("Approved v1 by telegram:@alice at {}", rfc(now)) });
    expected.push(Effect::Wake);
    assert_eq!(t.effects, expected);

    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Normal, ApprovalState::Approved));
    assert_eq!(t.state.session.injection.as_deref(), Some(injection.as_str()));
    let p = latest(&t.state);
    assert_eq!(p.status, DecisionStatus::Approved);
    assert_eq!(p.decided_by.as_deref(), Some("telegram:@alice"));
    assert_eq!(p.decided_at, Some(Timestamp(now)));
    assert_eq!(p.injection.as_deref(), Some(injection.as_str()));
    assert!(p.timers.is_empty());
    assert_eq!(p.effective_hash(), hash);
    assert_eq!(audit(&t), vec![("telegram:@alice".into(), "approve".into(), Some(id), Some(1), "Approved v1 by telegram:@alice".into())]);
    assert_one_envelope(&injection, "approved");
}

#[test]
fn row_approve_by_operator() {
    let (s, id) = pending();
    let t = ok(&s, &operator(), decide(id, Verdict::Approve), &ctx(9));
    assert_eq!(latest(&t.state).decided_by.as_deref(), Some("operator:ci"));
    assert_eq!(actions(&t), vec![pair("operator:ci", "approve")]);
}

#[test]
fn row_approve_resets_the_step_list_to_the_approved_plan() {
    // While waiting the agent may keep a scratch step list; what it executes
    // (and what the live card and hydration show) is what was approved.
    let (s, id) = pending();
    let cmd = Command::UpdatePlan { steps: updates(steps(&["Drop the prod table"])), merge: true, explanation: None };
    let s = ok(&s, &Actor::Agent, cmd, &ctx(0)).state;
    assert_eq!(s.session.steps.len(), 4);
    let t = ok(&s, &alice(), decide(id, Verdict::Approve), &ctx(9));
    assert_eq!(t.state.session.steps, plan().steps);
    assert_eq!(StatusView::of(&t.state).steps, plan().steps);
    assert!(!view::hydration(&t.state, plangate_engine::view::Rehydration::Compact).unwrap().contains("Drop the prod table"));
}

#[test]
fn row_approve_refused_while_subagents_are_open() {
    let (s, id) = pending();
    let s = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-2".into()), &ctx(0)).state;
    let s = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx(0)).state;
    let r = refused(&s, &alice(), decide(id, Verdict::Approve), &ctx(9));
    assert_eq!(r, Refusal::SubagentsOpen(vec!["run-1".into(), "run-2".into()]));
    assert!(r.to_string().contains("2 subagent run(s) are still open (run-1, run-2)"), "{r}");
}

// --------------------------------------------------- row: edit(id, plan')

#[test]
fn row_edit_goes_to_normal_edited_and_carries_the_edited_plan() {
    let (s, id) = pending();
    let now = T0 + 7 * MIN;
    let t = ok(&s, &bob(), decide(id, Verdict::Edit(edited_plan())), &ctx_at(now, 9));
    let edited_hash = plan_hash(&edited_plan(), None);
    let injection = format!(
        "[PLAN_DECISION]: edited\nPlan v1 \"Add retries\" (approval {id}) was approved with edits by slack:@bob. \
         Plan mode is off: execute the edited plan below ({edited_hash}), not your original.\n\
         1. Read the client\n2. Add capped backoff\n[/PLAN_DECISION]"
    );
    assert_eq!((t.state.session.mode, t.state.session.approval), (Mode::Normal, ApprovalState::Edited));
    assert_eq!(t.state.session.steps, edited_plan().steps);
    assert_eq!(t.state.session.injection.as_deref(), Some(injection.as_str()));
    let p = latest(&t.state);
    assert_eq!(p.status, DecisionStatus::Edited);
    assert_eq!(p.edited_plan.as_ref(), Some(&edited_plan()));
    assert_eq!(p.plan_hash, plan_hash(&plan(), None), "what was proposed stays recorded");
    assert_eq!(p.effective_hash(), edited_hash);
    assert_eq!(DecisionView::of(p).plan_hash, edited_hash);
    let mut expected: Vec<Effect> = timers(id, T0).into_iter().map(Effect::Cancel).collect();
    expected.push(Effect::UpdateCards { approval_id: id });
    expected.push(Effect::AppendReceipt { approval_id: id, text: format!("Approved v1 with edits by slack:@bob at {}", rfc(now)) });
    expected.push(Effect::Wake);
    assert_eq!(t.effects, expected);
    assert_eq!(audit(&t), vec![("slack:@bob".into(), "edit".into(), Some(id), Some(1), "Approved v1 with edits by slack:@bob".into())]);
    assert_one_envelope(&injection, "edited");
}

#[test]
fn row_edit_refusals() {
    let (s, id) = pending();
    let r = refused(&s, &alice(), decide(id, Verdict::Edit(Plan::titled(""))), &ctx(9));
    assert_eq!(r, Refusal::InvalidPlan(PlanError::TitleRequired));
    let s = ok(&s, &Actor::Agent, Command::RegisterSubagent("run-1".into()), &ctx(0)).state;
    let r = refused(&s, &alice(), decide(id, Verdict::Edit(edited_plan())), &ctx(9));
    assert_eq!(r, Refusal::SubagentsOpen(vec!["run-1".into()]));
}

#[test]
fn each_reminder_sent_is_counted_on_its_proposal() {
    let (s, v1) = pending();
    assert_eq!(latest(&s).reminders_sent, 0);
    let mut due = timers(v1, T0).into_iter().filter(|t| matches!(t.kind, TimerKind::Nudge(_)));
    let first = due.next().expect("a first reminder");
    let s = ok(&s, &Actor::Scheduler, Command::TimerFired(first.clone()), &ctx_at(first.due.0, 0)).state;
    assert_eq!(latest(&s).reminders_sent, 1);
    let second = due.next().expect("a second reminder");
    let s = ok(&s, &Actor::Scheduler, Command::TimerFired(second.clone()), &ctx_at(second.due.0, 0)).state;
    assert_eq!(latest(&s).reminders_sent, 2);
}
