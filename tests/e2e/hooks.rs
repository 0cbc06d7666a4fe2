//! `plangate hook claude` and `plangate hook install claude` against the real
//! binary, fed the sample Claude Code events in tests/fixtures/claude/. The
//! lifecycle events (`SessionStart`, `UserPromptSubmit`, subagents) are in
//! `hooks_lifecycle.rs`, with these helpers.

pub(crate) use super::kit::Run;
use super::kit::{backups, call, closed_port_url, hook_event, hook_run, status};
use plangate_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A sample Claude Code event (tests/fixtures/claude/) in `session`.
pub(crate) fn event(name: &str, session: &str) -> Value {
    hook_event("claude", name, session)
}

/// Run `plangate hook claude` with `input` on stdin.
pub(crate) async fn hook_raw(url: &str, input: &[u8], env: &[(&str, &str)], state: &Path) -> Run {
    hook_run("claude", url, input, env, state).await
}

pub(crate) async fn hook(s: &ServerProcess, input: &Value, env: &[(&str, &str)], state: &Path) -> Run {
    hook_raw(&s.base, input.to_string().as_bytes(), env, state).await
}

fn plan_of(v: &Value) -> String {
    v["tool_input"]["plan"].as_str().expect("plan").to_string()
}

#[tokio::test]
async fn gate_denies_writes_without_an_approved_plan_and_stays_silent_once_released() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "gate-1";

    // A session that never planned holds no approved plan: writes are denied,
    // and the reason says how to get one.
    let run = hook(&s, &event("pre_tool_use_bash_write.json", sid), &[], state.path()).await;
    assert_eq!(run.code, 0);
    let reason = run.pre_tool_use_denial();
    assert!(reason.contains("no approved plan") && reason.contains("enter plan mode"), "{reason}");
    // Reads still pass with no opinion.
    let run = hook(&s, &event("pre_tool_use_read.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));

    let (st, _) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{sid}/enter"))).await;
    assert_eq!(st, 200);
    for name in ["pre_tool_use_bash_write.json", "pre_tool_use_edit.json"] {
        let run = hook(&s, &event(name, sid), &[], state.path()).await;
        assert_eq!(run.code, 0);
        let reason = run.pre_tool_use_denial();
        assert!(reason.starts_with("plangate: "), "{reason}");
    }
    // Reads pass with no decision (never "allow": Claude's own rules still apply).
    let run = hook(&s, &event("pre_tool_use_read.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    // A permission dialog for a write while planning is denied in that event's terms.
    let run = hook(&s, &event("permission_request_bash.json", sid), &[], state.path()).await;
    assert!(!run.permission_denial().is_empty());
    assert!(run.took < Duration::from_secs(2), "{:?}", run.took);

    // A person's explicit release: no plan required, the hook has no opinion.
    let (st, v) = ServerProcess::send(
        s.operator(Method::POST, &format!("/v1/operator/sessions/demo/{sid}/release")).json(&json!({"actor": "alice"})),
    )
    .await;
    assert_eq!((st, v["released_by"].as_str(), v["mode"].as_str()), (200, Some("operator:alice"), Some("normal")), "{v}");
    let run = hook(&s, &event("pre_tool_use_bash_write.json", sid), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
}

#[tokio::test]
async fn exit_plan_mode_approved_then_permission_allowed_without_a_second_round() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "approve-1";
    let pre = event("pre_tool_use_exit_plan_mode.json", sid);

    let approver = async { s.decide_when_pending(sid, json!({"action": "approve", "actor": "alice"})).await };
    let (run, decided) = tokio::join!(hook(&s, &pre, &[("PLANGATE_HOOK_WAIT", "30")], state.path()), approver);
    assert_eq!(decided["status"], "approved");
    // Approved through PreToolUse: no permission decision (Claude's own rules
    // still apply), the decision with the approved steps as context.
    assert_eq!(run.code, 0);
    let v = run.json();
    assert!(v["hookSpecificOutput"].get("permissionDecision").is_none(), "{v}");
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().expect("context");
    assert!(
        context.starts_with("[PLAN_DECISION]: approved") && context.contains("The approved steps:\n1. Add a `RetryPolicy`"),
        "{context}"
    );
    let st = status(&s, sid).await;
    assert_eq!((st["mode"].as_str(), st["approval"].as_str(), st["version"].as_u64()), (Some("normal"), Some("approved"), Some(1)));
    assert_eq!(st["title"], "Add retries to the payment client");

    // Claude then shows its plan dialog: PermissionRequest for the same plan is
    // allowed at once from the same approval, with the tool input to run.
    let perm = event("permission_request_exit_plan_mode.json", sid);
    let run = hook(&s, &perm, &[], state.path()).await;
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PermissionRequest");
    assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], "allow");
    assert_eq!(v["hookSpecificOutput"]["decision"]["updatedInput"], perm["tool_input"]);
    assert!(run.took < Duration::from_secs(2), "{:?}", run.took);
    let st = status(&s, sid).await;
    assert_eq!((st["mode"].as_str(), st["version"].as_u64()), (Some("normal"), Some(1)), "no second proposal");

    // The plan is the proposal, verbatim, with its hash bound to the approval.
    let (_, d) = ServerProcess::send(s.agent(Method::GET, &format!("/v1/sessions/{sid}/decision"))).await;
    let body = plangate_agent::ProposalBody::markdown(plan_of(&pre), None);
    assert_eq!(d["plan_hash"].as_str(), body.plan_hash().ok().as_deref());
    // Executing: writes pass the gate again.
    let run = hook(&s, &event("pre_tool_use_bash_write.json", sid), &[], state.path()).await;
    assert_eq!(run.stdout, "");
}

#[tokio::test]
async fn exit_plan_mode_revised_is_denied_with_the_feedback() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "revise-1";
    let perm = event("permission_request_exit_plan_mode.json", sid);

    let feedback = "Split step 2: refunds need their own idempotency check";
    let approver = async { s.decide_when_pending(sid, json!({"action": "revise", "feedback": feedback, "actor": "bob"})).await };
    let (run, decided) = tokio::join!(hook(&s, &perm, &[("PLANGATE_HOOK_WAIT", "30")], state.path()), approver);
    assert_eq!(decided["status"], "rejected");
    assert_eq!(run.code, 0);
    let message = run.permission_denial();
    assert!(message.contains(feedback), "{message}");
    assert!(message.contains("[PLAN_DECISION]: rejected"), "{message}");
    let st = status(&s, sid).await;
    assert_eq!((st["mode"].as_str(), st["approval"].as_str()), (Some("plan"), Some("rejected")));
    // Still planning: writes stay blocked.
    let run = hook(&s, &event("pre_tool_use_bash_write.json", sid), &[], state.path()).await;
    run.pre_tool_use_denial();

    // The same plan again is sent back again, at once, without a new round.
    let run = hook(&s, &event("pre_tool_use_exit_plan_mode.json", sid), &[], state.path()).await;
    let reason = run.pre_tool_use_denial();
    assert!(reason.contains("same plan") && reason.contains(feedback), "{reason}");
    assert_eq!(status(&s, sid).await["version"], 1);

    // A revised plan is a new proposal (v2), pending until someone decides.
    let mut revised = event("pre_tool_use_exit_plan_mode.json", sid);
    revised["tool_input"]["plan"] = json!(plan_of(&revised).replace("Wrap `charge` and `refund`", "Wrap `charge`"));
    let run = hook(&s, &revised, &[("PLANGATE_HOOK_WAIT", "1")], state.path()).await;
    let reason = run.pre_tool_use_denial();
    assert!(reason.contains("plan v2 is awaiting approval"), "{reason}");
}

