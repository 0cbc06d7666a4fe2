//! Block Kit rendering of engine cards, questions and plangate's modals.
//!
//! Pure functions, no I/O: everything here is what the tests compare with the
//! requests the fake Slack records. The words come from the engine's
//! [`Card`]; this module only escapes them for mrkdwn, arranges them in
//! blocks and keeps within Slack's limits (which the client crate does not
//! check): 3,000 characters per section, 50 blocks per message, 150 per
//! header, 75 per button text.

use plangate_channel::Style;
use plangate_engine::card::{Card, CardAction};
use plangate_engine::codec::{encode, Button};
use plangate_engine::{ApprovalId, Question, QuestionStatus};
use slack_morphism::prelude::*;

pub const SECTION_LIMIT: usize = 3000;
pub const MAX_BLOCKS: usize = 50;
pub const HEADER_LIMIT: usize = 150;
pub const BUTTON_TEXT_LIMIT: usize = 75;
/// `plain_text_input` accepts at most this many characters.
pub const INPUT_LIMIT: usize = 3000;
/// Question buttons: the codec carries one decimal digit.
pub const MAX_OPTIONS: usize = 10;
/// The last body block when a card had to be cut.
pub const CUT_NOTE: &str = "… full plan in the attached document";

/// Callback ids of plangate's modals: a submission with any other id is not ours.
pub const FEEDBACK_MODAL: &str = "plangate_feedback";
pub const EDIT_MODAL: &str = "plangate_edit";
pub const ANSWER_MODAL: &str = "plangate_answer";
/// The one input of every modal.
pub const INPUT_BLOCK: &str = "plangate_input";
pub const INPUT_ACTION: &str = "plangate_text";

pub const ACTIONS_BLOCK: &str = "plangate_actions";

/// Escape the three characters Slack's mrkdwn treats specially. Because every
/// mention, channel link and special command (`<!channel>`, `<!here>`,
/// `<@U123>`, `<#C1>`, `<https://…|label>`) starts with `<`, this also makes
/// all of them inert text.
pub fn escape(text: &str) -> String {
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

/// At most `max` characters, ending in `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn mrkdwn(text: impl Into<String>) -> SlackBlockText {
    SlackBlockText::MarkDown(SlackBlockMarkDownText::new(text.into()))
}

fn plain(text: &str) -> SlackBlockPlainTextOnly {
    SlackBlockPlainTextOnly::from(text)
}

/// A section of already-escaped mrkdwn (at most [`SECTION_LIMIT`] characters).
pub fn section(text: impl Into<String>) -> SlackBlock {
    SlackSectionBlock::new().with_text(mrkdwn(truncate(&text.into(), SECTION_LIMIT))).into()
}

fn context(text: impl Into<String>) -> SlackBlock {
    SlackContextBlock::new(vec![SlackContextBlockElement::MarkDown(SlackBlockMarkDownText::new(truncate(&text.into(), SECTION_LIMIT)))])
        .into()
}

