//! Engine cards, questions and prompts as Telegram HTML messages.
//!
//! Pure functions, no I/O. Every string that reaches Telegram goes through
//! one pipeline: hidden characters revealed (again: cheap defence in depth,
//! the engine already does it), `@` defused so a plan cannot ping anyone, then
//! HTML-escaped with teloxide's escaper. Formatting tags never span lines, so
//! a message can be cut at any line boundary and stay valid HTML.

use plangate_channel::Style;
use plangate_engine::card::{self, Card, CardAction, Fit, SectionKind, REPLY_WITH};
use plangate_engine::codec::{self, Button};
use plangate_engine::text::{is_hidden_char, reveal, HIDDEN_CHARS_WARNING};
use plangate_engine::{ApprovalId, Question, QuestionId, QuestionStatus};
use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup, UserId};
use teloxide::utils::html;

/// Telegram's limit on a message's text (after entity parsing).
pub const TEXT_LIMIT: usize = 4096;
/// Telegram's limit on a document caption.
pub const CAPTION_LIMIT: usize = 1024;
/// Telegram's limit on an `answerCallbackQuery` toast.
pub const TOAST_LIMIT: usize = 200;
/// What a card cut to fit says at the cut: the engine's note, as on every channel.
pub const CUT_MARKER: &str = card::CUT_NOTE;
/// What other cut messages say at the cut.
pub const CUT_TEXT_MARKER: &str = "… (cut: too long for one Telegram message)";
/// Telegram truncates long button labels anyway; keep them readable.
const BUTTON_LABEL_LIMIT: usize = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fmt {
    Plain,
    Bold,
    Italic,
    Code,
}

/// One line of a message: formatted segments, no newline inside.
#[derive(Debug, Clone, Default)]
struct Line {
    segs: Vec<(Fmt, String)>,
    /// A section heading: dropped when the cut leaves it without content.
    heading: bool,
}

/// Visible length as Telegram counts it (UTF-16 code units).
fn units(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Stop `@name` from becoming a mention that notifies someone: a word joiner
/// after `@` keeps the text readable and breaks Telegram's entity detection.
fn defuse(s: &str) -> String {
    s.replace('@', "@\u{2060}")
}

/// The visible text of one agent- or server-written segment.
fn visible(s: &str) -> String {
    let flat: String = s.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    defuse(&reveal(&flat).0)
}

impl Line {
    fn blank() -> Line {
        Line::default()
    }
    fn of(fmt: Fmt, text: &str) -> Line {
        Line::default().push(fmt, text)
    }
    fn heading(text: &str) -> Line {
        Line { heading: true, ..Line::of(Fmt::Bold, text) }
    }
    fn push(mut self, fmt: Fmt, text: &str) -> Line {
        self.segs.push((fmt, visible(text)));
        self
    }
    fn is_blank(&self) -> bool {
        self.segs.iter().all(|(_, s)| s.is_empty())
    }
    fn len(&self) -> usize {
        self.segs.iter().map(|(_, s)| units(s)).sum()
    }
    /// Shorten to at most `max` units, ending with `…`.
    fn cap(mut self, max: usize) -> Line {
        if self.len() <= max {
            return self;
        }
        let mut left = max.saturating_sub(1);
        for (_, s) in self.segs.iter_mut() {
            let mut kept = String::new();
            for c in s.chars() {
                let n = c.len_utf16();
                if n > left {
                    left = 0;
                    break;
                }
                left -= n;
                kept.push(c);
            }
            *s = kept;
        }
        self.segs.retain(|(_, s)| !s.is_empty());
        self.segs.push((Fmt::Plain, "…".to_string()));
        self
    }
    fn html(&self) -> String {
        self.segs
            .iter()
            .map(|(fmt, s)| {
                let e = html::escape(s);
                match fmt {
                    Fmt::Plain => e,
                    Fmt::Bold => format!("<b>{e}</b>"),
                    Fmt::Italic => format!("<i>{e}</i>"),
                    Fmt::Code => format!("<code>{e}</code>"),
                }
            })
            .collect()
    }
}

/// Lines of a possibly multi-line text; continuation lines get `indent`.
fn paragraph(first_prefix: &str, indent: &str, text: &str) -> Vec<Line> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let mut out = vec![Line::of(Fmt::Plain, first_prefix).push(Fmt::Plain, first)];
    out.extend(lines.map(|l| Line::of(Fmt::Plain, indent).push(Fmt::Plain, l)));
    out
}

