//! The receipt of a decided proposal: one sentence, built once, for its
//! cards, its markdown document and the audit.
//!
//! A card shows `✅ Approved v2 by telegram:@alice · 14:02 UTC`, the document
//! gets `Approved v2 by telegram:@alice at 2026-11-30T14:02:00.000Z`, the
//! audit records `Approved v2 by telegram:@alice`: the same words, because
//! they come from [`Receipt::of`]. Only the mark and the way the time is
//! written differ, and the time always goes right after who decided.

use crate::ids::{humanize_ms, Timestamp};
use crate::model::{DecisionStatus, Proposal};
use crate::text::reveal;

/// The sentence of a decided proposal, split where the time goes:
/// `head` + time + `tail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The card's mark: ✅ ✏️ ⌛ 🔓 ✖ ↪.
    pub mark: &'static str,
    /// What happened and who did it: `Changes requested on v1 by telegram:@alice`.
    pub head: String,
    /// What follows the time: `: split step 2`, `: session halted (read-only)`,
    /// or nothing.
    pub tail: String,
    /// When it was decided, shown on cards. `None` for a superseded proposal:
    /// nobody decided it, the newer version's card tells the rest.
    pub at: Option<Timestamp>,
}

/// What an approval added to a plain yes, after the time: `: except steps
/// 3, 5; note from telegram:@alice: don't touch the migrations`.
fn approval_terms(p: &Proposal) -> String {
    let mut parts = Vec::new();
    if !p.review.excluded.is_empty() && p.edited_plan.is_none() {
        parts.push(format!("except {}", crate::review::step_list(&p.review.excluded)));
    }
    for a in p.deciding_approvals() {
        if let Some(note) = &a.note {
            parts.push(format!("note from {}: {}", a.by, note.replace('\n', " ")));
        }
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join("; "))
    }
}

/// ` (1 of 2 approvals: telegram:@alice)` for a round that ended short of
/// its quorum; nothing when nobody had approved.
fn partial_quorum(p: &Proposal) -> String {
    let best = p.review.tallies().into_iter().max_by_key(Vec::len).unwrap_or_default();
    if best.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = best.iter().map(|a| a.by.as_str()).collect();
    format!(" ({} of {} approvals: {})", best.len(), p.review.required, names.join(", "))
}

/// Why a flagged amendment has no decider.
const FLAGGED: &str = ": let through without a decision ([approvals] amendments = \"flag\"); nobody approved them";

impl Receipt {
    /// The receipt of `p`; `None` while it is pending.
    pub fn of(p: &Proposal) -> Option<Receipt> {
        let v = p.version;
        let by = p.decided_by.as_deref().unwrap_or("someone");
        let at = p.decided_at;
        if let Some(a) = p.amends.as_ref().filter(|a| a.flagged && p.status == DecisionStatus::Approved) {
            let (head, tail) = (format!("v{v}: steps added after approval to v{}", a.of_version), FLAGGED.to_string());
            return Some(Receipt { mark: "⚑", head, tail, at: Some(p.created_at) });
        }
        let (mark, head, tail) = match p.status {
            DecisionStatus::Pending => return None,
            DecisionStatus::Approved => ("✅", format!("Approved v{v} by {by}"), approval_terms(p)),
            DecisionStatus::Edited => ("✅", format!("Approved v{v} with edits by {by}"), approval_terms(p)),
            DecisionStatus::Rejected => {
                let feedback = p.feedback.as_deref().map(|f| format!(": {f}")).unwrap_or_default();
                ("✏️", format!("Changes requested on v{v} by {by}"), feedback)
            }
            DecisionStatus::TimedOut => {
                let waited = at.map(|t| format!(" after {}", humanize_ms(t.0 - p.created_at.0))).unwrap_or_default();
                ("⌛", format!("Timed out v{v}{waited}"), format!(": not approved{}", partial_quorum(p)))
            }
            DecisionStatus::Cancelled if p.released => {
                ("🔓", format!("Released by {by}"), format!(": no plan required (v{v} not approved)"))
            }
            DecisionStatus::Cancelled => ("✖", format!("Cancelled v{v} by {by}"), ": session halted (read-only)".to_string()),
            DecisionStatus::Superseded => {
                let by = p.superseded_by.map(|n| format!("v{n}")).unwrap_or_else(|| "a newer plan".to_string());
                return Some(Receipt { mark: "↪", head: format!("Superseded by {by}"), tail: String::new(), at: None });
            }
        };
        Some(Receipt { mark, head, tail, at })
    }

    /// The sentence without a time, as the audit records it.
    pub fn sentence(&self) -> String {
        format!("{}{}", self.head, self.tail)
    }

