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
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

pub mod clock;
mod limit;
pub use clock::{Clock, ManualClock, SystemClock};
pub use limit::{global_limit_key, limit_key, send_with_retry, RateLimiter, RetryPolicy, RetryRefusals, Slot};
/// Where messages go and where they landed: plain data, shared with the
/// store through `plangate-delivery` and re-exported here for adapters.
pub use plangate_delivery::{Delivery, Destination, Style, Threads};

/// The plan as an attached markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub file_name: String,
    pub text: String,
}

/// Why a send failed, in the contract's terms. Each adapter maps its
/// platform's errors onto these variants once (its `map_error`), so callers
/// match on variants, never on message text; every `message` is the
/// platform's own words, for logs and the audit trail.
#[derive(Debug, Error)]
pub enum ChannelError {
    /// An edit that changes nothing: the message already shows this
    /// (Telegram's "message is not modified"). An edit that wanted this
    /// content has nothing left to do.
    #[error("{platform} refused the request: the message is not modified")]
    NotModified { platform: &'static str },
    /// The chat, message, user or interaction does not exist (any more), or
    /// the bot cannot see it.
    #[error("{platform} refused the request: {message}")]
    NotFound { platform: &'static str, message: String },
    /// The platform asked us to slow down and we gave up waiting.
    #[error("rate limited by {platform}; retry after {retry_after:?}")]
    RateLimited { platform: &'static str, retry_after: Duration },
    /// The bot may not do this: not in the chat, blocked, missing a
    /// permission or a scope, or its token is not valid.
    #[error("{platform} refused the request: {message}")]
    Forbidden { platform: &'static str, message: String },
    /// Any other refusal (a bad request, an id that is not one, a conflict),
    /// with the HTTP status when the refusal came as one. Sending the same
    /// request again cannot help.
    #[error("{platform} refused the request: {message}")]
    Api { platform: &'static str, status: Option<u16>, message: String },
    /// Network trouble, or the platform's own (a 5xx, with its status);
    /// worth retrying later.
    #[error("{platform} is unreachable: {message}")]
    Transport { platform: &'static str, status: Option<u16>, message: String },
    /// Trouble on plangate's side (a payload that cannot be built).
    #[error("{0}")]
    Other(String),
}

impl ChannelError {
    /// The variant's name, for logs and tests: `not_modified`, `not_found`,
    /// `rate_limited`, `forbidden`, `api`, `transport` or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            ChannelError::NotModified { .. } => "not_modified",
            ChannelError::NotFound { .. } => "not_found",
            ChannelError::RateLimited { .. } => "rate_limited",
            ChannelError::Forbidden { .. } => "forbidden",
            ChannelError::Api { .. } => "api",
            ChannelError::Transport { .. } => "transport",
            ChannelError::Other(_) => "other",
        }
    }

    /// The HTTP status of an `Api` or `Transport` error, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ChannelError::Api { status, .. } | ChannelError::Transport { status, .. } => *status,
            _ => None,
        }
    }
}

/// A key of an adapter's configuration section that is missing or wrong, in
/// one shape for every adapter: "`<key>`: what is wrong; what to do".
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{key}`: {problem}; {fix}")]
pub struct ConfigError {
    /// The whole key, section included: `telegram.token`.
    pub key: &'static str,
    /// What is wrong with it, e.g. "is empty".
    pub problem: String,
    /// What to do about it, e.g. "set it to the bot token from @BotFather".
    pub fix: String,
}

impl ConfigError {
    pub fn new(key: &'static str, problem: impl Into<String>, fix: impl Into<String>) -> ConfigError {
        ConfigError { key, problem: problem.into(), fix: fix.into() }
    }
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

    /// Post a card under another card of the same chat (`parent`): an
    /// amendment under the plan it amends, so the people who approved the
    /// plan see what was added in its context (Telegram: a reply; Slack: in
    /// the parent's thread; Discord: a message referencing it). An adapter
    /// that cannot thread posts a card of its own.
    async fn post_card_under(
        &self,
        parent: &Delivery,
        destination: &Destination,
        card: &Card,
        document: &Document,
    ) -> Result<Delivery, ChannelError> {
        let _ = parent;
        self.post_card(destination, card, document).await
    }

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

    /// A link people can open to a session's topic or thread in `chat`
    /// (for `/plan list`), when the platform has one without asking it.
    fn thread_link(&self, chat: &str, thread: &str) -> Option<String> {
        let _ = (chat, thread);
        None
    }
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
    /// Approve with a note and/or except some steps (1-based numbers of the
    /// proposed plan): a ForceReply reply on Telegram, the approve modal on
    /// Slack and Discord.
    Approve { approval_id: ApprovalId, note: Option<String>, except: Vec<usize> },
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
            Action::Approve { .. } => "approve",
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
    /// The forum topic or thread the event came from, in the platform's
    /// terms ([`Delivery::thread`]): under `threads = "per_session"` a
    /// `/plan` command typed there targets that topic's session.
    pub thread: Option<String>,
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
    /// Ask for an approval's optional note and, where the platform has forms,
    /// the steps to leave out (Telegram: a ForceReply for the note; Slack and
    /// Discord: a modal with a step picker). `steps` are the proposed plan's,
    /// in order.
    AskApproval { approval_id: ApprovalId, version: u32, steps: Vec<String>, prompt: String },
    /// Ask for a second tap before cancelling.
    ConfirmCancel { approval_id: ApprovalId, version: u32, prompt: String },
    /// Ask for a free-text answer to a question.
    AskAnswer { question_id: QuestionId, prompt: String },
    /// Send the plan document, with a caption.
    Document { document: Document, caption: String },
    /// Something for this user's eyes only (a personal sign-in link): a
    /// Telegram direct message, a Slack or Discord ephemeral message. Never
    /// posted where others can read it.
    Private(String),
    /// What every member of the chat should see, not only the sender (what
    /// a pairing or an approver change recorded): a message in the chat on
    /// every platform, never ephemeral (on Discord, unless the answer came
    /// after the interaction had to be deferred: then the sender's).
    Announce(String),
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
    /// The background transport (long polling, Socket Mode, gateway). It
    /// holds its connection only while its [`Leadership`] is `true`, and
    /// ends when `shutdown` is cancelled.
    pub task: Option<tokio::task::JoinHandle<()>>,
    /// The Slack workspace (`team.id`) or Discord guild this adapter serves,
    /// when configured: the server refuses (and audits) events whose
    /// [`User::team`] is another one.
    pub expected_team: Option<String>,
    /// The transport's connection state, for `/readyz`.
    pub liveness: Liveness,
}

/// Whether an adapter's connection to its platform works, for `/readyz`:
/// the transport reports each success (a poll answered, Socket Mode's
/// `hello`, the gateway connected) and each loss, with its reason. A replica
/// that leaves the connection to another ([`Leadership`]) is a
/// [`follower`](Liveness::follower), and ready. Cheap to clone; every clone
/// shares the state.
#[derive(Clone, Default)]
pub struct Liveness(Arc<std::sync::Mutex<LiveState>>);

#[derive(Default)]
struct LiveState {
    last_ok: Option<std::time::Instant>,
    down: Option<String>,
    stale_after: Option<Duration>,
    what: &'static str,
    /// Another replica holds the connection (see [`Leadership`]).
    follower: bool,
}

/// What [`Liveness::status`] says about a replica that does not hold the
/// connection.
pub const FOLLOWER: &str = "follower: another replica holds the connection";

impl Liveness {
    /// `what` names the success (`"getUpdates"`, `"Socket Mode hello"`); a
    /// transport that succeeds periodically (polling) passes `stale_after`:
    /// no success for that long is not ready.
    pub fn new(what: &'static str, stale_after: Option<Duration>) -> Liveness {
        Liveness(Arc::new(std::sync::Mutex::new(LiveState { what, stale_after, ..LiveState::default() })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LiveState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The platform answered: connected.
    pub fn ok(&self) {
        let mut s = self.state();
        s.last_ok = Some(std::time::Instant::now());
        s.down = None;
    }

    /// The connection is lost or failing, and why.
    pub fn down(&self, reason: impl Into<String>) {
        self.state().down = Some(reason.into());
    }

    /// This replica lets another one hold the connection (it lost, or never
    /// won, the [`Leadership`] election): ready, since not connecting is
    /// what it should do. Outbound calls and HTTP endpoints still work here.
    pub fn follower(&self) {
        let mut s = self.state();
        s.follower = true;
        s.down = None;
    }

    /// This replica now holds the connection. Coming from [`follower`]
    /// (a takeover), it is not ready until the transport's next success:
    /// an earlier success was another connection's. A no-op otherwise, so
    /// a process that leads from the start keeps what its start reported.
    ///
    /// [`follower`]: Liveness::follower
    pub fn leading(&self) {
        let mut s = self.state();
        if s.follower {
            s.follower = false;
            s.down = Some("this replica is taking over the connection from another one".to_string());
        }
    }

    /// `Ok` while connected, else why not, in words for an operator. A
    /// follower is ready: see [`Liveness::status`] for the words.
    pub fn check(&self) -> Result<(), String> {
        self.status().map(|_| ())
    }

    /// Like [`Liveness::check`], with a note when ready without a
    /// connection of its own: `Ok(Some(FOLLOWER))` on a follower.
    pub fn status(&self) -> Result<Option<&'static str>, String> {
        let s = self.state();
        if s.follower {
            return Ok(Some(FOLLOWER));
        }
        let Some(last) = s.last_ok else {
            return Err(match &s.down {
                Some(why) => format!("not connected yet: {why}"),
                None => format!("not connected yet (no successful {})", s.what),
            });
        };
        if let Some(why) = &s.down {
            return Err(format!("disconnected: {why} (last successful {} {} s ago)", s.what, last.elapsed().as_secs()));
        }
        match s.stale_after {
            Some(limit) if last.elapsed() > limit => {
                Err(format!("no successful {} for {} s (expected every {} s at most)", s.what, last.elapsed().as_secs(), limit.as_secs()))
            }
            _ => Ok(None),
        }
    }
}

/// A minimal cancellation signal adapters watch for shutdown.
pub type Shutdown = tokio::sync::watch::Receiver<bool>;

/// Whether this process may hold the platform's one inbound connection (the
/// Telegram long-poll, the Slack Socket Mode socket, the Discord gateway).
/// Replicas on one PostgreSQL store elect one leader; a single process is
/// always the leader. An adapter's transport connects while it is `true`
/// and lets go as soon as it turns `false`. Outbound calls (posting and
/// editing cards) and inbound HTTP endpoints work on every replica.
pub type Leadership = tokio::sync::watch::Receiver<bool>;

/// A [`Leadership`] that is always `true` (one process, tests).
pub fn always_leader() -> Leadership {
    let (tx, rx) = tokio::sync::watch::channel(true);
    // Dropping the sender keeps the last value, which is all a reader sees.
    drop(tx);
    rx
}

/// Resolves once `leader` is `true` (at once if it is). A [`Leadership`]
/// whose sender is gone never changes again: if it is `false` then, this
/// never resolves (select it against shutdown), rather than erroring in a
/// loop.
pub async fn leading(leader: &mut Leadership) {
    if leader.wait_for(|lead| *lead).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Resolves once `leader` is `false` (at once if it is): the transport must
/// let go. Never resolves for a closed `true` one ([`always_leader`]).
pub async fn not_leading(leader: &mut Leadership) {
    if leader.wait_for(|lead| !*lead).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follower_is_ready_and_a_takeover_waits_for_its_own_success() {
        let live = Liveness::new("hello", None);
        assert!(live.check().is_err(), "nothing yet");
        live.follower();
        assert_eq!(live.status(), Ok(Some(FOLLOWER)));
        live.down("a late error of the old connection");
        assert_eq!(live.status(), Ok(Some(FOLLOWER)), "a follower has no connection to lose");
        live.leading();
        let why = live.check().unwrap_err();
        assert!(why.contains("taking over"), "{why}");
        live.ok();
        assert_eq!(live.status(), Ok(None));
        live.leading();
        assert_eq!(live.status(), Ok(None), "already leading: nothing changes");
    }

    #[tokio::test]
    async fn closed_leadership_settles_instead_of_erroring() {
        let never = std::time::Duration::from_millis(50);
        let mut leader = always_leader();
        tokio::time::timeout(never, leading(&mut leader)).await.expect("always leads");
        assert!(tokio::time::timeout(never, not_leading(&mut leader)).await.is_err(), "never loses");

        let (tx, mut follower) = tokio::sync::watch::channel(false);
        drop(tx);
        tokio::time::timeout(never, not_leading(&mut follower)).await.expect("not leading");
        assert!(tokio::time::timeout(never, leading(&mut follower)).await.is_err(), "never leads");
    }

    #[tokio::test]
    async fn leadership_changes_wake_the_waiters() {
        let wait = std::time::Duration::from_secs(5);
        let (tx, mut leader) = tokio::sync::watch::channel(false);
        let (led, leads) = tokio::sync::oneshot::channel();
        let waiter = tokio::spawn(async move {
            leading(&mut leader).await;
            let _ = led.send(());
            not_leading(&mut leader).await;
        });
        tx.send_replace(true);
        tokio::time::timeout(wait, leads).await.expect("woken when leading").expect("sent");
        tx.send_replace(false);
        tokio::time::timeout(wait, waiter).await.expect("woken when not leading").expect("no panic");
    }
}
