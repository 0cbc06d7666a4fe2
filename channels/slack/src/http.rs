//! HTTP mode: the signed endpoints Slack POSTs to.
//!
//! `POST /slack/interactivity` (form field `payload` = JSON) and
//! `POST /slack/commands` (form fields of the slash command). Every request is
//! verified ([`Verifier`]) on its raw bytes before anything is parsed; a bad
//! one gets 400/401 and an empty body. A good one is acknowledged at once;
//! the handler runs after the ack.

use crate::inbound::{Ack, Dispatcher, Interaction, SlashCommand};
use crate::verify::Verifier;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use std::sync::Arc;

pub const INTERACTIVITY_PATH: &str = "/slack/interactivity";
pub const COMMANDS_PATH: &str = "/slack/commands";
/// Slack's payloads are a few KiB; an edit modal with 3,000 characters of
/// steps stays far below this.
const MAX_BODY: usize = 256 * 1024;

#[derive(Clone)]
struct HttpState {
    dispatcher: Arc<Dispatcher>,
    verifier: Arc<Verifier>,
}

pub(crate) fn routes(dispatcher: Arc<Dispatcher>, verifier: Arc<Verifier>) -> Router {
    Router::new()
        .route(INTERACTIVITY_PATH, post(interactivity))
        .route(COMMANDS_PATH, post(commands))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(HttpState { dispatcher, verifier })
}

/// Signature and timestamp first; `Err` is the status to answer (with an empty body).
fn verified(state: &HttpState, path: &'static str, headers: &HeaderMap, body: &[u8]) -> Result<(), StatusCode> {
    let retry = headers.get("x-slack-retry-num").and_then(|v| v.to_str().ok()).unwrap_or("0").to_string();
    match state.verifier.verify(headers, body) {
        Ok(()) => {
            tracing::debug!(path, retry, "verified Slack request");
            Ok(())
        }
        Err(rejection) => {
            tracing::warn!(path, reason = rejection.reason(), "refused an unverified Slack request");
            Err(rejection.status())
        }
    }
}

#[derive(Deserialize)]
struct InteractivityForm {
    payload: String,
}

async fn interactivity(State(state): State<HttpState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(status) = verified(&state, INTERACTIVITY_PATH, &headers, &body) {
        return status.into_response();
    }
    let payload = serde_urlencoded::from_bytes::<InteractivityForm>(&body).ok().and_then(|form| {
        serde_json::from_str::<Interaction>(&form.payload).map_err(|e| tracing::warn!(error = %e, "unreadable interaction payload")).ok()
    });
    let Some(payload) = payload else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    ack(state.dispatcher.interaction(payload))
}

async fn commands(State(state): State<HttpState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(status) = verified(&state, COMMANDS_PATH, &headers, &body) {
        return status.into_response();
    }
    // Slack's periodic certificate check carries no command.
    if let Ok(check) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body) {
        if check.iter().any(|(k, v)| k == "ssl_check" && v == "1") {
            return StatusCode::OK.into_response();
        }
    }
    match serde_urlencoded::from_bytes::<SlashCommand>(&body) {
        Ok(command) => ack(state.dispatcher.command(command)),
        Err(e) => {
            tracing::warn!(error = %e, "unreadable slash command");
            StatusCode::BAD_REQUEST.into_response()
        }
    }
}

fn ack(ack: Ack) -> Response {
    match ack {
        Ack::Empty => StatusCode::OK.into_response(),
        Ack::ViewErrors(errors) => Json(serde_json::json!({ "response_action": "errors", "errors": errors })).into_response(),
    }
}
