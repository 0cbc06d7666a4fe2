//! Opening the configured store (`[store]`): sled under `server.data_dir`,
//! or PostgreSQL shared by replicas. The only place that names a concrete
//! store type; everything else talks to [`Store`].
//!
//! Both constructors block (sled opens and replays files; the PostgreSQL
//! client is synchronous and panics on an async worker thread), so
//! [`store_from_settings`] must run off the async runtime's workers: call
//! it inside `spawn_blocking`.

use crate::config::{Settings, StoreConfig};
use plangate_store::{PgOptions, PgStore, SledStore, Store, StoreError};
use std::sync::Arc;

/// What was opened, for the logs and `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// `"sled"` or `"postgres"`.
    pub backend: &'static str,
    /// Where: the data dir, or the PostgreSQL URL (password masked) and schema.
    pub location: String,
    /// This process's id among the replicas (PostgreSQL only).
    pub replica_id: Option<String>,
}

/// The [`PgOptions`] of a `[store]` section (backend = "postgres").
pub fn pg_options(store: &StoreConfig) -> PgOptions {
    let mut options = PgOptions::new(store.postgres_url.clone().unwrap_or_default().trim().to_string());
    options.schema = store.postgres_schema.clone();
    options.pool_size = store.pool_size;
    options.lease = store.lease();
    options
}

/// Open the store `settings` configure. Blocking: see the module docs.
pub fn store_from_settings(settings: &Settings) -> Result<(Arc<dyn Store>, StoreInfo), StoreError> {
    let config = &settings.raw.store;
    if config.is_postgres() {
        let options = pg_options(config);
        let store = PgStore::open(&options)?;
        let info = StoreInfo {
            backend: "postgres",
            location: format!("{} (schema {})", crate::config::mask_url_password(&options.url), options.schema),
            replica_id: Some(store.replica_id().to_string()),
        };
        Ok((Arc::new(store), info))
    } else {
        let store = SledStore::open(&settings.data_dir)?;
        let info = StoreInfo { backend: "sled", location: settings.data_dir.display().to_string(), replica_id: None };
        Ok((Arc::new(store), info))
    }
}
