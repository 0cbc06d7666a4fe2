//! Block Kit rendering of engine cards, questions and plangate's modals.
//!
//! Pure functions, no I/O: everything here is what the tests compare with the
//! requests the fake Slack records. The words come from the engine's
//! [`Card`]; this module only arranges them in blocks, keeps them inert, and
//! keeps within Slack's limits (which the client crate does not check): 3,000
//! characters per section, 50 blocks per message, 150 per header, 75 per
//! button text.
//!
//! # Agent text is shown, never interpreted
//!
//! Titles, summaries, steps, risks, assumptions, verification, questions and
//! their options come from the agent; receipts carry chat users' names and
//! their feedback; command output and prompts quote all of these. Were any of
//! it mrkdwn, an agent could draw a bold "*Approved by @alice*" line on its
//! own card, ping `<!channel>`, or label a link `<https://evil.example|Approve>`.
//!
//! Slack has no escape for its formatting characters: only `&`, `<` and `>`
//! have entities (`&amp;` `&lt;` `&gt;`); any other entity such as `&#x2a;` is
//! shown as typed, so is a backslash, and a zero-width space next to `*` or
//! `_` counts as a word break, which *enables* formatting inside words. So
//! that text goes into **`plain_text` text objects with `emoji: false`**
//! ([`literal`], [`plain_section`]): Block Kit takes them in headers,
//! sections, context blocks, button labels and confirm dialogs, and Slack
//! renders them verbatim — no bold, italics, strike, code, quotes, links,
//! mentions or `:emoji:` codes — so approvers read exactly what the agent
//! sent. Headings ("Steps", "Risks"…) are plain words in the same block as
//! their list, so the layout keeps its block count.
//!
//! mrkdwn remains for plangate's own words only (the `/plan` command hints,
//! the "cut" note), and for the two strings that are mrkdwn by definition: a
//! message's top-level `text` (notifications, clients without blocks) and an
//! upload's comment. Agent text there goes through [`escape`].

use plangate_channel::Style;
use plangate_engine::card::{self, Card, CardAction, Fit, REPLY_WITH};
use plangate_engine::codec::{encode, Button};
use plangate_engine::{ApprovalId, Question};
use slack_morphism::prelude::*;

pub const SECTION_LIMIT: usize = 3000;
pub const MAX_BLOCKS: usize = 50;
pub const HEADER_LIMIT: usize = 150;
pub const BUTTON_TEXT_LIMIT: usize = 75;
/// A confirm dialog's text.
pub const CONFIRM_TEXT_LIMIT: usize = 300;
/// `plain_text_input` accepts at most this many characters.
pub const INPUT_LIMIT: usize = 3000;
/// The last body block when a card had to be cut: the engine's note.
pub use plangate_engine::card::CUT_NOTE;
/// Question buttons: the engine's limit (the codec carries one decimal digit).
pub use plangate_engine::card::MAX_OPTIONS;

/// Callback ids of plangate's modals: a submission with any other id is not ours.
pub const FEEDBACK_MODAL: &str = "plangate_feedback";
pub const EDIT_MODAL: &str = "plangate_edit";
pub const ANSWER_MODAL: &str = "plangate_answer";
pub const APPROVE_MODAL: &str = "plangate_approve";
/// The approve modal's step picker.
pub const EXCEPT_BLOCK: &str = "plangate_except";
pub const EXCEPT_ACTION: &str = "plangate_steps";
/// Slack's most options in a multi-select; longer plans name the rest with
/// `/plan accept … except`.
pub const MAX_PICKER_OPTIONS: usize = 100;
/// Slack's longest option text.
const OPTION_TEXT_LIMIT: usize = 75;
/// The one input of every modal.
pub const INPUT_BLOCK: &str = "plangate_input";
pub const INPUT_ACTION: &str = "plangate_text";

pub const ACTIONS_BLOCK: &str = "plangate_actions";

