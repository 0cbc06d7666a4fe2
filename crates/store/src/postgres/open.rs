//! Opening the store: where PostgreSQL is ([`PgOptions`]), connecting and
//! migrating the schema, naming this replica, and the probe `plangate
//! doctor` runs without opening anything.

use super::connection::{map_pg, Shared, StoreRuntime};
use super::{migrations, notify, Failure, PgStore};
use crate::StoreError;
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::NoTls;

/// How long opening a connection may take before PostgreSQL counts as down.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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
        let mut config: tokio_postgres::Config = options.url.parse().map_err(|e| {
            StoreError::Unavailable(format!(
                "the PostgreSQL URL {} is invalid: {e}; expected postgres://user@host:5432/database",
                redact(&options.url)
            ))
        })?;
        let extra = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        config
            .options(format!("{extra}-c search_path={schema}"))
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .keepalives_interval(Duration::from_secs(5))
            .keepalives_retries(3);
        let target = describe(&config);
        let replica = new_replica_id();
        let shared = Arc::new(Shared {
            config,
            schema: schema.to_string(),
            replica,
            target,
            closed: AtomicBool::new(false),
            notifier: Default::default(),
            commits_under_way: Default::default(),
        });

        let span = tracing::info_span!("pg_open", target = %shared.target, schema, replica = %shared.replica);
        let _enter = span.enter();
        let mut client = shared.connect("migrations").map_err(|e| map_pg(&shared.target, "a connection", e))?;
        let applied = migrations::run(&mut client, schema).map_err(|f| match f {
            Failure::Pg(e) => map_pg(&shared.target, "the schema migrations", e),
            Failure::Store(e) => e,
            Failure::Preempted(p) => StoreError::Postgres(format!("the schema migrations: {p}")),
        })?;
        if !applied.versions.is_empty() {
            tracing::info!(versions = ?applied.versions, "applied schema migrations");
        }
        let chained = super::chain::chain_unchained(&mut client, schema).map_err(|f| match f {
            Failure::Pg(e) => map_pg(&shared.target, "chaining the audit", e),
            Failure::Store(e) => e,
            Failure::Preempted(p) => StoreError::Postgres(format!("chaining the audit: {p}")),
        })?;
        if chained > 0 {
            tracing::info!(chained, "chained the audit records written before the chain existed");
        }
        drop(client);

        let mut manager_config = shared.config.clone();
        manager_config.application_name(format!("plangate {}", shared.replica));
        let runtime = StoreRuntime::new()?;
        // A dead pooled connection shows at its first use; operations
        // retry once on a fresh one (see `retrying`) instead of paying a
        // round trip on every checkout (`Fast` only looks whether the
        // client saw its connection close).
        let manager = deadpool_postgres::Manager::from_config(
            manager_config,
            NoTls,
            deadpool_postgres::ManagerConfig { recycling_method: deadpool_postgres::RecyclingMethod::Fast },
        );
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(usize::try_from(options.pool_size.max(1)).unwrap_or(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| {
                StoreError::Unavailable(format!("no PostgreSQL connection pool at {}: {e}; is PostgreSQL running there?", shared.target))
            })?;
        let lease_secs = options.lease.as_secs_f64().max(0.001);
        runtime.handle().spawn(notify::run(shared.clone()));
        Ok(PgStore { pool, runtime, shared, lease_secs })
    }

    /// This process's name in leases (`hostname-pid-8hex`).
    pub fn replica_id(&self) -> &str {
        &self.shared.replica
    }

    /// The schema this store keeps its tables in.
    pub fn schema(&self) -> &str {
        &self.shared.schema
    }
}

/// `host:port/database` of a config, for messages.
fn describe(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(5432);
            match host {
                tokio_postgres::config::Host::Tcp(h) => format!("{h}:{port}"),
                tokio_postgres::config::Host::Unix(p) => format!("{}:{port}", p.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() { "localhost:5432".to_string() } else { hosts.join(",") };
    format!("{hosts}/{}", config.get_dbname().unwrap_or("(default database)"))
}

/// Connect once to `url` the way `serve` does (password included), look at
/// `schema`, and say what was found, for `plangate doctor` and `config
/// check`: who and where, and how far the schema is migrated. Creates
/// nothing. Blocking, like the store.
pub fn probe(url: &str, schema: &str) -> Result<String, StoreError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
        StoreError::Unavailable(format!("the PostgreSQL URL {} is invalid: {e}; expected postgres://user@host:5432/database", redact(url)))
    })?;
    config.connect_timeout(CONNECT_TIMEOUT).application_name("plangate doctor");
    let target = describe(&config);
    let mut client = postgres::Config::from(config).connect(postgres::NoTls).map_err(|e| map_pg(&target, "a connection", e))?;
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
