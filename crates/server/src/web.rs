//! The web page's [`Backend`]: the core's state, the approver allowlists and
//! the one door for decisions, for `plangate-web`.
//!
//! A decision from the page is authorized here the way [`crate::hub`]
//! authorizes a chat click (the person must be an approver on a destination
//! of the plan's agent, refusals are audited) and executed as the same
//! engine command by the same [`Core::execute_on_proposal`]; the actor is
//! the chat identity the person signed in with, named "… via web".

use crate::core::{Core, CoreError, ExecMeta};
use async_trait::async_trait;
use plangate_engine::{Actor, ApprovalId, AuditEvent, Command, Proposal, Refusal, SessionKey, State, Timestamp, Verdict};
use plangate_store::AuditQuery;
use plangate_web::{Backend, Identity, Links, Refused, Web, WebDecision};
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tokio::sync::watch;

/// The file under `data_dir` holding the secret read links are derived
/// with: kept across restarts so the links on posted cards keep working.
pub const SECRET_FILE: &str = "web-secret";

/// The page's backend over the core.
pub struct CoreBackend {
    core: Arc<Core>,
}

/// Start the web page when `server.public_url` is set: the links go to the
/// core (cards, `/plan web`), the page state is returned for the router.
pub fn start(core: &Arc<Core>) -> std::io::Result<Option<Arc<Web>>> {
    let Some(public_url) = core.settings.raw.server.public_url.clone() else { return Ok(None) };
    let secret = load_or_create_secret(&core.settings.data_dir)?;
    let links = Arc::new(Links::new(&public_url, &secret));
    core.set_web_links(links.clone());
    Ok(Some(Web::new(Arc::new(CoreBackend { core: core.clone() }), links)))
}

/// 32 random bytes, created 0600 on first start.
fn load_or_create_secret(data_dir: &Path) -> std::io::Result<Vec<u8>> {
    let path = data_dir.join(SECRET_FILE);
    match std::fs::read_to_string(&path) {
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
            std::io::Write::write_all(&mut options.open(&path)?, hex::encode(secret).as_bytes())?;
            Ok(secret.to_vec())
        }
        Err(e) => Err(e),
    }
}

/// Whether `who` (`<channel>:<id>`) is on the approver allowlist of any
/// destination of `agent` (its own or its escalation ones): the lists a chat
/// click is checked against, without the "in this chat" part a browser has
/// no equivalent of.
pub fn is_approver(core: &Core, who: &str, agent: &str) -> bool {
    let raw = &core.settings.raw;
    let own = raw.agents.get(agent).map(|a| a.destinations.as_slice()).unwrap_or_default();
    let escalation = core.settings.escalations.get(agent).map(Vec::as_slice).unwrap_or_default();
    own.iter().chain(escalation).filter_map(|name| raw.destinations.get(name)).any(|d| d.approvers.iter().any(|a| a == who))
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

    async fn proposals(&self) -> Vec<Proposal> {
        self.core.blocking(|s| s.proposals(None)).await.unwrap_or_default()
    }

    async fn audit(&self, id: ApprovalId) -> Vec<AuditEvent> {
        let query = AuditQuery { approval_id: Some(id), ..AuditQuery::default() };
        self.core.blocking(move |s| s.audit(&query)).await.unwrap_or_default()
    }

    fn may_decide(&self, who: &Identity, agent: &str) -> bool {
        match who {
            Identity::Operator => true,
            Identity::Person { id, .. } => is_approver(&self.core, id, agent),
        }
    }

    async fn decide(&self, who: &Identity, id: ApprovalId, decision: WebDecision) -> Result<String, Refused> {
        let Some(p) = self.proposal(id).await else { return Err(Refused::NotFound("This plan no longer exists.".to_string())) };
        let actor = actor_of(who);
        if !self.may_decide(who, &p.session.agent) {
            let why = "You are not an approver for this plan.";
            let detail = format!("{} refused via web: {why}", actor.label());
            self.core.audit(&p.session, &actor.label(), "refused", Some((id, p.version)), detail).await;
            return Err(Refused::Forbidden(why.to_string()));
        }
        let command = match decision {
            WebDecision::Approve => Command::Decide { approval_id: id, verdict: Verdict::Approve },
            WebDecision::Revise(feedback) => Command::Decide { approval_id: id, verdict: Verdict::Revise(feedback) },
            WebDecision::Edit(plan) => Command::Decide { approval_id: id, verdict: Verdict::Edit(plan) },
            WebDecision::Cancel => Command::CancelApproval(id),
        };
        match self.core.execute_on_proposal(p.clone(), actor, command, ExecMeta::default()).await {
            Ok(done) => {
                let decided = done.transition.state.latest.as_ref().filter(|l| l.approval_id == id).unwrap_or(&p);
                // A quorum short of its number says how far it got.
                let said = plangate_engine::card::receipt(decided).or_else(|| plangate_engine::card::progress_notice(decided));
                Ok(said.unwrap_or_else(|| "Done.".to_string()))
            }
            Err(CoreError::Refused(Refusal::Forbidden(m))) => Err(Refused::Forbidden(m)),
            Err(CoreError::Refused(r)) => Err(Refused::Conflict(r.to_string())),
            Err(CoreError::NotFound(m)) => Err(Refused::NotFound(m)),
            Err(CoreError::Storage(_)) => Err(Refused::Unavailable(
                "plangate could not record that (storage trouble); nothing changed, try again shortly.".to_string(),
            )),
        }
    }

    fn subscribe(&self, key: &SessionKey) -> watch::Receiver<u64> {
        self.core.subscribe(key)
    }

    fn is_operator_token(&self, token: &str) -> bool {
        match &self.core.settings.raw.server.operator_token {
            Some(op) => !token.is_empty() && bool::from(op.as_bytes().ct_eq(token.as_bytes())),
            None => false,
        }
    }
}
