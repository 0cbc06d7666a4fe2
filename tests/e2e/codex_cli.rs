//! `plangate propose [--codex] … --wait` against the real binary: the Codex
//! `<proposed_plan>` samples in tests/fixtures/codex/, the exit codes, the
//! JSON output and the live status line on a terminal.

use super::kit::fixture_path;
use plangate_testkit::server::{eventually, ServerProcess, AGENT_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A Codex sample in tests/fixtures/codex/.
fn codex_fixture(name: &str) -> PathBuf {
    fixture_path("codex", name)
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(codex_fixture(name)).expect("fixture")
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn agent_cli(s: &ServerProcess, args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args)
        .env("PLANGATE_URL", &s.base)
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn plangate");
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).await.expect("stdin");
    }
    let out = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output()).await.expect("finished").expect("output");
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    eprintln!("plangate {} -> exit {}\nstdout: {}stderr: {}", args.join(" "), out.code, out.stdout, out.stderr);
    out
}

async fn document_of(stdout: &str) -> String {
    let path = stdout.lines().find_map(|l| l.strip_prefix("document: ")).expect("document line");
    plangate_testkit::server::document(path).await
}

#[tokio::test]
async fn codex_plan_approved_exits_0_and_only_the_block_is_proposed() {
    let s = ServerProcess::start(BIN, "").await;
    let file = codex_fixture("final_message.md");
    let args = ["propose", "--codex", file.to_str().expect("path"), "--session", "codex-1", "--wait", "--timeout", "30"];
    let approver = async { s.decide_when_pending("codex-1", json!({"action": "approve", "actor": "alice"})).await };
    let (out, decided) = tokio::join!(agent_cli(&s, &args, None), approver);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let id = decided["approval_id"].as_str().expect("id");
    assert!(out.stdout.starts_with(&format!("v1 {id} approved by operator:alice\n")), "{}", out.stdout);
    // Not a terminal: no live line, no carriage returns.
    assert!(!out.stderr.contains('\r') && !out.stderr.contains('⏳'), "{:?}", out.stderr);
    let doc = document_of(&out.stdout).await;
    assert!(doc.contains("# Retry transient provider errors in the payment client"), "{doc}");
    assert!(doc.contains("4. Tests: 503 then success"), "{doc}");
    assert!(!doc.contains("I read `src/payments/client.rs`") && !doc.contains("Want me to also add a metric"), "{doc}");
    assert!(!doc.contains("proposed_plan"), "{doc}");
    let (_, status) = ServerProcess::send(s.agent(Method::GET, "/v1/sessions/codex-1")).await;
    assert_eq!(status["title"], "Retry transient provider errors in the payment client");
}

#[tokio::test]
async fn changes_requested_exit_3_with_the_feedback_and_the_last_block_wins() {
    let s = ServerProcess::start(BIN, "").await;
    let file = codex_fixture("two_blocks.md");
    let args = ["propose", "--codex", file.to_str().expect("path"), "--session", "codex-2", "--wait", "--timeout", "30"];
    let feedback = "Add a limit on total retry time";
    let approver = async { s.decide_when_pending("codex-2", json!({"action": "revise", "feedback": feedback, "actor": "bob"})).await };
    let (out, _) = tokio::join!(agent_cli(&s, &args, None), approver);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stdout.contains("rejected by operator:bob"), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("feedback: {feedback}\n")), "{}", out.stdout);
    let (_, status) = ServerProcess::send(s.agent(Method::GET, "/v1/sessions/codex-2")).await;
    assert_eq!(status["title"], "Retry charges and refunds");
}

