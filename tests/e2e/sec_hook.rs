//! The Claude Code hook never fails open, through the real binary and the
//! command string the installer writes, run the way Claude Code runs it
//! (`sh -c '<command>'`, the event as JSON on stdin): a binary that moved
//! away, a server that cannot be reached, a panic. And `plangate mcp` acts on
//! the session the hook gates: Claude's `session_id`, handed over by the hook
//! in `updatedInput`.

use super::kit::{call_tool, closed_port_url, read_json, run_with_input, Mcp, Run};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A `PreToolUse` denial's reason (whatever the exit code: a fail-closed
/// answer is read as it is).
fn denial(out: &Run) -> String {
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", out.stdout));
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    v["hookSpecificOutput"]["permissionDecisionReason"].as_str().expect("reason").to_string()
}

/// Run `cmd` with `input` on stdin, with only `env` (plus a PATH without
/// plangate on it) in its environment.
async fn run(mut cmd: tokio::process::Command, input: &[u8], env: &[(&str, &str)]) -> Run {
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_with_input(cmd, input, Duration::from_secs(60)).await;
    eprintln!("-> exit {}; stdout {:?}; stderr {:?}", out.code, out.stdout.trim(), out.stderr.trim());
    out
}

/// The installed command, run as Claude Code runs a command hook.
async fn claude_runs(command: &str, input: &Value, env: &[(&str, &str)]) -> Run {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command);
    run(cmd, input.to_string().as_bytes(), env).await
}

/// `plangate hook claude` itself.
async fn bare_hook(url: &str, input: &Value) -> Run {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["hook", "claude"]);
    run(cmd, input.to_string().as_bytes(), &[("PLANGATE_URL", url), ("PLANGATE_TOKEN", AGENT_TOKEN)]).await
}

fn pre_tool_use_event(session: &str, tool: &str, input: Value) -> Value {
    json!({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input,
           "cwd": "/home/dev/shop", "permission_mode": "default", "tool_use_id": "toolu_01"})
}

async fn install_with(bin: &Path, project: &Path, args: &[&str]) -> Run {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["hook", "install", "claude"]).args(args).current_dir(project);
    let home = project.join("home");
    run(cmd, b"", &[("HOME", home.to_str().expect("utf-8"))]).await
}

#[tokio::test]
async fn an_installed_hook_whose_binary_moved_away_blocks_every_call() {
    // The binary somewhere only its path reaches, quotes and spaces included.
    let place = tempfile::tempdir().expect("dir");
    let dir = place.path().join("tools dir with 'quotes'");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let copy = dir.join("plangate");
    std::fs::copy(BIN, &copy).expect("copy the binary");
    let project = tempfile::tempdir().expect("project");

    let out = install_with(&copy, project.path(), &["--scope", "local"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("warning"), "local scope is personal: {}", out.stderr);
    let settings = read_json(&project.path().join(".claude/settings.local.json"));
    assert!(!project.path().join(".claude/settings.json").exists(), "the shared file is left alone");
    let command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().expect("command").to_string();
    assert_eq!(settings["hooks"]["PermissionRequest"][0]["hooks"][0]["command"].as_str(), Some(command.as_str()));
    let real = copy.canonicalize().expect("canonical");
    assert!(command.contains(&real.to_string_lossy().replace('\'', r"'\''")), "{command}");
    assert!(command.ends_with("|| exit 2"), "{command}");

    let write = pre_tool_use_event("moved-1", "Bash", json!({"command": "rm -rf x"}));
    let unreachable = closed_port_url();
    let env = [("PLANGATE_URL", unreachable.as_str()), ("PLANGATE_TOKEN", AGENT_TOKEN)];
    // Installed and in place, on a PATH without plangate: the server cannot be
    // reached, which is a deny Claude Code reads (exit 0, JSON).
    let out = claude_runs(&command, &write, &env).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(denial(&out).contains("cannot reach plangate"), "{}", out.stdout);

    // The binary is moved away: the shell cannot find it (127), and the
    // command turns that into 2, which Claude Code treats as a block.
    std::fs::remove_file(&copy).expect("remove the copy");
    let out = claude_runs(&command, &write, &env).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(!out.stderr.trim().is_empty(), "Claude is shown stderr as the reason");
    let mut permission = write.clone();
    permission["hook_event_name"] = json!("PermissionRequest");
    assert_eq!(claude_runs(&command, &permission, &env).await.code, 2);
}

#[tokio::test]
async fn the_shared_project_file_gets_a_warning_and_every_scope_is_one_entry() {
    let project = tempfile::tempdir().expect("project");
    let bin = Path::new(BIN).canonicalize().expect("canonical");
    let out = install_with(&bin, project.path(), &["--scope", "project"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("warning") && out.stderr.contains("--scope local"), "{}", out.stderr);
    let shared = read_json(&project.path().join(".claude/settings.json"));
    assert_eq!(shared["hooks"]["PreToolUse"].as_array().map(Vec::len), Some(1));

    // A legacy bare entry (PATH-dependent) is replaced, not kept beside the new one.
    let legacy = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "plangate hook claude"}]}]}});
    std::fs::write(project.path().join(".claude/settings.local.json"), legacy.to_string()).expect("write");
    let out = install_with(&bin, project.path(), &["--scope", "local"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("settings.json also has plangate hooks"), "{}", out.stderr);
    let local = read_json(&project.path().join(".claude/settings.local.json"));
    let groups = local["hooks"]["PreToolUse"].as_array().cloned().unwrap_or_default();
    assert_eq!(groups.len(), 1, "{local}");
    assert!(groups[0]["hooks"][0]["command"].as_str().unwrap_or("").ends_with(" claude || exit 2"), "{local}");
}

