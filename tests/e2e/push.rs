//! `[push]` end to end, through the real binary, the Telegram fake and a
//! loopback fake push service (`plangate_testkit::push`), which verifies
//! each push's VAPID JWT (signature, audience, expiry, subject) and
//! decrypts its aes128gcm body with the test device's own keys.
//!
//! What is real and what is simulated:
//!
//! * Real: the binary, its durable push job (outbox, retries, kill -9),
//!   VAPID signing and RFC 8291 encryption, the push service's HTTP
//!   exchange, the `/push/…` routes with real sign-in cookies, the
//!   decision through `Core::decide`, the Telegram card edit, the audit.
//!   In `browser_*`: headless Chromium loads the signed-in page, whose
//!   `push.js` registers the real service worker (`/sw.js`; asserted
//!   active), and Chromium's own installability check
//!   (`Page.getInstallabilityErrors`) finds nothing missing; the push is delivered into that worker by Chromium itself
//!   (DevTools Protocol `ServiceWorker.deliverPushMessage`, the DevTools
//!   "Push" button), the worker fetches the card and shows the
//!   notification (read back with `registration.getNotifications()`:
//!   title, risk, the Approve and Request changes buttons), and Approve
//!   runs the worker's own `act()`, the function its `notificationclick`
//!   handler calls, reached through a `postMessage` from the page.
//! * Simulated: the subscription. Chromium's `pushManager.subscribe` talks
//!   to Google's FCM, which is not reachable here, so the page's own
//!   `save()` (what its subscribe button calls with the browser's
//!   subscription) is given a subscription whose endpoint is the fake and
//!   whose keys the test holds. The push service's hop to the phone is
//!   the fake's decryption plus the CDP delivery of the same plaintext;
//!   no notification is tapped by a finger (`notificationclick` itself is
//!   not dispatched: headless Chromium shows no notification to click).

use super::kit::{audit, call, propose_id};
use crate::telegram::{config, ALICE};
use crate::web::{browser_sign_in, http_sign_in, screenshot, sign_in_link, Driver, BOB};
use plangate_testkit::push::{Device, FakePush, Pushed};
use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const PUBLIC: &str = crate::web::PUBLIC;
const WAIT: Duration = Duration::from_secs(20);
const TITLE: &str = "Rotate the signing keys";
const STEP: &str = "Revoke the leaked deploy token";

async fn start(fake: &FakeTelegram) -> ServerProcess {
    let push = "[push]\nsubject = \"mailto:ops@example.com\"\nendpoint_hosts = [\"127.0.0.1\"]\n";
    ServerProcess::start_with_server(BIN, &["ops"], &format!("public_url = \"{PUBLIC}\""), &format!("{}{push}", config(fake))).await
}

fn plan(n: usize) -> Value {
    json!({"title": format!("{TITLE} {n}"), "markdown": format!("# {TITLE} {n}\n\n1. {STEP}\n2. Issue new keys\n")})
}

/// POST a subscription as the page's `save()` does, with `cookie`.
async fn subscribe(s: &ServerProcess, cookie: &str, device: &Device) -> (u16, Value) {
    call(s.http.post(s.url("/push/subscription")).header("cookie", cookie).json(&device.subscription())).await
}

/// The note id a push carried.
fn note_of(push: &Pushed) -> String {
    let body: Value = serde_json::from_str(&push.text()).unwrap_or(Value::Null);
    body["n"].as_str().unwrap_or_default().to_string()
}

async fn get_note(s: &ServerProcess, cookie: Option<&str>, n: &str) -> (u16, Value) {
    let mut req = s.http.get(s.url(&format!("/push/n/{n}")));
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    call(req).await
}

async fn post_note(s: &ServerProcess, cookie: &str, n: &str, action: &str) -> (u16, Value) {
    call(s.http.post(s.url(&format!("/push/n/{n}"))).header("cookie", cookie).json(&json!({ "action": action }))).await
}

async fn status_of(s: &ServerProcess, id: &str) -> String {
    let (st, v) = call(s.operator(Method::GET, &format!("/v1/approvals/{id}"))).await;
    assert_eq!(st, 200, "{v}");
    v["status"].as_str().unwrap_or_default().to_string()
}

