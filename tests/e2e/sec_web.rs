//! Security regressions of the web page (its sign-in, issue 26 item 3; who
//! sees decide buttons), through the real binary.

use super::kit::{call, no_redirect_client, propose, telegram_section, wait_cards};
use crate::web::{csrf_of, get_page, http_sign_in, link_in, post_decision, sign_in_link_from};
use plangate_testkit::server::{ServerProcess, OPERATOR_TOKEN};
use plangate_testkit::telegram::FakeTelegram;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const PUBLIC: &str = "https://plans.example.com";

/// `POST path` with the form `token=…` and the given fetch headers: the
/// status and whether a session cookie was set.
async fn post(s: &ServerProcess, path: &str, token: &str, headers: &[(&str, &str)]) -> (u16, bool) {
    let mut req = no_redirect_client().post(s.url(path)).form(&[("token", token)]);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("response");
    let cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .any(|c| c.to_str().unwrap_or_default().contains("Max-Age") && !c.to_str().unwrap_or_default().contains("Max-Age=0"));
    (r.status().as_u16(), cookie)
}

/// Login CSRF: another site's form posted the operator token (or a sign-in
/// link's token) to `/signin…` and the browser got plangate's session
/// cookie: 303 and `Set-Cookie` for `Origin: https://evil.example`,
/// `Sec-Fetch-Site: cross-site`. Every state-changing request now checks
/// where it comes from, sign-in included.
#[tokio::test]
async fn a_sign_in_posted_from_another_site_is_refused() {
    let s = ServerProcess::start_with_server(BIN, &[], &format!("public_url = \"{PUBLIC}\""), "").await;
    for headers in [
        &[("origin", "https://evil.example"), ("sec-fetch-site", "cross-site")][..],
        &[("origin", "https://evil.example")][..],
        &[("sec-fetch-site", "cross-site")][..],
        &[("sec-fetch-site", "same-site"), ("origin", "https://other.plans.example.com")][..],
        &[("origin", "null")][..],
    ] {
        let (status, cookie) = post(&s, "/signin/operator", OPERATOR_TOKEN, headers).await;
        assert_eq!((status, cookie), (403, false), "{headers:?}");
        let (status, cookie) = post(&s, "/signin", "whatever", headers).await;
        assert_eq!((status, cookie), (403, false), "{headers:?}");
        let (status, _) = post(&s, "/signout", "", headers).await;
        assert_eq!(status, 403, "{headers:?}");
    }
    // From the page itself, as a browser sends it: signed in.
    let (status, cookie) = post(&s, "/signin/operator", OPERATOR_TOKEN, &[("origin", PUBLIC), ("sec-fetch-site", "same-origin")]).await;
    assert_eq!((status, cookie), (303, true));
}

/// The session cookie `POST /signin/operator` set, as a `Cookie` header.
async fn operator_cookie(s: &ServerProcess, token: &str) -> String {
    let r = no_redirect_client()
        .post(s.url("/signin/operator"))
        .header("origin", PUBLIC)
        .header("sec-fetch-site", "same-origin")
        .form(&[("token", token)])
        .send()
        .await
        .expect("response");
    assert_eq!(r.status().as_u16(), 303, "signed in");
    let set = r.headers().get("set-cookie").expect("a session cookie").to_str().expect("ascii").to_string();
    set.split(';').next().expect("name=value").to_string()
}

async fn page_with(s: &ServerProcess, cookie: &str) -> String {
    let r = no_redirect_client().get(s.url("/")).header("cookie", cookie).send().await.expect("response");
    assert_eq!(r.status().as_u16(), 200);
    r.text().await.expect("body")
}

