//! Run the real Codex CLI against a [`FakeOpenAi`].
//!
//! [`CodexRun`] makes a temporary `CODEX_HOME` (also the `HOME`) whose
//! `config.toml` selects the fake as the model provider (`model_provider =
//! "fake"`, `[model_providers.fake]` with the fake's `base_url`, `wire_api =
//! "responses"`, `env_key`) and trusts the working directory, and runs
//! `codex exec --skip-git-repo-check --json PROMPT` (or `codex exec resume
//! ID PROMPT`) until it exits.
//!
//! Hooks: [`CodexRun::hooks`] writes `$CODEX_HOME/hooks.json` and marks each
//! hook trusted the way Codex's `/hooks` review does, with the key and hash
//! `codex app-server` reports (`hooks/list`): Codex silently skips a hook
//! that is not trusted. To test an installer instead, [`CodexRun::write_config`]
//! writes `config.toml` first and leaves it to the installer from then on.

use crate::agent_proc::{scrub_env, Proc};
use crate::clients::Codex;
use crate::fake_openai::FakeOpenAi;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The default bound of one run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The model the config names by default: one Codex knows, so it does not
/// warn about missing model metadata and offers its usual tools
/// (`exec_command`, `apply_patch`, …).
pub const DEFAULT_MODEL: &str = "gpt-5.5";
/// The variable `env_key` names; its value is the dummy key.
pub const KEY_ENV: &str = "PLANGATE_FAKE_OPENAI_KEY";

enum Home {
    Temp(tempfile::TempDir),
    Given(PathBuf),
}

impl Home {
    fn path(&self) -> &Path {
        match self {
            Home::Temp(dir) => dir.path(),
            Home::Given(dir) => dir,
        }
    }
}

/// A Codex invocation being put together.
pub struct CodexRun {
    bin: PathBuf,
    base_url: String,
    cwd: PathBuf,
    home: Home,
    model: String,
    config: String,
    hooks: Option<Value>,
    /// `config.toml` is already written (see [`CodexRun::write_config`]): keep it.
    keep_config: bool,
    env: Vec<(String, String)>,
    args: Vec<String>,
    timeout: Duration,
}

impl CodexRun {
    /// `codex` working in `cwd` (trusted), its model being `fake`, with a new
    /// temporary `CODEX_HOME`.
    pub fn new(codex: &Codex, fake: &FakeOpenAi, cwd: &Path) -> CodexRun {
        CodexRun {
            bin: codex.bin.clone(),
            base_url: fake.base_url(),
            cwd: cwd.to_path_buf(),
            home: Home::Temp(tempfile::tempdir().expect("temp CODEX_HOME")),
            model: DEFAULT_MODEL.to_string(),
            config: String::new(),
            hooks: None,
            keep_config: false,
            env: Vec::new(),
            args: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Use `home` as `CODEX_HOME` and `HOME` (e.g. the same one to resume a
    /// thread).
    pub fn home(mut self, home: &Path) -> Self {
        self.home = Home::Given(home.to_path_buf());
        self
    }

    /// The `CODEX_HOME` of this run.
    pub fn home_dir(&self) -> &Path {
        self.home.path()
    }

    /// `model = "…"` (default [`DEFAULT_MODEL`]).
    pub fn model(mut self, model: &str) -> Self {
        self.model = model.to_string();
        self
    }

    /// More `config.toml`, appended after the provider and project tables.
    pub fn config(mut self, toml: &str) -> Self {
        self.config.push_str(toml);
        self.config.push('\n');
        self
    }

    /// `$CODEX_HOME/hooks.json` (`{"hooks": {"PreToolUse": [...], …}}`),
    /// every hook in it trusted.
    pub fn hooks(mut self, hooks: Value) -> Self {
        assert!(!self.keep_config, "hooks() rewrites config.toml, which write_config() keeps as it is");
        self.hooks = Some(hooks);
        self
    }

    /// Write `config.toml` now (the provider, the trusted working directory,
    /// [`config`](Self::config)) and keep it as it is from then on: for a
    /// test where something else edits it before the run, such as `plangate
    /// hook install codex --scope user --trust` recording its hooks as
    /// trusted. Not with [`hooks`](Self::hooks).
    pub fn write_config(mut self) -> Self {
        assert!(self.hooks.is_none(), "write_config keeps config.toml as it is; hooks() would rewrite it");
        std::fs::write(self.home.path().join("config.toml"), self.base_config()).expect("write config.toml");
        self.keep_config = true;
        self
    }

    /// One more environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// One more argument of `codex exec` (before the prompt).
    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_string());
        self
    }

    /// Bound the run (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn base_config(&self) -> String {
        let q = |s: &str| serde_json::to_string(s).expect("string");
        format!(
            "model = {model}\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = {base}\nwire_api = \"responses\"\nenv_key = \"{KEY_ENV}\"\n\n[projects.{cwd}]\ntrust_level = \"trusted\"\n\n{extra}\n",
            model = q(&self.model),
            base = q(&self.base_url),
            cwd = q(&self.cwd.to_string_lossy()),
            extra = self.config,
        )
    }

