//! The web page's [`Backend`]: the core's state, the approver allowlists and
//! the one door for decisions, for `plangate-web`.
//!
//! A decision from the page goes through the same door as a chat click,
//! [`Core::decide`], from [`Venue::Web`] (the person must be an approver on
//! a destination of the plan's agent that takes the plan's project; refusals
//! are audited there); the actor is the chat identity the person signed in
//! with, named "… via web". Which buttons and inbox rows the page shows is
//! the same check ([`ApproverIndex::check`]), so it shows none that a
//! decision would refuse.
//!
//! [`ApproverIndex::check`]: crate::approvers::ApproverIndex::check
//! [`EventKeys::record_once`]: plangate_store::EventKeys::record_once
//! [`EventKeys::mark_seen`]: plangate_store::EventKeys::mark_seen
//!
//! The page keeps no state in this process (see `plangate-web`): its
//! single-use sign-in links and sign-outs are records in the store
//! ([`EventKeys::record_once`], [`EventKeys::mark_seen`]), and the secret its links
//! and cookies are signed with is the store's `web.secret` cursor when the
//! store is shared by replicas, so every replica accepts what another
//! issued. A store one process owns keeps the secret in `data_dir/web-secret`
//! as it always did, so read links on cards already posted keep working.

use crate::approvers::Venue;
use crate::core::{Core, CoreError, Decision, DecisionRefused, ExecMeta};
use crate::throttle::Surface;
use async_trait::async_trait;
use plangate_engine::{Actor, ApprovalId, AuditEvent, DecisionStatus, Proposal, Refusal, SessionKey, State, Timestamp};
use plangate_store::{AuditQuery, PagePosition, Store};
use plangate_web::{Backend, Identity, Links, Refused, SignInSurface, Web};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tokio::sync::watch;

/// The file under `data_dir` holding the secret read links are derived
/// with: kept across restarts so the links on posted cards keep working.
pub const SECRET_FILE: &str = "web-secret";
/// The store cursor holding the web secret (hex) when replicas share the store.
pub const SECRET_CURSOR: &str = "web.secret";

/// The page's backend over the core.
pub struct CoreBackend {
    core: Arc<Core>,
    /// When each reader last had an approval's audit trail recorded as
    /// read: a page refreshed every second records one `audit_read` per
    /// [`READ_AGAIN_AFTER_MS`], not one per refresh.
    reads: std::sync::Mutex<HashMap<(String, ApprovalId), Timestamp>>,
}

/// How long a reader's read of one approval's audit trail is not recorded again.
const READ_AGAIN_AFTER_MS: i64 = 10 * 60 * 1000;

/// Readers remembered at most; beyond it the oldest are forgotten (and
/// their next read recorded again).
const MAX_READERS: usize = 10_000;

/// Start the web page when `server.public_url` is set: the links go to the
/// core (cards, `/plan web`), the page state is returned for the router.
pub fn start(core: &Arc<Core>) -> std::io::Result<Option<Arc<Web>>> {
    let Some(public_url) = core.settings.raw.server.public_url.clone() else { return Ok(None) };
    let secret = keep_secret(core, SECRET_CURSOR, SECRET_FILE)?;
    // The core's own clock (not the core: the core holds the links).
    let links = Arc::new(Links::with_clock(&public_url, &secret, core.clock()));
    core.set_web_links(links.clone());
    Ok(Some(Web::new(Arc::new(CoreBackend { core: core.clone(), reads: Default::default() }), links)))
}

/// A secret of 32 random bytes kept across restarts: the store's `cursor`
/// when replicas share the store, else `data_dir/<file>` (the web secret;
/// the VAPID key of `[push]`).
pub(crate) fn keep_secret(core: &Core, cursor: &str, file: &str) -> std::io::Result<Vec<u8>> {
    if core.storage.store.shared() {
        shared_secret(core.storage.store.clone(), cursor)
    } else {
        load_or_create_secret(&core.settings.data_dir.join(file))
    }
}

