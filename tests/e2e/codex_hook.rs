//! `plangate hook codex` and `plangate hook install codex` against the real
//! binary, fed the sample Codex events in tests/fixtures/codex/hooks/ (their
//! README names the Codex schemas and code they follow: Codex CLI 0.124 to
//! 0.133, openai/codex `codex-rs/hooks`).
//!
//! What Codex does with an answer is its parser's rule, restated in each
//! check: a `PreToolUse` deny is `hookSpecificOutput.permissionDecision`; a
//! `PermissionRequest` deny is `hookSpecificOutput.decision.behavior`; a
//! `Stop` answered `{"decision": "block", "reason"}` runs the reason as
//! Codex's next prompt, `{"systemMessage"}` lets it stop with a message; exit
//! 2 with a reason on stderr blocks on every event, any other non-zero exit
//! is a failed hook, which does not block.

use super::kit::{backups, closed_port_url, fixture_path, hook_event, hook_run, read_json, status, Run};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A sample Codex hook event (tests/fixtures/codex/hooks/) in `session`.
fn codex_event(name: &str, session: &str) -> Value {
    hook_event("codex/hooks", name, session)
}

/// What only Codex's hook answers.
trait CodexRun {
    /// `Stop` blocked: Codex goes on with the reason as its next prompt.
    fn continuation(&self) -> String;
    /// `Stop` not blocked, with a message for the user.
    fn stop_message(&self) -> String;
    /// Exit 2 with a reason on stderr and nothing on stdout.
    fn exit_2_block(&self) -> String;
}

impl CodexRun for Run {
    fn continuation(&self) -> String {
        let v = self.json();
        assert_eq!(v["decision"], "block", "{v}");
        assert_eq!(v.as_object().map(|o| o.len()), Some(2), "only decision and reason: {v}");
        v["reason"].as_str().expect("reason").to_string()
    }
    fn stop_message(&self) -> String {
        let v = self.json();
        assert_eq!(v.as_object().map(|o| o.len()), Some(1), "only systemMessage: {v}");
        v["systemMessage"].as_str().expect("systemMessage").to_string()
    }
    fn exit_2_block(&self) -> String {
        assert_eq!((self.code, self.stdout.as_str()), (2, ""), "{}", self.stderr);
        assert!(!self.stderr.trim().is_empty(), "Codex ignores an exit 2 without a reason on stderr");
        self.stderr.trim().to_string()
    }
}

/// Run `plangate hook codex` with `input` on stdin.
async fn codex_raw(url: &str, input: &[u8], env: &[(&str, &str)], state: &Path) -> Run {
    hook_run("codex", url, input, env, state).await
}

async fn codex(s: &ServerProcess, input: &Value, env: &[(&str, &str)], state: &Path) -> Run {
    codex_raw(&s.base, input.to_string().as_bytes(), env, state).await
}

/// What is left to deliver to the session (taking it).
async fn undelivered(s: &ServerProcess, session: &str) -> Value {
    let (st, v) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{session}/injection/take"))).await;
    assert_eq!(st, 200, "{v}");
    v["injection"].clone()
}

#[tokio::test]
async fn the_gate_on_shell_apply_patch_mcp_and_permission_requests() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "codex-gate-1";

    // Never planned: no approved plan, so nothing may change; reads pass.
    let run = codex(&s, &codex_event("pre_tool_use_bash_write.json", sid), &[], state.path()).await;
    let reason = run.pre_tool_use_denial();
    assert!(reason.contains("no approved plan") && reason.contains("<proposed_plan>"), "{reason}");
    codex(&s, &codex_event("pre_tool_use_bash_read.json", sid), &[], state.path()).await.assert_no_decision();

    // Planning, approval pending: read-only shell and MCP reads pass with no
    // opinion; a write command, apply_patch, an MCP write are denied, and so
    // is the permission dialog for a write, in that event's terms.
    let (st, _) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{sid}/enter"))).await;
    assert_eq!(st, 200);
    for name in ["pre_tool_use_bash_read.json", "pre_tool_use_mcp_read.json"] {
        let run = codex(&s, &codex_event(name, sid), &[], state.path()).await;
        run.assert_no_decision();
        assert!(run.took < Duration::from_secs(2), "{:?}", run.took);
    }
    for (name, why) in [
        ("pre_tool_use_bash_write.json", "`sed`"),
        ("pre_tool_use_apply_patch.json", "`apply_patch` patches files"),
        ("pre_tool_use_mcp_write.json", "write verb `create`"),
    ] {
        let reason = codex(&s, &codex_event(name, sid), &[], state.path()).await.pre_tool_use_denial();
        assert!(reason.starts_with("plangate: ") && reason.contains(why), "{name}: {reason}");
    }
    let message = codex(&s, &codex_event("permission_request_bash.json", sid), &[], state.path()).await.permission_denial();
    assert!(message.contains("`cargo`"), "{message}");

    // A person releases the session: no plan required, the hook has no opinion.
    let (st, _) = ServerProcess::send(
        s.operator(Method::POST, &format!("/v1/operator/sessions/demo/{sid}/release")).json(&json!({"actor": "alice"})),
    )
    .await;
    assert_eq!(st, 200);
    for name in ["pre_tool_use_apply_patch.json", "pre_tool_use_bash_write.json", "permission_request_bash.json"] {
        codex(&s, &codex_event(name, sid), &[], state.path()).await.assert_no_decision();
    }
}

