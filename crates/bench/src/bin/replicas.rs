//! Replicas on PostgreSQL against one process on sled (#18), through the
//! real binary over HTTP, side by side in one run:
//!
//! 1. Durable decisions/s and approve latency at 1, 16 and 64 concurrent
//!    sessions, for three deployments: sled (one process), PostgreSQL with
//!    one replica, PostgreSQL with three replicas. Each worker owns one
//!    session and loops: propose, then approve over the operator API; with
//!    three replicas the proposal goes to replica `w % 3` and the approval
//!    to the next one, as a load balancer would spread them. A decision
//!    counts when its 200 is back (committed: flushed on sled, committed
//!    on PostgreSQL). The latency is the approve call's.
//! 2. Wake-up across replicas: an agent long-polls `decision?wait=30` on
//!    replica B; from just before the approval is POSTed to replica A until
//!    the agent's answer arrives. Beside it, the same on one sled process
//!    (waiter and decision on the same process) and on one PostgreSQL
//!    replica.
//!
//! No chat channels are configured, so the figures are plangate's own
//! (engine, store, wake-ups, HTTP), not a platform fake's.
//!
//! Needs PostgreSQL on 127.0.0.1:5432 (or `PLANGATE_TEST_PG`); each
//! deployment uses its own schema, dropped at the end.
//!
//! `--smoke`: 1 s per cell at 1 and 4 sessions, 3 wake-ups each
//! (`target/debug/replicas --smoke`, about 20 s). Without PostgreSQL it
//! runs the sled rows only, after the testkit's loud skip line (a failure
//! under `PLANGATE_REQUIRE_ALL`, as in CI).
//!
//! Run: `CARGO_TARGET_DIR=/work/target-bench cargo build --release -p plangate-server && CARGO_TARGET_DIR=/work/target-bench cargo run --release -p plangate-bench --bin replicas -- --secs 5 --wake-samples 200`
//! (`--count-xacts N` counts PostgreSQL transactions and WAL flushes per
//! loop instead, over `--count-sessions 1,16` sessions looping side by side,
//! and with `--statements` what each statement costs a loop, from
//! `pg_stat_statements`;
//! `--profile-loops N` runs exactly N loops on one server and stops it
//! with SIGTERM, for a profiler wrapped around the binary (§26);
//! `--baseline-bin PATH` adds a sled row for another build of `plangate`,
//! e.g. the commit before #18, measured in the same run; with
//! `--baseline-postgres`, a PostgreSQL row of that build too.)

use plangate_bench::stats::{fmt, rate, Samples};
use plangate_bench::{arg, plangate_bin, sys};
use plangate_testkit::pg::TestSchema;
use plangate_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Deployment {
    name: &'static str,
    replicas: Vec<ServerProcess>,
    schema: Option<TestSchema>,
}

async fn deploy(bin: &str, name: &'static str, n: usize, postgres: bool) -> Deployment {
    let schema = if postgres { Some(TestSchema::create().await) } else { None };
    // The default pool (16 connections per replica), not the tests' 4.
    let config =
        schema.as_ref().map(|s| plangate_testkit::pg::store_config(s).replace("pool_size = 4", "pool_size = 16")).unwrap_or_default();
    let mut replicas = Vec::new();
    for _ in 0..n {
        replicas.push(ServerProcess::start(bin, &config).await);
    }
    Deployment { name, replicas, schema }
}

async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    ServerProcess::send(req).await
}

fn plan(n: u64) -> Value {
    json!({"title": format!("Bench plan {n}"), "steps": [{"step": "Change the fetcher"}, {"step": "Add a test"}, {"step": "Run the suite"}]})
}

/// One worker: propose, approve, until `stop`; returns the approve latencies.
async fn worker(d: Arc<Vec<(String, reqwest::Client)>>, w: usize, round: usize, stop: Arc<AtomicBool>) -> Samples {
    let n = d.len();
    let (propose_on, decide_on) = (&d[w % n], &d[(w + 1) % n]);
    let session = format!("bench-{round}-{w}");
    let agent = |(base, http): &(String, reqwest::Client), m: Method, p: &str| {
        http.request(m, format!("{base}{p}")).bearer_auth(plangate_testkit::server::AGENT_TOKEN)
    };
    let (st, v) = call(agent(propose_on, Method::POST, &format!("/v1/sessions/{session}/enter")).json(&json!({}))).await;
    assert_eq!(st, 200, "enter: {v}");
    let mut samples = Samples::default();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let (st, v) = call(agent(propose_on, Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&plan(i))).await;
        assert_eq!(st, 201, "propose: {v}");
        let id = v["approval_id"].as_str().expect("id").to_string();
        let (base, http) = decide_on;
        let req = http
            .post(format!("{base}/v1/approvals/{id}/decision"))
            .bearer_auth(plangate_testkit::server::OPERATOR_TOKEN)
            .json(&json!({"action": "approve", "actor": "bench"}));
        let t = Instant::now();
        let (st, v) = call(req).await;
        let took = t.elapsed();
        assert_eq!(st, 200, "approve: {v}");
        if !stop.load(Ordering::Relaxed) {
            samples.push(took);
        }
        // Back to planning for the next round.
        let (st, v) = call(agent(propose_on, Method::POST, &format!("/v1/sessions/{session}/enter")).json(&json!({}))).await;
        assert_eq!(st, 200, "enter: {v}");
    }
    samples
}

