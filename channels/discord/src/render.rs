//! Engine values → Discord payloads. Pure functions, no I/O.
//!
//! Every agent-written string is markdown-escaped and every size limit is
//! respected here, so the transport code never has to think about either.

use plangate_channel::{Document, Reply};
use plangate_engine::card::{self, render_text, Card, CardAction, Fit, REPLY_WITH};
use plangate_engine::codec::{encode, Button};
use plangate_engine::{DecisionStatus, Question, QuestionStatus};
use serenity::all::{ButtonStyle, CommandOptionType, InputTextStyle};
use serenity::builder::{
    CreateActionRow, CreateAllowedMentions, CreateAttachment, CreateButton, CreateCommand, CreateCommandOption, CreateEmbed,
    CreateEmbedFooter, CreateInputText, CreateInteractionResponse, CreateInteractionResponseMessage, CreateModal, EditInteractionResponse,
};

/// What a cut says; the attached document always carries everything.
pub(crate) use plangate_engine::card::CUT_NOTE;
/// Cut note for text that has no attached document.
pub(crate) const CUT_SHORT: &str = "…";

pub(crate) const CONTENT_MAX: usize = 2000;
pub(crate) const TITLE_MAX: usize = 256;
pub(crate) const DESCRIPTION_MAX: usize = 4096;
pub(crate) const FIELD_MAX: usize = 1024;
pub(crate) const FIELDS_MAX: usize = 25;
pub(crate) const FOOTER_MAX: usize = 2048;
pub(crate) const EMBED_TOTAL_MAX: usize = 6000;
pub(crate) const LABEL_MAX: usize = 80;
pub(crate) const MODAL_TITLE_MAX: usize = 45;
pub(crate) const PLACEHOLDER_MAX: usize = 100;
pub(crate) const INPUT_MAX: usize = 4000;
/// Button rows per message and buttons per row.
const ROWS_MAX: usize = 5;
const ROW_WIDTH: usize = 5;

/// The text input every plangate modal carries.
pub(crate) const INPUT_ID: &str = "text";
/// The approve modal's field for the steps to leave out.
pub(crate) const EXCEPT_ID: &str = "except";

fn count(s: &str) -> usize {
    s.chars().count()
}

/// Escape Discord markdown so agent text shows literally: `\ * _ ~ ` | < > [ ] @`
/// everywhere, and `#`, `-`, `+` where they would start a header or list.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut line_start = true;
    for c in text.chars() {
        let special =
            matches!(c, '\\' | '*' | '_' | '~' | '`' | '|' | '<' | '>' | '[' | ']' | '@') || (line_start && matches!(c, '#' | '-' | '+'));
        if special {
            out.push('\\');
        }
        out.push(c);
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
    }
    out
}

/// At most `max` characters: cut with "…" and never leave a dangling escape.
pub(crate) fn cut_chars(text: &str, max: usize) -> String {
    plangate_basics::text::cut_chars_then(text, max, |out| {
        if out.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1 {
            out.pop();
        }
    })
}

fn lens(lines: &[String]) -> Vec<usize> {
    lines.iter().map(|l| count(l)).collect()
}

/// Join as many whole lines as fit in `cap` characters (the engine's
/// [`card::whole_lines`]); a first line longer than `cap` is cut. Returns
/// the text and how many lines it used.
fn pack_prefix(lines: &[String], cap: usize) -> (String, usize) {
    match card::whole_lines(&lens(lines), 1, cap) {
        0 if cap >= 2 && !lines.is_empty() => (cut_chars(&lines[0], cap), 1),
        used => (lines[..used].join("\n"), used),
    }
}

/// `lines` joined, or as many as fit in `max` followed by `note` on its own
/// line (the engine's [`card::fit_lines`]).
pub(crate) fn fit_lines(lines: &[String], max: usize, note: &str) -> String {
    match card::fit_lines(&lens(lines), 1, max, count(note)) {
        Fit::All => lines.join("\n"),
        Fit::Cut(_) => {
            let (mut text, _) = pack_prefix(lines, max.saturating_sub(count(note) + 1));
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(note);
            text
        }
    }
}

