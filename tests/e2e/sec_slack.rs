//! Regression tests for the Slack holes of the security issue, through the
//! real binary and the Slack fake:
//!
//! * with `slack.team_id` unset, the adapter learns its workspace from
//!   `auth.test` and every other workspace is refused and audited, on every
//!   inbound path (button, modal, slash command; Socket Mode and signed HTTP);
//! * agent (and chat user) text cannot format a card: no fake bold "Approved
//!   by" line, no `<!channel>` ping, no disguised link.

use super::kit::slack_answer as answer;
use super::kit::{approval_id, call, gate, plan, propose};
use plangate_engine::codec::{encode, Button};
use plangate_slack::render::{ModalMeta, FEEDBACK_MODAL, INPUT_ACTION, INPUT_BLOCK};
use plangate_testkit::server::{ServerProcess, AGENT_TOKEN, OPERATOR_TOKEN};
use plangate_testkit::slack::{block_actions, from_team, slash_command, text_input, view_submission, Scripted, SlackFake, OTHER_TEAM};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const SECRET: &str = "sec-slack-signing-secret";

/// `[slack]` against the fake, without `team_id`; `UEVIL` is a listed
/// approver, so only the workspace check can refuse them.
async fn start_slack(slack: &SlackFake, transport: &str) -> ServerProcess {
    let extra = format!(
        r#"
[slack]
bot_token = "xoxb-test"
app_token = "xapp-test"
signing_secret = "{SECRET}"
transport = "{transport}"
api_url = "{url}"

[destinations.sl]
channel = "slack"
chat = "C1"
approvers = ["slack:U1", "slack:UEVIL"]
"#,
        url = slack.api_url()
    );
    ServerProcess::start_with(BIN, &["sl"], &extra).await
}

async fn decision(s: &ServerProcess, session: &str) -> Value {
    call(s.agent(Method::GET, &format!("/v1/sessions/{session}/decision"))).await.1
}

/// The gate's decision on a `Write` in `session`.
async fn gate_write(s: &ServerProcess, session: &str) -> String {
    gate(s, session, "Write", json!({"file_path": "x"})).await.0
}

/// The ephemeral answer (chat.postEphemeral) to a view submission, n-th overall.
async fn ephemeral(slack: &SlackFake, n: usize) -> String {
    slack.wait_calls("chat.postEphemeral", n, WAIT).await[n - 1].json()["text"].as_str().unwrap_or_default().to_string()
}

/// The refusals of the workspace check recorded in the audit.
async fn refusals(s: &ServerProcess) -> Vec<Value> {
    let (st, audit) = call(s.operator(Method::GET, "/v1/audit?session=-")).await;
    assert_eq!(st, 200, "{audit}");
    audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "refused" && e["detail"].as_str().unwrap().contains(OTHER_TEAM))
        .cloned()
        .collect()
}

async fn assert_still_pending(s: &ServerProcess, session: &str) {
    let d = decision(s, session).await;
    assert_eq!(d["status"], "pending", "a click from another workspace decided the plan: {d}");
    assert_eq!(gate_write(s, session).await, "deny", "the gate opened");
}

fn simple_plan(title: &str) -> Value {
    plan(title, &["Read the client"])
}

