//! The channel-neutral plan card.
//!
//! Channels only translate a [`Card`] into their own widgets; the words, the
//! order, the receipt and the hidden-character warning are decided here once,
//! so Telegram, Slack and Discord never disagree about what a plan says.
//!
//! The skeleton every channel renders is here too: the list sections in
//! their order ([`Card::sections`]), the commands a text-style card shows
//! ([`REPLY_WITH`], [`Card::reply_commands`]), the note a cut card ends with
//! ([`CUT_NOTE`]) and the rule for cutting ([`fit_lines`]), and how many
//! options of a question get a button ([`MAX_OPTIONS`], [`option_buttons`]).
//! An adapter decides only markup, escaping and its platform's limits.

use crate::codec::Button;
use crate::ids::{humanize_ms, ApprovalId, Timestamp};
use crate::model::{DecisionStatus, Proposal, Question, State};
use crate::plan::{Step, StepStatus};
use crate::receipt::Receipt;
use crate::text::{reveal, HIDDEN_CHARS_WARNING};

pub use crate::text::{fit_lines, whole_lines, Fit};

/// What a card cut to fit a platform's limits says where it was cut; the
/// attached document always carries the whole plan.
pub const CUT_NOTE: &str = "… full plan in the attached document";

/// The line above the commands a text-style card (and its reminders) shows
/// instead of buttons.
pub const REPLY_WITH: &str = "Reply with one of:";

/// How many options of a question get a button: the button codec carries the
/// option as one decimal digit. The engine refuses questions with more.
pub const MAX_OPTIONS: usize = 10;

/// The heading of the section listing open subagent runs: approval waits
/// for them, and a person can clear them.
pub const SUBAGENTS_HEADING: &str = "Open subagents (approval waits for them; /plan subagents clear)";

/// A button on an open card. Channels label and encode them; the order is
/// fixed ([`Card::actions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardAction {
    Approve,
    /// Approve with a note (and, where the platform has forms, except some
    /// steps): a ForceReply on Telegram, a modal on Slack and Discord.
    ApproveWithNote,
    /// Approve the round's edited plan, shown on the card (only while one
    /// awaits approval).
    ApproveEdit,
    RequestChanges,
    /// "I am on it": the others' reminders wait ([`crate::claim`]).
    Claim,
    Cancel,
    View,
}

impl CardAction {
    /// The buttons of every open card, in order.
    pub const ALL: [CardAction; 6] = [
        CardAction::Approve,
        CardAction::ApproveWithNote,
        CardAction::RequestChanges,
        CardAction::Claim,
        CardAction::Cancel,
        CardAction::View,
    ];

    pub fn label(self) -> &'static str {
        match self {
            CardAction::Approve => "Approve",
            CardAction::ApproveWithNote => "Approve with note…",
            CardAction::ApproveEdit => "Approve edit",
            CardAction::RequestChanges => "Request changes",
            CardAction::Claim => "Claim",
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
    /// `agent/session · v2 · 3 min ago`, after the project when the agent
    /// said where it runs (`📁 billing-api · main · dev-laptop — …`).
    pub context: String,
    pub summary: Option<String>,
    pub steps: Vec<CardStep>,
    pub risks: Vec<String>,
    pub assumptions: Vec<String>,
    pub verification: Vec<String>,
    /// While the card is open: the subagent runs approval waits for
    /// ([`crate::subagents::describe`]), each a line.
    pub subagents: Vec<String>,
    /// While the card is open and the round needs more than one approver (or
    /// has approvals): one line per approved content, e.g. `1 of 2 · ✅
    /// telegram:@alice`. While someone's claim holds, it comes first:
    /// `🙋 Claimed by telegram:@alice until 14:32 UTC` ([`crate::claim`]), so
    /// every channel shows it where a cut never hides it.
    pub progress: Vec<String>,
    /// The edited plan of the round awaiting the others' approval: who
    /// edited it and its steps.
    pub edit: Option<(String, Vec<String>)>,
    /// For a re-proposal: `since v1: +2 steps, −1, 1 changed: …`.
    pub changes: Option<String>,
    /// Steps the approval left out, with their numbers in the proposal.
    pub excluded: Vec<(usize, String)>,
    /// Set when agent-written text contained hidden characters.
    pub warning: Option<String>,
    /// While the card is open and the agent stopped waiting for it: where
    /// the decision goes now (see [`agent_left_line`]).
    pub agent: Vec<String>,
    /// `None` while the card is open (buttons shown); the receipt afterwards.
    pub receipt: Option<String>,
    /// Once the approved plan ended: what ran under it, the summary line
    /// first ([`crate::ran::Ran::card_lines`]).
    pub ran: Vec<String>,
    /// The exact commands a text-style destination shows instead of buttons.
    pub commands: Vec<String>,
    pub version: u32,
    pub status: DecisionStatus,
    /// "Open in browser": the plan's read-only page, when the server has a
    /// public URL (`server.public_url`). Set by the server, not by [`card`].
    pub link: Option<String>,
}

/// What the card's web link says.
pub const OPEN_IN_BROWSER: &str = "Open in browser";

/// How a section lists its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionKind {
    /// Numbered, with a status mark: `3. ◐ Add backoff`.
    Steps,
    /// Bulleted: `• flaky tests`.
    Bullets,
}

