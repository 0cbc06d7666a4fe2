//! How updates arrive: `getUpdates` long polling (default) or a webhook
//! route with a secret token checked in constant time before anything else.

use crate::inbound::UpdateHandler;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use plangate_channel::{global_limit_key, send_with_retry, RateLimiter, RetryPolicy, RetryRefusals, Shutdown};
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

/// Sleep, unless shutdown comes first (then `false`).
async fn pause(shutdown: &mut Shutdown, how_long: Duration) -> bool {
    tokio::select! {
        _ = stopped(shutdown) => false,
        _ = tokio::time::sleep(how_long) => true,
    }
}

/// The long-polling loop. Resumes from the saved offset, handles each batch
/// in order, and saves the next offset after the batch (or after the last
/// handled update when shutdown interrupts it), so a restart never hands the
/// server an update id it has already seen. Updates below the offset are
/// skipped even if Telegram sends them again.
pub(crate) async fn poll(
    core: Arc<UpdateHandler>,
    bot: Bot,
    timeout_secs: u32,
    mut shutdown: Shutdown,
    liveness: plangate_channel::Liveness,
) {
    let mut offset: Option<i64> = match core.handler().load_cursor(CURSOR_KEY) {
        Some(saved) => match saved.trim().parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                tracing::warn!(saved, "ignoring an unreadable saved telegram offset");
                None
            }
        },
        None => None,
    };
    tracing::info!(?offset, timeout_secs, "telegram long polling started");
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
    let bot = &bot;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let polled = send_with_retry(&limiter, &key, policy, || {
            let mut request = bot.get_updates().timeout(timeout_secs).allowed_updates(allowed_updates());
            if let Some(o) = offset.and_then(|o| i32::try_from(o).ok()) {
                request = request.offset(o);
            }
            async move { request.send().await.map_err(|e| crate::outbound::map_error(e, bot.token())) }
        });
        let result = tokio::select! {
            _ = stopped(&mut shutdown) => break,
            result = polled.instrument(tracing::info_span!("telegram.poll", method = "getUpdates")) => result,
        };
        let updates: Vec<Update> = match result {
            Ok(updates) => {
                liveness.ok();
                updates
            }
            Err(error) => {
                liveness.down(error.to_string());
                // Only after u32::MAX attempts: start over.
                tracing::warn!(%error, "getUpdates keeps failing");
                if !pause(&mut shutdown, MAX_BACKOFF).await {
                    break;
                }
                continue;
            }
        };
        let mut advanced = false;
        for update in updates {
            let id = i64::from(update.id.0);
            if offset.is_some_and(|o| id < o) {
                tracing::debug!(update_id = id, "skipping an update below the saved offset");
                continue;
            }
            // In its own task so a panicking handler costs one update, not
            // the transport; the update is not retried (it would panic again).
            let handling = tokio::spawn({
                let core = core.clone();
                async move { core.handle_update(update).await }
            });
            if let Err(error) = handling.await {
                tracing::error!(update_id = id, %error, "handling a telegram update failed");
            }
            offset = Some(id + 1);
            advanced = true;
            if *shutdown.borrow() {
                break;
            }
        }
        if advanced {
            if let Some(o) = offset {
                core.handler().save_cursor(CURSOR_KEY, &o.to_string());
            }
        }
    }
    tracing::info!(?offset, "telegram long polling stopped");
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
