//! Issue 29, the rest: `[approvals] amendments = "flag"` and a plan's
//! scope, driven through the public `apply` and `gate_call` only.

use plangate_engine::scope::Target;
use plangate_engine::view::StatusView;
use plangate_engine::*;
use serde_json::json;

/// 2026-11-30T14:00:00Z
const T0: i64 = 1_796_047_200_000;

fn ctx(seed: u8, approvals: &ApprovalPolicy) -> Ctx {
    let timers = TimerPolicy {
        nudges_ms: vec![600_000],
        timeout_ms: Some(86_400_000),
        ladder: Vec::new(),
        subagent_expiry_ms: None,
        ..TimerPolicy::default()
    };
    Ctx { now: Timestamp(T0 + i64::from(seed) * 1000), random: [seed; 16], timers, approvals: approvals.clone() }
}

fn flag() -> ApprovalPolicy {
    ApprovalPolicy { amendments: amendment::Policy::Flag, ..ApprovalPolicy::default() }
}

fn alice() -> Actor {
    Actor::Human { id: "telegram:111".into(), name: "telegram:@alice".into() }
}

fn ok(state: &State, actor: &Actor, command: Command, ctx: &Ctx) -> Transition {
    apply(state, actor, command, ctx).unwrap_or_else(|e| panic!("refused: {e}"))
}

fn add(texts: &[&str]) -> Command {
    let steps = texts.iter().map(|t| StepUpdate::from(Step::pending(*t))).collect();
    Command::UpdatePlan { steps, merge: true, explanation: None }
}

/// "Fix the API" (steps, and `scope` when given) approved by alice.
fn approved(scope: Option<&[&str]>, approvals: &ApprovalPolicy) -> State {
    let s = ok(&State::new(SessionKey::new("demo", "d1")), &Actor::Agent, Command::Enter { reason: None }, &ctx(1, approvals)).state;
    let scope = scope.map(|globs| Scope { paths: globs.iter().map(|g| g.to_string()).collect() });
    let plan = Plan { steps: vec![Step::pending("Fix the handler")], scope, ..Plan::titled("Fix the API") };
    let propose = Command::Propose { plan, markdown: None, requested_by: None, harness: Harness::ClaudeCode, project: None };
    let s = ok(&s, &Actor::Agent, propose, &ctx(2, approvals)).state;
    let s = ok(&s, &alice(), Command::Decide { approval_id: ApprovalId([2; 16]), verdict: Verdict::Approve }, &ctx(3, approvals)).state;
    assert_eq!(s.session.approval, ApprovalState::Approved);
    s
}

fn write(state: &State, file_path: &str, paths: Option<&[Target]>) -> plangate_gate::Verdict {
    let input = json!({"file_path": file_path, "content": "x"});
    let call = GateCall { tool: "Write", input: &input, harness: Harness::ClaudeCode, plan_file: false, harness_plan_mode: false, paths };
    gate_call(&state.session, GateScope::ApprovedPlan, &plangate_gate::Policy::default(), &call)
}

