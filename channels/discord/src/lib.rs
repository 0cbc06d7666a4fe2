//! plangate's Discord adapter.
//!
//! It does two things and nothing else (see `plangate-channel`):
//!
//! * **Outbound** ([`DiscordChannel`], the `Channel` trait): a plan card is one
//!   message with an embed (title, `agent/session · v2 · …`, summary, steps,
//!   risks, assumptions, verification, receipt in the footer once decided), a
//!   button row **Approve · Request changes · Claim · Cancel · View plan · Edit** whose
//!   `custom_id`s come from the engine's codec, and the plan document attached.
//!   Text-style destinations get the plain-text card with the commands to type
//!   and no components. Nudges are replies (`message_reference`) to the card,
//!   questions are messages with one button per option plus "Other…".
//! * **Inbound**: button clicks, `/plan` slash commands and modal submissions
//!   become one [`plangate_channel::Inbound`] each; the server's
//!   [`plangate_channel::Reply`] is rendered as the interaction response
//!   (ephemeral message, modal, confirm button, document).
//!
//! # A thread per session
//! Under `threads = "per_session"` the session's first card starts a thread
//! and everything after it is posted there (`threads`: deleted threads
//! started again, archived or locked ones reopened). An interaction from
//! inside a thread is handed to the server as its parent channel, with the
//! thread in `Inbound::thread`, as Discord's own `channel` object says.
//!
//! # Transports
//! * `transport = "gateway"` (default): serenity's `Client` over the gateway,
//!   no public URL needed. Interaction responses go out over REST.
//! * `transport = "http"`: the interactions endpoint, mounted by the server at
//!   `POST /discord/interactions` ([`INTERACTIONS_PATH`]). Every request is
//!   verified *before* it is parsed: Ed25519 with `verify_strict` semantics
//!   over `timestamp + body` (serenity's own `Verifier` uses the lenient
//!   `verify` and accepts small-order keys and signatures, so it is not used),
//!   a timestamp window, and a replay check by interaction id.
//!
//! # Replicas
//! Discord gives each interaction to one gateway session of the bot, so
//! only the replica whose [`plangate_channel::Leadership`] is `true` runs
//! the gateway; the others wait on the watch and report "follower" as
//! ready. Losing leadership shuts the shard down, winning it builds a new
//! client and identifies. Command registration at start, every REST call
//! and the interactions endpoint work on every replica.
//!
//! # Acknowledging within 3 s
//! The handler gets `defer_after_ms` (2 s by default). If it answers in time
//! its reply is the interaction response; if not, the interaction is deferred
//! (ephemeral "thinking…") and the reply replaces it when it comes. A modal can
//! only be the first response, so a late `Ask*` reply becomes the command to
//! type instead. Documents always take the deferred path (a file cannot ride
//! in the HTTP endpoint's response body).
//!
//! A click that decides (Approve → `Notice`) is answered with an **ephemeral
//! message to the clicker**; the card itself is only ever edited by the
//! server's `update_card` call. One path for card edits keeps clicks, `/plan`
//! commands and decisions from other channels identical.
//!
//! # Limits handled
//! Embed description 4096, field 1024, 25 fields, title 256, footer 2048,
//! total 6000, content 2000, button label 80, modal title/label 45, text
//! input 4000, `custom_id` 100 (the codec's 64 fit). Text that does not fit is
//! cut at a line boundary with "… full plan in the attached document".
//! Agent-written text is markdown-escaped and every message is sent with
//! empty `allowed_mentions`, so `@everyone` in a plan pings nobody.
//!
//! # Rate limits
//! `api_url` (default `https://discord.com`) is handed to serenity as its
//! proxy base, which serenity honours only with its own ratelimiter off. So
//! serenity builds every request (routes, auth, multipart) and this crate
//! executes it: plangate's shared [`plangate_channel::RateLimiter`] keeps each
//! channel under `per_channel` messages per `per_channel_window_secs`, and a
//! 429 is surfaced as `ChannelError::RateLimited` with Discord's
//! `retry_after` (which serenity's error type would have dropped).

mod config;
mod endpoint;
mod gateway;
mod inbound;
mod outbound;
mod render;
mod rest;
mod threads;

pub use config::{DiscordConfig, Transport};
pub use endpoint::{Verifier, INTERACTIONS_PATH};
pub use outbound::DiscordChannel;

use plangate_channel::{Adapter, ChannelError, ConfigError, InboundHandler, Leadership, Shutdown};
use std::sync::Arc;
use thiserror::Error;

/// Why the adapter could not start.
#[derive(Debug, Error)]
pub enum DiscordError {
    /// A `[discord]` setting is missing or malformed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Discord refused or could not be reached while registering `/plan`.
    #[error("registering the /plan command failed: {0}")]
    Register(ChannelError),
    /// serenity could not build its gateway client.
    #[error("the discord gateway client could not be built: {0}")]
    Gateway(String),
}

/// The shell's one clock (its Unix seconds), injectable so tests can move time.
pub use plangate_channel::clock::Clock;

/// Start the adapter: register `/plan`, then run the configured transport:
/// the gateway only while `leader` is true (its task ends on `shutdown`),
/// or the interactions endpoint, which every replica serves (`leader` is not
/// used).
pub async fn start(
    config: DiscordConfig,
    handler: Arc<dyn InboundHandler>,
    shutdown: Shutdown,
    leader: Leadership,
) -> Result<Adapter, DiscordError> {
    start_with_clock(config, handler, shutdown, leader, Arc::new(plangate_channel::SystemClock)).await
}

/// [`start`] with an injected clock (for the interactions endpoint's
/// timestamp window).
pub async fn start_with_clock(
    config: DiscordConfig,
    handler: Arc<dyn InboundHandler>,
    shutdown: Shutdown,
    leader: Leadership,
    clock: Arc<dyn Clock>,
) -> Result<Adapter, DiscordError> {
    let settings = config.validate()?;
    let rest = Arc::new(rest::Rest::new(&settings).map_err(|e| {
        ConfigError::new("discord.api_url", format!("cannot be used by the HTTP client ({e})"), "check the URL and the system's TLS setup")
    })?);
    if settings.register_commands {
        rest.register_plan_command(settings.guild_id).await.map_err(DiscordError::Register)?;
    }
    let channel = Arc::new(DiscordChannel::new(rest.clone(), &settings));
    let inbox = Arc::new(inbound::Inbox::new(handler, rest.clone(), &settings));
    let liveness = plangate_channel::Liveness::new("gateway connection", None);
    let (routes, task) = match settings.transport {
        Transport::Gateway => {
            // Leading from the start: the client is built now, so a gateway
            // Discord will not hand out fails the start. A follower builds
            // its client when elected.
            let leads = *leader.borrow();
            let first = match leads {
                true => Some(gateway::connect(&rest, &inbox, &liveness).await?),
                false => None,
            };
            (None, Some(gateway::spawn(rest.clone(), inbox, first, shutdown, leader, liveness.clone())))
        }
        Transport::Http => {
            // validate() refuses HTTP without a key.
            let verifier = settings
                .public_key
                .clone()
                .ok_or_else(|| ConfigError::new("discord.application_public_key", "is missing", "set it when transport = \"http\""))?;
            // Discord calls us; the command registration answered at start.
            liveness.ok();
            (Some(endpoint::router(verifier, inbox, settings.interaction_window_secs, clock)), None)
        }
    };
    tracing::info!(transport = ?settings.transport, guild = ?settings.guild_id, "discord adapter started");
    Ok(Adapter { channel, routes, task, expected_team: settings.guild_id.map(|g| g.to_string()), liveness })
}
