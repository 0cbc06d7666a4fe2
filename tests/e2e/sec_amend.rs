//! Security regressions of issue 29 through the real binary: an approval
//! binds the agent to the steps a human approved. Rewriting them is refused,
//! and steps added while executing wait for an approval of their own.

use crate::kit::{call, gate_rm_rf, say, status, tg_user};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
pub(crate) const CHAT: i64 = -1002900;

/// "Fix typo", one step, proposed and approved by the operator.
async fn approved_typo_fix(s: &ServerProcess, session: &str) -> String {
    approved(s, session, json!({"title": "Fix typo", "steps": [{"step": "Fix the typo in README"}]})).await
}

/// `plan` proposed in `session` and approved by the operator; its approval id.
pub(crate) async fn approved(s: &ServerProcess, session: &str, plan: Value) -> String {
    let (st, d) = call(s.agent(Method::POST, &format!("/v1/sessions/{session}/enter"))).await;
    assert_eq!(st, 200, "{d}");
    let (st, d) = call(s.agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&plan)).await;
    assert_eq!(st, 201, "{d}");
    let id = d["approval_id"].as_str().unwrap_or_default().to_string();
    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "alice"}))).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("approved")), "{d}");
    id
}

fn step_texts(status: &Value) -> Vec<String> {
    status["steps"].as_array().map(|a| a.iter().map(|s| s["step"].as_str().unwrap_or_default().to_string()).collect()).unwrap_or_default()
}

/// Issue 29's reproduction: after "Fix typo" was approved, the agent
/// replaced its steps with "Drop the production database" and "Force-push
/// main", got 200, and the gate allowed `rm -rf /srv/db` as "executing the
/// plan a human approved".
#[tokio::test]
async fn an_approved_plan_cannot_be_rewritten() {
    let s = ServerProcess::start(BIN, "").await;
    approved_typo_fix(&s, "d1").await;
    let body = json!({"merge": false, "steps": [
        {"step": "Drop the production database", "status": "in_progress"},
        {"step": "Force-push main"},
    ]});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/d1/steps").json(&body)).await;
    assert_eq!((st, d["error"]["code"].as_str()), (409, Some("approved_steps_locked")), "{d}");
    assert!(d["error"]["message"].as_str().unwrap_or_default().contains("propose a new version"), "{d}");
    let st = status(&s, "d1").await;
    assert_eq!(step_texts(&st), ["Fix the typo in README"], "{st}");
    assert_eq!(st["approval"], "approved", "{st}");

    // What stays free: the approved step's status, active form and criteria.
    let body =
        json!({"merge": true, "steps": [{"step": "Fix the typo in README", "status": "in_progress", "active_form": "Fixing the typo"}]});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/d1/steps").json(&body)).await;
    assert_eq!(st, 200, "{d}");
    assert_eq!(d["steps"][0]["status"], "in_progress", "{d}");
}

/// Steps added while executing are an amendment: pending in the operator's
/// list with its own approval id, the gate denies until a person approves
/// it, then the amended list executes.
#[tokio::test]
async fn an_added_step_waits_for_approval() {
    let s = ServerProcess::start(BIN, "").await;
    let first = approved_typo_fix(&s, "a1").await;
    assert_eq!(gate_rm_rf(&s, "a1").await.0, "allow");
    let body = json!({"merge": true, "steps": [{"step": "Also rotate all secrets"}]});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/a1/steps").json(&body)).await;
    assert_eq!(st, 200, "{d}");

    let view = status(&s, "a1").await;
    let amendment = &view["amendment"];
    assert_eq!((amendment["status"].as_str(), view["approval"].as_str()), (Some("pending"), Some("approved")), "{view}");
    assert_eq!(amendment["added"][0]["step"], "Also rotate all secrets", "{view}");
    let id = amendment["approval_id"].as_str().unwrap_or_default().to_string();
    assert_ne!(id, first);
    let (_, pending) = call(s.operator(Method::GET, "/v1/approvals?status=pending")).await;
    assert!(pending.as_array().is_some_and(|a| a.iter().any(|p| p["approval_id"] == id.as_str())), "{pending}");

    let (verdict, reason) = gate_rm_rf(&s, "a1").await;
    assert_eq!(verdict, "deny", "{reason}");
    assert!(reason.contains("amendment"), "{reason}");

    let (st, d) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "bob"}))).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("approved")), "{d}");
    assert_eq!(gate_rm_rf(&s, "a1").await.0, "allow");
    let view = status(&s, "a1").await;
    assert_eq!(step_texts(&view), ["Fix the typo in README", "Also rotate all secrets"], "{view}");
    assert_eq!(view["amendment"]["status"], "approved", "{view}");
    // The approval binds the amended plan: its steps are locked now too.
    let body = json!({"merge": false, "steps": [{"step": "Fix the typo in README"}]});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/a1/steps").json(&body)).await;
    assert_eq!((st, d["error"]["code"].as_str()), (409, Some("approved_steps_locked")), "{d}");
}

