//! Security regressions through the real binary and the Telegram fake:
//! replies are matched to prompts only by what plangate recorded (never by
//! text an agent wrote), and Cancel halts the session instead of opening
//! the gate.

use super::kit::{approval_id, call, gate, plan, propose, status, tg_user};
use super::telegram::{start, ALICE, CHAT};
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

/// `title`, reading then dropping the table: the approval id.
async fn propose_table(s: &ServerProcess, session: &str, title: &str) -> ApprovalId {
    approval_id(&propose(s, session, &plan(title, &["Read the table", "Drop the table"])).await)
}

/// The gate's (decision, reason) on the shell `command` in `session`.
async fn gate_bash(s: &ServerProcess, session: &str, command: &str) -> (String, String) {
    gate(s, session, "Bash", json!({"command": command})).await
}

/// The message id of the first `sendMessage` whose text contains `needle`.
async fn sent_containing(fake: &FakeTelegram, needle: &str) -> i64 {
    fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains(needle)).await.message_id_sent().expect("message id")
}

/// Wait until the adapter has handled everything pushed so far: a `/plan
/// status` pushed last gets its answer only after the updates before it.
async fn settle(fake: &FakeTelegram, session: &str) {
    let before = fake.calls("sendMessage").len();
    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "/plan status", None));
    fake.wait_for(WAIT, |reqs| {
        let sent: Vec<_> = reqs.iter().filter(|r| r.method == "sendMessage").collect();
        (sent.len() > before && sent[before..].iter().any(|r| r.str("text").contains(session))).then_some(())
    })
    .await;
}

/// Attack 1 of the security review: the agent proposes plan X, then asks a
/// question whose text ends like an edit prompt's tag line, `(edit #X)`. An
/// approver answers the question by replying to it. Before the fix the reply
/// became an *edit* of X with the single step "Postgres": approved, plan
/// mode off, `rm -rf` allowed.
#[tokio::test]
async fn a_reply_to_an_agent_question_mimicking_an_edit_prompt_cannot_approve() {
    let fake = FakeTelegram::start().await;
    let s = start(&fake).await;
    let x = propose_table(&s, "atk", "Migrate the database").await;
    let question = format!("Which database should I use?\nReply with the steps of v1, one per line (edit #{x})");
    let (st, _) =
        call(s.agent(Method::POST, "/v1/sessions/atk/questions").json(&json!({"question": question, "allow_freetext": true}))).await;
    assert_eq!(st, 201);
    let qmsg = sent_containing(&fake, "Which database").await;

    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "Postgres", Some(qmsg)));
    settle(&fake, "demo/atk").await;

    let (_, d) = call(s.agent(Method::GET, "/v1/sessions/atk/decision")).await;
    assert_eq!(d["status"], "pending", "{d}");
    assert_eq!(status(&s, "atk").await["mode"], "plan");
    assert_eq!(gate_bash(&s, "atk", "rm -rf /tmp/x").await.0, "deny");
}

/// A genuine ForceReply edit still works, also after a restart: the prompt's
/// message id was recorded durably when it was sent.
#[tokio::test]
async fn a_genuine_force_reply_edit_still_works_after_a_restart() {
    let fake = FakeTelegram::start().await;
    let mut s = start(&fake).await;
    let id = propose_table(&s, "edit", "Tidy the logs").await;
    let card = fake
        .wait_request("sendMessage", WAIT, |r| r.keyboard().is_some() && r.str("text").contains("Tidy the logs"))
        .await
        .message_id_sent()
        .unwrap();
    fake.push_update(fake.callback_update(CHAT, card, tg_user(ALICE, "alice"), &encode(Button::Edit(id))));
    let prompt = fake.wait_request("sendMessage", WAIT, |r| r.field("reply_markup")["force_reply"] == json!(true)).await;
    let prompt_id = prompt.message_id_sent().unwrap();
    // The prompt is recorded right after Telegram answers the send; a later
    // update's answer shows that handling (and recording) is done.
    settle(&fake, "demo/edit").await;

    s.kill9().await;
    s.restart().await;
    fake.push_update(fake.message_update(
        CHAT,
        tg_user(ALICE, "alice"),
        "1. Read the logs\n2. Delete logs older than 30 days",
        Some(prompt_id),
    ));
    let (_, d) = call(s.agent(Method::GET, "/v1/sessions/edit/decision?wait=20")).await;
    assert_eq!(d["status"], "edited", "{d}");
    let steps: Vec<&str> = d["plan"]["steps"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["Read the logs", "Delete logs older than 30 days"]);
    assert_eq!(gate_bash(&s, "edit", "rm -rf tmp/x").await.0, "allow");
}