/// Escape each line of plain text and fit it into a message.
pub(crate) fn message_text(text: &str, max: usize, note: &str) -> String {
    let lines: Vec<String> = text.lines().map(escape).collect();
    fit_lines(&lines, max, note)
}

/// No pings, whatever the text says.
pub(crate) fn no_mentions() -> CreateAllowedMentions {
    CreateAllowedMentions::new().everyone(false).all_users(false).all_roles(false).replied_user(false)
}

fn status_colour(status: DecisionStatus) -> u32 {
    match status {
        DecisionStatus::Pending => 0x5865F2,
        DecisionStatus::Approved | DecisionStatus::Edited => 0x57F287,
        DecisionStatus::Rejected => 0xFEE75C,
        DecisionStatus::TimedOut | DecisionStatus::Cancelled => 0xED4245,
        DecisionStatus::Superseded => 0x99AAB5,
    }
}

/// The parts of a card embed, before they become serenity's builder (kept
/// separate so the limits can be checked in unit tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EmbedParts {
    pub title: String,
    pub description: String,
    pub fields: Vec<(String, String)>,
    pub footer: Option<String>,
    pub colour: u32,
}

impl EmbedParts {
    #[cfg(test)]
    pub fn total(&self) -> usize {
        count(&self.title)
            + count(&self.description)
            + self.fields.iter().map(|(n, v)| count(n) + count(v)).sum::<usize>()
            + self.footer.as_deref().map_or(0, count)
    }

    pub fn build(self) -> CreateEmbed {
        let mut embed = CreateEmbed::new().title(self.title).description(self.description).colour(self.colour);
        for (name, value) in self.fields {
            embed = embed.field(name, value, false);
        }
        if let Some(footer) = self.footer {
            embed = embed.footer(CreateEmbedFooter::new(footer));
        }
        embed
    }
}

/// The card as one embed: title, context and summary in the description,
/// a field per section (continued in more fields past 1024 characters), the
/// receipt as the footer. Everything within Discord's limits; the first
/// thing that does not fit ends the embed with [`CUT_NOTE`].
pub(crate) fn card_embed_parts(card: &Card) -> EmbedParts {
    let reserve = count(CUT_NOTE) + 1;
    let title = cut_chars(&escape(&format!("📋 {}", card.title)), TITLE_MAX);
    let footer = card.receipt.as_deref().map(|r| cut_chars(&escape(r), FOOTER_MAX));
    let mut budget = EMBED_TOTAL_MAX - count(&title) - footer.as_deref().map_or(0, count);

    let mut description_lines = Vec::new();
    if let Some(warning) = &card.warning {
        description_lines.extend(warning.lines().map(escape));
        description_lines.push(String::new());
    }
    description_lines.push(escape(&format!("{} · {}", card.context, card.short_ref)));
    if let Some(link) = &card.link {
        description_lines.push(format!("[🌐 {}]({link})", plangate_engine::card::OPEN_IN_BROWSER));
    }
    if let Some(summary) = &card.summary {
        description_lines.push(String::new());
        description_lines.extend(summary.lines().map(escape));
    }
    let cap = DESCRIPTION_MAX.min(budget).saturating_sub(reserve);
    let (mut description, used) = pack_prefix(&description_lines, cap);
    let mut truncated = used < description_lines.len();
    budget -= count(&description);

    let sections: Vec<(&str, Vec<String>)> = card
        .sections()
        .into_iter()
        .map(|s| (s.heading, s.entries.iter().map(|e| format!("{} {}", e.marker, escape(e.text))).collect()))
        .collect();
    let mut fields: Vec<(String, String)> = Vec::new();
    'sections: for (heading, lines) in sections.iter() {
        if truncated {
            break;
        }
        let mut rest = &lines[..];
        let mut name = heading.to_string();
        while !rest.is_empty() {
            let name_len = count(&name);
            // Room for this field's name, a useful value, and the cut note.
            if fields.len() >= FIELDS_MAX || budget < name_len + reserve + 16 {
                truncated = true;
                break 'sections;
            }
            let cap = FIELD_MAX.min(budget - name_len).saturating_sub(reserve);
            let (value, used) = pack_prefix(rest, cap);
            if used == 0 {
                truncated = true;
                break 'sections;
            }
            budget -= name_len + count(&value);
            fields.push((name.clone(), value));
            rest = &rest[used..];
            name = format!("{heading} (cont.)");
        }
    }
    if truncated {
        match fields.last_mut() {
            Some((_, value)) => {
                value.push('\n');
                value.push_str(CUT_NOTE);
            }
            None => {
                description.push('\n');
                description.push_str(CUT_NOTE);
            }
        }
    }
    EmbedParts { title, description, fields, footer, colour: status_colour(card.status) }
}

