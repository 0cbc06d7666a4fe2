//! plangate's Slack adapter.
//!
//! It does two things and nothing else (see `plangate-channel`):
//!
//! * **Outbound** ([`SlackChannel`]): renders the engine's [`Card`] as a Block
//!   Kit message (header, context, summary, numbered steps, risks,
//!   assumptions, verification, hidden-character warning, and the buttons
//!   Approve · Request changes · Claim · Cancel · View plan · Edit, or the `/plan`
//!   commands for text-style destinations), uploads the plan document into the
//!   card's thread with the external upload flow
//!   (`files.getUploadURLExternal` → upload → `files.completeUploadExternal`),
//!   edits the card into its receipt, nudges in the thread, and posts agent
//!   questions with one button per option.
//! * **Inbound**: turns `block_actions`, `view_submission` of its own modals
//!   and the `/plan` slash command into one [`Inbound`] each, calls the
//!   server's [`InboundHandler`], and renders the [`Reply`] the Slack way:
//!   ephemeral messages, modals (`views.open`), a confirm button, a document.
//!
//! **A thread per session** (`threads = "per_session"`): the session's first
//! card roots a thread, later messages are replies in it (new versions also
//! broadcast). Slack does not run a slash command typed in a thread (the
//! client answers "/plan is not supported in threads" and nothing reaches
//! the app; a command payload has no `thread_ts` either), and this adapter
//! subscribes to no message events, so a `/plan` can never come from a
//! session's thread: there, people decide with the buttons every card,
//! reminder and question carries (each names its plan), and type `/plan`
//! in the channel, with the card's `#id` when several plans wait.
//!
//! **Transports.** Socket Mode (the default: `apps.connections.open` with the
//! app-level token, then a websocket; no public URL needed) or signed HTTP
//! (`transport = "http"`): [`Adapter::routes`] then carries
//! `POST /slack/interactivity` and `POST /slack/commands`, which verify
//! `X-Slack-Signature` (HMAC-SHA256 with the signing secret, constant-time) and
//! a ±300 s `X-Slack-Request-Timestamp` *before* anything is parsed.
//!
//! **Replicas.** Slack spreads an app's envelopes over all its open Socket
//! Mode connections, so only the replica whose [`Leadership`] is `true`
//! connects; the others wait on the watch and report "follower" as ready.
//! Losing leadership closes the socket, winning it opens one. Sends, edits,
//! uploads and the signed HTTP routes work on every replica, and so does
//! `auth.test` at start.
//!
//! **Limits handled.** Slack wants an ack within 3 s, so the handler always
//! runs after the ack (spawned) and answers through `response_url`,
//! `chat.postEphemeral` or `views.open`. Duplicates (Slack retries, replays,
//! double clicks) carry the same idempotency key (`slack:action:<action_ts>`,
//! `slack:command:<trigger_id>`, `slack:view:<view id>:<hash>`) and are dropped
//! in-process; the server dedupes them durably too. Sections are split at 3,000
//! characters and a card never exceeds 50 blocks (cut with "… full plan in the
//! attached document"); button texts stay under 75 characters. Outbound
//! messages go through the shared [`RateLimiter`] (1/s per channel, 20/s
//! overall by default) and a 429's `Retry-After` is honoured.
//!
//! **Agent text is never markup.** Whatever an agent or a chat user wrote
//! (titles, summaries, steps, risks, questions, options, receipts with their
//! feedback, command output) is shown in `plain_text` text objects with
//! `emoji: false`, which Slack renders verbatim: no bold, no links, no
//! `<!channel>`. The few mrkdwn strings that must carry such text (a message's
//! notification `text`, an upload's comment) go through [`render::escape`].
//! See [`render`] for why this and not character escapes.
//!
//! **Workspaces.** Every event carries the team it came from
//! ([`User::team`](plangate_channel::User::team)); the server refuses and
//! audits any team that is not allowed. Allowed are the home workspace —
//! `team_id`, or when it is unset the bot's own workspace from `auth.test` at
//! start — plus the explicit opt-in `allow_other_teams`. If `team_id` is unset
//! and `auth.test` fails, [`start`] fails: the adapter cannot tell its users
//! from strangers, so it refuses to run rather than accept everyone.
//!
//! **Architecture invariant:** this crate depends on the channel contract and
//! the engine only; business rules (who may approve, which session a command
//! targets) are the server's.
//!
//! [`Card`]: plangate_engine::card::Card
//! [`Inbound`]: plangate_channel::Inbound
//! [`InboundHandler`]: plangate_channel::InboundHandler
//! [`Reply`]: plangate_channel::Reply
//! [`Adapter::routes`]: plangate_channel::Adapter::routes
//! [`RateLimiter`]: plangate_channel::RateLimiter
//! [`Leadership`]: plangate_channel::Leadership

