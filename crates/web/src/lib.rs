//! The plan page: read and decide plans in a browser.
//!
//! A chat card is the right place to be *told* about a plan and the wrong
//! place to *read* a long one. This crate serves, from plangate's own axum
//! server, a phone-first page per approval (`/p/<approval id>`): the plan
//! rendered from markdown (sanitized, [`markdown`]), its steps with their
//! criteria, the diff against the previous version ([`diff`]), a live
//! checklist (server-sent events woken by the core's commits), the audit
//! trail, and for people allowed to decide the same actions as every other
//! surface. The inbox (`/`) lists what the signed-in person may decide.
//!
//! Who is who ([`auth`]): a read link per approval (unguessable, derived
//! with the server's secret; read only, never decide), personal single-use
//! sign-in links the bot sends privately (`/plan web`), the operator token.
//! Sign-in links and session cookies are signed, not remembered: plangate
//! may run as several replicas behind a load balancer on one store, and a
//! link sent by one replica, or a cookie set by one, works on every other.
//!
//! Passkeys ([`passkey`], [`stepup`]): a signed-in person registers one
//! (`/passkeys`); where the operator's policy says `step_up`, their
//! approval counts only once confirmed with it (`/p/<id>/confirm`, where
//! the bot's private "Confirm with your passkey" link leads).
//!
//! It is a read/decide surface over the engine and adds no decision rule:
//! every state change is a POST that the server's [`Backend`] turns into the
//! same engine command a chat button sends, after the same approver
//! allowlist check.
//!
//! **Architecture invariant:** no per-process state: every replica that
//! shares the web secret serves every request the same. Tokens, cookies and
//! CSRF tokens are HMACs under keys derived from that secret; the only
//! records are in the store, through the [`Backend`]: used sign-in links
//! and passkey challenges ([`Backend::use_once`]), signed-out sessions
//! ([`Backend::revoke`]) and people's passkeys ([`Backend::passkey`]),
//! refusing when the store cannot answer. Everything it shows comes from the
//! [`Backend`], everything it changes goes through [`Backend::decide`];
//! every interpolation is escaped and agent markdown is sanitized; no inline
//! script (the CSP forbids it).

pub mod auth;
pub mod diff;
pub mod markdown;
pub mod page;
pub mod passkey;
mod routes;
mod stepup;

pub use auth::Identity;
pub use routes::{read_link_live, router};

use async_trait::async_trait;
use plangate_engine::{ApprovalId, AuditEvent, Decision, Proposal, SessionKey, State, Timestamp};
use std::net::IpAddr;
use std::sync::Arc;
use tokio::sync::watch;

/// Why a decision was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Not an approver of this plan (HTTP 403).
    #[error("{0}")]
    Forbidden(String),
    /// Already decided, superseded, or otherwise not decidable now (409).
    #[error("{0}")]
    Conflict(String),
    /// No such approval (404).
    #[error("{0}")]
    NotFound(String),
    /// Nothing was recorded; try again (503).
    #[error("{0}")]
    Unavailable(String),
}

/// Who reads a page through a read-only link (nobody signed in).
pub const LINK_READER: &str = "a read-only link";

