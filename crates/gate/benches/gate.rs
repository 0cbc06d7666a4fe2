//! How long one gate decision takes. The server asks on every tool call, so
//! the target is p99 < 50 µs for a 200-character command; expect about a
//! microsecond.
//!
//! Criterion reports the mean with its confidence interval; after it, this
//! harness times calls one by one and prints the latency percentiles (p50,
//! p99, p99.9, max), which is what the target is about. Each sample includes
//! the cost of two `Instant::now()` calls, so the percentiles err high.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-gate cargo bench -p plangate-gate --bench gate -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use plangate_gate::{check_command, check_plan_mode, Policy};
use serde_json::{json, Value};

/// About 200 characters, every word checked: a realistic allowed search.
const ALLOWED: &str = "rg -n --no-heading --color never -g '*.rs' -g '!target/**' -e 'fn check_command' -e 'fn check_plan_mode' --max-count 20 --context 2 --sort path crates/gate/src crates/engine/src crates/server/src docs/";

/// The same length, denied late (the `--pre` is near the end).
const DENIED: &str = "rg -n --no-heading --color never -g '*.rs' -g '!target/**' -e 'fn check_command' -e 'fn check_plan_mode' --max-count 20 --context 2 --sort path crates/gate/src crates/engine/src --pre=./evil.sh docs/";

/// A 200-character git command: global options, subcommand, many flags.
const GIT: &str = "git --no-pager log --oneline --graph --decorate --format='%h %an %ad %s' --date=short --since=2.weeks --author=jane --stat -n 50 HEAD~20..HEAD -- crates/gate/src crates/server/src crates/engine docs";

const MCP_TOOL: &str = "mcp__github__list_pull_requests";

/// Just under the gate's size limit: the worst case it will look at.
fn longest() -> String {
    let mut s = String::from("ls");
    while s.len() < 32 * 1024 - 16 {
        s.push_str(" src/lib.rs");
    }
    s
}

fn bench(c: &mut Criterion) {
    let policy = Policy::default();
    let input = json!({"owner": "acme", "repo": "plangate", "state": "open"});
    let bash = json!({"command": ALLOWED, "description": "search"});
    let longest = longest();
    assert!((195..=210).contains(&ALLOWED.len()) && (195..=210).contains(&DENIED.len()));
    assert!(check_command(&policy, ALLOWED).is_allow());
    assert!(!check_command(&policy, DENIED).is_allow());
    assert!(check_command(&policy, GIT).is_allow(), "{}", check_command(&policy, GIT));
    assert!(check_command(&policy, &longest).is_allow());
    assert!(check_plan_mode(&policy, MCP_TOOL, &input).is_allow());
    assert!(check_plan_mode(&policy, "Bash", &bash).is_allow());

    c.bench_function("check_command/allowed_200", |b| b.iter(|| check_command(black_box(&policy), black_box(ALLOWED))));
    c.bench_function("check_command/denied_200", |b| b.iter(|| check_command(black_box(&policy), black_box(DENIED))));
    c.bench_function("check_command/git_200", |b| b.iter(|| check_command(black_box(&policy), black_box(GIT))));
    c.bench_function("check_command/allowed_32k", |b| b.iter(|| check_command(black_box(&policy), black_box(&longest))));
    c.bench_function("check_plan_mode/mcp_tool", |b| {
        b.iter(|| check_plan_mode(black_box(&policy), black_box(MCP_TOOL), black_box(&input)))
    });
    c.bench_function("check_plan_mode/bash_200", |b| b.iter(|| check_plan_mode(black_box(&policy), black_box("Bash"), black_box(&bash))));
}

/// Time `samples` single calls of `f` and print the percentiles.
fn percentiles(name: &str, samples: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..samples / 10 {
        f();
    }
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name:<28} p50 {:>8.3} µs   p99 {:>8.3} µs   p99.9 {:>8.3} µs   max {:>9.3} µs   ({samples} calls)",
        us(at(0.50)),
        us(at(0.99)),
        us(at(0.999)),
        us(times[times.len() - 1]),
    );
    at(0.99)
}

fn latency_report() {
    let policy = Policy::default();
    let input = json!({"owner": "acme", "repo": "plangate", "state": "open"});
    let bash: Value = json!({"command": ALLOWED, "description": "search"});
    let longest = longest();
    let n = 200_000;
    println!("\nper-call latency (target: p99 < 50 µs for a 200-character command)");
    let p99 = [
        percentiles("check_command/allowed_200", n, || {
            black_box(check_command(&policy, black_box(ALLOWED)));
        }),
        percentiles("check_command/denied_200", n, || {
            black_box(check_command(&policy, black_box(DENIED)));
        }),
        percentiles("check_command/git_200", n, || {
            black_box(check_command(&policy, black_box(GIT)));
        }),
        percentiles("check_plan_mode/bash_200", n, || {
            black_box(check_plan_mode(&policy, "Bash", black_box(&bash)));
        }),
        percentiles("check_plan_mode/mcp_tool", n, || {
            black_box(check_plan_mode(&policy, MCP_TOOL, black_box(&input)));
        }),
    ];
    percentiles("check_command/allowed_32k", n / 100, || {
        black_box(check_command(&policy, black_box(&longest)));
    });
    let worst = p99.iter().max().copied().unwrap_or_default();
    println!(
        "worst p99 of the 200-character cases: {:.3} µs ({})",
        worst.as_secs_f64() * 1e6,
        if worst < Duration::from_micros(50) { "meets the target" } else { "MISSES the target" }
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo test --benches` runs this binary with `--test`: check the cases
    // (done in `bench`) without the slow timing run.
    if !std::env::args().any(|a| a == "--test") {
        latency_report();
    }
}
