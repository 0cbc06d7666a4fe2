//! The store's traits, one per job, none wider than fifteen methods, so
//! a reader finds the methods of one job together and a caller that needs
//! one job can say so. A backend implements each; the combinations follow
//! by blanket implementations:
//!
//! - [`SessionStore`]: what a transition reads and writes. [`Sessions`]
//!   (state, questions, the atomic [`Commit`]), [`Proposals`],
//!   [`AuditLog`], [`EventKeys`], [`Cursors`], [`Namespaces`],
//!   [`PermissionRules`], [`Documents`].
//! - [`WorkStore`]: that, and the work a commit leaves for later:
//!   [`Timers`], the [`Outbox`], [`Deliveries`].
//! - [`ReplicaStore`] (several processes on one store) and
//!   [`MaintenanceStore`] (backup, retention).
//! - [`Store`]: all of them.
//!
//! A method is callable on a concrete store only with its trait in scope:
//! `use plangate_store::prelude::*`. Through a bound or a trait object
//! (`T: Store`, `dyn SessionStore`) every part's methods are.

use crate::{
    AuditHash, AuditQuery, AuditRecord, BackupStats, ChangeListener, Commit, Committed, Flush, FlushReservation, LeaderListener,
    OutboxEntry, PagePosition, PrunePolicy, PruneReport, StoreError,
};
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::permission::StoredRule;
use plangate_engine::{ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, Timestamp};

/// Everything a store does. Implement the parts; `Store` follows.
pub trait Store: SessionStore + WorkStore + ReplicaStore + MaintenanceStore {}

impl<T: SessionStore + WorkStore + ReplicaStore + MaintenanceStore + ?Sized> Store for T {}

/// Sessions and what their transitions write: state, proposals, questions,
/// the audit, event keys, cursors, namespaces, rules, document paths; one
/// atomic [`Commit`] per transition.
pub trait SessionStore: Sessions + Proposals + AuditLog + EventKeys + Cursors + Namespaces + PermissionRules + Documents {}

impl<T: Sessions + Proposals + AuditLog + EventKeys + Cursors + Namespaces + PermissionRules + Documents + ?Sized> SessionStore for T {}

/// The work a commit leaves for later: due timers, the outbox of chat jobs,
/// and where each card and question was delivered.
pub trait WorkStore: SessionStore + Timers + Outbox + Deliveries {}

impl<T: SessionStore + Timers + Outbox + Deliveries + ?Sized> WorkStore for T {}

/// A session's state and what its transitions write: load it (with the
/// revision a shared store checks), commit a transition atomically and
/// durably, read the questions it asked.
pub trait Sessions: Send + Sync {
    /// The session with its latest proposal; a never-seen session is new.
    fn load(&self, key: &SessionKey) -> Result<State, StoreError>;

    /// [`Sessions::load`] and the session's store revision, to put in
    /// [`Commit::expected_revision`].
    fn load_revision(&self, key: &SessionKey) -> Result<(State, u64), StoreError> {
        Ok((self.load(key)?, 0))
    }

    fn sessions(&self) -> Result<Vec<Session>, StoreError>;

    fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError>;

    /// Write a transition atomically and durably.
    fn commit(&self, commit: Commit) -> Result<Committed, StoreError>;

    /// Make everything written so far durable.
    fn flush(&self) -> Result<(), StoreError>;
}

/// The proposals (approvals) the sessions made: by id, by id prefix, by
/// status, in pages and counted; and the pending count a clean shutdown
/// leaves for the next start. Written by [`Sessions::commit`].
pub trait Proposals: Send + Sync {
    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError>;

    /// Proposals whose id starts with `hex_prefix` (what `#a1b2` means).
    fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError>;

    fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError>;

