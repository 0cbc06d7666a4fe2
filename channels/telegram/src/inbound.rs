//! The inbound half: one Telegram update → one [`Inbound`] for the server's
//! handler, and the [`Reply`] rendered the Telegram way (toast, message,
//! ForceReply prompt, confirm button, document). Shared by polling and the
//! webhook, so both transports behave identically.

use crate::outbound::{TelegramChannel, PLATFORM};
use crate::render::{self, Prompt, TEXT_LIMIT};
use plangate_channel::{Action, Inbound, InboundHandler, Reply, User};
use plangate_engine::codec::{self, Button, MAX_CALLBACK_BYTES};
use plangate_engine::grammar;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use teloxide::types::{
    CallbackQuery, ChatId, ForceReply, InlineKeyboardMarkup, Message, MessageId, ReplyMarkup, Update, UpdateKind, User as TgUser, UserId,
};
use tracing::Instrument;

/// The toast for callback data that is not a plangate button.
pub const UNKNOWN_BUTTON: &str = "Unknown button";
/// Prompts cached in memory; every prompt is also recorded durably through
/// the handler's store, so older ones (and all of them after a restart)
/// still work.
const MAX_PROMPTS: usize = 1024;

/// The durable key of the prompt sent as `message` in `chat`.
fn prompt_key(chat: ChatId, message: MessageId) -> String {
    format!("telegram:prompt:{}:{}", chat.0, message.0)
}

#[derive(Default)]
struct Prompts {
    by_message: HashMap<(ChatId, MessageId), Prompt>,
    order: VecDeque<(ChatId, MessageId)>,
}

/// Where a reply goes: the chat, the person, and the message to answer.
struct Origin<'a> {
    chat: ChatId,
    user: &'a TgUser,
    reply_to: Option<MessageId>,
    /// True for button clicks, whose Notice was already shown as a toast.
    from_callback: bool,
}

/// Turns Telegram updates into [`Inbound`] events for the server and renders
/// its [`Reply`]s; shared by long polling and the webhook.
pub(crate) struct UpdateHandler {
    pub(crate) out: Arc<TelegramChannel>,
    handler: Arc<dyn InboundHandler>,
    me: UserId,
    /// For `/plan@<username>` in groups.
    username: Option<String>,
    prompts: Mutex<Prompts>,
}

/// The key the server dedupes on, also across restarts and transports.
pub fn idempotency_key(update_id: u32) -> String {
    format!("telegram:update:{update_id}")
}

fn user_of(u: &TgUser) -> User {
    let name = match &u.username {
        Some(username) => format!("@{username}"),
        None => u.full_name(),
    };
    User { id: u.id.0.to_string(), name, team: None }
}

/// The button a callback's data names, when it names one.
fn inbound_button(raw: &str) -> Option<Button> {
    match decode_callback(raw) {
        Action::Button(button) => Some(button),
        _ => None,
    }
}

/// Callback data is chosen by the client: anything over Telegram's 64 bytes
/// or outside the codec is an unknown button (clipped before it travels on).
fn decode_callback(raw: &str) -> Action {
    if raw.len() > MAX_CALLBACK_BYTES {
        let mut end = MAX_CALLBACK_BYTES;
        while !raw.is_char_boundary(end) {
            end -= 1;
        }
        return Action::UnknownButton(format!("{}…", &raw[..end]));
    }
    match codec::decode(raw) {
        Ok(button) => Action::Button(button),
        Err(_) => Action::UnknownButton(raw.to_string()),
    }
}

/// The words after `/plan` (or `/plan@Bot`) of a command that did not parse.
fn command_args(text: &str) -> String {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(i) => text[i..].trim().to_string(),
        None => String::new(),
    }
}

impl UpdateHandler {
    pub(crate) fn new(out: Arc<TelegramChannel>, handler: Arc<dyn InboundHandler>, me: UserId, username: Option<String>) -> UpdateHandler {
        UpdateHandler { out, handler, me, username, prompts: Mutex::new(Prompts::default()) }
    }

