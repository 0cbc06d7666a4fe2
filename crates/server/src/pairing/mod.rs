//! Pairing (issue 31): a chat becomes a destination of an agent, and its
//! first approver is known, without anyone typing an id.
//!
//! The operator asks the running server for a code (`plangate pair
//! telegram`, `POST /v1/operator/pairings`); someone sends `/plan pair
//! CODE` in a chat; that chat becomes a destination of the agent (buttons),
//! the sender its first approver. Approvers then add and remove each other
//! in the chat (`/plan approvers …`, [`Pairing::change_approvers`]).
//!
//! **Where it is kept.** Paired destinations and waiting codes are cursors
//! of the store under [`DESTINATION_PREFIX`] and [`CODE_PREFIX`], one JSON
//! record each, changed only by compare-and-swap
//! ([`plangate_store::Cursors::swap_cursor`]): a code is taken by one
//! chat, two approvers editing a list at once never lose a change, and
//! backups, `migrate` and replicas carry them like any cursor. A code is
//! stored as the SHA-256 of its text, never the text.
//!
//! **Who sees them.** The [`ApproverIndex`] every decision asks is the
//! config's index plus the paired destinations ([`ApproverIndex::with_paired`]),
//! rebuilt from the store at start, after every change made here, and — on
//! replicas — whenever the store says another replica changed a cursor (or
//! that changes may have been missed): the change notification, not a
//! timer, so a pairing made on one replica is seen by the next event
//! another one handles after the notification arrives. A `[destinations]`
//! entry of the same name in the config file wins over a paired one.

mod claim;

pub use claim::{normalize_code, RATE_BURST, RATE_REFILL};

pub use crate::approvers::PairedDestination;

use crate::approvers::ApproverIndex;
use crate::config::Settings;
use crate::storage::Storage;
use plangate_engine::SessionKey;
use plangate_store::StoreError;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, RwLock};

/// Cursor key prefix of a paired destination (`paired.destination:<name>`).
pub const DESTINATION_PREFIX: &str = "paired.destination:";
/// Cursor key prefix of a waiting code (`paired.code:<random id>`).
pub const CODE_PREFIX: &str = "paired.code:";
/// How long a code may be used: ten minutes, unless asked for less.
pub const CODE_TTL_SECS: u64 = 600;
/// Codes waiting at once; one more is refused until some are used or expire.
pub const MAX_WAITING_CODES: usize = 20;
/// The platforms a chat can be paired on.
pub const PLATFORMS: [&str; 3] = ["telegram", "slack", "discord"];

/// Why a pairing request or change was refused: a sentence for the
/// operator or the chat, saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    #[error("{0}")]
    Invalid(String),
    /// A wrong, used, expired or malformed code, or one for another
    /// platform: one sentence for all, so a guess learns nothing.
    #[error("That code is not valid here. Codes work once, for 10 minutes, on the platform they were made for: run `plangate pair <platform>` again and send the new code.")]
    BadCode,
    #[error("Too many pairing attempts from this chat or person; wait a few minutes and try again.")]
    Limited,
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Refused(String),
    #[error("the store could not answer: {0}")]
    Store(String),
}

impl From<StoreError> for PairError {
    fn from(e: StoreError) -> PairError {
        PairError::Store(e.to_string())
    }
}

/// A code made for the operator.
#[derive(Debug, Clone, Serialize)]
pub struct IssuedCode {
    /// As people type it: `ABCD-EFGH`.
    pub code: String,
    pub platform: String,
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// RFC 3339.
    pub expires_at: String,
    pub expires_in: u64,
}

/// The core's part for pairing: the live index (the config's and the
/// paired destinations), the attempt budget, and the store they are kept in.
pub struct Pairing {
    storage: Arc<Storage>,
    settings: Arc<Settings>,
    /// The index of the config file alone, which paired destinations join.
    config: ApproverIndex,
    index: RwLock<Arc<ApproverIndex>>,
    attempts: claim::Attempts,
}

