//! Submitting a plan: enter plan mode if needed, propose, and recognise a
//! plan that was sent before.
//!
//! Harnesses re-send plans. Claude Code calls `ExitPlanMode` again with the
//! same text to learn whether it was approved, and an MCP client retries a
//! timed-out `exit_plan_mode`. While the proposal is pending the server
//! answers the same approval for the same content hash; once it is decided
//! the session has left plan mode and a fresh proposal would start a new
//! round. So the integrations remember, per session, which approval id their
//! last proposal got and under which hash ([`Recall`]), and a re-sent plan
//! with that hash is answered from that approval's Decision instead.

use crate::client::{AgentError, Client};
use plangate_engine::plan::{plan_from_markdown, plan_hash};
use plangate_engine::view::DecisionView;
use plangate_engine::{DecisionStatus, Plan, PlanError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// A proposal body of API.md: a structured Plan, or markdown kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ProposalBody {
    Plan(Plan),
    Markdown {
        markdown: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
}

impl ProposalBody {
    pub fn markdown(markdown: impl Into<String>, title: Option<String>) -> ProposalBody {
        ProposalBody::Markdown { markdown: markdown.into(), title }
    }

    /// The content hash the server binds to the approval, computed by the
    /// same engine function. Fails for a plan the server would refuse too
    /// (markdown over the cap, no title).
    pub fn plan_hash(&self) -> Result<String, PlanError> {
        match self {
            ProposalBody::Plan(plan) => Ok(plan_hash(plan, None)),
            ProposalBody::Markdown { markdown, title } => {
                let plan = plan_from_markdown(markdown, title.as_deref())?;
                Ok(plan_hash(&plan, Some(markdown)))
            }
        }
    }
}

/// What one integration proposed last in a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    /// The plangate it was proposed to (base URL).
    pub server: String,
    pub plan_hash: String,
    pub approval_id: String,
}

/// Per-session memory of the last proposal; see the module docs.
pub trait Recall: Send + Sync {
    fn recall(&self, session_id: &str) -> Option<Remembered>;
    fn remember(&self, session_id: &str, what: Remembered);
}

/// Remembers nothing: every submission is a new proposal (the CLI).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoRecall;

impl Recall for NoRecall {
    fn recall(&self, _: &str) -> Option<Remembered> {
        None
    }
    fn remember(&self, _: &str, _: Remembered) {}
}

/// In-process memory, for a long-running integration (the MCP server).
#[derive(Debug, Default)]
pub struct MemoryRecall(Mutex<HashMap<String, Remembered>>);

impl Recall for MemoryRecall {
    fn recall(&self, session_id: &str) -> Option<Remembered> {
        self.0.lock().ok()?.get(session_id).cloned()
    }
    fn remember(&self, session_id: &str, what: Remembered) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(session_id.to_string(), what);
        }
    }
}

/// One small JSON file per session under a state directory, for
/// integrations that run as one process per call (the Claude Code hook).
/// A file that cannot be read or written is treated as no memory: the plan
/// is then proposed again, which asks a human again but never skips one.
#[derive(Debug, Clone)]
pub struct FileRecall {
    dir: PathBuf,
}

impl FileRecall {
    pub fn new(dir: impl Into<PathBuf>) -> FileRecall {
        FileRecall { dir: dir.into() }
    }

    /// `$PLANGATE_STATE_DIR`, else `$XDG_STATE_HOME/plangate`, else
    /// `~/.local/state/plangate`, with `sub` appended.
    pub fn from_env(sub: &str) -> Option<FileRecall> {
        let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let base = non_empty("PLANGATE_STATE_DIR")
            .or_else(|| non_empty("XDG_STATE_HOME").map(|d| d.join("plangate")))
            .or_else(|| non_empty("HOME").map(|h| h.join(".local/state/plangate")))?;
        Some(FileRecall::new(base.join(sub)))
    }