fn total(lines: &[Line]) -> usize {
    lines.iter().map(Line::len).sum::<usize>() + lines.len().saturating_sub(1)
}

fn join(lines: &[Line]) -> String {
    lines.iter().map(Line::html).collect::<Vec<_>>().join("\n")
}

/// Fit `head + body + tail` in `limit` units: when it is too long, body
/// lines are dropped from the end (whole lines only, the engine's
/// [`card::fit_lines`]) and `marker` stands in their place; head and tail
/// (title, receipt, commands) always stay.
fn fit(head: Vec<Line>, body: Vec<Line>, tail: Vec<Line>, limit: usize, marker: &str) -> String {
    let all: Vec<Line> = head.iter().chain(&body).chain(&tail).cloned().collect();
    if total(&all) <= limit {
        return join(&all);
    }
    let marker = Line::of(Fmt::Italic, marker);
    // Head and tail, with the newlines that join them to the body.
    let fixed = total(&head) + usize::from(!head.is_empty()) + usize::from(!tail.is_empty()) + total(&tail);
    let lens: Vec<usize> = body.iter().map(Line::len).collect();
    let keep = match card::fit_lines(&lens, 1, limit.saturating_sub(fixed), marker.len()) {
        Fit::All => body.len(),
        Fit::Cut(keep) => keep,
    };
    let mut kept: Vec<Line> = body.into_iter().take(keep).collect();
    while kept.last().is_some_and(|l| l.heading || l.is_blank()) {
        kept.pop();
    }
    let lines: Vec<Line> = head.into_iter().chain(kept).chain(std::iter::once(marker)).chain(tail).collect();
    let out = join(&lines);
    if total(&lines) <= limit {
        out
    } else {
        // Head and tail alone are too long (they are capped, so this is a
        // bug elsewhere): never send something Telegram refuses.
        fit_plain_lines(lines, limit)
    }
}

fn fit_plain_lines(lines: Vec<Line>, limit: usize) -> String {
    let mut used = 0;
    let mut kept = Vec::new();
    for line in lines {
        let line = line.cap(limit.saturating_sub(used + 1).max(1));
        used += line.len() + 1;
        kept.push(line);
        if used >= limit {
            break;
        }
    }
    join(&kept)
}

fn card_has_hidden(card: &Card) -> bool {
    let fields = [card.title.as_str(), card.context.as_str()]
        .into_iter()
        .chain(card.summary.as_deref())
        .chain(card.steps.iter().map(|s| s.text.as_str()))
        .chain(card.risks.iter().chain(&card.assumptions).chain(&card.verification).map(String::as_str));
    fields.into_iter().any(|f| f.chars().any(is_hidden_char))
}

