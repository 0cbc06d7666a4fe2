//! Claims: who is on a pending plan, and the others' reminders held until
//! the claim runs out (`crate::claim`; docs/STATE_MACHINE.md, "claim").

use super::*;

/// The default claim: 30 minutes.
const CLAIM: i64 = 30 * MIN;

fn claim(id: ApprovalId) -> Command {
    Command::Claim { approval_id: id }
}

fn due(state: &State) -> Vec<(TimerKind, i64)> {
    latest(state).timers.iter().map(|t| (t.kind, t.due.0 - T0)).collect()
}

fn fire(state: &State, timer: Timer, now: i64) -> Transition {
    ok(state, &Actor::Scheduler, Command::TimerFired(timer), &ctx_at(now, 0))
}

fn timer_of(state: &State, kind: TimerKind) -> Timer {
    latest(state).timers.iter().find(|t| t.kind == kind).cloned().expect("the timer")
}

/// The timers of v1 with reminders 1 and 2 held until `until` (after T0);
/// reminder 3 (60 min) and the timeout (24 h) where they were.
fn held_until(until: i64) -> Vec<(TimerKind, i64)> {
    vec![(TimerKind::Nudge(1), until), (TimerKind::Nudge(2), until), (TimerKind::Nudge(3), 60 * MIN), (TimerKind::Timeout, TIMEOUT as i64)]
}

/// alice claims v1 five minutes after it was proposed: until 14:35.
fn claimed() -> (State, ApprovalId) {
    let (s, id) = pending();
    (ok(&s, &alice(), claim(id), &ctx_at(T0 + 5 * MIN, 2)).state, id)
}

#[test]
fn a_claim_names_the_claimer_on_the_card_and_holds_the_reminders_due_before_it_ends() {
    let (s, id) = pending();
    let before = latest(&s).timers.clone();
    let t = ok(&s, &alice(), claim(id), &ctx_at(T0 + 5 * MIN, 2));
    let until = 5 * MIN + CLAIM;
    // Reminders 1 (10 min) and 2 (30 min) wait for the claim's end; 3 (60
    // min) and the timeout (24 h) stay where they were.
    assert_eq!(due(&t.state), held_until(until));
    let c = latest(&t.state).claim.clone().expect("claimed");
    assert_eq!((c.by.as_str(), c.identity.as_str(), c.at.0, c.until.0), ("telegram:@alice", "telegram:111", T0 + 5 * MIN, T0 + until));
    assert_eq!(latest(&t.state).status, DecisionStatus::Pending);
    assert!(t.effects.contains(&Effect::UpdateCards { approval_id: id }), "every card shows the claim: {:?}", t.effects);
    assert!(t.effects.contains(&Effect::Cancel(before[0].clone())));
    assert!(t.effects.contains(&Effect::Schedule(Timer { due: Timestamp(T0 + until), ..before[0].clone() })));
    assert_eq!(
        audit(&t),
        vec![(
            "telegram:@alice".into(),
            "claim".into(),
            Some(id),
            Some(1),
            "claimed by telegram:@alice until 14:35 UTC; 2 reminder(s) held until then".into()
        )]
    );
    // The store keeps the chain's head: the first reminder, now at the claim's end.
    assert!(chains::kept(&t.state).iter().any(|k| k.kind == TimerKind::Nudge(1) && k.due.0 == T0 + until));
    let view = card::card(latest(&t.state), Some(&t.state), Timestamp(T0 + 6 * MIN));
    assert_eq!(view.progress.first().map(String::as_str), Some("🙋 Claimed by telegram:@alice until 14:35 UTC"));
    assert!(card::render_text(&view, true).contains("/plan claim #"));
    assert!(view.actions().contains(&card::CardAction::Claim));
    // Once it ran out, the card no longer says so.
    let later = card::card(latest(&t.state), Some(&t.state), Timestamp(T0 + until));
    assert!(later.progress.iter().all(|l| !l.contains("Claimed")), "{:?}", later.progress);
}

#[test]
fn no_reminder_goes_out_while_claimed_and_the_held_ones_go_out_as_one_when_it_runs_out() {
    let (s, id) = pending();
    let original = timer_of(&s, TimerKind::Nudge(1));
    let (s, _) = claimed();
    // The reminder as first scheduled (10 min) is not the proposal's any more: nothing.
    let t = fire(&s, original, T0 + 10 * MIN);
    assert!(!t.changed && t.effects.is_empty(), "{:?}", t.effects);
    // At the claim's end both held reminders are due: one reminder, numbered 2.
    let end = T0 + 5 * MIN + CLAIM;
    let t = fire(&s, timer_of(&s, TimerKind::Nudge(1)), end);
    assert!(t.effects.contains(&Effect::Nudge { approval_id: id, number: 2 }), "{:?}", t.effects);
    assert_eq!(t.effects.iter().filter(|e| matches!(e, Effect::Nudge { .. })).count(), 1);
    assert!(t.effects.contains(&Effect::UpdateCards { approval_id: id }), "the claim comes off the cards");
    assert_eq!(latest(&t.state).claim, None);
    assert_eq!(due(&t.state), vec![(TimerKind::Nudge(3), 60 * MIN), (TimerKind::Timeout, TIMEOUT as i64)]);
    assert_eq!(
        actions(&t),
        vec![pair("scheduler", "claim_expired"), pair("scheduler", "nudge")],
        "the claim's end, then the reminder: {:?}",
        audit(&t)
    );
    assert!(audit(&t)[0].4.contains("telegram:@alice's claim ran out at 14:35 UTC"), "{:?}", audit(&t));
    // The ladder goes on: reminder 3 at 60 min.
    let t = fire(&t.state, timer_of(&t.state, TimerKind::Nudge(3)), T0 + 60 * MIN);
    assert!(t.effects.contains(&Effect::Nudge { approval_id: id, number: 3 }));
}