    /// The card's line: mark, sentence, `· HH:MM UTC` after who decided.
    /// Names and feedback are agent- or user-written, so hidden characters
    /// are revealed.
    pub fn card_line(&self) -> String {
        let at = self.at.map(|t| format!(" · {} UTC", t.clock())).unwrap_or_default();
        reveal(&format!("{} {}{at}{}", self.mark, self.head, self.tail)).0
    }

    /// The line appended to the plan document: the sentence with the RFC 3339
    /// time of `at` after who decided.
    pub fn document_line(&self, at: Timestamp) -> String {
        format!("{} at {}{}", self.head, at.rfc3339(), self.tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::fixtures::proposed;
    use crate::plan::Plan;

    /// 2026-11-30T14:02:00Z
    const AT: i64 = 1_796_047_320_000;

    /// v2 of "Add retries", proposed 90 minutes before `AT` and decided at `AT`.
    fn decided(status: DecisionStatus) -> Proposal {
        Proposal {
            version: 2,
            status,
            decided_by: Some("telegram:@alice".into()),
            decided_at: Some(Timestamp(AT)),
            ..proposed(Plan::titled("Add retries"), Timestamp(AT - 90 * 60_000))
        }
    }

    /// Every fate: the card line, the document line and the audit sentence
    /// say the same thing, with the time right after who decided.
    #[test]
    fn card_document_and_audit_share_one_sentence() {
        let rejected = Proposal { feedback: Some("split step 2".into()), ..decided(DecisionStatus::Rejected) };
        let released = Proposal { released: true, ..decided(DecisionStatus::Cancelled) };
        let superseded = Proposal { superseded_by: Some(3), ..decided(DecisionStatus::Superseded) };
        let rfc = "2026-11-30T14:02:00.000Z";
        let table: [(Proposal, &str, String, String); 7] = [
            (
                decided(DecisionStatus::Approved),
                "✅ Approved v2 by telegram:@alice · 14:02 UTC",
                format!("Approved v2 by telegram:@alice at {rfc}"),
                "Approved v2 by telegram:@alice".into(),
            ),
            (
                decided(DecisionStatus::Edited),
                "✅ Approved v2 with edits by telegram:@alice · 14:02 UTC",
                format!("Approved v2 with edits by telegram:@alice at {rfc}"),
                "Approved v2 with edits by telegram:@alice".into(),
            ),
            (
                rejected,
                "✏️ Changes requested on v2 by telegram:@alice · 14:02 UTC: split step 2",
                format!("Changes requested on v2 by telegram:@alice at {rfc}: split step 2"),
                "Changes requested on v2 by telegram:@alice: split step 2".into(),
            ),
            (
                decided(DecisionStatus::TimedOut),
                "⌛ Timed out v2 after 1 h 30 min · 14:02 UTC: not approved",
                format!("Timed out v2 after 1 h 30 min at {rfc}: not approved"),
                "Timed out v2 after 1 h 30 min: not approved".into(),
            ),
            (
                released,
                "🔓 Released by telegram:@alice · 14:02 UTC: no plan required (v2 not approved)",
                format!("Released by telegram:@alice at {rfc}: no plan required (v2 not approved)"),
                "Released by telegram:@alice: no plan required (v2 not approved)".into(),
            ),
            (
                decided(DecisionStatus::Cancelled),
                "✖ Cancelled v2 by telegram:@alice · 14:02 UTC: session halted (read-only)",
                format!("Cancelled v2 by telegram:@alice at {rfc}: session halted (read-only)"),
                "Cancelled v2 by telegram:@alice: session halted (read-only)".into(),
            ),
            (superseded, "↪ Superseded by v3", format!("Superseded by v3 at {rfc}"), "Superseded by v3".into()),
        ];
        for (p, card, document, audit) in table {
            let r = Receipt::of(&p).unwrap_or_else(|| panic!("{:?} has a receipt", p.status));
            assert_eq!(r.card_line(), card);
            assert_eq!(r.document_line(Timestamp(AT)), document);
            assert_eq!(r.sentence(), audit);
        }
        assert_eq!(Receipt::of(&decided(DecisionStatus::Pending)), None);
    }

    #[test]
    fn cards_reveal_hidden_characters_documents_keep_the_words() {
        let p = Proposal {
            decided_by: Some("telegram:@al\u{202E}ice".into()),
            feedback: Some("ok\u{200B}".into()),
            ..decided(DecisionStatus::Rejected)
        };
        let r = Receipt::of(&p).unwrap_or_else(|| panic!("rejected has a receipt"));
        assert_eq!(r.card_line(), "✏️ Changes requested on v2 by telegram:@al⟦U+202E⟧ice · 14:02 UTC: ok⟦U+200B⟧");
        assert!(r.sentence().contains('\u{202E}'));
    }
}
