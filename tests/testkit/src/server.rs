//! Run the real `plangate` binary for a test.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The agent token every harness config defines for agent `demo`.
pub const AGENT_TOKEN: &str = "test-agent-token-0123456789";
/// A second agent, `other`, for isolation tests.
pub const OTHER_AGENT_TOKEN: &str = "test-other-token-0123456789";
/// The operator token of every harness config.
pub const OPERATOR_TOKEN: &str = "test-operator-token-0123456789";

/// A running `plangate serve` on a loopback port with its own data dir.
pub struct ServerProcess {
    bin: PathBuf,
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub data_dir: tempfile::TempDir,
    config_path: PathBuf,
    pub http: reqwest::Client,
    /// How far the server's test clock is ahead of the system clock (ms):
    /// turned by [`advance_clock`](Self::advance_clock), kept across restarts.
    clock_ahead_ms: i64,
}

/// The debug build's test clock (`plangate_server::clock::TEST_CLOCK_ENV`):
/// every server a test starts runs on it, at the system time until a test
/// turns it.
const TEST_CLOCK_ENV: &str = "PLANGATE_TEST_CLOCK_MS";

impl ServerProcess {
    /// Start `bin` with a config made of the harness basics followed by `extra`
    /// (more TOML: destinations, channel sections, approval timers…).
    pub async fn start(bin: &str, extra: &str) -> ServerProcess {
        ServerProcess::start_with(bin, &[], extra).await
    }

    /// Like [`start`](Self::start), with agent `demo` sending its cards to
    /// `destinations` (sections that `extra` defines).
    pub async fn start_with(bin: &str, destinations: &[&str], extra: &str) -> ServerProcess {
        ServerProcess::start_with_server(bin, destinations, "", extra).await
    }

    /// Like [`start_with`](Self::start_with), with more keys of the
    /// `[server]` section (`server_extra`, e.g. `public_url = "…"`).
    pub async fn start_with_server(bin: &str, destinations: &[&str], server_extra: &str, extra: &str) -> ServerProcess {
        let destinations = serde_json::to_string(destinations).expect("names");
        // `PLANGATE_TEST_BACKEND=postgres`: the same test on PostgreSQL, in
        // a schema of its own (what `.ci/run`'s second pass does).
        let store = if std::env::var("PLANGATE_TEST_BACKEND").is_ok_and(|b| b == "postgres") && !extra.contains("[store]") {
            crate::pg::store_config(&crate::pg::TestSchema::create().await)
        } else {
            String::new()
        };
        let data_dir = tempfile::tempdir().expect("temp dir");
        let config_path = data_dir.path().join("test-config.toml");
        let config = format!(
            r#"
[server]
bind = "127.0.0.1:0"
data_dir = "{data}"
operator_token = "{OPERATOR_TOKEN}"
{server_extra}

[agents.demo]
token = "{AGENT_TOKEN}"
destinations = {destinations}

[agents.other]
token = "{OTHER_AGENT_TOKEN}"

{extra}
{store}
"#,
            data = data_dir.path().join("data").display()
        );
        std::fs::write(&config_path, config).expect("write config");
        let mut server = ServerProcess {
            bin: PathBuf::from(bin),
            child: None,
            base: String::new(),
            data_dir,
            config_path,
            http: reqwest::Client::builder().no_proxy().build().expect("client"),
            clock_ahead_ms: 0,
        };
        server.spawn().await;
        server
    }

