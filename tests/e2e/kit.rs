//! The helpers every e2e module talks to the server with: one copy here
//! instead of one per file, so a change to the API's shape (a status code, a
//! field) is made once. Anything that describes one module's scenario (its
//! destinations, its plans) stays in that module.

use plangate_engine::ApprovalId;
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN};
use plangate_testkit::slack::{SlackFake, TEAM};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use reqwest::Method;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a fake is given to see what a step should cause.
const WAIT: Duration = Duration::from_secs(15);

/// Send and return (status, JSON body or Null).
pub async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    ServerProcess::send(req).await
}

/// A proposal body: `title` and one pending step per entry of `steps`.
pub fn plan(title: &str, steps: &[&str]) -> Value {
    let steps: Vec<Value> = steps.iter().map(|s| json!({"step": s})).collect();
    json!({"title": title, "steps": steps})
}

/// A one-step plan about `project` (branch `main` on host `dev-laptop`).
pub fn project_plan(title: &str, project: &str, step: &str) -> Value {
    json!({"title": title, "steps": [{"step": step}], "project": {"name": project, "branch": "main", "host": "dev-laptop"}})
}

/// As agent `demo`: enter plan mode in `session` (200: entering is
/// idempotent) and propose `body`. The proposal's answer, which must be 201.
pub async fn propose(s: &ServerProcess, session: &str, body: &Value) -> Value {
    propose_as(s, AGENT_TOKEN, session, body).await
}

/// [`propose`] as the agent whose token is `token`.
pub async fn propose_as(s: &ServerProcess, token: &str, session: &str, body: &Value) -> Value {
    let req = |m: Method, p: String| s.http.request(m, s.url(&p)).bearer_auth(token);
    let (st, d) = call(req(Method::POST, format!("/v1/sessions/{session}/enter"))).await;
    assert_eq!(st, 200, "enter {session}: {d}");
    let (st, d) = call(req(Method::POST, format!("/v1/sessions/{session}/proposals")).json(body)).await;
    assert_eq!(st, 201, "{d}");
    d
}

/// [`propose`], returning only the approval id.
pub async fn propose_id(s: &ServerProcess, session: &str, body: &Value) -> String {
    id_of(&propose(s, session, body).await)
}

/// The `approval_id` of a proposal answer or a Decision.
pub fn id_of(d: &Value) -> String {
    d["approval_id"].as_str().expect("approval_id").to_string()
}

/// The `approval_id` of a proposal answer or a Decision, parsed.
pub fn approval_id(d: &Value) -> ApprovalId {
    ApprovalId::parse(&id_of(d)).expect("an approval id")
}

/// Decide approval `id` over the operator API with `body` (`action`,
/// `actor`, …); the Decision, which must be 200.
pub async fn decide(s: &ServerProcess, id: &str, body: &Value) -> Value {
    let (st, d) = call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(body)).await;
    assert_eq!(st, 200, "{d}");
    d
}

/// The audit entries `query` selects (`session=…`, `agent=…&session=…`),
/// oldest first; the answer must be 200.
pub async fn audit(s: &ServerProcess, query: &str) -> Vec<Value> {
    let (st, v) = call(s.operator(Method::GET, &format!("/v1/audit?{query}"))).await;
    assert_eq!(st, 200, "{v}");
    v.as_array().expect("an array of audit entries").clone()
}

/// The actions of the audit entries of `session`, oldest first.
pub async fn audit_actions(s: &ServerProcess, session: &str) -> Vec<String> {
    audit(s, &format!("session={session}")).await.iter().map(|e| e["action"].as_str().expect("action").to_string()).collect()
}

/// The `[telegram]` section pointing at `fake`, polling for 1 s.
pub fn telegram_section(fake: &FakeTelegram) -> String {
    format!("\n[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n", fake.api_url())
}

/// The `[slack]` section pointing at `fake` (Socket Mode, team [`TEAM`]).
pub fn slack_section(fake: &SlackFake) -> String {
    format!("\n[slack]\nbot_token = \"xoxb-test\"\napp_token = \"xapp-test\"\napi_url = \"{}\"\nteam_id = \"{TEAM}\"\n", fake.api_url())
}

/// A Telegram user whose first name and username are both `name`.
pub fn tg_user(id: i64, name: &str) -> Value {
    FakeTelegram::user(id, Some(name), name)
}

/// A URL of a loopback port with nothing listening.
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// The JSON file at `path`.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("JSON")
}