#[test]
fn flagged_steps_go_through_marked_and_notify_once_per_batch() {
    let s = approved(None, &flag());
    let t = ok(&s, &Actor::Agent, add(&["Also rotate the keys"]), &ctx(4, &flag()));
    // No wait: the gate stays open, nothing is pending.
    assert_eq!(t.state.session.amendment_pending, None);
    assert!(write(&t.state, "src/a.rs", None).is_allow());
    let p = t.state.latest.as_ref().unwrap();
    assert_eq!(p.status, DecisionStatus::Approved);
    assert!(p.amends.as_ref().is_some_and(|a| a.flagged));
    // One notice: the amendment's card.
    assert_eq!(t.effects.iter().filter(|e| matches!(e, Effect::PostCards { .. })).count(), 1);
    assert!(t.audit.iter().any(|a| a.action == "amend" && a.detail.contains("added after approval")), "{:?}", t.audit);
    let card = card::card(p, Some(&t.state), Timestamp(T0 + 5000));
    let lines: Vec<&str> = card.steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(lines, ["Fix the handler", "+ Also rotate the keys (added after approval)"]);
    assert!(
        card.receipt.as_deref().is_some_and(|r| r.contains("added after approval") && r.contains("nobody approved")),
        "{:?}",
        card.receipt
    );
    assert!(StatusView::of(&t.state).amendment.is_some_and(|a| a.flagged));
    // The same batch again, with progress only: no second notice, no new version.
    let mut done = Step::pending("Also rotate the keys");
    done.status = StepStatus::InProgress;
    let again =
        ok(&t.state, &Actor::Agent, Command::UpdatePlan { steps: vec![done.into()], merge: true, explanation: None }, &ctx(5, &flag()));
    assert!(!again.effects.iter().any(|e| matches!(e, Effect::PostCards { .. })));
    assert_eq!(again.state.session.version, t.state.session.version);
    // Approved steps stay locked under flag too.
    let rewrite = Command::UpdatePlan { steps: vec![Step::pending("Drop the database").into()], merge: false, explanation: None };
    assert!(matches!(apply(&again.state, &Actor::Agent, rewrite, &ctx(6, &flag())), Err(Refusal::ApprovedStepsLocked(_))));
    // A second batch is a second notice.
    let next = ok(&again.state, &Actor::Agent, add(&["Update the docs"]), &ctx(7, &flag()));
    assert_eq!(next.effects.iter().filter(|e| matches!(e, Effect::PostCards { .. })).count(), 1);
    let card = card::card(next.state.latest.as_ref().unwrap(), Some(&next.state), Timestamp(T0 + 8000));
    assert!(card.steps.iter().filter(|s| s.text.ends_with("(added after approval)")).count() == 2, "{:?}", card.steps);
}

#[test]
fn ask_is_the_default_and_waits() {
    let s = approved(None, &ApprovalPolicy::default());
    let t = ok(&s, &Actor::Agent, add(&["Also rotate the keys"]), &ctx(4, &ApprovalPolicy::default()));
    assert!(t.state.session.amendment_pending.is_some());
    assert!(!write(&t.state, "src/a.rs", None).is_allow());
}

#[test]
fn a_scope_holds_file_tools_to_its_paths() {
    let s = approved(Some(&["src/api/**", "tests/**"]), &ApprovalPolicy::default());
    assert_eq!(s.session.scope, ["src/api/**", "tests/**"]);
    let card = card::card(s.latest.as_ref().unwrap(), Some(&s), Timestamp(T0 + 4000));
    assert!(card.summary.as_deref().is_some_and(|t| t.contains("Touches: src/api/**, tests/**")), "{:?}", card.summary);
    // Inside: allowed, as the hook sends it or as written.
    assert!(write(&s, "src/api/users.rs", None).is_allow());
    assert!(write(&s, "/p/src/api/users.rs", Some(&[Target::Path("src/api/users.rs".into())])).is_allow());
    // Outside the scope, naming it.
    let denied = write(&s, "src/payments/charge.rs", None);
    assert!(!denied.is_allow() && denied.reason().contains("src/api/**, tests/**") && denied.reason().contains("src/payments/charge.rs"));
    // Escapes: `..`, an absolute path the server cannot place, a link the hook resolved out of the tree,
    // and a hook claim that is not normalized.
    for (path, sent) in [
        ("src/api/../../../etc/passwd", None),
        ("/etc/passwd", None),
        ("src/api/link", Some(vec![Target::Outside("/etc/passwd".into())])),
        ("src/api/x", Some(vec![Target::Path("src/api/../../x".into())])),
    ] {
        let v = write(&s, path, sent.as_deref());
        assert!(!v.is_allow() && v.reason().contains("outside the session's working directory"), "{path}: {v:?}");
    }
    // Shell commands are not path-checked; other tools are unaffected.
    let input = json!({"command": "cargo test"});
    let bash =
        GateCall { tool: "Bash", input: &input, harness: Harness::ClaudeCode, plan_file: false, harness_plan_mode: false, paths: None };
    assert!(gate_call(&s.session, GateScope::ApprovedPlan, &plangate_gate::Policy::default(), &bash).is_allow());
}

