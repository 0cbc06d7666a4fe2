//! The PostgreSQL implementation of [`Store`]: several plangate processes
//! (replicas) share one database schema. [`PgStore`]'s documentation says
//! how sharing stays safe; `migrations` holds the tables, `listen` the
//! change notifications, `leader` the elections.

mod leader;
mod listen;
pub(crate) mod migrations;

use crate::sled_store::{decode, encode};
use crate::{AuditQuery, ChangeListener, Commit, LeaderListener, OutboxEntry, Store, StoreError};
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::{
    ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, TimerKind, Timestamp,
};
use postgres::types::ToSql;
use postgres::{Client, GenericClient, NoTls, Row, Statement, Transaction};
use r2d2_postgres::PostgresConnectionManager;
use serde::de::DeserializeOwned;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long opening a connection may take before PostgreSQL counts as down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how to reach PostgreSQL.
#[derive(Clone)]
pub struct PgOptions {
    /// `postgres://user[:password]@host:port/database` or libpq's
    /// `host=… user=… dbname=…` form.
    pub url: String,
    /// The schema holding plangate's tables (created when missing):
    /// `[a-z_][a-z0-9_]{0,40}`. Several plangate deployments can share one
    /// database under different schemas.
    pub schema: String,
    /// Pooled connections per process (the listener and each leader
    /// election use one more of their own).
    pub pool_size: u32,
    /// How long a claimed timer or outbox entry stays this process's after
    /// its last renewal; a replica that dies leaves its work to the others
    /// after this long.
    pub lease: Duration,
}

impl PgOptions {
    /// Schema `plangate`, 16 pooled connections, a 10 s lease.
    pub fn new(url: impl Into<String>) -> PgOptions {
        PgOptions { url: url.into(), schema: "plangate".into(), pool_size: 16, lease: Duration::from_secs(10) }
    }
}

