//! Slack end to end: the real binary with the real slack-morphism client
//! (Socket Mode) against the loopback Slack fake, next to Telegram, so a
//! decision on one channel edits the card on the other.

use super::kit::{approval_id, call, plan, propose, slack_section, telegram_section};
use plangate_engine::codec::{encode, Button};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::slack::{block_actions, SlackFake};
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const TG_CHAT: i64 = -1001;

async fn start_both(tg: &FakeTelegram, slack: &SlackFake) -> ServerProcess {
    let extra = format!(
        r#"{}{}
[destinations.tg]
channel = "telegram"
chat = "{TG_CHAT}"
approvers = ["telegram:111"]

[destinations.sl]
channel = "slack"
chat = "C1"
approvers = ["slack:U1"]
"#,
        telegram_section(tg),
        slack_section(slack)
    );
    ServerProcess::start_with(BIN, &["tg", "sl"], &extra).await
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
    let s = start_both(&tg, &slack).await;
    slack.wait_connected(WAIT).await;

    // A proposal reaches both channels.
    let id = approval_id(&propose(&s, "s1", &plan("Both channels", &["x"])).await);
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
    let id2 = approval_id(&propose(&s, "s2", &plan("Telegram decides", &["x"])).await);
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