    /// Visit every proposal with `status` (all when `None`) one at a time,
    /// in no particular order: a listing of 100,000 approvals never holds
    /// 100,000 decoded plans at once.
    fn visit_proposals(&self, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError> {
        self.proposals(status)?.iter().for_each(visit);
        Ok(())
    }

    /// How many proposals have `status`, without building their plans: the
    /// pending gauge counted at start (100,000 decoded plans cost about a
    /// second and hundreds of MiB the process then keeps).
    fn count_proposals(&self, status: DecisionStatus) -> Result<u64, StoreError> {
        let mut count = 0;
        self.visit_proposals(Some(status), &mut |_| count += 1)?;
        Ok(count)
    }

    /// One page of a listing: at most `limit` proposals with `status` (all
    /// when `None`) in `(created_at, approval_id)` order, starting after
    /// `after`. The answer's size is bounded by `limit` whatever the store
    /// holds. The default visits every proposal once, keeping only the
    /// `limit` earliest in a heap (sled: no index by time, so a page costs a
    /// scan but never more memory than the page); PostgreSQL answers from
    /// its `(status, created_at)` index.
    fn proposals_page(
        &self,
        status: Option<DecisionStatus>,
        after: Option<PagePosition>,
        limit: usize,
    ) -> Result<Vec<Proposal>, StoreError> {
        let mut heap: std::collections::BinaryHeap<ByPosition> = std::collections::BinaryHeap::new();
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.visit_proposals(status, &mut |p| {
            let at = PagePosition::of(p);
            if after.is_some_and(|a| at <= a) || (heap.len() == limit && heap.peek().is_some_and(|top| at >= top.0)) {
                return;
            }
            heap.push(ByPosition(at, Box::new(p.clone())));
            if heap.len() > limit {
                heap.pop();
            }
        })?;
        Ok(heap.into_sorted_vec().into_iter().map(|b| *b.1).collect())
    }

    /// The `limit` proposals with `status` proposed last, newest first
    /// (the web inbox's recent decisions): bounded by `limit` whatever the
    /// store holds. The default visits every proposal, keeping the `limit`
    /// latest in a heap; sled reads its status index backwards, PostgreSQL
    /// its `(status, created_at)` index.
    fn latest_proposals(&self, status: DecisionStatus, limit: usize) -> Result<Vec<Proposal>, StoreError> {
        let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<ByPosition>> = std::collections::BinaryHeap::new();
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.visit_proposals(Some(status), &mut |p| {
            let at = PagePosition::of(p);
            if heap.len() == limit && heap.peek().is_some_and(|lowest| at <= lowest.0 .0) {
                return;
            }
            heap.push(std::cmp::Reverse(ByPosition(at, Box::new(p.clone()))));
            if heap.len() > limit {
                heap.pop();
            }
        })?;
        Ok(heap.into_sorted_vec().into_iter().map(|r| *r.0 .1).collect())
    }
}

/// The tamper-evident audit: records appended outside a transition,
/// queried, and read back with their chain (`plangate-audit`). A
/// transition's own records are written by [`Sessions::commit`].
pub trait AuditLog: Send + Sync {
    /// Append audit records that belong to no transition (refused attempts).
    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError>;

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError>;

    /// The audit chain's head: its last record's number and hash (`None`
    /// while the audit is empty). What a checkpoint signs.
    fn audit_head(&self) -> Result<Option<(u64, AuditHash)>, StoreError> {
        Err(StoreError::AuditChain("this store keeps no audit chain".into()))
    }

    /// Visit the chained audit records in chain order, from the first
    /// recorded at or after `since` (all when `None`), until `visit`
    /// returns `false`. Read in pages, so an export of a million records
    /// never holds them at once nor holds the store for its length. A
    /// record without its chain is an error, never handed out.
    fn visit_audit_chain(&self, since: Option<Timestamp>, visit: &mut dyn FnMut(AuditRecord) -> bool) -> Result<(), StoreError> {
        let _ = (since, visit);
        Err(StoreError::AuditChain("this store keeps no audit chain".into()))
    }
}

/// Keys of inbound events already handled (a platform's retries) and of
/// side effects already done (a nudge sent): each counts once.
pub trait EventKeys: Send + Sync {
    /// Whether an inbound event key was already handled.
    fn seen(&self, key: &str) -> Result<bool, StoreError>;

    /// Record a key handled without a transition (e.g. a refused click).
    fn mark_seen(&self, key: &str) -> Result<(), StoreError>;

