//! Persisted timers: nudges and timeouts.
//!
//! Timers live in the store keyed by due time, so a restart is a range scan.
//! The scheduler sleeps until the earliest one (never polls), is woken when a
//! transition schedules a new timer, and re-computes its sleep on every wake
//! so wall-clock jumps neither double-fire (a fired timer is removed in the
//! same transaction as its transition) nor delay what is due.

use crate::core::{now, Core, ExecMeta};
use plangate_engine::{Actor, Command, TimerKind};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{debug, info, warn};

/// Missed-nudge removals in flight at once on startup.
const COLLAPSE_CONCURRENCY: usize = 64;

/// The longest single sleep: bounds the damage of a wall-clock jump.
const MAX_SLEEP: Duration = Duration::from_secs(60);

pub async fn run(core: Arc<Core>, mut shutdown: watch::Receiver<bool>) {
    collapse_missed_nudges(&core).await;
    loop {
        fire_due(&core).await;
        let next = core.blocking(|s| s.next_timer()).await;
        let sleep = match next {
            Ok(Some(t)) => Duration::from_millis(u64::try_from(t.due.0 - now().0).unwrap_or(0)).min(MAX_SLEEP),
            Ok(None) => MAX_SLEEP,
            Err(e) => {
                warn!(error = %e, "cannot read timers; retrying");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = core.scheduler_wake.notified() => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Fire every timer that is due now, earliest first.
pub async fn fire_due(core: &Arc<Core>) {
    let due = match core.blocking(|s| s.due_timers(now())).await {
        Ok(due) => due,
        Err(e) => {
            warn!(error = %e, "cannot read due timers");
            return;
        }
    };
    for timer in due {
        let key = timer.session.clone();
        let meta = ExecMeta { idempotency: None, fired: Some(timer.clone()) };
        if let Err(e) = core.execute(&key, Actor::Scheduler, Command::TimerFired(timer.clone()), meta).await {
            warn!(error = %e, ?timer, "timer transition failed; it stays scheduled");
        }
    }
}

/// After downtime, several nudges of one approval may be overdue: keep only
/// the latest (people want one reminder, not a burst of three). Timeouts
/// always fire.
async fn collapse_missed_nudges(core: &Arc<Core>) {
    let Ok(due) = core.blocking(|s| s.due_timers(now())).await else { return };
    let mut latest: HashMap<_, u8> = HashMap::new();
    for t in &due {
        if let TimerKind::Nudge(n) = t.kind {
            let e = latest.entry(t.approval_id).or_insert(n);
            *e = (*e).max(n);
        }
    }
    let missed: Vec<_> = due
        .into_iter()
        .filter(|t| matches!(t.kind, TimerKind::Nudge(n) if latest.get(&t.approval_id).is_some_and(|max| n < *max)))
        .collect();
    if missed.is_empty() {
        return;
    }
    info!(count = missed.len(), "skipping nudges missed while down (keeping the latest of each approval)");
    // Each removal is durable on its own; run them side by side so the
    // store's group commit shares flushes (one at a time, 100,000 approvals
    // down for an hour cost 200,000 sequential flushes before any nudge).
    let mut running = tokio::task::JoinSet::new();
    for timer in missed {
        while running.len() >= COLLAPSE_CONCURRENCY {
            running.join_next().await;
        }
        debug!(approval = %timer.approval_id, kind = ?timer.kind, "skipping a nudge missed while down");
        let core = core.clone();
        running.spawn(async move { core.blocking(move |s| s.remove_timer(&timer)).await });
    }
    while running.join_next().await.is_some() {}
}
