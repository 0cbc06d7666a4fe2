//! The real Claude Code (the pinned version, `plangate_testkit::clients`)
//! with plangate's hooks installed by the real installer, against the real
//! `plangate` binary, its model played by the scripted fake Messages API.
//!
//! What a new user does: `plangate hook install claude --scope local` in the
//! project, then Claude Code plans in its native plan mode (ToolSearch to
//! load `ExitPlanMode`, `Write` of the plan file, `ExitPlanMode`), and a
//! human decides over plangate. Each test skips loudly without the client
//! (`.ci/install-clients`) and fails instead under `PLANGATE_REQUIRE_ALL`.

use super::kit::status;
use plangate_testkit::claude::{new_session_id, ClaudeHost, ClaudeRun, Decision, PermissionAsk};
use plangate_testkit::clients::{self, ClaudeCode};
use plangate_testkit::fake_anthropic::{FakeAnthropic, Turn};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use serde_json::json;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A project with plangate's hooks installed by `bin hook install claude
/// --scope local`, a HOME of its own, and the environment Claude Code passes
/// to the hooks.
pub(crate) struct Project {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    state: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Project {
    pub(crate) fn install(bin: &str, server: &ServerProcess, wait: &str) -> Project {
        let dir = tempfile::tempdir().expect("project dir");
        let home = tempfile::tempdir().expect("home");
        let state = tempfile::tempdir().expect("state");
        let out = std::process::Command::new(bin)
            .args(["hook", "install", "claude", "--scope", "local", "--wait", wait])
            .current_dir(dir.path())
            .env("HOME", home.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .output()
            .expect("run the installer");
        assert!(out.status.success(), "install: {}", String::from_utf8_lossy(&out.stderr));
        assert!(dir.path().join(".claude/settings.local.json").exists());
        let env = vec![
            ("PLANGATE_URL".to_string(), server.base.clone()),
            ("PLANGATE_TOKEN".to_string(), AGENT_TOKEN.to_string()),
            ("PLANGATE_STATE_DIR".to_string(), state.path().to_string_lossy().into_owned()),
            ("PLANGATE_HOOK_WAIT".to_string(), wait.to_string()),
        ];
        Project { dir, home, state, env }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn claude(&self, claude: &ClaudeCode, fake: &FakeAnthropic) -> ClaudeRun {
        let mut run = ClaudeRun::new(claude, fake, self.path()).home(self.home.path());
        for (k, v) in &self.env {
            run = run.env(k, v);
        }
        run
    }
}

/// Drive a host-mode run to its `result`, answering every permission prompt
/// but `ExitPlanMode`'s with allow: that one is plangate's to answer (its
/// `PermissionRequest` hook and the host are asked at once; the first answer
/// wins). Returns the prompts the host saw.
async fn drive(host: &mut ClaudeHost) -> Vec<PermissionAsk> {
    let mut asked = Vec::new();
    while let Some(line) = host.next().await {
        if let Some(ask) = PermissionAsk::of(&line) {
            if ask.tool_name != "ExitPlanMode" {
                host.answer(&ask, Decision::Allow).await;
            }
            asked.push(ask);
        } else if line["type"] == "result" {
            break;
        }
    }
    asked
}

/// The native plan-mode script: load `ExitPlanMode`, write the plan file
/// (the path plan mode names), call `ExitPlanMode`; then `after`.
fn plan_mode_script(fake: &FakeAnthropic, plan: &'static str, after: impl IntoIterator<Item = Turn>) {
    fake.push([Turn::tool_search(&["ExitPlanMode"])]);
    fake.push_with(move |req| {
        let path = req.plan_file_path().expect("the plan-mode prompt names the plan file");
        Turn::tool("Write", json!({"file_path": path, "content": plan}))
    });
    fake.push([Turn::tool("ExitPlanMode", json!({}))]);
    fake.push(after);
}

const PLAN: &str = "# Add notes\n\n1. Create notes.txt with a greeting\n";

/// Before any plan, the gate denies a mutation (even under
/// bypassPermissions) and says how to get a plan approved in Claude Code's
/// terms; reads pass.
#[tokio::test]
async fn real_claude_code_cannot_mutate_without_a_plan_and_reads_pass() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "5");
    std::fs::write(project.path().join("README.md"), "hello from the readme").expect("readme");
    let fake = FakeAnthropic::start().await;
    let readme = project.path().join("README.md");
    fake.push([
        Turn::tool("Read", json!({"file_path": readme})),
        Turn::tool("Bash", json!({"command": "touch mutated", "description": "Create a file"})),
        Turn::text("I could not change anything."),
    ]);
    let out = project.claude(&claude, &fake).permission_mode("bypassPermissions").session_id(&new_session_id()).run("make a file").await;
    out.assert_success();

