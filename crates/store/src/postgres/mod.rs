//! The PostgreSQL implementation of [`Store`]: several plangate processes
//! (replicas) share one database schema. [`PgStore`]'s documentation says
//! how sharing stays safe. One file per job: `open` (options, connecting,
//! the doctor's probe), `connection` (the pool and its runtime, prepared
//! statements, retries, errors), `sql` (every statement and the row conversions),
//! `commit` (a transition's transaction, its statements pipelined), `reads`, `claims` (leased
//! timers and outbox entries), `records` (writes outside a commit),
//! `migrations` (the tables), `notify` and `listen` (change notifications sent
//! and heard), `leader`
//! (the elections).

mod chain;
mod claims;
mod commit;
mod connection;
mod leader;
mod listen;
pub(crate) mod migrations;
mod notify;
mod open;
mod reads;
mod records;
mod sql;

pub use claims::TakeOver;
pub(crate) use connection::{Failure, Shared};
pub use open::{probe, PgOptions};
pub(crate) use sql::timer_identity;

use crate::{
    AuditLog, AuditQuery, ChangeListener, Commit, Committed, Cursors, Deliveries, Documents, EventKeys, LeaderListener, MaintenanceStore,
    Namespaces, Outbox, OutboxEntry, PagePosition, PermissionRules, Proposals, ReplicaStore, Sessions, StoreError, Timers,
};
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::permission::StoredRule;
use plangate_engine::{ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, Timestamp};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A [`Store`] in a PostgreSQL schema, shared by any number of plangate
/// processes (replicas).
///
/// What sharing needs beyond the sled store's semantics, and how it is done:
///
/// - **Lost updates.** Every session row carries a `revision`. A commit with
///   [`Commit::expected_revision`] writes only if the row is still at that
///   revision (`UPDATE … WHERE revision = r`, or an insert that must not
///   find the row), else is declined with [`Preempted::Conflict`]; the caller
///   loads again and re-applies. Namespaces, merged outside any commit,
///   carry a revision too ([`Namespaces::set_namespace`]).
/// - **A timer fired twice.** [`Commit::fired`] is deleted first; when it is
///   gone (another replica fired it) the commit is declined with
///   [`Preempted::TimerGone`]. Due timers are handed out with leases
///   ([`Timers::claim_due_timers`], `FOR UPDATE SKIP LOCKED`), so replicas do
///   not even try the same ones side by side. [`Timers::next_timer`] skips
///   timers another live replica holds, so a scheduler must look again at
///   least once per lease (a holder that dies frees its timers then).
/// - **An inbound event handled twice.** Idempotency keys are inserted, not
///   overwritten: a key already there declines the commit with
///   [`Preempted::AlreadyHandled`], and exactly one `record_once` wins.
/// - **After-commit work.** Outbox entries are written leased to the
///   committing replica; [`Outbox::claim_outbox`] hands out only entries
///   nobody holds or whose holder's lease ran out (it died).
/// - **Waking waiters of other replicas.** A commit's session key is sent
///   on `plangate_<schema>` (`NOTIFY`): by its own transaction when it is
///   the only commit of the process under way, else once it committed,
///   batched with the others' by one sender (see `notify` for why);
///   [`ReplicaStore::subscribe_changes`] listens (see `listen`).
/// - **One chat poller.** [`ReplicaStore::elect_leader`] holds a session-level
///   advisory lock on a dedicated connection (see `leader`).
///
/// Every commit is one transaction: all its writes or none, and durable
/// when it returns (`synchronous_commit` on, PostgreSQL's default). Unlike
/// sled, an idempotency key already stored refuses the commit (sled
/// overwrites it), and `expected_revision` is checked only when the commit
/// writes a session. Serialization failures and deadlocks come back as
/// [`Preempted::Conflict`] (nothing was written: load again).
///
/// **A synchronous face on an asynchronous client.** The store's trait is
/// synchronous (so is sled, the default), and the server calls it from
/// `spawn_blocking` threads. Inside, the pooled connections are
/// `tokio-postgres` clients in a `deadpool` pool on a one-worker runtime
/// of the store's own; each method waits on it (`Handle::block_on`). What
/// that buys: a commit's statements go out in one flight (pipelined: one
/// round trip for all of them, not one each), no pool thread of r2d2's,
/// and dropping the store anywhere (the pool used to need a thread of its
/// own to close). Never call it from an async worker thread: waiting
/// there panics, as it did with the blocking client.
///
/// **No TLS.** Connections are plain TCP (`NoTls`): run PostgreSQL on
/// loopback or a private network, or behind a TLS tunnel.
///
/// Plan documents stay files under `<data_dir>/plans` on each replica's
/// disk; only their paths are in the database.
pub struct PgStore {
    pool: connection::Pool,
    /// Where the pooled connections live (after `pool`: dropped last).
    runtime: connection::StoreRuntime,
    shared: Arc<Shared>,
    /// The lease in seconds, as `make_interval` takes it.
    lease_secs: f64,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.shared.target)
            .field("schema", &self.shared.schema)
            .field("replica", &self.shared.replica)
            .finish()
    }
}

