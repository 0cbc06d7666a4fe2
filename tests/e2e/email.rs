//! `[email]` end to end, through the real binary, a loopback SMTP fake
//! (`plangate_testkit::smtp`) and the Telegram fake: a proposal is mailed
//! to the approver with an address, as HTML and text with the plan
//! attached and one link per action; opening a link (GET), a thousand
//! times, decides nothing; its POST decides once, as that approver "via
//! email", and the chat card is edited; a second POST, a superseded plan's
//! link and a forged or unknown token are refused and decide nothing.

use super::kit::{audit, call, propose_id, telegram_section};
use crate::telegram::{config, ALICE};
use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::smtp::{Captured, FakeSmtp};
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
/// Where the config says the links point; rewritten to the server's real address.
const PUBLIC: &str = "http://plangate.test";
const ALICE_MAIL: &str = "alice@example.com";
const WAIT: Duration = Duration::from_secs(20);

async fn start(fake: &FakeTelegram, smtp: &FakeSmtp) -> ServerProcess {
    start_and(fake, smtp, "").await
}

/// [`start`] with `more` config after the `[email]` section.
async fn start_and(fake: &FakeTelegram, smtp: &FakeSmtp, more: &str) -> ServerProcess {
    let approver = format!("telegram:{ALICE}");
    let extra = format!("{}{}{more}", config(fake), smtp.section(PUBLIC, &[(approver.as_str(), ALICE_MAIL)]));
    ServerProcess::start_with(BIN, &["ops"], &extra).await
}

/// The tokens of the `/e/` links in `text`, in order (approve, request
/// changes, cancel).
fn tokens(text: &str) -> Vec<String> {
    let prefix = format!("{PUBLIC}/e/");
    text.match_indices(&prefix)
        .map(|(at, _)| text[at + prefix.len()..].chars().take_while(char::is_ascii_hexdigit).collect::<String>())
        .filter(|t| t.len() == 64)
        .collect()
}

/// The `n`-th email to Alice (1-based).
async fn nth_mail(smtp: &FakeSmtp, n: usize) -> Captured {
    nth_mail_to(smtp, ALICE_MAIL, "Plan '", n).await
}

/// The `n`-th email (1-based) to `to` whose subject starts with `subject`.
async fn nth_mail_to(smtp: &FakeSmtp, to: &str, subject: &str, n: usize) -> Captured {
    smtp.wait_for(WAIT, &format!("email {n} to {to} starting {subject:?}"), |all| {
        all.iter().filter(|m| m.to.iter().any(|t| t == to) && m.header("subject").starts_with(subject)).nth(n - 1).cloned()
    })
    .await
}

async fn open(s: &ServerProcess, token: &str) -> (u16, String) {
    let answer = s.http.get(s.url(&format!("/e/{token}"))).send().await.expect("GET");
    (answer.status().as_u16(), answer.text().await.unwrap_or_default())
}

async fn post(s: &ServerProcess, token: &str, feedback: &str) -> (u16, String) {
    let answer = s.http.post(s.url("/e")).form(&[("token", token), ("feedback", feedback)]).send().await.expect("POST");
    (answer.status().as_u16(), answer.text().await.unwrap_or_default())
}

/// [`post`], which must decide: the page.
async fn decide_by(s: &ServerProcess, token: &str, feedback: &str) -> String {
    let (st, page) = post(s, token, feedback).await;
    assert_eq!(st, 200, "{page}");
    page
}