/// One list section of a card, in [`Card::sections`]' order: Approvals,
/// What changed, Steps, the edited plan, Excluded, Risks, Assumptions,
/// Verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<'a> {
    pub heading: &'static str,
    pub kind: SectionKind,
    pub entries: Vec<Entry<'a>>,
}

/// One entry of a section: what goes before it (`3. ◐`, `•`) and its text.
/// The text is agent-written: channels escape it, never the marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub marker: String,
    pub text: &'a str,
}

impl Entry<'_> {
    /// `marker text`, unescaped.
    pub fn line(&self) -> String {
        format!("{} {}", self.marker, self.text)
    }
}

impl Card {
    pub fn is_open(&self) -> bool {
        self.receipt.is_none()
    }

    /// The card's non-empty list sections, in the order every channel shows
    /// them: Approvals (the quorum's progress, first so a cut never hides
    /// it), What changed, Steps, what Ran under the approval once it ended,
    /// the edited plan awaiting approval, Excluded,
    /// Risks, Assumptions, Verification, and (while approval waits for them)
    /// the open subagent runs.
    pub fn sections<'s>(&'s self) -> Vec<Section<'s>> {
        let bullets = |heading: &'static str, items: &'s Vec<String>| Section {
            heading,
            kind: SectionKind::Bullets,
            entries: items.iter().map(|i| Entry { marker: "•".to_string(), text: i }).collect(),
        };
        let progress = bullets("Approvals", &self.progress);
        let agent = Section {
            heading: AGENT_HEADING,
            kind: SectionKind::Bullets,
            entries: self.agent.iter().map(|i| Entry { marker: "⏸".to_string(), text: i }).collect(),
        };
        let changes = Section {
            heading: "What changed",
            kind: SectionKind::Bullets,
            entries: self.changes.iter().map(|c| Entry { marker: "•".to_string(), text: c }).collect(),
        };
        let steps = Section {
            heading: "Steps",
            kind: SectionKind::Steps,
            entries: self.steps.iter().map(|s| Entry { marker: format!("{}. {}", s.number, s.mark), text: &s.text }).collect(),
        };
        let edit = Section {
            heading: "Edited plan (awaiting approval)",
            kind: SectionKind::Steps,
            entries: self
                .edit
                .iter()
                .flat_map(|(_, steps)| steps.iter().enumerate())
                .map(|(i, text)| Entry { marker: format!("{}. ✎", i + 1), text })
                .collect(),
        };
        let excluded = Section {
            heading: "Excluded (not approved)",
            kind: SectionKind::Steps,
            entries: self.excluded.iter().map(|(n, text)| Entry { marker: format!("{n}. ⊘"), text }).collect(),
        };
        let ran = Section {
            heading: RAN_HEADING,
            kind: SectionKind::Bullets,
            entries: self.ran.iter().map(|i| Entry { marker: "•".to_string(), text: i }).collect(),
        };
        let subagents = Section {
            heading: SUBAGENTS_HEADING,
            kind: SectionKind::Bullets,
            entries: self.subagents.iter().map(|i| Entry { marker: "⏳".to_string(), text: i }).collect(),
        };
        [
            progress,
            agent,
            changes,
            steps,
            ran,
            edit,
            excluded,
            bullets("Risks", &self.risks),
            bullets("Assumptions", &self.assumptions),
            bullets("Verification", &self.verification),
            subagents,
        ]
        .into_iter()
        .filter(|s| !s.entries.is_empty())
        .collect()
    }

    /// The buttons of this card while it is open: [`CardAction::ALL`], with
    /// *Approve edit* after *Approve* while an edited plan awaits approval.
    /// Empty once it is decided.
    pub fn actions(&self) -> Vec<CardAction> {
        if !self.is_open() {
            return Vec::new();
        }
        let mut actions = CardAction::ALL.to_vec();
        if self.edit.is_some() {
            actions.insert(1, CardAction::ApproveEdit);
        }
        actions
    }

    /// The commands a text-style destination shows under [`REPLY_WITH`]
    /// while the card is open; `None` once it is decided.
    pub fn reply_commands(&self) -> Option<&[String]> {
        (self.is_open() && !self.commands.is_empty()).then_some(self.commands.as_slice())
    }
}

