//! One lock per session key, held from a transition's load to its commit
//! (and by namespace merges), so two commands to one session apply one
//! after the other.
//!
//! Why a lock per key and not a fixed set of stripes: with 64 stripes, 64
//! busy sessions hash onto about 40 of them, and a session waits behind an
//! unrelated one for a whole transition. The whole shell at 64 sessions
//! spent 6.5 ms of each transition's 17 ms waiting so
//! (docs/PERFORMANCE.md §16). An entry lives while someone holds or waits
//! for it, and goes with its last guard, so the map is as large as the
//! sessions busy right now.

use plangate_engine::SessionKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

type KeyLock = Arc<tokio::sync::Mutex<()>>;

#[derive(Default)]
pub(super) struct SessionLocks {
    held: Mutex<HashMap<SessionKey, KeyLock>>,
}

/// Holds the lock of one key; dropping it releases the lock, and the map's
/// entry when nobody else holds or waits for it.
pub(super) struct SessionGuard<'a> {
    locks: &'a SessionLocks,
    key: SessionKey,
    lock: KeyLock,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl SessionLocks {
    /// Wait for `key`'s lock. A wait given up (its future dropped) leaves
    /// the entry to the key's next guard at worst, which removes it.
    pub(super) async fn lock(&self, key: &SessionKey) -> SessionGuard<'_> {
        let lock = self.map().entry(key.clone()).or_default().clone();
        let mut guard = SessionGuard { locks: self, key: key.clone(), lock: lock.clone(), guard: None };
        guard.guard = Some(lock.lock_owned().await);
        guard
    }

    /// Keys with a holder or a waiter (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map().len()
    }

    fn map(&self) -> MutexGuard<'_, HashMap<SessionKey, KeyLock>> {
        // Only clones and removals happen under it: a panic leaves it whole.
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut map = self.locks.map();
        // The map's clone and this guard's: nobody else holds or waits (a
        // new waiter clones under the map's lock, which is held here).
        if Arc::strong_count(&self.lock) == 2 {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_key_excludes_itself_not_others_and_its_entry_goes_with_it() {
        let locks = SessionLocks::default();
        let (a, b) = (SessionKey::new("demo", "a"), SessionKey::new("demo", "b"));
        let held = locks.lock(&a).await;
        // Another key is not held up.
        let other = tokio::time::timeout(Duration::from_millis(100), locks.lock(&b)).await.expect("b is free");
        drop(other);
        // The same key waits until the first guard goes.
        assert!(tokio::time::timeout(Duration::from_millis(50), locks.lock(&a)).await.is_err(), "a is held");
        assert_eq!(locks.len(), 1, "the abandoned waiter left, b's entry went with its guard");
        drop(held);
        assert_eq!(locks.len(), 0);
        let again = tokio::time::timeout(Duration::from_millis(100), locks.lock(&a)).await.expect("a is free again");
        drop(again);
        assert_eq!(locks.len(), 0);
    }

    #[tokio::test]
    async fn a_waiter_keeps_the_entry_until_it_is_done() {
        let locks = Arc::new(SessionLocks::default());
        let a = SessionKey::new("demo", "a");
        let held = locks.lock(&a).await;
        let waiter = {
            let (locks, a) = (locks.clone(), a.clone());
            tokio::spawn(async move {
                let _g = locks.lock(&a).await;
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        assert_eq!(locks.len(), 1, "the waiter holds it now, or is about to");
        waiter.await.unwrap();
        assert_eq!(locks.len(), 0);
    }
}