/// Group escaped lines into section texts of at most `limit` characters,
/// breaking only between lines; `heading` starts the first one. A single
/// line longer than a section is cut.
pub fn chunk_lines(heading: Option<&str>, lines: &[String], limit: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = heading.map(str::to_string).unwrap_or_default();
    let mut current_len = current.chars().count();
    for line in lines {
        let line = truncate(line, limit);
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

/// One line of agent text: escaped, and flattened so a newline inside a step
/// cannot fake another numbered step.
fn line(text: &str) -> String {
    escape(&text.replace(['\r', '\n'], " "))
}

/// A button whose `action_id` and `value` are both the codec's callback data.
pub fn button(label: &str, data: Button) -> SlackBlockButtonElement {
    let encoded = encode(data);
    SlackBlockButtonElement::new(plain(&truncate(label, BUTTON_TEXT_LIMIT)))
        .with_action_id(SlackActionId::new(encoded.clone()))
        .with_value(encoded)
}

/// The card's buttons in the engine's order, plus Edit (Slack has modals).
pub fn card_actions(card: &Card) -> SlackBlock {
    let id = card.approval_id;
    let mut elements: Vec<SlackActionBlockElement> = CardAction::ALL
        .iter()
        .map(|action| {
            let b = match action {
                CardAction::Approve => button(action.label(), Button::Approve(id)).with_style(SlackBlockButtonStyle::Primary),
                CardAction::RequestChanges => button(action.label(), Button::RequestChanges(id)),
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

/// Slack's own "are you sure?" dialog on Cancel.
fn cancel_confirm(card: &Card) -> SlackBlockConfirmItem {
    SlackBlockConfirmItem::new(
        plain("Cancel this plan?"),
        mrkdwn(truncate(
            &format!("This cancels *{}* {} and turns plan mode off for its session.", escape(&card.title), card.short_ref),
            300,
        )),
        plain("Yes, cancel"),
        plain("Keep it"),
    )
    .with_style("danger".to_string())
}

/// What a text-style destination shows instead of buttons.
fn commands_block(commands: &[String]) -> SlackBlock {
    let mut text = String::from("Reply with one of:");
    for c in commands {
        text.push_str(&format!("\n`{}`", escape(c)));
    }
    section(text)
}

/// The card as Block Kit blocks: body (cut to fit) then the fixed tail
/// (warning, receipt or buttons/commands), never more than [`MAX_BLOCKS`].
pub fn card_blocks(card: &Card, style: Style) -> Vec<SlackBlock> {
    let mut body: Vec<SlackBlock> = vec![
        SlackHeaderBlock::new(plain(&truncate(&card.title, HEADER_LIMIT))).into(),
        context(format!("{} · {}", escape(&card.context), card.short_ref)),
    ];
    if let Some(summary) = &card.summary {
        let lines: Vec<String> = summary.lines().map(escape).collect();
        body.extend(chunk_lines(None, &lines, SECTION_LIMIT).into_iter().map(section));
    }
    if !card.steps.is_empty() {
        let lines: Vec<String> = card.steps.iter().map(|s| format!("{}. {} {}", s.number, s.mark, line(&s.text))).collect();
        body.extend(chunk_lines(Some("*Steps*"), &lines, SECTION_LIMIT).into_iter().map(section));
    }
    for (heading, items) in [("*Risks*", &card.risks), ("*Assumptions*", &card.assumptions), ("*Verification*", &card.verification)] {
        if !items.is_empty() {
            let lines: Vec<String> = items.iter().map(|i| format!("• {}", line(i))).collect();
            body.extend(chunk_lines(Some(heading), &lines, SECTION_LIMIT).into_iter().map(section));
        }
    }
    let mut tail = Vec::new();
    if let Some(warning) = &card.warning {
        tail.push(section(format!(":warning: {}", escape(warning))));
    }
    match &card.receipt {
        Some(receipt) => tail.push(section(escape(receipt))),
        None if style == Style::Text => tail.push(commands_block(&card.commands)),
        None => tail.push(card_actions(card)),
    }
    fit(body, tail)
}

/// Body then tail; when both do not fit in [`MAX_BLOCKS`], the body is cut and
/// ends with [`CUT_NOTE`].
fn fit(mut body: Vec<SlackBlock>, tail: Vec<SlackBlock>) -> Vec<SlackBlock> {
    if body.len() + tail.len() > MAX_BLOCKS {
        body.truncate(MAX_BLOCKS - tail.len() - 1);
        body.push(section(format!("_{CUT_NOTE}_")));
    }
    body.extend(tail);
    body
}

/// Free text (command output, notices) as escaped sections, split at line
/// boundaries and cut to fit one message.
pub fn text_blocks(text: &str) -> Vec<SlackBlock> {
    let lines: Vec<String> = text.lines().map(escape).collect();
    let sections: Vec<SlackBlock> = chunk_lines(None, &lines, SECTION_LIMIT).into_iter().map(section).collect();
    fit(sections, Vec::new())
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
    let mut blocks = vec![section(escape(text))];
    if card.is_open() {
        blocks.push(if style == Style::Text { commands_block(&card.commands) } else { card_actions(card) });
    }
    blocks
}

/// An agent's question: one button per option (codec `Answer`), plus
/// "Other…" when free text is allowed; after the answer, no buttons.
pub fn question_blocks(question: &Question, style: Style) -> Vec<SlackBlock> {
    let who = escape(&format!("{}/{}", question.session.agent, question.session.session_id));
    let mut blocks = vec![section(format!("❓ *{who}* asks:\n{}", escape(&question.question)))];
    let answered = question.status == QuestionStatus::Answered || question.answer.is_some();
    if answered {
        let by = question.answered_by.as_deref().map(|b| format!(" by {}", escape(b))).unwrap_or_default();
        let answer = question.answer.as_deref().map(escape).unwrap_or_default();
        blocks.push(section(format!("✅ Answered{by}: {answer}")));
        return blocks;
    }
    let shown: Vec<(usize, &String)> = question.options.iter().enumerate().take(MAX_OPTIONS).collect();
    if style == Style::Text {
        let mut lines: Vec<String> = shown.iter().map(|(i, o)| format!("{}. {}", i + 1, line(o))).collect();
        lines.push(format!("Reply with `/plan answer {who} &lt;your answer&gt;`"));
        blocks.extend(chunk_lines(None, &lines, SECTION_LIMIT).into_iter().map(section));
        return blocks;
    }
    let mut elements: Vec<SlackActionBlockElement> =
        shown.iter().map(|(i, o)| button(o, Button::Answer(question.question_id, *i as u8)).into()).collect();
    if question.allow_freetext {
        elements.push(button("Other…", Button::AnswerOther(question.question_id)).into());
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
        section(escape(prompt)),
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
}

impl ModalKind {
    pub fn callback_id(self) -> &'static str {
        match self {
            ModalKind::Feedback => FEEDBACK_MODAL,
            ModalKind::Edit => EDIT_MODAL,
            ModalKind::Answer => ANSWER_MODAL,
        }
    }

    pub fn from_callback_id(id: &str) -> Option<ModalKind> {
        match id {
            FEEDBACK_MODAL => Some(ModalKind::Feedback),
            EDIT_MODAL => Some(ModalKind::Edit),
            ANSWER_MODAL => Some(ModalKind::Answer),
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

/// A modal with one multiline input. `prompt` is shown above it.
pub fn modal(kind: ModalKind, meta: &ModalMeta, prompt: &str, initial: Option<String>) -> SlackView {
    let (title, label, submit) = match kind {
        ModalKind::Feedback => ("Request changes", "What should change?", "Send"),
        ModalKind::Edit => ("Edit plan", "Steps, one per line", "Approve"),
        ModalKind::Answer => ("Answer the agent", "Your answer", "Send"),
    };
    let mut blocks = Vec::new();
    if !prompt.trim().is_empty() {
        blocks.push(section(escape(prompt)));
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

/// Steps typed into the edit modal: one per line, list markers removed.
pub fn parse_steps(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let l = l.trim();
            let unnumbered = l.trim_start_matches(|c: char| c.is_ascii_digit());
            let l = if unnumbered.len() < l.len() && (unnumbered.starts_with(". ") || unnumbered.starts_with(") ")) {
                &unnumbered[2..]
            } else {
                l
            };
            l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")).or_else(|| l.strip_prefix("• ")).unwrap_or(l).trim().to_string()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

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
