//! Offline verification of an exported chain: names the first bad line
//! and record. A stream is read line by line ([`Verifier::line`]), so a
//! million records need no more memory than their hashes.

use crate::export::Line;
use crate::{checkpoint_of_event, Checkpoint, Hash, Record, VerifyingKey, GENESIS};
use thiserror::Error;

/// Why a chain does not verify, at the first place it fails. `line` is
/// the 1-based line of the export (for [`verify`] over records, the
/// record's 1-based position).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Broken {
    #[error("line {line}: {why}")]
    Unreadable { line: usize, why: String },
    #[error("line {line}: expected record {expected}, found record {found}: a record was removed, inserted or moved here")]
    OutOfSequence { line: usize, expected: u64, found: u64 },
    #[error("line {line}: record {seq} does not link to the record before it (its prev is not that record's hash): a record before it was changed, removed or moved")]
    BrokenLink { line: usize, seq: u64 },
    #[error("line {line}: record {seq} was altered: its hash does not match its contents")]
    Altered { line: usize, seq: u64 },
    #[error("line {line}: record {seq} is a checkpoint that does not hold: {why}")]
    BadCheckpoint { line: usize, seq: u64, why: String },
    #[error("line {line}: the export ends without its end line: it was cut short")]
    NoEnd { line: usize },
    #[error("line {line}: the end line does not match the records: {why}")]
    EndMismatch { line: usize, why: String },
    #[error("the export ends at record {last}, but a checkpoint signed record {signed}: the newest records were cut")]
    CutTail { last: u64, signed: u64 },
    #[error("record {seq} does not match the checkpoint that signed it: the record or the records before it were rewritten")]
    CheckpointMismatch { seq: u64 },
    #[error("a checkpoint of record {seq} is not signed by the given key")]
    ForeignCheckpoint { seq: u64 },
}

impl Broken {
    /// The line the failure is at, when it is at one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Broken::Unreadable { line, .. }
            | Broken::OutOfSequence { line, .. }
            | Broken::BrokenLink { line, .. }
            | Broken::Altered { line, .. }
            | Broken::BadCheckpoint { line, .. }
            | Broken::NoEnd { line }
            | Broken::EndMismatch { line, .. } => Some(*line),
            Broken::CutTail { .. } | Broken::CheckpointMismatch { .. } | Broken::ForeignCheckpoint { .. } => None,
        }
    }
}

/// What an intact chain held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub records: u64,
    /// The first and last record's numbers (`None` for an empty export).
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    /// Checkpoints whose record was in the export and matched.
    pub checkpoints: usize,
    /// Whether their signatures were checked (a key was given).
    pub signed: bool,
}

/// Reads an export line by line; the first failure is returned and
/// every later call returns it again.
pub struct Verifier<'k> {
    key: Option<&'k VerifyingKey>,
    lines: usize,
    first_seq: Option<u64>,
    /// Hashes of the records read, from `first_seq` on.
    hashes: Vec<Hash>,
    checkpoints: usize,
    /// A header was read: the export must end with its end line.
    framed: bool,
    ended: bool,
    broken: Option<Broken>,
}

