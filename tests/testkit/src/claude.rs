//! Run the real Claude Code against a [`FakeAnthropic`].
//!
//! [`ClaudeRun`] builds the command line: a temporary `HOME` (so nothing of
//! the machine's `~/.claude` is read, and plan files land in
//! `HOME/.claude/plans/`), `ANTHROPIC_BASE_URL` pointing at the fake, a dummy
//! key, non-essential traffic, telemetry and error reports off, `-p`,
//! `--output-format stream-json --verbose`, and the chosen permission mode,
//! session id and settings (hooks).
//!
//! Two ways to run it:
//!
//! * [`ClaudeRun::run`]: headless, the prompt on the command line, until it
//!   exits. `ExitPlanMode` does not exist this way.
//! * [`ClaudeRun::host`]: the way the Agent SDK drives it
//!   (`--input-format stream-json --permission-prompt-tool stdio`); the test
//!   is the host: [`ClaudeHost`] sends the `initialize` control request and
//!   user messages, and answers `can_use_tool` permission prompts. Needed
//!   for `ExitPlanMode`.
//!
//! Every run is bounded ([`ClaudeRun::timeout`], 120 s by default) and the
//! process group is killed when the run or host is dropped.

use crate::agent_proc::{running_as_root, scrub_env, Proc};
use crate::clients::ClaudeCode;
use crate::fake_anthropic::FakeAnthropic;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The default bound of one run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// A fresh random UUID (v4 layout), for `--session-id`.
pub fn new_session_id() -> String {
    let a = crate::agent_proc::random_u64();
    let b = crate::agent_proc::random_u64();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

/// Where a run's `HOME` is.
enum Home {
    Temp(tempfile::TempDir),
    Given(PathBuf),
}

/// A Claude Code invocation being put together.
pub struct ClaudeRun {
    bin: PathBuf,
    base_url: String,
    cwd: PathBuf,
    home: Home,
    permission_mode: Option<String>,
    session_id: Option<String>,
    resume: Option<String>,
    settings: Option<Value>,
    env: Vec<(String, String)>,
    args: Vec<String>,
    timeout: Duration,
}

impl ClaudeRun {
    /// Claude Code `claude` working in `cwd`, its model being `fake`, with a
    /// new temporary `HOME`.
    pub fn new(claude: &ClaudeCode, fake: &FakeAnthropic, cwd: &Path) -> ClaudeRun {
        ClaudeRun {
            bin: claude.bin.clone(),
            base_url: fake.base_url().to_string(),
            cwd: cwd.to_path_buf(),
            home: Home::Temp(tempfile::tempdir().expect("temp HOME")),
            permission_mode: None,
            session_id: None,
            resume: None,
            settings: None,
            env: Vec::new(),
            args: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Use `home` as `HOME` (e.g. the same one for a `--resume` run).
    pub fn home(mut self, home: &Path) -> Self {
        self.home = Home::Given(home.to_path_buf());
        self
    }

    /// The `HOME` this run uses.
    pub fn home_dir(&self) -> &Path {
        match &self.home {
            Home::Temp(dir) => dir.path(),
            Home::Given(dir) => dir,
        }
    }

    /// `--permission-mode MODE` (`default`, `plan`, `acceptEdits`,
    /// `bypassPermissions`, …).
    pub fn permission_mode(mut self, mode: &str) -> Self {
        self.permission_mode = Some(mode.to_string());
        self
    }

    /// `--session-id ID`.
    pub fn session_id(mut self, id: &str) -> Self {
        self.session_id = Some(id.to_string());
        self
    }

    /// `--resume ID`.
    pub fn resume(mut self, id: &str) -> Self {
        self.resume = Some(id.to_string());
        self
    }

    /// A settings file (e.g. `{"hooks": {…}}`) passed with `--settings`.
    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = Some(settings);
        self
    }

    /// One more environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// One more argument (e.g. `--include-hook-events`).
    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_string());
        self
    }

    /// Bound the run (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn command(&self, host: bool, prompt: Option<&str>) -> Command {
        let home = self.home_dir().to_path_buf();
        let mut cmd = Command::new(&self.bin);
        scrub_env(&mut cmd);
        cmd.current_dir(&self.cwd)
            .env("HOME", &home)
            .env("ANTHROPIC_BASE_URL", &self.base_url)
            .env("ANTHROPIC_API_KEY", "x")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("DISABLE_AUTOUPDATER", "1");
        if running_as_root() {
            // Else `bypassPermissions` is refused: "--dangerously-skip-permissions
            // cannot be used with root/sudo privileges for security reasons".
            cmd.env("IS_SANDBOX", "1");
        }
        cmd.arg("-p");
        if let Some(prompt) = prompt {
            cmd.arg(prompt);
        }
        cmd.args(["--output-format", "stream-json", "--verbose"]);
        if host {
            cmd.args(["--input-format", "stream-json", "--permission-prompt-tool", "stdio"]);
        }
        if let Some(mode) = &self.permission_mode {
            cmd.args(["--permission-mode", mode]);
        }
        if let Some(id) = &self.session_id {
            cmd.args(["--session-id", id]);
        }
        if let Some(id) = &self.resume {
            cmd.args(["--resume", id]);
        }
        if let Some(settings) = &self.settings {
            let path = home.join(format!("plangate-test-settings-{:016x}.json", crate::agent_proc::random_u64()));
            std::fs::write(&path, serde_json::to_vec_pretty(settings).expect("settings JSON")).expect("write settings");
            cmd.arg("--settings").arg(path);
        }
        cmd.args(&self.args);
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        cmd
    }

    /// Run headless with `prompt` until Claude Code exits. Panics, with what
    /// it printed, when it has not exited within the timeout.
    pub async fn run(self, prompt: &str) -> ClaudeOutput {
        let mut proc = Proc::spawn(self.command(false, Some(prompt)), false);
        let status = match tokio::time::timeout(self.timeout, proc.wait()).await {
            Ok(status) => status.expect("wait for claude"),
            Err(_) => {
                proc.kill();
                panic!("claude did not exit within {:?}\nstdout: {:#?}\nstderr: {}", self.timeout, proc.lines(), proc.stderr());
            }
        };
        ClaudeOutput { status: Some(status), lines: proc.lines(), stderr: proc.stderr(), home: self.home }
    }

    /// Start it as the Agent SDK does, with the test as the host, and send
    /// the `initialize` control request. Then [`ClaudeHost::send_user`].
    pub async fn host(self) -> ClaudeHost {
        let proc = Proc::spawn(self.command(true, None), true);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut host = ClaudeHost { proc, deadline, timeout: self.timeout, home: Some(self.home), transcript: Vec::new() };
        host.send(json!({"type": "control_request", "request_id": "init-1", "request": {"subtype": "initialize"}})).await;
        host
    }
}