/// The receipt line of a decided proposal, e.g. `✅ Approved v2 by
/// telegram:@alice · 14:02 UTC`: the [`Receipt`] its document and audit
/// share, with the card's mark and clock.
pub fn receipt(p: &Proposal) -> Option<String> {
    Receipt::of(p).map(|r| r.card_line())
}

/// The option buttons of a question: at most [`MAX_OPTIONS`], each with the
/// callback that picks it.
pub fn option_buttons(q: &Question) -> impl Iterator<Item = (Button, &str)> {
    (0..=u8::MAX).zip(&q.options).take(MAX_OPTIONS).map(|(i, option)| (Button::Answer(q.question_id, i), option.as_str()))
}

/// A question card's icon and title: an agent's question, or a permission
/// request naming the tool ([`crate::permission`]).
pub fn question_title(q: &Question) -> (&'static str, String) {
    match (&q.permission, q.stalled) {
        (Some(p), _) => ("🔐 ", format!("Permission request from {}: {}", q.session, p.tool)),
        (None, Some(_)) => ("⏸ ", format!("Stalled: {} stopped with the approved plan open", q.session)),
        (None, None) => ("❓ ", format!("Question from {}", q.session)),
    }
}

/// The label of the free-text button: for a permission request, free text
/// is the reason of a deny.
pub fn other_label(q: &Question) -> &'static str {
    if q.permission.is_some() {
        "Deny with a reason…"
    } else {
        "Other…"
    }
}