mod config;
mod http;
mod inbound;
mod outbound;
pub mod render;
mod socket;
pub mod verify;

pub use config::{SlackConfig, Transport, DEFAULT_API_URL};
pub use outbound::SlackChannel;
pub use verify::{Clock, Verifier};

use plangate_channel::{Adapter, ConfigError, InboundHandler, Leadership, Shutdown};
use std::sync::Arc;
use thiserror::Error;

/// Why the adapter could not start.
#[derive(Debug, Error)]
pub enum SlackError {
    /// A `[slack]` key is missing or invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The HTTPS connector could not load the system's root certificates.
    #[error("cannot load TLS root certificates: {0}")]
    Tls(String),
    /// `team_id` is unset and `auth.test` could not say which workspace the
    /// bot belongs to.
    #[error(
        "cannot learn the Slack workspace: auth.test failed ({0}). Without it, clicks from other workspaces could not be \
         refused, so the Slack adapter does not start. Check slack.bot_token and slack.api_url, or set slack.team_id to \
         your workspace id (T…) to start without asking Slack"
    )]
    Workspace(String),
}

/// Knobs tests need and deployments do not.
#[derive(Clone)]
pub struct StartOptions {
    /// Wall clock for the signed-request timestamp window.
    pub clock: Arc<dyn Clock>,
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions { clock: Arc::new(plangate_channel::SystemClock) }
    }
}

/// Start the Slack adapter: build the Web API client, learn the home
/// workspace from `auth.test` when `team_id` is unset (failing closed: an
/// error, not an adapter that accepts every workspace), and either run
/// Socket Mode (connected only while `leader` is true; the returned task
/// ends when `shutdown` becomes true) or hand back the signed HTTP routes for
/// the server to mount (every replica serves them; `leader` is not used).
///
/// [`Adapter::expected_team`] is always set: the home workspace. The server
/// allows it and [`SlackConfig::allowed_teams`], and refuses every other team.
pub async fn start(
    config: SlackConfig,
    handler: Arc<dyn InboundHandler>,
    shutdown: Shutdown,
    leader: Leadership,
) -> Result<Adapter, SlackError> {
    start_with(config, handler, shutdown, leader, StartOptions::default()).await
}

/// [`start`] with an injected clock (tests of the timestamp window).
pub async fn start_with(
    config: SlackConfig,
    handler: Arc<dyn InboundHandler>,
    shutdown: Shutdown,
    leader: Leadership,
    options: StartOptions,
) -> Result<Adapter, SlackError> {
    config.validate()?;
    tracing::info!(config = ?config, "starting the Slack adapter");
    let api = Arc::new(outbound::Api::new(&config)?);
    let channel = Arc::new(SlackChannel::new(api.clone()));
    let home = match config.expected_team() {
        Some(team) => team,
        None => match api.auth_team().await {
            Ok(team) => {
                tracing::info!(team, "Slack workspace learned from auth.test; users of other workspaces are refused");
                team
            }
            Err(e) => {
                let error = SlackError::Workspace(e.to_string());
                tracing::error!(%error, "the Slack adapter cannot start");
                return Err(error);
            }
        },
    };
    let expected_team = Some(home);
    let dispatcher = Arc::new(inbound::Dispatcher::new(handler, api.clone()));
    match config.transport {
        Transport::Socket => {
            let app_token = config::secret_text(&config.app_token).unwrap_or_default();
            let liveness = plangate_channel::Liveness::new("Socket Mode hello", None);
            let task = socket::spawn(api, dispatcher, app_token, shutdown, leader, liveness.clone());
            Ok(Adapter { channel, routes: None, task: Some(task), expected_team, liveness })
        }
        Transport::Http => {
            let secret = config::secret_text(&config.signing_secret).unwrap_or_default();
            let verifier = Arc::new(Verifier::new(secret.as_bytes(), options.clock));
            // Slack calls us; auth.test answered at start.
            let liveness = plangate_channel::Liveness::new("auth.test", None);
            liveness.ok();
            Ok(Adapter { channel, routes: Some(http::routes(dispatcher, verifier)), task: None, expected_team, liveness })
        }
    }
}
