//! The real Codex CLI (the pinned version, `plangate_testkit::clients`)
//! with plangate's hooks installed by the real installer, `plangate hook
//! install codex --scope user --trust`, against the real `plangate` binary,
//! its model played by the scripted fake Responses API.
//!
//! What a new user does: install with `--trust` (Codex runs no hook it has
//! not trusted, and a headless `codex exec` has no dialog to trust one), then
//! Codex works in Default mode: a mutation before any plan is denied with
//! advice in Codex's terms, a `<proposed_plan>` block at the end of a turn is
//! proposed by the `Stop` hook, and the human's decision is Codex's next
//! prompt. Each test skips loudly without the client (`.ci/install-clients`)
//! and fails instead under `PLANGATE_REQUIRE_ALL`.

use super::kit::status;
use plangate_testkit::clients::{self, Codex};
use plangate_testkit::codex::{CodexOutput, CodexRun};
use plangate_testkit::fake_openai::{FakeOpenAi, Request, Turn};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A project directory and a `CODEX_HOME` whose `config.toml` selects the
/// fake model, with plangate's hooks installed there by the real installer,
/// and the environment Codex passes to its hooks.
struct Setup {
    work: tempfile::TempDir,
    _state: tempfile::TempDir,
    run: Option<CodexRun>,
    /// The installer's stderr.
    installed: String,
}

impl Setup {
    /// `plangate hook install codex --scope user --wait WAIT [--trust]` with
    /// `CODEX_HOME` the run's home, after the run's `config.toml` is written.
    fn install(codex: &Codex, fake: &FakeOpenAi, server: &ServerProcess, wait: &str, trust: bool) -> Setup {
        let work = tempfile::tempdir().expect("project dir");
        let state = tempfile::tempdir().expect("state dir");
        let mut run = CodexRun::new(codex, fake, work.path()).timeout(Duration::from_secs(150)).write_config();
        let mut args = vec!["hook", "install", "codex", "--scope", "user", "--wait", wait];
        if trust {
            args.push("--trust");
        }
        let out = std::process::Command::new(BIN)
            .args(&args)
            .current_dir(work.path())
            .env("CODEX_HOME", run.home_dir())
            .env("HOME", run.home_dir())
            .env_remove("PLANGATE_HOOK_WAIT")
            .output()
            .expect("run the installer");
        let installed = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "install: {installed}");
        assert!(run.home_dir().join("hooks.json").exists());
        for (k, v) in [
            ("PLANGATE_URL", server.base.as_str()),
            ("PLANGATE_TOKEN", AGENT_TOKEN),
            ("PLANGATE_STATE_DIR", &state.path().to_string_lossy()),
            ("PLANGATE_HOOK_WAIT", wait),
        ] {
            run = run.env(k, v);
        }
        Setup { work, _state: state, run: Some(run), installed }
    }

    fn path(&self) -> &Path {
        self.work.path()
    }

    /// The Codex run, once.
    fn codex(&mut self) -> CodexRun {
        self.run.take().expect("one run per setup")
    }
}

/// Every text of a request's input (messages, call outputs), joined.
fn all_text(r: &Request) -> String {
    r.input().iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

/// The text of the first input message that holds `needle`, as the model
/// read it: a `Stop` hook's reason is a user message, `<hook_prompt
/// hook_run_id="…">…</hook_prompt>`.
fn message_with(fake: &FakeOpenAi, needle: &str) -> Option<String> {
    fake.requests().iter().flat_map(|r| r.input().to_vec()).find_map(|item| {
        item["content"].as_array()?.iter().filter_map(|c| c["text"].as_str()).find(|t| t.contains(needle)).map(String::from)
    })
}

/// The session of the (only) pending approval, once there is one: Codex's
/// thread id is not known before `codex exec` ends.
async fn pending_session(s: &ServerProcess) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, list) = ServerProcess::send(s.operator(reqwest::Method::GET, "/v1/approvals?status=pending")).await;
        if let Some(sid) = list.as_array().and_then(|l| l.first()).and_then(|a| a["session_id"].as_str()) {
            return sid.to_string();
        }
        assert!(Instant::now() < deadline, "no plan was proposed within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn show(out: &CodexOutput) -> String {
    format!("status {:?}\nstdout: {:#?}\nstderr: {}", out.status, out.lines, out.stderr)
}

