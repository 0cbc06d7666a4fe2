//! End to end through the real binary, the real teloxide client and the
//! loopback fake Telegram; then the gate and memory.
//!
//! 1. propose → card: from just before `POST /v1/sessions/{id}/proposals`
//!    until the fake *receives* the `sendMessage` that carries the card
//!    (its arrival time, recorded by the fake).
//! 2. tap → agent released: an agent long-polls `decision?wait=30`; from just
//!    before the fake hands out the approver's callback (the pending
//!    `getUpdates` long poll returns it at once) until the agent's HTTP answer
//!    arrives.
//! 3. `POST /v1/gate` (a 200-character `rg` command in plan mode), one request
//!    at a time, and the in-process `plangate_gate::check_plan_mode` on the
//!    same input.
//! 4. RSS of the server process: idle, and with 10,000 pending approvals
//!    (created over HTTP, 32 in flight, on a server with no chat channels so
//!    that only plangate's own memory is measured), before and after
//!    listing them all (`GET /v1/approvals?status=pending`, page after
//!    page of `--page` approvals, following each page's `Link`).
//!
//! The Telegram destination's rate limits are raised (`per_chat_per_second`,
//! `global_per_second` = 1000) so back-to-back samples measure plangate, not
//! the deliberate 1 message/s/chat pacing of the default config.
//!
//! The binary is `$PLANGATE_BIN`, else `$CARGO_TARGET_DIR/release/plangate`
//! (build it first: `cargo build --release -p plangate-server`), else the
//! debug build; the one used is printed.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-bench cargo run --release -p plangate-bench --bin e2e -- --samples 200`
//! Options: `--gate-samples 2000`, `--pending 10000`, `--page 1000`.
//! `--smoke`: every part once at tiny sizes (3 samples, 250 pending in pages
//! of 100), a few seconds on the debug build beside it
//! (`cargo build -p plangate-server -p plangate-bench --bins && target/debug/e2e --smoke`).
//!
//! Memory alone: `--memory-only --rounds 3 [--baseline-bin OLD_PLANGATE]`
//! runs only part 4, `--rounds` times, alternating the baseline build and
//! this one when a baseline is given (before/after in one session, on the
//! same loaded machine), and prints every round: RSS once the proposals are
//! in (after the card jobs settled), RSS after listing them all (the figure
//! of part 4), and the server's thread count.

use plangate_bench::stats::{fmt, Samples};
use plangate_bench::{plangate_bin, sys, workload};
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::server::{ServerProcess, OPERATOR_TOKEN};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHAT: i64 = -1001234567890;
const ALICE: i64 = 111111;
const WAIT: Duration = Duration::from_secs(20);

/// The gate benchmark's 200-character read-only search (allowed, every word checked).
const RG_200: &str = "rg -n --no-heading --color never -g '*.rs' -g '!target/**' -e 'fn check_command' -e 'fn check_plan_mode' --max-count 20 --context 2 --sort path crates/gate/src crates/engine/src crates/server/src docs/";

fn telegram_config(fake: &FakeTelegram) -> String {
    format!(
        r#"
[telegram]
token = "{TOKEN}"
api_url = "{}"
poll_timeout_secs = 10
per_chat_per_second = 1000
global_per_second = 1000

[destinations.ops]
channel = "telegram"
chat = "{CHAT}"
approvers = ["telegram:{ALICE}"]
"#,
        fake.api_url()
    )
}

/// The pid of the `plangate serve` started with `config` (the harness does
/// not expose its child, so find it by its command line).
fn server_pid(server: &ServerProcess) -> Option<u32> {
    let needle = server.config_path().display().to_string();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline);
        (cmdline.contains("serve") && cmdline.contains(&needle)).then_some(pid)
    })
}

fn mib(kib: Option<u64>) -> String {
    kib.map(|k| format!("{:.1} MiB", k as f64 / 1024.0)).unwrap_or_else(|| "?".to_string())
}

async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    ServerProcess::send(req).await
}

async fn enter(s: &ServerProcess, session: &str) {
    let (st, body) = call(s.agent(Method::POST, &format!("/v1/sessions/{session}/enter")).json(&json!({}))).await;
    assert_eq!(st, 200, "enter: {body}");
}

