//! Durable state for plangate: sessions, proposals, questions, timers, card
//! deliveries, audit, idempotency keys, cursors, namespaces and the
//! after-commit outbox; plus the markdown plan documents under
//! `<data_dir>/plans`.
//!
//! The server talks to the [`Store`] trait, cut by job into small traits
//! (`traits`: [`SessionStore`] and [`WorkStore`] are the parts a
//! transition and its later work need). Two backends implement it:
//!
//! - [`SledStore`], the embedded default: one sled database under
//!   `<data_dir>/db`, owned by one process. Snapshots (`backup`) and
//!   retention (`prune`) work on it.
//! - [`PgStore`], for replicas: tables in one PostgreSQL schema shared by
//!   any number of plangate processes. Session and namespace revisions
//!   refuse lost updates ([`Preempted::Conflict`], a value of [`Committed`], not an error), fired timers and inbound event keys
//!   are taken once ([`Preempted::TimerGone`], [`Preempted::AlreadyHandled`]),
//!   due timers and outbox entries are leased to one replica at a time,
//!   commits notify the other replicas (`LISTEN`/`NOTIFY`), and advisory
//!   locks elect the one replica that polls each chat. The schema is
//!   migrated on open ([`StoreError::SchemaTooNew`] for a newer one);
//!   [`migrate::sled_to_postgres`] moves a sled store into it. Back it up
//!   with `pg_dump`; pruning is not there yet.
//!
//! Both are synchronous: call them from blocking threads, never from an
//! async worker thread (the PostgreSQL one waits on an asynchronous client
//! of its own inside).
//!
//! **Architecture invariant:** a transition's records (state, proposals,
//! questions, timers, audit, idempotency keys, outbox) are written
//! atomically (all or none survive a crash: one redo record replayed on
//! open for sled, one transaction for PostgreSQL) and durably before
//! [`Sessions::commit`] returns. Nobody is told about a transition that a
//! crash could undo. On sled, concurrent commits share their flush (group
//! commit), so durable throughput grows with concurrency instead of being
//! capped at one disk sync per transition. Nothing outside this crate knows
//! sled or PostgreSQL.

mod backup;
mod chained;
mod documents;
mod group;
pub mod migrate;
mod postgres;
mod redo;
mod retention;
mod sled_store;
#[doc(hidden)]
pub mod testing;
mod traits;

pub use self::postgres::{probe as probe_postgres, PgOptions, PgStore, TakeOver};
pub use backup::BackupStats;
pub use documents::{append_receipt_unsynced, plan_document_path, sync_files, write_document_unsynced, DocumentError};
pub use group::{FlushReservation, FlushStats, PendingFlush};
pub use migrate::MigrateReport;
pub use plangate_audit::{Chain, Hash as AuditHash, Record as AuditRecord};
pub use retention::{PrunePolicy, PruneReport};
pub use sled_store::{CheckpointStats, Durability, SledStore, SCHEMA_VERSION};
pub use traits::{
    AuditLog, Cursors, Deliveries, Documents, EventKeys, MaintenanceStore, Namespaces, Outbox, PermissionRules, Proposals, ReplicaStore,
    SessionStore, Sessions, Store, Timers, WorkStore,
};