/// The session status of `session` as agent `demo`.
pub async fn status(s: &ServerProcess, session: &str) -> Value {
    let (st, v) = call(s.agent(Method::GET, &format!("/v1/sessions/{session}"))).await;
    assert_eq!(st, 200, "{v}");
    v
}

/// `text` from `from` in Telegram chat `chat`, and the bot's first answer
/// after it that contains `needle`.
pub async fn say(fake: &FakeTelegram, chat: i64, from: Value, text: &str, needle: &str) -> String {
    let before = fake.calls("sendMessage").len();
    fake.push_update(fake.message_update(chat, from, text, None));
    fake.wait_for(WAIT, |reqs| {
        let sent: Vec<_> = reqs.iter().filter(|r| r.method == "sendMessage").collect();
        sent.get(before..).unwrap_or_default().iter().find(|r| r.str("text").contains(needle)).map(|r| r.str("text").to_string())
    })
    .await
}

/// The backups an installer left of `dir/<file_name>` (`<file_name>.bak-…`), oldest first.
pub fn backups(dir: &Path, file_name: &str) -> Vec<PathBuf> {
    let prefix = format!("{file_name}.bak-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&prefix)))
        .collect();
    found.sort();
    found
}

/// A client of `plangate mcp` (rmcp over stdio).
pub type Mcp = RunningService<RoleClient, ()>;

/// Call the MCP tool `tool` with `args` (an object), logging the answer.
pub async fn call_tool(mcp: &Mcp, tool: &str, args: &Value) -> Result<CallToolResult, rmcp::ServiceError> {
    let arguments = args.as_object().cloned().unwrap_or_default();
    let result = mcp.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments)).await;
    match &result {
        Ok(r) => eprintln!("{tool} -> {}", serde_json::to_string(&r.structured_content).unwrap_or_default()),
        Err(e) => eprintln!("{tool} -> error: {e}"),
    }
    result
}

