//! Connections: the pool, the prepared statements kept with each pooled
//! connection, running an operation on one (retried once on a connection
//! found dead), and how PostgreSQL's errors become [`StoreError`]s.

use super::open::CONNECT_TIMEOUT;
use super::PgStore;
use crate::{Committed, Preempted, StoreError};
use postgres::types::ToSql;
use postgres::{Client, GenericClient, NoTls, Row, Statement, Transaction};
use r2d2_postgres::PostgresConnectionManager;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
    pub(super) config: postgres::Config,
    pub(super) schema: String,
    pub(super) replica: String,
    /// `host:port/database`, for messages.
    pub(super) target: String,
    /// Set when the [`PgStore`] is dropped: its threads end.
    pub(super) closed: AtomicBool,
}

impl Shared {
    /// A connection of its own (not pooled), named for `pg_stat_activity`.
    pub(crate) fn connect(&self, purpose: &str) -> Result<Client, postgres::Error> {
        let mut config = self.config.clone();
        config.application_name(&format!("plangate {purpose} {}", self.replica));
        config.connect(NoTls)
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

pub(super) type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;

/// Prepared statements of one pooled connection, kept with it in the pool
/// (r2d2's per-connection extensions): a statement is parsed once per
/// connection, not once per call.
#[derive(Default)]
pub(super) struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    pub(super) fn get(&mut self, client: &mut impl GenericClient, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.0.get(sql) {
            return Ok(s.clone());
        }
        let s = client.prepare(sql)?;
        self.0.insert(sql, s.clone());
        Ok(s)
    }

    pub(super) fn execute(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let s = self.get(c, sql)?;
        c.execute(&s, params)
    }

    pub(super) fn query(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let s = self.get(c, sql)?;
        c.query(&s, params)
    }

    pub(super) fn query_opt(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let s = self.get(c, sql)?;
        c.query_opt(&s, params)
    }

    pub(super) fn query_one(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        let s = self.get(c, sql)?;
        c.query_one(&s, params)
    }
}

/// A pooled connection with its prepared statements.
pub(super) struct Conn {
    pub(super) pooled: r2d2::PooledConnection<PostgresConnectionManager<NoTls>>,
    pub(super) stmts: Statements,
}

impl Drop for Conn {
    fn drop(&mut self) {
        let stmts = std::mem::take(&mut self.stmts);
        r2d2::PooledConnection::extensions_mut(&mut self.pooled).insert(stmts);
    }
}

/// The pool, closed on a thread of its own when the store is dropped.
///
/// Closing a `postgres` connection blocks on the client's own runtime,
/// which panics on a thread that runs an async runtime: the server drops
/// its store at the end of `main`, on one. A fresh thread has none.
pub(super) struct OffThreadDrop(pub(super) Option<Pool>);

impl std::ops::Deref for OffThreadDrop {
    type Target = Pool;
    fn deref(&self) -> &Pool {
        // `Some` from construction until `drop`, which nothing outlives.
        self.0.as_ref().expect("the pool lives as long as its store")
    }
}

impl Drop for OffThreadDrop {
    fn drop(&mut self) {
        if let Some(pool) = self.0.take() {
            let closing = std::thread::Builder::new().name("plangate-pg-close".into()).spawn(move || drop(pool));
            if let Ok(thread) = closing {
                let _ = thread.join();
            }
        }
    }
}

impl PgStore {
    pub(super) fn conn(&self, what: &str) -> Result<Conn, StoreError> {
        let mut pooled = self.pool.get().map_err(|e| {
            StoreError::Unavailable(format!(
                "no PostgreSQL connection for {what} within {}s: {e}; is PostgreSQL running at {}? (or raise the pool size if every connection is busy)",
                CONNECT_TIMEOUT.as_secs(),
                self.shared.target
            ))
        })?;
        let stmts = r2d2::PooledConnection::extensions_mut(&mut pooled).remove::<Statements>().unwrap_or_default();
        Ok(Conn { pooled, stmts })
    }

    /// A connection of its own, outside the pool (for long work like a
    /// migration).
    pub(crate) fn dedicated(&self, purpose: &str) -> Result<Client, StoreError> {
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
    pub(super) fn retrying<T>(
        &self,
        what: &str,
        f: impl FnMut(&mut Client, &mut Statements) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        self.retrying_raw(what, f).map_err(|failure| self.fail(what, failure))
    }

    /// [`PgStore::retrying`], with the failure as it came (for
    /// [`PgStore::conditional`]).
    pub(super) fn retrying_raw<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut Client, &mut Statements) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        let mut conn = self.conn(what)?;
        match f(&mut conn.pooled, &mut conn.stmts) {
            Err(Failure::Pg(e)) if connection_lost(&e) => {
                tracing::debug!(error = %e, "a pooled PostgreSQL connection was dead; retrying on a fresh one");
                drop(conn);
                let mut conn = self.conn(what)?;
                f(&mut conn.pooled, &mut conn.stmts)
            }
            other => other,
        }
    }

    /// Run `f` in a transaction, retried on a fresh connection only when
    /// `BEGIN` itself found the pooled connection dead (then nothing ran).
    pub(super) fn transaction<T>(
        &self,
        what: &str,
        f: impl FnMut(&mut Transaction<'_>, &mut Statements) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        self.transaction_raw(what, f).map_err(|failure| self.fail(what, failure))
    }

    /// [`PgStore::transaction`], with the failure as it came (for
    /// [`PgStore::conditional`]).
    pub(super) fn transaction_raw<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut Transaction<'_>, &mut Statements) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        let mut conn = self.conn(what)?;
        let mut retried = false;
        loop {
            let Conn { pooled, stmts } = &mut conn;
            let e = match pooled.transaction() {
                Ok(mut tx) => {
                    return f(&mut tx, stmts).and_then(|value| {
                        tx.commit()?;
                        Ok(value)
                    });
                }
                Err(e) => e,
            };
            if retried || !connection_lost(&e) {
                return Err(Failure::Pg(e));
            }
            retried = true;
            conn = self.conn(what)?;
        }
    }
}
