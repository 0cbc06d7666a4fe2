//! Nudges and timeouts, persisted and fired by the real binary's scheduler.

use super::kit::{audit_actions, call, plan, propose_id, telegram_section};
use plangate_testkit::server::{eventually, ServerProcess};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// "Timed", one step.
fn timed() -> Value {
    plan("Timed", &["x"])
}

#[tokio::test]
async fn a_waiting_plan_is_nudged_then_times_out_fail_closed() {
    let mut s = ServerProcess::start(BIN, "[approvals]\nnudges = [\"1s\"]\ntimeout = \"2s\"\n").await;
    let id = propose_id(&s, "t1", &timed()).await;
    // The long-poll is released by the timeout itself, once the server's
    // clock is turned past it (no test sleeps through the 2 s).
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/t1/decision?wait=20")));
    s.waiting(1).await;
    // Only the operator turns the test clock: an agent is refused.
    let (st, _) = call(s.agent(Method::POST, "/v1/operator/test/clock").json(&json!({"advance_ms": 2_000}))).await;
    assert_eq!(st, 403);
    let started = Instant::now();
    s.advance_clock(2_000).await;
    let (st, d) = waiter.await.unwrap();
    assert_eq!(st, 200);
    assert_eq!((d["approval_id"].as_str(), d["status"].as_str()), (Some(id.as_str()), Some("timed_out")));
    assert!(started.elapsed() < Duration::from_secs(10), "timed out late: {:?}", started.elapsed());
    assert!(d["injection"].as_str().unwrap().starts_with("[PLAN_DECISION]: timed_out"));
    let actions = audit_actions(&s, "t1").await;
    assert!(actions.contains(&"nudge".to_string()) && actions.contains(&"timeout".to_string()), "{actions:?}");
    // Fail closed: the session stays in plan mode and the gate stays shut.
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/t1")).await;
    assert_eq!((status["mode"].as_str(), status["approval"].as_str()), (Some("plan"), Some("timed_out")));
    let (_, g) = call(s.agent(Method::POST, "/v1/gate").json(&json!({"session_id": "t1", "tool": "Write", "input": {}}))).await;
    assert_eq!(g["decision"], "deny");
    // A late decision on the timed-out approval is refused.
    let (st, e) =
        call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "late"}))).await;
    assert_eq!((st, e["error"]["code"].as_str()), (409, Some("stale_approval")));
}

#[tokio::test]
async fn decided_plans_are_never_nudged_and_timers_survive_restart() {
    let mut s = ServerProcess::start(BIN, "[approvals]\nnudges = [\"1s\", \"2s\"]\ntimeout = \"3s\"\n").await;
    // Decided at once: its timers are cancelled in the same transaction.
    let id = propose_id(&s, "decided", &timed()).await;
    call(s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "a"}))).await;
    // Pending across a kill -9: the timeout still fires after the restart,
    // and the two missed nudges collapse into one.
    propose_id(&s, "pending", &timed()).await;
    s.kill9().await;
    // Down for 3.5 s on the server's clock: both nudges and the timeout are overdue at the start.
    s.advance_clock(3_500).await;
    s.restart().await;
    let (_, d) = call(s.agent(Method::GET, "/v1/sessions/pending/decision?wait=10")).await;
    assert_eq!(d["status"], "timed_out");
    let pending = audit_actions(&s, "pending").await;
    assert_eq!(pending.iter().filter(|a| *a == "nudge").count(), 1, "{pending:?}");
    let decided = audit_actions(&s, "decided").await;
    assert!(!decided.iter().any(|a| a == "nudge" || a == "timeout"), "{decided:?}");
}

#[tokio::test]
async fn after_the_last_nudge_the_card_escalates_and_the_escalation_chat_can_decide() {
    use plangate_engine::codec::{encode, Button};
    use plangate_testkit::telegram::FakeTelegram;
    let fake = FakeTelegram::start().await;
    let extra = format!(
        r#"
[approvals]
nudges = ["1s"]
timeout = "30s"
escalate_to = ["leads"]

{}
[destinations.team]
channel = "telegram"
chat = "-100"
approvers = ["telegram:1"]

[destinations.leads]
channel = "telegram"
chat = "-200"
approvers = ["telegram:2"]
"#,
        telegram_section(&fake)
    );
    let mut s = ServerProcess::start_with(BIN, &["team"], &extra).await;
    let id = propose_id(&s, "esc", &timed()).await;
    let wait = Duration::from_secs(15);
    // The card is out; the nudge is due a second later on the turned clock.
    fake.wait_request("sendMessage", wait, |r| r.chat_id() == Some(-100) && r.keyboard().is_some()).await;
    s.advance_clock(1_000).await;
    // The team gets the card, then a nudge; then the leads get the escalated card.
    let escalated = fake.wait_request("sendMessage", wait, |r| r.chat_id() == Some(-200) && r.keyboard().is_some()).await;
    assert!(escalated.str("text").contains("escalated: no decision after"), "{}", escalated.str("text"));
    let nudge = fake.wait_request("sendMessage", wait, |r| r.chat_id() == Some(-100) && r.str("text").contains("⏰")).await;
    assert!(nudge.str("text").contains("reminder 1"));
    // A lead decides from the escalation chat; both cards get the receipt.
    let card = escalated.message_id_sent().unwrap();
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/esc/decision?wait=20")));
    fake.push_update(fake.callback_update(
        -200,
        card,
        FakeTelegram::user(2, Some("lead"), "Lead"),
        &encode(Button::Approve(plangate_engine::ApprovalId::parse(&id).unwrap())),
    ));
    let (_, d) = waiter.await.unwrap();
    assert_eq!((d["status"].as_str(), d["decided_by"].as_str()), (Some("approved"), Some("telegram:@lead")));
    fake.wait_request("editMessageText", wait, |r| r.field("chat_id") == &json!(-100) && r.str("text").contains("Approved v1")).await;
    fake.wait_request("editMessageText", wait, |r| r.field("chat_id") == &json!(-200) && r.str("text").contains("Approved v1")).await;
    let actions = audit_actions(&s, "esc").await;
    assert!(actions.contains(&"escalate".to_string()) && actions.contains(&"card_escalated".to_string()), "{actions:?}");
}