/// How a closed question's card says what became of it (`None` while it
/// waits): who answered what, or why a permission request expired.
pub fn question_outcome(q: &Question) -> Option<String> {
    use crate::model::QuestionStatus;
    use crate::permission::{PermissionAnswer, PermissionOutcome};
    let by = q.answered_by.as_deref().unwrap_or("someone");
    let outcome = q.permission.as_ref().and_then(|p| p.outcome.as_ref());
    match (q.status, outcome) {
        (QuestionStatus::Pending, _) => None,
        (_, Some(PermissionOutcome::Expired { why })) => Some(format!("⌛ Expired: {why}.")),
        (QuestionStatus::Expired, None) if q.stalled.is_some() => {
            Some(format!("⌛ Expired: {}.", q.answer.as_deref().unwrap_or("nothing to decide")))
        }
        (QuestionStatus::Expired, None) => Some("⌛ Expired.".to_string()),
        (QuestionStatus::Answered, None) if q.stalled.is_some() => Some(match q.answer.as_deref() {
            Some(crate::keep_going::DONE) => format!("⏹ Ended here by {by}: the open steps are cancelled"),
            _ => format!("▶️ Continue, by {by}: the agent goes on when it resumes"),
        }),
        (_, Some(PermissionOutcome::Answered { answer: answer @ PermissionAnswer::Deny { .. } })) => {
            Some(format!("⛔ {} by {by}", capitalized(&answer.said())))
        }
        (_, Some(PermissionOutcome::Answered { answer })) => Some(format!("✅ {} by {by}", capitalized(&answer.said()))),
        (QuestionStatus::Answered, None) => Some(format!("✅ Answered by {by}: {}", q.answer.as_deref().unwrap_or("(no text)"))),
    }
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// What to type to answer in a text-style chat.
pub fn question_reply_hint(q: &Question) -> String {
    match (&q.permission, q.stalled) {
        (Some(_), _) => format!("Reply with /plan allow {0} once|session|always, or /plan deny {0} <reason>", q.session),
        (None, Some(_)) => format!("Reply with /plan answer {} Continue, or /plan answer {} Done", q.session, q.session),
        (None, None) => format!("Reply with /plan answer {} <your answer>", q.session),
    }
}

/// Whether `proposal`'s card shows `state`'s live step list: it is the
/// session's latest version and approved.
fn is_live(proposal: &Proposal, state: &State) -> bool {
    state.session.latest_approval == Some(proposal.approval_id)
        && matches!(proposal.status, DecisionStatus::Approved | DecisionStatus::Edited)
}

/// Honest cards: steps added after approval are marked, and a list never
/// shows a step the deciders did not see as if they approved it. The card
/// and the web page mark steps through this one rule.
pub struct AddedMarks {
    approved: Vec<String>,
    /// Asked for by this amendment (decided or not: its card says which).
    asked: Vec<String>,
    /// Let through under `amendments = "flag"`, by this proposal or, on a
    /// live list, by any batch since the approval.
    flagged: Vec<String>,
}

impl AddedMarks {
    pub fn of(proposal: &Proposal, state: Option<&State>) -> AddedMarks {
        let texts = crate::amendment::texts;
        let (asked, mut flagged) = match &proposal.amends {
            Some(a) if a.flagged => (Vec::new(), texts(&a.added)),
            Some(a) => (texts(&a.added), Vec::new()),
            None => (Vec::new(), Vec::new()),
        };
        if let Some(st) = state.filter(|st| is_live(proposal, st)) {
            flagged.extend(st.session.flagged_steps.iter().cloned());
        }
        AddedMarks { approved: texts(&proposal.approved_plan().steps), asked, flagged }
    }

    /// `None` for a step the deciders approved; otherwise what follows the
    /// step's text after a `+` (nothing for a step its amendment asks for).
    pub fn of_step(&self, step: &Step) -> Option<&'static str> {
        let text = step.step.trim().to_string();
        if self.flagged.contains(&text) {
            Some(" (added after approval)")
        } else if self.asked.contains(&text) {
            Some("")
        } else if self.approved.contains(&text) {
            None
        } else {
            Some(" (added after approval, not approved)")
        }
    }
}

