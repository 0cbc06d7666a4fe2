//! The hash chain: each record's hash covers its sequence number, the
//! previous record's hash and its event.

use crate::canonical;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A SHA-256 digest.
pub type Hash = [u8; 32];

/// The `prev` of the first record ever appended.
pub const GENESIS: Hash = [0; 32];

/// One audit record with its place in the chain. `event` is the record as
/// the store keeps it (an `AuditEvent`'s JSON), kept as a value rather than
/// a type so that a record written by another release hashes the same.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: u64,
    pub prev: Hash,
    pub hash: Hash,
    pub event: Value,
}

impl Record {
    /// Whether `hash` is what `seq`, `prev` and `event` hash to.
    pub fn is_sealed(&self) -> bool {
        record_hash(self.seq, &self.prev, &self.event) == self.hash
    }
}

/// SHA-256 over the canonical encoding of `{"event", "prev" (hex), "seq"}`.
pub fn record_hash(seq: u64, prev: &Hash, event: &Value) -> Hash {
    hash_of_canonical(seq, prev, &canonical::to_string(event))
}

/// [`record_hash`] of the event whose canonical encoding is `event`.
///
/// The canonical encoding of `{"event": e, "prev": p, "seq": n}` is those
/// three keys in that (byte) order around `e`'s own canonical encoding,
/// and a hex string or a number needs no escaping: so the sealed text is
/// written around `event` without re-encoding it. The stores encode an
/// event before they take their chain lock, and only this runs under it.
pub fn hash_of_canonical(seq: u64, prev: &Hash, event: &str) -> Hash {
    EventDigest::of_canonical(event).seal(seq, prev)
}

/// The part of a record's hash that its event alone decides: SHA-256 fed
/// with `{"event":` and the event's canonical encoding, not yet finished.
/// A store computes it before it takes its chain lock, so that under the
/// lock only the previous hash and the number are hashed in
/// ([`Chain::append_digest`]); the result is [`hash_of_canonical`]'s.
#[derive(Clone)]
pub struct EventDigest(Sha256);

impl EventDigest {
    /// The digest of the event whose canonical encoding is `event`.
    pub fn of_canonical(event: &str) -> EventDigest {
        let mut hasher = Sha256::new();
        hasher.update(b"{\"event\":");
        hasher.update(event.as_bytes());
        EventDigest(hasher)
    }

    /// The record's hash once it is number `seq`, linked to `prev`.
    fn seal(&self, seq: u64, prev: &Hash) -> Hash {
        let mut hasher = self.0.clone();
        let mut prev_hex = [0u8; 64];
        // 64 bytes hold a 32-byte hash's hex: this cannot fail.
        let _ = hex::encode_to_slice(prev, &mut prev_hex);
        hasher.update(b",\"prev\":\"");
        hasher.update(prev_hex);
        hasher.update(b"\",\"seq\":");
        hasher.update(itoa_u64(seq, &mut [0u8; 20]));
        hasher.update(b"}");
        hasher.finalize().into()
    }
}

/// `n` in decimal, written into `buf` (a u64 has at most 20 digits).
fn itoa_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// The head of a chain: what the next record links to. The stores keep one
/// per chain and append under a lock, so that records get consecutive
/// numbers and each links to the one before (no gaps, no forks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    /// The last record's number (0 before the first).
    last_seq: u64,
    last_hash: Hash,
}

impl Default for Chain {
    fn default() -> Self {
        Chain::genesis()
    }
}

impl Chain {
    /// An empty chain: its first record is number 1 and links to [`GENESIS`].
    pub fn genesis() -> Chain {
        Chain { last_seq: 0, last_hash: GENESIS }
    }

    /// The chain whose last record is `seq` with `hash`.
    pub fn after(seq: u64, hash: Hash) -> Chain {
        Chain { last_seq: seq, last_hash: hash }
    }

    /// The last record's number and hash; `None` before the first.
    pub fn head(&self) -> Option<(u64, Hash)> {
        (self.last_seq > 0).then_some((self.last_seq, self.last_hash))
    }

    /// Seal `event` as the next record and move the head to it.
    pub fn append(&mut self, event: Value) -> Record {
        let (seq, prev, hash) = self.append_canonical(&canonical::to_string(&event));
        Record { seq, prev, hash, event }
    }

    /// Seal the event whose canonical encoding is `event` as the next
    /// record and move the head to it: its `(seq, prev, hash)`.
    pub fn append_canonical(&mut self, event: &str) -> (u64, Hash, Hash) {
        self.append_digest(&EventDigest::of_canonical(event))
    }

    /// [`Self::append_canonical`] of the event `digest` was taken of.
    pub fn append_digest(&mut self, digest: &EventDigest) -> (u64, Hash, Hash) {
        let seq = self.last_seq + 1;
        let prev = self.last_hash;
        let hash = digest.seal(seq, &prev);
        (self.last_seq, self.last_hash) = (seq, hash);
        (seq, prev, hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_are_numbered_from_one_and_each_links_to_the_one_before() {
        let mut chain = Chain::genesis();
        let a = chain.append(json!({"action": "proposed"}));
        let b = chain.append(json!({"action": "approved"}));
        assert_eq!((a.seq, a.prev, b.seq, b.prev), (1, GENESIS, 2, a.hash));
        assert!(a.is_sealed() && b.is_sealed());
        assert_eq!(chain.head(), Some((2, b.hash)));
    }

    #[test]
    fn the_hash_written_around_the_events_encoding_is_the_hash_of_the_sealed_value() {
        for event in [json!({"action": "a\"é\u{1}", "n": [1, {"z": null, "b": 2.5}]}), json!({}), json!("plain")] {
            for (seq, prev) in [(0, GENESIS), (1, GENESIS), (9, [7; 32]), (10, [0xff; 32]), (1_234_567, [1; 32]), (u64::MAX, [0xab; 32])] {
                let sealed = json!({ "event": event, "prev": hex::encode(prev), "seq": seq });
                let whole: Hash = Sha256::digest(canonical::to_string(&sealed).as_bytes()).into();
                assert_eq!(record_hash(seq, &prev, &event), whole);
            }
        }
    }

    #[test]
    fn the_hash_does_not_depend_on_the_order_fields_were_written_in() {
        let one: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let two: Value = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        assert_eq!(record_hash(1, &GENESIS, &one), record_hash(1, &GENESIS, &two));
        assert_ne!(record_hash(1, &GENESIS, &one), record_hash(2, &GENESIS, &one));
    }

    #[test]
    fn a_digest_taken_before_the_turn_seals_as_the_whole_hash() {
        let mut by_text = Chain::after(41, [3; 32]);
        let mut by_digest = by_text;
        for event in [r#"{"action":"approved"}"#, "{}", r#""x""#] {
            assert_eq!(by_text.append_canonical(event), by_digest.append_digest(&EventDigest::of_canonical(event)));
        }
        assert_eq!(by_text, by_digest);
    }
}
