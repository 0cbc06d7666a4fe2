//! Roles: the one inbound platform connection per platform ("telegram",
//! "slack", "discord") that only one replica holds at a time. One process
//! on sled holds every role; replicas on a shared store take part in the
//! store's election, once per role.

use super::lock;
use crate::metrics::Metrics;
use plangate_store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// Per role, whether this process holds it, as the store's election says.
pub struct Roles {
    leaders: Mutex<HashMap<&'static str, Arc<watch::Sender<bool>>>>,
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
}

impl Roles {
    pub fn new(store: Arc<dyn Store>, metrics: Arc<Metrics>) -> Roles {
        Roles { leaders: Mutex::new(HashMap::new()), store, metrics }
    }

    /// Whether this process may hold `role`'s one inbound platform
    /// connection ("telegram", "slack", "discord"; see
    /// [`plangate_channel::Leadership`]). One process on sled always may;
    /// replicas on a shared store take part in the store's election, once
    /// per role (later calls share the first one's watch).
    pub fn leadership(&self, role: &'static str) -> plangate_channel::Leadership {
        let mut leaders = lock(&self.leaders);
        if let Some(tx) = leaders.get(role) {
            return tx.subscribe();
        }
        if !self.store.shared() {
            let tx = Arc::new(watch::channel(true).0);
            self.metrics.set_leader(role, true);
            let rx = tx.subscribe();
            leaders.insert(role, tx);
            return rx;
        }
        let tx = Arc::new(watch::channel(false).0);
        self.metrics.set_leader(role, false);
        let rx = tx.subscribe();
        leaders.insert(role, tx.clone());
        drop(leaders);
        let metrics = self.metrics.clone();
        let listener: plangate_store::LeaderListener = Arc::new(move |leading: bool| {
            let was = tx.send_replace(leading);
            metrics.set_leader(role, leading);
            match (was, leading) {
                (false, true) => tracing::info!(role, "became leader for {role}"),
                (true, false) => tracing::warn!(role, "lost leadership for {role}"),
                _ => {}
            }
        });
        // The store call may block (PostgreSQL): never on an async worker.
        let store = self.store.clone();
        let elect = move || {
            if let Err(e) = store.elect_leader(role, listener) {
                tracing::error!(role, error = %e, "cannot take part in the election; this replica will not hold {role}");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(elect)),
            Err(_) => elect(),
        }
        rx
    }

    /// The roles this process leads right now (`/healthz`, `/readyz`).
    pub fn leading(&self) -> Vec<&'static str> {
        let mut roles: Vec<&'static str> = lock(&self.leaders).iter().filter(|(_, tx)| *tx.borrow()).map(|(role, _)| *role).collect();
        roles.sort_unstable();
        roles
    }
}
