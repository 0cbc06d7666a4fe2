//! Checkpoints: the database closed and reopened once enough was written,
//! so that the log sled replays at an open stays short. The lock order
//! between checkpoints and flushes is in `group`'s module documentation.

use super::open::open_trees;
use super::{CheckpointState, CheckpointStats, SledStore};
use crate::StoreError;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

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
pub(super) const SMALL_WRITE_BYTES: u64 = 256;

impl SledStore {
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
    pub(super) fn wrote(&self, bytes: u64) {
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
}
