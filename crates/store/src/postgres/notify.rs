//! Telling the other replicas what changed: `NOTIFY plangate_<schema>`,
//! sent after the commits that run side by side, not inside them.
//!
//! **Why not in every commit's own transaction.** A transaction that
//! notifies takes a database-wide lock when it commits and holds it until
//! its commit record is flushed to disk, so notifying commits flush one
//! after another instead of sharing flushes. pgbench on the machine of
//! docs/PERFORMANCE.md §16, 64 clients (`crates/bench/pg-notify-lock.sh`):
//! 24,263–24,703 inserting transactions per second without `pg_notify`,
//! 4,260–4,942 with it in the same transaction (machine idle). So a commit that starts
//! while another of this process is under way (`commit::Notice`) hands
//! its payload, once committed, to the [`Notifier`], and one task of the
//! store's runtime sends what has gathered meanwhile in one statement, on
//! a connection of its own with `synchronous_commit = off` (a
//! notification is a wake-up, not a record: it need not wait for a
//! flush). A commit alone still notifies inside its transaction: there
//! is nobody to serialize, and a transaction of its own per commit would
//! cost more than the lock (§16 measured both).
//!
//! **What that changes for listeners** (see `listen`): a notification
//! arrives shortly after its change is visible, never before. What the
//! sender cannot send is not lost silently: a payload that fails is
//! retried until the store is dropped, and a queue grown past
//! [`MAX_PENDING`] becomes one empty payload, which listeners hear as
//! "something changed" (wake every waiter). A process that dies between
//! its commit and the send loses that wake-up: the other replicas'
//! waiters see the change at their next read (their own deadline).
//! [`Notifier::drain`] (the store's `flush`, on shutdown) waits for the
//! queue to be sent.

use super::sql::NOTIFY_MANY;
use super::Shared;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

/// Distinct payloads held before they collapse into one "something changed".
pub(super) const MAX_PENDING: usize = 4096;
/// How long to wait after a failed send (PostgreSQL down) before the next.
const RETRY: Duration = Duration::from_secs(1);
/// How often an idle sender looks whether its store was dropped.
const IDLE_CHECK: Duration = Duration::from_millis(500);

/// The payloads committed but not yet sent, and the sender's wake-up.
#[derive(Default)]
pub(crate) struct Notifier {
    queue: Mutex<Queue>,
    wake: tokio::sync::Notify,
}

#[derive(Default)]
struct Queue {
    payloads: BTreeSet<String>,
    /// A batch taken and not yet known sent (for [`Notifier::drain`]).
    in_flight: bool,
}

impl Queue {
    /// `payload`, or, once [`MAX_PENDING`] are held, one empty payload for
    /// them all (listeners hear "something changed", which covers any).
    fn add(&mut self, payload: String) {
        if self.payloads.len() >= MAX_PENDING {
            self.payloads.clear();
            self.payloads.insert(String::new());
        } else {
            self.payloads.insert(payload);
        }
    }
}

impl Notifier {
    /// Queue `payload` for the sender. Only after the change it announces
    /// has committed.
    pub(crate) fn push(&self, payload: String) {
        self.lock().add(payload);
        self.wake.notify_one();
    }

    /// Nothing queued nor being sent.
    pub(crate) fn idle(&self) -> bool {
        let queue = self.lock();
        queue.payloads.is_empty() && !queue.in_flight
    }

    /// Wait until everything queued so far was sent, for at most `limit`;
    /// whether it was.
    pub(crate) fn drain(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.idle() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding this lock leaves a set of strings intact.
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Everything queued, marked in flight; empty when nothing is.
    fn take(&self) -> Vec<String> {
        let mut queue = self.lock();
        let batch: Vec<String> = std::mem::take(&mut queue.payloads).into_iter().collect();
        queue.in_flight = !batch.is_empty();
        batch
    }

    /// The batch's end: sent, or put back to be sent with the next.
    fn done(&self, batch: Vec<String>, sent: bool) {
        let mut queue = self.lock();
        queue.in_flight = false;
        if !sent {
            for payload in batch {
                queue.add(payload);
            }
        }
    }
}

/// The sender, on the store's runtime until the store is dropped: wait for
/// payloads, send them all in one statement, and on failure reconnect and
/// send them again.
pub(super) async fn run(shared: Arc<Shared>) {
    let notifier = &shared.notifier;
    let channel = shared.channel();
    let mut connection: Option<Sender> = None;
    while !shared.closed() {
        let batch = notifier.take();
        if batch.is_empty() {
            let _ = tokio::time::timeout(IDLE_CHECK, notifier.wake.notified()).await;
            continue;
        }
        let sent = send(&shared, &mut connection, &channel, &batch).await;
        match sent {
            Ok(()) => notifier.done(batch, true),
            Err(error) => {
                tracing::warn!(%channel, target = %shared.target, %error, payloads = batch.len(), "could not notify the other replicas; retrying every second");
                notifier.done(batch, false);
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// Send `batch` on the sender's connection, connecting first if needed;
/// a failure drops the connection (the next send reconnects).
async fn send(shared: &Shared, connection: &mut Option<Sender>, channel: &str, batch: &[String]) -> Result<(), String> {
    if connection.is_none() {
        *connection = Some(connect(shared).await?);
    }
    let Some((client, statement)) = connection.as_ref() else { return Err("no connection".into()) };
    let sent = client.execute(statement, &[&channel, &batch]).await;
    sent.map(drop).map_err(|e| {
        *connection = None;
        e.to_string()
    })
}

/// A connected sender: its client and its prepared statement.
type Sender = (tokio_postgres::Client, tokio_postgres::Statement);

/// The sender's connection: its own (never a pooled one a commit waits
/// for), asynchronous commits, the statement prepared.
async fn connect(shared: &Shared) -> Result<Sender, String> {
    let mut config = shared.config.clone();
    config.application_name(format!("plangate notifier {}", shared.replica));
    let (client, connection) = config.connect(NoTls).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "the PostgreSQL notifier's connection ended");
        }
    });
    client.batch_execute("SET synchronous_commit = off").await.map_err(|e| e.to_string())?;
    let statement = client.prepare(NOTIFY_MANY).await.map_err(|e| e.to_string())?;
    Ok((client, statement))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_dedups_and_collapses_past_its_bound() {
        let n = Notifier::default();
        n.push("a".into());
        n.push("a".into());
        n.push("b".into());
        assert_eq!(n.take(), vec!["a".to_string(), "b".to_string()]);
        assert!(!n.drain(Duration::ZERO), "a batch in flight is not drained");
        n.done(vec![], true);
        assert!(n.drain(Duration::ZERO));
        for i in 0..=MAX_PENDING {
            n.push(i.to_string());
        }
        assert_eq!(n.take(), vec![String::new()], "past the bound: one \"something changed\"");
    }

    #[test]
    fn a_failed_batch_goes_back() {
        let n = Notifier::default();
        n.push("a".into());
        let batch = n.take();
        n.push("b".into());
        n.done(batch, false);
        assert_eq!(n.take(), vec!["a".to_string(), "b".to_string()]);
    }
}
