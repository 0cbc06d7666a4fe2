//! Identifiers and time, as plain values.
//!
//! The engine never reads a clock or an RNG: the shell passes `now` and random
//! bytes in, which is what makes every transition reproducible in tests.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Milliseconds since the Unix epoch (UTC). Wall-clock, because due times
/// must survive restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// This instant plus `ms` milliseconds (saturating, never panics).
    pub fn plus_ms(self, ms: u64) -> Timestamp {
        Timestamp(self.0.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)))
    }

    /// RFC 3339 text with millisecond precision, e.g. `2026-11-30T14:02:00.000Z`.
    pub fn rfc3339(self) -> String {
        let millis = u64::try_from(self.0).unwrap_or(0);
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(millis);
        humantime::format_rfc3339_millis(time).to_string()
    }

    /// `HH:MM` UTC, for receipts on a phone screen.
    pub fn clock(self) -> String {
        let secs_of_day = self.0.div_euclid(1000).rem_euclid(86_400);
        format!("{:02}:{:02}", secs_of_day / 3600, (secs_of_day % 3600) / 60)
    }
}

/// A short human phrase for a duration: "just now", "3 min", "2 h 5 min", "3 d".
pub fn humanize_ms(ms: i64) -> String {
    let minutes = ms.max(0) / 60_000;
    match minutes {
        0 => "just now".to_string(),
        1..=59 => format!("{minutes} min"),
        60..=1439 if minutes % 60 == 0 => format!("{} h", minutes / 60),
        60..=1439 => format!("{} h {} min", minutes / 60, minutes % 60),
        _ => format!("{} d", minutes / 1440),
    }
}

/// An approval id: 128 random bits, shown as 32 lowercase hex characters.
///
/// Every proposal gets a fresh one, so a click on an old card can never
/// decide a newer plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApprovalId(pub [u8; 16]);

impl ApprovalId {
    /// Parse the 32-hex-character text form.
    pub fn parse(text: &str) -> Option<ApprovalId> {
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
            return None;
        }
        let mut bytes = [0u8; 16];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(ApprovalId(bytes))
    }

    /// The first six hex characters: what people type after `#`.
    pub fn short(&self) -> String {
        hex::encode(&self.0[..3])
    }
}

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl Serialize for ApprovalId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ApprovalId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ApprovalId::parse(&text).ok_or_else(|| serde::de::Error::custom("approval id must be 32 lowercase hex characters"))
    }
}

/// A question id; same shape and guarantees as an [`ApprovalId`].
pub type QuestionId = ApprovalId;

/// The key of a session: an agent (from its token, never from a request) and
/// the agent's own session id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionKey {
    pub agent: String,
    pub session_id: String,
}

impl SessionKey {
    pub fn new(agent: impl Into<String>, session_id: impl Into<String>) -> Self {
        SessionKey { agent: agent.into(), session_id: session_id.into() }
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.agent, self.session_id)
    }
}

/// Whether `id` is a valid session id: 1–128 characters of `[A-Za-z0-9._:-]`.
pub fn is_valid_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

/// Whether `id` is a valid agent id (config keys): 1–64 of `[A-Za-z0-9_-]`.
pub fn is_valid_agent_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_id_round_trips_and_rejects_junk() {
        let id = ApprovalId([0xab; 16]);
        assert_eq!(ApprovalId::parse(&id.to_string()), Some(id));
        assert_eq!(id.short(), "ababab");
        assert_eq!(ApprovalId::parse("AB"), None);
        assert_eq!(ApprovalId::parse(&"A".repeat(32)), None);
        assert_eq!(ApprovalId::parse(&"g".repeat(32)), None);
    }

    #[test]
    fn session_ids() {
        assert!(is_valid_session_id("abc-1.2:3_x"));
        assert!(!is_valid_session_id(""));
        assert!(!is_valid_session_id("a/b"));
        assert!(!is_valid_session_id(&"a".repeat(129)));
        assert!(is_valid_session_id(&"a".repeat(128)));
    }

    #[test]
    fn time_text() {
        assert_eq!(Timestamp(0).rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp(14 * 3_600_000 + 2 * 60_000).clock(), "14:02");
        assert_eq!(humanize_ms(3 * 60_000 + 5), "3 min");
        assert_eq!(humanize_ms(125 * 60_000), "2 h 5 min");
    }
}