/// CPU time used so far by the deployment's servers, by PostgreSQL (every
/// `postgres` process of the machine) and by this load generator.
fn cpu_now(d: &Deployment) -> [Duration; 3] {
    let servers = d.replicas.iter().filter_map(|s| s.pid()).filter_map(sys::cpu_time).sum();
    [servers, sys::cpu_time_of_all("postgres"), sys::cpu_time(std::process::id()).unwrap_or_default()]
}

/// One cell: decisions/s, approve latencies, and the CPU time per decision
/// of the servers, PostgreSQL and the load generator.
struct Cell {
    per_s: f64,
    samples: Samples,
    cpu_per_decision: [Duration; 3],
}

/// Decisions/s, approve latency and CPU per decision with `sessions`
/// workers for `secs`.
async fn throughput(d: &Deployment, sessions: usize, secs: u64, round: usize) -> Cell {
    let endpoints: Arc<Vec<(String, reqwest::Client)>> = Arc::new(
        d.replicas
            .iter()
            .map(|s| (s.base.clone(), reqwest::Client::builder().no_proxy().pool_max_idle_per_host(128).build().expect("client")))
            .collect(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let cpu_before = cpu_now(d);
    let started = Instant::now();
    let tasks: Vec<_> = (0..sessions).map(|w| tokio::spawn(worker(endpoints.clone(), w, round, stop.clone()))).collect();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    let mut all = Samples::default();
    for t in tasks {
        all.extend(t.await.expect("worker"));
    }
    let cpu_after = cpu_now(d);
    let decisions = u32::try_from(all.len()).unwrap_or(u32::MAX).max(1);
    let cpu_per_decision = std::array::from_fn(|i| cpu_after[i].saturating_sub(cpu_before[i]) / decisions);
    Cell { per_s: rate(all.len() as u64, elapsed), samples: all, cpu_per_decision }
}

/// Approve on `decide` while an agent waits on `wait`: decision POST →
/// the waiter's answer.
async fn wake(decide: &ServerProcess, wait: &ServerProcess, samples: usize, tag: &str) -> Samples {
    let mut out = Samples::default();
    let warmup = if plangate_bench::smoke() { 1 } else { 10 };
    for i in 0..samples + warmup {
        let session = format!("wake-{tag}-{i}");
        let (st, _) = call(decide.agent(Method::POST, &format!("/v1/sessions/{session}/enter")).json(&json!({}))).await;
        assert_eq!(st, 200);
        let (st, v) = call(decide.agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&plan(i as u64))).await;
        assert_eq!(st, 201, "{v}");
        let id = v["approval_id"].as_str().expect("id").to_string();
        let waiter = tokio::spawn(call(wait.agent(Method::GET, &format!("/v1/sessions/{session}/decision?wait=30"))));
        wait.waiting(1).await;
        let t = Instant::now();
        let (st, v) = call(
            decide.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "bench"})),
        )
        .await;
        assert_eq!(st, 200, "{v}");
        let (st, v) = waiter.await.expect("waiter");
        let took = t.elapsed();
        assert_eq!((st, v["status"].as_str()), (200, Some("approved")), "{v}");
        if i >= warmup {
            out.push(took);
        }
    }
    out
}

