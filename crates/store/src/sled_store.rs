//! The sled implementation of [`Store`].
//!
//! Layout (one database under `<data_dir>/db`):
//!
//! | tree | key | value |
//! |---|---|---|
//! | `meta` | `schema_version`, `cursor:<name>` | text |
//! | `sessions` | `agent \0 session_id` | JSON [`Session`] |
//! | `proposals` | 16-byte approval id | JSON [`Proposal`] |
//! | `questions` | 16-byte question id | JSON [`Question`] |
//! | `timers` | due (8 bytes, order-preserving) ‖ approval id ‖ kind | JSON [`Timer`] |
//! | `deliveries` | approval id ‖ `\0` ‖ destination ‖ `\0` ‖ chat | JSON [`Delivery`] |
//! | `question_deliveries` | question id ‖ `\0` ‖ destination | JSON [`Delivery`] |
//! | `audit` | u64 big-endian, monotonic | JSON [`AuditEvent`] |
//! | `idempotency` | event key | time handled (ms) |
//! | `documents` | approval id | document path |
//! | `namespaces` | name | JSON [`Namespace`] with its `revision` |
//! | `redo` | u64 big-endian | the writes of a commit in flight (see `redo`) |
//! | `outbox` | u64 big-endian seq | after-commit work not done yet (opaque) |
//!
//! A commit is atomic through a redo record rather than a sled transaction,
//! and durable through a flush shared with concurrent commits (group
//! commit): see the `redo` and `group` modules for why and how.

use crate::group::{FlushGroup, FlushStats};
use crate::redo::{self, Op, TreeId};
use crate::{AuditQuery, Commit, Committed, MaintenanceStore, OutboxEntry, Preempted, ReplicaStore, SessionStore, StoreError, WorkStore};
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
use std::sync::{Mutex, MutexGuard};

/// Bumped whenever the on-disk layout changes incompatibly.
pub const SCHEMA_VERSION: &str = "1";

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
    pub(crate) db: sled::Db,
    /// Commits hold it shared; a snapshot holds it exclusively, so it sees
    /// every commit whole or not at all (see `backup`).
    snapshot_lock: std::sync::RwLock<()>,
    durability: Durability,
    group: FlushGroup,
    stripes: Vec<Mutex<()>>,
    redo: sled::Tree,
    meta: sled::Tree,
    sessions: sled::Tree,
    proposals: sled::Tree,
    questions: sled::Tree,
    timers: sled::Tree,
    deliveries: sled::Tree,
    question_deliveries: sled::Tree,
    audit: sled::Tree,
    idempotency: sled::Tree,
    outbox: sled::Tree,
    documents: sled::Tree,
    namespaces: sled::Tree,
    rules: sled::Tree,
}