/// The card as Telegram HTML, at most [`TEXT_LIMIT`] visible characters.
/// `Style::Text` shows the commands to type while the card is open.
pub fn card_html(card: &Card, style: Style) -> String {
    let mut head = Vec::new();
    let warning = card.warning.clone().or_else(|| card_has_hidden(card).then(|| HIDDEN_CHARS_WARNING.to_string()));
    if let Some(w) = warning {
        head.push(Line::of(Fmt::Bold, &w).cap(300));
        head.push(Line::blank());
    }
    head.push(Line::of(Fmt::Plain, "📋 ").push(Fmt::Bold, &card.title).cap(300));
    head.push(Line::of(Fmt::Italic, &format!("{} · {}", card.context, card.short_ref)).cap(500));

    let mut body = Vec::new();
    if let Some(summary) = &card.summary {
        body.push(Line::blank());
        body.extend(summary.lines().map(|l| Line::of(Fmt::Plain, l)));
    }
    for section in card.sections() {
        body.push(Line::blank());
        body.push(Line::heading(section.heading));
        // Continuation lines line up under the text.
        let indent = match section.kind {
            SectionKind::Steps => "    ",
            SectionKind::Bullets => "   ",
        };
        for entry in &section.entries {
            body.extend(paragraph(&format!("{} ", entry.marker), indent, entry.text));
        }
    }

    let mut tail = Vec::new();
    if let Some(link) = &card.link {
        // A bare URL: Telegram links it; no button, so no URL rule of the
        // Bot API can refuse the card.
        tail.push(Line::blank());
        tail.push(Line::of(Fmt::Plain, &format!("🌐 {}: {link}", card::OPEN_IN_BROWSER)).cap(600));
    }
    if let Some(receipt) = &card.receipt {
        tail.push(Line::blank());
        tail.push(Line::of(Fmt::Bold, receipt).cap(1500));
    } else if let Some(commands) = text_commands(card, style) {
        tail.push(Line::blank());
        tail.extend(commands);
    }
    fit(head, body, tail, TEXT_LIMIT, CUT_MARKER)
}

/// What a text-style destination shows instead of buttons while the card is
/// open: the engine's "Reply with one of:" and the commands, as code.
fn text_commands(card: &Card, style: Style) -> Option<Vec<Line>> {
    let commands = card.reply_commands().filter(|_| style == Style::Text)?;
    Some(std::iter::once(Line::of(Fmt::Plain, REPLY_WITH)).chain(commands.iter().map(|c| Line::of(Fmt::Code, c).cap(200))).collect())
}

fn card_button(action: CardAction, id: ApprovalId) -> InlineKeyboardButton {
    let (emoji, button) = match action {
        CardAction::Approve => ("✅", Button::Approve(id)),
        CardAction::ApproveWithNote => ("📝", Button::ApproveWithNote(id)),
        CardAction::ApproveEdit => ("✅", Button::ApproveEdit(id)),
        CardAction::RequestChanges => ("✏️", Button::RequestChanges(id)),
        CardAction::Claim => ("🙋", Button::Claim(id)),
        CardAction::Cancel => ("✖", Button::Cancel(id)),
        CardAction::View => ("📄", Button::View(id)),
    };
    InlineKeyboardButton::callback(format!("{emoji} {}", action.label()), codec::encode(button))
}

/// The label of the Edit button.
const EDIT_LABEL: &str = "Edit steps";

/// The engine's buttons for `card` (✅ Approve · [✅ Approve edit] · 📝
/// Approve with note… · ✏️ Request changes · 🙋 Claim · ✖ Cancel · 📄 View plan), then
/// ✍️ Edit steps, two per row so the labels stay readable on a phone.
pub fn card_keyboard(card: &Card) -> InlineKeyboardMarkup {
    let mut buttons: Vec<InlineKeyboardButton> = card.actions().iter().map(|a| card_button(*a, card.approval_id)).collect();
    // Edit, as Slack and Discord have it: the reply-based edit flow (the
    // current steps sent back to be changed and replied with).
    if !buttons.is_empty() {
        buttons.push(InlineKeyboardButton::callback(format!("✍️ {EDIT_LABEL}"), codec::encode(Button::Edit(card.approval_id))));
    }
    InlineKeyboardMarkup::new(buttons.chunks(2).map(<[InlineKeyboardButton]>::to_vec).collect::<Vec<_>>())
}

/// The second tap that really cancels.
pub fn confirm_cancel_keyboard(id: ApprovalId, version: u32) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new([[InlineKeyboardButton::callback(
        format!("Yes, cancel v{version}"),
        codec::encode(Button::ConfirmCancel(id)),
    )]])
}

/// The reminder under a card: the given line, plus the commands for a text
/// destination while the card is open.
pub fn nudge_html(text: &str, card: &Card, style: Style) -> String {
    let head = vec![Line::of(Fmt::Plain, text).cap(1000)];
    let tail = text_commands(card, style).unwrap_or_default();
    fit(head, Vec::new(), tail, TEXT_LIMIT, CUT_TEXT_MARKER)
}

