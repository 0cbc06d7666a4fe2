//! The export format (JSONL, each line in canonical form):
//!
//! ```text
//! {"first_seq":1,"format":"plangate-audit/1","type":"export"}
//! {"event":{…},"hash":"…","prev":"…","seq":1,"type":"record"}
//! …
//! {"hash":"…","last_seq":10000,"records":10000,"type":"end"}
//! ```
//!
//! The header says where the export starts (an export `--since` a time, or
//! of an audit whose oldest records retention pruned, starts after 1), so
//! that removing the first record is caught like removing any other; the
//! end line says where it ends, so a file cut short without it is caught
//! even without a checkpoint (one cut and given a new end line is caught
//! only by a checkpoint: docs/SECURITY.md). Every line must be byte for
//! byte the canonical encoding of what it says: a changed byte anywhere,
//! whitespace included, is a changed record.

use crate::checkpoint::hex_field;
use crate::{canonical, Hash, Record};
use serde_json::{json, Value};

/// The `format` of the header this release writes and reads.
pub const FORMAT: &str = "plangate-audit/1";

/// One line of an export.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Header { first_seq: u64 },
    Record(Record),
    End { last_seq: u64, hash: Hash, records: u64 },
}

impl Line {
    /// The line's canonical text (without its newline).
    pub fn to_line(&self) -> String {
        canonical::to_string(&match self {
            Line::Header { first_seq } => json!({ "first_seq": first_seq, "format": FORMAT, "type": "export" }),
            Line::Record(r) => json!({
                "event": r.event, "hash": hex::encode(r.hash), "prev": hex::encode(r.prev), "seq": r.seq, "type": "record"
            }),
            Line::End { last_seq, hash, records } => {
                json!({ "hash": hex::encode(hash), "last_seq": last_seq, "records": records, "type": "end" })
            }
        })
    }

    /// Read one line; `Err` says why it is not a line of an export.
    pub fn parse(text: &str) -> Result<Line, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
        let line = Self::of_value(&value)?;
        if line.to_line() != text {
            return Err("not in canonical form (a byte was changed)".into());
        }
        Ok(line)
    }

    fn of_value(value: &Value) -> Result<Line, String> {
        let obj = value.as_object().ok_or("not a JSON object")?;
        let u64_of = |key: &str| obj.get(key).and_then(Value::as_u64).ok_or(format!("no {key}"));
        let hash_of = |key: &str| hex_field::<32>(obj.get(key)).ok_or(format!("no 64-hex-digit {key}"));
        match obj.get("type").and_then(Value::as_str) {
            Some("export") => match obj.get("format").and_then(Value::as_str) {
                Some(FORMAT) => Ok(Line::Header { first_seq: u64_of("first_seq")? }),
                other => Err(format!("an export of format {other:?}; this plangate reads {FORMAT}")),
            },
            Some("record") => Ok(Line::Record(Record {
                seq: u64_of("seq")?,
                prev: hash_of("prev")?,
                hash: hash_of("hash")?,
                event: obj.get("event").cloned().ok_or("no event")?,
            })),
            Some("end") => Ok(Line::End { last_seq: u64_of("last_seq")?, hash: hash_of("hash")?, records: u64_of("records")? }),
            other => Err(format!("an unknown line type {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Chain;

    #[test]
    fn every_line_reads_back_as_itself() {
        let record = Chain::genesis().append(json!({"action": "approved", "detail": "ok"}));
        for line in [Line::Header { first_seq: 1 }, Line::Record(record.clone()), Line::End { last_seq: 1, hash: record.hash, records: 1 }]
        {
            assert_eq!(Line::parse(&line.to_line()).unwrap(), line);
        }
    }

    #[test]
    fn a_line_with_a_space_added_or_an_upper_case_digit_is_refused() {
        let record = Chain::genesis().append(json!({"action": "approved"}));
        let text = Line::Record(record).to_line();
        assert!(Line::parse(&text.replacen(':', ": ", 1)).is_err());
        let upper = text.replacen("\"hash\":\"", "\"hash\":\"X", 1);
        assert!(Line::parse(&upper).is_err());
    }
}