    assert!(!project.path().join("mutated").exists(), "the gate let `touch` run");
    let read = fake.results_of("Read");
    assert!(read[0].text.contains("hello from the readme"), "{read:?}");
    let bash = &fake.results_of("Bash")[0];
    assert!(bash.is_error, "{bash:?}");
    for words in ["plangate", "no approved plan", "EnterPlanMode", "ExitPlanMode"] {
        assert!(bash.text.contains(words), "{words:?} not in {:?}", bash.text);
    }
    assert!(!bash.text.contains("POST /v1/sessions"), "API advice given to Claude Code: {}", bash.text);
}

/// Claude Code's own plan mode, end to end: ToolSearch loads ExitPlanMode,
/// the plan file is written (the only write allowed), ExitPlanMode proposes
/// it, a human approves, and the next `Write` succeeds.
#[tokio::test]
async fn real_claude_code_native_plan_mode_gets_a_plan_approved_and_then_writes() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "30");
    let fake = FakeAnthropic::start().await;
    let notes = project.path().join("notes.txt");
    let sneaky = project.path().join("sneaky.md");
    plan_mode_script(&fake, PLAN, [Turn::tool("Write", json!({"file_path": notes, "content": "hello\n"})), Turn::text("Done.")]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("add notes").await;
    let approver = async {
        let id = s.pending_approval(&sid).await;
        // Nothing mutated while the plan waits; the plan file is where plan mode put it.
        assert!(!notes.exists() && !sneaky.exists());
        let (st, a) = ServerProcess::send(s.operator(reqwest::Method::GET, &format!("/v1/approvals/{id}"))).await;
        assert_eq!(st, 200, "{a}");
        assert!(a.to_string().contains("Create notes.txt with a greeting"), "{a}");
        s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"})).await
    };
    let (asked, decided) = tokio::join!(drive(&mut host), approver);
    assert_eq!(decided["status"], "approved", "{decided}");
    let out = host.finish().await;
    out.assert_success();

    assert!(asked.iter().any(|a| a.tool_name == "ExitPlanMode"), "{asked:?}");
    // The approval was the one tap: Claude Code continues in acceptEdits
    // (the hook's setMode), so the Write asks nobody again (issue 54).
    assert!(!asked.iter().any(|a| a.tool_name == "Write"), "the Write asked again after approval: {asked:?}");
    let exit = fake.results_of("ExitPlanMode");
    assert!(exit[0].text.starts_with("User has approved your plan"), "{exit:?}");
    let write = fake.results_of("Write");
    assert_eq!(write.len(), 2, "{write:?}");
    assert!(!write[0].is_error, "the plan file write was refused: {:?}", write[0]);
    assert!(!write[1].is_error, "{:?}", write[1]);
    assert_eq!(std::fs::read_to_string(&notes).expect("notes.txt"), "hello\n");
    let status = status(&s, &sid).await;
    assert_eq!((status["mode"].as_str(), status["approval"].as_str()), (Some("normal"), Some("approved")), "{status}");
}

