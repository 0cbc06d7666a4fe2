//! Telegram end to end: the real `plangate` binary with the real teloxide
//! client against the loopback fake Bot API. A tap on a phone reaches the
//! engine, the decision reaches the waiting agent, every card is edited, and
//! the audit says who did it.

use super::kit::{approval_id, call, propose, telegram_section, tg_user};
use plangate_engine::codec::{encode, Button};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::{FakeTelegram, Recorded};
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
pub(crate) const CHAT: i64 = -1001234567890;
pub(crate) const ALICE: i64 = 111111;
const MALLORY: i64 = 666;
const WAIT: Duration = Duration::from_secs(15);

pub(crate) fn config(fake: &FakeTelegram) -> String {
    format!(
        r#"
{}
[destinations.ops]
channel = "telegram"
chat = "{CHAT}"
approvers = ["telegram:{ALICE}"]
"#,
        telegram_section(fake)
    )
}

/// The real binary with a Telegram destination `ops` (approver: alice).
pub(crate) async fn start(fake: &FakeTelegram) -> ServerProcess {
    ServerProcess::start_with(BIN, &["ops"], &config(fake)).await
}

/// The card message id of the n-th (1-based) `sendMessage` with a keyboard.
async fn card_message(fake: &FakeTelegram, n: usize) -> (Recorded, i64) {
    let sent = fake
        .wait_for(WAIT, |reqs| {
            let cards: Vec<_> = reqs.iter().filter(|r| r.method == "sendMessage" && r.keyboard().is_some()).cloned().collect();
            cards.get(n - 1).cloned()
        })
        .await;
    let id = sent.message_id_sent().expect("message id of the card");
    (sent, id)
}

#[tokio::test]
async fn approve_from_a_phone_releases_the_agent_and_edits_the_card() {
    let fake = FakeTelegram::start().await;
    let s = start(&fake).await;
    let d =
        propose(&s, "s1", &json!({"title": "Add retries <now> & then", "steps": [{"step": "Read the client"}, {"step": "Add backoff"}]}))
            .await;
    let id = approval_id(&d);

    // The card: HTML-escaped, with its buttons (Edit last) carrying the codec's data.
    let (card, card_id) = card_message(&fake, 1).await;
    assert_eq!(card.chat_id(), Some(CHAT));
    assert_eq!(card.str("parse_mode"), "HTML");
    assert!(card.str("text").contains("Add retries &lt;now&gt; &amp; then"), "{}", card.str("text"));
    let keyboard = card.keyboard().unwrap();
    let data: Vec<String> = keyboard.iter().flatten().map(|(_, d)| d.clone()).collect();
    assert_eq!(
        data,
        vec![
            encode(Button::Approve(id)),
            encode(Button::ApproveWithNote(id)),
            encode(Button::RequestChanges(id)),
            encode(Button::Claim(id)),
            encode(Button::Cancel(id)),
            encode(Button::View(id)),
            encode(Button::Edit(id))
        ]
    );
    // The document replies to the card and carries the whole plan.
    let doc = fake.wait_call("sendDocument", 1, WAIT).await;
    assert_eq!(doc.reply_to(), Some(card_id));

    // A long-polling agent…
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s1/decision?wait=30")));

    // …is not released by a stranger's tap: refused, audited.
    fake.push_update(fake.callback_update(CHAT, card_id, tg_user(MALLORY, "mallory"), &encode(Button::Approve(id))));
    let refusal = fake.wait_call("answerCallbackQuery", 1, WAIT).await;
    let refused = refusal.str("text");
    assert!(refused.starts_with("You are not an approver for this plan."), "{refused}");
    // Its ids in the exact form the config wants (the toast's 200-character limit holds).
    assert!(refused.contains(&format!("\"telegram:{MALLORY}\"")) && refused.contains(&format!("chat = \"{CHAT}\"")), "{refused}");
    assert!(refused.chars().count() <= 200, "{refused}");

    // The approver's tap decides.
    fake.push_update(fake.callback_update(CHAT, card_id, tg_user(ALICE, "alice"), &encode(Button::Approve(id))));
    let toast = fake.wait_call("answerCallbackQuery", 2, WAIT).await;
    assert!(toast.str("text").starts_with("✅ Approved v1 by telegram:@alice"), "{}", toast.str("text"));
    let (st, decision) = waiter.await.unwrap();
    assert_eq!((st, decision["status"].as_str(), decision["decided_by"].as_str()), (200, Some("approved"), Some("telegram:@alice")));

    // The card is edited in place to the receipt, keyboard removed.
    let edit = fake.wait_request("editMessageText", WAIT, |r| r.str("text").contains("Approved v1")).await;
    assert_eq!(edit.field("message_id"), &json!(card_id));
    assert_eq!(edit.field("reply_markup"), &json!({"inline_keyboard": []}));

    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?session=s1")).await;
    let lines: Vec<String> =
        audit.as_array().unwrap().iter().map(|e| format!("{} {}", e["actor"].as_str().unwrap(), e["action"].as_str().unwrap())).collect();
    assert!(lines.contains(&format!("telegram:{MALLORY} refused")), "{lines:?}");
    assert!(lines.contains(&"telegram:@alice approve".to_string()), "{lines:?}");
    println!("APPROVE:\n{}", fake.actions().iter().map(|r| format!("{} {}", r.method, r.body)).collect::<Vec<_>>().join("\n"));
}

