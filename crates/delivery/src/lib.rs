//! Where plangate's chat messages go ([`Destination`], [`Style`]) and where
//! they landed ([`Delivery`]).
//!
//! Plain data with serde, nothing else: the store persists deliveries and the
//! channel contract (`plangate-channel`, which re-exports these types) hands
//! them to adapters, and neither has to depend on the other for it.
//!
//! **Architecture invariant:** no I/O, no async, no dependency but serde.

use serde::{Deserialize, Serialize};

/// How a destination shows decisions: buttons, or the commands to type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    #[default]
    Buttons,
    Text,
}

/// Whether a destination gives each agent session a place of its own
/// (`threads = "per_session"`): a Telegram forum topic, a Slack thread
/// under the session's first card, a Discord thread started from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Threads {
    /// Every card in the chat itself (amendments and nudges still thread
    /// under their card).
    #[default]
    Off,
    PerSession,
}

impl Threads {
    pub fn is_off(&self) -> bool {
        *self == Threads::Off
    }
}

/// One configured place where cards go (`[destinations.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Destination {
    pub name: String,
    /// `telegram` | `slack` | `discord`
    pub channel: String,
    /// Chat id / channel id on the platform.
    pub chat: String,
    pub style: Style,
    pub threads: Threads,
    /// Under [`Threads::PerSession`]: the session's topic or thread when it
    /// has one already (the Telegram topic's `message_thread_id`, the Slack
    /// root card's `ts`, the Discord thread's channel id). The server sets
    /// it from what it stored; `None` asks the adapter to open one.
    pub thread: Option<String>,
    /// What to call a topic or thread the adapter opens for the session
    /// (`billing-api · Add retries`), set by the server with [`Destination::thread`].
    pub thread_name: String,
}

/// Where one posted message lives, so it can be edited or replied to later.
/// Persisted by the server per approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub destination: String,
    pub channel: String,
    pub chat: String,
    pub message_id: String,
    /// The thread the message is in: the Slack `ts` of its thread's root,
    /// the Telegram forum topic's `message_thread_id`, the Discord thread's
    /// channel id (then `chat` is that thread too). A card posted under
    /// `threads = "per_session"` carries its session's here, which is how
    /// the server learns and stores a topic or thread the adapter opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    #[serde(default)]
    pub style: Style,
}

impl Delivery {
    /// Where a message just posted to `destination` lives. `chat` is the id
    /// the platform answered with (normally `destination.chat`).
    pub fn posted(destination: &Destination, chat: impl Into<String>, message_id: impl Into<String>) -> Delivery {
        Delivery {
            destination: destination.name.clone(),
            channel: destination.channel.clone(),
            chat: chat.into(),
            message_id: message_id.into(),
            thread: None,
            style: destination.style,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posted_takes_the_destination_and_the_stored_form_is_stable() {
        let destination =
            Destination { name: "ops".into(), channel: "slack".into(), chat: "C1".into(), style: Style::Text, ..Destination::default() };
        let delivery = Delivery::posted(&destination, "C1", "1700000000.000001");
        assert_eq!((delivery.destination.as_str(), delivery.channel.as_str(), delivery.style), ("ops", "slack", Style::Text));
        // The store keeps deliveries as this JSON: records written before
        // the type moved here must still read.
        let json = serde_json::to_value(&delivery).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"destination": "ops", "channel": "slack", "chat": "C1", "message_id": "1700000000.000001", "style": "text"})
        );
        let old: Delivery =
            serde_json::from_value(serde_json::json!({"destination": "d", "channel": "telegram", "chat": "1", "message_id": "2"})).unwrap();
        assert_eq!((old.thread, old.style), (None, Style::Buttons));
    }
}
