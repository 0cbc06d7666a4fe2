//! Writes outside a transition's commit: timers and outbox entries done
//! with, card deliveries, audit of refused attempts, event keys, cursors,
//! document paths and namespaces. Each is one statement; those that depend
//! on what is stored say so in it (an insert that must not find the row, an
//! update at a revision), so no write here is a read-modify-write that a
//! replica could lose.

use super::connection::Prepared;
use super::sql::*;
use super::{Failure, PgStore};
use crate::sled_store::encode;
use crate::{Committed, Preempted, StoreError};
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::{ApprovalId, AuditEvent, Timer};

pub(super) fn remove_timer(store: &PgStore, timer: &Timer) -> Result<(), StoreError> {
    let (due, id, kind, n) = timer_identity(timer);
    store.retrying("removing a timer", async |c| {
        c.exec(TIMER_DELETE, &[&due, &id, &kind, &n]).await?;
        Ok(())
    })
}

pub(super) fn remove_timers(store: &PgStore, timers: &[Timer]) -> Result<(), StoreError> {
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
    store.retrying("removing timers", async |c| {
        c.exec(TIMERS_DELETE, &[&dues, &ids, &kinds, &ns]).await?;
        Ok(())
    })
}

pub(super) fn generate_seq(store: &PgStore) -> Result<u64, StoreError> {
    store.retrying("generating a sequence number", async |c| {
        let seq: i64 = c.row("SELECT nextval('ids')", &[]).await?.try_get(0)?;
        Ok(u64::try_from(seq).unwrap_or(0))
    })
}

pub(super) fn generate_seqs(store: &PgStore, n: usize) -> Result<Vec<u64>, StoreError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let count = limit(n);
    store.retrying("generating sequence numbers", async |c| {
        let rows = c.rows(NEXT_SEQS, &[&count]).await?;
        let mut seqs =
            rows.iter().map(|r| r.try_get::<_, i64>(0).map(|v| u64::try_from(v).unwrap_or(0))).collect::<Result<Vec<u64>, _>>()?;
        seqs.sort_unstable();
        Ok(seqs)
    })
}

pub(super) fn remove_outbox(store: &PgStore, seq: u64) -> Result<(), StoreError> {
    let seq = i64::try_from(seq).map_err(|_| StoreError::Postgres(format!("outbox seq {seq} does not fit bigint")))?;
    store.retrying("removing an outbox entry", async |c| {
        c.exec("DELETE FROM outbox WHERE seq = $1", &[&seq]).await?;
        Ok(())
    })
}

pub(super) fn remove_outbox_many(store: &PgStore, seqs: &[u64]) -> Result<(), StoreError> {
    let seqs = seqs.iter().map(|seq| i64::try_from(*seq)).collect::<Result<Vec<i64>, _>>();
    let seqs = seqs.map_err(|_| StoreError::Postgres("an outbox seq does not fit bigint".to_string()))?;
    store.retrying("removing outbox entries", async |c| {
        c.exec("DELETE FROM outbox WHERE seq = ANY($1)", &[&seqs]).await?;
        Ok(())
    })
}

pub(super) fn add_delivery(store: &PgStore, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
    let sql = "INSERT INTO deliveries (approval_id, destination, chat, body) VALUES ($1, $2, $3, $4) \
               ON CONFLICT (approval_id, destination, chat) DO UPDATE SET body = EXCLUDED.body";
    upsert_delivery(store, "recording a card delivery", sql, id, delivery)
}

pub(super) fn add_question_delivery(store: &PgStore, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
    let sql = "INSERT INTO question_deliveries (question_id, destination, chat, body) VALUES ($1, $2, $3, $4) \
               ON CONFLICT (question_id, destination, chat) DO UPDATE SET body = EXCLUDED.body";
    upsert_delivery(store, "recording a question delivery", sql, id, delivery)
}

/// One delivery per (card or question, destination, chat): the latest.
fn upsert_delivery(store: &PgStore, what: &str, sql: &'static str, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
    let body = encode(delivery);
    store.retrying(what, async |c| {
        c.exec(sql, &[&&id.0[..], &delivery.destination, &delivery.chat, &body]).await?;
        Ok(())
    })
}

pub(super) fn append_audit(store: &PgStore, events: &[AuditEvent]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let schema = store.shared.schema.as_str();
    store.transaction("appending audit records", async |tx| {
        super::chain::append_alone(tx, schema, events).await?;
        Ok(())
    })
}

