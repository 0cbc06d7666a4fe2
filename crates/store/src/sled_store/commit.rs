//! A transition's commit: its writes listed once (`Trees::ops_of`), made
//! atomic by a redo record (or, for the benchmarks, a sled transaction)
//! and durable by a flush shared with concurrent commits; and the session
//! reads ([`Sessions`]). Commits of one session take turns on its stripe,
//! and the session record is written last, so a load never sees a session
//! pointing at records that are not there yet.

use super::checkpoint::SMALL_WRITE_BYTES;
use super::keys::{pending_share_key, pending_share_of, rule_key, session_key, status_key, timer_key, Listed};
use super::{decode, encode, Durability, Open, SledStore, Trees, SESSION_STRIPES};
use crate::chained;
use crate::group::FlushStats;
use crate::redo::{self, Op, TreeId};
use crate::{Commit, Committed, Sessions, StoreError};
use plangate_audit::Chain;
use plangate_engine::{ApprovalId, DecisionStatus, Question, Session, SessionKey, State};
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;
use std::hash::{Hash, Hasher};
use std::sync::MutexGuard;

/// Only for measuring what the audit chain costs a commit (the `durable`
/// benchmark built with `--features plangate-bench/unchained`, docs/PERFORMANCE.md
/// §22c): commits write their audit records unchained and take no chain
/// lock. Such a store's audit cannot be read back (an unchained record is
/// an error), so no build of the server turns it on.
const UNCHAINED: bool = cfg!(feature = "unchained-for-bench");

/// The last byte of a split record's key (see `redo`): which part it is.
/// The audit part sorts first, so a replay meets it before its rest.
pub(super) const AUDIT_PART: u8 = b'a';
pub(super) const REST_PART: u8 = b'r';

/// A split record's key: the commit's sequence number (big-endian), then its part.
pub(super) fn part_key(seq: u64, part: u8) -> [u8; 9] {
    let mut key = [part; 9];
    key[..8].copy_from_slice(&seq.to_be_bytes());
    key
}

/// A key of the `redo` tree.
enum RedoKey {
    /// A commit's whole record (no audit events, or written before records were split).
    Whole,
    /// One part of a split record: the sequence number and the part.
    Part(u64, u8),
}

impl RedoKey {
    fn parse(key: &[u8]) -> Option<RedoKey> {
        match key.len() {
            8 => Some(RedoKey::Whole),
            9 => Some(RedoKey::Part(u64::from_be_bytes(key[..8].try_into().ok()?), key[8])),
            _ => None,
        }
    }
}

