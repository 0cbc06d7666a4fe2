//! [`ReplicaStore::subscribe_changes`](crate::ReplicaStore::subscribe_changes) on
//! PostgreSQL: `LISTEN plangate_<schema>` on a connection of its own.
//!
//! Every commit that committed notifies the channel with its session key
//! and replica (a JSON array `[agent, session_id, replica]`; the replica's
//! own are skipped), inside its transaction or, when commits of its
//! process run side by side, just after it by the replica's notifier (see
//! `notify`), so a notification arrives when or shortly after its change
//! is visible, never before. While the connection is down,
//! notifications are lost, not queued: after every (re)connect and on every
//! error the listener hears `None` ("changes may have been missed") and
//! wakes every waiter, who then reads the store afresh.

use super::Shared;
use crate::{ChangeListener, StoreError};
use plangate_engine::SessionKey;
use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long to wait between connection attempts.
const RETRY: Duration = Duration::from_secs(1);
/// How often an idle connection is checked (a silent network drop would
/// otherwise leave the listener deaf until TCP keepalive gives up).
const CHECK_EVERY: Duration = Duration::from_secs(10);
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) fn spawn(shared: Arc<Shared>, listener: ChangeListener) -> Result<(), StoreError> {
    std::thread::Builder::new()
        .name("plangate-pg-listen".into())
        .spawn(move || run(&shared, &listener))
        .map(drop)
        .map_err(|e| StoreError::Unavailable(format!("could not start the PostgreSQL change listener thread: {e}")))
}

/// Until the store is dropped: connect, `LISTEN`, forward.
fn run(shared: &Shared, listener: &ChangeListener) {
    let channel = shared.channel();
    while !shared.closed() {
        let error = match shared.connect("listener") {
            Ok(mut client) => match client.batch_execute(&format!("LISTEN {channel}")) {
                Ok(()) => {
                    tracing::debug!(%channel, "listening for changes of other replicas");
                    listener(None);
                    match forward(shared, &mut client, listener) {
                        Ok(()) => return,
                        Err(e) => e,
                    }
                }
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        };
        if shared.closed() {
            return;
        }
        tracing::warn!(%channel, target = %shared.target, %error, "PostgreSQL change listener lost its connection; retrying every second");
        listener(None);
        if !shared.sleep(RETRY) {
            return;
        }
    }
}

/// Forward notifications until the store is dropped (`Ok`) or the
/// connection fails (`Err`).
fn forward(shared: &Shared, client: &mut Client, listener: &ChangeListener) -> Result<(), String> {
    let mut checked = Instant::now();
    loop {
        if shared.closed() {
            return Ok(());
        }
        {
            let mut notifications = client.notifications();
            let mut iter = notifications.timeout_iter(Duration::from_millis(500));
            while let Some(n) = iter.next().map_err(|e| e.to_string())? {
                match parse(n.payload(), &shared.replica) {
                    Heard::Own => {}
                    Heard::Session(key) => listener(Some(key)),
                    Heard::Something => listener(None),
                }
            }
        }
        if client.is_closed() {
            return Err("the connection closed".into());
        }
        if checked.elapsed() >= CHECK_EVERY {
            client.is_valid(CHECK_TIMEOUT).map_err(|e| e.to_string())?;
            checked = Instant::now();
        }
    }
}

/// What a notification says.
#[derive(Debug, PartialEq)]
enum Heard {
    /// A commit of this process: its waiters and scheduler were woken by
    /// the commit itself (`Core::execute`), so nothing to do (on a single
    /// replica, no re-read of the timers after every commit).
    Own,
    Session(SessionKey),
    /// Something changed (a payload not understood): wake everything.
    Something,
}

/// `[agent, session_id, replica]` (or `[agent, session_id]` from a replica
/// of the previous release); anything else means "something changed".
fn parse(payload: &str, me: &str) -> Heard {
    if let Ok([agent, session_id, replica]) = serde_json::from_str::<[String; 3]>(payload) {
        return if replica == me { Heard::Own } else { Heard::Session(SessionKey { agent, session_id }) };
    }
    match serde_json::from_str::<[String; 2]>(payload) {
        Ok([agent, session_id]) => Heard::Session(SessionKey { agent, session_id }),
        Err(_) => Heard::Something,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads() {
        assert_eq!(parse(r#"["demo","s 1"]"#, "me"), Heard::Session(SessionKey::new("demo", "s 1")));
        assert_eq!(parse(r#"["demo","s 1","other"]"#, "me"), Heard::Session(SessionKey::new("demo", "s 1")));
        assert_eq!(parse(r#"["demo","s 1","me"]"#, "me"), Heard::Own);
        assert_eq!(parse("", "me"), Heard::Something);
        assert_eq!(parse(r#"["only"]"#, "me"), Heard::Something);
    }
}