fn plan_json(n: u64) -> Value {
    serde_json::to_value(workload::plan(n)).expect("plan")
}

struct Telegram {
    propose_http: Samples,
    propose_to_card: Samples,
    card_to_document: Samples,
    tap_to_release: Samples,
    tap_to_toast: Samples,
}

async fn telegram_latency(bin: &str, samples: usize) -> (Telegram, Option<u64>) {
    let fake = FakeTelegram::start().await;
    let s = ServerProcess::start_with(bin, &["ops"], &telegram_config(&fake)).await;
    let pid = server_pid(&s);
    // Let the poller settle into its long poll, then read idle RSS.
    fake.wait_for(WAIT, |reqs| reqs.iter().any(|r| r.method == "getMe").then_some(())).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = pid.and_then(sys::rss_kib);
    let mut out = Telegram {
        propose_http: Samples::default(),
        propose_to_card: Samples::default(),
        card_to_document: Samples::default(),
        tap_to_release: Samples::default(),
        tap_to_toast: Samples::default(),
    };
    let alice = FakeTelegram::user(ALICE, Some("alice"), "alice");
    let warmup = if plangate_bench::smoke() { 1 } else { 5 };
    for i in 0..samples + warmup {
        let session = format!("e2e-{i}");
        enter(&s, &session).await;
        let t0 = Instant::now();
        let (st, d) = call(s.agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&plan_json(i as u64))).await;
        let http = t0.elapsed();
        assert_eq!(st, 201, "propose: {d}");
        let id = ApprovalId::parse(d["approval_id"].as_str().expect("approval_id")).expect("id");
        let approve = encode(Button::Approve(id));
        let card = fake
            .wait_for(WAIT, |reqs| {
                reqs.iter()
                    .find(|r| {
                        r.method == "sendMessage" && r.keyboard().is_some_and(|k| k.iter().flatten().any(|(_, data)| *data == approve))
                    })
                    .cloned()
            })
            .await;
        let card_id = card.message_id_sent().expect("card message id");
        let doc = fake.wait_request("sendDocument", WAIT, |r| r.reply_to() == Some(card_id)).await;

        // The agent waits for the decision; give its request time to park.
        let waiter = tokio::spawn(call(s.agent(Method::GET, &format!("/v1/sessions/{session}/decision?wait=30"))));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let toasts = fake.calls("answerCallbackQuery").len();
        let t1 = Instant::now();
        fake.push_update(fake.callback_update(CHAT, card_id, alice.clone(), &approve));
        let (st, decision) = waiter.await.expect("waiter");
        let released = t1.elapsed();
        assert_eq!((st, decision["status"].as_str()), (200, Some("approved")), "{decision}");
        let toast = fake.wait_call("answerCallbackQuery", toasts + 1, WAIT).await;
        // Let the card edit finish so the next sample starts from quiet.
        fake.wait_request("editMessageText", WAIT, |r| r.field("message_id") == &json!(card_id)).await;
        if i >= warmup {
            out.propose_http.push(http);
            out.propose_to_card.push(card.at.duration_since(t0));
            out.card_to_document.push(doc.at.duration_since(card.at));
            out.tap_to_release.push(released);
            out.tap_to_toast.push(toast.at.saturating_duration_since(t1));
        }
    }
    (out, idle)
}

struct Gate {
    http: Samples,
    in_process: Samples,
}