    pub(crate) fn handler(&self) -> &Arc<dyn InboundHandler> {
        &self.handler
    }

    /// Handle one update to the end: the handler has seen it and every reply
    /// (and the callback answer) has been sent or logged as failed.
    pub(crate) async fn handle_update(&self, update: Update) {
        let key = idempotency_key(update.id.0);
        match update.kind {
            UpdateKind::Message(message) => {
                let span = tracing::info_span!("telegram.inbound", update_id = update.id.0, kind = "message", chat = message.chat.id.0);
                self.on_message(key, message).instrument(span).await
            }
            UpdateKind::CallbackQuery(query) => {
                let span =
                    tracing::info_span!("telegram.inbound", update_id = update.id.0, kind = "callback_query", user = query.from.id.0);
                self.on_callback(key, query).instrument(span).await
            }
            _ => tracing::debug!(update_id = update.id.0, "ignoring an update plangate does not use"),
        }
    }

    /// Every callback query is answered exactly once, whatever happens.
    async fn on_callback(&self, key: String, query: CallbackQuery) {
        let Some(message) = query.message.as_ref() else {
            // Inline-mode messages: plangate never sends any, so not ours.
            self.answer(&query, Some(UNKNOWN_BUTTON.to_string())).await;
            return;
        };
        let chat = message.chat().id;
        let raw = query.data.as_deref().unwrap_or_default();
        let action = decode_callback(raw);
        let unknown = matches!(action, Action::UnknownButton(_));
        if unknown {
            tracing::warn!(bytes = raw.len(), "callback data is not a plangate button");
        }
        let thread = message.regular_message().and_then(topic_of);
        let inbound =
            Inbound { channel: PLATFORM, chat: chat.0.to_string(), user: user_of(&query.from), action, idempotency_key: Some(key), thread };
        let reply = self.handler.handle(inbound).await;
        let toast = match &reply {
            Reply::Notice(text) => Some(text.clone()),
            _ if unknown => Some(UNKNOWN_BUTTON.to_string()),
            _ => None,
        };
        self.answer(&query, toast.clone()).await;
        // The "Yes, cancel vN" message has done its job either way: it keeps
        // no live button, and says what the tap did (a second tap on an
        // old confirmation would only meet "already decided").
        if matches!(inbound_button(raw), Some(Button::ConfirmCancel(_))) {
            let outcome = toast.unwrap_or_else(|| "Done.".to_string());
            let html = render::text_html(&outcome, TEXT_LIMIT);
            let edited = self.out.edit_html(&chat.0.to_string(), &message.id().0.to_string(), html, InlineKeyboardMarkup::default()).await;
            if let Err(error) = edited {
                tracing::warn!(%error, "could not close the cancel confirmation");
            }
        }
        let origin = Origin { chat, user: &query.from, reply_to: Some(message.id()), from_callback: true };
        self.render(origin, reply).await;
    }

    async fn answer(&self, query: &CallbackQuery, toast: Option<String>) {
        if let Err(error) = self.out.answer_callback(query.id.clone(), toast).await {
            tracing::warn!(%error, "could not answer the callback query");
        }
    }