/// Agent or user text for a mrkdwn string (a message's notification `text`,
/// an upload's comment): shown as written, interpreted as nothing.
///
/// * `&`, `<`, `>` become `&amp;`, `&lt;`, `&gt;`, the escapes Slack
///   documents. Every mention, channel link, special command and link
///   (`<!channel>`, `<!here>`, `<@U123>`, `<#C1>`, `<https://…|label>`)
///   starts with `<`, so all of them become inert text.
/// * `*`, `_`, `~` and `` ` `` (bold, italics, strike, code) and the
///   full-width `＊ ＿ ｀` have no escape in mrkdwn, so they are replaced by
///   look-alikes Slack does not parse: `∗` (U+2217), `ˍ` (U+02CD), `∼`
///   (U+223C), `ˋ` (U+02CB), `﹡` (U+FE61), `⸏` (U+2E0F).
/// * A line starting with `>` or `＞` would be a quote (`&gt;` is one too), so
///   an invisible soft hyphen (U+00AD) goes in front of it.
///
/// Look-alikes change the characters (a copied `snake_case` name would not
/// match), which is why blocks show agent text as `plain_text` ([`literal`])
/// and this is kept for what has to be mrkdwn.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let body = line.trim_start();
        out.push_str(&line[..line.len() - body.len()]);
        if body.starts_with(['>', '＞']) {
            out.push('\u{AD}');
        }
        for c in body.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '*' => out.push('\u{2217}'),
                '_' => out.push('\u{02CD}'),
                '~' => out.push('\u{223C}'),
                '`' | '｀' => out.push('\u{02CB}'),
                '＊' => out.push('\u{FE61}'),
                '＿' => out.push('\u{2E0F}'),
                c => out.push(c),
            }
        }
    }
    out
}

/// plangate's own words for mrkdwn (command hints, whose `` ` `` are meant):
/// only `& < >` are escaped.
pub fn escape_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// At most `max` characters, ending in `…` when cut (the engine's rule).
pub use plangate_basics::text::cut_chars;

fn mrkdwn(text: impl Into<String>) -> SlackBlockText {
    SlackBlockText::MarkDown(SlackBlockMarkDownText::new(text.into()))
}

/// plangate's own label (buttons, modal titles).
fn plain(text: &str) -> SlackBlockPlainTextOnly {
    SlackBlockPlainTextOnly::from(text)
}

/// Agent or user text, shown verbatim: `plain_text` with `emoji: false`.
fn literal_text(text: &str) -> SlackBlockPlainText {
    SlackBlockPlainText::new(text.to_string()).with_emoji(false)
}

/// Agent or user text as a text object: `plain_text`, `emoji: false`, which
/// Slack never parses (see the module documentation).
pub fn literal(text: &str) -> SlackBlockText {
    SlackBlockText::Plain(literal_text(text))
}

/// A section of plangate's own, already-escaped mrkdwn (at most
/// [`SECTION_LIMIT`] characters). Never for agent text: see [`plain_section`].
pub fn section(text: impl Into<String>) -> SlackBlock {
    SlackSectionBlock::new().with_text(mrkdwn(cut_chars(&text.into(), SECTION_LIMIT))).into()
}

/// A section of agent or user text, shown verbatim ([`literal`]), at most
/// [`SECTION_LIMIT`] characters.
pub fn plain_section(text: impl Into<String>) -> SlackBlock {
    SlackSectionBlock::new().with_text(literal(&cut_chars(&text.into(), SECTION_LIMIT))).into()
}

fn context(text: impl Into<String>) -> SlackBlock {
    SlackContextBlock::new(vec![SlackContextBlockElement::Plain(literal_text(&cut_chars(&text.into(), SECTION_LIMIT)))]).into()
}

/// Group lines into section texts of at most `limit` characters, breaking
/// only between lines; `heading` starts the first one. A single line longer
/// than a section is cut.
pub fn chunk_lines(heading: Option<&str>, lines: &[String], limit: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = heading.map(str::to_string).unwrap_or_default();
    let mut current_len = current.chars().count();
    for line in lines {
        let line = cut_chars(line, limit);
        let len = line.chars().count();
        if current_len > 0 && current_len + 1 + len > limit {
            chunks.push(std::mem::take(&mut current));
            current_len = 0;
        }
        if current_len > 0 {
            current.push('\n');
            current_len += 1;
        }
        current.push_str(&line);
        current_len += len;
    }
    if current_len > 0 {
        chunks.push(current);
    }
    chunks
}

