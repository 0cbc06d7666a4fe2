//! The sled implementation of [`Store`].
//!
//! Layout (one database under `<data_dir>/db`):
//!
//! | tree | key | value |
//! |---|---|---|
//! | `meta` | `schema_version`, `cursor:<name>` | text |
//! | `meta` | `pending_at_close` (between a clean shutdown and the next open) | pending count (u64 big-endian) ‖ the last audit key then |
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
//! | `redo` | u64 big-endian | the writes of a commit in flight (see `redo`) |
//! | `outbox` | u64 big-endian seq | after-commit work not done yet (opaque) |
//!
//! A commit is atomic through a redo record rather than a sled transaction,
//! and durable through a flush shared with concurrent commits (group
//! commit): see the `redo` and `group` modules for why and how.

use crate::chained;
use crate::group::{FlushGroup, FlushReservation, FlushStats, PendingFlush, Turn};
use crate::redo::{self, Op, TreeId};
use crate::{
    AuditLog, AuditQuery, Commit, Committed, Cursors, Deliveries, Documents, EventKeys, MaintenanceStore, Namespaces, Outbox, OutboxEntry,
    PagePosition, PermissionRules, Preempted, Proposals, ReplicaStore, Sessions, StoreError, Timers,
};
use plangate_audit::Chain;
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::permission::StoredRule;
use plangate_engine::{
    ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, TimerKind, Timestamp,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

/// Bumped whenever the on-disk layout changes incompatibly. 2 added the
/// `proposals_by_status` index; 3 keeps only the first timer of each chain
/// (`plangate_engine::chains`); 4 chains the audit (`plangate_audit`: an
/// older plangate would append records without their chain). An older database is upgraded when it is
/// opened (see [`upgrade`]), and a plangate that knows an older schema
/// refuses a newer database: one of schema 1 would write proposals without
/// their index entries, one of schema 2 would fire an approval's first
/// reminder and never store its next one (nor its timeout).
pub const SCHEMA_VERSION: &str = "4";

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
    /// The pending count the last clean shutdown left, taken out of `meta`
    /// when this store was opened (see [`take_pending_note`]).
    pending_at_close: Mutex<Option<u64>>,
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

fn session_key(key: &SessionKey) -> Vec<u8> {
    let mut k = key.agent.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(key.session_id.as_bytes());
    k
}

/// `agent \0 created_at id`: an agent's rules together, oldest first.
fn rule_key(rule: &StoredRule) -> Vec<u8> {
    let mut k = rule.agent.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&((rule.created_at.0 as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(rule.id.as_bytes());
    k
}

fn agent_prefix(agent: &str) -> Vec<u8> {
    let mut k = agent.as_bytes().to_vec();
    k.push(0);
    k
}

/// Timers sort by due time: flip the sign bit so negative times sort first.
pub(crate) fn timer_key(timer: &Timer) -> Vec<u8> {
    let mut k = ((timer.due.0 as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(&timer.approval_id.0);
    match timer.kind {
        TimerKind::Nudge(n) => k.extend_from_slice(&[0, n]),
        TimerKind::Timeout => k.extend_from_slice(&[1, 0]),
        TimerKind::Escalate => k.extend_from_slice(&[2, 0]),
        TimerKind::AgentNudge(n) => k.extend_from_slice(&[3, n]),
        TimerKind::SubagentExpiry => k.extend_from_slice(&[4, 0]),
    }
    k
}

fn due_prefix(until: Timestamp) -> Vec<u8> {
    ((until.0 as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

fn delivery_key(id: &ApprovalId, d: &Delivery) -> Vec<u8> {
    let mut k = id.0.to_vec();
    k.push(0);
    k.extend_from_slice(d.destination.as_bytes());
    k.push(0);
    k.extend_from_slice(d.chat.as_bytes());
    k
}

/// A namespace as the `namespaces` tree keeps it: the engine's JSON with a
/// `revision` beside `steps` (readers that do not know it ignore it; a
/// record written before it existed counts as revision 1).
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredNamespace {
    #[serde(flatten)]
    namespace: Namespace,
    #[serde(default = "first_revision")]
    revision: u64,
}

fn first_revision() -> u64 {
    1
}

/// How long [`SledStore::open_with`] waits for sled's directory lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn open_db(path: &Path) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match sled::Config::new().path(path).mode(sled::Mode::HighThroughput).cache_capacity(CACHE_BYTES).open() {
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return Ok(other?),
        }
    }
}

/// Written bytes after which a store checkpoints (see
/// [`SledStore::checkpoint`]). sled 0.34 writes its recovery snapshot only
/// when a database is opened, and an open replays the whole log written
/// since the last one: a store that ran for weeks would take minutes to
/// start (2.1 GB of log at 200,000 pending approvals took 8.8 s). Closing
/// and reopening after every 64 MiB of writes bounds that replay, at a
/// start as at a checkpoint, to a fraction of a second, and costs every
/// operation that long a pause once per 64 MiB (docs/PERFORMANCE.md §13).
pub const CHECKPOINT_AFTER_BYTES: u64 = 64 * 1024 * 1024;

/// A checkpoint waits until this many times its predecessor's length has
/// passed since it ended, whatever was written: with a million pending
/// approvals a checkpoint takes about half a second (sled rereads and
/// rewrites its page table), and writes at full speed cross
/// [`CHECKPOINT_AFTER_BYTES`] every few seconds, so checkpoints take at
/// most a tenth of the time, and a start replays at most what ten
/// checkpoints' length of writing wrote.
const CHECKPOINT_SPACING: u32 = 10;

/// What a write other than a commit counts towards a checkpoint (a cursor,
/// an idempotency key, a delivery record: small records).
const SMALL_WRITE_BYTES: u64 = 256;

/// The `meta` key of the pending count a clean shutdown leaves for the
/// next start ([`Proposals::note_pending_at_close`]).
const PENDING_AT_CLOSE: &str = "pending_at_close";

/// Take the pending count a clean shutdown left out of `meta`, removed and
/// flushed before anything else can write: whatever opens the database
/// next (a start, `plangate backup`, a migration) consumes the note, so no
/// later start can read a count from before writes it did not see. The
/// note carries the audit's last key at that shutdown; a count whose key is
/// no longer the last is dropped, because every transition that changes
/// the pending count appends to the audit, so an audit that grew since
/// means a writer that does not know the note (an older plangate, a
/// transition finishing after the note) changed what was counted.
fn take_pending_note(t: &Trees) -> Result<Option<u64>, StoreError> {
    let Some(note) = t.meta.remove(PENDING_AT_CLOSE)? else {
        return Ok(None);
    };
    t.db.flush()?;
    let Some((count, audit_then)) = note.split_first_chunk::<8>() else {
        return Ok(None);
    };
    let audit_now = t.audit.last()?.map(|(key, _)| key);
    if audit_now.as_deref().unwrap_or(&[]) != audit_then {
        tracing::info!("the pending count left by the last shutdown is stale (the audit grew since): counting again");
        return Ok(None);
    }
    Ok(Some(u64::from_be_bytes(*count)))
}

/// Audit records read per hold of the database by [`AuditLog::visit_audit_chain`].
const AUDIT_PAGE: usize = 1000;

/// How long after a failed reopen the next operation tries again.
const REOPEN_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Open the trees of the database at `path`, check its schema version and
/// finish any commit a crash interrupted.
fn open_trees(path: &Path) -> Result<Trees, StoreError> {
    let db = open_db(path)?;
    let meta = db.open_tree("meta")?;
    let found = meta.get("schema_version")?;
    match found.as_deref() {
        None => {
            meta.insert("schema_version", SCHEMA_VERSION)?;
            db.flush()?;
        }
        Some(v) if v == SCHEMA_VERSION.as_bytes() || v == b"1" || v == b"2" || v == b"3" => {}
        Some(v) => {
            return Err(StoreError::SchemaMismatch {
                path: path.display().to_string(),
                found: String::from_utf8_lossy(v).into_owned(),
                expected: SCHEMA_VERSION.to_string(),
            })
        }
    }
    let trees = Trees {
        redo: db.open_tree("redo")?,
        sessions: db.open_tree("sessions")?,
        proposals: db.open_tree("proposals")?,
        by_status: db.open_tree("proposals_by_status")?,
        questions: db.open_tree("questions")?,
        timers: db.open_tree("timers")?,
        deliveries: db.open_tree("deliveries")?,
        question_deliveries: db.open_tree("question_deliveries")?,
        audit: db.open_tree("audit")?,
        idempotency: db.open_tree("idempotency")?,
        outbox: db.open_tree("outbox")?,
        documents: db.open_tree("documents")?,
        namespaces: db.open_tree("namespaces")?,
        rules: db.open_tree("rules")?,
        meta,
        db,
    };
    trees.replay()?;
    match found.as_deref() {
        Some(b"1") => upgrade(&trees, 1)?,
        Some(b"2") => upgrade(&trees, 2)?,
        Some(b"3") => upgrade(&trees, 3)?,
        _ => {}
    }
    Ok(trees)
}

/// Schema 1, 2 or 3 → 4: index every proposal by status and creation time
/// (from 1), drop every timer but the first of its chain (from 1 and 2),
/// chain the audit (from 1, 2 and 3), then say so in `schema_version`,
/// flushed together: a crash before the flush leaves the old version, and
/// the next open does it again (every step is idempotent).
fn upgrade(t: &Trees, from: u8) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    let mut indexed = 0u64;
    if from == 1 {
        for entry in t.proposals.iter() {
            let (_, value) = entry?;
            let p: Listed = decode(&value, "proposal")?;
            t.by_status.insert(status_key(p.status, p.created_at, &p.approval_id), &[])?;
            indexed += 1;
        }
    }
    let dropped = if from <= 2 { keep_chain_heads(t)? } else { 0 };
    let chained = chain_audit(t)?;
    t.meta.insert("schema_version", SCHEMA_VERSION)?;
    t.db.flush()?;
    tracing::info!(
        indexed,
        timers_dropped = dropped,
        audit_chained = chained,
        took_ms = started.elapsed().as_millis() as u64,
        "upgraded the sled database to schema 4 (proposals indexed by status, the first timer of each chain, the audit chained)"
    );
    Ok(())
}

/// Chain every audit record in key order (the order they were written
/// in), from the first: a record chained by an interrupted upgrade is
/// chained again to the same values.
fn chain_audit(t: &Trees) -> Result<u64, StoreError> {
    let mut chain = Chain::genesis();
    let mut batch = sled::Batch::default();
    let (mut chained, mut pending) = (0u64, 0usize);
    for entry in t.audit.iter() {
        let (key, value) = entry?;
        let record = chain.append(chained::event_of(&value)?);
        batch.insert(key, chained::stored(&record));
        (chained, pending) = (chained + 1, pending + 1);
        if pending == 10_000 {
            t.audit.apply_batch(std::mem::take(&mut batch))?;
            pending = 0;
        }
    }
    t.audit.apply_batch(batch)?;
    Ok(chained)
}

/// The chain whose head is the audit's last record.
fn head_of(t: &Trees) -> Result<Chain, StoreError> {
    match t.audit.last()? {
        Some((_, value)) => {
            let record = chained::unseal(&value)?;
            Ok(Chain::after(record.seq, record.hash))
        }
        None => Ok(Chain::genesis()),
    }
}

/// Drop every stored timer that is not the first of its chain: the
/// records still hold them, and firing the first stores the next. The
/// timers tree is in due order, so the first of a chain seen is its head.
fn keep_chain_heads(t: &Trees) -> Result<u64, StoreError> {
    use plangate_engine::chains::{chain_of, Chain};
    let mut seen = std::collections::HashSet::new();
    let mut batch = sled::Batch::default();
    let (mut dropped, mut pending) = (0u64, 0usize);
    for entry in t.timers.iter() {
        let (key, value) = entry?;
        let timer: Timer = decode(&value, "timer")?;
        let chain = chain_of(&timer);
        if chain.1 != Chain::SubagentExpiry && !seen.insert(chain) {
            batch.remove(key);
            (dropped, pending) = (dropped + 1, pending + 1);
            if pending == 10_000 {
                t.timers.apply_batch(std::mem::take(&mut batch))?;
                pending = 0;
            }
        }
    }
    t.timers.apply_batch(batch)?;
    Ok(dropped)
}

/// The fields of a stored proposal its index entry is made of: serde
/// skips the plan without allocating it.
#[derive(serde::Deserialize)]
struct Listed {
    approval_id: ApprovalId,
    status: DecisionStatus,
    created_at: Timestamp,
}

/// `status \0 created_at approval_id`: one status's proposals together,
/// oldest first, in the order listings page through.
pub(crate) fn status_key(status: DecisionStatus, created_at: Timestamp, id: &ApprovalId) -> Vec<u8> {
    let mut k = status_prefix(status);
    k.extend_from_slice(&((created_at.0 as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(&id.0);
    k
}

fn status_prefix(status: DecisionStatus) -> Vec<u8> {
    let mut k = status.as_str().as_bytes().to_vec();
    k.push(0);
    k
}

/// Every status, for a listing of all proposals (merged from each one's range).
const STATUSES: [DecisionStatus; 7] = DecisionStatus::ALL;

/// The approval id at the end of an index key.
fn id_of_status_key(key: &[u8]) -> Option<ApprovalId> {
    let tail: [u8; 16] = key.get(key.len().checked_sub(16)?..)?.try_into().ok()?;
    Some(ApprovalId(tail))
}

impl Trees {
    /// Up to `limit` proposals with `status` after `after`, in listing
    /// order, from the index. An entry whose record is gone or says another
    /// status (a commit between its two writes) is skipped.
    fn visit_status(
        &self,
        status: DecisionStatus,
        after: Option<PagePosition>,
        limit: usize,
        visit: &mut dyn FnMut(Proposal),
    ) -> Result<(), StoreError> {
        use std::ops::Bound;
        let prefix = status_prefix(status);
        let start = match after {
            Some(a) => Bound::Excluded(status_key(status, a.created_at, &a.approval_id)),
            None => Bound::Included(prefix.clone()),
        };
        let mut taken = 0;
        for key in self.by_status.range::<Vec<u8>, _>((start, Bound::Unbounded)).keys() {
            let key = key?;
            if taken >= limit || !key.starts_with(&prefix) {
                break;
            }
            let Some(id) = id_of_status_key(&key) else { continue };
            let Some(bytes) = self.proposals.get(id.0)? else { continue };
            let p: Proposal = decode(&bytes, "proposal")?;
            if p.status == status {
                visit(p);
                taken += 1;
            }
        }
        Ok(())
    }

    /// The key of the first audit entry recorded at or after `since`, by
    /// bisecting the keys: they are ids drawn in commit order, and entries
    /// are written in time order (a step back of the wall clock aside, which
    /// the margin callers leave covers). About 64 point reads, whatever the
    /// audit's length.
    fn first_audit_at(&self, since: Timestamp) -> Result<Option<u64>, StoreError> {
        let id = |key: &[u8]| key.try_into().map(u64::from_be_bytes).unwrap_or(u64::MAX);
        let (Some((first, _)), Some((last, _))) = (self.audit.first()?, self.audit.last()?) else { return Ok(None) };
        let (mut lo, mut hi) = (id(&first), id(&last).saturating_add(1));
        let mut found = None;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some(entry) = self.audit.range(mid.to_be_bytes()..hi.to_be_bytes()).next() else {
                hi = mid;
                continue;
            };
            let (key, value) = entry?;
            let event: AuditEvent = decode(&value, "audit")?;
            if event.at < since {
                lo = id(&key).saturating_add(1);
            } else {
                // Nothing lies between `mid` and this key: the answer is
                // this key or one before `mid`.
                found = Some(id(&key));
                hi = mid;
            }
        }
        Ok(found)
    }

    /// Up to `limit` proposals with `status`, the latest proposed first.
    fn latest_of_status(&self, status: DecisionStatus, limit: usize) -> Result<Vec<Proposal>, StoreError> {
        let mut out = Vec::new();
        for key in self.by_status.scan_prefix(status_prefix(status)).keys().rev() {
            if out.len() >= limit {
                break;
            }
            let key = key?;
            let Some(id) = id_of_status_key(&key) else { continue };
            let Some(bytes) = self.proposals.get(id.0)? else { continue };
            let p: Proposal = decode(&bytes, "proposal")?;
            if p.status == status {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// Finish the commits a crash interrupted (see `redo`).
    fn replay(&self) -> Result<(), StoreError> {
        let mut replayed = 0;
        for record in self.redo.iter() {
            let (seq, bytes) = record?;
            let ops = redo::decode(&bytes).ok_or_else(|| {
                StoreError::Unavailable(format!(
                    "redo record {} is unreadable (written by a newer plangate?); use a matching plangate release",
                    hex::encode(&seq)
                ))
            })?;
            self.apply_ops(&ops)?;
            self.redo.remove(&seq)?;
            replayed += 1;
        }
        if replayed > 0 {
            tracing::warn!(replayed, "finished commits that a crash interrupted");
            self.db.flush()?;
        }
        Ok(())
    }

    fn tree(&self, id: TreeId) -> &sled::Tree {
        match id {
            TreeId::Sessions => &self.sessions,
            TreeId::Proposals => &self.proposals,
            TreeId::Questions => &self.questions,
            TreeId::Timers => &self.timers,
            TreeId::Audit => &self.audit,
            TreeId::Idempotency => &self.idempotency,
            TreeId::Outbox => &self.outbox,
            TreeId::Rules => &self.rules,
            TreeId::ProposalsByStatus => &self.by_status,
        }
    }

    pub(crate) fn apply_ops(&self, ops: &[Op]) -> Result<(), StoreError> {
        for op in ops {
            let tree = self.tree(op.tree);
            match &op.value {
                Some(v) => tree.insert(&op.key, v.as_slice())?,
                None => tree.remove(&op.key)?,
            };
        }
        Ok(())
    }

    /// The writes of a commit, in the order they are applied: the session
    /// last, so a reader that looks a session up never finds it pointing at
    /// records that are not there yet.
    fn ops_of(&self, commit: &Commit, chain: &mut Chain) -> Result<Vec<Op>, StoreError> {
        let insert = |tree, key: Vec<u8>, value: Vec<u8>| Op { tree, key, value: Some(value) };
        let mut ops = Vec::new();
        for p in &commit.proposals {
            // Its index entry moves when its status does (the record read
            // here is the session's own: commits of a session take turns).
            let before = match self.proposals.get(p.approval_id.0)? {
                Some(bytes) => Some(decode::<Listed>(&bytes, "proposal")?),
                None => None,
            };
            if before.as_ref().is_none_or(|b| b.status != p.status || b.created_at != p.created_at) {
                if let Some(b) = &before {
                    ops.push(Op { tree: TreeId::ProposalsByStatus, key: status_key(b.status, b.created_at, &b.approval_id), value: None });
                }
                ops.push(insert(TreeId::ProposalsByStatus, status_key(p.status, p.created_at, &p.approval_id), Vec::new()));
            }
            ops.push(insert(TreeId::Proposals, p.approval_id.0.to_vec(), encode(p)));
        }
        for q in &commit.questions {
            ops.push(insert(TreeId::Questions, q.question_id.0.to_vec(), encode(q)));
        }
        for t in &commit.timers_remove {
            ops.push(Op { tree: TreeId::Timers, key: timer_key(t), value: None });
        }
        for t in &commit.timers_add {
            ops.push(insert(TreeId::Timers, timer_key(t), encode(t)));
        }
        for event in &commit.audit {
            let id = self.db.generate_id()?;
            ops.push(insert(TreeId::Audit, id.to_be_bytes().to_vec(), chained::seal(chain, event).1));
        }
        for key in &commit.idempotency {
            ops.push(insert(TreeId::Idempotency, key.as_bytes().to_vec(), vec![1u8]));
        }
        for entry in &commit.outbox {
            ops.push(insert(TreeId::Outbox, entry.seq.to_be_bytes().to_vec(), entry.work.clone()));
        }
        for rule in &commit.rules_add {
            ops.push(insert(TreeId::Rules, rule_key(rule), encode(rule)));
        }
        if let Some(session) = &commit.session {
            ops.push(insert(TreeId::Sessions, session_key(&session.key), encode(session)));
        }
        Ok(ops)
    }
}

impl SledStore {
    /// Open (or create) the database under `data_dir/db`, checking its
    /// schema version and finishing any commit a crash interrupted.
    pub fn open(data_dir: &Path) -> Result<SledStore, StoreError> {
        SledStore::open_with(data_dir, Durability::default())
    }

    /// [`open`](Self::open) with an explicit [`Durability`].
    ///
    /// sled locks its directory; the lock of a store just dropped (or of a
    /// process just killed) can outlive it by a few milliseconds while
    /// sled's flusher thread winds down, so a busy lock is retried for up to
    /// [`LOCK_WAIT`] before giving up.
    pub fn open_with(data_dir: &Path, durability: Durability) -> Result<SledStore, StoreError> {
        let path = data_dir.join("db");
        let trees = open_trees(&path)?;
        let pending_at_close = take_pending_note(&trees)?;
        Ok(SledStore {
            path,
            open: RwLock::new(Some(trees)),
            snapshot_lock: RwLock::new(()),
            durability,
            group: Arc::new(FlushGroup::new(durability == Durability::Grouped)),
            stripes: (0..SESSION_STRIPES).map(|_| Mutex::new(())).collect(),
            written: AtomicU64::new(0),
            checkpoint_after: AtomicU64::new(CHECKPOINT_AFTER_BYTES),
            checkpointing: Mutex::new(CheckpointState {
                last_failure: None,
                last_end: std::time::Instant::now(),
                last_took: std::time::Duration::ZERO,
                stats: CheckpointStats::default(),
            }),
            pending_at_close: Mutex::new(pending_at_close),
            chain: Mutex::new(None),
        })
    }

    /// The open database for one operation. After a failed reopen, tries
    /// again (at most once per [`REOPEN_RETRY`]); until one succeeds every
    /// operation fails: a store that cannot be read answers no question.
    pub(crate) fn trees(&self) -> Result<Open<'_>, StoreError> {
        let open = self.open.read().unwrap_or_else(|e| e.into_inner());
        if open.is_some() {
            return Ok(Open(open));
        }
        drop(open);
        self.reopen_after_failure()?;
        let open = self.open.read().unwrap_or_else(|e| e.into_inner());
        if open.is_some() {
            Ok(Open(open))
        } else {
            Err(StoreError::Unavailable("the sled database is closed: reopening it failed (see the log)".to_string()))
        }
    }

    fn reopen_after_failure(&self) -> Result<(), StoreError> {
        let mut state = self.checkpointing.lock().unwrap_or_else(|e| e.into_inner());
        if state.last_failure.is_some_and(|at| at.elapsed() < REOPEN_RETRY) {
            return Err(StoreError::Unavailable("the sled database is closed: reopening it failed (see the log)".to_string()));
        }
        let mut open = self.open.write().unwrap_or_else(|e| e.into_inner());
        if open.is_none() {
            match open_trees(&self.path) {
                Ok(trees) => {
                    *open = Some(trees);
                    state.last_failure = None;
                    tracing::info!(path = %self.path.display(), "the sled database is open again");
                }
                Err(e) => {
                    state.last_failure = Some(std::time::Instant::now());
                    tracing::error!(error = %e, path = %self.path.display(), "cannot reopen the sled database");
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Close the database and open it again, so that sled writes its
    /// recovery snapshot and the log a later open replays starts here (see
    /// [`CHECKPOINT_AFTER_BYTES`]). Every operation waits meanwhile; commits
    /// already written are flushed first. A failed reopen leaves the store
    /// closed (operations fail with [`StoreError::Unavailable`], a reopen is
    /// tried again on the next one): never an operation on a half-open
    /// database.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.checkpoint_locked(self.checkpointing.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn checkpoint_locked(&self, mut state: MutexGuard<'_, CheckpointState>) -> Result<(), StoreError> {
        let span = tracing::info_span!("sled_checkpoint", written = self.written.load(Ordering::Relaxed));
        let _enter = span.enter();
        let started = std::time::Instant::now();
        let mut open = self.open.write().unwrap_or_else(|e| e.into_inner());
        if let Some(trees) = open.as_ref() {
            trees.db.flush()?;
            // Every ticket was taken under the read lock this write lock
            // waited out: its write is in what was just flushed.
            self.group.all_durable();
        }
        drop(open.take());
        self.written.store(0, Ordering::Relaxed);
        let reopened = open_trees(&self.path);
        let took = started.elapsed();
        state.last_end = std::time::Instant::now();
        state.last_took = took;
        match reopened {
            Ok(trees) => {
                *open = Some(trees);
                state.last_failure = None;
                state.stats.count += 1;
                state.stats.total += took;
                state.stats.longest = state.stats.longest.max(took);
                tracing::info!(took_ms = took.as_millis() as u64, "sled checkpoint: database reopened");
                Ok(())
            }
            Err(e) => {
                state.last_failure = Some(state.last_end);
                tracing::error!(error = %e, "sled checkpoint: cannot reopen the database; operations fail until it reopens");
                Err(e)
            }
        }
    }

    /// Checkpoints taken since this store was opened.
    pub fn checkpoints(&self) -> u64 {
        self.checkpoint_stats().count
    }

    /// Checkpoints taken since this store was opened, and their time.
    pub fn checkpoint_stats(&self) -> CheckpointStats {
        self.checkpointing.lock().unwrap_or_else(|e| e.into_inner()).stats
    }

    /// Change [`CHECKPOINT_AFTER_BYTES`] (tests and benchmarks).
    pub fn set_checkpoint_after(&self, bytes: u64) {
        self.checkpoint_after.store(bytes.max(1), Ordering::Relaxed);
    }

    /// Count `bytes` written; checkpoint when they passed the threshold and
    /// the last checkpoint is far enough behind ([`CHECKPOINT_SPACING`]).
    /// Called after a write is durable, holding no lock of the store's.
    fn wrote(&self, bytes: u64) {
        let threshold = self.checkpoint_after.load(Ordering::Relaxed);
        if self.written.fetch_add(bytes, Ordering::Relaxed) + bytes < threshold {
            return;
        }
        let state = match self.checkpointing.try_lock() {
            Ok(state) => state,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            // One is under way (or a reopen is retried).
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        // Looked at again under the lock: a checkpoint may just have ended.
        if self.written.load(Ordering::Relaxed) < threshold || state.last_end.elapsed() < state.last_took * CHECKPOINT_SPACING {
            return;
        }
        // A failure is logged, and the store stays closed until a reopen
        // succeeds.
        let _ = self.checkpoint_locked(state);
    }

    fn stripe(&self, key: Option<&SessionKey>) -> MutexGuard<'_, ()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        self.stripes[(h.finish() as usize) % SESSION_STRIPES].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record, apply, clear the redo record; then the shared flush.
    fn commit_grouped(&self, commit: Commit) -> Result<(), StoreError> {
        let (t, ticket, bytes) = self.write_grouped(commit)?;
        self.group.wait(ticket, || {
            t.db.flush()?;
            Ok(())
        })?;
        drop(t);
        self.wrote(bytes);
        Ok(())
    }

    /// Record, apply, clear the redo record, and take a flush ticket: the
    /// commit is written, durable once a flush covers the ticket. Returns
    /// the open database (a flush must run on it, or a checkpoint's must
    /// cover the ticket), the ticket, and the bytes to count.
    fn write_grouped(&self, commit: Commit) -> Result<(Open<'_>, u64, u64), StoreError> {
        let snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
        let t = self.trees()?;
        let session = self.stripe(commit.session.as_ref().map(|s| &s.key));
        if let Some(id) = &commit.new_proposal {
            // Ids are 128 random bits; this guards the invariant, not a race.
            if t.proposals.contains_key(id.0)? {
                return Err(StoreError::DuplicateId(*id));
            }
        }
        let mut head = if commit.audit.is_empty() { None } else { Some(self.chain_head(&t)?) };
        let mut chain = head.as_deref().copied().flatten().unwrap_or_default();
        let ops = t.ops_of(&commit, &mut chain)?;
        let seq = t.db.generate_id()?.to_be_bytes();
        let record = redo::encode(&ops);
        t.redo.insert(seq, record.as_slice())?;
        // A failure from here on leaves the record, and the next open
        // finishes the commit: all or nothing, as a transaction would. The
        // chain moves on now: the records it sealed will be written.
        if let Some(head) = head.as_deref_mut() {
            *head = Some(chain);
        }
        t.apply_ops(&ops)?;
        t.redo.remove(seq)?;
        drop(head);
        // The session's next commit (and a snapshot) need not wait for
        // this one's flush. The ticket is taken while the database is
        // still held open: a checkpoint (which flushes before it closes)
        // then covers it (`FlushGroup::all_durable`).
        drop(session);
        drop(snapshot);
        let ticket = self.group.issue();
        Ok((t, ticket, 2 * record.len() as u64))
    }

    /// Every tree, for copying the whole store elsewhere (`migrate`) and
    /// for the maintenance passes (`retention`, `backup`).
    pub(crate) fn raw_trees(&self) -> Result<Open<'_>, StoreError> {
        self.trees()
    }

    /// Hold every commit at its boundary until the guard is dropped.
    pub(crate) fn pause_commits(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.snapshot_lock.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The store as it was before group commit (see [`Durability`]).
    fn commit_transaction(&self, commit: Commit) -> Result<(), StoreError> {
        let _snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
        let t = self.trees()?;
        let mut head = self.chain_head(&t)?;
        let start = head.unwrap_or_default();
        let trees = (&t.sessions, &t.proposals, &t.questions, &t.timers, &t.audit, &t.idempotency, &t.outbox, &t.rules, &t.by_status);
        let result = trees.transaction(|(sessions, proposals, questions, timers, audit, idempotency, outbox, rules, by_status)| {
            // A transaction may run more than once: seal from the same head each time.
            let mut chain = start;
            if let Some(id) = &commit.new_proposal {
                if proposals.get(id.0)?.is_some() {
                    return Err(ConflictableTransactionError::Abort(StoreError::DuplicateId(*id)));
                }
            }
            if let Some(session) = &commit.session {
                sessions.insert(session_key(&session.key), encode(session))?;
            }
            for p in &commit.proposals {
                if let Some(bytes) = proposals.get(p.approval_id.0)? {
                    let b: Listed = decode(&bytes, "proposal").map_err(ConflictableTransactionError::Abort)?;
                    by_status.remove(status_key(b.status, b.created_at, &b.approval_id))?;
                }
                by_status.insert(status_key(p.status, p.created_at, &p.approval_id), &[])?;
                proposals.insert(&p.approval_id.0, encode(p))?;
            }
            for q in &commit.questions {
                questions.insert(&q.question_id.0, encode(q))?;
            }
            for t in &commit.timers_remove {
                timers.remove(timer_key(t))?;
            }
            for t in &commit.timers_add {
                timers.insert(timer_key(t), encode(t))?;
            }
            for event in &commit.audit {
                let id = audit.generate_id()?;
                audit.insert(&id.to_be_bytes(), chained::seal(&mut chain, event).1)?;
            }
            for key in &commit.idempotency {
                idempotency.insert(key.as_bytes(), &[1u8])?;
            }
            for entry in &commit.outbox {
                outbox.insert(&entry.seq.to_be_bytes(), entry.work.as_slice())?;
            }
            for rule in &commit.rules_add {
                rules.insert(rule_key(rule), encode(rule))?;
            }
            Ok(chain)
        });
        match result {
            Ok(chain) => {
                *head = Some(chain);
                drop(head);
                self.flushed(&t, ())
            }
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(StoreError::Sled(e)),
        }
    }

    fn list<T: DeserializeOwned>(tree: &sled::Tree, prefix: &[u8], what: &'static str) -> Result<Vec<T>, StoreError> {
        let values = tree.scan_prefix(prefix).values().collect::<Result<Vec<_>, _>>()?;
        Ok(decode_listed(values, what))
    }

    /// Return `value` once every write made before this call is durable.
    /// Takes the open database from the caller, who holds it: a second
    /// read lock taken here could wait behind a checkpoint that waits for
    /// the caller's.
    pub(crate) fn flushed<T>(&self, t: &Trees, value: T) -> Result<T, StoreError> {
        self.group.make_durable(|| {
            t.db.flush()?;
            Ok(())
        })?;
        Ok(value)
    }

    /// A small durable write (not a commit): flush it and count it.
    fn flushed_small<T>(&self, t: Open<'_>, value: T) -> Result<T, StoreError> {
        let value = self.flushed(&t, value)?;
        drop(t);
        self.wrote(SMALL_WRITE_BYTES);
        Ok(value)
    }

    /// Write an idempotency key unless it is there; `true` when it was not.
    fn record_fresh(t: &Trees, key: &str) -> Result<bool, StoreError> {
        Ok(t.idempotency.compare_and_swap(key.as_bytes(), None as Option<&[u8]>, Some(&[1u8][..]))?.is_ok())
    }

    /// The audit chain's head, locked: loaded from the last record the
    /// first time. Hold it while sealing and writing audit records.
    fn chain_head(&self, t: &Trees) -> Result<MutexGuard<'_, Option<Chain>>, StoreError> {
        let mut head = self.chain.lock().unwrap_or_else(|e| e.into_inner());
        if head.is_none() {
            *head = Some(head_of(t)?);
        }
        Ok(head)
    }

    /// How many durable writes this store served with how many flushes.
    pub fn flush_stats(&self) -> FlushStats {
        self.group.stats()
    }
}

impl Sessions for SledStore {
    fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        let t = self.trees()?;
        let _session = self.stripe(Some(key));
        let Some(bytes) = t.sessions.get(session_key(key))? else {
            return Ok(State::new(key.clone()));
        };
        let session: Session = decode(&bytes, "session")?;
        // Read under the same guard: a second `trees()` here could wait
        // behind a checkpoint that waits for this one.
        let latest = match &session.latest_approval {
            Some(id) => t.proposals.get(id.0)?.map(|v| decode(&v, "proposal")).transpose()?,
            None => None,
        };
        Ok(State { session, latest })
    }

    fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        let t = self.trees()?;
        Self::list(&t.sessions, &[], "session")
    }

    fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError> {
        let t = self.trees()?;
        t.questions.get(id.0)?.map(|v| decode(&v, "question")).transpose()
    }

    /// One process owns a sled store: no other writer can come first, so a
    /// commit is written or fails, never preempted.
    fn commit(&self, commit: Commit) -> Result<Committed, StoreError> {
        match self.durability {
            Durability::Grouped => self.commit_grouped(commit),
            Durability::TransactionPerCommit => self.commit_transaction(commit),
        }
        .map(Committed::Written)
    }

    fn flush(&self) -> Result<(), StoreError> {
        let t = self.trees()?;
        self.flushed_small(t, ())
    }
}

impl Proposals for SledStore {
    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        let t = self.trees()?;
        t.proposals.get(id.0)?.map(|v| decode(&v, "proposal")).transpose()
    }

    fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError> {
        let t = self.trees()?;
        // Only hex (ASCII) can match; slicing below needs char boundaries.
        if !hex_prefix.is_ascii() {
            return Ok(Vec::new());
        }
        // Whole bytes narrow the scan; an odd last nibble is filtered after.
        let whole = &hex_prefix[..hex_prefix.len() - hex_prefix.len() % 2];
        let Ok(bytes) = hex::decode(whole) else { return Ok(Vec::new()) };
        let all: Vec<Proposal> = Self::list(&t.proposals, &bytes, "proposal")?;
        Ok(all.into_iter().filter(|p| p.approval_id.to_string().starts_with(hex_prefix)).collect())
    }

    fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        let t = self.trees()?;
        if let Some(status) = status {
            let mut all = Vec::new();
            t.visit_status(status, None, usize::MAX, &mut |p| all.push(p))?;
            return Ok(all);
        }
        let mut all: Vec<Proposal> = Self::list(&t.proposals, &[], "proposal")?;
        all.sort_by_key(|p| p.created_at);
        Ok(all)
    }

    fn visit_proposals(&self, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError> {
        let t = self.trees()?;
        if let Some(status) = status {
            return t.visit_status(status, None, usize::MAX, &mut |p| visit(&p));
        }
        for value in t.proposals.iter().values() {
            visit(&decode(&value?, "proposal")?);
        }
        Ok(())
    }

    /// Counted in the index: no proposal record is read.
    fn count_proposals(&self, status: DecisionStatus) -> Result<u64, StoreError> {
        let t = self.trees()?;
        let mut count = 0;
        for key in t.by_status.scan_prefix(status_prefix(status)).keys() {
            key?;
            count += 1;
        }
        Ok(count)
    }

    fn pending_at_last_close(&self) -> Option<u64> {
        self.pending_at_close.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Flushed here: the caller's next step is the process's end.
    fn note_pending_at_close(&self, pending: u64) -> Result<(), StoreError> {
        let t = self.trees()?;
        let mut note = pending.to_be_bytes().to_vec();
        if let Some((last, _)) = t.audit.last()? {
            note.extend_from_slice(&last);
        }
        t.meta.insert(PENDING_AT_CLOSE, note)?;
        t.db.flush()?;
        Ok(())
    }

    /// From the index: a page of one status reads `limit` records; a page
    /// of every status reads at most `limit` of each and merges them.
    fn proposals_page(
        &self,
        status: Option<DecisionStatus>,
        after: Option<PagePosition>,
        limit: usize,
    ) -> Result<Vec<Proposal>, StoreError> {
        let t = self.trees()?;
        let mut page = Vec::new();
        let one;
        let statuses = match status {
            Some(s) => {
                one = [s];
                &one[..]
            }
            None => &STATUSES[..],
        };
        for status in statuses {
            t.visit_status(*status, after, limit, &mut |p| page.push(p))?;
        }
        page.sort_by_key(PagePosition::of);
        page.truncate(limit);
        Ok(page)
    }

    fn latest_proposals(&self, status: DecisionStatus, limit: usize) -> Result<Vec<Proposal>, StoreError> {
        self.trees()?.latest_of_status(status, limit)
    }
}

impl AuditLog for SledStore {
    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        let t = self.trees()?;
        let mut head = self.chain_head(&t)?;
        for event in events {
            let mut chain = head.unwrap_or_default();
            let id = t.db.generate_id()?;
            t.audit.insert(id.to_be_bytes(), chained::seal(&mut chain, event).1)?;
            *head = Some(chain);
        }
        drop(head);
        self.flushed_small(t, ())
    }

    fn audit_head(&self) -> Result<Option<(u64, crate::AuditHash)>, StoreError> {
        let t = self.trees()?;
        let head = self.chain_head(&t)?;
        Ok(head.and_then(|chain| chain.head()))
    }

    fn visit_audit_chain(&self, since: Option<Timestamp>, visit: &mut dyn FnMut(crate::AuditRecord) -> bool) -> Result<(), StoreError> {
        let mut from = {
            let t = self.trees()?;
            match since {
                Some(since) => match t.first_audit_at(since)? {
                    Some(start) => start,
                    None => return Ok(()),
                },
                None => 0,
            }
        };
        loop {
            // One page per hold of the database: a checkpoint (which
            // closes it) waits for a page, not for the whole export.
            let t = self.trees()?;
            let mut last = None;
            for entry in t.audit.range(from.to_be_bytes()..).take(AUDIT_PAGE) {
                let (key, value) = entry?;
                last = Some(u64::from_be_bytes(
                    key.as_ref().try_into().map_err(|_| StoreError::AuditChain("an audit key that is not 8 bytes".into()))?,
                ));
                if !visit(chained::unseal(&value)?) {
                    return Ok(());
                }
            }
            match last.and_then(|k| k.checked_add(1)) {
                Some(next) => from = next,
                None => return Ok(()),
            }
        }
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        let t = self.trees()?;
        let mut out = Vec::new();
        let entries = match query.since {
            Some(since) => match t.first_audit_at(since)? {
                Some(start) => t.audit.range(start.to_be_bytes()..),
                None => return Ok(out),
            },
            None => t.audit.iter(),
        };
        // An approval's entries hold its id as the store wrote it (`"<hex>"`):
        // an entry without those bytes is not decoded at all (a JSON decode
        // costs ten times the search). One that has them is decoded and
        // filtered exactly, as every entry is without the filter.
        let needle = query.approval_id.map(|id| format!("\"{id}\""));
        let finder = needle.as_deref().map(|n| memchr::memmem::Finder::new(n.as_bytes()));
        for value in entries.values().rev() {
            let value = value?;
            if finder.as_ref().is_some_and(|f| f.find(&value).is_none()) {
                continue;
            }
            let event: AuditEvent = decode(&value, "audit")?;
            let keep = query.agent.as_ref().is_none_or(|a| *a == event.agent)
                && query.session_id.as_ref().is_none_or(|s| *s == event.session_id)
                && query.approval_id.is_none_or(|id| Some(id) == event.approval_id)
                && query.since.is_none_or(|since| event.at >= since);
            if keep {
                out.push(event);
                if query.limit > 0 && out.len() >= query.limit {
                    break;
                }
            }
        }
        out.reverse();
        Ok(out)
    }
}

impl EventKeys for SledStore {
    fn seen(&self, key: &str) -> Result<bool, StoreError> {
        let t = self.trees()?;
        Ok(t.idempotency.contains_key(key.as_bytes())?)
    }

    fn mark_seen(&self, key: &str) -> Result<(), StoreError> {
        let t = self.trees()?;
        // The hub marks every event it handled, also one whose transition
        // already wrote (and flushed) the key in its commit: a key already
        // here costs no second flush. Only a key new here is flushed.
        if Self::record_fresh(&t, key)? {
            self.flushed_small(t, ())?;
        }
        Ok(())
    }

    fn record_once(&self, key: &str) -> Result<bool, StoreError> {
        let t = self.trees()?;
        let fresh = Self::record_fresh(&t, key)?;
        self.flushed_small(t, fresh)
    }
}

impl Cursors for SledStore {
    fn cursor(&self, key: &str) -> Result<Option<String>, StoreError> {
        let t = self.trees()?;
        Ok(t.meta.get(format!("cursor:{key}"))?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.meta.insert(format!("cursor:{key}"), value.as_bytes())?;
        self.flushed_small(t, ())
    }

    fn cursors_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
        let t = self.trees()?;
        t.meta
            .scan_prefix(format!("cursor:{prefix}"))
            .map(|entry| {
                let (k, v) = entry?;
                let key = String::from_utf8_lossy(&k["cursor:".len()..]).into_owned();
                Ok((key, String::from_utf8_lossy(&v).into_owned()))
            })
            .collect()
    }

    fn swap_cursor(&self, key: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, StoreError> {
        let t = self.trees()?;
        let swapped = t.meta.compare_and_swap(format!("cursor:{key}"), expected.map(str::as_bytes), value.map(str::as_bytes))?;
        self.flushed_small(t, swapped.is_ok())
    }
}

impl Namespaces for SledStore {
    fn namespace_revision(&self, name: &str) -> Result<(Namespace, u64), StoreError> {
        let t = self.trees()?;
        match t.namespaces.get(name)? {
            None => Ok((Namespace::default(), 0)),
            Some(bytes) => {
                let stored: StoredNamespace = decode(&bytes, "namespace")?;
                Ok((stored.namespace, stored.revision))
            }
        }
    }

    /// Compare-and-swap on the stored bytes: the write lands only if the
    /// record is still the one whose revision was checked.
    fn set_namespace(&self, name: &str, ns: &Namespace, expected_revision: u64) -> Result<Committed, StoreError> {
        let t = self.trees()?;
        let current = t.namespaces.get(name)?;
        let revision = match &current {
            None => 0,
            Some(bytes) => decode::<StoredNamespace>(bytes, "namespace")?.revision,
        };
        if revision != expected_revision {
            return Ok(Committed::Preempted(Preempted::Conflict));
        }
        let next = encode(&StoredNamespace { namespace: ns.clone(), revision: revision + 1 });
        if t.namespaces.compare_and_swap(name, current, Some(next))?.is_err() {
            return Ok(Committed::Preempted(Preempted::Conflict));
        }
        self.flushed_small(t, Committed::Written(()))
    }
}

impl PermissionRules for SledStore {
    fn permission_rules(&self, agent: &str) -> Result<Vec<StoredRule>, StoreError> {
        let t = self.trees()?;
        Self::list(&t.rules, &agent_prefix(agent), "permission rule")
    }

    fn remove_permission_rule(&self, agent: &str, id: &str) -> Result<bool, StoreError> {
        let _snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
        let t = self.trees()?;
        for entry in t.rules.scan_prefix(agent_prefix(agent)) {
            let (key, value) = entry?;
            let rule: StoredRule = decode(&value, "permission rule")?;
            if rule.id == id {
                t.rules.remove(key)?;
                return self.flushed_small(t, true);
            }
        }
        Ok(false)
    }
}

impl Documents for SledStore {
    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError> {
        let t = self.trees()?;
        Ok(t.documents.get(id.0)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.documents.insert(id.0, path.as_bytes())?;
        self.flushed_small(t, ())
    }
}

impl Timers for SledStore {
    fn next_timer(&self) -> Result<Option<Timer>, StoreError> {
        let t = self.trees()?;
        t.timers.first()?.map(|(_, v)| decode(&v, "timer")).transpose()
    }

    fn due_timers_page(&self, now: Timestamp, after: Option<&Timer>, limit: usize) -> Result<Vec<Timer>, StoreError> {
        let t = self.trees()?;
        use std::ops::Bound;
        let end = Bound::Excluded(due_prefix(now.plus_ms(1)));
        let start = after.map_or(Bound::Unbounded, |t| Bound::Excluded(timer_key(t)));
        t.timers.range::<Vec<u8>, _>((start, end)).values().take(limit).map(|v| decode(&v?, "timer")).collect()
    }

    fn timers(&self) -> Result<Vec<Timer>, StoreError> {
        let t = self.trees()?;
        Self::list(&t.timers, &[], "timer")
    }

    fn remove_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.timers.remove(timer_key(timer))?;
        self.flushed_small(t, ())
    }

    fn remove_timers(&self, timers: &[Timer]) -> Result<(), StoreError> {
        let t = self.trees()?;
        let mut batch = sled::Batch::default();
        timers.iter().for_each(|t| batch.remove(timer_key(t)));
        t.timers.apply_batch(batch)?;
        self.flushed_small(t, ())
    }
}

impl Outbox for SledStore {
    fn commit_numbered_unflushed(
        &self,
        mut commit: Commit,
        work: Vec<Vec<u8>>,
        numbered: &mut dyn FnMut(&[u64]),
    ) -> Result<(Committed<Vec<u64>>, crate::Flush), StoreError> {
        if !self.group.grouped() {
            return Ok((self.commit_numbered(commit, work, numbered)?, crate::Flush::Done));
        }
        let seqs = if work.is_empty() { Vec::new() } else { self.generate_seqs(work.len())? };
        numbered(&seqs);
        commit.outbox.extend(seqs.iter().zip(work).map(|(seq, work)| OutboxEntry { seq: *seq, work }));
        let (t, ticket, bytes) = self.write_grouped(commit)?;
        // Alone, flush here: a hop to the waiting task and back to a
        // blocking thread would cost more than it saves. Else leave the
        // flush under way (or the waiter going to lead the next one) to
        // release this commit, and free the thread.
        let flush = match self.group.lead_if_idle(ticket) {
            Turn::Lead(target) => {
                let result = t.db.flush().map_err(StoreError::from);
                self.group.finish(target, result.is_ok());
                result?;
                crate::Flush::Done
            }
            Turn::Durable => crate::Flush::Done,
            Turn::Wait => crate::Flush::Pending(PendingFlush { ticket, group: self.group.clone() }),
        };
        drop(t);
        // Counted now, even before durable: a checkpoint this triggers
        // flushes first, which makes the commit durable too.
        self.wrote(bytes);
        Ok((Committed::Written(seqs), flush))
    }

    fn flush_lead(&self, reservation: FlushReservation) -> Result<(), StoreError> {
        if !Arc::ptr_eq(reservation.group(), &self.group) {
            return Err(StoreError::Unavailable("a flush of another store was handed to this one".to_string()));
        }
        // Held before the lead can be claimed (the lock order of `group`).
        let t = self.trees()?;
        reservation.wait(|| {
            t.db.flush()?;
            Ok(())
        })
    }

    fn generate_seq(&self) -> Result<u64, StoreError> {
        let t = self.trees()?;
        Ok(t.db.generate_id()?)
    }

    fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        let t = self.trees()?;
        t.outbox.iter().map(outbox_entry).collect()
    }

    /// A range read from the key after `after` (keys are big-endian seqs).
    fn claim_outbox_page(&self, after: Option<u64>, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let from = match after.map(|seq| seq.checked_add(1)) {
            Some(None) => return Ok(Vec::new()),
            Some(Some(seq)) => seq,
            None => 0,
        };
        let t = self.trees()?;
        t.outbox.range(from.to_be_bytes()..).take(limit).map(outbox_entry).collect()
    }

    fn remove_outbox(&self, seq: u64) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.outbox.remove(seq.to_be_bytes())?;
        Ok(())
    }
}

impl Deliveries for SledStore {
    fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        let t = self.trees()?;
        Self::list(&t.deliveries, &id.0, "delivery")
    }

    fn add_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.deliveries.insert(delivery_key(id, delivery), encode(delivery))?;
        self.flushed_small(t, ())
    }

    fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        let t = self.trees()?;
        Self::list(&t.question_deliveries, &id.0, "delivery")
    }

    fn add_question_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.question_deliveries.insert(delivery_key(id, delivery), encode(delivery))?;
        self.flushed_small(t, ())
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

/// An outbox row: its big-endian `seq` key and its work.
fn outbox_entry(entry: sled::Result<(sled::IVec, sled::IVec)>) -> Result<OutboxEntry, StoreError> {
    let (key, work) = entry?;
    let seq = key
        .as_ref()
        .try_into()
        .map(u64::from_be_bytes)
        .map_err(|_| StoreError::Unavailable(format!("outbox key of {} bytes", key.len())))?;
    Ok(OutboxEntry { seq, work: work.to_vec() })
}

#[cfg(test)]
mod tests;
