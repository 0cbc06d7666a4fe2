//! The web page end to end, through the real binary and the Telegram fake:
//! read links on cards, `/plan web` sign-in links sent privately, decisions
//! from the page that release the waiting agent, and the refusals
//! (non-approver, forged POST, read-only link). `browser_*` drives headless
//! Chromium over WebDriver (Debian's `chromium` + `chromium-driver`).

use super::kit::{no_redirect_client, propose_id};
use crate::telegram::{config, ALICE, CHAT};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
/// What the test config says the page is at; links are rewritten to the
/// server's real loopback address.
pub(crate) const PUBLIC: &str = "http://plangate.test";
pub(crate) const BOB: i64 = 222222;
const WAIT: Duration = Duration::from_secs(20);

async fn start_web(fake: &FakeTelegram) -> ServerProcess {
    ServerProcess::start_with_server(BIN, &["ops"], &format!("public_url = \"{PUBLIC}\""), &config(fake)).await
}

pub(crate) fn real(s: &ServerProcess, link: &str) -> String {
    link.replacen(PUBLIC, &s.base, 1)
}

/// The first `PUBLIC…` link in `text` that starts with `path`.
pub(crate) fn link_in(text: &str, path: &str) -> Option<String> {
    let start = text.find(&format!("{PUBLIC}{path}"))?;
    Some(text[start..].split(|c: char| c.is_whitespace() || c == '<' || c == '"').next()?.to_string())
}

const V1: &str = "# Add retries to the client\n\nThe HTTP client gives up on the first 503.\n\n## Steps\n\n1. Read the client\n2. Add backoff\n3. Test\n";
const V2: &str = "# Add retries to the client\n\nThe HTTP client gives up on the first 503; retry with jittered backoff.\n\n\
## Steps\n\n1. Read the client\n2. Add exponential backoff with jitter\n3. Cap retries at 5\n4. Test against a flaky fake\n\n\
## Risks\n\n- Retrying a POST twice: only idempotent requests retry\n\n## Verification\n\n- cargo test -p client\n\n\
See [the RFC](https://www.rfc-editor.org/rfc/rfc9110#name-503-service-unavailable).\n";

/// v1, changes requested by the operator, then v2: the page has a diff.
async fn two_versions(s: &ServerProcess) -> String {
    propose_id(s, "s1", &json!({"title": "Add retries to the client", "markdown": V1})).await;
    s.decide_when_pending("s1", json!({"action": "revise", "feedback": "cap the retries", "actor": "carol"})).await;
    propose_id(s, "s1", &json!({"title": "Add retries to the client", "markdown": V2})).await
}

/// `user` sends `/plan web` in the group; the link the bot sent them privately.
pub(crate) async fn sign_in_link(fake: &FakeTelegram, user: i64, name: &str) -> String {
    sign_in_link_from(fake, CHAT, user, name).await
}

/// `user` sends `/plan web` in `chat`; the link the bot sent them privately.
pub(crate) async fn sign_in_link_from(fake: &FakeTelegram, chat: i64, user: i64, name: &str) -> String {
    let before = fake.calls("sendMessage").iter().filter(|r| r.chat_id() == Some(user)).count();
    fake.push_update(fake.message_update(chat, FakeTelegram::user(user, Some(name), name), "/plan web", None));
    fake.wait_for(WAIT, |reqs| {
        let private: Vec<_> = reqs.iter().filter(|r| r.method == "sendMessage" && r.chat_id() == Some(user)).collect();
        private.get(before).and_then(|r| link_in(&r.str("text"), "/signin/"))
    })
    .await
}

/// Sign in over plain HTTP as the browser would: the link's page, then its
/// form. Returns the session cookie.
pub(crate) async fn http_sign_in(s: &ServerProcess, link: &str) -> String {
    let url = real(s, link);
    let page = s.http.get(&url).send().await.expect("sign-in page");
    assert_eq!(page.status(), 200);
    let token = url.rsplit('/').next().unwrap_or_default().to_string();
    let answer = no_redirect_client().post(s.url("/signin")).form(&[("token", token.as_str())]).send().await.expect("sign in");
    assert_eq!(answer.status(), 303);
    let cookie = answer.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    cookie.split(';').next().unwrap_or_default().to_string()
}

