//! Issue 51, passkey step-up, through the real binary: where the operator's
//! policy says `step_up`, a chat Approve is not counted; the approver gets a
//! private "Confirm with your passkey" link, and the approval counts only
//! after a valid WebAuthn assertion of a passkey that same approver
//! registered. Each refusal is a test: no user verification, an assertion
//! for another plan, a replay, another approver's passkey, a challenge older
//! than 5 minutes; and a release (`/plan off`) cannot stand in for the
//! passkey. The assertions come from a software passkey over HTTP
//! (`plangate_testkit::passkey`), and once from headless Chromium's virtual
//! authenticator (WebDriver's WebAuthn extension).

use super::kit::{audit, call, id_of, no_redirect_client, project_plan, propose, say, telegram_section, tg_user};
use crate::telegram::{ALICE, CHAT};
use plangate_engine::codec::{encode, Button};
use plangate_engine::ApprovalId;
use plangate_testkit::passkey::{unb64, Assertion, SoftPasskey};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
/// The page's public URL: passkeys need a host name (no IP address), and
/// browsers allow WebAuthn over plain http on `localhost` only.
const LOCAL: &str = "http://localhost";
const BOB: i64 = 222222;
const WAIT: Duration = Duration::from_secs(20);

/// Plans of production projects need a passkey; `quorum`: how many people.
fn policy(quorum: u32) -> String {
    let action = if quorum > 1 { format!("quorum = {quorum}") } else { "action = \"one\"".to_string() };
    format!("\n[[policy.rules]]\nid = \"prod-passkey\"\n{action}\nstep_up = true\nproject = \"prod-*\"\n")
}

async fn start(fake: &FakeTelegram, quorum: u32) -> ServerProcess {
    let destination = format!(
        "\n[destinations.ops]\nchannel = \"telegram\"\nchat = \"{CHAT}\"\napprovers = [\"telegram:{ALICE}\", \"telegram:{BOB}\"]\n"
    );
    let extra = format!("{}{destination}{}", telegram_section(fake), policy(quorum));
    ServerProcess::start_with_server(BIN, &["ops"], &format!("public_url = \"{LOCAL}\""), &extra).await
}

/// The origin a browser at the server's port on `localhost` answers from.
fn origin(s: &ServerProcess) -> String {
    s.base.replacen("127.0.0.1", "localhost", 1)
}

fn passkey(s: &ServerProcess, seed: u8) -> SoftPasskey {
    SoftPasskey::new("localhost", &origin(s), seed)
}

/// The first `http://localhost/signin/…` link in `text`.
fn sign_in_link(text: &str) -> Option<String> {
    let start = text.find(&format!("{LOCAL}/signin/"))?;
    Some(text[start..].split(|c: char| c.is_whitespace() || c == '<' || c == '"').next()?.to_string())
}

/// The first private message to `user` after the `before`-th one that `pick` reads.
async fn private_after(fake: &FakeTelegram, user: i64, before: usize, pick: fn(&str) -> Option<String>) -> String {
    fake.wait_for(WAIT, |reqs| {
        let private: Vec<_> = reqs.iter().filter(|r| r.method == "sendMessage" && r.chat_id() == Some(user)).collect();
        private.get(before).and_then(|r| pick(&r.str("text")))
    })
    .await
}

fn private_count(fake: &FakeTelegram, user: i64) -> usize {
    fake.calls("sendMessage").iter().filter(|r| r.chat_id() == Some(user)).count()
}

/// `user` taps Approve on the card of `id`; the private message the bot
/// sends them.
async fn tap_approve(fake: &FakeTelegram, id: &str, user: i64, name: &str) -> String {
    let id = ApprovalId::parse(id).expect("an approval id");
    let data = encode(Button::Approve(id));
    let card = fake
        .wait_for(WAIT, |reqs| {
            reqs.iter()
                .find(|r| r.method == "sendMessage" && r.keyboard().is_some_and(|k| k.iter().flatten().any(|(_, d)| *d == data)))
                .and_then(|r| r.message_id_sent())
        })
        .await;
    let before = private_count(fake, user);
    fake.push_update(fake.callback_update(CHAT, card, tg_user(user, name), &data));
    private_after(fake, user, before, |text| Some(text.to_string())).await
}

