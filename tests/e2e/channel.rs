//! `plangate mcp --channel` end to end: the test plays Claude Code. It runs
//! the real hook (`plangate hook claude`) for `ExitPlanMode` with a 1 s wait,
//! so the hook has already given up when the human decides, and it is the
//! MCP client of the real channel (rmcp's client over stdio), receiving
//! `notifications/claude/channel` events and answering nothing but the
//! `permission_request`s Claude Code would relay.

use plangate_testkit::server::{eventually, ServerProcess, AGENT_TOKEN};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use reqwest::Method;
use rmcp::model::{ClientNotification, CustomNotification};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// What the fake Claude Code receives from the channel.
#[derive(Clone)]
struct FakeClaude {
    received: mpsc::UnboundedSender<(String, Value)>,
}

impl ClientHandler for FakeClaude {
    async fn on_custom_notification(&self, notification: CustomNotification, _context: NotificationContext<RoleClient>) {
        eprintln!("claude <- {} {}", notification.method, notification.params.clone().unwrap_or_default());
        let _ = self.received.send((notification.method, notification.params.unwrap_or_default()));
    }
}

struct Channel {
    mcp: RunningService<RoleClient, FakeClaude>,
    received: mpsc::UnboundedReceiver<(String, Value)>,
}

impl Channel {
    /// Start `plangate mcp --channel` as Claude Code would (a direct child).
    /// `claude_pid`: `PLANGATE_CLAUDE_PID`, or `None` to let the channel find
    /// its Claude process (this test process) itself.
    async fn start(s: &ServerProcess, runtime: &Path, claude_pid: Option<u32>) -> Channel {
        let (base, runtime) = (s.base.clone(), runtime.to_path_buf());
        let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(move |cmd| {
            cmd.args(["mcp", "--channel"])
                .env("PLANGATE_URL", &base)
                .env("PLANGATE_TOKEN", AGENT_TOKEN)
                .env("PLANGATE_RUNTIME_DIR", &runtime)
                .env_remove("PLANGATE_SESSION");
            match claude_pid {
                Some(pid) => cmd.env("PLANGATE_CLAUDE_PID", pid.to_string()),
                None => cmd.env_remove("PLANGATE_CLAUDE_PID"),
            };
        }))
        .expect("spawn plangate mcp --channel");
        let (tx, received) = mpsc::unbounded_channel();
        let mcp = FakeClaude { received: tx }.serve(transport).await.expect("MCP handshake");
        let info = mcp.peer_info().expect("server info");
        let experimental = info.capabilities.experimental.clone().unwrap_or_default();
        assert!(experimental.contains_key("claude/channel") && experimental.contains_key("claude/channel/permission"), "{experimental:?}");
        Channel { mcp, received }
    }

    /// Relay a permission dialog, as Claude Code does.
    async fn permission_request(&self, request_id: &str, tool_name: &str) {
        let params = json!({"request_id": request_id, "tool_name": tool_name,
            "description": "Exit plan mode", "input_preview": "{\"plan\":\"# Add retry…"});
        let n = CustomNotification::new("notifications/claude/channel/permission_request", Some(params));
        self.mcp.send_notification(ClientNotification::CustomNotification(n)).await.expect("send permission_request");
    }

    async fn next(&mut self, within: Duration) -> Option<(String, Value)> {
        tokio::time::timeout(within, self.received.recv()).await.ok().flatten()
    }

    /// The next notification, which must come within 30 s.
    async fn expect(&mut self, what: &str) -> (String, Value) {
        self.next(Duration::from_secs(30)).await.unwrap_or_else(|| panic!("no {what} from the channel within 30 s"))
    }

    /// Nothing more arrives: a marker does. Once `session` holds no untaken
    /// text, the operator puts it back in plan mode and releases it; the
    /// next event must be that release. The channel delivers a session's
    /// texts one after another (a text it took is pushed before it parks
    /// again), so anything delivered twice or unexpectedly comes first.
    /// Leaves the session released.
    async fn quiet(&mut self, s: &ServerProcess, session: &str) {
        eventually(Duration::from_secs(15), "every text of the session taken", || async { untaken(s, session).await.is_null() }).await;
        let (st, v) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{session}/enter"))).await;
        assert_eq!(st, 200, "{v}");
        let release = s.operator(Method::POST, &format!("/v1/operator/sessions/demo/{session}/release")).json(&json!({"actor": "marker"}));
        let (st, v) = ServerProcess::send(release).await;
        assert_eq!(st, 200, "{v}");
        let (method, event) = self.expect("the release marker").await;
        let content = event["content"].as_str().unwrap_or_default();
        assert!(
            method == "notifications/claude/channel" && content.starts_with("[PLAN_DECISION]: released"),
            "delivered twice or unexpectedly: {method} {event}"
        );
        assert_eq!(event["meta"]["session_id"], session, "{event}");
    }
}