impl Trees {
    /// Finish the commits a crash interrupted (see `redo`): a whole
    /// record, or both parts of a split one, audit first; a rest part
    /// without its audit part wrote nothing and is dropped.
    pub(super) fn replay(&self) -> Result<(), StoreError> {
        let unreadable = |key: &[u8]| {
            StoreError::Unavailable(format!(
                "redo record {} is unreadable (written by a newer plangate?); use a matching plangate release",
                hex::encode(key)
            ))
        };
        let ops_in = |key: &[u8], bytes: &[u8]| redo::decode(bytes).ok_or_else(|| unreadable(key));
        let (mut replayed, mut dropped) = (0, 0);
        let mut records = self.redo.iter().peekable();
        while let Some(record) = records.next() {
            let (key, bytes) = record?;
            match RedoKey::parse(&key).ok_or_else(|| unreadable(&key))? {
                RedoKey::Whole => self.apply_ops(&ops_in(&key, &bytes)?)?,
                RedoKey::Part(seq, AUDIT_PART) => {
                    let rest_key = part_key(seq, REST_PART);
                    let rest = match records.next_if(|r| r.as_ref().is_ok_and(|(k, _)| *k == rest_key)) {
                        Some(rest) => rest?.1,
                        None => {
                            return Err(StoreError::Unavailable(format!(
                                "redo record {} holds a commit's audit records without the rest of its writes; the store is damaged: restore a backup",
                                hex::encode(&key)
                            )))
                        }
                    };
                    self.apply_ops(&ops_in(&key, &bytes)?)?;
                    self.apply_ops(&ops_in(&rest_key, &rest)?)?;
                    self.redo.remove(rest_key)?;
                }
                RedoKey::Part(_, REST_PART) => dropped += 1,
                RedoKey::Part(..) => return Err(unreadable(&key)),
            }
            self.redo.remove(&key)?;
            replayed += 1;
        }
        if replayed > 0 {
            tracing::warn!(replayed, dropped, "finished commits that a crash interrupted (dropped: never sealed, nothing written)");
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
            TreeId::Meta => &self.meta,
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

    /// A commit's audit `events` sealed onto `chain` (in chain order, under
    /// the keys that keep it): the writes that go first in its record.
    pub(super) fn sealed(&self, events: &[chained::Unsealed], chain: &mut Chain) -> Result<Vec<Op>, StoreError> {
        let mut ops = Vec::with_capacity(events.len());
        for event in events {
            let id = self.db.generate_id()?;
            ops.push(Op { tree: TreeId::Audit, key: id.to_be_bytes().to_vec(), value: Some(event.seal(chain).2) });
        }
        Ok(ops)
    }

    /// What [`Self::sealed`] writes without the chain: the events as they
    /// were stored before it, no lock (see [`UNCHAINED`]).
    fn unchained(&self, events: &[plangate_engine::AuditEvent]) -> Result<Vec<Op>, StoreError> {
        let mut ops = Vec::with_capacity(events.len());
        for event in events {
            let id = self.db.generate_id()?;
            ops.push(Op {
                tree: TreeId::Audit,
                key: id.to_be_bytes().to_vec(),
                value: Some(serde_json::to_vec(event).unwrap_or_default()),
            });
        }
        Ok(ops)
    }

    /// The writes of a commit but its audit records, in the order they are
    /// applied: the session last, so a reader that looks a session up never
    /// finds it pointing at records that are not there yet. (The audit
    /// records are sealed and written first, under the chain's lock:
    /// `SledStore::write_grouped`.)
    ///
    /// `stripe` is the session stripe the caller holds: a commit that
    /// changes how many proposals are pending moves that stripe's share of
    /// the count (`meta`, read here under the stripe) in the same record.
    pub(super) fn ops_of(&self, commit: &Commit, stripe: usize) -> Result<Vec<Op>, StoreError> {
        let insert = |tree, key: Vec<u8>, value: Vec<u8>| Op { tree, key, value: Some(value) };
        let mut ops = Vec::new();
        let mut pending_delta = 0i64;
        for p in &commit.proposals {
            // Its index entry moves when its status does (the record read
            // here is the session's own: commits of a session take turns).
            let before = match self.proposals.get(p.approval_id.0)? {
                Some(bytes) => Some(decode::<Listed>(&bytes, "proposal")?),
                None => None,
            };
            let was_pending = before.as_ref().is_some_and(|b| b.status == DecisionStatus::Pending);
            pending_delta += i64::from(p.status == DecisionStatus::Pending) - i64::from(was_pending);
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
        for key in &commit.idempotency {
            ops.push(insert(TreeId::Idempotency, key.as_bytes().to_vec(), vec![1u8]));
        }
        for entry in &commit.outbox {
            ops.push(insert(TreeId::Outbox, entry.seq.to_be_bytes().to_vec(), entry.work.clone()));
        }
        for rule in &commit.rules_add {
            ops.push(insert(TreeId::Rules, rule_key(rule), encode(rule)));
        }
        if pending_delta != 0 {
            let share = self.pending_share(stripe)? + pending_delta;
            ops.push(insert(TreeId::Meta, pending_share_key(stripe), share.to_be_bytes().to_vec()));
        }
        if let Some(session) = &commit.session {
            ops.push(insert(TreeId::Sessions, session_key(&session.key), encode(session)));
        }
        Ok(ops)
    }

    /// One stripe's share of the pending count (0 when it has none yet).
    fn pending_share(&self, stripe: usize) -> Result<i64, StoreError> {
        match self.meta.get(pending_share_key(stripe))? {
            None => Ok(0),
            Some(v) => pending_share_of(&v).ok_or_else(|| {
                StoreError::Unavailable(format!(
                    "the pending count's share of stripe {stripe} is {} bytes, not 8; the store is damaged: restore a backup",
                    v.len()
                ))
            }),
        }
    }
}

impl SledStore {
    /// The session's stripe, locked, and its index (which share of the
    /// pending count its commits move).
    pub(super) fn stripe(&self, key: Option<&SessionKey>) -> (usize, MutexGuard<'_, ()>) {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        let index = (h.finish() as usize) % SESSION_STRIPES;
        (index, self.stripes[index].lock().unwrap_or_else(|e| e.into_inner()))
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
    pub(super) fn write_grouped(&self, commit: Commit) -> Result<(Open<'_>, u64, u64), StoreError> {
        let snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
        let t = self.trees()?;
        let (stripe, session) = self.stripe(commit.session.as_ref().map(|s| &s.key));
        if let Some(id) = &commit.new_proposal {
            // Ids are 128 random bits; this guards the invariant, not a race.
            if t.proposals.contains_key(id.0)? {
                return Err(StoreError::DuplicateId(*id));
            }
        }
        // Reading the proposals' index entries and encoding the writes
        // happen before the audit chain's lock (`write_chained`).
        let rest = t.ops_of(&commit, stripe)?;
        let seq = t.db.generate_id()?;
        let record_len = if commit.audit.is_empty() || UNCHAINED {
            // No chain to keep in order: one record, no lock.
            let audit = if UNCHAINED { t.unchained(&commit.audit)? } else { Vec::new() };
            let record = redo::encode_pair(&audit, &rest);
            let len = record.len();
            t.redo.insert(seq.to_be_bytes(), record)?;
            t.apply_ops(&audit)?;
            t.apply_ops(&rest)?;
            t.redo.remove(seq.to_be_bytes())?;
            len
        } else {
            self.write_chained(&t, &commit.audit, &rest, seq)?
        };
        // The session's next commit (and a snapshot) need not wait for
        // this one's flush. The ticket is taken while the database is
        // still held open: a checkpoint (which flushes before it closes)
        // then covers it (`FlushGroup::all_durable`).
        drop(session);
        drop(snapshot);
        let ticket = self.group.issue();
        Ok((t, ticket, 2 * record_len as u64))
    }

    /// A commit's writes with its audit `events`, in two redo records (see
    /// `redo`): the rest, recorded before the chain's lock; the audit
    /// records, sealed, recorded and written under it, so they reach the
    /// log in chain order and a crash can keep a record of the chain only
    /// with every record before it. Returns the bytes recorded.
    fn write_chained(&self, t: &Trees, events: &[plangate_engine::AuditEvent], rest: &[Op], seq: u64) -> Result<usize, StoreError> {
        let (audit_key, rest_key) = (part_key(seq, AUDIT_PART), part_key(seq, REST_PART));
        // Everything that takes time (encoding the events and the rest,
        // beginning each record's hash, writing the rest's record) is done
        // before the lock: commits of different sessions wait on each
        // other only for the end of each hash and the audit records' writes.
        let events: Vec<chained::Unsealed> = events.iter().map(chained::unsealed).collect();
        let rest_record = redo::encode(rest);
        let rest_len = rest_record.len();
        t.redo.insert(rest_key, rest_record)?;
        let audit_len = {
            let mut head = self.chain_head(t)?;
            let mut chain = head.unwrap_or_default();
            let sealed = match t.sealed(&events, &mut chain) {
                Ok(sealed) => sealed,
                Err(e) => {
                    // Nothing of the commit was written; the next open would drop it too.
                    let _ = t.redo.remove(rest_key);
                    return Err(e);
                }
            };
            // A failure from here on leaves both records, and the next
            // open finishes the commit: all or nothing, as a transaction
            // would.
            let audit_record = redo::encode(&sealed);
            let audit_len = audit_record.len();
            t.redo.insert(audit_key, audit_record)?;
            // The chain moves on now: the records it sealed are written,
            // in chain order before the next commit's, so a reader never
            // sees a record without the one before it.
            *head = Some(chain);
            t.apply_ops(&sealed)?;
            audit_len
        };
        t.apply_ops(rest)?;
        t.redo.remove(audit_key)?;
        t.redo.remove(rest_key)?;
        Ok(rest_len + audit_len)
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
            let mut pending_delta = 0i64;
            for p in &commit.proposals {
                pending_delta += i64::from(p.status == DecisionStatus::Pending);
                if let Some(bytes) = proposals.get(p.approval_id.0)? {
                    let b: Listed = decode(&bytes, "proposal").map_err(ConflictableTransactionError::Abort)?;
                    pending_delta -= i64::from(b.status == DecisionStatus::Pending);
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
                audit.insert(&id.to_be_bytes(), chained::unsealed(event).seal(&mut chain).2)?;
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
            Ok((chain, pending_delta))
        });
        match result {
            Ok((chain, pending_delta)) => {
                *head = Some(chain);
                drop(head);
                // sled's transactions take at most nine trees, all taken
                // above: the count's share moves in a second write, atomic
                // against other commits but not against a crash between the
                // two. Only the benchmarks run this mode.
                if pending_delta != 0 {
                    t.meta.update_and_fetch(pending_share_key(0), |old| {
                        let share = old.and_then(pending_share_of).unwrap_or(0) + pending_delta;
                        Some(share.to_be_bytes().to_vec())
                    })?;
                }
                self.flushed(&t, ())
            }
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(StoreError::Sled(e)),
        }
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
    pub(super) fn flushed_small<T>(&self, t: Open<'_>, value: T) -> Result<T, StoreError> {
        let value = self.flushed(&t, value)?;
        drop(t);
        self.wrote(SMALL_WRITE_BYTES);
        Ok(value)
    }

    /// How many durable writes this store served with how many flushes.
    pub fn flush_stats(&self) -> FlushStats {
        self.group.stats()
    }
}

impl Sessions for SledStore {
    fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        let t = self.trees()?;
        let _session = self.stripe(Some(key)).1;
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