/// `user` asks for a sign-in link in the chat (`/plan web`).
async fn web_link(fake: &FakeTelegram, user: i64, name: &str) -> String {
    let before = private_count(fake, user);
    fake.push_update(fake.message_update(CHAT, tg_user(user, name), "/plan web", None));
    private_after(fake, user, before, sign_in_link).await
}

/// The CSRF token of the signed-in page at `path`.
async fn csrf_page(s: &ServerProcess, path: &str, cookie: &str) -> String {
    let (st, page, _) = crate::web::get_page(s, path, Some(cookie)).await;
    assert_eq!(st, 200, "{path}: {page}");
    crate::web::csrf_of(&page)
}

/// Sign in with a personal link as a browser would (its page, then its
/// form, with the link's `next`): the session cookie and where it led.
async fn sign_in(s: &ServerProcess, link: &str) -> (String, String) {
    let (path, next) = link.trim_start_matches(LOCAL).split_once("?next=").unwrap_or((link.trim_start_matches(LOCAL), ""));
    let page = s.http.get(s.url(&format!("{path}?next={next}"))).send().await.expect("sign-in page");
    assert_eq!(page.status(), 200);
    let token = path.rsplit('/').next().unwrap_or_default();
    let answer = no_redirect_client().post(s.url("/signin")).form(&[("token", token), ("next", next)]).send().await.expect("sign in");
    assert_eq!(answer.status(), 303);
    let to = answer.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let cookie = answer.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default();
    (cookie.split(';').next().unwrap_or_default().to_string(), to)
}

async fn post_json(s: &ServerProcess, path: &str, cookie: &str, body: &Value) -> (u16, Value) {
    call(s.http.post(s.url(path)).header("cookie", cookie).json(body)).await
}

/// Register `key` as the signed-in person's passkey.
async fn register(s: &ServerProcess, cookie: &str, key: &SoftPasskey) {
    let csrf = csrf_page(s, "/passkeys", cookie).await;
    let (st, o) = post_json(s, "/passkeys/options", cookie, &json!({"csrf": csrf})).await;
    assert_eq!(st, 200, "{o}");
    assert_eq!(o["rp"]["id"], "localhost", "{o}");
    let (client_data, attestation) = key.register(&unb64(o["challenge"].as_str().expect("challenge")));
    let (st, v) = post_json(s, "/passkeys", cookie, &json!({"csrf": csrf, "client_data": client_data, "attestation": attestation})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["registered"], key.id_b64());
}

/// A fresh challenge to confirm approval `id`, as the signed-in person.
async fn challenge(s: &ServerProcess, cookie: &str, id: &str) -> Vec<u8> {
    let csrf = csrf_page(s, &format!("/p/{id}/confirm"), cookie).await;
    let (st, o) = post_json(s, &format!("/p/{id}/confirm/options"), cookie, &json!({"csrf": csrf})).await;
    assert_eq!(st, 200, "{o}");
    unb64(o["challenge"].as_str().expect("challenge"))
}

/// Post an assertion confirming approval `id`.
async fn confirm(s: &ServerProcess, cookie: &str, id: &str, a: &Assertion) -> (u16, Value) {
    let csrf = csrf_page(s, "/passkeys", cookie).await;
    let body = json!({"csrf": csrf, "id": a.id, "client_data": a.client_data, "authenticator_data": a.authenticator_data, "signature": a.signature});
    post_json(s, &format!("/p/{id}/confirm"), cookie, &body).await
}

async fn decision(s: &ServerProcess, session: &str) -> Value {
    call(s.agent(Method::GET, &format!("/v1/sessions/{session}/decision"))).await.1
}

