//! The contract between plangate's server and its chat adapters.
//!
//! A channel crate (Telegram, Slack, Discord) does two things and nothing
//! else: it renders engine [`Card`]s as platform messages ([`Channel`]), and it
//! turns platform events (button clicks, `/plan` commands, replies, modal
//! submissions) into [`Inbound`] values for the server's [`InboundHandler`],
//! then renders the [`Reply`] it gets back. No business rule lives in an
//! adapter: who may decide, what a click means, which cards to edit, all of
//! that is the server's and the engine's.
//!
//! **Architecture invariant:** a channel crate depends on this crate and the
//! engine, never on another channel crate or on the store.

use async_trait::async_trait;
use plangate_engine::card::Card;
use plangate_engine::codec::Button;
use plangate_engine::grammar::Parsed;
use plangate_engine::{ApprovalId, Question, QuestionId};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

mod limit;
pub use limit::{send_with_retry, RateLimiter, RetryPolicy, Slot};

/// How a destination shows decisions: buttons, or the commands to type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    #[default]
    Buttons,
    Text,
}

/// One configured place where cards go (`[destinations.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub name: String,
    /// `telegram` | `slack` | `discord`
    pub channel: String,
    /// Chat id / channel id on the platform.
    pub chat: String,
    pub style: Style,
}

/// Where one posted message lives, so it can be edited or replied to later.
/// Persisted by the server per approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub destination: String,
    pub channel: String,
    pub chat: String,
    pub message_id: String,
    /// Slack `ts` of the thread root when different from `message_id`, etc.
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

/// The plan as an attached markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub file_name: String,
    pub text: String,
}

#[derive(Debug, Error)]
pub enum ChannelError {
    /// The platform asked us to slow down and we gave up waiting.
    #[error("rate limited by {platform}; retry after {retry_after:?}")]
    RateLimited { platform: &'static str, retry_after: Duration },
    /// The platform refused the request (bad chat id, missing permission…).
    #[error("{platform} refused the request: {message}")]
    Api { platform: &'static str, message: String },
    /// Network or server trouble; worth retrying later.
    #[error("{platform} is unreachable: {message}")]
    Transport { platform: &'static str, message: String },
    #[error("{0}")]
    Other(String),
}

/// Outbound half of an adapter. Every method is called by the server after
/// the transition that caused it has been committed, so a failure here never
/// loses a decision; the server logs it and moves on (or retries).
#[async_trait]
pub trait Channel: Send + Sync {
    /// `telegram`, `slack` or `discord`.
    fn name(&self) -> &'static str;

    /// Post a new plan card with its buttons (or text commands) and attach
    /// the document (Telegram: reply; Slack: in the thread; Discord: attachment).
    async fn post_card(&self, destination: &Destination, card: &Card, document: &Document) -> Result<Delivery, ChannelError>;

    /// Edit a posted card in place: new state, receipt instead of buttons.
    async fn update_card(&self, delivery: &Delivery, card: &Card) -> Result<(), ChannelError>;

    /// A reminder under the card (reply / thread / message reference), with
    /// the buttons again while the card is open.
    async fn send_nudge(&self, delivery: &Delivery, card: &Card, text: &str) -> Result<(), ChannelError>;

    /// Send the plan document into a chat (View plan, `/plan view`).
    async fn send_document(&self, chat: &str, reply_to: Option<&str>, document: &Document) -> Result<(), ChannelError>;

    /// Plain text into a chat (command output that everyone should see).
    async fn send_text(&self, chat: &str, text: &str) -> Result<(), ChannelError>;

    /// Post an agent's question with one button per option (+ "Other…").
    async fn post_question(&self, destination: &Destination, question: &Question) -> Result<Delivery, ChannelError>;

    /// Edit a posted question to show its answer, without buttons.
    async fn update_question(&self, delivery: &Delivery, question: &Question) -> Result<(), ChannelError>;
}

/// The person behind an inbound event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Platform user id (numeric on Telegram/Discord, `U…` on Slack). The
    /// approver allowlists use `<channel>:<id>`.
    pub id: String,
    /// How receipts show them, e.g. `@alice`.
    pub name: String,
    /// Slack workspace (`team.id`) or Discord guild the event came from, when
    /// the platform says; the server refuses events from a foreign team.
    pub team: Option<String>,
}

/// What a user did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A `/plan …` command, already parsed by the shared grammar.
    Command(Parsed),
    /// The words after `/plan` that failed to parse: the server answers with
    /// the grammar's usage error.
    BadCommand(String),
    /// A button click, decoded by the shared codec.
    Button(Button),
    /// Callback data that did not decode: answered "Unknown button" and audited.
    UnknownButton(String),
    /// Feedback for "Request changes" (ForceReply reply, modal submission).
    Feedback { approval_id: ApprovalId, text: String },
    /// Steps from an Edit modal.
    Edit { approval_id: ApprovalId, steps: Vec<String> },
    /// Free-text answer to a question ("Other…").
    AnswerText { question_id: QuestionId, text: String },
}

impl Action {
    /// A short name for logs and spans (never the user's text).
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Command(_) => "command",
            Action::BadCommand(_) => "bad_command",
            Action::Button(_) => "button",
            Action::UnknownButton(_) => "unknown_button",
            Action::Feedback { .. } => "feedback",
            Action::Edit { .. } => "edit",
            Action::AnswerText { .. } => "answer_text",
        }
    }
}

