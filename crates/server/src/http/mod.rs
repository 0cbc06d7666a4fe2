//! The agent and operator HTTP API, exactly as `API.md` specifies it.
//!
//! Handlers only translate: authenticate, parse strictly (unknown fields are
//! errors), call [`Core::execute`] or read state, and map the outcome to the
//! contract's JSON shapes and error codes.
//!
//! Laid out by concern: [`error`] (the contract's error shape and codes),
//! [`extract`] (strict JSON bodies, bearer-token authentication, and the
//! typed extractors: `AgentSession`, one of the caller's sessions from its
//! token and the path; `AgentCall<T>`, the same with a JSON body;
//! `ApiQuery<T>`, a query string), [`proposal`] (a proposal's body, typed),
//! and the handlers, [`agent`], [`operator`] and [`pairing`] (codes and
//! paired destinations).

mod agent;
mod audit;
mod error;
mod extract;
mod operator;
mod pairing;
mod permissions;
mod proposal;

pub use error::ApiError;
pub use extract::{client_addr, AgentAuth, ApiJson, OperatorAuth};
pub use proposal::parse_proposal;

use crate::core::Core;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{delete, get, post};
use axum::Router;
use std::sync::Arc;
use tracing::Instrument;

/// Request bodies over this are refused with 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The longest a long-poll may hold (seconds): the one cap both sides share.
pub use plangate_basics::wait::MAX_WAIT_SECS;

type AppState = Arc<Core>;

pub fn router(core: Arc<Core>) -> Router {
    Router::new()
        .route("/healthz", get(agent::healthz))
        .route("/readyz", get(agent::readyz))
        .route("/v1/sessions/{session_id}", get(agent::status))
        .route("/v1/sessions/{session_id}/enter", post(agent::enter))
        .route("/v1/sessions/{session_id}/steps", post(agent::steps))
        .route("/v1/sessions/{session_id}/proposals", post(agent::propose))
        .route("/v1/sessions/{session_id}/decision", get(agent::decision))
        .route("/v1/sessions/{session_id}/stopping", post(agent::stopping))
        .route("/v1/sessions/{session_id}/todos", post(agent::todos))
        .route("/v1/sessions/{session_id}/brief", get(agent::brief))
        .route("/v1/sessions/{session_id}/subagents", post(agent::subagent_open))
        .route("/v1/sessions/{session_id}/subagents/{run_id}", delete(agent::subagent_close))
        .route("/v1/sessions/{session_id}/questions", post(agent::ask))
        .route("/v1/sessions/{session_id}/questions/{question_id}", get(agent::question))
        .route("/v1/sessions/{session_id}/permissions", post(permissions::ask))
        .route("/v1/sessions/{session_id}/permissions/{question_id}", get(permissions::get))
        .route("/v1/sessions/{session_id}/permissions/{question_id}/expire", post(permissions::expire))
        .route("/v1/sessions/{session_id}/injection", get(agent::peek_injection))
        .route("/v1/sessions/{session_id}/injection/take", post(agent::take_injection))
        .route("/v1/sessions/{session_id}/hydration", get(agent::get_hydration))
        .route("/v1/gate", post(agent::gate))
        .route("/v1/namespaces/{name}", get(agent::namespace_get))
        .route("/v1/namespaces/{name}/steps", post(agent::namespace_steps))
        .route("/v1/approvals", get(operator::approvals))
        .route("/v1/approvals/{approval_id}", get(operator::approval))
        .route("/v1/approvals/{approval_id}/decision", post(operator::operator_decision))
        .route("/v1/approvals/{approval_id}/receipt", get(operator::receipt))
        .route("/v1/operator/approvals/{approval_id}/ladder", get(operator::ladder))
        .route("/v1/audit", get(operator::audit))
        .route("/v1/operator/audit/export", get(audit::export))
        .route("/metrics", get(operator::metrics))
        .route("/v1/operator/backup", get(operator::backup))
        .route("/v1/operator/prune", post(operator::prune))
        .route("/v1/operator/sessions/{agent}/{session_id}/release", post(operator::operator_release))
        .route("/v1/operator/sessions/{agent}/{session_id}/subagents/clear", post(operator::operator_clear_subagents))
        .route("/v1/operator/pairings", post(pairing::create))
        .route("/v1/operator/destinations", get(pairing::list))
        .route("/v1/operator/destinations/{name}", delete(pairing::remove))
        .route("/v1/operator/passkeys/{approver}", delete(operator::remove_passkey))
        .fallback(error::not_found_route)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(trace_request))
        .with_state(core)
}

/// Mount the web page (`plangate-web`: `/`, `/p/…`, `/signin…`) on `app`,
/// with the same request spans.
pub fn with_web(app: Router, web: Arc<plangate_web::Web>) -> Router {
    app.merge(plangate_web::router(web).layer(axum::middleware::from_fn(trace_request)))
}

/// Mount the email links' pages (`/e/…`, `crate::email`) on `app`, with
/// the same request spans.
pub fn with_email(app: Router, core: Arc<Core>) -> Router {
    app.merge(crate::email::router(core).layer(axum::middleware::from_fn(trace_request)))
}

/// Mount Web Push's routes (`/push/…`, `crate::push`) on `app`, with the
/// same request spans.
pub fn with_push(app: Router, core: Arc<Core>, web: Arc<plangate_web::Web>) -> Router {
    app.merge(crate::push::router(core, web).layer(axum::middleware::from_fn(trace_request)))
}

/// One span per request, with the outcome logged at its end.
async fn trace_request(req: Request, next: Next) -> Response {
    let span = tracing::info_span!("request", method = %req.method(), path = %req.uri().path());
    async move {
        let started = std::time::Instant::now();
        let response = next.run(req).await;
        tracing::info!(status = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "answered");
        response
    }
    .instrument(span)
    .await
}

/// Debug builds started with [`crate::clock::TEST_CLOCK_ENV`] only:
/// `POST /v1/operator/test/clock` (`{"advance_ms": N}`) turns the server's
/// clock forward and wakes the scheduler, so timers due by then fire now.
/// Operator token required, like every operator endpoint.
#[cfg(debug_assertions)]
pub fn with_test_clock(app: Router, core: Arc<Core>, clock: Arc<crate::clock::TurnedClock>) -> Router {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Turn {
        advance_ms: i64,
    }
    use axum::extract::State;
    let turn = move |State(core): State<AppState>, _op: OperatorAuth, body: ApiJson<Turn>| {
        let clock = clock.clone();
        async move {
            let now = clock.turn(body.0.advance_ms);
            core.timers.changed.notify_one();
            axum::Json(serde_json::json!({"now": now.0}))
        }
    };
    app.merge(Router::new().route("/v1/operator/test/clock", post(turn)).with_state(core))
}