/// The secret replicas share: the store's `cursor` ([`SECRET_CURSOR`]),
/// set to 32 random bytes by whichever replica starts first (atomically,
/// so replicas starting at once agree). Read on a thread of its own:
/// `start` runs on the async runtime, where a blocking store call must not
/// run on a worker.
fn shared_secret(store: Arc<dyn Store>, cursor: &str) -> std::io::Result<Vec<u8>> {
    let key = cursor.to_string();
    let fresh = hex::encode(rand::random::<[u8; 32]>());
    let text = std::thread::spawn(move || store.cursor_or_init(&key, &fresh))
        .join()
        .map_err(|_| std::io::Error::other("reading the web secret from the store panicked"))?
        .map_err(|e| std::io::Error::other(format!("cannot read or create the web secret in the store: {e}")))?;
    match hex::decode(text.trim()) {
        Ok(secret) if secret.len() >= 16 => Ok(secret),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the store's {cursor} cursor is not a hex secret of at least 16 bytes"),
        )),
    }
}

/// 32 random bytes at `path`, created 0600 on first start.
fn load_or_create_secret(path: &Path) -> std::io::Result<Vec<u8>> {
    match std::fs::read_to_string(path) {
        Ok(text) => hex::decode(text.trim()).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not hex ({e}); delete it to make a new one", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret: [u8; 32] = rand::random();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            std::io::Write::write_all(&mut options.open(path)?, hex::encode(secret).as_bytes())?;
            Ok(secret.to_vec())
        }
        Err(e) => Err(e),
    }
}

/// Who decides from the page, and from which venue: a person from
/// [`Venue::Web`], the operator from [`Venue::Operator`].
fn venue_of(who: &Identity) -> (&str, Venue<'static>) {
    match who {
        Identity::Person { id, .. } => (id, Venue::Web),
        Identity::Operator => ("operator", Venue::Operator),
    }
}

fn actor_of(who: &Identity) -> Actor {
    match who {
        Identity::Person { id, name } => Actor::Human { id: id.clone(), name: format!("{name} via web") },
        Identity::Operator => Actor::Operator { name: "web".to_string() },
    }
}

#[async_trait]
impl Backend for CoreBackend {
    fn now(&self) -> Timestamp {
        self.core.now()
    }

    async fn proposal(&self, id: ApprovalId) -> Option<Proposal> {
        self.core.blocking(move |s| s.proposal(&id)).await.ok().flatten()
    }

    async fn state(&self, key: &SessionKey) -> Option<State> {
        self.core.load(key).await.ok()
    }

    async fn pending_page(&self, after: Option<(Timestamp, ApprovalId)>, limit: usize) -> Vec<Proposal> {
        let after = after.map(|(created_at, approval_id)| PagePosition { created_at, approval_id });
        self.core.blocking(move |s| s.proposals_page(Some(DecisionStatus::Pending), after, limit)).await.unwrap_or_default()
    }

    async fn recently_decided(&self, limit: usize) -> Vec<Proposal> {
        let mut decided = self
            .core
            .blocking(move |s| {
                let mut all = Vec::new();
                for status in DecisionStatus::ALL.iter().filter(|s| **s != DecisionStatus::Pending) {
                    all.extend(s.latest_proposals(*status, limit)?);
                }
                Ok(all)
            })
            .await
            .unwrap_or_default();
        decided.sort_by_key(|p| std::cmp::Reverse(p.decided_at.unwrap_or(p.created_at)));
        decided.truncate(limit);
        decided
    }

    async fn previous_version(&self, p: &Proposal) -> Option<Proposal> {
        if let Some(id) = p.previous {
            return self.core.blocking(move |s| s.proposal(&id)).await.ok().flatten();
        }
        // Proposed before proposals named their previous version: search.
        let (session, version) = (p.session.clone(), p.version);
        self.core
            .blocking(move |s| {
                let mut found = None;
                s.visit_proposals(None, &mut |o| {
                    if o.session == session && o.version + 1 == version {
                        found = Some(o.clone());
                    }
                })?;
                Ok(found)
            })
            .await
            .ok()
            .flatten()
    }