    /// Record that a side effect happened (a nudge sent), durably; `false`
    /// when it had been recorded before.
    fn record_once(&self, key: &str) -> Result<bool, StoreError>;
}

/// Small named values kept beside the sessions (the web secret, paired
/// destinations, pairing codes, passkeys), changed by compare and swap
/// where several writers may race.
pub trait Cursors: Send + Sync {
    fn cursor(&self, key: &str) -> Result<Option<String>, StoreError>;

    fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// The value of cursor `key`, setting it to `value` first when absent;
    /// atomic across processes on a shared store (replicas that start at
    /// once agree on one value, e.g. the web secret). The default suits a
    /// store one process owns.
    fn cursor_or_init(&self, key: &str, value: &str) -> Result<String, StoreError> {
        match self.cursor(key)? {
            Some(v) => Ok(v),
            None => {
                self.set_cursor(key, value)?;
                Ok(value.to_string())
            }
        }
    }

    /// Every cursor whose key starts with `prefix`, in key order: the small
    /// records kept beside the sessions (paired destinations, pairing
    /// codes) are cursors under a prefix of their own, so backups and
    /// `migrate` carry them like any cursor.
    fn cursors_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError>;

    /// Compare and swap cursor `key`: write `value` (`None` removes it) only
    /// if it holds `expected` now (`None`: absent), durably; `false`, and
    /// nothing written, otherwise. The one way to change a record that
    /// several replicas (or two chats at once) may change: a single-use
    /// code is taken by exactly one caller, an edit based on a stale read
    /// is refused. On a shared store a change notifies the other replicas
    /// (a change of no session: they re-read what they cache).
    fn swap_cursor(&self, key: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, StoreError>;
}

/// Step lists shared across sessions (`plangate_engine::namespace`),
/// written at a revision so a merge based on a stale read is refused.
pub trait Namespaces: Send + Sync {
    fn namespace(&self, name: &str) -> Result<Namespace, StoreError> {
        Ok(self.namespace_revision(name)?.0)
    }

    /// The namespace and its store revision, to pass to
    /// [`Namespaces::set_namespace`] (0: none stored yet).
    fn namespace_revision(&self, name: &str) -> Result<(Namespace, u64), StoreError>;

    /// Write `ns` only if the namespace is still at `expected_revision`
    /// (read with [`Namespaces::namespace_revision`]), else decline with
    /// [`Preempted::Conflict`](crate::Preempted::Conflict) and write nothing: a merge based on a stale
    /// read must be done again on what the other writer stored. Replicas
    /// merge one namespace side by side, so a plain overwrite would lose
    /// steps that were acknowledged.
    fn set_namespace(&self, name: &str, ns: &Namespace, expected_revision: u64) -> Result<Committed, StoreError>;
}

/// The "always allow" rules people's answers created, per agent
/// (`plangate_engine::permission`). Added by [`Sessions::commit`]
/// ([`Commit::rules_add`]).
pub trait PermissionRules: Send + Sync {
    /// The "always allow" rules stored for `agent`, oldest first
    /// ([`plangate_engine::permission`]).
    fn permission_rules(&self, agent: &str) -> Result<Vec<StoredRule>, StoreError>;

    /// Remove `agent`'s stored rule `id`; `false` when there is none.
    fn remove_permission_rule(&self, agent: &str, id: &str) -> Result<bool, StoreError>;
}

/// Where each approval's plan document lies under `data_dir/plans` (the
/// files themselves are `crate::documents`'s).
pub trait Documents: Send + Sync {
    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError>;

    fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError>;
}

/// Persisted timers (the first of each chain, `plangate_engine::chains`):
/// the earliest, the due ones in pages, leased on a shared store. Added and
/// removed with a transition by [`Sessions::commit`].
pub trait Timers: Send + Sync {
    /// The earliest timer, if any.
    fn next_timer(&self) -> Result<Option<Timer>, StoreError>;

    /// At most `limit` timers due at or before `now`, earliest first,
    /// starting after `after` (exclusive). The scheduler pages through a
    /// backlog this way, so 100,000 overdue timers never sit in memory at once.
    fn due_timers_page(&self, now: Timestamp, after: Option<&Timer>, limit: usize) -> Result<Vec<Timer>, StoreError>;