impl fmt::Debug for PgOptions {
    /// The URL's password is not printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgOptions")
            .field("url", &redact(&self.url))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("lease", &self.lease)
            .finish()
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`;
/// `password=secret` → `password=***`.
fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((userinfo, host)) = rest.rsplit_once('@') {
            if let Some((user, _)) = userinfo.split_once(':') {
                return format!("{scheme}://{user}:***@{host}");
            }
        }
        return url.to_string();
    }
    url.split_whitespace()
        .map(|kv| if kv.starts_with("password=") { "password=***".to_string() } else { kv.to_string() })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `[a-z_][a-z0-9_]{0,40}`: safe to splice into SQL and into a channel name.
fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    matches!(chars.next(), Some('a'..='z' | '_')) && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_')) && schema.len() <= 41
}

/// A process-unique name for leases: `hostname-pid-8hex`.
fn new_replica_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    format!("{host}-{}-{:08x}", std::process::id(), rand::random::<u32>())
}

/// A failure inside a store operation: PostgreSQL's, or the store's own
/// refusal (a conflict, a corrupt record).
#[derive(Debug)]
pub(crate) enum Failure {
    Pg(postgres::Error),
    Store(StoreError),
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

/// Map a PostgreSQL error of the operation `what` to a [`StoreError`] that
/// says what to do about it.
pub(crate) fn map_pg(target: &str, what: &str, e: postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        // Both roll the transaction back whole: load again and re-apply.
        if code == "40P01" || code == "40001" {
            return StoreError::Conflict;
        }
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
    config: postgres::Config,
    schema: String,
    replica: String,
    /// `host:port/database`, for messages.
    target: String,
    /// Set when the [`PgStore`] is dropped: its threads end.
    closed: AtomicBool,
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

type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;

/// Prepared statements of one pooled connection, kept with it in the pool
/// (r2d2's per-connection extensions): a statement is parsed once per
/// connection, not once per call.
#[derive(Default)]
struct Statements(HashMap<&'static str, Statement>);

impl Statements {
    fn get(&mut self, client: &mut impl GenericClient, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.0.get(sql) {
            return Ok(s.clone());
        }
        let s = client.prepare(sql)?;
        self.0.insert(sql, s.clone());
        Ok(s)
    }

    fn execute(&mut self, c: &mut impl GenericClient, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, postgres::Error> {
        let s = self.get(c, sql)?;
        c.execute(&s, params)
    }

    fn query(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let s = self.get(c, sql)?;
        c.query(&s, params)
    }

    fn query_opt(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let s = self.get(c, sql)?;
        c.query_opt(&s, params)
    }

    fn query_one(&mut self, c: &mut impl GenericClient, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, postgres::Error> {
        let s = self.get(c, sql)?;
        c.query_one(&s, params)
    }
}

/// A pooled connection with its prepared statements.
struct Conn {
    pooled: r2d2::PooledConnection<PostgresConnectionManager<NoTls>>,
    stmts: Statements,
}

impl Drop for Conn {
    fn drop(&mut self) {
        let stmts = std::mem::take(&mut self.stmts);
        r2d2::PooledConnection::extensions_mut(&mut self.pooled).insert(stmts);
    }
}

/// A [`Store`] in a PostgreSQL schema, shared by any number of plangate
/// processes (replicas).
///
/// What sharing needs beyond the sled store's semantics, and how it is done:
///
/// - **Lost updates.** Every session row carries a `revision`. A commit with
///   [`Commit::expected_revision`] writes only if the row is still at that
///   revision (`UPDATE … WHERE revision = r`, or an insert that must not
///   find the row), else fails with [`StoreError::Conflict`]; the caller
///   loads again and re-applies. Namespaces, merged outside any commit,
///   carry a revision too ([`Store::set_namespace`]).
/// - **A timer fired twice.** [`Commit::fired`] is deleted first; when it is
///   gone (another replica fired it) the commit fails with
///   [`StoreError::TimerGone`]. Due timers are handed out with leases
///   ([`Store::claim_due_timers`], `FOR UPDATE SKIP LOCKED`), so replicas do
///   not even try the same ones side by side. [`Store::next_timer`] skips
///   timers another live replica holds, so a scheduler must look again at
///   least once per lease (a holder that dies frees its timers then).
/// - **An inbound event handled twice.** Idempotency keys are inserted, not
///   overwritten: a key already there fails the commit with
///   [`StoreError::AlreadyHandled`], and exactly one `record_once` wins.
/// - **After-commit work.** Outbox entries are written leased to the
///   committing replica; [`Store::claim_outbox`] hands out only entries
///   nobody holds or whose holder's lease ran out (it died).
/// - **Waking waiters of other replicas.** A commit notifies
///   `plangate_<schema>` with the session key in the same transaction;
///   [`Store::subscribe_changes`] listens (see `listen`).
/// - **One chat poller.** [`Store::elect_leader`] holds a session-level
///   advisory lock on a dedicated connection (see `leader`).
///
/// Every commit is one transaction: all its writes or none, and durable
/// when it returns (`synchronous_commit` on, PostgreSQL's default). Unlike
/// sled, an idempotency key already stored refuses the commit (sled
/// overwrites it), and `expected_revision` is checked only when the commit
/// writes a session. Serialization failures and deadlocks come back as
/// [`StoreError::Conflict`] (nothing was written: load again).
///
/// **Synchronous, on purpose.** Like the sled store, this one blocks: the
/// server calls it from `spawn_blocking` threads. Never call it from an
/// async worker thread (the `postgres` client runs a small runtime of its
/// own per connection and would block the worker, or panic inside one).
///
/// **No TLS.** Connections are plain TCP (`NoTls`): run PostgreSQL on
/// loopback or a private network, or behind a TLS tunnel.
///
/// Plan documents stay files under `<data_dir>/plans` on each replica's
/// disk; only their paths are in the database.
pub struct PgStore {
    pool: OffThreadDrop,
    shared: Arc<Shared>,
    /// The lease in seconds, as `make_interval` takes it.
    lease_secs: f64,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.shared.target)
            .field("schema", &self.shared.schema)
            .field("replica", &self.shared.replica)
            .finish()
    }
}

impl Drop for PgStore {
    /// The listener and leader threads end (a leader's lock is released
    /// with its connection).
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

/// The pool, closed on a thread of its own when the store is dropped.
///
/// Closing a `postgres` connection blocks on the client's own runtime,
/// which panics on a thread that runs an async runtime: the server drops
/// its store at the end of `main`, on one. A fresh thread has none.
struct OffThreadDrop(Option<Pool>);

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

/// The identity columns of `timers`, as arrays for `unnest`.
fn timer_columns(timers: &[Timer]) -> (Vec<i64>, Vec<Vec<u8>>, Vec<i16>, Vec<i16>) {
    let mut columns = (
        Vec::with_capacity(timers.len()),
        Vec::with_capacity(timers.len()),
        Vec::with_capacity(timers.len()),
        Vec::with_capacity(timers.len()),
    );
    for t in timers {
        let (due, id, kind, n) = timer_identity(t);
        columns.0.push(due);
        columns.1.push(id.to_vec());
        columns.2.push(kind);
        columns.3.push(n);
    }
    columns
}

/// A timer's identity, exactly sled's key: (due, id, kind, n).
type TimerIdentity<'a> = (i64, &'a [u8], i16, i16);

pub(crate) fn timer_identity(t: &Timer) -> TimerIdentity<'_> {
    let (kind, n) = match t.kind {
        TimerKind::Nudge(n) => (0, n),
        TimerKind::Timeout => (1, 0),
        TimerKind::Escalate => (2, 0),
        TimerKind::AgentNudge(n) => (3, n),
        TimerKind::SubagentExpiry => (4, 0),
    };
    (t.due.0, &t.approval_id.0[..], kind, i16::from(n))
}

fn body<T: DeserializeOwned>(row: &Row, column: usize, what: &'static str) -> Result<T, Failure> {
    let bytes: &[u8] = row.try_get(column)?;
    Ok(decode(bytes, what)?)
}

fn bodies<T: DeserializeOwned>(rows: &[Row], what: &'static str) -> Result<Vec<T>, Failure> {
    rows.iter().map(|row| body(row, 0, what)).collect()
}

fn to_i64(value: u64, what: &str) -> Result<i64, Failure> {
    i64::try_from(value).map_err(|_| Failure::Store(StoreError::Postgres(format!("{what} {value} does not fit PostgreSQL's bigint"))))
}

fn limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Only lowercase hex can match a prefix of an id's text (as in sled), and
/// checking it keeps `LIKE` wildcards out.
fn hex_prefix_ok(prefix: &str) -> bool {
    prefix.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

const SESSION_INSERT: &str = "INSERT INTO sessions (agent, session_id, latest_approval, revision, body) VALUES ($1, $2, $3, 1, $4) \
     ON CONFLICT DO NOTHING";
const SESSION_UPDATE: &str =
    "UPDATE sessions SET latest_approval = $3, body = $4, revision = revision + 1 WHERE agent = $1 AND session_id = $2 AND revision = $5";
const SESSION_UPSERT: &str = "INSERT INTO sessions (agent, session_id, latest_approval, revision, body) VALUES ($1, $2, $3, 1, $4) \
     ON CONFLICT (agent, session_id) DO UPDATE SET latest_approval = EXCLUDED.latest_approval, body = EXCLUDED.body, \
     revision = sessions.revision + 1";
const LOAD: &str = "SELECT s.revision, s.body, p.body FROM sessions s LEFT JOIN proposals p ON p.approval_id = s.latest_approval \
     WHERE s.agent = $1 AND s.session_id = $2";
const TIMER_DELETE: &str = "DELETE FROM timers WHERE due = $1 AND approval_id = $2 AND kind = $3 AND n = $4";
const IDEMPOTENCY_INSERT: &str = "INSERT INTO idempotency (key) VALUES ($1) ON CONFLICT DO NOTHING";
const PROPOSAL_EXISTS: &str = "SELECT 1 FROM proposals WHERE approval_id = $1";
const PROPOSAL_UPSERT: &str = "INSERT INTO proposals (approval_id, id_hex, status, agent, session_id, created_at, body) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (approval_id) DO UPDATE SET status = EXCLUDED.status, \
     agent = EXCLUDED.agent, session_id = EXCLUDED.session_id, created_at = EXCLUDED.created_at, body = EXCLUDED.body";
const QUESTION_UPSERT: &str = "INSERT INTO questions (question_id, agent, session_id, body) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (question_id) DO UPDATE SET agent = EXCLUDED.agent, session_id = EXCLUDED.session_id, body = EXCLUDED.body";
const AUDIT_INSERT: &str = "INSERT INTO audit (at, agent, session_id, approval_id, body) VALUES ($1, $2, $3, $4, $5)";
/// Audit rows in array order (their `seq` follows it).
const AUDIT_INSERT_MANY: &str = "INSERT INTO audit (at, agent, session_id, approval_id, body) \
     SELECT at, agent, session_id, approval_id, body \
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::bytea[]) WITH ORDINALITY \
     AS u(at, agent, session_id, approval_id, body, ord) ORDER BY ord";
const TIMERS_DELETE: &str = "DELETE FROM timers WHERE (due, approval_id, kind, n) IN \
     (SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::smallint[], $4::smallint[]))";
const TIMERS_UPSERT: &str = "INSERT INTO timers (due, approval_id, kind, n, body) \
     SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::smallint[], $4::smallint[], $5::bytea[]) \
     ON CONFLICT (due, approval_id, kind, n) DO UPDATE SET body = EXCLUDED.body, lease_owner = NULL, lease_until = NULL";
const OUTBOX_INSERT_MANY: &str = "INSERT INTO outbox (seq, work, lease_owner, lease_until) \
     SELECT seq, work, $3, clock_timestamp() + make_interval(secs => $4) FROM unnest($1::bigint[], $2::bytea[]) AS u(seq, work) \
     ON CONFLICT (seq) DO UPDATE SET work = EXCLUDED.work, lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until";
const NOTIFY: &str = "SELECT pg_notify($1, $2)";
const NAMESPACE_INSERT: &str = "INSERT INTO namespaces (name, body, revision) VALUES ($1, $2, 1) ON CONFLICT DO NOTHING";
const NAMESPACE_UPDATE: &str = "UPDATE namespaces SET body = $2, revision = revision + 1 WHERE name = $1 AND revision = $3";
/// Lease the first `$3` due timers that are free for `$2` (nobody holds
/// them, their holder's lease ran out, or `$2` holds them already); rows
/// another transaction is claiming right now are skipped, not waited for.
const CLAIM_TIMERS: &str = "WITH picked AS (SELECT due, approval_id, kind, n FROM timers \
     WHERE due <= $1 AND (lease_until IS NULL OR lease_until < clock_timestamp() OR lease_owner = $2) \
     ORDER BY due, approval_id, kind, n LIMIT $3 FOR UPDATE SKIP LOCKED) \
     UPDATE timers t SET lease_owner = $2, lease_until = clock_timestamp() + make_interval(secs => $4) FROM picked \
     WHERE t.due = picked.due AND t.approval_id = picked.approval_id AND t.kind = picked.kind AND t.n = picked.n \
     RETURNING t.due, t.approval_id, t.kind, t.n, t.body";
const CLAIM_TIMERS_AFTER: &str = "WITH picked AS (SELECT due, approval_id, kind, n FROM timers \
     WHERE due <= $1 AND (due, approval_id, kind, n) > ($5, $6, $7, $8) \
     AND (lease_until IS NULL OR lease_until < clock_timestamp() OR lease_owner = $2) \
     ORDER BY due, approval_id, kind, n LIMIT $3 FOR UPDATE SKIP LOCKED) \
     UPDATE timers t SET lease_owner = $2, lease_until = clock_timestamp() + make_interval(secs => $4) FROM picked \
     WHERE t.due = picked.due AND t.approval_id = picked.approval_id AND t.kind = picked.kind AND t.n = picked.n \
     RETURNING t.due, t.approval_id, t.kind, t.n, t.body";
const CLAIM_OUTBOX: &str = "WITH picked AS (SELECT seq FROM outbox \
     WHERE lease_owner IS NULL OR lease_until IS NULL OR lease_until < clock_timestamp() \
     ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) \
     UPDATE outbox o SET lease_owner = $1, lease_until = clock_timestamp() + make_interval(secs => $3) FROM picked \
     WHERE o.seq = picked.seq RETURNING o.seq, o.work";
const RENEW: &str = "WITH o AS (UPDATE outbox SET lease_until = clock_timestamp() + make_interval(secs => $2) \
     WHERE lease_owner = $1 RETURNING 1), \
     t AS (UPDATE timers SET lease_until = clock_timestamp() + make_interval(secs => $2) WHERE lease_owner = $1 RETURNING 1) \
     SELECT (SELECT count(*) FROM o), (SELECT count(*) FROM t)";
const DUE_TIMERS: &str = "SELECT body FROM timers WHERE due <= $1 ORDER BY due, approval_id, kind, n LIMIT $2";
const DUE_TIMERS_AFTER: &str = "SELECT body FROM timers WHERE due <= $1 AND (due, approval_id, kind, n) > ($3, $4, $5, $6) \
     ORDER BY due, approval_id, kind, n LIMIT $2";

impl PgStore {
    /// Connect, create the schema when missing and bring it to the newest
    /// migration (see `migrations`); refuse a schema migrated by a newer
    /// plangate ([`StoreError::SchemaTooNew`]).
    pub fn open(options: &PgOptions) -> Result<PgStore, StoreError> {
        let schema = options.schema.as_str();
        if !valid_schema(schema) {
            return Err(StoreError::Unavailable(format!(
                "invalid PostgreSQL schema name {schema:?}: use 1 to 41 of a-z, 0-9 and _, not starting with a digit"
            )));
        }
        let mut config: postgres::Config = options.url.parse().map_err(|e| {
            StoreError::Unavailable(format!(
                "the PostgreSQL URL {} is invalid: {e}; expected postgres://user@host:5432/database",
                redact(&options.url)
            ))
        })?;
        let extra = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        config
            .options(&format!("{extra}-c search_path={schema}"))
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .keepalives_interval(Duration::from_secs(5))
            .keepalives_retries(3);
        let target = describe(&config);
        let replica = new_replica_id();
        let shared = Arc::new(Shared { config, schema: schema.to_string(), replica, target, closed: AtomicBool::new(false) });

        let span = tracing::info_span!("pg_open", target = %shared.target, schema, replica = %shared.replica);
        let _enter = span.enter();
        let mut client = shared.connect("migrations").map_err(|e| map_pg(&shared.target, "a connection", e))?;
        let applied = migrations::run(&mut client, schema).map_err(|f| match f {
            Failure::Pg(e) => map_pg(&shared.target, "the schema migrations", e),
            Failure::Store(e) => e,
        })?;
        drop(client);
        if !applied.versions.is_empty() {
            tracing::info!(versions = ?applied.versions, "applied schema migrations");
        }

        let mut manager_config = shared.config.clone();
        manager_config.application_name(&format!("plangate {}", shared.replica));
        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size.max(1))
            .min_idle(Some(1))
            .connection_timeout(CONNECT_TIMEOUT)
            // A dead pooled connection shows at its first use; reads retry
            // once on a fresh one (see `retrying`) instead of paying a round
            // trip on every checkout.
            .test_on_check_out(false)
            .build(PostgresConnectionManager::new(manager_config, NoTls))
            .map_err(|e| {
                StoreError::Unavailable(format!("no PostgreSQL connection pool at {}: {e}; is PostgreSQL running there?", shared.target))
            })?;
        let lease_secs = options.lease.as_secs_f64().max(0.001);
        Ok(PgStore { pool: OffThreadDrop(Some(pool)), shared, lease_secs })
    }

    /// This process's name in leases (`hostname-pid-8hex`).
    pub fn replica_id(&self) -> &str {
        &self.shared.replica
    }

    /// The schema this store keeps its tables in.
    pub fn schema(&self) -> &str {
        &self.shared.schema
    }

    fn conn(&self, what: &str) -> Result<Conn, StoreError> {
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

    fn fail(&self, what: &str, failure: Failure) -> StoreError {
        match failure {
            Failure::Pg(e) => map_pg(&self.shared.target, what, e),
            Failure::Store(e) => e,
        }
    }

    /// Run `f` on a pooled connection; once more on a fresh connection when
    /// the first turned out dead (PostgreSQL restarted since it was pooled).
    /// Only for `f` that is safe to run twice (reads, upserts, deletes).
    fn retrying<T>(&self, what: &str, mut f: impl FnMut(&mut Client, &mut Statements) -> Result<T, Failure>) -> Result<T, StoreError> {
        let mut conn = self.conn(what)?;
        match f(&mut conn.pooled, &mut conn.stmts) {
            Err(Failure::Pg(e)) if connection_lost(&e) => {
                tracing::debug!(error = %e, "a pooled PostgreSQL connection was dead; retrying on a fresh one");
                drop(conn);
                let mut conn = self.conn(what)?;
                f(&mut conn.pooled, &mut conn.stmts).map_err(|failure| self.fail(what, failure))
            }
            other => other.map_err(|failure| self.fail(what, failure)),
        }
    }

    /// Run `f` in a transaction, retried on a fresh connection only when
    /// `BEGIN` itself found the pooled connection dead (then nothing ran).
    fn transaction<T>(
        &self,
        what: &str,
        mut f: impl FnMut(&mut Transaction<'_>, &mut Statements) -> Result<T, Failure>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn(what)?;
        let mut retried = false;
        loop {
            let Conn { pooled, stmts } = &mut conn;
            let e = match pooled.transaction() {
                Ok(mut tx) => {
                    let result = f(&mut tx, stmts).and_then(|value| {
                        tx.commit()?;
                        Ok(value)
                    });
                    return result.map_err(|failure| self.fail(what, failure));
                }
                Err(e) => e,
            };
            if retried || !connection_lost(&e) {
                return Err(map_pg(&self.shared.target, what, e));
            }
            retried = true;
            conn = self.conn(what)?;
        }
    }

    fn write_commit(&self, tx: &mut Transaction<'_>, st: &mut Statements, commit: &Commit) -> Result<(), Failure> {
        if let Some(session) = &commit.session {
            let body = encode(session);
            let latest = session.latest_approval.map(|id| id.0.to_vec());
            let (agent, sid) = (&session.key.agent, &session.key.session_id);
            let rows = match commit.expected_revision {
                Some(0) => st.execute(tx, SESSION_INSERT, &[agent, sid, &latest, &body])?,
                Some(r) => {
                    let r = to_i64(r, "revision")?;
                    st.execute(tx, SESSION_UPDATE, &[agent, sid, &latest, &body, &r])?
                }
                None => st.execute(tx, SESSION_UPSERT, &[agent, sid, &latest, &body])?,
            };
            if rows == 0 {
                return Err(StoreError::Conflict.into());
            }
        }
        if let Some(timer) = &commit.fired {
            let (due, id, kind, n) = timer_identity(timer);
            if st.execute(tx, TIMER_DELETE, &[&due, &id, &kind, &n])? == 0 {
                return Err(StoreError::TimerGone.into());
            }
        }
        let mut keys = HashSet::new();
        for key in commit.idempotency.iter().filter(|k| keys.insert(k.as_str())) {
            if st.execute(tx, IDEMPOTENCY_INSERT, &[key])? == 0 {
                return Err(StoreError::AlreadyHandled(key.clone()).into());
            }
        }
        if let Some(id) = &commit.new_proposal {
            // Ids are 128 random bits; this guards the invariant, not a race.
            if st.query_opt(tx, PROPOSAL_EXISTS, &[&&id.0[..]])?.is_some() {
                return Err(StoreError::DuplicateId(*id).into());
            }
        }
        for p in &commit.proposals {
            let created = p.created_at.0;
            let params: [&(dyn ToSql + Sync); 7] = [
                &&p.approval_id.0[..],
                &p.approval_id.to_string(),
                &p.status.as_str(),
                &p.session.agent,
                &p.session.session_id,
                &created,
                &encode(p),
            ];
            st.execute(tx, PROPOSAL_UPSERT, &params)?;
        }
        for q in &commit.questions {
            st.execute(tx, QUESTION_UPSERT, &[&&q.question_id.0[..], &q.session.agent, &q.session.session_id, &encode(q)])?;
        }
        // One statement per kind of row, however many rows (arrays through
        // `unnest`): a commit costs a fixed number of round trips.
        if !commit.timers_remove.is_empty() {
            let (dues, ids, kinds, ns) = timer_columns(&commit.timers_remove);
            st.execute(tx, TIMERS_DELETE, &[&dues, &ids, &kinds, &ns])?;
        }
        if !commit.timers_add.is_empty() {
            // A timer twice in one commit: the later wins, as row by row did
            // (one INSERT … ON CONFLICT may not touch a row twice).
            let mut added: Vec<&Timer> = Vec::with_capacity(commit.timers_add.len());
            for t in commit.timers_add.iter().rev() {
                if !added.iter().any(|a| timer_identity(a) == timer_identity(t)) {
                    added.push(t);
                }
            }
            added.reverse();
            let added: Vec<Timer> = added.into_iter().cloned().collect();
            let (dues, ids, kinds, ns) = timer_columns(&added);
            let bodies: Vec<Vec<u8>> = added.iter().map(encode).collect();
            st.execute(tx, TIMERS_UPSERT, &[&dues, &ids, &kinds, &ns, &bodies])?;
        }
        if !commit.audit.is_empty() {
            let ats: Vec<i64> = commit.audit.iter().map(|e| e.at.0).collect();
            let agents: Vec<&str> = commit.audit.iter().map(|e| e.agent.as_str()).collect();
            let sessions: Vec<&str> = commit.audit.iter().map(|e| e.session_id.as_str()).collect();
            let approvals: Vec<Option<Vec<u8>>> = commit.audit.iter().map(|e| e.approval_id.map(|id| id.0.to_vec())).collect();
            let bodies: Vec<Vec<u8>> = commit.audit.iter().map(encode).collect();
            st.execute(tx, AUDIT_INSERT_MANY, &[&ats, &agents, &sessions, &approvals, &bodies])?;
        }
        if !commit.outbox.is_empty() {
            let seqs = commit.outbox.iter().map(|e| to_i64(e.seq, "outbox seq")).collect::<Result<Vec<i64>, _>>()?;
            let works: Vec<&[u8]> = commit.outbox.iter().map(|e| e.work.as_slice()).collect();
            st.execute(tx, OUTBOX_INSERT_MANY, &[&seqs, &works, &self.shared.replica, &self.lease_secs])?;
        }
        if let Some(session) = &commit.session {
            // Delivered to listeners when (and only if) this commits.
            let payload = serde_json::to_string(&[&session.key.agent, &session.key.session_id]).unwrap_or_default();
            // NOTIFY payloads are limited to 8000 bytes; an empty one tells
            // listeners "something changed" (they wake every waiter).
            let payload = if payload.len() > 7900 { String::new() } else { payload };
            st.execute(tx, NOTIFY, &[&self.shared.channel(), &payload])?;
        }
        Ok(())
    }
}

fn insert_audit(tx: &mut Transaction<'_>, st: &mut Statements, event: &AuditEvent) -> Result<(), Failure> {
    let approval = event.approval_id.map(|id| id.0.to_vec());
    st.execute(tx, AUDIT_INSERT, &[&event.at.0, &event.agent, &event.session_id, &approval, &encode(event)])?;
    Ok(())
}

/// `host:port/database` of a config, for messages.
fn describe(config: &postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(5432);
            match host {
                postgres::config::Host::Tcp(h) => format!("{h}:{port}"),
                postgres::config::Host::Unix(p) => format!("{}:{port}", p.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() { "localhost:5432".to_string() } else { hosts.join(",") };
    format!("{hosts}/{}", config.get_dbname().unwrap_or("(default database)"))
}

fn decode_delivery_rows(rows: &[Row]) -> Result<Vec<Delivery>, Failure> {
    bodies(rows, "delivery")
}

impl Store for PgStore {
    fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        Ok(self.load_revision(key)?.0)
    }

    fn load_revision(&self, key: &SessionKey) -> Result<(State, u64), StoreError> {
        self.retrying("loading a session", |c, st| {
            let Some(row) = st.query_opt(c, LOAD, &[&key.agent, &key.session_id])? else {
                return Ok((State::new(key.clone()), 0));
            };
            let revision: i64 = row.try_get(0)?;
            let session: Session = body(&row, 1, "session")?;
            let latest: Option<Proposal> = match row.try_get::<_, Option<&[u8]>>(2)? {
                Some(bytes) => Some(decode(bytes, "proposal")?),
                None => None,
            };
            Ok((State { session, latest }, u64::try_from(revision).unwrap_or(0)))
        })
    }

    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        self.retrying("reading a proposal", |c, st| {
            let row = st.query_opt(c, "SELECT body FROM proposals WHERE approval_id = $1", &[&&id.0[..]])?;
            row.map(|r| body(&r, 0, "proposal")).transpose()
        })
    }

    fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError> {
        if !hex_prefix_ok(hex_prefix) {
            return Ok(Vec::new());
        }
        let pattern = format!("{hex_prefix}%");
        self.retrying("finding proposals by id prefix", |c, st| {
            let rows = st.query(c, "SELECT body FROM proposals WHERE id_hex LIKE $1 ORDER BY approval_id", &[&pattern])?;
            bodies(&rows, "proposal")
        })
    }

    fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        self.retrying("listing proposals", |c, st| {
            let rows = match status {
                Some(s) => st.query(c, "SELECT body FROM proposals WHERE status = $1 ORDER BY created_at, approval_id", &[&s.as_str()])?,
                None => st.query(c, "SELECT body FROM proposals ORDER BY created_at, approval_id", &[])?,
            };
            bodies(&rows, "proposal")
        })
    }

    fn visit_proposals(&self, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError> {
        // A portal read in pages: 100,000 proposals never sit in memory at once.
        const PAGE: i32 = 500;
        let what = "visiting proposals";
        let mut conn = self.conn(what)?;
        let result = (|| -> Result<(), Failure> {
            let mut tx = conn.pooled.build_transaction().read_only(true).start()?;
            let portal = match status {
                Some(s) => tx.bind("SELECT body FROM proposals WHERE status = $1", &[&s.as_str()])?,
                None => tx.bind("SELECT body FROM proposals", &[])?,
            };
            loop {
                let rows = tx.query_portal(&portal, PAGE)?;
                for row in &rows {
                    visit(&body(row, 0, "proposal")?);
                }
                if rows.len() < PAGE as usize {
                    break;
                }
            }
            tx.commit()?;
            Ok(())
        })();
        result.map_err(|f| self.fail(what, f))
    }

    fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        self.retrying("listing sessions", |c, st| {
            let rows = st.query(c, "SELECT body FROM sessions ORDER BY agent, session_id", &[])?;
            bodies(&rows, "session")
        })
    }

    fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError> {
        self.retrying("reading a question", |c, st| {
            let row = st.query_opt(c, "SELECT body FROM questions WHERE question_id = $1", &[&&id.0[..]])?;
            row.map(|r| body(&r, 0, "question")).transpose()
        })
    }

    fn commit(&self, commit: Commit) -> Result<(), StoreError> {
        let span = tracing::debug_span!(
            "pg_commit",
            session = commit.session.as_ref().map(|s| tracing::field::display(&s.key)),
            expected_revision = commit.expected_revision,
        );
        let _enter = span.enter();
        let result = self.transaction("committing a transition", |tx, st| self.write_commit(tx, st, &commit));
        if let Err(e) = &result {
            tracing::debug!(error = %e, "commit refused; nothing was written");
        }
        result
    }

    fn next_timer(&self) -> Result<Option<Timer>, StoreError> {
        self.retrying("reading the next timer", |c, st| {
            let sql = "SELECT body FROM timers WHERE (lease_until IS NULL OR lease_until < clock_timestamp() OR lease_owner = $1) \
                       ORDER BY due, approval_id, kind, n LIMIT 1";
            let row = st.query_opt(c, sql, &[&self.shared.replica])?;
            row.map(|r| body(&r, 0, "timer")).transpose()
        })
    }

    fn due_timers_page(&self, now: Timestamp, after: Option<&Timer>, limit_to: usize) -> Result<Vec<Timer>, StoreError> {
        let n = limit(limit_to);
        self.retrying("reading due timers", |c, st| {
            let rows = match after {
                None => st.query(c, DUE_TIMERS, &[&now.0, &n])?,
                Some(t) => {
                    let (due, id, kind, nn) = timer_identity(t);
                    st.query(c, DUE_TIMERS_AFTER, &[&now.0, &n, &due, &id, &kind, &nn])?
                }
            };
            bodies(&rows, "timer")
        })
    }

    fn claim_due_timers(&self, now: Timestamp, after: Option<&Timer>, limit_to: usize) -> Result<Vec<Timer>, StoreError> {
        let n = limit(limit_to);
        let me = &self.shared.replica;
        let lease = self.lease_secs;
        self.retrying("claiming due timers", |c, st| {
            let rows = match after {
                None => st.query(c, CLAIM_TIMERS, &[&now.0, me, &n, &lease])?,
                Some(t) => {
                    let (due, id, kind, nn) = timer_identity(t);
                    st.query(c, CLAIM_TIMERS_AFTER, &[&now.0, me, &n, &lease, &due, &id, &kind, &nn])?
                }
            };
            let mut claimed = Vec::with_capacity(rows.len());
            for row in &rows {
                let identity: (i64, Vec<u8>, i16, i16) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
                claimed.push((identity, body::<Timer>(row, 4, "timer")?));
            }
            claimed.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(claimed.into_iter().map(|(_, t)| t).collect())
        })
    }

    fn timers(&self) -> Result<Vec<Timer>, StoreError> {
        self.retrying("listing timers", |c, st| {
            let rows = st.query(c, "SELECT body FROM timers ORDER BY due, approval_id, kind, n", &[])?;
            bodies(&rows, "timer")
        })
    }

    fn remove_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        let (due, id, kind, n) = timer_identity(timer);
        self.retrying("removing a timer", |c, st| {
            st.execute(c, TIMER_DELETE, &[&due, &id, &kind, &n])?;
            Ok(())
        })
    }

    fn remove_timers(&self, timers: &[Timer]) -> Result<(), StoreError> {
        if timers.is_empty() {
            return Ok(());
        }
        let mut dues = Vec::with_capacity(timers.len());
        let mut ids = Vec::with_capacity(timers.len());
        let mut kinds = Vec::with_capacity(timers.len());
        let mut ns = Vec::with_capacity(timers.len());
        for t in timers {
            let (due, id, kind, n) = timer_identity(t);
            dues.push(due);
            ids.push(id);
            kinds.push(kind);
            ns.push(n);
        }
        // One statement: all or none.
        self.retrying("removing timers", |c, st| {
            st.execute(c, TIMERS_DELETE, &[&dues, &ids, &kinds, &ns])?;
            Ok(())
        })
    }

    fn generate_seq(&self) -> Result<u64, StoreError> {
        self.retrying("generating a sequence number", |c, st| {
            let seq: i64 = st.query_one(c, "SELECT nextval('ids')", &[])?.try_get(0)?;
            Ok(u64::try_from(seq).unwrap_or(0))
        })
    }

    fn generate_seqs(&self, n: usize) -> Result<Vec<u64>, StoreError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let count = limit(n);
        self.retrying("generating sequence numbers", |c, st| {
            let rows = st.query(c, "SELECT nextval('ids') FROM generate_series(1::bigint, $1::bigint)", &[&count])?;
            let mut seqs =
                rows.iter().map(|r| r.try_get::<_, i64>(0).map(|v| u64::try_from(v).unwrap_or(0))).collect::<Result<Vec<u64>, _>>()?;
            seqs.sort_unstable();
            Ok(seqs)
        })
    }

    fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        self.retrying("reading the outbox", |c, st| {
            let rows = st.query(c, "SELECT seq, work FROM outbox ORDER BY seq", &[])?;
            rows.iter().map(outbox_entry).collect()
        })
    }

    fn claim_outbox(&self, limit_to: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let n = limit(limit_to);
        self.retrying("claiming outbox entries", |c, st| {
            let rows = st.query(c, CLAIM_OUTBOX, &[&self.shared.replica, &n, &self.lease_secs])?;
            let mut entries = rows.iter().map(outbox_entry).collect::<Result<Vec<_>, _>>()?;
            entries.sort_by_key(|e| e.seq);
            Ok(entries)
        })
    }

    fn remove_outbox(&self, seq: u64) -> Result<(), StoreError> {
        let seq = i64::try_from(seq).map_err(|_| StoreError::Postgres(format!("outbox seq {seq} does not fit bigint")))?;
        self.retrying("removing an outbox entry", |c, st| {
            st.execute(c, "DELETE FROM outbox WHERE seq = $1", &[&seq])?;
            Ok(())
        })
    }

    fn renew_leases(&self) -> Result<(), StoreError> {
        self.retrying("renewing leases", |c, st| {
            let row = st.query_one(c, RENEW, &[&self.shared.replica, &self.lease_secs])?;
            let (outbox, timers): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            tracing::trace!(outbox, timers, "renewed leases");
            Ok(())
        })
    }

    fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        self.retrying("reading card deliveries", |c, st| {
            let sql = "SELECT body FROM deliveries WHERE approval_id = $1 ORDER BY destination, chat";
            decode_delivery_rows(&st.query(c, sql, &[&&id.0[..]])?)
        })
    }

    fn add_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        let body = encode(delivery);
        self.retrying("recording a card delivery", |c, st| {
            let sql = "INSERT INTO deliveries (approval_id, destination, chat, body) VALUES ($1, $2, $3, $4) \
                       ON CONFLICT (approval_id, destination, chat) DO UPDATE SET body = EXCLUDED.body";
            st.execute(c, sql, &[&&id.0[..], &delivery.destination, &delivery.chat, &body])?;
            Ok(())
        })
    }

    fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        self.retrying("reading question deliveries", |c, st| {
            let sql = "SELECT body FROM question_deliveries WHERE question_id = $1 ORDER BY destination, chat";
            decode_delivery_rows(&st.query(c, sql, &[&&id.0[..]])?)
        })
    }

    fn add_question_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        let body = encode(delivery);
        self.retrying("recording a question delivery", |c, st| {
            let sql = "INSERT INTO question_deliveries (question_id, destination, chat, body) VALUES ($1, $2, $3, $4) \
                       ON CONFLICT (question_id, destination, chat) DO UPDATE SET body = EXCLUDED.body";
            st.execute(c, sql, &[&&id.0[..], &delivery.destination, &delivery.chat, &body])?;
            Ok(())
        })
    }

    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        self.transaction("appending audit records", |tx, st| events.iter().try_for_each(|e| insert_audit(tx, st, e)))
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        let mut conditions = Vec::new();
        let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
        if let Some(agent) = &query.agent {
            params.push(Box::new(agent.clone()));
            conditions.push(format!("agent = ${}", params.len()));
        }
        if let Some(session) = &query.session_id {
            params.push(Box::new(session.clone()));
            conditions.push(format!("session_id = ${}", params.len()));
        }
        if let Some(id) = &query.approval_id {
            params.push(Box::new(id.0.to_vec()));
            conditions.push(format!("approval_id = ${}", params.len()));
        }
        let mut sql = String::from("SELECT body FROM audit");
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        sql.push_str(" ORDER BY seq DESC");
        if query.limit > 0 {
            params.push(Box::new(limit(query.limit)));
            sql.push_str(&format!(" LIMIT ${}", params.len()));
        }
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let mut events: Vec<AuditEvent> = self.retrying("reading the audit", |c, _| bodies(&c.query(&sql, &refs)?, "audit"))?;
        events.reverse();
        Ok(events)
    }

    fn seen(&self, key: &str) -> Result<bool, StoreError> {
        self.retrying("checking an event key", |c, st| Ok(st.query_opt(c, "SELECT 1 FROM idempotency WHERE key = $1", &[&key])?.is_some()))
    }

    fn mark_seen(&self, key: &str) -> Result<(), StoreError> {
        self.retrying("recording an event key", |c, st| {
            st.execute(c, IDEMPOTENCY_INSERT, &[&key])?;
            Ok(())
        })
    }

    fn record_once(&self, key: &str) -> Result<bool, StoreError> {
        // Not retried: a first attempt that inserted before its connection
        // died would make the retry answer `false` for work never done.
        let mut conn = self.conn("recording a side effect")?;
        let Conn { pooled, stmts } = &mut conn;
        let result = stmts.execute(&mut **pooled, IDEMPOTENCY_INSERT, &[&key]).map(|rows| rows == 1).map_err(Failure::from);
        result.map_err(|f| self.fail("recording a side effect", f))
    }

    fn cursor(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.retrying("reading a cursor", |c, st| {
            let row = st.query_opt(c, "SELECT value FROM cursors WHERE key = $1", &[&key])?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
    }

    fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.retrying("writing a cursor", |c, st| {
            let sql = "INSERT INTO cursors (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";
            st.execute(c, sql, &[&key, &value])?;
            Ok(())
        })
    }

    /// One statement: the first replica's value wins, every replica reads
    /// it back (`DO UPDATE SET value = cursors.value` makes `RETURNING`
    /// answer on a conflict too).
    fn cursor_or_init(&self, key: &str, value: &str) -> Result<String, StoreError> {
        self.retrying("initializing a cursor", |c, st| {
            let sql =
                "INSERT INTO cursors (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = cursors.value RETURNING value";
            let row = st.query_one(c, sql, &[&key, &value])?;
            Ok(row.try_get(0)?)
        })
    }

    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError> {
        self.retrying("reading a document path", |c, st| {
            let row = st.query_opt(c, "SELECT path FROM documents WHERE approval_id = $1", &[&&id.0[..]])?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
    }

    fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError> {
        self.retrying("recording a document path", |c, st| {
            let sql =
                "INSERT INTO documents (approval_id, path) VALUES ($1, $2) ON CONFLICT (approval_id) DO UPDATE SET path = EXCLUDED.path";
            st.execute(c, sql, &[&&id.0[..], &path])?;
            Ok(())
        })
    }

    fn namespace_revision(&self, name: &str) -> Result<(Namespace, u64), StoreError> {
        self.retrying("reading a namespace", |c, st| {
            let Some(row) = st.query_opt(c, "SELECT body, revision FROM namespaces WHERE name = $1", &[&name])? else {
                return Ok((Namespace::default(), 0));
            };
            let revision: i64 = row.try_get(1)?;
            Ok((body(&row, 0, "namespace")?, u64::try_from(revision).unwrap_or(0)))
        })
    }

    /// Like a session's commit: an insert that must not find the row, or
    /// an update at the expected revision; no row written is a conflict.
    /// Retried on a dead connection like any write: a first attempt that
    /// landed makes the retry a conflict, and the caller merges again on
    /// what it wrote (a merge repeated is the same merge).
    fn set_namespace(&self, name: &str, ns: &Namespace, expected_revision: u64) -> Result<(), StoreError> {
        let body = encode(ns);
        let expected = to_i64(expected_revision, "namespace revision").map_err(|f| self.fail("writing a namespace", f))?;
        let rows = self.retrying("writing a namespace", |c, st| {
            Ok(if expected == 0 {
                st.execute(c, NAMESPACE_INSERT, &[&name, &body])?
            } else {
                st.execute(c, NAMESPACE_UPDATE, &[&name, &body, &expected])?
            })
        })?;
        if rows == 0 {
            return Err(StoreError::Conflict);
        }
        Ok(())
    }

    /// Every write was durable when it returned (`synchronous_commit`).
    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn shared(&self) -> bool {
        true
    }

    fn subscribe_changes(&self, on_change: ChangeListener) -> Result<(), StoreError> {
        listen::spawn(self.shared.clone(), on_change)
    }

    fn elect_leader(&self, role: &str, on_change: LeaderListener) -> Result<(), StoreError> {
        leader::spawn(self.shared.clone(), role, on_change)
    }

    fn snapshot(&self, data_dir: &std::path::Path, out: &mut dyn std::io::Write) -> Result<crate::BackupStats, StoreError> {
        let _ = (data_dir, out);
        Err(StoreError::Unavailable(format!(
            "plangate backup snapshots the sled store only; back up PostgreSQL with `pg_dump --schema={}` and copy {}/plans",
            self.shared.schema,
            data_dir.display()
        )))
    }

    fn prune(&self, data_dir: &std::path::Path, policy: &crate::PrunePolicy) -> Result<crate::PruneReport, StoreError> {
        let _ = (data_dir, policy);
        Err(StoreError::Unavailable("pruning is not supported on PostgreSQL yet; nothing was removed".into()))
    }
}

fn outbox_entry(row: &Row) -> Result<OutboxEntry, Failure> {
    let seq: i64 = row.try_get(0)?;
    let work: Vec<u8> = row.try_get(1)?;
    Ok(OutboxEntry { seq: u64::try_from(seq).unwrap_or(0), work })
}

/// Connect once to `url` the way `serve` does (password included), look at
/// `schema`, and say what was found, for `plangate doctor` and `config
/// check`: who and where, and how far the schema is migrated. Creates
/// nothing. Blocking, like the store.
pub fn probe(url: &str, schema: &str) -> Result<String, StoreError> {
    let mut config: postgres::Config = url.parse().map_err(|e| {
        StoreError::Unavailable(format!("the PostgreSQL URL {} is invalid: {e}; expected postgres://user@host:5432/database", redact(url)))
    })?;
    config.connect_timeout(CONNECT_TIMEOUT).application_name("plangate doctor");
    let target = describe(&config);
    let mut client = config.connect(postgres::NoTls).map_err(|e| map_pg(&target, "a connection", e))?;
    let row = client
        .query_one(
            "SELECT current_user::text, current_database()::text, current_setting('server_version'), \
             to_regclass(format('%I.schema_migrations', $1::text)) IS NOT NULL",
            &[&schema],
        )
        .map_err(|e| map_pg(&target, "the probe query", e))?;
    let (user, database, version, migrated): (String, String, String, bool) = (row.get(0), row.get(1), row.get(2), row.get(3));
    let newest = migrations::newest();
    let state = if migrated {
        let sql = format!("SELECT coalesce(max(version), 0) FROM \"{schema}\".schema_migrations");
        let found: i64 = client.query_one(sql.as_str(), &[]).map_err(|e| map_pg(&target, "reading the schema version", e))?.get(0);
        match found.cmp(&newest) {
            std::cmp::Ordering::Greater => return Err(StoreError::SchemaTooNew { found, known: newest }),
            std::cmp::Ordering::Equal => format!("schema {schema} at migration {found}, the newest this plangate knows"),
            std::cmp::Ordering::Less => format!("schema {schema} at migration {found}; the first start migrates it to {newest}"),
        }
    } else {
        format!("schema {schema} not created yet (the first start creates it)")
    };
    Ok(format!("PostgreSQL {version} at {target} accepts user {user} on database {database}; {state}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names() {
        for ok in ["plangate", "_x", "t_0123abcd", "a"] {
            assert!(valid_schema(ok), "{ok}");
        }
        for bad in ["", "1abc", "Plangate", "a-b", "a;drop", "a b", &"x".repeat(42)] {
            assert!(!valid_schema(bad), "{bad}");
        }
        assert!(valid_schema(&"x".repeat(41)));
    }

    #[test]
    fn passwords_are_not_printed() {
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("host=h password=secret user=u"), "host=h password=*** user=u");
        let debug = format!("{:?}", PgOptions::new("postgres://u:secret@h/db"));
        assert!(!debug.contains("secret"), "{debug}");
    }

    #[test]
    fn replica_ids_differ() {
        let (a, b) = (new_replica_id(), new_replica_id());
        assert_ne!(a, b);
        assert!(a.contains(&format!("-{}-", std::process::id())), "{a}");
    }
}
