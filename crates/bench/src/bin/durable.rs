//! Durable transitions per second at 1, 16 and 64 concurrent sessions.
//!
//! Every session runs approval cycles (enter → propose → approve) as fast as
//! it can, each transition acknowledged only once it is durable. Systems,
//! each on a fresh directory of the same disk, in one run:
//!
//! * `baseline`: the seed's file store ([`plangate_bench::baseline`]).
//! * `plangate`: engine + `SledStore::commit` with group commit (the default).
//! * `plangate before group commit`: the same with
//!   `Durability::TransactionPerCommit`: one sled transaction and one flush
//!   per commit, as the store did before.
//! * `core`: the whole shell, `Core::execute` on a tokio runtime, which also
//!   runs the chat jobs: the plan document, the card (to a Telegram
//!   destination whose channel is not started, so the job audits "not
//!   running"), the card edit and the receipt.
//!
//! Beside them, the disk's bare rates: append + fsync, and append +
//! sync_file_range (what sled's flush does), one thread.
//!
//! Baseline and plangate run as back-to-back pairs (`--rounds` pairs per
//! level) so each ratio compares two runs seconds apart on a noisy machine.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-bench cargo run --release -p plangate-bench --bin durable -- --secs 2 --rounds 2`
//! Options: `--levels 1,16,64`, `--dir PATH` (default: the system temp dir), `--no-core`,
//! `--core-only` (per round: the baseline, then the whole shell; no store-alone rows),
//! `--baseline-bin OLD_DURABLE` (the `durable` binary of an older build: its
//! whole shell runs in each round too, right before this build's, so the
//! two builds compare within one run).
//! Each run is a child process of this binary (`--child SYSTEM`, also handy
//! under `perf`), so no run inherits another's sled or allocator state.
//! `--smoke`: every system once, 0.2 s at 1 and 4 sessions, one pair
//! (`target/debug/durable --smoke`, a few seconds).

use plangate_bench::baseline::PlanStore;
use plangate_bench::stats::{fmt, rate, Samples};
use plangate_bench::sys;
use plangate_bench::workload::{self, approver, ctx, minted};
use plangate_engine::{apply, Actor, Command, SessionKey, Transition};
use plangate_server::config::Settings;
use plangate_server::core::{Core, ExecMeta};
use plangate_store::prelude::*;
use plangate_store::{Commit, Durability, FlushStats, SledStore};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

enum System {
    Baseline(PlanStore),
    Plangate(Box<SledStore>),
}

impl System {
    fn transition(&self, key: &SessionKey, actor: &Actor, command: Command) -> Result<Transition, String> {
        match self {
            System::Baseline(store) => store.transition(key, actor, command, &ctx()),
            System::Plangate(store) => {
                let before = store.load(key).map_err(|e| e.to_string())?;
                let t = apply(&before, actor, command, &ctx()).map_err(|e| e.to_string())?;
                if t.changed {
                    store.commit(Commit::of(&t, &before, None)).map_err(|e| e.to_string())?.written().map_err(|e| e.to_string())?;
                }
                Ok(t)
            }
        }
    }
}

/// What one timed run did.
struct Outcome {
    transitions: u64,
    elapsed: Duration,
    /// Latency of each acknowledged approve.
    decide: Samples,
    flushes: Option<FlushStats>,
    /// sled checkpoints taken during the timed run: (count, longest).
    checkpoints: Option<(u64, Duration)>,
}

impl Outcome {
    fn ops(&self) -> f64 {
        rate(self.transitions, self.elapsed)
    }
}

/// One session's loop: cycles until `deadline`; returns (transitions, approve latencies).
fn cycles(system: &System, session: usize, deadline: Instant) -> (u64, Samples) {
    let key = workload::key(session);
    let mut n = 0u64;
    let mut decide = Samples::default();
    let mut i = 0u64;
    while Instant::now() < deadline {
        let mut step = || -> Result<(), String> {
            system.transition(&key, &Actor::Agent, workload::enter())?;
            let t = system.transition(&key, &Actor::Agent, workload::propose(i))?;
            let id = minted(&t).ok_or("no proposal")?;
            let start = Instant::now();
            system.transition(&key, &approver(), workload::approve(id))?;
            decide.push(start.elapsed());
            Ok(())
        };
        if let Err(e) = step() {
            panic!("session {session}: {e}");
        }
        n += 3;
        i += 1;
    }
    (n, decide)
}