    /// Every timer due at or before `now`, earliest first.
    fn due_timers(&self, now: Timestamp) -> Result<Vec<Timer>, StoreError> {
        self.due_timers_page(now, None, usize::MAX)
    }

    fn timers(&self) -> Result<Vec<Timer>, StoreError>;

    /// Remove a timer outside a transition (e.g. one whose session vanished).
    fn remove_timer(&self, timer: &Timer) -> Result<(), StoreError>;

    /// Remove several timers outside a transition, durably, all or none.
    fn remove_timers(&self, timers: &[Timer]) -> Result<(), StoreError> {
        timers.iter().try_for_each(|t| self.remove_timer(t))
    }

    /// Like [`Timers::due_timers_page`], but each timer returned is leased to
    /// this process (other processes skip it until the lease runs out), so
    /// replicas do not fire the same timers side by side.
    fn claim_due_timers(&self, now: Timestamp, after: Option<&Timer>, limit: usize) -> Result<Vec<Timer>, StoreError> {
        self.due_timers_page(now, after, limit)
    }
}

/// The after-commit work (chat jobs) a transition writes with itself, so a
/// crash between the commit and the work leaves the work to be resumed:
/// numbered, committed, claimed, removed once done.
pub trait Outbox: Sessions {
    /// A number greater than any this store returned before, across restarts.
    fn generate_seq(&self) -> Result<u64, StoreError>;

    /// `n` of them at once, increasing (one round trip on PostgreSQL).
    fn generate_seqs(&self, n: usize) -> Result<Vec<u64>, StoreError> {
        (0..n).map(|_| self.generate_seq()).collect()
    }

    /// [`Sessions::commit`] with one outbox entry per `work` item,
    /// numbered by [`Outbox::generate_seqs`]; `numbered` sees the
    /// numbers before the commit is written (the server marks them queued,
    /// so no claimer queues them twice). Returns the numbers. PostgreSQL
    /// draws them inside the commit's own transaction: one transaction per
    /// transition, not two.
    fn commit_numbered(
        &self,
        mut commit: Commit,
        work: Vec<Vec<u8>>,
        numbered: &mut dyn FnMut(&[u64]),
    ) -> Result<Committed<Vec<u64>>, StoreError> {
        let seqs = if work.is_empty() { Vec::new() } else { self.generate_seqs(work.len())? };
        numbered(&seqs);
        commit.outbox.extend(seqs.iter().zip(work).map(|(seq, work)| OutboxEntry { seq: *seq, work }));
        Ok(match self.commit(commit)? {
            Committed::Written(()) => Committed::Written(seqs),
            Committed::Preempted(p) => Committed::Preempted(p),
        })
    }

    /// [`Outbox::commit_numbered`] that may return once the commit is
    /// written but before it is flushed: it is durable, and may be acted
    /// on, only once [`flushed`](crate::flushed) of the returned [`Flush`] has succeeded.
    /// The calling thread is free during the flush, so a busy process
    /// parks one thread per shared flush instead of one per commit (sled;
    /// docs/PERFORMANCE.md §17). Default: flushed before it returns.
    fn commit_numbered_unflushed(
        &self,
        commit: Commit,
        work: Vec<Vec<u8>>,
        numbered: &mut dyn FnMut(&[u64]),
    ) -> Result<(Committed<Vec<u64>>, Flush), StoreError> {
        Ok((self.commit_numbered(commit, work, numbered)?, Flush::Done))
    }

    /// Wait, on a blocking thread, for the ticket of an asynchronous waiter
    /// that holds the reservation (see [`flushed`](crate::flushed)), leading a flush when
    /// none runs. Only a store that hands out [`Flush::Pending`] is asked;
    /// any other refuses (a failure, so the waiter is not released).
    fn flush_lead(&self, reservation: FlushReservation) -> Result<(), StoreError> {
        drop(reservation);
        Err(StoreError::Unavailable("this store has no pending flushes".to_string()))
    }

    /// Every outbox entry not yet done, in `seq` order.
    fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError>;

