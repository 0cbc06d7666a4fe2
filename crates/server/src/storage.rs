//! Opening the configured store (`[store]`): sled under `server.data_dir`,
//! or PostgreSQL shared by replicas. The only place that names a concrete
//! store type; everything else talks to [`Store`].
//!
//! Both constructors block (sled opens and replays files; the PostgreSQL
//! client is synchronous and panics on an async worker thread), so
//! [`store_from_settings`] must run off the async runtime's workers: call
//! it inside `spawn_blocking`.
//!
//! Once open, the store is held as a [`Storage`]: the store with the
//! server's clock, which every part of the core and the parts beside it
//! (pairing, replicas) share for what they read and write outside a
//! transition: a store call off the async workers, an audit record stamped
//! with the clock's time.

use crate::clock::Clock;
use crate::config::{Settings, StoreConfig};
use plangate_engine::{ApprovalId, AuditEvent, SessionKey, State, Timestamp};
use plangate_store::{PgOptions, PgStore, SledStore, Store, StoreError};
use std::sync::{Arc, OnceLock};

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
        take_over_from_predecessor(&store, &settings.data_dir);
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

/// This replica's predecessor in `data_dir` (the process that ran from it
/// before, most often one a crash or a `kill -9` ended) hands its leases
/// over at once ([`PgStore::take_over_from`]), and this one's name is left
/// for its successor: `data_dir/pg-replica-<schema>`. A failure here costs
/// only time (the leases then run out after `lease_seconds`), so it is
/// logged and the start goes on.
fn take_over_from_predecessor(store: &PgStore, data_dir: &std::path::Path) {
    let note = data_dir.join(format!("pg-replica-{}", store.schema()));
    let previous = std::fs::read_to_string(&note).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    if let Err(e) = std::fs::create_dir_all(data_dir).and_then(|()| std::fs::write(&note, store.replica_id())) {
        tracing::warn!(path = %note.display(), error = %e, "cannot note this replica's name for the next start; a restart after a crash waits for the old leases to run out");
    }
    let Some(previous) = previous.filter(|p| p != store.replica_id()) else { return };
    match store.take_over_from(&previous, 4, std::time::Duration::from_millis(250)) {
        Ok(t) if t.alive => {
            tracing::warn!(previous, "the replica that ran from this data dir before is still connected; its leases are left to it")
        }
        Ok(t) => tracing::info!(
            previous,
            outbox = t.outbox,
            timers = t.timers,
            "took over the leases of the replica that ran from this data dir before"
        ),
        Err(e) => tracing::warn!(previous, error = %e, "cannot take over the previous replica's leases; they run out after lease_seconds"),
    }
}

/// The open store with the clock its records are stamped by. One per
/// process, shared (`Arc`) by the core and the parts that need the store
/// but not the whole core.
pub struct Storage {
    pub store: Arc<dyn Store>,
    /// Where "now" comes from: the system clock, or a test's.
    clock: Arc<dyn Clock>,
    /// What store was opened (set once at start; tests may leave it unset).
    info: OnceLock<StoreInfo>,
}

impl Storage {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Storage {
        Storage { store, clock, info: OnceLock::new() }
    }

    /// The current time, from the clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The clock, for what keeps time beside the core (the web page's links).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Record what store was opened (once, at start).
    pub fn set_info(&self, info: StoreInfo) {
        let _ = self.info.set(info);
    }

    /// What store was opened, if recorded.
    pub fn info(&self) -> Option<&StoreInfo> {
        self.info.get()
    }

    /// Run a blocking store call off the async workers.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(store.as_ref()))
            .await
            .unwrap_or_else(|e| Err(StoreError::Unavailable(format!("store task failed: {e}"))))
    }

    /// A store call from synchronous code that may be running on an async
    /// worker (an adapter's cursor load or save): done on a thread of its
    /// own there, because the PostgreSQL client panics on an async worker;
    /// in place when no runtime is around. For rare calls only.
    pub fn blocking_sync<T: Send>(&self, f: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send) -> Result<T, StoreError> {
        let store = self.store.as_ref();
        if tokio::runtime::Handle::try_current().is_err() {
            return f(store);
        }
        std::thread::scope(|scope| {
            scope.spawn(move || f(store)).join().unwrap_or_else(|_| Err(StoreError::Unavailable("a store call panicked".to_string())))
        })
    }

    pub async fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        let key = key.clone();
        self.blocking(move |s| s.load(&key)).await
    }

    /// Record something that happened outside a transition.
    pub async fn audit(&self, key: &SessionKey, actor: &str, action: &str, approval: Option<(ApprovalId, u32)>, detail: String) {
        let event = AuditEvent {
            at: self.now(),
            agent: key.agent.clone(),
            session_id: key.session_id.clone(),
            actor: actor.to_string(),
            action: action.to_string(),
            approval_id: approval.map(|a| a.0),
            version: approval.map(|a| a.1),
            detail,
        };
        if let Err(e) = self.blocking(move |s| s.append_audit(&[event])).await {
            tracing::warn!(error = %e, "audit record lost");
        }
    }
}
