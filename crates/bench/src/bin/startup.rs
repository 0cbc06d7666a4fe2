//! Startup with 100,000 pending approvals on disk.
//!
//! Writes `--approvals` sessions, each in plan mode with one pending proposal
//! that has three nudges and a timeout (the store keeps the first nudge and
//! the timeout: `plangate_engine::chains`), straight through the store
//! API (`SledStore::commit` of what `engine::apply` returned, so the records
//! are exactly the server's), then starts the real binary on that data dir
//! and reports the time until `/healthz` answers and the server's RSS.
//!
//! `--age-mins M` backdates the proposals by M minutes, as if the server had
//! been down that long: with M = 120 every approval has three missed nudges,
//! which go out as one (the latest) when the first fires after the start. The server then
//! runs for `--watch-secs` (RSS sampled every second), is killed, and the
//! store is reopened to count the timers still due and the nudges sent.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-bench cargo run --release -p plangate-bench --bin startup -- --approvals 100000`
//! Options: `--age-mins 120`, `--watch-secs 30` (default 60 with `--age-mins`, else 5), `--threads 32`, `--dir PATH`,
//! `--web` (time the web inbox and the oldest pending plan's page, signed in as the operator), `--keep` (leave the data dir), `--restart` (a normal stop and a second start after the first run), `--no-list` (skip the final listing of every pending approval, `GET /v1/approvals?status=pending` page after page of `--page 1000`),
//! The first start is the one after a crash: nothing tells it the pending count but the store (schema 5 keeps it, a share per session stripe; before it, that start scanned the whole status index).
//! `--smoke`: 200 approvals, one second of watching, with `--web`, the
//! listing (pages of 50) and `--restart` (`target/debug/startup --smoke`, seconds).

use plangate_bench::server::{mib, start};
use plangate_bench::stats::rate;
use plangate_bench::{plangate_bin, sys, workload};
use plangate_engine::{apply, Actor, Ctx, State, Timestamp};
use plangate_store::prelude::*;
use plangate_store::{Commit, SledStore};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const AGENT_TOKEN: &str = "bench-agent-token-0123456789";
const OPERATOR_TOKEN: &str = "bench-operator-token-0123456789";

/// Enter + propose for sessions `0..n`, one commit per session, `threads` writers.
fn populate(data_dir: &Path, n: usize, threads: usize, age_ms: i64) -> Duration {
    let store = SledStore::open(data_dir).expect("store");
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return;
                }
                let key = workload::key(i);
                let at = Timestamp(workload::now().0 - age_ms);
                let ctx = |at: Timestamp| Ctx {
                    now: at,
                    random: workload::fresh_random(),
                    timers: workload::policy(),
                    approvals: Default::default(),
                };
                let before = State::new(key.clone());
                let entered = apply(&before, &Actor::Agent, workload::enter(), &ctx(at)).expect("enter");
                let proposed = apply(&entered.state, &Actor::Agent, workload::propose(i as u64), &ctx(at)).expect("propose");
                let mut commit = Commit::of(&proposed, &entered.state, None);
                commit.audit = entered.audit.iter().chain(&proposed.audit).cloned().collect();
                store.commit(commit).expect("commit").written().expect("commit");
            });
        }
    });
    let took = start.elapsed();
    let stats = store.flush_stats();
    let checkpoints = store.checkpoint_stats();
    println!(
        "populated {n} pending approvals ({} timers) in {:.1} s ({:.0} commits/s, {:.1} commits per flush, {} checkpoints: {:.1} s in all, longest {:.0} ms)",
        store.timers().map(|t| t.len()).unwrap_or(0),
        took.as_secs_f64(),
        rate(n as u64, took),
        stats.writes as f64 / stats.flushes.max(1) as f64,
        checkpoints.count,
        checkpoints.total.as_secs_f64(),
        checkpoints.longest.as_secs_f64() * 1e3
    );
    took
}

fn config(dir: &Path) -> String {
    format!(
        r#"
[server]
bind = "127.0.0.1:0"
data_dir = "{}"
operator_token = "{OPERATOR_TOKEN}"
public_url = "http://plangate.bench"

[agents.demo]
token = "{AGENT_TOKEN}"
destinations = []

[approvals]
nudges = ["10m", "30m", "60m"]
timeout = "24h"
"#,
        dir.join("data").display()
    )
}

/// After the server stopped: timers due by now still in the store, and
/// `nudge` audit records (one per nudge sent).
fn catch_up(data: &Path) -> (usize, usize) {
    let store = SledStore::open(data).expect("reopen store");
    let due = store.due_timers(workload::now()).map(|t| t.len()).unwrap_or(0);
    let nudges = store.audit(&plangate_store::AuditQuery::default()).map(|a| a.iter().filter(|e| e.action == "nudge").count()).unwrap_or(0);
    (due, nudges)
}