use plangate_engine::permission::StoredRule;
use plangate_engine::{ApprovalId, AuditEvent, Proposal, Question, Session, SessionKey, State, Timer, Timestamp, Transition};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("the database at {path} has schema version {found}, but this plangate needs {expected}; use a matching plangate release or move the data dir aside")]
    SchemaMismatch { path: String, found: String, expected: String },
    #[error("approval id {0} already exists; ids are never reused")]
    DuplicateId(ApprovalId),
    #[error("storage failed: {0}")]
    Sled(#[from] sled::Error),
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    #[error("a stored record is corrupt ({what}): {source}")]
    Corrupt { what: &'static str, source: serde_json::Error },
    #[error("the PostgreSQL database has schema version {found}, newer than this plangate knows ({known}); upgrade plangate on every replica before starting this one")]
    SchemaTooNew { found: i64, known: i64 },
    #[error("PostgreSQL: {0}")]
    Postgres(String),
    /// The tamper-evident chain cannot be kept or read; nothing unchained
    /// is written or handed out in its place.
    #[error("the audit chain: {0}")]
    AuditChain(String),
}

/// A conditional write the store declined because another writer got there
/// first. Not a failure — the store works and nothing was written — so it is
/// a value of [`Committed`], never a [`StoreError`]: a caller cannot mistake
/// "another replica decided first" for "the disk is broken" (which marks the
/// service degraded), and the compiler makes every caller say what it does
/// with each.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Preempted {
    /// Another writer (another replica) changed the session or namespace
    /// since it was loaded. Load again and re-apply.
    #[error("the session or namespace changed under this write (another replica committed first); nothing was written")]
    Conflict,
    /// The timer this transition fired was fired (and removed) by another
    /// replica first: that transition is the other replica's.
    #[error("the timer was already fired elsewhere; nothing was written")]
    TimerGone,
    /// An inbound event key of this transition was handled by another
    /// replica first (a platform's retry reaching a second replica).
    #[error("the event {0} was already handled; nothing was written")]
    AlreadyHandled(String),
}

/// How a conditional write ended when the store itself worked: written
/// (with what the write produced, e.g. outbox sequence numbers), or
/// declined whole because another writer came first.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed<T = ()> {
    Written(T),
    Preempted(Preempted),
}

impl<T> Committed<T> {
    /// The written value, or the preemption as an error (for callers to
    /// whom any preemption is a reason to stop, e.g. tests and tools).
    pub fn written(self) -> Result<T, Preempted> {
        match self {
            Committed::Written(value) => Ok(value),
            Committed::Preempted(p) => Err(p),
        }
    }
}

/// Everything one transition writes, atomically.
#[derive(Debug, Default, Clone)]
pub struct Commit {
    pub session: Option<Session>,
    /// Proposals to upsert (the latest and any retired one).
    pub proposals: Vec<Proposal>,
    /// A proposal id that must not exist yet (a new proposal).
    pub new_proposal: Option<ApprovalId>,
    pub questions: Vec<Question>,
    /// Timers to store and to drop: of the timers the records hold, the
    /// first of each chain ([`plangate_engine::chains`]).
    pub timers_add: Vec<Timer>,
    pub timers_remove: Vec<Timer>,
    pub audit: Vec<AuditEvent>,
    /// Keys of inbound events handled by this transition (update ids…).
    pub idempotency: Vec<String>,
    /// The store revision of the session when it was loaded (from
    /// [`Sessions::load_revision`]). A store shared by several processes writes
    /// the commit only if the session is still at this revision, else fails
    /// with [`Preempted::Conflict`]; `None` writes unconditionally.
    pub expected_revision: Option<u64>,
    /// The timer that caused this transition (also in `timers_remove`). A
    /// shared store declines the commit with [`Preempted::TimerGone`] when it
    /// is no longer there, so a timer fires once across replicas.
    pub fired: Option<Timer>,
    /// Work to do after the commit (chat jobs), opaque to the store. Written
    /// with the transition, so a crash between the commit and the work
    /// leaves the work to be resumed, never lost.
    pub outbox: Vec<OutboxEntry>,
    /// "Always allow" rules a person's answer created for the agent
    /// ([`plangate_engine::permission`]), stored with the answer.
    pub rules_add: Vec<StoredRule>,
}

/// One piece of after-commit work in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    /// From [`Outbox::generate_seq`]: entries resume in this order.
    pub seq: u64,
    pub work: Vec<u8>,
}

