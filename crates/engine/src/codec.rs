//! Button callback data: `pg1:<action>:<id>[:<option>]` (`pg1:m:<id>` is Claim).
//!
//! Fits Telegram's 64 bytes and Discord's 100. Callback data is chosen by the
//! client, so a bad client can send anything: decoding is strict and never
//! panics, and the version tag lets a future format coexist with old cards.

use crate::ids::{ApprovalId, QuestionId};
use thiserror::Error;

/// Telegram's limit, the smallest of the three platforms.
pub const MAX_CALLBACK_BYTES: usize = 64;
const TAG: &str = "pg1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    Approve(ApprovalId),
    /// Approve with a note (ForceReply on Telegram; a modal with a step
    /// picker on Slack and Discord).
    ApproveWithNote(ApprovalId),
    /// Approve the round's edited plan, the one the card shows.
    ApproveEdit(ApprovalId),
    /// Ask for feedback, then revise.
    RequestChanges(ApprovalId),
    /// "I am on it" ([`crate::claim`]).
    Claim(ApprovalId),
    /// First tap of Cancel: asks for confirmation.
    Cancel(ApprovalId),
    /// Second tap: really cancel (the session halts, read-only).
    ConfirmCancel(ApprovalId),
    View(ApprovalId),
    /// Open an edit form (where the platform has modals).
    Edit(ApprovalId),
    /// Pick option `n` (0-based) of a question.
    Answer(QuestionId, u8),
    /// Answer a question with free text.
    AnswerOther(QuestionId),
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown button: {0}")]
pub struct CodecError(pub &'static str);

pub fn encode(button: Button) -> String {
    let (action, id, option) = match button {
        Button::Approve(id) => ("a", id, None),
        Button::ApproveWithNote(id) => ("n", id, None),
        Button::ApproveEdit(id) => ("k", id, None),
        Button::RequestChanges(id) => ("r", id, None),
        Button::Claim(id) => ("m", id, None),
        Button::Cancel(id) => ("c", id, None),
        Button::ConfirmCancel(id) => ("x", id, None),
        Button::View(id) => ("v", id, None),
        Button::Edit(id) => ("e", id, None),
        Button::Answer(id, n) => ("q", id, Some(n)),
        Button::AnswerOther(id) => ("o", id, None),
    };
    match option {
        Some(n) => format!("{TAG}:{action}:{id}:{n}"),
        None => format!("{TAG}:{action}:{id}"),
    }
}

pub fn decode(data: &str) -> Result<Button, CodecError> {
    if data.len() > MAX_CALLBACK_BYTES {
        return Err(CodecError("too long"));
    }
    let mut parts = data.split(':');
    if parts.next() != Some(TAG) {
        return Err(CodecError("unknown version"));
    }
    let action = parts.next().ok_or(CodecError("no action"))?;
    let id = parts.next().and_then(ApprovalId::parse).ok_or(CodecError("bad id"))?;
    let option = parts.next();
    if parts.next().is_some() {
        return Err(CodecError("trailing data"));
    }
    let button = match (action, option) {
        ("a", None) => Button::Approve(id),
        ("n", None) => Button::ApproveWithNote(id),
        ("k", None) => Button::ApproveEdit(id),
        ("r", None) => Button::RequestChanges(id),
        ("m", None) => Button::Claim(id),
        ("c", None) => Button::Cancel(id),
        ("x", None) => Button::ConfirmCancel(id),
        ("v", None) => Button::View(id),
        ("e", None) => Button::Edit(id),
        ("o", None) => Button::AnswerOther(id),
        ("q", Some(n)) => {
            // Strict decimal: no sign, no leading zeros, one digit (so at
            // most `card::MAX_OPTIONS` options get a button).
            if n.len() != 1 || !n.as_bytes()[0].is_ascii_digit() {
                return Err(CodecError("bad option"));
            }
            Button::Answer(id, n.as_bytes()[0] - b'0')
        }
        _ => return Err(CodecError("unknown action")),
    };
    Ok(button)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_and_fit() {
        let id = ApprovalId([0xff; 16]);
        for b in [
            Button::Approve(id),
            Button::ApproveWithNote(id),
            Button::ApproveEdit(id),
            Button::RequestChanges(id),
            Button::Claim(id),
            Button::Cancel(id),
            Button::ConfirmCancel(id),
            Button::View(id),
            Button::Edit(id),
            Button::Answer(id, 9),
            Button::AnswerOther(id),
        ] {
            let data = encode(b);
            assert!(data.len() <= MAX_CALLBACK_BYTES, "{data}");
            assert_eq!(decode(&data), Ok(b));
        }
    }

    #[test]
    fn forged_data_is_refused() {
        let id = "0".repeat(32);
        for bad in [
            String::new(),
            "pg2:a:".to_string() + &id,
            format!("pg1:z:{id}"),
            format!("pg1:a:{id}:1"),
            format!("pg1:m:{id}:1"),
            format!("pg1:m:{}", "0".repeat(31)),
            format!("pg1:q:{id}:10"),
            format!("pg1:q:{id}:-1"),
            format!("pg1:q:{id}"),
            format!("pg1:a:{}", "0".repeat(31)),
            format!("pg1:a:{}", "G".repeat(32)),
            format!("pg1:a:{id}:"),
        ] {
            assert!(decode(&bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn decode_never_panics(s in ".{0,80}") {
            let _ = decode(&s);
        }
    }
}