/// `samples` gate calls over HTTP and ten times as many in process, after
/// a warm-up of a twentieth of them each.
async fn gate_latency(s: &ServerProcess, samples: usize) -> Gate {
    enter(s, "gate").await;
    let body = json!({"session_id": "gate", "tool": "Bash", "input": {"command": RG_200, "description": "search"}});
    let mut http = Samples::default();
    let warmup = samples / 20;
    for i in 0..samples + warmup {
        let t = Instant::now();
        let (st, v) = call(s.agent(Method::POST, "/v1/gate").json(&body)).await;
        let d = t.elapsed();
        assert_eq!((st, v["decision"].as_str()), (200, Some("allow")), "{v}");
        if i >= warmup {
            http.push(d);
        }
    }
    let policy = plangate_gate::Policy::default();
    let input = json!({"command": RG_200, "description": "search"});
    assert!(plangate_gate::check_plan_mode(&policy, "Bash", &input).is_allow());
    let mut in_process = Samples::default();
    let (runs, warmup) = (samples * 110, samples * 10);
    for i in 0..runs {
        let t = Instant::now();
        let v = plangate_gate::check_plan_mode(std::hint::black_box(&policy), "Bash", std::hint::black_box(&input));
        let d = t.elapsed();
        std::hint::black_box(v);
        if i >= warmup {
            in_process.push(d);
        }
    }
    Gate { http, in_process }
}

/// The plan document write that the approval's first chat job does after a
/// proposal commits (inline in `Core::execute` before it moved off the
/// request path):
/// `plangate_store::write_document_unsynced` then `sync_files` (temp file,
/// link, fsync of the file and of its directory: what one document costs
/// when its job is alone in its batch), and the same steps without the two
/// fsyncs, on the same disk.
fn document_writes(n: usize) -> (Samples, Samples) {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = workload::plan_markdown(1);
    let mut durable = Samples::default();
    for i in 0..n {
        let t = Instant::now();
        let path =
            plangate_store::write_document_unsynced(dir.path(), "demo", &format!("doc {i}"), workload::now(), &format!("{i:08x}"), &text)
                .expect("write_document");
        plangate_store::sync_files(&[path]).expect("sync_files");
        durable.push(t.elapsed());
    }
    let plain_dir = dir.path().join("plain");
    std::fs::create_dir_all(&plain_dir).expect("dir");
    let mut plain = Samples::default();
    for i in 0..n {
        let t = Instant::now();
        let temp = plain_dir.join(format!(".tmp-{i}"));
        std::fs::write(&temp, &text).expect("write");
        std::fs::hard_link(&temp, plain_dir.join(format!("doc-{i}.md"))).expect("link");
        std::fs::remove_file(&temp).expect("remove");
        plain.push(t.elapsed());
    }
    (durable, plain)
}

struct Memory {
    idle: Option<u64>,
    /// RSS once the proposals are in and their card jobs settled, before the listing.
    settled: Option<u64>,
    /// RSS after `GET /v1/approvals?status=pending` listed them all.
    pending: Option<u64>,
    /// How many pages that took.
    pages: usize,
    /// The server's threads at `settled` (tokio's blocking pool included).
    threads: Option<u64>,
    created: usize,
    took: Duration,
}

async fn memory(s: &ServerProcess, pending: usize, page: usize) -> Memory {
    let pid = server_pid(s);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = pid.and_then(sys::rss_kib);
    let start = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..32)
        .map(|_| {
            let (next, http, base) = (next.clone(), s.http.clone(), s.base.clone());
            tokio::spawn(async move {
                let mut made = 0;
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= pending {
                        return made;
                    }
                    let url = |p: &str| format!("{base}/v1/sessions/mem-{i}/{p}");
                    let auth = plangate_testkit::server::AGENT_TOKEN;
                    let r = http.post(url("enter")).bearer_auth(auth).json(&json!({})).send().await.expect("enter");
                    assert_eq!(r.status().as_u16(), 200);
                    let r = http.post(url("proposals")).bearer_auth(auth).json(&plan_json(i as u64)).send().await.expect("propose");
                    assert_eq!(r.status().as_u16(), 201);
                    made += 1;
                }
            })
        })
        .collect();
    let mut created = 0;
    for w in workers {
        created += w.await.expect("worker");
    }
    let took = start.elapsed();
    // Background card jobs (here: "card recorded" audit lines) finish, then measure.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let settled = pid.and_then(sys::rss_kib);
    let threads = pid.and_then(sys::threads);
    let (listed, pages) = plangate_bench::count_approvals(&s.http, &s.base, OPERATOR_TOKEN, "pending", page).await;
    assert_eq!(listed, created, "{listed} pending listed in {pages} pages of {page}, {created} created");
    let pending_rss = pid.and_then(sys::rss_kib);
    Memory { idle, settled, pending: pending_rss, pages, created, threads, took }
}

