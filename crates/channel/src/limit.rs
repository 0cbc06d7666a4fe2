//! Outbound rate limiting and retries shared by every adapter.
//!
//! Platforms publish per-chat and global message rates (Telegram: 1/s per
//! chat, 30/s overall; Slack: about 1/s per channel; Discord: 5 per 5 s per
//! channel). Staying under them is cheaper than being throttled, and a 429
//! that still happens is honoured with the server's `retry_after`.
//!
//! Every adapter names what it limits the same way ([`limit_key`]):
//! `<platform>:chat:<id>` for messages into a chat, `<platform>:<scope>:<id>`
//! for other per-thing budgets, and `<platform>:global` for calls that belong
//! to no chat.

use crate::ChannelError;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Key semaphores kept before idle ones are pruned, so replies to arbitrary
/// chats cannot grow the map without bound.
const PRUNE_KEYS_ABOVE: usize = 1024;

/// The rate-limit key of `id` in `scope` on `platform`:
/// `<platform>:<scope>:<id>`, e.g. `telegram:chat:-1001234567890`. `scope` is
/// `chat` for messages into a chat, or what else is budgeted apart (Slack's
/// `user` for modals, `files` for uploads).
pub fn limit_key(platform: &str, scope: &str, id: &str) -> String {
    format!("{platform}:{scope}:{id}")
}

/// The key of calls that belong to no chat: `<platform>:global`.
pub fn global_limit_key(platform: &str) -> String {
    format!("{platform}:global")
}

/// At most `per_key.0` sends per `per_key.1` for each key (chat), and at most
/// `global.0` per `global.1` overall, whatever the network latency.
///
/// # Design: permits held one window past the response
///
/// Each key has a semaphore of `per_key.0` permits and there is one global
/// semaphore of `global.0` permits. A send takes a key permit, then a global
/// one (always in that order: no deadlock, and a busy chat waiting on itself
/// holds no global permit), and holds both as a [`Slot`] from the moment it
/// starts until **one window after its response arrives**: the key permit
/// goes back `per_key.1` after the response, the global one `global.1` after.
///
/// Why not stamp a send when it starts and count stamps in a sliding window?
/// Because the platform counts *arrivals*, and arrival times jitter by a few
/// ms: the first send of a window arriving late and the `limit+1`-th arriving
/// early put `limit+1` arrivals in one window, and the platform answers 429.
///
/// Why holding past the response is enough: take any `limit+1` sends. There
/// are only `limit` permits, so two of them used the same permit (pigeonhole),
/// and the later one started at least a window `W` after the earlier one's
/// response came back. The earlier one had arrived before its response left
/// the server, and the later one arrives after it starts, so their arrivals
/// are at least `W` apart: no window of length `W` at the server ever sees
/// more than `limit` arrivals, whatever the latency. The cost is throughput
/// of `limit / (W + round trip)` instead of `limit / W`: the round-trip
/// fraction, about 0.1–0.3% on loopback.
///
/// Waiters queue on the semaphores in FIFO order and are woken one permit at
/// a time, so a storm of thousands of concurrent sends does not wake every
/// waiter at every release (no thundering herd) and is served in order.
pub struct RateLimiter {
    per_key: (usize, Duration),
    global: (usize, Duration),
    keys: Mutex<KeySemaphores>,
    global_permits: Arc<Semaphore>,
    /// Set by a 429: nothing is sent before this instant.
    paused_until: Mutex<Option<Instant>>,
}

struct KeySemaphores {
    map: HashMap<String, Arc<Semaphore>>,
    /// Prune idle entries when the map grows past this. Doubles when pruning
    /// frees little, so a map of many busy keys is not scanned on every insert.
    prune_above: usize,
}

