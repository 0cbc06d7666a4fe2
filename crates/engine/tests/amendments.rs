//! Issue 29: an approval binds the agent to the steps a human approved.
//! The rows of `docs/STATE_MACHINE.md` for `update_plan` while executing and
//! for amendments, driven through the public `apply` only.

use plangate_engine::view::StatusView;
use plangate_engine::*;
use plangate_engine::{card, plan::plan_hash};

/// 2026-11-30T14:00:00Z
const T0: i64 = 1_796_047_200_000;
const TIMEOUT: u64 = 86_400_000;

fn ctx(seed: u8, approvals: ApprovalPolicy) -> Ctx {
    let timers = TimerPolicy {
        nudges_ms: vec![600_000],
        timeout_ms: Some(TIMEOUT),
        ladder: Vec::new(),
        subagent_expiry_ms: None,
        ..TimerPolicy::default()
    };
    Ctx { now: Timestamp(T0 + i64::from(seed) * 1000), random: [seed; 16], timers, approvals }
}

fn one(seed: u8) -> Ctx {
    ctx(seed, ApprovalPolicy::default())
}

fn alice() -> Actor {
    Actor::Human { id: "telegram:111".into(), name: "telegram:@alice".into() }
}

fn bob() -> Actor {
    Actor::Human { id: "slack:U2".into(), name: "slack:@bob".into() }
}

fn run(state: &State, actor: &Actor, command: Command, ctx: &Ctx) -> Result<Transition, Refusal> {
    apply(state, actor, command, ctx)
}

fn ok(state: &State, actor: &Actor, command: Command, ctx: &Ctx) -> State {
    match run(state, actor, command, ctx) {
        Ok(t) => t.state,
        Err(e) => panic!("refused: {e}"),
    }
}