/// `plangate hook claude` for `ExitPlanMode` of `session`, waiting 1 s.
/// Through `sh -c '…; true'`, so (as under Claude Code) a shell sits
/// between the hook and its Claude process unless `claude_pid` is given.
async fn exit_plan_mode(s: &ServerProcess, runtime: &Path, claude_pid: Option<u32>, session: &str, plan: &str) -> Value {
    pre_tool_use(s, runtime, claude_pid, session, "ExitPlanMode", json!({"plan": plan})).await
}

/// One `PreToolUse` event through the real hook (see [`exit_plan_mode`]).
async fn pre_tool_use(s: &ServerProcess, runtime: &Path, claude_pid: Option<u32>, session: &str, tool: &str, input: Value) -> Value {
    let event = json!({
        "session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/repo", "permission_mode": "plan",
        "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": input,
        "tool_use_id": "toolu_01"
    });
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("'{BIN}' hook claude; true"))
        .env("PLANGATE_URL", &s.base)
        .env("PLANGATE_TOKEN", AGENT_TOKEN)
        .env("PLANGATE_HOOK_WAIT", "1")
        .env("PLANGATE_RUNTIME_DIR", runtime)
        .env("PLANGATE_STATE_DIR", runtime.join("hook-state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    match claude_pid {
        Some(pid) => cmd.env("PLANGATE_CLAUDE_PID", pid.to_string()),
        None => cmd.env_remove("PLANGATE_CLAUDE_PID"),
    };
    let mut child = cmd.spawn().expect("spawn hook");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(event.to_string().as_bytes()).await.expect("stdin");
    drop(stdin);
    let out = child.wait_with_output().await.expect("hook output");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("hook {tool}({session}) -> {}", text.trim());
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Decide the pending plan of `session` once `parked` long-polls wait in the
/// server: a running channel's follower and its answer to the dialog, so
/// the decision reaches a channel that really waits (0: decide at once).
async fn decide_when_parked(s: &ServerProcess, session: &str, parked: u64, body: Value) {
    let approval = s.pending_approval(session).await;
    s.waiting(parked).await;
    let (st, v) = ServerProcess::send(s.operator(Method::POST, &format!("/v1/approvals/{approval}/decision")).json(&body)).await;
    assert_eq!(st, 200, "{v}");
    eprintln!("operator decided {approval} after the hook gave up: {}", v["status"]);
}

async fn untaken(s: &ServerProcess, session: &str) -> Value {
    let (st, v) = ServerProcess::send(s.agent(Method::GET, &format!("/v1/sessions/{session}/injection"))).await;
    assert_eq!(st, 200, "{v}");
    v["injection"].clone()
}

fn runtime_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("runtime dir");
    let path = dir.path().join("run");
    (dir, path)
}

const PLAN: &str = "# Add retry to the fetcher\n\n1. Wrap fetch in a retry loop\n2. Run the tests\n";

