//! Audit records as both stores keep them: the event's JSON with its place
//! in the chain beside its fields (`chain_seq`, `chain_prev`, `chain_hash`),
//! so that every reader of an `AuditEvent` reads the same bytes as before
//! and the export reads the event exactly as it was hashed
//! ([`plangate_audit`]).
//!
//! Appends are serialized by each store (sled: one mutex around sealing,
//! the commit's redo record and the records' writes, while everything else
//! a commit encodes and writes is done outside it; PostgreSQL: an advisory
//! transaction lock and the head read in the committing transaction), so
//! records get consecutive numbers and each links to the one before: no
//! gaps, no forks. An event is encoded before its turn ([`unsealed`]): only
//! its hash waits for the head.

use crate::StoreError;
use plangate_audit::{Chain, EventDigest, Hash, Record};
use plangate_engine::{ApprovalId, AuditEvent, Timestamp};
use serde::Serialize;
use serde_json::{Map, Value};

const SEQ: &str = "chain_seq";
const PREV: &str = "chain_prev";
const HASH: &str = "chain_hash";

/// An audit event encoded for the chain before its turn: everything but
/// the hash's last steps (which need the head) is done here, outside the
/// store's chain lock, so that appends wait on each other only for the
/// end of a SHA-256 and a copy.
pub(crate) struct Unsealed {
    /// The event's canonical encoding without its closing brace: the
    /// stored record is this object with the chain's fields after the
    /// event's.
    open: Vec<u8>,
    /// The record's hash as far as the event decides it.
    digest: EventDigest,
}

/// An [`AuditEvent`] as its canonical encoding writes it: the fields in
/// the byte order of their names, the optional ones left out when absent,
/// as the event's own `Serialize` does. Serialized by `serde_json`, it is
/// `canonical::to_string` of the event's JSON value, without building that
/// value (`the_direct_encoding_is_the_canonical_one`, a property test).
#[derive(Serialize)]
struct CanonicalEvent<'a> {
    action: &'a str,
    actor: &'a str,
    agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_id: Option<ApprovalId>,
    at: Timestamp,
    detail: &'a str,
    session_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u32>,
}

impl<'a> CanonicalEvent<'a> {
    fn of(event: &'a AuditEvent) -> CanonicalEvent<'a> {
        // Every field named: a field added to `AuditEvent` does not compile
        // here until it is placed in the canonical order.
        let AuditEvent { at, agent, session_id, actor, action, approval_id, version, detail } = event;
        CanonicalEvent { action, actor, agent, approval_id: *approval_id, at: *at, detail, session_id, version: *version }
    }
}

/// `event` encoded for [`Unsealed::seal`].
pub(crate) fn unsealed(event: &AuditEvent) -> Unsealed {
    // Serializing plain strings and numbers into memory cannot fail.
    let canonical = serde_json::to_string(&CanonicalEvent::of(event)).unwrap_or_else(|_| "{}".to_string());
    let digest = EventDigest::of_canonical(&canonical);
    let mut open = canonical.into_bytes();
    open.pop();
    Unsealed { open, digest }
}

impl Unsealed {
    /// Seal this event as `chain`'s next record: its number, its hash and
    /// its stored bytes (what [`unseal`] reads back).
    pub(crate) fn seal(&self, chain: &mut Chain) -> (u64, Hash, Vec<u8>) {
        let (seq, prev, hash) = chain.append_digest(&self.digest);
        let mut bytes = Vec::with_capacity(self.open.len() + 190);
        bytes.extend_from_slice(&self.open);
        if self.open.len() > 1 {
            bytes.push(b',');
        }
        let mut hex_text = [0u8; 64];
        bytes.extend_from_slice(b"\"");
        bytes.extend_from_slice(SEQ.as_bytes());
        bytes.extend_from_slice(b"\":");
        bytes.extend_from_slice(seq.to_string().as_bytes());
        for (key, value) in [(PREV, &prev), (HASH, &hash)] {
            // 64 bytes hold a 32-byte hash's hex: this cannot fail.
            let _ = hex::encode_to_slice(value, &mut hex_text);
            bytes.extend_from_slice(b",\"");
            bytes.extend_from_slice(key.as_bytes());
            bytes.extend_from_slice(b"\":\"");
            bytes.extend_from_slice(&hex_text);
            bytes.push(b'"');
        }
        bytes.push(b'}');
        (seq, hash, bytes)
    }
}

/// The stored bytes of `record`: its event's fields and the chain's.
pub(crate) fn stored(record: &Record) -> Vec<u8> {
    let mut map = match &record.event {
        Value::Object(map) => map.clone(),
        other => Map::from_iter([("event".to_string(), other.clone())]),
    };
    map.insert(SEQ.into(), record.seq.into());
    map.insert(PREV.into(), hex::encode(record.prev).into());
    map.insert(HASH.into(), hex::encode(record.hash).into());
    serde_json::to_vec(&Value::Object(map)).unwrap_or_default()
}

/// The record stored as `bytes`; an unchained one is an error (every
/// record is chained when it is written, and older ones when the store is
/// upgraded), never a record passed on without its chain.
pub(crate) fn unseal(bytes: &[u8]) -> Result<Record, StoreError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt { what: "audit", source })?;
    let Value::Object(mut map) = value else { return Err(unchained("an audit record that is not a JSON object")) };
    let seq = map.remove(SEQ).and_then(|v| v.as_u64());
    let prev = map.remove(PREV).and_then(|v| hash_of(&v));
    let hash = map.remove(HASH).and_then(|v| hash_of(&v));
    match (seq, prev, hash) {
        (Some(seq), Some(prev), Some(hash)) => Ok(Record { seq, prev, hash, event: Value::Object(map) }),
        _ => Err(unchained("an audit record without its chain fields (written by a plangate that did not chain the audit?)")),
    }
}