/// Run `plangate ARGS` as the operator of `s` (its URL and operator token
/// in the environment, as a person's shell has them): the exit code,
/// stdout and stderr.
pub async fn operator_cli(s: &ServerProcess, args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args(args)
        .env("PLANGATE_URL", &s.base)
        .env("PLANGATE_OPERATOR_TOKEN", plangate_testkit::server::OPERATOR_TOKEN)
        .env("USER", "ops")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(WAIT, out).await.expect("the CLI finished").expect("the CLI ran");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    eprintln!("plangate {}: {stdout}{stderr}", args.join(" "));
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// `plangate pair PLATFORM --agent demo ARGS`: the code it printed (`/plan pair <code>`).
pub async fn pair_code(s: &ServerProcess, platform: &str, args: &[&str]) -> String {
    let mut all = vec!["pair", platform, "--agent", "demo"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = operator_cli(s, &all).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let line = stdout.lines().find_map(|l| l.trim().strip_prefix("/plan pair ")).expect("a /plan pair line");
    line.trim().to_string()
}

/// The text of the answer the Slack fake's `response_url` `id` received.
pub async fn slack_answer(slack: &SlackFake, id: &str) -> String {
    let path = format!("/response/{id}");
    let reqs = slack.wait_for(WAIT, |reqs| reqs.iter().any(|r| r.path == path)).await;
    reqs.iter().find(|r| r.path == path).expect("an answer").json()["text"].as_str().unwrap_or_default().to_string()
}

/// `tests/fixtures/<dir>/<name>`.
pub fn fixture_path(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(dir).join(name)
}

/// A sample hook event from `tests/fixtures/<dir>/<name>`, moved to
/// `session` so tests never share state (`dir`: `claude`, `codex/hooks`).
pub fn hook_event(dir: &str, name: &str, session: &str) -> Value {
    let mut v = read_json(&fixture_path(dir, name));
    v["session_id"] = json!(session);
    v
}

/// One run of `plangate hook claude|codex`: exit code, output, duration.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Run {
    /// The JSON answer (which a hook gives with exit 0).
    pub fn json(&self) -> Value {
        assert_eq!(self.code, 0, "a JSON answer exits 0: {}", self.stderr);
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }
    /// No output, exit 0: the hook has no opinion (the gate let the call through).
    pub fn assert_no_decision(&self) {
        assert_eq!((self.code, self.stdout.as_str()), (0, ""), "{}", self.stderr);
    }
    /// A `PreToolUse` denial: its reason.
    pub fn pre_tool_use_denial(&self) -> String {
        let v = self.json();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse", "{v}");
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
        v["hookSpecificOutput"]["permissionDecisionReason"].as_str().expect("reason").to_string()
    }
    /// A `PermissionRequest` denial: its message.
    pub fn permission_denial(&self) -> String {
        let v = self.json();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PermissionRequest", "{v}");
        assert_eq!(v["hookSpecificOutput"]["decision"]["behavior"], "deny", "{v}");
        v["hookSpecificOutput"]["decision"]["message"].as_str().expect("message").to_string()
    }
}

/// Run `cmd` with `input` on stdin (the child may be gone before it
/// reads: a binary that is not there), for at most `within`.
pub async fn run_with_input(mut cmd: tokio::process::Command, input: &[u8], within: Duration) -> Run {
    use tokio::io::AsyncWriteExt;
    let started = std::time::Instant::now();
    let piped = std::process::Stdio::piped;
    cmd.stdin(piped()).stdout(piped()).stderr(piped()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(input).await;
    drop(stdin);
    let out = tokio::time::timeout(within, child.wait_with_output()).await.expect("finished").expect("output");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// Run `plangate hook <harness>` (`claude`, `codex`) against `url` with
/// `input` on stdin, as agent `demo`, its state in `state`.
pub async fn hook_run(harness: &str, url: &str, input: &[u8], env: &[(&str, &str)], state: &Path) -> Run {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_plangate"));
    cmd.args(["hook", harness])
        .env("PLANGATE_URL", url)
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .env("PLANGATE_STATE_DIR", state)
        .env_remove("PLANGATE_HOOK_WAIT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let run = run_with_input(cmd, input, Duration::from_secs(120)).await;
    eprintln!("hook {harness} -> exit {} in {:?}: {} {}", run.code, run.took, run.stdout.trim(), run.stderr.trim());
    run
}

/// A client that does not follow redirects (the web page's answers are
/// checked as they are).
pub fn no_redirect_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

/// The gate's answer to one call (`{"session_id", "tool", "input", …}`) of
/// agent `demo`: (decision, reason).
pub async fn gate_call(s: &ServerProcess, body: &Value) -> (String, String) {
    let (st, v) = call(s.agent(Method::POST, "/v1/gate").json(body)).await;
    assert_eq!(st, 200, "{body}: {v}");
    (v["decision"].as_str().unwrap_or_default().to_string(), v["reason"].as_str().unwrap_or_default().to_string())
}

/// The gate's answer to `tool` with `input` in `session`: (decision, reason).
pub async fn gate(s: &ServerProcess, session: &str, tool: &str, input: Value) -> (String, String) {
    gate_call(s, &json!({"session_id": session, "tool": tool, "input": input})).await
}

/// The texts of the cards (messages with buttons) among `reqs` posted to `chat`.
pub fn cards(reqs: &[plangate_testkit::telegram::Recorded], chat: i64) -> Vec<String> {
    reqs.iter()
        .filter(|r| r.method == "sendMessage" && r.chat_id() == Some(chat) && r.keyboard().is_some())
        .map(|r| r.str("text"))
        .collect()
}

/// The texts of the cards posted to `chat` so far.
pub fn cards_in(fake: &FakeTelegram, chat: i64) -> Vec<String> {
    cards(&fake.requests(), chat)
}

/// Wait until `chat` has `n` cards; their texts.
pub async fn wait_cards(fake: &FakeTelegram, chat: i64, n: usize) -> Vec<String> {
    fake.wait_for(WAIT, |reqs| {
        let cards = cards(reqs, chat);
        (cards.len() >= n).then_some(cards)
    })
    .await
}

/// The `[telegram]` section pointing at `fake` with Telegram's pacing
/// lifted (a thousand a second), and destination `tg`: chat `chat`,
/// approver `telegram:<approver>`.
pub fn telegram_unpaced(fake: &FakeTelegram, chat: i64, approver: i64) -> String {
    format!(
        "{}per_chat_per_second = 1000\nglobal_per_second = 1000\n\n[destinations.tg]\nchannel = \"telegram\"\nchat = \"{chat}\"\napprovers = [\"telegram:{approver}\"]\n",
        telegram_section(fake)
    )
}

/// The gate's answer to `rm -rf` in `session`: (decision, reason).
pub async fn gate_rm_rf(s: &ServerProcess, session: &str) -> (String, String) {
    // Inside the project: outside it (`/srv/db`) deleting is a risk class
    // that an approved plan must declare (sec_classes.rs).
    gate(s, session, "Bash", json!({"command": "rm -rf build/db"})).await
}
