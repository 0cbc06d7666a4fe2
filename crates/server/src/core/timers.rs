//! What wakes the scheduler: a timer this process's commits scheduled,
//! announced with its due time so the scheduler learns of it without a
//! read, and a change the store reported (another replica's commit, a
//! turned test clock) after which it reads the earliest timer again.

use plangate_engine::Timestamp;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// The core's part that wakes the scheduler.
pub struct TimerWake {
    /// Poked when the store may hold an earlier timer than the scheduler
    /// knows: it reads the earliest again.
    pub changed: Arc<Notify>,
    /// The earliest due time (ms) of the timers this process scheduled since
    /// the scheduler last read the store (`i64::MAX`: none), and its poke.
    due: AtomicI64,
    scheduled: Notify,
}

impl Default for TimerWake {
    fn default() -> TimerWake {
        TimerWake { changed: Arc::new(Notify::new()), due: AtomicI64::new(i64::MAX), scheduled: Notify::new() }
    }
}

impl TimerWake {
    /// A commit of this process scheduled a timer due at `due`.
    pub fn scheduled(&self, due: Timestamp) {
        self.due.fetch_min(due.0, Ordering::SeqCst);
        self.scheduled.notify_one();
    }

    /// The earliest due time announced since the last call (or the last
    /// [`TimerWake::forget_announced`]), if any.
    pub fn take_announced(&self) -> Option<i64> {
        Some(self.due.swap(i64::MAX, Ordering::SeqCst)).filter(|due| *due != i64::MAX)
    }

    /// Drop what was announced: a read of the store that follows covers it.
    pub fn forget_announced(&self) {
        self.due.store(i64::MAX, Ordering::SeqCst);
    }

    /// Resolves at the next announcement.
    pub async fn announced(&self) {
        self.scheduled.notified().await
    }
}
