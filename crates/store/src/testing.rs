//! [`Faulty`], a [`Store`] wrapper for tests that makes a real store
//! misbehave the ways production ones do: it can fail its durable writes
//! (a full disk), pretend to be shared by replicas and lose races to them
//! (`Conflict`), or end a commit as scripted (preempted: `TimerGone`,
//! `AlreadyHandled`; failed: a dropped connection).
//!
//! Not for production use: hidden from the documentation, compiled always
//! so that tests of other crates need no feature (and no rebuild of this
//! crate) to use it.

use crate::{
    AuditHash, AuditLog, AuditQuery, AuditRecord, BackupStats, ChangeListener, Commit, Committed, Cursors, Deliveries, Documents,
    EventKeys, LeaderListener, MaintenanceStore, Namespaces, Outbox, OutboxEntry, PagePosition, PermissionRules, Preempted, Proposals,
    PrunePolicy, PruneReport, ReplicaStore, Sessions, Store, StoreError, Timers,
};
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::permission::StoredRule;
use plangate_engine::{ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, Timestamp};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs before the next commit attempt; may commit as another replica
/// ([`Faulty::commit_elsewhere`]) or say how that attempt ends instead.
pub type BeforeCommit<S> = Box<dyn FnOnce(&Faulty<S>) -> Option<Scripted> + Send>;

/// How a scripted commit attempt ends, instead of reaching the store.
#[derive(Debug)]
pub enum Scripted {
    /// Declined: another replica came first.
    Preempt(Preempted),
    /// Failed: the store is in trouble.
    Fail(StoreError),
}

/// A store (`inner`) with faults injected; see the module documentation.
///
/// Made with [`Faulty::new`], it forwards everything until told otherwise.
/// Made with [`Faulty::shared`], it says it is shared and keeps ONE
/// revision for every session (coarser than a real shared store, which
/// only makes conflicts likelier): a commit whose
/// [`Commit::expected_revision`] is not the current one fails with
/// [`Preempted::Conflict`], and elections are recorded for the test to
/// decide ([`Faulty::elections`]) instead of being won at once.
pub struct Faulty<S> {
    inner: S,
    shared: bool,
    revision: AtomicU64,
    broken: AtomicBool,
    script: Mutex<VecDeque<BeforeCommit<S>>>,
    attempts: AtomicUsize,
    elections: Mutex<Vec<(String, LeaderListener)>>,
}

/// What the broken writes say: the failure a full disk gives.
const DISK_FULL: &str = "No space left on device (simulated)";

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<S: Store> Faulty<S> {
    /// `inner`, forwarded to as it is.
    pub fn new(inner: S) -> Faulty<S> {
        Faulty {
            inner,
            shared: false,
            revision: AtomicU64::new(0),
            broken: AtomicBool::new(false),
            script: Mutex::new(VecDeque::new()),
            attempts: AtomicUsize::new(0),
            elections: Mutex::new(Vec::new()),
        }
    }

    /// `inner` as if other replicas shared it (see [`Faulty`]).
    pub fn shared(inner: S) -> Faulty<S> {
        Faulty { shared: true, ..Faulty::new(inner) }
    }

    /// The wrapped store, to read or write past the faults.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// While `broken`, commits, timer removals and flushes fail with
    /// [`StoreError::Unavailable`] as on a full disk, writing nothing.
    pub fn break_writes(&self, broken: bool) {
        self.broken.store(broken, Ordering::SeqCst);
    }

    /// Queue `f` to run before the next commit attempt (one per attempt,
    /// in order).
    pub fn before_next_commit(&self, f: impl FnOnce(&Faulty<S>) -> Option<Scripted> + Send + 'static) {
        lock(&self.script).push_back(Box::new(f));
    }

    /// Drop what [`Faulty::before_next_commit`] queued and did not run.
    pub fn clear_script(&self) {
        lock(&self.script).clear();
    }

    /// Commit as another replica would: unconditionally, moving the revision.
    pub fn commit_elsewhere(&self, commit: Commit) -> Result<Committed, StoreError> {
        let committed = self.inner.commit(commit)?;
        self.bump_revision();
        Ok(committed)
    }

    /// Another replica touched every session (harmlessly): the next commit
    /// based on an earlier load conflicts.
    pub fn bump_revision(&self) {
        self.revision.fetch_add(1, Ordering::SeqCst);
    }

    /// How many times [`Sessions::commit`] was called.
    pub fn commit_attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    /// The elections entered so far (role and listener), on a shared one.
    pub fn elections(&self) -> Vec<(String, LeaderListener)> {
        lock(&self.elections).clone()
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(DISK_FULL.into()));
        }
        Ok(())
    }
}