/// The pushes to `device` so far.
fn to(push: &FakePush, device: &str) -> Vec<Pushed> {
    push.pushed().into_iter().filter(|p| p.device == device).collect()
}

/// Every push's checks: a verified VAPID JWT with the server's key, a body
/// that decrypts to the note id and nothing else.
fn assert_opaque(p: &Pushed, public_key: &str) {
    assert!(p.vapid.is_ok(), "VAPID: {:?}", p.vapid);
    assert_eq!(p.vapid_key, public_key, "signed with the key the page subscribed with");
    let text = p.text();
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("decrypted JSON: {:?}", p.plaintext));
    assert_eq!(body.as_object().map(|o| o.len()), Some(1), "only the note id: {text}");
    assert_eq!(note_of(p).len(), 64, "{text}");
    for secret in [TITLE, STEP, "Rotate", "signing", "deploy", "Issue new keys"] {
        assert!(!text.contains(secret), "the push carries no plan text ({secret:?}): {text}");
    }
    assert_eq!(p.headers.get("content-encoding").map(String::as_str), Some("aes128gcm"));
    // The same size for every plan: the aes128gcm header (86 bytes), the
    // 72-byte body, its delimiter and the 16-byte tag.
    assert_eq!(p.body.len(), 175, "{text}");
}