/// Permission for one send, from [`RateLimiter::acquire`]. Hold it while the
/// send is in flight and drop it as soon as the response arrives: the permits
/// go back one window after the drop (see [`RateLimiter`]). Dropping it on an
/// error, or with a cancelled future, is just as fine: the platform may have
/// seen the request, so the window still runs.
#[must_use = "the send must happen while the Slot is held"]
pub struct Slot {
    /// Each permit with how long after the response it is held.
    permits: Vec<(OwnedSemaphorePermit, Duration)>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let permits = std::mem::take(&mut self.permits);
        // Outside a runtime there is no clock to wait on (e.g. the runtime is
        // gone): release at once rather than never.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let response = Instant::now();
            runtime.spawn(async move {
                let mut permits = permits;
                permits.sort_by_key(|(_, window)| *window);
                for (permit, window) in permits {
                    tokio::time::sleep_until(response + window).await;
                    drop(permit);
                }
            });
        }
    }
}

impl RateLimiter {
    pub fn new(per_key: (usize, Duration), global: (usize, Duration)) -> RateLimiter {
        let per_key = (per_key.0.clamp(1, Semaphore::MAX_PERMITS), per_key.1);
        let global = (global.0.clamp(1, Semaphore::MAX_PERMITS), global.1);
        RateLimiter {
            per_key,
            global,
            keys: Mutex::new(KeySemaphores { map: HashMap::new(), prune_above: PRUNE_KEYS_ABOVE }),
            global_permits: Arc::new(Semaphore::new(global.0)),
            paused_until: Mutex::new(None),
        }
    }

    /// No pacing at all: only a 429's pause, shared by whoever uses this
    /// limiter. For retrying calls the platform does not meter per chat (the
    /// Telegram long poll, a deferred Discord interaction response).
    pub fn unlimited() -> RateLimiter {
        RateLimiter::new((Semaphore::MAX_PERMITS, Duration::ZERO), (Semaphore::MAX_PERMITS, Duration::ZERO))
    }

    /// Wait (in FIFO order) until one more send to `key` fits both limits and
    /// no 429 pause is running, and claim it. Hold the [`Slot`] across the send.
    pub async fn acquire(&self, key: &str) -> Slot {
        let key_semaphore = self.key_semaphore(key);
        // The semaphores are never closed.
        let key_permit = key_semaphore.acquire_owned().await.expect("key semaphore closed");
        let global_permit = self.global_permits.clone().acquire_owned().await.expect("global semaphore closed");
        // Honour a 429 while holding the permits, so the queue behind us stays
        // in order; re-check, as another 429 may have extended the pause. If
        // this future is dropped here, nothing was sent and the permits go
        // back at once.
        while let Some(until) = self.paused_until() {
            tokio::time::sleep_until(until).await;
        }
        Slot { permits: vec![(key_permit, self.per_key.1), (global_permit, self.global.1)] }
    }

    /// Stop every send for `retry_after` (the platform said 429).
    pub fn pause(&self, retry_after: Duration) {
        let mut paused_until = self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        // A retry_after too far out to add is "much later": a day.
        let until = now.checked_add(retry_after).unwrap_or_else(|| now + Duration::from_secs(86_400));
        *paused_until = Some(paused_until.map_or(until, |u| u.max(until)));
    }

    /// The end of the running pause, if one is running.
    fn paused_until(&self) -> Option<Instant> {
        let paused_until = *self.paused_until.lock().unwrap_or_else(|e| e.into_inner());
        paused_until.filter(|until| *until > Instant::now())
    }

    /// The semaphore of `key`, created on first use.
    fn key_semaphore(&self, key: &str) -> Arc<Semaphore> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(semaphore) = keys.map.get(key) {
            return semaphore.clone();
        }
        if keys.map.len() >= keys.prune_above {
            // Idle: every permit back and nobody else holding it (a waiter or
            // a pending release holds an Arc). Under the lock nobody can
            // clone it meanwhile, so a key never has two live semaphores.
            let limit = self.per_key.0;
            keys.map.retain(|_, semaphore| Arc::strong_count(semaphore) > 1 || semaphore.available_permits() < limit);
            keys.prune_above = (keys.map.len() * 2).max(PRUNE_KEYS_ABOVE);
        }
        let semaphore = Arc::new(Semaphore::new(self.per_key.0));
        keys.map.insert(key.to_string(), semaphore.clone());
        semaphore
    }
}

