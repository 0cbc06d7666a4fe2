//! Moving a deployment from the embedded sled store to PostgreSQL.
//!
//! [`sled_to_postgres`] copies every record of a stopped plangate's sled
//! store into an empty PostgreSQL schema, in one transaction: afterwards the
//! schema holds all of it, or (on any error) nothing. Plan documents are
//! not copied: they stay files under `<data_dir>/plans`, and the copied
//! document paths keep pointing at them, so the replicas need that
//! directory (shared, or copied to each).

use crate::postgres::{Failure, PgStore};
use crate::sled_store::{decode, SledStore, Trees};
use crate::{PgOptions, StoreError};
use plangate_delivery::Delivery;
use plangate_engine::permission::StoredRule;
use plangate_engine::{AuditEvent, Proposal, Question, Session, Timer};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::Transaction;
use std::fmt;
use std::path::Path;

/// How many records of each kind a migration copied (and verified).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MigrateReport {
    pub sessions: u64,
    pub proposals: u64,
    pub questions: u64,
    pub timers: u64,
    pub deliveries: u64,
    pub question_deliveries: u64,
    pub audit: u64,
    pub idempotency_keys: u64,
    pub cursors: u64,
    pub document_paths: u64,
    pub namespaces: u64,
    pub outbox: u64,
    pub permission_rules: u64,
}

impl MigrateReport {
    /// `(kind, count)` in the order the tables are copied.
    pub fn kinds(&self) -> [(&'static str, u64); 13] {
        [
            ("sessions", self.sessions),
            ("proposals", self.proposals),
            ("questions", self.questions),
            ("timers", self.timers),
            ("deliveries", self.deliveries),
            ("question deliveries", self.question_deliveries),
            ("audit records", self.audit),
            ("idempotency keys", self.idempotency_keys),
            ("cursors", self.cursors),
            ("document paths", self.document_paths),
            ("namespaces", self.namespaces),
            ("outbox entries", self.outbox),
            ("permission rules", self.permission_rules),
        ]
    }
}

impl fmt::Display for MigrateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (kind, count) in self.kinds() {
            writeln!(f, "{kind}: {count}")?;
        }
        Ok(())
    }
}

/// The tables, in the order of [`MigrateReport::kinds`].
const TABLES: [&str; 13] = [
    "sessions",
    "proposals",
    "questions",
    "timers",
    "deliveries",
    "question_deliveries",
    "audit",
    "idempotency",
    "cursors",
    "documents",
    "namespaces",
    "outbox",
    "permission_rules",
];

/// Copy the sled store under `from_data_dir` (a stopped plangate's data
/// dir) into the empty PostgreSQL schema `to`, in one transaction, then
/// verify each table's count against the sled tree it came from.
///
/// Refused: a data dir without a sled database, one a running plangate has
/// open, and a target schema that already holds data. Sessions start at
/// revision 1; the sequences continue above every copied number. Plan
/// documents stay files under `<data_dir>/plans` (only their paths move).
pub fn sled_to_postgres(from_data_dir: &Path, to: &PgOptions) -> Result<MigrateReport, StoreError> {
    let db_dir = from_data_dir.join("db");
    if !db_dir.is_dir() {
        return Err(StoreError::Unavailable(format!(
            "there is no sled database at {}: nothing to migrate (is the data dir right?)",
            db_dir.display()
        )));
    }
    let sled = SledStore::open(from_data_dir).map_err(|e| match e {
        StoreError::Sled(sled::Error::Io(io)) if io.to_string().contains("could not acquire lock") => StoreError::Unavailable(format!(
            "the sled data dir {} is in use by a running plangate; stop it first ({io})",
            from_data_dir.display()
        )),
        other => other,
    })?;
    let pg = PgStore::open(to)?;
    let span = tracing::info_span!("migrate_sled_to_postgres", from = %from_data_dir.display(), schema = %to.schema);
    let _enter = span.enter();
    let mut client = pg.dedicated("migrate")?;
    let trees = sled.raw_trees()?;
    let result = (|| -> Result<MigrateReport, Failure> {
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext('plangate migrate'), hashtext($1))", &[&to.schema])?;
        refuse_non_empty(&mut tx, &to.schema)?;
        let report = copy_all(&mut tx, &trees)?;
        verify(&mut tx, &trees, &report)?;
        tx.commit()?;
        Ok(report)
    })();
    let report = result.map_err(|f| pg.failure("migrating into PostgreSQL", f))?;
    tracing::info!(records = report.kinds().iter().map(|k| k.1).sum::<u64>(), "migrated the sled store into PostgreSQL");
    Ok(report)
}