    fn command(&self) -> Command {
        let home = self.home.path();
        let mut cmd = Command::new(&self.bin);
        scrub_env(&mut cmd);
        cmd.current_dir(&self.cwd).env("HOME", home).env("CODEX_HOME", home).env(KEY_ENV, "x").env("RUST_LOG", "error");
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        cmd
    }

    /// Write `config.toml` (and `hooks.json`, trusted).
    async fn prepare(&self) {
        if self.keep_config {
            return;
        }
        let home = self.home.path();
        let config = self.base_config();
        std::fs::write(home.join("config.toml"), &config).expect("write config.toml");
        let Some(hooks) = &self.hooks else { return };
        std::fs::write(home.join("hooks.json"), serde_json::to_vec_pretty(hooks).expect("hooks JSON")).expect("write hooks.json");
        let listed = self.hooks_list().await;
        let mut trusted = config;
        for hook in listed["data"].as_array().into_iter().flatten().flat_map(|d| d["hooks"].as_array().into_iter().flatten()) {
            let (Some(key), Some(hash)) = (hook["key"].as_str(), hook["currentHash"].as_str()) else { continue };
            let q = |s: &str| serde_json::to_string(s).expect("string");
            trusted.push_str(&format!("\n[hooks.state.{}]\ntrusted_hash = {}\n", q(key), q(hash)));
        }
        std::fs::write(home.join("config.toml"), trusted).expect("write config.toml");
    }

    /// What `codex app-server` says of the hooks for the working directory
    /// (`hooks/list`: each hook's `key`, `currentHash`, `trustStatus`, …).
    pub async fn hooks_list(&self) -> Value {
        let mut cmd = self.command();
        cmd.arg("app-server");
        let mut proc = Proc::spawn(cmd, true);
        let cwd = self.cwd.to_string_lossy().into_owned();
        let stdin = proc.stdin.as_mut().expect("stdin");
        for line in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "plangate-testkit", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [cwd]}}),
        ] {
            let mut bytes = serde_json::to_vec(&line).expect("JSON");
            bytes.push(b'\n');
            stdin.write_all(&bytes).await.expect("write to codex app-server");
        }
        let answer = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = proc.rx.recv().await {
                if line["id"] == 2 {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match answer {
            Ok(Some(line)) if line.get("result").is_some() => line["result"].clone(),
            other => panic!("codex app-server hooks/list: {other:?}\nstdout: {:#?}\nstderr: {}", proc.lines(), proc.stderr()),
        }
    }

    /// `codex exec --skip-git-repo-check --json PROMPT` until it exits.
    pub async fn run(self, prompt: &str) -> CodexOutput {
        let args = ["exec".to_string(), "--skip-git-repo-check".into(), "--json".into()];
        self.exec(&args, prompt).await
    }

    /// `codex exec resume --skip-git-repo-check --json THREAD PROMPT` (give
    /// it the first run's [`home`](Self::home)).
    pub async fn resume(self, thread_id: &str, prompt: &str) -> CodexOutput {
        let args = ["exec".to_string(), "resume".into(), "--skip-git-repo-check".into(), "--json".into(), thread_id.into()];
        self.exec(&args, prompt).await
    }

    async fn exec(self, args: &[String], prompt: &str) -> CodexOutput {
        self.prepare().await;
        let mut cmd = self.command();
        cmd.args(args).args(&self.args).arg(prompt);
        let mut proc = Proc::spawn(cmd, false);
        let status = match tokio::time::timeout(self.timeout, proc.wait()).await {
            Ok(status) => status.expect("wait for codex"),
            Err(_) => {
                proc.kill();
                panic!("codex did not exit within {:?}\nstdout: {:#?}\nstderr: {}", self.timeout, proc.lines(), proc.stderr());
            }
        };
        CodexOutput { status, lines: proc.lines(), stderr: proc.stderr(), home: self.home }
    }
}

/// What a finished `codex exec` printed.
pub struct CodexOutput {
    pub status: ExitStatus,
    /// Every stdout line (`--json` events), as JSON.
    pub lines: Vec<Value>,
    pub stderr: String,
    home: Home,
}

impl CodexOutput {
    /// The run's `CODEX_HOME`.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The `thread.started` thread id (the hooks' `session_id`).
    pub fn thread_id(&self) -> Option<&str> {
        self.lines.iter().find(|l| l["type"] == "thread.started").and_then(|l| l["thread_id"].as_str())
    }

    /// The completed items of this `type` (`agent_message`,
    /// `command_execution`, `file_change`, `error`, …).
    pub fn items(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == "item.completed" && l["item"]["type"] == kind).map(|l| &l["item"]).collect()
    }

    /// The agent messages' text.
    pub fn messages(&self) -> Vec<&str> {
        self.items("agent_message").into_iter().filter_map(|i| i["text"].as_str()).collect()
    }

    /// The last agent message.
    pub fn last_message(&self) -> Option<&str> {
        self.messages().pop()
    }

    /// Panic, showing the output, unless codex exited with success.
    pub fn assert_success(&self) -> &Self {
        assert!(self.status.success(), "codex failed: {:?}\nstdout: {:#?}\nstderr: {}", self.status, self.lines, self.stderr);
        self
    }
}
