//! Threads for `threads = "per_session"`: a session's first card is a
//! message in the destination's channel, and a thread is started from it
//! (Discord's "Start Thread from Message", named by the server after the
//! project and the plan, cut to Discord's 100 characters). Everything after
//! it — later versions, amendments, questions and permission prompts,
//! nudges, their documents — is posted in that thread, which on Discord is
//! a channel of its own (its id is what `Delivery::thread` stores, and the
//! `chat` of every message posted in it).
//!
//! A thread someone deleted (10003 Unknown Channel) is started again from
//! the session's next card, posted in the channel. An archived thread needs
//! nothing: Discord reopens an archived thread that is not locked when a
//! message is posted in it. Editing a message in an archived thread, and
//! posting in a locked one, are refused (50083 / 160005): the thread is
//! reopened (`archived: false`, which for a locked thread takes Manage
//! Threads) and the call made once more; a post that is still refused
//! starts a new thread from a fresh card in the channel, as for a deleted
//! one. A channel where the bot may not start threads (no Create Public
//! Threads) is asked once per process; its cards then stay in the channel,
//! and the server says so once (the delivery names no thread).

use crate::outbound::{channel_id, DiscordChannel, NAME};
use crate::rest::thread_closed;
use plangate_channel::{limit_key, send_with_retry, ChannelError, Delivery, Destination, Threads};
use serenity::builder::{CreateAttachment, CreateMessage, CreateThread};
use serenity::model::channel::AutoArchiveDuration;
use serenity::model::id::{ChannelId, MessageId};

/// Discord's longest thread name.
const NAME_MAX: usize = 100;

/// `name` as a thread may be called: 1 to 100 characters.
pub(crate) fn thread_name(name: &str) -> String {
    match name.trim() {
        "" => "plangate".to_string(),
        name => plangate_basics::text::cut_chars(name, NAME_MAX),
    }
}

/// Where a session's message went: the channel or thread it is in (its
/// `chat`), its id, and the session's thread, if it has one.
pub(crate) struct Placed {
    pub chat: String,
    pub id: MessageId,
    pub thread: Option<String>,
}

impl Placed {
    /// The record of the message, naming the session's thread.
    pub(crate) fn delivery(self, destination: &Destination) -> Delivery {
        Delivery { thread: self.thread, ..Delivery::posted(destination, self.chat, self.id.to_string()) }
    }
}

/// `message` as a reply to `reference` when both are in `chat` (Discord
/// refuses a reply across channels; in a thread, the starter card heads it).
fn replying(message: CreateMessage, reference: Option<(ChannelId, MessageId)>, chat: &str) -> CreateMessage {
    match reference {
        Some((channel, card)) if channel.to_string() == chat => message.reference_message(crate::outbound::reply_to(channel, card)),
        _ => message,
    }
}

impl DiscordChannel {
    /// Post a session's message where `destination` wants it: in the
    /// session's thread under `threads = "per_session"` (started now from
    /// this message when the session has none, or none any more), else in
    /// the channel. `reference`: the card this one answers, quoted when it
    /// is in the same channel.
    pub(crate) async fn post_in_session_thread(
        &self,
        destination: &Destination,
        message: CreateMessage,
        file: Option<CreateAttachment>,
        reference: Option<(ChannelId, MessageId)>,
    ) -> Result<Placed, ChannelError> {
        let parent = destination.chat.clone();
        if destination.threads != Threads::PerSession {
            let id = self.create(&parent, replying(message, reference, &parent), file).await?;
            return Ok(Placed { chat: parent, id, thread: None });
        }
        if let Some(thread) = destination.thread.as_deref() {
            match self.create_reopening(thread, replying(message.clone(), reference, thread), file.clone()).await {
                Ok(id) => return Ok(Placed { chat: thread.to_string(), id, thread: Some(thread.to_string()) }),
                Err(error) if matches!(error, ChannelError::NotFound { .. }) || thread_closed(&error) => {
                    tracing::warn!(chat = %parent, thread, %error, "the session's thread is gone or closed; starting a new one");
                }
                Err(error) => return Err(error),
            }
        }
        let id = self.create(&parent, replying(message, reference, &parent), file).await?;
        let thread = self.start_thread(destination, id).await;
        Ok(Placed { chat: parent, id, thread })
    }

    /// Create a message in `thread`; when Discord refuses because the
    /// thread is archived or locked, reopen it and try once more.
    async fn create_reopening(
        &self,
        thread: &str,
        message: CreateMessage,
        file: Option<CreateAttachment>,
    ) -> Result<MessageId, ChannelError> {
        match self.create(thread, message.clone(), file.clone()).await {
            Err(error) if thread_closed(&error) && self.reopen(thread).await => self.create(thread, message, file).await,
            sent => sent,
        }
    }

    /// Reopen an archived (or locked) thread; `false` when Discord refused.
    pub(crate) async fn reopen(&self, thread: &str) -> bool {
        let Ok(id) = channel_id(thread) else { return false };
        let key = limit_key(NAME, "chat", thread);
        match send_with_retry(&self.limiter, &key, self.policy, || self.rest.unarchive(id)).await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(thread, %error, "could not reopen the session's archived thread");
                false
            }
        }
    }

    /// Start the session's thread from message `card` in the destination's
    /// channel; `None` (the card stays in the channel) when the bot may not.
    async fn start_thread(&self, destination: &Destination, card: MessageId) -> Option<String> {
        let chat = destination.chat.as_str();
        if self.no_threads.lock().unwrap_or_else(|e| e.into_inner()).contains(chat) {
            return None;
        }
        let channel = channel_id(chat).ok()?;
        let thread = CreateThread::new(thread_name(&destination.thread_name)).auto_archive_duration(AutoArchiveDuration::OneWeek);
        let span = tracing::info_span!("discord.start_thread", chat, message = %card);
        let key = limit_key(NAME, "chat", chat);
        let started = send_with_retry(&self.limiter, &key, self.policy, || self.rest.start_thread(channel, card, &thread));
        let error = match tracing::Instrument::instrument(started, span).await {
            Ok(thread) => return Some(thread.to_string()),
            Err(error) => error,
        };
        // A passing failure is worth asking again with the next card; a
        // refusal (no Create Public Threads) is remembered.
        let passing = matches!(error, ChannelError::Transport { .. } | ChannelError::RateLimited { .. });
        tracing::warn!(chat, %error, passing, "could not start the session's thread; the card stays in the channel");
        if !passing {
            self.no_threads.lock().unwrap_or_else(|e| e.into_inner()).insert(chat.to_string());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_names_fit_discord() {
        assert_eq!(thread_name("  billing-api · Add retries "), "billing-api · Add retries");
        assert_eq!(thread_name(""), "plangate");
        let long = thread_name(&"é".repeat(300));
        assert_eq!((long.chars().count(), long.ends_with('…')), (100, true));
    }
}
