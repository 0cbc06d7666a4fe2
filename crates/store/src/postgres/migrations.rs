//! Versioned schema migrations, applied when a [`super::PgStore`] opens.
//!
//! Each migration runs once per schema, recorded in `schema_migrations`.
//! All pending migrations run in ONE transaction under a transaction-level
//! advisory lock on the schema, so two replicas starting together take
//! turns: the second finds the work done. A schema migrated by a newer
//! plangate (a version above [`newest`]) is refused with
//! [`StoreError::SchemaTooNew`]: an older binary must not write a layout it
//! does not know.
//!
//! Rules for a new migration: append it (never edit a released one), keep it
//! compatible with the previous release while replicas of both run side by
//! side during a rolling upgrade (add columns and tables; drop them one
//! release later).

use super::Failure;
use crate::StoreError;
use postgres::Client;

/// `(version, name, SQL)`, in version order. The SQL runs with
/// `search_path` set to the store's schema.
pub(crate) const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "initial tables", INITIAL),
    (2, "namespace revisions", NAMESPACE_REVISIONS),
    (3, "permission rules", PERMISSION_RULES),
    (4, "timer chains", TIMER_CHAINS),
    (5, "audit chain", AUDIT_CHAIN),
];

/// Each audit record's place in the tamper-evident chain (`super::chain`):
/// its number and hash beside the body (which holds them too, with the
/// previous hash). Rows written before are chained at open, after which
/// both columns are NOT NULL (`chain::chain_unchained`): stop replicas of
/// older releases before starting this one, since their appends fail from
/// then on (closed, never an unchained record).
const AUDIT_CHAIN: &str = r#"
ALTER TABLE audit ADD COLUMN chain_seq bigint, ADD COLUMN chain_hash bytea;
CREATE UNIQUE INDEX audit_chain ON audit (chain_seq);
"#;

/// Only the first timer of each chain is stored (`plangate_engine::chains`):
/// the rest were stored one row each before, and the proposals and sessions
/// still hold them. A chain is an approval's reminders (kind 0), its
/// escalation and timeout (kinds 1 and 2) or an agent's reminders (kind 3);
/// subagent expiries (4) are left alone. Rows are ordered as the primary
/// key orders them, so a row with an earlier one on its chain goes.
///
/// During a rolling upgrade, a replica of the previous release that fires
/// the first reminder of a plan proposed through a newer replica stores
/// nothing after it (it knew every timer to be stored): stop the older
/// replicas before the newer ones take traffic (`docs/OPERATIONS.md`).
const TIMER_CHAINS: &str = r#"
DELETE FROM timers t USING timers h
WHERE t.kind <> 4
  AND h.approval_id = t.approval_id
  AND (CASE WHEN h.kind = 2 THEN 1 ELSE h.kind END) = (CASE WHEN t.kind = 2 THEN 1 ELSE t.kind END)
  AND (h.due, h.kind, h.n) < (t.due, t.kind, t.n);
"#;

/// The "always allow" rules people stored for an agent (the sled store's
/// `rules` tree): written in a transition's commit, listed oldest first.
const PERMISSION_RULES: &str = r#"
CREATE TABLE permission_rules (
    agent text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (agent, id)
);
CREATE INDEX permission_rules_order ON permission_rules (agent, created_at, id);
"#;

/// Namespaces are written conditionally on their revision, as sessions
/// are (`Namespaces::set_namespace`). Rows that exist start at 1. A replica of
/// the previous release still overwrites without moving the revision
/// while both run during a rolling upgrade (as it did before).
const NAMESPACE_REVISIONS: &str = "ALTER TABLE namespaces ADD COLUMN revision bigint NOT NULL DEFAULT 1;";