/// `[agents.demo] after_approval = "default"`: the operator keeps Claude
/// Code's manual mode after the approval, so the first edit asks at the
/// terminal again (the decision carries the mode; the hook sets it).
#[tokio::test]
async fn real_claude_code_after_approval_default_keeps_asking_for_edits() {
    let Some(claude) = clients::claude_code() else { return };
    let mut s = ServerProcess::start(BIN, "").await;
    let config = std::fs::read_to_string(s.config_path()).expect("config");
    let config = config.replacen("[agents.demo]\n", "[agents.demo]\nafter_approval = \"default\"\n", 1);
    assert!(config.contains("after_approval = \"default\""), "{config}");
    std::fs::write(s.config_path(), config).expect("config");
    s.restart().await;
    let project = Project::install(BIN, &s, "30");
    let fake = FakeAnthropic::start().await;
    let notes = project.path().join("notes.txt");
    plan_mode_script(&fake, PLAN, [Turn::tool("Write", json!({"file_path": notes, "content": "hello\n"})), Turn::text("Done.")]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("add notes").await;
    let approver = s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"}));
    let (asked, decided) = tokio::join!(drive(&mut host), approver);
    assert_eq!(decided["status"], "approved", "{decided}");
    host.finish().await.assert_success();
    let (st, d) = ServerProcess::send(s.agent(reqwest::Method::GET, &format!("/v1/sessions/{sid}/decision"))).await;
    assert_eq!((st, d["after_approval"].as_str()), (200, Some("default")), "{d}");
    assert!(asked.iter().any(|a| a.tool_name == "Write"), "the Write did not ask in manual mode: {asked:?}");
    assert_eq!(std::fs::read_to_string(&notes).expect("notes.txt"), "hello\n");
}

/// Changes requested: the feedback reaches the model as ExitPlanMode's
/// result, with what to do in Claude Code; nothing is written.
#[tokio::test]
async fn real_claude_code_revise_feedback_reaches_the_model() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "30");
    let fake = FakeAnthropic::start().await;
    let notes = project.path().join("notes.txt");
    plan_mode_script(&fake, PLAN, [Turn::tool("Write", json!({"file_path": notes, "content": "x"})), Turn::text("Waiting.")]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("add notes").await;
    let reviser = s.decide_when_pending(&sid, json!({"action": "revise", "feedback": "add a rollback step", "actor": "bob"}));
    let (_, decided) = tokio::join!(drive(&mut host), reviser);
    assert_eq!(decided["status"], "rejected", "{decided}");
    host.finish().await.assert_success();

    let exit = &fake.results_of("ExitPlanMode")[0];
    assert!(exit.is_error, "{exit:?}");
    for words in ["add a rollback step", "bob", "ExitPlanMode again"] {
        assert!(exit.text.contains(words), "{words:?} not in {:?}", exit.text);
    }
    assert!(!notes.exists(), "a write ran after changes were requested");
    assert!(fake.results_of("Write")[1].is_error);
}

/// No decision within the hook's wait: Claude is told the plan awaits
/// approval; the human approves later, and on `--resume` the decision
/// arrives with the next prompt (UserPromptSubmit), after which writes run.
#[tokio::test]
async fn real_claude_code_late_decision_arrives_on_resume() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "0");
    let fake = FakeAnthropic::start().await;
    plan_mode_script(&fake, PLAN, [Turn::text("Waiting for approval.")]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("add notes").await;
    drive(&mut host).await;
    host.finish().await.assert_success();
    let exit = &fake.results_of("ExitPlanMode")[0];
    assert!(exit.is_error && exit.text.contains("awaiting approval"), "{exit:?}");

    s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"})).await;
    let notes = project.path().join("notes.txt");
    fake.push([Turn::tool("Write", json!({"file_path": notes, "content": "late\n"})), Turn::text("Done.")]);
    let out = project.claude(&claude, &fake).permission_mode("bypassPermissions").resume(&sid).run("go on").await;
    out.assert_success();
    let resumed = fake.requests().into_iter().rev().find(|r| r.all_text().contains("go on")).expect("the resumed request");
    assert!(resumed.all_text().contains("[PLAN_DECISION]: approved"), "no decision in the resumed prompt");
    assert_eq!(std::fs::read_to_string(&notes).expect("notes.txt"), "late\n");
}

