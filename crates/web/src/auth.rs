//! Who may see and who may decide: read links, sign-in links, sessions and
//! CSRF tokens.
//!
//! No password store: a person proves who they are through the chat identity
//! that already decides (`telegram:<id>`, `slack:<id>`, …). The bot sends a
//! sign-in link privately ([`AuthKeys::sign_in_token`]); opening it once
//! creates a session bound to that identity ([`AuthKeys::start_session`]).
//! Read links are derived from the approval id with the server's secret
//! ([`ReadKey`]): anyone who holds one may read that one plan, never decide.
//!
//! **Nothing here lives in one process's memory**, so that every replica
//! behind a load balancer accepts what another issued: a sign-in token and a
//! session cookie carry their identity, time and a random nonce, signed with
//! HMAC-SHA256 under keys derived from the web secret (which replicas share),
//! and a CSRF token is derived from the session id. The only state is in the
//! store, through the [`crate::Backend`]: which sign-in nonces were used
//! ([`sign_in_once_key`], so a link works once across replicas) and which
//! sessions signed out ([`sign_out_key`]). A store that cannot answer refuses
//! (a used link, a signed-out session): never fail open.
//!
//! **An operator session is bound to the operator token it was made with**
//! ([`AuthKeys::start_operator_session`]): its cookie carries a keyed
//! fingerprint of that token ([`AuthKeys::operator_binding`], an HMAC under
//! a key derived from the web secret of the token's SHA-256, never the
//! token or a plain hash of it), and [`crate::Web::session`] compares it
//! with the current token's on every request. Rotating the operator token
//! (and restarting) therefore signs out every operator browser at once,
//! the way the old token stops working on the API.
//!
//! Wire format of a token and of a cookie value: lowercase hex of
//! `version ‖ kind ‖ time (i64 ms, big endian) ‖ nonce (16 bytes) ‖ identity
//! ‖ HMAC-SHA256 (32 bytes)`, where the identity is a tag byte and, for a
//! person, two length-prefixed (u32, big endian) UTF-8 strings (so any
//! identity round-trips exactly, whatever characters it holds), for a bound
//! operator the 16-byte binding. The unbound operator tag of earlier
//! cookies still parses, to a session no request accepts.

use hmac::{Hmac, Mac};
use plangate_engine::{ApprovalId, Timestamp};
use sha2::Sha256;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// How long a sign-in link works, once.
pub const SIGN_IN_TTL: Duration = Duration::from_secs(10 * 60);
/// How long a browser session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// How far ahead of this replica's clock another replica's may run: a
/// session started "in the future" by more than this is refused.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);
/// The session cookie's name.
pub const COOKIE: &str = "plangate_session";
/// The longest token or cookie value looked at (hex characters): far above
/// any real identity, and it bounds the work a garbage value costs.
pub const MAX_TOKEN_LEN: usize = 8192;

const VERSION: u8 = 1;
const KIND_SIGN_IN: u8 = b'S';
const KIND_SESSION: u8 = b'C';
const NONCE_LEN: usize = 16;
const MAC_LEN: usize = 32;
const TAG_OPERATOR: u8 = 0;
const TAG_PERSON: u8 = 1;
const TAG_OPERATOR_BOUND: u8 = 2;
/// Bytes of an operator session's binding to its token.
pub const BINDING_LEN: usize = 16;

type HmacSha256 = Hmac<Sha256>;

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

pub(crate) fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Derives the read token of an approval: HMAC-SHA256 of the approval id
/// under the server's secret, cut to 128 bits. Nothing to store, unguessable
/// without the secret, and the same after a restart and on every replica.
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
        hex::encode(&mac(&self.secret, &[b"plangate read link v1\0", id.to_string().as_bytes()])[..16])
    }

    /// Whether `token` is the read token of `id` (constant time).
    pub fn verify(&self, id: &ApprovalId, token: &str) -> bool {
        self.token(id).as_bytes().ct_eq(token.as_bytes()).into()
    }
}

/// The key under which the store records that a sign-in nonce was used.
pub fn sign_in_once_key(nonce: &str) -> String {
    format!("web-signin:{nonce}")
}

/// The key under which the store records that a session signed out.
pub fn sign_out_key(session_id: &str) -> String {
    format!("web-signout:{session_id}")
}

/// A sign-in token whose signature and expiry check out; still to be used
/// once ([`crate::Backend::use_once`] of [`SignIn::once_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignIn {
    pub who: Identity,
    /// The token's random nonce (32 hex characters).
    pub nonce: String,
}

