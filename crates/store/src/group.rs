//! Group commit: concurrent writers share one flush.
//!
//! A writer that needs its write durable takes a ticket. If no flush is
//! running it becomes the leader: it flushes once for every ticket issued so
//! far (their writes are already in sled's log, so that flush covers them)
//! and releases them all. Writers that arrive while a flush runs wait for
//! the next one, which one of them leads. So a burst of N commits costs about
//! two flushes instead of N, and nobody returns before a flush that started
//! after its own write.
//!
//! A writer may also take its ticket and wait for it *asynchronously*
//! ([`PendingFlush`], [`flushed`](crate::flushed)) when a flush is already
//! under way (alone, it flushes in place: [`FlushGroup::lead_if_idle`]):
//! the thread that wrote is free at once and the waiting is a task. Of the waiting tasks one at a
//! time holds the *reservation* and goes to a blocking thread, where it
//! waits like a blocking writer (leading a flush, or waiting for the one
//! under way); the others sleep until a flush ends. A busy process then
//! parks one thread per flush instead of one per commit (docs/PERFORMANCE.md
//! §17).
//!
//! **Lock order.** Whoever leads a flush holds the store's open database
//! (its read lock) from before it claims the lead until the flush ends,
//! and so does every blocking waiter. A checkpoint takes the write lock, so
//! it waits for the flush and its waiters, never the other way round. The
//! reservation is not the lead: its holder may wait for the read lock
//! (behind a checkpoint) without holding anybody up but other reservations.

use crate::StoreError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tokio::sync::Notify;

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
    /// Threads waiting for a flush (the blocking path).
    done: Condvar,
    /// Tasks waiting for a flush (the asynchronous path).
    flushed: Notify,
}

#[derive(Default)]
struct GroupState {
    /// Tickets handed out, one per write, each taken after its write.
    issued: u64,
    /// Every ticket up to this one is durable.
    durable: u64,
    /// A leader is flushing right now.
    flushing: bool,
    /// An asynchronous waiter is on its way to a blocking thread to wait
    /// there: the other asynchronous waiters sleep meanwhile.
    reserved: bool,
    stats: FlushStats,
}

/// What a blocking waiter is to do next.
pub(crate) enum Turn {
    /// A flush covered it.
    Durable,
    /// A flush is under way: wait for its end and ask again.
    Wait,
    /// Lead: flush, then [`FlushGroup::finish`] up to this ticket. Claimed
    /// only by a caller holding the open database (see the module doc).
    Lead(u64),
}

/// What an asynchronous waiter is to do next.
enum Step {
    Durable,
    /// Sleep until a flush ends or the reservation is given up.
    Sleep,
    /// Go and wait on a blocking thread.
    Reserved(FlushReservation),
}

impl FlushGroup {
    pub(crate) fn new(grouped: bool) -> FlushGroup {
        FlushGroup { grouped, state: Mutex::new(GroupState::default()), done: Condvar::new(), flushed: Notify::new() }
    }

    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn stats(&self) -> FlushStats {
        self.lock().stats
    }

    pub(crate) fn grouped(&self) -> bool {
        self.grouped
    }

    /// A ticket for a write just made (grouped stores only): a flush that
    /// starts after this call covers it.
    pub(crate) fn issue(&self) -> u64 {
        let mut g = self.lock();
        g.stats.writes += 1;
        g.issued += 1;
        g.issued
    }

    /// Where `ticket` stands; claims the lead when no flush is under way.
    /// The caller must hold the open database (see the module doc).
    pub(crate) fn turn(&self, ticket: u64) -> Turn {
        self.claim(ticket, false)
    }

    /// [`FlushGroup::turn`] that also waits while an asynchronous waiter
    /// holds the reservation: a writer alone flushes in place, with no hop
    /// to a waiting task and back; else it leaves the flush to others.
    pub(crate) fn lead_if_idle(&self, ticket: u64) -> Turn {
        self.claim(ticket, true)
    }

    fn claim(&self, ticket: u64, yield_to_reservation: bool) -> Turn {
        let mut g = self.lock();
        if g.durable >= ticket {
            return Turn::Durable;
        }
        if g.flushing || (yield_to_reservation && g.reserved) {
            return Turn::Wait;
        }
        g.flushing = true;
        g.stats.flushes += 1;
        Turn::Lead(g.issued)
    }