#[tokio::test]
async fn push_reaches_the_approvers_device_opaquely_and_its_approve_decides() {
    let (fake, push) = (FakeTelegram::start().await, FakePush::start().await);
    let s = start(&fake).await;
    let (st, key) = call(s.http.get(s.url("/push/key"))).await;
    assert_eq!(st, 200, "{key}");
    let public_key = key["public_key"].as_str().expect("the VAPID public key").to_string();

    let alice = http_sign_in(&s, &sign_in_link(&fake, ALICE, "alice").await).await;
    let bob = http_sign_in(&s, &sign_in_link(&fake, BOB, "bob").await).await;
    let (phone, bobs) = (push.device("alice-phone"), push.device("bob-phone"));
    assert_eq!(subscribe(&s, &alice, &phone).await.0, 201);
    assert_eq!(subscribe(&s, &bob, &bobs).await.0, 201, "anyone signed in may subscribe; only approvers get pushes");
    // Nobody signed in, a foreign endpoint: refused.
    let (st, _) = call(s.http.post(s.url("/push/subscription")).json(&phone.subscription())).await;
    assert_eq!(st, 401);
    let mut evil = phone.subscription();
    evil["endpoint"] = json!("https://evil.example/push/1");
    let (st, v) = call(s.http.post(s.url("/push/subscription")).header("cookie", &alice).json(&evil)).await;
    assert_eq!(st, 400, "{v}");

    // A handful of proposals: each reaches Alice's phone within 2 s.
    let mut latencies = Vec::new();
    let mut ids = Vec::new();
    for n in 1..=8 {
        let started = Instant::now();
        ids.push(propose_id(&s, &format!("s{n}"), &plan(n)).await);
        let p = push
            .wait_for(WAIT, &format!("push {n} to Alice's phone"), |all| {
                all.iter().filter(|p| p.device == "alice-phone").nth(n - 1).cloned()
            })
            .await;
        latencies.push(p.at.duration_since(started));
        assert_opaque(&p, &public_key);
    }
    latencies.sort();
    let p95 = latencies[(latencies.len() * 95).div_ceil(100) - 1];
    println!(
        "push latency, proposal to push service, n={}: p50 {:?}, p95 {:?}, max {:?}",
        latencies.len(),
        latencies[latencies.len() / 2],
        p95,
        latencies[latencies.len() - 1]
    );
    assert!(p95 < Duration::from_secs(2), "p95 {p95:?}: {latencies:?}");
    assert!(to(&push, "bob-phone").is_empty(), "Bob approves nothing: no push");

    // The note opens only for Alice, and only with a session.
    let pushes = to(&push, "alice-phone");
    let n = note_of(&pushes[0]);
    let (st, card) = get_note(&s, Some(&alice), &n).await;
    assert_eq!(st, 200, "{card}");
    assert_eq!(card["title"], format!("{TITLE} 1 v1"));
    assert_eq!(card["risk"], "routine");
    assert_eq!(card["actions"], json!(["approve", "request_changes", "open"]));
    assert_eq!(card["url"], format!("/p/{}", ids[0]));
    assert_eq!(get_note(&s, Some(&bob), &n).await.0, 403, "another person's session");
    assert_eq!(get_note(&s, None, &n).await.0, 401, "no session");
    for forged in ["0".repeat(64), "ab".repeat(32), "not-a-note".to_string()] {
        assert_eq!(get_note(&s, Some(&alice), &forged).await.0, 404, "{forged}");
        assert_eq!(post_note(&s, &alice, &forged, "approve").await.0, 404, "{forged}");
    }
    assert_eq!(post_note(&s, &bob, &n, "approve").await.0, 403, "Bob's session cannot use Alice's note");
    assert_eq!(status_of(&s, &ids[0]).await, "pending");

    // Alice's Approve decides, as her, via push; the card is edited.
    let (st, said) = post_note(&s, &alice, &n, "approve").await;
    assert_eq!(st, 200, "{said}");
    assert_eq!(status_of(&s, &ids[0]).await, "approved");
    let decisions: Vec<Value> = audit(&s, "session=s1&limit=1000").await.into_iter().filter(|e| e["action"] == "approve").collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert!(decisions[0]["actor"].as_str().unwrap_or_default().contains("via push"), "{decisions:?}");
    assert!(
        decisions[0]["actor"].as_str().unwrap_or_default().contains(&ALICE.to_string())
            || decisions[0]["actor"].as_str().unwrap_or_default().contains("alice"),
        "{decisions:?}"
    );
    fake.wait_request("editMessageText", WAIT, |r| r.str("text").contains("Approved")).await;
    // A stale note (its plan decided) opens and decides nothing.
    assert_eq!(get_note(&s, Some(&alice), &n).await.0, 410);
    assert_eq!(post_note(&s, &alice, &n, "approve").await.0, 410);

    // Request changes from the next one.
    let (st, said) = post_note(&s, &alice, &note_of(&pushes[1]), "request_changes").await;
    assert_eq!(st, 200, "{said}");
    assert_eq!(status_of(&s, &ids[1]).await, "rejected", "changes requested");

    // A plan whose policy asks for more than a tap (it declares a risk
    // class): its notification offers Open only, and a tap cannot decide it.
    let risky_plan =
        json!({"title": format!("{TITLE} risky"), "steps": [{"step": STEP}], "scope": {"paths": ["src/**"]}, "allows": ["db.drop"]});
    let risky = propose_id(&s, "s9", &risky_plan).await;
    let p = push.wait_for(WAIT, "the risky plan's push", |all| all.iter().filter(|p| p.device == "alice-phone").nth(8).cloned()).await;
    assert_opaque(&p, &public_key);
    let (st, card) = get_note(&s, Some(&alice), &note_of(&p)).await;
    assert_eq!(st, 200, "{card}");
    assert_eq!(card["actions"], json!(["open"]), "{card}");
    assert!(card["risk"].as_str().unwrap_or_default().contains("db.drop"), "{card}");
    assert_eq!(post_note(&s, &alice, &note_of(&p), "approve").await.0, 403);
    assert_eq!(status_of(&s, &risky).await, "pending");

    // One's own subscription only can be removed.
    let remove = |cookie: &str, device: &Device| {
        s.http.delete(s.url("/push/subscription")).header("cookie", cookie).json(&json!({ "endpoint": device.endpoint }))
    };
    assert_eq!(call(remove(&bob, &phone)).await.0, 404, "Bob cannot remove Alice's device");
    assert_eq!(call(remove(&bob, &bobs)).await.0, 200);
    assert_eq!(call(remove(&bob, &bobs)).await.0, 404, "gone");

    // The push service says the subscription is gone (410): removed, audited,
    // never pushed to again.
    push.script("alice-phone", [410]);
    propose_id(&s, "s20", &plan(20)).await;
    let gone = push.wait_for(WAIT, "the 410", |all| all.iter().find(|p| p.answered == 410).cloned()).await;
    assert_eq!(gone.device, "alice-phone");
    eventually(WAIT, "the removal audited", || async {
        audit(&s, "session=s20&limit=1000").await.iter().any(|e| e["action"] == "push_subscription_removed")
    })
    .await;
    let before = to(&push, "alice-phone").len();
    propose_id(&s, "s21", &plan(21)).await;
    fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains(&format!("{TITLE} 21"))).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(to(&push, "alice-phone").len(), before, "no push to a removed subscription");
}

