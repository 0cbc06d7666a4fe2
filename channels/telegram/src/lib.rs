//! plangate's Telegram adapter (teloxide).
//!
//! **What it does.** Outbound ([`TelegramChannel`], the `Channel` contract):
//! a plan card is one HTML message with inline buttons ✅ Approve · ✏️ Request
//! changes · 🙋 Claim · ✖ Cancel · 📄 View plan · ✍️ Edit steps (callback data from the engine's codec),
//! followed by the whole plan as a markdown document sent as a reply to it.
//! `text`-style destinations get the `/plan …` commands instead of buttons.
//! Decisions edit the card in place (receipt, keyboard removed); reminders
//! reply to the card with the buttons again. Inbound: button clicks, `/plan`
//! messages (also `/plan@ThisBot` in groups) and replies to ForceReply prompts
//! become one [`plangate_channel::Inbound`] each; the server's
//! [`plangate_channel::Reply`] comes back as a toast, a message, a
//! ForceReply prompt, a "Yes, cancel vN" button or a document. Telegram has no
//! modals, so "Request changes", "Edit" and "Other…" ask with a ForceReply
//! message whose last line carries the full id, so a reply still maps after a
//! restart. Every callback query is answered exactly once.
//!
//! **Transports.** Long polling by default (`getUpdates`, timeout ≤ 15 s, the
//! offset saved through the handler's cursor after every handled update so
//! a restart resumes where it stopped). Or `transport = "webhook"`: the
//! server mounts `POST /telegram/webhook` from [`Adapter::routes`]; it
//! requires a `webhook_secret`, compares `X-Telegram-Bot-Api-Secret-Token` in
//! constant time before reading the body, and registers itself with
//! `setWebhook`.
//!
//! **Replicas.** Telegram serves `getUpdates` to one caller per bot, so only
//! the replica whose [`Leadership`] is `true` long-polls; the others wait on
//! the watch (no polling loop) and report "follower" as ready. Losing
//! leadership drops an unanswered poll (its updates stay Telegram's, for the
//! new leader) and stops after the update in hand; winning it resumes from
//! the saved offset, which the previous leader moved on. Sends, edits and the
//! webhook route work on every replica, and so do the start-time calls
//! (`getMe`, `setMyCommands`, `deleteWebhook` or `setWebhook`).
//!
//! **Limits handled.** Message text 4096 (cards cut at a line boundary with
//! "… full plan in the attached document"; the document is always whole),
//! captions 1024, toasts 200, callback data 64 bytes (longer or undecodable
//! data is an `UnknownButton`, answered "Unknown button"). Outbound messages
//! go through the shared [`plangate_channel::RateLimiter`] (1/s per chat and
//! 30/s overall by default) and `send_with_retry`, which honours a 429's
//! `retry_after`. teloxide itself sleeps 10 s after any 5xx answer; that is
//! left as is (it is a sensible pause against a struggling Bot API).
//!
//! **Hygiene.** Every agent- or server-written string is revealed (hidden and
//! bidi characters shown as ⟦U+…⟧), has its `@` defused so nobody is pinged,
//! and is HTML-escaped with teloxide's escaper. The token never appears in
//! `Debug` output or error messages.
//!
//! **Architecture invariant:** no business rule lives here. Who may decide,
//! what a click means and which cards to edit are the server's.

mod config;
mod inbound;
mod outbound;
pub mod render;
mod topics;
mod transport;

pub use config::{TelegramConfig, Transport, DEFAULT_API_URL, MAX_POLL_TIMEOUT_SECS};
pub use inbound::{idempotency_key, UNKNOWN_BUTTON};
pub use outbound::TelegramChannel;
pub use transport::{CURSOR_KEY, SECRET_HEADER, WEBHOOK_PATH};

use plangate_channel::{Adapter, ConfigError, InboundHandler, Leadership, Shutdown};
use secrecy::{ExposeSecret, SecretString};
use std::fmt::Display;
use std::str::FromStr;
use std::sync::Arc;
use teloxide::payloads::SetWebhookSetters;
use teloxide::prelude::Requester;
use teloxide::types::BotCommand;
use teloxide::{Bot, RequestError};
use thiserror::Error;

/// What `/plan` says in Telegram's command menu.
pub const COMMAND_DESCRIPTION: &str = "Approve, revise or cancel an agent's plan (/plan for help)";