/// A rejected amendment: the added steps are gone, the agent reads the
/// feedback, and the approved plan goes on.
#[tokio::test]
async fn a_rejected_amendment_drops_its_steps() {
    let s = ServerProcess::start(BIN, "").await;
    approved_typo_fix(&s, "r1").await;
    let body = json!({"merge": true, "steps": [{"step": "Force-push main"}]});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/r1/steps").json(&body)).await;
    assert_eq!(st, 200, "{d}");
    let id = status(&s, "r1").await["amendment"]["approval_id"].as_str().unwrap_or_default().to_string();
    let decision = json!({"action": "revise", "feedback": "never force-push main", "actor": "bob"});
    let (st, d) = call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&decision)).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("rejected")), "{d}");

    let view = status(&s, "r1").await;
    assert_eq!(step_texts(&view), ["Fix the typo in README"], "{view}");
    assert_eq!((view["approval"].as_str(), view["amendment"]["status"].as_str()), (Some("approved"), Some("rejected")), "{view}");
    let (_, taken) = call(s.agent(Method::POST, "/v1/sessions/r1/injection/take")).await;
    let text = taken["injection"].as_str().unwrap_or_default();
    assert!(text.contains("never force-push main") && text.contains("Force-push main") && text.contains("NOT approved"), "{text}");
    assert_eq!(gate_rm_rf(&s, "r1").await.0, "allow");
}

/// The Telegram fake's config with destination `ops` and its approvers,
/// `extra` after it.
pub(crate) fn telegram(fake: &FakeTelegram, extra: &str) -> String {
    format!(
        r#"
[telegram]
token = "{TOKEN}"
api_url = "{}"
poll_timeout_secs = 1

[destinations.ops]
channel = "telegram"
chat = "{CHAT}"
approvers = ["telegram:111", "telegram:222"]
{extra}
"#,
        fake.api_url()
    )
}

/// The first message the bot sent to a chat containing `needle`, once it has.
pub(crate) async fn sent(fake: &FakeTelegram, needle: &str) -> String {
    fake.wait_for(WAIT, |reqs| reqs.iter().filter(|r| r.method == "sendMessage").map(|r| r.str("text")).find(|t| t.contains(needle))).await
}

/// `text` from `user` in the chat, and the bot's answer containing `needle`.
pub(crate) async fn say_as(fake: &FakeTelegram, user: (i64, &str), text: &str, needle: &str) -> String {
    say(fake, CHAT, tg_user(user.0, user.1), text, needle).await
}

/// On Telegram, under a quorum of two: the amendment gets a card of its
/// own, titled as an amendment with the added step as `+ …`, and the gate
/// waits for both approvers, as it did for the plan.
#[tokio::test]
async fn an_amendment_card_on_telegram_under_a_quorum_of_two() {
    let fake = FakeTelegram::start().await;
    let extra = telegram(&fake, "\n[destinations.ops.approvals]\nrequired = 2\n");
    let s = ServerProcess::start_with(BIN, &["ops"], &extra).await;
    let (alice, bob) = ((111, "alice"), (222, "bob"));
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/q1/enter")).await;
    assert_eq!(st, 200, "{d}");
    let plan = json!({"title": "Fix typo", "steps": [{"step": "Fix the typo in README"}]});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/q1/proposals").json(&plan)).await;
    assert_eq!(st, 201, "{d}");
    // The plan's card: the bot's first message about it, before anyone answers.
    let plan_card = fake
        .wait_for(WAIT, |reqs| {
            reqs.iter().find(|r| r.method == "sendMessage" && r.str("text").contains("Fix typo")).and_then(|r| r.message_id_sent())
        })
        .await;
    say_as(&fake, alice, "/plan accept demo/q1", "1 of 2").await;
    say_as(&fake, bob, "/plan accept demo/q1", "Approved").await;
    assert_eq!(gate_rm_rf(&s, "q1").await.0, "allow");

    let body = json!({"merge": true, "steps": [{"step": "Also rotate all secrets"}]});
    let (st, d) = call(s.agent(Method::POST, "/v1/sessions/q1/steps").json(&body)).await;
    assert_eq!(st, 200, "{d}");
    let card = sent(&fake, "Amendment to v1").await;
    assert!(card.contains("Fix typo") && card.contains("+ Also rotate all secrets"), "{card}");
    // Threaded under the plan's card: a reply to it, in the same chat.
    let messages = fake.calls("sendMessage");
    let amendment = messages.iter().find(|r| r.str("text").contains("Amendment to v1")).expect("the amendment card");
    assert_eq!(amendment.reply_to(), Some(plan_card), "the amendment replies to the plan's card");
    assert_eq!(gate_rm_rf(&s, "q1").await.0, "deny");

    say_as(&fake, alice, "/plan accept demo/q1", "1 of 2").await;
    assert_eq!(gate_rm_rf(&s, "q1").await.0, "deny", "one of two approvals opens nothing");
    // The chat's one waiting approval, without naming it.
    say_as(&fake, bob, "/plan accept", "Approved").await;
    assert_eq!(gate_rm_rf(&s, "q1").await.0, "allow");
    let view = status(&s, "q1").await;
    assert_eq!(view["amendment"]["status"], "approved", "{view}");
    assert_eq!(step_texts(&view), ["Fix the typo in README", "Also rotate all secrets"], "{view}");
}