/// A tap after `ExitPlanMode`'s wait ran out still reaches Claude without
/// anyone typing: Claude ends its turn, its `Stop` hook holds it for the
/// decision (the same wait), and the approval arrives as the hook's reason
/// to go on, with the instruction to call `ExitPlanMode` again (Claude Code
/// is still in plan mode), which the approval lets through; then the write
/// runs.
#[tokio::test]
async fn real_claude_code_a_tap_after_the_plan_wait_reaches_it_at_its_stop() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "6");
    let fake = FakeAnthropic::start().await;
    let notes = project.path().join("notes.txt");
    plan_mode_script(&fake, PLAN, [Turn::text("Waiting for approval.")]);
    fake.push([
        Turn::tool("ExitPlanMode", json!({})),
        Turn::tool("Write", json!({"file_path": notes, "content": "late\n"})),
        Turn::text("Done."),
    ]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("add notes").await;
    let late_approver = async {
        // Only once ExitPlanMode was told the plan still waits.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while fake.results_of("ExitPlanMode").is_empty() {
            assert!(std::time::Instant::now() < deadline, "ExitPlanMode's wait never ran out");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"})).await
    };
    let (_, decided) = tokio::join!(drive(&mut host), late_approver);
    assert_eq!(decided["status"], "approved", "{decided}");
    host.finish().await.assert_success();

    let exit = fake.results_of("ExitPlanMode");
    let audit = crate::kit::audit_actions(&s, &sid).await;
    assert!(exit[0].is_error && exit[0].text.contains("awaiting approval"), "{exit:?}");
    assert!(exit.get(1).is_some_and(|e| e.text.starts_with("User has approved your plan")), "{exit:?} {audit:?}");
    let told = fake
        .requests()
        .into_iter()
        .map(|r| r.all_text())
        .find(|t| t.contains("[PLAN_DECISION]: approved"))
        .expect("the decision reached the model");
    assert!(told.contains("call ExitPlanMode again"), "no word about plan mode in what the Stop hook said");
    assert_eq!(std::fs::read_to_string(&notes).expect("notes.txt"), "late\n");
    assert!(!audit.iter().any(|a| a == "stopping"), "Claude did not stop waiting: {audit:?}");
}

/// Only the plan file: in plan mode a `Write` next to it, a traversal out
/// of the plans directory, or a file in the project is still refused.
#[tokio::test]
async fn real_claude_code_plan_mode_writes_nothing_but_the_plan_file() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "0");
    let fake = FakeAnthropic::start().await;
    let plans: PathBuf = project.home.path().join(".claude/plans");
    let outside = project.home.path().join(".claude/settings.md");
    let in_project = project.path().join("NOTES.md");
    fake.push([
        Turn::tool("Write", json!({"file_path": format!("{}/../settings.md", plans.display()), "content": "x"})),
        Turn::tool("Write", json!({"file_path": in_project, "content": "x"})),
        Turn::tool("Write", json!({"file_path": plans.join("nested/plan.md"), "content": "x"})),
        Turn::text("Nothing written."),
    ]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("try").await;
    drive(&mut host).await;
    host.finish().await.assert_success();
    let writes = fake.results_of("Write");
    assert_eq!(writes.len(), 3, "{writes:?}");
    assert!(writes.iter().all(|w| w.is_error), "{writes:?}");
    assert!(!outside.exists() && !in_project.exists() && !plans.join("nested/plan.md").exists());
}

/// The installed hook command names this machine's binary; when it is gone
/// (moved, uninstalled), every tool call is blocked, not run.
#[tokio::test]
async fn real_claude_code_with_a_missing_plangate_binary_blocks_the_call() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let bin_dir = tempfile::tempdir().expect("bin dir");
    let copy = bin_dir.path().join("plangate");
    std::fs::copy(BIN, &copy).expect("copy the binary");
    let project = Project::install(&copy.to_string_lossy(), &s, "5");
    std::fs::remove_file(&copy).expect("remove the binary");
    let fake = FakeAnthropic::start().await;
    fake.push([Turn::tool("Bash", json!({"command": "touch mutated", "description": "Create a file"})), Turn::text("Blocked.")]);
    let out = project.claude(&claude, &fake).permission_mode("bypassPermissions").session_id(&new_session_id()).run("make a file").await;
    out.assert_success();
    assert!(!project.path().join("mutated").exists(), "the call ran without its gate");
    let bash = &fake.results_of("Bash")[0];
    assert!(bash.is_error, "{bash:?}");
    let _ = &project.state;
}

