//! Atomic commits without sled transactions: a redo record.
//!
//! sled 0.34's transactions (and `apply_batch`) write and sync the log
//! buffer twice per transaction, under a process-wide exclusive lock, so
//! they run one at a time at the disk's pace whatever the flush strategy.
//! A single-key insert is atomic on its own and costs no I/O until a flush.
//! So a commit is:
//!
//! 1. insert one record into the `redo` tree listing every write of the
//!    transition (tree, key, new value or removal);
//! 2. perform those writes as plain inserts and removes;
//! 3. remove the record;
//! 4. flush (shared with concurrent commits, see `group`).
//!
//! sled recovers a prefix of its log after a crash. A prefix that holds
//! any write of step 2 also holds the record of step 1, which
//! [`SledStore::open`](crate::SledStore::open) replays (every write is a
//! full value or a removal, so replaying twice changes nothing) and then
//! removes: a crash leaves all of a transition or none of it. Records are
//! removed before the next commit of the same session starts, so a replay
//! never overwrites a newer state.
//!
//! A commit with audit events records them apart from the rest of its
//! writes, in two records of the same sequence number
//! (`sled_store::commit`): the rest first, before it takes the audit
//! chain's lock, then its audit records, sealed under that lock. Only the
//! chain needs the lock (its records must reach the log in chain order),
//! so a commit holds it for its few audit records, not for the session
//! and proposal it writes. No write of the commit is made before its
//! audit part is in, and the audit part follows the rest in the log: a
//! prefix that holds any write holds both parts. A rest part found alone
//! on open is a commit that never got its place in the chain and wrote
//! nothing; it is dropped.

/// The trees a transition writes, by a stable number stored in records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum TreeId {
    Sessions = 0,
    Proposals = 1,
    Questions = 2,
    Timers = 3,
    Audit = 4,
    Idempotency = 5,
    Outbox = 6,
    Rules = 7,
    /// The `proposals_by_status` index (schema 2).
    ProposalsByStatus = 8,
    /// The `meta` tree: a session stripe's share of the pending count (schema 5).
    Meta = 9,
}

impl TreeId {
    fn from_u8(b: u8) -> Option<TreeId> {
        Some(match b {
            0 => TreeId::Sessions,
            1 => TreeId::Proposals,
            2 => TreeId::Questions,
            3 => TreeId::Timers,
            4 => TreeId::Audit,
            5 => TreeId::Idempotency,
            6 => TreeId::Outbox,
            7 => TreeId::Rules,
            8 => TreeId::ProposalsByStatus,
            9 => TreeId::Meta,
            _ => return None,
        })
    }
}

/// One write: `value` `None` removes the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Op {
    pub tree: TreeId,
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

const FORMAT: u8 = 1;

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// `FORMAT`, then per op: tree, key (u32 LE length + bytes), 0 = remove or
/// 1 = insert followed by the value (u32 LE length + bytes).
pub(crate) fn encode(ops: &[Op]) -> Vec<u8> {
    encode_pair(ops, &[])
}

/// The record of `first` followed by `then` (without joining the lists).
pub(crate) fn encode_pair(first: &[Op], then: &[Op]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + size_of(first) + size_of(then));
    out.push(FORMAT);
    write_ops(first, &mut out);
    write_ops(then, &mut out);
    out
}

fn size_of(ops: &[Op]) -> usize {
    ops.iter().map(|op| 10 + op.key.len() + op.value.as_ref().map_or(0, Vec::len)).sum()
}

fn write_ops(ops: &[Op], out: &mut Vec<u8>) {
    for op in ops {
        out.push(op.tree as u8);
        put(out, &op.key);
        match &op.value {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                put(out, v);
            }
        }
    }
}

pub(crate) fn decode(bytes: &[u8]) -> Option<Vec<Op>> {
    let (&format, mut rest) = bytes.split_first()?;
    if format != FORMAT {
        return None;
    }
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if rest.len() < n {
            return None;
        }
        let (head, tail) = rest.split_at(n);
        *rest = tail;
        Some(head)
    }
    fn sized(rest: &mut &[u8]) -> Option<Vec<u8>> {
        let len = u32::from_le_bytes(take(rest, 4)?.try_into().ok()?) as usize;
        Some(take(rest, len)?.to_vec())
    }
    let mut ops = Vec::new();
    while !rest.is_empty() {
        let tree = TreeId::from_u8(take(&mut rest, 1)?[0])?;
        let key = sized(&mut rest)?;
        let value = match take(&mut rest, 1)?[0] {
            0 => None,
            1 => Some(sized(&mut rest)?),
            _ => return None,
        };
        ops.push(Op { tree, key, value });
    }
    Some(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_garbage_is_refused() {
        let ops = vec![
            Op { tree: TreeId::Proposals, key: vec![1; 16], value: Some(b"{\"a\":1}".to_vec()) },
            Op { tree: TreeId::Timers, key: vec![0, 255, 3], value: None },
            Op { tree: TreeId::Sessions, key: b"demo\0s1".to_vec(), value: Some(Vec::new()) },
        ];
        let bytes = encode(&ops);
        assert_eq!(decode(&bytes), Some(ops.clone()));
        assert_eq!(decode(&encode(&[])), Some(Vec::new()));
        assert_eq!(encode_pair(&ops[..1], &ops[1..]), bytes);
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[FORMAT, 10, 0, 0, 0, 0, 0]), None);
    }
}