#[tokio::test]
async fn a_plan_at_stop_is_proposed_and_its_approval_keeps_codex_going_once() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "codex-approve-1";
    let stop = codex_event("stop_with_plan.json", sid);

    let approver = async { s.decide_when_pending(sid, json!({"action": "approve", "actor": "alice"})).await };
    let (run, decided) = tokio::join!(codex(&s, &stop, &[("PLANGATE_HOOK_WAIT", "30")], state.path()), approver);
    assert_eq!(decided["status"], "approved");
    let prompt = run.continuation();
    assert!(prompt.starts_with("[PLAN_DECISION]: approved"), "{prompt}");
    assert!(prompt.contains("approved by operator:alice") && prompt.contains(decided["approval_id"].as_str().expect("id")), "{prompt}");
    // Only the block was proposed, under its own title.
    let st = status(&s, sid).await;
    assert_eq!((st["approval"].as_str(), st["version"].as_u64()), (Some("approved"), Some(1)));
    assert_eq!(st["title"], "Retry transient provider errors in the payment client");
    // Delivered once: the hook took the injection after answering with it.
    assert_eq!(undelivered(&s, sid).await, Value::Null);

    // Executing: apply_patch and write commands pass the gate.
    codex(&s, &codex_event("pre_tool_use_apply_patch.json", sid), &[], state.path()).await.assert_no_decision();
    codex(&s, &codex_event("pre_tool_use_bash_write.json", sid), &[], state.path()).await.assert_no_decision();
    // The turn after it ends without a plan: nothing to deliver, Codex stops.
    codex(&s, &codex_event("stop_without_plan.json", sid), &[], state.path()).await.assert_no_decision();
    codex(&s, &codex_event("stop_null_message.json", sid), &[], state.path()).await.assert_no_decision();
    // The same plan again (a final message quoting it): already decided and
    // delivered, so Codex is not sent round again.
    let message = codex(&s, &stop, &[], state.path()).await.stop_message();
    assert!(message.contains("already approved"), "{message}");
    assert_eq!(status(&s, sid).await["version"], 1, "no second proposal");
}