    async fn on_message(&self, key: String, message: Message) {
        // Channel posts and anonymous admins have no person to hold to account.
        let Some(from) = message.from.as_ref().filter(|u| !u.is_bot) else {
            return;
        };
        let Some(text) = message.text() else { return };
        let chat = message.chat.id;
        let origin = Origin { chat, user: from, reply_to: Some(message.id), from_callback: false };
        let action = if text.trim_start().starts_with('/') {
            match grammar::parse(text, self.username.as_deref()) {
                Ok(Some(parsed)) => Action::Command(with_replied_person(parsed, &message)),
                // Another command, or `/plan@OtherBot`: not ours.
                Ok(None) => return,
                Err(_) => Action::BadCommand(command_args(text)),
            }
        } else if let Some(prompt) = self.prompt_of(&message) {
            let text = text.trim().to_string();
            if text.is_empty() {
                return;
            }
            match prompt {
                Prompt::Feedback(approval_id) => Action::Feedback { approval_id, text },
                // Approve with a note: the reply is the note. Steps are left
                // out with `/plan accept #id except 3,5 -- note` here.
                Prompt::Note(approval_id) => Action::Approve { approval_id, note: Some(text), except: Vec::new() },
                Prompt::Answer(question_id) => Action::AnswerText { question_id, text },
                Prompt::Edit(approval_id) => {
                    let steps = render::parse_steps(&text);
                    if steps.is_empty() {
                        self.render(origin, Reply::Text("Send the steps, one per line.".into())).await;
                        return;
                    }
                    Action::Edit { approval_id, steps }
                }
            }
        } else {
            return;
        };
        tracing::debug!(action = action.kind(), "inbound");
        let thread = topic_of(&message);
        let inbound =
            Inbound { channel: PLATFORM, chat: chat.0.to_string(), user: user_of(from), action, idempotency_key: Some(key), thread };
        let reply = self.handler.handle(inbound).await;
        self.render(origin, reply).await;
    }

    /// The prompt a message replies to: only a message plangate recorded as a
    /// prompt when it sent it (memory, else the durable record). The text of
    /// the replied-to message is never read: an agent or a person wrote parts
    /// of it.
    fn prompt_of(&self, message: &Message) -> Option<Prompt> {
        let replied = message.reply_to_message()?;
        if replied.from.as_ref().map(|u| u.id) != Some(self.me) {
            return None;
        }
        let chat = message.chat.id;
        let remembered = self.prompts.lock().unwrap_or_else(|e| e.into_inner()).by_message.get(&(chat, replied.id)).copied();
        remembered.or_else(|| Prompt::decode(&self.handler.load_cursor(&prompt_key(chat, replied.id))?))
    }

    fn remember(&self, chat: ChatId, id: MessageId, prompt: Prompt) {
        self.handler.save_cursor(&prompt_key(chat, id), &prompt.encode());
        let mut prompts = self.prompts.lock().unwrap_or_else(|e| e.into_inner());
        prompts.by_message.insert((chat, id), prompt);
        prompts.order.push_back((chat, id));
        while prompts.order.len() > MAX_PROMPTS {
            if let Some(old) = prompts.order.pop_front() {
                prompts.by_message.remove(&old);
            }
        }
    }

    async fn render(&self, origin: Origin<'_>, reply: Reply) {
        let chat = origin.chat.0.to_string();
        let result = match reply {
            Reply::None => Ok(()),
            Reply::Notice(_) if origin.from_callback => Ok(()),
            Reply::Notice(text) | Reply::Text(text) | Reply::Announce(text) => {
                self.out.send_html(&chat, render::text_html(&text, TEXT_LIMIT), origin.reply_to, None).await.map(|_| ())
            }
            Reply::AskFeedback { approval_id, version, prompt } => {
                self.ask(&origin, Prompt::Feedback(approval_id), &prompt, version, &[]).await
            }
            Reply::AskEdit { approval_id, version, steps } => {
                let text =
                    format!("Reply with the steps of v{version} ({}), one per line.", plangate_engine::view::short_ref(&approval_id));
                self.ask(&origin, Prompt::Edit(approval_id), &text, version, &steps).await
            }
            Reply::AskAnswer { question_id, prompt } => self.ask(&origin, Prompt::Answer(question_id), &prompt, 0, &[]).await,
            Reply::AskApproval { approval_id, version, prompt, .. } => {
                self.ask(&origin, Prompt::Note(approval_id), &prompt, version, &[]).await
            }
            Reply::ConfirmCancel { approval_id, version, prompt } => {
                let markup = ReplyMarkup::from(render::confirm_cancel_keyboard(approval_id, version));
                self.out.send_html(&chat, render::text_html(&prompt, TEXT_LIMIT), origin.reply_to, Some(markup)).await.map(|_| ())
            }
            Reply::Document { document, caption } => {
                self.out.send_file(&chat, origin.reply_to, &document, Some(&caption)).await.map(|_| ())
            }
            // A direct message to the user; the group only hears that it was sent.
            Reply::Private(text) => {
                let me = origin.user.id.0.to_string();
                let sent = self.out.send_html(&me, render::text_html(&text, TEXT_LIMIT), None, None).await;
                let note = match sent {
                    Ok(_) => "I sent you a private message.",
                    Err(_) => "I could not message you privately: open a chat with me, press Start, then ask again.",
                };
                if me == chat {
                    Ok(())
                } else {
                    self.out.send_html(&chat, render::text_html(note, TEXT_LIMIT), origin.reply_to, None).await.map(|_| ())
                }
            }
        };
        if let Err(error) = result {
            tracing::warn!(chat, %error, "could not show the reply");
        }
    }

