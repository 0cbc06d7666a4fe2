//! Signed webhooks through the real binary, to a loopback receiver
//! (`plangate_testkit::webhook`): the body is the API's Decision JSON, the
//! signature verifies (recomputed here with `hmac`, not with plangate's
//! code), errors are retried and every attempt is audited, redirects are not
//! followed, a kill -9 between the decision and its delivery still delivers
//! after the restart, and a receiver deduplicating by `X-Plangate-Delivery`
//! processes each decision exactly once.

use super::kit::{audit, call, decide, id_of, plan, propose_as, propose_id};
use hmac::{Hmac, Mac};
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::server::{ServerProcess, OTHER_AGENT_TOKEN};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use plangate_testkit::webhook::{FakeReceiver, Received, Reply};
use reqwest::Method;
use serde_json::{json, Value};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const SECRET: &str = "webhook-secret-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(20);
/// The replay window a receiver should enforce on `t=` (docs/AGENTS.md).
const REPLAY_WINDOW_SECS: i64 = 300;

/// `[agents.<agent>.webhook]` pointing at `path` of the receiver.
fn webhook(agent: &str, receiver: &FakeReceiver, path: &str) -> String {
    format!("\n[agents.{agent}.webhook]\nurl = \"{}\"\nsecret = \"{SECRET}\"\n", receiver.url(path))
}

/// The operator's (alice's) decision `action` on approval `id`.
fn verdict(action: &str) -> Value {
    json!({"action": action, "feedback": "smaller steps", "actor": "alice"})
}

