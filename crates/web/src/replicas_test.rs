//! Two replicas of the page over one shared store: what one issues, the
//! other accepts; what one uses up or signs out, the other refuses. Driven
//! through the router, as a load balancer would send the requests.

use crate::auth::{self, Identity};
use crate::{router, Backend, Clock, Links, Refused, Web};
use async_trait::async_trait;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use plangate_channel::ManualClock;
use plangate_engine::{ApprovalId, AuditEvent, Decision, Proposal, SessionKey, State, Timestamp};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tower::ServiceExt;

const SECRET: &[u8] = b"the replicas' shared web secret";
const T0: i64 = 1_800_000_000_000;

/// What the replicas share: the store's single-use keys and the clock.
#[derive(Default)]
struct SharedStore {
    keys: Mutex<HashSet<String>>,
    /// Every store call fails while set.
    down: AtomicBool,
    /// Writes fail while set; reads work.
    writes_down: AtomicBool,
    now: Arc<ManualClock>,
}

/// One replica's backend over the shared store.
struct FakeBackend {
    store: Arc<SharedStore>,
}

impl FakeBackend {
    fn keys(&self) -> Option<std::sync::MutexGuard<'_, HashSet<String>>> {
        if self.store.down.load(Ordering::SeqCst) {
            return None;
        }
        Some(self.store.keys.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn keys_to_write(&self) -> Option<std::sync::MutexGuard<'_, HashSet<String>>> {
        if self.store.writes_down.load(Ordering::SeqCst) {
            return None;
        }
        self.keys()
    }
}

#[async_trait]
impl Backend for FakeBackend {
    fn now(&self) -> Timestamp {
        self.store.now.now()
    }
    async fn proposal(&self, _: ApprovalId) -> Option<Proposal> {
        None
    }
    async fn state(&self, _: &SessionKey) -> Option<State> {
        None
    }
    async fn pending_page(&self, _: Option<(Timestamp, ApprovalId)>, _: usize) -> Vec<Proposal> {
        Vec::new()
    }
    async fn recently_decided(&self, _: usize) -> Vec<Proposal> {
        Vec::new()
    }
    async fn previous_version(&self, _: &Proposal) -> Option<Proposal> {
        None
    }
    async fn audit(&self, _: &Proposal, _: &str) -> Vec<AuditEvent> {
        Vec::new()
    }
    async fn permission_rules(&self, _: &str) -> Vec<plangate_engine::permission::StoredRule> {
        Vec::new()
    }
    fn may_decide(&self, _: &Identity, _: &Proposal) -> bool {
        true
    }
    async fn decide(&self, _: &Identity, _: ApprovalId, _: Decision) -> Result<String, Refused> {
        Err(Refused::NotFound("no plans here".to_string()))
    }
    fn subscribe(&self, _: &SessionKey) -> watch::Receiver<u64> {
        watch::channel(0).1
    }
    fn is_operator_token(&self, token: &str) -> bool {
        token == "operator-token"
    }
    fn operator_token_sha256(&self) -> Option<[u8; 32]> {
        Some(<sha2::Sha256 as sha2::Digest>::digest(b"operator-token").into())
    }
    async fn sign_in_failed(&self, _: std::net::IpAddr, _: crate::SignInSurface) -> Option<std::time::Duration> {
        None
    }
    async fn use_once(&self, key: &str) -> bool {
        self.keys_to_write().is_some_and(|mut keys| keys.insert(key.to_string()))
    }
    async fn revoke(&self, session_id: &str) -> bool {
        self.keys_to_write().map(|mut keys| keys.insert(auth::sign_out_key(session_id))).is_some()
    }
    async fn revoked(&self, session_id: &str) -> bool {
        self.keys().is_none_or(|keys| keys.contains(&auth::sign_out_key(session_id)))
    }
    async fn passkey(&self, _: &str) -> Result<Option<String>, Refused> {
        Ok(None)
    }
    async fn swap_passkey(&self, _: &str, _: Option<&str>, _: Option<&str>) -> Result<bool, Refused> {
        Err(Refused::Unavailable("no passkeys here".to_string()))
    }
    async fn record(&self, _: &Identity, _: &str, _: Option<&Proposal>, _: String) {}
}

