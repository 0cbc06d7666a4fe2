//! A transition's commit: one transaction that writes the session only at
//! the revision it was loaded at, takes its fired timer and its event keys
//! once, and writes every other record with one statement per kind of row;
//! the other replicas are notified by the transaction itself or, when
//! other commits are under way, once it committed (see [`Notice`]).

use super::chain::{ChainStatements, CHAIN_HEAD, CHAIN_INSERT, CHAIN_LOCK};
use super::connection::Prepared;
use super::sql::*;
use super::{Failure, PgStore, Shared};
use crate::sled_store::encode;
use crate::{Commit, Committed, OutboxEntry, Preempted, StoreError};
use deadpool_postgres::Transaction;
use futures_util::future::{join_all, maybe_done, LocalBoxFuture, MaybeDone};
use plangate_engine::{ApprovalId, Timer};
use std::collections::HashMap;
use std::collections::HashSet;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::Poll;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error as PgError, Statement};

pub(super) fn commit(store: &PgStore, commit: Commit) -> Result<Committed, StoreError> {
    let span = tracing::debug_span!(
        "pg_commit",
        session = commit.session.as_ref().map(|s| tracing::field::display(&s.key)),
        expected_revision = commit.expected_revision,
    );
    let _enter = span.enter();
    let what = "committing a transition";
    let notice = Notice::of(store, &commit);
    let result = store.conditional(what, store.transaction_raw(what, async |tx| write(store, tx, &commit, &notice).await));
    log_unwritten(&result);
    notice.after(store, &result);
    result
}

fn log_unwritten<T>(result: &Result<Committed<T>, StoreError>) {
    match result {
        Ok(Committed::Written(_)) => {}
        Ok(Committed::Preempted(p)) => tracing::debug!(preempted = %p, "commit preempted by another replica; nothing was written"),
        Err(e) => tracing::debug!(error = %e, "commit failed; nothing was written"),
    }
}

/// [`commit`] with outbox entries numbered inside the same transaction
/// (`nextval` for each), so a transition costs one transaction.
pub(super) fn commit_numbered(
    store: &PgStore,
    mut commit: Commit,
    work: Vec<Vec<u8>>,
    numbered: &mut dyn FnMut(&[u64]),
) -> Result<Committed<Vec<u64>>, StoreError> {
    let span = tracing::debug_span!("pg_commit", session = commit.session.as_ref().map(|s| tracing::field::display(&s.key)));
    let _enter = span.enter();
    let count = i64::try_from(work.len()).unwrap_or(i64::MAX);
    let what = "committing a transition";
    let notice = Notice::of(store, &commit);
    let result = store.transaction_raw(what, async |tx| {
        let mut seqs = Vec::with_capacity(work.len());
        if count > 0 {
            for row in tx.rows(NEXT_SEQS, &[&count]).await? {
                seqs.push(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0));
            }
            seqs.sort_unstable();
        }
        numbered(&seqs);
        commit.outbox = seqs.iter().zip(&work).map(|(seq, work)| OutboxEntry { seq: *seq, work: work.clone() }).collect();
        write(store, tx, &commit, &notice).await?;
        Ok(seqs)
    });
    let result = store.conditional(what, result);
    log_unwritten(&result);
    notice.after(store, &result);
    result
}

/// How the other replicas hear of a commit of a session: its key (the
/// replica's id last: its own listener skips what this process already
/// woke for, see `listen`), sent inside the commit's transaction when no
/// other commit of this process is under way, else queued for the
/// notifier once the commit committed (see `notify` for why: NOTIFY's
/// lock makes notifying commits flush one after another). Either way a
/// notification never comes before its change is visible, nor for a
/// change that did not commit. NOTIFY payloads are limited to 8000 bytes;
/// an empty one tells listeners "something changed".
struct Notice {
    payload: Option<String>,
    /// Sent by the transaction itself (`false`: queued after it).
    inside: bool,
    /// Counted in `Shared::commits_under_way` until dropped.
    _under_way: UnderWay,
}

