//! `plangate wait --session S [--exec PROGRAM [ARGS]...]` through the real
//! binary: it waits with chained long-polls, survives a server restart, runs
//! the program once with the decision in its environment and on stdin (never
//! through a shell of its own), takes the injection, and exits with the
//! CLI's decision codes.

use super::kit::{call, decide, plan, propose_id};
use plangate_testkit::server::{eventually, ServerProcess, AGENT_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(30);

/// Records what the program saw: how often it ran, its variables, its stdin
/// and its first argument (to show everything after `--exec` is its own).
const RECORDER: &str = r#"echo run >> "$OUT/runs"
printf 'status=%s\nid=%s\nversion=%s\ndecided_by=%s\nexit=%s\nsession=%s\n' "$PLANGATE_DECISION_STATUS" "$PLANGATE_APPROVAL_ID" "$PLANGATE_VERSION" "$PLANGATE_DECIDED_BY" "$PLANGATE_EXIT_CODE" "$PLANGATE_SESSION" > "$OUT/env"
printf '%s' "$PLANGATE_FEEDBACK" > "$OUT/feedback"
printf '%s' "$PLANGATE_INJECTION" > "$OUT/injection"
printf '%s' "$0" > "$OUT/arg0"
cat > "$OUT/stdin.json""#;

/// `plangate wait` with `args`, as the agent `demo`, recording into `out`.
fn wait(s: &ServerProcess, out: &Path, args: &[&str]) -> Child {
    Command::new(BIN)
        .arg("wait")
        .args(args)
        .env("PLANGATE_URL", &s.base)
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .env("OUT", out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn plangate wait")
}

async fn finished(child: Child) -> Output {
    tokio::time::timeout(WAIT, child.wait_with_output()).await.expect("plangate wait did not finish").expect("wait output")
}

fn read(out: &Path, name: &str) -> String {
    std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[tokio::test]
async fn wait_runs_the_program_once_with_the_decision_made_after_it_started() {
    let s = ServerProcess::start(BIN, "").await;
    let out = tempfile::tempdir().unwrap();
    let id = propose_id(&s, "w1", &plan("Resume me", &["read", "write"])).await;
    let child = wait(&s, out.path(), &["--session", "w1", "--exec", "sh", "-c", RECORDER, "--json"]);
    s.waiting(1).await;
    assert!(!out.path().join("runs").exists(), "the program ran before the decision");
    decide(&s, &id, &json!({"action": "approve", "actor": "alice"})).await;

    let output = finished(child).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(read(out.path(), "runs"), "run\n", "the program runs exactly once");
    assert_eq!(read(out.path(), "env"), format!("status=approved\nid={id}\nversion=1\ndecided_by=operator:alice\nexit=0\nsession=w1\n"));
    assert_eq!(read(out.path(), "arg0"), "--json", "everything after --exec is the program's");
    let (_, api) = call(s.agent(Method::GET, "/v1/sessions/w1/decision")).await;
    let stdin: Value = serde_json::from_str(&read(out.path(), "stdin.json")).unwrap();
    assert_eq!(stdin, api, "stdin carries the Decision JSON as the API answers it");
    assert_eq!(read(out.path(), "injection"), api["injection"].as_str().unwrap());
    assert!(read(out.path(), "injection").starts_with("[PLAN_DECISION]: approved"));
    // `wait` took the injection: no other path delivers it again.
    let (_, taken) = call(s.agent(Method::POST, "/v1/sessions/w1/injection/take")).await;
    assert_eq!(taken, json!({"injection": null}));
    // Its own stdout: the decision line (the program's stdout is separate files here).
    assert!(String::from_utf8_lossy(&output.stdout).contains("approved"), "{}", String::from_utf8_lossy(&output.stdout));
}

#[tokio::test]
async fn changes_requested_exit_3_and_the_feedback_is_data_never_a_command() {
    let s = ServerProcess::start(BIN, "").await;
    let out = tempfile::tempdir().unwrap();
    let pwned = out.path().join("pwned");
    let id = propose_id(&s, "w2", &plan("Risky", &["read", "write"])).await;
    let child = wait(&s, out.path(), &["--session", "w2", "--exec", "sh", "-c", RECORDER]);
    s.waiting(1).await;
    let feedback = format!("Split it. $(touch {p}) `touch {p}` ; touch {p} && echo \"quoted\" 'single'", p = pwned.display());
    let d = decide(&s, &id, &json!({"action": "revise", "feedback": feedback, "actor": "bob"})).await;

    let output = finished(child).await;
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(read(out.path(), "runs"), "run\n");
    assert_eq!(read(out.path(), "feedback"), d["feedback"].as_str().unwrap());
    assert_eq!(read(out.path(), "feedback"), feedback, "passed verbatim");
    assert!(!pwned.exists(), "text from the decision was executed");
    assert!(read(out.path(), "env").starts_with("status=rejected\n"));
    assert!(read(out.path(), "env").contains("exit=3\n"));
    assert!(read(out.path(), "injection").starts_with("[PLAN_DECISION]: rejected"));
}

#[tokio::test]
async fn timeout_exits_4_without_running_and_a_failing_program_exits_5() {
    let s = ServerProcess::start(BIN, "").await;
    let out = tempfile::tempdir().unwrap();
    let id = propose_id(&s, "w3", &plan("Slow", &["read", "write"])).await;
    let output = finished(wait(&s, out.path(), &["--session", "w3", "--timeout", "1", "--exec", "sh", "-c", RECORDER])).await;
    assert_eq!(output.status.code(), Some(4), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("still pending"));
    assert!(!out.path().join("runs").exists(), "the program ran without a decision");
    decide(&s, &id, &json!({"action": "approve", "actor": "alice"})).await;
    let output = finished(wait(&s, out.path(), &["--session", "w3", "--approval", &id, "--exec", "false"])).await;
    assert_eq!(output.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&output.stderr).contains("\"false\" exited with"), "{}", String::from_utf8_lossy(&output.stderr));
    // No proposal, no program: usage errors.
    let output = finished(wait(&s, out.path(), &["--session", "never", "--exec", "true"])).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("has no proposal yet"));
    let output = finished(wait(&s, out.path(), &["--session", "bad id"])).await;
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test]
async fn wait_reconnects_after_the_server_restarts() {
    let mut s = ServerProcess::start(BIN, "").await;
    let out = tempfile::tempdir().unwrap();
    let id = propose_id(&s, "w4", &plan("Survive a restart", &["read", "write"])).await;
    let mut child = wait(&s, out.path(), &["--session", "w4", "--exec", "sh", "-c", RECORDER]);
    let stderr = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let seen = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.lock().unwrap().push(line);
        }
    });
    s.waiting(1).await;
    s.kill9().await;
    eventually(WAIT, "wait reports the lost connection", || {
        let seen = stderr.clone();
        async move { seen.lock().unwrap().iter().any(|l| l.contains("trying again in")) }
    })
    .await;
    s.start_again_on_same_port().await;
    s.waiting(1).await;
    decide(&s, &id, &json!({"action": "approve", "actor": "alice"})).await;

    let status = tokio::time::timeout(WAIT, child.wait()).await.expect("wait finished").unwrap();
    let log = stderr.lock().unwrap().join("\n");
    println!("plangate wait across a kill -9 and restart of the server:\n{log}");
    assert_eq!(status.code(), Some(0), "{log}");
    assert_eq!(read(out.path(), "runs"), "run\n");
    assert!(read(out.path(), "env").starts_with("status=approved\n"));
}