fn button(label: &str, style: ButtonStyle, data: Button) -> CreateButton {
    CreateButton::new(encode(data)).label(cut_chars(label, LABEL_MAX)).style(style)
}

/// The engine's buttons (Approve · [Approve edit] · Approve with note… ·
/// Request changes · Claim · Cancel · View plan) and Edit, while the card is open,
/// [`ROW_WIDTH`] to a row.
pub(crate) fn card_buttons(card: &Card) -> Vec<CreateActionRow> {
    if !card.is_open() {
        return Vec::new();
    }
    let id = card.approval_id;
    let mut row: Vec<CreateButton> = card
        .actions()
        .iter()
        .map(|action| match action {
            CardAction::Approve => button(action.label(), ButtonStyle::Success, Button::Approve(id)),
            CardAction::ApproveWithNote => button(action.label(), ButtonStyle::Success, Button::ApproveWithNote(id)),
            CardAction::ApproveEdit => button(action.label(), ButtonStyle::Success, Button::ApproveEdit(id)),
            CardAction::RequestChanges => button(action.label(), ButtonStyle::Primary, Button::RequestChanges(id)),
            CardAction::Claim => button(action.label(), ButtonStyle::Secondary, Button::Claim(id)),
            CardAction::Cancel => button(action.label(), ButtonStyle::Danger, Button::Cancel(id)),
            CardAction::View => button(action.label(), ButtonStyle::Secondary, Button::View(id)),
        })
        .collect();
    row.push(button("Edit", ButtonStyle::Secondary, Button::Edit(id)));
    row.chunks(ROW_WIDTH).map(|buttons| CreateActionRow::Buttons(buttons.to_vec())).collect()
}

/// The engine's "Reply with one of:" and the commands, as code, while the
/// card is open; empty otherwise.
fn reply_commands(card: &Card) -> String {
    let Some(commands) = card.reply_commands() else { return String::new() };
    let mut text = REPLY_WITH.to_string();
    for command in commands {
        text.push_str(&format!("\n`{}`", command.replace('`', "'")));
    }
    text
}

/// A text-style card: the plain-text card with the commands to type, no embed,
/// no components. The commands always survive the cut.
pub(crate) fn text_card_content(card: &Card) -> String {
    let commands = match reply_commands(card) {
        c if c.is_empty() => c,
        c => format!("\n\n{c}"),
    };
    let body = message_text(render_text(card, false).trim_end(), CONTENT_MAX - count(&commands), CUT_NOTE);
    format!("{body}{commands}")
}

/// A nudge's content (the commands again for text-style destinations).
pub(crate) fn nudge_content(text: &str, card: &Card, with_commands: bool) -> String {
    let commands = match reply_commands(card) {
        c if c.is_empty() || !with_commands => String::new(),
        c => format!("\n{c}"),
    };
    let body = message_text(text, CONTENT_MAX - count(&commands), CUT_SHORT);
    format!("{body}{commands}")
}

