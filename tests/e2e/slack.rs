//! Slack end to end: the real binary with the real slack-morphism client
//! (Socket Mode) against the loopback Slack fake, next to Telegram, so a
//! decision on one channel edits the card on the other.

use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::server::ServerProcess;
use plangate_testkit::slack::{block_actions, SlackFake, TEAM};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const TG_CHAT: i64 = -1001;

async fn start(tg: &FakeTelegram, slack: &SlackFake) -> ServerProcess {
    let extra = format!(
        r#"
[telegram]
token = "{TOKEN}"
api_url = "{tg_url}"
poll_timeout_secs = 1

[slack]
bot_token = "xoxb-test"
app_token = "xapp-test"
api_url = "{slack_url}"
team_id = "{TEAM}"

[destinations.tg]
channel = "telegram"
chat = "{TG_CHAT}"
approvers = ["telegram:111"]

[destinations.sl]
channel = "slack"
chat = "C1"
approvers = ["slack:U1"]
"#,
        tg_url = tg.api_url(),
        slack_url = slack.api_url()
    );
    ServerProcess::start_with(BIN, &["tg", "sl"], &extra).await
}

async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    ServerProcess::send(req).await
}

async fn propose(s: &ServerProcess, session: &str, title: &str) -> ApprovalId {
    call(s.agent(Method::POST, &format!("/v1/sessions/{session}/enter"))).await;
    let (st, d) =
        call(s.agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&json!({"title": title, "steps": [{"step": "x"}]})))
            .await;
    assert_eq!(st, 201, "{d}");
    ApprovalId::parse(d["approval_id"].as_str().unwrap()).unwrap()
}

/// The ts of the n-th card posted to Slack.
async fn slack_card(slack: &SlackFake, n: usize) -> String {
    let posts = slack.wait_calls("chat.postMessage", n, WAIT).await;
    let post = &posts[n - 1];
    let ts = slack
        .wait_for(WAIT, |reqs| reqs.iter().any(|r| r.path.ends_with("files.completeUploadExternal")))
        .await
        .iter()
        .find(|r| r.path.ends_with("files.completeUploadExternal"))
        .map(|r| r.json()["thread_ts"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    assert_eq!(post.json()["channel"], "C1");
    ts
}

#[tokio::test]
async fn approve_in_slack_and_sync_a_telegram_decision_to_the_slack_card() {
    let tg = FakeTelegram::start().await;
    let slack = SlackFake::start().await;
    let s = start(&tg, &slack).await;
    slack.wait_connected(WAIT).await;

    // A proposal reaches both channels.
    let id = propose(&s, "s1", "Both channels").await;
    let ts = slack_card(&slack, 1).await;
    assert!(!ts.is_empty());
    let card = &slack.calls("chat.postMessage")[0];
    let values: Vec<String> = card.json()["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().unwrap().iter().map(|e| e["value"].as_str().unwrap_or_default().to_string()))
        .collect();
    assert!(values.contains(&encode(Button::Approve(id))), "{values:?}");
    tg.wait_call("sendMessage", 1, WAIT).await;

    // A user from another workspace is refused.
    let mut foreign = block_actions("U1", "alice", "C1", &ts, &encode(Button::Approve(id)), "1.000001", &slack.response_url("r0"));
    foreign["team"]["id"] = json!("T-OTHER");
    foreign["user"]["team_id"] = json!("T-OTHER");
    slack.send_envelope("interactive", foreign);
    // The approver in Slack approves.
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s1/decision?wait=30")));
    slack.send_envelope(
        "interactive",
        block_actions("U1", "alice", "C1", &ts, &encode(Button::Approve(id)), "1.000002", &slack.response_url("r1")),
    );
    let (_, d) = waiter.await.unwrap();
    assert_eq!((d["status"].as_str(), d["decided_by"].as_str()), (Some("approved"), Some("slack:@alice")));
    // Both cards show the receipt.
    slack.wait_for(WAIT, |reqs| reqs.iter().any(|r| r.path.ends_with("chat.update") && r.json().to_string().contains("Approved v1"))).await;
    let edit = tg.wait_call("editMessageText", 1, WAIT).await;
    assert!(edit.str("text").contains("Approved v1 by slack:@\u{2060}alice"), "{}", edit.str("text"));
    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?session=-")).await;
    assert!(audit.to_string().contains("foreign team"), "{audit}");

    // Decided on Telegram → the Slack card is updated too.
    let id2 = propose(&s, "s2", "Telegram decides").await;
    slack_card(&slack, 2).await;
    let cards = tg.calls("sendMessage");
    let tg_card = cards.iter().filter(|r| r.keyboard().is_some()).nth(1).unwrap().message_id_sent().unwrap();
    tg.push_update(tg.callback_update(TG_CHAT, tg_card, FakeTelegram::user(111, Some("bob"), "Bob"), &encode(Button::Approve(id2))));
    slack
        .wait_for(WAIT, |reqs| {
            reqs.iter().any(|r| r.path.ends_with("chat.update") && r.json().to_string().contains("Approved v1 by telegram:@bob"))
        })
        .await;
}