/// How hard to retry a failed send.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (`u32::MAX`: never give up).
    pub attempts: u32,
    /// First backoff for transport errors; doubles each time.
    pub backoff: Duration,
    /// The backoff never grows past this.
    pub max_backoff: Duration,
    /// Give up on a 429 whose retry_after is longer than this.
    pub max_retry_after: Duration,
    /// Which refusals are retried too, like transport errors.
    pub refusals: RetryRefusals,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            refusals: RetryRefusals::None,
        }
    }
}

/// Refusals that [`send_with_retry`] retries with the transport backoff, on
/// top of 429s and transport errors (always retried).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetryRefusals {
    /// None: sending the same refused request again cannot help.
    #[default]
    None,
    /// [`ChannelError::NotFound`]: what the request names may appear
    /// shortly (a Discord interaction whose deferral is not processed yet).
    NotFound,
    /// Every error: for a loop that must go on whatever the platform says
    /// (the Telegram long poll, where a 409 means another poller that may stop).
    All,
}

impl RetryRefusals {
    fn covers(self, error: &ChannelError) -> bool {
        match self {
            RetryRefusals::None => false,
            RetryRefusals::NotFound => matches!(error, ChannelError::NotFound { .. }),
            RetryRefusals::All => true,
        }
    }
}

/// Acquire a slot for `key`, run `send`, and retry: a 429 after its
/// `retry_after` (pausing the whole limiter, as the platforms ask), transport
/// errors (and the refusals `policy.refusals` names) with exponential
/// backoff. Other refusals are not retried: sending the same bad request
/// again cannot help.
///
/// The slot is held across `send` and dropped as soon as its response is in
/// (before any backoff), so the window starts at the response. Every attempt
/// takes a fresh slot: the platform saw the refused request too.
pub async fn send_with_retry<T, F, Fut>(limiter: &RateLimiter, key: &str, policy: RetryPolicy, mut send: F) -> Result<T, ChannelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ChannelError>>,
{
    let mut backoff = policy.backoff.min(policy.max_backoff);
    let mut attempt: u32 = 1;
    loop {
        let slot = limiter.acquire(key).await;
        let result = send().await;
        drop(slot);
        let error = match result {
            Ok(value) => return Ok(value),
            Err(error) if attempt >= policy.attempts => return Err(error),
            Err(error) => error,
        };
        match error {
            ChannelError::RateLimited { retry_after, .. } if retry_after <= policy.max_retry_after => {
                tracing::warn!(key, ?retry_after, attempt, "rate limited; waiting as asked");
                limiter.pause(retry_after);
            }
            ChannelError::RateLimited { .. } => return Err(error),
            error if matches!(error, ChannelError::Transport { .. }) || policy.refusals.covers(&error) => {
                tracing::warn!(key, %error, attempt, ?backoff, "send failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = plangate_basics::backoff::doubled(backoff, policy.max_backoff);
            }
            error => return Err(error),
        }
        attempt = attempt.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn per_key_window_is_respected() {
        let limiter = RateLimiter::new((1, SECOND), (30, SECOND));
        let start = Instant::now();
        for _ in 0..3 {
            drop(limiter.acquire("chat").await);
        }
        assert!(start.elapsed() >= Duration::from_secs(2));
        // Another chat is not held up by the first.
        let other = Instant::now();
        drop(limiter.acquire("other").await);
        assert!(other.elapsed() < Duration::from_millis(10));
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_on_a_key_are_served_in_order_a_window_after_each_release() {
        let limiter = Arc::new(RateLimiter::new((1, SECOND), (30, SECOND)));
        // (who, granted, released)
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for who in 0..3 {
            let (limiter, log) = (limiter.clone(), log.clone());
            tasks.push(tokio::spawn(async move {
                let slot = limiter.acquire("chat").await;
                let granted = Instant::now();
                tokio::time::sleep(Duration::from_millis(100)).await; // the send
                drop(slot);
                log.lock().unwrap().push((who, granted, Instant::now()));
            }));
            // Let it queue before the next one calls.
            tokio::task::yield_now().await;
        }
        for task in tasks {
            task.await.unwrap();
        }
        let log = log.lock().unwrap();
        assert_eq!(log.iter().map(|(who, ..)| *who).collect::<Vec<_>>(), [0, 1, 2]);
        for pair in log.windows(2) {
            let (_, _, released) = pair[0];
            let (_, granted, _) = pair[1];
            assert!(granted.duration_since(released) >= SECOND, "granted {:?} after the release", granted.duration_since(released));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_key_does_not_hold_up_another() {
        let limiter = Arc::new(RateLimiter::new((1, SECOND), (30, SECOND)));
        let held = limiter.acquire("busy").await;
        // Someone queued behind the busy key (holding no global permit).
        let queued = {
            let limiter = limiter.clone();
            tokio::spawn(async move { drop(limiter.acquire("busy").await) })
        };
        tokio::task::yield_now().await;
        let start = Instant::now();
        drop(limiter.acquire("other").await);
        assert_eq!(start.elapsed(), Duration::ZERO);
        drop(held);
        queued.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured_then_success() {
        let limiter = RateLimiter::new((100, SECOND), (100, SECOND));
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let result = send_with_retry(&limiter, "c", RetryPolicy::default(), || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err(ChannelError::RateLimited { platform: "test", retry_after: Duration::from_secs(3) })
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(result.unwrap(), 1);
        assert!(start.elapsed() >= Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_pauses_every_key() {
        let limiter = Arc::new(RateLimiter::new((1, SECOND), (30, SECOND)));
        let start = Instant::now();
        let limited = {
            let limiter = limiter.clone();
            tokio::spawn(async move {
                let calls = AtomicU32::new(0);
                send_with_retry(&limiter, "a", RetryPolicy::default(), || {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        match n {
                            0 => Err(ChannelError::RateLimited { platform: "test", retry_after: Duration::from_secs(3) }),
                            _ => Ok(Instant::now()),
                        }
                    }
                })
                .await
            })
        };
        // The 429 has been answered and the pause set.
        tokio::time::sleep(Duration::from_millis(10)).await;
        let other = send_with_retry(&limiter, "b", RetryPolicy::default(), || async { Ok(Instant::now()) }).await.unwrap();
        assert!(other.duration_since(start) >= Duration::from_secs(3), "key b sent after {:?}", other.duration_since(start));
        let retried = limited.await.unwrap().unwrap();
        assert!(retried.duration_since(start) >= Duration::from_secs(3), "key a retried after {:?}", retried.duration_since(start));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_send_releases_its_permits_a_window_later() {
        let limiter = RateLimiter::new((1, SECOND), (1, Duration::from_secs(2)));
        let never = send_with_retry(&limiter, "c", RetryPolicy::default(), || async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        });
        assert!(tokio::time::timeout(Duration::from_millis(100), never).await.is_err());
        let cancelled = Instant::now();
        // The global permit (window 2 s) is the later one back.
        drop(limiter.acquire("c").await);
        assert_eq!(cancelled.elapsed(), Duration::from_secs(2));
        assert_eq!(limiter.global_permits.available_permits(), 0);
        tokio::time::sleep(Duration::from_secs(2) + Duration::from_millis(1)).await;
        assert_eq!(limiter.global_permits.available_permits(), 1);
    }

    #[test]
    fn a_slot_dropped_outside_a_runtime_releases_at_once() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let limiter = RateLimiter::new((1, SECOND), (1, SECOND));
        let slot = runtime.block_on(limiter.acquire("c"));
        assert_eq!(limiter.global_permits.available_permits(), 0);
        drop(slot);
        assert_eq!(limiter.global_permits.available_permits(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_keys_are_pruned() {
        let limiter = RateLimiter::new((1, SECOND), (100_000, SECOND));
        for i in 0..5_000 {
            drop(limiter.acquire(&format!("chat{i}")).await);
            if i % 100 == 99 {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        let keys = limiter.keys.lock().unwrap().map.len();
        assert!(keys <= PRUNE_KEYS_ABOVE + 1, "{keys} key semaphores kept");
    }

    #[tokio::test(start_paused = true)]
    async fn api_errors_are_not_retried() {
        let limiter = RateLimiter::new((100, SECOND), (100, SECOND));
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = send_with_retry(&limiter, "c", RetryPolicy::default(), || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(ChannelError::Api { platform: "test", status: Some(400), message: "bad request".into() }) }
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    /// `send` fails with `errors` in turn, then succeeds; how many calls it took.
    async fn run_failing(policy: RetryPolicy, errors: Vec<ChannelError>) -> (Result<u32, ChannelError>, u32) {
        let limiter = RateLimiter::unlimited();
        let errors = Mutex::new(errors.into_iter());
        let calls = AtomicU32::new(0);
        let result = send_with_retry(&limiter, "k", policy, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            let next = errors.lock().unwrap().next();
            async move { next.map_or(Ok(n), Err) }
        })
        .await;
        (result, calls.load(Ordering::SeqCst))
    }

    fn not_found() -> ChannelError {
        ChannelError::NotFound { platform: "test", message: "Unknown interaction".into() }
    }

    #[tokio::test(start_paused = true)]
    async fn refusals_are_retried_only_when_the_policy_says() {
        let (result, calls) = run_failing(RetryPolicy::default(), vec![not_found()]).await;
        assert!(matches!(result, Err(ChannelError::NotFound { .. })) && calls == 1);

        let policy = RetryPolicy { refusals: RetryRefusals::NotFound, ..RetryPolicy::default() };
        let start = Instant::now();
        let (result, calls) = run_failing(policy, vec![not_found(), not_found()]).await;
        assert_eq!((result.unwrap(), calls), (2, 3));
        assert_eq!(start.elapsed(), policy.backoff * 3, "backed off like a transport error: 1x then 2x");
        let forbidden = ChannelError::Forbidden { platform: "test", message: "Missing Permissions".into() };
        let (result, calls) = run_failing(policy, vec![forbidden]).await;
        assert!(matches!(result, Err(ChannelError::Forbidden { .. })) && calls == 1, "only NotFound");

        let conflict = || ChannelError::Api { platform: "test", status: Some(409), message: "Conflict".into() };
        let policy = RetryPolicy { refusals: RetryRefusals::All, ..RetryPolicy::default() };
        let (result, calls) = run_failing(policy, vec![conflict(), conflict(), conflict()]).await;
        assert_eq!((result.unwrap(), calls), (3, 4));
        let (result, calls) = run_failing(policy, vec![conflict(), conflict(), conflict(), conflict()]).await;
        assert!(matches!(result, Err(ChannelError::Api { status: Some(409), .. })) && calls == 4, "attempts still bound it");
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_up_to_its_cap_and_never_gives_up_with_max_attempts() {
        let policy = RetryPolicy {
            attempts: u32::MAX,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(4),
            max_retry_after: Duration::MAX,
            refusals: RetryRefusals::All,
        };
        let transport = || ChannelError::Transport { platform: "test", status: Some(502), message: "Bad Gateway".into() };
        let start = Instant::now();
        let (result, calls) = run_failing(policy, (0..6).map(|_| transport()).collect()).await;
        assert_eq!((result.unwrap(), calls), (6, 7));
        assert_eq!(start.elapsed(), Duration::from_secs(1 + 2 + 4 + 4 + 4 + 4));
        // A retry_after too long to add to the clock does not panic.
        let limiter = RateLimiter::unlimited();
        let gave_up = tokio::time::timeout(
            Duration::from_secs(3600),
            send_with_retry(&limiter, "k", policy, || async {
                Err::<(), _>(ChannelError::RateLimited { platform: "test", retry_after: Duration::MAX })
            }),
        )
        .await;
        assert!(gave_up.is_err(), "still waiting as asked");
    }

    #[tokio::test(start_paused = true)]
    async fn unlimited_does_not_pace() {
        let limiter = RateLimiter::unlimited();
        let start = Instant::now();
        for _ in 0..1000 {
            drop(limiter.acquire("k").await);
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[test]
    fn keys_follow_one_scheme() {
        assert_eq!(limit_key("telegram", "chat", "-100123"), "telegram:chat:-100123");
        assert_eq!(limit_key("slack", "files", "C1"), "slack:files:C1");
        assert_eq!(global_limit_key("slack"), "slack:global");
    }

    /// Deterministic pseudo-random latency in 0..=40 ms (Knuth's MMIX LCG).
    fn jitter(state: &mut u64) -> Duration {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        Duration::from_millis((*state >> 33) % 41)
    }

    /// The most arrivals any window `[t, t + w)` holds (a strict sliding
    /// window prunes arrivals with `now - t >= w`).
    fn busiest_window(arrivals: &mut [Instant], w: Duration) -> usize {
        arrivals.sort();
        let mut first = 0;
        let mut most = 0;
        for last in 0..arrivals.len() {
            while arrivals[last].duration_since(arrivals[first]) >= w {
                first += 1;
            }
            most = most.max(last - first + 1);
        }
        most
    }

    /// A storm against a fake server that, like the platforms, enforces strict
    /// sliding windows on request *arrival* times, with 0–40 ms of jitter each
    /// way. 30 keys make both limits bind (20 sends per key at 1/s, 600 at
    /// 30/s: 20 s each), so a per-key overrun shows too. Stamping a send when
    /// it starts (the old design) fails this: late and early arrivals crowd a
    /// window.
    #[tokio::test(start_paused = true)]
    async fn jittered_latency_never_overfills_a_server_window() {
        const W: Duration = Duration::from_secs(1);
        const GLOBAL: usize = 30;
        const KEYS: usize = 30;
        const SENDS: usize = 600;
        let limiter = Arc::new(RateLimiter::new((1, W), (GLOBAL, W)));
        let arrivals = Arc::new(Mutex::new(HashMap::<usize, Vec<Instant>>::new()));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for i in 0..SENDS {
            let (limiter, arrivals) = (limiter.clone(), arrivals.clone());
            tasks.push(tokio::spawn(async move {
                let key = i % KEYS;
                let mut rng = i as u64 ^ 0x9E37_79B9_7F4A_7C15;
                send_with_retry(&limiter, &format!("chat{key}"), RetryPolicy::default(), || {
                    let (there, back) = (jitter(&mut rng), jitter(&mut rng));
                    let arrivals = arrivals.clone();
                    async move {
                        tokio::time::sleep(there).await;
                        arrivals.lock().unwrap().entry(key).or_default().push(Instant::now());
                        tokio::time::sleep(back).await;
                        Ok::<_, ChannelError>(())
                    }
                })
                .await
            }));
        }
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let elapsed = start.elapsed();
        let mut per_key = arrivals.lock().unwrap().clone();
        let mut all: Vec<Instant> = per_key.values().flatten().copied().collect();
        assert_eq!(all.len(), SENDS);
        let global_most = busiest_window(&mut all, W);
        let crowded_keys = per_key.values_mut().map(|log| busiest_window(log, W)).filter(|most| *most > 1).count();
        let ideal = W * (SENDS / GLOBAL) as u32;
        assert!(
            global_most <= GLOBAL && crowded_keys == 0,
            "a window of {W:?} saw {global_most} arrivals overall (limit {GLOBAL}); {crowded_keys} of {KEYS} keys saw 2+ in one window; took {elapsed:?}"
        );
        assert!(elapsed.abs_diff(ideal) <= ideal / 10, "took {elapsed:?}, ideal {ideal:?}");
    }
}