/// A question: who asks, the question, the numbered options, and once
/// answered who answered what.
pub(crate) fn question_content(question: &Question, text_style: bool) -> String {
    let (icon, title) = card::question_title(question);
    // plangate's own questions (a permission request, a stalled plan)
    // name what they are; an agent's question says who asks.
    let ours = question.permission.is_some() || question.stalled.is_some();
    let mut lines = vec![if ours {
        format!("{icon}**{}**", escape(&title))
    } else {
        format!("❓ **{} asks:**", escape(&question.session.to_string()))
    }];
    lines.extend(question.question.lines().map(escape));
    if !question.options.is_empty() {
        lines.push(String::new());
        lines.extend(question.options.iter().enumerate().map(|(i, o)| format!("{}. {}", i + 1, escape(o))));
    }
    let mut tail = String::new();
    if let Some(outcome) = card::question_outcome(question) {
        tail = format!("\n\n{}", cut_chars(&escape(&outcome), 900));
    } else if text_style && ours {
        tail = format!("\n\n{}", escape(&card::question_reply_hint(question)));
    } else if text_style {
        tail = format!("\n\nReply with `/plan answer {} <your answer>`", question.session.to_string().replace('`', "'"));
    }
    let body = fit_lines(&lines, CONTENT_MAX - count(&tail), CUT_SHORT);
    format!("{body}{tail}")
}

/// One button per option (the engine's [`card::option_buttons`]) and
/// "Other…" when free text is allowed; none once answered.
pub(crate) fn question_buttons(question: &Question) -> Vec<CreateActionRow> {
    if question.status != QuestionStatus::Pending {
        return Vec::new();
    }
    let mut buttons: Vec<CreateButton> =
        card::option_buttons(question).map(|(data, option)| button(option, ButtonStyle::Primary, data)).collect();
    if question.allow_freetext {
        buttons.push(button(card::other_label(question), ButtonStyle::Secondary, Button::AnswerOther(question.question_id)));
    }
    buttons.chunks(ROW_WIDTH).take(ROWS_MAX).map(|row| CreateActionRow::Buttons(row.to_vec())).collect()
}

pub(crate) fn attachment(document: &Document) -> CreateAttachment {
    CreateAttachment::bytes(document.text.clone().into_bytes(), document.file_name.clone())
}