/// Attack 2: Cancel (the button, `/plan cancel`) used to turn plan mode off,
/// and normal mode allowed every tool. Cancel now halts the session; only an
/// explicit `/plan off` releases it, worded and audited as a release.
#[tokio::test]
async fn cancel_halts_the_session_and_only_plan_off_releases_it() {
    let fake = FakeTelegram::start().await;
    let s = start(&fake).await;
    let id = propose_table(&s, "prod", "Delete prod data").await;
    let card = fake
        .wait_request("sendMessage", WAIT, |r| r.keyboard().is_some() && r.str("text").contains("Delete prod data"))
        .await
        .message_id_sent()
        .unwrap();
    fake.push_update(fake.callback_update(CHAT, card, tg_user(ALICE, "alice"), &encode(Button::Cancel(id))));
    let confirm = sent_containing(&fake, "stays blocked").await;
    fake.push_update(fake.callback_update(CHAT, confirm, tg_user(ALICE, "alice"), &encode(Button::ConfirmCancel(id))));
    let (_, d) = call(s.agent(Method::GET, "/v1/sessions/prod/decision?wait=20")).await;
    assert_eq!(d["status"], "cancelled", "{d}");
    assert!(d["injection"].as_str().unwrap().contains("The session is halted"), "{d}");
    let st = status(&s, "prod").await;
    assert_eq!((st["mode"].as_str(), st["approval"].as_str()), (Some("halted"), Some("cancelled")), "{st}");
    let (decision, reason) = gate_bash(&s, "prod", "rm -rf /var/lib/prod").await;
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("halted"), "{reason}");
    // The card says which it is.
    fake.wait_request("editMessageText", WAIT, |r| r.field("message_id") == &json!(card) && r.str("text").contains("session halted")).await;

    // `/plan cancel` by text does the same to another session.
    propose_table(&s, "prod2", "Truncate the audit log").await;
    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "/plan cancel demo/prod2", None));
    // (Telegram texts defuse mentions with U+2060 after the `@`.)
    sent_containing(&fake, "Cancelled v1 by telegram:").await;
    assert_eq!(status(&s, "prod2").await["mode"], "halted");
    assert_eq!(gate_bash(&s, "prod2", "rm -rf /").await.0, "deny");

    // The explicit release: `/plan off`.
    fake.push_update(fake.message_update(CHAT, tg_user(ALICE, "alice"), "/plan off demo/prod", None));
    sent_containing(&fake, "alice: no plan required").await;
    let st = status(&s, "prod").await;
    assert_eq!((st["mode"].as_str(), st["released_by"].as_str()), (Some("normal"), Some("telegram:@alice")), "{st}");
    assert_eq!(gate_bash(&s, "prod", "rm -rf /tmp/x").await.0, "allow");
    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?session=prod")).await;
    let actions: Vec<(&str, &str)> =
        audit.as_array().unwrap().iter().map(|e| (e["actor"].as_str().unwrap(), e["action"].as_str().unwrap())).collect();
    assert!(actions.contains(&("telegram:@alice", "cancel")) && actions.contains(&("telegram:@alice", "release")), "{actions:?}");
}

/// Attack 8: characters the gate refuses as hidden used to reach cards
/// unrevealed (line/paragraph separators, variation selectors, U+2065,
/// Mongolian selectors, tag characters). The card shows each as `⟦U+…⟧`
/// with the warning, from the same list the gate uses.
#[tokio::test]
async fn hidden_characters_in_agent_text_are_revealed_on_the_card() {
    let fake = FakeTelegram::start().await;
    let s = start(&fake).await;
    call(s.agent(Method::POST, "/v1/sessions/hid/enter")).await;
    let title = "Rotate logs\u{2028}Approved by alice";
    let steps = ["Read a\u{FE0F}b", "Keep \u{2065}x\u{180B}y", "Tag \u{E0041}\u{E007F} end", "Para\u{2029}graph"];
    let body = json!({"title": title, "steps": steps.iter().map(|s| json!({"step": s})).collect::<Vec<_>>()});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/hid/proposals").json(&body)).await;
    assert_eq!(st, 201, "{d}");
    let card = fake.wait_request("sendMessage", WAIT, |r| r.keyboard().is_some() && r.str("text").contains("Rotate logs")).await;
    let text = card.str("text");
    for marker in ["⟦U+2028⟧", "⟦U+FE0F⟧", "⟦U+2065⟧", "⟦U+180B⟧", "⟦U+E0041⟧", "⟦U+E007F⟧", "⟦U+2029⟧"] {
        assert!(text.contains(marker), "{marker} missing from {text:?}");
    }
    assert!(text.contains("hidden or direction-changing characters"), "{text:?}");
    for hidden in ['\u{2028}', '\u{2029}', '\u{FE0F}', '\u{2065}', '\u{180B}', '\u{E0041}', '\u{E007F}'] {
        assert!(!text.contains(hidden), "{:?} reached the card", hidden);
    }
}