pub(crate) async fn get_page(s: &ServerProcess, path_or_url: &str, cookie: Option<&str>) -> (u16, String, reqwest::header::HeaderMap) {
    let url = if path_or_url.starts_with("http") { real(s, path_or_url) } else { s.url(path_or_url) };
    let mut req = no_redirect_client().get(url);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    let r = req.send().await.expect("page");
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, r.text().await.unwrap_or_default(), headers)
}

pub(crate) fn csrf_of(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a form with a CSRF token") + "name=\"csrf\" value=\"".len();
    page[at..at + 32].to_string()
}

pub(crate) async fn post_decision(s: &ServerProcess, id: &str, cookie: Option<&str>, form: &[(&str, &str)]) -> u16 {
    let mut req = no_redirect_client().post(s.url(&format!("/p/{id}/decide"))).form(form);
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    req.send().await.expect("post").status().as_u16()
}

#[tokio::test]
async fn web_card_links_sign_in_and_decide_over_http() {
    let fake = FakeTelegram::start().await;
    let s = start_web(&fake).await;
    let id = two_versions(&s).await;

    // The card of v2 links to its read-only page.
    let card = fake
        .wait_for(WAIT, |reqs| {
            reqs.iter()
                .filter(|r| r.method == "sendMessage" && r.chat_id() == Some(CHAT))
                .find_map(|r| link_in(&r.str("text"), &format!("/p/{id}")))
        })
        .await;
    let (st, page, headers) = get_page(&s, &card, None).await;
    assert_eq!(st, 200, "{page}");
    let csp = headers.get("content-security-policy").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
    assert!(page.contains("Changes since v1") && page.contains("Added: Cap retries at 5"), "the diff against v1");
    assert!(page.contains("rel=\"noopener noreferrer nofollow\""), "links in the markdown are safe");
    assert!(!page.contains("id=\"actions\""), "a read link never shows buttons");
    // A wrong token opens nothing; the read link cannot decide.
    let wrong = format!("/p/{id}?k={}", "0".repeat(32));
    assert_eq!(get_page(&s, &wrong, None).await.0, 404);
    assert_eq!(post_decision(&s, &id, None, &[("csrf", "x"), ("action", "approve")]).await, 403);

    // Bob is in the chat but on no allowlist: he may sign in and read, never decide.
    let bob = http_sign_in(&s, &sign_in_link(&fake, BOB, "bob").await).await;
    let (st, page, _) = get_page(&s, &card, Some(&bob)).await;
    assert_eq!(st, 200);
    assert!(!page.contains("id=\"approve\""), "no buttons for a non-approver");
    let forged = post_decision(&s, &id, Some(&bob), &[("csrf", &csrf_of(&page)), ("action", "approve")]).await;
    assert_eq!(forged, 403, "a forged POST by a non-approver is refused");
    assert_eq!(get_page(&s, &format!("/p/{id}"), Some(&bob)).await.0, 404, "without the read link Bob sees nothing");

    // A sign-in link works once.
    let link = sign_in_link(&fake, ALICE, "alice").await;
    let alice = http_sign_in(&s, &link).await;
    let token = link.rsplit('/').next().unwrap_or_default();
    let again = no_redirect_client().post(s.url("/signin")).form(&[("token", token)]).send().await.expect("again");
    assert_eq!(again.status(), 410);

    // Alice: her inbox lists v2, her page has buttons; a POST without the CSRF token is refused.
    let (_, inbox, _) = get_page(&s, "/", Some(&alice)).await;
    assert!(inbox.contains(&format!("/p/{id}")), "{inbox}");
    let (_, page, _) = get_page(&s, &format!("/p/{id}"), Some(&alice)).await;
    assert!(page.contains("id=\"approve\""));
    assert_eq!(post_decision(&s, &id, Some(&alice), &[("csrf", "forged"), ("action", "approve")]).await, 403);

    // Request changes from the page: the agent hears it, audited as Alice via web.
    let status =
        post_decision(&s, &id, Some(&alice), &[("csrf", &csrf_of(&page)), ("action", "revise"), ("feedback", "no POST retries")]).await;
    assert_eq!(status, 303);
    let (_, d) = ServerProcess::send(s.agent(Method::GET, "/v1/sessions/s1/decision")).await;
    assert_eq!(d["status"], "rejected", "{d}");
    assert_eq!(d["feedback"], "no POST retries");
    assert_eq!(d["decided_by"], "telegram:@alice via web", "{d}");
    // Decided and not executing: the read link has expired with the approval.
    assert_eq!(get_page(&s, &card, None).await.0, 410);

    // A sign-in link with one character changed is refused like a used one.
    let link = sign_in_link(&fake, ALICE, "alice").await;
    let token = link.rsplit('/').next().unwrap_or_default();
    let last = token.chars().last().map(|c| if c == '0' { '1' } else { '0' }).unwrap_or('0');
    let forged = format!("{}{last}", &token[..token.len() - 1]);
    let refused = no_redirect_client().post(s.url("/signin")).form(&[("token", forged.as_str())]).send().await.expect("forged");
    assert_eq!(refused.status(), 410);

    // Signing out is recorded in the store: the same cookie opens nothing afterwards.
    let (_, inbox, _) = get_page(&s, "/", Some(&bob)).await;
    assert!(inbox.contains("Signed in as"), "{inbox}");
    let out = no_redirect_client()
        .post(s.url("/signout"))
        .header("cookie", &bob)
        .form(&[("csrf", csrf_of(&inbox))])
        .send()
        .await
        .expect("sign out");
    assert_eq!(out.status(), 303);
    let (_, inbox, _) = get_page(&s, "/", Some(&bob)).await;
    assert!(!inbox.contains("Signed in as"), "a signed-out cookie is no session: {inbox}");
}