/// `/plan` with one subcommand per verb of the grammar, each with an
/// optional `target` (`#id` or `agent/session`).
pub(crate) fn plan_command() -> CreateCommand {
    let target = |what: &str| CreateCommandOption::new(CommandOptionType::String, "target", what).required(false).max_length(100);
    let plan_target = || target("#id from the card, or agent/session (when this channel has several plans)");
    let text = |name: &str, what: &str| CreateCommandOption::new(CommandOptionType::String, name, what).required(true).max_length(4000);
    let sub = |name: &str, what: &str, options: Vec<CreateCommandOption>| {
        options.into_iter().fold(CreateCommandOption::new(CommandOptionType::SubCommand, name, what), |s, o| s.add_sub_option(o))
    };
    CreateCommand::new("plan")
        .description("Review and decide AI agents' plans (plangate)")
        .add_option(sub("help", "The commands and this channel's plans", vec![]))
        .add_option(sub("status", "Status of the plans in this channel", vec![plan_target()]))
        .add_option(sub("list", "List the sessions in this channel", vec![]))
        .add_option(sub("view", "Send the full plan document", vec![plan_target()]))
        .add_option(sub("accept", "Approve the pending plan", vec![plan_target()]))
        .add_option(sub(
            "changes",
            "Request changes: the agent keeps planning",
            vec![text("feedback", "What should change"), plan_target()],
        ))
        .add_option(sub("edit", "Approve with these steps instead", vec![text("steps", "The steps, separated by ;"), plan_target()]))
        .add_option(sub("cancel", "Cancel the pending plan; the agent stays read-only", vec![plan_target()]))
        .add_option(sub("answer", "Answer the agent's question", vec![text("text", "Your answer"), plan_target()]))
        .add_option(sub("on", "Turn plan mode on", vec![target("agent/session")]))
        .add_option(sub("off", "Release the session: no plan required", vec![plan_target()]))
        .add_option(sub(
            "auto",
            "Approve later plans automatically (on) or not (off)",
            vec![
                CreateCommandOption::new(CommandOptionType::String, "state", "on or off")
                    .required(true)
                    .add_string_choice("on", "on")
                    .add_string_choice("off", "off"),
                plan_target(),
            ],
        ))
        .add_option(sub("restate", "Post the plan card again", vec![plan_target()]))
        .add_option(sub(
            "allow",
            "Allow the waiting permission request",
            vec![
                CreateCommandOption::new(CommandOptionType::String, "grade", "How far the allow reaches")
                    .required(true)
                    .add_string_choice("once", "once")
                    .add_string_choice("for this session", "session")
                    .add_string_choice("always", "always"),
                target("agent/session (when this channel has several requests)"),
            ],
        ))
        .add_option(sub(
            "deny",
            "Deny the waiting permission request",
            vec![
                CreateCommandOption::new(CommandOptionType::String, "reason", "Why (the agent reads it)").required(false).max_length(1000),
                target("agent/session (when this channel has several requests)"),
            ],
        ))
        .add_option(sub(
            "rules",
            "The permission rules of this channel's agents",
            vec![CreateCommandOption::new(CommandOptionType::Integer, "remove", "Remove stored rule N (as listed)")
                .required(false)
                .min_int_value(1)],
        ))
        .add_option(sub("web", "A personal sign-in link for the web page, shown only to you", vec![]))
        .add_option(sub(
            "pair",
            "Make this channel a destination with the code `plangate pair discord` printed",
            vec![text("code", "The code")],
        ))
        .add_option(sub(
            "approvers",
            "This channel's approvers: list, add or remove a person",
            vec![
                CreateCommandOption::new(CommandOptionType::String, "action", "list, add or remove")
                    .required(false)
                    .add_string_choice("list", "list")
                    .add_string_choice("add", "add")
                    .add_string_choice("remove", "remove"),
                CreateCommandOption::new(CommandOptionType::User, "user", "The person to add or remove").required(false),
            ],
        ))
}

/// How an interaction is answered.
pub(crate) enum Answer {
    /// The initial response, nothing after it.
    Now(CreateInteractionResponse),
    /// Defer (ephemeral "thinking…"), then replace it with this (and the file).
    Later(EditInteractionResponse, Option<CreateAttachment>),
}

/// What kind of interaction a reply answers; decides which responses are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Context {
    /// A component click, or a modal opened from one: `DEFERRED_UPDATE_MESSAGE` is valid.
    pub has_message: bool,
    /// A modal submission cannot be answered with another modal.
    pub is_modal_submit: bool,
}

/// The initial response that defers a reply (ephemeral loading state).
pub(crate) fn defer() -> CreateInteractionResponse {
    CreateInteractionResponse::Defer(CreateInteractionResponseMessage::new().ephemeral(true))
}

fn ephemeral(content: String) -> CreateInteractionResponseMessage {
    CreateInteractionResponseMessage::new().content(content).ephemeral(true).allowed_mentions(no_mentions())
}

fn modal(custom_id: Button, title: String, label: &str, placeholder: Option<&str>, value: Option<String>) -> CreateModal {
    let mut input = CreateInputText::new(InputTextStyle::Paragraph, label, INPUT_ID).required(true).max_length(INPUT_MAX as u16);
    if let Some(p) = placeholder.map(|p| cut_chars(p.trim(), PLACEHOLDER_MAX)).filter(|p| !p.is_empty()) {
        input = input.placeholder(p);
    }
    if let Some(v) = value {
        input = input.value(v);
    }
    CreateModal::new(encode(custom_id), cut_chars(&title, MODAL_TITLE_MAX)).components(vec![CreateActionRow::InputText(input)])
}

