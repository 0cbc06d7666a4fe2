//! Long-poll waiters: agents (HTTP, MCP, hooks) wait for a decision or an
//! answer; a committed transition with a `Wake` effect releases them.

use super::Core;
use plangate_engine::{ApprovalId, DecisionStatus, Proposal, SessionKey};
use plangate_store::StoreError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;

/// The waiters map is swept once it reaches twice its size after the last
/// sweep, and never below this many entries (a sweep is a pass over the map).
const MIN_SWEEP: usize = 1024;

/// The long-polls of this process: a watch per watched session, the count
/// of those parked, and the shutdown they answer at once. A part of the
/// core that owns its fields; replicas wake it for other replicas' commits.
pub struct Waiters {
    map: Mutex<HashMap<SessionKey, watch::Sender<u64>>>,
    /// The map's size after its last sweep (see [`Waiters::subscribe`]).
    swept: AtomicUsize,
    /// Long-polls parked at this moment.
    parked: AtomicUsize,
    /// Turned true when a graceful shutdown begins: every parked long-poll
    /// answers `503 shutting_down` at once.
    stopping: watch::Sender<bool>,
}

impl Default for Waiters {
    fn default() -> Waiters {
        Waiters {
            map: Mutex::new(HashMap::new()),
            swept: AtomicUsize::new(0),
            parked: AtomicUsize::new(0),
            stopping: watch::channel(false).0,
        }
    }
}

/// One waiter counted as parked (see [`Waiters::parked`]) while it
/// exists; dropped when the wait ends, however it ends.
struct Parked<'a>(&'a Waiters);

impl<'a> Parked<'a> {
    fn new(waiters: &'a Waiters) -> Parked<'a> {
        waiters.parked.fetch_add(1, Ordering::SeqCst);
        Parked(waiters)
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.0.parked.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Waiters {
    /// Begin a graceful shutdown: every long-poll parked now or later is
    /// answered at once (`503 shutting_down`, which clients retry against
    /// the restarted server) instead of holding the shutdown for up to 300 s.
    pub fn begin_shutdown(&self) {
        self.stopping.send_replace(true);
    }

    /// Whether [`Waiters::begin_shutdown`] was called: long loops (a catch-up of
    /// a million overdue timers) stop between steps instead of holding the
    /// shutdown until they are done.
    pub fn stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Resolves once [`Waiters::begin_shutdown`] was called.
    pub async fn shutting_down(&self) {
        let mut rx = self.stopping.subscribe();
        let _ = rx.wait_for(|stopping| *stopping).await;
    }

    /// Long-polls parked right now, waiting for a decision or an answer
    /// (`/healthz` reports it; tests wait for it before deciding).
    pub fn parked(&self) -> usize {
        self.parked.load(Ordering::SeqCst)
    }

    /// A receiver that sees every later wake-up of `key`. Subscribe before
    /// reading state, so no wake-up can slip between the read and the wait.
    ///
    /// The map holds a sender per session someone watched; a sender nobody
    /// listens to any more is dropped when its session is next woken, and
    /// all of them whenever the map has doubled since the last sweep, so a
    /// long-running server keeps one entry per *watched* session, not one
    /// per session it ever saw.
    pub fn subscribe(&self, key: &SessionKey) -> watch::Receiver<u64> {
        let mut waiters = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if waiters.len() >= 2 * self.swept.load(Ordering::Relaxed).max(MIN_SWEEP) {
            waiters.retain(|_, tx| tx.receiver_count() > 0);
            self.swept.store(waiters.len(), Ordering::Relaxed);
        }
        waiters.entry(key.clone()).or_insert_with(|| watch::channel(0).0).subscribe()
    }

    /// Wake every watcher of `key` (long-polls, hook waits, the web page's
    /// live view): they re-read the session. Called after this process's
    /// commits, and for other replicas' commits when the store tells.
    pub fn wake(&self, key: &SessionKey) {
        let mut waiters = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match waiters.get(key) {
            // Nobody listens: nothing to wake, and nothing to keep.
            Some(tx) if tx.receiver_count() == 0 => {
                waiters.remove(key);
            }
            Some(tx) => tx.send_modify(|n| *n += 1),
            None => {}
        }
    }

    /// Sessions with a sender in the waiters map (tests of the sweep).
    pub fn watched_sessions(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Wake every watcher of every session: the store may have missed
    /// telling about other replicas' commits (a lost connection), so each
    /// re-reads what it waits on. Costs one read per parked waiter.
    pub fn wake_all(&self) {
        let waiters = self.map.lock().unwrap_or_else(|e| e.into_inner());
        for tx in waiters.values() {
            tx.send_modify(|n| *n += 1);
        }
    }
}

/// The waits themselves read the store, so they are the core's.
impl Core {
    /// The latest proposal of `key`, waiting up to `wait` for it to be decided.
    pub async fn wait_decision(&self, key: &SessionKey, wait: Duration) -> Result<Option<Proposal>, StoreError> {
        let mut rx = self.waiters.subscribe(key);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let state = self.load(key).await?;
            let Some(p) = state.latest else { return Ok(None) };
            if p.status != DecisionStatus::Pending || tokio::time::Instant::now() >= deadline {
                return Ok(Some(p));
            }
            let _parked = Parked::new(&self.waiters);
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                // Deadline: answer with the state as it is now.
                continue;
            }
        }
    }

    /// The state of `key`, waiting up to `wait` for an untaken injection
    /// (`[PLAN_DECISION]`, `[PLAN_NUDGE]`) to be there. The wait of a
    /// channel that follows a session for hours: it parks here between
    /// decisions and costs nothing while it does.
    pub async fn wait_injection(&self, key: &SessionKey, wait: Duration) -> Result<plangate_engine::State, StoreError> {
        let mut rx = self.waiters.subscribe(key);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let state = self.load(key).await?;
            if state.session.injection.is_some() || tokio::time::Instant::now() >= deadline {
                return Ok(state);
            }
            let _parked = Parked::new(&self.waiters);
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                continue;
            }
        }
    }