/// Plain `claude -p` has no ExitPlanMode: plangate's MCP tools plan instead.
/// ToolSearch loads them (deferred in 2.1.328), the hook gives each call
/// Claude's session, a human approves, and the write runs.
#[tokio::test]
async fn real_claude_code_plans_through_plangates_mcp_tools_in_print_mode() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "5");
    let mcp = json!({"mcpServers": {"plangate": {"type": "stdio", "command": BIN, "args": ["mcp"], "env": {
        "PLANGATE_URL": s.base, "PLANGATE_TOKEN": AGENT_TOKEN}}}});
    let mcp_config = project.path().join("mcp.json");
    std::fs::write(&mcp_config, mcp.to_string()).expect("mcp config");
    let fake = FakeAnthropic::start().await;
    let notes = project.path().join("notes.txt");
    fake.push([
        Turn::tool_search(&["mcp__plangate__enter_plan_mode", "mcp__plangate__exit_plan_mode"]),
        Turn::tool("mcp__plangate__enter_plan_mode", json!({"reason": "add notes"})),
        Turn::tool("mcp__plangate__exit_plan_mode", json!({"markdown": PLAN, "wait_seconds": 60})),
        Turn::tool("Write", json!({"file_path": notes, "content": "via mcp\n"})),
        Turn::text("Done."),
    ]);
    let sid = new_session_id();
    let run = project
        .claude(&claude, &fake)
        .permission_mode("bypassPermissions")
        .session_id(&sid)
        .arg("--mcp-config")
        .arg(&mcp_config.to_string_lossy())
        .arg("--strict-mcp-config");
    let approver = s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"}));
    let (out, decided) = tokio::join!(run.run("add notes"), approver);
    out.assert_success();
    assert_eq!(decided["status"], "approved", "{decided}");
    let exit = &fake.results_of("mcp__plangate__exit_plan_mode")[0];
    assert!(!exit.is_error && exit.text.contains("approved"), "{exit:?}");
    assert_eq!(std::fs::read_to_string(&notes).expect("notes.txt"), "via mcp\n");
}

/// A subagent explores while Claude plans: its run opens at SubagentStart
/// and closes at SubagentStop, and the plan proposed after it finished is
/// approved. (Plan mode is set not to use auto mode, whose server-side
/// safety check cannot run against a fake model and refuses `Agent`.)
#[tokio::test]
async fn real_claude_code_subagent_runs_open_and_close_and_the_plan_is_approved() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "30");
    // A user setting (Claude Code ignores it in a project's settings).
    std::fs::create_dir_all(project.home.path().join(".claude")).expect("user dir");
    std::fs::write(project.home.path().join(".claude/settings.json"), r#"{"useAutoModeDuringPlan": false}"#).expect("settings");
    std::fs::write(project.path().join("README.md"), "subagent reads this").expect("readme");
    let fake = FakeAnthropic::start().await;
    let readme = project.path().join("README.md");
    // The subagent's own script: read, then report.
    fake.push_when(|r| r.is_subagent(), move |_| Turn::tool("Read", json!({"file_path": readme})));
    fake.push_when(|r| r.is_subagent(), |_| Turn::text("The README says hello."));
    let notes = project.path().join("notes.txt");
    fake.push([
        Turn::tool("Agent", json!({"description": "Explore", "prompt": "Read README.md", "subagent_type": "Explore"})),
        Turn::text("Waiting for the explorer."),
    ]);
    // After the subagent's notification: plan, then write.
    plan_mode_script(&fake, PLAN, [Turn::tool("Write", json!({"file_path": notes, "content": "after explore\n"})), Turn::text("Done.")]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("explore, then add notes").await;
    let approver = s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"}));
    // Two turns: the launch ("Waiting…"), then the subagent's notification.
    let turns = async {
        drive(&mut host).await;
        drive(&mut host).await
    };
    let (_, decided) = tokio::join!(turns, approver);
    assert_eq!(decided["status"], "approved", "{decided}");
    host.finish().await;

    let runs = subagent_audit(&s, &sid).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].starts_with("subagent_open agent:") && runs[1].starts_with("subagent_close agent:"), "{runs:?}");
    let read = fake.results_of("Read");
    assert!(read.iter().any(|r| r.text.contains("subagent reads this")), "the subagent did not run: {read:?}");
    let written = std::fs::read_to_string(&notes).unwrap_or_default();
    assert_eq!(
        written,
        "after explore\n",
        "{:#?}",
        fake.tool_results().iter().map(|r| (&r.tool_name, r.is_error, &r.text)).collect::<Vec<_>>()
    );
}