impl SignIn {
    /// What makes this link single-use across replicas.
    pub fn once_key(&self) -> String {
        sign_in_once_key(&self.nonce)
    }
}

/// A signed-in browser, as its cookie says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub who: Identity,
    /// The random session id (32 hex characters): what sign-out revokes.
    pub id: String,
    /// Every form carries it; a POST without the session's token is refused.
    pub csrf: String,
    pub started: Timestamp,
    /// For the operator: which operator token the session was made with
    /// ([`AuthKeys::operator_binding`]); `None` for a person, and for an
    /// operator cookie from before sessions were bound (refused).
    pub binding: Option<[u8; BINDING_LEN]>,
}

/// What sign-in tokens, session cookies and CSRF tokens are signed with:
/// keys derived from the web secret, one per purpose, so a token of one kind
/// never passes for another and none of them for a read token.
#[derive(Clone)]
pub struct AuthKeys {
    sign_in: [u8; 32],
    session: [u8; 32],
    csrf: [u8; 32],
    binding: [u8; 32],
}

impl std::fmt::Debug for AuthKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthKeys(…)")
    }
}

/// The signed fields of a token or a cookie.
struct Sealed {
    /// A sign-in token's expiry; a session's start.
    time: Timestamp,
    nonce: [u8; NONCE_LEN],
    who: Identity,
    /// An operator's binding to its token (sessions only).
    binding: Option<[u8; BINDING_LEN]>,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl AuthKeys {
    /// The keys of `secret` (the server's web secret). Derived with a label
    /// that read tokens never MAC, so they are independent of the read key.
    pub fn derive(secret: &[u8]) -> AuthKeys {
        let key = |purpose: &[u8]| mac(secret, &[b"plangate web key v1\0", purpose]);
        AuthKeys { sign_in: key(b"sign-in"), session: key(b"session"), csrf: key(b"csrf"), binding: key(b"operator binding") }
    }

    /// A new sign-in token for `who`, valid once until `now` +
    /// [`SIGN_IN_TTL`].
    pub fn sign_in_token(&self, who: &Identity, now: Timestamp) -> String {
        let sealed = Sealed { time: now.plus_ms(SIGN_IN_TTL.as_millis() as u64), nonce: rand::random(), who: who.clone(), binding: None };
        seal(&self.sign_in, KIND_SIGN_IN, &sealed)
    }

    /// The sign-in `token` stands for, if it was signed with these keys and
    /// has not expired at `now`. Whether it was used is the store's to say.
    pub fn check_sign_in(&self, token: &str, now: Timestamp) -> Option<SignIn> {
        let s = open(&self.sign_in, KIND_SIGN_IN, token)?;
        let fresh = now.0 < s.time.0 && s.time.0 <= now.0.saturating_add(ms(SIGN_IN_TTL + CLOCK_SKEW));
        fresh.then(|| SignIn { who: s.who, nonce: hex::encode(s.nonce) })
    }

    /// Start a session for `who`: the cookie value and the session. An
    /// operator session started here is bound to no token and opens
    /// nothing: use [`AuthKeys::start_operator_session`].
    pub fn start_session(&self, who: Identity, now: Timestamp) -> (String, Session) {
        let sealed = Sealed { time: now, nonce: rand::random(), who, binding: None };
        let cookie = seal(&self.session, KIND_SESSION, &sealed);
        (cookie, self.session_of(sealed))
    }

    /// Start an operator session bound to the operator token whose SHA-256
    /// is `token_sha256`: the cookie value and the session.
    pub fn start_operator_session(&self, token_sha256: &[u8; 32], now: Timestamp) -> (String, Session) {
        let binding = Some(self.operator_binding(token_sha256));
        let sealed = Sealed { time: now, nonce: rand::random(), who: Identity::Operator, binding };
        let cookie = seal(&self.session, KIND_SESSION, &sealed);
        (cookie, self.session_of(sealed))
    }

    /// What an operator cookie carries of its token: an HMAC of the token's
    /// SHA-256 under a key derived from the web secret, cut to 128 bits. It
    /// tells tokens apart without revealing one: a leaked cookie gives no
    /// hash to guess the token against offline.
    pub fn operator_binding(&self, token_sha256: &[u8; 32]) -> [u8; BINDING_LEN] {
        let full = mac(&self.binding, &[token_sha256]);
        let mut out = [0; BINDING_LEN];
        out.copy_from_slice(&full[..BINDING_LEN]);
        out
    }

    /// Whether `session` may act now that the operator token's SHA-256 is
    /// `current` (`None`: no operator token is configured). A person's
    /// session is not bound to a token; an operator's must be bound to the
    /// current one (constant time).
    pub fn bound_to_current_token(&self, session: &Session, current: Option<&[u8; 32]>) -> bool {
        match (&session.who, session.binding, current) {
            (Identity::Person { .. }, _, _) => true,
            (Identity::Operator, Some(binding), Some(current)) => binding.ct_eq(&self.operator_binding(current)).into(),
            (Identity::Operator, _, _) => false,
        }
    }

    /// The session a cookie value stands for, if it was signed with these
    /// keys and is within [`SESSION_TTL`] at `now`. Whether it signed out
    /// is the store's to say.
    pub fn session(&self, cookie: &str, now: Timestamp) -> Option<Session> {
        let s = open(&self.session, KIND_SESSION, cookie)?;
        let live = s.time.0 <= now.0.saturating_add(ms(CLOCK_SKEW)) && now.0 < s.time.0.saturating_add(ms(SESSION_TTL));
        live.then(|| self.session_of(s))
    }

    fn session_of(&self, s: Sealed) -> Session {
        let id = hex::encode(s.nonce);
        Session { csrf: self.csrf(&id), who: s.who, id, started: s.time, binding: s.binding }
    }

    /// The CSRF token of a session: derived from its id, so every replica
    /// computes the same one (32 hex characters).
    pub fn csrf(&self, session_id: &str) -> String {
        hex::encode(&mac(&self.csrf, &[session_id.as_bytes()])[..16])
    }
}

fn seal(key: &[u8], kind: u8, s: &Sealed) -> String {
    let mut body = vec![VERSION, kind];
    body.extend_from_slice(&s.time.0.to_be_bytes());
    body.extend_from_slice(&s.nonce);
    match &s.who {
        Identity::Operator => match &s.binding {
            Some(binding) => {
                body.push(TAG_OPERATOR_BOUND);
                body.extend_from_slice(binding);
            }
            None => body.push(TAG_OPERATOR),
        },
        Identity::Person { id, name } => {
            body.push(TAG_PERSON);
            for text in [id, name] {
                let len = u32::try_from(text.len()).unwrap_or_else(|_| unreachable!("identities are far below 4 GiB"));
                body.extend_from_slice(&len.to_be_bytes());
                body.extend_from_slice(text.as_bytes());
            }
        }
    }
    let tag = mac(key, &[&body]);
    body.extend_from_slice(&tag);
    hex::encode(body)
}

/// The fields of `token`, if it is canonical lowercase hex of a body of
/// `kind` with a valid MAC under `key` (checked in constant time, before
/// anything in the body is read).
fn open(key: &[u8], kind: u8, token: &str) -> Option<Sealed> {
    if token.len() > MAX_TOKEN_LEN || !token.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let bytes = hex::decode(token).ok()?;
    let (body, tag) = bytes.split_at(bytes.len().checked_sub(MAC_LEN)?);
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key).ok()?;
    mac.update(body);
    mac.verify_slice(tag).ok()?;
    let mut r = Reader(body);
    if r.byte()? != VERSION || r.byte()? != kind {
        return None;
    }
    let time = Timestamp(i64::from_be_bytes(r.array()?));
    let nonce = r.array()?;
    let (who, binding) = match r.byte()? {
        TAG_OPERATOR => (Identity::Operator, None),
        TAG_OPERATOR_BOUND => (Identity::Operator, Some(r.array()?)),
        TAG_PERSON => (Identity::Person { id: r.text()?, name: r.text()? }, None),
        _ => return None,
    };
    r.0.is_empty().then_some(Sealed { time, nonce, who, binding })
}

