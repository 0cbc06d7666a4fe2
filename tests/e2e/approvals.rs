//! Approvals beyond one click, end to end through the real binary with the
//! Telegram and Slack fakes: a plan that needs two approvers on two
//! channels, the requester's own click refused (separation of duties), two
//! approvers clicking at once, and approve with a note / except a step from
//! a Telegram command and the Slack approve modal.
//!
//! The tests print what the people and the agent saw (`cargo test … --
//! --nocapture` shows it): the card texts after each approval and the
//! agent's decision.

use super::kit::{approval_id, call, propose, slack_section, telegram_section, tg_user};
use plangate_engine::codec::{encode, Button};
use plangate_engine::plan::plan_hash;
use plangate_engine::review::without_steps;
use plangate_engine::{ApprovalId, Plan, Step};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::slack::{block_actions, view_submission, SlackFake};
use plangate_testkit::telegram::{FakeTelegram, Recorded};
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(15);
const TG_CHAT: i64 = -1002;
const ALICE: i64 = 111;
/// Carol asked for the work; she is an approver too, but not of her own plan.
const CAROL: i64 = 333;
const BOB: &str = "U1";

/// Telegram `tg` (alice, carol) and Slack `sl` (bob) for agent `demo`; the
/// Slack destination requires two distinct approvers and separation of
/// duties, which (the strictest rule wins) governs every card of the plan.
async fn start_quorum(tg: &FakeTelegram, slack: &SlackFake) -> ServerProcess {
    let extra = format!(
        r#"{}{}
[destinations.tg]
channel = "telegram"
chat = "{TG_CHAT}"
approvers = ["telegram:{ALICE}", "telegram:{CAROL}"]

[destinations.sl]
channel = "slack"
chat = "C1"
approvers = ["slack:{BOB}"]

[destinations.sl.approvals]
required = 2
forbid_self = true
"#,
        telegram_section(tg),
        slack_section(slack)
    );
    ServerProcess::start_with(BIN, &["tg", "sl"], &extra).await
}

fn retries_plan() -> Plan {
    Plan {
        steps: ["Read the client", "Drop the retry table", "Add jittered backoff"].into_iter().map(Step::pending).collect(),
        ..Plan::titled("Add retries")
    }
}

/// Carol's request, proposed by the agent: `requested_by` in the body.
async fn propose_for_carol(s: &ServerProcess, session: &str) -> ApprovalId {
    let mut body = serde_json::to_value(retries_plan()).unwrap();
    body["requested_by"] = json!(format!("telegram:{CAROL}"));
    let d = propose(s, session, &body).await;
    assert_eq!((d["required_approvals"].as_u64(), d["requested_by"].as_str()), (Some(2), Some("telegram:333")), "{d}");
    approval_id(&d)
}