#[tokio::test]
async fn a_push_the_service_refused_is_retried_and_survives_kill_9() {
    let (fake, push) = (FakeTelegram::start().await, FakePush::start().await);
    let mut s = start(&fake).await;
    let key = call(s.http.get(s.url("/push/key"))).await.1["public_key"].clone();
    // The VAPID key was made on first start, readable by plangate alone.
    let mode =
        std::fs::metadata(s.data_path().join("vapid-key")).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    if std::env::var("PLANGATE_TEST_BACKEND").as_deref() != Ok("postgres") {
        assert_eq!(mode.ok(), Some(0o600));
    }
    let alice = http_sign_in(&s, &sign_in_link(&fake, ALICE, "alice").await).await;
    let phone = push.device("alice-phone");
    assert_eq!(subscribe(&s, &alice, &phone).await.0, 201);
    // 500, then the process dies before the retry (a second later).
    push.script("alice-phone", [500]);
    propose_id(&s, "s1", &plan(1)).await;
    push.wait_for(WAIT, "the 500", |all| all.iter().find(|p| p.answered == 500).cloned()).await;
    s.kill9().await;
    s.restart().await;
    assert_eq!(call(s.http.get(s.url("/push/key"))).await.1["public_key"], key, "the same VAPID key after the restart");
    let delivered =
        push.wait_for(WAIT, "the push delivered after the restart", |all| all.iter().find(|p| p.answered == 201).cloned()).await;
    assert_eq!(note_of(&delivered).len(), 64);
    // A delivered push is not sent again.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(push.pushed().iter().filter(|p| p.answered == 201).count(), 1, "{:#?}", push.pushed());

    // 429 is retried as well.
    push.script("alice-phone", [429]);
    propose_id(&s, "s2", &plan(2)).await;
    push.wait_for(WAIT, "a 429 then the push delivered", |all| {
        let limited = all.iter().position(|p| p.answered == 429)?;
        all[limited..].iter().find(|p| p.answered == 201).cloned()
    })
    .await;

    // A subscription past its lifetime (30 days) gets no push.
    let before = push.pushed().len();
    s.advance_clock(31 * 24 * 60 * 60 * 1000).await;
    propose_id(&s, "s3", &plan(3)).await;
    fake.wait_request("sendMessage", WAIT, |r| r.str("text").contains(&format!("{TITLE} 3"))).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(push.pushed().len(), before, "no push to a lapsed subscription: {:#?}", &push.pushed()[before..]);
}

// ------------------------------------------------------------------ browser

/// A DevTools Protocol command through chromedriver's
/// `POST /session/{id}/goog/cdp/execute`.
#[derive(Debug)]
struct Cdp(&'static str, Value);

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &reqwest::Url, session: Option<&str>) -> Result<reqwest::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &reqwest::Url) -> (reqwest::Method, Option<String>) {
        (reqwest::Method::POST, Some(json!({"cmd": self.0, "params": self.1}).to_string()))
    }
}

/// Run `script` (its last argument is the callback) in the page.
async fn run(b: &fantoccini::Client, script: &str, args: Vec<Value>) -> Value {
    b.execute_async(script, args).await.unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

const NOTIFICATIONS: &str = "const done = arguments[arguments.length - 1];
    navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns => done(ns.map(n => ({
      title: n.title, body: n.body, actions: n.actions.map(a => a.action), data: n.data }))), e => done({ error: String(e) }));";