/// The lines under a card's title: what a scope widening asks for
/// ("Claude wants to edit src/payments/charge.rs, outside src/api/**"), the
/// plan's summary, and what it touches ("Touches: src/api/**, tests/**").
fn summary_lines(proposal: &Proposal, plan: &crate::plan::Plan, state: Option<&State>) -> Vec<String> {
    let mut lines = Vec::new();
    let scope: &[String] = plan.scope.as_ref().map_or(&[], |s| &s.paths);
    if let Some(a) = proposal.amends.as_ref().filter(|a| !a.widen.is_empty()) {
        let who = match state.map(|st| st.session.harness) {
            Some(crate::Harness::ClaudeCode) => "Claude",
            Some(crate::Harness::Codex) => "Codex",
            _ => proposal.session.agent.as_str(),
        };
        let asked: Vec<String> = a.widen.iter().map(|p| crate::scope::literal(p)).collect();
        let before: Vec<&str> = scope.iter().filter(|g| !asked.contains(g)).map(String::as_str).collect();
        lines.push(format!("{who} wants to edit {}, outside {}", a.widen.join(", "), before.join(", ")));
    }
    lines.extend(plan.summary.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string));
    if !scope.is_empty() {
        lines.push(format!("Touches: {}", scope.join(", ")));
    }
    if !plan.allows.is_empty() {
        let allows: Vec<String> = plan.allows.iter().map(|c| format!("{} ({})", c.id(), c.says())).collect();
        lines.push(format!("⚠️ Allows: {}", allows.join(" · ")));
    }
    lines
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
        Some(st) if is_live(proposal, st) => &st.session.steps,
        _ => &plan.steps,
    };
    // An amendment says so, so nobody mistakes it for the plan it extends.
    let title = match &proposal.amends {
        Some(a) => show(&format!("Amendment to v{}: {}", a.of_version, plan.title)),
        None => show(&plan.title),
    };
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
    let summary = summary_lines(proposal, plan, state);
    let summary = (!summary.is_empty()).then(|| show(&summary.join("\n")));
    // The step in progress reads as what is happening ("Running the tests"),
    // when the agent gave that form.
    let step_text = |s: &Step| match (&s.status, s.active_form.as_deref().map(str::trim)) {
        (StepStatus::InProgress, Some(form)) if !form.is_empty() => form.to_string(),
        _ => s.step.clone(),
    };
    let marks = AddedMarks::of(proposal, state);
    let marked = |s: &Step| match marks.of_step(s) {
        Some(note) => format!("+ {}{note}", step_text(s)),
        None => step_text(s),
    };
    let steps = live.iter().enumerate().map(|(i, s)| CardStep { number: i + 1, mark: s.status.mark(), text: show(&marked(s)) }).collect();
    let risks = plan.risks.iter().map(|s| show(s)).collect();
    let assumptions = plan.assumptions.iter().map(|s| show(s)).collect();
    let verification = plan.verification.iter().map(|s| show(s)).collect();
    let short_ref = crate::view::short_ref(&proposal.approval_id);
    let receipt = receipt(proposal);
    let subagents: Vec<String> = match state {
        Some(st) if receipt.is_none() && st.session.latest_approval == Some(proposal.approval_id) => {
            crate::subagents::describe(st, now).iter().map(|line| show(line)).collect()
        }
        _ => Vec::new(),
    };
    let ran = proposal.what_ran(state).iter().flat_map(|r| r.card_lines()).map(|l| show(&l)).collect();
    let review = &proposal.review;
    let open = receipt.is_none();
    let edit = review.edit.as_ref().filter(|_| open).map(|e| (show(&e.by), e.plan.steps.iter().map(|s| show(&s.step)).collect::<Vec<_>>()));
    let mut commands = Vec::new();
    if open {
        commands.push(format!("/plan accept {short_ref}"));
        if edit.is_some() {
            commands.push(format!("/plan accept {short_ref} edited"));
        }
        commands.extend([
            format!("/plan accept {short_ref} except <step numbers> -- <note>"),
            format!("/plan changes {short_ref} <what to change>"),
            format!("/plan claim {short_ref}"),
            format!("/plan cancel {short_ref}"),
            format!("/plan view {short_ref}"),
        ]);
        if !subagents.is_empty() {
            commands.push(format!("/plan subagents clear {short_ref}"));
        }
    }
    let mut progress: Vec<String> = if open { progress_lines(proposal).into_iter().map(|l| show(&l)).collect() } else { Vec::new() };
    if open && proposal.review.step_up {
        progress.insert(0, STEP_UP_LINE.to_string());
    }
    // Who is on it comes first: the reason the others were not reminded.
    if let Some(claim) = proposal.claim.as_ref().filter(|c| open && c.holds(now)) {
        progress.insert(0, show(&crate::claim::card_line(claim)));
    }
    let harness = state.map_or(crate::Harness::Api, |st| st.session.harness);
    let agent = match proposal.agent_left_at {
        Some(left) if open => vec![agent_left_line(harness, left.0.saturating_sub(proposal.created_at.0))],
        _ => Vec::new(),
    };
    let changes = review.changes.as_ref().map(|d| show(&format!("since v{}: {}", d.from_version, d.summary())));
    let excluded = if proposal.edited_plan.is_none() {
        review.excluded.iter().filter_map(|n| proposal.plan.steps.get(n - 1).map(|s| (*n, show(&s.step)))).collect()
    } else {
        Vec::new()
    };
    let context = match &review.requested_by {
        Some(requester) => format!("{context} · requested by {}", show(requester)),
        None => context,
    };
    // Which project first: in a chat many agents share, that is what tells
    // two cards apart ("billing-api · feat/retries · dev-laptop").
    let context = match &proposal.project {
        Some(project) => format!("📁 {} — {context}", show(&project.label())),
        None => context,
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
        subagents,
        progress,
        agent,
        edit,
        changes,
        excluded,
        warning: hidden.then(|| HIDDEN_CHARS_WARNING.to_string()),
        receipt,
        ran,
        commands,
        version: proposal.version,
        status: proposal.status,
        link: None,
    }
}

/// The heading of a finished plan's receipt of what ran ([`crate::ran`]).
pub const RAN_HEADING: &str = "Ran";

/// The heading of the open card's line about an agent that stopped waiting.
pub const AGENT_HEADING: &str = "Agent";