/// Borrowed trees of a [`SledStore`] (see [`SledStore::raw_trees`]).
pub(crate) struct RawTrees<'a> {
    pub db: &'a sled::Db,
    pub meta: &'a sled::Tree,
    pub sessions: &'a sled::Tree,
    pub proposals: &'a sled::Tree,
    pub questions: &'a sled::Tree,
    pub timers: &'a sled::Tree,
    pub deliveries: &'a sled::Tree,
    pub question_deliveries: &'a sled::Tree,
    pub audit: &'a sled::Tree,
    pub idempotency: &'a sled::Tree,
    pub outbox: &'a sled::Tree,
    pub documents: &'a sled::Tree,
    pub namespaces: &'a sled::Tree,
    pub rules: &'a sled::Tree,
}

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing our own plain structs to JSON cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], what: &'static str) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt { what, source })
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
        let db = open_db(&path)?;
        let meta = db.open_tree("meta")?;
        match meta.get("schema_version")? {
            None => {
                meta.insert("schema_version", SCHEMA_VERSION)?;
                db.flush()?;
            }
            Some(v) if v.as_ref() == SCHEMA_VERSION.as_bytes() => {}
            Some(v) => {
                return Err(StoreError::SchemaMismatch {
                    path: path.display().to_string(),
                    found: String::from_utf8_lossy(&v).into_owned(),
                    expected: SCHEMA_VERSION.to_string(),
                })
            }
        }
        let store = SledStore {
            snapshot_lock: std::sync::RwLock::new(()),
            durability,
            group: FlushGroup::new(durability == Durability::Grouped),
            stripes: (0..SESSION_STRIPES).map(|_| Mutex::new(())).collect(),
            redo: db.open_tree("redo")?,
            sessions: db.open_tree("sessions")?,
            proposals: db.open_tree("proposals")?,
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
        store.replay()?;
        Ok(store)
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
        }
    }

    fn apply_ops(&self, ops: &[Op]) -> Result<(), StoreError> {
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
    fn ops_of(&self, commit: &Commit) -> Result<Vec<Op>, StoreError> {
        let insert = |tree, key: Vec<u8>, value: Vec<u8>| Op { tree, key, value: Some(value) };
        let mut ops = Vec::new();
        for p in &commit.proposals {
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
            ops.push(insert(TreeId::Audit, id.to_be_bytes().to_vec(), encode(event)));
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

    fn stripe(&self, key: Option<&SessionKey>) -> MutexGuard<'_, ()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        self.stripes[(h.finish() as usize) % SESSION_STRIPES].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record, apply, clear the redo record; then the shared flush.
    fn commit_grouped(&self, commit: Commit) -> Result<(), StoreError> {
        {
            let _snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
            let _session = self.stripe(commit.session.as_ref().map(|s| &s.key));
            if let Some(id) = &commit.new_proposal {
                // Ids are 128 random bits; this guards the invariant, not a race.
                if self.proposals.contains_key(id.0)? {
                    return Err(StoreError::DuplicateId(*id));
                }
            }
            let ops = self.ops_of(&commit)?;
            let seq = self.db.generate_id()?.to_be_bytes();
            self.redo.insert(seq, redo::encode(&ops))?;
            // A failure from here on leaves the record, and the next open
            // finishes the commit: all or nothing, as a transaction would.
            self.apply_ops(&ops)?;
            self.redo.remove(seq)?;
        }
        self.flushed(())
    }

    pub(crate) fn sessions_tree(&self) -> &sled::Tree {
        &self.sessions
    }
    pub(crate) fn proposals_tree(&self) -> &sled::Tree {
        &self.proposals
    }
    pub(crate) fn deliveries_tree(&self) -> &sled::Tree {
        &self.deliveries
    }
    pub(crate) fn documents_tree(&self) -> &sled::Tree {
        &self.documents
    }
    pub(crate) fn audit_tree(&self) -> &sled::Tree {
        &self.audit
    }
    /// Every tree, for copying the whole store elsewhere (`migrate`).
    pub(crate) fn raw_trees(&self) -> RawTrees<'_> {
        RawTrees {
            db: &self.db,
            meta: &self.meta,
            sessions: &self.sessions,
            proposals: &self.proposals,
            questions: &self.questions,
            timers: &self.timers,
            deliveries: &self.deliveries,
            question_deliveries: &self.question_deliveries,
            audit: &self.audit,
            idempotency: &self.idempotency,
            outbox: &self.outbox,
            documents: &self.documents,
            namespaces: &self.namespaces,
            rules: &self.rules,
        }
    }
    pub(crate) fn flush_all(&self) -> Result<(), StoreError> {
        self.flushed(())
    }

    /// Hold every commit at its boundary until the guard is dropped.
    pub(crate) fn pause_commits(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.snapshot_lock.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The store as it was before group commit (see [`Durability`]).
    fn commit_transaction(&self, commit: Commit) -> Result<(), StoreError> {
        let _snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
        let trees =
            (&self.sessions, &self.proposals, &self.questions, &self.timers, &self.audit, &self.idempotency, &self.outbox, &self.rules);
        let result = trees.transaction(|(sessions, proposals, questions, timers, audit, idempotency, outbox, rules)| {
            if let Some(id) = &commit.new_proposal {
                if proposals.get(id.0)?.is_some() {
                    return Err(ConflictableTransactionError::Abort(StoreError::DuplicateId(*id)));
                }
            }
            if let Some(session) = &commit.session {
                sessions.insert(session_key(&session.key), encode(session))?;
            }
            for p in &commit.proposals {
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
                audit.insert(&id.to_be_bytes(), encode(event))?;
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
            Ok(())
        });
        match result {
            Ok(()) => self.flushed(()),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(StoreError::Sled(e)),
        }
    }

    fn list<T: DeserializeOwned>(tree: &sled::Tree, prefix: &[u8], what: &'static str) -> Result<Vec<T>, StoreError> {
        tree.scan_prefix(prefix).values().map(|v| decode(&v?, what)).collect()
    }

    /// Return `value` once every write made before this call is durable.
    fn flushed<T>(&self, value: T) -> Result<T, StoreError> {
        self.group.make_durable(|| {
            self.db.flush()?;
            Ok(())
        })?;
        Ok(value)
    }

    /// Write an idempotency key unless it is there; `true` when it was not.
    fn record_fresh(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.idempotency.compare_and_swap(key.as_bytes(), None as Option<&[u8]>, Some(&[1u8][..]))?.is_ok())
    }

    /// How many durable writes this store served with how many flushes.
    pub fn flush_stats(&self) -> FlushStats {
        self.group.stats()
    }
}

impl SessionStore for SledStore {
    fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        let _session = self.stripe(Some(key));
        let Some(bytes) = self.sessions.get(session_key(key))? else {
            return Ok(State::new(key.clone()));
        };
        let session: Session = decode(&bytes, "session")?;
        let latest = match &session.latest_approval {
            Some(id) => self.proposal(id)?,
            None => None,
        };
        Ok(State { session, latest })
    }

    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        self.proposals.get(id.0)?.map(|v| decode(&v, "proposal")).transpose()
    }

    fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError> {
        // Only hex (ASCII) can match; slicing below needs char boundaries.
        if !hex_prefix.is_ascii() {
            return Ok(Vec::new());
        }
        // Whole bytes narrow the scan; an odd last nibble is filtered after.
        let whole = &hex_prefix[..hex_prefix.len() - hex_prefix.len() % 2];
        let Ok(bytes) = hex::decode(whole) else { return Ok(Vec::new()) };
        let all: Vec<Proposal> = Self::list(&self.proposals, &bytes, "proposal")?;
        Ok(all.into_iter().filter(|p| p.approval_id.to_string().starts_with(hex_prefix)).collect())
    }

    fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        let mut all: Vec<Proposal> = Self::list(&self.proposals, &[], "proposal")?;
        all.retain(|p| status.is_none_or(|s| p.status == s));
        all.sort_by_key(|p| p.created_at);
        Ok(all)
    }

    fn visit_proposals(&self, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError> {
        for value in self.proposals.iter().values() {
            let p: Proposal = decode(&value?, "proposal")?;
            if status.is_none_or(|s| p.status == s) {
                visit(&p);
            }
        }
        Ok(())
    }

    /// Only each record's `status` is read: serde skips the plan without
    /// allocating it.
    fn count_proposals(&self, status: DecisionStatus) -> Result<u64, StoreError> {
        #[derive(serde::Deserialize)]
        struct StatusOf {
            status: DecisionStatus,
        }
        let mut count = 0;
        for value in self.proposals.iter().values() {
            count += u64::from(decode::<StatusOf>(&value?, "proposal")?.status == status);
        }
        Ok(count)
    }

    fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        Self::list(&self.sessions, &[], "session")
    }

    fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError> {
        self.questions.get(id.0)?.map(|v| decode(&v, "question")).transpose()
    }

    fn permission_rules(&self, agent: &str) -> Result<Vec<StoredRule>, StoreError> {
        Self::list(&self.rules, &agent_prefix(agent), "permission rule")
    }

    fn remove_permission_rule(&self, agent: &str, id: &str) -> Result<bool, StoreError> {
        let _snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
        for entry in self.rules.scan_prefix(agent_prefix(agent)) {
            let (key, value) = entry?;
            let rule: StoredRule = decode(&value, "permission rule")?;
            if rule.id == id {
                self.rules.remove(key)?;
                return self.flushed(true);
            }
        }
        Ok(false)
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

    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        for event in events {
            let id = self.db.generate_id()?;
            self.audit.insert(id.to_be_bytes(), encode(event))?;
        }
        self.flushed(())
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        let mut out = Vec::new();
        for value in self.audit.iter().values().rev() {
            let event: AuditEvent = decode(&value?, "audit")?;
            let keep = query.agent.as_ref().is_none_or(|a| *a == event.agent)
                && query.session_id.as_ref().is_none_or(|s| *s == event.session_id)
                && query.approval_id.is_none_or(|id| Some(id) == event.approval_id);
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

    fn seen(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.idempotency.contains_key(key.as_bytes())?)
    }

    fn mark_seen(&self, key: &str) -> Result<(), StoreError> {
        // The hub marks every event it handled, also one whose transition
        // already wrote (and flushed) the key in its commit: a key already
        // here costs no second flush. Only a key new here is flushed.
        if self.record_fresh(key)? {
            self.flushed(())?;
        }
        Ok(())
    }

    fn record_once(&self, key: &str) -> Result<bool, StoreError> {
        let fresh = self.record_fresh(key)?;
        self.flushed(fresh)
    }

    fn cursor(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.meta.get(format!("cursor:{key}"))?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.meta.insert(format!("cursor:{key}"), value.as_bytes())?;
        self.flushed(())
    }

    fn cursors_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.meta
            .scan_prefix(format!("cursor:{prefix}"))
            .map(|entry| {
                let (k, v) = entry?;
                let key = String::from_utf8_lossy(&k["cursor:".len()..]).into_owned();
                Ok((key, String::from_utf8_lossy(&v).into_owned()))
            })
            .collect()
    }

    fn swap_cursor(&self, key: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, StoreError> {
        let swapped = self.meta.compare_and_swap(format!("cursor:{key}"), expected.map(str::as_bytes), value.map(str::as_bytes))?;
        self.flushed(swapped.is_ok())
    }

    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError> {
        Ok(self.documents.get(id.0)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError> {
        self.documents.insert(id.0, path.as_bytes())?;
        self.flushed(())
    }

    fn namespace_revision(&self, name: &str) -> Result<(Namespace, u64), StoreError> {
        match self.namespaces.get(name)? {
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
        let current = self.namespaces.get(name)?;
        let revision = match &current {
            None => 0,
            Some(bytes) => decode::<StoredNamespace>(bytes, "namespace")?.revision,
        };
        if revision != expected_revision {
            return Ok(Committed::Preempted(Preempted::Conflict));
        }
        let next = encode(&StoredNamespace { namespace: ns.clone(), revision: revision + 1 });
        if self.namespaces.compare_and_swap(name, current, Some(next))?.is_err() {
            return Ok(Committed::Preempted(Preempted::Conflict));
        }
        self.flushed(Committed::Written(()))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.flushed(())
    }
}

impl WorkStore for SledStore {
    fn next_timer(&self) -> Result<Option<Timer>, StoreError> {
        self.timers.first()?.map(|(_, v)| decode(&v, "timer")).transpose()
    }

    fn due_timers_page(&self, now: Timestamp, after: Option<&Timer>, limit: usize) -> Result<Vec<Timer>, StoreError> {
        use std::ops::Bound;
        let end = Bound::Excluded(due_prefix(now.plus_ms(1)));
        let start = after.map_or(Bound::Unbounded, |t| Bound::Excluded(timer_key(t)));
        self.timers.range::<Vec<u8>, _>((start, end)).values().take(limit).map(|v| decode(&v?, "timer")).collect()
    }

    fn timers(&self) -> Result<Vec<Timer>, StoreError> {
        Self::list(&self.timers, &[], "timer")
    }

    fn remove_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        self.timers.remove(timer_key(timer))?;
        self.flushed(())
    }

    fn generate_seq(&self) -> Result<u64, StoreError> {
        Ok(self.db.generate_id()?)
    }

    fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        self.outbox
            .iter()
            .map(|entry| {
                let (key, work) = entry?;
                let seq = key
                    .as_ref()
                    .try_into()
                    .map(u64::from_be_bytes)
                    .map_err(|_| StoreError::Unavailable(format!("outbox key of {} bytes", key.len())))?;
                Ok(OutboxEntry { seq, work: work.to_vec() })
            })
            .collect()
    }

    fn remove_outbox(&self, seq: u64) -> Result<(), StoreError> {
        self.outbox.remove(seq.to_be_bytes())?;
        Ok(())
    }

    fn remove_timers(&self, timers: &[Timer]) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        timers.iter().for_each(|t| batch.remove(timer_key(t)));
        self.timers.apply_batch(batch)?;
        self.flushed(())
    }

    fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        Self::list(&self.deliveries, &id.0, "delivery")
    }

    fn add_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        self.deliveries.insert(delivery_key(id, delivery), encode(delivery))?;
        self.flushed(())
    }

    fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        Self::list(&self.question_deliveries, &id.0, "delivery")
    }

    fn add_question_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        self.question_deliveries.insert(delivery_key(id, delivery), encode(delivery))?;
        self.flushed(())
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