#[tokio::test]
async fn pending_plan_is_rechecked_by_calling_again_with_the_same_plan() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "pending-1";
    let pre = event("pre_tool_use_exit_plan_mode.json", sid);

    let run = hook(&s, &pre, &[("PLANGATE_HOOK_WAIT", "1")], state.path()).await;
    let first = run.pre_tool_use_denial();
    let id = s.pending_approval(sid).await;
    assert_eq!(first, format!("plangate: plan v1 is awaiting approval (id {id}); call ExitPlanMode again with the same plan to check"));
    assert!(run.took < Duration::from_secs(4), "{:?}", run.took);
    // Calling again returns the same approval, not a v2.
    let again = hook(&s, &pre, &[("PLANGATE_HOOK_WAIT", "0")], state.path()).await;
    assert_eq!(again.pre_tool_use_denial(), first);
    let (st, _) = ServerProcess::send(
        s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "carol"})),
    )
    .await;
    assert_eq!(st, 200);
    let done = hook(&s, &pre, &[("PLANGATE_HOOK_WAIT", "0")], state.path()).await;
    assert_eq!(done.code, 0);
    assert!(done.json()["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or("").starts_with("[PLAN_DECISION]: approved"));
    assert_eq!(status(&s, sid).await["version"], 1);
}

#[tokio::test]
async fn edited_plan_reaches_claude() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let sid = "edit-1";
    let edited =
        json!({"title": "Add retries (charge only)", "steps": [{"step": "Retry charge on 503 only"}, {"step": "Test with the fake"}]});
    let approver = async { s.decide_when_pending(sid, json!({"action": "edit", "plan": edited, "actor": "dana"})).await };
    let pre = event("pre_tool_use_exit_plan_mode.json", sid);
    let (run, decided) = tokio::join!(hook(&s, &pre, &[("PLANGATE_HOOK_WAIT", "30")], state.path()), approver);
    assert_eq!(decided["status"], "edited");
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert!(v["hookSpecificOutput"].get("permissionDecision").is_none(), "an edited plan is not an allow: {v}");
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().expect("context");
    assert!(context.contains("[PLAN_DECISION]: edited") && context.contains("Retry charge on 503 only"), "{context}");

    let perm = event("permission_request_exit_plan_mode.json", sid);
    let run = hook(&s, &perm, &[], state.path()).await;
    let v = run.json();
    assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], "allow");
    let plan = v["hookSpecificOutput"]["decision"]["updatedInput"]["plan"].as_str().expect("plan");
    assert!(plan.starts_with("# Add retries (charge only)") && plan.contains("Retry charge on 503 only"), "{plan}");
    assert_eq!(status(&s, sid).await["version"], 1);
}

