//! The SQL of the PostgreSQL store, in one place: every statement, and the
//! conversions between rows and plangate's values (bodies are the sled
//! store's JSON bytes; timers are keyed exactly like sled's).

use super::Failure;
use crate::sled_store::decode;
use crate::{OutboxEntry, StoreError};
use plangate_delivery::Delivery;
use plangate_engine::{Timer, TimerKind};
use serde::de::DeserializeOwned;
use tokio_postgres::Row;

/// The identity columns of `timers`, as arrays for `unnest`.
pub(super) fn timer_columns(timers: &[Timer]) -> (Vec<i64>, Vec<Vec<u8>>, Vec<i16>, Vec<i16>) {
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
pub(super) type TimerIdentity<'a> = (i64, &'a [u8], i16, i16);

pub(crate) fn timer_identity(t: &Timer) -> TimerIdentity<'_> {
    let (kind, n) = match t.kind {
        TimerKind::Nudge(n) => (0, n),
        TimerKind::Timeout => (1, 0),
        TimerKind::Escalate => (2, 0),
        TimerKind::AgentNudge(n) => (3, n),
        TimerKind::SubagentExpiry => (4, 0),
        TimerKind::Level(n) => (5, n),
    };
    (t.due.0, &t.approval_id.0[..], kind, i16::from(n))
}

pub(super) fn body<T: DeserializeOwned>(row: &Row, column: usize, what: &'static str) -> Result<T, Failure> {
    let bytes: &[u8] = row.try_get(column)?;
    Ok(decode(bytes, what)?)
}

/// The bodies of a listing: a body that does not decode is left out and
/// logged ([`crate::sled_store::decode_listed`]).
pub(super) fn bodies<T: DeserializeOwned>(rows: &[Row], what: &'static str) -> Result<Vec<T>, Failure> {
    let raw = rows.iter().map(|row| row.try_get::<_, &[u8]>(0)).collect::<Result<Vec<_>, _>>()?;
    Ok(crate::sled_store::decode_listed(raw, what))
}

pub(super) fn to_i64(value: u64, what: &str) -> Result<i64, Failure> {
    i64::try_from(value).map_err(|_| Failure::Store(StoreError::Postgres(format!("{what} {value} does not fit PostgreSQL's bigint"))))
}

