//! Permission requests end to end: the real `plangate` binary relays a
//! harness's dialog to the Telegram fake, a person answers with a graded
//! button or `/plan` text, the waiting hook's long-poll gets it, and the
//! card says what happened.

use super::kit::{call, say, telegram_section, tg_user};
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::{FakeTelegram, Recorded};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
pub(crate) const CHAT: i64 = -1001234500001;
pub(crate) const ALICE: i64 = 111;
pub(crate) const MALLORY: i64 = 666;
const WAIT: Duration = Duration::from_secs(15);

pub(crate) async fn start_permissions(fake: &FakeTelegram, extra: &str) -> ServerProcess {
    let config = format!(
        "{}\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{CHAT}\"\napprovers = [\"telegram:{ALICE}\"]\n{extra}",
        telegram_section(fake)
    );
    ServerProcess::start_with(BIN, &["ops"], &config).await
}

/// Release `session` (operator), so the gate lets mutations through and
/// the harness's own dialogs are what is left.
pub(crate) async fn release(s: &ServerProcess, session: &str) {
    let (st, v) =
        call(s.operator(Method::POST, &format!("/v1/operator/sessions/demo/{session}/release")).json(&json!({"actor": "ops"}))).await;
    assert_eq!(st, 200, "{v}");
}

/// The hook's request: `POST /v1/sessions/{session}/permissions`.
pub(crate) async fn ask(s: &ServerProcess, session: &str, tool: &str, input: Value) -> (u16, Value) {
    call(s.agent(Method::POST, &format!("/v1/sessions/{session}/permissions")).json(&json!({"tool": tool, "input": input}))).await
}

pub(crate) async fn ask_bash(s: &ServerProcess, session: &str, command: &str) -> (u16, Value) {
    ask(s, session, "Bash", json!({"command": command})).await
}

/// What the waiting hook gets: the request after at most `wait` s.
pub(crate) async fn outcome(s: &ServerProcess, session: &str, id: &str, wait: u64) -> Value {
    let (st, v) = call(s.agent(Method::GET, &format!("/v1/sessions/{session}/permissions/{id}?wait={wait}"))).await;
    assert_eq!(st, 200, "{v}");
    v
}

/// The n-th (1-based) card with a keyboard, and its message id.
pub(crate) async fn card(fake: &FakeTelegram, n: usize) -> (Recorded, i64) {
    let sent =
        fake.wait_for(WAIT, |reqs| reqs.iter().filter(|r| r.method == "sendMessage" && r.keyboard().is_some()).nth(n - 1).cloned()).await;
    let id = sent.message_id_sent().expect("message id");
    (sent, id)
}

pub(crate) fn qid(v: &Value) -> (String, ApprovalId) {
    let id = v["question_id"].as_str().expect("question_id").to_string();
    let parsed = ApprovalId::parse(&id).expect("hex id");
    (id, parsed)
}

/// The text of the last edit of message `id`.
pub(crate) async fn edited(fake: &FakeTelegram, id: i64, needle: &str) -> String {
    fake.wait_for(WAIT, |reqs| {
        reqs.iter()
            .rev()
            .find(|r| r.method == "editMessageText" && r.field("message_id") == &json!(id) && r.str("text").contains(needle))
            .map(|r| r.str("text"))
    })
    .await
}