/// One line of agent text, flattened so a newline inside a step cannot fake
/// another numbered step (or a heading).
fn line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}

/// A button whose `action_id` and `value` are both the codec's callback data.
pub fn button(label: &str, data: Button) -> SlackBlockButtonElement {
    button_labelled(plain(&cut_chars(label, BUTTON_TEXT_LIMIT)), data)
}

fn button_labelled(label: SlackBlockPlainTextOnly, data: Button) -> SlackBlockButtonElement {
    let encoded = encode(data);
    SlackBlockButtonElement::new(label).with_action_id(SlackActionId::new(encoded.clone())).with_value(encoded)
}

/// The card's buttons in the engine's order, plus Edit (Slack has modals).
pub fn card_actions(card: &Card) -> SlackBlock {
    let id = card.approval_id;
    let mut elements: Vec<SlackActionBlockElement> = card
        .actions()
        .iter()
        .map(|action| {
            let b = match action {
                CardAction::Approve => button(action.label(), Button::Approve(id)).with_style(SlackBlockButtonStyle::Primary),
                CardAction::ApproveWithNote => button(action.label(), Button::ApproveWithNote(id)),
                CardAction::ApproveEdit => button(action.label(), Button::ApproveEdit(id)).with_style(SlackBlockButtonStyle::Primary),
                CardAction::RequestChanges => button(action.label(), Button::RequestChanges(id)),
                CardAction::Claim => button(action.label(), Button::Claim(id)),
                CardAction::Cancel => {
                    button(action.label(), Button::Cancel(id)).with_style(SlackBlockButtonStyle::Danger).with_confirm(cancel_confirm(card))
                }
                CardAction::View => button(action.label(), Button::View(id)),
            };
            b.into()
        })
        .collect();
    elements.push(button("Edit", Button::Edit(id)).into());
    SlackActionsBlock::new(elements).with_block_id(SlackBlockId::new(ACTIONS_BLOCK.to_string())).into()
}

/// Slack's own "are you sure?" dialog on Cancel; it names the plan in plain text.
fn cancel_confirm(card: &Card) -> SlackBlockConfirmItem {
    SlackBlockConfirmItem::new(
        plain("Cancel this plan?"),
        literal(&cut_chars(
            &format!(
                "This cancels “{}” {}. Its session stays blocked (read-only) until a new plan is approved.",
                card.title, card.short_ref
            ),
            CONFIRM_TEXT_LIMIT,
        )),
        plain("Yes, cancel"),
        plain("Keep it"),
    )
    .with_style("danger".to_string())
}

/// What a text-style destination shows instead of buttons: the engine's
/// "Reply with one of:" and plangate's own commands, as code.
fn commands_block(commands: &[String]) -> SlackBlock {
    let mut text = String::from(REPLY_WITH);
    for c in commands {
        text.push_str(&format!("\n`{}`", escape_entities(c)));
    }
    section(text)
}

/// The card as Block Kit blocks: body (cut to fit) then the fixed tail
/// (warning, receipt or buttons/commands), never more than [`MAX_BLOCKS`].
/// Every text that came from the agent or a chat user is [`literal`].
pub fn card_blocks(card: &Card, style: Style) -> Vec<SlackBlock> {
    let mut body: Vec<SlackBlock> = vec![
        SlackHeaderBlock::new(literal_text(&cut_chars(&card.title, HEADER_LIMIT)).into()).into(),
        context(format!("{} · {}", card.context, card.short_ref)),
    ];
    if let Some(summary) = &card.summary {
        let lines: Vec<String> = summary.lines().map(str::to_string).collect();
        body.extend(chunk_lines(None, &lines, SECTION_LIMIT).into_iter().map(plain_section));
    }
    for section in card.sections() {
        let lines: Vec<String> = section.entries.iter().map(|e| format!("{} {}", e.marker, line(e.text))).collect();
        body.extend(chunk_lines(Some(section.heading), &lines, SECTION_LIMIT).into_iter().map(plain_section));
    }
    let mut tail = Vec::new();
    if let Some(warning) = &card.warning {
        tail.push(plain_section(warning.clone()));
    }
    if let Some(link) = &card.link {
        tail.push(section(format!("<{}|🌐 {}>", escape_entities(link), card::OPEN_IN_BROWSER)));
    }
    if let Some(receipt) = &card.receipt {
        tail.push(plain_section(receipt.clone()));
    }
    tail.extend(open_card_tail(card, style));
    fit(body, tail)
}

