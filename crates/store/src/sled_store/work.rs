//! The work a commit leaves for later ([`Timers`], [`Outbox`],
//! [`Deliveries`]): timers in due order, outbox entries in `seq` order, and
//! the numbered commit that returns before its flush (a waiter awaits it
//! with `crate::flushed`). One process owns the store, so a claim is a
//! plain read.

use super::keys::{delivery_key, due_prefix, timer_key};
use super::{decode, encode, SledStore};
use crate::group::{FlushReservation, PendingFlush, Turn};
use crate::{Commit, Committed, Deliveries, Outbox, OutboxEntry, StoreError, Timers};
use plangate_delivery::Delivery;
use plangate_engine::{ApprovalId, Timer, Timestamp};
use std::sync::Arc;

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
