//! Claims through the real binary: an approver taps Claim on Telegram, the
//! card names them, nobody is reminded while the claim holds, and the
//! reminder goes out once it runs out (#52).

use super::kit::{approval_id, audit_actions, call, plan, propose, say, telegram_section, tg_user};
use plangate_engine::codec::{encode, Button};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const CHAT: i64 = -1009990001;
const ALICE: i64 = 111;
const BOB: i64 = 222;
const MALLORY: i64 = 666;
const WAIT: Duration = Duration::from_secs(15);

/// Reminders 10 s and 20 s after a proposal; a claim holds 60 s. The
/// clock the test turns also runs on by itself, so the margins are seconds
/// wide: a slow machine never makes a claim run out early.
fn config(fake: &FakeTelegram) -> String {
    format!(
        r#"
[approvals]
nudges = ["10s", "20s"]
timeout = "300s"
claim_timeout = "60s"

{}
[destinations.ops]
channel = "telegram"
chat = "{CHAT}"
approvers = ["telegram:{ALICE}", "telegram:{BOB}"]
"#,
        telegram_section(fake)
    )
}

/// Whether the fake was asked to send a reminder about the plan `title`.
fn reminded(fake: &FakeTelegram, title: &str) -> bool {
    let needle = format!("⏰ Plan '{title}'");
    fake.calls("sendMessage").iter().any(|r| r.str("text").contains(&needle))
}

#[tokio::test]
async fn a_claim_on_telegram_names_the_claimer_and_holds_every_reminder_until_it_runs_out() {
    let fake = FakeTelegram::start().await;
    let mut s = ServerProcess::start_with(BIN, &["ops"], &config(&fake)).await;
    let id = approval_id(&propose(&s, "claimed", &plan("Claimed", &["one"])).await);
    let card = fake.wait_request("sendMessage", WAIT, |r| r.keyboard().is_some() && r.str("text").contains("Claimed")).await;
    let card_id = card.message_id_sent().expect("the card's message id");
    // The card carries the Claim button with the codec's data.
    let buttons: Vec<String> = card.keyboard().unwrap().into_iter().flatten().map(|(_, data)| data).collect();
    assert!(buttons.contains(&encode(Button::Claim(id))), "{buttons:?}");

    // A stranger's Claim is refused, as any decision of theirs is, and audited.
    fake.push_update(fake.callback_update(CHAT, card_id, tg_user(MALLORY, "mallory"), &encode(Button::Claim(id))));
    let refused = fake.wait_call("answerCallbackQuery", 1, WAIT).await;
    assert!(refused.str("text").starts_with("You are not an approver for this plan."), "{}", refused.str("text"));

    // Alice claims it: told until when, and the card names her.
    fake.push_update(fake.callback_update(CHAT, card_id, tg_user(ALICE, "alice"), &encode(Button::Claim(id))));
    let toast = fake.wait_call("answerCallbackQuery", 2, WAIT).await;
    assert!(toast.str("text").starts_with("Claimed v1"), "{}", toast.str("text"));
    let edit = fake
        .wait_request("editMessageText", WAIT, |r| r.field("message_id") == &json!(card_id) && r.str("text").contains("🙋 Claimed by"))
        .await;
    // (Telegram's card keeps an `@` from becoming a mention with a word joiner.)
    assert!(edit.str("text").contains("🙋 Claimed by telegram:@\u{2060}alice until"), "{}", edit.str("text"));
    assert!(edit.keyboard().is_some_and(|k| !k.is_empty()), "still open: the buttons stay");

    // Bob's typed claim is refused while hers holds, naming her.
    let said = say(&fake, CHAT, tg_user(BOB, "bob"), "/plan claim demo/claimed", "claimed v1").await;
    assert!(said.starts_with("telegram:@\u{2060}alice claimed v1 until"), "{said}");

    // A plan nobody claimed, proposed 15 s later: its reminders (25 s and
    // 35 s on the turned clock) fall after the claimed plan's own would
    // have (10 s and 20 s), and the scheduler fires due timers in order, so
    // once this one's reminder is out, a reminder about the claimed plan
    // would have gone out before it.
    s.advance_clock(15_000).await;
    propose(&s, "control", &plan("Control", &["two"])).await;
    s.advance_clock(25_000).await;
    fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains("⏰ Plan 'Control'")).await;
    assert!(!reminded(&fake, "Claimed"), "a reminder went out while the plan was claimed");
    let actions = audit_actions(&s, "claimed").await;
    assert!(actions.contains(&"claim".to_string()) && !actions.contains(&"nudge".to_string()), "{actions:?}");

    // The claim runs out (60 s after it was made): the held reminders go
    // out as one, and the card no longer names her.
    s.advance_clock(20_000).await;
    let nudge = fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains("⏰ Plan 'Claimed'")).await;
    assert!(nudge.str("text").contains("reminder 2"), "{}", nudge.str("text"));
    assert_eq!(fake.calls("sendMessage").iter().filter(|r| r.str("text").contains("⏰ Plan 'Claimed'")).count(), 1);
    fake.wait_request("editMessageText", WAIT, |r| {
        r.field("message_id") == &json!(card_id) && r.str("text").contains("Claimed") && !r.str("text").contains("🙋")
    })
    .await;
    let actions = audit_actions(&s, "claimed").await;
    let ladder: Vec<&str> = actions.iter().map(String::as_str).filter(|a| ["claim", "claim_expired", "nudge"].contains(a)).collect();
    assert_eq!(ladder, ["claim", "claim_expired", "nudge"], "{actions:?}");

    // The operator API claims as well (`"action": "claim"`).
    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "claim", "actor": "ops"}))).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("pending")), "{d}");
    let actions = audit_actions(&s, "claimed").await;
    assert_eq!(actions.last().map(String::as_str), Some("claim"), "{actions:?}");
}
