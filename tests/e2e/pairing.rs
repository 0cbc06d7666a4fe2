//! Pairing end to end (issue 31): `plangate pair` prints a code, `/plan
//! pair CODE` in a chat makes it a destination with its sender as the
//! approver, approvers add and remove each other in the chat, and the
//! pairing survives a restart — through the real binary, its CLI and the
//! platform fakes. The attacks on it are `sec_pair`.

use super::kit::{approval_id, audit, call, operator_cli, pair_code, plan, propose, say, slack_section, telegram_section, tg_user};
use plangate_engine::codec::{encode, Button};
use plangate_testkit::discord::{command_interaction, component_interaction, plan_subcommand, Actor, DiscordFake};
use plangate_testkit::pg::{start_replicas, TestSchema};
use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::slack::{block_actions, slash_command, SlackFake};
use plangate_testkit::telegram::{FakeTelegram, Recorded};
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const CHAT: i64 = -1007770001;
const ALICE: i64 = 111;
const BOB: i64 = 222;

/// The n-th (1-based) card (a `sendMessage` with buttons) in `chat`.
async fn card_in(fake: &FakeTelegram, chat: i64, n: usize) -> Recorded {
    fake.wait_for(WAIT, |reqs| {
        let cards: Vec<_> =
            reqs.iter().filter(|r| r.method == "sendMessage" && r.keyboard().is_some() && r.chat_id() == Some(chat)).collect();
        cards.get(n - 1).map(|r| (*r).clone())
    })
    .await
}

/// Tap Approve on card `card` as `user`; the toast.
async fn tap_approve(fake: &FakeTelegram, card: &Recorded, id: plangate_engine::ApprovalId, user: serde_json::Value) -> String {
    let before = fake.calls("answerCallbackQuery").len();
    let message = card.message_id_sent().expect("the card's message id");
    fake.push_update(fake.callback_update(CHAT, message, user, &encode(Button::Approve(id))));
    fake.wait_call("answerCallbackQuery", before + 1, WAIT).await.str("text")
}

