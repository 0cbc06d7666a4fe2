//! Platform send limits, enforced by the fakes the way the platforms do.
//!
//! Off by default (most tests want every request answered). A benchmark or
//! test turns them on with the fake's `enforce_limits`; from then on every
//! message send or edit is admitted against two strict sliding windows
//! measured on the request's **arrival** time at the fake (per chat and
//! overall), and refused with the platform's own 429 when either is full.
//! Refused requests do not count against the windows. `rate_stats` tells
//! how many were admitted and refused, and when the first and last admitted
//! ones arrived, so a benchmark can report "zero 429s, N per second".

use std::collections::{HashMap, VecDeque};
use std::time::Duration;
use tokio::time::Instant;

/// Send limits: at most `per_chat.0` per `per_chat.1` to one chat (channel),
/// and at most `global.0` per `global.1` in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub per_chat: (usize, Duration),
    pub global: (usize, Duration),
}

impl Limits {
    /// Telegram Bot API: 1 message per second per chat, 30 per second overall.
    pub const TELEGRAM: Limits = Limits { per_chat: (1, Duration::from_secs(1)), global: (30, Duration::from_secs(1)) };
    /// Slack as plangate's defaults assume it: 1 per second per channel, 20 per second per workspace.
    pub const SLACK: Limits = Limits { per_chat: (1, Duration::from_secs(1)), global: (20, Duration::from_secs(1)) };
    /// Discord: 5 messages per 5 seconds per channel, 50 requests per second overall.
    pub const DISCORD: Limits = Limits { per_chat: (5, Duration::from_secs(5)), global: (50, Duration::from_secs(1)) };
}

/// What an enforcing fake admitted and refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateStats {
    pub admitted: u64,
    /// Answered 429.
    pub refused: u64,
    pub first_admitted: Option<Instant>,
    pub last_admitted: Option<Instant>,
}

impl RateStats {
    /// Admitted sends per second between the first and the last one.
    pub fn per_second(&self) -> Option<f64> {
        let span = self.last_admitted?.duration_since(self.first_admitted?).as_secs_f64();
        (span > 0.0).then(|| (self.admitted.saturating_sub(1)) as f64 / span)
    }
}

/// The sliding windows of one fake.
#[derive(Debug, Default)]
pub(crate) struct Enforcer {
    limits: Option<Limits>,
    chats: HashMap<String, VecDeque<Instant>>,
    global: VecDeque<Instant>,
    stats: RateStats,
}

impl Enforcer {
    pub(crate) fn enforce(&mut self, limits: Limits) {
        *self = Enforcer { limits: Some(limits), ..Enforcer::default() };
    }

    pub(crate) fn stats(&self) -> RateStats {
        self.stats
    }

    /// Admit a send to `chat` that arrived at `at`, or say how long until
    /// one would fit (the `retry_after` to answer with).
    pub(crate) fn admit(&mut self, chat: &str, at: Instant) -> Result<(), Duration> {
        let Some(limits) = self.limits else { return Ok(()) };
        let global_wait = wait(&mut self.global, limits.global, at);
        let chat_log = self.chats.entry(chat.to_string()).or_default();
        let chat_wait = wait(chat_log, limits.per_chat, at);
        if let Some(retry_after) = global_wait.into_iter().chain(chat_wait).max() {
            self.stats.refused += 1;
            return Err(retry_after);
        }
        chat_log.push_back(at);
        self.global.push_back(at);
        self.stats.admitted += 1;
        self.stats.first_admitted.get_or_insert(at);
        self.stats.last_admitted = Some(self.stats.last_admitted.map_or(at, |last| last.max(at)));
        Ok(())
    }
}

/// Forget arrivals a full window old; `Some(wait)` when the window is full.
fn wait(log: &mut VecDeque<Instant>, (limit, window): (usize, Duration), at: Instant) -> Option<Duration> {
    while log.front().is_some_and(|t| at.saturating_duration_since(*t) >= window) {
        log.pop_front();
    }
    (log.len() >= limit).then(|| log.front().map_or(window, |oldest| window.saturating_sub(at.saturating_duration_since(*oldest))))
}

/// Whole seconds for a `retry_after` (Telegram and Slack speak integers), at least 1.
pub(crate) fn whole_seconds(d: Duration) -> u64 {
    (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_refuse_the_excess_and_recover() {
        let mut e = Enforcer::default();
        let t0 = Instant::now();
        assert!(e.admit("a", t0).is_ok(), "no limits: everything passes");
        e.enforce(Limits { per_chat: (1, Duration::from_secs(1)), global: (2, Duration::from_secs(1)) });
        assert!(e.admit("a", t0).is_ok());
        assert_eq!(e.admit("a", t0 + Duration::from_millis(400)), Err(Duration::from_millis(600)), "per chat");
        assert!(e.admit("b", t0 + Duration::from_millis(500)).is_ok());
        assert!(e.admit("c", t0 + Duration::from_millis(600)).is_err(), "global");
        assert!(e.admit("a", t0 + Duration::from_secs(1)).is_ok(), "a window later");
        let stats = e.stats();
        assert_eq!((stats.admitted, stats.refused), (3, 2));
        assert_eq!(stats.per_second(), Some(2.0));
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::ZERO), 1);
        assert_eq!(whole_seconds(Duration::from_secs(2)), 2);
        assert_eq!(whole_seconds(Duration::from_millis(2001)), 3);
    }
}