#[tokio::test]
async fn changes_requested_keep_codex_going_with_the_feedback_and_an_edit_with_the_edited_plan() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "codex-revise-1";
    let stop = codex_event("stop_with_plan.json", sid);
    let feedback = "Cap the total retry time at 2 s; the checkout page times out at 5 s";
    let reviser = async { s.decide_when_pending(sid, json!({"action": "revise", "feedback": feedback, "actor": "bob"})).await };
    let (run, decided) = tokio::join!(codex(&s, &stop, &[("PLANGATE_HOOK_WAIT", "30")], state.path()), reviser);
    assert_eq!(decided["status"], "rejected");
    let prompt = run.continuation();
    assert!(prompt.starts_with("[PLAN_DECISION]: rejected") && prompt.contains(feedback), "{prompt}");
    // Still planning: writes stay blocked.
    codex(&s, &codex_event("pre_tool_use_apply_patch.json", sid), &[], state.path()).await.pre_tool_use_denial();

    // Codex revises; its next Stop carries plan v2, which a human edits.
    let mut revised = stop.clone();
    let text = revised["last_assistant_message"].as_str().expect("message").replace("base: 200ms", "base: 100ms, total: 2s");
    revised["last_assistant_message"] = json!(text);
    revised["stop_hook_active"] = json!(true);
    let edited = json!({"title": "Retry charge only", "steps": [{"step": "Retry charge on 503, at most 2 s in total"}, {"step": "Test with the fake"}]});
    // v1 is decided, so the pending approval is v2's.
    let editor = async { s.decide_when_pending(sid, json!({"action": "edit", "plan": edited, "actor": "dana"})).await };
    let (run, decided) = tokio::join!(codex(&s, &revised, &[("PLANGATE_HOOK_WAIT", "30")], state.path()), editor);
    assert_eq!((decided["status"].as_str(), decided["version"].as_u64()), (Some("edited"), Some(2)));
    let prompt = run.continuation();
    assert!(prompt.starts_with("[PLAN_DECISION]: edited"), "{prompt}");
    assert!(prompt.contains("The approved plan:\n\n# Retry charge only") && prompt.contains("at most 2 s in total"), "{prompt}");
    codex(&s, &codex_event("pre_tool_use_apply_patch.json", sid), &[], state.path()).await.assert_no_decision();
}

/// The closing note's proof for Codex: the hook's wait (1 s) ends with the
/// plan pending, Codex stops; a human approves afterwards; the decision
/// reaches Codex at its next `Stop`, once.
#[tokio::test]
async fn a_decision_after_the_wait_reaches_codex_at_its_next_stop() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "codex-late-1";
    let t0 = Instant::now();
    let at = || format!("+{:.1}s", t0.elapsed().as_secs_f64());

    let run = codex(&s, &codex_event("stop_with_plan.json", sid), &[("PLANGATE_HOOK_WAIT", "1")], state.path()).await;
    let message = run.stop_message();
    assert!(message.contains("plan v1") && message.contains("waiting for a human") && message.contains("next turn"), "{message}");
    assert!(run.took >= Duration::from_secs(1), "the hook waited: {:?}", run.took);
    eprintln!("[late decision] {} Stop with a plan: the hook waited 1 s, answered {:?}; Codex stops", at(), message);

    let id = s.pending_approval(sid).await;
    let (st, d) = ServerProcess::send(
        s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "erin"})),
    )
    .await;
    assert_eq!((st, d["status"].as_str()), (200, Some("approved")), "{d}");
    eprintln!("[late decision] {} erin approves plan v1 ({id}), after the hook's wait ended", at());

    // The user sends "continue"; Codex's turn ends without a plan.
    let run = codex(&s, &codex_event("stop_without_plan.json", sid), &[], state.path()).await;
    let prompt = run.continuation();
    assert!(prompt.starts_with("[PLAN_DECISION]: approved") && prompt.contains("approved by operator:erin"), "{prompt}");
    eprintln!("[late decision] {} next Stop: Codex goes on with {:?}", at(), prompt.lines().next().unwrap_or(""));

    let run = codex(&s, &codex_event("stop_without_plan.json", sid), &[], state.path()).await;
    run.assert_no_decision();
    eprintln!("[late decision] {} the Stop after that: nothing left to deliver (delivered once)", at());
    codex(&s, &codex_event("pre_tool_use_apply_patch.json", sid), &[], state.path()).await.assert_no_decision();
    eprintln!("[late decision] {} apply_patch passes the gate: Codex executes the approved plan", at());
}