#[test]
fn another_persons_claim_is_refused_naming_the_claimer_until_it_runs_out() {
    let (s, id) = claimed();
    let r = refused(&s, &bob(), claim(id), &ctx_at(T0 + 6 * MIN, 3));
    match r {
        Refusal::InvalidState(m) => assert!(m.starts_with("telegram:@alice claimed v1 until 14:35 UTC: they are on it."), "{m}"),
        other => panic!("{other:?}"),
    }
    // bob may still decide it: a claim is no lock.
    let t = ok(&s, &bob(), revise(id, "smaller"), &ctx_at(T0 + 7 * MIN, 3));
    assert_eq!(latest(&t.state).status, DecisionStatus::Rejected);
    // Once it ran out, bob may claim it.
    let t = ok(&s, &bob(), claim(id), &ctx_at(T0 + 5 * MIN + CLAIM, 3));
    assert_eq!(latest(&t.state).claim.as_ref().map(|c| c.by.as_str()), Some("slack:@bob"));
}

#[test]
fn the_claimer_claiming_again_extends_it_and_holds_the_reminders_longer() {
    let (s, id) = claimed();
    let t = ok(&s, &alice(), claim(id), &ctx_at(T0 + 20 * MIN, 4));
    let until = 20 * MIN + CLAIM;
    assert_eq!(latest(&t.state).claim.as_ref().map(|c| c.until.0 - T0), Some(until));
    assert_eq!(due(&t.state), held_until(until));
    assert!(audit(&t)[0].4.starts_with("claim extended by telegram:@alice until 14:50 UTC"), "{:?}", audit(&t));
}

#[test]
fn a_decided_or_superseded_plan_cannot_be_claimed() {
    let (s, id) = approved();
    match refused(&s, &alice(), claim(id), &ctx_at(T0 + 6 * MIN, 5)) {
        Refusal::Stale(m) => assert!(m.contains("telegram:@alice"), "who decided it: {m}"),
        other => panic!("{other:?}"),
    }
    let (s, v1) = pending();
    let s = ok(&s, &Actor::Agent, propose_cmd(plan_v2()), &ctx_at(T0 + MIN, 6)).state;
    match refused(&s, &alice(), claim(v1), &ctx_at(T0 + 2 * MIN, 7)) {
        Refusal::Stale(m) => assert!(m.contains("superseded by v2"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_a_person_who_may_decide_the_plan_may_claim_it() {
    let (s, id) = pending();
    for actor in [Actor::Agent, Actor::Scheduler] {
        assert!(matches!(refused(&s, &actor, claim(id), &ctx(8)), Refusal::Forbidden(_)), "{}", actor.label());
    }
    let mut listed = ctx_at(T0 + MIN, 8);
    listed.approvals.approvers = plangate_engine::authority::Approvers::listed(["telegram:111"]);
    match refused(&s, &bob(), claim(id), &listed) {
        Refusal::Forbidden(m) => assert!(m.contains("not on the approver list") && m.contains("claim a plan"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(ok(&s, &alice(), claim(id), &listed).changed);
    assert!(ok(&s, &operator(), claim(id), &listed).changed, "the operator is on every list");
}

#[test]
fn a_claim_never_moves_the_timeout_and_a_decision_cancels_the_held_reminders() {
    let (s, id) = pending();
    // A claim longer than the plan may wait.
    let mut long = ctx_at(T0 + MIN, 10);
    long.timers.claim_timeout_ms = 2 * TIMEOUT;
    let t = ok(&s, &alice(), claim(id), &long);
    assert_eq!(timer_of(&t.state, TimerKind::Timeout).due.0, T0 + TIMEOUT as i64);
    let t = fire(&t.state, timer_of(&t.state, TimerKind::Timeout), T0 + TIMEOUT as i64);
    assert_eq!(latest(&t.state).status, DecisionStatus::TimedOut);
    assert!(latest(&t.state).timers.is_empty());
    // A decision while claimed cancels the held reminders with the rest.
    let (s, _) = claimed();
    let held = timer_of(&s, TimerKind::Nudge(1));
    let t = ok(&s, &alice(), decide(id, Verdict::Approve), &ctx_at(T0 + 6 * MIN, 11));
    assert!(t.effects.contains(&Effect::Cancel(held)), "{:?}", t.effects);
    assert!(latest(&t.state).timers.is_empty());
}