async fn status_of(s: &ServerProcess, id: &str) -> String {
    let (st, v) = call(s.operator(Method::GET, &format!("/v1/approvals/{id}"))).await;
    assert_eq!(st, 200, "{v}");
    v["status"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn email_links_open_without_deciding_and_decide_once_by_post() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    let s = start(&fake, &smtp).await;
    let id =
        propose_id(&s, "s1", &json!({"title": "Add retries", "markdown": "# Add retries\n\n1. Read the client\n2. Add backoff\n"})).await;

    let mail = nth_mail(&smtp, 1).await;
    assert_eq!(mail.from, "plangate@example.com");
    assert!(mail.header("subject").contains("Add retries"), "{}", mail.header("subject"));
    let (text, html) = (mail.body("text/plain"), mail.body("text/html"));
    let links = tokens(&text);
    assert_eq!(links.len(), 3, "one link per action in the text part: {text}");
    assert_eq!(tokens(&html), links, "the same links in the HTML part: {html}");
    assert!(text.contains("Add backoff") && html.contains("Add backoff"), "the card's steps: {text}");
    let attached = mail.attachment().expect("the plan attached");
    assert_eq!(attached.file_name.as_deref(), Some("plan-add-retries-v1.md"));
    assert!(attached.body.contains("2. Add backoff"), "{}", attached.body);
    let approve = &links[0];

    // Mail scanners open links: a thousand GETs decide nothing.
    for _ in 0..1000 {
        let (st, page) = open(&s, approve).await;
        assert_eq!(st, 200, "{page}");
        assert!(page.contains(r#"action="/e""#) && page.contains(approve.as_str()), "{page}");
    }
    assert_eq!(status_of(&s, &id).await, "pending");

    // The POST decides, once, as Alice via email.
    let page = decide_by(&s, approve, "").await;
    assert!(page.contains("Approved"), "{page}");
    assert_eq!(status_of(&s, &id).await, "approved");
    let decisions: Vec<_> = audit(&s, "session=s1&limit=1000").await.into_iter().filter(|e| e["action"] == "approve").collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["actor"], format!("telegram:{ALICE} via email"), "{decisions:?}");
    fake.wait_request("editMessageText", WAIT, |r| r.str("text").contains("Approved")).await;

    // A second POST, the other links of the decided plan: refused.
    let (st, page) = post(&s, approve, "").await;
    assert_eq!(st, 410, "{page}");
    assert!(page.contains("already used"), "{page}");
    assert_eq!(open(&s, approve).await.0, 410);
    let (st, page) = post(&s, &links[2], "").await;
    assert_eq!(st, 410, "{page}");
    assert!(page.contains("already decided"), "{page}");

    // Forged, unknown and malformed tokens: refused.
    for forged in ["0".repeat(64), "ab".repeat(32), "not-a-token".to_string()] {
        assert_eq!(post(&s, &forged, "").await.0, 404, "{forged}");
        assert_eq!(open(&s, &forged).await.0, 404, "{forged}");
    }
    assert_eq!(status_of(&s, &id).await, "approved");
    let decisions = audit(&s, "session=s1&limit=1000").await.into_iter().filter(|e| e["action"] == "approve").count();
    assert_eq!(decisions, 1, "nothing else decided");
}

/// A guesser of tokens is a guesser of credentials: each token that is no
/// link takes a cell of the address's budget, and beyond it the answer is
/// 429 with `Retry-After` (audited); the approver's real link, from the
/// same address, still opens and decides.
#[tokio::test]
async fn a_token_guesser_is_answered_429_and_a_real_link_still_works() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    let s = start(&fake, &smtp).await;
    let id = propose_id(&s, "s1", &json!({"title": "Rotate keys"})).await;
    let approve = tokens(&nth_mail(&smtp, 1).await.body("text/plain"))[0].clone();

    let guesses: Vec<String> = (0..30u32).map(|i| format!("{i:064x}")).collect();
    let mut answers = Vec::new();
    for (i, guess) in guesses.iter().enumerate() {
        let answer = if i % 2 == 0 {
            s.http.get(s.url(&format!("/e/{guess}"))).send().await.expect("GET")
        } else {
            s.http.post(s.url("/e")).form(&[("token", guess.as_str()), ("feedback", "")]).send().await.expect("POST")
        };
        let retry_after = answer.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
        answers.push((answer.status().as_u16(), retry_after));
    }
    assert!(answers.iter().take(10).all(|a| a.0 == 404), "the budget's ten failures are refused as usual: {answers:?}");
    let limited: Vec<_> = answers.iter().filter(|a| a.0 == 429).collect();
    assert!(limited.len() >= 15, "beyond the budget, 429: {answers:?}");
    assert!(limited.iter().all(|a| a.1.as_deref().and_then(|v| v.parse::<u64>().ok()).is_some_and(|secs| secs >= 1)), "{answers:?}");
    eventually(WAIT, "the guesses audited", || async {
        let all = audit(&s, "limit=1000").await;
        let failed =
            all.iter().filter(|e| e["action"] == "auth_failed" && e["detail"].as_str().unwrap_or("").contains("email_link")).count();
        let limited = all.iter().any(|e| e["action"] == "auth_limited" && e["detail"].as_str().unwrap_or("").contains("email_link"));
        failed >= 10 && limited
    })
    .await;

    // The real link is checked first and never waits.
    let (st, page) = open(&s, &approve).await;
    assert_eq!(st, 200, "{page}");
    decide_by(&s, &approve, "").await;
    assert_eq!(status_of(&s, &id).await, "approved");
}

#[tokio::test]
async fn a_superseded_plans_links_are_refused() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    let s = start(&fake, &smtp).await;
    let v1 = propose_id(&s, "s2", &json!({"title": "Rotate keys", "steps": [{"step": "rotate"}]})).await;
    let old = tokens(&nth_mail(&smtp, 1).await.body("text/plain"));
    let v2 = propose_id(&s, "s2", &json!({"title": "Rotate keys", "steps": [{"step": "rotate"}, {"step": "verify"}]})).await;
    let new = tokens(&nth_mail(&smtp, 2).await.body("text/plain"));
    assert_eq!((old.len(), new.len()), (3, 3));

    let (st, page) = open(&s, &old[0]).await;
    assert_eq!(st, 410, "{page}");
    let (st, page) = post(&s, &old[0], "").await;
    assert_eq!(st, 410, "{page}");
    assert!(page.contains("replaced by a newer one"), "{page}");
    assert_eq!(status_of(&s, &v1).await, "superseded");
    assert_eq!(status_of(&s, &v2).await, "pending", "the old link decided nothing");

    // The new version's "request changes" asks what to change, then decides.
    assert_eq!(post(&s, &new[1], " ").await.0, 400);
    decide_by(&s, &new[1], "verify on staging first").await;
    assert_eq!(status_of(&s, &v2).await, "rejected");
}

