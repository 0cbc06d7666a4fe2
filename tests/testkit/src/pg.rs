//! PostgreSQL for tests: a fresh schema per test on the machine's
//! PostgreSQL (127.0.0.1:5432, user `postgres`, database `test`, trust
//! auth; `.ci/run` starts it), and N `plangate serve` replicas sharing it.
//!
//! A test that needs PostgreSQL asks [`TestSchema::create_or_skip`] (or
//! [`url_or_skip`], when it needs no schema): when it is not there the
//! test skips with one loud line naming what to install ([`crate::skip`]),
//! and fails instead under `PLANGATE_REQUIRE_ALL` (CI).
//! A run that asked for PostgreSQL itself (`PLANGATE_TEST_BACKEND=postgres`)
//! fails when it is absent ([`TestSchema::create`]). A test calls
//! [`TestSchema::cleanup`] at its end, so a failed test leaves its schema
//! behind to look at.
//!
//! The schema is made with `psql` (which `.ci/run` uses too), so the
//! testkit needs no PostgreSQL client crate of its own.

use crate::server::ServerProcess;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// Where the tests' PostgreSQL listens.
pub const HOST: &str = "127.0.0.1";
pub const PORT: u16 = 5432;
pub const USER: &str = "postgres";
pub const DATABASE: &str = "test";

/// The test database's URL: `PLANGATE_TEST_PG` when set, else
/// `postgres://postgres@127.0.0.1:5432/test`.
pub fn test_url() -> String {
    std::env::var("PLANGATE_TEST_PG").unwrap_or_else(|_| format!("postgres://{USER}@{HOST}:{PORT}/{DATABASE}"))
}

/// A `[store]` section that keeps a test on sled when the suite runs on
/// PostgreSQL (`PLANGATE_TEST_BACKEND=postgres`): for what only sled does
/// (`backup`, `prune`) and for `migrate`'s source.
pub const SLED: &str = "\n[store]\nbackend = \"sled\"\n";

/// The lease the replica configs use: short, so a killed replica's timers
/// and chat work are taken over within seconds (the config's minimum is 3).
pub const TEST_LEASE_SECONDS: u64 = 3;

/// One test's own schema in the test database.
#[derive(Debug, Clone)]
pub struct TestSchema {
    /// `postgres://postgres@127.0.0.1:5432/test`
    pub url: String,
    /// `t_<16 hex digits>`, new for every call of [`TestSchema::create`].
    pub schema: String,
}

impl TestSchema {
    /// What to do without PostgreSQL, for a skip line.
    pub const INSTALL_HINT: &'static str = "apt-get install postgresql and allow trust auth for postgres@127.0.0.1, database test \
         (or set PLANGATE_TEST_PG to a database URL); see CONTRIBUTING.md";

    /// [`TestSchema::create`], or `None` after a loud skip line when
    /// PostgreSQL is not reachable (a failure under `PLANGATE_REQUIRE_ALL`).
    pub async fn create_or_skip() -> Option<TestSchema> {
        let schema = format!("t_{:016x}", random_u64());
        match psql(&format!("CREATE SCHEMA {schema}")).await {
            Ok(_) => Some(TestSchema { url: test_url(), schema }),
            Err(e) => {
                skip_without_postgres(&e);
                None
            }
        }
    }

    /// Create a schema with a random name. Panics, saying so, when
    /// PostgreSQL is not reachable.
    pub async fn create() -> TestSchema {
        let schema = format!("t_{:016x}", random_u64());
        let created = psql(&format!("CREATE SCHEMA {schema}")).await;
        if let Err(e) = created {
            panic!("PostgreSQL is not reachable at {} (the replica tests need it; .ci/run starts it): {e}", test_url());
        }
        TestSchema { url: test_url(), schema }
    }

