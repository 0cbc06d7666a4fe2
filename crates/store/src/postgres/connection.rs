//! Connections: the pool of asynchronous clients and the small runtime
//! they live on, the prepared statements kept with each pooled connection,
//! running an operation on one (retried once on a connection found dead),
//! and how PostgreSQL's errors become [`StoreError`]s. The connections of
//! their own (the change listener, the leader elections, the migrations)
//! use the blocking client on threads of their own.

use super::open::CONNECT_TIMEOUT;
use super::PgStore;
use crate::{Committed, Preempted, StoreError};
use deadpool_postgres::{GenericClient, Object, Transaction};
use postgres::{Client, NoTls};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::runtime::Handle;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error as PgError, Row};

/// How a store operation stopped early: PostgreSQL's error, the store's
/// own (a corrupt record), or a conditional write declined because another
/// replica came first (a value for the caller, see [`PgStore::conditional`]).
#[derive(Debug)]
pub(crate) enum Failure {
    Pg(postgres::Error),
    Store(StoreError),
    Preempted(Preempted),
}

impl From<postgres::Error> for Failure {
    fn from(e: postgres::Error) -> Failure {
        Failure::Pg(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Store(e)
    }
}

/// Whether `e` says the connection is gone (PostgreSQL restarted, the
/// network dropped) rather than that the statement was wrong.
fn connection_lost(e: &postgres::Error) -> bool {
    match e.code() {
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || code.starts_with("57P")
        }
        None => true,
    }
}

/// Whether `e` is a serialization failure or a deadlock: PostgreSQL rolled
/// the transaction back whole, so a conditional write is simply preempted
/// (load again and re-apply).
fn rolled_back_whole(e: &postgres::Error) -> bool {
    e.code().is_some_and(|code| code.code() == "40P01" || code.code() == "40001")
}

/// Map a PostgreSQL error of the operation `what` to a [`StoreError`] that
/// says what to do about it.
pub(crate) fn map_pg(target: &str, what: &str, e: postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let hint = db.hint().map(|h| format!(" (hint: {h})")).unwrap_or_default();
        if code.starts_with("08") || code.starts_with("57P") || code.starts_with("53") {
            return StoreError::Unavailable(format!(
                "PostgreSQL at {target} refused {what}: {} [SQLSTATE {code}]{hint}; is it running, and does it accept more connections?",
                db.message()
            ));
        }
        return StoreError::Postgres(format!("{what}: {} [SQLSTATE {code}]{hint}", db.message()));
    }
    StoreError::Unavailable(format!(
        "PostgreSQL at {target} did not answer {what}: {e}; is PostgreSQL running at {target} and reachable from here?"
    ))
}

/// What the store and its background threads share.
pub(crate) struct Shared {
    /// Connection settings of every connection (`search_path` included).
    pub(super) config: tokio_postgres::Config,
    pub(super) schema: String,
    pub(super) replica: String,
    /// `host:port/database`, for messages.
    pub(super) target: String,
    /// Set when the [`PgStore`] is dropped: its threads end.
    pub(super) closed: AtomicBool,
    /// What committed and is still to be told to the other replicas.
    pub(super) notifier: super::notify::Notifier,
    /// Commits of this store under way (see `commit::Notice`).
    pub(super) commits_under_way: std::sync::atomic::AtomicUsize,
}

impl Shared {
    /// A connection of its own (not pooled), named for `pg_stat_activity`.
    pub(crate) fn connect(&self, purpose: &str) -> Result<Client, postgres::Error> {
        let mut config = self.config.clone();
        config.application_name(format!("plangate {purpose} {}", self.replica));
        postgres::Config::from(config).connect(NoTls)
    }

    pub(crate) fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sleep `d`, waking early when the store is dropped; `false` then.
    pub(crate) fn sleep(&self, d: Duration) -> bool {
        let deadline = std::time::Instant::now() + d;
        while !self.closed() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        false
    }

    /// The `LISTEN`/`NOTIFY` channel of this schema.
    pub(crate) fn channel(&self) -> String {
        format!("plangate_{}", self.schema)
    }
}

/// The pool of connections for the store's operations: `tokio-postgres`
/// clients kept by `deadpool`, each with its prepared statements
/// (`prepare_cached`: a statement is parsed once per connection).
pub(super) type Pool = deadpool_postgres::Pool;