#[test]
fn widening_the_scope_is_an_amendment() {
    let rules = ApprovalPolicy::default();
    let s = approved(Some(&["src/api/**"]), &rules);
    let input = json!({"file_path": "src/payments/charge.rs"});
    let call =
        GateCall { tool: "Edit", input: &input, harness: Harness::ClaudeCode, plan_file: false, harness_plan_mode: false, paths: None };
    assert_eq!(scope_widening(&s.session, &call), Some(vec!["src/payments/charge.rs".to_string()]));
    let t = ok(&s, &Actor::Agent, Command::WidenScope { paths: vec!["src/payments/charge.rs".into()] }, &ctx(4, &rules));
    let p = t.state.latest.clone().unwrap();
    assert_eq!(p.status, DecisionStatus::Pending);
    let card = card::card(&p, Some(&t.state), Timestamp(T0 + 5000));
    assert!(
        card.summary.as_deref().is_some_and(|s| s.contains("Claude wants to edit src/payments/charge.rs, outside src/api/**")),
        "{:?}",
        card.summary
    );
    // While it waits, nothing writes; asking again changes nothing.
    assert!(!write(&t.state, "src/api/x.rs", None).is_allow());
    let again = ok(&t.state, &Actor::Agent, Command::WidenScope { paths: vec!["src/payments/charge.rs".into()] }, &ctx(5, &rules));
    assert!(!again.changed);
    // Approved: the scope grows by that file, and only that file.
    let s = ok(&t.state, &alice(), Command::Decide { approval_id: p.approval_id, verdict: Verdict::Approve }, &ctx(6, &rules)).state;
    assert!(write(&s, "src/payments/charge.rs", None).is_allow());
    assert!(!write(&s, "src/payments/refund.rs", None).is_allow());
    assert!(s.session.injection.as_deref().is_some_and(|i| i.contains("+ may edit src/payments/charge.rs")));
    // Rejected: the scope stays, and the same path is not asked for again.
    let t = ok(&s, &Actor::Agent, Command::WidenScope { paths: vec!["src/payments/refund.rs".into()] }, &ctx(7, &rules));
    let id = t.state.latest.as_ref().unwrap().approval_id;
    let s = ok(&t.state, &alice(), Command::Decide { approval_id: id, verdict: Verdict::Revise("no".into()) }, &ctx(8, &rules)).state;
    assert!(!write(&s, "src/payments/refund.rs", None).is_allow());
    assert!(!ok(&s, &Actor::Agent, Command::WidenScope { paths: vec!["src/payments/refund.rs".into()] }, &ctx(9, &rules)).changed);
    // Under flag, widening still asks.
    let s = approved(Some(&["src/api/**"]), &flag());
    let t = ok(&s, &Actor::Agent, Command::WidenScope { paths: vec!["docs/x.md".into()] }, &ctx(4, &flag()));
    assert!(t.state.session.amendment_pending.is_some());
}

#[test]
fn a_markdown_plan_declares_its_scope_in_a_section() {
    let md = "# Fix the API\n\n## Steps\n1. Fix the handler\n\n## Scope\n- src/api/**\n- tests/**\n";
    let plan = plan::plan_from_markdown(md, None).unwrap();
    assert_eq!(plan.scope, Some(Scope { paths: vec!["src/api/**".into(), "tests/**".into()] }));
    assert!(plan::render_markdown(&plan).contains("## Scope\n\n- src/api/**\n- tests/**\n"));
    let bad = "# T\n## Steps\n1. a\n## Scope\n/etc/**\n";
    assert_eq!(plan::plan_from_markdown(bad, None).unwrap_err().rule(), "scope");
}
