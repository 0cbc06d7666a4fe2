//! Every transition that opens the gate × every rule about who may open it,
//! through the public `apply` and the real `gate()`: the table of issue 26.
//! A cell passes when the gate lets `rm -rf` through exactly when the rule
//! says the actor(s) may open it, and a refused actor changed nothing.

use plangate_engine::authority::{Approvers, Opening};
use plangate_engine::*;
use serde_json::json;

const T0: i64 = 1_796_047_200_000;

fn human(id: &str, name: &str) -> Actor {
    Actor::Human { id: id.into(), name: name.into() }
}
fn alice() -> Actor {
    human("telegram:111", "telegram:@alice")
}
fn bob() -> Actor {
    human("slack:U2", "slack:@bob")
}
/// Asked for the work; an approver too, but never of it under `forbid_self`.
fn carol() -> Actor {
    human("telegram:333", "telegram:@carol")
}
/// In the chat, on no approver list.
fn mallory() -> Actor {
    human("telegram:666", "telegram:@mallory")
}

fn rules(required: u32, forbid_self: bool) -> ApprovalPolicy {
    ApprovalPolicy {
        required,
        forbid_self,
        approvers: Approvers::listed(["telegram:111", "slack:U2", "telegram:333"]),
        requested_by: Some("telegram:333".to_string()),
        amendments: Default::default(),
        auto_continue: Default::default(),
        step_up: false,
    }
}

fn ctx(n: u8, approvals: &ApprovalPolicy) -> Ctx {
    Ctx { now: Timestamp(T0 + i64::from(n) * 1000), random: [n; 16], timers: TimerPolicy::default(), approvals: approvals.clone() }
}

fn plan(title: &str) -> Plan {
    Plan { steps: ["Read the table", "Drop the table"].into_iter().map(Step::pending).collect(), ..Plan::titled(title) }
}

/// Where each transition starts from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum From {
    /// v1 pending, requested by carol.
    Pending,
    /// In plan mode, nothing proposed yet.
    Planning,
    /// v1 cancelled: halted.
    Halted,
}

#[derive(Debug, Clone, Copy)]
struct Transition {
    name: &'static str,
    opening: Opening,
    from: From,
}

const TRANSITIONS: [Transition; 7] = [
    Transition { name: "approve", opening: Opening::Approve, from: From::Pending },
    Transition { name: "approve with a note", opening: Opening::Approve, from: From::Pending },
    Transition { name: "edit", opening: Opening::Edit, from: From::Pending },
    Transition { name: "release a pending plan", opening: Opening::Release, from: From::Pending },
    Transition { name: "release while planning", opening: Opening::Release, from: From::Planning },
    Transition { name: "release a halted session", opening: Opening::Release, from: From::Halted },
    Transition { name: "auto mode, then a proposal", opening: Opening::Auto, from: From::Planning },
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    Agent,
    Scheduler,
    NotAnApprover,
    RequesterUnderForbidSelf,
    RequesterWithoutForbidSelf,
    QuorumOfTwoOneApprover,
    QuorumOfTwoSameApproverTwice,
    QuorumOfTwoTwoApprovers,
    Approver,
    Operator,
}

const RULES: [Rule; 10] = [
    Rule::Agent,
    Rule::Scheduler,
    Rule::NotAnApprover,
    Rule::RequesterUnderForbidSelf,
    Rule::RequesterWithoutForbidSelf,
    Rule::QuorumOfTwoOneApprover,
    Rule::QuorumOfTwoSameApproverTwice,
    Rule::QuorumOfTwoTwoApprovers,
    Rule::Approver,
    Rule::Operator,
];

impl Rule {
    fn policy(self) -> ApprovalPolicy {
        match self {
            Rule::RequesterUnderForbidSelf => rules(1, true),
            Rule::QuorumOfTwoOneApprover | Rule::QuorumOfTwoSameApproverTwice | Rule::QuorumOfTwoTwoApprovers => rules(2, false),
            _ => rules(1, false),
        }
    }

    fn actors(self) -> Vec<Actor> {
        match self {
            Rule::Agent => vec![Actor::Agent],
            Rule::Scheduler => vec![Actor::Scheduler],
            Rule::NotAnApprover => vec![mallory()],
            Rule::RequesterUnderForbidSelf | Rule::RequesterWithoutForbidSelf => vec![carol()],
            Rule::QuorumOfTwoOneApprover => vec![alice()],
            Rule::QuorumOfTwoSameApproverTwice => vec![alice(), alice()],
            Rule::QuorumOfTwoTwoApprovers => vec![alice(), bob()],
            Rule::Approver => vec![alice()],
            Rule::Operator => vec![Actor::Operator { name: "ops".into() }],
        }
    }

    /// Whether the rule lets `opening` open the gate.
    fn opens(self, opening: Opening) -> bool {
        match self {
            Rule::Agent
            | Rule::Scheduler
            | Rule::NotAnApprover
            | Rule::RequesterUnderForbidSelf
            | Rule::QuorumOfTwoOneApprover
            | Rule::QuorumOfTwoSameApproverTwice => false,
            // Auto mode cannot count distinct approvers: refused under a quorum.
            Rule::QuorumOfTwoTwoApprovers => opening != Opening::Auto,
            Rule::RequesterWithoutForbidSelf | Rule::Approver | Rule::Operator => true,
        }
    }
}