    /// A question of `key`, waiting up to `wait` for its answer.
    pub async fn wait_question(
        &self,
        key: &SessionKey,
        id: ApprovalId,
        wait: Duration,
    ) -> Result<Option<plangate_engine::Question>, StoreError> {
        let mut rx = self.waiters.subscribe(key);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let q = self.blocking(move |s| s.question(&id)).await?;
            let Some(q) = q.filter(|q| q.session == *key) else { return Ok(None) };
            if q.status != plangate_engine::QuestionStatus::Pending || tokio::time::Instant::now() >= deadline {
                return Ok(Some(q));
            }
            let _parked = Parked::new(&self.waiters);
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                continue;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_nobody_listens_to_are_not_kept() {
        let waiters = Waiters::default();
        let key = |n: usize| SessionKey::new("demo", format!("s{n}"));
        // Woken after its watcher left: dropped at once.
        drop(waiters.subscribe(&key(0)));
        waiters.wake(&key(0));
        assert_eq!(waiters.watched_sessions(), 0);
        // A watcher still listening keeps its sender through wakes and sweeps.
        let mut kept = waiters.subscribe(&key(1));
        waiters.wake(&key(1));
        assert!(kept.has_changed().expect("sender alive"));
        kept.borrow_and_update();
        // Many watches that ended without a wake are swept as the map grows.
        for n in 2..10 * MIN_SWEEP {
            drop(waiters.subscribe(&key(n)));
        }
        assert!(waiters.watched_sessions() <= 2 * MIN_SWEEP, "{} senders kept", waiters.watched_sessions());
        waiters.wake(&key(1));
        assert!(kept.has_changed().expect("the listened-to sender survived the sweeps"));
    }
}