fn run_threads(system: &System, sessions: usize, secs: f64) -> Outcome {
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let results: Vec<(u64, Samples)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..sessions).map(|i| s.spawn(move || cycles(system, i, deadline))).collect();
        handles.into_iter().map(|h| h.join().expect("session thread")).collect()
    });
    let elapsed = start.elapsed();
    let mut out = Outcome { transitions: 0, elapsed, decide: Samples::default(), flushes: None, checkpoints: None };
    for (n, d) in results {
        out.transitions += n;
        out.decide.extend(d);
    }
    if let System::Plangate(store) = system {
        out.flushes = Some(store.flush_stats());
        let taken = store.checkpoint_stats();
        out.checkpoints = Some((taken.count, taken.longest));
    }
    out
}

fn run_system(kind: &str, dir: &Path, sessions: usize, secs: f64) -> Outcome {
    let dir = tempfile::tempdir_in(dir).expect("temp dir");
    let system = match kind {
        "baseline" => System::Baseline(PlanStore::open(&dir.path().join("plans")).expect("plan store")),
        "plangate" => System::Plangate(Box::new(SledStore::open_with(dir.path(), Durability::Grouped).expect("store"))),
        "plangate-before" => System::Plangate(Box::new(SledStore::open_with(dir.path(), Durability::TransactionPerCommit).expect("store"))),
        other => panic!("unknown system {other}"),
    };
    // Warm up: create the sessions' files / trees outside the timed run.
    for i in 0..sessions {
        system.transition(&workload::key(i), &Actor::Agent, workload::enter()).expect("warm-up");
    }
    let before = match &system {
        System::Plangate(s) => Some(s.flush_stats()),
        System::Baseline(_) => None,
    };
    let mut out = run_threads(&system, sessions, secs);
    if let (Some(b), Some(a)) = (before, out.flushes) {
        out.flushes = Some(FlushStats { writes: a.writes - b.writes, flushes: a.flushes - b.flushes });
    }
    out
}

/// The whole shell: `Core::execute` from `sessions` tokio tasks.
fn run_core(dir: &Path, sessions: usize, secs: f64) -> Outcome {
    let dir = tempfile::tempdir_in(dir).expect("temp dir");
    let toml = format!(
        r#"
[server]
bind = "127.0.0.1:0"
data_dir = "{}"
operator_token = "bench-operator-token"

[agents.demo]
token = "bench-agent-token-0123456789"
destinations = ["ops"]

# The approver must be on a destination's list to decide. The channel is
# never started: each card job finds it not running and audits that.
[telegram]
token = "123456:bench-telegram-token"

[destinations.ops]
channel = "telegram"
chat = "-100"
approvers = ["telegram:111111"]

[approvals]
nudges = ["10m", "30m", "60m"]
timeout = "24h"
"#,
        dir.path().display()
    );
    let settings = Arc::new(Settings::from_toml(&toml).expect("settings"));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let store = Arc::new(SledStore::open(dir.path()).expect("store"));
        let core = Core::new(settings, store.clone());
        for i in 0..sessions {
            core.execute(&workload::key(i), Actor::Agent, workload::enter(), ExecMeta::default()).await.expect("warm-up");
        }
        let stats_before = store.flush_stats();
        let checkpoints_before = store.checkpoint_stats();
        let start = Instant::now();
        let deadline = start + Duration::from_secs_f64(secs);
        let tasks: Vec<_> = (0..sessions)
            .map(|i| {
                let core = core.clone();
                tokio::spawn(async move {
                    let key = workload::key(i);
                    let (mut n, mut decide, mut j) = (0u64, Samples::default(), 0u64);
                    while Instant::now() < deadline {
                        core.execute(&key, Actor::Agent, workload::enter(), ExecMeta::default()).await.expect("enter");
                        let t = core.execute(&key, Actor::Agent, workload::propose(j), ExecMeta::default()).await.expect("propose");
                        let id = minted(&t.transition).expect("minted");
                        let s = Instant::now();
                        core.execute(&key, approver(), workload::approve(id), ExecMeta::default()).await.expect("approve");
                        decide.push(s.elapsed());
                        n += 3;
                        j += 1;
                    }
                    (n, decide)
                })
            })
            .collect();
        let mut out = Outcome { transitions: 0, elapsed: Duration::ZERO, decide: Samples::default(), flushes: None, checkpoints: None };
        for task in tasks {
            let (n, d) = task.await.expect("task");
            out.transitions += n;
            out.decide.extend(d);
        }
        out.elapsed = start.elapsed();
        let taken = store.checkpoint_stats();
        out.checkpoints = Some((taken.count - checkpoints_before.count, taken.longest));
        core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
        let a = store.flush_stats();
        out.flushes = Some(FlushStats { writes: a.writes - stats_before.writes, flushes: a.flushes - stats_before.flushes });
        out
    })
}