impl Drop for PgStore {
    /// The notifications still queued are sent (for a moment at most: a
    /// store dropped just after its commit still wakes the other
    /// replicas), then the listener, leader and notifier end (a leader's
    /// lock is released with its connection).
    fn drop(&mut self) {
        self.shared.notifier.drain(Duration::from_millis(500));
        self.shared.closed.store(true, Ordering::Release);
    }
}

/// Each operation lives in the file of its job (`reads`, `commit`,
/// `claims`, `records`); this is the table of contents.
impl Sessions for PgStore {
    fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        Ok(self.load_revision(key)?.0)
    }

    fn load_revision(&self, key: &SessionKey) -> Result<(State, u64), StoreError> {
        reads::load_revision(self, key)
    }

    fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        reads::sessions(self)
    }

    fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError> {
        reads::question(self, id)
    }

    fn commit(&self, commit: Commit) -> Result<Committed, StoreError> {
        commit::commit(self, commit)
    }

    /// Every write was durable when it returned (`synchronous_commit`).
    /// Every commit is durable when it returns; what may still be queued
    /// is the notifications to the other replicas (see `notify`), sent
    /// before a graceful shutdown ends.
    fn flush(&self) -> Result<(), StoreError> {
        if self.shared.notifier.drain(Duration::from_secs(2)) {
            Ok(())
        } else {
            Err(StoreError::Unavailable(format!(
                "the other replicas could not be notified of the last changes within 2s; is PostgreSQL at {} reachable? \
                 (their waiters see those changes at their next read)",
                self.shared.target
            )))
        }
    }
}

impl Proposals for PgStore {
    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        reads::proposal(self, id)
    }

    fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError> {
        reads::proposals_by_prefix(self, hex_prefix)
    }

    fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        reads::proposals(self, status)
    }

    fn visit_proposals(&self, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError> {
        reads::visit_proposals(self, status, visit)
    }

    fn proposals_page(
        &self,
        status: Option<DecisionStatus>,
        after: Option<PagePosition>,
        limit: usize,
    ) -> Result<Vec<Proposal>, StoreError> {
        reads::proposals_page(self, status, after, limit)
    }

    fn latest_proposals(&self, status: DecisionStatus, limit: usize) -> Result<Vec<Proposal>, StoreError> {
        reads::latest_proposals(self, status, limit)
    }

    fn count_proposals(&self, status: DecisionStatus) -> Result<u64, StoreError> {
        reads::count_proposals(self, status)
    }
}

impl AuditLog for PgStore {
    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        records::append_audit(self, events)
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        reads::audit(self, query)
    }

    fn audit_head(&self) -> Result<Option<(u64, crate::AuditHash)>, StoreError> {
        reads::audit_head(self)
    }

    fn visit_audit_chain(&self, since: Option<Timestamp>, visit: &mut dyn FnMut(crate::AuditRecord) -> bool) -> Result<(), StoreError> {
        reads::visit_audit_chain(self, since, visit)
    }
}

impl EventKeys for PgStore {
    fn seen(&self, key: &str) -> Result<bool, StoreError> {
        reads::seen(self, key)
    }

    fn mark_seen(&self, key: &str) -> Result<(), StoreError> {
        records::mark_seen(self, key)
    }

    fn record_once(&self, key: &str) -> Result<bool, StoreError> {
        records::record_once(self, key)
    }
}

impl Cursors for PgStore {
    fn cursor(&self, key: &str) -> Result<Option<String>, StoreError> {
        reads::cursor(self, key)
    }

    fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError> {
        records::set_cursor(self, key, value)
    }

    fn cursor_or_init(&self, key: &str, value: &str) -> Result<String, StoreError> {
        records::cursor_or_init(self, key, value)
    }

    fn cursors_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
        reads::cursors_with_prefix(self, prefix)
    }

    fn swap_cursor(&self, key: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, StoreError> {
        records::swap_cursor(self, key, expected, value)
    }
}