fn start(from: From, policy: &ApprovalPolicy) -> State {
    let run = |state: &State, actor: &Actor, command, n| match apply(state, actor, command, &ctx(n, policy)) {
        Ok(t) => t.state,
        Err(e) => panic!("setup refused: {e}"),
    };
    let planning = run(&State::new(SessionKey::new("demo", "s1")), &Actor::Agent, Command::Enter { reason: None }, 1);
    if from == From::Planning {
        return planning;
    }
    let propose = Command::Propose {
        plan: plan("v1"),
        markdown: None,
        requested_by: Some("telegram:333".into()),
        harness: plangate_engine::Harness::Api,
        project: None,
    };
    let pending = run(&planning, &Actor::Agent, propose, 2);
    if from == From::Pending {
        return pending;
    }
    let id = pending.latest.as_ref().map(|p| p.approval_id).expect("v1");
    run(&pending, &Actor::Operator { name: "ops".into() }, Command::CancelApproval(id), 3)
}

fn command(tr: &Transition, state: &State) -> Command {
    let id = state.latest.as_ref().map(|p| p.approval_id).unwrap_or(ApprovalId([0; 16]));
    match (tr.opening, tr.name) {
        (Opening::Approve, "approve with a note") => {
            Command::Decide { approval_id: id, verdict: Verdict::ApproveWith(Terms { note: Some("careful".into()), except: vec![] }) }
        }
        (Opening::Approve, _) => Command::Decide { approval_id: id, verdict: Verdict::Approve },
        (Opening::Edit, _) => Command::Decide { approval_id: id, verdict: Verdict::Edit(plan("edited")) },
        (Opening::Release, _) => Command::Off,
        (Opening::Auto, _) => Command::SetAuto(true),
    }
}

fn gate_allows_rm(state: &State) -> bool {
    let input = json!({"command": "rm -rf /srv/data"});
    matches!(
        gate(&state.session, GateScope::ApprovedPlan, &plangate_gate::Policy::default(), "Bash", &input),
        plangate_gate::Verdict::Allow(_)
    )
}

/// Run one cell; `Err` describes a mismatch.
fn cell(tr: &Transition, rule: Rule) -> Result<(), String> {
    let policy = rule.policy();
    let mut state = start(tr.from, &policy);
    if gate_allows_rm(&state) {
        return Err("the gate was open before the transition".into());
    }
    let mut n = 10;
    for actor in rule.actors() {
        let before = state.clone();
        match apply(&state, &actor, command(tr, &state), &ctx(n, &policy)) {
            Ok(t) => state = t.state,
            Err(_) => {
                if state != before {
                    return Err("a refusal changed the state".into());
                }
            }
        }
        n += 1;
    }
    // Auto mode opens the gate for the next proposal.
    if tr.opening == Opening::Auto {
        let propose = Command::Propose {
            plan: plan("later"),
            markdown: None,
            requested_by: Some("telegram:333".into()),
            harness: plangate_engine::Harness::Api,
            project: None,
        };
        state = apply(&state, &Actor::Agent, propose, &ctx(n, &policy)).map_err(|e| format!("propose refused: {e}"))?.state;
    }
    let expected = rule.opens(tr.opening);
    let opened = gate_allows_rm(&state);
    if opened != expected {
        return Err(format!("gate {} (expected {})", if opened { "open" } else { "shut" }, if expected { "open" } else { "shut" }));
    }
    Ok(())
}

#[test]
fn every_gate_opening_transition_obeys_every_rule() {
    let mut failures = Vec::new();
    for tr in &TRANSITIONS {
        for rule in RULES {
            if let Err(why) = cell(tr, rule) {
                failures.push(format!("{} × {rule:?}: {why}", tr.name));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} cells failed:\n{}", failures.len(), TRANSITIONS.len() * RULES.len(), failures.join("\n"));
}

/// Every [`Opening`] is in the table: a new one must be added to it.
#[test]
fn the_table_covers_every_opening() {
    for opening in Opening::ALL {
        assert!(TRANSITIONS.iter().any(|t| t.opening == opening), "{opening:?} has no row");
    }
}

/// A release under a quorum says how far it got and what to do next; the
/// second distinct approver releases it, and the receipt names both.
#[test]
fn a_release_under_a_quorum_is_counted_like_approvals() {
    let policy = rules(2, false);
    let state = start(From::Pending, &policy);
    let first = apply(&state, &alice(), Command::Off, &ctx(10, &policy)).expect("counted");
    assert_eq!(first.state.session.mode, Mode::Plan);
    let detail = &first.audit.last().expect("audited").detail;
    assert!(detail.contains("1 of 2") && detail.contains("/plan off"), "{detail}");
    let again = apply(&first.state, &alice(), Command::Off, &ctx(11, &policy)).expect_err("a repeat");
    assert!(matches!(again, Refusal::AlreadyApproved(_)), "{again:?}");
    let second = apply(&first.state, &bob(), Command::Off, &ctx(12, &policy)).expect("released");
    assert_eq!(second.state.session.released_by.as_deref(), Some("telegram:@alice and slack:@bob"));
    assert!(gate_allows_rm(&second.state));
}

/// The requester's refusal says why and what they can still do.
#[test]
fn the_requester_cannot_release_under_forbid_self() {
    let policy = rules(1, true);
    let state = start(From::Planning, &policy);
    let refusal = apply(&state, &carol(), Command::Off, &ctx(10, &policy)).expect_err("refused");
    assert!(refusal.to_string().contains("someone else must release it"), "{refusal}");
}