// ------------------------------------------------------------------ browser

/// A chromedriver on a free loopback port, killed on drop.
pub(crate) struct Driver {
    child: tokio::process::Child,
    pub(crate) url: String,
}

impl Driver {
    /// Start chromedriver. Absent: the test skips with one loud line, and
    /// fails instead under `PLANGATE_REQUIRE_ALL` (CI; `plangate_testkit::skip`).
    pub(crate) async fn start() -> Option<Driver> {
        let bin = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".to_string());
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port");
        // Its own process group, so dropping the driver ends the Chromium
        // processes it started too, even when a test fails half way.
        let child = tokio::process::Command::new(&bin).arg(format!("--port={port}")).process_group(0).kill_on_drop(true).spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) => {
                let hint = "apt-get install chromium chromium-driver (.ci/run installs them), or set CHROMEDRIVER to its path";
                plangate_testkit::skip::skip(&format!("chromedriver ({bin})"), &e.to_string(), hint);
                return None;
            }
        };
        let url = format!("http://127.0.0.1:{port}");
        let probe = reqwest::Client::builder().no_proxy().build().expect("client");
        plangate_testkit::server::eventually(WAIT, "chromedriver answers", || {
            let probe = probe.clone();
            let status = format!("{url}/status");
            async move { probe.get(status).send().await.is_ok() }
        })
        .await;
        Some(Driver { child, url })
    }

    pub(crate) async fn browser(&self, width: u32, height: u32) -> fantoccini::Client {
        let mut caps = serde_json::Map::new();
        let chrome = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_string());
        let mut options = json!({"args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
            format!("--window-size={width},{height}"),
        ]});
        if width < 500 {
            // Chromium's windows are at least 500 px wide: a phone is emulated.
            options["mobileEmulation"] = json!({"deviceMetrics": {"width": width, "height": height, "pixelRatio": 1.0}});
        }
        if std::path::Path::new(&chrome).exists() {
            options["binary"] = json!(chrome);
        }
        caps.insert("goog:chromeOptions".to_string(), options);
        fantoccini::ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("chromedriver at {} started no Chromium session: {e}", self.url))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(group) = self.child.id() {
            let _ = std::process::Command::new("kill").args(["-TERM", "--", &format!("-{group}")]).status();
        }
        let _ = self.child.start_kill();
    }
}