/// `--web`: the operator signs in to the web page; the inbox (`GET /`)
/// and the oldest pending plan's page (`GET /p/<id>`), three times each,
/// timed to the last byte.
async fn web_pages(http: &reqwest::Client, base: &str) {
    let no_redirect = reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let signed_in = no_redirect
        .post(format!("{base}/signin/operator"))
        .header("sec-fetch-site", "same-origin")
        .form(&[("token", OPERATOR_TOKEN)])
        .send()
        .await
        .expect("sign in");
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').next())
        .unwrap_or_default()
        .to_string();
    if cookie.is_empty() {
        println!("web: operator sign-in answered {} without a cookie; pages not timed", signed_in.status());
        assert!(!plangate_bench::smoke(), "the smoke run needs the web pages");
        return;
    }
    let oldest = http.get(format!("{base}/v1/approvals?status=pending&limit=1")).bearer_auth(OPERATOR_TOKEN).send().await.ok();
    let oldest = match oldest {
        Some(r) => r.json::<serde_json::Value>().await.ok().and_then(|v| v[0]["approval_id"].as_str().map(str::to_string)),
        None => None,
    };
    let mut paths = vec!["/".to_string()];
    paths.extend(oldest.map(|id| format!("/p/{id}")));
    assert!(paths.len() == 2 || !plangate_bench::smoke(), "no pending approval listed for its page");
    for path in paths {
        let mut took = Vec::new();
        let mut size = 0;
        let mut status = 0;
        for _ in 0..3 {
            let at = Instant::now();
            match http.get(format!("{base}{path}")).header("cookie", &cookie).send().await {
                Ok(r) => {
                    status = r.status().as_u16();
                    size = r.bytes().await.map(|b| b.len()).unwrap_or(0);
                }
                Err(e) => println!("web: GET {path}: {e}"),
            }
            took.push(format!("{:.0}", at.elapsed().as_secs_f64() * 1e3));
        }
        let shown = if path == "/" { "/".to_string() } else { "/p/<oldest pending>".to_string() };
        println!("web: GET {shown} → {status}, {size} bytes, {} ms (three in a row)", took.join(" / "));
        assert!(status == 200 || !plangate_bench::smoke(), "web: GET {shown} answered {status}");
    }
}

#[tokio::main]
async fn main() {
    let smoke = plangate_bench::smoke();
    let n: usize = plangate_bench::sized("--approvals", 100_000, 200);
    let threads: usize = plangate_bench::sized("--threads", 32, 4);
    let age_mins: i64 = plangate_bench::arg("--age-mins", 0);
    let dir: String = plangate_bench::arg("--dir", std::env::temp_dir().display().to_string());
    let bin = plangate_bin();
    println!("{}", sys::describe_machine(Path::new(&dir)));
    println!("binary: {bin}\n");
    let mut root = tempfile::tempdir_in(&dir).expect("temp dir");
    // `--keep`: leave the populated data dir and config for a profiler
    // (`heaptrack plangate serve --config <dir>/config.toml`).
    if plangate_bench::flag("--keep") {
        root.disable_cleanup(true);
        println!("keeping {}", root.path().display());
    }
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    populate(&data, n, threads, age_mins * 60_000);
    let du = std::process::Command::new("du")
        .args(["-sh"])
        .arg(data.join("db"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    println!("database size: {}", du.unwrap_or_default());
    let config_path = root.path().join("config.toml");
    std::fs::write(&config_path, config(root.path())).expect("config");

    let http = reqwest::Client::builder().no_proxy().build().expect("client");
    let mut started = start(&bin, &config_path, &http).await;
    let pid = started.child.id();
    let rss_ready = sys::rss_kib(pid);
    println!(
        "ready: stdout 'listening' after {:.0} ms, /healthz 200 after {:.0} ms; RSS at ready {}",
        started.listening.as_secs_f64() * 1e3,
        started.ready.as_secs_f64() * 1e3,
        mib(rss_ready)
    );
    let mut peak = rss_ready.unwrap_or(0);
    let watch: u64 = plangate_bench::arg(
        "--watch-secs",
        if smoke {
            1
        } else if age_mins > 0 {
            60
        } else {
            5
        },
    );
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(watch) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss = sys::rss_kib(pid);
        peak = peak.max(rss.unwrap_or(0));
        if age_mins > 0 && t0.elapsed().as_secs().is_multiple_of(10) {
            println!("  {:>3.0} s after ready: RSS {}", t0.elapsed().as_secs_f64(), mib(rss));
        }
    }
    if plangate_bench::flag("--web") || smoke {
        web_pages(&http, &started.base).await;
    }
    if plangate_bench::flag("--no-list") {
        println!("RSS peak over the first seconds: {}", mib(Some(peak)));
    } else {
        let page: usize = plangate_bench::sized("--page", 1000, 50);
        let listing = Instant::now();
        let (listed, pages) = plangate_bench::count_approvals(&http, &started.base, OPERATOR_TOKEN, "pending", page).await;
        let rss_after_list = sys::rss_kib(pid);
        println!(
            "RSS peak over the first seconds: {}; GET /v1/approvals?status=pending listed {listed} in {pages} pages of {page} in {:.0} ms, RSS after {}",
            mib(Some(peak)),
            listing.elapsed().as_secs_f64() * 1e3,
            mib(rss_after_list)
        );
        if smoke {
            assert_eq!(listed, n, "{listed} pending listed, {n} populated");
        }
    }
    // `--restart`: a normal stop (SIGTERM), then a second start on the
    // same data: what an operator's restart costs once the first start
    // after the population has run.
    if plangate_bench::flag("--restart") || smoke {
        let stopped = started.stop();
        let again = start(&bin, &config_path, &http).await;
        let rss = sys::rss_kib(again.child.id());
        println!(
            "restart: stopped (SIGTERM) in {:.0} ms; started again: /healthz 200 after {:.0} ms, RSS at ready {}",
            stopped.as_secs_f64() * 1e3,
            again.ready.as_secs_f64() * 1e3,
            mib(rss)
        );
        tokio::time::sleep(Duration::from_secs(watch)).await;
        println!("  {watch} s later: RSS {}", mib(sys::rss_kib(again.child.id())));
        started = again;
    }
    started.kill();
    let (due, nudges) = catch_up(&data);
    println!("after {watch} s of running (then SIGKILL): {due} timers still due, {nudges} nudges sent");
    if smoke {
        println!("\nsmoke run: every part ran once at a tiny size; these figures measure nothing");
    }
}
