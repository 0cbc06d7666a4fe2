//! [`ReplicaStore::elect_leader`](crate::ReplicaStore::elect_leader) on PostgreSQL: the
//! leader of a role is the replica holding the session-level advisory lock
//! `(hashtext(<schema>), hashtext(<role>))` on a connection of its own.
//!
//! PostgreSQL releases the lock when that connection ends, whatever ended
//! it: the process exiting or being killed (SIGKILL closes its sockets), or
//! the connection dropping. The others try to take it every
//! [`TRY_EVERY`], so a new leader follows within about a second.
//!
//! The leader checks its connection every [`TRY_EVERY`] (a query with a
//! client-side timeout). When the check fails it stops leading at once
//! (`false`), then waits [`BACKOFF`] before competing again, so that a
//! healthy replica takes the role rather than the one with the bad
//! connection.

use super::Shared;
use crate::{LeaderListener, StoreError};
use postgres::Client;
use std::sync::Arc;
use std::time::Duration;

pub(crate) const TRY_EVERY: Duration = Duration::from_millis(500);
const BACKOFF: Duration = Duration::from_secs(1);
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) fn spawn(shared: Arc<Shared>, role: &str, listener: LeaderListener) -> Result<(), StoreError> {
    let role = role.to_string();
    let name = format!("plangate-pg-leader-{role}");
    std::thread::Builder::new()
        .name(name)
        .spawn(move || run(&shared, &role, &listener))
        .map(drop)
        .map_err(|e| StoreError::Unavailable(format!("could not start a leader election thread: {e}")))
}

/// Until the store is dropped: connect, compete, lead while healthy.
fn run(shared: &Shared, role: &str, listener: &LeaderListener) {
    while !shared.closed() {
        let mut client = match shared.connect(&format!("leader {role}")) {
            Ok(client) => client,
            Err(e) => {
                tracing::warn!(role, target = %shared.target, error = %e, "leader election cannot reach PostgreSQL; retrying");
                if !shared.sleep(TRY_EVERY) {
                    return;
                }
                continue;
            }
        };
        match compete(shared, role, &mut client) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(role, error = %e, "leader election lost its connection; reconnecting");
                if !shared.sleep(TRY_EVERY) {
                    return;
                }
                continue;
            }
        }
        tracing::info!(role, replica = %shared.replica, "this replica leads");
        listener(true);
        let reason = lead(shared, &mut client);
        listener(false);
        // Closing the connection releases the lock, should it still be held.
        drop(client);
        match reason {
            None => return,
            Some(e) => {
                tracing::warn!(role, error = %e, "this replica stopped leading: its PostgreSQL connection failed");
                if !shared.sleep(BACKOFF) {
                    return;
                }
            }
        }
    }
}

/// Try the lock every [`TRY_EVERY`]: `Ok(true)` once held, `Ok(false)`
/// when the store was dropped first.
fn compete(shared: &Shared, role: &str, client: &mut Client) -> Result<bool, postgres::Error> {
    loop {
        if shared.closed() {
            return Ok(false);
        }
        let held: bool =
            client.query_one("SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))", &[&shared.schema, &role])?.try_get(0)?;
        if held {
            return Ok(true);
        }
        if !shared.sleep(TRY_EVERY) {
            return Ok(false);
        }
    }
}

/// Check the connection every [`TRY_EVERY`]; the error that ended the
/// leadership, or `None` when the store was dropped.
fn lead(shared: &Shared, client: &mut Client) -> Option<postgres::Error> {
    loop {
        if !shared.sleep(TRY_EVERY) {
            return None;
        }
        if let Err(e) = client.is_valid(CHECK_TIMEOUT) {
            return Some(e);
        }
    }
}