/// What an open card (and its reminders) ends with: the buttons, or for a
/// text-style destination the commands to type. Nothing once decided.
fn open_card_tail(card: &Card, style: Style) -> Option<SlackBlock> {
    match style {
        Style::Text => card.reply_commands().map(commands_block),
        Style::Buttons => card.is_open().then(|| card_actions(card)),
    }
}

/// Body then tail; when both do not fit in [`MAX_BLOCKS`], the body is cut
/// (the engine's [`card::fit_lines`], a block costing one) and ends with
/// [`CUT_NOTE`].
fn fit(mut body: Vec<SlackBlock>, tail: Vec<SlackBlock>) -> Vec<SlackBlock> {
    if let Fit::Cut(keep) = card::fit_lines(&vec![1; body.len()], 0, MAX_BLOCKS.saturating_sub(tail.len()), 1) {
        body.truncate(keep);
        body.push(section(format!("_{CUT_NOTE}_")));
    }
    body.extend(tail);
    body
}

/// Free text (command output, notices, prompts) as verbatim sections, split
/// at line boundaries and cut to fit one message.
pub fn text_blocks(text: &str) -> Vec<SlackBlock> {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let sections: Vec<SlackBlock> = chunk_lines(None, &lines, SECTION_LIMIT).into_iter().map(plain_section).collect();
    fit(sections, Vec::new())
}

/// Free text followed by one of plangate's command hints (mrkdwn, so its
/// `` `/plan …` `` shows as code; escaped here).
pub fn hint_blocks(text: &str, hint: &str) -> Vec<SlackBlock> {
    let mut blocks = if text.trim().is_empty() { Vec::new() } else { text_blocks(text) };
    blocks.truncate(MAX_BLOCKS - 1);
    blocks.push(section(escape_entities(hint)));
    blocks
}

/// The notification text of a card message (shown in push notifications and
/// by clients that cannot render blocks).
pub fn card_fallback(card: &Card) -> String {
    match &card.receipt {
        Some(receipt) => format!("{} {}: {}", escape(&card.title), card.short_ref, escape(receipt)),
        None => format!("Plan for approval: {} {} ({})", escape(&card.title), card.short_ref, escape(&card.context)),
    }
}

/// A reminder in the card's thread, with the buttons again while the card is open.
pub fn nudge_blocks(card: &Card, style: Style, text: &str) -> Vec<SlackBlock> {
    std::iter::once(plain_section(text)).chain(open_card_tail(card, style)).collect()
}