/// Statements by their SQL text, prepared once per pooled connection, on
/// any client or transaction of the pool.
pub(super) trait Prepared: GenericClient {
    async fn exec(&self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, PgError> {
        let statement = self.prepare_cached(sql).await?;
        self.execute(&statement, params).await
    }

    async fn rows(&self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, PgError> {
        let statement = self.prepare_cached(sql).await?;
        self.query(&statement, params).await
    }

    async fn row_opt(&self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, PgError> {
        let statement = self.prepare_cached(sql).await?;
        self.query_opt(&statement, params).await
    }

    async fn row(&self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, PgError> {
        let statement = self.prepare_cached(sql).await?;
        self.query_one(&statement, params).await
    }
}

impl<C: GenericClient> Prepared for C {}

/// The small runtime the pooled connections live on: one worker drives
/// their sockets, and the store's synchronous methods (called from the
/// server's blocking threads, or from a test's plain thread) wait on it
/// with [`Handle::block_on`]. Shut down in the background when the store
/// goes, which may be on an async worker thread (where dropping a runtime
/// the ordinary way panics).
pub(super) struct StoreRuntime(Option<tokio::runtime::Runtime>);

impl StoreRuntime {
    pub(super) fn new() -> Result<StoreRuntime, StoreError> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("plangate-pg")
            .enable_all()
            .build()
            .map(|rt| StoreRuntime(Some(rt)))
            .map_err(|e| StoreError::Unavailable(format!("could not start the PostgreSQL client runtime: {e}")))
    }

    pub(super) fn handle(&self) -> &Handle {
        // `Some` from construction until `drop`, which nothing outlives.
        self.0.as_ref().expect("the runtime lives as long as its store").handle()
    }
}

impl Drop for StoreRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl PgStore {
    /// Run `operation` to its end on the store's runtime, from a thread
    /// that is not an async worker (the store is synchronous).
    pub(super) fn block_on<F: std::future::Future>(&self, operation: F) -> F::Output {
        self.runtime.handle().block_on(operation)
    }

    async fn conn(&self, what: &str) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(|e| {
            StoreError::Unavailable(format!(
                "no PostgreSQL connection for {what} within {}s: {e}; is PostgreSQL running at {}? (or raise the pool size if every connection is busy)",
                CONNECT_TIMEOUT.as_secs(),
                self.shared.target
            ))
        })
    }

    /// A connection of its own, outside the pool, on the blocking client
    /// (`plangate migrate`'s single transaction, on the caller's thread).
    pub(crate) fn dedicated(&self, purpose: &str) -> Result<postgres::Client, StoreError> {
        self.shared.connect(purpose).map_err(|e| map_pg(&self.shared.target, "a connection", e))
    }

    pub(crate) fn failure(&self, what: &str, failure: Failure) -> StoreError {
        self.fail(what, failure)
    }

    pub(super) fn fail(&self, what: &str, failure: Failure) -> StoreError {
        match failure {
            Failure::Pg(e) => map_pg(&self.shared.target, what, e),
            Failure::Store(e) => e,
            // Only conditional writes decline, and they go through
            // `conditional`; anywhere else it is the store's own bug.
            Failure::Preempted(p) => StoreError::Postgres(format!("{what}: {p}")),
        }
    }

    /// The end of a conditional write: written, preempted by another
    /// replica (the write's own check, or PostgreSQL rolling it back as a
    /// serialization failure or deadlock), or failed.
    pub(super) fn conditional<T>(&self, what: &str, result: Result<T, Failure>) -> Result<Committed<T>, StoreError> {
        match result {
            Ok(value) => Ok(Committed::Written(value)),
            Err(Failure::Preempted(p)) => Ok(Committed::Preempted(p)),
            Err(Failure::Pg(e)) if rolled_back_whole(&e) => Ok(Committed::Preempted(Preempted::Conflict)),
            Err(failure) => Err(self.fail(what, failure)),
        }
    }

    /// Run `f` on a pooled connection; once more on a fresh connection when
    /// the first turned out dead (PostgreSQL restarted since it was pooled).
    /// Only for `f` that is safe to run twice (reads, upserts, deletes).
    pub(super) fn retrying<T>(&self, what: &str, f: impl AsyncFnMut(&Object) -> Result<T, Failure>) -> Result<T, StoreError> {
        self.retrying_raw(what, f).map_err(|failure| self.fail(what, failure))
    }

    /// [`PgStore::retrying`], with the failure as it came (for
    /// [`PgStore::conditional`]).
    pub(super) fn retrying_raw<T>(&self, what: &str, mut f: impl AsyncFnMut(&Object) -> Result<T, Failure>) -> Result<T, Failure> {
        self.block_on(async {
            let conn = self.conn(what).await?;
            match f(&conn).await {
                Err(Failure::Pg(e)) if connection_lost(&e) => {
                    tracing::debug!(error = %e, "a pooled PostgreSQL connection was dead; retrying on a fresh one");
                    drop(conn);
                    let conn = self.conn(what).await?;
                    f(&conn).await
                }
                other => other,
            }
        })
    }

    /// Run `f` on one pooled connection, never retried (an operation that
    /// must not run twice).
    pub(super) fn once<T>(&self, what: &str, f: impl AsyncFnOnce(&mut Object) -> Result<T, Failure>) -> Result<T, StoreError> {
        self.block_on(async {
            let mut conn = self.conn(what).await?;
            f(&mut conn).await
        })
        .map_err(|failure| self.fail(what, failure))
    }

    /// Run `f` in a transaction, retried on a fresh connection only when
    /// `BEGIN` itself found the pooled connection dead (then nothing ran).
    pub(super) fn transaction<T>(&self, what: &str, f: impl AsyncFnMut(&Transaction<'_>) -> Result<T, Failure>) -> Result<T, StoreError> {
        self.transaction_raw(what, f).map_err(|failure| self.fail(what, failure))
    }

    /// [`PgStore::transaction`], with the failure as it came (for
    /// [`PgStore::conditional`]).
    pub(super) fn transaction_raw<T>(
        &self,
        what: &str,
        mut f: impl AsyncFnMut(&Transaction<'_>) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        self.block_on(async {
            let mut conn = self.conn(what).await?;
            let mut retried = false;
            loop {
                let e = match conn.transaction().await {
                    Ok(tx) => {
                        // An early return drops `tx`: it rolls back.
                        let value = f(&tx).await?;
                        tx.commit().await?;
                        return Ok(value);
                    }
                    Err(e) => e,
                };
                if retried || !connection_lost(&e) {
                    return Err(Failure::Pg(e));
                }
                retried = true;
                conn = self.conn(what).await?;
            }
        })
    }
}