impl Namespaces for PgStore {
    fn namespace_revision(&self, name: &str) -> Result<(Namespace, u64), StoreError> {
        reads::namespace_revision(self, name)
    }

    fn set_namespace(&self, name: &str, ns: &Namespace, expected_revision: u64) -> Result<Committed, StoreError> {
        records::set_namespace(self, name, ns, expected_revision)
    }
}

impl PermissionRules for PgStore {
    fn permission_rules(&self, agent: &str) -> Result<Vec<StoredRule>, StoreError> {
        reads::permission_rules(self, agent)
    }

    fn remove_permission_rule(&self, agent: &str, id: &str) -> Result<bool, StoreError> {
        records::remove_permission_rule(self, agent, id)
    }
}

impl Documents for PgStore {
    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError> {
        reads::document_path(self, id)
    }

    fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError> {
        records::set_document_path(self, id, path)
    }
}

impl Timers for PgStore {
    fn next_timer(&self) -> Result<Option<Timer>, StoreError> {
        reads::next_timer(self)
    }

    fn due_timers_page(&self, now: Timestamp, after: Option<&Timer>, limit_to: usize) -> Result<Vec<Timer>, StoreError> {
        reads::due_timers_page(self, now, after, limit_to)
    }

    fn claim_due_timers(&self, now: Timestamp, after: Option<&Timer>, limit_to: usize) -> Result<Vec<Timer>, StoreError> {
        claims::claim_due_timers(self, now, after, limit_to)
    }

    fn timers(&self) -> Result<Vec<Timer>, StoreError> {
        reads::timers(self)
    }

    fn remove_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        records::remove_timer(self, timer)
    }

    fn remove_timers(&self, timers: &[Timer]) -> Result<(), StoreError> {
        records::remove_timers(self, timers)
    }
}

impl Outbox for PgStore {
    fn generate_seq(&self) -> Result<u64, StoreError> {
        records::generate_seq(self)
    }

    fn generate_seqs(&self, n: usize) -> Result<Vec<u64>, StoreError> {
        records::generate_seqs(self, n)
    }

    fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        reads::outbox(self)
    }

    fn claim_outbox(&self, limit_to: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        claims::claim_outbox(self, limit_to)
    }

    fn claim_outbox_page(&self, after: Option<u64>, limit_to: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        claims::claim_outbox_page(self, after, limit_to)
    }

    fn remove_outbox(&self, seq: u64) -> Result<(), StoreError> {
        records::remove_outbox(self, seq)
    }

    fn commit_numbered(
        &self,
        commit: Commit,
        work: Vec<Vec<u8>>,
        numbered: &mut dyn FnMut(&[u64]),
    ) -> Result<Committed<Vec<u64>>, StoreError> {
        commit::commit_numbered(self, commit, work, numbered)
    }

    fn remove_outbox_many(&self, seqs: &[u64]) -> Result<(), StoreError> {
        records::remove_outbox_many(self, seqs)
    }
}

impl Deliveries for PgStore {
    fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        reads::deliveries(self, id)
    }

    fn add_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        records::add_delivery(self, id, delivery)
    }

    fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        reads::question_deliveries(self, id)
    }

    fn add_question_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        records::add_question_delivery(self, id, delivery)
    }
}

impl ReplicaStore for PgStore {
    fn renew_leases(&self) -> Result<(), StoreError> {
        claims::renew_leases(self)
    }

    fn shared(&self) -> bool {
        true
    }

    fn subscribe_changes(&self, on_change: ChangeListener) -> Result<(), StoreError> {
        listen::spawn(self.shared.clone(), on_change)
    }

    fn elect_leader(&self, role: &str, on_change: LeaderListener) -> Result<(), StoreError> {
        leader::spawn(self.shared.clone(), role, on_change)
    }
}

impl MaintenanceStore for PgStore {
    fn snapshot(&self, data_dir: &std::path::Path, out: &mut dyn std::io::Write) -> Result<crate::BackupStats, StoreError> {
        let _ = (data_dir, out);
        Err(StoreError::Unavailable(format!(
            "plangate backup snapshots the sled store only; back up PostgreSQL with `pg_dump --schema={}` and copy {}/plans",
            self.shared.schema,
            data_dir.display()
        )))
    }

    fn prune(&self, data_dir: &std::path::Path, policy: &crate::PrunePolicy) -> Result<crate::PruneReport, StoreError> {
        let _ = (data_dir, policy);
        Err(StoreError::Unavailable("pruning is not supported on PostgreSQL yet; nothing was removed".into()))
    }
}