/// Methods that reach the wrapped store as they are: `fn`s of the trait
/// written as in it, ending in `;`.
macro_rules! forward {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&self $(, $arg: $ty)*) -> $ret {
                self.inner.$name($($arg),*)
            }
        )*
    };
}

impl<S: Store> Sessions for Faulty<S> {
    fn commit(&self, commit: Commit) -> Result<Committed, StoreError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let next = lock(&self.script).pop_front();
        match next.and_then(|f| f(self)) {
            Some(Scripted::Preempt(preempted)) => return Ok(Committed::Preempted(preempted)),
            Some(Scripted::Fail(error)) => return Err(error),
            None => {}
        }
        self.check()?;
        if !self.shared {
            return self.inner.commit(commit);
        }
        if commit.expected_revision != Some(self.revision.load(Ordering::SeqCst)) {
            return Ok(Committed::Preempted(Preempted::Conflict));
        }
        self.commit_elsewhere(commit)
    }

    fn load_revision(&self, key: &SessionKey) -> Result<(State, u64), StoreError> {
        if !self.shared {
            return self.inner.load_revision(key);
        }
        let revision = self.revision.load(Ordering::SeqCst);
        Ok((self.inner.load(key)?, revision))
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.check()?;
        self.inner.flush()
    }

    forward! {
        fn load(&self, key: &SessionKey) -> Result<State, StoreError>;
        fn sessions(&self) -> Result<Vec<Session>, StoreError>;
        fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError>;
    }
}

impl<S: Store> Proposals for Faulty<S> {
    forward! {
        fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError>;
        fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError>;
        fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError>;
        fn visit_proposals(&self, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError>;
        fn count_proposals(&self, status: DecisionStatus) -> Result<u64, StoreError>;
        fn proposals_page(&self, status: Option<DecisionStatus>, after: Option<PagePosition>, limit: usize) -> Result<Vec<Proposal>, StoreError>;
        fn latest_proposals(&self, status: DecisionStatus, limit: usize) -> Result<Vec<Proposal>, StoreError>;
    }
}

impl<S: Store> AuditLog for Faulty<S> {
    forward! {
        fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError>;
        fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError>;
        fn audit_head(&self) -> Result<Option<(u64, AuditHash)>, StoreError>;
        fn visit_audit_chain(&self, since: Option<Timestamp>, visit: &mut dyn FnMut(AuditRecord) -> bool) -> Result<(), StoreError>;
    }
}

impl<S: Store> EventKeys for Faulty<S> {
    forward! {
        fn seen(&self, key: &str) -> Result<bool, StoreError>;
        fn mark_seen(&self, key: &str) -> Result<(), StoreError>;
        fn record_once(&self, key: &str) -> Result<bool, StoreError>;
    }
}

impl<S: Store> Cursors for Faulty<S> {
    forward! {
        fn cursor(&self, key: &str) -> Result<Option<String>, StoreError>;
        fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError>;
        fn cursor_or_init(&self, key: &str, value: &str) -> Result<String, StoreError>;
        fn cursors_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError>;
        fn swap_cursor(&self, key: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, StoreError>;
    }
}

impl<S: Store> Namespaces for Faulty<S> {
    forward! {
        fn namespace(&self, name: &str) -> Result<Namespace, StoreError>;
        fn namespace_revision(&self, name: &str) -> Result<(Namespace, u64), StoreError>;
        fn set_namespace(&self, name: &str, ns: &Namespace, expected_revision: u64) -> Result<Committed, StoreError>;
    }
}

impl<S: Store> PermissionRules for Faulty<S> {
    forward! {
        fn permission_rules(&self, agent: &str) -> Result<Vec<StoredRule>, StoreError>;
        fn remove_permission_rule(&self, agent: &str, id: &str) -> Result<bool, StoreError>;
    }
}

impl<S: Store> Documents for Faulty<S> {
    forward! {
        fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError>;
        fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError>;
    }
}

impl<S: Store> Timers for Faulty<S> {
    fn remove_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        self.check()?;
        self.inner.remove_timer(timer)
    }

