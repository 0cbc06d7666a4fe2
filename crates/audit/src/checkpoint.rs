//! Signed checkpoints: the chain head, signed with the server's Ed25519
//! key. A copy of the audit that ends before a checkpoint's `seq` was cut;
//! one whose record `seq` hashes to anything but the checkpoint's `hash`
//! was rewritten. What a checkpoint cannot prove is in docs/SECURITY.md.

use crate::{canonical, Hash};
use ed25519_dalek::{Signature, Signer, Verifier as _};
use serde_json::{json, Value};
use thiserror::Error;

pub use ed25519_dalek::{SigningKey, VerifyingKey};

/// The `action` of the audit record a checkpoint is entered in the chain
/// as (its `detail` is the checkpoint's JSON): removing a checkpoint from
/// an export is then removing a record.
pub const CHECKPOINT_ACTION: &str = "audit_checkpoint";

/// Signed bytes start with this, so a checkpoint signature can never be
/// mistaken for (or replayed as) a signature over anything else.
const DOMAIN: &str = "plangate audit checkpoint v1\n";

/// The chain head `seq`/`hash` at time `at` (ms since the epoch), signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub seq: u64,
    pub hash: Hash,
    pub at: i64,
    pub sig: [u8; 64],
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CheckpointError {
    #[error("not a checkpoint: {0}")]
    Malformed(String),
    #[error("the checkpoint of record {0} is not signed by the given key (forged, altered, or another server's key)")]
    BadSignature(u64),
}

impl Checkpoint {
    /// Sign the head `seq`/`hash` at `at`.
    pub fn sign(key: &SigningKey, seq: u64, hash: Hash, at: i64) -> Checkpoint {
        let sig = key.sign(&signed_bytes(seq, &hash, at)).to_bytes();
        Checkpoint { seq, hash, at, sig }
    }

    /// Whether `key` signed this checkpoint.
    pub fn check(&self, key: &VerifyingKey) -> Result<(), CheckpointError> {
        let sig = Signature::from_bytes(&self.sig);
        key.verify(&signed_bytes(self.seq, &self.hash, self.at), &sig).map_err(|_| CheckpointError::BadSignature(self.seq))
    }

    pub fn to_json(&self) -> Value {
        json!({ "at": self.at, "hash": hex::encode(self.hash), "seq": self.seq, "sig": hex::encode(self.sig) })
    }

    /// The canonical JSON line (the checkpoint file holds one per line).
    pub fn to_line(&self) -> String {
        canonical::to_string(&self.to_json())
    }

    /// Read a checkpoint's JSON; its line must be canonical (see
    /// [`Checkpoint::to_line`]), so that one checkpoint has one spelling.
    pub fn parse(text: &str) -> Result<Checkpoint, CheckpointError> {
        let bad = |why: &str| CheckpointError::Malformed(why.to_string());
        let value: Value = serde_json::from_str(text).map_err(|e| CheckpointError::Malformed(e.to_string()))?;
        let obj = value.as_object().ok_or_else(|| bad("not a JSON object"))?;
        if obj.len() != 4 {
            return Err(bad("expected exactly at, hash, seq and sig"));
        }
        let seq = obj.get("seq").and_then(Value::as_u64).ok_or_else(|| bad("no seq"))?;
        let at = obj.get("at").and_then(Value::as_i64).ok_or_else(|| bad("no at"))?;
        let hash = hex_field::<32>(obj.get("hash")).ok_or_else(|| bad("no 64-hex-digit hash"))?;
        let sig = hex_field::<64>(obj.get("sig")).ok_or_else(|| bad("no 128-hex-digit sig"))?;
        let checkpoint = Checkpoint { seq, hash, at, sig };
        if checkpoint.to_line() != text {
            return Err(bad("not in canonical form"));
        }
        Ok(checkpoint)
    }
}

/// `Some` when `event` is a checkpoint entered in the chain
/// ([`CHECKPOINT_ACTION`]), with the checkpoint or why it does not read.
pub fn checkpoint_of_event(event: &Value) -> Option<Result<Checkpoint, CheckpointError>> {
    if event.get("action").and_then(Value::as_str) != Some(CHECKPOINT_ACTION) {
        return None;
    }
    Some(match event.get("detail").and_then(Value::as_str) {
        Some(detail) => Checkpoint::parse(detail),
        None => Err(CheckpointError::Malformed("a checkpoint record without its detail".into())),
    })
}

pub(crate) fn hex_field<const N: usize>(value: Option<&Value>) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(value?.as_str()?, &mut out).ok()?;
    Some(out)
}

fn signed_bytes(seq: u64, hash: &Hash, at: i64) -> Vec<u8> {
    let body = canonical::to_string(&json!({ "at": at, "hash": hex::encode(hash), "seq": seq }));
    [DOMAIN.as_bytes(), body.as_bytes()].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SigningKey {
        SigningKey::from_bytes(&[byte; 32])
    }

    #[test]
    fn a_checkpoint_verifies_with_its_key_and_reads_back_from_its_line() {
        let cp = Checkpoint::sign(&key(7), 42, [9; 32], 1_700_000_000_000);
        cp.check(&key(7).verifying_key()).unwrap();
        assert_eq!(Checkpoint::parse(&cp.to_line()).unwrap(), cp);
    }

    #[test]
    fn another_key_or_a_moved_head_does_not_verify() {
        let cp = Checkpoint::sign(&key(7), 42, [9; 32], 5);
        assert_eq!(cp.check(&key(8).verifying_key()), Err(CheckpointError::BadSignature(42)));
        let moved = Checkpoint { seq: 41, ..cp.clone() };
        assert!(moved.check(&key(7).verifying_key()).is_err());
    }
}