pub(super) fn mark_seen(store: &PgStore, key: &str) -> Result<(), StoreError> {
    store.retrying("recording an event key", async |c| {
        c.exec(IDEMPOTENCY_INSERT, &[&key]).await?;
        Ok(())
    })
}

pub(super) fn record_once(store: &PgStore, key: &str) -> Result<bool, StoreError> {
    // Not retried: a first attempt that inserted before its connection
    // died would make the retry answer `false` for work never done.
    store.once("recording a side effect", async |c| Ok(c.exec(IDEMPOTENCY_INSERT, &[&key]).await? == 1))
}

pub(super) fn set_cursor(store: &PgStore, key: &str, value: &str) -> Result<(), StoreError> {
    store.retrying("writing a cursor", async |c| {
        let sql = "INSERT INTO cursors (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";
        c.exec(sql, &[&key, &value]).await?;
        Ok(())
    })
}

/// One statement: the first replica's value wins, every replica reads
/// it back (`DO UPDATE SET value = cursors.value` makes `RETURNING`
/// answer on a conflict too).
pub(super) fn cursor_or_init(store: &PgStore, key: &str, value: &str) -> Result<String, StoreError> {
    store.retrying("initializing a cursor", async |c| {
        let sql = "INSERT INTO cursors (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = cursors.value RETURNING value";
        let row = c.row(sql, &[&key, &value]).await?;
        Ok(row.try_get(0)?)
    })
}

/// One transaction: the conditional write (an insert that must not find
/// the row, an update or delete that must find `expected`); once it
/// committed, a notification without a session (other replicas re-read
/// their caches).
/// Not retried after a write that may have landed: the caller would be
/// told `false` for its own change.
pub(super) fn swap_cursor(store: &PgStore, key: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, StoreError> {
    let swapped = store.transaction("swapping a cursor", async |tx| {
        let rows = match (expected, value) {
            (None, Some(v)) => {
                tx.exec("INSERT INTO cursors (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", &[&key, &v]).await?
            }
            (Some(e), Some(v)) => tx.exec("UPDATE cursors SET value = $3 WHERE key = $1 AND value = $2", &[&key, &e, &v]).await?,
            (Some(e), None) => tx.exec("DELETE FROM cursors WHERE key = $1 AND value = $2", &[&key, &e]).await?,
            (None, None) => {
                let absent = tx.row_opt("SELECT 1 FROM cursors WHERE key = $1", &[&key]).await?.is_none();
                return Ok((absent, false));
            }
        };
        Ok((rows == 1, rows == 1))
    })?;
    if swapped.1 {
        store.shared.notifier.push("cursors".into());
    }
    Ok(swapped.0)
}

pub(super) fn set_document_path(store: &PgStore, id: &ApprovalId, path: &str) -> Result<(), StoreError> {
    store.retrying("recording a document path", async |c| {
        let sql = "INSERT INTO documents (approval_id, path) VALUES ($1, $2) ON CONFLICT (approval_id) DO UPDATE SET path = EXCLUDED.path";
        c.exec(sql, &[&&id.0[..], &path]).await?;
        Ok(())
    })
}

/// Like a session's commit: an insert that must not find the row, or
/// an update at the expected revision; no row written is a conflict.
/// Retried on a dead connection like any write: a first attempt that
/// landed makes the retry a conflict, and the caller merges again on
/// what it wrote (a merge repeated is the same merge).
pub(super) fn set_namespace(store: &PgStore, name: &str, ns: &Namespace, expected_revision: u64) -> Result<Committed, StoreError> {
    let what = "writing a namespace";
    let body = encode(ns);
    let expected = to_i64(expected_revision, "namespace revision").map_err(|f| store.fail(what, f))?;
    let written = store.retrying_raw(what, async |c| {
        let rows = if expected == 0 {
            c.exec(NAMESPACE_INSERT, &[&name, &body]).await?
        } else {
            c.exec(NAMESPACE_UPDATE, &[&name, &body, &expected]).await?
        };
        if rows == 0 {
            return Err(Failure::Preempted(Preempted::Conflict));
        }
        Ok(())
    });
    store.conditional(what, written)
}

pub(super) fn remove_permission_rule(store: &PgStore, agent: &str, id: &str) -> Result<bool, StoreError> {
    let rows = store.retrying("removing a permission rule", async |c| Ok(c.exec(RULE_DELETE, &[&agent, &id]).await?))?;
    Ok(rows > 0)
}