/// An agent's question: one button per option (codec `Answer`), plus
/// "Other…" when free text is allowed; after the answer, no buttons. The
/// question, its options, the answer and who gave it are all [`literal`].
pub fn question_blocks(question: &Question, style: Style) -> Vec<SlackBlock> {
    let who = format!("{}/{}", question.session.agent, question.session.session_id);
    // plangate's own questions (a permission request, a stalled plan)
    // name what they are; an agent's question says who asks.
    let heading = if question.permission.is_some() || question.stalled.is_some() {
        let (icon, title) = card::question_title(question);
        format!("{icon}{title}")
    } else {
        format!("❓ {who} asks:")
    };
    let mut blocks = vec![plain_section(format!("{heading}\n{}", question.question))];
    if let Some(outcome) = card::question_outcome(question) {
        blocks.push(plain_section(outcome));
        return blocks;
    }
    let shown: Vec<(Button, &str)> = card::option_buttons(question).collect();
    if style == Style::Text {
        let lines: Vec<String> = shown.iter().enumerate().map(|(i, (_, o))| format!("{}. {}", i + 1, line(o))).collect();
        blocks.extend(chunk_lines(None, &lines, SECTION_LIMIT).into_iter().map(plain_section));
        let hint = if question.permission.is_some() || question.stalled.is_some() {
            card::question_reply_hint(question)
        } else {
            format!("Reply with `/plan answer {who} <your answer>`")
        };
        blocks.push(section(escape_entities(&hint)));
        return blocks;
    }
    let mut elements: Vec<SlackActionBlockElement> =
        shown.iter().map(|(button, o)| button_labelled(literal_text(&cut_chars(o, BUTTON_TEXT_LIMIT)).into(), *button).into()).collect();
    if question.allow_freetext {
        elements.push(button(card::other_label(question), Button::AnswerOther(question.question_id)).into());
    }
    if !elements.is_empty() {
        blocks.push(SlackActionsBlock::new(elements).with_block_id(SlackBlockId::new(ACTIONS_BLOCK.to_string())).into());
    }
    blocks
}

pub fn question_fallback(question: &Question) -> String {
    format!("Question from {}/{}: {}", escape(&question.session.agent), escape(&question.session.session_id), escape(&question.question))
}

/// The ephemeral "really cancel?" message with its one confirm button.
pub fn confirm_cancel_blocks(approval_id: ApprovalId, prompt: &str) -> Vec<SlackBlock> {
    vec![
        plain_section(prompt),
        SlackActionsBlock::new(vec![button("Yes, cancel the plan", Button::ConfirmCancel(approval_id))
            .with_style(SlackBlockButtonStyle::Danger)
            .into()])
        .with_block_id(SlackBlockId::new(ACTIONS_BLOCK.to_string()))
        .into(),
    ]
}

/// Which of plangate's modals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModalKind {
    Feedback,
    Edit,
    Answer,
    /// Approve with an optional note and steps to leave out.
    Approve,
}

impl ModalKind {
    pub fn callback_id(self) -> &'static str {
        match self {
            ModalKind::Feedback => FEEDBACK_MODAL,
            ModalKind::Edit => EDIT_MODAL,
            ModalKind::Answer => ANSWER_MODAL,
            ModalKind::Approve => APPROVE_MODAL,
        }
    }

    pub fn from_callback_id(id: &str) -> Option<ModalKind> {
        match id {
            FEEDBACK_MODAL => Some(ModalKind::Feedback),
            EDIT_MODAL => Some(ModalKind::Edit),
            ANSWER_MODAL => Some(ModalKind::Answer),
            APPROVE_MODAL => Some(ModalKind::Approve),
            _ => None,
        }
    }
}

/// What a modal must remember until it is submitted (`private_metadata`):
/// the approval or question id, and where to answer afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModalMeta {
    pub id: ApprovalId,
    pub channel: String,
    pub thread: Option<String>,
}

impl ModalMeta {
    pub fn encode(&self) -> String {
        format!("{}|{}|{}", self.id, self.channel, self.thread.as_deref().unwrap_or(""))
    }

    /// Strict: Slack returns what we set, so anything else is refused.
    pub fn decode(text: &str) -> Option<ModalMeta> {
        let mut parts = text.split('|');
        let id = ApprovalId::parse(parts.next()?)?;
        let channel = parts.next()?.to_string();
        let thread = parts.next()?.to_string();
        if parts.next().is_some() || channel.is_empty() || channel.len() > 64 || thread.len() > 64 {
            return None;
        }
        Some(ModalMeta { id, channel, thread: (!thread.is_empty()).then_some(thread) })
    }
}

