//! What runs only when several plangate processes share one store
//! (PostgreSQL, [`ReplicaStore::shared`](plangate_store::ReplicaStore::shared)):
//!
//! * **Wake-ups.** Another replica's commit must release this replica's
//!   long-polls, hook waits, `GET …/injection?wait` and web page live views
//!   just as a local commit does, and may schedule a timer this replica's
//!   scheduler should sleep less for. The store calls a listener for every
//!   change (`Some(session)`) or when it may have missed some (`None`); the
//!   listener runs on the store's thread, so it only forwards to a task
//!   here, which wakes the session's watchers (all of them on `None`) and
//!   the scheduler.
//! * **Leases.** Every third of `store.lease_seconds`, this replica renews
//!   its claims (timers, outbox entries, leadership is the store's own), and
//!   claims the outbox entries whose holder died, queueing those it has not
//!   queued already.
//!
//! A store one process owns (sled) needs none of it: [`start`] does nothing.

use crate::core::{Core, Waiters};
use crate::pairing::Pairing;
use crate::storage::Storage;
use futures_util::future::BoxFuture;
use plangate_engine::SessionKey;
use plangate_store::StoreError;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

/// Outbox entries claimed at once by the periodic claim (more are taken at
/// the next tick, or at once when a page came back full).
const CLAIM_PAGE: usize = 1024;

/// How long the start waits for the store to confirm the change subscription.
const SUBSCRIBE_WAIT: Duration = Duration::from_secs(5);

/// Claim up to this many outbox entries nobody holds and queue them as chat
/// work; how many were queued ([`Core::claim_outbox`]).
pub type Claim = Arc<dyn Fn(usize) -> BoxFuture<'static, Result<usize, StoreError>> + Send + Sync>;

/// What the replica machinery takes of the core: the store, the waiters it
/// wakes, the pairings it re-reads, the scheduler's wake-up, and the one
/// call that queues a dead replica's chat work.
#[derive(Clone)]
pub struct Replicas {
    pub storage: Arc<Storage>,
    pub waiters: Arc<Waiters>,
    pub pairing: Arc<Pairing>,
    pub scheduler_wake: Arc<Notify>,
    /// Every third of it, the leases are renewed (`store.lease_seconds`).
    pub lease: Duration,
    pub claim: Claim,
}

impl Replicas {
    /// The parts of `core` the replica machinery uses.
    pub fn of(core: &Arc<Core>) -> Replicas {
        let chat = core.clone();
        Replicas {
            storage: core.storage.clone(),
            waiters: core.waiters.clone(),
            pairing: core.pairing.clone(),
            scheduler_wake: core.timers.changed.clone(),
            lease: core.settings.raw.store.lease(),
            claim: Arc::new(move |limit| {
                let chat = chat.clone();
                Box::pin(async move { chat.claim_outbox(limit).await })
            }),
        }
    }
}

/// Start the replica machinery when the store is shared. Returns the tasks
/// to await at shutdown (they end when `shutdown` turns true).
pub async fn start(parts: Replicas, shutdown: watch::Receiver<bool>) -> anyhow::Result<Vec<JoinHandle<()>>> {
    if !parts.storage.store.shared() {
        return Ok(Vec::new());
    }
    let (tx, rx) = mpsc::unbounded_channel::<Option<SessionKey>>();
    let listener: plangate_store::ChangeListener = Arc::new(move |key| {
        // The receiver is gone only at shutdown.
        let _ = tx.send(key);
    });
    // Off the async workers (the PostgreSQL client blocks). A store may
    // return once its listening thread runs, or keep this call for the
    // subscription's life: a failure within the first seconds stops the
    // start, a call still running after them is the subscription at work.
    let store = parts.storage.store.clone();
    let subscribing = tokio::task::spawn_blocking(move || store.subscribe_changes(listener));
    match tokio::time::timeout(SUBSCRIBE_WAIT, subscribing).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => anyhow::bail!("cannot subscribe to the store's change notifications: {e}"),
        Ok(Err(e)) => anyhow::bail!("the task subscribing to the store's change notifications failed: {e}"),
        Err(_) => debug!("the store keeps the change subscription call running; carrying on"),
    }
    let wakes = tokio::spawn(forward_changes(parts.clone(), rx, shutdown.clone()));
    let leases = tokio::spawn(keep_leases(parts, shutdown));
    Ok(vec![wakes, leases])
}

/// Wake this process's watchers for every change the store reports.
pub async fn forward_changes(
    parts: Replicas,
    mut changes: mpsc::UnboundedReceiver<Option<SessionKey>>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let change = tokio::select! {
            change = changes.recv() => change,
            _ = shutdown.changed() => return,
        };
        match change {
            Some(Some(key)) => parts.waiters.wake(&key),
            Some(None) => {
                // Also what a changed cursor (a pairing) says: re-read them.
                debug!("the store may have missed changes; waking every waiter, re-reading paired destinations");
                parts.waiters.wake_all();
                parts.pairing.refresh_logged().await;
            }
            None => return,
        }
        // Another replica may have scheduled an earlier timer.
        parts.scheduler_wake.notify_one();
    }
}

/// Renew this replica's leases and take over a dead replica's outbox
/// entries, every third of the lease, until shutdown.
async fn keep_leases(parts: Replicas, mut shutdown: watch::Receiver<bool>) {
    let every = parts.lease / 3;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
        if let Err(e) = parts.storage.blocking(|s| s.renew_leases()).await {
            warn!(error = %e, "cannot renew this replica's leases; other replicas may take its work over");
        }
        claim_abandoned(&parts.claim).await;
    }
}

/// Claim and queue outbox entries nobody holds any more, a page at a time.
pub async fn claim_abandoned(claim: &Claim) {
    loop {
        match claim(CLAIM_PAGE).await {
            Ok(0) => return,
            Ok(count) => {
                tracing::info!(count, "took over chat work another replica left unfinished");
                if count < CLAIM_PAGE {
                    return;
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot claim outbox entries; retrying at the next renewal");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