/// Server-written text (command output, notices), escaped, cut to fit `limit`.
pub fn text_html(text: &str, limit: usize) -> String {
    let body: Vec<Line> = text.lines().map(|l| Line::of(Fmt::Plain, l)).collect();
    fit(Vec::new(), body, Vec::new(), limit, CUT_TEXT_MARKER)
}

/// A toast: plain text (no markup in callback answers), at most 200 characters.
pub fn toast(text: &str) -> String {
    plangate_basics::text::cut_utf16(&reveal(text).0, TOAST_LIMIT)
}

fn session_label(q: &Question) -> String {
    format!("{}/{}", q.session.agent, q.session.session_id)
}

/// A question with, while it is open, the options to tap (buttons) or the
/// command to type (text style). Once answered: the answer, no buttons.
pub fn question_html(q: &Question, style: Style) -> String {
    let (icon, title) = card::question_title(q);
    let head = vec![Line::of(Fmt::Plain, icon).push(Fmt::Bold, &title).cap(300)];
    let mut body: Vec<Line> = q.question.lines().map(|l| Line::of(Fmt::Plain, l)).collect();
    let mut tail = Vec::new();
    if q.permission.is_none() && q.stalled.is_none() && q.status == QuestionStatus::Answered {
        let answer = q.answer.as_deref().unwrap_or("(no text)");
        let by = q.answered_by.as_deref().map(|b| format!(" by {b}")).unwrap_or_default();
        tail.push(Line::blank());
        tail.push(Line::of(Fmt::Bold, &format!("✅ Answered{by}: ")).push(Fmt::Plain, answer).cap(1500));
    } else if let Some(outcome) = card::question_outcome(q) {
        tail.push(Line::blank());
        tail.push(Line::of(Fmt::Bold, &outcome).cap(1500));
    } else if style == Style::Text && q.permission.is_some() {
        tail.push(Line::blank());
        tail.push(Line::of(Fmt::Plain, &card::question_reply_hint(q)).cap(300));
    } else if style == Style::Text {
        if !q.options.is_empty() {
            body.push(Line::blank());
            for (i, option) in q.options.iter().enumerate() {
                body.push(Line::of(Fmt::Plain, &format!("{}. ", i + 1)).push(Fmt::Plain, option));
            }
        }
        tail.push(Line::blank());
        tail.push(
            Line::of(Fmt::Plain, "Reply with ").push(Fmt::Code, &format!("/plan answer {} <your answer>", session_label(q))).cap(300),
        );
    }
    fit(head, body, tail, TEXT_LIMIT, CUT_TEXT_MARKER)
}

fn label(text: &str) -> String {
    plangate_basics::text::cut_chars(&reveal(text).0.replace('\n', " "), BUTTON_LABEL_LIMIT)
}

/// One button per option (the engine's [`card::option_buttons`]: at most
/// [`card::MAX_OPTIONS`]) and "Other…" when free text is allowed.
pub fn question_keyboard(q: &Question) -> InlineKeyboardMarkup {
    let mut rows: Vec<Vec<InlineKeyboardButton>> = card::option_buttons(q)
        .map(|(button, option)| vec![InlineKeyboardButton::callback(label(option), codec::encode(button))])
        .collect();
    if q.allow_freetext {
        rows.push(vec![InlineKeyboardButton::callback(card::other_label(q), codec::encode(Button::AnswerOther(q.question_id)))]);
    }
    InlineKeyboardMarkup::new(rows)
}

/// What a ForceReply prompt waits for.
///
/// A reply is matched to its prompt only through what plangate recorded when
/// it sent the prompt (chat and message id → prompt, kept durably by the
/// adapter), never through text on the replied-to message: that text can be
/// an agent's question or a person's words, and reading it back would let
/// them choose what a reply does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    Feedback(ApprovalId),
    Edit(ApprovalId),
    Answer(QuestionId),
    /// The note of an approval (Approve with note…): the reply approves.
    Note(ApprovalId),
}