    /// Mark an outbox entry done. Not flushed: after a crash the work may be
    /// done again (at least once), so it must be safe to repeat.
    fn remove_outbox(&self, seq: u64) -> Result<(), StoreError>;

    /// [`Outbox::remove_outbox`] for several entries at once (one
    /// statement on PostgreSQL; entries already gone are no error).
    fn remove_outbox_many(&self, seqs: &[u64]) -> Result<(), StoreError> {
        seqs.iter().try_for_each(|seq| self.remove_outbox(*seq))
    }

    /// Outbox entries for this process to run, leased to it: at start every
    /// entry nobody holds; later, the entries whose holder died (its lease
    /// ran out). A store one process owns returns every entry.
    fn claim_outbox(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut all = self.outbox()?;
        all.truncate(limit);
        Ok(all)
    }

    /// Up to `limit` outbox entries with a `seq` after `after` (from the
    /// first when `None`), in `seq` order, that this process may run, leased
    /// to it: the entries it holds already (its own commits' work, which it
    /// left here while its chat backlog was full), and those nobody holds or
    /// whose holder's lease ran out. Fewer than `limit` only when no more
    /// such entries follow. The server pages through its spilled chat work
    /// this way, so 100,000 entries are never read into memory at once. A
    /// store one process owns returns every entry after `after`.
    fn claim_outbox_page(&self, after: Option<u64>, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut all = self.outbox()?;
        all.retain(|e| after.is_none_or(|a| e.seq > a));
        all.truncate(limit);
        Ok(all)
    }
}

/// Where each card and question was posted (channel, chat, message), so
/// later edits reach it.
pub trait Deliveries: Send + Sync {
    fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError>;

    fn add_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError>;

    /// Cards posted for questions, by question id.
    fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError>;

    fn add_question_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError>;
}

/// Several processes on one store (PostgreSQL replicas): whether the store
/// is shared, leases on claimed work, change notifications, leadership.
///
/// The defaults are a store that one process owns (sled): it is always the
/// leader, its own commits are the only changes, every due timer and every
/// outbox entry is its own.
pub trait ReplicaStore: Send + Sync {
    /// Whether several processes may share this store at once. The server
    /// runs the lease and wake-up machinery below only when it is.
    fn shared(&self) -> bool {
        false
    }

    /// Extend this process's leases (outbox entries it holds, timers it
    /// claimed): called every third of a lease while it runs.
    fn renew_leases(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Call `on_change(Some(key))` whenever any process commits a change to
    /// `key`, and `on_change(None)` when changes may have been missed (a
    /// lost connection): wake every waiter then. Runs until the process ends.
    fn subscribe_changes(&self, on_change: ChangeListener) -> Result<(), StoreError> {
        let _ = on_change;
        Ok(())
    }

    /// Take part in the election of the process that holds `role` (one
    /// Telegram poller, one Slack socket, one Discord gateway across the
    /// replicas): `on_change(true)` when this process becomes the leader,
    /// `on_change(false)` when it stops being it. A store one process owns
    /// makes it the leader at once.
    fn elect_leader(&self, role: &str, on_change: LeaderListener) -> Result<(), StoreError> {
        let _ = role;
        on_change(true);
        Ok(())
    }
}

/// Backup and retention.
pub trait MaintenanceStore: Send + Sync {
    /// Write a consistent snapshot (commits held at their boundary) of the
    /// store and the plan documents under `data_dir` to `out`.
    fn snapshot(&self, data_dir: &std::path::Path, out: &mut dyn std::io::Write) -> Result<BackupStats, StoreError> {
        let _ = (data_dir, out);
        Err(StoreError::Unavailable("this store cannot take snapshots".into()))
    }

    /// Prune one batch of decided approvals and old audit (see `retention`);
    /// pending approvals and timers are never pruned.
    fn prune(&self, data_dir: &std::path::Path, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        let _ = (data_dir, policy);
        Err(StoreError::Unavailable("this store cannot prune".into()))
    }
}

/// A proposal ordered by its position only (the default page's heap).
struct ByPosition(PagePosition, Box<Proposal>);

impl PartialEq for ByPosition {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for ByPosition {}
impl PartialOrd for ByPosition {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByPosition {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}