    async fn audit(&self, p: &Proposal, reader: &str) -> Vec<AuditEvent> {
        let now = self.core.now();
        let first = {
            let mut reads = self.reads.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let key = (reader.to_string(), p.approval_id);
            let first = reads.get(&key).is_none_or(|at| now.0 - at.0 >= READ_AGAIN_AFTER_MS);
            if first {
                if reads.len() >= MAX_READERS {
                    let oldest = reads.iter().min_by_key(|(_, at)| at.0).map(|(k, _)| k.clone());
                    oldest.map(|k| reads.remove(&k));
                }
                reads.insert(key, now);
            }
            first
        };
        if first {
            let detail = format!("{reader} read the audit trail of v{} on the plan page", p.version);
            self.core.audit(&p.session, reader, crate::audit::READ, Some((p.approval_id, p.version)), detail).await;
        }
        let query = AuditQuery { approval_id: Some(p.approval_id), since: Some(crate::core::audit_since(p)), ..AuditQuery::default() };
        self.core.blocking(move |s| s.audit(&query)).await.unwrap_or_default()
    }

    async fn permission_rules(&self, agent: &str) -> Vec<plangate_engine::permission::StoredRule> {
        let agent = agent.to_string();
        self.core.blocking(move |s| s.permission_rules(&agent)).await.unwrap_or_default()
    }

    /// [`ApproverIndex::check`], the check [`Core::decide`] makes, for the
    /// proposal's agent and project.
    ///
    /// [`ApproverIndex::check`]: crate::approvers::ApproverIndex::check
    fn may_decide(&self, who: &Identity, p: &Proposal) -> bool {
        let (id, venue) = venue_of(who);
        self.core.pairing.approvers().check(&p.session.agent, p.project.as_ref(), id, venue).is_ok()
    }

    async fn decide(&self, who: &Identity, id: ApprovalId, decision: Decision) -> Result<String, Refused> {
        let (_, venue) = venue_of(who);
        match self.core.decide(id, actor_of(who), venue, decision, ExecMeta::default()).await {
            Ok(decided) => Ok(decided.said()),
            Err(refused @ (DecisionRefused::NotFound | DecisionRefused::Core(CoreError::NotFound(_)))) => {
                Err(Refused::NotFound(refused.to_string()))
            }
            Err(refused @ (DecisionRefused::NotAllowed(_) | DecisionRefused::Core(CoreError::Refused(Refusal::Forbidden(_))))) => {
                Err(Refused::Forbidden(refused.to_string()))
            }
            Err(DecisionRefused::Core(CoreError::Refused(r))) => Err(Refused::Conflict(r.to_string())),
            Err(refused @ DecisionRefused::Core(CoreError::Preempted(_))) => Err(Refused::Conflict(refused.to_string())),
            Err(refused @ DecisionRefused::Core(CoreError::Storage(_))) => Err(Refused::Unavailable(refused.to_string())),
        }
    }

    fn subscribe(&self, key: &SessionKey) -> watch::Receiver<u64> {
        self.core.waiters.subscribe(key)
    }

    fn is_operator_token(&self, token: &str) -> bool {
        match &self.core.settings.raw.server.operator_token {
            Some(op) => !token.is_empty() && bool::from(op.as_bytes().ct_eq(token.as_bytes())),
            None => false,
        }
    }