/// What a finished run printed.
pub struct ClaudeOutput {
    /// `None` when the host had to kill it.
    pub status: Option<ExitStatus>,
    /// Every stdout line, as JSON (a line that is not JSON as a string).
    pub lines: Vec<Value>,
    pub stderr: String,
    home: Home,
}

impl ClaudeOutput {
    /// The run's `HOME`.
    pub fn home(&self) -> &Path {
        match &self.home {
            Home::Temp(dir) => dir.path(),
            Home::Given(dir) => dir,
        }
    }

    /// The lines of this `type`.
    pub fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == kind).collect()
    }

    /// The `system`/`init` line (tools, permission mode, session id…).
    pub fn init(&self) -> Option<&Value> {
        self.lines.iter().find(|l| l["type"] == "system" && l["subtype"] == "init")
    }

    /// The last `result` line.
    pub fn result(&self) -> Option<&Value> {
        self.lines.iter().rev().find(|l| l["type"] == "result")
    }

    /// The final result text.
    pub fn result_text(&self) -> Option<&str> {
        self.result().and_then(|r| r["result"].as_str())
    }

    /// Every `tool_use` block of the assistant messages.
    pub fn tool_uses(&self) -> Vec<&Value> {
        self.of_type("assistant")
            .into_iter()
            .filter_map(|l| l["message"]["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .collect()
    }

    /// Every `tool_result` block of the user messages (with `tool_use_id`,
    /// `content`, `is_error`).
    pub fn tool_results(&self) -> Vec<&Value> {
        self.of_type("user")
            .into_iter()
            .filter_map(|l| l["message"]["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    /// Panic, showing the output, unless the process exited with success.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.status.is_some_and(|s| s.success()),
            "claude failed: {:?}\nstdout: {:#?}\nstderr: {}",
            self.status,
            self.lines,
            self.stderr
        );
        self
    }
}

/// A `can_use_tool` permission prompt from Claude Code.
#[derive(Debug, Clone)]
pub struct PermissionAsk {
    pub request_id: String,
    pub tool_name: String,
    pub input: Value,
    pub tool_use_id: String,
    /// The whole `control_request` line.
    pub raw: Value,
}

impl PermissionAsk {
    /// The prompt in this stdout line, if it is one.
    pub fn of(line: &Value) -> Option<PermissionAsk> {
        if line["type"] != "control_request" || line["request"]["subtype"] != "can_use_tool" {
            return None;
        }
        let request = &line["request"];
        Some(PermissionAsk {
            request_id: line["request_id"].as_str().unwrap_or("").to_string(),
            tool_name: request["tool_name"].as_str().unwrap_or("").to_string(),
            input: request["input"].clone(),
            tool_use_id: request["tool_use_id"].as_str().unwrap_or("").to_string(),
            raw: line.clone(),
        })
    }
}

/// The host's answer to a permission prompt.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Allow with the input as asked.
    Allow,
    /// Allow with this input.
    AllowWith(Value),
    /// Deny, with this message for the model.
    Deny(String),
}

/// Claude Code under a test playing the Agent SDK host.
pub struct ClaudeHost {
    proc: Proc,
    deadline: tokio::time::Instant,
    timeout: Duration,
    home: Option<Home>,
    /// Every line the host sent, in order.
    pub transcript: Vec<Value>,
}

impl ClaudeHost {
    /// The run's `HOME`.
    pub fn home(&self) -> &Path {
        match self.home.as_ref().expect("home") {
            Home::Temp(dir) => dir.path(),
            Home::Given(dir) => dir,
        }
    }

    /// Write one JSON line to its stdin.
    pub async fn send(&mut self, line: Value) {
        let stdin = self.proc.stdin.as_mut().expect("stdin is open");
        let mut bytes = serde_json::to_vec(&line).expect("JSON");
        bytes.push(b'\n');
        stdin.write_all(&bytes).await.expect("write to claude's stdin");
        stdin.flush().await.expect("flush claude's stdin");
        self.transcript.push(line);
    }

    /// Send a user message with `text`.
    pub async fn send_user(&mut self, text: &str) {
        self.send(json!({"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": null, "session_id": ""}))
            .await;
    }

    /// The next stdout line; `None` at its end. Panics past the deadline.
    pub async fn next(&mut self) -> Option<Value> {
        match tokio::time::timeout_at(self.deadline, self.proc.rx.recv()).await {
            Ok(line) => line,
            Err(_) => {
                self.proc.kill();
                panic!(
                    "claude (host mode): nothing more within {:?}\nstdout: {:#?}\nstderr: {}",
                    self.timeout,
                    self.proc.lines(),
                    self.proc.stderr()
                )
            }
        }
    }

    /// Every stdout line so far.
    pub fn lines(&self) -> Vec<Value> {
        self.proc.lines()
    }

    /// Read on until a permission prompt (`Some`) or a `result` line or the
    /// end of the output (`None`).
    pub async fn next_permission(&mut self) -> Option<PermissionAsk> {
        while let Some(line) = self.next().await {
            if let Some(ask) = PermissionAsk::of(&line) {
                return Some(ask);
            }
            if line["type"] == "result" {
                return None;
            }
        }
        None
    }

    /// Answer a permission prompt.
    pub async fn answer(&mut self, ask: &PermissionAsk, decision: Decision) {
        let response = match decision {
            Decision::Allow => json!({"behavior": "allow", "updatedInput": ask.input}),
            Decision::AllowWith(input) => json!({"behavior": "allow", "updatedInput": input}),
            Decision::Deny(message) => json!({"behavior": "deny", "message": message}),
        };
        self.send(
            json!({"type": "control_response", "response": {"subtype": "success", "request_id": ask.request_id, "response": response}}),
        )
        .await;
    }

    /// Answer every permission prompt with `decide` until a `result` line;
    /// return that line (`None` when the output ended first).
    pub async fn until_result(&mut self, mut decide: impl FnMut(&PermissionAsk) -> Decision) -> Option<Value> {
        while let Some(line) = self.next().await {
            if let Some(ask) = PermissionAsk::of(&line) {
                let decision = decide(&ask);
                self.answer(&ask, decision).await;
            } else if line["type"] == "result" {
                return Some(line);
            }
        }
        None
    }

    /// Close stdin and wait for the exit (killing it at the deadline).
    pub async fn finish(mut self) -> ClaudeOutput {
        drop(self.proc.stdin.take());
        let status = match tokio::time::timeout_at(self.deadline, self.proc.wait()).await {
            Ok(status) => Some(status.expect("wait for claude")),
            Err(_) => {
                self.proc.kill();
                None
            }
        };
        ClaudeOutput { status, lines: self.proc.lines(), stderr: self.proc.stderr(), home: self.home.take().expect("home") }
    }
}
