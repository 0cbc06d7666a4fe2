//! A place per session (`threads = "per_session"`, #30) through the real
//! binary and the channels' fakes: each session gets a topic or thread of
//! its own, later versions, nudges and receipts land in it, `/plan accept`
//! typed there decides that session and no other, the mapping survives a
//! restart, a deleted topic is opened again, and a chat without topics
//! falls back to the chat itself with one warning.

use super::kit::{call, project_plan, propose, slack_section, telegram_section, tg_user};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::slack::SlackFake;
use plangate_testkit::telegram::{FakeTelegram, Recorded};
use reqwest::Method;
use serde_json::Value;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const CHAT: i64 = -1002000000001;
const ALICE: i64 = 111;

async fn threaded_telegram(fake: &FakeTelegram, approvals: &str) -> ServerProcess {
    let extra = format!(
        "{approvals}\n{}\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{CHAT}\"\napprovers = [\"telegram:{ALICE}\"]\nthreads = \"per_session\"\n",
        telegram_section(fake)
    );
    ServerProcess::start_with(BIN, &["ops"], &extra).await
}

/// The card (a message with buttons) whose text contains `title`, once
/// sent (a send Telegram refused is not one).
async fn tg_card(fake: &FakeTelegram, title: &str) -> Recorded {
    fake.wait_request("sendMessage", WAIT, |r| {
        r.status == 200 && r.keyboard().is_some() && r.str("text").contains(title) && !r.str("text").contains('⏰')
    })
    .await
}

async fn session_status(s: &ServerProcess, session: &str) -> String {
    let (_, v) = call(s.agent(Method::GET, &format!("/v1/sessions/{session}"))).await;
    v["approval"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn telegram_gives_each_session_a_forum_topic() {
    let fake = FakeTelegram::start().await;
    fake.make_forum(CHAT);
    let mut s = threaded_telegram(&fake, "[approvals]\nnudges = [\"2s\"]\n").await;
    propose(&s, "s1", &project_plan("Add retries", "billing-api", "Read the client")).await;
    propose(&s, "s2", &project_plan("Fix the header", "web", "Read the CSS")).await;
    let (a, b) = (tg_card(&fake, "Add retries").await, tg_card(&fake, "Fix the header").await);
    let (topic_a, topic_b) = (a.thread().expect("s1's card in a topic"), b.thread().expect("s2's card in a topic"));
    assert_ne!(topic_a, topic_b, "two sessions, two topics");
    let names: Vec<String> = fake.topics(CHAT).into_iter().map(|(_, name)| name).collect();
    assert!(names.contains(&"billing-api · Add retries".to_string()) && names.contains(&"web · Fix the header".to_string()), "{names:?}");
    // The document goes along into the topic.
    let doc = fake.wait_request("sendDocument", WAIT, |r| r.reply_to() == a.message_id_sent()).await;
    assert_eq!(doc.thread(), Some(topic_a));

    // v2 of s1 and its reminder land in s1's topic; no new topic opens.
    propose(&s, "s1", &project_plan("Add retries v2", "billing-api", "Read the client twice")).await;
    let v2 = tg_card(&fake, "Add retries v2").await;
    assert_eq!(v2.thread(), Some(topic_a));
    let nudge = fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains("Add retries v2") && r.str("text").contains('⏰')).await;
    assert_eq!(nudge.thread(), Some(topic_a));
    assert_eq!(fake.topics(CHAT).len(), 2);

    // `/plan accept` with no target, typed in s1's topic: s1 only.
    fake.push_update(fake.topic_message_update(CHAT, topic_a, tg_user(ALICE, "alice"), "/plan accept"));
    plangate_testkit::server::eventually(WAIT, "s1 approved", || async { session_status(&s, "s1").await == "approved" }).await;
    assert_eq!(session_status(&s, "s2").await, "pending", "the other topic's session is untouched");
    // The receipt: s1's v2 card, in its topic, edited to say who approved.
    let v2_id = v2.message_id_sent().unwrap();
    fake.wait_request("editMessageText", WAIT, |r| r.field("message_id").as_i64() == Some(v2_id) && r.str("text").contains("Approved"))
        .await;

    // A restart keeps the mapping: s2's next version goes to s2's topic.
    s.restart().await;
    propose(&s, "s2", &project_plan("Fix the header v2", "web", "Read the CSS twice")).await;
    assert_eq!(tg_card(&fake, "Fix the header v2").await.thread(), Some(topic_b));
    assert_eq!(fake.topics(CHAT).len(), 2);

    // A deleted topic is opened again for the session's next card.
    fake.delete_topic(CHAT, topic_b);
    propose(&s, "s2", &project_plan("Fix the header v3", "web", "Read the CSS once more")).await;
    let v3 = tg_card(&fake, "Fix the header v3").await;
    let reopened = v3.thread().expect("in a topic");
    assert!(reopened != topic_b && fake.topics(CHAT).iter().any(|(id, _)| *id == reopened), "{reopened} {:?}", fake.topics(CHAT));
    let doc = fake.wait_request("sendDocument", WAIT, |r| r.reply_to() == v3.message_id_sent()).await;
    assert_eq!((doc.thread(), doc.status), (Some(reopened), 200));

    // `/plan list` links each session's topic (once v3's delivery, and
    // with it the new topic, is recorded).
    plangate_testkit::server::eventually(WAIT, "v3's card recorded", || async {
        super::kit::audit(&s, "session=s2").await.iter().any(|e| e["action"] == "card_posted" && e["version"] == 3)
    })
    .await;
    fake.push_update(fake.topic_message_update(CHAT, reopened, tg_user(ALICE, "alice"), "/plan list"));
    let list = fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains("📁 web\n")).await;
    assert!(list.str("text").contains(&format!("https://t.me/c/2000000001/{reopened}")), "{}", list.str("text"));
}

