//! A transition's commit: one transaction that writes the session only at
//! the revision it was loaded at, takes its fired timer and its event keys
//! once, writes every other record with one statement per kind of row, and
//! notifies the other replicas.

use super::connection::Statements;
use super::sql::*;
use super::{Failure, PgStore};
use crate::sled_store::encode;
use crate::{Commit, Committed, OutboxEntry, Preempted, StoreError};
use plangate_engine::Timer;
use postgres::types::ToSql;
use postgres::Transaction;
use std::collections::HashSet;

pub(super) fn commit(store: &PgStore, commit: Commit) -> Result<Committed, StoreError> {
    let span = tracing::debug_span!(
        "pg_commit",
        session = commit.session.as_ref().map(|s| tracing::field::display(&s.key)),
        expected_revision = commit.expected_revision,
    );
    let _enter = span.enter();
    let what = "committing a transition";
    let result = store.conditional(what, store.transaction_raw(what, |tx, st| write(store, tx, st, &commit)));
    log_unwritten(&result);
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
    let result = store.transaction_raw(what, |tx, st| {
        let mut seqs = Vec::with_capacity(work.len());
        if count > 0 {
            for row in st.query(tx, NEXT_SEQS, &[&count])? {
                seqs.push(u64::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0));
            }
            seqs.sort_unstable();
        }
        numbered(&seqs);
        commit.outbox = seqs.iter().zip(&work).map(|(seq, work)| OutboxEntry { seq: *seq, work: work.clone() }).collect();
        write(store, tx, st, &commit)?;
        Ok(seqs)
    });
    let result = store.conditional(what, result);
    log_unwritten(&result);
    result
}

fn write(store: &PgStore, tx: &mut Transaction<'_>, st: &mut Statements, commit: &Commit) -> Result<(), Failure> {
    if let Some(session) = &commit.session {
        let body = encode(session);
        let latest = session.latest_approval.map(|id| id.0.to_vec());
        let (agent, sid) = (&session.key.agent, &session.key.session_id);
        let rows = match commit.expected_revision {
            Some(0) => st.execute(tx, SESSION_INSERT, &[agent, sid, &latest, &body])?,
            Some(r) => {
                let r = to_i64(r, "revision")?;
                st.execute(tx, SESSION_UPDATE, &[agent, sid, &latest, &body, &r])?
            }
            None => st.execute(tx, SESSION_UPSERT, &[agent, sid, &latest, &body])?,
        };
        if rows == 0 {
            return Err(Failure::Preempted(Preempted::Conflict));
        }
    }
    if let Some(timer) = &commit.fired {
        let (due, id, kind, n) = timer_identity(timer);
        if st.execute(tx, TIMER_DELETE, &[&due, &id, &kind, &n])? == 0 {
            return Err(Failure::Preempted(Preempted::TimerGone));
        }
    }
    let mut keys = HashSet::new();
    for key in commit.idempotency.iter().filter(|k| keys.insert(k.as_str())) {
        if st.execute(tx, IDEMPOTENCY_INSERT, &[key])? == 0 {
            return Err(Failure::Preempted(Preempted::AlreadyHandled(key.clone())));
        }
    }
    if let Some(id) = &commit.new_proposal {
        // Ids are 128 random bits; this guards the invariant, not a race.
        if st.query_opt(tx, PROPOSAL_EXISTS, &[&&id.0[..]])?.is_some() {
            return Err(StoreError::DuplicateId(*id).into());
        }
    }
    for p in &commit.proposals {
        let created = p.created_at.0;
        let params: [&(dyn ToSql + Sync); 7] = [
            &&p.approval_id.0[..],
            &p.approval_id.to_string(),
            &p.status.as_str(),
            &p.session.agent,
            &p.session.session_id,
            &created,
            &encode(p),
        ];
        st.execute(tx, PROPOSAL_UPSERT, &params)?;
    }
    for q in &commit.questions {
        st.execute(tx, QUESTION_UPSERT, &[&&q.question_id.0[..], &q.session.agent, &q.session.session_id, &encode(q)])?;
    }
    for r in &commit.rules_add {
        st.execute(tx, RULE_INSERT, &[&r.agent, &r.id, &r.created_at.0, &encode(r)])?;
    }
    // One statement per kind of row, however many rows (arrays through
    // `unnest`): a commit costs a fixed number of round trips.
    if !commit.timers_remove.is_empty() {
        let (dues, ids, kinds, ns) = timer_columns(&commit.timers_remove);
        st.execute(tx, TIMERS_DELETE, &[&dues, &ids, &kinds, &ns])?;
    }
    if !commit.timers_add.is_empty() {
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
        let (dues, ids, kinds, ns) = timer_columns(&added);
        let bodies: Vec<Vec<u8>> = added.iter().map(encode).collect();
        st.execute(tx, TIMERS_UPSERT, &[&dues, &ids, &kinds, &ns, &bodies])?;
    }
    if !commit.audit.is_empty() {
        let ats: Vec<i64> = commit.audit.iter().map(|e| e.at.0).collect();
        let agents: Vec<&str> = commit.audit.iter().map(|e| e.agent.as_str()).collect();
        let sessions: Vec<&str> = commit.audit.iter().map(|e| e.session_id.as_str()).collect();
        let approvals: Vec<Option<Vec<u8>>> = commit.audit.iter().map(|e| e.approval_id.map(|id| id.0.to_vec())).collect();
        let bodies: Vec<Vec<u8>> = commit.audit.iter().map(encode).collect();
        st.execute(tx, AUDIT_INSERT_MANY, &[&ats, &agents, &sessions, &approvals, &bodies])?;
    }
    if !commit.outbox.is_empty() {
        let seqs = commit.outbox.iter().map(|e| to_i64(e.seq, "outbox seq")).collect::<Result<Vec<i64>, _>>()?;
        let works: Vec<&[u8]> = commit.outbox.iter().map(|e| e.work.as_slice()).collect();
        st.execute(tx, OUTBOX_INSERT_MANY, &[&seqs, &works, &store.shared.replica, &store.lease_secs])?;
    }
    if let Some(session) = &commit.session {
        // Delivered to listeners when (and only if) this commits.
        // The replica's id last: its own listener skips what this process
        // already woke for (see `listen`).
        let payload = serde_json::to_string(&[&session.key.agent, &session.key.session_id, &store.shared.replica]).unwrap_or_default();
        // NOTIFY payloads are limited to 8000 bytes; an empty one tells
        // listeners "something changed" (they wake every waiter).
        let payload = if payload.len() > 7900 { String::new() } else { payload };
        st.execute(tx, NOTIFY, &[&store.shared.channel(), &payload])?;
    }
    Ok(())
}