    /// Drop the schema and everything in it. Call at the end of a test
    /// that passed.
    pub async fn cleanup(self) {
        if let Err(e) = psql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema)).await {
            panic!("cannot drop test schema {}: {e}", self.schema);
        }
    }

    /// Run one SQL statement in the test database (schema-qualify names:
    /// `SELECT count(*) FROM t_….proposals`); its rows, unaligned, `|`
    /// between columns. For assertions on what the store wrote.
    pub async fn query(&self, sql: &str) -> String {
        psql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

/// The test database's URL once PostgreSQL answers there, or `None` after
/// a loud skip line (a failure under `PLANGATE_REQUIRE_ALL`): for a test
/// that needs PostgreSQL but no schema of its own (`plangate doctor`'s
/// probe).
pub async fn url_or_skip() -> Option<String> {
    match psql("SELECT 1").await {
        Ok(_) => Some(test_url()),
        Err(e) => {
            skip_without_postgres(&e);
            None
        }
    }
}

/// The skip line for a test without PostgreSQL (`why`: what psql said).
fn skip_without_postgres(why: &str) {
    crate::skip::skip(&format!("PostgreSQL at {}", test_url()), why, TestSchema::INSTALL_HINT);
}

/// The `[store]` section that points a server at `schema` (lease
/// [`TEST_LEASE_SECONDS`]).
pub fn store_config(schema: &TestSchema) -> String {
    store_config_with_lease(schema, TEST_LEASE_SECONDS)
}

/// [`store_config`] with another lease.
pub fn store_config_with_lease(schema: &TestSchema, lease_seconds: u64) -> String {
    format!(
        "\n[store]\nbackend = \"postgres\"\npostgres_url = \"{}\"\npostgres_schema = \"{}\"\npool_size = 4\nlease_seconds = {lease_seconds}\n",
        schema.url, schema.schema
    )
}

/// Start `n` replicas of `plangate serve` on `schema`: the same config
/// (agent `demo` sending cards to `destinations`, then `extra` and the
/// `[store]` section) except each has its own loopback port and data dir.
/// Started one after the other, so the first creates the tables.
pub async fn start_replicas(bin: &str, n: usize, schema: &TestSchema, destinations: &[&str], extra: &str) -> Vec<ServerProcess> {
    start_replicas_with_server(bin, n, schema, destinations, "", extra).await
}

/// [`start_replicas`] with more keys of the `[server]` section.
pub async fn start_replicas_with_server(
    bin: &str,
    n: usize,
    schema: &TestSchema,
    destinations: &[&str],
    server_extra: &str,
    extra: &str,
) -> Vec<ServerProcess> {
    let extra = format!("{extra}\n{}", store_config(schema));
    let mut replicas = Vec::with_capacity(n);
    for _ in 0..n {
        replicas.push(ServerProcess::start_with_server(bin, destinations, server_extra, &extra).await);
    }
    replicas
}

/// `psql -c sql` against the test database; stdout, or why it failed.
async fn psql(sql: &str) -> Result<String, String> {
    let run = tokio::process::Command::new("psql")
        .args(["-d", &test_url(), "-v", "ON_ERROR_STOP=1", "-X", "-Atq", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(Duration::from_secs(30), run).await {
        Err(_) => return Err("psql did not finish within 30 s".into()),
        Ok(Err(e)) => return Err(format!("cannot run psql ({e}); install the PostgreSQL client")),
        Ok(Ok(out)) => out,
    };
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    } else {
        Err(format!("psql {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// 64 random bits without a random-number crate: std's per-process
/// random hash keys, mixed with the time and a counter.
fn random_u64() -> u64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default());
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_test_schema_is_created_used_and_dropped() {
        let Some(a) = TestSchema::create_or_skip().await else { return };
        let b = TestSchema::create().await;
        assert_ne!(a.schema, b.schema);
        assert!(a.schema.starts_with("t_") && a.schema.len() == 18, "{}", a.schema);
        a.query(&format!("CREATE TABLE {}.x (n int); INSERT INTO {0}.x VALUES (1), (2)", a.schema)).await;
        assert_eq!(a.query(&format!("SELECT count(*) FROM {}.x", a.schema)).await, "2");
        let exists = format!("SELECT count(*) FROM information_schema.schemata WHERE schema_name = '{}'", a.schema);
        let name = a.schema.clone();
        a.cleanup().await;
        b.cleanup().await;
        assert_eq!(psql(&exists).await.unwrap(), "0", "{name} dropped");
    }

    #[test]
    fn the_store_section_names_the_schema() {
        let config = store_config(&TestSchema { url: "postgres://postgres@127.0.0.1:5432/test".into(), schema: "t_1".into() });
        assert!(config.contains("backend = \"postgres\"") && config.contains("postgres_schema = \"t_1\""), "{config}");
    }
}