/// Destination names: what `[destinations.<name>]` would accept as a key.
pub fn validate_name(name: &str) -> Result<(), PairError> {
    let ok = (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(PairError::Invalid(format!("destination name {name:?} is invalid: use 1–64 characters of A-Z a-z 0-9 - _")))
    }
}

/// The audit key of pairing events: the agent, session `-`.
fn audit_key(agent: &str) -> SessionKey {
    SessionKey::new(agent, "-")
}

impl Pairing {
    /// Before the store is read: the config's index alone.
    pub fn new(storage: Arc<Storage>, settings: Arc<Settings>) -> Pairing {
        let config = ApproverIndex::of(&settings);
        Pairing { index: RwLock::new(Arc::new(config.clone())), config, storage, settings, attempts: claim::Attempts::default() }
    }

    /// Who may decide what, from where: the config's destinations and the
    /// paired ones, as of the last refresh.
    pub fn approvers(&self) -> Arc<ApproverIndex> {
        self.index.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every paired destination in the store, by name.
    pub async fn paired_destinations(&self) -> Result<Vec<PairedDestination>, StoreError> {
        let records = self.storage.blocking(|s| s.cursors_with_prefix(DESTINATION_PREFIX)).await?;
        Ok(records
            .into_iter()
            .filter_map(|(key, value)| match serde_json::from_str::<PairedDestination>(&value) {
                Ok(d) => Some(d),
                Err(e) => {
                    tracing::warn!(%key, error = %e, "a paired destination record does not read; it is ignored");
                    None
                }
            })
            .collect())
    }

    /// Rebuild the index from the config and the store. On a store error
    /// the index stays as it was (what it allowed before, no more).
    pub async fn refresh(&self) -> Result<(), StoreError> {
        let paired = self.paired_destinations().await?;
        let index = self.config.with_paired(&paired, |name| self.settings.raw.destinations.contains_key(name));
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(index);
        Ok(())
    }

    /// [`Pairing::refresh`], logging a failure (after a change, or a
    /// notification from another replica).
    pub async fn refresh_logged(&self) {
        if let Err(e) = self.refresh().await {
            tracing::warn!(error = %e, "paired destinations not re-read; decisions use the previous list until the next change");
        }
    }

    /// The rules of `agent`'s proposals, with the approvers of its paired
    /// destinations on the list of who may open the gate.
    pub fn approval_policy(&self, agent: &str) -> plangate_engine::ApprovalPolicy {
        let mut policy = self.settings.approval_policy(agent);
        policy.approvers = self.approvers().approver_list(agent);
        policy
    }

    /// Remove paired destination `name` (the operator's call), audited.
    pub async fn remove_destination(&self, name: &str, actor: &str) -> Result<PairedDestination, PairError> {
        let key = format!("{DESTINATION_PREFIX}{name}");
        loop {
            let read = key.clone();
            let Some(value) = self.storage.blocking(move |s| s.cursor(&read)).await? else {
                return Err(if self.settings.raw.destinations.contains_key(name) {
                    PairError::Refused(format!(
                        "destination {name} is in the config file, not paired: remove it there (and from the agents' destinations)"
                    ))
                } else {
                    PairError::NotFound(format!("no paired destination is named {name}; `plangate destinations` lists them"))
                });
            };
            let record: PairedDestination =
                serde_json::from_str(&value).map_err(|e| PairError::Store(format!("paired destination {name} does not read: {e}")))?;
            let (k, v) = (key.clone(), value.clone());
            if self.storage.blocking(move |s| s.swap_cursor(&k, Some(&v), None)).await? {
                let detail = format!(
                    "removed paired destination {name} ({} chat {}, approvers {})",
                    record.channel,
                    record.chat,
                    record.approvers.join(", ")
                );
                self.storage.audit(&audit_key(&record.agent), &format!("operator:{actor}"), "destination_removed", None, detail).await;
                self.refresh_logged().await;
                return Ok(record);
            }
            // Changed under us (an approver added): read again.
        }
    }
}
