//! Open subagent runs: the children a plan must wait for.
//!
//! Approve and Edit (and a new proposal) are refused while a session has open
//! runs, so a plan is never approved while one of its subagents still works.
//! A child that crashed must not block the plan forever, so:
//!
//! * every run remembers when it was last heard of (`seen_at`); opening the
//!   same run again is a heartbeat;
//! * with an expiry (`TimerPolicy::subagent_expiry_ms`, from
//!   `[approvals] subagent_expiry`), a persisted [`TimerKind::SubagentExpiry`]
//!   timer is due at `seen_at + expiry`. When it fires, a run heard of since
//!   is given a new timer; a silent one is closed and audited. Heartbeats
//!   only move `seen_at`: no timer is rescheduled per heartbeat;
//! * a person can clear the runs (`/plan subagents clear`, the operator API),
//!   audited as what it is.

use crate::command::{Effect, Transition};
use crate::ids::{humanize_ms, ApprovalId, SessionKey, Timestamp};
use crate::model::{Actor, DecisionStatus, State, Timer, TimerKind};
use crate::refusal::Refusal;
use sha2::{Digest, Sha256};

pub use crate::model::subagents::{deserialize_runs, SubagentRun};

/// The id the expiry timer of `run_id` in `session` carries in its
/// `approval_id` slot: the first 128 bits of SHA-256 over the session and the
/// run id, so the timer finds its run without the timer type knowing about
/// runs, and the same run id in two sessions never makes the same timer.
pub fn timer_id(session: &SessionKey, run_id: &str) -> ApprovalId {
    let digest = Sha256::digest(format!("subagent-run\0{}\0{}\0{run_id}", session.agent, session.session_id).as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    ApprovalId(id)
}

fn expiry_timer(session: &SessionKey, run_id: &str, due: Timestamp) -> Timer {
    Timer { due, session: session.clone(), approval_id: timer_id(session, run_id), kind: TimerKind::SubagentExpiry }
}

/// Refuse run ids nobody could read back or address.
pub(crate) fn check_run_id(run_id: &str) -> Result<(), Refusal> {
    if run_id.trim().is_empty() || run_id.chars().count() > 128 || run_id.chars().any(char::is_control) {
        return Err(Refusal::InvalidRequest("run_id must be 1–128 characters without control characters".to_string()));
    }
    Ok(())
}

/// While the latest proposal is pending its open card lists the runs: redraw it.
fn refresh_open_card(t: &mut Transition) {
    if let Some(p) = t.state.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending) {
        t.effects.push(Effect::UpdateCards { approval_id: p.approval_id });
    }
}

/// Open a run, or hear from an open one (a heartbeat). Returns the audit
/// detail when a run was opened (heartbeats are not audited).
pub(crate) fn open(t: &mut Transition, run_id: &str, now: Timestamp, expiry_ms: Option<u64>) -> Option<String> {
    let key = t.state.session.key.clone();
    let heard = match t.state.session.open_subagents.get_mut(run_id) {
        Some(run) => {
            run.seen_at = now;
            if run.expires_at.is_none() {
                if let Some(ms) = expiry_ms {
                    let due = now.plus_ms(ms);
                    run.expires_at = Some(due);
                    t.effects.push(Effect::Schedule(expiry_timer(&key, run_id, due)));
                }
            }
            true
        }
        None => false,
    };
    if heard {
        return None;
    }
    let expires_at = expiry_ms.map(|ms| now.plus_ms(ms));
    t.state.session.open_subagents.insert(run_id.to_string(), SubagentRun { opened_at: now, seen_at: now, expires_at });
    if let Some(due) = expires_at {
        t.effects.push(Effect::Schedule(expiry_timer(&key, run_id, due)));
    }
    refresh_open_card(t);
    Some(run_id.to_string())
}

/// Remove one run with its timer; whether it was open.
fn remove(t: &mut Transition, run_id: &str) -> bool {
    let key = t.state.session.key.clone();
    match t.state.session.open_subagents.remove(run_id) {
        Some(run) => {
            if let Some(due) = run.expires_at {
                t.effects.push(Effect::Cancel(expiry_timer(&key, run_id, due)));
            }
            true
        }
        None => false,
    }
}