/// The approve modal: an optional note and the numbers of the steps to
/// leave out. Discord's modals (as serenity 0.12 builds them) hold text
/// inputs only, so the step picker is a field for step numbers; the card
/// numbers every step.
fn approve_modal(id: plangate_engine::ApprovalId, version: u32, steps: usize, prompt: &str) -> CreateModal {
    let mut note = CreateInputText::new(InputTextStyle::Paragraph, "Note for the agent (optional)", INPUT_ID)
        .required(false)
        .max_length(plangate_engine::review::MAX_NOTE_CHARS as u16);
    if let Some(p) = Some(cut_chars(prompt.trim(), PLACEHOLDER_MAX)).filter(|p| !p.is_empty()) {
        note = note.placeholder(p);
    }
    let except = CreateInputText::new(InputTextStyle::Short, "Leave out steps (optional)", EXCEPT_ID)
        .required(false)
        .max_length(200)
        .placeholder(cut_chars(&format!("Step numbers of 1–{steps}, e.g. 3, 5; empty approves every step"), PLACEHOLDER_MAX));
    CreateModal::new(encode(Button::ApproveWithNote(id)), cut_chars(&format!("Approve v{version}"), MODAL_TITLE_MAX))
        .components(vec![CreateActionRow::InputText(note), CreateActionRow::InputText(except)])
}

/// The text a late or modal-less `Ask*` reply shows instead of a modal.
fn ask_as_text(reply: &Reply) -> Option<String> {
    Some(match reply {
        Reply::AskFeedback { approval_id, prompt, .. } => {
            format!("{prompt}\nSend `/plan changes #{} <what should change>`", approval_id.short())
        }
        Reply::AskEdit { approval_id, .. } => format!("Send `/plan edit #{} <step 1>; <step 2>; …`", approval_id.short()),
        Reply::AskApproval { approval_id, prompt, .. } => {
            format!("{prompt}\nSend `/plan accept #{} except <step numbers> -- <note>`", approval_id.short())
        }
        Reply::AskAnswer { prompt, .. } => format!("{prompt}\nSend `/plan answer <your answer>`"),
        _ => return None,
    })
}

/// Text that contains commands in backticks: escape only the prompt part.
fn escape_prompt_with_command(text: &str) -> String {
    match text.split_once("\nSend `") {
        Some((prompt, command)) => format!("{}\nSend `{command}", message_text(prompt, CONTENT_MAX - 200, CUT_SHORT)),
        None => text.to_string(),
    }
}

fn confirm_row(approval_id: plangate_engine::ApprovalId, version: u32) -> Vec<CreateActionRow> {
    vec![CreateActionRow::Buttons(vec![button(
        &format!("Yes, cancel v{version}"),
        ButtonStyle::Danger,
        Button::ConfirmCancel(approval_id),
    )])]
}

