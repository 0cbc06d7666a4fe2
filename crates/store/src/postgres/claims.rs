//! Claims: due timers and outbox entries leased to this replica (`FOR
//! UPDATE SKIP LOCKED`, so replicas never wait on each other's rows), and
//! the renewal that keeps them while it works.

use super::connection::Prepared;
use super::sql::*;
use super::PgStore;
use crate::{OutboxEntry, StoreError};
use plangate_engine::{Timer, Timestamp};

pub(super) fn claim_due_timers(store: &PgStore, now: Timestamp, after: Option<&Timer>, limit_to: usize) -> Result<Vec<Timer>, StoreError> {
    let n = limit(limit_to);
    let me = &store.shared.replica;
    let lease = store.lease_secs;
    store.retrying("claiming due timers", async |c| {
        let rows = match after {
            None => c.rows(CLAIM_TIMERS, &[&now.0, me, &n, &lease]).await?,
            Some(t) => {
                let (due, id, kind, nn) = timer_identity(t);
                c.rows(CLAIM_TIMERS_AFTER, &[&now.0, me, &n, &lease, &due, &id, &kind, &nn]).await?
            }
        };
        let mut claimed = Vec::with_capacity(rows.len());
        for row in &rows {
            let identity: (i64, Vec<u8>, i16, i16) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
            claimed.push((identity, body::<Timer>(row, 4, "timer")?));
        }
        claimed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(claimed.into_iter().map(|(_, t)| t).collect())
    })
}

pub(super) fn claim_outbox(store: &PgStore, limit_to: usize) -> Result<Vec<OutboxEntry>, StoreError> {
    let n = limit(limit_to);
    store.retrying("claiming outbox entries", async |c| {
        let rows = c.rows(CLAIM_OUTBOX, &[&store.shared.replica, &n, &store.lease_secs]).await?;
        let mut entries = rows.iter().map(outbox_entry).collect::<Result<Vec<_>, _>>()?;
        entries.sort_by_key(|e| e.seq);
        Ok(entries)
    })
}

/// Two statements, not one `FOR UPDATE SKIP LOCKED` claim: the entries this
/// replica holds already are only read (a lock-free snapshot), because the
/// renewal locks every one of them while it runs and a skipping claim would
/// then come back short, as if there were no more. Free entries are leased
/// first (skipping those another replica is claiming right now: they are
/// its), so the read that follows returns them too.
pub(super) fn claim_outbox_page(store: &PgStore, after: Option<u64>, limit_to: usize) -> Result<Vec<OutboxEntry>, StoreError> {
    let n = limit(limit_to);
    let me = &store.shared.replica;
    store.retrying("claiming outbox entries", async |c| {
        let after = after.map(|seq| to_i64(seq, "outbox seq")).transpose()?.unwrap_or(i64::MIN);
        c.exec(CLAIM_OUTBOX_FREE_AFTER, &[me, &n, &store.lease_secs, &after]).await?;
        let rows = c.rows(OUTBOX_HELD_AFTER, &[me, &n, &after]).await?;
        rows.iter().map(outbox_entry).collect()
    })
}

/// What [`PgStore::take_over_from`] found: whether the replica named was
/// still connected, and what of its work was freed for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TakeOver {
    pub alive: bool,
    pub outbox: u64,
    pub timers: u64,
}

impl PgStore {
    /// Free the leases of `previous`, this process's predecessor (the
    /// replica that ran from the same data dir before a crash), unless it
    /// still has a connection open: its outbox entries and timers are then
    /// claimed at once, by this process or another, instead of after its
    /// leases run out (`lease_seconds`). A card edit left by a `kill -9`
    /// goes out on restart, not ten seconds later.
    ///
    /// A replica that is alive keeps its leases (two processes given one
    /// data dir must not take each other's work); PostgreSQL may list a
    /// killed process's connections for a moment, so a live-looking
    /// predecessor is asked about `tries` times, `pause` apart.
    pub fn take_over_from(&self, previous: &str, tries: u32, pause: std::time::Duration) -> Result<TakeOver, StoreError> {
        let mut tries = tries.max(1);
        loop {
            let found = self.retrying("taking over a predecessor's leases", async |c| {
                let row = c.row(RELEASE_IF_GONE, &[&previous]).await?;
                let (alive, outbox, timers): (bool, i64, i64) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                Ok(TakeOver { alive, outbox: outbox.max(0) as u64, timers: timers.max(0) as u64 })
            })?;
            tries -= 1;
            if !found.alive || tries == 0 {
                return Ok(found);
            }
            std::thread::sleep(pause);
        }
    }
}

pub(super) fn renew_leases(store: &PgStore) -> Result<(), StoreError> {
    store.retrying("renewing leases", async |c| {
        let row = c.row(RENEW, &[&store.shared.replica, &store.lease_secs]).await?;
        let (outbox, timers): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        tracing::trace!(outbox, timers, "renewed leases");
        Ok(())
    })
}
