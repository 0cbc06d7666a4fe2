//! `GET /v1/operator/audit/export`: the audit chain as JSONL
//! ([`plangate_audit::export`]), streamed; and the record every read of
//! the audit leaves.

use super::extract::*;
use super::{ApiError, AppState};
use crate::audit::{self, system_event};
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use plangate_engine::Timestamp;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExportQuery {
    /// Milliseconds since the epoch: from the first record at or after it.
    since: Option<i64>,
}

/// Stream the chain up to its head as the request found it. The export is
/// recorded in the audit first (and is in what it exports): an export
/// that cannot be recorded is refused.
pub(super) async fn export(
    State(core): State<AppState>,
    _op: OperatorAuth,
    ApiQuery(q): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let since = q.since.map(Timestamp);
    let detail = match since {
        Some(t) => format!("operator exported the audit since {}", t.rfc3339()),
        None => "operator exported the audit".to_string(),
    };
    record_read(&core, audit::EXPORTED, detail).await?;
    let head = core.blocking(|s| s.audit_head()).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let store = core.storage.store.clone();
    tokio::task::spawn_blocking(move || audit::export(store.as_ref(), since, head, tx));
    let chunks = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    tracing::info!(since = since.map(|t| t.0), head = head.map(|h| h.0), "audit export started");
    Ok(([(axum::http::header::CONTENT_TYPE, "application/x-ndjson")], Body::from_stream(chunks)).into_response())
}

/// Record that the operator read the audit, before it is read: a read
/// that cannot be recorded is refused.
pub(super) async fn record_read(core: &AppState, action: &str, detail: String) -> Result<(), ApiError> {
    let event = system_event(core.now(), action, detail);
    let event = plangate_engine::AuditEvent { actor: "operator".into(), ..event };
    core.blocking(move |s| s.append_audit(&[event])).await?;
    Ok(())
}