/// `per_session` enter → propose → approve loops in each of `sessions`
/// sessions side by side, plan numbers from `first`.
async fn run_loops(endpoint: Arc<(String, reqwest::Client)>, sessions: u64, first: u64, per_session: u64) {
    let tasks: Vec<_> = (0..sessions)
        .map(|k| {
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let (base, http) = &*endpoint;
                let session = format!("xacts-{k}");
                let agent = |m: Method, p: &str| http.request(m, format!("{base}{p}")).bearer_auth(plangate_testkit::server::AGENT_TOKEN);
                for i in first..first + per_session {
                    let (st, v) = call(agent(Method::POST, &format!("/v1/sessions/{session}/enter")).json(&json!({}))).await;
                    assert_eq!(st, 200, "enter: {v}");
                    let (st, v) = call(agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&plan(i))).await;
                    assert_eq!(st, 201, "propose: {v}");
                    let id = v["approval_id"].as_str().expect("id").to_string();
                    let req = http
                        .post(format!("{base}/v1/approvals/{id}/decision"))
                        .bearer_auth(plangate_testkit::server::OPERATOR_TOKEN)
                        .json(&json!({"action": "approve", "actor": "bench"}));
                    let (st, v) = call(req).await;
                    assert_eq!(st, 200, "approve: {v}");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("loop");
    }
}

/// `--profile-loops N`: one server (sled, or PostgreSQL with
/// `--profile-postgres`) runs exactly `loops` enter → propose → approve
/// loops over `sessions` sessions, then stops with SIGTERM, so a profiler
/// that wraps the binary (`PLANGATE_BIN` a script that runs `valgrind
/// --tool=callgrind … plangate "$@"`) writes its profile at the exit. Two
/// runs of different lengths, differenced, give a loop's cost without the
/// start and the stop (docs/PERFORMANCE.md §26).
async fn profile_loops(bin: &str, loops: u64, sessions: u64, postgres: bool) {
    let mut d = deploy(bin, "profile", 1, postgres).await;
    let endpoint = Arc::new((d.replicas[0].base.clone(), reqwest::Client::builder().no_proxy().build().expect("client")));
    let per_session = loops.div_ceil(sessions.max(1));
    // A warm-up round first (sessions created, caches filled), then the
    // server's CPU time over the measured loops.
    run_loops(endpoint.clone(), sessions.max(1), 0, 2).await;
    let pid = d.replicas[0].pid().expect("running");
    let (started, cpu_before, switches_before) = (Instant::now(), sys::cpu_times(pid).unwrap_or_default(), sys::context_switches(pid));
    let postgres_before = sys::cpu_time_of_all("postgres");
    run_loops(endpoint, sessions.max(1), 2, per_session).await;
    let (took, cpu_after) = (started.elapsed(), sys::cpu_times(pid).unwrap_or_default());
    let (user, system) = (cpu_after.0.saturating_sub(cpu_before.0), cpu_after.1.saturating_sub(cpu_before.1));
    let switches = sys::context_switches(pid).saturating_sub(switches_before);
    let postgres_cpu = sys::cpu_time_of_all("postgres").saturating_sub(postgres_before);
    let status = d.replicas[0].terminate().await;
    let loops = per_session * sessions.max(1);
    println!(
        "RESULT loops {loops} sessions {} took {:.2} s server CPU per loop {:.3} ms (user {:.3}, system {:.3}), {:.1} context switches per loop; PostgreSQL CPU {:.3} ms per loop; exit {status}",
        sessions.max(1),
        took.as_secs_f64(),
        (user + system).as_secs_f64() * 1e3 / loops as f64,
        user.as_secs_f64() * 1e3 / loops as f64,
        system.as_secs_f64() * 1e3 / loops as f64,
        switches as f64 / loops as f64,
        postgres_cpu.as_secs_f64() * 1e3 / loops as f64
    );
    if let Some(schema) = d.schema.take() {
        schema.cleanup().await;
    }
}

/// PostgreSQL transactions per propose → approve → enter loop on one
/// replica: `xact_commit` of `pg_stat_database` before and after `loops`
/// loops of one session, once the chat work has drained (the outbox is
/// empty) and the backends have reported their counts. Run it on a
/// database nothing else uses (`PLANGATE_TEST_PG=…/perf_bench`).
/// What a propose → approve → enter loop costs PostgreSQL: transactions
/// committed (`pg_stat_database.xact_commit`, this database) and WAL
/// flushes (`pg_stat_wal.wal_sync`, the whole cluster: run it where
/// nothing else writes), per loop, with `sessions` sessions looping side
/// by side (`loops` in all). Concurrent commits share flushes, and since
/// §16 their notifications share a transaction.
async fn xacts_per_loop(bin: &str, loops: u64, sessions: u64) -> (f64, f64) {
    let d = deploy(bin, "count", 1, true).await;
    let (s, schema) = (&d.replicas[0], d.schema.as_ref().expect("postgres"));
    let endpoint = Arc::new((s.base.clone(), reqwest::Client::builder().no_proxy().build().expect("client")));
    let run = |first: u64, per_session: u64| run_loops(endpoint.clone(), sessions, first, per_session);
    let settled = || async {
        // Chat work done and removed, then every backend's counts reported
        // (PostgreSQL 15 flushes an idle backend's statistics within 10 s).
        let outbox = format!("SELECT count(*) FROM {}.outbox", schema.schema);
        for _ in 0..200 {
            if schema.query(&outbox).await.trim() == "0" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(11_000)).await;
        let count =
            "SELECT xact_commit || ' ' || (SELECT wal_sync FROM pg_stat_wal) FROM pg_stat_database WHERE datname = current_database()";
        let counts = schema.query(count).await;
        let mut counts = counts.split_whitespace().map(|n| n.parse::<f64>().expect("xact_commit, wal_sync"));
        (counts.next().expect("xact_commit"), counts.next().expect("wal_sync"))
    };
    run(0, 5).await;
    let before = settled().await;
    // `--statements`: what each statement costs a loop, from
    // `pg_stat_statements` (loaded by `shared_preload_libraries`, created
    // in the database), reset after the warm-up.
    let statements = plangate_bench::flag("--statements") && statements_reset(schema).await;
    let per_session = loops.div_ceil(sessions.max(1));
    run(100, per_session).await;
    let after = settled().await;
    if statements {
        print_statements(schema, per_session * sessions.max(1)).await;
    }
    drop(d.replicas);
    if let Some(schema) = d.schema {
        schema.cleanup().await;
    }
    let done = (per_session * sessions.max(1)) as f64;
    // Each `settled` read is one transaction of psql's own.
    ((after.0 - before.0 - 1.0) / done, (after.1 - before.1) / done)
}

/// Reset `pg_stat_statements`; `false` (said why) when it is not there.
async fn statements_reset(schema: &TestSchema) -> bool {
    let loaded = schema.query("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'").await;
    if loaded.trim() != "1" {
        println!(
            "--statements: pg_stat_statements is not installed in this database (ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements', restart, CREATE EXTENSION pg_stat_statements); no statement table"
        );
        return false;
    }
    schema.query("SELECT pg_stat_statements_reset()").await;
    true
}

/// The statements of `loops` loops, most total time first: calls and
/// rows per loop, mean and total execution time per loop (PostgreSQL's
/// executor only: parsing, planning and the protocol are not in it).
async fn print_statements(schema: &TestSchema, loops: u64) {
    let sql = format!(
        "SELECT round(calls::numeric / {loops}, 2) || '|' || round(rows::numeric / {loops}, 2) || '|' || round(mean_exec_time::numeric * 1000, 1) \
         || '|' || round(total_exec_time::numeric * 1000 / {loops}, 1) || '|' || left(regexp_replace(query, '\\s+', ' ', 'g'), 120) \
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 30"
    );
    let rows = schema.query(&sql).await;
    println!("\n| calls per loop | rows per loop | mean µs | µs per loop | statement |\n|---|---|---|---|---|");
    let mut total = 0.0;
    for row in rows.lines() {
        let cells: Vec<&str> = row.splitn(5, '|').collect();
        total += cells.get(3).and_then(|c| c.parse::<f64>().ok()).unwrap_or(0.0);
        println!("| {} | `{}` |", cells[..cells.len().saturating_sub(1)].join(" | "), cells.last().unwrap_or(&"").replace('|', "\\|"));
    }
    let all = schema
        .query(&format!(
            "SELECT round(sum(calls)::numeric / {loops}, 1) || ' statements, ' || round(sum(total_exec_time)::numeric * 1000 / {loops}, 0) \
             FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND query NOT LIKE '%pg_stat_statements%'"
        ))
        .await;
    println!("\nper loop ({loops} loops): the 30 above {total:.0} µs of PostgreSQL's executor; all: {all} µs");
}

/// Whether the PostgreSQL deployments run: always when measuring (they are
/// the point; without PostgreSQL the run fails), and in a `--smoke` run
/// when PostgreSQL answers (else the testkit's loud skip line).
async fn with_postgres() -> bool {
    if !plangate_bench::smoke() {
        return true;
    }
    match TestSchema::create_or_skip().await {
        Some(schema) => {
            schema.cleanup().await;
            true
        }
        None => false,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let bin = plangate_bin();
    // `--count-xacts N`: only the transactions per loop (this build, and
    // the baseline build when given), then stop.
    let profile: u64 = arg("--profile-loops", 0);
    if profile > 0 {
        let sessions: u64 = arg("--count-sessions", 1);
        return profile_loops(&bin, profile, sessions, plangate_bench::flag("--profile-postgres")).await;
    }
    let count: u64 = arg("--count-xacts", 0);
    if count > 0 {
        let baseline: String = arg("--baseline-bin", String::new());
        // `--count-sessions 1,16`: the loops spread over that many sessions.
        let sessions: String = arg("--count-sessions", "1".to_string());
        println!("| build | sessions | PostgreSQL transactions per propose → approve → enter loop ({count} loops) | WAL flushes per loop |\n|---|---|---|---|");
        for n in sessions.split(',').map(|n| n.trim().parse::<u64>().expect("--count-sessions: numbers like 1,16")) {
            for (name, bin) in [("baseline", baseline.as_str()), ("this", bin.as_str())] {
                if bin.is_empty() {
                    continue;
                }
                let (xacts, flushes) = xacts_per_loop(bin, count, n).await;
                println!("| {name} ({bin}) | {n} | {xacts:.1} | {flushes:.1} |");
            }
        }
        return;
    }
    let smoke = plangate_bench::smoke();
    let secs: u64 = plangate_bench::sized("--secs", 5, 1);
    let wake_samples: usize = plangate_bench::sized("--wake-samples", 200, 3);
    let levels: &[usize] = if smoke { &[1, 4] } else { &[1, 16, 64] };
    println!("binary: {bin}");
    let postgres = with_postgres().await;
    // `--baseline-bin PATH`: the same sled row for another build (the
    // commit before #18), so "the sled path is not slower" is a ratio from
    // one run, not a comparison with an old table.
    let baseline: String = arg("--baseline-bin", String::new());
    let mut deployments = Vec::new();
    if !baseline.is_empty() {
        println!("baseline binary: {baseline}");
        deployments.push(deploy(&baseline, "sled, 1 process, baseline build", 1, false).await);
        // `--baseline-postgres`: the baseline build on PostgreSQL too (it
        // must be a build that has the PostgreSQL store).
        if plangate_bench::flag("--baseline-postgres") {
            deployments.push(deploy(&baseline, "PostgreSQL, 1 replica, baseline build", 1, true).await);
        }
    }
    let sled_at = deployments.len();
    deployments.push(deploy(&bin, "sled, 1 process", 1, false).await);
    if postgres {
        deployments.push(deploy(&bin, "PostgreSQL, 1 replica", 1, true).await);
        deployments.push(deploy(&bin, "PostgreSQL, 3 replicas", 3, true).await);
    }

    println!("\n## Durable decisions/s and approve latency ({secs} s per cell)\n");
    println!("| sessions | deployment | decisions/s | approve p50 | approve p99 | decisions/s vs the first row | CPU per decision: plangate / PostgreSQL / load generator |");
    println!("|---|---|---|---|---|---|---|");
    for (round, &sessions) in levels.iter().enumerate() {
        let mut sled_rate = None;
        for d in &deployments {
            let Cell { per_s, samples, cpu_per_decision: [servers, postgres, load] } = throughput(d, sessions, secs, round).await;
            let base = *sled_rate.get_or_insert(per_s);
            println!(
                "| {sessions} | {} | {per_s:.0} | {} | {} | {:.2}× | {} / {} / {} |",
                d.name,
                fmt(samples.p50()),
                fmt(samples.p99()),
                per_s / base.max(1e-9),
                fmt(servers),
                fmt(postgres),
                fmt(load)
            );
        }
    }

    println!("\n## Decision → waiting agent released ({wake_samples} samples each)\n");
    println!("| waiter on | decision on | p50 | p99 | max |");
    println!("|---|---|---|---|---|");
    let sled = &deployments[sled_at].replicas[0];
    let mut rows = vec![("sled process", "the same process", wake(sled, sled, wake_samples, "sled").await)];
    if postgres {
        let (pg1, pg3) = (&deployments[sled_at + 1].replicas, &deployments[sled_at + 2].replicas);
        rows.push(("PostgreSQL replica", "the same replica", wake(&pg1[0], &pg1[0], wake_samples, "pg1").await));
        rows.push(("PostgreSQL replica B", "replica A", wake(&pg3[0], &pg3[1], wake_samples, "pg3").await));
    }
    for (waiter, decision, s) in &rows {
        println!("| {waiter} | {decision} | {} | {} | {} |", fmt(s.p50()), fmt(s.p99()), fmt(s.max()));
    }
    for d in deployments {
        drop(d.replicas);
        if let Some(schema) = d.schema {
            schema.cleanup().await;
        }
    }
    if smoke {
        // `--profile-loops`'s path, so that it cannot rot.
        profile_loops(&bin, 4, 2, false).await;
        println!("\nsmoke run: every deployment ran for a moment; these figures measure nothing");
    }
}