/// The audit of one session: `(action, detail)`, oldest first.
async fn audit_pairs(s: &ServerProcess, agent: &str, session: &str) -> Vec<(String, String)> {
    audit(s, &format!("agent={agent}&session={session}&limit=1000"))
        .await
        .iter()
        .map(|e| (e["action"].as_str().unwrap_or("").to_string(), e["detail"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// The webhook records of a session's audit once `done` holds for them.
async fn webhook_audit_until(
    s: &ServerProcess,
    agent: &str,
    session: &str,
    what: &str,
    done: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + WAIT;
    loop {
        let found: Vec<_> = audit_pairs(s, agent, session).await.into_iter().filter(|(a, _)| a.starts_with("webhook_")).collect();
        if done(&found) {
            return found;
        }
        assert!(Instant::now() < deadline, "{agent}/{session}: still no {what} after {WAIT:?}: {found:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The webhook records of a session's audit once `action` is among them.
async fn webhook_audit(s: &ServerProcess, agent: &str, session: &str, action: &str) -> Vec<(String, String)> {
    webhook_audit_until(s, agent, session, action, |found| found.iter().any(|(a, _)| a == action)).await
}

/// What a receiver does with `X-Plangate-Signature`: recompute
/// HMAC-SHA256(secret, "<t>.<body>") and compare in constant time, and
/// refuse a `t` outside the replay window. Returns `t`.
fn verify(r: &Received, secret: &str) -> Result<i64, String> {
    let header = r.header("x-plangate-signature");
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => v1 = hex::decode(value).ok(),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else { return Err(format!("malformed signature header {header:?}")) };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    if (now - t).abs() > REPLAY_WINDOW_SECS {
        return Err(format!("t={t} is outside the {REPLAY_WINDOW_SECS} s window around {now}"));
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(r.body.as_bytes());
    mac.verify_slice(&v1).map_err(|_| "signature mismatch".to_string())?;
    Ok(t)
}

/// The body without the fields the webhook adds to the API's Decision.
fn decision_part(body: &Value) -> Value {
    let mut d = body.clone();
    for extra in ["event", "delivery_id", "agent", "session_id"] {
        d.as_object_mut().unwrap().remove(extra);
    }
    d
}

#[tokio::test]
async fn a_decision_is_posted_signed_with_the_decision_json_of_the_api() {
    let receiver = FakeReceiver::start().await;
    let s = ServerProcess::start(BIN, &webhook("demo", &receiver, "/hook")).await;
    let id = propose_id(&s, "s1", &plan("Add retries", &["read", "write"])).await;
    // A proposal is not a decision: nothing is posted for it.
    decide(&s, &id, &verdict("approve")).await;
    let r = receiver.wait_for(WAIT, "the approval", |all| all.first().cloned()).await;

    assert_eq!(r.method, "POST");
    assert_eq!(r.header("content-type"), "application/json");
    assert_eq!(r.header("x-plangate-event"), "decision");
    assert_eq!(r.header("x-plangate-delivery"), format!("decision:{id}:v1:approved"));
    assert_eq!(r.header("x-plangate-attempt"), "1");
    assert!(r.header("user-agent").starts_with("plangate/"), "{:?}", r.headers);
    verify(&r, SECRET).unwrap();
    // A receiver with another secret, or a body changed on the way, does not verify.
    assert_eq!(verify(&r, "another-secret-0123456789").unwrap_err(), "signature mismatch");
    let mut tampered = r.clone();
    tampered.body = tampered.body.replace("approved", "rejected");
    assert!(verify(&tampered, SECRET).is_err());

    let body = r.json();
    assert_eq!((body["event"].as_str(), body["agent"].as_str(), body["session_id"].as_str()), (Some("decision"), Some("demo"), Some("s1")));
    assert_eq!(body["delivery_id"].as_str(), Some(r.header("x-plangate-delivery")));
    let (st, api) = call(s.agent(Method::GET, "/v1/sessions/s1/decision")).await;
    assert_eq!(st, 200);
    assert_eq!(decision_part(&body), api, "the webhook carries the Decision exactly as the API answers it");
    assert!(api["injection"].as_str().unwrap().starts_with("[PLAN_DECISION]: approved"));

    // Changes requested, a cancel, and a release of a session with nothing
    // pending: one delivery each, each signed.
    let revise = propose_id(&s, "s2", &plan("Refactor", &["read", "write"])).await;
    decide(&s, &revise, &verdict("revise")).await;
    let cancel = propose_id(&s, "s3", &plan("Drop the table", &["read", "write"])).await;
    decide(&s, &cancel, &verdict("cancel")).await;
    let (st, _) = call(s.operator(Method::POST, "/v1/operator/sessions/demo/s4/release").json(&json!({"actor": "bob"}))).await;
    assert_eq!(st, 200);
    let all = receiver.wait_for(WAIT, "four deliveries", |all| (all.len() >= 4).then(|| all.to_vec())).await;
    let by_session: BTreeMap<String, Value> =
        all.iter().map(|r| (r.json()["session_id"].as_str().unwrap().to_string(), r.json())).collect();
    assert_eq!(by_session["s2"]["status"], "rejected");
    assert_eq!(by_session["s2"]["feedback"], "smaller steps");
    assert_eq!(by_session["s3"]["status"], "cancelled");
    assert!(by_session["s3"]["injection"].as_str().unwrap().starts_with("[PLAN_DECISION]: cancelled"));
    assert_eq!(by_session["s4"]["event"], "release");
    assert_eq!(by_session["s4"]["released_by"], "operator:bob");
    assert!(by_session["s4"]["injection"].as_str().unwrap().starts_with("[PLAN_DECISION]: released"));
    for r in &all {
        verify(r, SECRET).unwrap_or_else(|e| panic!("{e}: {}", r.body));
    }
    let audited = webhook_audit(&s, "demo", "s1", "webhook_delivered").await;
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert!(audited[0].1.contains(&format!("decision decision:{id}:v1:approved to 127.0.0.1, attempt 1: HTTP 200")), "{audited:?}");
    // The secret is in no log the operator can read.
    let everything = audit_pairs(&s, "demo", "s1").await;
    assert!(!format!("{everything:?}").contains(SECRET));
}

#[tokio::test]
async fn a_receiver_answering_500_then_429_is_retried_until_it_takes_the_delivery() {
    let receiver = FakeReceiver::start().await;
    receiver.script(
        "/hook",
        [Reply::status(500), Reply::Status(429, vec![("retry-after".into(), "1".into())]), Reply::status(503), Reply::status(200)],
    );
    let s = ServerProcess::start(BIN, &webhook("demo", &receiver, "/hook")).await;
    let id = propose_id(&s, "retry", &plan("Retry me", &["read", "write"])).await;
    let started = Instant::now();
    decide(&s, &id, &verdict("approve")).await;
    let decided_in = started.elapsed();
    let all = receiver.wait_for(WAIT, "a delivered attempt", |all| all.iter().any(Received::delivered).then(|| all.to_vec())).await;

    let answers: Vec<Option<u16>> = all.iter().map(|r| r.answered).collect();
    assert_eq!(answers, [Some(500), Some(429), Some(503), Some(200)]);
    let attempts: Vec<&str> = all.iter().map(|r| r.header("x-plangate-attempt")).collect();
    assert_eq!(attempts, ["1", "2", "3", "4"]);
    let key = format!("decision:{id}:v1:approved");
    assert!(all.iter().all(|r| r.header("x-plangate-delivery") == key && r.body == all[0].body), "every retry is the same delivery");
    for r in &all {
        verify(r, SECRET).unwrap();
    }
    // The 429's Retry-After (1 s) was honoured.
    let after_429 = all[2].at - all[1].at;
    assert!(after_429 >= Duration::from_millis(950), "{after_429:?}");
    assert!(decided_in < Duration::from_secs(2), "the decision waited for the receiver: {decided_in:?}");

    let audited = webhook_audit(&s, "demo", "retry", "webhook_delivered").await;
    let lines: Vec<String> = audited.iter().map(|(a, d)| format!("{a}: {d}")).collect();
    println!("attempts in the audit:\n  {}", lines.join("\n  "));
    assert_eq!(audited.len(), 4, "{lines:?}");
    assert!(audited[0].0 == "webhook_retry" && audited[0].1.contains("attempt 1: HTTP 500; next attempt in"), "{lines:?}");
    assert!(audited[1].1.contains("attempt 2: HTTP 429; next attempt in 1.0 s"), "{lines:?}");
    assert!(audited[2].1.contains("attempt 3: HTTP 503"), "{lines:?}");
    assert!(audited[3].0 == "webhook_delivered" && audited[3].1.contains("attempt 4: HTTP 200"), "{lines:?}");
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_a_4xx_is_not_retried() {
    let receiver = FakeReceiver::start().await;
    let elsewhere = receiver.url("/elsewhere");
    receiver.script("/moved", [Reply::Status(302, vec![("location".into(), elsewhere)]), Reply::status(410)]);
    let extra = webhook("other", &receiver, "/moved");
    let s = ServerProcess::start(BIN, &extra).await;
    // Agent `other`: v1 gets changes requested (answered 302), v2 is approved (answered 410).
    let v1 = id_of(&propose_as(&s, OTHER_AGENT_TOKEN, "o1", &plan("First try", &["read", "write"])).await);
    decide(&s, &v1, &verdict("revise")).await;
    webhook_audit(&s, "other", "o1", "webhook_failed").await;
    let v2 = id_of(&propose_as(&s, OTHER_AGENT_TOKEN, "o1", &plan("Second try", &["read", "write"])).await);
    decide(&s, &v2, &verdict("approve")).await;
    let audited = eventually_failed_twice(&s).await;

    // `webhook_failed` is recorded when a delivery stops for good: both
    // stopped after one attempt each.
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert!(audited[0].1.contains("attempt 1: HTTP 302, a redirect, which plangate does not follow"), "{audited:?}");
    assert!(audited[0].1.contains("agents.other.webhook.url") && audited[0].1.ends_with("not retried"), "{audited:?}");
    assert!(audited[1].1.contains("attempt 1: HTTP 410; not retried"), "{audited:?}");
    assert_eq!(receiver.received_at("/moved").len(), 2);
    assert!(receiver.received_at("/elsewhere").is_empty(), "the redirect was followed");
    // Agent `demo` has no webhook: nothing is posted for its decisions.
    let id = propose_id(&s, "d1", &plan("No hook", &["read", "write"])).await;
    decide(&s, &id, &verdict("approve")).await;
    assert_eq!(receiver.received().len(), 2);
}

async fn eventually_failed_twice(s: &ServerProcess) -> Vec<(String, String)> {
    webhook_audit_until(s, "other", "o1", "two webhook_failed", |found| found.iter().filter(|(a, _)| a == "webhook_failed").count() == 2)
        .await
}

/// The receiver hangs on the first delivery; plangate is killed while it
/// waits, restarted, and delivers from its outbox. Meanwhile the other
/// sessions' deliveries went through, and no decision waited for any of it.
#[tokio::test]
async fn a_kill_9_before_delivery_still_delivers_after_restart_once_per_key() {
    let receiver = FakeReceiver::start().await;
    receiver.script("/hook", [Reply::Hang]);
    let mut s = ServerProcess::start(BIN, &webhook("demo", &receiver, "/hook")).await;
    let first = propose_id(&s, "k1", &plan("Hangs first", &["read", "write"])).await;
    decide(&s, &first, &verdict("approve")).await;
    receiver.wait_for(WAIT, "the first delivery, hanging", |all| (all.len() == 1).then_some(())).await;

    // A hanging receiver delays neither decisions nor other sessions' deliveries.
    let second = propose_id(&s, "k2", &plan("Goes through", &["read", "write"])).await;
    let third = propose_id(&s, "k3", &plan("Also goes through", &["read", "write"])).await;
    let started = Instant::now();
    decide(&s, &second, &verdict("revise")).await;
    decide(&s, &third, &verdict("cancel")).await;
    let decided_in = started.elapsed();
    assert!(decided_in < Duration::from_secs(2), "decisions waited for the receiver: {decided_in:?}");
    receiver.wait_for(WAIT, "k2 and k3 delivered", |all| (all.iter().filter(|r| r.delivered()).count() == 2).then_some(())).await;

    s.kill9().await;
    s.restart().await;
    let key = format!("decision:{first}:v1:approved");
    receiver
        .wait_for(WAIT, "k1 delivered after the restart", |all| {
            all.iter().any(|r| r.delivered() && r.header("x-plangate-delivery") == key).then_some(())
        })
        .await;
    webhook_audit(&s, "demo", "k1", "webhook_delivered").await;

    // As a receiver deduplicating by X-Plangate-Delivery sees it.
    let all = receiver.received();
    let mut by_key: BTreeMap<String, Vec<&Received>> = BTreeMap::new();
    for r in &all {
        by_key.entry(r.header("x-plangate-delivery").to_string()).or_default().push(r);
    }
    let expected = [key.clone(), format!("decision:{second}:v1:rejected"), format!("decision:{third}:v1:cancelled")];
    assert_eq!(by_key.keys().cloned().collect::<std::collections::BTreeSet<_>>(), expected.iter().cloned().collect());
    for (key, requests) in &by_key {
        assert!(requests.iter().all(|r| r.body == requests[0].body), "{key}: duplicates must carry the same body");
        assert!(requests.iter().any(|r| r.delivered()), "{key} never delivered");
        for r in requests {
            verify(r, SECRET).unwrap();
        }
    }
    let processed = by_key.len();
    let duplicates = all.len() - processed;
    let per_key: Vec<String> = by_key
        .iter()
        .map(|(key, requests)| {
            let answers: Vec<String> = requests.iter().map(|r| r.answered.map_or("hung".to_string(), |s| s.to_string())).collect();
            format!("{key}: {}", answers.join(", "))
        })
        .collect();
    println!(
        "receiver after kill -9 + restart: {} requests, {processed} distinct delivery keys (processed once each), \
         {duplicates} duplicate(s), each sharing its key and body:\n  {}",
        all.len(),
        per_key.join("\n  ")
    );
    assert_eq!(processed, 3);
    assert!(by_key[&key].len() >= 2, "k1 was delivered again after the restart under the same key");
    assert_eq!(by_key[&key][0].answered, None, "the first attempt hung");
}

/// The agent stopped waiting (its long-poll answered "pending"); a human
/// decides afterwards; the decision still reaches the runner's receiver.
#[tokio::test]
async fn late_decision_reaches_a_webhook_receiver() {
    let receiver = FakeReceiver::start().await;
    let s = ServerProcess::start(BIN, &webhook("demo", &receiver, "/runner")).await;
    let id = propose_id(&s, "late", &plan("Deploy the fix", &["read", "write"])).await;
    let started = Instant::now();
    let (st, d) = call(s.agent(Method::GET, "/v1/sessions/late/decision?wait=1")).await;
    assert_eq!((st, d["status"].as_str()), (200, Some("pending")));
    let gave_up = started.elapsed();
    // Nobody is waiting any more.
    let (_, health) = call(s.http.get(s.url("/healthz"))).await;
    assert_eq!(health["waiting"], 0, "{health}");
    assert!(receiver.received().is_empty());

    let decided = Instant::now();
    let decided_after = started.elapsed();
    decide(&s, &id, &verdict("approve")).await;
    let r = receiver.wait_for(WAIT, "the late approval", |all| all.iter().find(|r| r.delivered()).cloned()).await;
    verify(&r, SECRET).unwrap();
    let body = r.json();
    assert_eq!((body["event"].as_str(), body["status"].as_str()), (Some("decision"), Some("approved")));
    println!(
        "late decision reaches a webhook receiver: the agent's wait ended \"pending\" after {:.1} s with no waiter left; \
         approved {:.1} s after the agent began waiting; POSTed to the receiver {} ms after the decision (delivery {}, signature verified)",
        gave_up.as_secs_f64(),
        decided_after.as_secs_f64(),
        r.at.duration_since(decided).as_millis(),
        r.header("x-plangate-delivery")
    );
}

#[tokio::test]
async fn an_answer_to_an_agents_question_is_posted_too() {
    const CHAT: i64 = -100777;
    const ALICE: i64 = 111111;
    let fake = FakeTelegram::start().await;
    let receiver = FakeReceiver::start().await;
    let extra = format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\npoll_timeout_secs = 1\n\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{CHAT}\"\napprovers = [\"telegram:{ALICE}\"]\n{}",
        fake.api_url(),
        webhook("demo", &receiver, "/hook")
    );
    let s = ServerProcess::start_with(BIN, &["ops"], &extra).await;
    let (st, _) = call(s.agent(Method::POST, "/v1/sessions/ask/enter")).await;
    assert_eq!(st, 200);
    let (st, q) = call(
        s.agent(Method::POST, "/v1/sessions/ask/questions").json(&json!({"question": "Which database?", "options": ["pg", "sqlite"]})),
    )
    .await;
    assert_eq!(st, 201, "{q}");
    let qid = q["question_id"].as_str().unwrap().to_string();
    let message = fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains("Which database?")).await.message_id_sent().unwrap();
    let alice = FakeTelegram::user(ALICE, Some("alice"), "alice");
    fake.push_update(fake.callback_update(CHAT, message, alice, &encode(Button::Answer(ApprovalId::parse(&qid).unwrap(), 0))));

    let r = receiver.wait_for(WAIT, "the answer", |all| all.first().cloned()).await;
    verify(&r, SECRET).unwrap();
    assert_eq!(r.header("x-plangate-event"), "answer");
    assert_eq!(r.header("x-plangate-delivery"), format!("answer:{qid}"));
    let body = r.json();
    assert_eq!(
        (body["event"].as_str(), body["question_id"].as_str(), body["answer"].as_str(), body["status"].as_str()),
        (Some("answer"), Some(qid.as_str()), Some("pg"), Some("answered"))
    );
    assert_eq!(body["question"], "Which database?");
    assert!(body["answered_by"].as_str().is_some_and(|by| !by.is_empty()), "{body}");
    // The API says the same.
    let (_, api) = call(s.agent(Method::GET, &format!("/v1/sessions/ask/questions/{qid}"))).await;
    assert_eq!((api["answer"].clone(), api["answered_by"].clone()), (body["answer"].clone(), body["answered_by"].clone()));
}

#[test]
fn config_check_refuses_a_webhook_that_is_not_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = |url: &str| {
        let path = dir.path().join("plangate.toml");
        let text = format!(
            "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"{}\"\n\n[agents.ci]\ntoken = \"ci-token-0123456789abcdef\"\n\n[agents.ci.webhook]\nurl = \"{url}\"\nsecret = \"{SECRET}\"\n",
            dir.path().join("data").display()
        );
        std::fs::write(&path, text).unwrap();
        std::process::Command::new(BIN).args(["config", "check", "--config"]).arg(&path).output().unwrap()
    };
    for (url, says) in [
        ("ftp://runner.example.com/hook", "uses the \"ftp\" scheme; only http:// and https:// URLs are accepted"),
        ("file:///etc/passwd", "uses the \"file\" scheme; only http:// and https:// URLs are accepted"),
        ("runner.example.com/hook", "is not a URL"),
    ] {
        let out = config(url);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url} accepted");
        assert!(stderr.contains("invalid setting `agents.ci.webhook.url`") && stderr.contains(says), "{url}: {stderr}");
    }
    let out = config("https://runner.example.com/hook");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("https://runner.example.com/hook") && !stdout.contains(SECRET), "{stdout}");
}