impl<'k> Verifier<'k> {
    /// A verifier that checks checkpoint signatures with `key` (none
    /// checked without one; [`Verified::signed`] says which).
    pub fn new(key: Option<&'k VerifyingKey>) -> Verifier<'k> {
        Verifier { key, lines: 0, first_seq: None, hashes: Vec::new(), checkpoints: 0, framed: false, ended: false, broken: None }
    }

    /// The next line of the export as bytes (without its newline): one
    /// that is not UTF-8 is a bad line, not a failure to read the file.
    pub fn line_bytes(&mut self, bytes: &[u8]) -> Result<(), Broken> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.line(text),
            Err(_) => {
                self.lines += 1;
                let line = self.lines;
                self.guard(|_| Err(Broken::Unreadable { line, why: "not UTF-8 text".into() }))
            }
        }
    }

    /// The next line of the export (without its newline).
    pub fn line(&mut self, text: &str) -> Result<(), Broken> {
        self.lines += 1;
        let line = self.lines;
        self.guard(|v| {
            let parsed = Line::parse(text).map_err(|why| Broken::Unreadable { line, why })?;
            if v.ended {
                return Err(Broken::Unreadable { line, why: "a line after the end line".into() });
            }
            match (parsed, v.first_seq) {
                (Line::Header { first_seq: 0 }, _) => Err(Broken::Unreadable { line, why: "records are numbered from 1".into() }),
                (Line::Header { first_seq }, None) if line == 1 => {
                    (v.first_seq, v.framed) = (Some(first_seq), true);
                    Ok(())
                }
                (Line::Header { .. }, _) => Err(Broken::Unreadable { line, why: "a header that is not the first line".into() }),
                (_, None) => Err(Broken::Unreadable { line, why: "the first line is not the export's header".into() }),
                (Line::Record(record), Some(_)) => v.record_at(line, &record),
                (Line::End { last_seq, hash, records }, Some(first)) => v.end(line, first, last_seq, hash, records),
            }
        })
    }

    /// Check `record` as the next one (for streams without header lines:
    /// the first record sets where the chain starts).
    pub fn record(&mut self, record: &Record) -> Result<(), Broken> {
        self.lines += 1;
        let line = self.lines;
        self.guard(|v| {
            v.first_seq.get_or_insert(record.seq);
            v.record_at(line, record)
        })
    }

    /// The end of the stream: `external` are the checkpoints kept off the
    /// machine (the checkpoint file). A header-framed export must have
    /// had its end line.
    pub fn finish(mut self, external: &[Checkpoint]) -> Result<Verified, Broken> {
        if let Some(broken) = self.broken.take() {
            return Err(broken);
        }
        if self.framed && !self.ended {
            return Err(Broken::NoEnd { line: self.lines + 1 });
        }
        for checkpoint in external {
            self.external(checkpoint)?;
        }
        let records = self.hashes.len() as u64;
        let first_seq = self.first_seq.filter(|_| records > 0);
        Ok(Verified {
            records,
            first_seq,
            last_seq: first_seq.map(|f| f.saturating_add(records - 1)),
            checkpoints: self.checkpoints,
            signed: self.key.is_some(),
        })
    }

    fn guard(&mut self, check: impl FnOnce(&mut Self) -> Result<(), Broken>) -> Result<(), Broken> {
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        check(self).inspect_err(|broken| self.broken = Some(broken.clone()))
    }

    /// The number and hash of the last record read.
    fn last(&self) -> Option<(u64, Hash)> {
        let first = self.first_seq?;
        let hash = *self.hashes.last()?;
        Some((first.saturating_add(self.hashes.len() as u64 - 1), hash))
    }

    fn hash_of(&self, seq: u64) -> Option<Hash> {
        let index = seq.checked_sub(self.first_seq?)?;
        self.hashes.get(usize::try_from(index).ok()?).copied()
    }

    fn record_at(&mut self, line: usize, record: &Record) -> Result<(), Broken> {
        let first = self.first_seq.unwrap_or(record.seq);
        let expected = first.saturating_add(self.hashes.len() as u64);
        if record.seq != expected {
            return Err(Broken::OutOfSequence { line, expected, found: record.seq });
        }
        let links = match self.last() {
            Some((_, hash)) => record.prev == hash,
            // The very first record links to nothing; an export starting
            // later links to a record it does not hold.
            None => record.seq != 1 || record.prev == GENESIS,
        };
        if !links {
            return Err(Broken::BrokenLink { line, seq: record.seq });
        }
        if !record.is_sealed() {
            return Err(Broken::Altered { line, seq: record.seq });
        }
        self.hashes.push(record.hash);
        if let Some(checkpoint) = checkpoint_of_event(&record.event) {
            let bad = |why: String| Broken::BadCheckpoint { line, seq: record.seq, why };
            let checkpoint = checkpoint.map_err(|e| bad(e.to_string()))?;
            if checkpoint.seq >= record.seq {
                return Err(bad(format!("it signs record {}, not one before it", checkpoint.seq)));
            }
            self.in_chain(&checkpoint).map_err(|e| bad(e.to_string()))?;
        }
        Ok(())
    }

    /// A checkpoint entered in the chain: signed by the key, and matching
    /// the record it signed when the export holds it.
    fn in_chain(&mut self, checkpoint: &Checkpoint) -> Result<(), Broken> {
        if let Some(key) = self.key {
            checkpoint.check(key).map_err(|_| Broken::ForeignCheckpoint { seq: checkpoint.seq })?;
        }
        match self.hash_of(checkpoint.seq) {
            Some(hash) if hash == checkpoint.hash => {
                self.checkpoints += 1;
                Ok(())
            }
            Some(_) => Err(Broken::CheckpointMismatch { seq: checkpoint.seq }),
            None => Ok(()), // before this export's first record
        }
    }

    fn end(&mut self, line: usize, first: u64, last_seq: u64, hash: Hash, records: u64) -> Result<(), Broken> {
        let held = self.hashes.len() as u64;
        let mismatch = |why: String| Err(Broken::EndMismatch { line, why });
        if records != held {
            return mismatch(format!("it counts {records} records, the export holds {held}"));
        }
        let records_end = first.saturating_add(held).saturating_sub(1);
        if last_seq != records_end {
            return mismatch(format!("it ends at record {last_seq}, the records at {records_end}"));
        }
        if let Some((_, last_hash)) = self.last() {
            if last_hash != hash {
                return mismatch(format!("its hash is not record {last_seq}'s"));
            }
        }
        self.ended = true;
        Ok(())
    }

    fn external(&mut self, checkpoint: &Checkpoint) -> Result<(), Broken> {
        let last = self.last().map(|(seq, _)| seq).or(self.first_seq.map(|f| f.saturating_sub(1))).unwrap_or(0);
        if let Some(key) = self.key {
            checkpoint.check(key).map_err(|_| Broken::ForeignCheckpoint { seq: checkpoint.seq })?;
        }
        if checkpoint.seq > last {
            return Err(Broken::CutTail { last, signed: checkpoint.seq });
        }
        self.in_chain(checkpoint)
    }
}

/// Verify `records` (in order) against `checkpoints` kept elsewhere,
/// checking signatures with `key` when given: `Ok` when intact, else the
/// first record that is not (edited, removed, inserted, moved) or the
/// checkpoint the chain falls short of (a cut tail).
pub fn verify(records: &[Record], checkpoints: &[Checkpoint], key: Option<&VerifyingKey>) -> Result<Verified, Broken> {
    let mut verifier = Verifier::new(key);
    for record in records {
        verifier.record(record)?;
    }
    verifier.finish(checkpoints)
}
