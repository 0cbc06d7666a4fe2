//! The sled implementation of [`Store`].
//!
//! Layout (one database under `<data_dir>/db`):
//!
//! | tree | key | value |
//! |---|---|---|
//! | `meta` | `schema_version`, `cursor:<name>` | text |
//! | `meta` | `pending_share/` ‖ stripe (u16 big-endian): a session stripe's share of the pending count, moved by that stripe's commits in their redo record (schema 5) | i64 big-endian; the shares add up to the pending count |
//! | `sessions` | `agent \0 session_id` | JSON [`Session`] |
//! | `proposals` | 16-byte approval id | JSON [`Proposal`] |
//! | `proposals_by_status` | status ‖ `\0` ‖ created_at (8 bytes, order-preserving) ‖ approval id | empty (schema 2) |
//! | `questions` | 16-byte question id | JSON [`Question`] |
//! | `timers` | due (8 bytes, order-preserving) ‖ approval id ‖ kind | JSON [`Timer`]: the first of each chain (schema 3, `plangate_engine::chains`) |
//! | `deliveries` | approval id ‖ `\0` ‖ destination ‖ `\0` ‖ chat | JSON [`Delivery`] |
//! | `question_deliveries` | question id ‖ `\0` ‖ destination | JSON [`Delivery`] |
//! | `audit` | u64 big-endian, monotonic, in chain order | JSON [`AuditEvent`] with its chain fields (`chain_seq`, `chain_prev`, `chain_hash`: schema 4, `crate::chained`) |
//! | `idempotency` | event key | time handled (ms) |
//! | `documents` | approval id | document path |
//! | `namespaces` | name | JSON [`Namespace`] with its `revision` |
//! | `redo` | u64 big-endian seq, and for a commit with audit events a part byte (`a`: its audit records, `r`: the rest) | the writes of a commit in flight (see `redo`) |
//! | `outbox` | u64 big-endian seq | after-commit work not done yet (opaque) |
//!
//! A commit is atomic through a redo record rather than a sled transaction,
//! and durable through a flush shared with concurrent commits (group
//! commit): see the `redo` and `group` modules for why and how.
//!
//! One file per job: `keys` (every key layout of the table above), `open`
//! (the lock, the schema version, a crashed commit finished), `upgrade`
//! (older schemas), `checkpoint` (closing and reopening to keep sled's
//! replay short), `commit` (a transition's writes and the session reads),
//! `proposals` (the status index, the pending count),
//! `audit` (the chain), `records` (event keys, cursors, namespaces, rules,
//! document paths), `work` (timers, the outbox, deliveries). This file
//! holds the store's state and the codec every file shares.
//!
//! [`Store`]: crate::Store
//! [`Session`]: plangate_engine::Session
//! [`Proposal`]: plangate_engine::Proposal
//! [`Question`]: plangate_engine::Question
//! [`Timer`]: plangate_engine::Timer
//! [`Delivery`]: plangate_delivery::Delivery
//! [`AuditEvent`]: plangate_engine::AuditEvent
//! [`Namespace`]: plangate_engine::namespace::Namespace

mod audit;
mod checkpoint;
mod commit;
mod keys;
mod open;
mod proposals;
mod records;
mod upgrade;
mod work;

pub(crate) use keys::status_key;

use crate::group::FlushGroup;
use crate::{MaintenanceStore, ReplicaStore, StoreError};
use plangate_audit::Chain;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

/// Bumped whenever the on-disk layout changes incompatibly. 2 added the
/// `proposals_by_status` index; 3 keeps only the first timer of each chain
/// (`plangate_engine::chains`); 4 chains the audit (`plangate_audit`: an
/// older plangate would append records without their chain); 5 keeps the
/// pending count in `meta`, a share per session stripe. An older database is upgraded when it is
/// opened (see [`upgrade`]), and a plangate that knows an older schema
/// refuses a newer database: one of schema 1 would write proposals without
/// their index entries, one of schema 2 would fire an approval's first
/// reminder and never store its next one (nor its timeout), one of schema
/// 4 would change the pending count without its shares.
pub const SCHEMA_VERSION: &str = "5";

/// sled's page cache (its default is 1 GiB). Pages read once by a scan of a
/// big backlog (a catch-up after downtime, a full listing) need not stay
/// resident; the working set of live sessions is far smaller.
const CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Commits of different sessions proceed in parallel; commits and loads of
/// one session take turns on one of these locks.
const SESSION_STRIPES: usize = 128;

/// How [`SledStore`] makes a commit atomic and durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A redo record and plain writes, then a flush shared with every
    /// concurrent commit (group commit). The default, and what plangate runs.
    #[default]
    Grouped,
    /// One sled transaction and one flush per commit: how this store worked
    /// before group commit. Kept so the benchmarks (`crates/bench`) can
    /// compare both in one run. Note that one sled transaction anywhere in a
    /// process switches sled's global lock to a slower mode for every
    /// database in that process, for good.
    TransactionPerCommit,
}

