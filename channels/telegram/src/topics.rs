//! Forum topics for `threads = "per_session"`: a session's first card opens
//! a topic (`createForumTopic`, named by the server after the project and the
//! plan), and everything after it — later versions, amendments, questions,
//! nudges, documents — is sent there (`message_thread_id`). A topic that was
//! deleted is opened again on the next card. A chat that is not a forum, or
//! where the bot may not manage topics, is asked once per process; after
//! that its cards go to the chat itself, and the server says so once (the
//! card's delivery then names no topic).

use crate::outbound::{recipient, TelegramChannel, PLATFORM};
use plangate_channel::{limit_key, send_with_retry, ChannelError, Destination, Threads};
use teloxide::prelude::Requester;
use teloxide::types::{Message, MessageId, ReplyMarkup, ThreadId};

/// A stored topic id (`Delivery::thread`) as Telegram's type.
pub(crate) fn parse_topic(text: &str) -> Option<ThreadId> {
    text.trim().parse::<i32>().ok().map(|id| ThreadId(MessageId(id)))
}

/// A topic id as stored in `Delivery::thread`.
pub(crate) fn topic_str(topic: ThreadId) -> String {
    topic.0 .0.to_string()
}

/// `https://t.me/c/<chat id without -100>/<topic>`, for a supergroup.
pub(crate) fn link(chat: &str, thread: &str) -> Option<String> {
    let internal = chat.trim().strip_prefix("-100").filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))?;
    let topic = parse_topic(thread)?;
    Some(format!("https://t.me/c/{internal}/{}", topic_str(topic)))
}

impl TelegramChannel {
    /// Send a session's message where `destination` wants it: into the
    /// session's topic (opened now when it has none, or again when it was
    /// deleted) under `threads = "per_session"`, else into the chat. Says
    /// which topic it went to.
    pub(crate) async fn send_in_session_topic(
        &self,
        destination: &Destination,
        html: String,
        reply: Option<MessageId>,
        markup: Option<ReplyMarkup>,
    ) -> Result<(Message, Option<ThreadId>), ChannelError> {
        let chat = &destination.chat;
        if destination.threads != Threads::PerSession {
            return Ok((self.send_html_in(chat, None, html, reply, markup).await?, None));
        }
        let known = destination.thread.as_deref().and_then(parse_topic);
        let topic = match known {
            Some(topic) => Some(topic),
            None => self.open_topic(destination).await,
        };
        match self.send_html_in(chat, topic, html.clone(), reply, markup.clone()).await {
            // "message thread not found": someone deleted the topic.
            Err(ChannelError::NotFound { message, .. }) if known.is_some() => {
                tracing::warn!(chat, %message, "the session's topic is gone; opening a new one");
                let topic = self.open_topic(destination).await;
                Ok((self.send_html_in(chat, topic, html, reply, markup).await?, topic))
            }
            sent => Ok((sent?, topic)),
        }
    }

    /// `createForumTopic` named `destination.thread_name`; `None` (the
    /// chat itself) when the chat has no topics for the bot.
    async fn open_topic(&self, destination: &Destination) -> Option<ThreadId> {
        let chat = destination.chat.as_str();
        if self.no_topics.lock().unwrap_or_else(|e| e.into_inner()).contains(chat) {
            return None;
        }
        let to = recipient(chat).ok()?;
        let name = match destination.thread_name.trim() {
            "" => "plangate".to_string(),
            name => name.to_string(),
        };
        let span = tracing::info_span!("telegram.send", method = "createForumTopic", chat);
        let key = limit_key(PLATFORM, "chat", chat);
        let created = send_with_retry(&self.limiter, &key, self.policy, || {
            let request = self.bot.create_forum_topic(to.clone(), name.clone());
            async move { request.await.map_err(|e| self.err(e)) }
        });
        match tracing::Instrument::instrument(created, span).await {
            Ok(topic) => Some(topic.thread_id),
            // Worth asking again with the next card.
            Err(error @ (ChannelError::Transport { .. } | ChannelError::RateLimited { .. })) => {
                tracing::warn!(chat, %error, "could not open a forum topic this time; the card goes to the chat");
                None
            }
            Err(error) => {
                tracing::warn!(chat, %error, "this chat has no forum topics for the bot (not a forum, or no right to manage topics); its cards go to the chat itself");
                self.no_topics.lock().unwrap_or_else(|e| e.into_inner()).insert(chat.to_string());
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_links_are_for_supergroups_only() {
        assert_eq!(link("-1001234567890", "42").as_deref(), Some("https://t.me/c/1234567890/42"));
        assert_eq!(link("-4567", "42"), None, "a basic group has no topics");
        assert_eq!(link("-1001234", "x"), None);
    }
}