/// What a run reports to the parent: a summary, not the samples.
struct Summary {
    ops: f64,
    p50: Duration,
    p99: Duration,
    flushes: Option<FlushStats>,
    checkpoints: Option<(u64, Duration)>,
}

impl Summary {
    fn of(o: &Outcome) -> Summary {
        Summary { ops: o.ops(), p50: o.decide.p50(), p99: o.decide.p99(), flushes: o.flushes, checkpoints: o.checkpoints }
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ops": self.ops,
            "p50_ns": self.p50.as_nanos() as u64,
            "p99_ns": self.p99.as_nanos() as u64,
            "writes": self.flushes.map(|f| f.writes),
            "flushes": self.flushes.map(|f| f.flushes),
            "checkpoints": self.checkpoints.map(|c| c.0),
            "checkpoint_longest_ns": self.checkpoints.map(|c| c.1.as_nanos() as u64),
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<Summary> {
        let ns = |k: &str| v[k].as_u64().map(Duration::from_nanos);
        let flushes = match (v["writes"].as_u64(), v["flushes"].as_u64()) {
            (Some(writes), Some(flushes)) => Some(FlushStats { writes, flushes }),
            _ => None,
        };
        // Builds before the checkpoint count reported none.
        let checkpoints = v["checkpoints"].as_u64().zip(ns("checkpoint_longest_ns"));
        Some(Summary { ops: v["ops"].as_f64()?, p50: ns("p50_ns")?, p99: ns("p99_ns")?, flushes, checkpoints })
    }
}

/// Run `system` at `sessions` in a child process of this binary: sled's
/// global lock mode, its thread pool and the allocator's state are per
/// process, and no run should inherit another's.
fn measure(system: &str, sessions: usize, secs: f64, dir: &Path) -> Summary {
    measure_with(&std::env::current_exe().expect("own path"), system, sessions, secs, dir)
}

/// [`measure`] with another build's `durable` binary (its `--child` mode).
fn measure_with(exe: &Path, system: &str, sessions: usize, secs: f64, dir: &Path) -> Summary {
    let output = std::process::Command::new(exe)
        .args(["--child", system, "--levels", &sessions.to_string(), "--secs", &secs.to_string(), "--dir"])
        .arg(dir)
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{system} at {sessions}: no result\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    Summary::from_json(&serde_json::from_str(line).expect("result json")).expect("result fields")
}

fn child(system: &str, sessions: usize, secs: f64, dir: &Path) {
    let o = match system {
        "core" => run_core(dir, sessions, secs),
        other => run_system(other, dir, sessions, secs),
    };
    println!("RESULT {}", Summary::of(&o).to_json());
}

fn row(system: &str, sessions: usize, o: &Summary, extra: &str) {
    let batch = o
        .flushes
        .filter(|f| f.flushes > 0)
        .map(|f| format!("{:.1} ({} / {})", f.writes as f64 / f.flushes as f64, f.writes, f.flushes))
        .unwrap_or_else(|| "–".to_string());
    let extra = match o.checkpoints {
        Some((0, _)) | None => extra.to_string(),
        Some((n, longest)) => format!("{extra}; {n} sled checkpoints, longest {}", fmt(longest)),
    };
    println!("| {system} | {sessions} | {:.0} | {} | {} | {batch} | {extra} |", o.ops, fmt(o.p50), fmt(o.p99));
}

fn main() {
    let secs: f64 = plangate_bench::sized("--secs", 2.0, 0.2);
    let rounds: usize = plangate_bench::sized("--rounds", 2, 1);
    let levels: String = plangate_bench::sized("--levels", "1,16,64".to_string(), "1,4".to_string());
    let levels: Vec<usize> = levels.split(',').filter_map(|l| l.trim().parse().ok()).collect();
    let dir: String = plangate_bench::arg("--dir", std::env::temp_dir().display().to_string());
    let dir = Path::new(&dir);
    let only: String = plangate_bench::arg("--child", String::new());
    if !only.is_empty() {
        for &sessions in &levels {
            child(&only, sessions, secs, dir);
        }
        return;
    }
    println!("{}\n", sys::describe_machine(dir));

    let scratch = tempfile::tempdir_in(dir).expect("temp dir");
    let fsync = sys::append_fsync(scratch.path(), secs, 256).expect("append+fsync");
    let sfr = sys::append_sync_file_range(scratch.path(), secs, 256).expect("append+sync_file_range");
    println!("single-fsync rate (append 256 B + fsync, 1 thread): {:.0}/s, {}", fsync.ops_per_sec, fsync.latency.describe());
    println!("append 256 B + sync_file_range (what sled's flush does), 1 thread: {:.0}/s, {}\n", sfr.ops_per_sec, sfr.latency.describe());

    println!("| system | sessions | transitions/s | approve p50 | approve p99 | writes per flush (writes / flushes) | note |");
    println!("|---|---|---|---|---|---|---|");
    let baseline_bin: String = plangate_bench::arg("--baseline-bin", String::new());
    if plangate_bench::flag("--core-only") {
        return core_rounds(&levels, rounds, secs, dir, &baseline_bin);
    }
    let mut summary = Vec::new();
    for &sessions in &levels {
        let mut ratios = Vec::new();
        let mut best = 0.0f64;
        for round in 1..=rounds {
            let base = measure("baseline", sessions, secs, dir);
            row("baseline (seed PlanStore)", sessions, &base, &format!("pair {round}"));
            let pg = measure("plangate", sessions, secs, dir);
            let ratio = pg.ops / base.ops;
            ratios.push(ratio);
            row("plangate", sessions, &pg, &format!("pair {round}: **{ratio:.1}×** baseline"));
            best = best.max(pg.ops);
        }
        let before = measure("plangate-before", sessions, secs, dir);
        row("plangate before group commit", sessions, &before, "sled transaction + flush per commit");
        if !plangate_bench::flag("--no-core") {
            if !baseline_bin.is_empty() {
                let old = measure_with(Path::new(&baseline_bin), "core", sessions, secs, dir);
                row("Core::execute, baseline build", sessions, &old, "the `--baseline-bin` build");
            }
            let core = measure("core", sessions, secs, dir);
            row("Core::execute (whole shell)", sessions, &core, "+ plan document, card/receipt jobs");
        }
        summary.push((sessions, ratios, best, before.ops));
    }
    println!();
    for (sessions, ratios, best, before) in summary {
        let list: Vec<String> = ratios.iter().map(|r| format!("{r:.1}×")).collect();
        println!(
            "{sessions} sessions: plangate/baseline per pair {}; best plangate {best:.0}/s = {:.1}× the single-fsync rate ({:.0}/s), {:.1}× before group commit",
            list.join(", "),
            best / fsync.ops_per_sec,
            fsync.ops_per_sec,
            best / before,
        );
    }
    if plangate_bench::smoke() {
        println!("\nsmoke run: every system ran once for a moment; these figures measure nothing");
    }
}

/// `--core-only`: per level and round, the seed-style baseline, the older
/// build's whole shell (with `--baseline-bin`) and this build's, back to
/// back, and the ratios within each round.
fn core_rounds(levels: &[usize], rounds: usize, secs: f64, dir: &Path, baseline_bin: &str) {
    let mut lines = Vec::new();
    for &sessions in levels {
        for round in 1..=rounds {
            let base = measure("baseline", sessions, secs, dir);
            row("baseline (seed PlanStore)", sessions, &base, &format!("round {round}"));
            // The two builds take turns going first, so neither always
            // runs right after the seed store's directory churn.
            let old_run = || (!baseline_bin.is_empty()).then(|| measure_with(Path::new(baseline_bin), "core", sessions, secs, dir));
            let (old, new) = if round % 2 == 1 {
                let old = old_run();
                (old, measure("core", sessions, secs, dir))
            } else {
                let new = measure("core", sessions, secs, dir);
                (old_run(), new)
            };
            if let Some(old) = &old {
                let ratio = old.ops / base.ops;
                row("Core::execute, baseline build", sessions, old, &format!("round {round}: **{ratio:.1}×** seed"));
            }
            let ratio = new.ops / base.ops;
            let vs_old = old.as_ref().map(|o| format!(", {:.2}× the baseline build", new.ops / o.ops)).unwrap_or_default();
            row("Core::execute (whole shell)", sessions, &new, &format!("round {round}: **{ratio:.1}×** seed{vs_old}"));
            lines.push(format!("{sessions} sessions, round {round}: whole shell {ratio:.1}× seed{vs_old}"));
        }
    }
    println!();
    for line in lines {
        println!("{line}");
    }
}