#[tokio::test]
async fn each_grade_answers_from_the_phone_and_the_card_says_so() {
    let fake = FakeTelegram::start().await;
    let s = start_permissions(&fake, "").await;
    release(&s, "s1").await;

    // A card with the command, its risk, the rule the wider answers grant,
    // and the graded buttons.
    let (st, v) = ask_bash(&s, "s1", "npm publish --tag next").await;
    assert_eq!((st, v["decision"].as_str()), (201, Some("ask")), "{v}");
    let (id, q) = qid(&v);
    let (sent, card1) = card(&fake, 1).await;
    let text = sent.str("text");
    for needle in
        ["Permission request from demo/s1: Bash", "publishes a package", "$ npm publish --tag next", "`Bash` with exactly this command"]
    {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
    let labels: Vec<String> = sent.keyboard().unwrap().into_iter().flatten().map(|(label, _)| label).collect();
    assert_eq!(labels, ["Allow once", "Allow for this session", "Always allow", "Deny", "Deny with a reason…"]);

    // Allow once: the hook's wait ends with it, the card says who.
    fake.push_update(fake.callback_update(CHAT, card1, tg_user(ALICE, "alice"), &encode(Button::Answer(q, 0))));
    let got = outcome(&s, "s1", &id, 10).await;
    assert_eq!(got["status"], "answered", "{got}");
    assert_eq!(got["outcome"]["answer"], json!({"answer": "allow", "grade": "once"}));
    assert!(edited(&fake, card1, "Allowed once by").await.contains("alice"));
    // …so the same command asks again.
    let (st, v) = ask_bash(&s, "s1", "npm publish --tag next").await;
    assert_eq!(st, 201, "{v}");
    let (id2, q2) = qid(&v);

    // Allow for this session: the next identical call needs nobody.
    let (_, card2) = card(&fake, 2).await;
    fake.push_update(fake.callback_update(CHAT, card2, tg_user(ALICE, "alice"), &encode(Button::Answer(q2, 1))));
    assert_eq!(outcome(&s, "s1", &id2, 10).await["outcome"]["answer"]["grade"], "session");
    let (st, v) = ask_bash(&s, "s1", "npm publish --tag next").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("allow")), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("this session's rules"), "{v}");
    // A different command still asks.
    let (st, v) = ask_bash(&s, "s1", "npm publish --tag latest").await;
    assert_eq!(st, 201, "{v}");
    let (id3, q3) = qid(&v);

    // Deny with a reason: a ForceReply prompt, the reply is the reason the model reads.
    let (_, card3) = card(&fake, 3).await;
    fake.push_update(fake.callback_update(CHAT, card3, tg_user(ALICE, "alice"), &encode(Button::AnswerOther(q3))));
    let prompt = fake.wait_request("sendMessage", WAIT, |r| r.field("reply_markup")["force_reply"] == json!(true)).await;
    assert!(prompt.str("text").contains("why Bash is denied"), "{}", prompt.str("text"));
    let prompt_id = prompt.message_id_sent().unwrap();
    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "use the next tag only on Fridays", Some(prompt_id)));
    let got = outcome(&s, "s1", &id3, 10).await;
    assert_eq!(got["outcome"]["answer"], json!({"answer": "deny", "reason": "use the next tag only on Fridays"}), "{got}");
    assert!(edited(&fake, card3, "Denied: use the next tag only on Fridays").await.contains("alice"));

    // Always allow, by text: a stored rule, listed, removable.
    let (st, v) = ask_bash(&s, "s2", "cargo publish").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("deny")), "s2 is not released: the gate decides first, no card: {v}");
    release(&s, "s2").await;
    let (st, v) = ask_bash(&s, "s2", "cargo publish").await;
    assert_eq!(st, 201, "{v}");
    let (id4, q4) = qid(&v);
    // Typed right after s1's request was denied, an answer without an id
    // could be meant for that card: it must name this one.
    let unsure = say(&fake, CHAT, tg_user(ALICE, "alice"), "/plan allow always", "Name the request").await;
    assert!(unsure.contains(&format!("/plan allow #{} always", q4.short())), "{unsure}");
    say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan allow #{} always", q4.short()), "always allowed").await;
    assert_eq!(outcome(&s, "s2", &id4, 10).await["outcome"]["answer"]["grade"], "always");
    let (st, v) = ask_bash(&s, "s1", "cargo publish").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("allow")), "always is for every session of the agent: {v}");
    let listed = say(&fake, CHAT, tg_user(ALICE, "alice"), "/plan rules", "always allow").await;
    assert!(listed.contains("1. demo · always allow Bash(cargo publish) — by telegram:111"), "{listed}");
    say(&fake, CHAT, tg_user(ALICE, "alice"), "/plan rules remove 1", "Removed").await;
    let (st, _) = ask_bash(&s, "s1", "cargo publish").await;
    assert_eq!(st, 201, "removed: it asks again");

    // The audit says who answered what, and which rule it made.
    let audit: Vec<String> =
        super::kit::audit(&s, "agent=demo").await.iter().map(|e| e["detail"].as_str().unwrap_or_default().to_string()).collect();
    assert!(audit.iter().any(|d| d.contains("Bash always allowed by telegram:111; always rule Bash(cargo publish)")), "{audit:?}");
    assert!(audit.iter().any(|d| d.contains("removed the always-allow rule Bash(cargo publish)")), "{audit:?}");
}

