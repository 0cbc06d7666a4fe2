//! Helpers shared by the store tests.

use plangate_engine::{apply, Actor, Command, Ctx, Plan, Proposal, SessionKey, Step, TimerPolicy, Timestamp};
use plangate_store::{Commit, PgOptions, PgStore, SledStore, Store};
use std::time::Duration;

/// The test database: `PLANGATE_TEST_PG`, else the machine's PostgreSQL.
pub fn pg_url() -> String {
    std::env::var("PLANGATE_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

pub fn ctx(now: i64, r: u8) -> Ctx {
    Ctx {
        now: Timestamp(now),
        random: [r; 16],
        timers: TimerPolicy { nudges_ms: vec![600_000, 1_800_000], timeout_ms: Some(86_400_000), ..TimerPolicy::default() },
        approvals: Default::default(),
    }
}

/// Enter plan mode and propose a one-step plan; the proposal's id is `[r; 16]`.
pub fn propose(store: &dyn Store, key: &SessionKey, r: u8) -> Proposal {
    let before = store.load(key).unwrap();
    let t = apply(&before, &Actor::Agent, Command::Enter { reason: None }, &ctx(1, r)).unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    let before = store.load(key).unwrap();
    let plan = Plan { steps: vec![Step::pending("a")], ..Plan::titled(format!("plan {r}")) };
    let t = apply(
        &before,
        &Actor::Agent,
        Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
        &ctx(1000, r),
    )
    .unwrap();
    store.commit(Commit::of(&t, &before, None)).unwrap().written().unwrap();
    t.state.latest.unwrap()
}

/// [`propose`], then store every timer of the proposal, not only the first
/// of each chain: a backlog of due timers for the tests of paging and
/// claiming (it is also what schema 2 stored).
pub fn propose_storing_every_timer(store: &dyn Store, key: &SessionKey, r: u8) -> Proposal {
    let p = propose(store, key, r);
    store.commit(Commit { timers_add: p.timers.clone(), ..Commit::default() }).unwrap().written().unwrap();
    p
}

pub use plangate_store::testing::audit_chain;

/// A store that can be opened again (a restart) over the same data.
pub trait Backend {
    fn open(&self) -> Box<dyn Store>;
}

pub struct SledBackend(pub tempfile::TempDir);

impl SledBackend {
    pub fn new() -> SledBackend {
        SledBackend(tempfile::tempdir().unwrap())
    }
}

impl Backend for SledBackend {
    fn open(&self) -> Box<dyn Store> {
        Box::new(SledStore::open(self.0.path()).unwrap())
    }
}

pub struct PgBackend(pub TestSchema);

impl PgBackend {
    /// `None` (after a loud skip line) without PostgreSQL.
    pub fn new() -> Option<PgBackend> {
        TestSchema::new().map(PgBackend)
    }
}

impl Backend for PgBackend {
    fn open(&self) -> Box<dyn Store> {
        Box::new(self.0.open())
    }
}

/// A PostgreSQL schema of its own for one test (`t_<hex>`), dropped when
/// the test passed (kept for a look when it failed).
pub struct TestSchema {
    pub schema: String,
}

pub fn admin() -> postgres::Client {
    postgres::Client::connect(&pg_url(), postgres::NoTls)
        .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at {} (these tests need it; .ci/run starts it): {e}", pg_url()))
}

/// Said when PostgreSQL is missing: the testkit's loud skip (a failure
/// under `PLANGATE_REQUIRE_ALL`), counted in the run's sum.
fn skip_without_postgres(why: &str) {
    let hint = "apt-get install postgresql and allow trust auth for postgres@127.0.0.1, database test \
                (or set PLANGATE_TEST_PG to a database URL); see CONTRIBUTING.md";
    plangate_testkit::skip::skip(&format!("PostgreSQL at {}", pg_url()), why, hint);
}

impl TestSchema {
    /// A new schema name, once PostgreSQL answers; `None` after a loud skip
    /// line when it does not (a failure under `PLANGATE_REQUIRE_ALL`).
    pub fn new() -> Option<TestSchema> {
        match postgres::Client::connect(&pg_url(), postgres::NoTls) {
            Ok(client) => drop(client),
            Err(e) => {
                skip_without_postgres(&e.to_string());
                return None;
            }
        }
        Some(TestSchema { schema: format!("t_{:016x}", rand::random::<u64>()) })
    }

    pub fn options(&self) -> PgOptions {
        PgOptions { schema: self.schema.clone(), pool_size: 4, ..PgOptions::new(pg_url()) }
    }

    pub fn options_with_lease(&self, lease: Duration) -> PgOptions {
        PgOptions { lease, ..self.options() }
    }

    pub fn open(&self) -> PgStore {
        PgStore::open(&self.options()).unwrap()
    }

    /// A plain connection with `search_path` on this schema.
    pub fn client(&self) -> postgres::Client {
        let mut client = admin();
        client.batch_execute(&format!("SET search_path TO {}", self.schema)).unwrap();
        client
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = admin().batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
        }
    }
}

/// Whether `cond` holds every time it is checked (every 20 ms) for all of
/// `during`: a wait that says what must stay true while time passes (a
/// lease not yet run out, nothing heard), instead of a blind sleep.
pub fn holds_for(during: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + during;
    loop {
        if !cond() {
            return false;
        }
        if std::time::Instant::now() >= deadline {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Poll `cond` every 20 ms for up to `within`.
pub fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
