//! Attacks on permission requests, through the real binary: who may
//! answer, the gate deciding first, and ids a chat member or an agent
//! could forge.

use super::kit::{call, say, tg_user};
use super::permissions::{ask_bash, card, outcome, qid, release, start_permissions, ALICE, CHAT, MALLORY};
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::server::OTHER_AGENT_TOKEN;
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);
const CAROL: i64 = 333;
const CHAT2: i64 = -1001234500002;

#[tokio::test]
async fn a_non_approver_cannot_answer_and_the_request_keeps_waiting() {
    let fake = FakeTelegram::start().await;
    let s = start_permissions(&fake, "").await;
    release(&s, "s1").await;
    let (_, v) = ask_bash(&s, "s1", "rm -rf build").await;
    let (id, q) = qid(&v);
    let (_, card1) = card(&fake, 1).await;
    fake.push_update(fake.callback_update(CHAT, card1, tg_user(MALLORY, "mallory"), &encode(Button::Answer(q, 2))));
    let toast = fake.wait_call("answerCallbackQuery", 1, WAIT).await;
    assert!(toast.str("text").contains("not an approver"), "{}", toast.str("text"));
    let refused = say(&fake, CHAT, tg_user(MALLORY, "mallory"), "/plan allow always", "approver").await;
    assert!(!refused.contains("always allowed"), "{refused}");
    assert_eq!(outcome(&s, "s1", &id, 0).await["status"], "pending");
    let (st, rules) = call(s.operator(Method::GET, "/v1/audit?agent=demo")).await;
    assert_eq!(st, 200);
    assert!(rules.to_string().contains("refused"), "the refusal is audited: {rules}");
    fake.push_update(fake.callback_update(CHAT, card1, tg_user(ALICE, "alice"), &encode(Button::Answer(q, 3))));
    assert_eq!(outcome(&s, "s1", &id, 10).await["outcome"]["answer"]["answer"], "deny");
}

#[tokio::test]
async fn the_requester_may_deny_but_not_allow_under_forbid_self() {
    let fake = FakeTelegram::start().await;
    let extra = format!("approvers = [\"telegram:{ALICE}\", \"telegram:{CAROL}\"]\n[destinations.ops.approvals]\nforbid_self = true\n");
    let mut s = start_permissions(&fake, "").await;
    let config = std::fs::read_to_string(s.config_path()).expect("config");
    let config = config.replacen(&format!("approvers = [\"telegram:{ALICE}\"]\n"), &extra, 1).replacen(
        "[agents.demo]\n",
        &format!("[agents.demo]\nrequested_by = \"telegram:{CAROL}\"\n"),
        1,
    );
    std::fs::write(s.config_path(), config).expect("config");
    s.restart().await;
    release(&s, "s1").await;
    let (_, v) = ask_bash(&s, "s1", "git push origin main").await;
    let (id, q) = qid(&v);
    let (_, card1) = card(&fake, 1).await;
    fake.push_update(fake.callback_update(CHAT, card1, tg_user(CAROL, "carol"), &encode(Button::Answer(q, 0))));
    let toast = fake.wait_call("answerCallbackQuery", 1, WAIT).await;
    assert!(toast.str("text").contains("someone else must allow it"), "{}", toast.str("text"));
    assert_eq!(outcome(&s, "s1", &id, 0).await["status"], "pending");
    // Denying is still hers to do.
    say(&fake, CHAT, tg_user(CAROL, "carol"), "/plan deny not today", "denied").await;
    assert_eq!(outcome(&s, "s1", &id, 5).await["outcome"]["answer"], json!({"answer": "deny", "reason": "not today"}));
}

#[tokio::test]
async fn forged_and_foreign_request_ids_decide_nothing() {
    let fake = FakeTelegram::start().await;
    let mut s = start_permissions(
        &fake,
        &format!("\n[destinations.ops2]\nchannel = \"telegram\"\nchat = \"{CHAT2}\"\napprovers = [\"telegram:{MALLORY}\"]\n"),
    )
    .await;
    let config = std::fs::read_to_string(s.config_path()).expect("config");
    let config = config.replacen(
        &format!("[agents.other]\ntoken = \"{OTHER_AGENT_TOKEN}\"\n"),
        &format!("[agents.other]\ntoken = \"{OTHER_AGENT_TOKEN}\"\ndestinations = [\"ops2\"]\n"),
        1,
    );
    std::fs::write(s.config_path(), config).expect("config");
    s.restart().await;
    release(&s, "s1").await;
    let (_, v) = ask_bash(&s, "s1", "make deploy").await;
    let (id, q) = qid(&v);
    card(&fake, 1).await;
    // Mallory approves `other`'s plans in her own chat; she taps a button
    // carrying demo's request id there.
    fake.push_update(fake.callback_update(CHAT2, 4242, tg_user(MALLORY, "mallory"), &encode(Button::Answer(q, 2))));
    let toast = fake.wait_call("answerCallbackQuery", 1, WAIT).await;
    assert!(!toast.str("text").contains("allowed"), "{}", toast.str("text"));
    // A made-up id.
    fake.push_update(fake.callback_update(CHAT, 4243, tg_user(ALICE, "alice"), &encode(Button::Answer(ApprovalId([7; 16]), 0))));
    let toast = fake.wait_call("answerCallbackQuery", 2, WAIT).await;
    assert!(toast.str("text").contains("no longer exists"), "{}", toast.str("text"));
    // `/plan allow` in her chat names demo's session: not hers to answer.
    let refused = say(&fake, CHAT2, tg_user(MALLORY, "mallory"), "/plan allow demo/s1 always", "does not send").await;
    assert!(refused.contains("Agent demo"), "{refused}");
    assert_eq!(outcome(&s, "s1", &id, 0).await["status"], "pending");
    // And the agent cannot answer its own request through the API: there is no such route for it.
    let (st, _) = call(s.agent(Method::POST, &format!("/v1/sessions/s1/permissions/{id}")).json(&json!({"answer": "allow"}))).await;
    assert!(st == 404 || st == 405, "{st}");
}

#[tokio::test]
async fn the_gate_decides_first_no_card_for_a_call_it_denies() {
    let fake = FakeTelegram::start().await;
    let s = start_permissions(&fake, "").await;
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/s1/enter")).await;
    assert!(st == 200 || st == 201, "{v}");
    let (st, v) = ask_bash(&s, "s1", "rm -rf /").await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("deny")), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("plan mode"), "{v}");
    // A read-only call the harness asks about anyway is relayed.
    let (st, v) = ask_bash(&s, "s1", "ls").await;
    assert_eq!(st, 201, "{v}");
    card(&fake, 1).await;
    assert_eq!(fake.calls("sendMessage").iter().filter(|r| r.keyboard().is_some()).count(), 1);
}
