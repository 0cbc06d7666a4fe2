//! The `Channel` implementation: cards, nudges, documents, questions.

use crate::config::Settings;
use crate::render::{self, CUT_SHORT};
use crate::rest::{thread_closed, Rest};
use crate::threads::Placed;
use async_trait::async_trait;
use plangate_channel::{
    limit_key, send_with_retry, Channel, ChannelError, Delivery, Destination, Document, RateLimiter, RetryPolicy, Style, Threads,
};
use plangate_engine::card::Card;
use plangate_engine::Question;
use serenity::builder::{CreateMessage, EditMessage};
use serenity::model::channel::{MessageReference, MessageReferenceKind};
use serenity::model::id::{ChannelId, GuildId, MessageId};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument;

pub(crate) const NAME: &str = "discord";

/// Discord's documented global limit is 50 requests per second.
const GLOBAL: (usize, Duration) = (50, Duration::from_secs(1));

/// Outbound half of the adapter.
pub struct DiscordChannel {
    pub(crate) rest: Arc<Rest>,
    pub(crate) limiter: RateLimiter,
    pub(crate) policy: RetryPolicy,
    /// For links to threads (`/plan list`): Discord's need the guild.
    guild: Option<GuildId>,
    /// Channels where the bot may not start threads: asked once per process.
    pub(crate) no_threads: Mutex<HashSet<String>>,
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

pub(crate) fn channel_id(text: &str) -> Result<ChannelId, ChannelError> {
    snowflake(text, "channel").map(ChannelId::new)
}

fn message_id(text: &str) -> Result<MessageId, ChannelError> {
    snowflake(text, "message").map(MessageId::new)
}

pub(crate) fn reply_to(channel: ChannelId, message: MessageId) -> MessageReference {
    MessageReference::new(MessageReferenceKind::Default, channel).message_id(message).fail_if_not_exists(false)
}

impl DiscordChannel {
    pub(crate) fn new(rest: Arc<Rest>, settings: &Settings) -> DiscordChannel {
        DiscordChannel {
            rest,
            limiter: RateLimiter::new(settings.per_channel, GLOBAL),
            policy: RetryPolicy::default(),
            guild: settings.guild_id,
            no_threads: Mutex::new(HashSet::new()),
        }
    }

    pub(crate) async fn create(
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

    /// Edit a message; in an archived thread (which refuses edits), the
    /// thread is reopened and the edit made once more.
    async fn edit(&self, chat: &str, message: &str, edit: EditMessage) -> Result<(), ChannelError> {
        let channel = channel_id(chat)?;
        let message = message_id(message)?;
        let edit = edit.allowed_mentions(render::no_mentions());
        let key = limit_key(NAME, "chat", chat);
        let once = || send_with_retry(&self.limiter, &key, self.policy, || self.rest.edit_message(channel, message, &edit));
        match once().await {
            Err(error) if thread_closed(&error) && self.reopen(chat).await => once().await,
            edited => edited,
        }
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
            let placed = self.post_in_session_thread(destination, message, Some(render::attachment(document)), None).await?;
            Ok(placed.delivery(destination))
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
            let (parent_channel, parent_card) = (channel_id(&parent.chat)?, message_id(&parent.message_id)?);
            let message = card_message(destination.style, card);
            let file = Some(render::attachment(document));
            // Under threads = "per_session", in the session's thread (the
            // parent card heads it); else a reply to the parent card.
            let placed = match destination.threads {
                Threads::PerSession => self.post_in_session_thread(destination, message, file, Some((parent_channel, parent_card))).await?,
                Threads::Off => {
                    let id = self.create(&parent.chat, message.reference_message(reply_to(parent_channel, parent_card)), file).await?;
                    Placed { chat: parent.chat.clone(), id, thread: None }
                }
            };
            Ok(placed.delivery(destination))
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
            let mut message = CreateMessage::new().content(render::nudge_content(text, card, text_style));
            // In the session's thread when the card has one (a session's
            // first card is in the channel and heads its thread); else a
            // reply to the card.
            let chat = delivery.thread.as_deref().unwrap_or(&delivery.chat);
            if chat == delivery.chat {
                message = message.reference_message(reply_to(channel, card_message));
            }
            if !text_style {
                message = message.components(render::card_buttons(card));
            }
            self.create(chat, message, None).await.map(drop)
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
            Ok(self.post_in_session_thread(destination, message, None, None).await?.delivery(destination))
        }
        .instrument(span)
        .await
    }

    /// `https://discord.com/channels/<guild>/<thread>`, when the guild is configured.
    fn thread_link(&self, _chat: &str, thread: &str) -> Option<String> {
        let thread = channel_id(thread).ok()?;
        Some(format!("https://discord.com/channels/{}/{thread}", self.guild?))
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