    /// Where `ticket` stands for an asynchronous waiter; takes the
    /// reservation when nobody flushes or holds it.
    fn step(self: &Arc<Self>, ticket: u64) -> Step {
        let mut g = self.lock();
        if g.durable >= ticket {
            return Step::Durable;
        }
        if g.flushing || g.reserved {
            return Step::Sleep;
        }
        g.reserved = true;
        Step::Reserved(FlushReservation { ticket, group: self.clone() })
    }

    /// The lead's flush ended: on success every ticket up to `target` is
    /// durable. After a failure nobody is released: each waiter asks again,
    /// finds no leader, and flushes (and reports) for itself.
    pub(crate) fn finish(&self, target: u64, ok: bool) {
        let mut g = self.lock();
        g.flushing = false;
        if ok {
            g.durable = g.durable.max(target);
        }
        drop(g);
        self.done.notify_all();
        self.flushed.notify_waiters();
    }

    /// Everything written so far was made durable by other means (a
    /// checkpoint flushes before it closes the database).
    pub(crate) fn all_durable(&self) {
        let mut g = self.lock();
        g.durable = g.durable.max(g.issued);
        drop(g);
        self.done.notify_all();
        self.flushed.notify_waiters();
    }

    /// Return once a `flush` that started after this call has succeeded.
    pub(crate) fn make_durable(&self, flush: impl Fn() -> Result<(), StoreError>) -> Result<(), StoreError> {
        if !self.grouped {
            let mut g = self.lock();
            g.stats.writes += 1;
            g.stats.flushes += 1;
            drop(g);
            return flush();
        }
        let ticket = self.issue();
        self.wait(ticket, flush)
    }

    /// Block until `ticket` is durable, leading a flush when none runs.
    pub(crate) fn wait(&self, ticket: u64, flush: impl Fn() -> Result<(), StoreError>) -> Result<(), StoreError> {
        loop {
            match self.turn(ticket) {
                Turn::Durable => return Ok(()),
                Turn::Wait => {
                    // Looked at again under the lock the leader takes
                    // before notifying, so its wake-up cannot be missed.
                    let g = self.lock();
                    if g.flushing && g.durable < ticket {
                        drop(self.done.wait(g).unwrap_or_else(|e| e.into_inner()));
                    }
                }
                Turn::Lead(target) => {
                    let result = flush();
                    self.finish(target, result.is_ok());
                    result?;
                }
            }
        }
    }
}

/// A commit written and not yet flushed: await [`flushed`](crate::flushed)
/// before treating it as durable.
pub struct PendingFlush {
    pub(crate) ticket: u64,
    pub(crate) group: Arc<FlushGroup>,
}

/// The reservation of one asynchronous waiter: it is to wait for its
/// ticket on a blocking thread ([`Outbox::flush_lead`](crate::Outbox::flush_lead)),
/// holding the open database, as a blocking writer would. Dropped, it is
/// given up and the other asynchronous waiters look again, so a blocking
/// task that never ran (or failed) does not leave them asleep.
pub struct FlushReservation {
    ticket: u64,
    group: Arc<FlushGroup>,
}

impl FlushReservation {
    /// Wait for the ticket, leading a flush when none runs. The caller
    /// holds the open database `flush` writes to.
    pub(crate) fn wait(self, flush: impl Fn() -> Result<(), StoreError>) -> Result<(), StoreError> {
        self.group.wait(self.ticket, flush)
    }

    pub(crate) fn group(&self) -> &Arc<FlushGroup> {
        &self.group
    }
}

impl Drop for FlushReservation {
    fn drop(&mut self) {
        self.group.lock().reserved = false;
        self.group.flushed.notify_waiters();
    }
}