    fn remove_timers(&self, timers: &[Timer]) -> Result<(), StoreError> {
        self.check()?;
        self.inner.remove_timers(timers)
    }

    forward! {
        fn next_timer(&self) -> Result<Option<Timer>, StoreError>;
        fn due_timers_page(&self, now: Timestamp, after: Option<&Timer>, limit: usize) -> Result<Vec<Timer>, StoreError>;
        fn timers(&self) -> Result<Vec<Timer>, StoreError>;
        fn claim_due_timers(&self, now: Timestamp, after: Option<&Timer>, limit: usize) -> Result<Vec<Timer>, StoreError>;
    }
}

/// `commit_numbered` (and its unflushed form) are the trait's defaults, so
/// they commit through [`Faulty`]'s own `commit`, faults and all.
impl<S: Store> Outbox for Faulty<S> {
    forward! {
        fn generate_seq(&self) -> Result<u64, StoreError>;
        fn generate_seqs(&self, n: usize) -> Result<Vec<u64>, StoreError>;
        fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError>;
        fn remove_outbox(&self, seq: u64) -> Result<(), StoreError>;
        fn remove_outbox_many(&self, seqs: &[u64]) -> Result<(), StoreError>;
        fn claim_outbox(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError>;
        fn claim_outbox_page(&self, after: Option<u64>, limit: usize) -> Result<Vec<OutboxEntry>, StoreError>;
    }
}

impl<S: Store> Deliveries for Faulty<S> {
    forward! {
        fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError>;
        fn add_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError>;
        fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError>;
        fn add_question_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError>;
    }
}

impl<S: Store> ReplicaStore for Faulty<S> {
    fn shared(&self) -> bool {
        self.shared || self.inner.shared()
    }

    fn elect_leader(&self, role: &str, on_change: LeaderListener) -> Result<(), StoreError> {
        if !self.shared {
            return self.inner.elect_leader(role, on_change);
        }
        lock(&self.elections).push((role.to_string(), on_change));
        Ok(())
    }

    forward! {
        fn renew_leases(&self) -> Result<(), StoreError>;
        fn subscribe_changes(&self, on_change: ChangeListener) -> Result<(), StoreError>;
    }
}

impl<S: Store> MaintenanceStore for Faulty<S> {
    forward! {
        fn snapshot(&self, data_dir: &Path, out: &mut dyn std::io::Write) -> Result<BackupStats, StoreError>;
        fn prune(&self, data_dir: &Path, policy: &PrunePolicy) -> Result<PruneReport, StoreError>;
    }
}

/// Every record of the store's audit chain, in chain order (panics when
/// the store cannot be read: for tests).
pub fn audit_chain(store: &dyn AuditLog) -> Vec<AuditRecord> {
    let mut records = Vec::new();
    store
        .visit_audit_chain(None, &mut |r| {
            records.push(r);
            true
        })
        .expect("the audit chain reads");
    records
}
