//! The `Channel` implementation: cards, nudges, documents, questions.

use crate::config::Settings;
use crate::render::{self, CUT_SHORT};
use crate::rest::Rest;
use async_trait::async_trait;
use plangate_channel::{
    limit_key, send_with_retry, Channel, ChannelError, Delivery, Destination, Document, RateLimiter, RetryPolicy, Style,
};
use plangate_engine::card::Card;
use plangate_engine::Question;
use serenity::builder::{CreateMessage, EditMessage};
use serenity::model::channel::{MessageReference, MessageReferenceKind};
use serenity::model::id::{ChannelId, MessageId};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

const NAME: &str = "discord";

/// Discord's documented global limit is 50 requests per second.
const GLOBAL: (usize, Duration) = (50, Duration::from_secs(1));

/// Outbound half of the adapter.
pub struct DiscordChannel {
    rest: Arc<Rest>,
    limiter: RateLimiter,
    policy: RetryPolicy,
}

impl std::fmt::Debug for DiscordChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordChannel").field("rest", &self.rest).finish_non_exhaustive()
    }
}

fn snowflake(text: &str, what: &str) -> Result<u64, ChannelError> {
    text.trim().parse::<u64>().ok().filter(|n| *n != 0).ok_or_else(|| ChannelError::Api {
        platform: NAME,
        status: None,
        message: format!("{what} {text:?} is not a Discord id"),
    })
}

fn channel_id(text: &str) -> Result<ChannelId, ChannelError> {
    snowflake(text, "channel").map(ChannelId::new)
}

fn message_id(text: &str) -> Result<MessageId, ChannelError> {
    snowflake(text, "message").map(MessageId::new)
}

fn reply_to(channel: ChannelId, message: MessageId) -> MessageReference {
    MessageReference::new(MessageReferenceKind::Default, channel).message_id(message).fail_if_not_exists(false)
}

impl DiscordChannel {
    pub(crate) fn new(rest: Arc<Rest>, settings: &Settings) -> DiscordChannel {
        DiscordChannel { rest, limiter: RateLimiter::new(settings.per_channel, GLOBAL), policy: RetryPolicy::default() }
    }

    async fn create(
        &self,
        chat: &str,
        message: CreateMessage,
        file: Option<serenity::builder::CreateAttachment>,
    ) -> Result<MessageId, ChannelError> {
        let channel = channel_id(chat)?;
        let message = message.allowed_mentions(render::no_mentions());
        let message = match &file {
            Some(f) => message.add_file(f.clone()),
            None => message,
        };
        let key = limit_key(NAME, "chat", chat);
        send_with_retry(&self.limiter, &key, self.policy, || self.rest.create_message(channel, &message, file.clone())).await
    }

    async fn edit(&self, chat: &str, message: &str, edit: EditMessage) -> Result<(), ChannelError> {
        let channel = channel_id(chat)?;
        let message = message_id(message)?;
        let edit = edit.allowed_mentions(render::no_mentions());
        let key = limit_key(NAME, "chat", chat);
        send_with_retry(&self.limiter, &key, self.policy, || self.rest.edit_message(channel, message, &edit)).await
    }
}

/// A new card: an embed with buttons, or the text form.
fn card_message(style: Style, card: &Card) -> CreateMessage {
    match style {
        Style::Buttons => CreateMessage::new().embed(render::card_embed_parts(card).build()).components(render::card_buttons(card)),
        Style::Text => CreateMessage::new().content(render::text_card_content(card)),
    }
}

#[async_trait]
impl Channel for DiscordChannel {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn post_card(&self, destination: &Destination, card: &Card, document: &Document) -> Result<Delivery, ChannelError> {
        let span =
            tracing::info_span!("discord.post_card", chat = %destination.chat, approval = %card.short_ref, style = ?destination.style);
        async {
            let message = card_message(destination.style, card);
            let id = self.create(&destination.chat, message, Some(render::attachment(document))).await?;
            Ok(Delivery::posted(destination, destination.chat.clone(), id.to_string()))
        }
        .instrument(span)
        .await
    }