#[tokio::test]
async fn every_failure_blocks_the_gate_and_lets_a_stop_stop() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "codex-fail-1";
    let write = codex_event("pre_tool_use_bash_write.json", sid);
    let permission = codex_event("permission_request_bash.json", sid);
    let stop = codex_event("stop_with_plan.json", sid);

    // The server is down: the gate denies; a Stop lets Codex stop, saying why.
    let down = closed_port_url();
    let reason = codex_raw(&down, write.to_string().as_bytes(), &[], state.path()).await.pre_tool_use_denial();
    assert!(reason.contains("cannot reach plangate"), "{reason}");
    assert!(codex_raw(&down, permission.to_string().as_bytes(), &[], state.path()).await.permission_denial().contains("cannot reach"));
    let message = codex_raw(&down, stop.to_string().as_bytes(), &[], state.path()).await.stop_message();
    assert!(message.contains("could not submit the plan"), "{message}");
    let plain_stop = codex_event("stop_without_plan.json", sid);
    let message = codex_raw(&down, plain_stop.to_string().as_bytes(), &[], state.path()).await.stop_message();
    assert!(message.contains("could not check"), "{message}");

    // The server accepts and never answers: still a deny, within the budget.
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let hung_url = format!("http://{}", hung.local_addr().expect("addr"));
    let _holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = hung.accept().await {
            held.push(sock);
        }
    });
    let run = codex_raw(&hung_url, write.to_string().as_bytes(), &[], state.path()).await;
    let reason = run.pre_tool_use_denial();
    assert!(reason.contains("did not answer") || reason.contains("blocked"), "{reason}");
    assert!(run.took < Duration::from_millis(2_600), "{:?}", run.took);

    // Input whose event cannot be told, or an event this hook does not
    // answer: exit 2 with the reason on stderr, the block every event obeys.
    let malformed = std::fs::read(fixture_path("codex/hooks", "malformed.json")).expect("fixture");
    assert!(codex_raw(&s.base, &malformed, &[], state.path()).await.exit_2_block().contains("not valid JSON"));
    assert!(codex_raw(&s.base, b"", &[], state.path()).await.exit_2_block().contains("not valid JSON"));
    let no_event = json!({"session_id": sid, "tool_name": "Bash", "tool_input": {"command": "rm -rf x"}});
    assert!(codex(&s, &no_event, &[], state.path()).await.exit_2_block().contains("hook_event_name"));
    let reason = codex(&s, &codex_event("post_tool_use_bash.json", sid), &[], state.path()).await.exit_2_block();
    assert!(reason.contains("\"PostToolUse\"") && reason.contains("plangate hook install codex"), "{reason}");
    // Missing fields: in the event's own terms.
    assert!(codex(&s, &codex_event("pre_tool_use_no_tool_name.json", sid), &[], state.path())
        .await
        .pre_tool_use_denial()
        .contains("tool_name"));
    let no_session = read_json(&fixture_path("codex/hooks", "stop_no_session_id.json"));
    assert!(codex(&s, &no_session, &[], state.path()).await.stop_message().contains("session_id"));
    let mut no_session = write.clone();
    no_session.as_object_mut().expect("object").remove("session_id");
    assert!(codex(&s, &no_session, &[], state.path()).await.pre_tool_use_denial().contains("session_id"));
    // Misconfiguration: no token, a bad token, a bad wait.
    assert!(codex(&s, &write, &[("PLANGATE_TOKEN", "")], state.path()).await.pre_tool_use_denial().contains("PLANGATE_TOKEN"));
    assert!(codex(&s, &write, &[("PLANGATE_TOKEN", "not-a-token-at-all")], state.path())
        .await
        .pre_tool_use_denial()
        .contains("unauthorized"));
    let reason = codex(&s, &permission, &[("PLANGATE_HOOK_WAIT", "soon")], state.path()).await.permission_denial();
    assert!(reason.contains("PLANGATE_HOOK_WAIT"), "{reason}");
    assert!(codex(&s, &stop, &[("PLANGATE_HOOK_WAIT", "soon")], state.path()).await.stop_message().contains("PLANGATE_HOOK_WAIT"));
    // None of it left a proposal behind.
    assert_eq!(status(&s, sid).await["version"], 0);
}

/// Run `plangate hook codex` with its stdout closed: writing the answer
/// panics (a broken pipe).
async fn hook_with_stdout_closed(input: &Value) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["hook", "codex"])
        .env_clear()
        .env("PLANGATE_URL", closed_port_url())
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.to_string().as_bytes()).await.expect("write");
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.expect("finished").expect("output");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test]
async fn a_panic_blocks_a_tool_call_and_lets_a_stop_stop() {
    let (code, stderr) = hook_with_stdout_closed(&codex_event("pre_tool_use_bash_write.json", "codex-panic-1")).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("crashed") && stderr.contains("blocked"), "{stderr}");
    // On Stop an exit 2 would make Codex run again: a panic lets it stop.
    let (code, stderr) = hook_with_stdout_closed(&codex_event("stop_without_plan.json", "codex-panic-1")).await;
    assert_eq!(code, Some(0), "{stderr}");
}