#[tokio::test]
async fn an_agent_that_plans_without_proposing_is_reminded() {
    let mut s = ServerProcess::start(BIN, "[approvals]\nnudges = [\"1s\", \"2s\"]\ntimeout = \"10s\"\n").await;
    call(s.agent(Method::POST, "/v1/sessions/idle/enter")).await;
    // The first reminder is due 1 s after entering: the long-poll on the
    // session's injection returns when the turned clock fires it.
    let reminder = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/idle/injection?wait=20")));
    s.waiting(1).await;
    s.advance_clock(1_000).await;
    let (_, v) = reminder.await.unwrap();
    let text = v["injection"].as_str().unwrap_or_default().to_string();
    assert!(text.starts_with("[PLAN_NUDGE]"), "{v}");
    call(s.agent(Method::POST, "/v1/sessions/idle/injection/take")).await;
    // Once the agent proposes, the reminders stop. Turned 2 s on, the
    // second reminder (due 2 s after entering) would fire before the
    // plan's own nudges (1 and 2 s after proposing, both due at once, so
    // they go out as one: "reminder 2"): that nudge in the audit is the
    // sign the reminder had its chance.
    call(s.agent(Method::POST, "/v1/sessions/idle/proposals").json(&json!({"title": "Now a plan"}))).await;
    s.advance_clock(2_000).await;
    let audit = || async { audit_actions(&s, "idle").await.iter().any(|a| a == "nudge") };
    eventually(Duration::from_secs(15), "the plan's nudge", audit).await;
    let (_, v) = call(s.agent(Method::POST, "/v1/sessions/idle/injection/take")).await;
    assert_eq!(v["injection"], Value::Null);
    let actions = audit_actions(&s, "idle").await;
    assert_eq!(actions.iter().filter(|a| *a == "agent_nudge").count(), 1, "{actions:?}");
}

#[tokio::test]
async fn a_burst_of_cards_and_nudges_stays_within_the_platform_limits() {
    use plangate_testkit::limits::Limits;
    use plangate_testkit::telegram::FakeTelegram;
    let fake = FakeTelegram::start().await;
    // Telegram's own shape, scaled down so the test binds on both windows:
    // 1 message per second per chat, 3 per second overall.
    fake.enforce_limits(Limits { per_chat: (1, Duration::from_secs(1)), global: (3, Duration::from_secs(1)) });
    let extra = format!(
        r#"
[approvals]
nudges = ["1s"]
timeout = "60s"

{}per_chat_per_second = 1
global_per_second = 3

[destinations.a]
channel = "telegram"
chat = "-100"
approvers = ["telegram:1"]

[destinations.b]
channel = "telegram"
chat = "-200"
approvers = ["telegram:1"]
"#,
        telegram_section(&fake)
    );
    let s = ServerProcess::start_with(BIN, &["a", "b"], &extra).await;
    let plan = timed();
    let (one, two) = tokio::join!(propose_id(&s, "burst-1", &plan), propose_id(&s, "burst-2", &plan));
    assert_ne!(one, two);
    // Two cards (message + document) and one nudge per approval and chat.
    let nudges = fake
        .wait_for(Duration::from_secs(30), |reqs| {
            let nudges: Vec<_> = reqs.iter().filter(|r| r.status == 200 && r.str("text").contains("⏰")).cloned().collect();
            (nudges.len() >= 4).then_some(nudges)
        })
        .await;
    let stats = fake.rate_stats();
    assert_eq!(stats.refused, 0, "plangate stayed under the limits: {stats:?}");
    let mut targets: Vec<_> = nudges.iter().map(|r| (r.chat_id(), r.reply_to())).collect();
    targets.sort();
    targets.dedup();
    assert_eq!(targets.len(), 4, "one nudge per card: {targets:?}");
}
