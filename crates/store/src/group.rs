//! Group commit: concurrent writers share one flush.
//!
//! A writer that needs its write durable takes a ticket. If no flush is
//! running it becomes the leader: it flushes once for every ticket issued so
//! far (their writes are already in sled's log, so that flush covers them)
//! and releases them all. Writers that arrive while a flush runs wait for
//! the next one, which one of them leads. So a burst of N commits costs about
//! two flushes instead of N, and nobody returns before a flush that started
//! after its own write.

use crate::StoreError;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Counters of the flushes a store has done (see
/// [`SledStore::flush_stats`](crate::SledStore::flush_stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushStats {
    /// Writes that asked to be made durable.
    pub writes: u64,
    /// Flushes of the database issued for them.
    pub flushes: u64,
}

pub(crate) struct FlushGroup {
    /// `false`: every writer flushes on its own (no grouping).
    grouped: bool,
    state: Mutex<GroupState>,
    done: Condvar,
}

#[derive(Default)]
struct GroupState {
    /// Tickets handed out, one per write, each taken after its write.
    issued: u64,
    /// Every ticket up to this one is durable.
    durable: u64,
    /// A leader is flushing right now.
    flushing: bool,
    stats: FlushStats,
}

impl FlushGroup {
    pub(crate) fn new(grouped: bool) -> FlushGroup {
        FlushGroup { grouped, state: Mutex::new(GroupState::default()), done: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn stats(&self) -> FlushStats {
        self.lock().stats
    }

    /// Return once a `flush` that started after this call has succeeded.
    pub(crate) fn make_durable(&self, flush: impl Fn() -> Result<(), StoreError>) -> Result<(), StoreError> {
        let mut g = self.lock();
        g.stats.writes += 1;
        if !self.grouped {
            g.stats.flushes += 1;
            drop(g);
            return flush();
        }
        g.issued += 1;
        let ticket = g.issued;
        loop {
            if g.durable >= ticket {
                return Ok(());
            }
            if !g.flushing {
                g.flushing = true;
                g.stats.flushes += 1;
                let target = g.issued;
                drop(g);
                let result = flush();
                let mut g = self.lock();
                g.flushing = false;
                if result.is_ok() {
                    g.durable = g.durable.max(target);
                }
                // After a failure nobody is released: each waiter wakes,
                // finds no leader, and flushes (and reports) for itself.
                drop(g);
                self.done.notify_all();
                return result;
            }
            g = self.done.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn concurrent_writers_share_flushes_and_each_is_covered() {
        let group = Arc::new(FlushGroup::new(true));
        // A "disk": writes bump `written`; a flush makes what was written by
        // its start durable after a pause.
        let written = Arc::new(AtomicU64::new(0));
        let durable = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (group, written, durable) = (group.clone(), written.clone(), durable.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                        group
                            .make_durable(|| {
                                let upto = written.load(Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(1));
                                durable.fetch_max(upto, Ordering::SeqCst);
                                Ok(())
                            })
                            .unwrap();
                        // Released only once a flush covered this write.
                        assert!(durable.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = group.stats();
        assert_eq!(stats.writes, 320);
        assert!(stats.flushes < stats.writes, "{stats:?}");
    }

    #[test]
    fn a_failed_flush_releases_nobody() {
        let group = FlushGroup::new(true);
        let err = group.make_durable(|| Err(StoreError::Unavailable("disk gone".into()))).unwrap_err();
        assert!(err.to_string().contains("disk gone"));
        // The next writer flushes again rather than trusting the failed one.
        let calls = AtomicU64::new(0);
        group
            .make_durable(|| {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