    /// A ForceReply prompt addressed to one person: selective, mentioning
    /// them, replying to their message (or the card they clicked).
    async fn ask(
        &self,
        origin: &Origin<'_>,
        prompt: Prompt,
        text: &str,
        version: u32,
        steps: &[String],
    ) -> Result<(), plangate_channel::ChannelError> {
        let html = render::prompt_html(prompt, origin.user.id, &origin.user.first_name, text, version, steps);
        let placeholder = match prompt {
            Prompt::Feedback(_) => "What should change?",
            Prompt::Edit(_) => "One step per line",
            Prompt::Answer(_) => "Your answer",
            Prompt::Note(_) => "Your note for the agent",
        };
        let markup = ReplyMarkup::from(ForceReply::new().selective().input_field_placeholder(Some(placeholder.to_string())));
        let chat = origin.chat.0.to_string();
        let sent = self.out.send_html(&chat, html, origin.reply_to, Some(markup)).await?;
        self.remember(origin.chat, sent.id, prompt);
        Ok(())
    }
}

/// `/plan approvers add|remove` sent as a reply to someone's message names
/// that person: a Telegram mention carries no id, a reply does (the
/// platform says who wrote the message; its text is not read). A reply to
/// a bot's message names nobody.
fn with_replied_person(mut parsed: grammar::Parsed, message: &Message) -> grammar::Parsed {
    use grammar::{ApproversChange, PlanCommand};
    if let PlanCommand::Approvers(ApproversChange::Add(people) | ApproversChange::Remove(people)) = &mut parsed.command {
        let person = message.reply_to_message().and_then(|replied| replied.from.as_ref()).filter(|u| !u.is_bot);
        if let Some(person) = person {
            people.push(format!("telegram:{}", person.id));
        }
    }
    parsed
}

/// The forum topic a message was sent in (only a topic message: a reply
/// thread in a group without topics is not one).
fn topic_of(message: &Message) -> Option<String> {
    message.thread_id.filter(|_| message.is_topic_message).map(crate::topics::topic_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_engine::codec::Button;
    use plangate_engine::ApprovalId;

    #[test]
    fn callback_data_is_validated() {
        let id = ApprovalId([1; 16]);
        assert_eq!(decode_callback(&codec::encode(Button::Approve(id))), Action::Button(Button::Approve(id)));
        assert_eq!(decode_callback("pg1:a:zz"), Action::UnknownButton("pg1:a:zz".into()));
        let long = "é".repeat(40);
        match decode_callback(&long) {
            Action::UnknownButton(s) => assert!(s.len() <= MAX_CALLBACK_BYTES + '…'.len_utf8()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_command_keeps_the_words_after_plan() {
        assert_eq!(command_args("/plan@PlanGateBot frobnicate now"), "frobnicate now");
        assert_eq!(command_args("  /plan"), "");
    }
}
