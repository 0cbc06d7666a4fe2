//! The contract's error shape: `{"error": {"code", "message", "details"}}`,
//! and how every failure below the API maps onto it.

use crate::core::CoreError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use plangate_engine::Refusal;
use plangate_store::{Preempted, StoreError};
use serde_json::{json, Value};

/// An error in the contract's shape: `{"error": {"code", "message", "details"}}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Value,
    /// Seconds for a `Retry-After` header.
    retry_after: Option<u64>,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), details: json!({}), retry_after: None }
    }
    pub(super) fn details(mut self, details: Value) -> ApiError {
        self.details = details;
        self
    }
    /// Tell the client when to try again (`Retry-After`, seconds).
    pub(super) fn retry_after(mut self, secs: u64) -> ApiError {
        self.retry_after = Some(secs);
        self
    }
    pub(super) fn invalid_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
    }
    /// The server is stopping: retry the same request (the CLI, the hook
    /// and the MCP server do) once it is back.
    pub(super) fn shutting_down() -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "plangate is restarting; retry the same request in a moment")
    }
    pub(super) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message, "details": self.details}});
        let retry_after = if self.code == "shutting_down" { Some(1) } else { self.retry_after };
        if let Some(secs) = retry_after {
            return (self.status, [(axum::http::header::RETRY_AFTER, secs.to_string())], Json(body)).into_response();
        }
        (self.status, Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "storage_unavailable", format!("{e}; nothing was recorded, retry later"))
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        let message = r.to_string();
        match r {
            Refusal::InvalidPlan(e) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_plan", message).details(json!({"rule": e.rule()}))
            }
            Refusal::InvalidState(_) => ApiError::new(StatusCode::CONFLICT, "invalid_state", message),
            Refusal::SubagentsOpen(open) => {
                ApiError::new(StatusCode::CONFLICT, "subagents_open", message).details(json!({"open_subagents": open}))
            }
            Refusal::Stale(_) => ApiError::new(StatusCode::CONFLICT, "stale_approval", message),
            Refusal::AlreadyApproved(_) => ApiError::new(StatusCode::CONFLICT, "already_approved", message),
            Refusal::ApprovedStepsLocked(_) => ApiError::new(StatusCode::CONFLICT, "approved_steps_locked", message),
            Refusal::Forbidden(_) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", message),
            Refusal::StepUpRequired(_) => ApiError::new(StatusCode::FORBIDDEN, "step_up_required", message),
            Refusal::InvalidRequest(_) => ApiError::invalid_request(message),
        }
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> ApiError {
        match e {
            CoreError::Refused(r) => r.into(),
            CoreError::Storage(s) => s.into(),
            CoreError::Preempted(p) => p.into(),
            CoreError::NotFound(m) => ApiError::not_found(m),
        }
    }
}

/// Another replica came first. Not the store's trouble (no 503): the
/// request raced others and lost every retry; it may simply be sent again.
impl From<Preempted> for ApiError {
    fn from(p: Preempted) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "contended", format!("{p} (other writers kept coming first); send the request again"))
    }
}

pub(super) async fn not_found_route() -> ApiError {
    ApiError::not_found("no such endpoint; see API.md (session ids are 1–128 characters of [A-Za-z0-9._:-])")
}
