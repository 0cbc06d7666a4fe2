//! How records are keyed in the trees (the module documentation's table):
//! every key layout, so that each order a range scan relies on (timers by
//! due time, proposals by status then creation, rules by agent then age)
//! is written once.

use plangate_delivery::Delivery;
use plangate_engine::permission::StoredRule;
use plangate_engine::{ApprovalId, DecisionStatus, SessionKey, Timer, TimerKind, Timestamp};

pub(super) fn session_key(key: &SessionKey) -> Vec<u8> {
    let mut k = key.agent.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(key.session_id.as_bytes());
    k
}

/// `agent \0 created_at id`: an agent's rules together, oldest first.
pub(super) fn rule_key(rule: &StoredRule) -> Vec<u8> {
    let mut k = rule.agent.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&((rule.created_at.0 as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(rule.id.as_bytes());
    k
}

pub(super) fn agent_prefix(agent: &str) -> Vec<u8> {
    let mut k = agent.as_bytes().to_vec();
    k.push(0);
    k
}

/// Timers sort by due time: flip the sign bit so negative times sort first.
pub(crate) fn timer_key(timer: &Timer) -> Vec<u8> {
    let mut k = ((timer.due.0 as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(&timer.approval_id.0);
    match timer.kind {
        TimerKind::Nudge(n) => k.extend_from_slice(&[0, n]),
        TimerKind::Timeout => k.extend_from_slice(&[1, 0]),
        TimerKind::Escalate => k.extend_from_slice(&[2, 0]),
        TimerKind::AgentNudge(n) => k.extend_from_slice(&[3, n]),
        TimerKind::SubagentExpiry => k.extend_from_slice(&[4, 0]),
        TimerKind::Level(n) => k.extend_from_slice(&[5, n]),
    }
    k
}

pub(super) fn due_prefix(until: Timestamp) -> Vec<u8> {
    ((until.0 as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

pub(super) fn delivery_key(id: &ApprovalId, d: &Delivery) -> Vec<u8> {
    let mut k = id.0.to_vec();
    k.push(0);
    k.extend_from_slice(d.destination.as_bytes());
    k.push(0);
    k.extend_from_slice(d.chat.as_bytes());
    k
}

/// The fields of a stored proposal its index entry is made of: serde
/// skips the plan without allocating it.
#[derive(serde::Deserialize)]
pub(super) struct Listed {
    pub(super) approval_id: ApprovalId,
    pub(super) status: DecisionStatus,
    pub(super) created_at: Timestamp,
}

/// `status \0 created_at approval_id`: one status's proposals together,
/// oldest first, in the order listings page through.
pub(crate) fn status_key(status: DecisionStatus, created_at: Timestamp, id: &ApprovalId) -> Vec<u8> {
    let mut k = status_prefix(status);
    k.extend_from_slice(&((created_at.0 as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(&id.0);
    k
}

pub(super) fn status_prefix(status: DecisionStatus) -> Vec<u8> {
    let mut k = status.as_str().as_bytes().to_vec();
    k.push(0);
    k
}

/// Every status, for a listing of all proposals (merged from each one's range).
pub(super) const STATUSES: [DecisionStatus; 7] = DecisionStatus::ALL;

/// The approval id at the end of an index key.
pub(super) fn id_of_status_key(key: &[u8]) -> Option<ApprovalId> {
    let tail: [u8; 16] = key.get(key.len().checked_sub(16)?..)?.try_into().ok()?;
    Some(ApprovalId(tail))
}

/// The `meta` prefix of the pending count's shares, one per session stripe.
pub(super) const PENDING_SHARE_PREFIX: &[u8] = b"pending_share/";

/// `pending_share/` ‖ stripe (u16 big-endian): the `meta` key of one
/// session stripe's share of the pending count (schema 5).
pub(super) fn pending_share_key(stripe: usize) -> Vec<u8> {
    let mut k = PENDING_SHARE_PREFIX.to_vec();
    k.extend_from_slice(&(stripe as u16).to_be_bytes());
    k
}

/// A share as stored: i64 big-endian (a stripe's share goes negative when
/// it decides plans another stripe proposed, or that the count at the
/// upgrade put in stripe 0).
pub(super) fn pending_share_of(value: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(value.try_into().ok()?))
}
