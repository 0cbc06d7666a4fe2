//! Attacks on pairing (issue 31), one test each, through the real binary
//! and the Telegram fake: a code that expired, was used, or was made for
//! another platform pairs nothing; guessing is limited and learns nothing;
//! only an approver changes a chat's approvers.

use super::kit::{audit, cards_in, operator_cli, pair_code, plan, propose, say, slack_answer, slack_section, telegram_section, tg_user};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::slack::{slash_command, SlackFake};
use plangate_testkit::telegram::FakeTelegram;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const CHAT: i64 = -1008880001;
const OTHER_CHAT: i64 = -1008880002;
const ALICE: i64 = 111;
const MALLORY: i64 = 666;
/// What every refused code is answered, whatever the reason.
const BAD_CODE: &str = "That code is not valid here.";

/// A server with Telegram and no destination: pairing makes the first.
async fn start_unpaired(fake: &FakeTelegram) -> ServerProcess {
    ServerProcess::start(BIN, &telegram_section(fake)).await
}

/// The audit of pairing events (agent `-` for refusals, `demo` for the rest).
async fn pairing_actions(s: &ServerProcess, agent: &str) -> Vec<String> {
    audit(s, &format!("agent={agent}&session=-")).await.iter().map(|e| e["action"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test]
async fn an_expired_code_pairs_nothing() {
    let fake = FakeTelegram::start().await;
    let mut s = start_unpaired(&fake).await;
    let code = pair_code(&s, "telegram", &["--ttl", "1"]).await;
    // The code lived one second from the server's answer, on the server's clock.
    s.advance_clock(1_100).await;
    let said = say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "code").await;
    assert!(said.starts_with(BAD_CODE), "{said}");
    let (_, listed, _) = operator_cli(&s, &["destinations"]).await;
    assert!(listed.is_empty(), "{listed}");
    assert!(pairing_actions(&s, "-").await.contains(&"pair_refused".to_string()));
}

#[tokio::test]
async fn a_used_code_pairs_only_the_first_chat() {
    let fake = FakeTelegram::start().await;
    let s = start_unpaired(&fake).await;
    let code = pair_code(&s, "telegram", &[]).await;
    say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "Paired").await;
    let said = say(&fake, OTHER_CHAT, tg_user(MALLORY, "mallory"), &format!("/plan pair {code}"), "code").await;
    assert!(said.starts_with(BAD_CODE), "{said}");
    propose(&s, "u1", &plan("Where does it go", &["x"])).await;
    fake.wait_for(Duration::from_secs(15), |reqs| reqs.iter().any(|r| r.keyboard().is_some() && r.chat_id() == Some(CHAT)).then_some(()))
        .await;
    assert_eq!(cards_in(&fake, OTHER_CHAT).len(), 0, "the second chat is no destination");
}

#[tokio::test]
async fn a_code_for_another_platform_is_refused_and_used_up() {
    let fake = FakeTelegram::start().await;
    let slack = SlackFake::start().await;
    let s = ServerProcess::start(BIN, &format!("{}{}", telegram_section(&fake), slack_section(&slack))).await;
    let code = pair_code(&s, "slack", &[]).await;
    let said = say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "code").await;
    assert!(said.starts_with(BAD_CODE), "the same sentence as a wrong code: {said}");
    let refused = audit(&s, "agent=-&session=-").await;
    assert!(refused.iter().any(|e| e["detail"].as_str().unwrap_or_default().contains("made for slack; it is used up")), "{refused:?}");
    // Used up: seen in the wrong chat, it no longer pairs even on Slack.
    slack.wait_connected(Duration::from_secs(15)).await;
    slack.send_envelope("slash_commands", slash_command("U1", "alice", "C1", &format!("pair {code}"), "t-1", &slack.response_url("late")));
    let late = slack_answer(&slack, "late").await;
    assert!(late.starts_with(BAD_CODE), "{late}");
    let (_, listed, _) = operator_cli(&s, &["destinations"]).await;
    assert!(listed.is_empty(), "{listed}");
}

#[tokio::test]
async fn guessing_is_limited_per_chat_and_person_and_every_wrong_code_reads_the_same() {
    let fake = FakeTelegram::start().await;
    let s = start_unpaired(&fake).await;
    let code = pair_code(&s, "telegram", &[]).await;
    // Malformed, well-formed but wrong: one answer.
    let mut answers = Vec::new();
    for guess in ["nope", "ABCD-EFGH", "ZZZZ-ZZZZ", "2345-6789", "AAAA-AAAA"] {
        answers.push(say(&fake, CHAT, tg_user(MALLORY, "mallory"), &format!("/plan pair {guess}"), "code").await);
    }
    assert!(answers.iter().all(|a| a == &answers[0] && a.starts_with(BAD_CODE)), "{answers:#?}");
    // The budget is spent: even the right code is refused from here, without being looked at.
    let limited = say(&fake, CHAT, tg_user(MALLORY, "mallory"), &format!("/plan pair {code}"), "Too many").await;
    assert!(limited.starts_with("Too many pairing attempts"), "{limited}");
    // …and mallory's own budget follows them to another chat.
    let limited = say(&fake, OTHER_CHAT, tg_user(MALLORY, "mallory"), &format!("/plan pair {code}"), "Too many").await;
    assert!(limited.starts_with("Too many pairing attempts"), "{limited}");
    // The code was never taken: its owner pairs their own chat with it.
    let said = say(&fake, -1008880003, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "Paired").await;
    assert!(said.contains("demo-telegram"), "{said}");
}

#[tokio::test]
async fn only_an_approver_changes_the_approvers_and_the_last_cannot_leave() {
    let fake = FakeTelegram::start().await;
    let s = start_unpaired(&fake).await;
    let code = pair_code(&s, "telegram", &[]).await;
    say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan pair {code}"), "Paired").await;

    // Mallory, in the chat but no approver, tries to add themself and to remove alice.
    let said = say(&fake, CHAT, tg_user(MALLORY, "mallory"), &format!("/plan approvers add telegram:{MALLORY}"), "approver").await;
    assert_eq!(said, "Only an approver of this chat may change its approvers.");
    let said = say(&fake, CHAT, tg_user(MALLORY, "mallory"), &format!("/plan approvers remove telegram:{ALICE}"), "approver").await;
    assert_eq!(said, "Only an approver of this chat may change its approvers.");
    let refusals: Vec<_> = audit(&s, "agent=demo&session=-").await.into_iter().filter(|e| e["action"] == "refused").collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(refusals.iter().all(|e| e["actor"] == format!("telegram:{MALLORY}")));

    // The last approver cannot remove themself: the chat would have nobody.
    let said = say(&fake, CHAT, tg_user(ALICE, "alice"), &format!("/plan approvers remove telegram:{ALICE}"), "approver").await;
    assert!(said.contains("without an approver"), "{said}");
    let listed = say(&fake, CHAT, tg_user(MALLORY, "mallory"), "/plan approvers", "Approvers").await;
    assert!(listed.ends_with(&format!("demo-telegram (agent demo, paired): @\u{2060}alice (telegram:{ALICE})")), "{listed}");
}