#[tokio::test]
async fn an_approval_after_the_hook_gave_up_answers_the_exit_plan_mode_dialog() {
    let s = ServerProcess::start(BIN, "").await;
    let (_dir, runtime) = runtime_dir();
    // No PLANGATE_CLAUDE_PID: the channel (a child of this "Claude") and the
    // hook (behind a shell) find the same Claude process by themselves.
    let mut channel = Channel::start(&s, &runtime, None).await;
    let sid = "chan-approve";

    let hook = exit_plan_mode(&s, &runtime, None, sid, PLAN).await;
    // Pending after 1 s, and a channel runs: the dialog stays open for it.
    assert_eq!(hook["hookSpecificOutput"]["permissionDecision"], "ask", "{hook}");
    channel.permission_request("abcde", "ExitPlanMode").await;
    // Another tool's dialog is the terminal's business: never answered.
    channel.permission_request("fghij", "Bash").await;

    decide_when_parked(&s, sid, 2, json!({"action": "approve", "actor": "alice"})).await;
    let (method, params) = channel.expect("verdict").await;
    assert_eq!(method, "notifications/claude/channel/permission");
    assert_eq!(params, json!({"request_id": "abcde", "behavior": "allow"}));
    // `allow` said it all: the approved text was taken, not pushed as well.
    channel.quiet(&s, sid).await;
}

#[tokio::test]
async fn changes_requested_deny_the_dialog_and_the_feedback_arrives_as_an_event() {
    let s = ServerProcess::start(BIN, "").await;
    let (_dir, runtime) = runtime_dir();
    let claude = 4_300_001;
    let mut channel = Channel::start(&s, &runtime, Some(claude)).await;
    let sid = "chan-revise";

    let hook = exit_plan_mode(&s, &runtime, Some(claude), sid, PLAN).await;
    assert_eq!(hook["hookSpecificOutput"]["permissionDecision"], "ask", "{hook}");
    channel.permission_request("klmno", "ExitPlanMode").await;
    decide_when_parked(&s, sid, 2, json!({"action": "revise", "feedback": "add jitter to the backoff", "actor": "bob"})).await;

    let (method, params) = channel.expect("verdict").await;
    assert_eq!(
        (method.as_str(), &params),
        ("notifications/claude/channel/permission", &json!({"request_id": "klmno", "behavior": "deny"}))
    );
    let (method, event) = channel.expect("feedback event").await;
    assert_eq!(method, "notifications/claude/channel");
    let content = event["content"].as_str().unwrap_or_default();
    assert!(content.starts_with("[PLAN_DECISION]: rejected") && content.contains("add jitter to the backoff"), "{content}");
    assert_eq!(event["meta"]["status"], "rejected");
    assert_eq!(event["meta"]["version"], "1");
    assert_eq!(event["meta"]["session_id"], sid);
    assert!(event["meta"]["approval_id"].as_str().is_some_and(|a| !a.is_empty()), "{event}");
    channel.quiet(&s, sid).await;
}

#[tokio::test]
async fn a_decision_made_while_no_channel_ran_arrives_when_one_connects_once() {
    let s = ServerProcess::start(BIN, "").await;
    let (_dir, runtime) = runtime_dir();
    let claude = 4_300_002;
    let sid = "chan-late";

    // No channel: the hook refuses the pending plan as before.
    let hook = exit_plan_mode(&s, &runtime, Some(claude), sid, PLAN).await;
    assert_eq!(hook["hookSpecificOutput"]["permissionDecision"], "deny", "{hook}");
    decide_when_parked(&s, sid, 0, json!({"action": "approve", "actor": "carol"})).await;
    assert!(untaken(&s, sid).await.as_str().is_some_and(|t| t.starts_with("[PLAN_DECISION]: approved")));

    let mut channel = Channel::start(&s, &runtime, Some(claude)).await;
    let (method, event) = channel.expect("the late decision").await;
    assert_eq!(method, "notifications/claude/channel");
    assert!(event["content"].as_str().unwrap_or_default().starts_with("[PLAN_DECISION]: approved"), "{event}");
    assert_eq!(event["meta"]["status"], "approved");
    assert_eq!(untaken(&s, sid).await, Value::Null);

    // Claude wakes, calls ExitPlanMode again with the same plan: allowed at once.
    let again = exit_plan_mode(&s, &runtime, Some(claude), sid, PLAN).await;
    // An approved plan passes (no permission decision), with the approved steps as context.
    assert_eq!(again["hookSpecificOutput"]["permissionDecision"], Value::Null, "{again}");
    assert!(
        again["hookSpecificOutput"]["additionalContext"].as_str().is_some_and(|t| t.starts_with("[PLAN_DECISION]: approved")),
        "{again}"
    );
    // Delivered once; and a restarted channel delivers nothing a second
    // time (not the decision, not the first marker).
    channel.quiet(&s, sid).await;
    drop(channel);
    let mut second = Channel::start(&s, &runtime, Some(claude)).await;
    second.quiet(&s, sid).await;
}

