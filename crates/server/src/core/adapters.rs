//! The channel adapters this process started, by name ("telegram",
//! "slack", "discord"), each wrapped so that `/metrics` counts its calls,
//! and their connection state for `/readyz`.

use crate::metrics::{Metered, Metrics};
use plangate_channel::{Channel, Liveness};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// The core's part that holds the started adapters.
pub struct Adapters {
    channels: RwLock<HashMap<String, Arc<dyn Channel>>>,
    /// Each started channel's connection state, for `/readyz`.
    liveness: RwLock<Vec<(&'static str, Liveness)>>,
    metrics: Arc<Metrics>,
}

impl Adapters {
    pub fn new(metrics: Arc<Metrics>) -> Adapters {
        Adapters { channels: RwLock::new(HashMap::new()), liveness: RwLock::new(Vec::new()), metrics }
    }

    pub fn register(&self, channel: Arc<dyn Channel>) {
        let channel: Arc<dyn Channel> = Arc::new(Metered { inner: channel, metrics: self.metrics.clone() });
        self.channels.write().unwrap_or_else(|e| e.into_inner()).insert(channel.name().to_string(), channel);
    }

    /// Report `name`'s connection state on `/readyz`.
    pub fn register_liveness(&self, name: &'static str, liveness: Liveness) {
        self.liveness.write().unwrap_or_else(|e| e.into_inner()).push((name, liveness));
    }

    /// Each started channel and whether it is connected (else why not); a
    /// follower replica's channel is ready with a note that says so.
    pub fn readiness(&self) -> Vec<(&'static str, Result<Option<&'static str>, String>)> {
        self.liveness.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(name, l)| (*name, l.status())).collect()
    }

    pub fn channel(&self, name: &str) -> Option<Arc<dyn Channel>> {
        self.channels.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }
}