fn counts(tx: &mut Transaction<'_>) -> Result<Vec<i64>, Failure> {
    let sql = TABLES.iter().map(|t| format!("(SELECT count(*) FROM {t})")).collect::<Vec<_>>().join(", ");
    let row = tx.query_one(&format!("SELECT {sql}"), &[])?;
    (0..TABLES.len()).map(|i| Ok(row.try_get::<_, i64>(i)?)).collect()
}

fn refuse_non_empty(tx: &mut Transaction<'_>, schema: &str) -> Result<(), Failure> {
    let held: Vec<String> = counts(tx)?.iter().zip(TABLES).filter(|(n, _)| **n > 0).map(|(n, t)| format!("{n} {t}")).collect();
    if held.is_empty() {
        return Ok(());
    }
    Err(Failure::Store(StoreError::Postgres(format!(
        "the schema {schema} already holds plangate data ({}); migrate only into an empty schema (drop it, or choose another schema); nothing was written",
        held.join(", ")
    ))))
}

fn corrupt(what: &str) -> Failure {
    Failure::Store(StoreError::Unavailable(format!("a {what} key in the sled store is malformed; nothing was written")))
}

fn text(bytes: &[u8], what: &str) -> Result<String, Failure> {
    String::from_utf8(bytes.to_vec()).map_err(|_| corrupt(what))
}

fn seq_of(key: &[u8], what: &str) -> Result<i64, Failure> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| corrupt(what))?;
    i64::try_from(u64::from_be_bytes(bytes)).map_err(|_| corrupt(what))
}

/// One `COPY … FROM STDIN BINARY`: fast for 100,000 rows and more.
struct Copy<'a> {
    writer: BinaryCopyInWriter<'a>,
}

impl<'a> Copy<'a> {
    fn new(tx: &'a mut Transaction<'_>, table_columns: &str, types: &[Type]) -> Result<Copy<'a>, Failure> {
        let writer = tx.copy_in(&format!("COPY {table_columns} FROM STDIN BINARY"))?;
        Ok(Copy { writer: BinaryCopyInWriter::new(writer, types) })
    }

    fn row(&mut self, values: &[&(dyn ToSql + Sync)]) -> Result<(), Failure> {
        Ok(self.writer.write(values)?)
    }

    fn finish(self) -> Result<u64, Failure> {
        Ok(self.writer.finish()?)
    }
}