impl Prompt {
    /// The durable record of a prompt: `feedback:<id>`, `edit:<id>`, `answer:<id>`.
    pub fn encode(self) -> String {
        match self {
            Prompt::Feedback(id) => format!("feedback:{id}"),
            Prompt::Edit(id) => format!("edit:{id}"),
            Prompt::Answer(id) => format!("answer:{id}"),
            Prompt::Note(id) => format!("note:{id}"),
        }
    }

    /// The inverse of [`Prompt::encode`]; `None` for anything else.
    pub fn decode(record: &str) -> Option<Prompt> {
        let (kind, id) = record.split_once(':')?;
        let id = ApprovalId::parse(id)?;
        match kind {
            "feedback" => Some(Prompt::Feedback(id)),
            "edit" => Some(Prompt::Edit(id)),
            "answer" => Some(Prompt::Answer(id)),
            "note" => Some(Prompt::Note(id)),
            _ => None,
        }
    }
}

/// A user mention that works with and without a username.
fn mention(user: UserId, name: &str) -> String {
    let name = defuse(&reveal(name).0);
    html::user_mention(user, if name.trim().is_empty() { "you" } else { &name })
}

/// The ForceReply prompt text. Layout: mention + the server's prompt, then
/// (for edits) the current steps, then, where the server's prompt does not
/// already say it, one line saying what to reply (the server's texts for
/// feedback and edits name the version and the plan, and said twice it read
/// as a glitch). That line is never read back (see [`Prompt`]).
pub fn prompt_html(prompt: Prompt, user: UserId, name: &str, text: &str, version: u32, steps: &[String]) -> String {
    let tag = match prompt {
        Prompt::Feedback(_) | Prompt::Edit(_) => None,
        Prompt::Answer(id) => Some(format!("Reply with your answer (answer #{id})")),
        Prompt::Note(_) => Some(format!("Reply with your note: it goes to the agent with the approval of v{version}.")),
    };
    let first = format!("{} {}", mention(user, name), Line::of(Fmt::Plain, text).cap(1000).html());
    let mut body = Vec::new();
    if !steps.is_empty() {
        body.push(Line::of(Fmt::Plain, "Current steps:"));
        for (i, step) in steps.iter().enumerate() {
            body.push(Line::of(Fmt::Plain, &format!("{}. ", i + 1)).push(Fmt::Plain, step));
        }
    }
    // The mention is already HTML: fit the rest, keep the first line as is.
    let limit = TEXT_LIMIT.saturating_sub(units(&first) + 1);
    let rest = fit(Vec::new(), body, tag.iter().map(|tag| Line::of(Fmt::Plain, tag)).collect(), limit, CUT_TEXT_MARKER);
    match rest.is_empty() {
        true => first,
        false => format!("{first}\n{rest}"),
    }
}

/// The steps of an edit reply: one per line, list markers removed by the
/// engine's one rule for typed lists ([`plangate_engine::list`]).
pub use plangate_engine::list::parse_lines as parse_steps;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_records_round_trip_and_nothing_else_decodes() {
        let id = ApprovalId([0xab; 16]);
        for p in [Prompt::Feedback(id), Prompt::Edit(id), Prompt::Answer(id), Prompt::Note(id)] {
            assert_eq!(Prompt::decode(&p.encode()), Some(p));
        }
        for bad in
            ["", "edit", "edit:", "approve:abababababababababababababababab", "edit:ABABABABABABABABABABABABABABABAB", "(edit #abab)"]
        {
            assert_eq!(Prompt::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn steps_lose_their_list_markers() {
        assert_eq!(parse_steps("1. read\n2) write\n- test\n\n  • ship  \n10 crates"), vec!["read", "write", "test", "ship", "10 crates"]);
    }

    #[test]
    fn lines_are_escaped_and_defused() {
        let l = Line::of(Fmt::Bold, "<script>&@everyone\u{202E}");
        assert_eq!(l.html(), "<b>&lt;script&gt;&amp;@\u{2060}everyone⟦U+202E⟧</b>");
    }

    #[test]
    fn toast_is_capped() {
        assert_eq!(units(&toast(&"x".repeat(500))), TOAST_LIMIT);
    }
}