async fn install_codex(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["hook", "install", "codex"]).args(args).current_dir(cwd).env_remove("PLANGATE_HOOK_WAIT").env_remove("CODEX_HOME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("run install");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

#[tokio::test]
async fn installer_merges_idempotently_keeps_a_backup_and_names_the_binary() {
    let project = tempfile::tempdir().expect("project");
    let dir = project.path().join(".codex");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let original = json!({"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "notify-send codex"}]}],
        "PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "audit.sh", "timeout": 5}]}]}});
    let original_text = serde_json::to_string_pretty(&original).expect("json");
    std::fs::write(dir.join("hooks.json"), &original_text).expect("write");

    let run = install_codex(project.path(), &["--wait", "120"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("/hooks") && run.stderr.contains("trust"), "{}", run.stderr);
    let after = read_json(&dir.join("hooks.json"));
    let bin = Path::new(BIN).canonicalize().expect("bin");
    let gate = plangate_agent::codex::hook_command(&bin, true).expect("command");
    let stop = plangate_agent::codex::hook_command(&bin, false).expect("command");
    assert!(gate.ends_with(" codex || exit 2") && !stop.contains("exit 2"), "{gate} / {stop}");
    assert!(
        gate.starts_with(&plangate_agent::hook_command::shell_quote(&format!("{}-hook", bin.display()))),
        "plangate-hook is beside plangate: {gate}"
    );
    let handler = json!({"type": "command", "command": gate, "timeout": 130});
    assert_eq!(after["hooks"]["PreToolUse"], json!([{"matcher": "*", "hooks": [handler]}, original["hooks"]["PreToolUse"][0]]));
    assert_eq!(after["hooks"]["PermissionRequest"], json!([{"matcher": "*", "hooks": [handler]}]));
    assert_eq!(
        after["hooks"]["Stop"],
        json!([{"hooks": [{"type": "command", "command": stop, "timeout": 130, "statusMessage": "plangate: checking for a plan decision"}]}])
    );
    assert_eq!(after["hooks"]["SessionStart"], original["hooks"]["SessionStart"]);
    let saved = backups(&dir, "hooks.json");
    assert_eq!(saved.len(), 1);
    assert_eq!(std::fs::read_to_string(&saved[0]).expect("backup"), original_text);

    // Again: nothing to do, no new backup.
    let run = install_codex(project.path(), &["--wait", "120"], &[]).await;
    assert!(run.code == 0 && run.stderr.contains("already"), "{}", run.stderr);
    assert_eq!((read_json(&dir.join("hooks.json")), backups(&dir, "hooks.json").len()), (after, 1));

    // Dry run prints and writes nothing; user scope follows CODEX_HOME; a
    // file that is not JSON is refused untouched; there is no local scope.
    let fresh = tempfile::tempdir().expect("fresh");
    let run = install_codex(fresh.path(), &["--dry-run"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let printed: Value = serde_json::from_str(&run.stdout).expect("dry run prints JSON");
    assert_eq!(printed["hooks"]["Stop"][0]["hooks"][0]["timeout"], 600);
    assert!(!fresh.path().join(".codex").exists());
    let home = tempfile::tempdir().expect("codex home");
    let home_str = home.path().to_string_lossy().into_owned();
    let run = install_codex(fresh.path(), &["--scope", "user"], &[("CODEX_HOME", &home_str)]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(read_json(&home.path().join("hooks.json"))["hooks"]["PreToolUse"][0]["matcher"], "*");
    std::fs::write(home.path().join("hooks.json"), "{ not json").expect("write");
    let run = install_codex(fresh.path(), &["--scope", "user"], &[("CODEX_HOME", &home_str)]).await;
    assert!(run.code == 1 && run.stderr.contains("not valid JSON"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(home.path().join("hooks.json")).expect("read"), "{ not json");
    assert_eq!(install_codex(fresh.path(), &["--scope", "local"], &[]).await.code, 2);
}

/// The installed commands, run the way Codex runs a command hook
/// (`$SHELL -lc '<command>'`, the event on stdin), from a copy of the binary
/// that is then moved away.
#[tokio::test]
async fn installed_commands_block_the_gate_and_let_a_stop_stop_when_the_binary_is_gone() {
    let place = tempfile::tempdir().expect("dir");
    let dir = place.path().join("tools dir with 'quotes'");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let copy = dir.join("plangate");
    std::fs::copy(BIN, &copy).expect("copy the binary");
    let project = tempfile::tempdir().expect("project");
    let mut cmd = tokio::process::Command::new(&copy);
    cmd.args(["hook", "install", "codex"]).current_dir(project.path());
    assert!(cmd.status().await.expect("install").success());
    let hooks = read_json(&project.path().join(".codex/hooks.json"));
    let gate = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().expect("command").to_string();
    let stop = hooks["hooks"]["Stop"][0]["hooks"][0]["command"].as_str().expect("command").to_string();
    assert!(gate.contains("tools dir with '\\''quotes'\\''/plangate' hook codex"), "{gate}");

    let down = closed_port_url();
    let codex_runs = |command: String, input: Value| {
        let down = down.clone();
        async move {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.args(["-lc", &command])
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("PLANGATE_URL", down)
                .env("PLANGATE_TOKEN", AGENT_TOKEN)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = cmd.spawn().expect("spawn sh");
            let mut stdin = child.stdin.take().expect("stdin");
            let _ = stdin.write_all(input.to_string().as_bytes()).await;
            drop(stdin);
            let out = child.wait_with_output().await.expect("output");
            let run = Run {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                took: Duration::ZERO,
            };
            eprintln!("sh -lc {command:?} -> exit {}: {} {}", run.code, run.stdout.trim(), run.stderr.trim());
            run
        }
    };
    let write = codex_event("pre_tool_use_bash_write.json", "codex-moved-1");
    assert!(codex_runs(gate.clone(), write.clone()).await.pre_tool_use_denial().contains("cannot reach plangate"));

    std::fs::remove_file(&copy).expect("remove the copy");
    // Not found (127), turned into exit 2 with the shell's message on stderr: a block.
    codex_runs(gate.clone(), write).await.exit_2_block();
    codex_runs(gate, codex_event("permission_request_bash.json", "codex-moved-1")).await.exit_2_block();
    // On Stop the failure stays a failure (not 2, which would make Codex run again).
    let run = codex_runs(stop, codex_event("stop_with_plan.json", "codex-moved-1")).await;
    assert!(run.code != 0 && run.code != 2, "{}", run.code);
}

#[tokio::test]
async fn an_answer_given_after_codex_moved_on_reaches_it_at_its_next_stop() {
    use plangate_testkit::telegram::{FakeTelegram, TOKEN};
    let fake = FakeTelegram::start().await;
    let (chat, alice): (i64, i64) = (-1001234567890, 111111);
    let config = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{chat}\"\napprovers = [\"telegram:{alice}\"]\n",
        fake.api_url()
    );
    let s = ServerProcess::start_with(BIN, &["ops"], &config).await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "codex-answer-1";
    // Codex asks through plangate (its MCP tool `ask_user_question`, or the
    // API as here) and does not wait for the answer.
    let (st, _) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{sid}/enter"))).await;
    assert_eq!(st, 200);
    let body = json!({"question": "Keep the v1 endpoint?", "options": ["yes", "no"]});
    let (st, v) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{sid}/questions")).json(&body)).await;
    assert_eq!(st, 201, "{v}");
    fake.wait_request("sendMessage", Duration::from_secs(15), |r| r.str("text").contains("Keep the v1 endpoint?")).await;
    fake.push_update(fake.message_update(chat, FakeTelegram::user(alice, Some("alice"), "Alice"), "/plan answer no", None));
    let mut prompt = String::new();
    for _ in 0..50 {
        let run = codex(&s, &codex_event("stop_without_plan.json", sid), &[], state.path()).await;
        if !run.stdout.trim().is_empty() {
            prompt = run.continuation();
            break;
        }
        // The answer is still on its way through the fake's long poll.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(prompt.starts_with("[PLAN_ANSWER]") && prompt.contains("> no") && prompt.contains("telegram:@alice"), "{prompt}");
    eprintln!("[late answer] Codex's next Stop goes on with {:?}", prompt.lines().next().unwrap_or(""));
    codex(&s, &codex_event("stop_without_plan.json", sid), &[], state.path()).await.assert_no_decision();
}
