//! A decision link's token, its hash and the record the hash points to.
//!
//! A token is 32 random bytes (256 bits) drawn by the caller, written in
//! an email as 64 hex digits. The store keeps only its SHA-256 hash, under
//! [`store_key`], pointing to a [`Link`]: reading the store gives no link
//! that works. A link is used at most once: the server swaps its record
//! for a used one by compare-and-swap before deciding.

use plangate_engine::ApprovalId;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The prefix of every link record's store key.
pub const KEY_PREFIX: &str = "email.link.";

/// What a link decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Approve,
    RequestChanges,
    Cancel,
}

impl Action {
    /// Every action an email offers, in the order its buttons show.
    pub const ALL: [Action; 3] = [Action::Approve, Action::RequestChanges, Action::Cancel];

    /// The button's words (the chat cards' labels).
    pub fn label(self) -> &'static str {
        match self {
            Action::Approve => "Approve",
            Action::RequestChanges => "Request changes",
            Action::Cancel => "Cancel the plan",
        }
    }
}

/// A link's secret: 32 random bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Token([u8; 32]);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// The token of `random` (the caller's 32 random bytes).
    pub fn from_random(random: [u8; 32]) -> Token {
        Token(random)
    }

    /// The token written in a link: exactly 64 hex digits; anything else is none.
    pub fn parse(text: &str) -> Option<Token> {
        let text = text.trim();
        if text.len() != 64 {
            return None;
        }
        let bytes = hex::decode(text).ok()?;
        Some(Token(bytes.try_into().ok()?))
    }

    /// As written in a link (64 lowercase hex digits).
    pub fn encode(&self) -> String {
        hex::encode(self.0)
    }

    /// The SHA-256 of the token's bytes, in hex: what the store keeps.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.0))
    }

    /// The store key of this token's record.
    pub fn store_key(&self) -> String {
        store_key(&self.hash())
    }
}

/// The store key of the record whose token hashes to `hash`.
pub fn store_key(hash: &str) -> String {
    format!("{KEY_PREFIX}{hash}")
}

/// What a link was made for: stored (as JSON) under its token's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub approval_id: ApprovalId,
    /// The plan version the email showed; a link of any other is dead.
    pub version: u32,
    /// Who the link was sent to: the identity approver lists hold (`telegram:111`).
    pub approver: String,
    pub action: Action,
    /// When it was used (ms since the epoch): set by the one POST that
    /// decided through it; a used link is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<i64>,
}

impl Link {
    /// The record as stored.
    pub fn to_record(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored record; `None` when it is not one.
    pub fn from_record(text: &str) -> Option<Link> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_round_trips_and_only_its_hash_names_the_record() {
        let token = Token::from_random([7; 32]);
        let written = token.encode();
        assert_eq!(written.len(), 64);
        assert_eq!(Token::parse(&written), Some(token.clone()));
        assert_eq!(token.hash().len(), 64);
        assert_ne!(token.hash(), written, "the store never holds the token itself");
        assert!(token.store_key().starts_with(KEY_PREFIX) && !token.store_key().contains(&written));
        assert_eq!(format!("{token:?}"), "Token(…)", "never in logs");
    }

    #[test]
    fn anything_but_64_hex_digits_is_no_token() {
        for bad in ["", "abc", &"g".repeat(64), &"a".repeat(63), &"a".repeat(65), "../../etc/passwd"] {
            assert_eq!(Token::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_link_record_round_trips() {
        let link = Link {
            approval_id: ApprovalId([1; 16]),
            version: 2,
            approver: "telegram:111".into(),
            action: Action::RequestChanges,
            used_at: None,
        };
        assert_eq!(Link::from_record(&link.to_record()), Some(link));
        assert_eq!(Link::from_record("not json"), None);
    }
}