/// An operator web session survived rotating the operator token and
/// restarting: the old cookie still said "Signed in as operator" and could
/// approve, while the old token got 401 on the API. A session is now bound
/// to the token it was made with.
#[tokio::test]
async fn rotating_the_operator_token_signs_out_every_operator_browser() {
    let mut s = ServerProcess::start_with_server(BIN, &[], &format!("public_url = \"{PUBLIC}\""), "").await;
    let cookie = operator_cookie(&s, OPERATOR_TOKEN).await;
    assert!(page_with(&s, &cookie).await.contains("Signed in as"), "the cookie works before the rotation");

    let rotated = "rotated-operator-token-9f8e7d6c5b4a";
    let config = std::fs::read_to_string(s.config_path()).expect("config");
    std::fs::write(s.config_path(), config.replace(OPERATOR_TOKEN, rotated)).expect("config");
    s.restart().await;

    let (status, _) = ServerProcess::send(no_redirect_client().get(s.url("/v1/approvals")).bearer_auth(OPERATOR_TOKEN)).await;
    assert_eq!(status, 401, "the old token is refused on the API");
    let page = page_with(&s, &cookie).await;
    assert!(!page.contains("Signed in as"), "the old operator cookie opens nothing after the rotation:\n{page}");
    let r = no_redirect_client()
        .post(s.url("/p/00000000000000000000000000000000/decide"))
        .header("cookie", &cookie)
        .form(&[("csrf", "x"), ("action", "approve")])
        .send()
        .await
        .expect("response");
    assert_eq!(r.status().as_u16(), 403, "and decides nothing");
    let fresh = operator_cookie(&s, rotated).await;
    assert!(page_with(&s, &fresh).await.contains("Signed in as"), "the new token signs in");
}