/// `plangate propose … --print-id`: the approval id alone on stdout.
async fn propose_cli(s: &ServerProcess, session: &str, dir: &Path, title: &str) -> String {
    let file = dir.join(format!("{title}.md"));
    std::fs::write(&file, format!("# {title}\n\n1. read\n2. write\n")).expect("plan file");
    let output = Command::new(BIN)
        .args(["propose", file.to_str().expect("path"), "--session", session, "--print-id"])
        .env("PLANGATE_URL", &s.base)
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .output()
        .await
        .expect("plangate propose");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let id = String::from_utf8(output.stdout).expect("utf-8");
    assert!(id.ends_with('\n') && id.trim().len() == 32 && id.lines().count() == 1, "one line, the id: {id:?}");
    id.trim().to_string()
}

/// v1 approved; the propose of v2 failed (422); `plangate wait --session j1
/// --exec …` ran the program at once with `status=approved v=1`: a runner
/// that missed the failed propose acted on the old plan. Now a decision made
/// before the wait started is refused (exit 4, nothing run) unless
/// `--accept-decided`, and `--approval ID` binds the wait to one proposal.
#[tokio::test]
async fn wait_never_acts_on_a_decision_made_before_it_started() {
    let s = ServerProcess::start(BIN, "").await;
    let out = tempfile::tempdir().unwrap();
    let v1 = propose_id(&s, "j1", &plan("First", &["read", "write"])).await;
    decide(&s, &v1, &json!({"action": "approve", "actor": "alice"})).await;
    let (st, _) = call(s.agent(Method::POST, "/v1/sessions/j1/enter")).await;
    assert_eq!(st, 200);
    let bad = json!({"title": "Second", "steps": [{"step": "read"}], "unknown_field": true});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/j1/proposals").json(&bad)).await;
    assert_eq!(st, 422, "the propose of v2 fails: {d}");

    let output = finished(wait(&s, out.path(), &["--session", "j1", "--exec", "sh", "-c", RECORDER])).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(!out.path().join("runs").exists(), "the program ran on v1's old approval");
    assert!(stderr.contains("already approved before `plangate wait` started") && stderr.contains("--accept-decided"), "{stderr}");

    // Asked for: the decision already made.
    let output = finished(wait(&s, out.path(), &["--session", "j1", "--accept-decided", "--exec", "sh", "-c", RECORDER])).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(read(out.path(), "runs"), "run\n");
    std::fs::remove_file(out.path().join("runs")).unwrap();

    // Bound to one proposal: the id `propose --print-id` printed.
    let v2 = propose_cli(&s, "j1", out.path(), "Third").await;
    assert_eq!(v2, s.pending_approval("j1").await);
    let output = finished(wait(&s, out.path(), &["--session", "j1", "--approval", &v1, "--exec", "sh", "-c", RECORDER])).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("is not the latest proposal"), "{stderr}");
    assert!(!out.path().join("runs").exists(), "a superseded approval runs nothing");

    let child = wait(&s, out.path(), &["--session", "j1", "--approval", &v2, "--exec", "sh", "-c", RECORDER]);
    s.waiting(1).await;
    decide(&s, &v2, &json!({"action": "approve", "actor": "alice"})).await;
    let output = finished(child).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(read(out.path(), "runs"), "run\n");
    assert!(read(out.path(), "env").contains(&format!("id={v2}\nversion=2\n")), "{}", read(out.path(), "env"));
    let output = finished(wait(&s, out.path(), &["--session", "j1", "--approval", "not-an-id"])).await;
    assert_eq!(output.status.code(), Some(2));
}

