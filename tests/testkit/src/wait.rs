//! Waiting for a fake to see something: looked at again each time the
//! fake records, never on a timer.

use std::time::Duration;
use tokio::sync::watch;

/// The first `Some` of `check`, tried now and after each change `changed`
/// announces; after `within`, a panic with `failure`'s text.
pub async fn until<T>(
    changed: &watch::Sender<u64>,
    within: Duration,
    mut check: impl FnMut() -> Option<T>,
    failure: impl FnOnce() -> String,
) -> T {
    let mut seen = changed.subscribe();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(found) = check() {
            return found;
        }
        if tokio::time::timeout_at(deadline, seen.changed()).await.is_err() {
            panic!("{}", failure());
        }
    }
}