#[tokio::test]
async fn sec_slack_other_workspace_is_refused_without_team_id_socket_mode() {
    let slack = SlackFake::start().await;
    let s = start_slack(&slack, "socket").await;
    slack.wait_connected(WAIT).await;

    let id = approval_id(&propose(&s, "s1", &simple_plan("Add retries")).await);
    let post = slack.wait_calls("chat.postMessage", 1, WAIT).await.remove(0);
    assert_eq!(post.json()["channel"], "C1");
    // The card's ts plays no part in the workspace check.
    let ts = "1.0";

    // Approve, from another workspace: refused, nothing decided, audited.
    let click =
        block_actions("UEVIL", "mallory", "C1", ts, &encode(Button::Approve(id)), "1700000001.000001", &slack.response_url("evil-click"));
    slack.send_envelope("interactive", from_team(click, OTHER_TEAM));
    assert_eq!(answer(&slack, "evil-click").await, "This workspace is not allowed to decide plans here.");
    assert_still_pending(&s, "s1").await;

    // "Request changes" through its modal, from another workspace.
    let meta = ModalMeta { id, channel: "C1".into(), thread: None }.encode();
    let modal =
        view_submission("UEVIL", "mallory", "V1", "1.hash", FEEDBACK_MODAL, &meta, text_input(INPUT_BLOCK, INPUT_ACTION, "ship it"));
    slack.send_envelope("interactive", from_team(modal, OTHER_TEAM));
    assert_eq!(ephemeral(&slack, 1).await, "This workspace is not allowed to decide plans here.");
    assert_still_pending(&s, "s1").await;

    // `/plan accept`, from another workspace.
    let command =
        slash_command("UEVIL", "mallory", "C1", &format!("accept #{}", id.short()), "trigger-evil", &slack.response_url("evil-cmd"));
    slack.send_envelope("slash_commands", from_team(command, OTHER_TEAM));
    assert_eq!(answer(&slack, "evil-cmd").await, "This workspace is not allowed to decide plans here.");
    assert_still_pending(&s, "s1").await;

    // Each refusal is audited: who, that it was refused, and the workspace.
    let refused = refusals(&s).await;
    assert_eq!(refused.len(), 3, "{refused:#?}");
    for e in &refused {
        assert_eq!(e["actor"], "slack:UEVIL", "{e}");
        assert!(e["detail"].as_str().unwrap().contains("foreign team"), "{e}");
    }

    // The same click from the home workspace works.
    let click =
        block_actions("U1", "alice", "C1", ts, &encode(Button::Approve(id)), "1700000001.000002", &slack.response_url("home-click"));
    slack.send_envelope("interactive", click);
    let waiter = call(s.agent(Method::GET, "/v1/sessions/s1/decision?wait=15")).await.1;
    assert_eq!((waiter["status"].as_str(), waiter["decided_by"].as_str()), (Some("approved"), Some("slack:@alice")), "{waiter}");
    assert_eq!(gate_write(&s, "s1").await, "allow");
    assert_eq!(refusals(&s).await.len(), 3);
    assert_eq!(slack.calls("auth.test").len(), 1, "the workspace is learned from auth.test at start");
}