impl Commit {
    /// The records a transition produced. `fired` is the timer that caused
    /// it, removed in the same transaction so it never fires twice.
    pub fn of(transition: &Transition, before: &State, fired: Option<&Timer>) -> Commit {
        use plangate_engine::chains::{self, Chain};
        use plangate_engine::Effect;
        let mut commit = Commit { session: Some(transition.state.session.clone()), ..Commit::default() };
        if let Some(latest) = &transition.state.latest {
            if before.latest.as_ref().map(|p| p.approval_id) != Some(latest.approval_id) {
                commit.new_proposal = Some(latest.approval_id);
            }
            commit.proposals.push(latest.clone());
        }
        commit.proposals.extend(transition.retired.iter().cloned());
        commit.questions.extend(transition.answered.iter().cloned());
        if let Some(q) = &transition.state.session.pending_question {
            commit.questions.push(q.clone());
        }
        if let Some(q) = &transition.state.session.pending_permission {
            commit.questions.push(q.clone());
        }
        commit.rules_add.extend(transition.rule_added.iter().cloned());
        // Of the timers the session's records hold, the store keeps each
        // chain's first ([`chains`]); a subagent run's expiry is a chain of
        // its own, stored as scheduled.
        let (removed, added) = chains::kept_changes(before, &transition.state);
        (commit.timers_remove, commit.timers_add) = (removed, added);
        for effect in &transition.effects {
            match effect {
                Effect::Schedule(t) if t.kind.chain() == Chain::SubagentExpiry => commit.timers_add.push(t.clone()),
                Effect::Cancel(t) if t.kind.chain() == Chain::SubagentExpiry => commit.timers_remove.push(t.clone()),
                _ => {}
            }
        }
        commit.timers_remove.extend(fired.filter(|f| !commit.timers_remove.contains(f)).cloned());
        commit.fired = fired.cloned();
        commit.audit = transition.audit.clone();
        commit
    }
}

/// See [`ReplicaStore::subscribe_changes`].
pub type ChangeListener = std::sync::Arc<dyn Fn(Option<SessionKey>) + Send + Sync>;
/// See [`ReplicaStore::elect_leader`].
pub type LeaderListener = std::sync::Arc<dyn Fn(bool) + Send + Sync>;

/// Filters for [`AuditLog::audit`].
#[derive(Debug, Default, Clone)]
pub struct AuditQuery {
    pub agent: Option<String>,
    pub session_id: Option<String>,
    pub approval_id: Option<ApprovalId>,
    /// Newest entries, at most this many (0 = all).
    pub limit: usize,
    /// Only entries recorded at or after this time. sled, whose audit is
    /// one log in time order, seeks to it instead of reading the log from
    /// its end: an approval's trail asked with (about) its `created_at`
    /// reads what came since, not the whole history.
    pub since: Option<Timestamp>,
}

/// The store traits, for `use plangate_store::prelude::*` where a concrete
/// store's methods are called (a method is in scope only with its trait).
pub mod prelude {
    pub use crate::{
        AuditLog, Cursors, Deliveries, Documents, EventKeys, MaintenanceStore, Namespaces, Outbox, PermissionRules, Proposals,
        ReplicaStore, SessionStore, Sessions, Store, Timers, WorkStore,
    };
}

/// Where a proposal sits in a listing: listings run in `(created_at,
/// approval_id)` order, and a page starts after a position (the HTTP
/// API's `after` cursor encodes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PagePosition {
    pub created_at: Timestamp,
    pub approval_id: ApprovalId,
}

impl PagePosition {
    pub fn of(p: &Proposal) -> PagePosition {
        PagePosition { created_at: p.created_at, approval_id: p.approval_id }
    }
}

/// Whether a commit of [`Outbox::commit_numbered_unflushed`] is durable yet.
pub enum Flush {
    /// Durable: flushed before the call returned.
    Done,
    /// Written, not yet flushed: await [`flushed`].
    Pending(PendingFlush),
}

/// Wait until `flush` is durable. Waiters share flushes: one asynchronous
/// waiter at a time goes to a blocking thread and waits there as a blocking
/// writer does, leading the next flush when none runs
/// ([`Outbox::flush_lead`]); the others sleep until a flush ends,
/// without a thread of their own. A failed flush releases nobody: its
/// leader gets the error, and every other waiter flushes again.
pub async fn flushed(store: std::sync::Arc<dyn Store>, flush: Flush) -> Result<(), StoreError> {
    let Flush::Pending(pending) = flush else {
        return Ok(());
    };
    pending
        .wait(|reservation| {
            let store = store.clone();
            async move {
                tokio::task::spawn_blocking(move || store.flush_lead(reservation))
                    .await
                    .unwrap_or_else(|e| Err(StoreError::Unavailable(format!("the flush task failed: {e}"))))
            }
        })
        .await
}
