//! What a push carries, and what its id stands for.
//!
//! A push body is `{"n":"<64 hex digits>"}` and nothing else: a note id,
//! 32 random bytes the server draws per push. The store keeps only the
//! id's SHA-256 (under [`store_key`]), pointing to a [`Note`]: which
//! approval and version, for which approver, until when. The service
//! worker exchanges the id for the card over the page, with the
//! approver's session; a note of another approver, of a plan decided or
//! superseded since, or past its expiry opens nothing.

use plangate_engine::{ApprovalId, Proposal};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The prefix of every note's store key.
pub const KEY_PREFIX: &str = "push.note.";

/// A note id: 32 random bytes, written as 64 hex digits.
#[derive(Clone, PartialEq, Eq)]
pub struct NoteId([u8; 32]);

impl std::fmt::Debug for NoteId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoteId(…)")
    }
}

impl NoteId {
    /// The id of `random` (the caller's 32 random bytes).
    pub fn from_random(random: [u8; 32]) -> NoteId {
        NoteId(random)
    }

    /// An id as written: exactly 64 hex digits; anything else is none.
    pub fn parse(text: &str) -> Option<NoteId> {
        (text.len() == 64).then_some(())?;
        Some(NoteId(hex::decode(text).ok()?.try_into().ok()?))
    }

    pub fn encode(&self) -> String {
        hex::encode(self.0)
    }

    /// The store key of this id's note: its hash, never the id.
    pub fn store_key(&self) -> String {
        format!("{KEY_PREFIX}{}", hex::encode(Sha256::digest(self.0)))
    }

    /// The push body carrying it: nothing else.
    pub fn body(&self) -> Vec<u8> {
        serde_json::json!({ "n": self.encode() }).to_string().into_bytes()
    }
}

/// What a note id stands for: stored (as JSON) under its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub approval_id: ApprovalId,
    pub version: u32,
    /// Who it was pushed to: only their session opens it.
    pub approver: String,
    /// After this (ms since the epoch) it opens nothing.
    pub expires_at: i64,
}

impl Note {
    pub fn to_record(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_record(text: &str) -> Option<Note> {
        serde_json::from_str(text).ok()
    }
}

/// What a notification shows and offers, answered to the service worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offer {
    /// The plan's title and version (`Add retries v2`).
    pub title: String,
    /// A few words on its risk (`routine`, `declares db.drop`, …).
    pub risk: String,
    /// The notification's buttons, by action name: `approve`,
    /// `request_changes` and `open` when one tap may decide, else `open`.
    pub actions: Vec<&'static str>,
    /// The plan page, for Open and a tap on the notification itself.
    pub url: String,
}

/// Whether a tap on a notification may decide `p`: one approver is
/// enough, no passkey is asked, and the plan declares no risk class. Any
/// other plan opens the page, where its policy's steps are shown.
pub fn one_tap(p: &Proposal) -> bool {
    tap_decides(p.review.required, p.review.step_up, &p.plan.allows)
}

/// [`one_tap`] over the three things it reads.
fn tap_decides<C>(required: u32, step_up: bool, classes: &[C]) -> bool {
    required <= 1 && !step_up && classes.is_empty()
}

/// A few words on a plan's risk: its declared classes, a passkey, a quorum.
fn risk_words<C: std::fmt::Display>(required: u32, step_up: bool, classes: &[C]) -> String {
    let mut risk = Vec::new();
    if !classes.is_empty() {
        let classes: Vec<String> = classes.iter().map(ToString::to_string).collect();
        risk.push(format!("declares {}", classes.join(", ")));
    }
    if step_up {
        risk.push("passkey required".to_string());
    }
    if required > 1 {
        risk.push(format!("{required} approvers needed"));
    }
    if risk.is_empty() {
        "routine".to_string()
    } else {
        risk.join("; ")
    }
}

/// The notification of `p` (at `url`).
pub fn offer(p: &Proposal, url: String) -> Offer {
    let (required, step_up, classes) = (p.review.required, p.review.step_up, &p.plan.allows);
    let actions = if one_tap(p) { vec!["approve", "request_changes", "open"] } else { vec!["open"] };
    Offer { title: format!("{} v{}", p.plan.title, p.version), risk: risk_words(required, step_up, classes), actions, url }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_round_trips_and_only_its_hash_names_the_record() {
        let id = NoteId::from_random([3; 32]);
        assert_eq!(NoteId::parse(&id.encode()), Some(id.clone()));
        assert!(id.store_key().starts_with(KEY_PREFIX) && !id.store_key().contains(&id.encode()));
        assert_eq!(format!("{id:?}"), "NoteId(…)");
        for bad in ["", "0", &"g".repeat(64), &"a".repeat(65), "../../x"] {
            assert_eq!(NoteId::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_body_holds_the_id_and_nothing_else() {
        let id = NoteId::from_random([4; 32]);
        let body: serde_json::Value = serde_json::from_slice(&id.body()).expect("json");
        assert_eq!(body, serde_json::json!({ "n": id.encode() }));
    }

    #[test]
    fn only_a_plan_one_approver_decides_without_passkey_or_risk_class_takes_one_tap() {
        let none: [&str; 0] = [];
        assert!(tap_decides(1, false, &none));
        assert_eq!(risk_words(1, false, &none), "routine");
        assert!(!tap_decides(2, false, &none), "a quorum");
        assert!(!tap_decides(1, true, &none), "a passkey step-up");
        assert!(!tap_decides(1, false, &["db.drop"]), "a declared risk class");
        assert_eq!(risk_words(3, true, &["db.drop", "git.rewrite"]), "declares db.drop, git.rewrite; passkey required; 3 approvers needed");
    }

    #[test]
    fn a_note_record_round_trips() {
        let note = Note { approval_id: ApprovalId([2; 16]), version: 3, approver: "telegram:1".into(), expires_at: 9 };
        assert_eq!(Note::from_record(&note.to_record()), Some(note));
        assert_eq!(Note::from_record("{}"), None);
    }
}
