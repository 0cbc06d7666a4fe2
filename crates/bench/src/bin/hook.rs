//! `plangate hook claude`, the process Claude Code starts for every tool
//! call, timed from spawn to exit against a running server (#53).
//!
//! Per sample, one after the other: `/bin/true` (what any process costs to
//! start here), `plangate --version` (the binary starting, no runtime, no
//! request), and `plangate hook claude` with two `PreToolUse` events as
//! Claude Code 2.1.328 sends them (`tests/fixtures/claude-2.1.328`): a
//! `Bash` `ls` in plan mode, which the gate allows (no output), and an
//! `Edit`, which it denies (a JSON answer), both in one session that
//! entered plan mode (as one Claude session's calls are: the hook then
//! finds its session binding already recorded and writes nothing). Every
//! run's stdout must be the same bytes for the same input, across samples
//! and builds: the hook's contract.
//!
//! Besides the wall time, each run's CPU time (user + system, from
//! `getrusage(RUSAGE_CHILDREN)` around its wait): on a shared machine the
//! wall time carries the other tenants' load, the CPU time much less.
//!
//! `--baseline-bin OLD_PLANGATE` runs an older build's hook beside this
//! one, alternating sample by sample against the same server (this
//! build's), so both see the same load on a shared machine; the table then
//! gives the ratio of their medians. Without it only this build runs.
//!
//! `--hook-bin PLANGATE_HOOK` runs the hook-only binary's `plangate-hook
//! claude` beside `plangate hook claude` the same way, alternating, its
//! answers held to the same bytes (it has no `--version`: that row is only
//! `plangate`'s). The ratios are against the first build of the table that
//! ran the row.
//!
//! `--baseline-hook-bin OLD_PLANGATE_HOOK` runs an older build's
//! `plangate-hook claude` the same way, first in the table, so the hook-only
//! binary's before and after are one run (§28 of docs/PERFORMANCE.md).
//!
//! The binary is `$PLANGATE_BIN`, else `$CARGO_TARGET_DIR/release/plangate`,
//! else the debug build (the one used is printed).
//!
//! Run: `cargo build --release -p plangate-server -p plangate-bench --bins && target/release/hook --samples 400 [--baseline-bin OLD_PLANGATE] [--hook-bin target/release/plangate-hook]`
//! `--smoke`: 3 samples on the debug build beside it (and its
//! `plangate-hook`, when there is one and no `--hook-bin`).

use plangate_bench::stats::{fmt, Samples};
use plangate_bench::{plangate_bin, sys};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Claude Code 2.1.328's `PreToolUse` of `Bash` `ls` in plan mode.
const BASH_LS: &str = include_str!("../../../../tests/fixtures/claude-2.1.328/pre_tool_use_bash.json");
/// Its `PreToolUse` of `Edit` (a file with a non-ASCII name).
const EDIT: &str = include_str!("../../../../tests/fixtures/claude-2.1.328/pre_tool_use_edit.json");

/// One way of starting a process, and what it answered the first time.
struct Case {
    name: &'static str,
    args: Vec<String>,
    /// The arguments of the hook-only binary for the same answer, if it has one.
    hook_bin_args: Option<Vec<String>>,
    stdin: Option<Vec<u8>>,
}

/// A binary timed: its name in the table, its path, and whether it is the
/// hook-only `plangate-hook`.
struct Build {
    name: &'static str,
    path: String,
    hook_only: bool,
}

impl Build {
    /// What this build runs for `case`, or nothing.
    fn args(&self, case: &Case) -> Option<Vec<String>> {
        if self.hook_only {
            case.hook_bin_args.clone()
        } else {
            Some(case.args.clone())
        }
    }
}

/// The CPU time (user + system) of every child waited for so far.
fn children_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage(2) writes one rusage into memory we own.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Spawn `bin args`, feed `stdin`, wait for the exit: the wall time, the
/// child's CPU time and its stdout.
fn run_once(bin: &str, args: &[String], case: &Case, env: &[(&str, String)]) -> (Duration, Duration, Vec<u8>) {
    let mut cmd = Command::new(bin);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::null()).env_remove("PLANGATE_HOOK_WAIT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(if case.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let cpu0 = children_cpu();
    let t0 = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {bin}: {e}"));
    if let Some(input) = &case.stdin {
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input).expect("write the hook input");
    }
    let out = child.wait_with_output().expect("wait");
    let took = t0.elapsed();
    let cpu = children_cpu().saturating_sub(cpu0);
    assert!(out.status.success(), "{bin} {args:?} exited {}", out.status);
    (took, cpu, out.stdout)
}

fn event(fixture: &str, session: &str, mode: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(fixture).expect("fixture");
    v["session_id"] = json!(session);
    v["permission_mode"] = json!(mode);
    serde_json::to_vec(&v).expect("event")
}