/// What the page needs from the server: reads of state, the approver
/// allowlists, the one door for decisions, and commit wake-ups.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
    async fn proposal(&self, id: ApprovalId) -> Option<Proposal>;
    async fn state(&self, key: &SessionKey) -> Option<State>;
    /// Up to `limit` pending proposals, oldest first, after the one
    /// proposed at `after` (time and id): a page of the inbox, however many
    /// wait.
    async fn pending_page(&self, after: Option<(Timestamp, ApprovalId)>, limit: usize) -> Vec<Proposal>;
    /// Up to `limit` decided proposals (every outcome), the latest decided
    /// first, taken from the latest proposed of each outcome.
    async fn recently_decided(&self, limit: usize) -> Vec<Proposal>;
    /// The session's version before `p`, for the diff.
    async fn previous_version(&self, p: &Proposal) -> Option<Proposal>;
    /// The audit trail of one approval, oldest first, shown to `reader`
    /// (who is signed in, or [`LINK_READER`]): reading the audit is itself
    /// audited, like `GET /v1/audit` and the export.
    async fn audit(&self, p: &Proposal, reader: &str) -> Vec<AuditEvent>;
    /// The "always allow" permission rules stored for `agent`, oldest first
    /// (shown on its plans' pages; removed in chat with `/plan rules remove N`).
    async fn permission_rules(&self, agent: &str) -> Vec<plangate_engine::permission::StoredRule>;
    /// Whether `who` may decide `proposal` from the page: the same check as
    /// [`Backend::decide`] (on the allowlist of a destination of the agent
    /// that takes the proposal's project; the operator always), so the page
    /// never shows buttons a decision would refuse.
    fn may_decide(&self, who: &Identity, proposal: &Proposal) -> bool;
    /// Decide as `who`, through the same command a chat button sends; the
    /// audit names `who` "via web". Returns the receipt.
    async fn decide(&self, who: &Identity, id: ApprovalId, decision: Decision) -> Result<String, Refused>;
    /// Wake-ups of `key`'s commits (the core's waiters).
    fn subscribe(&self, key: &SessionKey) -> watch::Receiver<u64>;
    /// Whether `token` is the operator token (constant time).
    fn is_operator_token(&self, token: &str) -> bool;
    /// SHA-256 of the operator token now configured (`None`: none is).
    /// Operator sessions are bound to it, so rotating the token signs out
    /// every operator browser ([`auth::AuthKeys::operator_binding`]).
    fn operator_token_sha256(&self) -> Option<[u8; 32]>;
    /// A wrong credential on the sign-in `surface` from `client`: take it
    /// from the address's budget of failures (shared with the API's bearer
    /// tokens), count and audit it. `Some(retry after)` when the address is
    /// over budget: answer 429. A correct credential never comes here.
    async fn sign_in_failed(&self, client: IpAddr, surface: SignInSurface) -> Option<std::time::Duration>;
    /// Record `key` as used, durably and across replicas: `true` only the
    /// first time. `false` too when it cannot be recorded (storage
    /// trouble): a sign-in link is then refused, never let through twice.
    async fn use_once(&self, key: &str) -> bool;
    /// Record that browser session `session_id` signed out (see
    /// [`auth::sign_out_key`]), on every replica; `false` when it could not
    /// be recorded.
    async fn revoke(&self, session_id: &str) -> bool;
    /// Whether browser session `session_id` signed out; `true` when the
    /// store cannot tell (the session is refused, never assumed live).
    async fn revoked(&self, session_id: &str) -> bool;
    /// The stored passkey record of `approver` (JSON of a
    /// [`passkey::Passkey`], the store's [`passkey::cursor_key`] cursor).
    async fn passkey(&self, approver: &str) -> Result<Option<String>, Refused>;
    /// Compare and swap that record: write `value` only if it still holds
    /// `expected`; `Ok(false)` and nothing written otherwise.
    async fn swap_passkey(&self, approver: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, Refused>;
    /// Audit something the page did or refused as `who` (a passkey
    /// registered, a confirmation refused), about `proposal` if any.
    async fn record(&self, who: &Identity, action: &str, proposal: Option<&Proposal>, detail: String);
}

/// Which sign-in a wrong credential was presented to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInSurface {
    /// `POST /signin/operator`: the operator token.
    OperatorToken,
    /// `POST /signin`: a sign-in link (bad, expired or used).
    Link,
}

/// Where the web page reads the time for sign-in links and sessions: the
/// shell's one clock (the server passes its core's).
pub use plangate_channel::clock::{Clock, SystemClock};

/// The links the server hands out: read links for cards, sign-in links for
/// `/plan web`. Shared by the page and the server's chat side; derived from
/// the web secret alone, so every replica hands out links every other
/// accepts.
pub struct Links {
    base: String,
    read_key: auth::ReadKey,
    auth: auth::AuthKeys,
    challenges: passkey::ChallengeKey,
    /// The passkeys' relying party: the public URL's host.
    rp: Option<passkey::RelyingParty>,
    clock: Arc<dyn Clock>,
}

impl Links {
    /// `public_url` is where people reach the page (`https://plans.example`);
    /// `secret` derives the read tokens and signs sign-ins and sessions
    /// (keep it across restarts, or every read link changes; share it
    /// between replicas). Time from the system clock.
    pub fn new(public_url: &str, secret: &[u8]) -> Links {
        Links::with_clock(public_url, secret, Arc::new(SystemClock))
    }