#[tokio::test]
async fn reminders_go_to_the_approvers_and_the_escalation_to_the_leads_who_decide_by_email() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    let (team, lead) = ("team@example.com", "lead@example.com");
    let extra = format!(
        "\n[approvals]\nnudges = [\"1s\"]\ntimeout = \"30s\"\nescalate_to = [\"leads\"]\n{}\n\
         [destinations.team]\nchannel = \"telegram\"\nchat = \"-100\"\napprovers = [\"telegram:1\"]\n\n\
         [destinations.leads]\nchannel = \"telegram\"\nchat = \"-200\"\napprovers = [\"telegram:2\"]\n{}",
        telegram_section(&fake),
        smtp.section(PUBLIC, &[("telegram:1", team), ("telegram:2", lead)])
    );
    let mut s = ServerProcess::start_with(BIN, &["team"], &extra).await;
    let id = propose_id(&s, "esc", &json!({"title": "Slow plan", "steps": [{"step": "wait"}]})).await;
    nth_mail_to(&smtp, team, "Plan '", 1).await;
    // The reminder and the escalation are due a second later on the turned clock.
    s.advance_clock(1_000).await;
    let reminder = nth_mail_to(&smtp, team, "Reminder: ", 1).await;
    assert!(reminder.body("text/plain").contains("reminder 1"), "{}", reminder.body("text/plain"));
    let escalated = nth_mail_to(&smtp, lead, "Escalated: ", 1).await;
    let text = escalated.body("text/plain");
    assert!(text.contains("no decision after"), "{text}");
    decide_by(&s, &tokens(&text)[0], "").await;
    assert_eq!(status_of(&s, &id).await, "approved");
    let approvals: Vec<_> = audit(&s, "session=esc&limit=1000").await.into_iter().filter(|e| e["action"] == "approve").collect();
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0]["actor"], "telegram:2 via email");
    // Each got what was theirs only.
    let mails = smtp.captured();
    let to = |address: &str| mails.iter().filter(|m| m.to.iter().any(|t| t == address)).map(|m| m.header("subject")).collect::<Vec<_>>();
    assert_eq!(to(team).len(), 2, "the card and the reminder: {:?}", to(team));
    assert_eq!(to(lead).len(), 1, "the escalation only: {:?}", to(lead));
}