/// The plan as the model ends its turn with it: each tag on a line of its own.
const PLAN_MESSAGE: &str =
    "I will create the file.\n\n<proposed_plan>\n# Create approved\n\n1. Create the file approved in the project\n</proposed_plan>\n";

/// Advice for another harness that must never reach Codex.
const NOT_FOR_CODEX: [&str; 5] = ["enter_plan_mode", "exit_plan_mode", "POST /v1/sessions", "update_plan", "ExitPlanMode"];

/// Installed with `--trust`, the hooks run: before any plan, `touch` is
/// denied (the file is not made) and the model reads plangate's reason,
/// which tells it to write a `<proposed_plan>` block, in Codex's terms only.
#[tokio::test]
async fn real_codex_cannot_mutate_without_a_plan_after_install_with_trust() {
    let Some(codex) = clients::codex() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let fake = FakeOpenAi::start().await;
    let mut setup = Setup::install(&codex, &fake, &s, "5", true);
    assert!(!setup.installed.contains("WARNING"), "{}", setup.installed);
    fake.push([Turn::exec("touch mutated"), Turn::message("I could not change anything.")]);
    let out = setup.codex().run("make a file").await;
    out.assert_success();

    assert!(!setup.path().join("mutated").exists(), "the gate let `touch` run\n{}", show(&out));
    let outputs = fake.outputs_of("exec_command");
    assert_eq!(outputs.len(), 1, "{:#?}", fake.outputs());
    let denial = &outputs[0].text;
    for words in ["plangate", "no approved plan", "<proposed_plan> block", "end your turn"] {
        assert!(denial.contains(words), "{words:?} not in {denial:?}");
    }
    for words in NOT_FOR_CODEX {
        assert!(!denial.contains(words), "{words:?} (not Codex's) in {denial:?}");
    }
    assert_eq!(out.last_message(), Some("I could not change anything."));
    assert_eq!(fake.exhausted(), 0);
}

/// Plan, approval, execution in one `codex exec`: the turn ends with a
/// `<proposed_plan>` block, the `Stop` hook proposes it and waits, a human
/// approves, the `[PLAN_DECISION]` is Codex's next prompt, and the `touch`
/// the model then runs goes through. The plangate session is the thread id.
#[tokio::test]
async fn real_codex_proposed_plan_is_approved_and_then_runs() {
    let Some(codex) = clients::codex() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let fake = FakeOpenAi::start().await;
    let mut setup = Setup::install(&codex, &fake, &s, "30", true);
    fake.push([Turn::message(PLAN_MESSAGE)]);
    fake.push_when(|r| all_text(r).contains("[PLAN_DECISION]"), |_| Turn::exec("touch approved"));
    fake.push([Turn::message("Done: approved exists.")]);
    let approved = setup.path().join("approved");
    let approver = async {
        let sid = pending_session(&s).await;
        assert!(!approved.exists(), "a mutation ran before the approval");
        let decided = s.decide_when_pending(&sid, json!({"action": "approve", "actor": "alice"})).await;
        (sid, decided)
    };
    let (out, (sid, decided)) = tokio::join!(setup.codex().run("create the file approved"), approver);
    out.assert_success();
    assert_eq!(decided["status"], "approved", "{decided}");

    assert_eq!(out.thread_id(), Some(sid.as_str()), "the plangate session is Codex's thread id");
    let decision =
        message_with(&fake, "[PLAN_DECISION]: approved").unwrap_or_else(|| panic!("no decision reached the model\n{}", show(&out)));
    assert!(decision.contains("Create the file approved in the project"), "{decision}");
    assert!(decision.starts_with("<hook_prompt ") && decision.ends_with("[/PLAN_DECISION]</hook_prompt>"), "{decision}");
    assert!(!decision.contains("&gt;") && !decision.contains("&lt;"), "Codex escaped plangate's text: {decision}");
    for words in NOT_FOR_CODEX {
        assert!(!decision.contains(words), "{words:?} (not Codex's) in {decision}");
    }
    assert!(approved.exists(), "the approved `touch` did not run\n{}", show(&out));
    let touched = fake.outputs_of("exec_command");
    assert_eq!(touched.len(), 1, "{:#?}", fake.outputs());
    assert!(!touched[0].text.contains("plangate"), "{:?}", touched[0]);
    assert_eq!(out.last_message(), Some("Done: approved exists."));
    assert_eq!((fake.exhausted(), fake.pending()), (0, 0));
    let status = status(&s, &sid).await;
    assert_eq!((status["mode"].as_str(), status["approval"].as_str()), (Some("normal"), Some("approved")), "{status}");
}