#[tokio::test]
async fn a_plan_left_in_claudes_plan_file_is_read_from_there_only() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let home = tempfile::tempdir().expect("home");
    let plans = home.path().join(".claude/plans");
    std::fs::create_dir_all(&plans).expect("mkdir");
    let file = plans.join("rotate-keys.md");
    std::fs::write(&file, "# Rotate the keys\n\n1. Create\n2. Revoke\n").expect("write plan");
    let home_str = home.path().to_string_lossy().into_owned();
    let env = [("HOME", home_str.as_str()), ("PLANGATE_HOOK_WAIT", "0")];

    // Claude Code versions that leave `plan` out name the file instead.
    let mut no_plan = event("pre_tool_use_exit_plan_mode_no_plan.json", "file-1");
    no_plan["tool_input"] = json!({"planFilePath": file.to_string_lossy()});
    let run = hook(&s, &no_plan, &env, state.path()).await;
    assert!(run.pre_tool_use_denial().contains("plan v1 is awaiting approval"), "{}", run.stdout);
    assert_eq!(status(&s, "file-1").await["title"], "Rotate the keys");

    // Any other file is refused: its text would go to the approvers' chats.
    let secret = home.path().join("secret.md");
    std::fs::write(&secret, "# not a plan").expect("write");
    for path in
        [secret.to_string_lossy().into_owned(), "/etc/passwd".to_string(), plans.join("../secret.md").to_string_lossy().into_owned()]
    {
        let mut outside = event("pre_tool_use_exit_plan_mode_no_plan.json", "file-2");
        outside["tool_input"] = json!({"planFilePath": path});
        let run = hook(&s, &outside, &env, state.path()).await;
        assert!(run.pre_tool_use_denial().contains("blocked"), "{}", run.stdout);
    }
    assert_eq!(status(&s, "file-2").await["version"], 0);
}