/// Why the adapter could not start.
#[derive(Debug, Error)]
pub enum TelegramError {
    /// A `[telegram]` setting is missing or wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A call the adapter needs at start failed (bad token, Bot API unreachable).
    #[error("telegram {method} failed at start: {message}; check telegram.token and telegram.api_url")]
    Startup { method: &'static str, message: String },
}

/// Parse into whatever URL type teloxide wants, without naming it.
fn parse_url<U: FromStr>(key: &'static str, text: &str) -> Result<U, TelegramError>
where
    U::Err: Display,
{
    text.parse().map_err(|e: U::Err| {
        ConfigError::new(key, format!("is not a valid URL ({e})"), "give a whole URL such as https://example.org/path").into()
    })
}

fn startup<'a>(method: &'static str, token: &'a str) -> impl FnOnce(RequestError) -> TelegramError + 'a {
    move |error| TelegramError::Startup { method, message: outbound::map_error(error, token).to_string() }
}

/// Start the adapter: check the config, `getMe` (the bot's username for
/// `/plan@Bot`, its id to recognise replies to its prompts), register the
/// `/plan` command, then either spawn long polling (after `deleteWebhook`,
/// since Telegram refuses `getUpdates` while a webhook is set) or call
/// `setWebhook` and return the route. The polling task polls only while
/// `leader` is true, and ends when `shutdown` turns true (or its sender is
/// dropped). The webhook transport ignores `leader`: every replica serves it.
pub async fn start(
    config: TelegramConfig,
    handler: Arc<dyn InboundHandler>,
    shutdown: Shutdown,
    leader: Leadership,
) -> Result<Adapter, TelegramError> {
    config.validate()?;
    let token: &str = config.token.expose_secret();
    let bot = Bot::new(token).set_api_url(parse_url("telegram.api_url", &config.api_url)?);
    let me = bot.get_me().await.map_err(startup("getMe", token))?;
    tracing::info!(bot = ?me.user.username, transport = ?config.transport, "telegram bot identified");
    if let Err(error) = bot.set_my_commands([BotCommand::new("plan", COMMAND_DESCRIPTION)]).await {
        // The command works without the menu entry.
        tracing::warn!(error = %outbound::map_error(error, token), "could not register /plan with setMyCommands");
    }
    let channel = Arc::new(TelegramChannel::new(bot.clone(), config.token.clone(), config.per_chat_per_second, config.global_per_second));
    let updates = Arc::new(inbound::UpdateHandler::new(channel.clone(), handler, me.user.id, me.user.username.clone()));
    match config.transport {
        Transport::Polling => {
            if let Err(error) = bot.delete_webhook().await {
                tracing::warn!(error = %outbound::map_error(error, token), "deleteWebhook failed; getUpdates may be refused while a webhook is set");
            }
            // A poll answers within its timeout; none for two timeouts + 5 s
            // (a failing poll retries with backoff, silently) is not ready.
            let stale = std::time::Duration::from_secs(u64::from(config.poll_timeout_secs) * 2 + 5);
            let liveness = plangate_channel::Liveness::new("getUpdates", Some(stale));
            liveness.ok(); // getMe just answered
            let task = tokio::spawn(transport::poll(updates, bot, config.poll_timeout_secs, shutdown, leader, liveness.clone()));
            Ok(Adapter { channel, routes: None, task: Some(task), expected_team: None, liveness })
        }
        Transport::Webhook => {
            // Telegram calls whichever replica the URL reaches: no leader.
            drop(leader);
            // validate() guarantees both are set.
            let secret = config.webhook_secret.clone().unwrap_or_else(|| SecretString::new(String::new()));
            let url = parse_url("telegram.webhook_url", config.webhook_url.as_deref().unwrap_or_default())?;
            bot.set_webhook(url)
                .secret_token(secret.expose_secret().clone())
                .allowed_updates(transport::allowed_updates())
                .await
                .map_err(startup("setWebhook", token))?;
            let routes = transport::webhook_router(updates, secret);
            // Telegram calls us: setWebhook accepted is as connected as we can know.
            let liveness = plangate_channel::Liveness::new("setWebhook", None);
            liveness.ok();
            Ok(Adapter { channel, routes: Some(routes), task: None, expected_team: None, liveness })
        }
    }
}