/// The event of a stored record, chained or not (for chaining old records).
pub(crate) fn event_of(bytes: &[u8]) -> Result<Value, StoreError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt { what: "audit", source })?;
    let Value::Object(mut map) = value else { return Err(unchained("an audit record that is not a JSON object")) };
    for key in [SEQ, PREV, HASH] {
        map.remove(key);
    }
    Ok(Value::Object(map))
}

fn hash_of(value: &Value) -> Option<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(value.as_str()?, &mut out).ok()?;
    Some(out)
}

fn unchained(what: &str) -> StoreError {
    StoreError::AuditChain(what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event(action: &str) -> AuditEvent {
        AuditEvent {
            at: Timestamp(5),
            agent: "a".into(),
            session_id: "s".into(),
            actor: "alice".into(),
            action: action.into(),
            approval_id: None,
            version: None,
            detail: "d".into(),
        }
    }

    #[test]
    fn a_stored_record_reads_back_as_the_record_and_as_its_event() {
        let mut chain = Chain::genesis();
        let (seq, hash, bytes) = unsealed(&event("approved")).seal(&mut chain);
        let record = unseal(&bytes).unwrap();
        assert_eq!((record.seq, record.prev, record.hash), (seq, plangate_audit::GENESIS, hash));
        assert!(record.is_sealed());
        assert_eq!(chain.head(), Some((seq, hash)));
        let plain: AuditEvent = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(plain, event("approved"));
        assert_eq!(event_of(&bytes).unwrap(), record.event);
        // The same record as the migration writes it (`stored`).
        assert_eq!(unseal(&stored(&record)).unwrap(), record);
    }

    #[test]
    fn the_next_record_links_to_the_one_before() {
        let mut chain = Chain::genesis();
        let (_, first, _) = unsealed(&event("proposed")).seal(&mut chain);
        let (seq, _, bytes) = unsealed(&event("approved")).seal(&mut chain);
        let record = unseal(&bytes).unwrap();
        assert_eq!((seq, record.prev), (2, first));
        assert!(record.is_sealed());
    }

    #[test]
    fn an_unchained_record_is_an_error() {
        let bytes = serde_json::to_vec(&event("approved")).unwrap();
        assert!(matches!(unseal(&bytes), Err(StoreError::AuditChain(_))));
    }

    fn any_event() -> impl Strategy<Value = AuditEvent> {
        let text = || proptest::string::string_regex("(?s).{0,40}").unwrap();
        (any::<i64>(), text(), text(), text(), text(), proptest::option::of(any::<[u8; 16]>()), proptest::option::of(any::<u32>()), text())
            .prop_map(|(at, agent, session_id, actor, action, approval_id, version, detail)| AuditEvent {
                at: Timestamp(at),
                agent,
                session_id,
                actor,
                action,
                approval_id: approval_id.map(ApprovalId),
                version,
                detail,
            })
    }

    proptest! {
        /// What a chained record's hash covers and what it stores are the
        /// event's canonical encoding and the event, whatever it holds
        /// (quotes, control characters, any unicode, absent options).
        #[test]
        fn the_direct_encoding_is_the_canonical_one(event in any_event(), seq in 0u64..u64::MAX, prev in any::<[u8; 32]>()) {
            let value = serde_json::to_value(&event).unwrap();
            let mut chain = Chain::after(seq, prev);
            let mut by_value = chain;
            let (_, hash, bytes) = unsealed(&event).seal(&mut chain);
            prop_assert_eq!(by_value.append(value.clone()).hash, hash);
            let record = unseal(&bytes).unwrap();
            prop_assert_eq!(&record.event, &value);
            prop_assert!(record.is_sealed());
            prop_assert_eq!(serde_json::from_slice::<AuditEvent>(&bytes).unwrap(), event);
        }
    }
}