#[tokio::main]
async fn main() {
    let samples: usize = plangate_bench::sized("--samples", 400, 3);
    let warmup: usize = plangate_bench::sized("--warmup", 20, 1);
    let bin = plangate_bin();
    let baseline: String = plangate_bench::arg("--baseline-bin", String::new());
    let mut hook_bin: String = plangate_bench::arg("--hook-bin", String::new());
    let baseline_hook_bin: String = plangate_bench::arg("--baseline-hook-bin", String::new());
    if hook_bin.is_empty() && plangate_bench::smoke() {
        // A smoke run checks the hook-only binary built beside `plangate` too.
        let beside = std::path::Path::new(&bin).with_file_name("plangate-hook");
        if beside.is_file() {
            hook_bin = beside.display().to_string();
        }
    }
    println!("{}", sys::describe_machine(&std::env::temp_dir()));
    println!("binary: {bin}");
    let mut builds = vec![Build { name: "this build", path: bin.clone(), hook_only: false }];
    if !baseline.is_empty() {
        println!("baseline binary: {baseline}");
        builds.insert(0, Build { name: "baseline", path: baseline, hook_only: false });
    }
    if !baseline_hook_bin.is_empty() {
        println!("baseline hook-only binary: {baseline_hook_bin}");
        builds.insert(0, Build { name: "plangate-hook, baseline", path: baseline_hook_bin, hook_only: true });
    }
    if !hook_bin.is_empty() {
        println!("hook-only binary: {hook_bin}");
        builds.push(Build { name: "plangate-hook", path: hook_bin, hook_only: true });
    }
    println!();

    let s = ServerProcess::start(&bin, "").await;
    let (st, body) = ServerProcess::send(s.agent(Method::POST, "/v1/sessions/bench/enter").json(&json!({}))).await;
    assert_eq!(st, 200, "enter: {body}");
    let state = tempfile::tempdir().expect("temp dir");
    let env = [
        ("PLANGATE_URL", s.base.clone()),
        ("PLANGATE_TOKEN", AGENT_TOKEN.to_string()),
        ("PLANGATE_STATE_DIR", state.path().join("state").display().to_string()),
        ("PLANGATE_RUNTIME_DIR", state.path().join("run").display().to_string()),
    ];
    let hook = |name, stdin| Case {
        name,
        args: vec!["hook".into(), "claude".into()],
        hook_bin_args: Some(vec!["claude".into()]),
        stdin: Some(stdin),
    };
    let cases = [
        Case { name: "--version", args: vec!["--version".into()], hook_bin_args: None, stdin: None },
        hook("hook claude: Bash ls, allowed (no output)", event(BASH_LS, "bench", "plan")),
        hook("hook claude: Edit in plan mode, denied (JSON)", event(EDIT, "bench", "plan")),
    ];
    let truth = Case { name: "/bin/true", args: vec![], hook_bin_args: None, stdin: None };

    // [case][build]; /bin/true once per sample.
    let mut times: Vec<Vec<Samples>> = cases.iter().map(|_| builds.iter().map(|_| Samples::default()).collect()).collect();
    let mut cpu: Vec<Vec<Samples>> = times.clone();
    let (mut true_times, mut true_cpu) = (Samples::default(), Samples::default());
    let mut answers: Vec<Option<Vec<u8>>> = cases.iter().map(|_| None).collect();
    for i in 0..warmup + samples {
        let (took, used, _) = run_once("/bin/true", &[], &truth, &[]);
        if i >= warmup {
            true_times.push(took);
            true_cpu.push(used);
        }
        for (c, case) in cases.iter().enumerate() {
            for (b, build) in builds.iter().enumerate() {
                let Some(args) = build.args(case) else { continue };
                let (took, used, out) = run_once(&build.path, &args, case, &env);
                let name = build.name;
                // `--version` names the build; every hook answer must be byte-identical.
                if case.stdin.is_some() {
                    match &answers[c] {
                        None => answers[c] = Some(out),
                        Some(first) => assert_eq!(
                            first,
                            &out,
                            "{name}: {} answered differently: {:?} against {:?}",
                            case.name,
                            String::from_utf8_lossy(&out),
                            String::from_utf8_lossy(first)
                        ),
                    }
                }
                if i >= warmup {
                    times[c][b].push(took);
                    cpu[c][b].push(used);
                }
            }
        }
    }
    drop(s);

    for (case, answer) in cases.iter().zip(&answers) {
        if let Some(answer) = answer {
            println!("{}: stdout {:?}", case.name, String::from_utf8_lossy(answer));
        }
    }
    println!("\nspawn → exit, {samples} samples each, alternating (after {warmup} warm-up rounds)\n");
    println!("| what | build | p50 | p90 | p99 | ÷ first build, p50 | CPU p50 | ÷ first build, CPU p50 |");
    println!("|---|---|---|---|---|---|---|---|");
    let (t, u) = (&true_times, &true_cpu);
    println!("| /bin/true | | {} | {} | {} | | {} | |", fmt(t.p50()), fmt(t.quantile(0.9)), fmt(t.p99()), fmt(u.p50()));
    let ratio = |x: &Samples, base: &Samples| format!("{:.2}", x.p50().as_secs_f64() / base.p50().as_secs_f64());
    for ((case, per_build), cpu) in cases.iter().zip(&times).zip(&cpu) {
        // The first build that ran this row (`--version` has no hook-only run).
        let first = per_build.iter().position(|x| !x.is_empty());
        for (b, build) in builds.iter().enumerate() {
            let (x, used, name) = (&per_build[b], &cpu[b], build.name);
            if x.is_empty() {
                continue;
            }
            let (wall_ratio, cpu_ratio) = match first {
                Some(f) if f != b => (ratio(x, &per_build[f]), ratio(used, &cpu[f])),
                _ => Default::default(),
            };
            println!(
                "| {} | {name} | {} | {} | {} | {wall_ratio} | {} | {cpu_ratio} |",
                case.name,
                fmt(x.p50()),
                fmt(x.quantile(0.9)),
                fmt(x.p99()),
                fmt(used.p50())
            );
        }
    }
}