#[tokio::test]
async fn browser_installs_the_worker_shows_the_push_and_approves_from_it() {
    let Some(driver) = Driver::start().await else { return };
    let (fake, push) = (FakeTelegram::start().await, FakePush::start().await);
    let s = start(&fake).await;
    let b = driver.browser(390, 844).await;
    browser_sign_in(&b, &s, &sign_in_link(&fake, ALICE, "alice").await).await;

    screenshot(&b, "push-phone.png").await;
    // The page registered its service worker, and it is active.
    let state = run(
        &b,
        "const done = arguments[0];
         navigator.serviceWorker.ready.then(r => done({ state: r.active && r.active.state, scope: r.scope }), e => done({ error: String(e) }));",
        vec![],
    )
    .await;
    assert_eq!(state["state"], "activated", "{state}");
    assert_eq!(state["scope"], format!("{}/", s.base), "{state}");
    // The manifest is served under the page's CSP.
    let manifest = s.http.get(s.url("/manifest.webmanifest")).send().await.expect("manifest");
    assert_eq!(manifest.status(), 200);
    assert!(manifest.headers()["content-security-policy"].to_str().unwrap_or_default().contains("manifest-src 'self'"));
    let manifest: Value = manifest.json().await.expect("json");
    assert_eq!(manifest["display"], "standalone");
    // Chromium's own installability check of the page (manifest, icons,
    // service worker): no errors means it offers "Install app".
    let installable = b.issue_cmd(Cdp("Page.getInstallabilityErrors", json!({}))).await.expect("Page.getInstallabilityErrors");
    assert_eq!(installable["installabilityErrors"], json!([]), "{installable}");

    // Subscribe through the page's own save(), with a subscription whose
    // endpoint is the fake (see the module doc).
    let phone = push.device("alice-phone");
    let saved = run(
        &b,
        "const done = arguments[1]; window.plangatePush.save(arguments[0]).then(d => done(d), e => done({ error: String(e) }));",
        vec![phone.subscription()],
    )
    .await;
    assert!(saved["expires_at"].is_i64(), "{saved}");
    let origin = s.base.clone();
    b.issue_cmd(Cdp("Browser.grantPermissions", json!({"origin": origin, "permissions": ["notifications"]})))
        .await
        .expect("grant notifications");

    let id = propose_id(&s, "s1", &plan(1)).await;
    let pushed = push.wait_for(WAIT, "the push", |all| all.first().cloned()).await;
    let n = note_of(&pushed);
    assert_eq!(n.len(), 64, "{:?}", pushed.plaintext);

    // Chromium delivers the decrypted payload into the real worker. The
    // registration id is not exposed to pages: the first ids of this fresh
    // profile are tried, in rounds (a loaded machine may take a while to
    // start the worker); a repeat replaces the notification (same tag).
    b.issue_cmd(Cdp("ServiceWorker.enable", json!({}))).await.expect("ServiceWorker.enable");
    let mut shown = Value::Null;
    let mut errors = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline && shown.as_array().is_none_or(|a| a.is_empty()) {
        for registration in ["0", "1", "2", "3"] {
            let data = json!({"origin": origin, "registrationId": registration, "data": pushed.text()});
            if let Err(e) = b.issue_cmd(Cdp("ServiceWorker.deliverPushMessage", data)).await {
                errors.push(format!("{registration}: {e}"));
            }
        }
        let until = Instant::now() + Duration::from_secs(4);
        while Instant::now() < until {
            shown = run(&b, NOTIFICATIONS, vec![]).await;
            if shown.as_array().is_some_and(|a| !a.is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    if shown.as_array().is_none_or(|a| a.is_empty()) {
        let permission = run(&b, "arguments[0](Notification.permission)", vec![]).await;
        errors.push(format!("Notification.permission in the page: {permission}"));
    }
    let notification =
        shown.as_array().and_then(|a| a.first()).cloned().unwrap_or_else(|| panic!("no notification shown: {shown}; {errors:?}"));
    assert_eq!(notification["title"], format!("{TITLE} 1 v1"), "{notification}");
    assert!(notification["body"].as_str().unwrap_or_default().contains("routine"), "{notification}");
    // Two buttons (Chrome shows two at most); Open is the tap on the notification.
    assert_eq!(notification["actions"], json!(["approve", "request_changes"]), "{notification}");
    assert_eq!(notification["data"]["n"], n.as_str());

    // Approve, through the worker's own act() (what notificationclick runs).
    let answer = run(
        &b,
        "const [n, url, done] = arguments;
         navigator.serviceWorker.ready.then(r => {
           const channel = new MessageChannel();
           channel.port1.onmessage = e => done(e.data);
           r.active.postMessage({ act: { n: n, action: 'approve', url: url } }, [channel.port2]);
         });",
        vec![json!(n), notification["data"]["url"].clone()],
    )
    .await;
    assert_eq!(answer["status"], 200, "{answer}");
    assert_eq!(status_of(&s, &id).await, "approved");
    fake.wait_request("editMessageText", WAIT, |r| r.str("text").contains("Approved")).await;
    let decisions: Vec<Value> = audit(&s, "session=s1&limit=1000").await.into_iter().filter(|e| e["action"] == "approve").collect();
    assert!(decisions.len() == 1 && decisions[0]["actor"].as_str().unwrap_or_default().contains("via push"), "{decisions:?}");
    b.close().await.expect("close");
}

/// A reminder pushes the plan again to its approver's devices, once; a
/// level of the ladder pushes it to the level's people (Bob: on the level,
/// no approver, so his notification offers Open only and his tap decides
/// nothing); a restart repeats none of them.
#[tokio::test]
async fn a_reminder_and_a_ladder_level_push_again_once_each() {
    let (fake, push) = (FakeTelegram::start().await, FakePush::start().await);
    let extra = format!(
        "[push]\nsubject = \"mailto:ops@example.com\"\nendpoint_hosts = [\"127.0.0.1\"]\n\
         [approvals]\nnudges = [\"10m\"]\ntimeout = \"2h\"\n[[approvals.ladder]]\nafter = \"20m\"\napprovers = [\"telegram:{BOB}\"]\n"
    );
    let mut s =
        ServerProcess::start_with_server(BIN, &["ops"], &format!("public_url = \"{PUBLIC}\""), &format!("{}{extra}", config(&fake))).await;
    let alice = http_sign_in(&s, &sign_in_link(&fake, ALICE, "alice").await).await;
    let bob = http_sign_in(&s, &sign_in_link(&fake, BOB, "bob").await).await;
    assert_eq!(subscribe(&s, &alice, &push.device("alice-phone")).await.0, 201);
    assert_eq!(subscribe(&s, &bob, &push.device("bob-phone")).await.0, 201);
    let id = propose_id(&s, "again", &plan(1)).await;
    eventually(WAIT, "the card's push to Alice", || async { to(&push, "alice-phone").len() == 1 }).await;
    assert!(to(&push, "bob-phone").is_empty(), "Bob is no approver");

    s.advance_clock(10 * 60_000 + 1_000).await;
    eventually(WAIT, "the reminder's push to Alice", || async { to(&push, "alice-phone").len() == 2 }).await;
    let n = note_of(&to(&push, "alice-phone")[1]);
    let (st, card) = get_note(&s, Some(&alice), &n).await;
    assert_eq!((st, card["actions"].clone()), (200, json!(["approve", "request_changes", "open"])), "{card}");

    s.advance_clock(10 * 60_000).await;
    eventually(WAIT, "the level's push to Bob", || async { to(&push, "bob-phone").len() == 1 }).await;
    let n = note_of(&to(&push, "bob-phone")[0]);
    let (st, card) = get_note(&s, Some(&bob), &n).await;
    assert_eq!((st, card["actions"].clone()), (200, json!(["open"])), "on call, no approver: {card}");
    let (st, v) = post_note(&s, &bob, &n, "approve").await;
    assert_eq!(st, 403, "{v}");
    assert_eq!(status_of(&s, &id).await, "pending");

    s.restart().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!((to(&push, "alice-phone").len(), to(&push, "bob-phone").len()), (2, 1), "a restart pushes nothing again");
    let sent: Vec<String> = audit(&s, "session=again")
        .await
        .into_iter()
        .filter(|e| e["action"] == "push_sent")
        .map(|e| e["detail"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent.iter().any(|d| d.starts_with("reminder 1 to a device of")), "{sent:?}");
    assert!(sent.iter().any(|d| d.starts_with("escalation level 1 to a device of")), "{sent:?}");
}