pub(crate) async fn present(b: &fantoccini::Client, css: &str) -> bool {
    b.find_all(fantoccini::Locator::Css(css)).await.map(|found| !found.is_empty()).unwrap_or(false)
}

/// Sign `b` in with a personal link, as a person taps it.
pub(crate) async fn browser_sign_in(b: &fantoccini::Client, s: &ServerProcess, link: &str) {
    b.goto(&real(s, link)).await.expect("open the sign-in link");
    b.find(fantoccini::Locator::Id("signin")).await.expect("the sign-in button").click().await.expect("click");
    plangate_testkit::server::eventually(WAIT, "signed in", || async { present(b, ".who strong").await }).await;
}

pub(crate) async fn screenshot(b: &fantoccini::Client, name: &str) {
    let Ok(dir) = std::env::var("PLANGATE_WEB_SCREENSHOTS") else { return };
    let png = b.screenshot().await.expect("screenshot");
    std::fs::write(std::path::Path::new(&dir).join(name), png).expect("write the screenshot");
}

#[tokio::test]
async fn browser_approve_releases_the_agent_and_other_pages_lose_their_buttons() {
    let Some(driver) = Driver::start().await else { return };
    let fake = FakeTelegram::start().await;
    let s = start_web(&fake).await;
    let id = two_versions(&s).await;
    let page = format!("{}/p/{id}", s.base);

    // Bob, signed in but no approver, opens the card's read link: no buttons.
    let card_link = fake
        .wait_for(WAIT, |reqs| {
            reqs.iter()
                .filter(|r| r.method == "sendMessage" && r.chat_id() == Some(CHAT))
                .find_map(|r| link_in(&r.str("text"), &format!("/p/{id}")))
        })
        .await;
    let bob = driver.browser(390, 844).await;
    browser_sign_in(&bob, &s, &sign_in_link(&fake, BOB, "bob").await).await;
    bob.goto(&real(&s, &card_link)).await.expect("open the read link");
    assert!(present(&bob, "#steps").await, "Bob reads the plan");
    assert!(!present(&bob, "#approve").await, "a non-approver sees no buttons");
    // His forged POST, with his own session and CSRF token, is refused.
    let cookie = bob.get_named_cookie("plangate_session").await.expect("Bob's session cookie");
    let csrf =
        bob.find(fantoccini::Locator::Css("input[name=csrf]")).await.expect("csrf").attr("value").await.expect("value").unwrap_or_default();
    let forged =
        post_decision(&s, &id, Some(&format!("plangate_session={}", cookie.value())), &[("csrf", &csrf), ("action", "approve")]).await;
    assert_eq!(forged, 403);
    bob.close().await.expect("close");

    // Alice signs in on her phone and on her laptop.
    let phone = driver.browser(390, 844).await;
    browser_sign_in(&phone, &s, &sign_in_link(&fake, ALICE, "alice").await).await;
    phone.goto(&page).await.expect("open the plan");
    assert!(present(&phone, "#approve").await, "an approver gets the buttons");
    screenshot(&phone, "web-phone.png").await;
    let laptop = driver.browser(1280, 900).await;
    browser_sign_in(&laptop, &s, &sign_in_link(&fake, ALICE, "alice").await).await;
    laptop.goto(&page).await.expect("open the plan");
    assert!(present(&laptop, "#approve").await);
    screenshot(&laptop, "web-desktop.png").await;
    // Mark the laptop's page: it must lose its buttons without a reload.
    laptop.execute("window.plangateKept = true; return true;", vec![]).await.expect("mark the page");

    // The agent waits for the decision; Alice taps Approve on her phone.
    let waiting = {
        let req = s.agent(Method::GET, "/v1/sessions/s1/decision?wait=60");
        tokio::spawn(async move { ServerProcess::send(req).await })
    };
    s.waiting(1).await;
    phone.find(fantoccini::Locator::Id("approve")).await.expect("Approve").click().await.expect("click Approve");
    let (st, d) = tokio::time::timeout(WAIT, waiting).await.expect("the agent is answered").expect("task");
    assert_eq!(st, 200, "{d}");
    assert_eq!(d["status"], "approved", "{d}");
    assert_eq!(d["decided_by"], "telegram:@alice via web", "{d}");

    plangate_testkit::server::eventually(WAIT, "the laptop's buttons go away", || async { !present(&laptop, "#approve").await }).await;
    let kept = laptop.execute("return window.plangateKept === true;", vec![]).await.expect("read the mark");
    assert_eq!(kept, Value::Bool(true), "the page was updated in place, not reloaded");
    let receipt = laptop.find(fantoccini::Locator::Id("receipt")).await.expect("receipt").text().await.expect("text");
    assert!(receipt.contains("Approved v2 by telegram:@alice via web"), "{receipt}");

    // The checklist follows the agent's progress live.
    let (st, d) = ServerProcess::send(s.agent(Method::POST, "/v1/sessions/s1/steps").json(&json!({
        "steps": [{"step": "Read the client", "status": "in_progress"}], "merge": true
    })))
    .await;
    assert_eq!(st, 200, "{d}");
    plangate_testkit::server::eventually(WAIT, "step 1 turns in progress on the open page", || async {
        present(&laptop, "#steps li.in_progress").await
    })
    .await;
    phone.close().await.expect("close");
    laptop.close().await.expect("close");
}