#[tokio::test]
async fn telegram_without_topics_falls_back_to_the_chat_with_one_warning() {
    let fake = FakeTelegram::start().await;
    let s = threaded_telegram(&fake, "").await;
    propose(&s, "s1", &project_plan("Add retries", "billing-api", "Read the client")).await;
    let a = tg_card(&fake, "Add retries").await;
    propose(&s, "s2", &project_plan("Fix the header", "web", "Read the CSS")).await;
    let b = tg_card(&fake, "Fix the header").await;
    assert_eq!((a.thread(), b.thread()), (None, None), "both in the chat itself");
    assert_eq!(fake.calls("createForumTopic").len(), 1, "asked once, then remembered");
    let (_, ready) = call(s.http.request(Method::GET, s.url("/readyz"))).await;
    assert!(ready["thread_fallbacks"]["ops"].as_str().unwrap_or_default().contains("would not open a topic"), "{ready}");
    assert_eq!(ready["status"], "ready", "{ready}");
    let fallbacks = |audit: Vec<Value>| audit.iter().filter(|e| e["action"] == "thread_fallback").count();
    let said = fallbacks(super::kit::audit(&s, "session=s1").await) + fallbacks(super::kit::audit(&s, "session=s2").await);
    assert_eq!(said, 1, "one warning for the destination");
}

/// The Slack posts (`chat.postMessage` bodies) whose text contains `needle`.
fn slack_posts(slack: &SlackFake, needle: &str) -> Vec<Value> {
    slack
        .calls("chat.postMessage")
        .iter()
        .map(|r| r.json().clone())
        .filter(|b| b["text"].as_str().unwrap_or_default().contains(needle))
        .collect()
}

/// Wait for the first post whose text contains `needle` (and not a reminder's ⏰ unless asked).
async fn slack_post(slack: &SlackFake, needle: &str) -> Value {
    let wanted = |b: &Value| {
        let text = b["text"].as_str().unwrap_or_default();
        text.contains(needle) && (needle.contains('⏰') || !text.contains('⏰'))
    };
    slack.wait_for(WAIT, |reqs| reqs.iter().any(|r| r.api == "chat.postMessage" && wanted(r.json()))).await;
    slack.calls("chat.postMessage").iter().map(|r| r.json().clone()).find(|b| wanted(b)).expect("found")
}