#[tokio::test]
async fn an_email_the_smtp_server_refused_is_sent_again() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    smtp.refuse_next(2);
    let s = start(&fake, &smtp).await;
    propose_id(&s, "retry", &json!({"title": "Flaky relay", "steps": [{"step": "send"}]})).await;
    let mail = nth_mail(&smtp, 1).await;
    assert_eq!(tokens(&mail.body("text/plain")).len(), 3);
    // Recorded once the SMTP server's answer is back.
    let recorded = || async { super::kit::audit_actions(&s, "retry").await.iter().any(|a| a == "email_sent") };
    eventually(WAIT, "the email_sent audit record", recorded).await;
    let actions = super::kit::audit_actions(&s, "retry").await;
    let count = |action: &str| actions.iter().filter(|a| *a == action).count();
    assert_eq!((count("email_not_sent"), count("email_sent")), (2, 1), "{actions:?}");
    assert_eq!(smtp.captured().len(), 1, "sent once");
}

#[tokio::test]
async fn an_email_cut_off_by_a_crash_is_sent_after_the_restart() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    smtp.hold_next(1);
    let mut s = start(&fake, &smtp).await;
    let id = propose_id(&s, "crash", &json!({"title": "Survive a crash", "steps": [{"step": "send"}]})).await;
    // The email is mid-conversation with the SMTP server when the process dies.
    smtp.wait_held(1, WAIT).await;
    s.kill9().await;
    assert!(smtp.captured().is_empty());
    s.restart().await;
    let mail = nth_mail(&smtp, 1).await;
    let links = tokens(&mail.body("text/plain"));
    assert_eq!(links.len(), 3);
    decide_by(&s, &links[0], "").await;
    assert_eq!(status_of(&s, &id).await, "approved");
}

#[tokio::test]
async fn the_links_of_a_pruned_approval_are_pruned_with_it() {
    let (fake, smtp) = (FakeTelegram::start().await, FakeSmtp::start().await);
    // Retention is a sled feature: sled here even in the PostgreSQL pass.
    let retention = format!("\n[retention]\ndecided_approvals = \"1s\"\ninterval = \"1h\"\n{}", plangate_testkit::pg::SLED);
    let s = start_and(&fake, &smtp, &retention).await;
    propose_id(&s, "old", &json!({"title": "Done long ago", "steps": [{"step": "one"}]})).await;
    let links = tokens(&nth_mail(&smtp, 1).await.body("text/plain"));
    decide_by(&s, &links[0], "").await;
    propose_id(&s, "old", &json!({"title": "The next plan", "steps": [{"step": "one"}]})).await;
    assert_eq!(open(&s, &links[1]).await.0, 410, "dead, and still known");

    eventually(WAIT, "the decided approval is past its age", || async { prune(&s, true).await["approvals"] == 1 }).await;
    assert_eq!(prune(&s, false).await["approvals"], 1);
    for link in &links {
        assert_eq!(open(&s, link).await.0, 404, "its records went with the approval");
    }
}

/// `POST /v1/operator/prune`: its report.
async fn prune(s: &ServerProcess, dry_run: bool) -> serde_json::Value {
    let (st, r) = call(s.operator(Method::POST, &format!("/v1/operator/prune?dry_run={dry_run}"))).await;
    assert_eq!(st, 200, "{r}");
    r
}
