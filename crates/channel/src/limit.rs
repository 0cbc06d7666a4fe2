//! Outbound rate limiting and retries shared by every adapter.
//!
//! Platforms publish per-chat and global message rates (Telegram: 1/s per
//! chat, 30/s overall; Slack: about 1/s per channel; Discord: 5 per 5 s per
//! channel). Staying under them is cheaper than being throttled, and a 429
//! that still happens is honoured with the server's `retry_after`.

use crate::ChannelError;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A sliding-window limiter: at most `per_key.0` sends per `per_key.1` for
/// each key (chat), and at most `global.0` per `global.1` overall.
pub struct RateLimiter {
    per_key: (usize, Duration),
    global: (usize, Duration),
    state: Mutex<LimiterState>,
}

#[derive(Default)]
struct LimiterState {
    keys: HashMap<String, VecDeque<Instant>>,
    global: VecDeque<Instant>,
    /// Set by a 429: nothing is sent before this instant.
    paused_until: Option<Instant>,
}

impl RateLimiter {
    pub fn new(per_key: (usize, Duration), global: (usize, Duration)) -> RateLimiter {
        RateLimiter {
            per_key: (per_key.0.max(1), per_key.1),
            global: (global.0.max(1), global.1),
            state: Mutex::new(LimiterState::default()),
        }
    }

    /// Wait until one more send to `key` fits both windows, and claim it.
    pub async fn acquire(&self, key: &str) {
        loop {
            let wait = {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let now = Instant::now();
                let paused = state.paused_until.filter(|until| *until > now).map(|until| until - now);
                let global_wait = window_wait(&mut state.global, self.global, now);
                let key_wait = window_wait(state.keys.entry(key.to_string()).or_default(), self.per_key, now);
                match paused.into_iter().chain(global_wait).chain(key_wait).max() {
                    Some(wait) => wait,
                    None => {
                        state.global.push_back(now);
                        state.keys.entry(key.to_string()).or_default().push_back(now);
                        return;
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// Stop every send for `retry_after` (the platform said 429).
    pub fn pause(&self, retry_after: Duration) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let until = Instant::now() + retry_after;
        state.paused_until = Some(state.paused_until.map_or(until, |u| u.max(until)));
    }
}

/// How long until one more event fits `(limit, window)`, or `None` if it fits now.
fn window_wait(log: &mut VecDeque<Instant>, (limit, window): (usize, Duration), now: Instant) -> Option<Duration> {
    while log.front().is_some_and(|t| now.duration_since(*t) >= window) {
        log.pop_front();
    }
    if log.len() < limit {
        None
    } else {
        log.front().map(|oldest| window.saturating_sub(now.duration_since(*oldest)).max(Duration::from_millis(1)))
    }
}

/// How hard to retry a failed send.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// First backoff for transport errors; doubles each time.
    pub backoff: Duration,
    /// Give up on a 429 whose retry_after is longer than this.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { attempts: 4, backoff: Duration::from_millis(500), max_retry_after: Duration::from_secs(60) }
    }
}

/// Acquire a slot for `key`, run `send`, and retry: a 429 after its
/// `retry_after` (pausing the whole limiter, as the platforms ask), transport
/// errors with exponential backoff. API refusals are not retried: sending the
/// same bad request again cannot help.
pub async fn send_with_retry<T, F, Fut>(limiter: &RateLimiter, key: &str, policy: RetryPolicy, mut send: F) -> Result<T, ChannelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ChannelError>>,
{
    let mut backoff = policy.backoff;
    let mut attempt = 1;
    loop {
        limiter.acquire(key).await;
        match send().await {
            Ok(value) => return Ok(value),
            Err(ChannelError::RateLimited { retry_after, .. }) if attempt < policy.attempts && retry_after <= policy.max_retry_after => {
                tracing::warn!(key, ?retry_after, attempt, "rate limited; waiting as asked");
                limiter.pause(retry_after);
            }
            Err(ChannelError::Transport { message, .. }) if attempt < policy.attempts => {
                tracing::warn!(key, %message, attempt, ?backoff, "send failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            Err(other) => return Err(other),
        }
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn per_key_window_is_respected() {
        let limiter = RateLimiter::new((1, Duration::from_secs(1)), (30, Duration::from_secs(1)));
        let start = Instant::now();
        for _ in 0..3 {
            limiter.acquire("chat").await;
        }
        assert!(start.elapsed() >= Duration::from_secs(2));
        // Another chat is not held up by the first.
        let other = Instant::now();
        limiter.acquire("other").await;
        assert!(other.elapsed() < Duration::from_millis(10));
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured_then_success() {
        let limiter = RateLimiter::new((100, Duration::from_secs(1)), (100, Duration::from_secs(1)));
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
    async fn api_errors_are_not_retried() {
        let limiter = RateLimiter::new((100, Duration::from_secs(1)), (100, Duration::from_secs(1)));
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = send_with_retry(&limiter, "c", RetryPolicy::default(), || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(ChannelError::Api { platform: "test", message: "chat not found".into() }) }
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