/// Issue 54: the README's real setup in a second terminal. With only the
/// server's own variables exported (`PLANGATE__SERVER__OPERATOR_TOKEN`, one
/// `PLANGATE__AGENTS__<ID>__TOKEN`), the CLI and the agent's commands use
/// them; with none, the error names the variable to set, not only a flag.
#[tokio::test]
async fn a_second_terminal_needs_only_the_servers_own_variables() {
    use plangate_testkit::server::OPERATOR_TOKEN;
    let s = ServerProcess::start(BIN, "").await;
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args(args).env_remove("PLANGATE_OPERATOR_TOKEN").env_remove("PLANGATE_TOKEN").env("PLANGATE_URL", &s.base);
        for (k, _) in std::env::vars() {
            if k.starts_with("PLANGATE__") {
                cmd.env_remove(k);
            }
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run plangate")
    };
    let url = s.base.clone();
    let out = run(&["list", "--url", &url], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PLANGATE_OPERATOR_TOKEN") && err.contains("PLANGATE__SERVER__OPERATOR_TOKEN"), "{err}");
    let out = run(&["list", "--url", &url], &[("PLANGATE__SERVER__OPERATOR_TOKEN", OPERATOR_TOKEN)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The agent's side: one agent's token exported is the agent's token.
    let out = run(&["status", "--session", "second-terminal"], &[("PLANGATE__AGENTS__DEMO__TOKEN", AGENT_TOKEN)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Two agents' tokens: none is guessed.
    let two = [("PLANGATE__AGENTS__DEMO__TOKEN", AGENT_TOKEN), ("PLANGATE__AGENTS__OTHER__TOKEN", "x")];
    let out = run(&["status", "--session", "second-terminal"], &two);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("PLANGATE_TOKEN"));
}