/// A subagent launch that Claude Code itself refuses (here: plan mode's
/// auto-mode check cannot run) reports no PostToolUse: plangate opened a
/// run at its PreToolUse before, which stayed open and refused the plan
/// with `subagents_open`. Now nothing is left open and the plan goes on.
#[tokio::test]
async fn real_claude_code_refused_subagent_leaves_no_run_open() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "30");
    let fake = FakeAnthropic::start().await;
    fake.push([Turn::tool("Agent", json!({"description": "Explore", "prompt": "Read README.md", "subagent_type": "Explore"}))]);
    plan_mode_script(&fake, PLAN, [Turn::text("Done.")]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("explore, then plan").await;
    let approver = s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"}));
    let (_, decided) = tokio::join!(drive(&mut host), approver);
    assert_eq!(decided["status"], "approved", "{decided}");
    host.finish().await;
    assert!(fake.results_of("Agent")[0].is_error, "the launch was not refused: {:?}", fake.results_of("Agent"));
    assert_eq!(subagent_audit(&s, &sid).await, Vec::<String>::new());
}

/// The subagent runs in the session's audit, as `action detail`.
async fn subagent_audit(s: &ServerProcess, sid: &str) -> Vec<String> {
    let (_, audit) = ServerProcess::send(s.operator(reqwest::Method::GET, &format!("/v1/audit?session={sid}"))).await;
    audit
        .as_array()
        .expect("audit")
        .iter()
        .filter_map(|e| {
            e["action"].as_str().filter(|a| a.starts_with("subagent_")).map(|a| format!("{a} {}", e["detail"].as_str().unwrap_or("")))
        })
        .collect()
}

/// Issue 48, through the real Claude Code: an approved two-step plan whose
/// step 1 is reported done; the model ends its turn "Done with step 1.
/// Shall I continue?", and Claude Code's `Stop` hook (installed by the
/// real installer) answers with the step-2 instruction, which the model's
/// next request carries; with `auto_continue` off, three escalating times,
/// then Claude stops.
#[tokio::test]
async fn real_claude_code_stopping_mid_plan_is_told_to_go_on_with_the_next_step() {
    let Some(claude) = clients::claude_code() else { return };
    let mut s = ServerProcess::start(BIN, "").await;
    let config =
        std::fs::read_to_string(s.config_path()).expect("config") + "\n[agents.demo.approvals]\nauto_continue = { enabled = false }\n";
    std::fs::write(s.config_path(), config).expect("config");
    s.restart().await;
    let sid = new_session_id();
    let plan = json!({"title": "Add retries", "steps": [{"step": "Read the uploader"}, {"step": "Add retries to the uploader"}]});
    crate::sec_amend::approved(&s, &sid, plan).await;
    let done = json!({"merge": true, "steps": [{"step": "Read the uploader", "status": "completed"}]});
    let (st, v) = crate::kit::call(s.agent(reqwest::Method::POST, &format!("/v1/sessions/{sid}/steps")).json(&done)).await;
    assert_eq!(st, 200, "{v}");
    let project = Project::install(BIN, &s, "5");
    let fake = FakeAnthropic::start().await;
    fake.push([
        Turn::text("Done with step 1. Shall I continue?"),
        Turn::text("Working on step 2."),
        Turn::text("Still on step 2."),
        Turn::text("I cannot go on with step 2."),
    ]);
    let out = project.claude(&claude, &fake).permission_mode("default").session_id(&sid).run("carry out the approved plan").await;
    out.assert_success();
    let texts: Vec<String> = fake.requests().iter().map(|r| r.all_text()).filter(|t| t.contains("carry out the approved plan")).collect();
    let told = texts.iter().filter(|t| t.contains("[PLAN_CONTINUE]") && t.contains("step 2 of 2")).count();
    assert!(told >= 3, "the model was told to go on {told} times: {:?}", texts.iter().map(|t| t.len()).collect::<Vec<_>>());
    let last = texts.last().expect("a request");
    assert!(last.contains("report it as cancelled with the reason"), "the third level reached the model");
    let audit = crate::kit::audit_actions(&s, &sid).await;
    assert_eq!(audit.iter().filter(|a| *a == "stopping").count(), 4, "{audit:?}");
}