#[tokio::test]
async fn json_from_stdin_with_crlf_and_cancel_or_timeout_exit_4() {
    let s = ServerProcess::start(BIN, "").await;
    // CRLF on stdin: the plan comes out with LF.
    let crlf = fixture_text("final_message.md").replace('\n', "\r\n");
    let args = ["propose", "--codex", "-", "--session", "codex-3", "--wait", "--timeout", "30", "--json"];
    let approver = async { s.decide_when_pending("codex-3", json!({"action": "approve", "actor": "alice"})).await };
    let (out, _) = tokio::join!(agent_cli(&s, &args, Some(&crlf)), approver);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let d: Value = serde_json::from_str(&out.stdout).expect("--json prints the Decision");
    assert_eq!((d["status"].as_str(), d["version"].as_u64()), (Some("approved"), Some(1)));
    assert!(d["injection"].as_str().unwrap_or("").starts_with("[PLAN_DECISION]: approved"));
    let doc = plangate_testkit::server::document(d["document_path"].as_str().expect("path")).await;
    assert!(!doc.contains('\r') && doc.contains("## Steps\n1. Add `RetryPolicy"), "{doc:?}");
    // The CRLF sample on disk extracts the same plan.
    let from_file = plangate_agent::codex::extract_proposed_plan(&fixture_text("crlf.md")).expect("crlf sample");
    let from_lf = plangate_agent::codex::extract_proposed_plan(&fixture_text("final_message.md")).expect("lf sample");
    assert_eq!(from_file.markdown, from_lf.markdown);

    // Cancelled by a human: 4.
    let file = codex_fixture("fenced_example.md");
    let args = ["propose", "--codex", file.to_str().expect("path"), "--session", "codex-4", "--wait", "--timeout", "30"];
    let canceller = async { s.decide_when_pending("codex-4", json!({"action": "cancel", "actor": "carol"})).await };
    let (out, _) = tokio::join!(agent_cli(&s, &args, None), canceller);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stdout.contains("cancelled by operator:carol"), "{}", out.stdout);
    let (_, status) = ServerProcess::send(s.agent(Method::GET, "/v1/sessions/codex-4")).await;
    assert_eq!(status["title"], "Add a health endpoint", "the fenced example is not the plan");

    // Nobody decides within --timeout: 4, still pending.
    let started = Instant::now();
    let args = ["propose", "--codex", file.to_str().expect("path"), "--session", "codex-5", "--wait", "--timeout", "1"];
    let out = agent_cli(&s, &args, None).await;
    assert_eq!(out.code, 4);
    assert!(out.stdout.contains(" pending"), "{}", out.stdout);
    assert!(out.stderr.contains("still pending after 1s"), "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(10));
    // Without --wait, proposing is success.
    let args = ["propose", "--codex", file.to_str().expect("path"), "--session", "codex-6"];
    let out = agent_cli(&s, &args, None).await;
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains(" pending"), "{}", out.stdout);
}

#[tokio::test]
async fn usage_errors_exit_2_and_propose_nothing() {
    let s = ServerProcess::start(BIN, "").await;
    let cases: [(Vec<String>, &str); 6] = [
        (vec!["--codex".into(), codex_fixture("no_block.md").display().to_string()], "no <proposed_plan> block found"),
        (vec!["--codex".into(), codex_fixture("unterminated.md").display().to_string()], "opened on line 3 is never closed"),
        (vec!["/nonexistent/plan.md".into()], "cannot read /nonexistent/plan.md"),
        (vec![codex_fixture("final_message.md").display().to_string(), "--session".into(), "a/b".into()], "--session"),
        (vec![codex_fixture("final_message.md").display().to_string(), "--frobnicate".into()], "--frobnicate"),
        (vec![codex_fixture("final_message.md").display().to_string(), "--timeout".into(), "soon".into()], "soon"),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["propose".to_string()];
        args.extend(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = agent_cli(&s, &args, None).await;
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
    }
    let (_, list) = ServerProcess::send(s.operator(Method::GET, "/v1/approvals?status=pending")).await;
    assert_eq!(list, json!([]));
}

#[tokio::test]
async fn a_terminal_gets_one_live_status_line() {
    let s = ServerProcess::start(BIN, "").await;
    let file = codex_fixture("final_message.md");
    // `script` gives the command a pseudo-terminal; its output is the screen.
    let command = format!("{BIN} propose --codex {} --session codex-tty --wait --timeout 30", file.display());
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` is not installed, so there is no pseudo-terminal to test with");
        return;
    }
    // The screen so far, read as it is drawn.
    let screen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let run = async {
        let mut child = tokio::process::Command::new("script")
            .args(["-qefc", &command, "/dev/null"])
            .env("PLANGATE_URL", &s.base)
            .env("PLANGATE_TOKEN", AGENT_TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("script (util-linux) runs");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = stdout.read(&mut chunk).await {
            screen.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
        let status = child.wait().await.expect("script exits");
        (status.code().unwrap_or(-1), String::from_utf8_lossy(&screen.lock().unwrap()).into_owned())
    };
    let approver = async {
        let id = s.pending_approval("codex-tty").await;
        // Once the line has ticked at least once more.
        eventually(Duration::from_secs(15), "the status line at 1s", || {
            let drawn = String::from_utf8_lossy(&screen.lock().unwrap()).contains("awaiting approval · 1s");
            std::future::ready(drawn)
        })
        .await;
        let (st, _) = ServerProcess::send(
            s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"})),
        )
        .await;
        assert_eq!(st, 200);
    };
    let ((code, screen), ()) = tokio::join!(run, approver);
    eprintln!("screen: {screen:?}");
    assert_eq!(code, 0);
    assert!(screen.contains("\r\x1b[2K⏳ plan v1 (#"), "{screen:?}");
    assert!(screen.contains("awaiting approval · 1s"), "{screen:?}");
    assert!(screen.contains("\r\x1b[2K✓ plan v1 approved by operator:alice after "), "{screen:?}");
    // One line: everything before the outcome was redrawn in place.
    let before_outcome = screen.split("✓ plan v1 approved").next().unwrap_or("");
    assert!(!before_outcome.contains('\n'), "{screen:?}");
}