/// A modal with one multiline input. `prompt` (which may quote the agent) is
/// shown above it, verbatim.
pub fn modal(kind: ModalKind, meta: &ModalMeta, prompt: &str, initial: Option<String>) -> SlackView {
    let (title, label, submit) = match kind {
        ModalKind::Feedback => ("Request changes", "What should change?", "Send"),
        ModalKind::Edit => ("Edit plan", "Steps, one per line", "Approve"),
        ModalKind::Answer => ("Answer the agent", "Your answer", "Send"),
        ModalKind::Approve => ("Approve plan", "Note for the agent (optional)", "Approve"),
    };
    let mut blocks = Vec::new();
    if !prompt.trim().is_empty() {
        blocks.push(plain_section(prompt));
    }
    let input = SlackBlockPlainTextInputElement::new()
        .with_action_id(SlackActionId::new(INPUT_ACTION.to_string()))
        .with_multiline(true)
        .with_max_length(INPUT_LIMIT as u64)
        .opt_initial_value(initial);
    blocks.push(
        SlackInputBlock::new(plain(label), SlackInputBlockElement::PlainTextInput(input))
            .with_block_id(SlackBlockId::new(INPUT_BLOCK.to_string()))
            .into(),
    );
    SlackView::Modal(
        SlackModalView::new(plain(title), blocks)
            .with_submit(plain(submit))
            .with_close(plain("Cancel"))
            .with_callback_id(SlackCallbackId::new(kind.callback_id().to_string()))
            .with_private_metadata(meta.encode()),
    )
}

/// The approve modal: `prompt`, an optional note, and a picker of the
/// plan's steps to leave out of the approval (at most
/// [`MAX_PICKER_OPTIONS`]; option values are the step numbers).
pub fn approve_modal(meta: &ModalMeta, prompt: &str, steps: &[String]) -> SlackView {
    let mut blocks = Vec::new();
    if !prompt.trim().is_empty() {
        blocks.push(plain_section(prompt));
    }
    let note = SlackBlockPlainTextInputElement::new()
        .with_action_id(SlackActionId::new(INPUT_ACTION.to_string()))
        .with_multiline(true)
        .with_max_length(plangate_engine::review::MAX_NOTE_CHARS as u64);
    blocks.push(
        SlackInputBlock::new(plain("Note for the agent (optional)"), SlackInputBlockElement::PlainTextInput(note))
            .with_block_id(SlackBlockId::new(INPUT_BLOCK.to_string()))
            .with_optional(true)
            .into(),
    );
    if !steps.is_empty() {
        let options: Vec<SlackBlockChoiceItem<SlackBlockPlainTextOnly>> = steps
            .iter()
            .take(MAX_PICKER_OPTIONS)
            .enumerate()
            .map(|(i, step)| {
                SlackBlockChoiceItem::new(plain(&cut_chars(&format!("{}. {}", i + 1, line(step)), OPTION_TEXT_LIMIT)), (i + 1).to_string())
            })
            .collect();
        let picker = SlackBlockMultiStaticSelectElement::new()
            .with_action_id(SlackActionId::new(EXCEPT_ACTION.to_string()))
            .with_placeholder(plain("Approve every step"))
            .with_options(options);
        let hint = if steps.len() > MAX_PICKER_OPTIONS {
            format!("Only the first {MAX_PICKER_OPTIONS} steps are listed; for later ones use /plan accept #{} except …", meta.id.short())
        } else {
            "The approved plan is the other steps; the agent is told not to do these.".to_string()
        };
        blocks.push(
            SlackInputBlock::new(plain("Leave out these steps (optional)"), SlackInputBlockElement::MultiStaticSelect(picker))
                .with_block_id(SlackBlockId::new(EXCEPT_BLOCK.to_string()))
                .with_optional(true)
                .with_hint(plain(&hint))
                .into(),
        );
    }
    SlackView::Modal(
        SlackModalView::new(plain("Approve plan"), blocks)
            .with_submit(plain("Approve"))
            .with_close(plain("Cancel"))
            .with_callback_id(SlackCallbackId::new(APPROVE_MODAL.to_string()))
            .with_private_metadata(meta.encode()),
    )
}