    async fn spawn(&mut self) {
        let mut child = Command::new(&self.bin)
            .args(["serve", "--config"])
            .arg(&self.config_path)
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
            .env(TEST_CLOCK_ENV, self.clock_ahead_ms.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn plangate");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let base = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.strip_prefix("plangate listening on ") {
                    return rest.trim().to_string();
                }
            }
            panic!("plangate exited before listening");
        })
        .await
        .expect("plangate did not start within 30 s");
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.base = base;
        self.child = Some(child);
    }

    /// The data directory the server was started with.
    /// The server's process id while it runs (for CPU and memory readings).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    pub fn data_path(&self) -> PathBuf {
        self.data_dir.path().join("data")
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// SIGKILL: no shutdown, no flush beyond what was already acknowledged.
    pub async fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.start_kill().expect("kill");
            let _ = child.wait().await;
        }
    }

    /// SIGTERM (a graceful shutdown, as systemd stops it) and wait for the
    /// process to exit.
    pub async fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = child.id().expect("pid").to_string();
        let sent = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill -TERM");
        assert!(sent.success(), "kill -TERM {pid}");
        child.wait().await.expect("wait")
    }

    /// Start again on the same data dir, config and port (clients that
    /// retry find it where it was).
    pub async fn restart_on_same_port(&mut self) {
        let addr = self.base.trim_start_matches("http://").to_string();
        let config = std::fs::read_to_string(&self.config_path).expect("config");
        let pinned = config.replace("bind = \"127.0.0.1:0\"", &format!("bind = \"{addr}\""));
        std::fs::write(&self.config_path, pinned).expect("config");
        self.spawn().await;
    }

    /// Start again on the same data dir and config (a new port).
    pub async fn restart(&mut self) {
        self.kill9().await;
        self.spawn().await;
    }

    /// Start again after [`kill9`](Self::kill9), on the same data dir,
    /// config and port: for a client that must reconnect to the same URL.
    pub async fn start_again_on_same_port(&mut self) {
        assert!(self.child.is_none(), "still running: kill9 first");
        let port = self.base.rsplit(':').next().expect("port").to_string();
        let config = std::fs::read_to_string(&self.config_path).expect("read config");
        let pinned = config.replacen("bind = \"127.0.0.1:0\"", &format!("bind = \"127.0.0.1:{port}\""), 1);
        std::fs::write(&self.config_path, pinned).expect("write config");
        self.spawn().await;
        assert!(self.base.ends_with(&format!(":{port}")), "came back on {} instead of port {port}", self.base);
    }

    /// Turn the server's clock `ms` forward instead of sleeping: timers due
    /// by then fire now. While the server is down (after
    /// [`kill9`](Self::kill9)) the next start begins that far ahead, as if
    /// it had been down that long.
    pub async fn advance_clock(&mut self, ms: i64) {
        self.clock_ahead_ms += ms;
        if self.child.is_some() {
            let turn = self.operator(reqwest::Method::POST, "/v1/operator/test/clock").json(&serde_json::json!({"advance_ms": ms}));
            let (status, body) = ServerProcess::send(turn).await;
            assert_eq!(status, 200, "turning the test clock (a debug build of plangate?): {body}");
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request with the agent token of `demo`.
    pub fn agent(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.url(path)).bearer_auth(AGENT_TOKEN)
    }

    /// A request with the operator token.
    pub fn operator(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.url(path)).bearer_auth(OPERATOR_TOKEN)
    }

    /// The pending approval of `session`, once it exists (waits up to 30 s:
    /// a real Claude Code session took longer than 15 s to propose on a
    /// machine with three builds and three other tests on its two cores):
    /// what an approver sees before deciding.
    pub async fn pending_approval(&self, session: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (_, list) = ServerProcess::send(self.operator(reqwest::Method::GET, "/v1/approvals?status=pending")).await;
            if let Some(a) = list.as_array().into_iter().flatten().find(|a| a["session_id"] == session) {
                return a["approval_id"].as_str().expect("id").to_string();
            }
            assert!(std::time::Instant::now() < deadline, "no pending approval for {session}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// As an approver would: wait for the proposal, then decide it over the
    /// operator API (`body` is the decision request). Returns the Decision.
    pub async fn decide_when_pending(&self, session: &str, body: serde_json::Value) -> serde_json::Value {
        let id = self.pending_approval(session).await;
        let (st, d) = ServerProcess::send(self.operator(reqwest::Method::POST, &format!("/v1/approvals/{id}/decision")).json(&body)).await;
        assert_eq!(st, 200, "{d}");
        d
    }

    /// Wait until at least `n` long-polls are parked in the server (its
    /// `/healthz` count), so a test decides only once the waiter really waits.
    pub async fn waiting(&self, n: u64) {
        let health = self.url("/healthz");
        eventually(Duration::from_secs(15), &format!("{n} parked waiter(s)"), || {
            let req = self.http.get(&health);
            async move { ServerProcess::send(req).await.1["waiting"].as_u64().is_some_and(|w| w >= n) }
        })
        .await;
    }

    /// Send and return (status, JSON body or Null).
    pub async fn send(req: reqwest::RequestBuilder) -> (u16, serde_json::Value) {
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::Null))
    }
}

/// Poll `condition` until it holds, failing the test with `what` after
/// `within`. For conditions nothing can be awaited on (a file's contents, a
/// count in another process); it waits for the condition, not for a guess
/// at how long it takes.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if condition().await {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "still not true after {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The plan document at `path` once it is there: documents are written by a
/// chat job right after the proposal commits, not before its answer.
pub async fn document(path: &str) -> String {
    eventually(Duration::from_secs(15), &format!("the plan document {path}"), || async { Path::new(path).exists() }).await;
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