/// Render `reply` as the interaction's answer. `late`: the interaction was
/// already deferred, so only an edit of that response is possible.
pub(crate) fn render_reply(reply: &Reply, ctx: Context, late: bool) -> Answer {
    let text = |t: &str| message_text(t, CONTENT_MAX, CUT_SHORT);
    let later = |content: String| Answer::Later(EditInteractionResponse::new().content(content).allowed_mentions(no_mentions()), None);
    match reply {
        Reply::Document { document, caption } => {
            let file = attachment(document);
            let edit = EditInteractionResponse::new().content(text(caption)).allowed_mentions(no_mentions()).new_attachment(file.clone());
            Answer::Later(edit, Some(file))
        }
        _ if late => match reply {
            Reply::None => later("✓".into()),
            Reply::Notice(t) | Reply::Text(t) | Reply::Private(t) | Reply::Announce(t) => later(text(t)),
            Reply::ConfirmCancel { approval_id, version, prompt } => Answer::Later(
                EditInteractionResponse::new()
                    .content(text(prompt))
                    .components(confirm_row(*approval_id, *version))
                    .allowed_mentions(no_mentions()),
                None,
            ),
            other => later(ask_as_text(other).map(|t| escape_prompt_with_command(&t)).unwrap_or_default()),
        },
        Reply::None if ctx.has_message => Answer::Now(CreateInteractionResponse::Acknowledge),
        Reply::None => Answer::Now(CreateInteractionResponse::Message(ephemeral("✓".into()))),
        Reply::Notice(t) | Reply::Text(t) | Reply::Private(t) => Answer::Now(CreateInteractionResponse::Message(ephemeral(text(t)))),
        Reply::Announce(t) => Answer::Now(CreateInteractionResponse::Message(
            CreateInteractionResponseMessage::new().content(text(t)).allowed_mentions(no_mentions()),
        )),
        Reply::ConfirmCancel { approval_id, version, prompt } => {
            Answer::Now(CreateInteractionResponse::Message(ephemeral(text(prompt)).components(confirm_row(*approval_id, *version))))
        }
        other if ctx.is_modal_submit => Answer::Now(CreateInteractionResponse::Message(ephemeral(
            ask_as_text(other).map(|t| escape_prompt_with_command(&t)).unwrap_or_default(),
        ))),
        Reply::AskFeedback { approval_id, version, prompt } => Answer::Now(CreateInteractionResponse::Modal(modal(
            Button::RequestChanges(*approval_id),
            format!("Request changes to v{version}"),
            "What should change?",
            Some(prompt),
            None,
        ))),
        Reply::AskEdit { approval_id, version, steps } => {
            let steps: Vec<String> = steps.iter().map(|s| s.replace('\n', " ")).collect();
            let (value, _) = pack_prefix(&steps, INPUT_MAX);
            Answer::Now(CreateInteractionResponse::Modal(modal(
                Button::Edit(*approval_id),
                format!("Edit the steps of v{version}"),
                "Steps, one per line",
                None,
                Some(value),
            )))
        }
        Reply::AskApproval { approval_id, version, steps, prompt } => {
            Answer::Now(CreateInteractionResponse::Modal(approve_modal(*approval_id, *version, steps.len(), prompt)))
        }
        Reply::AskAnswer { question_id, prompt } => Answer::Now(CreateInteractionResponse::Modal(modal(
            Button::AnswerOther(*question_id),
            "Answer the agent".into(),
            "Your answer",
            Some(prompt),
            None,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_engine::card::CardStep;
    use plangate_engine::ApprovalId;

    pub(crate) fn card(steps: usize, step_len: usize) -> Card {
        Card {
            context: "demo/s1 · v2 · just now".into(),
            summary: Some("Make the client retry.".into()),
            steps: (1..=steps).map(|n| CardStep { number: n, mark: "⏳", text: format!("step {n} {}", "x".repeat(step_len)) }).collect(),
            risks: vec!["none".into()],
            verification: vec!["cargo test".into()],
            commands: vec!["/plan accept #ababab".into()],
            version: 2,
            ..plangate_testkit::cards::pending(ApprovalId([0xab; 16]), "Add retries", &[])
        }
    }

    #[test]
    fn escaping_neutralises_markdown_and_mentions() {
        assert_eq!(
            escape("@everyone *bold* _x_ `c` <@123> [a](b) ||s||"),
            "\\@everyone \\*bold\\* \\_x\\_ \\`c\\` \\<\\@123\\> \\[a\\](b) \\|\\|s\\|\\|"
        );
        assert_eq!(escape("# head\n- item\nx-y #1"), "\\# head\n\\- item\nx-y #1");
        assert_eq!(escape("a\\b"), "a\\\\b");
    }

    #[test]
    fn cut_never_leaves_a_dangling_escape() {
        let s = escape("****");
        let cut = cut_chars(&s, 4);
        assert_eq!(cut, "\\*…");
        assert!(count(&cut) <= 4);
    }

    #[test]
    fn small_card_fits_whole() {
        let parts = card_embed_parts(&card(3, 5));
        assert_eq!(parts.title, "📋 Add retries");
        assert_eq!(parts.description, "demo/s1 · v2 · just now · #ababab\n\nMake the client retry.");
        assert_eq!(parts.fields.len(), 3);
        assert_eq!(parts.fields[0].1, "1. ⏳ step 1 xxxxx\n2. ⏳ step 2 xxxxx\n3. ⏳ step 3 xxxxx");
        assert!(!parts.fields.iter().any(|(_, v)| v.contains(CUT_NOTE)));
    }

    #[test]
    fn every_limit_holds_for_huge_cards() {
        for (steps, len) in [(200, 50), (40, 2000), (1, 9000), (30, 100)] {
            let mut c = card(steps, len);
            c.summary = Some("s ".repeat(len * 3));
            c.risks = (0..50).map(|i| format!("risk {i} {}", "r".repeat(len / 2))).collect();
            c.receipt = Some("✅ Approved v2 by discord:@alice · 14:02 UTC".into());
            let parts = card_embed_parts(&c);
            assert!(parts.total() <= EMBED_TOTAL_MAX, "{} > 6000 for {steps}×{len}", parts.total());
            assert!(count(&parts.description) <= DESCRIPTION_MAX);
            assert!(count(&parts.title) <= TITLE_MAX);
            assert!(parts.fields.len() <= FIELDS_MAX);
            for (name, value) in &parts.fields {
                assert!(count(value) <= FIELD_MAX, "{name}: {}", count(value));
                assert!(!value.is_empty());
            }
            let all = format!("{}{}", parts.description, parts.fields.iter().map(|f| f.1.clone()).collect::<String>());
            assert!(all.ends_with(CUT_NOTE), "{steps}×{len} was cut without the note");
            assert_eq!(parts.footer.as_deref(), Some("✅ Approved v2 by discord:\\@alice · 14:02 UTC"));
        }
    }

    #[test]
    fn text_card_keeps_commands_past_the_cut() {
        let c = card(100, 60);
        let content = text_card_content(&c);
        assert!(count(&content) <= CONTENT_MAX);
        assert!(content.contains(CUT_NOTE));
        assert!(content.ends_with("Reply with one of:\n`/plan accept #ababab`"));
    }

    #[test]
    fn text_nudges_repeat_the_commands_under_the_cards_header() {
        let c = card(1, 1);
        assert_eq!(nudge_content("⏰ waited", &c, true), "⏰ waited\nReply with one of:\n`/plan accept #ababab`");
        assert_eq!(nudge_content("⏰ waited", &c, false), "⏰ waited");
        let mut decided = c.clone();
        decided.receipt = Some("done".into());
        assert_eq!(nudge_content("⏰ waited", &decided, true), "⏰ waited");
    }

    #[test]
    fn buttons_fit_discord() {
        let c = card(1, 1);
        let rows = serde_json::to_value(card_buttons(&c)).unwrap();
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let buttons: Vec<&serde_json::Value> = rows.iter().flat_map(|r| r["components"].as_array().unwrap()).collect();
        assert_eq!(buttons.len(), 7);
        assert!(rows.iter().all(|r| r["components"].as_array().unwrap().len() <= ROW_WIDTH));
        for b in buttons {
            assert!(b["custom_id"].as_str().unwrap().len() <= 100);
            assert!(b["label"].as_str().unwrap().chars().count() <= LABEL_MAX);
        }
        let mut decided = c.clone();
        decided.receipt = Some("done".into());
        assert!(card_buttons(&decided).is_empty());
    }
}