/// A replica: its own `Web` and links (same secret), the shared store.
fn replica(store: &Arc<SharedStore>, secret: &[u8]) -> Arc<Web> {
    let links = Arc::new(Links::with_clock("https://plans.example", secret, store.now.clone()));
    Web::new(Arc::new(FakeBackend { store: store.clone() }), links)
}

fn shared() -> Arc<SharedStore> {
    let store = Arc::new(SharedStore::default());
    store.now.set(Timestamp(T0));
    store
}

fn alice() -> Identity {
    Identity::Person { id: "telegram:1".into(), name: "telegram:@alice".into() }
}

struct Answer {
    status: StatusCode,
    set_cookie: Option<String>,
    body: String,
}

async fn send(web: &Arc<Web>, method: &str, path: &str, cookie: Option<&str>, form: Option<&str>) -> Answer {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, format!("{}={c}", auth::COOKIE));
    }
    let body = match form {
        Some(f) => {
            req = req.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
            Body::from(f.to_string())
        }
        None => Body::empty(),
    };
    let response = router(web.clone()).oneshot(req.body(body).expect("request")).await.expect("infallible");
    let status = response.status();
    let set_cookie = response.headers().get(header::SET_COOKIE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
    Answer { status, set_cookie, body: String::from_utf8_lossy(&bytes).into_owned() }
}

/// The token in a sign-in URL.
fn token_of(url: &str) -> String {
    url.rsplit('/').next().unwrap_or_default().to_string()
}

/// POST the sign-in form; the session cookie's value on success.
async fn sign_in(web: &Arc<Web>, token: &str) -> Result<String, Answer> {
    let answer = send(web, "POST", "/signin", None, Some(&format!("token={token}"))).await;
    if answer.status != StatusCode::SEE_OTHER {
        return Err(answer);
    }
    let set = answer.set_cookie.clone().unwrap_or_default();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Secure"), "{set}");
    Ok(auth::cookie_value(set.split(';').next().unwrap_or_default()).unwrap_or_default().to_string())
}

fn csrf_of(page: &str) -> Option<String> {
    let at = page.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    page.get(at..at + 32).map(str::to_string)
}

const USED_UP: &str = "This sign-in link is used up";
const SIGNED_IN: &str = "Signed in as";