    fn operator_token_sha256(&self) -> Option<[u8; 32]> {
        let token = self.core.settings.raw.server.operator_token.as_deref()?;
        Some(<sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()).into())
    }

    async fn sign_in_failed(&self, client: std::net::IpAddr, surface: SignInSurface) -> Option<std::time::Duration> {
        let surface = match surface {
            SignInSurface::OperatorToken => Surface::WebOperator,
            SignInSurface::Link => Surface::WebLink,
        };
        self.core.auth_failed(client, surface).await
    }

    async fn use_once(&self, key: &str) -> bool {
        let key = key.to_string();
        match self.core.blocking(move |s| s.record_once(&key)).await {
            Ok(first) => first,
            Err(e) => {
                tracing::error!(error = %e, "web: cannot record a single use; refused");
                false
            }
        }
    }

    async fn revoke(&self, session_id: &str) -> bool {
        let key = plangate_web::auth::sign_out_key(session_id);
        match self.core.blocking(move |s| s.mark_seen(&key)).await {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "web: cannot record a sign-out");
                false
            }
        }
    }

    async fn revoked(&self, session_id: &str) -> bool {
        let key = plangate_web::auth::sign_out_key(session_id);
        match self.core.blocking(move |s| s.seen(&key)).await {
            Ok(seen) => seen,
            Err(e) => {
                tracing::error!(error = %e, "web: cannot read sign-outs; the session is refused");
                true
            }
        }
    }

    async fn passkey(&self, approver: &str) -> Result<Option<String>, Refused> {
        let key = plangate_web::passkey::cursor_key(approver);
        self.core.blocking(move |s| s.cursor(&key)).await.map_err(|e| {
            tracing::error!(error = %e, "web: cannot read a passkey; refused");
            Refused::Unavailable(
                "plangate cannot read passkeys right now (storage trouble); nothing changed, try again shortly.".to_string(),
            )
        })
    }

    async fn swap_passkey(&self, approver: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, Refused> {
        let (key, expected, value) = (plangate_web::passkey::cursor_key(approver), expected.map(str::to_string), value.map(str::to_string));
        self.core.blocking(move |s| s.swap_cursor(&key, expected.as_deref(), value.as_deref())).await.map_err(|e| {
            tracing::error!(error = %e, "web: cannot write a passkey; refused");
            Refused::Unavailable(
                "plangate cannot record passkeys right now (storage trouble); nothing changed, try again shortly.".to_string(),
            )
        })
    }

    /// Against the proposal's session and approval; a passkey registration
    /// belongs to no session (`-/-`, like failed sign-ins).
    async fn record(&self, who: &Identity, action: &str, proposal: Option<&Proposal>, detail: String) {
        let (id, _) = venue_of(who);
        let none = SessionKey::new("-", "-");
        let key = proposal.map_or(&none, |p| &p.session);
        self.core.audit(key, id, action, proposal.map(|p| (p.approval_id, p.version)), detail).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_store::SledStore;

    #[test]
    fn the_shared_secret_is_created_once_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> = Arc::new(SledStore::open(dir.path()).expect("open"));
        let first = shared_secret(store.clone(), SECRET_CURSOR).expect("created");
        assert_eq!(first.len(), 32);
        assert_eq!(shared_secret(store.clone(), SECRET_CURSOR).expect("read back"), first, "a second replica gets the same secret");
        assert_eq!(store.cursor(SECRET_CURSOR).expect("cursor"), Some(hex::encode(&first)));
        assert!(!dir.path().join(SECRET_FILE).exists(), "not in the data_dir's file");
    }

    #[test]
    fn a_garbled_shared_secret_is_an_error_not_a_new_secret() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> = Arc::new(SledStore::open(dir.path()).expect("open"));
        for garbled in ["not hex", "abcd"] {
            store.set_cursor(SECRET_CURSOR, garbled).expect("set");
            let e = shared_secret(store.clone(), SECRET_CURSOR).expect_err("refused");
            assert!(e.to_string().contains(SECRET_CURSOR), "{e}");
        }
    }

    #[test]
    fn the_file_secret_survives_a_restart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create_secret(&dir.path().join(SECRET_FILE)).expect("created");
        assert_eq!(load_or_create_secret(&dir.path().join(SECRET_FILE)).expect("read"), first);
    }
}