/// Issue 48, part 2: entering Claude Code's own plan mode, the model's
/// first request carries plangate's plan-mode brief (the `UserPromptSubmit`
/// hook's context in plan mode): read-only until approval, ExitPlanMode,
/// who decides.
#[tokio::test]
async fn real_claude_code_in_plan_mode_gets_the_plan_mode_brief_first() {
    let Some(claude) = clients::claude_code() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let project = Project::install(BIN, &s, "5");
    let fake = FakeAnthropic::start().await;
    fake.push([Turn::text("I will explore first.")]);
    let out = project.claude(&claude, &fake).permission_mode("plan").session_id(&new_session_id()).run("add retries to the uploader").await;
    out.assert_success();
    let first = fake.requests().into_iter().map(|r| r.all_text()).find(|t| t.contains("add retries to the uploader")).expect("a request");
    for words in ["[PLAN_MODE]", "read-only until a person approves", "ExitPlanMode", "an operator decides"] {
        assert!(first.contains(words), "{words:?} not in the model's first request");
    }
}

/// Issue 48, the whole ladder through the real Claude Code and a fake
/// Telegram: a model that keeps stopping mid-plan gets the three
/// instructions and `max_cycles` (here 1) continue, then may stop; the
/// plan's chat gets the stalled card with Continue and Done; Alice taps
/// Continue, the card says so, and when Claude resumes, the model's next
/// request carries the instruction to go on with step 2.
#[tokio::test]
async fn real_claude_code_that_keeps_stopping_gets_a_stalled_card_whose_continue_resumes_it() {
    use crate::telegram::{ALICE, CHAT};
    use plangate_testkit::telegram::FakeTelegram;
    let Some(claude) = clients::claude_code() else { return };
    let tg = FakeTelegram::start().await;
    let mut s = crate::telegram::start(&tg).await;
    let config = std::fs::read_to_string(s.config_path()).expect("config")
        + "\n[agents.demo.approvals]\nauto_continue = { enabled = true, max_cycles = 1 }\n";
    std::fs::write(s.config_path(), config).expect("config");
    s.restart().await;
    let sid = new_session_id();
    let plan = json!({"title": "Add retries", "steps": [{"step": "Read the uploader"}, {"step": "Add retries to the uploader"}]});
    crate::sec_amend::approved(&s, &sid, plan).await;
    let done = json!({"merge": true, "steps": [{"step": "Read the uploader", "status": "completed"}]});
    let (st, v) = crate::kit::call(s.agent(reqwest::Method::POST, &format!("/v1/sessions/{sid}/steps")).json(&done)).await;
    assert_eq!(st, 200, "{v}");
    let project = Project::install(BIN, &s, "5");
    let fake = FakeAnthropic::start().await;
    fake.push((0..5).map(|_| Turn::text("Done with step 1. Shall I continue?")));
    let out = project.claude(&claude, &fake).permission_mode("default").session_id(&sid).run("carry out the approved plan").await;
    out.assert_success();
    let told = fake.requests().iter().filter(|r| r.all_text().contains("[PLAN_CONTINUE]")).count();
    assert!(told >= 4, "three instructions and one continue reached the model ({told})");
    let audit = crate::kit::audit_actions(&s, &sid).await;
    assert_eq!(audit.iter().filter(|a| *a == "stopping").count(), 5, "{audit:?}");
    assert!(audit.iter().any(|a| a == "stalled"), "{audit:?}");

    // The stalled card, with its two buttons, in the plan's chat.
    let card = tg
        .wait_request("sendMessage", std::time::Duration::from_secs(15), |r| {
            r.str("text").contains("stopped at step 2 of 2") && r.keyboard().is_some()
        })
        .await;
    assert!(card.str("text").contains("Shall I continue?"), "{}", card.str("text"));
    let buttons: Vec<(String, String)> = card.keyboard().unwrap_or_default().into_iter().flatten().collect();
    let labels: Vec<&str> = buttons.iter().map(|(label, _)| label.as_str()).collect();
    assert_eq!(labels, ["Continue", "Done"], "{buttons:?}");
    let card_id = card.message_id_sent().expect("card id");
    tg.push_update(tg.callback_update(CHAT, card_id, crate::kit::tg_user(ALICE, "alice"), &buttons[0].1));
    tg.wait_request("editMessageText", std::time::Duration::from_secs(15), |r| {
        r.str("text").contains("Continue, by telegram:@\u{2060}alice")
    })
    .await;

    // Claude resumes: the instruction reaches the model without anyone
    // typing "continue".
    fake.push([Turn::text("Working on step 2.")]);
    let out = project.claude(&claude, &fake).permission_mode("default").resume(&sid).run("hello").await;
    out.assert_success();
    let last = fake.requests().last().map(|r| r.all_text()).unwrap_or_default();
    assert!(last.contains("asks you to continue the approved plan") && last.contains("step 2 of 2"), "the Continue reached the model");
    let audit = crate::kit::audit_actions(&s, &sid).await;
    assert!(audit.iter().any(|a| a == "stalled_answer"), "{audit:?}");
}

