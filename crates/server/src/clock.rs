//! Where the shell reads the time: the one [`Clock`] of the server, the web
//! page and the adapters (`plangate_channel::clock`). The engine takes time
//! as an argument; the shell asks a clock, so tests turn time forward
//! instead of sleeping.

pub use plangate_channel::clock::{Clock, ManualClock, SystemClock};
use std::sync::Arc;

#[cfg(debug_assertions)]
pub use turned::{TurnedClock, TEST_CLOCK_ENV};

/// The clock `plangate serve` runs on, and in a debug build the handle
/// that turns it when a test asked for one.
pub struct ServeClock {
    pub clock: Arc<dyn Clock>,
    /// Set in a debug build started with [`TEST_CLOCK_ENV`]: what the
    /// test-only endpoint turns.
    #[cfg(debug_assertions)]
    pub turned: Option<Arc<TurnedClock>>,
}

/// The system clock; in a **debug build** started with [`TEST_CLOCK_ENV`],
/// a [`TurnedClock`].
#[cfg(debug_assertions)]
pub fn for_serve() -> Result<ServeClock, String> {
    match std::env::var(TEST_CLOCK_ENV) {
        Err(_) => Ok(ServeClock { clock: Arc::new(SystemClock), turned: None }),
        Ok(ahead) => {
            let ahead: i64 = ahead.trim().parse().map_err(|_| format!("{TEST_CLOCK_ENV}={ahead:?} is not a number of milliseconds"))?;
            let turned = Arc::new(TurnedClock::new(ahead));
            tracing::warn!(
                ahead_ms = ahead,
                "{TEST_CLOCK_ENV} is set: running on a test clock that POST /v1/operator/test/clock turns (debug build only)"
            );
            Ok(ServeClock { clock: turned.clone(), turned: Some(turned) })
        }
    }
}

/// The system clock (a release build has no test clock at all).
#[cfg(not(debug_assertions))]
pub fn for_serve() -> Result<ServeClock, String> {
    Ok(ServeClock { clock: Arc::new(SystemClock) })
}

/// The end-to-end tests' clock. Compiled into debug builds only (what
/// `cargo test` runs), so no release binary can be put on it; and even a
/// debug build runs on it only when started with [`TEST_CLOCK_ENV`].
#[cfg(debug_assertions)]
mod turned {
    use super::{Clock, SystemClock};
    use plangate_engine::Timestamp;
    use std::sync::atomic::{AtomicI64, Ordering};

    /// Set (to a number of milliseconds, usually `0`) for a debug build of
    /// `plangate serve` to run that far ahead of the system clock, and to
    /// serve `POST /v1/operator/test/clock` (`{"advance_ms": N}`), which
    /// turns it further: timers due by then fire at once, instead of the
    /// test sleeping until they are due. A test restarting a server passes
    /// the offset it had reached, so time never runs backwards.
    pub const TEST_CLOCK_ENV: &str = "PLANGATE_TEST_CLOCK_MS";

    /// The system clock, ahead by an offset that only grows.
    #[derive(Debug)]
    pub struct TurnedClock {
        ahead: AtomicI64,
    }

    impl TurnedClock {
        pub fn new(ahead_ms: i64) -> TurnedClock {
            TurnedClock { ahead: AtomicI64::new(ahead_ms) }
        }

        /// Turn forward by `ms` (never back); returns the new time.
        pub fn turn(&self, ms: i64) -> Timestamp {
            self.ahead.fetch_add(ms.max(0), Ordering::SeqCst);
            self.now()
        }
    }

    impl Clock for TurnedClock {
        fn now(&self) -> Timestamp {
            Timestamp(SystemClock.now().0.saturating_add(self.ahead.load(Ordering::SeqCst)))
        }
    }
}
