//! The audit chain on PostgreSQL: replicas share one chain. An append
//! takes a transaction-level advisory lock (one per schema), reads the
//! head (`chain_seq`, `chain_hash` of the last record, by the unique index
//! on `chain_seq`) and inserts its records sealed after it, all in the
//! writing transaction: the lock is held until it commits or rolls back,
//! so the next append, on any replica, sees this one's head (no gaps) and
//! two appends never link to the same record (no forks; the unique index
//! refuses a second record with one number whatever happens). Records
//! written before the chain existed are chained once at open
//! ([`chain_unchained`]); `chain_seq` is then NOT NULL, so a replica of an
//! older release cannot append an unchained record: its insert fails.

use super::Failure;
use crate::chained;
use crate::StoreError;
use deadpool_postgres::Transaction;
use plangate_audit::{Chain, Hash};
use plangate_engine::AuditEvent;
use tokio_postgres::Statement;

/// `$1` the schema: one chain, and one lock, per schema.
pub(super) const CHAIN_LOCK: &str = "SELECT pg_advisory_xact_lock(hashtext('plangate audit chain'), hashtext($1))";
pub(super) const CHAIN_HEAD: &str = "SELECT chain_seq, chain_hash FROM audit WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1";
/// Sealed audit rows in chain order.
pub(super) const CHAIN_INSERT: &str = "INSERT INTO audit (at, agent, session_id, approval_id, body, chain_seq, chain_hash) \
     SELECT at, agent, session_id, approval_id, body, chain_seq, chain_hash \
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $6::bigint[], $7::bytea[]) WITH ORDINALITY \
     AS u(at, agent, session_id, approval_id, body, chain_seq, chain_hash, ord) ORDER BY ord";

/// [`CHAIN_LOCK`], [`CHAIN_HEAD`] and [`CHAIN_INSERT`], prepared on the
/// commit's connection before the lock is taken. A statement given as text
/// is prepared at each call, a round trip of its own (and a parse); two of
/// them came after the lock, so every commit with audit records held the
/// lock that all replicas' commits queue on for two round trips more
/// (docs/PERFORMANCE.md §27).
pub(super) struct ChainStatements<'a> {
    pub lock: &'a Statement,
    pub head: &'a Statement,
    pub insert: &'a Statement,
}

/// Append `events` to the chain inside `tx` (see the module doc).
/// Returns the number of rows written.
pub(super) async fn append(
    tx: &Transaction<'_>,
    prepared: ChainStatements<'_>,
    schema: &str,
    events: &[AuditEvent],
) -> Result<u64, Failure> {
    // Both requests on their way at once (polled in this order): the head
    // is read as soon as the lock is granted, without a round trip to this
    // process between them, while every replica's commits wait on the lock.
    let (locked, head) = futures_util::future::join(tx.execute(prepared.lock, &[&schema]), tx.query_opt(prepared.head, &[])).await;
    locked?;
    let mut chain = match head? {
        Some(row) => head_of_row(row.try_get(0)?, row.try_get(1)?)?,
        None => Chain::genesis(),
    };
    let (mut ats, mut agents, mut sessions, mut approvals) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut bodies, mut seqs, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
    for event in events {
        let (seq, hash, body) = chained::unsealed(event).seal(&mut chain);
        ats.push(event.at.0);
        agents.push(event.agent.as_str());
        sessions.push(event.session_id.as_str());
        approvals.push(event.approval_id.map(|id| id.0.to_vec()));
        bodies.push(body);
        seqs.push(i64::try_from(seq).map_err(|_| StoreError::AuditChain("the chain's numbers ran out".into()))?);
        hashes.push(hash.to_vec());
    }
    Ok(tx.execute(prepared.insert, &[&ats, &agents, &sessions, &approvals, &bodies, &seqs, &hashes]).await?)
}

/// [`append`] in a transaction of its own (audit records no commit
/// carries): its statements prepared first, together.
pub(super) async fn append_alone(tx: &Transaction<'_>, schema: &str, events: &[AuditEvent]) -> Result<u64, Failure> {
    let (lock, head, insert) =
        tokio::try_join!(tx.prepare_cached(CHAIN_LOCK), tx.prepare_cached(CHAIN_HEAD), tx.prepare_cached(CHAIN_INSERT))?;
    append(tx, ChainStatements { lock: &lock, head: &head, insert: &insert }, schema, events).await
}

fn head_of_row(seq: i64, hash: Vec<u8>) -> Result<Chain, Failure> {
    let seq = u64::try_from(seq).map_err(|_| StoreError::AuditChain(format!("a negative chain number {seq}")))?;
    let hash: Hash = hash.try_into().map_err(|_| StoreError::AuditChain(format!("record {seq}'s chain hash is not 32 bytes")))?;
    Ok(Chain::after(seq, hash))
}

/// Chain every record that has no place in the chain yet (written before
/// migration 5), in `seq` order, after the head; then make `chain_seq`
/// NOT NULL. Under the chain lock, in one transaction: replicas starting
/// together take turns and the second finds nothing to do.
pub(crate) fn chain_unchained(client: &mut postgres::Client, schema: &str) -> Result<u64, Failure> {
    let mut tx = client.transaction()?;
    tx.execute(CHAIN_LOCK, &[&schema])?;
    let mut chain = match tx.query_opt(CHAIN_HEAD, &[])? {
        Some(row) => head_of_row(row.try_get(0)?, row.try_get(1)?)?,
        None => Chain::genesis(),
    };
    let rows = tx.query("SELECT seq, body FROM audit WHERE chain_seq IS NULL ORDER BY seq", &[])?;
    let mut chained = 0u64;
    for row in rows {
        let (seq, body): (i64, Vec<u8>) = (row.try_get(0)?, row.try_get(1)?);
        let record = chain.append(chained::event_of(&body)?);
        let chain_seq = i64::try_from(record.seq).map_err(|_| StoreError::AuditChain("the chain's numbers ran out".into()))?;
        tx.execute(
            "UPDATE audit SET body = $2, chain_seq = $3, chain_hash = $4 WHERE seq = $1",
            &[&seq, &chained::stored(&record), &chain_seq, &&record.hash[..]],
        )?;
        chained += 1;
    }
    tx.batch_execute("ALTER TABLE audit ALTER COLUMN chain_seq SET NOT NULL, ALTER COLUMN chain_hash SET NOT NULL")?;
    tx.commit()?;
    Ok(chained)
}

/// The head: the last record's number and hash.
pub(super) fn read_head(row: Option<tokio_postgres::Row>) -> Result<Option<(u64, Hash)>, Failure> {
    match row {
        Some(row) => Ok(head_of_row(row.try_get(0)?, row.try_get(1)?)?.head()),
        None => Ok(None),
    }
}