pub struct SledStore {
    /// The database directory (`<data_dir>/db`), for reopening.
    path: std::path::PathBuf,
    /// The open database, behind a lock so that a checkpoint can close and
    /// reopen it (see [`SledStore::checkpoint`]). `None` only while a
    /// checkpoint holds the write lock, or after a reopen failed (every
    /// operation then answers [`StoreError::Unavailable`] until a reopen
    /// succeeds). Every operation holds the read lock for its whole length:
    /// an iterator or a write never outlives the database it came from.
    open: RwLock<Option<Trees>>,
    /// Commits hold it shared; a snapshot holds it exclusively, so it sees
    /// every commit whole or not at all (see `backup`). Taken before `open`.
    snapshot_lock: RwLock<()>,
    durability: Durability,
    group: Arc<FlushGroup>,
    stripes: Vec<Mutex<()>>,
    /// Bytes written since the database was opened (keys and values of
    /// commits, their redo records, an estimate for smaller writes): the
    /// measure of the log sled would replay if it were opened now.
    written: AtomicU64,
    /// [`SledStore::checkpoint`] once `written` passes this.
    checkpoint_after: AtomicU64,
    /// One checkpoint at a time, and what the last ones cost.
    checkpointing: Mutex<CheckpointState>,
    /// The audit chain's head, loaded from the last record on first use.
    /// Held from sealing a commit's audit records until they are written,
    /// so records are numbered and linked in the order of their keys (no
    /// gaps, no forks). Taken after a session's stripe, never before.
    chain: Mutex<Option<Chain>>,
}

/// What checkpoints have cost, and when the last reopen failed.
struct CheckpointState {
    last_failure: Option<std::time::Instant>,
    /// When the last checkpoint ended (or the store was opened), and how long it took.
    last_end: std::time::Instant,
    last_took: std::time::Duration,
    stats: CheckpointStats,
}

/// Checkpoints taken since a [`SledStore`] was opened (see [`SledStore::checkpoint`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    pub count: u64,
    /// Their time in all, and the longest: how long operations waited.
    pub total: std::time::Duration,
    pub longest: std::time::Duration,
}

/// The trees of one open database.
pub(crate) struct Trees {
    pub db: sled::Db,
    pub redo: sled::Tree,
    pub meta: sled::Tree,
    pub sessions: sled::Tree,
    pub proposals: sled::Tree,
    pub by_status: sled::Tree,
    pub questions: sled::Tree,
    pub timers: sled::Tree,
    pub deliveries: sled::Tree,
    pub question_deliveries: sled::Tree,
    pub audit: sled::Tree,
    pub idempotency: sled::Tree,
    pub outbox: sled::Tree,
    pub documents: sled::Tree,
    pub namespaces: sled::Tree,
    pub rules: sled::Tree,
}

/// The open database, borrowed for one operation (see [`SledStore::open`]).
pub(crate) struct Open<'a>(RwLockReadGuard<'a, Option<Trees>>);

impl std::ops::Deref for Open<'_> {
    type Target = Trees;
    fn deref(&self) -> &Trees {
        // `SledStore::trees` hands out an `Open` only over `Some`, and the
        // read lock it holds keeps it so.
        self.0.as_ref().expect("an Open guard holds an open database")
    }
}

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing our own plain structs to JSON cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], what: &'static str) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt { what, source })
}

/// Decode the records of a listing, skipping (and logging) any that do not
/// decode: one bad record must not hide every other session from a list
/// (`/plan list`, the web inbox, `/v1/approvals`). Reading that one record
/// by its key still says it is corrupt.
pub(crate) fn decode_listed<T: DeserializeOwned, B: AsRef<[u8]>>(records: impl IntoIterator<Item = B>, what: &'static str) -> Vec<T> {
    records
        .into_iter()
        .filter_map(|bytes| match decode(bytes.as_ref(), what) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::error!(error = %e, "a stored {what} does not decode; left out of this listing");
                None
            }
        })
        .collect()
}

impl SledStore {
    fn list<T: DeserializeOwned>(tree: &sled::Tree, prefix: &[u8], what: &'static str) -> Result<Vec<T>, StoreError> {
        let values = tree.scan_prefix(prefix).values().collect::<Result<Vec<_>, _>>()?;
        Ok(decode_listed(values, what))
    }
}

impl ReplicaStore for SledStore {}

impl MaintenanceStore for SledStore {
    fn snapshot(&self, data_dir: &Path, out: &mut dyn std::io::Write) -> Result<crate::BackupStats, StoreError> {
        SledStore::snapshot(self, data_dir, out)
    }

    fn prune(&self, data_dir: &Path, policy: &crate::PrunePolicy) -> Result<crate::PruneReport, StoreError> {
        SledStore::prune(self, data_dir, policy)
    }
}

#[cfg(test)]
mod tests;