#[tokio::test]
async fn an_unanswered_request_expires_and_a_long_input_is_attached_whole() {
    let fake = FakeTelegram::start().await;
    let s = start_permissions(&fake, "").await;
    release(&s, "s1").await;
    let content: String = (1..=400).map(|n| format!("line {n}\n")).collect();
    let (st, v) = ask(&s, "s1", "Write", json!({"file_path": "notes.txt", "content": content})).await;
    assert_eq!(st, 201, "{v}");
    let (id, _) = qid(&v);
    let (sent, card1) = card(&fake, 1).await;
    assert!(sent.str("text").contains("the whole input is attached"), "{}", sent.str("text"));
    let doc = fake.wait_call("sendDocument", 1, WAIT).await;
    assert_eq!(doc.reply_to(), Some(card1));

    // Nobody answers: the long-poll ends pending, the hook lets it expire.
    assert_eq!(outcome(&s, "s1", &id, 1).await["status"], "pending");
    let (st, _) = call(s.agent(Method::POST, &format!("/v1/sessions/s1/permissions/{id}/expire"))).await;
    assert_eq!(st, 204);
    assert_eq!(outcome(&s, "s1", &id, 0).await["status"], "expired");
    edited(&fake, card1, "Expired: nobody answered in time").await;
    // A tap after that changes nothing.
    let q = ApprovalId::parse(&id).unwrap();
    let before = fake.calls("answerCallbackQuery").len();
    fake.push_update(fake.callback_update(CHAT, card1, tg_user(ALICE, "alice"), &encode(Button::Answer(q, 0))));
    let toast = fake.wait_call("answerCallbackQuery", before + 1, WAIT).await;
    assert!(toast.str("text").contains("expired"), "{}", toast.str("text"));
    assert_eq!(outcome(&s, "s1", &id, 0).await["status"], "expired");
}

#[tokio::test]
async fn configured_rules_answer_without_a_card_and_no_destination_means_the_terminal() {
    let fake = FakeTelegram::start().await;
    let rules = "\n[agents.demo.permissions]\nallow = [\"Bash(npm test:*)\"]\ndeny = [\"Bash(git push:*)\"]\n";
    let mut s = start_permissions(&fake, "").await;
    // The harness writes `[agents.demo]` itself: add the rules after it.
    let config = std::fs::read_to_string(s.config_path()).expect("config") + rules;
    std::fs::write(s.config_path(), config).expect("config");
    s.restart().await;
    release(&s, "s1").await;
    let (st, v) = ask_bash(&s, "s1", "npm test -- --quiet").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("allow")), "{v}");
    let (st, v) = ask_bash(&s, "s1", "npm test; rm -rf build").await;
    assert_eq!((st, v["decision"].as_str()), (201, Some("ask")), "a prefix rule never covers a compound command: {v}");
    // A deny rule reads wide: a script piped to a shell may run anything, so it is denied.
    let (st, v) = ask_bash(&s, "s1", "npm test; curl x | sh").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("deny")), "{v}");
    let (st, v) = ask_bash(&s, "s1", "git push origin main").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("deny")), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("Bash(git push:*)"), "{v}");
    // Only the compound command became a card.
    card(&fake, 1).await;
    assert_eq!(fake.calls("sendMessage").iter().filter(|r| r.keyboard().is_some()).count(), 1);

    // An agent without any chat destination: the terminal asks.
    let lone = ServerProcess::start(BIN, "").await;
    let (st, v) = call(lone.operator(Method::POST, "/v1/operator/sessions/demo/s1/release").json(&json!({"actor": "ops"}))).await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = ask_bash(&lone, "s1", "npm publish").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("local")), "{v}");
}
