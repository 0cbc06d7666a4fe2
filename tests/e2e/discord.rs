//! Discord end to end: the real binary with serenity (gateway transport)
//! against the loopback Discord REST + gateway fake.

use super::kit::call;
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::discord::{component_interaction, Actor, DiscordFake};
use plangate_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(20);
const APP: u64 = 700_000_000_000_000_007;
const GUILD: u64 = 800_000_000_000_000_008;
const CHANNEL: u64 = 600_000_000_000_000_006;
const ALICE: u64 = 500_000_000_000_000_001;
const MALLORY: u64 = 500_000_000_000_000_666;

fn actor(user_id: u64, name: &str, guild: u64) -> Actor {
    Actor { user_id, username: name.into(), guild_id: Some(guild), channel_id: CHANNEL }
}

#[tokio::test]
async fn approve_over_the_gateway_refuses_strangers_and_other_guilds() {
    let fake = DiscordFake::start(APP).await;
    let extra = format!(
        r#"
[discord]
bot_token = "discord-test-token"
application_id = "{APP}"
api_url = "{base}"
guild_id = "{GUILD}"

[destinations.dc]
channel = "discord"
chat = "{CHANNEL}"
approvers = ["discord:{ALICE}"]
"#,
        base = fake.base
    );
    let s = ServerProcess::start_with(BIN, &["dc"], &extra).await;
    fake.wait_identified(WAIT).await;

    call(s.agent(Method::POST, "/v1/sessions/s1/enter")).await;
    let (st, d) =
        call(s.agent(Method::POST, "/v1/sessions/s1/proposals").json(&json!({"title": "Ship it @everyone", "steps": [{"step": "x"}]})))
            .await;
    assert_eq!(st, 201);
    let id = ApprovalId::parse(d["approval_id"].as_str().unwrap()).unwrap();

    // The card: embed + buttons + attachment, mentions disabled.
    let posted = fake.wait_for_count(WAIT, "POST", &format!("/channels/{CHANNEL}/messages"), 1).await;
    let card = posted.iter().find(|r| r.method == "POST" && r.path.contains(&format!("/channels/{CHANNEL}/messages"))).unwrap();
    let payload = card.json().expect("payload_json");
    assert_eq!(payload["allowed_mentions"]["parse"], json!([]));
    assert!(payload.to_string().contains(&encode(Button::Approve(id))));
    assert_eq!(card.files().len(), 1);
    // The clicks name the approval in their custom_id; the message id is only context.
    let message_id: u64 = 1_100_000_000_000_000_001;

    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s1/decision?wait=30")));
    // A stranger and a member of another guild are refused.
    fake.dispatch(
        "INTERACTION_CREATE",
        component_interaction(9001, "tok-1", APP, &actor(MALLORY, "mallory", GUILD), message_id, &encode(Button::Approve(id))),
    );
    fake.dispatch(
        "INTERACTION_CREATE",
        component_interaction(9002, "tok-2", APP, &actor(ALICE, "alice", 42), message_id, &encode(Button::Approve(id))),
    );
    let refusals = fake.wait_for_count(WAIT, "POST", "/callback", 2).await;
    let texts: Vec<String> = refusals
        .iter()
        .filter(|r| r.path.contains("/callback"))
        .map(|r| r.json().unwrap_or_default()["data"]["content"].as_str().unwrap_or("").to_string())
        .collect();
    // The refusal names the user in the config's form, to paste into approvers.
    assert!(texts.iter().any(|t| t.starts_with("You are not an approver for this plan.") && t.contains("\"discord:")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("not allowed")), "{texts:?}");

    // The approver decides; the agent is released and the card edited.
    fake.dispatch(
        "INTERACTION_CREATE",
        component_interaction(9003, "tok-3", APP, &actor(ALICE, "alice", GUILD), message_id, &encode(Button::Approve(id))),
    );
    let (_, decision) = waiter.await.unwrap();
    assert_eq!((decision["status"].as_str(), decision["decided_by"].as_str()), (Some("approved"), Some("discord:@alice")));
    let edits = fake.wait_for_count(WAIT, "PATCH", &format!("/channels/{CHANNEL}/messages/"), 1).await;
    let edit = edits.iter().find(|r| r.method == "PATCH").unwrap();
    let body = edit.json().unwrap_or_default();
    assert_eq!(body["components"], json!([]));
    assert!(body.to_string().contains("Approved v1"), "{body}");
}