/// 300 wrong `/signin/operator` tries took 0.23 s, and nothing said so.
/// Failed sign-ins and failed bearer authentications are now limited per
/// client address (429 with Retry-After), audited and counted; a correct
/// token is never slowed.
#[tokio::test]
async fn failed_sign_ins_and_bearer_tokens_are_limited_per_address() {
    let s = ServerProcess::start_with_server(BIN, &[], &format!("public_url = \"{PUBLIC}\""), "").await;
    let same = [("origin", PUBLIC), ("sec-fetch-site", "same-origin")];
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for i in 0..300 {
        let r = no_redirect_client()
            .post(s.url("/signin/operator"))
            .header(same[0].0, same[0].1)
            .header(same[1].0, same[1].1)
            .form(&[("token", format!("wrong-guess-{i:04}-0123456789"))])
            .send()
            .await
            .expect("response");
        statuses.push(r.status().as_u16());
        if r.status().as_u16() == 429 && retry_after.is_none() {
            retry_after = r.headers().get("retry-after").map(|v| v.to_str().expect("ascii").to_string());
        }
    }
    let refused = statuses.iter().filter(|&&st| st == 403).count();
    assert!((1..=10).contains(&refused), "at most the burst is answered 403: {refused}");
    assert!(statuses[refused..].iter().all(|&st| st == 429), "then 429: {statuses:?}");
    let secs: u64 = retry_after.expect("Retry-After on the 429").parse().expect("whole seconds");
    assert!((1..=60).contains(&secs), "Retry-After: {secs}");

    // A correct token is never slowed: the operator still signs in from here.
    let (status, cookie) = post(&s, "/signin/operator", OPERATOR_TOKEN, &same).await;
    assert_eq!((status, cookie), (303, true));
    let (status, _) = post(&s, "/signin", "0123abcd", &same).await;
    assert_eq!(status, 429, "a bad sign-in link takes from the same budget");

    // The API's bearer tokens share the address's budget; the right ones pass.
    let r = no_redirect_client().get(s.url("/v1/sessions/s1")).bearer_auth("wrong-agent-token-0123456789").send().await.expect("response");
    assert_eq!(r.status().as_u16(), 429);
    assert!(r.headers().get("retry-after").is_some(), "Retry-After on the API's 429");
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "too_many_failures", "{body}");
    let (status, _) = ServerProcess::send(s.agent(reqwest::Method::GET, "/v1/sessions/s1")).await;
    assert_eq!(status, 200, "a correct agent token is not slowed");

    // Counted and audited.
    let (_, metrics) = {
        let r = s.operator(reqwest::Method::GET, "/metrics").send().await.expect("metrics");
        (r.status().as_u16(), r.text().await.expect("text"))
    };
    let count = |line: &str| -> u64 {
        metrics.lines().find(|l| l.starts_with(line)).and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    assert_eq!(count(r#"plangate_auth_failures_total{surface="web_operator",outcome="refused"}"#), refused as u64, "{metrics}");
    assert_eq!(count(r#"plangate_auth_failures_total{surface="web_operator",outcome="limited"}"#), (300 - refused) as u64);
    assert_eq!(count(r#"plangate_auth_failures_total{surface="api",outcome="limited"}"#), 1);
    let (status, audit) = ServerProcess::send(s.operator(reqwest::Method::GET, "/v1/audit?limit=1000")).await;
    assert_eq!(status, 200);
    let actions: Vec<&str> = audit.as_array().expect("events").iter().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(actions.iter().filter(|a| **a == "auth_failed").count(), refused, "{actions:?}");
    assert_eq!(actions.iter().filter(|a| **a == "auth_limited").count(), 1, "one 429 audited per address and minute: {actions:?}");
}

/// The page asked only whether a person approves *some* destination of the
/// agent, not one that takes the plan's project: Alice, an approver of the
/// billing chat, saw decide buttons on the web project's plan (and its row
/// in her inbox), which `Core::decide` then refused. The page now asks the
/// same `ApproverIndex::check` as every decision.
#[tokio::test]
async fn an_approver_of_one_project_sees_no_buttons_on_another_projects_plan() {
    const BILLING_CHAT: i64 = -1001000000001;
    const WEB_CHAT: i64 = -1001000000002;
    const ALICE: i64 = 111;
    let fake = FakeTelegram::start().await;
    let extra = format!(
        "{}\n[destinations.billing]\nchannel = \"telegram\"\nchat = \"{BILLING_CHAT}\"\napprovers = [\"telegram:{ALICE}\"]\nprojects = [\"billing-*\"]\n\
         [destinations.web]\nchannel = \"telegram\"\nchat = \"{WEB_CHAT}\"\napprovers = [\"telegram:222\"]\nprojects = [\"web\"]\n",
        telegram_section(&fake)
    );
    let public = format!("public_url = \"{}\"", crate::web::PUBLIC);
    let s = ServerProcess::start_with_server(BIN, &["billing", "web"], &public, &extra).await;
    let plan = |title: &str, project: &str| json!({"title": title, "steps": [{"step": "Read the code"}], "project": {"name": project}});
    let billing = propose(&s, "b1", &plan("Add retries", "billing-api")).await["approval_id"].as_str().expect("id").to_string();
    let web = propose(&s, "w1", &plan("Fix the header", "web")).await["approval_id"].as_str().expect("id").to_string();
    let web_card = wait_cards(&fake, WEB_CHAT, 1).await.into_iter().find_map(|c| link_in(&c, &format!("/p/{web}"))).expect("a read link");
    let alice = http_sign_in(&s, &sign_in_link_from(&fake, BILLING_CHAT, ALICE, "alice").await).await;

    // Her own project: listed, with buttons.
    let (_, inbox, _) = get_page(&s, "/", Some(&alice)).await;
    assert!(inbox.contains(&format!("/p/{billing}")), "{inbox}");
    assert!(!inbox.contains(&format!("/p/{web}")), "the web project's plan is not hers to decide: {inbox}");
    let (_, page, _) = get_page(&s, &format!("/p/{billing}"), Some(&alice)).await;
    assert!(page.contains("id=\"approve\""), "{page}");
    let csrf = csrf_of(&page);

    // The other project: readable through its card's link, never decidable.
    let (st, page, _) = get_page(&s, &web_card, Some(&alice)).await;
    assert_eq!(st, 200, "{page}");
    assert!(!page.contains("id=\"approve\""), "no buttons on another project's plan: {page}");
    assert_eq!(get_page(&s, &format!("/p/{web}"), Some(&alice)).await.0, 404, "without the read link she sees nothing");
    let forged = post_decision(&s, &web, Some(&alice), &[("csrf", &csrf), ("action", "approve")]).await;
    assert_eq!(forged, 403, "and a forged POST is refused");
    let (_, decision) = call(s.agent(reqwest::Method::GET, "/v1/sessions/w1/decision")).await;
    assert_eq!(decision["status"], "pending", "{decision}");

    // The page shows the plan's audit trail, and reading it is audited like
    // `GET /v1/audit`: once per reader and plan in ten minutes, however
    // often the page is loaded; a read-only link without a sign-in too.
    get_page(&s, &format!("/p/{billing}"), Some(&alice)).await;
    get_page(&s, &web_card, None).await;
    get_page(&s, &web_card, None).await;
    let reads = |session: &'static str| {
        let s = &s;
        async move {
            let events = crate::kit::audit(s, &format!("session={session}")).await;
            let reads = events.into_iter().filter(|e| e["action"] == "audit_read");
            reads.map(|e| e["actor"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>()
        }
    };
    assert_eq!(reads("b1").await, ["telegram:@alice"]);
    assert_eq!(reads("w1").await, ["telegram:@alice", "a read-only link"]);
}
