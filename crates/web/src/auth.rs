//! Who may see and who may decide: read links, sign-in links, sessions and
//! CSRF tokens.
//!
//! No password store: a person proves who they are through the chat identity
//! that already decides (`telegram:<id>`, `slack:<id>`, …). The bot sends a
//! sign-in link privately ([`SignIns::issue`]); opening it once creates a
//! session ([`Sessions`]) bound to that identity. Read links are derived
//! from the approval id with the server's secret ([`ReadKey`]): anyone who
//! holds one may read that one plan, never decide.
//!
//! Sign-ins and sessions live in memory: a restart signs everyone out (they
//! ask the bot again), which fails closed.

use hmac::{Hmac, Mac};
use plangate_engine::ApprovalId;
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How long a sign-in link works, once.
pub const SIGN_IN_TTL: Duration = Duration::from_secs(10 * 60);
/// How long a browser session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// The session cookie's name.
pub const COOKIE: &str = "plangate_session";
/// Sign-ins outstanding at once; the oldest is dropped beyond this.
const MAX_PENDING_SIGN_INS: usize = 10_000;

/// Who is signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// A chat user: `id` is `<channel>:<user id>` (what the approver
    /// allowlists hold), `name` how receipts show them (`telegram:@alice`).
    Person { id: String, name: String },
    /// A holder of the operator token.
    Operator,
}

impl Identity {
    /// How the page names who is signed in.
    pub fn label(&self) -> String {
        match self {
            Identity::Person { name, .. } => name.clone(),
            Identity::Operator => "operator".to_string(),
        }
    }
}

/// 128 random bits as 32 hex characters.
pub fn random_token() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// Derives the read token of an approval: HMAC-SHA256 of the approval id
/// under the server's secret, cut to 128 bits. Nothing to store, unguessable
/// without the secret, and the same after a restart.
#[derive(Clone)]
pub struct ReadKey {
    secret: Vec<u8>,
}

impl std::fmt::Debug for ReadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadKey(…)")
    }
}

impl ReadKey {
    pub fn new(secret: &[u8]) -> ReadKey {
        ReadKey { secret: secret.to_vec() }
    }

    /// The read token of `id` (32 hex characters).
    pub fn token(&self, id: &ApprovalId) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret).unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(b"plangate read link v1\0");
        mac.update(id.to_string().as_bytes());
        hex::encode(&mac.finalize().into_bytes()[..16])
    }

    /// Whether `token` is the read token of `id` (constant time).
    pub fn verify(&self, id: &ApprovalId, token: &str) -> bool {
        self.token(id).as_bytes().ct_eq(token.as_bytes()).into()
    }
}

/// Outstanding single-use sign-in links.
#[derive(Default)]
pub struct SignIns {
    pending: Mutex<HashMap<String, (Identity, Instant)>>,
}

impl SignIns {
    /// A new sign-in token for `who`, valid once within [`SIGN_IN_TTL`].
    pub fn issue(&self, who: Identity) -> String {
        let token = random_token();
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        pending.retain(|_, (_, at)| now.duration_since(*at) < SIGN_IN_TTL);
        if pending.len() >= MAX_PENDING_SIGN_INS {
            if let Some(oldest) = pending.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone()) {
                pending.remove(&oldest);
            }
        }
        pending.insert(token.clone(), (who, now));
        token
    }

    /// Use `token`: its identity if it exists and is fresh. Either way it
    /// is gone afterwards.
    pub fn redeem(&self, token: &str) -> Option<Identity> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let (who, at) = pending.remove(token)?;
        (at.elapsed() < SIGN_IN_TTL).then_some(who)
    }
}

/// A signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    pub who: Identity,
    /// Every form carries it; a POST without the session's token is refused.
    pub csrf: String,
    started: Instant,
}

/// Browser sessions by cookie value.
#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Start a session for `who`: the cookie value.
    pub fn start(&self, who: Identity) -> String {
        let id = random_token();
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|_, s| s.started.elapsed() < SESSION_TTL);
        live.insert(id.clone(), Session { who, csrf: random_token(), started: Instant::now() });
        id
    }

    pub fn get(&self, cookie: &str) -> Option<Session> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.get(cookie).filter(|s| s.started.elapsed() < SESSION_TTL).cloned()
    }

    pub fn end(&self, cookie: &str) {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(cookie);
    }
}

/// Whether `given` is the session's CSRF token (constant time).
pub fn csrf_ok(session: &Session, given: &str) -> bool {
    session.csrf.as_bytes().ct_eq(given.as_bytes()).into()
}

/// The `Set-Cookie` value of a new session: `HttpOnly`, `SameSite=Strict`,
/// `Secure` when the page is served over https.
pub fn session_cookie(value: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        SESSION_TTL.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that ends a session.
pub fn clear_cookie(secure: bool) -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}", if secure { "; Secure" } else { "" })
}

/// The session cookie's value in a `Cookie` header, if any.
pub fn cookie_value(header: &str) -> Option<&str> {
    header.split(';').map(str::trim).find_map(|pair| pair.strip_prefix(COOKIE)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_tokens_are_per_approval_and_per_secret() {
        let key = ReadKey::new(b"secret one");
        let a = ApprovalId([1; 16]);
        let b = ApprovalId([2; 16]);
        let token = key.token(&a);
        assert_eq!(token.len(), 32);
        assert!(key.verify(&a, &token));
        assert!(!key.verify(&b, &token));
        assert!(!ReadKey::new(b"secret two").verify(&a, &token));
        assert!(!key.verify(&a, ""));
    }

    #[test]
    fn a_sign_in_link_works_once() {
        let sign_ins = SignIns::default();
        let who = Identity::Person { id: "telegram:1".into(), name: "telegram:@a".into() };
        let token = sign_ins.issue(who.clone());
        assert_eq!(sign_ins.redeem(&token), Some(who));
        assert_eq!(sign_ins.redeem(&token), None);
        assert_eq!(sign_ins.redeem("not a token"), None);
    }

    #[test]
    fn cookies_are_http_only_strict_and_secure_over_https() {
        let c = session_cookie("abc", true);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.ends_with("; Secure"));
        assert!(!session_cookie("abc", false).contains("Secure"));
        assert_eq!(cookie_value("a=b; plangate_session=xyz; c=d"), Some("xyz"));
        assert_eq!(cookie_value("plangate_sessionx=1"), None);
    }
}