/// One event from a platform, in plangate's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbound {
    /// `telegram`, `slack` or `discord`.
    pub channel: &'static str,
    /// The chat / channel id the event came from.
    pub chat: String,
    pub user: User,
    pub action: Action,
    /// A platform id that makes the event unique (Telegram update id, Slack
    /// `action_ts`/`trigger_id`, Discord interaction id). The server handles
    /// each key once, also across restarts.
    pub idempotency_key: Option<String>,
}

/// What the adapter should show the user in answer to an [`Inbound`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Nothing to show (e.g. a duplicate event).
    None,
    /// A short acknowledgement for the clicker only (Telegram toast, Slack and
    /// Discord ephemeral message).
    Notice(String),
    /// Command output for the chat (status, list, help, errors).
    Text(String),
    /// Ask this user what should change (ForceReply / modal).
    AskFeedback { approval_id: ApprovalId, version: u32, prompt: String },
    /// Ask for the edited steps (modal), prefilled with the current ones.
    AskEdit { approval_id: ApprovalId, version: u32, steps: Vec<String> },
    /// Ask for a second tap before cancelling.
    ConfirmCancel { approval_id: ApprovalId, version: u32, prompt: String },
    /// Ask for a free-text answer to a question.
    AskAnswer { question_id: QuestionId, prompt: String },
    /// Send the plan document, with a caption.
    Document { document: Document, caption: String },
}

/// Inbound half of the contract, implemented by the server.
#[async_trait]
pub trait InboundHandler: Send + Sync {
    /// Route one event into the engine and say what to show the user. Card
    /// edits caused by the event are done by the server through [`Channel`].
    async fn handle(&self, event: Inbound) -> Reply;

    /// Durable small values for adapters (the Telegram update offset, …),
    /// stored in plangate's database so they survive restarts.
    fn load_cursor(&self, key: &str) -> Option<String>;
    fn save_cursor(&self, key: &str, value: &str);
}

/// What starting an adapter gives the server.
pub struct Adapter {
    pub channel: Arc<dyn Channel>,
    /// Routes to mount on plangate's HTTP server (webhooks, signed
    /// interaction endpoints); `None` when the transport needs none.
    pub routes: Option<axum::Router>,
    /// The background transport (long polling, Socket Mode, gateway). Ends
    /// when `shutdown` is cancelled.
    pub task: Option<tokio::task::JoinHandle<()>>,
    /// The Slack workspace (`team.id`) or Discord guild this adapter serves,
    /// when configured: the server refuses (and audits) events whose
    /// [`User::team`] is another one.
    pub expected_team: Option<String>,
}

/// A minimal cancellation signal adapters watch for shutdown.
pub type Shutdown = tokio::sync::watch::Receiver<bool>;
