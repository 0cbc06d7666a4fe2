//! plangate's tamper-evident audit, as plain functions over plain values.
//!
//! Every audit record carries a sequence number, the hash of the record
//! before it and its own hash: SHA-256 over the [canonical
//! encoding](canonical) of `{event, prev, seq}`. Changing, removing,
//! inserting or moving a record breaks the chain at that record. A
//! [`Checkpoint`] is the chain head (`seq`, `hash`) signed with the
//! server's Ed25519 key and sent off the machine: a copy of the audit that
//! ends before a checkpoint's `seq` had its newest records cut.
//!
//! The stores (`plangate-store`) chain every append with [`Chain`]; the
//! server exports the chain as JSONL ([`export`]); `plangate audit verify`
//! checks such a file offline with [`verify::Verifier`].
//!
//! **Architecture invariant:** no I/O, no clock, no randomness: time and
//! key bytes are arguments. A verification never stops at the first good
//! news: it reads every line and names the first bad one; anything it
//! cannot read is a failure, never skipped.

pub mod canonical;
mod chain;
mod checkpoint;
pub mod export;
pub mod verify;

pub use chain::{hash_of_canonical, record_hash, Chain, EventDigest, Hash, Record, GENESIS};
pub use checkpoint::{checkpoint_of_event, Checkpoint, CheckpointError, SigningKey, VerifyingKey, CHECKPOINT_ACTION};
pub use verify::{verify, Broken, Verified, Verifier};