/// What an open card says once its agent stopped waiting for the decision,
/// `waited_ms` after the plan was proposed: the decision still counts, and
/// it reaches the agent when it resumes (the next prompt in its terminal,
/// or at once where plangate's channel runs inside Claude Code).
pub fn agent_left_line(harness: crate::Harness, waited_ms: i64) -> String {
    let (who, how) = match harness {
        crate::Harness::ClaudeCode => ("Claude", " (its next prompt, or at once through plangate's channel)"),
        crate::Harness::Codex => ("Codex", " (its next stop)"),
        crate::Harness::Api => ("The agent", ""),
    };
    let after = match waited_ms / 1000 {
        secs @ 0..=119 => format!("{secs} s"),
        _ => humanize_ms(waited_ms),
    };
    format!("{who} stopped waiting after {after}; your decision reaches it when it resumes{how}.")
}

/// What an open card of a step-up plan says, above the quorum's progress.
pub const STEP_UP_LINE: &str = "🔑 The operator's policy asks each approver's passkey: Approve sends you a private link to confirm it.";

/// The quorum's progress on an open card: one line per approved content
/// (`1 of 2 · ✅ telegram:@alice`, `1 of 2 except steps 3, 5 · ✅ slack:@bob`),
/// or `0 of 2 approvals so far` for a round that needs several and has none.
/// Nothing for a round of one approver.
pub fn progress_lines(p: &Proposal) -> Vec<String> {
    let review = &p.review;
    let tallies = review.tallies();
    if tallies.is_empty() {
        return if review.required > 1 { vec![format!("0 of {} approvals so far", review.required)] } else { Vec::new() };
    }
    tallies
        .iter()
        .map(|group| {
            let names: Vec<&str> = group.iter().map(|a| a.by.as_str()).collect();
            let notes = group.iter().filter(|a| a.note.is_some()).count();
            let noted = if notes > 0 { format!(" ({notes} with a note)") } else { String::new() };
            format!("{} of {}{} · ✅ {}{noted}", group.len(), review.required, crate::review::content_label(group[0]), names.join(", "))
        })
        .collect()
}

/// What an approver is told when their approval was recorded but did not
/// complete the quorum, e.g. `Approval recorded for v1 (#a1b2c3): 1 of 2 ·
/// ✅ telegram:@alice. Waiting for more approvers.`; `None` when there is no
/// progress to report.
pub fn progress_notice(p: &Proposal) -> Option<String> {
    let lines = progress_lines(p);
    (!lines.is_empty()).then(|| {
        format!(
            "Approval recorded for v{} ({}): {}. Waiting for more approvers.",
            p.version,
            crate::view::short_ref(&p.approval_id),
            lines.join("; ")
        )
    })
}

/// What a claimer is told, e.g. `Claimed v1 (#a1b2c3) until 14:32 UTC: …`
/// ([`crate::claim`]).
pub fn claim_notice(p: &Proposal, claim: &crate::model::Claim) -> String {
    format!(
        "Claimed v{} ({}) until {} UTC: the other approvers are not reminded meanwhile. Decide it, or claim it again to keep it.",
        p.version,
        crate::view::short_ref(&p.approval_id),
        claim.until.clock()
    )
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
    for section in card.sections() {
        out.push_str(&format!("\n{}\n", section.heading));
        for entry in &section.entries {
            out.push_str(&entry.line());
            out.push('\n');
        }
    }
    if let Some(link) = &card.link {
        out.push_str(&format!("\n{OPEN_IN_BROWSER}: {link}\n"));
    }
    if let Some(r) = &card.receipt {
        out.push_str(&format!("\n{r}\n"));
    } else if let Some(commands) = card.reply_commands().filter(|_| text_commands) {
        out.push_str(&format!("\n{REPLY_WITH}\n"));
        for c in commands {
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
    // Under a quorum, reminders go on until it is reached and say how far it got.
    let review = &proposal.review;
    let quorum = if review.required > 1 {
        let best = review.tallies().iter().map(Vec::len).max().unwrap_or(0);
        format!("; {best} of {} approvals", review.required)
    } else {
        String::new()
    };
    format!(
        "⏰ Plan '{title}' v{} has waited {waited} for your approval ({}, reminder {number}{quorum})",
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

#[cfg(test)]
mod tests;
