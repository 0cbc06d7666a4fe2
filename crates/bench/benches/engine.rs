//! `engine::apply` of each command kind, in nanoseconds.
//!
//! Each case starts from the state the command meets in real use (a pending
//! proposal for a decision, plan mode for a proposal…) and includes what
//! `apply` itself does: cloning the state, the rules, the injection text.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-bench cargo bench -p plangate-bench --bench engine -- --warm-up-time 1 --measurement-time 2`
//!
//! `--smoke`: every case measured for a moment (10 samples, 20 ms each),
//! about a second, on the debug build: `cargo test -p plangate-bench
//! --bench engine -- --smoke`. (Plain `cargo test --bench engine` is
//! criterion's test mode: every case run once, nothing measured.)

use criterion::{criterion_group, BatchSize, Criterion};
use plangate_bench::workload::{self, approver, minted};
use plangate_engine::{apply, Actor, ApprovalId, Command, Ctx, Plan, State, Step, StepStatus, Timer, TimerKind, Timestamp, Verdict};
use std::hint::black_box;
use std::time::Duration;

fn ctx(r: u8) -> Ctx {
    Ctx { now: Timestamp(1_764_460_800_000), random: [r; 16], timers: workload::policy(), approvals: Default::default() }
}

fn run(state: &State, actor: &Actor, command: Command, r: u8) -> State {
    apply(state, actor, command, &ctx(r)).expect("setup transition").state
}

/// Plan mode, nothing proposed yet.
fn planning() -> State {
    run(&State::new(workload::key(1)), &Actor::Agent, workload::enter(), 1)
}

/// A pending proposal and its id.
fn pending() -> (State, ApprovalId) {
    let t = apply(&planning(), &Actor::Agent, workload::propose(1), &ctx(2)).expect("propose");
    let id = minted(&t).expect("id");
    (t.state, id)
}

fn bench(c: &mut Criterion) {
    let agent = Actor::Agent;
    let human = approver();
    let normal = State::new(workload::key(1));
    let planning = planning();
    let (pending, id) = pending();
    let timers = pending.latest.as_ref().map(|p| p.timers.clone()).unwrap_or_default();
    let timer = |kind| timers.iter().find(|t: &&Timer| t.kind == kind).cloned().expect("scheduled timer");
    let approved = run(&pending, &human, workload::approve(id), 3);
    let steps: Vec<Step> = approved
        .session
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| Step { status: if i == 0 { StepStatus::InProgress } else { StepStatus::Pending }, ..s.clone() })
        .collect();
    let asked = run(
        &planning,
        &agent,
        Command::Ask { question: "Which region?".into(), options: vec!["eu".into(), "us".into()], allow_freetext: false },
        4,
    );
    let with_subagent = run(&planning, &agent, Command::RegisterSubagent("run-1".into()), 5);
    let with_injection = approved.clone();
    let edited_plan = Plan { steps: vec![Step::pending("only this")], ..Plan::titled("edited") };

    let cases: Vec<(&str, &State, &Actor, Command)> = vec![
        ("enter", &normal, &agent, workload::enter()),
        (
            "update_plan",
            &approved,
            &agent,
            Command::UpdatePlan { steps: steps.iter().cloned().map(Into::into).collect(), merge: false, explanation: None },
        ),
        (
            "update_plan_merge",
            &approved,
            &agent,
            Command::UpdatePlan { steps: steps[..1].iter().cloned().map(Into::into).collect(), merge: true, explanation: None },
        ),
        ("propose", &planning, &agent, workload::propose(1)),
        ("propose_supersede", &pending, &agent, workload::propose(2)),
        ("approve", &pending, &human, workload::approve(id)),
        ("edit", &pending, &human, Command::Decide { approval_id: id, verdict: Verdict::Edit(edited_plan) }),
        ("revise", &pending, &human, Command::Decide { approval_id: id, verdict: Verdict::Revise("split step 3".into()) }),
        ("approve_stale", &approved, &human, workload::approve(id)),
        ("off", &pending, &human, Command::Off),
        ("cancel", &pending, &human, Command::CancelApproval(id)),
        ("auto", &planning, &human, Command::SetAuto(true)),
        ("subagent_open", &planning, &agent, Command::RegisterSubagent("run-1".into())),
        ("subagent_close", &with_subagent, &agent, Command::UnregisterSubagent("run-1".into())),
        (
            "ask",
            &planning,
            &agent,
            Command::Ask { question: "Which region?".into(), options: vec!["eu".into(), "us".into()], allow_freetext: false },
        ),
        ("answer", &asked, &human, Command::Answer { question_id: None, answer: "eu".into() }),
        ("take_injection", &with_injection, &agent, Command::TakeInjection),
        ("timer_nudge", &pending, &Actor::Scheduler, Command::TimerFired(timer(TimerKind::Nudge(1)))),
        ("timer_timeout", &pending, &Actor::Scheduler, Command::TimerFired(timer(TimerKind::Timeout))),
    ];
    let mut group = c.benchmark_group("apply");
    for (name, state, actor, command) in cases {
        // Every case does what it is named for: a change, or (stale) a refusal.
        match apply(state, actor, command.clone(), &ctx(9)) {
            Ok(t) => assert!(t.changed, "{name} changed nothing"),
            Err(e) => assert_eq!(name, "approve_stale", "{name}: {e}"),
        }
        group.bench_function(name, |b| {
            b.iter_batched(|| command.clone(), |cmd| apply(black_box(state), actor, cmd, &ctx(9)), BatchSize::SmallInput)
        });
    }
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    // criterion's own arguments know no `--smoke`: a smoke run configures
    // it here instead of from the command line, and keeps its figures out
    // of target/criterion, where they would become the next real run's
    // baseline.
    if std::env::args().any(|a| a == "--smoke") {
        let scratch = tempfile::tempdir().expect("temp dir");
        let mut c = Criterion::default()
            .output_directory(scratch.path())
            .sample_size(10)
            .nresamples(1_000)
            .warm_up_time(Duration::from_millis(10))
            .measurement_time(Duration::from_millis(20))
            .without_plots();
        bench(&mut c);
        c.final_summary();
        println!("smoke run: every case measured for a moment; these figures measure little");
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