pub(super) fn limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Only lowercase hex can match a prefix of an id's text (as in sled), and
/// checking it keeps `LIKE` wildcards out.
pub(super) fn hex_prefix_ok(prefix: &str) -> bool {
    prefix.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub(super) fn decode_delivery_rows(rows: &[Row]) -> Result<Vec<Delivery>, Failure> {
    bodies(rows, "delivery")
}

pub(super) fn outbox_entry(row: &Row) -> Result<OutboxEntry, Failure> {
    let seq: i64 = row.try_get(0)?;
    let work: Vec<u8> = row.try_get(1)?;
    Ok(OutboxEntry { seq: u64::try_from(seq).unwrap_or(0), work })
}

pub(super) const SESSION_INSERT: &str =
    "INSERT INTO sessions (agent, session_id, latest_approval, revision, body) VALUES ($1, $2, $3, 1, $4) \
     ON CONFLICT DO NOTHING";
pub(super) const SESSION_UPDATE: &str =
    "UPDATE sessions SET latest_approval = $3, body = $4, revision = revision + 1 WHERE agent = $1 AND session_id = $2 AND revision = $5";
pub(super) const SESSION_UPSERT: &str =
    "INSERT INTO sessions (agent, session_id, latest_approval, revision, body) VALUES ($1, $2, $3, 1, $4) \
     ON CONFLICT (agent, session_id) DO UPDATE SET latest_approval = EXCLUDED.latest_approval, body = EXCLUDED.body, \
     revision = sessions.revision + 1";
pub(super) const LOAD: &str =
    "SELECT s.revision, s.body, p.body FROM sessions s LEFT JOIN proposals p ON p.approval_id = s.latest_approval \
     WHERE s.agent = $1 AND s.session_id = $2";
pub(super) const TIMER_DELETE: &str = "DELETE FROM timers WHERE due = $1 AND approval_id = $2 AND kind = $3 AND n = $4";
pub(super) const IDEMPOTENCY_INSERT: &str = "INSERT INTO idempotency (key) VALUES ($1) ON CONFLICT DO NOTHING";
pub(super) const PROPOSAL_EXISTS: &str = "SELECT 1 FROM proposals WHERE approval_id = $1";
pub(super) const PROPOSAL_UPSERT: &str = "INSERT INTO proposals (approval_id, id_hex, status, agent, session_id, created_at, body) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (approval_id) DO UPDATE SET status = EXCLUDED.status, \
     agent = EXCLUDED.agent, session_id = EXCLUDED.session_id, created_at = EXCLUDED.created_at, body = EXCLUDED.body";
pub(super) const QUESTION_UPSERT: &str = "INSERT INTO questions (question_id, agent, session_id, body) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (question_id) DO UPDATE SET agent = EXCLUDED.agent, session_id = EXCLUDED.session_id, body = EXCLUDED.body";
pub(super) const RULE_INSERT: &str = "INSERT INTO permission_rules (agent, id, created_at, body) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (agent, id) DO NOTHING";
pub(super) const RULES: &str = "SELECT body FROM permission_rules WHERE agent = $1 ORDER BY created_at, id";
pub(super) const RULE_DELETE: &str = "DELETE FROM permission_rules WHERE agent = $1 AND id = $2";
pub(super) const TIMERS_DELETE: &str = "DELETE FROM timers WHERE (due, approval_id, kind, n) IN \
     (SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::smallint[], $4::smallint[]))";
pub(super) const TIMERS_UPSERT: &str = "INSERT INTO timers (due, approval_id, kind, n, body) \
     SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::smallint[], $4::smallint[], $5::bytea[]) \
     ON CONFLICT (due, approval_id, kind, n) DO UPDATE SET body = EXCLUDED.body, lease_owner = NULL, lease_until = NULL";
/// `$1` new outbox numbers (`Outbox::generate_seqs`).
pub(super) const NEXT_SEQS: &str = "SELECT nextval('ids') FROM generate_series(1::bigint, $1::bigint)";
pub(super) const OUTBOX_INSERT_MANY: &str = "INSERT INTO outbox (seq, work, lease_owner, lease_until) \
     SELECT seq, work, $3, clock_timestamp() + make_interval(secs => $4) FROM unnest($1::bigint[], $2::bytea[]) AS u(seq, work) \
     ON CONFLICT (seq) DO UPDATE SET work = EXCLUDED.work, lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until";
/// One payload `$2` on channel `$1`, inside a commit (see `commit::Notice`).
pub(super) const NOTIFY: &str = "SELECT pg_notify($1, $2)";
/// Every payload of `$2` on channel `$1`, in one statement (see `notify`).
pub(super) const NOTIFY_MANY: &str = "SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p";
pub(super) const NAMESPACE_INSERT: &str = "INSERT INTO namespaces (name, body, revision) VALUES ($1, $2, 1) ON CONFLICT DO NOTHING";
pub(super) const NAMESPACE_UPDATE: &str = "UPDATE namespaces SET body = $2, revision = revision + 1 WHERE name = $1 AND revision = $3";
/// Lease the first `$3` due timers that are free for `$2` (nobody holds
/// them, their holder's lease ran out, or `$2` holds them already); rows
/// another transaction is claiming right now are skipped, not waited for.
pub(super) const CLAIM_TIMERS: &str = "WITH picked AS (SELECT due, approval_id, kind, n FROM timers \
     WHERE due <= $1 AND (lease_until IS NULL OR lease_until < clock_timestamp() OR lease_owner = $2) \
     ORDER BY due, approval_id, kind, n LIMIT $3 FOR UPDATE SKIP LOCKED) \
     UPDATE timers t SET lease_owner = $2, lease_until = clock_timestamp() + make_interval(secs => $4) FROM picked \
     WHERE t.due = picked.due AND t.approval_id = picked.approval_id AND t.kind = picked.kind AND t.n = picked.n \
     RETURNING t.due, t.approval_id, t.kind, t.n, t.body";
pub(super) const CLAIM_TIMERS_AFTER: &str = "WITH picked AS (SELECT due, approval_id, kind, n FROM timers \
     WHERE due <= $1 AND (due, approval_id, kind, n) > ($5, $6, $7, $8) \
     AND (lease_until IS NULL OR lease_until < clock_timestamp() OR lease_owner = $2) \
     ORDER BY due, approval_id, kind, n LIMIT $3 FOR UPDATE SKIP LOCKED) \
     UPDATE timers t SET lease_owner = $2, lease_until = clock_timestamp() + make_interval(secs => $4) FROM picked \
     WHERE t.due = picked.due AND t.approval_id = picked.approval_id AND t.kind = picked.kind AND t.n = picked.n \
     RETURNING t.due, t.approval_id, t.kind, t.n, t.body";
pub(super) const CLAIM_OUTBOX: &str = "WITH picked AS (SELECT seq FROM outbox \
     WHERE lease_owner IS NULL OR lease_until IS NULL OR lease_until < clock_timestamp() \
     ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) \
     UPDATE outbox o SET lease_owner = $1, lease_until = clock_timestamp() + make_interval(secs => $3) FROM picked \
     WHERE o.seq = picked.seq RETURNING o.seq, o.work";
/// Lease the first `$2` outbox entries after seq `$4` that nobody holds (or
/// whose holder's lease ran out) to `$1`; see `claims::claim_outbox_page`.
pub(super) const CLAIM_OUTBOX_FREE_AFTER: &str = "WITH picked AS (SELECT seq FROM outbox \
     WHERE seq > $4 AND (lease_owner IS NULL OR lease_until IS NULL OR lease_until < clock_timestamp()) \
     ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) \
     UPDATE outbox o SET lease_owner = $1, lease_until = clock_timestamp() + make_interval(secs => $3) FROM picked \
     WHERE o.seq = picked.seq";
/// The first `$2` outbox entries after seq `$3` that `$1` holds.
pub(super) const OUTBOX_HELD_AFTER: &str = "SELECT seq, work FROM outbox WHERE seq > $3 AND lease_owner = $1 ORDER BY seq LIMIT $2";
/// Free every lease `$1` holds if no connection of `$1` is open (its
/// connections name it: `plangate <replica>`, `plangate <purpose>
/// <replica>`, cut to PostgreSQL's 63 bytes): whether it is alive, and how
/// many outbox entries and timers were freed. See `claims::take_over_from`.
pub(super) const RELEASE_IF_GONE: &str = "WITH alive AS (SELECT EXISTS (SELECT 1 FROM pg_stat_activity \
     WHERE application_name LIKE 'plangate %' AND (application_name LIKE '% ' || $1 OR application_name = left('plangate ' || $1, 63) \
     OR application_name = left('plangate notifier ' || $1, 63))) AS yes), \
     o AS (UPDATE outbox SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1 AND NOT (SELECT yes FROM alive) RETURNING 1), \
     t AS (UPDATE timers SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1 AND NOT (SELECT yes FROM alive) RETURNING 1) \
     SELECT (SELECT yes FROM alive), (SELECT count(*) FROM o), (SELECT count(*) FROM t)";
pub(super) const RENEW: &str = "WITH o AS (UPDATE outbox SET lease_until = clock_timestamp() + make_interval(secs => $2) \
     WHERE lease_owner = $1 RETURNING 1), \
     t AS (UPDATE timers SET lease_until = clock_timestamp() + make_interval(secs => $2) WHERE lease_owner = $1 RETURNING 1) \
     SELECT (SELECT count(*) FROM o), (SELECT count(*) FROM t)";
pub(super) const DUE_TIMERS: &str = "SELECT body FROM timers WHERE due <= $1 ORDER BY due, approval_id, kind, n LIMIT $2";
pub(super) const DUE_TIMERS_AFTER: &str = "SELECT body FROM timers WHERE due <= $1 AND (due, approval_id, kind, n) > ($3, $4, $5, $6) \
     ORDER BY due, approval_id, kind, n LIMIT $2";
