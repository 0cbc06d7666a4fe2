//! Security regressions of the web page's sign-in (issue 26, item 3),
//! through the real binary.

use plangate_testkit::server::{ServerProcess, OPERATOR_TOKEN};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const PUBLIC: &str = "https://plans.example.com";

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

/// `POST path` with the form `token=…` and the given fetch headers: the
/// status and whether a session cookie was set.
async fn post(s: &ServerProcess, path: &str, token: &str, headers: &[(&str, &str)]) -> (u16, bool) {
    let mut req = client().post(s.url(path)).form(&[("token", token)]);
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
