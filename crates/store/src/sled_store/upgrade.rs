//! Upgrades of an older schema, run by `open` before anything else reads
//! it: the status index (from 1), the first timer of each chain (from 1
//! and 2), the audit chain (from 1, 2 and 3), the pending count kept in
//! `meta` (from 1 to 4). Every step is idempotent, so an upgrade a crash
//! cut short is done again at the next open.

use super::keys::{pending_share_key, status_key, status_prefix, Listed, PENDING_SHARE_PREFIX};
use super::proposals::PENDING_AT_CLOSE;
use super::{decode, Trees, SCHEMA_VERSION};
use crate::chained;
use crate::StoreError;
use plangate_audit::Chain;
use plangate_engine::{DecisionStatus, Timer};

/// Schema 1, 2, 3 or 4 → 5: index every proposal by status and creation
/// time (from 1), drop every timer but the first of its chain (from 1 and
/// 2), chain the audit (from 1, 2 and 3), count the pending proposals once
/// into the shares the commits keep from then on (from 1 to 4), then say
/// so in `schema_version`, flushed together: a crash before the flush
/// leaves the old version, and the next open does it again (every step is
/// idempotent).
pub(super) fn upgrade(t: &Trees, from: u8) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    let mut indexed = 0u64;
    if from == 1 {
        for entry in t.proposals.iter() {
            let (_, value) = entry?;
            let p: Listed = decode(&value, "proposal")?;
            t.by_status.insert(status_key(p.status, p.created_at, &p.approval_id), &[])?;
            indexed += 1;
        }
    }
    let dropped = if from <= 2 { keep_chain_heads(t)? } else { 0 };
    let chained = if from <= 3 { chain_audit(t)? } else { 0 };
    let pending = count_pending_once(t)?;
    t.meta.insert("schema_version", SCHEMA_VERSION)?;
    t.db.flush()?;
    tracing::info!(
        from,
        indexed,
        timers_dropped = dropped,
        audit_chained = chained,
        pending,
        took_ms = started.elapsed().as_millis() as u64,
        "upgraded the sled database to schema 5 (proposals indexed by status, the first timer of each chain, the audit chained, the pending count kept)"
    );
    Ok(())
}

/// Count the pending proposals in the index and make the count stripe 0's
/// share, every other share none (the last scan of the index a start
/// makes; the clean-shutdown note that spared it before goes too).
fn count_pending_once(t: &Trees) -> Result<u64, StoreError> {
    let mut pending = 0u64;
    for key in t.by_status.scan_prefix(status_prefix(DecisionStatus::Pending)).keys() {
        key?;
        pending += 1;
    }
    for key in t.meta.scan_prefix(PENDING_SHARE_PREFIX).keys() {
        t.meta.remove(key?)?;
    }
    t.meta.insert(pending_share_key(0), &(pending as i64).to_be_bytes())?;
    t.meta.remove(PENDING_AT_CLOSE)?;
    Ok(pending)
}

/// Chain every audit record in key order (the order they were written
/// in), from the first: a record chained by an interrupted upgrade is
/// chained again to the same values.
fn chain_audit(t: &Trees) -> Result<u64, StoreError> {
    let mut chain = Chain::genesis();
    let mut batch = sled::Batch::default();
    let (mut chained, mut pending) = (0u64, 0usize);
    for entry in t.audit.iter() {
        let (key, value) = entry?;
        let record = chain.append(chained::event_of(&value)?);
        batch.insert(key, chained::stored(&record));
        (chained, pending) = (chained + 1, pending + 1);
        if pending == 10_000 {
            t.audit.apply_batch(std::mem::take(&mut batch))?;
            pending = 0;
        }
    }
    t.audit.apply_batch(batch)?;
    Ok(chained)
}

/// Drop every stored timer that is not the first of its chain: the
/// records still hold them, and firing the first stores the next. The
/// timers tree is in due order, so the first of a chain seen is its head.
fn keep_chain_heads(t: &Trees) -> Result<u64, StoreError> {
    use plangate_engine::chains::{chain_of, Chain};
    let mut seen = std::collections::HashSet::new();
    let mut batch = sled::Batch::default();
    let (mut dropped, mut pending) = (0u64, 0usize);
    for entry in t.timers.iter() {
        let (key, value) = entry?;
        let timer: Timer = decode(&value, "timer")?;
        let chain = chain_of(&timer);
        if chain.1 != Chain::SubagentExpiry && !seen.insert(chain) {
            batch.remove(key);
            (dropped, pending) = (dropped + 1, pending + 1);
            if pending == 10_000 {
                t.timers.apply_batch(std::mem::take(&mut batch))?;
                pending = 0;
            }
        }
    }
    t.timers.apply_batch(batch)?;
    Ok(dropped)
}
