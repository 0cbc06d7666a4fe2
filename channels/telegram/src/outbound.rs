//! The outbound half: [`Channel`] for Telegram, and the few sends the
//! inbound side needs (prompts, toasts), all through one rate limiter.

use crate::render::{self, CAPTION_LIMIT, TEXT_LIMIT};
use crate::topics::{parse_topic, topic_str};
use async_trait::async_trait;
use plangate_channel::{
    limit_key, send_with_retry, Channel, ChannelError, Delivery, Destination, Document, RateLimiter, RetryPolicy, Style,
};
use plangate_engine::card::Card;
use plangate_engine::Question;
use secrecy::{ExposeSecret, SecretString};
use std::time::Duration;
use teloxide::payloads::{AnswerCallbackQuerySetters, EditMessageTextSetters, SendDocumentSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::types::{
    CallbackQueryId, ChatId, InlineKeyboardMarkup, InputFile, LinkPreviewOptions, Message, MessageId, ParseMode, Recipient, ReplyMarkup,
    ReplyParameters, ThreadId,
};
use teloxide::{ApiError, Bot, RequestError};
use tracing::Instrument;

pub(crate) const PLATFORM: &str = "telegram";

/// Telegram's side of the [`Channel`] contract. Cheap to share: the server
/// holds it as `Arc<dyn Channel>`, the inbound side sends replies through it.
pub struct TelegramChannel {
    pub(crate) bot: Bot,
    pub(crate) limiter: RateLimiter,
    pub(crate) policy: RetryPolicy,
    /// Scrubbed from every error message, in case one ever carries it.
    token: SecretString,
    /// Chats where a forum topic could not be created (not a forum, no
    /// right): asked once per process, then their cards stay in the chat.
    pub(crate) no_topics: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Map teloxide's errors onto the contract, once for the whole adapter: 429
/// → `RateLimited` (retried by `send_with_retry` after `retry_after`),
/// network trouble and non-API answers (a proxy's HTML 502) → `Transport`
/// (retried), refusals by what they mean (see [`map_api_error`]). The token is
/// scrubbed from every message, in case one ever carries it.
pub(crate) fn map_error(error: RequestError, token: &str) -> ChannelError {
    let scrub = |s: String| {
        if token.is_empty() {
            s
        } else {
            s.replace(token, "<token>")
        }
    };
    match error {
        RequestError::RetryAfter(after) => ChannelError::RateLimited { platform: PLATFORM, retry_after: after.duration() },
        RequestError::Network(e) => {
            ChannelError::Transport { platform: PLATFORM, status: e.status().map(|s| s.as_u16()), message: scrub(e.to_string()) }
        }
        RequestError::Io(e) => ChannelError::Transport { platform: PLATFORM, status: None, message: scrub(e.to_string()) },
        RequestError::InvalidJson { .. } => ChannelError::Transport {
            platform: PLATFORM,
            status: None,
            message: "the Bot API answered something that is not a Bot API response".into(),
        },
        RequestError::MigrateToChatId(id) => ChannelError::Api {
            platform: PLATFORM,
            status: Some(400),
            message: format!("the group became a supergroup: use chat id {id} in the destination"),
        },
        RequestError::Api(e) => {
            let message = scrub(e.to_string());
            map_api_error(&e, message)
        }
    }
}

/// A Bot API refusal by what it means. teloxide keeps Telegram's
/// `description` (as a known [`ApiError`] or `Unknown` text) but drops its
/// `error_code`, so the HTTP status is read from the description's prefix.
fn map_api_error(error: &ApiError, message: String) -> ChannelError {
    use ApiError as E;
    let description = match error {
        E::Unknown(text) => text.as_str(),
        _ => message.as_str(),
    };
    let status = status_of(description);
    match error {
        E::MessageNotModified => ChannelError::NotModified { platform: PLATFORM },
        E::Unknown(text) if text.contains("message is not modified") => ChannelError::NotModified { platform: PLATFORM },
        E::ChatNotFound
        | E::UserNotFound
        | E::MessageIdInvalid
        | E::MessageToEditNotFound
        | E::MessageToReplyNotFound
        | E::MessageToDeleteNotFound
        | E::MessageToForwardNotFound
        | E::MessageToCopyNotFound
        | E::MessageWithPollNotFound
        | E::InvalidQueryId => ChannelError::NotFound { platform: PLATFORM, message },
        E::BotBlocked
        | E::BotKicked
        | E::BotKickedFromSupergroup
        | E::BotKickedFromChannel
        | E::UserDeactivated
        | E::CantInitiateConversation
        | E::CantTalkWithBots
        | E::InvalidToken
        | E::GroupDeactivated
        | E::NotEnoughRightsToPostMessages
        | E::NotEnoughRightsToPinMessage
        | E::NotEnoughRightsToManagePins
        | E::NotEnoughRightsToChangeChatPermissions
        | E::NotEnoughRightsToRestrict => ChannelError::Forbidden { platform: PLATFORM, message },
        E::CantGetUpdates | E::TerminatedByOtherGetUpdates => ChannelError::Api { platform: PLATFORM, status: Some(409), message },
        E::Unknown(_) => match status {
            Some(401 | 403) => ChannelError::Forbidden { platform: PLATFORM, message },
            Some(404) => ChannelError::NotFound { platform: PLATFORM, message },
            _ if description.contains(" not found") => ChannelError::NotFound { platform: PLATFORM, message },
            _ => ChannelError::Api { platform: PLATFORM, status, message },
        },
        _ => ChannelError::Api { platform: PLATFORM, status, message },
    }
}

/// The HTTP status a Bot API description starts with (`Bad Request: …`).
fn status_of(description: &str) -> Option<u16> {
    const PREFIXES: [(&str, u16); 6] = [
        ("Bad Request", 400),
        ("Unauthorized", 401),
        ("Forbidden", 403),
        ("Not Found", 404),
        ("Conflict", 409),
        ("Request Entity Too Large", 413),
    ];
    PREFIXES.iter().find(|(prefix, _)| description.starts_with(prefix)).map(|(_, status)| *status)
}

/// An edit that changes nothing is what we wanted anyway.
fn not_modified_ok(result: Result<(), ChannelError>) -> Result<(), ChannelError> {
    match result {
        Err(ChannelError::NotModified { .. }) => Ok(()),
        other => other,
    }
}

/// `-1001234567890` or `@channelname`.
pub(crate) fn recipient(chat: &str) -> Result<Recipient, ChannelError> {
    let chat = chat.trim();
    if let Ok(id) = chat.parse::<i64>() {
        return Ok(Recipient::Id(ChatId(id)));
    }
    if chat.len() > 1 && chat.starts_with('@') {
        return Ok(Recipient::ChannelUsername(chat.to_string()));
    }
    Err(ChannelError::Api {
        platform: PLATFORM,
        status: None,
        message: format!("{chat:?} is not a Telegram chat id (a number such as -1001234567890, or @channel)"),
    })
}

pub(crate) fn message_id(id: &str) -> Result<MessageId, ChannelError> {
    id.trim().parse::<i32>().map(MessageId).map_err(|_| ChannelError::Api {
        platform: PLATFORM,
        status: None,
        message: format!("{id:?} is not a Telegram message id"),
    })
}

fn reply_to(id: MessageId) -> ReplyParameters {
    // A deleted card must not make the reminder or document fail.
    ReplyParameters::new(id).allow_sending_without_reply()
}

fn no_preview() -> LinkPreviewOptions {
    LinkPreviewOptions { is_disabled: true, url: None, prefer_small_media: false, prefer_large_media: false, show_above_text: false }
}

impl TelegramChannel {
    pub(crate) fn new(bot: Bot, token: SecretString, per_chat_per_second: u32, global_per_second: u32) -> TelegramChannel {
        let second = Duration::from_secs(1);
        TelegramChannel {
            bot,
            limiter: RateLimiter::new((per_chat_per_second as usize, second), (global_per_second as usize, second)),
            policy: RetryPolicy::default(),
            token,
            no_topics: Default::default(),
        }
    }

    pub(crate) fn err(&self, e: RequestError) -> ChannelError {
        map_error(e, self.token.expose_secret())
    }

    /// `sendMessage` in HTML parse mode, rate limited and retried.
    pub(crate) async fn send_html(
        &self,
        chat: &str,
        html: String,
        reply: Option<MessageId>,
        markup: Option<ReplyMarkup>,
    ) -> Result<Message, ChannelError> {
        self.send_html_in(chat, None, html, reply, markup).await
    }

    /// [`send_html`](Self::send_html) into a forum topic when `topic` is set.
    pub(crate) async fn send_html_in(
        &self,
        chat: &str,
        topic: Option<ThreadId>,
        html: String,
        reply: Option<MessageId>,
        markup: Option<ReplyMarkup>,
    ) -> Result<Message, ChannelError> {
        let to = recipient(chat)?;
        let span = tracing::info_span!("telegram.send", method = "sendMessage", chat, reply_to = reply.map(|m| m.0));
        send_with_retry(&self.limiter, &limit_key(PLATFORM, "chat", chat), self.policy, || {
            let mut request =
                self.bot.send_message(to.clone(), html.clone()).parse_mode(ParseMode::Html).link_preview_options(no_preview());
            if let Some(topic) = topic {
                request = request.message_thread_id(topic);
            }
            if let Some(id) = reply {
                request = request.reply_parameters(reply_to(id));
            }
            if let Some(markup) = markup.clone() {
                request = request.reply_markup(markup);
            }
            async move { request.await.map_err(|e| self.err(e)) }
        })
        .instrument(span)
        .await
    }

    /// `sendDocument` (multipart), optionally as a reply, with a caption.
    pub(crate) async fn send_file(
        &self,
        chat: &str,
        reply: Option<MessageId>,
        document: &Document,
        caption: Option<&str>,
    ) -> Result<Message, ChannelError> {
        self.send_file_in(chat, None, reply, document, caption).await
    }

    /// [`send_file`](Self::send_file) into a forum topic when `topic` is set.
    pub(crate) async fn send_file_in(
        &self,
        chat: &str,
        topic: Option<ThreadId>,
        reply: Option<MessageId>,
        document: &Document,
        caption: Option<&str>,
    ) -> Result<Message, ChannelError> {
        let to = recipient(chat)?;
        let caption = caption.map(|c| render::text_html(c, CAPTION_LIMIT));
        let span =
            tracing::info_span!("telegram.send", method = "sendDocument", chat, file = %document.file_name, bytes = document.text.len());
        send_with_retry(&self.limiter, &limit_key(PLATFORM, "chat", chat), self.policy, || {
            let file = InputFile::memory(document.text.clone().into_bytes()).file_name(document.file_name.clone());
            let mut request = self.bot.send_document(to.clone(), file);
            if let Some(topic) = topic {
                request = request.message_thread_id(topic);
            }
            if let Some(id) = reply {
                request = request.reply_parameters(reply_to(id));
            }
            if let Some(caption) = caption.clone() {
                request = request.caption(caption).parse_mode(ParseMode::Html);
            }
            async move { request.await.map_err(|e| self.err(e)) }
        })
        .instrument(span)
        .await
    }

    /// `editMessageText`; `markup` replaces the keyboard (empty removes it).
    pub(crate) async fn edit_html(
        &self,
        chat: &str,
        message: &str,
        html: String,
        markup: InlineKeyboardMarkup,
    ) -> Result<(), ChannelError> {
        let to = recipient(chat)?;
        let id = message_id(message)?;
        let span = tracing::info_span!("telegram.send", method = "editMessageText", chat, message_id = id.0);
        let result = send_with_retry(&self.limiter, &limit_key(PLATFORM, "chat", chat), self.policy, || {
            let request = self
                .bot
                .edit_message_text(to.clone(), id, html.clone())
                .parse_mode(ParseMode::Html)
                .link_preview_options(no_preview())
                .reply_markup(markup.clone());
            async move { request.await.map(|_| ()).map_err(|e| self.err(e)) }
        })
        .instrument(span)
        .await;
        not_modified_ok(result)
    }

    /// Answer a callback query (stops the client's spinner). Not rate
    /// limited: it is not a chat message, and Telegram wants it fast.
    pub(crate) async fn answer_callback(&self, id: CallbackQueryId, text: Option<String>) -> Result<(), ChannelError> {
        let span = tracing::info_span!("telegram.send", method = "answerCallbackQuery", toast = text.is_some());
        async {
            let mut request = self.bot.answer_callback_query(id);
            if let Some(text) = text {
                request = request.text(render::toast(&text));
            }
            request.await.map(|_| ()).map_err(|e| self.err(e))
        }
        .instrument(span)
        .await
    }
}

impl TelegramChannel {
    /// The card (HTML, buttons or commands), as a reply to `reply_to` when
    /// given, then the whole plan as a document replying to it. A failed
    /// document is logged, not returned: the card is out and its delivery
    /// must be kept so it can be edited.
    async fn post_card_replying(
        &self,
        reply_to: Option<MessageId>,
        destination: &Destination,
        card: &Card,
        document: &Document,
    ) -> Result<Delivery, ChannelError> {
        let html = render::card_html(card, destination.style);
        let markup = (destination.style == Style::Buttons && card.is_open()).then(|| ReplyMarkup::from(render::card_keyboard(card)));
        let (message, topic) = self.send_in_session_topic(destination, html, reply_to, markup).await?;
        if let Err(error) = self.send_file_in(&destination.chat, topic, Some(message.id), document, None).await {
            tracing::warn!(chat = %destination.chat, %error, "the plan document could not be attached to the card");
        }
        Ok(Delivery { thread: topic.map(topic_str), ..Delivery::posted(destination, destination.chat.clone(), message.id.0.to_string()) })
    }
}

#[async_trait]
impl Channel for TelegramChannel {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    /// The card (HTML, buttons or commands), then the whole plan as a
    /// document replying to it. A failed document is logged, not returned:
    /// the card is out and its delivery must be kept so it can be edited.
    async fn post_card(&self, destination: &Destination, card: &Card, document: &Document) -> Result<Delivery, ChannelError> {
        self.post_card_replying(None, destination, card, document).await
    }

    /// A reply to the parent card.
    async fn post_card_under(
        &self,
        parent: &Delivery,
        destination: &Destination,
        card: &Card,
        document: &Document,
    ) -> Result<Delivery, ChannelError> {
        self.post_card_replying(Some(message_id(&parent.message_id)?), destination, card, document).await
    }

    /// Edit in place. An open card keeps its buttons (live refresh); a
    /// decided one shows its receipt and loses them.
    async fn update_card(&self, delivery: &Delivery, card: &Card) -> Result<(), ChannelError> {
        let html = render::card_html(card, delivery.style);
        let markup =
            if delivery.style == Style::Buttons && card.is_open() { render::card_keyboard(card) } else { InlineKeyboardMarkup::default() };
        self.edit_html(&delivery.chat, &delivery.message_id, html, markup).await
    }

    async fn send_nudge(&self, delivery: &Delivery, card: &Card, text: &str) -> Result<(), ChannelError> {
        let card_message = message_id(&delivery.message_id)?;
        let html = render::nudge_html(text, card, delivery.style);
        let markup = (delivery.style == Style::Buttons && card.is_open()).then(|| ReplyMarkup::from(render::card_keyboard(card)));
        let topic = delivery.thread.as_deref().and_then(parse_topic);
        self.send_html_in(&delivery.chat, topic, html, Some(card_message), markup).await.map(|_| ())
    }

    async fn send_document(&self, chat: &str, reply_to: Option<&str>, document: &Document) -> Result<(), ChannelError> {
        let reply = reply_to.map(message_id).transpose()?;
        self.send_file(chat, reply, document, None).await.map(|_| ())
    }

    async fn send_text(&self, chat: &str, text: &str) -> Result<(), ChannelError> {
        self.send_html(chat, render::text_html(text, TEXT_LIMIT), None, None).await.map(|_| ())
    }

    async fn post_question(&self, destination: &Destination, question: &Question) -> Result<Delivery, ChannelError> {
        if question.options.len() > 10 {
            tracing::warn!(options = question.options.len(), "only the first 10 options get buttons (the codec's single digit)");
        }
        let html = render::question_html(question, destination.style);
        let markup = (destination.style == Style::Buttons).then(|| ReplyMarkup::from(render::question_keyboard(question)));
        let (message, topic) = self.send_in_session_topic(destination, html, None, markup).await?;
        Ok(Delivery { thread: topic.map(topic_str), ..Delivery::posted(destination, destination.chat.clone(), message.id.0.to_string()) })
    }

    async fn update_question(&self, delivery: &Delivery, question: &Question) -> Result<(), ChannelError> {
        let html = render::question_html(question, delivery.style);
        self.edit_html(&delivery.chat, &delivery.message_id, html, InlineKeyboardMarkup::default()).await
    }

    /// `https://t.me/c/<chat without -100>/<topic>`: opens the topic for
    /// members of a supergroup.
    fn thread_link(&self, chat: &str, thread: &str) -> Option<String> {
        crate::topics::link(chat, thread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use teloxide::types::Seconds;

    /// Every kind of teloxide error lands on its contract variant.
    #[test]
    fn teloxide_errors_map_to_typed_variants() {
        const TOKEN: &str = "123:SECRET";
        let unknown = |text: &str| RequestError::Api(ApiError::Unknown(text.to_string()));
        let json_error = serde_json::from_str::<u8>("<html>").unwrap_err();
        let table: Vec<(RequestError, &str, Option<u16>)> = vec![
            (RequestError::Api(ApiError::MessageNotModified), "not_modified", None),
            (unknown("Bad Request: message is not modified: a newer wording"), "not_modified", None),
            (RequestError::Api(ApiError::ChatNotFound), "not_found", None),
            (RequestError::Api(ApiError::MessageToEditNotFound), "not_found", None),
            (RequestError::Api(ApiError::InvalidQueryId), "not_found", None),
            (unknown("Bad Request: message thread not found"), "not_found", None),
            (RequestError::Api(ApiError::BotBlocked), "forbidden", None),
            (RequestError::Api(ApiError::BotKickedFromSupergroup), "forbidden", None),
            (RequestError::Api(ApiError::NotEnoughRightsToPostMessages), "forbidden", None),
            (RequestError::Api(ApiError::InvalidToken), "forbidden", None),
            (unknown("Forbidden: bot is not a member of the channel chat"), "forbidden", None),
            (RequestError::Api(ApiError::TerminatedByOtherGetUpdates), "api", Some(409)),
            (RequestError::Api(ApiError::MessageIsTooLong), "api", Some(400)),
            (unknown("Bad Request: can't parse entities: unsupported start tag"), "api", Some(400)),
            (unknown("Internal Server Error: restart"), "api", None),
            (RequestError::MigrateToChatId(teloxide::types::ChatId(-1001)), "api", Some(400)),
            (RequestError::RetryAfter(Seconds::from_seconds(7)), "rate_limited", None),
            (RequestError::InvalidJson { source: Arc::new(json_error), raw: "<html>".into() }, "transport", None),
            (RequestError::Io(Arc::new(std::io::Error::other("broken pipe"))), "transport", None),
        ];
        for (error, expected, expected_status) in table {
            let shown = error.to_string();
            let mapped = map_error(error, TOKEN);
            assert_eq!((mapped.kind(), mapped.status()), (expected, expected_status), "{shown} became {mapped:?}");
            if let ChannelError::RateLimited { retry_after, .. } = mapped {
                assert_eq!(retry_after, Duration::from_secs(7));
            }
        }
        // The platform's words are kept for logs, without the token.
        let mapped = map_error(unknown("Bad Request: something about 123:SECRET"), TOKEN);
        assert!(
            matches!(&mapped, ChannelError::Api { message, .. } if message == "Unknown error: \"Bad Request: something about <token>\""),
            "{mapped:?}"
        );
        assert!(!mapped.to_string().contains("SECRET"));
    }

    #[test]
    fn only_not_modified_counts_as_a_done_edit() {
        assert!(not_modified_ok(Err(ChannelError::NotModified { platform: PLATFORM })).is_ok());
        let not_found = ChannelError::NotFound { platform: PLATFORM, message: "Bad Request: message to edit not found".into() };
        assert!(not_modified_ok(Err(not_found)).is_err());
    }
}