/// Part 4 alone, `rounds` times; with a baseline build, it and `bin`
/// alternate (baseline first in each round) so both see the same machine.
async fn memory_rounds(bin: &str, baseline: &str, pending: usize, page: usize, rounds: usize) {
    let mut builds = Vec::new();
    if !baseline.is_empty() {
        println!("baseline binary: {baseline}");
        builds.push(("baseline", baseline));
    }
    builds.push(("this build", bin));
    println!("| round | build | RSS idle | RSS {pending} pending, settled | RSS after listing them | threads | proposals/s |");
    println!("|---|---|---|---|---|---|---|");
    for round in 1..=rounds {
        for (name, path) in &builds {
            let s = ServerProcess::start(path, "").await;
            let m = memory(&s, pending, page).await;
            drop(s);
            println!(
                "| {round} | {name} | {} | {} | {} | {} | {:.0} |",
                mib(m.idle),
                mib(m.settled),
                mib(m.pending),
                m.threads.map(|t| t.to_string()).unwrap_or_else(|| "?".to_string()),
                m.created as f64 / m.took.as_secs_f64()
            );
        }
    }
}

#[tokio::main]
async fn main() {
    let samples: usize = plangate_bench::sized("--samples", 200, 3);
    let gate_samples: usize = plangate_bench::sized("--gate-samples", 2000, 20);
    let pending: usize = plangate_bench::sized("--pending", 10_000, 250);
    let page: usize = plangate_bench::sized("--page", 1000, 100);
    let bin = plangate_bin();
    println!("{}", sys::describe_machine(&std::env::temp_dir()));
    println!("binary: {bin}\n");
    if plangate_bench::flag("--memory-only") {
        let rounds: usize = plangate_bench::arg("--rounds", 3);
        memory_rounds(&bin, &plangate_bench::arg("--baseline-bin", String::new()), pending, page, rounds).await;
        return;
    }

    let (tg, idle_telegram) = telegram_latency(&bin, samples).await;
    let s = ServerProcess::start(&bin, "").await;
    let gate = gate_latency(&s, gate_samples).await;
    drop(s);
    let s = ServerProcess::start(&bin, "").await;
    let mem = memory(&s, pending, page).await;
    drop(s);
    let (doc_fsync, doc_plain) = document_writes(plangate_bench::sized("--documents", 200, 5));

    println!("| what | p50 | p99 | max | n |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, x: &Samples| println!("| {name} | {} | {} | {} | {} |", fmt(x.p50()), fmt(x.p99()), fmt(x.max()), x.len());
    row("propose → fake receives sendMessage (card)", &tg.propose_to_card);
    row("propose HTTP answer (201, document written)", &tg.propose_http);
    row("card → sendDocument received", &tg.card_to_document);
    row("callback handed out → agent's decision?wait returns", &tg.tap_to_release);
    row("callback handed out → answerCallbackQuery received", &tg.tap_to_toast);
    row("POST /v1/gate (plan mode, 200-char rg)", &gate.http);
    row("plangate_gate::check_plan_mode in process (same input)", &gate.in_process);
    row("plan document: write_document (2 fsyncs), in process", &doc_fsync);
    row("plan document: same steps without fsync (bench emulation)", &doc_plain);
    println!();
    println!("RSS idle, Telegram channel polling the fake: {}", mib(idle_telegram));
    println!("RSS idle, no channels: {}", mib(mem.idle));
    println!("RSS with {} pending approvals (no channels), before listing them: {}", mem.created, mib(mem.settled));
    println!(
        "RSS with {} pending approvals (no channels), after listing them in {} pages of {page}: {} (created over HTTP in {:.1} s, {:.0} proposals/s incl. enter)",
        mem.created,
        mem.pages,
        mib(mem.pending),
        mem.took.as_secs_f64(),
        mem.created as f64 / mem.took.as_secs_f64()
    );
    if plangate_bench::smoke() {
        println!("\nsmoke run: every part ran once at tiny sizes; these figures measure nothing");
    }
}
