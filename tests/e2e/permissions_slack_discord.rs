//! Permission requests on Slack and Discord, through the real binary and
//! the real client crates against their fakes: the same card and graded
//! buttons as on Telegram, a stranger's click refused, an approver's
//! answer reaching the waiting hook, and every card edited to the outcome.

use super::kit::slack_section;
use super::permissions::{ask_bash, outcome, qid, release};
use plangate_engine::codec::{encode, Button};
use plangate_testkit::discord::{component_interaction, Actor, DiscordFake};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::slack::{block_actions, slash_command, SlackFake};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(20);
const APP: u64 = 700_000_000_000_000_017;
const GUILD: u64 = 800_000_000_000_000_018;
const CHANNEL: u64 = 600_000_000_000_000_016;
const DALICE: u64 = 500_000_000_000_000_011;

fn values(post: &serde_json::Value) -> Vec<(String, String)> {
    post["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().into_iter().flatten())
        .map(|e| (e["text"]["text"].as_str().unwrap_or_default().to_string(), e["value"].as_str().unwrap_or_default().to_string()))
        .collect()
}

#[tokio::test]
async fn a_permission_card_on_slack_and_discord_answered_in_slack_edits_both() {
    let slack = SlackFake::start().await;
    let discord = DiscordFake::start(APP).await;
    let extra = format!(
        r#"{}
[discord]
bot_token = "discord-test-token"
application_id = "{APP}"
api_url = "{base}"
guild_id = "{GUILD}"

[destinations.sl]
channel = "slack"
chat = "C1"
approvers = ["slack:U1"]

[destinations.dc]
channel = "discord"
chat = "{CHANNEL}"
approvers = ["discord:{DALICE}"]
"#,
        slack_section(&slack),
        base = discord.base
    );
    let s = ServerProcess::start_with(BIN, &["sl", "dc"], &extra).await;
    slack.wait_connected(WAIT).await;
    discord.wait_identified(WAIT).await;
    release(&s, "s1").await;
    let (st, v) = ask_bash(&s, "s1", "git push --force origin main").await;
    assert_eq!(st, 201, "{v}");
    let (id, q) = qid(&v);

    // Slack: the card with the risk line and the graded buttons.
    let posts = slack.wait_calls("chat.postMessage", 1, WAIT).await;
    let post = posts[0].json();
    let text = post["blocks"].to_string();
    assert!(text.contains("Permission request from demo/s1: Bash") && text.contains("rewrites or deletes a remote's history"), "{text}");
    let buttons = values(post);
    let labels: Vec<&str> = buttons.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["Allow once", "Allow for this session", "Always allow", "Deny", "Deny with a reason…"]);
    assert_eq!(buttons[2].1, encode(Button::Answer(q, 2)));
    let ts = post["ts"].as_str().unwrap_or("1.0").to_string();
    // Discord: the same card, the same buttons.
    let dc_posts = discord.wait_for_count(WAIT, "POST", &format!("/channels/{CHANNEL}/messages"), 1).await;
    let dc_card = dc_posts.iter().find(|r| r.method == "POST" && r.path.contains(&format!("/channels/{CHANNEL}/messages"))).unwrap();
    let payload = dc_card.json().expect("payload").to_string();
    assert!(payload.contains("Permission request from demo/s1: Bash") && payload.contains(&encode(Button::Answer(q, 1))), "{payload}");
    assert!(payload.contains("Deny with a reason…"), "{payload}");

    // A stranger's click in Slack is refused; Discord's approver is not
    // Slack's, and a stranger on Discord is refused too.
    slack.send_envelope(
        "interactive",
        block_actions("U9", "mallory", "C1", &ts, &encode(Button::Answer(q, 0)), "1.1", &slack.response_url("r0")),
    );
    let stranger = Actor { user_id: 500_000_000_000_000_666, username: "mallory".into(), guild_id: Some(GUILD), channel_id: CHANNEL };
    discord.dispatch("INTERACTION_CREATE", component_interaction(9101, "tok-1", APP, &stranger, 1, &encode(Button::Answer(q, 0))));
    discord.wait_for_count(WAIT, "POST", "/callback", 1).await;
    assert_eq!(outcome(&s, "s1", &id, 1).await["status"], "pending");

    // The Slack approver: Always allow. The waiting hook gets it; both cards say so.
    slack.send_envelope(
        "interactive",
        block_actions("U1", "alice", "C1", &ts, &encode(Button::Answer(q, 2)), "1.2", &slack.response_url("r1")),
    );
    let got = outcome(&s, "s1", &id, 10).await;
    assert_eq!(got["outcome"]["answer"]["grade"], "always", "{got}");
    slack
        .wait_for(WAIT, |reqs| {
            reqs.iter().any(|r| r.path.ends_with("chat.update") && r.json().to_string().contains("Always allowed by slack:"))
        })
        .await;
    discord
        .wait_for(WAIT, "the Discord card edited", |reqs| {
            reqs.iter().any(|r| r.method == "PATCH" && r.json().is_some_and(|j| j.to_string().contains("Always allowed by slack:")))
        })
        .await;

    // `/plan rules` in Slack lists the stored rule.
    slack.send_envelope("slash_commands", slash_command("U1", "alice", "C1", "rules", "trig-1", &slack.response_url("r2")));
    slack
        .wait_for(WAIT, |reqs| reqs.iter().any(|r| r.json().to_string().contains("always allow Bash(git push --force origin main)")))
        .await;
    let (st, v) = ask_bash(&s, "s2", "git push --force origin main").await;
    assert_eq!(st, 200, "s2 is not released: the gate still decides first: {v}");
    assert_eq!(v["decision"], "deny", "{v}");
}