/// POST a signed form body to the server's Slack endpoint.
async fn post_signed(s: &ServerProcess, path: &str, body: String) -> u16 {
    let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string();
    let signature = plangate_slack::verify::sign(SECRET.as_bytes(), &ts, body.as_bytes());
    s.http
        .post(s.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", ts)
        .header("x-slack-signature", signature)
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// `application/x-www-form-urlencoded`, as Slack sends it.
fn form(fields: &[(&str, &str)]) -> String {
    let encode = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
                b => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    fields.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}

fn interaction_form(payload: &Value) -> String {
    form(&[("payload", &payload.to_string())])
}

#[tokio::test]
async fn sec_slack_other_workspace_is_refused_without_team_id_signed_http() {
    let slack = SlackFake::start().await;
    let s = start_slack(&slack, "http").await;
    let id = approval_id(&propose(&s, "h1", &simple_plan("Add retries")).await);
    slack.wait_calls("chat.postMessage", 1, WAIT).await;

    let click = block_actions(
        "UEVIL",
        "mallory",
        "C1",
        "1.0",
        &encode(Button::Approve(id)),
        "1700000002.000001",
        &slack.response_url("evil-click"),
    );
    assert_eq!(post_signed(&s, "/slack/interactivity", interaction_form(&from_team(click, OTHER_TEAM))).await, 200);
    assert_eq!(answer(&slack, "evil-click").await, "This workspace is not allowed to decide plans here.");
    assert_still_pending(&s, "h1").await;

    let text = format!("accept #{}", id.short());
    let response_url = slack.response_url("evil-cmd");
    let command = [
        ("team_id", OTHER_TEAM),
        ("channel_id", "C1"),
        ("user_id", "UEVIL"),
        ("user_name", "mallory"),
        ("command", "/plan"),
        ("text", &text),
        ("trigger_id", "trigger-evil-http"),
        ("response_url", &response_url),
    ];
    assert_eq!(post_signed(&s, "/slack/commands", form(&command)).await, 200);
    assert_eq!(answer(&slack, "evil-cmd").await, "This workspace is not allowed to decide plans here.");
    assert_still_pending(&s, "h1").await;
    assert_eq!(refusals(&s).await.len(), 2);

    let click = block_actions("U1", "alice", "C1", "1.0", &encode(Button::Approve(id)), "1700000002.000002", &slack.response_url("home"));
    assert_eq!(post_signed(&s, "/slack/interactivity", interaction_form(&click)).await, 200);
    let d = call(s.agent(Method::GET, "/v1/sessions/h1/decision?wait=15")).await.1;
    assert_eq!(d["status"], "approved", "{d}");
    assert_eq!(slack.calls("auth.test").len(), 1, "the workspace is learned from auth.test at start");
}

#[tokio::test]
async fn sec_slack_other_workspaces_are_allowed_only_when_listed() {
    let slack = SlackFake::start().await;
    let extra = format!(
        r#"
[slack]
bot_token = "xoxb-test"
app_token = "xapp-test"
api_url = "{url}"
allow_other_teams = ["{OTHER_TEAM}"]

[destinations.sl]
channel = "slack"
chat = "C1"
approvers = ["slack:U1", "slack:UEVIL"]
"#,
        url = slack.api_url()
    );
    let s = ServerProcess::start_with(BIN, &["sl"], &extra).await;
    slack.wait_connected(WAIT).await;
    let id = approval_id(&propose(&s, "p1", &simple_plan("Partner approves")).await);
    slack.wait_calls("chat.postMessage", 1, WAIT).await;
    // A third workspace is still refused.
    let click =
        block_actions("UEVIL", "mallory", "C1", "1.0", &encode(Button::Approve(id)), "1700000003.000001", &slack.response_url("third"));
    slack.send_envelope("interactive", from_team(click, "T0THIRD"));
    assert_eq!(answer(&slack, "third").await, "This workspace is not allowed to decide plans here.");
    assert_still_pending(&s, "p1").await;
    // The listed partner workspace may decide.
    let click =
        block_actions("UEVIL", "partner", "C1", "1.0", &encode(Button::Approve(id)), "1700000003.000002", &slack.response_url("partner"));
    slack.send_envelope("interactive", from_team(click, OTHER_TEAM));
    let d = call(s.agent(Method::GET, "/v1/sessions/p1/decision?wait=15")).await.1;
    assert_eq!((d["status"].as_str(), d["decided_by"].as_str()), (Some("approved"), Some("slack:@partner")), "{d}");
}

/// Fail closed: without `team_id` and without an answer from `auth.test`
/// the server does not start (it cannot tell its users from strangers), and
/// says what to fix.
#[tokio::test]
async fn sec_slack_no_start_when_the_workspace_cannot_be_learned() {
    let slack = SlackFake::start().await;
    slack.script("auth.test", Scripted::error("invalid_auth"));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plangate.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[server]
bind = "127.0.0.1:0"
data_dir = "{data}"
operator_token = "{OPERATOR_TOKEN}"

[agents.demo]
token = "{AGENT_TOKEN}"
destinations = ["sl"]

[slack]
bot_token = "xoxb-test"
app_token = "xapp-test"
api_url = "{url}"

[destinations.sl]
channel = "slack"
chat = "C1"
approvers = ["slack:U1"]
"#,
            data = dir.path().join("data").display(),
            url = slack.api_url()
        ),
    )
    .unwrap();
    let run = tokio::process::Command::new(BIN).args(["serve", "--config"]).arg(&config).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(30), run).await.expect("plangate exits").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started: {stdout}");
    assert!(!stdout.contains("plangate listening on"), "{stdout}");
    assert!(stderr.contains("cannot start the Slack adapter"), "{stderr}");
    assert!(stderr.contains("auth.test failed") && stderr.contains("invalid_auth"), "{stderr}");
    assert!(stderr.contains("set slack.team_id"), "the error says what to fix: {stderr}");
    assert_eq!(slack.sequence(), ["auth.test"]);
}

