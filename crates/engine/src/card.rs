//! The channel-neutral plan card.
//!
//! Channels only translate a [`Card`] into their own widgets; the words, the
//! order, the receipt and the hidden-character warning are decided here once,
//! so Telegram, Slack and Discord never disagree about what a plan says.

use crate::ids::{humanize_ms, ApprovalId, Timestamp};
use crate::machine::{DecisionStatus, Proposal, State};
use crate::plan::Step;
use crate::text::{reveal, HIDDEN_CHARS_WARNING};

/// A button on an open card. Channels label and encode them; the order is fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardAction {
    Approve,
    RequestChanges,
    Cancel,
    View,
}

impl CardAction {
    pub const ALL: [CardAction; 4] = [CardAction::Approve, CardAction::RequestChanges, CardAction::Cancel, CardAction::View];

    pub fn label(self) -> &'static str {
        match self {
            CardAction::Approve => "Approve",
            CardAction::RequestChanges => "Request changes",
            CardAction::Cancel => "Cancel",
            CardAction::View => "View plan",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardStep {
    pub number: usize,
    pub mark: &'static str,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub approval_id: ApprovalId,
    /// `#a1b2c3`
    pub short_ref: String,
    pub title: String,
    /// `agent/session · v2 · 3 min ago`
    pub context: String,
    pub summary: Option<String>,
    pub steps: Vec<CardStep>,
    pub risks: Vec<String>,
    pub assumptions: Vec<String>,
    pub verification: Vec<String>,
    /// Set when agent-written text contained hidden characters.
    pub warning: Option<String>,
    /// `None` while the card is open (buttons shown); the receipt afterwards.
    pub receipt: Option<String>,
    /// The exact commands a text-style destination shows instead of buttons.
    pub commands: Vec<String>,
    pub version: u32,
    pub status: DecisionStatus,
}

impl Card {
    pub fn is_open(&self) -> bool {
        self.receipt.is_none()
    }
}

/// The receipt line of a decided proposal, e.g. `✅ Approved v2 by telegram:@alice · 14:02 UTC`.
pub fn receipt(p: &Proposal) -> Option<String> {
    let v = p.version;
    let by = p.decided_by.as_deref().unwrap_or("someone");
    let at = p.decided_at.map(|t| format!(" · {} UTC", t.clock())).unwrap_or_default();
    let (by, _) = reveal(by);
    Some(match p.status {
        DecisionStatus::Pending => return None,
        DecisionStatus::Approved => format!("✅ Approved v{v} by {by}{at}"),
        DecisionStatus::Edited => format!("✅ Approved v{v} with edits by {by}{at}"),
        DecisionStatus::Rejected => {
            let feedback = p.feedback.as_deref().map(|f| format!(": {}", reveal(f).0)).unwrap_or_default();
            format!("✏️ Changes requested on v{v} by {by}{at}{feedback}")
        }
        DecisionStatus::TimedOut => format!("⌛ Timed out v{v}{at}: not approved"),
        DecisionStatus::Cancelled if p.released => format!("🔓 Released by {by}{at}: no plan required (v{v} not approved)"),
        DecisionStatus::Cancelled => format!("✖ Cancelled v{v} by {by}{at} · session halted (read-only)"),
        DecisionStatus::Superseded => {
            format!("↪ Superseded by v{}", p.superseded_by.map(|n| n.to_string()).unwrap_or_else(|| "a newer plan".into()))
        }
    })
}

/// Build the card of `proposal` as of `now`. When the proposal is the
/// session's latest and approved, `state` supplies live step progress.
pub fn card(proposal: &Proposal, state: Option<&State>, now: Timestamp) -> Card {
    let mut hidden = false;
    let mut show = |s: &str| {
        let (text, h) = reveal(s.trim());
        hidden |= h;
        text
    };
    let plan = proposal.edited_plan.as_ref().unwrap_or(&proposal.plan);
    let live: &[Step] = match state {
        Some(st)
            if st.session.latest_approval == Some(proposal.approval_id)
                && matches!(proposal.status, DecisionStatus::Approved | DecisionStatus::Edited) =>
        {
            &st.session.steps
        }
        _ => &plan.steps,
    };
    let title = show(&plan.title);
    let agent = show(&proposal.session.agent);
    let session = show(&proposal.session.session_id);
    let context = format!(
        "{agent}/{session} · v{} · {}",
        proposal.version,
        match humanize_ms(now.0 - proposal.created_at.0).as_str() {
            "just now" => "just now".to_string(),
            age => format!("{age} ago"),
        }
    );
    let summary = plan.summary.as_deref().map(&mut show).filter(|s| !s.is_empty());
    let steps = live.iter().enumerate().map(|(i, s)| CardStep { number: i + 1, mark: s.status.mark(), text: show(&s.step) }).collect();
    let risks = plan.risks.iter().map(|s| show(s)).collect();
    let assumptions = plan.assumptions.iter().map(|s| show(s)).collect();
    let verification = plan.verification.iter().map(|s| show(s)).collect();
    let short_ref = crate::view::short_ref(&proposal.approval_id);
    let receipt = receipt(proposal);
    let commands = if receipt.is_none() {
        vec![
            format!("/plan accept {short_ref}"),
            format!("/plan revise {short_ref} <what to change>"),
            format!("/plan cancel {short_ref}"),
            format!("/plan view {short_ref}"),
        ]
    } else {
        Vec::new()
    };
    Card {
        approval_id: proposal.approval_id,
        short_ref,
        title,
        context,
        summary,
        steps,
        risks,
        assumptions,
        verification,
        warning: hidden.then(|| HIDDEN_CHARS_WARNING.to_string()),
        receipt,
        commands,
        version: proposal.version,
        status: proposal.status,
    }
}

/// Plain-text rendering, used by text-style destinations, the CLI and as the
/// base every channel escapes for its own markup. `text_commands` appends the
/// commands to type instead of buttons.
pub fn render_text(card: &Card, text_commands: bool) -> String {
    let mut out = String::new();
    if let Some(w) = &card.warning {
        out.push_str(w);
        out.push_str("\n\n");
    }
    out.push_str(&format!("📋 {}\n{} · {}\n", card.title, card.context, card.short_ref));
    if let Some(s) = &card.summary {
        out.push_str(&format!("\n{s}\n"));
    }
    if !card.steps.is_empty() {
        out.push_str("\nSteps\n");
        for s in &card.steps {
            out.push_str(&format!("{}. {} {}\n", s.number, s.mark, s.text));
        }
    }
    for (heading, items) in [("Risks", &card.risks), ("Assumptions", &card.assumptions), ("Verification", &card.verification)] {
        if !items.is_empty() {
            out.push_str(&format!("\n{heading}\n"));
            for item in items.iter() {
                out.push_str(&format!("• {item}\n"));
            }
        }
    }
    if let Some(r) = &card.receipt {
        out.push_str(&format!("\n{r}\n"));
    } else if text_commands {
        out.push_str("\nReply with one of:\n");
        for c in &card.commands {
            out.push_str(&format!("{c}\n"));
        }
    }
    out
}

/// The reminder line for the n-th nudge, e.g.
/// `⏰ Plan 'X' v2 has waited 30 min for your approval (#a1b2c3, reminder 2)`.
pub fn nudge_text(proposal: &Proposal, number: u8, now: Timestamp) -> String {
    let (title, _) = reveal(proposal.plan.title.trim());
    let waited = match humanize_ms(now.0 - proposal.created_at.0).as_str() {
        "just now" => "under a minute".to_string(),
        other => other.to_string(),
    };
    format!(
        "⏰ Plan '{title}' v{} has waited {waited} for your approval ({}, reminder {number})",
        proposal.version,
        crate::view::short_ref(&proposal.approval_id)
    )
}

/// The file name of a proposal's attached document, e.g. `plan-add-retries-v2.md`.
pub fn document_file_name(proposal: &Proposal) -> String {
    format!("plan-{}-v{}.md", slug(&proposal.plan.title), proposal.version)
}

/// A file-name-safe slug: lowercase ASCII alphanumerics and single dashes,
/// at most 48 characters, never empty, never `.` or `..`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "plan".to_string()
    } else {
        out
    }
}