impl Notice {
    fn of(store: &PgStore, commit: &Commit) -> Notice {
        let under_way = UnderWay::new(store);
        let payload = commit.session.as_ref().map(|s| {
            let payload = serde_json::to_string(&[&s.key.agent, &s.key.session_id, &store.shared.replica]).unwrap_or_default();
            if payload.len() > 7900 {
                String::new()
            } else {
                payload
            }
        });
        // Alone, and nothing queued ahead of it: one transaction fewer, and
        // no other commit of this process waits behind its lock.
        let inside = under_way.alone && store.shared.notifier.idle();
        Notice { payload, inside, _under_way: under_way }
    }

    /// Queue the payload when the transaction did not send it and the
    /// commit was written.
    fn after<T>(&self, store: &PgStore, result: &Result<Committed<T>, StoreError>) {
        if let (Ok(Committed::Written(_)), Some(payload), false) = (result, &self.payload, self.inside) {
            store.shared.notifier.push(payload.clone());
        }
    }
}

/// One commit under way in this process (see [`Notice`]).
struct UnderWay {
    counter: std::sync::Arc<Shared>,
    alone: bool,
}

impl UnderWay {
    fn new(store: &PgStore) -> UnderWay {
        let before = store.shared.commits_under_way.fetch_add(1, Ordering::AcqRel);
        UnderWay { counter: store.shared.clone(), alone: before == 0 }
    }
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.counter.commits_under_way.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a statement's row count must be for the commit to stand.
enum Expect {
    Any,
    /// At least one row, else another replica came first.
    Some(Preempted),
    /// No row: a new proposal's id must not be taken.
    Free(ApprovalId),
    /// The step failed other than in PostgreSQL (the audit chain's head
    /// does not read): the commit fails.
    Failed(Box<Failure>),
}

/// One statement of the flight: its expectation and its row count.
type Step<'a> = LocalBoxFuture<'a, (Expect, Result<u64, PgError>)>;

/// Write a commit's rows inside `tx`: one statement per kind of row, all
/// sent in one flight (`tokio-postgres` pipelines the requests polled
/// together), then their row counts checked in the order they ran. A
/// commit costs the same few round trips whatever it holds: `BEGIN`, this
/// flight, `COMMIT`. A check that fails returns early and `tx` rolls back
/// whatever ran after it.
async fn write(store: &PgStore, tx: &Transaction<'_>, commit: &Commit, notice: &Notice) -> Result<(), Failure> {
    let rows = Rows::of(commit)?;
    let rows = &rows;
    let prepared = prepare(tx).await?;
    let st = |sql: &'static str| &prepared[sql];
    let mut flight: Vec<Step<'_>> = Vec::new();
    if let Some(s) = &rows.session {
        let conflict = || Expect::Some(Preempted::Conflict);
        flight.push(match rows.revision {
            Some(0) => Box::pin(async move { (conflict(), tx.execute(st(SESSION_INSERT), &[&s.agent, &s.sid, &s.latest, &s.body]).await) }),
            Some(r) => {
                Box::pin(async move { (conflict(), tx.execute(st(SESSION_UPDATE), &[&s.agent, &s.sid, &s.latest, &s.body, &r]).await) })
            }
            None => Box::pin(async move { (conflict(), tx.execute(st(SESSION_UPSERT), &[&s.agent, &s.sid, &s.latest, &s.body]).await) }),
        });
    }
    if let Some(timer) = &commit.fired {
        let (due, id, kind, n) = timer_identity(timer);
        flight.push(Box::pin(
            async move { (Expect::Some(Preempted::TimerGone), tx.execute(st(TIMER_DELETE), &[&due, &id, &kind, &n]).await) },
        ));
    }
    for key in &rows.keys {
        flight.push(Box::pin(async move {
            (Expect::Some(Preempted::AlreadyHandled((*key).to_string())), tx.execute(st(IDEMPOTENCY_INSERT), &[key]).await)
        }));
    }
    if let Some(id) = &commit.new_proposal {
        // Ids are 128 random bits; this guards the invariant, not a race.
        flight.push(Box::pin(async move {
            let found = tx.query(st(PROPOSAL_EXISTS), &[&&id.0[..]]).await.map(|found| found.len() as u64);
            (Expect::Free(*id), found)
        }));
    }
    for (p, body) in commit.proposals.iter().zip(&rows.proposals) {
        flight.push(Box::pin(async move {
            let (id, hex, created) = (&p.approval_id.0[..], p.approval_id.to_string(), p.created_at.0);
            let params: [&(dyn ToSql + Sync); 7] = [&id, &hex, &p.status.as_str(), &p.session.agent, &p.session.session_id, &created, body];
            (Expect::Any, tx.execute(st(PROPOSAL_UPSERT), &params).await)
        }));
    }
    for (q, body) in commit.questions.iter().zip(&rows.questions) {
        flight.push(Box::pin(async move {
            (Expect::Any, tx.execute(st(QUESTION_UPSERT), &[&&q.question_id.0[..], &q.session.agent, &q.session.session_id, body]).await)
        }));
    }
    for (r, body) in commit.rules_add.iter().zip(&rows.rules) {
        flight.push(Box::pin(async move { (Expect::Any, tx.execute(st(RULE_INSERT), &[&r.agent, &r.id, &r.created_at.0, body]).await) }));
    }
    if let Some((dues, ids, kinds, ns)) = &rows.timers_remove {
        flight.push(Box::pin(async move { (Expect::Any, tx.execute(st(TIMERS_DELETE), &[dues, ids, kinds, ns]).await) }));
    }
    if let Some(((dues, ids, kinds, ns), bodies)) = &rows.timers_add {
        flight.push(Box::pin(async move { (Expect::Any, tx.execute(st(TIMERS_UPSERT), &[dues, ids, kinds, ns, bodies]).await) }));
    }
    if let Some((seqs, works)) = &rows.outbox {
        let (replica, lease) = (&store.shared.replica, &store.lease_secs);
        flight.push(Box::pin(async move { (Expect::Any, tx.execute(st(OUTBOX_INSERT_MANY), &[seqs, works, replica, lease]).await) }));
    }
    if let (Some(payload), true) = (&notice.payload, notice.inside) {
        let channel = store.shared.channel();
        flight.push(Box::pin(async move { (Expect::Any, tx.execute(st(NOTIFY), &[&channel, payload]).await) }));
    }
    if !commit.audit.is_empty() {
        // Last: the lock is granted after every other statement of the
        // flight has run, so the commit holds it for its chain's head and
        // insert and its COMMIT, not for the rest of its writes. Lock and
        // head go out together; the insert follows the head's answer.
        let schema = store.shared.schema.as_str();
        flight.push(Box::pin(async move {
            let prepared = ChainStatements { lock: st(CHAIN_LOCK), head: st(CHAIN_HEAD), insert: st(CHAIN_INSERT) };
            match super::chain::append(tx, prepared, schema, &commit.audit).await {
                Ok(n) => (Expect::Any, Ok(n)),
                Err(Failure::Pg(e)) => (Expect::Any, Err(e)),
                Err(other) => (Expect::Failed(Box::new(other)), Ok(0)),
            }
        }));
    }
    for (expect, counted) in in_order(flight).await {
        let counted = counted?;
        match expect {
            Expect::Some(preempted) if counted == 0 => return Err(Failure::Preempted(preempted)),
            Expect::Free(id) if counted > 0 => return Err(StoreError::DuplicateId(id).into()),
            Expect::Failed(failure) => return Err(*failure),
            _ => {}
        }
    }
    Ok(())
}

/// Every statement a commit may run, prepared on this connection (once:
/// `prepare_cached`), so that each step of the flight sends its request on
/// its first poll, in the flight's order.
const COMMIT_STATEMENTS: [&str; 16] = [
    SESSION_INSERT,
    SESSION_UPDATE,
    SESSION_UPSERT,
    TIMER_DELETE,
    IDEMPOTENCY_INSERT,
    PROPOSAL_EXISTS,
    PROPOSAL_UPSERT,
    QUESTION_UPSERT,
    RULE_INSERT,
    TIMERS_DELETE,
    TIMERS_UPSERT,
    OUTBOX_INSERT_MANY,
    NOTIFY,
    CHAIN_LOCK,
    CHAIN_HEAD,
    CHAIN_INSERT,
];

async fn prepare(tx: &Transaction<'_>) -> Result<HashMap<&'static str, Statement>, PgError> {
    let prepared = join_all(COMMIT_STATEMENTS.iter().map(|sql| tx.prepare_cached(sql))).await;
    COMMIT_STATEMENTS.iter().zip(prepared).map(|(sql, statement)| Ok((*sql, statement?))).collect()
}

/// Run the steps together and give their outputs in order. Each step is
/// first polled in order, which is when its request goes out: PostgreSQL
/// runs them in the order they were written (a fired timer is deleted
/// before the commit's other timer removals, an id checked before the
/// proposal is inserted).
async fn in_order(steps: Vec<Step<'_>>) -> Vec<(Expect, Result<u64, PgError>)> {
    let mut steps: Vec<MaybeDone<Step<'_>>> = steps.into_iter().map(maybe_done).collect();
    poll_fn(|cx| {
        let mut done = true;
        for step in steps.iter_mut() {
            done &= Pin::new(step).poll(cx).is_ready();
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    steps.iter_mut().filter_map(|step| Pin::new(step).take_output()).collect()
}

/// The session row's columns.
struct SessionRow<'a> {
    agent: &'a str,
    sid: &'a str,
    latest: Option<Vec<u8>>,
    body: Vec<u8>,
}

type TimerColumns = (Vec<i64>, Vec<Vec<u8>>, Vec<i16>, Vec<i16>);

/// Every value a commit's statements bind, encoded before any is sent.
struct Rows<'a> {
    session: Option<SessionRow<'a>>,
    revision: Option<i64>,
    keys: Vec<&'a str>,
    proposals: Vec<Vec<u8>>,
    questions: Vec<Vec<u8>>,
    rules: Vec<Vec<u8>>,
    timers_remove: Option<TimerColumns>,
    timers_add: Option<(TimerColumns, Vec<Vec<u8>>)>,
    outbox: Option<(Vec<i64>, Vec<&'a [u8]>)>,
}

impl<'a> Rows<'a> {
    fn of(commit: &'a Commit) -> Result<Rows<'a>, Failure> {
        let session = commit.session.as_ref().map(|s| SessionRow {
            agent: &s.key.agent,
            sid: &s.key.session_id,
            latest: s.latest_approval.map(|id| id.0.to_vec()),
            body: encode(s),
        });
        let revision = commit.expected_revision.map(|r| to_i64(r, "revision")).transpose()?;
        let mut seen = HashSet::new();
        let keys = commit.idempotency.iter().map(String::as_str).filter(|k| seen.insert(*k)).collect();
        let timers_remove = (!commit.timers_remove.is_empty()).then(|| timer_columns(&commit.timers_remove));
        let timers_add = (!commit.timers_add.is_empty()).then(|| {
            // A timer twice in one commit: the later wins, as row by row did
            // (one INSERT … ON CONFLICT may not touch a row twice).
            let mut added: Vec<&Timer> = Vec::with_capacity(commit.timers_add.len());
            for t in commit.timers_add.iter().rev() {
                if !added.iter().any(|a| timer_identity(a) == timer_identity(t)) {
                    added.push(t);
                }
            }
            added.reverse();
            let added: Vec<Timer> = added.into_iter().cloned().collect();
            (timer_columns(&added), added.iter().map(encode).collect())
        });
        let outbox = if commit.outbox.is_empty() {
            None
        } else {
            let seqs = commit.outbox.iter().map(|e| to_i64(e.seq, "outbox seq")).collect::<Result<Vec<i64>, _>>()?;
            Some((seqs, commit.outbox.iter().map(|e| e.work.as_slice()).collect()))
        };
        Ok(Rows {
            session,
            revision,
            keys,
            proposals: commit.proposals.iter().map(encode).collect(),
            questions: commit.questions.iter().map(encode).collect(),
            rules: commit.rules_add.iter().map(encode).collect(),
            timers_remove,
            timers_add,
            outbox,
        })
    }
}