#[tokio::test]
async fn every_failure_is_a_denial_within_two_seconds() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let write = event("pre_tool_use_bash_write.json", "fail-1");
    let exit = event("pre_tool_use_exit_plan_mode.json", "fail-1");

    // The server is down.
    let run = hook_raw(&closed_port_url(), write.to_string().as_bytes(), &[], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("cannot reach plangate"));
    let run = hook_raw(&closed_port_url(), exit.to_string().as_bytes(), &[], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("could not submit"));

    // The server accepts and never answers.
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let hung_url = format!("http://{}", hung.local_addr().expect("addr"));
    let _holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = hung.accept().await {
            held.push(sock);
        }
    });
    let run = hook_raw(&hung_url, write.to_string().as_bytes(), &[], state.path()).await;
    let reason = run.pre_tool_use_denial();
    assert!(reason.contains("did not answer") || reason.contains("blocked"), "{reason}");
    assert!(run.took < Duration::from_millis(2_600), "{:?}", run.took);

    // Malformed input of every kind.
    let run = hook_raw(&s.base, b"{\"hook_event_name\": \"PreToolUse\", ", &[], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("not valid JSON"));
    let run = hook(&s, &event("pre_tool_use_no_tool_name.json", "fail-1"), &[], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("tool_name"));
    let run = hook(&s, &event("pre_tool_use_exit_plan_mode_no_plan.json", "fail-1"), &[], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("no plan"));
    let mut huge = exit.clone();
    huge["tool_input"]["plan"] = json!(format!("# Huge\n\n{}", "x".repeat(60_000)));
    let run = hook(&s, &huge, &[], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("60000"), "{}", run.stdout);
    // A stop with no approved plan to hold it: no output, Claude stops.
    let run = hook(&s, &event("stop.json", "fail-1"), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    // An event the hook does not handle stops Claude rather than passing.
    let mut unknown = event("stop.json", "fail-1");
    unknown["hook_event_name"] = json!("Notification");
    let run = hook(&s, &unknown, &[], state.path()).await;
    let v = run.json();
    assert_eq!(v["continue"], false);
    assert!(v["stopReason"].as_str().unwrap_or("").contains("\"Notification\""), "{v}");
    // PostToolUse of a tool that is not the subagent tool: nothing to do, no output.
    let run = hook(&s, &event("post_tool_use_write.json", "fail-1"), &[], state.path()).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    // Misconfiguration: no token, a bad token, a bad wait.
    let run = hook(&s, &write, &[("PLANGATE_TOKEN", "")], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("PLANGATE_TOKEN"));
    let run = hook(&s, &write, &[("PLANGATE_TOKEN", "not-a-token-at-all")], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("unauthorized"));
    let run = hook(&s, &exit, &[("PLANGATE_HOOK_WAIT", "soon")], state.path()).await;
    assert!(run.pre_tool_use_denial().contains("PLANGATE_HOOK_WAIT"));
    // None of it left a proposal behind.
    assert_eq!(status(&s, "fail-1").await["version"], 0);
}

fn settings_in(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(".claude/settings.json")).expect("settings")).expect("settings JSON")
}