    /// A message referencing the parent card (Discord shows it as a reply).
    async fn post_card_under(
        &self,
        parent: &Delivery,
        destination: &Destination,
        card: &Card,
        document: &Document,
    ) -> Result<Delivery, ChannelError> {
        let span =
            tracing::info_span!("discord.post_card_under", chat = %parent.chat, parent = %parent.message_id, approval = %card.short_ref);
        async {
            let reference = reply_to(channel_id(&parent.chat)?, message_id(&parent.message_id)?);
            let message = card_message(destination.style, card);
            let id = self.create(&parent.chat, message.reference_message(reference), Some(render::attachment(document))).await?;
            Ok(Delivery::posted(destination, parent.chat.clone(), id.to_string()))
        }
        .instrument(span)
        .await
    }

    /// Idempotent: the same card always produces the same edit.
    async fn update_card(&self, delivery: &Delivery, card: &Card) -> Result<(), ChannelError> {
        let span =
            tracing::info_span!("discord.update_card", chat = %delivery.chat, message = %delivery.message_id, approval = %card.short_ref);
        async {
            let edit = match delivery.style {
                Style::Buttons => EditMessage::new().embed(render::card_embed_parts(card).build()).components(render::card_buttons(card)),
                Style::Text => EditMessage::new().content(render::text_card_content(card)).components(Vec::new()),
            };
            self.edit(&delivery.chat, &delivery.message_id, edit).await
        }
        .instrument(span)
        .await
    }

    async fn send_nudge(&self, delivery: &Delivery, card: &Card, text: &str) -> Result<(), ChannelError> {
        let span = tracing::info_span!("discord.send_nudge", chat = %delivery.chat, message = %delivery.message_id);
        async {
            let channel = channel_id(&delivery.chat)?;
            let card_message = message_id(&delivery.message_id)?;
            let text_style = delivery.style == Style::Text;
            let mut message = CreateMessage::new()
                .content(render::nudge_content(text, card, text_style))
                .reference_message(reply_to(channel, card_message));
            if !text_style {
                message = message.components(render::card_buttons(card));
            }
            self.create(&delivery.chat, message, None).await.map(drop)
        }
        .instrument(span)
        .await
    }

    async fn send_document(&self, chat: &str, reply_to_message: Option<&str>, document: &Document) -> Result<(), ChannelError> {
        let span = tracing::info_span!("discord.send_document", chat = %chat, file = %document.file_name);
        async {
            let channel = channel_id(chat)?;
            let mut message = CreateMessage::new();
            if let Some(reference) = reply_to_message {
                message = message.reference_message(reply_to(channel, message_id(reference)?));
            }
            self.create(chat, message, Some(render::attachment(document))).await.map(drop)
        }
        .instrument(span)
        .await
    }

    async fn send_text(&self, chat: &str, text: &str) -> Result<(), ChannelError> {
        let span = tracing::info_span!("discord.send_text", chat = %chat);
        async {
            let message = CreateMessage::new().content(render::message_text(text, render::CONTENT_MAX, CUT_SHORT));
            self.create(chat, message, None).await.map(drop)
        }
        .instrument(span)
        .await
    }

    async fn post_question(&self, destination: &Destination, question: &Question) -> Result<Delivery, ChannelError> {
        let span = tracing::info_span!("discord.post_question", chat = %destination.chat, question = %question.question_id);
        async {
            let text_style = destination.style == Style::Text;
            let mut message = CreateMessage::new().content(render::question_content(question, text_style));
            if !text_style {
                message = message.components(render::question_buttons(question));
            }
            let id = self.create(&destination.chat, message, None).await?;
            Ok(Delivery::posted(destination, destination.chat.clone(), id.to_string()))
        }
        .instrument(span)
        .await
    }

    async fn update_question(&self, delivery: &Delivery, question: &Question) -> Result<(), ChannelError> {
        let span = tracing::info_span!("discord.update_question", chat = %delivery.chat, message = %delivery.message_id);
        async {
            let text_style = delivery.style == Style::Text;
            let components = if text_style { Vec::new() } else { render::question_buttons(question) };
            let edit = EditMessage::new().content(render::question_content(question, text_style)).components(components);
            self.edit(&delivery.chat, &delivery.message_id, edit).await
        }
        .instrument(span)
        .await
    }
}