/// The tables of the first release. Bodies are the same JSON bytes the sled
/// store keeps (`bytea`, not `jsonb`: byte-exact round trips, and no
/// refusal of a `\u0000` inside a plan). The columns beside them are the
/// keys and filters queries need. Text keys use the "C" collation so that
/// listings come back in the byte order sled returns them in.
const INITIAL: &str = r#"
CREATE TABLE sessions (
    agent text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    latest_approval bytea,
    revision bigint NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (agent, session_id)
);
CREATE TABLE proposals (
    approval_id bytea PRIMARY KEY,
    id_hex text COLLATE "C" NOT NULL,
    status text NOT NULL,
    agent text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    body bytea NOT NULL
);
CREATE INDEX proposals_id_hex ON proposals (id_hex text_pattern_ops);
CREATE INDEX proposals_status ON proposals (status, created_at);
CREATE INDEX proposals_session ON proposals (agent, session_id);
CREATE TABLE questions (
    question_id bytea PRIMARY KEY,
    agent text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    body bytea NOT NULL
);
-- Keyed exactly like sled's timers: (due, id, kind, n). The session is in
-- the body only, as in sled.
CREATE TABLE timers (
    due bigint NOT NULL,
    approval_id bytea NOT NULL,
    kind smallint NOT NULL,
    n smallint NOT NULL,
    body bytea NOT NULL,
    lease_owner text,
    lease_until timestamptz,
    PRIMARY KEY (due, approval_id, kind, n)
);
CREATE INDEX timers_lease_owner ON timers (lease_owner) WHERE lease_owner IS NOT NULL;
CREATE TABLE deliveries (
    approval_id bytea NOT NULL,
    destination text COLLATE "C" NOT NULL,
    chat text COLLATE "C" NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (approval_id, destination, chat)
);
CREATE TABLE question_deliveries (
    question_id bytea NOT NULL,
    destination text COLLATE "C" NOT NULL,
    chat text COLLATE "C" NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (question_id, destination, chat)
);
CREATE TABLE audit (
    seq bigserial PRIMARY KEY,
    at bigint NOT NULL,
    agent text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    approval_id bytea,
    body bytea NOT NULL
);
CREATE INDEX audit_session ON audit (agent, session_id, seq);
CREATE INDEX audit_approval ON audit (approval_id, seq);
CREATE TABLE idempotency (
    key text COLLATE "C" PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE cursors (
    key text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE documents (
    approval_id bytea PRIMARY KEY,
    path text NOT NULL
);
CREATE TABLE namespaces (
    name text COLLATE "C" PRIMARY KEY,
    body bytea NOT NULL
);
CREATE TABLE outbox (
    seq bigint PRIMARY KEY,
    work bytea NOT NULL,
    lease_owner text,
    lease_until timestamptz
);
-- Outbox::generate_seq.
CREATE SEQUENCE ids;
"#;

/// The newest version this plangate knows.
pub(crate) fn newest() -> i64 {
    MIGRATIONS.iter().map(|m| m.0).max().unwrap_or(0)
}

/// What [`run`] did.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub versions: Vec<i64>,
}

/// Create the schema if needed and apply every migration it lacks, all in
/// one transaction under the schema's migration lock. `schema` was
/// validated (`[a-z_][a-z0-9_]*`), so it is safe to splice into SQL.
pub(crate) fn run(client: &mut Client, schema: &str) -> Result<Applied, Failure> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('plangate migrations'), hashtext($1))", &[&schema])?;
    // Checked rather than `CREATE SCHEMA IF NOT EXISTS`: a role allowed to
    // use an existing schema need not be allowed to create schemas.
    let exists: bool = tx.query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", &[&schema])?.get(0);
    if !exists {
        tx.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
    }
    tx.batch_execute(&format!(
        "SET LOCAL search_path TO {schema};
         CREATE TABLE IF NOT EXISTS schema_migrations (
             version bigint PRIMARY KEY,
             name text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))?;
    let found: i64 = tx.query_one("SELECT coalesce(max(version), 0)::bigint FROM schema_migrations", &[])?.get(0);
    let known = newest();
    if found > known {
        return Err(Failure::Store(StoreError::SchemaTooNew { found, known }));
    }
    let mut applied = Applied::default();
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 > found) {
        tx.batch_execute(sql)?;
        tx.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", &[version, name])?;
        applied.versions.push(*version);
    }
    tx.commit()?;
    Ok(applied)
}