/// The Telegram card (its message id) and the Slack card (its ts).
async fn first_cards(tg: &FakeTelegram, slack: &SlackFake) -> (i64, String) {
    let card = tg.wait_for(WAIT, |reqs| reqs.iter().find(|r| r.method == "sendMessage" && r.keyboard().is_some()).cloned()).await;
    let tg_id = card.message_id_sent().expect("the card's message id");
    eprintln!("── Telegram card posted:\n{}\n", card.str("text"));
    let post = slack.wait_calls("chat.postMessage", 1, WAIT).await[0].clone();
    let ts = slack
        .wait_for(WAIT, |reqs| reqs.iter().any(|r| r.path.ends_with("files.completeUploadExternal")))
        .await
        .iter()
        .find(|r| r.path.ends_with("files.completeUploadExternal"))
        .map(|r| r.json()["thread_ts"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    eprintln!("── Slack card posted:\n{}\n", slack_text(post.json()));
    (tg_id, ts)
}

/// The plain text of a Slack message's blocks, one block per line.
fn slack_text(message: &Value) -> String {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"]["text"].as_str().or_else(|| b["elements"][0]["text"].as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first Telegram edit of the card whose text contains `needle`.
async fn tg_edit(tg: &FakeTelegram, card: i64, needle: &str) -> Recorded {
    tg.wait_request("editMessageText", WAIT, |r| r.field("message_id") == &json!(card) && r.str("text").contains(needle)).await
}

/// The first Slack `chat.update` of the card whose text contains `needle`.
async fn slack_edit(slack: &SlackFake, needle: &str) -> Value {
    let found =
        slack.wait_for(WAIT, |reqs| reqs.iter().any(|r| r.path.ends_with("chat.update") && slack_text(r.json()).contains(needle))).await;
    found.iter().rev().find(|r| r.path.ends_with("chat.update") && slack_text(r.json()).contains(needle)).unwrap().json().clone()
}

fn audit_lines(audit: &Value) -> Vec<String> {
    audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{} {}: {}", e["actor"].as_str().unwrap(), e["action"].as_str().unwrap(), e["detail"].as_str().unwrap()))
        .collect()
}

#[tokio::test]
async fn two_approvers_on_two_channels_release_the_agent_and_the_requester_is_refused() {
    let tg = FakeTelegram::start().await;
    let slack = SlackFake::start().await;
    let s = start_quorum(&tg, &slack).await;
    slack.wait_connected(WAIT).await;
    let id = propose_for_carol(&s, "s1").await;
    let (tg_card, ts) = first_cards(&tg, &slack).await;

    // The agent waits for the decision, in a long poll started first.
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s1/decision?wait=120")));
    s.waiting(1).await;

    // Carol asked for the work: her tap is refused, saying why.
    tg.push_update(tg.callback_update(TG_CHAT, tg_card, tg_user(CAROL, "carol"), &encode(Button::Approve(id))));
    let refusal = tg.wait_call("answerCallbackQuery", 1, WAIT).await;
    eprintln!("── carol (the requester) taps Approve on Telegram → {:?}\n", refusal.str("text"));
    assert!(refusal.str("text").starts_with("You asked for this work (telegram:333)"), "{}", refusal.str("text"));

    // Alice approves on Telegram: one of two. Both cards show it.
    tg.push_update(tg.callback_update(TG_CHAT, tg_card, tg_user(ALICE, "alice"), &encode(Button::Approve(id))));
    let toast = tg.wait_call("answerCallbackQuery", 2, WAIT).await;
    eprintln!("── alice taps Approve on Telegram → {:?}\n", toast.str("text"));
    assert!(toast.str("text").contains("1 of 2 · ✅ telegram:@alice"), "{}", toast.str("text"));
    let tg_progress = tg_edit(&tg, tg_card, "1 of 2").await;
    eprintln!("── Telegram card edited:\n{}\n", tg_progress.str("text"));
    assert!(tg_progress.str("text").contains("1 of 2 · ✅ telegram:@\u{2060}alice"), "{}", tg_progress.str("text"));
    assert!(tg_progress.keyboard().is_some_and(|k| !k.is_empty()), "still open: the buttons stay");
    let slack_progress = slack_edit(&slack, "1 of 2").await;
    eprintln!("── Slack card edited:\n{}\n", slack_text(&slack_progress));
    assert!(slack_text(&slack_progress).contains("• 1 of 2 · ✅ telegram:@alice"));
    assert!(!waiter.is_finished(), "one approval of two releases nobody");

    // Bob approves in Slack: the second distinct approver decides.
    slack.send_envelope(
        "interactive",
        block_actions(BOB, "bob", "C1", &ts, &encode(Button::Approve(id)), "1.000002", &slack.response_url("r1")),
    );
    let (st, decision) = waiter.await.unwrap();
    eprintln!("── the waiting agent's decision:\n{}\n", serde_json::to_string_pretty(&decision).unwrap());
    assert_eq!(st, 200);
    assert_eq!(decision["status"], "approved");
    assert_eq!(decision["decided_by"], "telegram:@alice and slack:@bob");
    assert_eq!(decision["approvals"].as_array().unwrap().len(), 2);
    assert!(decision["injection"].as_str().unwrap().starts_with("[PLAN_DECISION]: approved\n"));

    // Every card is edited to the receipt.
    let receipt = "Approved v1 by telegram:@\u{2060}alice and slack:@\u{2060}bob";
    let tg_final = tg_edit(&tg, tg_card, receipt).await;
    eprintln!("── Telegram card, decided:\n{}\n", tg_final.str("text"));
    assert_eq!(tg_final.field("reply_markup"), &json!({"inline_keyboard": []}));
    let slack_final = slack_edit(&slack, "Approved v1 by telegram:@alice and slack:@bob").await;
    eprintln!("── Slack card, decided:\n{}\n", slack_text(&slack_final));

    // The refusal and both approvals are in the audit.
    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?session=s1")).await;
    let lines = audit_lines(&audit);
    eprintln!("── audit:\n{}\n", lines.join("\n"));
    assert!(lines.iter().any(|l| l.starts_with("telegram:@carol refused: ") && l.contains("forbid_self")), "{lines:?}");
    assert!(lines.contains(&"telegram:@alice approve: 1 of 2 approvals of v1".to_string()), "{lines:?}");
    assert!(lines.contains(&"slack:@bob approve: Approved v1 by telegram:@alice and slack:@bob".to_string()), "{lines:?}");
}

#[tokio::test]
async fn two_approvers_clicking_at_once_on_two_channels_each_count_once() {
    let tg = FakeTelegram::start().await;
    let slack = SlackFake::start().await;
    let s = start_quorum(&tg, &slack).await;
    slack.wait_connected(WAIT).await;
    let id = propose_for_carol(&s, "s2").await;
    let (tg_card, ts) = first_cards(&tg, &slack).await;
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s2/decision?wait=120")));
    s.waiting(1).await;

    // Both taps go out together; the server serializes them per session.
    tg.push_update(tg.callback_update(TG_CHAT, tg_card, tg_user(ALICE, "alice"), &encode(Button::Approve(id))));
    slack.send_envelope(
        "interactive",
        block_actions(BOB, "bob", "C1", &ts, &encode(Button::Approve(id)), "2.000001", &slack.response_url("r2")),
    );
    let (_, decision) = waiter.await.unwrap();
    eprintln!("── simultaneous approvals → decided_by {}\n", decision["decided_by"]);
    assert_eq!(decision["status"], "approved");
    let by: Vec<&str> = decision["approvals"].as_array().unwrap().iter().map(|a| a["by"].as_str().unwrap()).collect();
    assert_eq!(by.len(), 2, "{by:?}");
    assert!(by.contains(&"telegram:@alice") && by.contains(&"slack:@bob"), "{by:?}");
    let (_, audit) = call(s.operator(Method::GET, "/v1/audit?session=s2")).await;
    let approvals = audit_lines(&audit).into_iter().filter(|l| l.contains(" approve: ")).count();
    assert_eq!(approvals, 2, "each approval recorded once");
}

#[tokio::test]
async fn a_note_and_an_excluded_step_from_a_telegram_command_and_the_slack_modal() {
    let tg = FakeTelegram::start().await;
    let slack = SlackFake::start().await;
    let s = start_quorum(&tg, &slack).await;
    slack.wait_connected(WAIT).await;
    let id = propose_for_carol(&s, "s3").await;
    let (tg_card, ts) = first_cards(&tg, &slack).await;

    // Alice types the grammar on Telegram: everything but step 2, with a note.
    let text = format!("/plan accept #{} except 2 -- don't touch the migrations", id.short());
    tg.push_update(tg.message_update(TG_CHAT, tg_user(ALICE, "alice"), &text, None));
    let progress = tg_edit(&tg, tg_card, "1 of 2 except step 2").await;
    eprintln!("── after alice's /plan accept … except 2 -- note:\n{}\n", progress.str("text"));

    // Bob opens the approve modal in Slack: the step picker lists the steps.
    slack.send_envelope(
        "interactive",
        block_actions(BOB, "bob", "C1", &ts, &encode(Button::ApproveWithNote(id)), "3.000001", &slack.response_url("r3")),
    );
    let opened = slack.wait_calls("views.open", 1, WAIT).await[0].json().clone();
    let view = &opened["view"];
    assert_eq!(view["callback_id"], "plangate_approve");
    let picker = view["blocks"].as_array().unwrap().iter().find(|b| b["block_id"] == "plangate_except").unwrap();
    assert_eq!(picker["element"]["options"][1]["text"]["text"], "2. Drop the retry table");

    // He leaves out step 2 too and adds a note: the quorum is reached.
    let waiter = tokio::spawn(call(s.agent(Method::GET, "/v1/sessions/s3/decision?wait=60")));
    let values = json!({
        "plangate_input": {"plangate_text": {"type": "plain_text_input", "value": "ship it after 18:00"}},
        // As Slack sends a multi-select's state: each chosen option whole.
        "plangate_except": {"plangate_steps": {"type": "multi_static_select", "selected_options": [
            {"text": {"type": "plain_text", "text": "2. Drop the retry table", "emoji": true}, "value": "2"}
        ]}},
    });
    let metadata = view["private_metadata"].as_str().unwrap();
    slack.send_envelope("interactive", view_submission(BOB, "bob", "V1", "h1", "plangate_approve", metadata, values));
    let (_, decision) = waiter.await.unwrap();
    eprintln!("── the agent's decision:\n{}\n", serde_json::to_string_pretty(&decision).unwrap());
    assert_eq!(decision["status"], "approved");
    let approved = without_steps(&retries_plan(), &[2]);
    assert_eq!(decision["plan_hash"], json!(plan_hash(&approved, None)), "bound to what was approved");
    assert_eq!(decision["plan"]["steps"].as_array().unwrap().len(), 2);
    assert_eq!(decision["excluded_steps"], json!([{"number": 2, "step": "Drop the retry table"}]));
    let injection = decision["injection"].as_str().unwrap();
    assert!(injection.contains("do NOT do it") && injection.contains("Drop the retry table"), "{injection}");
    assert!(injection.contains("> don't touch the migrations") && injection.contains("> ship it after 18:00"), "{injection}");
    let receipt = tg_edit(&tg, tg_card, "✅ Approved v1").await;
    let text = receipt.str("text");
    eprintln!("── Telegram card, decided:\n{text}\n");
    assert!(text.contains("Excluded (not approved)") && text.contains("2. ⊘ Drop the retry table"), "{text}");
    let terms = "UTC: except step 2; note from telegram:@\u{2060}alice: don't touch the migrations; note from slack:@\u{2060}bob: ship it after 18:00";
    assert!(text.contains(terms), "{text}");
    let (_, status) = call(s.agent(Method::GET, "/v1/sessions/s3")).await;
    let steps: Vec<&str> = status["steps"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["Read the client", "Add jittered backoff"], "the agent executes the approved steps only");
}

/// The CLI end to end: `plangate propose` sends `PLANGATE_REQUESTED_BY`, and
/// `plangate decide … approve --note … --except …` approves all but a step
/// with a note, over the operator API.
#[tokio::test]
async fn the_cli_names_the_requester_and_approves_with_a_note_except_a_step() {
    use plangate_testkit::server::{AGENT_TOKEN, OPERATOR_TOKEN};
    let s = ServerProcess::start(BIN, "").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plan.md");
    std::fs::write(&file, "# Add retries\n\n## Steps\n1. Read the client\n2. Drop the retry table\n3. Add jittered backoff\n").unwrap();
    let run = |args: Vec<String>| {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args)
            .env("PLANGATE_URL", &s.base)
            .env("PLANGATE_TOKEN", AGENT_TOKEN)
            .env("PLANGATE_OPERATOR_TOKEN", OPERATOR_TOKEN)
            .env("PLANGATE_REQUESTED_BY", "slack:U7")
            .kill_on_drop(true);
        async move {
            let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("finished").expect("ran");
            (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
        }
    };
    let (code, out, err) = run(vec!["propose".into(), file.display().to_string(), "--session".into(), "cli".into(), "--json".into()]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let proposed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(proposed["requested_by"], "slack:U7", "{out}");
    let id = proposed["approval_id"].as_str().unwrap().to_string();
    let args = ["decide", &id, "approve", "--note", "ship it after 18:00", "--except", "2", "--actor", "ops"];
    let (code, out, err) = run(args.iter().map(|a| a.to_string()).collect()).await;
    eprintln!("── plangate decide {id} approve --note … --except 2:\n{out}");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.starts_with(&format!("v1 {id} approved by operator:ops\n")), "{out}");
    assert!(out.contains("note from operator:ops: ship it after 18:00\n"), "{out}");
    assert!(out.contains("excluded: step 2 Drop the retry table\n"), "{out}");
    let (_, decision) = call(s.agent(Method::GET, "/v1/sessions/cli/decision")).await;
    // The hash bound to the approval is that of the proposed plan without step 2.
    let proposed = plangate_engine::plan::plan_from_markdown(&std::fs::read_to_string(&file).unwrap(), None).unwrap();
    let approved = without_steps(&proposed, &[2]);
    assert_eq!(decision["plan_hash"], json!(plan_hash(&approved, None)));
    assert_eq!(decision["plan"], serde_json::to_value(&approved).unwrap());
    // Note and except belong to approve only.
    let (code, _, err) = run(["decide", &id, "revise", "--feedback", "x", "--note", "y"].iter().map(|a| a.to_string()).collect()).await;
    assert_ne!(code, Some(0));
    assert!(err.contains("note and except go with action approve only"), "{err}");
}