async fn install(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["hook", "install", "claude"]).args(args).current_dir(cwd).env_remove("PLANGATE_HOOK_WAIT").env_remove("CLAUDE_CONFIG_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("run install");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A local install in a git repository keeps the files it wrote (they name
/// this machine's binary) out of git: added to the project's `.gitignore`
/// once, after what was there; git then ignores them; a second install adds
/// nothing; outside a repository no `.gitignore` appears.
#[tokio::test]
async fn a_local_install_keeps_its_files_out_of_git() {
    let project = tempfile::tempdir().expect("project");
    let dir = project.path();
    let git = |args: &[&str]| std::process::Command::new("git").arg("-C").arg(dir).args(args).output().expect("git (the tests need it)");
    assert!(git(&["init", "-q"]).status.success());
    std::fs::write(dir.join(".gitignore"), "target/\n").expect("write");
    let home = tempfile::tempdir().expect("home");
    let home_str = home.path().to_string_lossy().into_owned();
    let (code, _, err) = install(dir, &["--scope", "local"], &[("HOME", &home_str)]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("added /.claude/settings.local.json, /.claude/plangate-channel.mcp.json to"), "{err}");
    let text = std::fs::read_to_string(dir.join(".gitignore")).expect(".gitignore");
    assert!(
        text.starts_with("target/\n# plangate") && text.ends_with("/.claude/settings.local.json\n/.claude/plangate-channel.mcp.json\n"),
        "{text}"
    );
    for file in [".claude/settings.local.json", ".claude/plangate-channel.mcp.json"] {
        assert!(dir.join(file).exists(), "{file}");
        assert!(git(&["check-ignore", "-q", file]).status.success(), "git does not ignore {file}");
    }
    let (code, _, err) = install(dir, &["--scope", "local"], &[("HOME", &home_str)]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains(".gitignore"), "{err}");
    assert_eq!(std::fs::read_to_string(dir.join(".gitignore")).expect(".gitignore"), text);

    let plain = tempfile::tempdir().expect("not a repository");
    let (code, _, err) = install(plain.path(), &["--scope", "local"], &[("HOME", &home_str)]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!plain.path().join(".gitignore").exists());
}

#[tokio::test]
async fn installer_merges_idempotently_and_keeps_a_backup() {
    let project = tempfile::tempdir().expect("project");
    let dir = project.path();
    std::fs::create_dir_all(dir.join(".claude")).expect("mkdir");
    let original = json!({
        "model": "claude-opus-4",
        "permissions": {"allow": ["Bash(cargo test:*)"], "deny": ["Read(./.env)"]},
        "env": {"RUST_LOG": "info"},
        "hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "cargo fmt"}]}]}
    });
    let original_text = serde_json::to_string_pretty(&original).expect("json");
    std::fs::write(dir.join(".claude/settings.json"), &original_text).expect("write");

    let (code, _, first_err) = install(dir, &[], &[]).await;
    assert_eq!(code, 0, "{first_err}");
    // What the path needs is said first; the MCP tools and the channel are
    // marked optional (issue 54: a newcomer took them for required steps).
    assert!(first_err.contains("Nothing else is needed") && first_err.contains("PLANGATE__AGENTS__<ID>__TOKEN"), "{first_err}");
    assert!(!first_err.contains("register plangate's MCP tools") && !first_err.contains("To have decisions reach"), "{first_err}");
    assert!(first_err.contains("Optional: a decision made after Claude stopped waiting"), "{first_err}");
    let after = settings_in(dir);
    for key in ["model", "permissions", "env"] {
        assert_eq!(after[key], original[key], "{key} kept");
    }
    // The installed command names this binary by absolute path and blocks on
    // any failure to run it (`|| exit 2`): see sec_hook.rs.
    let bin = Path::new(BIN).canonicalize().expect("bin");
    let command = plangate_agent::claude::hook_command(&bin).expect("command");
    let handler =
        json!({"type": "command", "command": command, "timeout": 60, "statusMessage": plangate_agent::claude::install::GATE_STATUS});
    assert_eq!(after["hooks"]["PreToolUse"], json!([{"matcher": "*", "hooks": [handler]}]));
    assert_eq!(after["hooks"]["PermissionRequest"], json!([{"matcher": "*", "hooks": [handler]}]));
    // The MCP tools server is registered in the project's .mcp.json and the
    // channel in a file of its own, which only the printed command line loads.
    let mcp: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(".mcp.json")).expect(".mcp.json")).expect("JSON");
    let exe = Path::new(BIN).canonicalize().expect("bin").to_string_lossy().into_owned();
    assert_eq!(mcp["mcpServers"]["plangate"], json!({"type": "stdio", "command": exe, "args": ["mcp"]}));
    let channel_file = dir.join(".claude/plangate-channel.mcp.json");
    let channel: Value = serde_json::from_str(&std::fs::read_to_string(&channel_file).expect("channel file")).expect("JSON");
    assert_eq!(channel["mcpServers"]["plangate-channel"]["args"], json!(["mcp", "--channel"]));
    assert!(
        first_err.contains(&format!(
            "claude --mcp-config '{}' --dangerously-load-development-channels server:plangate-channel",
            channel_file.display()
        )),
        "{first_err}"
    );
    // The events that gate nothing run the command without `|| exit 2`.
    let observe = json!({"type": "command", "command": plangate_agent::claude::observe_command(&bin).expect("command"), "timeout": 10});
    assert_eq!(after["hooks"]["PostToolUse"], json!([{"matcher": "Agent|Task", "hooks": [observe]}, original["hooks"]["PostToolUse"][0]]));
    assert_eq!(after["hooks"]["PostToolUseFailure"], json!([{"matcher": "Agent|Task", "hooks": [observe]}]));
    assert_eq!(after["hooks"]["SessionStart"], json!([{"matcher": "resume|compact", "hooks": [observe]}]));
    for event in ["UserPromptSubmit", "SubagentStart", "SubagentStop"] {
        assert_eq!(after["hooks"][event], json!([{"hooks": [observe]}]), "{event}");
    }
    let saved = backups(&dir.join(".claude"), "settings.json");
    assert_eq!(saved.len(), 1);
    assert_eq!(std::fs::read_to_string(&saved[0]).expect("backup"), original_text);

    // Again: nothing to do, no new backup.
    let (code, _, err) = install(dir, &[], &[]).await;
    assert_eq!(code, 0);
    assert!(err.contains("already"), "{err}");
    assert_eq!(settings_in(dir), after);
    assert_eq!(backups(&dir.join(".claude"), "settings.json").len(), 1);

    // A longer wait moves the timeout with it, in place, up to Claude Code's
    // 600 s for a command hook.
    let (code, _, _) = install(dir, &["--wait", "590"], &[]).await;
    assert_eq!(code, 0);
    assert_eq!(settings_in(dir)["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 600);
    assert_eq!(settings_in(dir)["hooks"]["PreToolUse"].as_array().map(Vec::len), Some(1));
    let (code, _, err) = install(dir, &["--wait", "591"], &[]).await;
    assert_eq!(code, 1);
    assert!(err.contains("at most 590"), "{err}");

    // Dry run: prints, writes nothing.
    let fresh = tempfile::tempdir().expect("fresh");
    let (code, out, _) = install(fresh.path(), &["--dry-run"], &[]).await;
    assert_eq!(code, 0);
    let printed: Value = serde_json::from_str(&out).expect("dry run prints JSON");
    assert_eq!(printed["hooks"]["PermissionRequest"][0]["matcher"], "*");
    assert!(!fresh.path().join(".claude").exists());

    // User scope writes under HOME; invalid JSON is refused untouched.
    let home = tempfile::tempdir().expect("home");
    let home_str = home.path().to_string_lossy().into_owned();
    let (code, _, err) = install(fresh.path(), &["--scope", "user"], &[("HOME", &home_str)]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(settings_in(home.path())["hooks"]["PreToolUse"][0]["matcher"], "*");
    std::fs::write(home.path().join(".claude/settings.json"), "{ not json").expect("write");
    let (code, _, err) = install(fresh.path(), &["--scope", "user"], &[("HOME", &home_str)]).await;
    assert_eq!(code, 1);
    assert!(err.contains("not valid JSON"), "{err}");
    assert_eq!(std::fs::read_to_string(home.path().join(".claude/settings.json")).expect("read"), "{ not json");
    let (code, _, _) = install(fresh.path(), &["--scope", "team"], &[]).await;
    assert_eq!(code, 2);
}

/// Issue 48: an approved plan with open steps keeps Claude going. Its
/// `Stop` (the fixture Claude Code 2.1.328 sent) is answered with
/// `{"decision": "block"}` naming the next step, escalating, then a few
/// continues, then Claude may stop; progress starts the count again.
#[tokio::test]
async fn a_stop_with_open_steps_keeps_claude_on_the_approved_plan() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let stop = event("stop.json", "kg");
    let sid = stop["session_id"].as_str().expect("session").to_string();
    let plan = json!({"title": "Add retries", "steps": [{"step": "Read the uploader"}, {"step": "Add retries to the uploader"}]});
    crate::sec_amend::approved(&s, &sid, plan).await;
    // The approval, made over the API, has not reached Claude: the first
    // stop delivers it (once).
    let first = hook(&s, &stop, &[], state.path()).await.stdout;
    assert!(first.contains("\"decision\":\"block\"") && first.contains("[PLAN_DECISION]: approved"), "{first}");
    // Nothing reported yet: plangate cannot tell the next step, Claude stops.
    assert_eq!(hook(&s, &stop, &[], state.path()).await.stdout, "");
    let done = json!({"merge": true, "steps": [{"step": "Read the uploader", "status": "completed"}]});
    let (st, v) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/steps")).json(&done)).await;
    assert_eq!(st, 200, "{v}");
    let mut said = Vec::new();
    for _ in 0..7 {
        let run = hook(&s, &stop, &[], state.path()).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        said.push(run.stdout.clone());
    }
    for out in &said[..6] {
        let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(v["decision"], "block", "{v}");
        assert!(v["reason"].as_str().unwrap_or("").contains("step 2 of 2"), "{v}");
    }
    assert_eq!(said[6], "", "after three instructions and three continues, Claude may stop");
    let audit = crate::kit::audit_actions(&s, &sid).await;
    assert_eq!(audit.iter().filter(|a| *a == "stopping").count(), 7, "{audit:?}");
    // Progress starts again; the API answers the same way.
    let going = json!({"merge": true, "steps": [{"step": "Add retries to the uploader", "status": "in_progress"}]});
    let (st, _) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/steps")).json(&going)).await;
    assert_eq!(st, 200);
    let (st, v) =
        call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/stopping")).json(&json!({"last_message": "Shall I continue?"}))).await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("continue")), "{v}");
    // A session without an approved plan: the agent stops at once.
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/other/stopping").json(&json!({}))).await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("stop")), "{v}");
}

/// Issue 48: where Claude Code keeps its own to-do list (`TodoWrite`, the
/// input its shipped `sdk-tools.d.ts` gives: `{"todos": [{"content",
/// "status", "activeForm"}]}`), the hook relays it; a to-do that repeats a
/// plan step moves the step, and a stop is answered with the next one.
#[tokio::test]
async fn a_claude_todo_list_is_the_approved_plans_progress() {
    let s = ServerProcess::start(BIN, "").await;
    let state = tempfile::tempdir().expect("state dir");
    let stop = event("stop.json", "todo");
    let sid = stop["session_id"].as_str().expect("session").to_string();
    let plan = json!({"title": "Add retries", "steps": [{"step": "Read the uploader"}, {"step": "Add retries to the uploader"}]});
    crate::sec_amend::approved(&s, &sid, plan).await;
    // The decision reached Claude (as the hook of its ExitPlanMode would give it).
    let (st, v) = call(s.agent(Method::POST, &format!("/v1/sessions/{sid}/injection/take"))).await;
    assert_eq!(st, 200, "{v}");
    let mut write = event("pre_tool_use_read.json", "todo");
    write["tool_name"] = json!("TodoWrite");
    write["tool_input"] = json!({"todos": [
        {"content": "Read the uploader", "status": "completed", "activeForm": "Reading the uploader"},
        {"content": "Add retries to the uploader", "status": "in_progress", "activeForm": "Adding retries"},
        {"content": "Run the tests ✓ — ünïcödé", "status": "pending", "activeForm": "Testing", "priority": "high"}
    ]});
    let run = hook(&s, &write, &[], state.path()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("\"deny\""), "the to-do list is never blocked: {}", run.stdout);
    let v = crate::kit::status(&s, &sid).await;
    assert_eq!((v["steps"][0]["status"].as_str(), v["steps"][1]["status"].as_str()), (Some("completed"), Some("in_progress")), "{v}");
    let run = hook(&s, &stop, &[], state.path()).await;
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    assert_eq!(v["decision"], "block", "{v}");
    assert!(v["reason"].as_str().unwrap_or("").contains("step 2 of 2"), "{v}");
    let audit = crate::kit::audit_actions(&s, &sid).await;
    assert!(audit.iter().any(|a| a == "todos"), "{audit:?}");
}