/// Step texts with the status an update gives them.
type Steps<'a> = &'a [(&'a str, StepStatus)];

fn update(texts: Steps, merge: bool) -> Command {
    let steps = texts.iter().map(|(t, status)| StepUpdate { status: Some(*status), ..StepUpdate::from(Step::pending(*t)) }).collect();
    Command::UpdatePlan { steps, merge, explanation: None }
}

fn texts(state: &State) -> Vec<&str> {
    state.session.steps.iter().map(|s| s.step.as_str()).collect()
}

fn rm_rf(state: &State) -> plangate_gate::Verdict {
    gate(
        &state.session,
        GateScope::ApprovedPlan,
        &plangate_gate::Policy::default(),
        "Bash",
        &serde_json::json!({"command": "rm -rf /srv/db"}),
    )
}

fn allowed(state: &State) -> bool {
    matches!(rm_rf(state), plangate_gate::Verdict::Allow(_))
}

/// "Fix typo" with one step, approved by alice, under `approvals`.
fn approved(approvals: &ApprovalPolicy) -> (State, ApprovalId) {
    let c = |seed| ctx(seed, approvals.clone());
    let s = ok(&State::new(SessionKey::new("demo", "d1")), &Actor::Agent, Command::Enter { reason: None }, &c(1));
    let plan = Plan { steps: vec![Step::pending("Fix the typo in README")], ..Plan::titled("Fix typo") };
    let propose =
        Command::Propose { plan, markdown: None, requested_by: Some("telegram:333".into()), harness: Harness::Api, project: None };
    let s = ok(&s, &Actor::Agent, propose, &c(2));
    let id = ApprovalId([2; 16]);
    let s = ok(&s, &alice(), Command::Decide { approval_id: id, verdict: Verdict::Approve }, &c(3));
    let s = if approvals.required > 1 { ok(&s, &bob(), Command::Decide { approval_id: id, verdict: Verdict::Approve }, &c(4)) } else { s };
    assert_eq!(s.session.approval, ApprovalState::Approved);
    (s, id)
}

/// The approved session with "Also rotate all secrets" added: amendment v2, id `[5; 16]`.
fn amended(approvals: &ApprovalPolicy) -> (State, ApprovalId) {
    let (s, _) = approved(approvals);
    let t = run(&s, &Actor::Agent, update(&[("Also rotate all secrets", StepStatus::Pending)], true), &ctx(5, approvals.clone()));
    let t = t.unwrap_or_else(|e| panic!("{e}"));
    assert!(t.effects.contains(&Effect::PostCards { approval_id: ApprovalId([5; 16]) }));
    (t.state, ApprovalId([5; 16]))
}

#[test]
fn rewriting_or_removing_approved_steps_is_refused_and_status_is_free() {
    let (s, _) = approved(&ApprovalPolicy::default());
    let table: [(Steps, bool, bool); 5] = [
        // Issue 29's reproduction: a whole new list.
        (&[("Drop the production database", StepStatus::InProgress), ("Force-push main", StepStatus::Pending)], false, false),
        // Removing the approved step.
        (&[], false, false),
        // Rewriting its text.
        (&[("Fix the typo in README and delete the CI config", StepStatus::Pending)], false, false),
        // Its status, whole list or merged.
        (&[("Fix the typo in README", StepStatus::InProgress)], false, true),
        (&[("Fix the typo in README", StepStatus::Pending)], true, true),
    ];
    for (steps, merge, accepted) in table {
        match run(&s, &Actor::Agent, update(steps, merge), &one(9)) {
            Ok(t) => {
                assert!(accepted, "{steps:?} was accepted");
                assert_eq!(texts(&t.state), ["Fix the typo in README"]);
                assert!(allowed(&t.state));
            }
            Err(Refusal::ApprovedStepsLocked(m)) => {
                assert!(!accepted, "{steps:?}: {m}");
                assert!(m.contains("\"Fix the typo in README\"") && m.contains("propose a new version"), "{m}");
            }
            Err(other) => panic!("{steps:?}: {other:?}"),
        }
    }
}

#[test]
fn an_added_step_is_an_amendment_that_shuts_the_gate_until_decided() {
    let (before, first) = approved(&ApprovalPolicy::default());
    let (s, id) = amended(&ApprovalPolicy::default());
    let p = s.latest.as_ref().expect("the amendment");
    assert_eq!((p.version, p.status, p.amends.as_ref().map(|a| a.of_version)), (2, DecisionStatus::Pending, Some(1)));
    assert_ne!(id, first);
    assert_eq!(p.plan_hash, plan_hash(&p.plan, None));
    assert_eq!(p.timers.len(), 2, "a reminder and a timeout, as for plans");
    assert_eq!((s.session.mode, s.session.approval, s.session.amendment_pending), (Mode::Normal, ApprovalState::Approved, Some(id)));
    assert_eq!(texts(&s), ["Fix the typo in README", "Also rotate all secrets"]);
    match rm_rf(&s) {
        plangate_gate::Verdict::Deny(reason) => assert!(reason.contains("amendment v2"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // Read-only calls still run.
    let read =
        gate(&s.session, GateScope::ApprovedPlan, &plangate_gate::Policy::default(), "Read", &serde_json::json!({"file_path": "README"}));
    assert!(matches!(read, plangate_gate::Verdict::Allow(_)), "{read:?}");
    let view = serde_json::to_value(StatusView::of(&s)).expect("json");
    assert_eq!(view["amendment"]["status"], "pending");
    assert_eq!(view["amendment"]["added"][0]["step"], "Also rotate all secrets");
    assert!(serde_json::to_value(StatusView::of(&before)).expect("json").get("amendment").is_none());

    // The amendment card: titled as one, the added step marked.
    let c = card::card(p, Some(&s), Timestamp(T0));
    assert_eq!(c.title, "Amendment to v1: Fix typo");
    let lines: Vec<&str> = c.steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(lines, ["Fix the typo in README", "+ Also rotate all secrets"]);
    assert!(c.changes.as_deref().is_some_and(|d| d.contains("since v1")), "{:?}", c.changes);
    // The approved plan's card never shows the added step under "Approved".
    let original = before.latest.as_ref().expect("v1");
    let c = card::card(original, Some(&s), Timestamp(T0));
    assert_eq!(c.steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(), ["Fix the typo in README"]);

    // The agent decides nothing, and may not drop the step while it waits.
    let refusal = run(&s, &Actor::Agent, Command::Decide { approval_id: id, verdict: Verdict::Approve }, &one(6)).err();
    assert!(matches!(refusal, Some(Refusal::Forbidden(_))), "{refusal:?}");
    let refusal = run(&s, &Actor::Agent, update(&[("Fix the typo in README", StepStatus::InProgress)], false), &one(6)).err();
    assert!(matches!(refusal, Some(Refusal::InvalidState(_))), "{refusal:?}");
    // Progress on it is free.
    assert!(run(&s, &Actor::Agent, update(&[("Fix the typo in README", StepStatus::InProgress)], true), &one(6)).is_ok());
}

#[test]
fn an_approved_amendment_binds_the_amended_plan() {
    let (s, id) = amended(&ApprovalPolicy::default());
    let s = ok(&s, &bob(), Command::Decide { approval_id: id, verdict: Verdict::Approve }, &one(7));
    let p = s.latest.as_ref().expect("the amendment");
    assert_eq!(p.status, DecisionStatus::Approved);
    assert_eq!(p.effective_hash(), plan_hash(&p.plan, None));
    assert_eq!(s.session.amendment_pending, None);
    assert!(allowed(&s));
    assert_eq!(s.session.approved_steps, ["Fix the typo in README", "Also rotate all secrets"]);
    let text = s.session.injection.as_deref().unwrap_or_default();
    assert!(text.starts_with("[PLAN_DECISION]: approved") && text.contains("+ Also rotate all secrets"), "{text}");
    // Now both are locked.
    let refusal = run(&s, &Actor::Agent, update(&[("Fix the typo in README", StepStatus::Pending)], false), &one(8)).err();
    assert!(matches!(refusal, Some(Refusal::ApprovedStepsLocked(_))), "{refusal:?}");
    // Its card, decided, shows the live list with the added step marked.
    let c = card::card(p, Some(&s), Timestamp(T0));
    assert_eq!(c.steps.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(), ["Fix the typo in README", "+ Also rotate all secrets"]);
}

#[test]
fn a_rejected_or_timed_out_amendment_drops_its_steps_and_the_plan_goes_on() {
    let (s, id) = amended(&ApprovalPolicy::default());
    let rejected = ok(&s, &bob(), Command::Decide { approval_id: id, verdict: Verdict::Revise("not the secrets".into()) }, &one(7));
    let timeout = s.latest.as_ref().and_then(|p| p.timers.iter().find(|t| t.kind == TimerKind::Timeout)).cloned().expect("timeout");
    let timed_out = ok(&s, &Actor::Scheduler, Command::TimerFired(timeout), &one(8));
    for (after, status, words) in
        [(rejected, DecisionStatus::Rejected, "not the secrets"), (timed_out, DecisionStatus::TimedOut, "NOT approved")]
    {
        assert_eq!(after.latest.as_ref().map(|p| p.status), Some(status));
        assert_eq!(texts(&after), ["Fix the typo in README"]);
        assert_eq!(
            (after.session.mode, after.session.approval, after.session.amendment_pending),
            (Mode::Normal, ApprovalState::Approved, None)
        );
        assert!(allowed(&after));
        let text = after.session.injection.as_deref().unwrap_or_default();
        assert!(text.contains(words) && text.contains("Also rotate all secrets"), "{text}");
        let view = serde_json::to_value(StatusView::of(&after)).expect("json");
        assert_eq!(view["amendment"]["status"], status.as_str());
    }
}

#[test]
fn an_amendment_is_held_to_the_same_approver_rules() {
    let rules = ApprovalPolicy { required: 2, forbid_self: true, ..ApprovalPolicy::default() };
    let (s, id) = amended(&rules);
    let carol = Actor::Human { id: "telegram:333".into(), name: "telegram:@carol".into() };
    let refusal = run(&s, &carol, Command::Decide { approval_id: id, verdict: Verdict::Approve }, &ctx(6, rules.clone())).err();
    assert!(matches!(refusal, Some(Refusal::Forbidden(ref m)) if m.contains("separation of duties")), "{refusal:?}");
    let s = ok(&s, &alice(), Command::Decide { approval_id: id, verdict: Verdict::Approve }, &ctx(7, rules.clone()));
    assert_eq!(s.session.amendment_pending, Some(id), "one of two approvals");
    assert!(!allowed(&s));
    let s = ok(&s, &bob(), Command::Decide { approval_id: id, verdict: Verdict::Approve }, &ctx(8, rules));
    assert_eq!(s.latest.as_ref().and_then(|p| p.decided_by.as_deref()), Some("telegram:@alice and slack:@bob"));
    assert!(allowed(&s));
}

#[test]
fn extending_a_waiting_amendment_supersedes_it() {
    let (s, id) = amended(&ApprovalPolicy::default());
    let t =
        run(&s, &Actor::Agent, update(&[("Update the changelog", StepStatus::Pending)], true), &one(9)).unwrap_or_else(|e| panic!("{e}"));
    let retired = t.retired.as_ref().expect("the first amendment");
    assert_eq!((retired.approval_id, retired.status, retired.superseded_by), (id, DecisionStatus::Superseded, Some(3)));
    let p = t.state.latest.as_ref().expect("the second");
    let added: Vec<&str> = p.amends.iter().flat_map(|a| &a.added).map(|s| s.step.as_str()).collect();
    assert_eq!(added, ["Also rotate all secrets", "Update the changelog"]);
    assert_eq!(p.amends.as_ref().map(|a| a.of_version), Some(1));
    assert_eq!(t.state.session.amendment_pending, Some(ApprovalId([9; 16])));
}

#[test]
fn after_a_rejection_a_new_amendment_still_amends_the_approved_version() {
    let (s, id) = amended(&ApprovalPolicy::default());
    let s = ok(&s, &bob(), Command::Decide { approval_id: id, verdict: Verdict::Revise("no".into()) }, &one(7));
    let s = ok(&s, &Actor::Agent, update(&[("Update the changelog", StepStatus::Pending)], true), &one(8));
    let p = s.latest.as_ref().expect("the new amendment");
    assert_eq!((p.version, p.amends.as_ref().map(|a| a.of_version)), (3, Some(1)));
    assert_eq!(texts(&s), ["Fix the typo in README", "Update the changelog"]);
    assert_eq!(card::card(p, Some(&s), Timestamp(T0)).title, "Amendment to v1: Fix typo");
}