#[tokio::test]
async fn revise_by_force_reply_stale_taps_and_restart_without_replays() {
    let fake = FakeTelegram::start().await;
    let mut s = start(&fake).await;
    let v1 = approval_id(&propose(&s, "s2", &json!({"title": "First", "steps": [{"step": "one"}]})).await);
    let (_, card1) = card_message(&fake, 1).await;

    // Request changes → ForceReply prompt → the reply is the feedback.
    fake.push_update(fake.callback_update(CHAT, card1, tg_user(ALICE, "alice"), &encode(Button::RequestChanges(v1))));
    let prompt = fake.wait_request("sendMessage", WAIT, |r| r.field("reply_markup")["force_reply"] == json!(true)).await;
    let prompt_id = prompt.message_id_sent().unwrap();
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s2/decision?wait=30")));
    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "split step one", Some(prompt_id)));
    let (_, decision) = waiter.await.unwrap();
    assert_eq!((decision["status"].as_str(), decision["feedback"].as_str()), (Some("rejected"), Some("split step one")));
    assert!(decision["injection"].as_str().unwrap().contains("> split step one"));

    // v2, then v3 supersedes v2; a tap on v2's card is stale and changes nothing.
    let v2 = approval_id(&propose(&s, "s2", &json!({"title": "Second"})).await);
    let (_, card2) = card_message(&fake, 2).await;
    propose(&s, "s2", &json!({"title": "Third"})).await;
    fake.wait_request("editMessageText", WAIT, |r| r.field("message_id") == &json!(card2) && r.str("text").contains("Superseded by v3"))
        .await;
    let before = fake.calls("answerCallbackQuery").len();
    fake.push_update(fake.callback_update(CHAT, card2, tg_user(ALICE, "alice"), &encode(Button::Approve(v2))));
    let stale = fake.wait_call("answerCallbackQuery", before + 1, WAIT).await;
    assert_eq!(stale.str("text"), "This plan was superseded by v3.");
    let (_, d) = call(s.agent(Method::GET, "/v1/sessions/s2/decision")).await;
    assert_eq!((d["version"].as_u64(), d["status"].as_str()), (Some(3), Some("pending")));

    // /plan commands work as messages.
    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "/plan status", None));
    fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains("demo/s2") && r.str("text").contains("plan mode")).await;

    // Restart: update ids already handled are not handled again.
    let answered = fake.calls("answerCallbackQuery").len();
    let handled_before: usize = fake.actions().len();
    s.kill9().await;
    s.restart().await;
    fake.wait_for(WAIT, |reqs| (reqs.iter().filter(|r| r.method == "getUpdates").count() > 0).then_some(())).await;
    // Give the new poller a couple of polls, then check nothing was replayed.
    let polls = fake.calls("getUpdates").len();
    fake.wait_for(WAIT, |reqs| (reqs.iter().filter(|r| r.method == "getUpdates").count() >= polls + 2).then_some(())).await;
    assert_eq!(fake.calls("answerCallbackQuery").len(), answered, "old callbacks were answered again");
    let new_actions: Vec<String> = fake.actions()[handled_before..].iter().map(|r| r.method.clone()).collect();
    assert!(!new_actions.iter().any(|m| m == "editMessageText" || m == "answerCallbackQuery"), "{new_actions:?}");
}

/// The agent stops while its plan waits: `POST …/stopping` answers `wait`
/// (the hook holds it for the decision); when that wait runs out too, the
/// open card gains the Agent line saying the decision reaches it when it
/// resumes, the audit says so once, and a new ask of the same plan (the
/// agent back, waiting) takes the line away. The card keeps its buttons.
#[tokio::test]
async fn a_card_says_when_its_agent_stopped_waiting_and_when_it_is_back() {
    let fake = FakeTelegram::start().await;
    let s = start(&fake).await;
    let plan = json!({"title": "Add retries", "steps": [{"step": "Read the client"}]});
    let id = approval_id(&propose(&s, "s1", &plan).await);
    let (_, card_id) = card_message(&fake, 1).await;
    let stopping = |body: serde_json::Value| crate::kit::call(s.agent(reqwest::Method::POST, "/v1/sessions/s1/stopping").json(&body));

    let (st, first) = stopping(json!({"last_message": "Waiting for approval."})).await;
    assert_eq!(st, 200, "{first}");
    assert_eq!(
        (first["decision"].as_str(), first["approval_id"].as_str(), first["version"].as_u64()),
        (Some("wait"), Some(id.to_string().as_str()), Some(1))
    );
    let (st, gave_up) = stopping(json!({"last_message": "Waiting for approval.", "waited_secs": 50})).await;
    assert_eq!((st, gave_up["decision"].as_str()), (200, Some("stop")), "{gave_up}");
    let left = fake
        .wait_request("editMessageText", WAIT, |r| {
            r.field("message_id") == &json!(card_id) && r.str("text").contains("stopped waiting after")
        })
        .await;
    assert!(left.str("text").contains("your decision reaches it when it resumes"), "{}", left.str("text"));
    assert!(left.keyboard().is_some(), "the open card lost its buttons: {}", left.str("text"));
    // A second give-up changes nothing.
    stopping(json!({"waited_secs": 50})).await;
    let audit = crate::kit::audit(&s, "session=s1").await;
    let left_audit: Vec<_> = audit.iter().filter(|e| e["action"] == "stopping").collect();
    assert_eq!(left_audit.len(), 1, "{left_audit:?}");
    assert!(left_audit[0]["detail"].as_str().unwrap_or_default().contains("stopped after waiting 50 s"), "{left_audit:?}");

    // Back: the same plan asked again; the card no longer says it left.
    propose(&s, "s1", &plan).await;
    let back = fake
        .wait_request("editMessageText", WAIT, |r| {
            r.field("message_id") == &json!(card_id) && r.str("text").contains("Add retries") && !r.str("text").contains("stopped waiting")
        })
        .await;
    assert!(back.keyboard().is_some());
}
