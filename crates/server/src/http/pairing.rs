//! The operator's side of pairing ([`crate::pairing`]): make a code, list
//! the destinations (configured and paired), remove a paired one.

use super::extract::*;
use super::ApiError;
use super::AppState;
use crate::pairing::PairError;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

impl From<PairError> for ApiError {
    fn from(e: PairError) -> ApiError {
        let message = e.to_string();
        match e {
            PairError::Invalid(_) | PairError::BadCode => ApiError::invalid_request(message),
            PairError::NotFound(_) => ApiError::not_found(message),
            PairError::Refused(_) => ApiError::new(StatusCode::CONFLICT, "invalid_state", message),
            PairError::Limited => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_failures", message),
            PairError::Store(_) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "storage_unavailable", message),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PairingBody {
    platform: String,
    agent: Option<String>,
    name: Option<String>,
    /// Shorter than the 10 minutes (1–600).
    ttl_seconds: Option<u64>,
    actor: Option<String>,
}

/// `POST /v1/operator/pairings`: a one-time code for `/plan pair`.
pub(super) async fn create(
    State(core): State<AppState>,
    _op: OperatorAuth,
    ApiJson(body): ApiJson<PairingBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let actor = body.actor.as_deref().unwrap_or("api");
    let configured = core.adapters.channel(&body.platform).is_some();
    let issued =
        core.pairing.create_code(&body.platform, configured, body.agent.as_deref(), body.name.as_deref(), body.ttl_seconds, actor).await?;
    Ok((StatusCode::CREATED, Json(json!(issued))))
}

/// `GET /v1/operator/destinations`: every destination, from the config
/// file and paired, with whether a config entry shadows a paired one.
pub(super) async fn list(State(core): State<AppState>, _op: OperatorAuth) -> Result<Json<Value>, ApiError> {
    let mut out = Vec::new();
    for (name, d) in &core.settings.raw.destinations {
        let agents: Vec<&String> =
            core.settings.raw.agents.iter().filter(|(_, a)| a.destinations.contains(name)).map(|(id, _)| id).collect();
        out.push(json!({"name": name, "source": "config", "channel": d.channel, "chat": d.chat, "agents": agents,
            "approvers": d.approvers, "style": d.style}));
    }
    let index = core.pairing.approvers();
    for d in core.pairing.paired_destinations().await? {
        let shadowed = core.settings.raw.destinations.contains_key(&d.name);
        // What this process decides with: on replicas, another one's change
        // is in use here once its notification arrived.
        let in_use = index.places(&d.agent).iter().any(|p| {
            p.paired && p.destination.name == d.name && p.approvers.iter().eq(d.approvers.iter().collect::<std::collections::BTreeSet<_>>())
        });
        out.push(json!({"name": d.name, "source": "paired", "channel": d.channel, "chat": d.chat, "agents": [d.agent],
            "approvers": d.approvers, "style": "buttons", "paired_by": d.paired_by,
            "paired_at": plangate_engine::Timestamp(d.paired_at).rfc3339(), "shadowed": shadowed, "in_use": in_use}));
    }
    Ok(Json(Value::Array(out)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RemoveQuery {
    actor: Option<String>,
}

/// `DELETE /v1/operator/destinations/{name}`: remove a paired destination.
pub(super) async fn remove(
    State(core): State<AppState>,
    _op: OperatorAuth,
    Path(name): Path<String>,
    ApiQuery(q): ApiQuery<RemoveQuery>,
) -> Result<Json<Value>, ApiError> {
    let actor = q.actor.unwrap_or_else(|| "api".to_string());
    let removed = core.pairing.remove_destination(&name, &actor).await?;
    Ok(Json(json!(removed)))
}