#[tokio::test]
async fn a_link_from_one_replica_signs_in_on_the_other_once() {
    let store = shared();
    let (a, b) = (replica(&store, SECRET), replica(&store, SECRET));
    let token = token_of(&a.links.sign_in_url(alice()));

    assert_eq!(send(&b, "GET", &format!("/signin/{token}"), None, None).await.status, StatusCode::OK, "B shows A's link");
    let cookie = sign_in(&b, &token).await.map_err(|a| a.body).expect("B redeems A's link");
    let again = sign_in(&a, &token).await.expect_err("A refuses the link B used");
    assert_eq!(again.status, StatusCode::GONE);
    assert!(again.body.contains(USED_UP), "{}", again.body);
    let third = sign_in(&b, &token).await.expect_err("B refuses it too");
    assert_eq!(third.status, StatusCode::GONE);

    // The cookie B set is a session on A, with the same CSRF token.
    let on_a = send(&a, "GET", "/", Some(&cookie), None).await;
    let on_b = send(&b, "GET", "/", Some(&cookie), None).await;
    assert!(on_a.body.contains(SIGNED_IN) && on_a.body.contains("telegram:@alice"), "{}", on_a.body);
    assert!(on_b.body.contains(SIGNED_IN));
    let csrf = csrf_of(&on_a.body).expect("a CSRF token on A");
    assert_eq!(Some(csrf.clone()), csrf_of(&on_b.body), "every replica derives the same CSRF token");

    // A decision POSTed to A with B's session passes the session and CSRF checks.
    let id = ApprovalId([7; 16]);
    let decided = send(&a, "POST", &format!("/p/{id}/decide"), Some(&cookie), Some(&format!("csrf={csrf}&action=approve"))).await;
    assert_eq!(decided.status, StatusCode::NOT_FOUND, "got as far as the backend: {}", decided.body);
    let forged =
        send(&a, "POST", &format!("/p/{id}/decide"), Some(&cookie), Some("csrf=00000000000000000000000000000000&action=approve")).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn signed_out_on_one_replica_is_signed_out_on_every_one() {
    let store = shared();
    let (a, b) = (replica(&store, SECRET), replica(&store, SECRET));
    let cookie = sign_in(&a, &token_of(&b.links.sign_in_url(alice()))).await.map_err(|a| a.body).expect("signed in");
    let csrf = csrf_of(&send(&b, "GET", "/", Some(&cookie), None).await.body).expect("csrf");

    // A wrong CSRF token signs nobody out.
    let stale = send(&a, "POST", "/signout", Some(&cookie), Some("csrf=nope")).await;
    assert_eq!(stale.status, StatusCode::SEE_OTHER);
    assert!(send(&b, "GET", "/", Some(&cookie), None).await.body.contains(SIGNED_IN), "still signed in");

    let out = send(&a, "POST", "/signout", Some(&cookie), Some(&format!("csrf={csrf}"))).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(out.set_cookie.unwrap_or_default().contains("Max-Age=0"), "the browser's cookie is cleared");
    for replica in [&a, &b] {
        let inbox = send(replica, "GET", "/", Some(&cookie), None).await;
        assert!(!inbox.body.contains(SIGNED_IN), "a copy of the cookie opens nothing");
        let id = ApprovalId([7; 16]);
        let decide = send(replica, "POST", &format!("/p/{id}/decide"), Some(&cookie), Some(&format!("csrf={csrf}&action=approve"))).await;
        assert_eq!(decide.status, StatusCode::FORBIDDEN);
        assert!(decide.body.contains("Sign in to decide"));
    }
    // Another session of the same person is untouched.
    let other = sign_in(&b, &token_of(&a.links.sign_in_url(alice()))).await.map_err(|a| a.body).expect("signed in again");
    assert!(send(&a, "GET", "/", Some(&other), None).await.body.contains(SIGNED_IN));
}

#[tokio::test]
async fn the_store_down_refuses_sign_ins_and_sessions() {
    let store = shared();
    let a = replica(&store, SECRET);
    let cookie = sign_in(&a, &token_of(&a.links.sign_in_url(alice()))).await.map_err(|a| a.body).expect("signed in");
    let token = token_of(&a.links.sign_in_url(alice()));
    store.down.store(true, Ordering::SeqCst);
    let refused = sign_in(&a, &token).await.expect_err("no single use recorded: refused");
    assert!(refused.body.contains(USED_UP));
    assert!(!send(&a, "GET", "/", Some(&cookie), None).await.body.contains(SIGNED_IN), "sign-out unknown: no session");
    store.down.store(false, Ordering::SeqCst);
    assert!(send(&a, "GET", "/", Some(&cookie), None).await.body.contains(SIGNED_IN), "back");
    sign_in(&a, &token).await.map_err(|a| a.body).expect("the link was not used up by the refusal");

    // A sign-out the store cannot record says so, and the session lives on.
    let csrf = csrf_of(&send(&a, "GET", "/", Some(&cookie), None).await.body).expect("csrf");
    store.writes_down.store(true, Ordering::SeqCst);
    let out = send(&a, "POST", "/signout", Some(&cookie), Some(&format!("csrf={csrf}"))).await;
    assert_eq!(out.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(out.body.contains("Not signed out everywhere"), "{}", out.body);
    assert!(out.set_cookie.unwrap_or_default().contains("Max-Age=0"), "this browser's cookie is cleared anyway");
    assert!(send(&a, "GET", "/", Some(&cookie), None).await.body.contains(SIGNED_IN));
    store.writes_down.store(false, Ordering::SeqCst);
    assert_eq!(send(&a, "POST", "/signout", Some(&cookie), Some(&format!("csrf={csrf}"))).await.status, StatusCode::SEE_OTHER);
    assert!(!send(&a, "GET", "/", Some(&cookie), None).await.body.contains(SIGNED_IN));
}

#[tokio::test]
async fn expired_and_forged_links_and_cookies_are_refused_alike() {
    let store = shared();
    let (a, b) = (replica(&store, SECRET), replica(&store, SECRET));
    let stranger = replica(&store, b"another deployment's secret");
    let token = token_of(&a.links.sign_in_url(alice()));

    // Forged tokens: the same generic refusal as a used one.
    let mut changed = hex_bytes(&token);
    let last = changed.len() - 40;
    changed[last] ^= 0x01;
    let forgeries = [
        hex::encode(&changed),
        token_of(&stranger.links.sign_in_url(alice())),
        token[..token.len() - 2].to_string(),
        token[..40].to_string(),
    ];
    for forged in &forgeries {
        let answer = sign_in(&b, forged).await.expect_err("forged");
        assert_eq!(answer.status, StatusCode::GONE, "{forged}");
        assert!(answer.body.contains(USED_UP));
    }
    assert_eq!(send(&b, "GET", "/signin/not-a-token", None, None).await.status, StatusCode::NOT_FOUND);

    // Expired: ten minutes later the untouched link is refused.
    store.now.advance(auth::SIGN_IN_TTL.as_millis() as i64);
    let expired = sign_in(&b, &token).await.expect_err("expired");
    assert!(expired.body.contains(USED_UP));

    // Cookies: forged ones are no session; a valid one ends after its TTL.
    let cookie = sign_in(&a, &token_of(&a.links.sign_in_url(alice()))).await.map_err(|a| a.body).expect("signed in");
    let mut changed = hex_bytes(&cookie);
    changed[20] ^= 0x80;
    let (strange, _) = stranger.start_session(alice()).expect("a person's session");
    for forged in [hex::encode(&changed), strange, cookie[..cookie.len() - 2].to_string(), String::new()] {
        let inbox = send(&b, "GET", "/", Some(&forged), None).await;
        assert_eq!(inbox.status, StatusCode::OK);
        assert!(!inbox.body.contains(SIGNED_IN), "{forged}");
    }
    assert!(send(&b, "GET", "/", Some(&cookie), None).await.body.contains(SIGNED_IN));
    store.now.advance(auth::SESSION_TTL.as_millis() as i64);
    assert!(!send(&b, "GET", "/", Some(&cookie), None).await.body.contains(SIGNED_IN), "expired session");
}

#[tokio::test]
async fn the_operator_session_is_a_signed_cookie_too() {
    let store = shared();
    let (a, b) = (replica(&store, SECRET), replica(&store, SECRET));
    let wrong = send(&a, "POST", "/signin/operator", None, Some("token=nope")).await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    let ok = send(&a, "POST", "/signin/operator", None, Some("token=operator-token")).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER);
    let set = ok.set_cookie.unwrap_or_default();
    let cookie = auth::cookie_value(set.split(';').next().unwrap_or_default()).unwrap_or_default().to_string();
    let inbox = send(&b, "GET", "/", Some(&cookie), None).await;
    assert!(inbox.body.contains(SIGNED_IN) && inbox.body.contains("operator"), "{}", inbox.body);
}

fn hex_bytes(token: &str) -> Vec<u8> {
    hex::decode(token).expect("hex")
}