#[tokio::test]
async fn two_claude_sessions_in_one_project_each_get_only_their_own_decisions() {
    let s = ServerProcess::start(BIN, "").await;
    let (_dir, runtime) = runtime_dir();
    let (claude_a, claude_b) = (4_300_003, 4_300_004);
    let mut a = Channel::start(&s, &runtime, Some(claude_a)).await;
    let mut b = Channel::start(&s, &runtime, Some(claude_b)).await;

    exit_plan_mode(&s, &runtime, Some(claude_a), "chan-a", PLAN).await;
    exit_plan_mode(&s, &runtime, Some(claude_b), "chan-b", "# Other plan\n\n1. Something else\n").await;
    decide_when_parked(&s, "chan-b", 0, json!({"action": "revise", "feedback": "only for b", "actor": "dave"})).await;

    let (_, event) = b.expect("b's decision").await;
    assert_eq!(event["meta"]["session_id"], "chan-b");
    assert!(event["content"].as_str().unwrap_or_default().contains("only for b"));
    a.quiet(&s, "chan-a").await;

    // Claude A's session changes (`/clear`): its channel follows the hook.
    exit_plan_mode(&s, &runtime, Some(claude_a), "chan-a2", "# Third plan\n\n1. Again\n").await;
    decide_when_parked(&s, "chan-a2", 0, json!({"action": "revise", "feedback": "for a2", "actor": "erin"})).await;
    let (_, event) = a.expect("a2's decision").await;
    assert_eq!(event["meta"]["session_id"], "chan-a2");
    b.quiet(&s, "chan-b").await;
}

#[tokio::test]
async fn an_answer_given_after_the_agent_stopped_waiting_arrives_as_an_event() {
    let fake = FakeTelegram::start().await;
    let (chat, alice): (i64, i64) = (-1001234567890, 111111);
    let config = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{chat}\"\napprovers = [\"telegram:{alice}\"]\n",
        fake.api_url()
    );
    let s = ServerProcess::start_with(BIN, &["ops"], &config).await;
    let (_dir, runtime) = runtime_dir();
    let claude = 4_300_005;
    let sid = "chan-answer";
    // Any hook event tells the channel which session this Claude is in.
    let read = pre_tool_use(&s, &runtime, Some(claude), sid, "Read", json!({"file_path": "/repo/README.md"})).await;
    assert_eq!(read, Value::Null, "a read passes with no opinion");
    let mut channel = Channel::start(&s, &runtime, Some(claude)).await;

    let (st, _) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{sid}/enter"))).await;
    assert_eq!(st, 200);
    let body = json!({"question": "Which database?", "options": ["postgres", "sqlite"]});
    let (st, v) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{sid}/questions")).json(&body)).await;
    assert_eq!(st, 201, "{v}");
    // Nobody waits for the answer: the agent asked and moved on.
    fake.wait_request("sendMessage", Duration::from_secs(15), |r| r.str("text").contains("Which database?")).await;
    fake.push_update(fake.message_update(chat, FakeTelegram::user(alice, Some("alice"), "Alice"), "/plan answer postgres", None));

    let (method, event) = channel.expect("the answer").await;
    assert_eq!(method, "notifications/claude/channel");
    let content = event["content"].as_str().unwrap_or_default();
    assert!(content.starts_with("[PLAN_ANSWER]") && content.contains("> postgres") && content.contains("telegram:@alice"), "{content}");
    channel.quiet(&s, sid).await;
}