/// Changes requested: the feedback, several lines quoted, is Codex's next
/// prompt, and the model reads it without XML escapes: Codex escapes `<`,
/// `>` and `&` in a `Stop` hook's reason, so plangate quotes Codex's
/// feedback with `| ` and names the proposed_plan block without angle
/// brackets. The model's `touch` after it is still denied.
#[tokio::test]
async fn real_codex_revise_feedback_reaches_the_model_unescaped() {
    let Some(codex) = clients::codex() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let fake = FakeOpenAi::start().await;
    let mut setup = Setup::install(&codex, &fake, &s, "30", true);
    fake.push([Turn::message(PLAN_MESSAGE)]);
    fake.push_when(|r| all_text(r).contains("[PLAN_DECISION]"), |_| Turn::exec("touch revised"));
    fake.push([Turn::message("I will revise the plan.")]);
    let feedback = "add a rollback step\nand a test for it";
    let reviser = async {
        let sid = pending_session(&s).await;
        s.decide_when_pending(&sid, json!({"action": "revise", "feedback": feedback, "actor": "bob"})).await
    };
    let (out, decided) = tokio::join!(setup.codex().run("create the file revised"), reviser);
    out.assert_success();
    assert_eq!(decided["status"], "rejected", "{decided}");

    let decision =
        message_with(&fake, "[PLAN_DECISION]: rejected").unwrap_or_else(|| panic!("no decision reached the model\n{}", show(&out)));
    for words in ["bob", "| add a rollback step", "| and a test for it", "in a proposed_plan block"] {
        assert!(decision.contains(words), "{words:?} not in {decision}");
    }
    assert!(decision.starts_with("<hook_prompt ") && decision.ends_with("[/PLAN_DECISION]</hook_prompt>"), "{decision}");
    assert!(!decision.contains("&gt;") && !decision.contains("&lt;"), "Codex escaped plangate's text: {decision}");
    for words in NOT_FOR_CODEX {
        assert!(!decision.contains(words), "{words:?} (not Codex's) in {decision}");
    }
    assert!(!setup.path().join("revised").exists(), "a mutation ran after changes were requested\n{}", show(&out));
    let denied = fake.outputs_of("exec_command");
    assert_eq!(denied.len(), 1, "{:#?}", fake.outputs());
    assert!(denied[0].text.contains("plangate"), "{:?}", denied[0]);
    assert_eq!((fake.exhausted(), fake.pending()), (0, 0));
}

/// Without `--trust` the installer warns, and rightly: Codex runs no
/// untrusted hook, silently, so the same `touch` that is denied after
/// `--trust` runs and plangate never hears of it.
#[tokio::test]
async fn real_codex_runs_no_untrusted_hook_which_the_installer_warns_about() {
    let Some(codex) = clients::codex() else { return };
    let s = ServerProcess::start(BIN, "").await;
    let fake = FakeOpenAi::start().await;
    let mut setup = Setup::install(&codex, &fake, &s, "5", false);
    let warning = setup.installed.lines().find(|l| l.starts_with("WARNING")).unwrap_or_else(|| panic!("no warning: {}", setup.installed));
    for words in ["NOTHING IS GATED", "--trust", "/hooks"] {
        assert!(warning.contains(words), "{words:?} not in {warning:?}");
    }
    fake.push([Turn::exec("touch mutated"), Turn::message("Done.")]);
    let out = setup.codex().run("make a file").await;
    out.assert_success();

    assert!(setup.path().join("mutated").exists(), "an untrusted hook ran after all\n{}", show(&out));
    let outputs = fake.outputs_of("exec_command");
    assert!(!outputs[0].text.contains("plangate"), "{:?}", outputs[0]);
}