impl PendingFlush {
    /// Wait for this commit's flush without holding a thread: the waiter
    /// holding the reservation waits on a blocking thread through `lead`,
    /// the others sleep until a flush ends (or the reservation is given
    /// up) and look again.
    pub(crate) async fn wait<F, Fut>(self, lead: F) -> Result<(), StoreError>
    where
        F: Fn(FlushReservation) -> Fut,
        Fut: std::future::Future<Output = Result<(), StoreError>>,
    {
        loop {
            let notified = self.group.flushed.notified();
            tokio::pin!(notified);
            // Registered before the look, so a flush ending in between
            // still wakes this waiter.
            notified.as_mut().enable();
            match self.group.step(self.ticket) {
                Step::Durable => return Ok(()),
                Step::Sleep => notified.await,
                Step::Reserved(reservation) => lead(reservation).await?,
            }
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
    /// The asynchronous path: tasks take tickets, one at a time leads on a
    /// blocking thread, and nobody is released before a flush that began
    /// after its write.
    #[test]
    fn async_waiters_share_flushes_and_each_is_covered() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let group = Arc::new(FlushGroup::new(true));
        let written = Arc::new(AtomicU64::new(0));
        let durable = Arc::new(AtomicU64::new(0));
        runtime.block_on(async {
            let tasks: Vec<_> = (0..16)
                .map(|_| {
                    let (group, written, durable) = (group.clone(), written.clone(), durable.clone());
                    tokio::spawn(async move {
                        for _ in 0..20 {
                            let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                            let pending = PendingFlush { ticket: group.issue(), group: group.clone() };
                            pending
                                .wait(|reservation| {
                                    let (written, durable) = (written.clone(), durable.clone());
                                    async move {
                                        tokio::task::spawn_blocking(move || {
                                            reservation.wait(|| {
                                                let upto = written.load(Ordering::SeqCst);
                                                std::thread::sleep(Duration::from_millis(1));
                                                durable.fetch_max(upto, Ordering::SeqCst);
                                                Ok(())
                                            })
                                        })
                                        .await
                                        .unwrap()
                                    }
                                })
                                .await
                                .unwrap();
                            assert!(durable.load(Ordering::SeqCst) >= mine);
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        let stats = group.stats();
        assert_eq!(stats.writes, 320);
        assert!(stats.flushes < stats.writes, "{stats:?}");
    }

    /// A reservation dropped unused (its blocking task never ran) is given
    /// up: the next asynchronous waiter takes it instead of sleeping for
    /// ever, and nothing was counted durable.
    #[test]
    fn a_reservation_dropped_unused_is_given_up_and_releases_nobody() {
        let group = Arc::new(FlushGroup::new(true));
        let ticket = group.issue();
        let Step::Reserved(reservation) = group.step(ticket) else { panic!("the first waiter takes the reservation") };
        assert!(matches!(group.step(ticket), Step::Sleep));
        drop(reservation);
        assert!(matches!(group.step(ticket), Step::Reserved(_)), "given up, and not counted as durable");
    }

    /// An asynchronous waiter never takes the lead itself: a blocking
    /// leader's flush is waited for, not joined by a second one.
    #[test]
    fn asynchronous_waiters_sleep_while_a_blocking_leader_flushes() {
        let group = Arc::new(FlushGroup::new(true));
        let ticket = group.issue();
        let Turn::Lead(target) = group.turn(ticket) else { panic!("the blocking writer leads") };
        assert!(matches!(group.step(ticket), Step::Sleep));
        group.finish(target, true);
        assert!(matches!(group.step(ticket), Step::Durable));
    }

    /// A failed flush tells its waiter, and the next waiter flushes again.
    #[test]
    fn a_failed_async_flush_releases_nobody() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let group = Arc::new(FlushGroup::new(true));
        let ticket = group.issue();
        let attempts = Arc::new(AtomicU64::new(0));
        let lead = |reservation: FlushReservation| {
            let attempts = attempts.clone();
            async move {
                reservation.wait(|| {
                    let n = attempts.fetch_add(1, Ordering::SeqCst);
                    if n == 0 {
                        Err(StoreError::Unavailable("disk gone".into()))
                    } else {
                        Ok(())
                    }
                })
            }
        };
        let first = runtime.block_on(PendingFlush { ticket, group: group.clone() }.wait(lead));
        assert!(first.unwrap_err().to_string().contains("disk gone"));
        runtime.block_on(PendingFlush { ticket, group: group.clone() }.wait(lead)).unwrap();
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
        assert!(matches!(group.turn(ticket), Turn::Durable));
    }

    /// What a checkpoint flushed counts: its tickets are durable without
    /// a flush of their own.
    #[test]
    fn tickets_covered_by_a_checkpoint_are_durable() {
        let group = FlushGroup::new(true);
        let ticket = group.issue();
        group.all_durable();
        assert!(matches!(group.turn(ticket), Turn::Durable));
        assert_eq!(group.stats().flushes, 0);
    }
}