#[tokio::test]
async fn a_paired_telegram_chat_receives_cards_its_approvers_decide_and_it_survives_a_restart() {
    let fake = FakeTelegram::start().await;
    // No destination in the config at all: the chat comes from pairing.
    let mut s = ServerProcess::start(BIN, &telegram_section(&fake)).await;

    let code = pair_code(&s, "telegram", &[]).await;
    let said = say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "Paired").await;
    assert!(said.contains("destination demo-telegram of agent demo"), "{said}");
    assert!(said.contains(&format!("telegram:{ALICE}")), "{said}");

    // A card of the paired agent reaches the chat with buttons; alice decides.
    let id = approval_id(&propose(&s, "p1", &plan("Paired plan", &["one"])).await);
    let first = card_in(&fake, CHAT, 1).await;
    assert!(tap_approve(&fake, &first, id, tg_user(BOB, "bob")).await.starts_with("You are not an approver"));
    assert!(tap_approve(&fake, &first, id, tg_user(ALICE, "alice")).await.starts_with("✅ Approved v1 by telegram:@alice"));

    // Alice adds bob by replying to his message.
    let bobs = fake.message_update(CHAT, tg_user(BOB, "bob"), "hi, I review too", None);
    let bobs_message = bobs["message"]["message_id"].as_i64().expect("a message id");
    fake.push_update(bobs);
    let before = fake.calls("sendMessage").len();
    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "/plan approvers add", Some(bobs_message)));
    let added = fake
        .wait_for(WAIT, |reqs| {
            let sent: Vec<_> = reqs.iter().filter(|r| r.method == "sendMessage").collect();
            sent.get(before..).unwrap_or_default().iter().find(|r| r.str("text").contains("Added")).map(|r| r.str("text"))
        })
        .await;
    assert!(added.contains(&format!("telegram:{BOB}")) && added.contains("by telegram:@\u{2060}alice"), "{added}");
    let listed = say(&fake, CHAT, tg_user(BOB, "bob"), "/plan approvers", "Approvers of this chat").await;
    // By the names Telegram gave them, beside their ids.
    assert!(
        listed.contains(&format!("demo-telegram (agent demo, paired): @\u{2060}alice (telegram:{ALICE}), @\u{2060}bob (telegram:{BOB})")),
        "{listed}"
    );

    // Bob removes alice; she can no longer decide, he can.
    let removed = say(&fake, CHAT, tg_user(BOB, "bob"), &format!("/plan approvers remove telegram:{ALICE}"), "Removed").await;
    assert!(removed.contains(&format!("are now telegram:{BOB}")), "{removed}");
    let id2 = approval_id(&propose(&s, "p2", &plan("Second", &["two"])).await);
    let second = card_in(&fake, CHAT, 2).await;
    assert!(tap_approve(&fake, &second, id2, tg_user(ALICE, "alice")).await.starts_with("You are not an approver"));

    // `plangate destinations` lists it; a restart keeps it.
    let (code_, listed, _) = operator_cli(&s, &["destinations"]).await;
    assert_eq!(code_, 0);
    assert!(listed.contains(&format!("demo-telegram  paired  telegram {CHAT}  agents: demo  approvers: telegram:{BOB}")), "{listed}");
    s.restart().await;
    assert!(tap_approve(&fake, &second, id2, tg_user(BOB, "bob")).await.starts_with("✅ Approved v1 by telegram:@bob"));
    let _id3 = approval_id(&propose(&s, "p3", &plan("After restart", &["three"])).await);
    card_in(&fake, CHAT, 3).await;

    // `config check` asks the running server for them (its address from the environment here).
    let out = tokio::process::Command::new(BIN)
        .args(["config", "check", "--config"])
        .arg(s.config_path())
        .env("PLANGATE__SERVER__BIND", s.base.trim_start_matches("http://"))
        .output()
        .await
        .expect("config check ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("paired destinations (the server at") && stderr.contains("demo-telegram  paired"), "{stderr}");

    // Removed: the next plan has nowhere to go.
    let (code_, out, err) = operator_cli(&s, &["destinations", "remove", "demo-telegram"]).await;
    assert_eq!(code_, 0, "{out}{err}");
    let (code_, _, err) = operator_cli(&s, &["destinations", "remove", "demo-telegram"]).await;
    assert_eq!(code_, 2);
    assert!(err.contains("no paired destination is named demo-telegram"), "{err}");
    propose(&s, "p4", &plan("Nowhere", &["four"])).await;
    eventually(WAIT, "the card recorded, not posted", || async {
        audit(&s, "session=p4").await.iter().any(|e| e["action"] == "card_recorded")
    })
    .await;

    let actions: Vec<String> = audit(&s, "agent=demo&session=-").await.iter().map(|e| e["action"].as_str().unwrap().to_string()).collect();
    for expected in ["pairing_code", "destination_paired", "approvers_changed", "destination_removed"] {
        assert!(actions.iter().any(|a| a == expected), "{expected} in {actions:?}");
    }
    let (st, _) = call(s.operator(Method::GET, "/v1/operator/destinations")).await;
    assert_eq!(st, 200);
}

/// The first `chat.postMessage` to channel C9 whose body contains `needle`, as JSON text.
async fn slack_posted(slack: &SlackFake, needle: &str) -> String {
    let found = |reqs: &[plangate_testkit::slack::Recorded]| {
        reqs.iter()
            .find(|r| r.path.ends_with("chat.postMessage") && r.json()["channel"] == "C9" && r.json().to_string().contains(needle))
            .map(|r| r.json().to_string())
    };
    found(&slack.wait_for(WAIT, |reqs| found(reqs).is_some()).await).unwrap_or_default()
}

#[tokio::test]
async fn on_slack_approvers_are_added_by_mention_and_decide() {
    let slack = SlackFake::start().await;
    let s = ServerProcess::start(BIN, &slack_section(&slack)).await;
    slack.wait_connected(WAIT).await;
    let code = pair_code(&s, "slack", &["--name", "reviews"]).await;
    slack.send_envelope("slash_commands", slash_command("U1", "alice", "C9", &format!("pair {code}"), "t-1", &slack.response_url("pair")));
    // Said in the channel, for everyone there to see.
    let said = slack_posted(&slack, "Paired").await;
    assert!(said.contains("destination reviews of agent demo"), "{said}");

    // A mention names the person: Slack sends it as <@U2|bob>.
    slack.send_envelope("slash_commands", slash_command("U1", "alice", "C9", "approvers add <@U2|bob>", "t-2", &slack.response_url("add")));
    let added = slack_posted(&slack, "Added").await;
    assert!(added.contains("Added slack:U2") && added.contains("are now slack:U1, slack:U2"), "{added}");

    // Bob's click on the card decides.
    let id = approval_id(&propose(&s, "sl1", &plan("Slack paired", &["x"])).await);
    slack_posted(&slack, "Slack paired").await;
    // The card's ts: the thread its document was uploaded into.
    let uploads = slack.wait_for(WAIT, |reqs| reqs.iter().any(|r| r.path.ends_with("files.completeUploadExternal"))).await;
    let card_ts = uploads
        .iter()
        .find(|r| r.path.ends_with("files.completeUploadExternal"))
        .and_then(|r| r.json()["thread_ts"].as_str().map(str::to_string))
        .expect("the card's ts");
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/sl1/decision?wait=30")));
    slack.send_envelope(
        "interactive",
        block_actions("U2", "bob", "C9", &card_ts, &encode(Button::Approve(id)), "2.000001", &slack.response_url("click")),
    );
    let (_, d) = waiter.await.unwrap();
    assert_eq!((d["status"].as_str(), d["decided_by"].as_str()), (Some("approved"), Some("slack:@bob")));
}

/// Whether replica `s` decides with paired destination `name` (the list's `in_use`).
async fn in_use(s: &ServerProcess, name: &str) -> bool {
    let (_, list) = call(s.operator(Method::GET, "/v1/operator/destinations")).await;
    list.as_array().into_iter().flatten().any(|d| d["name"] == name && d["in_use"] == true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_chat_paired_through_one_replica_gets_the_cards_every_replica_posts() {
    let Some(pg) = TestSchema::create_or_skip().await else { return };
    let fake = FakeTelegram::start().await;
    let rs = start_replicas(BIN, 2, &pg, &[], &telegram_section(&fake)).await;
    let code = pair_code(&rs[0], "telegram", &[]).await;
    // The code is made on one replica; whichever polls Telegram takes it.
    say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "Paired").await;
    for (i, r) in rs.iter().enumerate() {
        eventually(WAIT, "the pairing notified to every replica", || in_use(r, "demo-telegram")).await;
        let id = approval_id(&propose(r, &format!("rep{i}"), &plan(&format!("From replica {i}"), &["x"])).await);
        let posted = card_in(&fake, CHAT, i + 1).await;
        assert!(tap_approve(&fake, &posted, id, tg_user(ALICE, "alice")).await.starts_with("✅ Approved v1"));
    }
}

const DISCORD_APP: u64 = 700_000_000_000_000_017;
const GUILD: u64 = 800_000_000_000_000_018;
const CHANNEL: u64 = 600_000_000_000_000_016;
const DALICE: u64 = 500_000_000_000_000_011;
const DBOB: u64 = 500_000_000_000_000_012;

fn discord_actor(user_id: u64, name: &str) -> Actor {
    Actor { user_id, username: name.into(), guild_id: Some(GUILD), channel_id: CHANNEL }
}

/// The answer to interaction `token` (its callback, or the later edit of
/// the original response) once it contains `needle`.
async fn discord_said(fake: &DiscordFake, token: &str, needle: &str) -> String {
    let text_of = |r: &plangate_testkit::discord::Recorded| r.json().map(|v| v.to_string()).unwrap_or_default();
    let reqs = fake.wait_for(WAIT, needle, |reqs| reqs.iter().any(|r| r.path.contains(token) && text_of(r).contains(needle))).await;
    reqs.iter().find(|r| r.path.contains(token) && text_of(r).contains(needle)).map(text_of).unwrap_or_default()
}

#[tokio::test]
async fn on_discord_the_pair_command_and_a_user_option_add_an_approver_who_decides() {
    let fake = DiscordFake::start(DISCORD_APP).await;
    let extra = format!(
        "[discord]\nbot_token = \"discord-test-token\"\napplication_id = \"{DISCORD_APP}\"\napi_url = \"{}\"\nguild_id = \"{GUILD}\"\n",
        fake.base
    );
    let s = ServerProcess::start(BIN, &extra).await;
    fake.wait_identified(WAIT).await;
    let code = pair_code(&s, "discord", &[]).await;
    let pair = plan_subcommand("pair", &[("code", &code)]);
    fake.dispatch("INTERACTION_CREATE", command_interaction(9101, "tok-pair", DISCORD_APP, &discord_actor(DALICE, "alice"), "plan", pair));
    let said = discord_said(&fake, "tok-pair", "Paired").await;
    assert!(said.contains("destination demo-discord of agent demo"), "{said}");

    // Discord's user option: the platform resolved the mention to an id.
    let add = json!([{"name": "approvers", "type": 1, "options": [
        {"name": "action", "type": 3, "value": "add"},
        {"name": "user", "type": 6, "value": DBOB.to_string()}
    ]}]);
    fake.dispatch("INTERACTION_CREATE", command_interaction(9102, "tok-add", DISCORD_APP, &discord_actor(DALICE, "alice"), "plan", add));
    let said = discord_said(&fake, "tok-add", "Added").await;
    assert!(said.contains(&format!("discord:{DALICE}, discord:{DBOB}")), "{said}");

    let id = approval_id(&propose(&s, "dc1", &plan("Discord paired", &["x"])).await);
    fake.wait_for_count(WAIT, "POST", &format!("/channels/{CHANNEL}/messages"), 1).await;
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/dc1/decision?wait=30")));
    let click = component_interaction(
        9103,
        "tok-click",
        DISCORD_APP,
        &discord_actor(DBOB, "bob"),
        1_100_000_000_000_000_001,
        &encode(Button::Approve(id)),
    );
    fake.dispatch("INTERACTION_CREATE", click);
    let (_, d) = waiter.await.unwrap();
    assert_eq!((d["status"].as_str(), d["decided_by"].as_str()), (Some("approved"), Some("discord:@bob")));
}