/// The README's "For real" path, end to end: a paired Telegram group
/// (`plangate pair telegram`, `/plan pair CODE`), the hooks installed by
/// `plangate hook install claude --scope local`, Claude Code started with
/// only the README's `PLANGATE__AGENTS__DEMO__TOKEN` in its environment;
/// Claude plans in plan mode, the card arrives in the group, and one tap on
/// Approve is all it takes: the edit runs without a terminal ask and no 🔐
/// card reaches the phone.
#[tokio::test]
async fn real_claude_code_the_readme_path_needs_exactly_one_tap() {
    use crate::kit::{pair_code, say, telegram_section, tg_user};
    use crate::telegram::{ALICE, CHAT};
    use plangate_testkit::telegram::FakeTelegram;
    let Some(claude) = clients::claude_code() else { return };
    let tg = FakeTelegram::start().await;
    let s = ServerProcess::start(BIN, &telegram_section(&tg)).await;
    let code = pair_code(&s, "telegram", &[]).await;
    say(&tg, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "Paired").await;
    let mut project = Project::install(BIN, &s, "30");
    // The README exports the server's own variable, not PLANGATE_TOKEN.
    project.env.retain(|(k, _)| k != "PLANGATE_TOKEN");
    project.env.push(("PLANGATE__AGENTS__DEMO__TOKEN".to_string(), plangate_testkit::server::AGENT_TOKEN.to_string()));
    let fake = FakeAnthropic::start().await;
    let notes = project.path().join("notes.txt");
    plan_mode_script(&fake, PLAN, [Turn::tool("Write", json!({"file_path": notes, "content": "hello\n"})), Turn::text("Done.")]);
    let sid = new_session_id();
    let mut host = project.claude(&claude, &fake).permission_mode("plan").session_id(&sid).host().await;
    host.send_user("add notes").await;
    let tap = async {
        let card = tg
            .wait_request("sendMessage", std::time::Duration::from_secs(30), |r| {
                r.chat_id() == Some(CHAT) && r.str("text").contains("Add notes") && r.keyboard().is_some()
            })
            .await;
        let buttons: Vec<(String, String)> = card.keyboard().unwrap_or_default().into_iter().flatten().collect();
        let approve = buttons.iter().find(|(label, _)| label.ends_with("Approve")).expect("an Approve button").1.clone();
        tg.push_update(tg.callback_update(CHAT, card.message_id_sent().expect("card id"), tg_user(ALICE, "alice"), &approve));
    };
    let (asked, ()) = tokio::join!(drive(&mut host), tap);
    host.finish().await.assert_success();
    assert_eq!(std::fs::read_to_string(&notes).expect("notes.txt"), "hello\n");
    assert!(asked.iter().all(|a| a.tool_name == "ExitPlanMode"), "the terminal asked again: {asked:?}");
    let cards: Vec<String> = tg.calls("sendMessage").iter().map(|r| r.str("text")).filter(|t| t.contains('🔐')).collect();
    assert!(cards.is_empty(), "a permission card reached the phone: {cards:?}");
    let status = status(&s, &sid).await;
    assert_eq!(status["approval"].as_str(), Some("approved"), "{status}");
}