    /// [`Links::new`] with the time from `clock` (the server's, which tests
    /// turn forward).
    pub fn with_clock(public_url: &str, secret: &[u8], clock: Arc<dyn Clock>) -> Links {
        Links {
            base: public_url.trim_end_matches('/').to_string(),
            read_key: auth::ReadKey::new(secret),
            auth: auth::AuthKeys::derive(secret),
            challenges: passkey::ChallengeKey::derive(secret),
            rp: passkey::RelyingParty::of(public_url),
            clock,
        }
    }

    /// The read-only link of one approval, for its cards.
    pub fn read_url(&self, id: &ApprovalId) -> String {
        format!("{}/p/{id}?k={}", self.base, self.read_key.token(id))
    }

    /// A personal, single-use sign-in link for `who`, valid for
    /// [`auth::SIGN_IN_TTL`].
    pub fn sign_in_url(&self, who: Identity) -> String {
        format!("{}/signin/{}", self.base, self.auth.sign_in_token(&who, self.now()))
    }

    /// A personal sign-in link for `who` that leads, once signed in, to
    /// the page confirming approval `id` with their passkey (the private
    /// "Confirm with your passkey" link of a step-up approval).
    pub fn step_up_url(&self, who: Identity, id: &ApprovalId) -> String {
        format!("{}?next={}", self.sign_in_url(who), stepup::confirm_path(id))
    }

    /// Whether cookies must be `Secure` (the page is public over https).
    /// The origin (`scheme://host[:port]`) of the public URL: what a
    /// browser sends as `Origin` for a form posted from the page itself.
    pub fn origin(&self) -> &str {
        let after_scheme = self.base.find("://").map(|i| i + 3).unwrap_or(0);
        match self.base[after_scheme..].find('/') {
            Some(slash) => &self.base[..after_scheme + slash],
            None => &self.base,
        }
    }

    pub fn secure(&self) -> bool {
        self.base.starts_with("https://")
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

/// The page's state: the backend and the links. Nothing else: sessions are
/// in their cookies, used sign-ins and sign-outs in the store.
pub struct Web {
    pub backend: Arc<dyn Backend>,
    pub links: Arc<Links>,
}

impl Web {
    pub fn new(backend: Arc<dyn Backend>, links: Arc<Links>) -> Arc<Web> {
        Arc::new(Web { backend, links })
    }

    /// Use a sign-in token: who it signs in, if its MAC and expiry check
    /// out and no replica used it before (recorded now, so it works once).
    pub async fn redeem_sign_in(&self, token: &str) -> Option<Identity> {
        let Some(sign_in) = self.links.auth.check_sign_in(token, self.links.now()) else {
            tracing::warn!("web sign-in refused: not a valid, unexpired sign-in link");
            return None;
        };
        if !self.backend.use_once(&sign_in.once_key()).await {
            tracing::warn!(who = %sign_in.who.label(), "web sign-in refused: the link was used before (or the store could not tell)");
            return None;
        }
        Some(sign_in.who)
    }

    /// A new session for `who`: its cookie value and the session. An
    /// operator's is bound to the operator token configured now; `None`
    /// when there is none to bind it to.
    pub fn start_session(&self, who: Identity) -> Option<(String, auth::Session)> {
        match who {
            Identity::Operator => {
                let token = self.backend.operator_token_sha256()?;
                Some(self.links.auth.start_operator_session(&token, self.links.now()))
            }
            person => Some(self.links.auth.start_session(person, self.links.now())),
        }
    }

    /// The session a cookie value stands for: signed with this secret,
    /// within its lifetime, not signed out on any replica, and, for the
    /// operator, made with the operator token configured now.
    pub async fn session(&self, cookie: &str) -> Option<auth::Session> {
        let session = self.links.auth.session(cookie, self.links.now())?;
        if !self.links.auth.bound_to_current_token(&session, self.backend.operator_token_sha256().as_ref()) {
            tracing::warn!("web: an operator session made with another operator token (rotated since) was refused");
            return None;
        }
        if self.backend.revoked(&session.id).await {
            return None;
        }
        Some(session)
    }
}

#[cfg(test)]
mod replicas_test;
