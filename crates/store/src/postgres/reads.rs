//! Reads: sessions with their latest proposal and revision, proposals,
//! questions, timers, the outbox, deliveries, the audit, event keys,
//! cursors, document paths and namespaces.

use super::connection::Prepared;
use super::sql::*;
use super::PgStore;
use crate::sled_store::decode;
use crate::{AuditQuery, OutboxEntry, PagePosition, StoreError};
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::permission::StoredRule;
use plangate_engine::{ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, Timestamp};
use tokio_postgres::types::ToSql;

pub(super) fn load_revision(store: &PgStore, key: &SessionKey) -> Result<(State, u64), StoreError> {
    store.retrying("loading a session", async |c| {
        let Some(row) = c.row_opt(LOAD, &[&key.agent, &key.session_id]).await? else {
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

pub(super) fn proposal(store: &PgStore, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
    store.retrying("reading a proposal", async |c| {
        let row = c.row_opt("SELECT body FROM proposals WHERE approval_id = $1", &[&&id.0[..]]).await?;
        row.map(|r| body(&r, 0, "proposal")).transpose()
    })
}

pub(super) fn proposals_by_prefix(store: &PgStore, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError> {
    if !hex_prefix_ok(hex_prefix) {
        return Ok(Vec::new());
    }
    let pattern = format!("{hex_prefix}%");
    store.retrying("finding proposals by id prefix", async |c| {
        let rows = c.rows("SELECT body FROM proposals WHERE id_hex LIKE $1 ORDER BY approval_id", &[&pattern]).await?;
        bodies(&rows, "proposal")
    })
}

pub(super) fn proposals(store: &PgStore, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
    store.retrying("listing proposals", async |c| {
        let rows = match status {
            Some(s) => c.rows("SELECT body FROM proposals WHERE status = $1 ORDER BY created_at, approval_id", &[&s.as_str()]).await?,
            None => c.rows("SELECT body FROM proposals ORDER BY created_at, approval_id", &[]).await?,
        };
        bodies(&rows, "proposal")
    })
}

pub(super) fn proposals_page(
    store: &PgStore,
    status: Option<DecisionStatus>,
    after: Option<PagePosition>,
    page: usize,
) -> Result<Vec<Proposal>, StoreError> {
    // `(created_at, approval_id) > (…)` is a row comparison: ties on the
    // millisecond are ordered by id, as the default (sled) page orders them.
    let (at, id) = after.map_or((i64::MIN, Vec::new()), |a| (a.created_at.0, a.approval_id.0.to_vec()));
    let first = after.is_none();
    let status = status.map(|s| s.as_str());
    let page = limit(page);
    store.retrying("listing a page of proposals", async |c| {
        let rows = c
            .rows(
                "SELECT body FROM proposals WHERE ($1::text IS NULL OR status = $1) \
                 AND ($2 OR (created_at, approval_id) > ($3, $4)) ORDER BY created_at, approval_id LIMIT $5",
                &[&status, &first, &at, &id, &page],
            )
            .await?;
        bodies(&rows, "proposal")
    })
}

pub(super) fn latest_proposals(store: &PgStore, status: DecisionStatus, page: usize) -> Result<Vec<Proposal>, StoreError> {
    let page = limit(page);
    store.retrying("listing the latest proposals", async |c| {
        let rows = c
            .rows(
                "SELECT body FROM proposals WHERE status = $1 ORDER BY created_at DESC, approval_id DESC LIMIT $2",
                &[&status.as_str(), &page],
            )
            .await?;
        bodies(&rows, "proposal")
    })
}

pub(super) fn visit_proposals(store: &PgStore, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError> {
    // A portal read in pages: 100,000 proposals never sit in memory at once.
    const PAGE: i32 = 500;
    let what = "visiting proposals";
    store.once(what, async |conn| {
        let tx = conn.build_transaction().read_only(true).start().await?;
        let portal = match status {
            Some(s) => tx.bind("SELECT body FROM proposals WHERE status = $1", &[&s.as_str()]).await?,
            None => tx.bind("SELECT body FROM proposals", &[]).await?,
        };
        loop {
            let rows = tx.query_portal(&portal, PAGE).await?;
            for row in &rows {
                visit(&body(row, 0, "proposal")?);
            }
            if rows.len() < PAGE as usize {
                break;
            }
        }
        tx.commit().await?;
        Ok(())
    })
}

pub(super) fn count_proposals(store: &PgStore, status: DecisionStatus) -> Result<u64, StoreError> {
    store.retrying("counting proposals", async |c| {
        let count: i64 = c.row("SELECT count(*) FROM proposals WHERE status = $1", &[&status.as_str()]).await?.try_get(0)?;
        Ok(u64::try_from(count).unwrap_or(0))
    })
}

pub(super) fn sessions(store: &PgStore) -> Result<Vec<Session>, StoreError> {
    store.retrying("listing sessions", async |c| {
        let rows = c.rows("SELECT body FROM sessions ORDER BY agent, session_id", &[]).await?;
        bodies(&rows, "session")
    })
}

pub(super) fn question(store: &PgStore, id: &ApprovalId) -> Result<Option<Question>, StoreError> {
    store.retrying("reading a question", async |c| {
        let row = c.row_opt("SELECT body FROM questions WHERE question_id = $1", &[&&id.0[..]]).await?;
        row.map(|r| body(&r, 0, "question")).transpose()
    })
}

pub(super) fn permission_rules(store: &PgStore, agent: &str) -> Result<Vec<StoredRule>, StoreError> {
    store.retrying("reading permission rules", async |c| {
        let rows = c.rows(RULES, &[&agent]).await?;
        bodies(&rows, "permission rule")
    })
}

pub(super) fn next_timer(store: &PgStore) -> Result<Option<Timer>, StoreError> {
    store.retrying("reading the next timer", async |c| {
        let sql = "SELECT body FROM timers WHERE (lease_until IS NULL OR lease_until < clock_timestamp() OR lease_owner = $1) \
                   ORDER BY due, approval_id, kind, n LIMIT 1";
        let row = c.row_opt(sql, &[&store.shared.replica]).await?;
        row.map(|r| body(&r, 0, "timer")).transpose()
    })
}

pub(super) fn due_timers_page(store: &PgStore, now: Timestamp, after: Option<&Timer>, limit_to: usize) -> Result<Vec<Timer>, StoreError> {
    let n = limit(limit_to);
    store.retrying("reading due timers", async |c| {
        let rows = match after {
            None => c.rows(DUE_TIMERS, &[&now.0, &n]).await?,
            Some(t) => {
                let (due, id, kind, nn) = timer_identity(t);
                c.rows(DUE_TIMERS_AFTER, &[&now.0, &n, &due, &id, &kind, &nn]).await?
            }
        };
        bodies(&rows, "timer")
    })
}

pub(super) fn timers(store: &PgStore) -> Result<Vec<Timer>, StoreError> {
    store.retrying("listing timers", async |c| {
        let rows = c.rows("SELECT body FROM timers ORDER BY due, approval_id, kind, n", &[]).await?;
        bodies(&rows, "timer")
    })
}

pub(super) fn outbox(store: &PgStore) -> Result<Vec<OutboxEntry>, StoreError> {
    store.retrying("reading the outbox", async |c| {
        let rows = c.rows("SELECT seq, work FROM outbox ORDER BY seq", &[]).await?;
        rows.iter().map(outbox_entry).collect()
    })
}

pub(super) fn deliveries(store: &PgStore, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
    store.retrying("reading card deliveries", async |c| {
        let sql = "SELECT body FROM deliveries WHERE approval_id = $1 ORDER BY destination, chat";
        decode_delivery_rows(&c.rows(sql, &[&&id.0[..]]).await?)
    })
}

pub(super) fn question_deliveries(store: &PgStore, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
    store.retrying("reading question deliveries", async |c| {
        let sql = "SELECT body FROM question_deliveries WHERE question_id = $1 ORDER BY destination, chat";
        decode_delivery_rows(&c.rows(sql, &[&&id.0[..]]).await?)
    })
}

pub(super) fn audit(store: &PgStore, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
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
    if let Some(since) = query.since {
        params.push(Box::new(since.0));
        conditions.push(format!("at >= ${}", params.len()));
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
    let mut events: Vec<AuditEvent> =
        store.retrying("reading the audit", async |c| bodies(&c.query(sql.as_str(), &refs).await?, "audit"))?;
    events.reverse();
    Ok(events)
}

pub(super) fn audit_head(store: &PgStore) -> Result<Option<(u64, crate::AuditHash)>, StoreError> {
    store.retrying("reading the audit chain's head", async |c| super::chain::read_head(c.row_opt(super::chain::CHAIN_HEAD, &[]).await?))
}

/// Records read per query by [`visit_audit_chain`].
const AUDIT_PAGE: i64 = 1000;

/// Pages in chain order by the unique index on `chain_seq`.
pub(super) fn visit_audit_chain(
    store: &PgStore,
    since: Option<Timestamp>,
    visit: &mut dyn FnMut(crate::AuditRecord) -> bool,
) -> Result<(), StoreError> {
    let what = "reading the audit chain";
    let mut after: i64 = match since {
        Some(since) => {
            let sql = "SELECT min(chain_seq) FROM audit WHERE at >= $1";
            let first: Option<i64> = store.retrying(what, async |c| Ok(c.row(sql, &[&since.0]).await?.try_get(0)?))?;
            match first {
                Some(first) => first - 1,
                None => return Ok(()),
            }
        }
        None => 0,
    };
    loop {
        let sql = "SELECT chain_seq, body FROM audit WHERE chain_seq > $1 ORDER BY chain_seq LIMIT $2";
        let rows = store.retrying(what, async |c| Ok(c.rows(sql, &[&after, &AUDIT_PAGE]).await?))?;
        if rows.is_empty() {
            return Ok(());
        }
        for row in rows {
            let seq: i64 = row.try_get(0).map_err(|e| StoreError::Postgres(e.to_string()))?;
            let body: Vec<u8> = row.try_get(1).map_err(|e| StoreError::Postgres(e.to_string()))?;
            let record = crate::chained::unseal(&body)?;
            if i64::try_from(record.seq).ok() != Some(seq) {
                return Err(StoreError::AuditChain(format!("the row of record {seq} holds record {}", record.seq)));
            }
            after = seq;
            if !visit(record) {
                return Ok(());
            }
        }
    }
}

pub(super) fn seen(store: &PgStore, key: &str) -> Result<bool, StoreError> {
    store.retrying("checking an event key", async |c| Ok(c.row_opt("SELECT 1 FROM idempotency WHERE key = $1", &[&key]).await?.is_some()))
}

pub(super) fn cursor(store: &PgStore, key: &str) -> Result<Option<String>, StoreError> {
    store.retrying("reading a cursor", async |c| {
        let row = c.row_opt("SELECT value FROM cursors WHERE key = $1", &[&key]).await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    })
}

/// `LIKE` with the prefix's own `%`, `_` and `\\` escaped.
pub(super) fn cursors_with_prefix(store: &PgStore, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
    let pattern = format!("{}%", prefix.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
    store.retrying("reading cursors", async |c| {
        let rows = c.rows("SELECT key, value FROM cursors WHERE key LIKE $1 ORDER BY key", &[&pattern]).await?;
        rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
    })
}

pub(super) fn document_path(store: &PgStore, id: &ApprovalId) -> Result<Option<String>, StoreError> {
    store.retrying("reading a document path", async |c| {
        let row = c.row_opt("SELECT path FROM documents WHERE approval_id = $1", &[&&id.0[..]]).await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    })
}

pub(super) fn namespace_revision(store: &PgStore, name: &str) -> Result<(Namespace, u64), StoreError> {
    store.retrying("reading a namespace", async |c| {
        let Some(row) = c.row_opt("SELECT body, revision FROM namespaces WHERE name = $1", &[&name]).await? else {
            return Ok((Namespace::default(), 0));
        };
        let revision: i64 = row.try_get(1)?;
        Ok((body(&row, 0, "namespace")?, u64::try_from(revision).unwrap_or(0)))
    })
}
