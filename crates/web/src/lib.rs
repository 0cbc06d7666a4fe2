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
//!
//! It is a read/decide surface over the engine and adds no decision rule:
//! every state change is a POST that the server's [`Backend`] turns into the
//! same engine command a chat button sends, after the same approver
//! allowlist check.
//!
//! **Architecture invariant:** no state of its own beyond sign-ins and
//! sessions; everything it shows comes from the [`Backend`], everything it
//! changes goes through [`Backend::decide`]; every interpolation is escaped
//! and agent markdown is sanitized; no inline script (the CSP forbids it).

pub mod auth;
pub mod diff;
pub mod markdown;
pub mod page;
mod routes;

pub use auth::Identity;
pub use routes::{read_link_live, router};

use async_trait::async_trait;
use plangate_engine::{ApprovalId, AuditEvent, Plan, Proposal, SessionKey, State, Timestamp};
use std::sync::Arc;
use tokio::sync::watch;

/// What a person decided on the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebDecision {
    Approve,
    /// Request changes, with the feedback.
    Revise(String),
    /// Approve with these steps instead of the agent's.
    Edit(Plan),
    Cancel,
}

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

/// What the page needs from the server: reads of state, the approver
/// allowlists, the one door for decisions, and commit wake-ups.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
    async fn proposal(&self, id: ApprovalId) -> Option<Proposal>;
    async fn state(&self, key: &SessionKey) -> Option<State>;
    /// Every proposal (for the inbox).
    async fn proposals(&self) -> Vec<Proposal>;
    /// The audit trail of one approval, oldest first.
    async fn audit(&self, id: ApprovalId) -> Vec<AuditEvent>;
    /// Whether `who` is an approver of `agent`'s plans (any destination of
    /// the agent whose allowlist holds them; the operator always).
    fn may_decide(&self, who: &Identity, agent: &str) -> bool;
    /// Decide as `who`, through the same command a chat button sends; the
    /// audit names `who` "via web". Returns the receipt.
    async fn decide(&self, who: &Identity, id: ApprovalId, decision: WebDecision) -> Result<String, Refused>;
    /// Wake-ups of `key`'s commits (the core's waiters).
    fn subscribe(&self, key: &SessionKey) -> watch::Receiver<u64>;
    /// Whether `token` is the operator token (constant time).
    fn is_operator_token(&self, token: &str) -> bool;
}

/// The links the server hands out: read links for cards, sign-in links for
/// `/plan web`. Shared by the page and the server's chat side.
pub struct Links {
    base: String,
    read_key: auth::ReadKey,
    sign_ins: auth::SignIns,
}

impl Links {
    /// `public_url` is where people reach the page (`https://plans.example`);
    /// `secret` derives the read tokens (keep it across restarts, or every
    /// read link changes).
    pub fn new(public_url: &str, secret: &[u8]) -> Links {
        Links { base: public_url.trim_end_matches('/').to_string(), read_key: auth::ReadKey::new(secret), sign_ins: Default::default() }
    }

    /// The read-only link of one approval, for its cards.
    pub fn read_url(&self, id: &ApprovalId) -> String {
        format!("{}/p/{id}?k={}", self.base, self.read_key.token(id))
    }

    /// A personal, single-use sign-in link for `who`.
    pub fn sign_in_url(&self, who: Identity) -> String {
        format!("{}/signin/{}", self.base, self.sign_ins.issue(who))
    }

    /// Whether cookies must be `Secure` (the page is public over https).
    pub fn secure(&self) -> bool {
        self.base.starts_with("https://")
    }
}

/// The page's state: the backend, the links, the browser sessions.
pub struct Web {
    pub backend: Arc<dyn Backend>,
    pub links: Arc<Links>,
    sessions: auth::Sessions,
}

impl Web {
    pub fn new(backend: Arc<dyn Backend>, links: Arc<Links>) -> Arc<Web> {
        Arc::new(Web { backend, links, sessions: Default::default() })
    }
}
