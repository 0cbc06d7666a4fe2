//! How updates arrive: `getUpdates` long polling (default) or a webhook
//! route with a secret token checked in constant time before anything else.

use crate::inbound::UpdateHandler;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use plangate_channel::{global_limit_key, send_with_retry, Leadership, RateLimiter, RetryPolicy, RetryRefusals, Shutdown};
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use teloxide::payloads::GetUpdatesSetters;
use teloxide::prelude::Requester;
use teloxide::requests::Request as _;
use teloxide::types::{AllowedUpdate, Update};
use teloxide::Bot;
use tracing::Instrument;

/// Where the polling offset lives in plangate's database.
pub const CURSOR_KEY: &str = "telegram.offset";
/// The path the server mounts [`webhook_router`] at.
pub const WEBHOOK_PATH: &str = "/telegram/webhook";
/// The header Telegram puts the webhook's `secret_token` in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";
/// A Telegram update is small; anything bigger is not one.
const MAX_WEBHOOK_BODY: usize = 1024 * 1024;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The only updates plangate reads.
pub(crate) fn allowed_updates() -> [AllowedUpdate; 2] {
    [AllowedUpdate::Message, AllowedUpdate::CallbackQuery]
}

/// Resolves when shutdown is requested. A dropped sender counts as a
/// request: nobody could ever stop the adapter otherwise.
async fn stopped(shutdown: &mut Shutdown) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Why one leadership term of polling ended.
enum Ended {
    Shutdown,
    /// Another replica polls now.
    Lost,
}

/// The saved offset, if there is a readable one.
fn saved_offset(core: &UpdateHandler) -> Option<i64> {
    let saved = core.handler().load_cursor(CURSOR_KEY)?;
    match saved.trim().parse::<i64>() {
        Ok(n) => Some(n),
        Err(_) => {
            tracing::warn!(saved, "ignoring an unreadable saved telegram offset");
            None
        }
    }
}

/// The long-polling loop, run on every replica but polling only while
/// `leader` is true (Telegram allows one `getUpdates` caller per bot; a
/// second one gets 409). While it is false the task sleeps on the watch and
/// `liveness` says "follower". Each time it becomes the leader it resumes
/// from the saved offset (another replica may have moved it on), never
/// below what this process handled itself.
///
/// The offset is saved after every handled update, so the saved value is
/// always one past the last update a replica handed to the server: a
/// restart or a takeover never hands the server an update id it has already
/// seen. Updates below the offset are skipped even if Telegram sends them
/// again.
pub(crate) async fn poll(
    core: Arc<UpdateHandler>,
    bot: Bot,
    timeout_secs: u32,
    mut shutdown: Shutdown,
    mut leader: Leadership,
    liveness: plangate_channel::Liveness,
) {
    let mut offset: Option<i64> = None;
    // A term that follows a wait (a takeover) starts with a short poll:
    // whatever queued up while another replica led comes at once, and so
    // does the first success `liveness` waits for.
    let mut short_first = false;
    loop {
        if !*leader.borrow() {
            liveness.follower();
            tracing::info!(?offset, "telegram: another replica long-polls; waiting to be elected");
            tokio::select! {
                _ = stopped(&mut shutdown) => break,
                () = plangate_channel::leading(&mut leader) => {}
            }
            liveness.leading();
            short_first = true;
        }
        if *shutdown.borrow() {
            break;
        }
        offset = offset.max(saved_offset(&core));
        tracing::info!(?offset, timeout_secs, "telegram long polling started");
        let term = Term { core: &core, bot: &bot, timeout_secs, liveness: &liveness };
        match term.run(&mut offset, short_first, &mut shutdown, &mut leader).await {
            Ended::Shutdown => break,
            Ended::Lost => tracing::info!(?offset, "telegram: no longer the leader; long polling paused"),
        }
        short_first = true;
    }
    tracing::info!(?offset, "telegram long polling stopped");
}

/// One leadership term of long polling.
struct Term<'a> {
    core: &'a Arc<UpdateHandler>,
    bot: &'a Bot,
    timeout_secs: u32,
    liveness: &'a plangate_channel::Liveness,
}