/// Reads a signed body front to back; `None` when it runs short.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn text(&mut self) -> Option<String> {
        let len = u32::from_be_bytes(self.array()?);
        let bytes = self.take(usize::try_from(len).ok()?)?;
        String::from_utf8(bytes.to_vec()).ok()
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
    use proptest::prelude::*;

    const T0: Timestamp = Timestamp(1_800_000_000_000);

    fn alice() -> Identity {
        Identity::Person { id: "telegram:1".into(), name: "telegram:@a".into() }
    }

    fn keys() -> AuthKeys {
        AuthKeys::derive(b"secret one")
    }

    /// `token` with the byte at `at` (of the decoded bytes) changed.
    fn flip(token: &str, at: usize) -> String {
        let mut bytes = hex::decode(token).expect("hex");
        bytes[at] ^= 0x01;
        hex::encode(bytes)
    }

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
    fn read_tokens_are_the_same_as_before_signed_sessions() {
        // Read links already on posted cards must keep working: the
        // derivation is fixed (HMAC-SHA256("secret one", "plangate read
        // link v1\0" ‖ "0101…01"), cut to 128 bits, computed independently).
        let token = ReadKey::new(b"secret one").token(&ApprovalId([1; 16]));
        assert_eq!(token, "a3dc8275654cc3300f08a2bb431b47a0");
    }

    #[test]
    fn a_sign_in_token_opens_within_its_ttl_and_says_who() {
        let token = keys().sign_in_token(&alice(), T0);
        let sign_in = keys().check_sign_in(&token, T0).expect("fresh");
        assert_eq!(sign_in.who, alice());
        assert_eq!(sign_in.nonce.len(), 32);
        assert_eq!(sign_in.once_key(), format!("web-signin:{}", sign_in.nonce));
        let almost = T0.plus_ms(SIGN_IN_TTL.as_millis() as u64 - 1);
        assert!(keys().check_sign_in(&token, almost).is_some());
        assert!(keys().check_sign_in(&token, T0.plus_ms(SIGN_IN_TTL.as_millis() as u64)).is_none(), "expired");
        // Two links for the same person are two different links.
        assert_ne!(keys().sign_in_token(&alice(), T0), token);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "URL-safe: {token}");
    }

    #[test]
    fn forged_sign_in_tokens_are_refused() {
        let token = keys().sign_in_token(&alice(), T0);
        let len = token.len() / 2;
        for at in 0..len {
            assert!(keys().check_sign_in(&flip(&token, at), T0).is_none(), "byte {at} changed");
        }
        assert!(AuthKeys::derive(b"secret two").check_sign_in(&token, T0).is_none(), "another secret");
        let other = AuthKeys::derive(b"secret two").sign_in_token(&alice(), T0);
        assert!(keys().check_sign_in(&other, T0).is_none(), "MAC of another secret");
        for cut in [0, 2, token.len() - 2, token.len() - 64, token.len() - 66] {
            assert!(keys().check_sign_in(&token[..cut], T0).is_none(), "truncated to {cut}");
        }
        assert!(keys().check_sign_in(&format!("{token}00"), T0).is_none(), "extended");
        assert!(keys().check_sign_in(&token.to_uppercase(), T0).is_none(), "not canonical");
        assert!(keys().check_sign_in(&format!("{token}x"), T0).is_none());
        assert!(keys().check_sign_in("", T0).is_none());
        assert!(keys().check_sign_in(&"0".repeat(MAX_TOKEN_LEN + 2), T0).is_none());
        // A session cookie is no sign-in token, and the reverse.
        let (cookie, _) = keys().start_session(alice(), T0);
        assert!(keys().check_sign_in(&cookie, T0).is_none());
        assert!(keys().session(&token, T0).is_none());
    }

    #[test]
    fn a_sign_in_token_from_far_in_the_future_is_refused() {
        let late = keys().sign_in_token(&alice(), T0.plus_ms(ms(SIGN_IN_TTL) as u64));
        assert!(keys().check_sign_in(&late, T0).is_none());
        let skewed = keys().sign_in_token(&alice(), T0.plus_ms(30_000));
        assert!(keys().check_sign_in(&skewed, T0).is_some(), "a replica's clock a little ahead");
    }

    #[test]
    fn a_session_cookie_opens_within_its_ttl_with_the_same_csrf_token() {
        let (cookie, session) = keys().start_session(alice(), T0);
        assert_eq!(session.who, alice());
        assert_eq!(session.id.len(), 32);
        assert_eq!(session.csrf.len(), 32);
        assert_eq!(session.csrf, keys().csrf(&session.id));
        let later = T0.plus_ms(ms(SESSION_TTL) as u64 - 1);
        assert_eq!(keys().session(&cookie, later), Some(session.clone()), "same who, id and CSRF token");
        assert!(keys().session(&cookie, T0.plus_ms(ms(SESSION_TTL) as u64)).is_none(), "expired");
        assert!(keys().session(&cookie, Timestamp(T0.0 - ms(CLOCK_SKEW) - 1)).is_none(), "started in the future");
        assert!(AuthKeys::derive(b"secret two").csrf(&session.id) != session.csrf);
        let (_, other) = keys().start_session(alice(), T0);
        assert_ne!(other.id, session.id);
        assert_ne!(other.csrf, session.csrf);
    }

    #[test]
    fn forged_cookies_are_refused() {
        let (cookie, _) = keys().start_session(Identity::Operator, T0);
        for at in 0..cookie.len() / 2 {
            assert!(keys().session(&flip(&cookie, at), T0).is_none(), "byte {at} changed");
        }
        let (other, _) = AuthKeys::derive(b"secret two").start_session(Identity::Operator, T0);
        assert!(keys().session(&other, T0).is_none(), "MAC of another secret");
        for cut in [0, 1, 2, cookie.len() - 1, cookie.len() - 2, cookie.len() - 64] {
            assert!(keys().session(&cookie[..cut], T0).is_none(), "truncated to {cut}");
        }
        assert!(keys().session("not a cookie", T0).is_none());
    }

    #[test]
    fn an_operator_session_is_bound_to_its_token() {
        let old = [1u8; 32];
        let new = [2u8; 32];
        let (cookie, session) = keys().start_operator_session(&old, T0);
        let opened = keys().session(&cookie, T0).expect("valid cookie");
        assert_eq!(opened, session);
        assert!(keys().bound_to_current_token(&opened, Some(&old)));
        assert!(!keys().bound_to_current_token(&opened, Some(&new)), "the token was rotated");
        assert!(!keys().bound_to_current_token(&opened, None), "no operator token any more");
        // An operator cookie bound to no token (as before binding) opens nothing.
        let (unbound, _) = keys().start_session(Identity::Operator, T0);
        let unbound = keys().session(&unbound, T0).expect("still parses");
        assert!(!keys().bound_to_current_token(&unbound, Some(&old)));
        // A person is bound to no token, and the binding is per secret.
        let (_, person) = keys().start_session(alice(), T0);
        assert!(keys().bound_to_current_token(&person, None));
        assert_ne!(keys().operator_binding(&old), AuthKeys::derive(b"secret two").operator_binding(&old));
        for at in 0..cookie.len() / 2 {
            assert!(keys().session(&flip(&cookie, at), T0).is_none(), "byte {at} changed");
        }
    }

    #[test]
    fn odd_identities_round_trip_exactly() {
        let long = "x".repeat(2000);
        let odd = [
            ("telegram:1", "telegram:@alice"),
            ("", ""),
            ("slack:U1;evil=1", "name; Path=/; Domain=x"),
            ("discord:1:2:3", "a=b=c"),
            ("telegram:😀", "Ålice — ☃ \u{202e}gnp.exe"),
            ("nul\0byte", "new\nline\r\t\"quote\"'"),
            ("\u{0}\u{1}\u{7f}", "%00%2F/..\\"),
            (long.as_str(), long.as_str()),
        ];
        for (id, name) in odd {
            let who = Identity::Person { id: id.to_string(), name: name.to_string() };
            let token = keys().sign_in_token(&who, T0);
            assert_eq!(keys().check_sign_in(&token, T0).map(|s| s.who), Some(who.clone()), "{id:?}");
            let (cookie, _) = keys().start_session(who.clone(), T0);
            assert!(cookie.bytes().all(|b| b.is_ascii_hexdigit()), "a valid cookie value");
            assert_eq!(keys().session(&cookie, T0).map(|s| s.who), Some(who), "{id:?}");
        }
        let (cookie, _) = keys().start_session(Identity::Operator, T0);
        assert_eq!(keys().session(&cookie, T0).map(|s| s.who), Some(Identity::Operator));
    }

    proptest! {
        #[test]
        fn any_identity_round_trips(id in any::<String>(), name in any::<String>()) {
            let who = Identity::Person { id, name };
            let token = keys().sign_in_token(&who, T0);
            prop_assert_eq!(keys().check_sign_in(&token, T0).map(|s| s.who), Some(who.clone()));
            let (cookie, session) = keys().start_session(who, T0);
            prop_assert_eq!(keys().session(&cookie, T0), Some(session));
        }

        #[test]
        fn garbage_is_never_a_session(garbage in "[0-9a-f]{0,400}") {
            prop_assert!(keys().session(&garbage, T0).is_none());
            prop_assert!(keys().check_sign_in(&garbage, T0).is_none());
        }
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