/// Steps typed into the edit modal: one per line, list markers removed by
/// the engine's one rule for typed lists ([`plangate_engine::list`]).
pub use plangate_engine::list::parse_lines as parse_steps;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_neutralizes_mentions() {
        assert_eq!(
            escape("a & b <!channel> <@U123> <!here|here> x>y"),
            "a &amp; b &lt;!channel&gt; &lt;@U123&gt; &lt;!here|here&gt; x&gt;y"
        );
        assert_eq!(escape("&amp;"), "&amp;amp;");
        assert_eq!(escape_entities("`/plan revise #a <what>` & *x*"), "`/plan revise #a &lt;what&gt;` &amp; *x*");
    }

    #[test]
    fn escaping_neutralizes_formatting() {
        assert_eq!(escape("*Approved by @alice*"), "∗Approved by @alice∗");
        assert_eq!(escape("_it_ ~gone~ `code` ```block```"), "ˍitˍ ∼gone∼ ˋcodeˋ ˋˋˋblockˋˋˋ");
        assert_eq!(escape("＊b＊ ＿i＿ ｀c｀"), "﹡b﹡ ⸏i⸏ ˋcˋ");
        assert_eq!(escape("<https://evil.example|Approve>"), "&lt;https://evil.example|Approve&gt;");
        // A quote only at the start of a line (after any indentation).
        assert_eq!(escape("> quoted\n  > indented\n＞ wide\na > b"), "\u{AD}&gt; quoted\n  \u{AD}&gt; indented\n\u{AD}＞ wide\na &gt; b");
        assert_eq!(escape("plain words, 1.5 · ✅"), "plain words, 1.5 · ✅");
        for c in ['*', '_', '~', '`', '<', '>'] {
            assert!(!escape(&format!("{c}x{c} \n{c}")).contains(c), "{c}");
        }
    }

    #[test]
    fn agent_text_is_plain_text_without_emoji_codes() {
        let json = |b: &SlackBlock| serde_json::to_value(b).unwrap();
        assert_eq!(
            json(&plain_section("*b* <!channel> :tada:")),
            serde_json::json!({"type": "section", "text": {"type": "plain_text", "text": "*b* <!channel> :tada:", "emoji": false}})
        );
        assert_eq!(json(&section("*Steps*")), serde_json::json!({"type": "section", "text": {"type": "mrkdwn", "text": "*Steps*"}}));
        assert_eq!(
            json(&hint_blocks("Answer *this*", "Type `/plan answer <text>`")[1]),
            serde_json::json!({"type": "section", "text": {"type": "mrkdwn", "text": "Type `/plan answer &lt;text&gt;`"}})
        );
        assert_eq!(hint_blocks(" ", "x").len(), 1);
    }

    #[test]
    fn chunks_break_between_lines_and_stay_under_the_limit() {
        let lines: Vec<String> = (0..10).map(|i| format!("{i}{}", "x".repeat(9))).collect();
        let chunks = chunk_lines(Some("*H*"), &lines, 25);
        assert!(chunks.iter().all(|c| c.chars().count() <= 25), "{chunks:?}");
        assert_eq!(chunks[0], "*H*\n0xxxxxxxxx\n1xxxxxxxxx");
        assert_eq!(chunks.len(), 5);
        assert_eq!(chunks.join("\n"), format!("*H*\n{}", lines.join("\n")));
        let long = chunk_lines(None, &["y".repeat(40)], 25);
        assert_eq!(long, vec![format!("{}…", "y".repeat(24))]);
    }

    #[test]
    fn modal_meta_round_trip_and_strictness() {
        let meta = ModalMeta { id: ApprovalId([7; 16]), channel: "C1".into(), thread: Some("1.2".into()) };
        assert_eq!(ModalMeta::decode(&meta.encode()), Some(meta.clone()));
        let no_thread = ModalMeta { thread: None, ..meta };
        assert_eq!(ModalMeta::decode(&no_thread.encode()), Some(no_thread));
        for bad in [
            "",
            "x|C1|",
            "07070707070707070707070707070707|C1",
            "07070707070707070707070707070707||",
            "07070707070707070707070707070707|C1||",
        ] {
            assert_eq!(ModalMeta::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn steps_from_the_edit_modal() {
        assert_eq!(parse_steps("1. Read\n2) Write\n- Test\n\n  * Ship  \n2024 plan"), vec!["Read", "Write", "Test", "Ship", "2024 plan"]);
    }
}