/// The inbox stays bounded however many plans wait: the oldest hundred
/// pending, a line saying more wait and where to list them all, the
/// reminders of each counted from the plan itself (no read of the audit),
/// and the latest decisions. It used to render every plan in the store.
#[tokio::test]
async fn the_inbox_shows_the_oldest_hundred_pending_and_their_reminders() {
    let extra = "[approvals]\nnudges = [\"10m\"]\ntimeout = \"2h\"\n";
    let mut s = ServerProcess::start_with_server(BIN, &[], &format!("public_url = \"{PUBLIC}\""), extra).await;
    let oldest = propose_id(&s, "w0", &json!({"title": "Oldest plan", "markdown": V1})).await;
    s.advance_clock(11 * 60 * 1000).await;
    let audit = format!("/v1/audit?approval={oldest}");
    plangate_testkit::server::eventually(WAIT, "the oldest plan's reminder", || {
        let req = s.operator(Method::GET, &audit);
        async move { ServerProcess::send(req).await.1.as_array().is_some_and(|a| a.iter().any(|e| e["action"] == "nudge")) }
    })
    .await;
    let mut ids = vec![oldest.clone()];
    for i in 1..=105 {
        ids.push(propose_id(&s, &format!("w{i}"), &json!({"title": format!("Plan {i}"), "markdown": V1})).await);
    }
    let decided = ids.pop().expect("the newest");
    let body = json!({"action": "approve", "actor": "carol"});
    let (st, v) = ServerProcess::send(s.operator(Method::POST, &format!("/v1/approvals/{decided}/decision")).json(&body)).await;
    assert_eq!(st, 200, "{v}");

    let signed_in = no_redirect_client()
        .post(s.url("/signin/operator"))
        .header("origin", PUBLIC)
        .header("sec-fetch-site", "same-origin")
        .form(&[("token", plangate_testkit::server::OPERATOR_TOKEN)])
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status().as_u16(), 303);
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    let (st, page, _) = get_page(&s, "/", Some(&cookie)).await;
    assert_eq!(st, 200, "{page}");
    let section = |id: &str| {
        let from = page.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id} in {page}"));
        page[from..].split("</ul>").next().unwrap_or_default().to_string()
    };
    let pending = section("pending");
    assert_eq!(pending.matches("<li class=\"row\"").count(), 100, "the oldest hundred of 105 pending");
    assert!(page.contains("id=\"more-pending\"") && page.contains("plangate list"), "says more wait, and where");
    let rows: Vec<&str> = pending.split("<li class=\"row\"").skip(1).collect();
    assert!(
        rows[0].contains(&format!("/p/{oldest}")) && rows[0].contains("1 nudge<"),
        "the oldest first, its reminder counted: {}",
        rows[0]
    );
    assert!(rows[1..].iter().all(|r| r.contains("0 nudges")), "the others had none");
    assert!(!pending.contains(&ids[101]), "the newest pending are left for the next look");
    assert!(section("decided").contains(&format!("/p/{decided}")), "the decision listed");
}