/// The agent closes a run. Whether it was open.
pub(crate) fn close(t: &mut Transition, run_id: &str) -> bool {
    let closed = remove(t, run_id);
    if closed {
        refresh_open_card(t);
    }
    closed
}

/// A person clears the open runs (all, or `only` one), so a plan stuck behind
/// a crashed child can be approved. Returns the audit detail.
pub(crate) fn clear(t: &mut Transition, actor: &Actor, only: Option<&str>) -> Result<String, Refusal> {
    let open: Vec<String> = t.state.session.open_subagents.keys().cloned().collect();
    if open.is_empty() {
        return Err(Refusal::InvalidState("no subagent run is open in this session; there is nothing to clear".to_string()));
    }
    let cleared = match only {
        Some(run) if !open.iter().any(|o| o == run) => {
            return Err(Refusal::InvalidRequest(format!("no open subagent run {run:?}; open: {}", open.join(", "))))
        }
        Some(run) => vec![run.to_string()],
        None => open,
    };
    for run in &cleared {
        remove(t, run);
    }
    refresh_open_card(t);
    Ok(format!("{} cleared {} subagent run(s): {} (the plan no longer waits for them)", actor.label(), cleared.len(), cleared.join(", ")))
}

/// The expiry timer of a run fired. Returns the audit detail when the run
/// expired; a run heard of since gets a new timer, a stale timer (the run
/// closed, or was re-timed) changes nothing.
pub(crate) fn expiry_fired(t: &mut Transition, timer: &Timer, now: Timestamp, expiry_ms: Option<u64>) -> Option<String> {
    let found = t
        .state
        .session
        .open_subagents
        .iter()
        .find(|(id, run)| timer_id(&timer.session, id) == timer.approval_id && run.expires_at == Some(timer.due))
        .map(|(id, run)| (id.clone(), run.clone()));
    let Some((run_id, run)) = found else {
        t.changed = false;
        return None;
    };
    let key = t.state.session.key.clone();
    let Some(ms) = expiry_ms else {
        // Expiry was switched off since: the run stays open, untimed.
        if let Some(r) = t.state.session.open_subagents.get_mut(&run_id) {
            r.expires_at = None;
        }
        return None;
    };
    let deadline = run.seen_at.plus_ms(ms);
    if deadline > now {
        if let Some(r) = t.state.session.open_subagents.get_mut(&run_id) {
            r.expires_at = Some(deadline);
        }
        t.effects.push(Effect::Schedule(expiry_timer(&key, &run_id, deadline)));
        return None;
    }
    // The fired timer is removed with this transition: nothing to cancel.
    t.state.session.open_subagents.remove(&run_id);
    refresh_open_card(t);
    let since = if run.seen_at.0 > 0 { format!(" since {} UTC", run.seen_at.clock()) } else { String::new() };
    Some(format!(
        "subagent run {run_id} expired: not heard of for {}{since} (expiry {})",
        humanize_ms(now.0 - run.seen_at.0).replace("just now", "under a minute"),
        humanize_ms(i64::try_from(ms).unwrap_or(i64::MAX))
    ))
}

/// The open runs as people read them, oldest first: `run-id · open since 14:02 UTC, last heard 3 min ago`.
pub fn describe(state: &State, now: Timestamp) -> Vec<String> {
    let mut runs: Vec<(&String, &SubagentRun)> = state.session.open_subagents.iter().collect();
    runs.sort_by_key(|(id, run)| (run.opened_at, (*id).clone()));
    runs.into_iter()
        .map(|(id, run)| {
            let heard = match humanize_ms(now.0 - run.seen_at.0).as_str() {
                "just now" => "just now".to_string(),
                ago => format!("{ago} ago"),
            };
            if run.opened_at.0 > 0 {
                format!("{id} · open since {} UTC, last heard {heard}", run.opened_at.clock())
            } else {
                format!("{id} · open")
            }
        })
        .collect()
}