fn copy_all(tx: &mut Transaction<'_>, trees: &Trees) -> Result<MigrateReport, Failure> {
    let mut report = MigrateReport::default();

    let mut copy = Copy::new(
        tx,
        "sessions (agent, session_id, latest_approval, revision, body)",
        &[Type::TEXT, Type::TEXT, Type::BYTEA, Type::INT8, Type::BYTEA],
    )?;
    for entry in trees.sessions.iter() {
        let (_, value) = entry.map_err(StoreError::from)?;
        let s: Session = decode(&value, "session")?;
        let latest = s.latest_approval.map(|id| id.0.to_vec());
        copy.row(&[&s.key.agent, &s.key.session_id, &latest, &1i64, &&value[..]])?;
    }
    report.sessions = copy.finish()?;

    let mut copy = Copy::new(
        tx,
        "proposals (approval_id, id_hex, status, agent, session_id, created_at, body)",
        &[Type::BYTEA, Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8, Type::BYTEA],
    )?;
    for entry in trees.proposals.iter() {
        let (_, value) = entry.map_err(StoreError::from)?;
        let p: Proposal = decode(&value, "proposal")?;
        copy.row(&[
            &&p.approval_id.0[..],
            &p.approval_id.to_string(),
            &p.status.as_str(),
            &p.session.agent,
            &p.session.session_id,
            &p.created_at.0,
            &&value[..],
        ])?;
    }
    report.proposals = copy.finish()?;

    let mut copy = Copy::new(tx, "questions (question_id, agent, session_id, body)", &[Type::BYTEA, Type::TEXT, Type::TEXT, Type::BYTEA])?;
    for entry in trees.questions.iter() {
        let (_, value) = entry.map_err(StoreError::from)?;
        let q: Question = decode(&value, "question")?;
        copy.row(&[&&q.question_id.0[..], &q.session.agent, &q.session.session_id, &&value[..]])?;
    }
    report.questions = copy.finish()?;

    let mut copy =
        Copy::new(tx, "timers (due, approval_id, kind, n, body)", &[Type::INT8, Type::BYTEA, Type::INT2, Type::INT2, Type::BYTEA])?;
    for entry in trees.timers.iter() {
        let (_, value) = entry.map_err(StoreError::from)?;
        let t: Timer = decode(&value, "timer")?;
        let (due, id, kind, n) = crate::postgres::timer_identity(&t);
        copy.row(&[&due, &id, &kind, &n, &&value[..]])?;
    }
    report.timers = copy.finish()?;

    for (tree, table, id_column) in
        [(&trees.deliveries, "deliveries", "approval_id"), (&trees.question_deliveries, "question_deliveries", "question_id")]
    {
        let mut copy =
            Copy::new(tx, &format!("{table} ({id_column}, destination, chat, body)"), &[Type::BYTEA, Type::TEXT, Type::TEXT, Type::BYTEA])?;
        for entry in tree.iter() {
            let (key, value) = entry.map_err(StoreError::from)?;
            let id = key.get(..16).ok_or_else(|| corrupt(table))?;
            let d: Delivery = decode(&value, "delivery")?;
            copy.row(&[&id, &d.destination, &d.chat, &&value[..]])?;
        }
        let n = copy.finish()?;
        if table == "deliveries" {
            report.deliveries = n;
        } else {
            report.question_deliveries = n;
        }
    }

    let mut copy = Copy::new(
        tx,
        "audit (seq, at, agent, session_id, approval_id, body, chain_seq, chain_hash)",
        &[Type::INT8, Type::INT8, Type::TEXT, Type::TEXT, Type::BYTEA, Type::BYTEA, Type::INT8, Type::BYTEA],
    )?;
    // The chain comes along as it is: sled's records, in key order, are
    // the chain's order, and each body holds its place in it.
    for entry in trees.audit.iter() {
        let (key, value) = entry.map_err(StoreError::from)?;
        let seq = seq_of(&key, "audit")?;
        let e: AuditEvent = decode(&value, "audit")?;
        let approval = e.approval_id.map(|id| id.0.to_vec());
        let record = crate::chained::unseal(&value)?;
        let chain_seq = i64::try_from(record.seq).map_err(|_| StoreError::AuditChain("the chain's numbers ran out".into()))?;
        copy.row(&[&seq, &e.at.0, &e.agent, &e.session_id, &approval, &&value[..], &chain_seq, &&record.hash[..]])?;
    }
    report.audit = copy.finish()?;

    let mut copy = Copy::new(tx, "idempotency (key)", &[Type::TEXT])?;
    for key in trees.idempotency.iter().keys() {
        let key = key.map_err(StoreError::from)?;
        copy.row(&[&text(&key, "idempotency")?])?;
    }
    report.idempotency_keys = copy.finish()?;

    let mut copy = Copy::new(tx, "cursors (key, value)", &[Type::TEXT, Type::TEXT])?;
    for entry in trees.meta.scan_prefix(CURSOR_PREFIX) {
        let (key, value) = entry.map_err(StoreError::from)?;
        let name = text(&key[CURSOR_PREFIX.len()..], "cursor")?;
        copy.row(&[&name, &String::from_utf8_lossy(&value).into_owned()])?;
    }
    report.cursors = copy.finish()?;

    let mut copy = Copy::new(tx, "documents (approval_id, path)", &[Type::BYTEA, Type::TEXT])?;
    for entry in trees.documents.iter() {
        let (key, value) = entry.map_err(StoreError::from)?;
        copy.row(&[&&key[..], &String::from_utf8_lossy(&value).into_owned()])?;
    }
    report.document_paths = copy.finish()?;

    let mut copy = Copy::new(tx, "namespaces (name, body)", &[Type::TEXT, Type::BYTEA])?;
    for entry in trees.namespaces.iter() {
        let (key, value) = entry.map_err(StoreError::from)?;
        copy.row(&[&text(&key, "namespace")?, &&value[..]])?;
    }
    report.namespaces = copy.finish()?;

    let mut copy = Copy::new(tx, "outbox (seq, work)", &[Type::INT8, Type::BYTEA])?;
    let mut max_seq = 0i64;
    for entry in trees.outbox.iter() {
        let (key, value) = entry.map_err(StoreError::from)?;
        let seq = seq_of(&key, "outbox")?;
        max_seq = max_seq.max(seq);
        copy.row(&[&seq, &&value[..]])?;
    }
    report.outbox = copy.finish()?;

    let mut copy = Copy::new(tx, "permission_rules (agent, id, created_at, body)", &[Type::TEXT, Type::TEXT, Type::INT8, Type::BYTEA])?;
    for entry in trees.rules.iter() {
        let (_, value) = entry.map_err(StoreError::from)?;
        let rule: StoredRule = decode(&value, "permission rule")?;
        copy.row(&[&rule.agent, &rule.id, &rule.created_at.0, &&value[..]])?;
    }
    report.permission_rules = copy.finish()?;

    // `generate_seq` continues above every number sled handed out (its id
    // generator also numbered the audit), and the audit after its records.
    let sled_next = i64::try_from(trees.db.generate_id().map_err(StoreError::from)?).unwrap_or(i64::MAX);
    let max_audit: i64 = tx.query_one("SELECT coalesce(max(seq), 0)::bigint FROM audit", &[])?.try_get(0)?;
    let ids = sled_next.max(max_seq).max(max_audit).max(1);
    tx.execute("SELECT setval('ids', $1)", &[&ids])?;
    if max_audit > 0 {
        tx.execute("SELECT setval(pg_get_serial_sequence('audit', 'seq'), $1)", &[&max_audit])?;
    }
    Ok(report)
}

const CURSOR_PREFIX: &[u8] = b"cursor:";

/// Each table holds exactly what its sled tree held; else nothing is kept.
fn verify(tx: &mut Transaction<'_>, trees: &Trees, report: &MigrateReport) -> Result<(), Failure> {
    let sled_counts = [
        trees.sessions.len(),
        trees.proposals.len(),
        trees.questions.len(),
        trees.timers.len(),
        trees.deliveries.len(),
        trees.question_deliveries.len(),
        trees.audit.len(),
        trees.idempotency.len(),
        trees.meta.scan_prefix(CURSOR_PREFIX).count(),
        trees.documents.len(),
        trees.namespaces.len(),
        trees.outbox.len(),
        trees.rules.len(),
    ];
    let pg_counts = counts(tx)?;
    let mut wrong = Vec::new();
    for (((kind, copied), in_sled), in_pg) in report.kinds().iter().zip(sled_counts).zip(pg_counts) {
        if *copied != in_sled as u64 || in_pg != in_sled as i64 {
            wrong.push(format!("{kind}: sled {in_sled}, copied {copied}, PostgreSQL {in_pg}"));
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(Failure::Store(StoreError::Unavailable(format!("the migration did not verify ({}); nothing was written", wrong.join("; ")))))
}