fn actions(events: &[Value], action: &str) -> Vec<String> {
    events.iter().filter(|e| e["action"] == action).map(|e| e["detail"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test]
async fn a_chat_approve_of_a_step_up_plan_counts_only_after_the_passkey_assertion() {
    let fake = FakeTelegram::start().await;
    let s = start(&fake, 1).await;
    let id = id_of(&propose(&s, "s1", &project_plan("Rotate the prod database password", "prod-api", "Rotate it")).await);
    assert_eq!(decision(&s, "s1").await["step_up"], true, "the agent's Decision says a passkey is needed");

    // The card says so; Alice taps Approve: not counted, a private link to confirm instead.
    let card = fake
        .wait_for(WAIT, |reqs| {
            reqs.iter().find(|r| r.method == "sendMessage" && r.chat_id() == Some(CHAT)).map(|r| r.str("text").to_string())
        })
        .await;
    assert!(card.contains("passkey"), "{card}");
    let private = tap_approve(&fake, &id, ALICE, "alice").await;
    assert!(private.contains("passkey") && private.contains("not counted"), "{private}");
    let link = sign_in_link(&private).expect("a personal link");
    assert!(link.ends_with(&format!("?next=/p/{id}/confirm")), "{link}");
    let d = decision(&s, "s1").await;
    assert_eq!((d["status"].as_str(), d["approvals"].as_array().map(Vec::len)), (Some("pending"), None), "{d}");
    let events = audit(&s, &format!("approval={id}")).await;
    assert_eq!(actions(&events, "step_up_required").len(), 1, "{events:?}");

    // Neither a release from the chat nor the page's plain Approve stands in for the passkey.
    let off = say(&fake, CHAT, tg_user(ALICE, "alice"), "/plan off", "passkey").await;
    assert!(off.contains("cannot be released"), "{off}");
    let (cookie, to) = sign_in(&s, &link).await;
    assert_eq!(to, format!("/p/{id}/confirm"), "the link leads to the confirmation");
    let page = csrf_page(&s, &format!("/p/{id}"), &cookie).await;
    let plain = no_redirect_client()
        .post(s.url(&format!("/p/{id}/decide")))
        .header("cookie", &cookie)
        .form(&[("csrf", page.as_str()), ("action", "approve")]);
    assert_eq!(plain.send().await.expect("post").status(), 409);
    assert_eq!(decision(&s, "s1").await["status"], "pending");

    // Alice registers her passkey, then confirms: now it counts.
    let mut key = passkey(&s, 1);
    register(&s, &cookie, &key).await;
    let a = key.assert(&challenge(&s, &cookie, &id).await);
    let (st, v) = confirm(&s, &cookie, &id, &a).await;
    assert_eq!(st, 200, "{v}");
    let d = decision(&s, "s1").await;
    assert_eq!((d["status"].as_str(), d["decided_by"].as_str()), (Some("approved"), Some("telegram:@alice via web")), "{d}");
    // The audit names the credential.
    let events = audit(&s, &format!("approval={id}")).await;
    let stepped = actions(&events, "step_up");
    assert!(stepped.len() == 1 && stepped[0].contains(&key.id_b64()), "{events:?}");
    let all = audit(&s, "limit=0").await;
    assert!(actions(&all, "passkey_registered").iter().any(|d| d.contains(&key.id_b64())), "{all:?}");

    // Replacing a passkey is the operator's: removed (audited), Alice may register another.
    let remove = format!("/v1/operator/passkeys/telegram:{ALICE}");
    let (st, v) = call(s.operator(Method::DELETE, &remove)).await;
    assert_eq!((st, v["credential"].as_str()), (200, Some(key.id_b64().as_str())), "{v}");
    assert_eq!(call(s.operator(Method::DELETE, &remove)).await.0, 404);
    assert_eq!(call(s.http.delete(s.url(&remove)).header("cookie", &cookie)).await.0, 401, "a person's session cannot");
    register(&s, &cookie, &passkey(&s, 4)).await;
    assert_eq!(actions(&audit(&s, "limit=0").await, "passkey_removed").len(), 1);
}

#[tokio::test]
async fn passkey_confirmations_without_verification_for_another_plan_replayed_of_another_approver_or_late_are_refused() {
    let fake = FakeTelegram::start().await;
    let mut s = start(&fake, 2).await;
    let a_id = id_of(&propose(&s, "s1", &project_plan("Drop the old prod table", "prod-db", "Drop it")).await);
    let b_id = id_of(&propose(&s, "s2", &project_plan("Resize the prod cluster", "prod-k8s", "Resize it")).await);
    let (alice, _) = sign_in(&s, &web_link(&fake, ALICE, "alice").await).await;
    let (bob, _) = sign_in(&s, &web_link(&fake, BOB, "bob").await).await;
    let mut alice_key = passkey(&s, 1);
    let mut bob_key = passkey(&s, 2);
    register(&s, &alice, &alice_key).await;
    register(&s, &bob, &bob_key).await;
    // One passkey per person: a session alone cannot swap in another.
    let csrf = csrf_page(&s, "/passkeys", &alice).await;
    let (_, o) = post_json(&s, "/passkeys/options", &alice, &json!({"csrf": csrf})).await;
    let (client_data, attestation) = passkey(&s, 3).register(&unb64(o["challenge"].as_str().expect("challenge")));
    let (st, v) = post_json(&s, "/passkeys", &alice, &json!({"csrf": csrf, "client_data": client_data, "attestation": attestation})).await;
    assert_eq!(st, 409, "{v}");

    // No user verification.
    alice_key.verifies_user = false;
    let (st, v) = confirm(&s, &alice, &a_id, &alice_key.assert(&challenge(&s, &alice, &a_id).await)).await;
    assert_eq!(st, 403, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("user verification"), "{v}");
    alice_key.verifies_user = true;

    // An assertion for another plan (its challenge bound B's id and hash).
    let for_b = alice_key.assert(&challenge(&s, &alice, &b_id).await);
    let (st, v) = confirm(&s, &alice, &a_id, &for_b).await;
    assert_eq!(st, 403, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("not for this page"), "{v}");

    // Another approver's passkey answering Alice's challenge.
    let (st, v) = confirm(&s, &alice, &a_id, &bob_key.assert(&challenge(&s, &alice, &a_id).await)).await;
    assert_eq!(st, 403, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("not a passkey you registered"), "{v}");

    // A challenge older than 5 minutes.
    let late = challenge(&s, &alice, &a_id).await;
    s.advance_clock(5 * 60 * 1000 + 1000).await;
    let (st, v) = confirm(&s, &alice, &a_id, &alice_key.assert(&late)).await;
    assert_eq!(st, 403, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("expired"), "{v}");

    // None of that counted.
    let d = decision(&s, "s1").await;
    assert_eq!((d["status"].as_str(), d["approvals"].as_array().map(Vec::len)), (Some("pending"), None), "{d}");
    assert_eq!(actions(&audit(&s, &format!("approval={a_id}")).await, "step_up_refused").len(), 4);

    // Alice's valid confirmation counts once; the same answer again is a replay.
    let valid = alice_key.assert(&challenge(&s, &alice, &a_id).await);
    let (st, v) = confirm(&s, &alice, &a_id, &valid).await;
    assert_eq!(st, 200, "{v}");
    assert!(v["said"].as_str().unwrap_or_default().contains("1 of 2"), "{v}");
    let (st, v) = confirm(&s, &alice, &a_id, &valid).await;
    assert_eq!(st, 410, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("answered before"), "{v}");
    let d = decision(&s, "s1").await;
    assert_eq!((d["status"].as_str(), d["approvals"].as_array().map(Vec::len)), (Some("pending"), Some(1)), "{d}");

    // Bob's own passkey completes the quorum.
    let (st, v) = confirm(&s, &bob, &a_id, &bob_key.assert(&challenge(&s, &bob, &a_id).await)).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(decision(&s, "s1").await["status"], "approved");
    let stepped = actions(&audit(&s, &format!("approval={a_id}")).await, "step_up");
    assert!(stepped.len() == 2 && stepped[0].contains(&alice_key.id_b64()) && stepped[1].contains(&bob_key.id_b64()), "{stepped:?}");
}

// ------------------------------------------------------------------ browser

/// Add Chromium's virtual authenticator to the browser's session (the
/// WebDriver WebAuthn extension): a platform passkey that verifies the user.
async fn virtual_authenticator(driver: &crate::web::Driver, b: &fantoccini::Client) {
    let session = b.session_id().await.expect("session id").expect("a WebDriver session");
    let body =
        json!({"protocol": "ctap2", "transport": "internal", "hasResidentKey": true, "hasUserVerification": true, "isUserVerified": true});
    let url = format!("{}/session/{session}/webauthn/authenticator", driver.url);
    let answer = reqwest::Client::builder().no_proxy().build().expect("client").post(url).json(&body).send().await.expect("chromedriver");
    assert!(answer.status().is_success(), "virtual authenticator: {}", answer.text().await.unwrap_or_default());
}

async fn attribute_is(b: &fantoccini::Client, what: &str, value: &str) {
    let script = format!("return document.body.getAttribute('data-passkey') === '{value}';");
    plangate_testkit::server::eventually(WAIT, what, || {
        let script = script.clone();
        async move { b.execute(&script, vec![]).await.is_ok_and(|v| v == Value::Bool(true)) }
    })
    .await;
}

async fn status_text(b: &fantoccini::Client) -> String {
    b.find(fantoccini::Locator::Id("passkey-status")).await.expect("status").text().await.unwrap_or_default()
}

#[tokio::test]
async fn browser_registers_a_passkey_and_a_step_up_approval_counts_only_after_the_assertion() {
    let Some(driver) = crate::web::Driver::start().await else { return };
    let fake = FakeTelegram::start().await;
    let s = start(&fake, 1).await;
    let at = |link: &str| link.replacen(LOCAL, &origin(&s), 1);
    let b = driver.browser(1280, 900).await;
    virtual_authenticator(&driver, &b).await;

    // Alice signs in and registers a passkey on the virtual authenticator.
    b.goto(&at(&web_link(&fake, ALICE, "alice").await)).await.expect("open the sign-in link");
    b.find(fantoccini::Locator::Id("signin")).await.expect("sign in").click().await.expect("click");
    plangate_testkit::server::eventually(WAIT, "signed in", || async { crate::web::present(&b, ".who strong").await }).await;
    b.goto(&format!("{}/passkeys", origin(&s))).await.expect("passkeys page");
    b.find(fantoccini::Locator::Id("register-passkey")).await.expect("register").click().await.expect("click");
    let registered = async { attribute_is(&b, "the passkey registered", "registered").await };
    if tokio::time::timeout(WAIT, registered).await.is_err() {
        panic!("not registered: {}", status_text(&b).await);
    }

    // A chat Approve of a production plan does not count yet.
    let id = id_of(&propose(&s, "s1", &project_plan("Rotate the prod database password", "prod-api", "Rotate it")).await);
    let private = tap_approve(&fake, &id, ALICE, "alice").await;
    assert_eq!(decision(&s, "s1").await["status"], "pending");
    b.goto(&at(&sign_in_link(&private).expect("a personal link"))).await.expect("open the confirmation link");
    b.find(fantoccini::Locator::Id("signin")).await.expect("sign in").click().await.expect("click");
    plangate_testkit::server::eventually(WAIT, "on the confirmation page", || async { crate::web::present(&b, "#confirm-passkey").await })
        .await;
    assert_eq!(decision(&s, "s1").await["status"], "pending", "signing in counts nothing");

    // The assertion: now the approval counts.
    b.find(fantoccini::Locator::Id("confirm-passkey")).await.expect("confirm").click().await.expect("click");
    let confirmed = async { attribute_is(&b, "the approval confirmed", "confirmed").await };
    if tokio::time::timeout(WAIT, confirmed).await.is_err() {
        panic!("not confirmed: {}", status_text(&b).await);
    }
    let d = decision(&s, "s1").await;
    assert_eq!((d["status"].as_str(), d["decided_by"].as_str()), (Some("approved"), Some("telegram:@alice via web")), "{d}");
    let all = audit(&s, "limit=0").await;
    let registered = actions(&all, "passkey_registered");
    let credential = registered.first().and_then(|d| d.split_whitespace().nth(1)).expect("the registered credential").to_string();
    let stepped = actions(&all, "step_up");
    assert!(stepped.len() == 1 && stepped[0].contains(&credential), "{stepped:?} / {registered:?}");
    b.close().await.expect("close");
}