/// Every text object in a JSON tree: `(type, text)`.
fn block_texts(v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            if let (Some(Value::String(kind)), Some(Value::String(text))) = (map.get("type"), map.get("text")) {
                if kind == "mrkdwn" || kind == "plain_text" {
                    out.push((kind.clone(), text.clone()));
                }
            }
            map.values().for_each(|v| block_texts(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| block_texts(v, out)),
        _ => {}
    }
}

const BOLD: &str = "*Approved by @alice*";
const PING: &str = "<!channel>";
const LINK: &str = "<https://evil.example|Approve>";

#[tokio::test]
async fn sec_slack_agent_text_cannot_format_the_card() {
    let slack = SlackFake::start().await;
    let s = start_slack(&slack, "socket").await;
    slack.wait_connected(WAIT).await;
    let plan = json!({
        "title": format!("{BOLD} {PING}"),
        "summary": format!("> {BOLD}\n_quiet_ ~gone~ `code` & more"),
        "steps": [{"step": BOLD}, {"step": format!("ping {PING} then {LINK}")}],
        "risks": [LINK],
    });
    propose(&s, "x1", &plan).await;
    let post = slack.wait_calls("chat.postMessage", 1, WAIT).await.remove(0);
    let body = post.json();
    let blocks = &body["blocks"];

    // Agent text is shown in plain_text objects, which Slack never parses for
    // formatting, mentions or links, verbatim and without emoji codes.
    assert_eq!(
        blocks[2],
        json!({"type": "section", "text": {"type": "plain_text", "text": format!("> {BOLD}\n_quiet_ ~gone~ `code` & more"), "emoji": false}})
    );
    assert_eq!(
        blocks[3],
        json!({"type": "section", "text": {"type": "plain_text", "text": format!("Steps\n1. ○ {BOLD}\n2. ○ ping {PING} then {LINK}"), "emoji": false}})
    );
    assert_eq!(blocks[4], json!({"type": "section", "text": {"type": "plain_text", "text": format!("Risks\n• {LINK}"), "emoji": false}}));
    assert_eq!(blocks[0], json!({"type": "header", "text": {"type": "plain_text", "text": format!("{BOLD} {PING}"), "emoji": false}}));
    // No mrkdwn object carries any of it.
    let mut all = Vec::new();
    block_texts(blocks, &mut all);
    for (kind, text) in &all {
        if kind == "mrkdwn" {
            for agent in ["Approved", "channel", "evil", "quiet", "gone", "code"] {
                assert!(!text.contains(agent), "agent text {agent:?} in a mrkdwn object: {text:?}");
            }
        }
    }
    // The notification text is mrkdwn: `& < >` become entities and the
    // formatting characters look-alikes that Slack does not parse.
    let fallback = body["text"].as_str().unwrap();
    assert!(fallback.starts_with("Plan for approval: ∗Approved by @alice∗ &lt;!channel&gt; #"), "{fallback}");
    assert!(!fallback.contains(['*', '<', '>']), "{fallback}");

    // Feedback echoed on the card (the receipt) is plain text too.
    let d = s.decide_when_pending("x1", json!({"action": "revise", "feedback": format!("{BOLD} {LINK}"), "actor": "ops"})).await;
    assert_eq!(d["status"], "rejected", "{d}");
    let update = slack.wait_calls("chat.update", 1, WAIT).await.remove(0);
    let blocks = update.json()["blocks"].as_array().unwrap().clone();
    let receipt = blocks.last().unwrap();
    assert_eq!(receipt["type"], "section");
    assert_eq!(receipt["text"]["type"], "plain_text", "{receipt}");
    assert_eq!(receipt["text"]["emoji"], false, "{receipt}");
    assert!(receipt["text"]["text"].as_str().unwrap().ends_with(&format!(": {BOLD} {LINK}")), "{receipt}");
    let mut all = Vec::new();
    block_texts(&Value::Array(blocks), &mut all);
    assert!(all.iter().filter(|(kind, _)| kind == "mrkdwn").all(|(_, t)| !t.contains("Approved") && !t.contains("evil")), "{all:?}");
}
