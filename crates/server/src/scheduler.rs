//! Persisted timers: nudges and timeouts.
//!
//! Timers live in the store keyed by due time, so a restart is a range scan.
//! The store keeps the first timer of each chain (an approval's reminders,
//! its ladder levels and timeout, an agent's reminders: see
//! `plangate_engine::chains`); the transition a timer fires stores the
//! chain's next. After downtime the first reminder of an approval fires
//! late and takes the others also due with it: people get one reminder,
//! numbered as the latest (the engine's rule), not a burst.
//! The scheduler sleeps until the earliest one (never polls), is woken when a
//! transition schedules a new timer, and re-computes its sleep on every wake
//! so wall-clock jumps neither double-fire (a fired timer is removed in the
//! same transaction as its transition) nor delay what is due.
//!
//! Reminders wait in the store while the chat platforms work through a
//! backlog: a nudge fires only while fewer than
//! [`CHAT_BACKLOG`](crate::core::CHAT_BACKLOG) chat jobs are queued, so 100,000 overdue reminders after downtime cost disk, not
//! memory, and go out at the platforms' pace. Timeouts, escalations and
//! agent nudges never wait.
//!
//! Replicas on one shared store claim the due timers they fire (a lease:
//! the others skip them), so a timer fires on one replica; should that
//! replica die, its leased timers become claimable when the lease runs
//! out, which is why a replica never sleeps longer than the lease. Another
//! replica's new timers wake this scheduler through the store's change
//! notifications (see `replicas`).

use crate::core::{Core, CoreError, ExecMeta};
use plangate_engine::{Actor, Command, Timer, TimerKind, Timestamp};
use plangate_store::{Preempted, StoreError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{debug, warn};

/// Due timers read from the store at once.
const PAGE: usize = 1024;

/// While nudges wait for the backlog, how often timeouts are looked for.
const BACKLOG_RECHECK: Duration = Duration::from_secs(5);

/// The longest single sleep: bounds the damage of a wall-clock jump.
const MAX_SLEEP: Duration = Duration::from_secs(60);

pub async fn run(core: Arc<Core>, mut shutdown: watch::Receiver<bool>) {
    loop {
        if fire_due(&core).await {
            // Nudges were left due: look again when half the backlog is sent
            // (so a pass over the due timers fires thousands, not one), or
            // after BACKLOG_RECHECK at the latest, for timeouts falling due.
            let recheck = tokio::time::sleep(BACKLOG_RECHECK);
            tokio::pin!(recheck);
            let mut progress = core.chat.progress();
            while !core.chat.backlog_halved() {
                tokio::select! {
                    _ = progress.changed() => {}
                    _ = &mut recheck => break,
                    _ = shutdown.changed() => return,
                }
            }
            continue;
        }
        // Sleep until the earliest timer. A timer scheduled by a commit of
        // this process is announced with its due time (`TimerWake::scheduled`),
        // so the earliest is known without a read; only other wake-ups (a
        // change on another replica) re-read it. Claiming is a write (on
        // PostgreSQL, a transaction of its own), so it waits until the
        // earliest timer is actually due.
        let mut read = true;
        let mut earliest: Option<i64> = None;
        let mut failed = false;
        loop {
            if read {
                // Announcements before this read are covered by it (their
                // commits came first); later ones are merged below.
                core.timers.forget_announced();
                match core.blocking(|s| s.next_timer()).await {
                    Ok(next) => (earliest, failed) = (next.map(|t| t.due.0), false),
                    Err(e) => {
                        warn!(error = %e, "cannot read timers; retrying");
                        (earliest, failed) = (None, true);
                    }
                }
                read = false;
            }
            if let Some(announced) = core.timers.take_announced() {
                earliest = Some(earliest.map_or(announced, |e| e.min(announced)));
            }
            // On a shared store, at most the lease of claims and leadership: a dead
            // replica's leased timers become claimable when it runs out.
            let longest = if core.storage.store.shared() { MAX_SLEEP.min(core.settings.raw.store.lease()) } else { MAX_SLEEP };
            let sleep = match earliest {
                _ if failed => Duration::from_secs(1),
                Some(due) => Duration::from_millis(u64::try_from(due - core.now().0).unwrap_or(0)).min(longest),
                None => longest,
            };
            tokio::select! {
                _ = tokio::time::sleep(sleep) => break,
                _ = core.timers.changed.notified() => read = true,
                _ = core.timers.announced() => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// Fire every timer that is due now, earliest first, except nudges while
/// the chat backlog is full. Returns whether nudges were left due. Stops
/// between timers once a shutdown began: what is left stays due in the
/// store for the next start (a catch-up of a million overdue nudges took
/// minutes, and held a SIGTERM that long).
pub async fn fire_due(core: &Arc<Core>) -> bool {
    let now = core.now();
    let mut deferred = false;
    let mut after: Option<Timer> = None;
    loop {
        let page = match claim_page(core, now, after.take()).await {
            Ok(page) => page,
            Err(e) => {
                warn!(error = %e, "cannot read due timers");
                return false;
            }
        };
        let last_page = page.len() < PAGE;
        after = page.last().cloned();
        for timer in page {
            if core.waiters.stopping() {
                debug!("shutting down: the rest of the due timers stay in the store");
                return false;
            }
            if matches!(timer.kind, TimerKind::Nudge(_)) && core.chat.backlog_full() {
                deferred = true;
                continue;
            }
            let key = timer.session.clone();
            let meta = ExecMeta { fired: Some(timer.clone()), ..ExecMeta::default() };
            match core.execute(&key, Actor::Scheduler, Command::TimerFired(timer.clone()), meta).await {
                Ok(_) => {}
                // Fired on another replica meanwhile: its transition, not ours.
                Err(CoreError::Preempted(Preempted::TimerGone)) => debug!(?timer, "timer already fired by another replica"),
                Err(e) => warn!(error = %e, ?timer, "timer transition failed; it stays scheduled"),
            }
        }
        if last_page {
            break;
        }
    }
    if deferred {
        debug!(backlog = core.chat.backlog(), "nudges left due until the chat backlog drains");
    }
    deferred
}

/// One page of the timers due at `now`, after `after`, claimed for this
/// process (on a shared store, others skip them until the lease runs out).
async fn claim_page(core: &Arc<Core>, now: Timestamp, after: Option<Timer>) -> Result<Vec<Timer>, StoreError> {
    core.blocking(move |s| s.claim_due_timers(now, after.as_ref(), PAGE)).await
}