#[tokio::test]
async fn a_hook_that_panics_blocks_the_call() {
    // Its stdout closed, the hook panics writing its answer (print! on a
    // broken pipe): exit 2 with the reason on stderr, not 101.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["hook", "claude"])
        .env_clear()
        .env("PLANGATE_URL", closed_port_url())
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(pre_tool_use_event("panic-1", "Bash", json!({"command": "rm -rf x"})).to_string().as_bytes()).await.expect("write");
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.expect("finished").expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("crashed") && stderr.contains("blocked"), "{stderr}");
}

/// `plangate mcp` as Claude Code starts it: no PLANGATE_SESSION.
async fn mcp_without_session(s: &ServerProcess) -> Mcp {
    let base = s.base.clone();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(move |cmd| {
        cmd.arg("mcp").env("PLANGATE_URL", &base).env("PLANGATE_TOKEN", AGENT_TOKEN).env_remove("PLANGATE_SESSION");
    }))
    .expect("spawn plangate mcp");
    ().serve(transport).await.expect("MCP handshake")
}

/// The hook's answer to Claude calling plangate's MCP tool `tool` with
/// `input` in session `session`: allowed, with the input to call it with.
async fn through_the_hook(s: &ServerProcess, session: &str, tool: &str, input: Value) -> Value {
    let out = bare_hook(&s.base, &pre_tool_use_event(session, &format!("mcp__plangate__{tool}"), input)).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", out.stdout));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse", "{v}");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "allow", "{v}");
    v["hookSpecificOutput"]["updatedInput"].clone()
}

#[tokio::test]
async fn the_mcp_server_acts_on_the_session_the_hook_gates() {
    let s = ServerProcess::start(BIN, "").await;
    let mcp = mcp_without_session(&s).await;

    // Claude calls mcp__plangate__enter_plan_mode; the hook hands the call
    // Claude's session, and the MCP server acts on it.
    let input = through_the_hook(&s, "claude-abc", "enter_plan_mode", json!({"reason": "explore first"})).await;
    assert_eq!(input, json!({"reason": "explore first", "session_id": "claude-abc"}));
    let r = call_tool(&mcp, "enter_plan_mode", &input).await.expect("tool result");
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let status = r.structured_content.clone().expect("status");
    assert_eq!((status["session_id"].as_str(), status["mode"].as_str()), (Some("claude-abc"), Some("plan")));

    // The gate the hook applies to Claude's session is now closed.
    let out = bare_hook(&s.base, &pre_tool_use_event("claude-abc", "Bash", json!({"command": "rm -rf x"}))).await;
    assert_eq!(out.code, 0);
    assert!(denial(&out).starts_with("plangate: "), "{}", out.stdout);

    // A second Claude session in the same project (or after /clear) lands on
    // its own plangate session, even through the same MCP server, and a
    // session id the model made up is replaced by Claude's.
    let input = through_the_hook(&s, "claude-def", "plan_mode_status", json!({"session_id": "claude-abc"})).await;
    assert_eq!(input, json!({"session_id": "claude-def"}));
    let status = call_tool(&mcp, "plan_mode_status", &input).await.expect("tool result").structured_content.expect("status");
    assert_eq!((status["session_id"].as_str(), status["mode"].as_str()), (Some("claude-def"), Some("normal")));
    mcp.cancel().await.expect("close");
}

#[tokio::test]
async fn an_mcp_call_without_a_session_is_refused() {
    let s = ServerProcess::start(BIN, "").await;
    let mcp = mcp_without_session(&s).await;
    for tool in ["enter_plan_mode", "plan_mode_status", "check_tool"] {
        let args = if tool == "check_tool" { json!({"tool": "Bash", "input": {"command": "ls"}}) } else { json!({}) };
        let r = call_tool(&mcp, tool, &args).await.expect("tool result");
        assert_eq!(r.is_error, Some(true), "{tool}: {r:?}");
        let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        assert!(text.contains("PLANGATE_SESSION") && text.contains("plangate hook install claude"), "{text}");
    }
    mcp.cancel().await.expect("close");
}