impl Term<'_> {
    /// Poll and handle until shutdown or the loss of leadership.
    async fn run(&self, offset: &mut Option<i64>, short_first: bool, shutdown: &mut Shutdown, leader: &mut Leadership) -> Ended {
        // The poll is not a chat message: nothing paces it but a 429's pause,
        // and it never gives up (a 409 means a webhook is set or another
        // instance polls, either of which may change).
        let limiter = RateLimiter::unlimited();
        let key = global_limit_key(crate::outbound::PLATFORM);
        let policy = RetryPolicy {
            attempts: u32::MAX,
            backoff: Duration::from_secs(1),
            max_backoff: MAX_BACKOFF,
            max_retry_after: Duration::MAX,
            refusals: RetryRefusals::All,
        };
        let bot = self.bot;
        let mut wait = if short_first { 0 } else { self.timeout_secs };
        loop {
            if *shutdown.borrow() {
                return Ended::Shutdown;
            }
            let from = *offset;
            let polled = send_with_retry(&limiter, &key, policy, || {
                let mut request = bot.get_updates().timeout(wait).allowed_updates(allowed_updates());
                if let Some(o) = from.and_then(|o| i32::try_from(o).ok()) {
                    request = request.offset(o);
                }
                async move { request.send().await.map_err(|e| crate::outbound::map_error(e, bot.token())) }
            });
            // Leadership lost while a poll is in flight: the poll is dropped
            // unanswered, and whatever it would have returned is left to the
            // new leader. Finishing it and handling its updates instead could
            // hand the server updates twice: the new leader starts from the
            // saved offset as soon as it is elected, and that offset is still
            // below them. Dropping it loses nothing: Telegram forgets an
            // update only once a later getUpdates asks for an offset past it,
            // which this replica no longer sends.
            let result = tokio::select! {
                _ = stopped(shutdown) => return Ended::Shutdown,
                () = plangate_channel::not_leading(leader) => return Ended::Lost,
                result = polled.instrument(tracing::info_span!("telegram.poll", method = "getUpdates")) => result,
            };
            wait = self.timeout_secs;
            let updates: Vec<Update> = match result {
                Ok(updates) => {
                    self.liveness.ok();
                    updates
                }
                Err(error) => {
                    self.liveness.down(error.to_string());
                    // Only after u32::MAX attempts: start over.
                    tracing::warn!(%error, "getUpdates keeps failing");
                    tokio::select! {
                        _ = stopped(shutdown) => return Ended::Shutdown,
                        () = plangate_channel::not_leading(leader) => return Ended::Lost,
                        _ = tokio::time::sleep(MAX_BACKOFF) => {}
                    }
                    continue;
                }
            };
            for update in updates {
                let id = i64::from(update.id.0);
                if offset.is_some_and(|o| id < o) {
                    tracing::debug!(update_id = id, "skipping an update below the saved offset");
                    continue;
                }
                // In its own task so a panicking handler costs one update, not
                // the transport; the update is not retried (it would panic again).
                let handling = tokio::spawn({
                    let core = self.core.clone();
                    async move { core.handle_update(update).await }
                });
                if let Err(error) = handling.await {
                    tracing::error!(update_id = id, %error, "handling a telegram update failed");
                }
                // Saved before the next update is looked at: when leadership
                // moves mid-batch, the rest of the batch is the new leader's,
                // from this offset. An update being handled when the loss
                // comes is finished here, never cut halfway; should the new
                // leader fetch it meanwhile, the server's idempotency key
                // (`telegram:update:<id>`) drops the second one.
                *offset = Some(id + 1);
                self.core.handler().save_cursor(CURSOR_KEY, &(id + 1).to_string());
                if *shutdown.borrow() {
                    return Ended::Shutdown;
                }
                if !*leader.borrow() {
                    return Ended::Lost;
                }
            }
        }
    }
}

/// `POST /telegram/webhook`. The secret header is compared in constant time
/// before the body is even read; a missing or wrong one is a bare 401.
pub(crate) fn webhook_router(core: Arc<UpdateHandler>, secret: SecretString) -> Router {
    let state = Arc::new(WebhookState { core, secret });
    Router::new().route(WEBHOOK_PATH, post(webhook)).with_state(state)
}

struct WebhookState {
    core: Arc<UpdateHandler>,
    secret: SecretString,
}

/// Constant-time in the content; the length may leak, which `secret_token`'s
/// fixed configuration makes worthless to an attacker.
pub(crate) fn secret_matches(given: &[u8], expected: &[u8]) -> bool {
    !expected.is_empty() && bool::from(given.ct_eq(expected))
}

async fn webhook(State(state): State<Arc<WebhookState>>, request: Request) -> StatusCode {
    let given = request.headers().get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
    if !secret_matches(given, state.secret.expose_secret().as_bytes()) {
        tracing::warn!(header_present = !given.is_empty(), "telegram webhook refused: wrong or missing secret token");
        return StatusCode::UNAUTHORIZED;
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_WEBHOOK_BODY).await {
        Ok(body) => body,
        Err(_) => return StatusCode::PAYLOAD_TOO_LARGE,
    };
    let update: Update = match serde_json::from_slice(&body) {
        Ok(update) => update,
        Err(error) => {
            tracing::warn!(%error, "telegram webhook body is not an update");
            return StatusCode::BAD_REQUEST;
        }
    };
    // Handled before answering: Telegram redelivers on failure, and the
    // server dedupes by update id.
    state.core.handle_update(update).await;
    StatusCode::OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_comparison() {
        assert!(secret_matches(b"abcdefghijklmnop", b"abcdefghijklmnop"));
        assert!(!secret_matches(b"abcdefghijklmnoq", b"abcdefghijklmnop"));
        assert!(!secret_matches(b"", b"abcdefghijklmnop"));
        assert!(!secret_matches(b"abcdefghijklmnop-longer", b"abcdefghijklmnop"));
        assert!(!secret_matches(b"", b""), "an empty secret never matches");
    }
}
