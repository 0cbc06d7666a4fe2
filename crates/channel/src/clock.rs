//! The one wall clock of the shell: the server's core, the web page's links
//! and the adapters' request windows all read the time through [`Clock`], so
//! a test turns one [`ManualClock`] instead of sleeping.
//!
//! It lives here because every crate that reads the time already depends on
//! this crate or may (the adapters must depend on this crate and the engine
//! only); the engine itself reads no clock: time is an argument of `apply`.

use plangate_engine::Timestamp;
use std::sync::atomic::{AtomicI64, Ordering};

/// The wall clock as the shell sees it: due times, card ages, audit stamps,
/// sign-in links, the age of a signed platform request.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now(&self) -> Timestamp;

    /// Whole seconds since the Unix epoch (what the platforms sign requests
    /// with: Slack's `X-Slack-Request-Timestamp`, Discord's
    /// `X-Signature-Timestamp`).
    fn unix_secs(&self) -> i64 {
        self.now().0.div_euclid(1000)
    }
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        Timestamp(i64::try_from(ms).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to (tests). The default stands at the
/// Unix epoch.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock(AtomicI64::new(start.0))
    }

    /// A manual clock at `secs` seconds since the Unix epoch.
    pub fn at_secs(secs: i64) -> ManualClock {
        ManualClock::new(Timestamp(secs.saturating_mul(1000)))
    }

    /// Move the clock forward by `ms` milliseconds (backward when negative).
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Set the clock to `at`.
    pub fn set(&self, at: Timestamp) {
        self.0.store(at.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_turned_and_floors_seconds() {
        let clock = ManualClock::at_secs(1_760_000_000);
        assert_eq!(clock.unix_secs(), 1_760_000_000);
        clock.advance(999);
        assert_eq!(clock.unix_secs(), 1_760_000_000, "seconds are floored");
        clock.advance(1);
        assert_eq!((clock.now(), clock.unix_secs()), (Timestamp(1_760_000_001_000), 1_760_000_001));
        clock.set(Timestamp(-1));
        assert_eq!(clock.unix_secs(), -1, "floored, not truncated toward zero");
        assert!(SystemClock.unix_secs() > 1_700_000_000);
    }
}