    fn path(&self, session_id: &str) -> PathBuf {
        // Session ids are validated before they get here: no separators.
        self.dir.join(format!("{}.json", crate::session::sanitize(session_id)))
    }
}

impl Recall for FileRecall {
    fn recall(&self, session_id: &str) -> Option<Remembered> {
        let text = std::fs::read_to_string(self.path(session_id)).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn remember(&self, session_id: &str, what: Remembered) {
        let write = || -> std::io::Result<()> {
            create_private_dir(&self.dir)?;
            let path = self.path(session_id);
            let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec(&what).unwrap_or_default())?;
            std::fs::rename(&tmp, &path)
        };
        let _ = write();
    }
}

fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// The outcome of [`submit`].
#[derive(Debug, Clone)]
pub struct Submitted {
    pub decision: DecisionView,
    /// Where the server wrote the plan; `None` when recalled.
    pub document_path: Option<String>,
    /// The plan was recognised as already proposed; no new proposal was made.
    pub recalled: bool,
}

/// Propose `body` in `session_id`, entering plan mode first when needed, or
/// return the Decision of the identical plan proposed before (pending,
/// approved, edited or sent back with changes requested). A plan whose last
/// round timed out, was cancelled or superseded is proposed again.
pub async fn submit(
    client: &Client,
    recall: &dyn Recall,
    session_id: &str,
    body: &ProposalBody,
    enter_reason: &str,
) -> Result<Submitted, AgentError> {
    let hash = body.plan_hash().map_err(|e| AgentError::Api {
        status: 422,
        code: "invalid_plan".to_string(),
        message: e.to_string(),
        details: serde_json::json!({"rule": e.rule()}),
    })?;
    if let Some(r) = recall.recall(session_id).filter(|r| r.plan_hash == hash && r.server == client.base()) {
        if let Some(d) = client.decision(session_id, Duration::ZERO).await? {
            let live =
                matches!(d.status, DecisionStatus::Pending | DecisionStatus::Approved | DecisionStatus::Edited | DecisionStatus::Rejected);
            if d.approval_id == r.approval_id && live {
                return Ok(Submitted { decision: d, document_path: None, recalled: true });
            }
        }
    }
    client.enter(session_id, Some(enter_reason)).await?;
    let proposed = client.propose(session_id, body).await?;
    recall.remember(
        session_id,
        Remembered { server: client.base().to_string(), plan_hash: hash, approval_id: proposed.decision.approval_id.clone() },
    );
    Ok(Submitted { decision: proposed.decision, document_path: proposed.document_path, recalled: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_serialize_as_the_api_expects() {
        let md = ProposalBody::markdown("# T\n\n1. a", None);
        assert_eq!(serde_json::to_value(&md).unwrap_or_default(), serde_json::json!({"markdown": "# T\n\n1. a"}));
        let plan = ProposalBody::Plan(Plan::titled("T"));
        assert_eq!(serde_json::to_value(&plan).unwrap_or_default()["title"], "T");
    }

    #[test]
    fn hashes_follow_the_engine_and_refuse_what_it_refuses() {
        let md = ProposalBody::markdown("# T\n\n1. a", None);
        assert_eq!(md.plan_hash(), md.plan_hash());
        assert_ne!(md.plan_hash(), ProposalBody::markdown("# T\n\n1. b", None).plan_hash());
        let long = ProposalBody::markdown("x".repeat(60_001), None);
        assert!(matches!(long.plan_hash(), Err(PlanError::MarkdownTooLong { .. })));
    }

    #[test]
    fn file_recall_round_trips_and_tolerates_a_missing_dir() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let recall = FileRecall::new(dir.path().join("nested/claude"));
        assert_eq!(recall.recall("s1"), None);
        let what = Remembered { server: "http://x".into(), plan_hash: "sha256:1".into(), approval_id: "a".repeat(32) };
        recall.remember("s1", what.clone());
        assert_eq!(recall.recall("s1"), Some(what));
        assert_eq!(recall.recall("s2"), None);
        Ok(())
    }
}