#[tokio::test]
async fn slack_gives_each_session_a_thread_and_broadcasts_new_versions() {
    let slack = SlackFake::start().await;
    let extra = format!(
        "[approvals]\nnudges = [\"2s\"]\n{}\n[destinations.sl]\nchannel = \"slack\"\nchat = \"C1\"\napprovers = [\"slack:U1\"]\nthreads = \"per_session\"\n",
        slack_section(&slack)
    );
    let mut s = ServerProcess::start_with(BIN, &["sl"], &extra).await;
    slack.wait_connected(WAIT).await;
    propose(&s, "s1", &project_plan("Add retries", "billing-api", "Read the client")).await;
    propose(&s, "s2", &project_plan("Fix the header", "web", "Read the CSS")).await;
    // Each session's first card is a top-level message: the root of its thread.
    for title in ["Add retries", "Fix the header"] {
        assert_eq!(slack_post(&slack, title).await["thread_ts"], Value::Null, "{title}");
    }
    propose(&s, "s1", &project_plan("Add retries v2", "billing-api", "Read the client twice")).await;
    propose(&s, "s2", &project_plan("Fix the header v2", "web", "Read the CSS twice")).await;
    let (a2, b2) = (slack_post(&slack, "Add retries v2").await, slack_post(&slack, "Fix the header v2").await);
    let (thread_a, thread_b) = (a2["thread_ts"].as_str().expect("v2 in a thread"), b2["thread_ts"].as_str().expect("v2 in a thread"));
    assert_ne!(thread_a, thread_b, "two sessions, two threads");
    assert_eq!((a2["reply_broadcast"].as_bool(), b2["reply_broadcast"].as_bool()), (Some(true), Some(true)), "new versions are broadcast");
    // The reminder of v2 goes to the session's thread, not broadcast.
    let nudge = slack_post(&slack, "⏰ Plan 'Add retries v2'").await;
    assert_eq!((nudge["thread_ts"].as_str(), nudge["reply_broadcast"].as_bool()), (Some(thread_a), None));

    // A restart keeps the mapping.
    s.restart().await;
    slack.wait_connected(WAIT).await;
    propose(&s, "s2", &project_plan("Fix the header v3", "web", "Read the CSS again")).await;
    assert_eq!(slack_post(&slack, "Fix the header v3").await["thread_ts"].as_str(), Some(thread_b));

    // A deleted root: the next card starts a new thread, which later ones follow.
    slack.delete_message(thread_b);
    propose(&s, "s2", &project_plan("Fix the header v4", "web", "Read the CSS once more")).await;
    slack
        .wait_for(WAIT, |reqs| {
            reqs.iter()
                .filter(|r| r.api == "chat.postMessage" && r.json()["text"].as_str().unwrap_or_default().contains("Fix the header v4"))
                .count()
                >= 2
        })
        .await;
    let v4 = slack_posts(&slack, "Fix the header v4");
    assert_eq!(
        (v4[0]["thread_ts"].as_str(), v4[1]["thread_ts"].as_str()),
        (Some(thread_b), None),
        "refused in the old thread, then top-level"
    );
    // v4 roots the session's new thread: its document and its reminder go there.
    let uploads = slack
        .wait_for(WAIT, |reqs| {
            reqs.iter().any(|r| {
                r.api == "files.completeUploadExternal" && r.json()["thread_ts"].as_str().is_some_and(|t| t != thread_a && t != thread_b)
            })
        })
        .await;
    let new_root = uploads
        .iter()
        .filter(|r| r.api == "files.completeUploadExternal")
        .filter_map(|r| r.json()["thread_ts"].as_str().map(str::to_string))
        .find(|t| t != thread_a && t != thread_b)
        .expect("a new root");
    let nudge = slack_post(&slack, "⏰ Plan 'Fix the header v4'").await;
    assert_eq!(nudge["thread_ts"].as_str(), Some(new_root.as_str()));
}
