//! Extractors: strict JSON bodies, bearer-token authentication (the agent id
//! comes only from its token), and path/query parsing with contract errors.

use super::ApiError;
use super::AppState;
use super::{MAX_BODY_BYTES, MAX_WAIT_SECS};
use crate::core::Core;
use crate::throttle::{retry_after_secs, Surface};
use axum::extract::ConnectInfo;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use plangate_engine::ids::is_valid_session_id;
use plangate_engine::{ApprovalId, SessionKey};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;
use subtle::ConstantTimeEq;

/// A JSON body parsed strictly, with the contract's errors: 413 over 1 MiB,
/// 422 for malformed JSON, wrong types and unknown fields. An empty body
/// counts as `{}` so optional-body endpoints can be called bare.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    format!("request bodies are limited to {MAX_BODY_BYTES} bytes"),
                )
            } else {
                ApiError::invalid_request(format!("could not read the request body: {rejection}"))
            }
        })?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { &bytes };
        parse_json(bytes).map(ApiJson)
    }
}

pub(super) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "malformed JSON",
            serde_json::error::Category::Io => "unreadable body",
            serde_json::error::Category::Data => "invalid request",
        };
        ApiError::invalid_request(format!("{what}: {e}")).details(json!({"line": e.line(), "column": e.column()}))
    })
}

pub(super) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ").map(str::trim)
}

pub(super) fn token_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

pub(super) enum Caller {
    Agent(String),
    Operator,
}

/// The address a request came from (the TCP peer: behind a reverse proxy,
/// the proxy's), or the unspecified address when the server was not
/// started with connection info (in-process tests).
pub fn client_addr(parts: &Parts) -> IpAddr {
    parts.extensions.get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip())
}

/// Who the bearer token names. A token that names no one is taken from the
/// client address's budget of failures ([`Core::auth_failed`]): `401`
/// within it, `429` with `Retry-After` beyond it. A correct token is looked
/// at first and never waits.
pub(super) async fn identify(core: &Core, parts: &Parts) -> Result<Caller, ApiError> {
    let found = known(core, &parts.headers)?;
    if let Some(caller) = found {
        return Ok(caller);
    }
    match core.auth_failed(client_addr(parts), Surface::Api).await {
        None => Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "unknown token")),
        Some(wait) => {
            let secs = retry_after_secs(wait);
            Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_failures",
                format!("too many wrong tokens from this address; try again in {secs} s with the right one"),
            )
            .retry_after(secs))
        }
    }
}

fn known(core: &Core, headers: &HeaderMap) -> Result<Option<Caller>, ApiError> {
    let Some(token) = bearer(headers) else {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "missing `Authorization: Bearer <token>`"));
    };
    let raw = &core.settings.raw;
    // Compare against every token in constant time; no early exit on match.
    let mut found = None;
    for (id, agent) in &raw.agents {
        if token_eq(token, &agent.token) {
            found = Some(Caller::Agent(id.clone()));
        }
    }
    if let Some(op) = &raw.server.operator_token {
        if token_eq(token, op) {
            found = Some(Caller::Operator);
        }
    }
    Ok(found)
}

/// The calling agent, from its token alone.
pub struct AgentAuth(pub String);

impl FromRequestParts<AppState> for AgentAuth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, core: &AppState) -> Result<Self, ApiError> {
        match identify(core, parts).await? {
            Caller::Agent(id) => Ok(AgentAuth(id)),
            Caller::Operator => {
                Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "this endpoint needs an agent token, not the operator token"))
            }
        }
    }
}

/// A holder of the operator token.
pub struct OperatorAuth;

impl FromRequestParts<AppState> for OperatorAuth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, core: &AppState) -> Result<Self, ApiError> {
        match identify(core, parts).await? {
            Caller::Operator => Ok(OperatorAuth),
            Caller::Agent(_) => {
                Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "this endpoint needs the operator token; agents cannot decide"))
            }
        }
    }
}

/// Either an agent (reading what is its own) or the operator.
pub(super) struct AnyAuth(pub Caller);

impl FromRequestParts<AppState> for AnyAuth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, core: &AppState) -> Result<Self, ApiError> {
        identify(core, parts).await.map(AnyAuth)
    }
}

pub(super) fn session_key(agent: String, session_id: &str) -> Result<SessionKey, ApiError> {
    if !is_valid_session_id(session_id) {
        return Err(ApiError::invalid_request("session_id must be 1–128 characters of [A-Za-z0-9._:-]"));
    }
    Ok(SessionKey::new(agent, session_id))
}

pub(super) fn parse_approval_id(text: &str) -> Result<ApprovalId, ApiError> {
    ApprovalId::parse(text)
        .ok_or_else(|| ApiError::not_found(format!("no approval {text:?}: approval ids are 32 lowercase hex characters")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitQuery {
    wait: Option<String>,
}

pub(super) fn wait_of(q: &WaitQuery) -> Result<Duration, ApiError> {
    let Some(w) = &q.wait else { return Ok(Duration::ZERO) };
    plangate_basics::wait::parse_secs(w, MAX_WAIT_SECS)
        .ok_or_else(|| ApiError::invalid_request(format!("wait must be a whole number of seconds from 0 to {MAX_WAIT_SECS}, got {w:?}")))
}

/// A query string parsed into `T`, or `422 invalid_request` ("bad query
/// string: …") when it does not parse.
pub(super) struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(t)| ApiQuery(t))
            .map_err(|e| ApiError::invalid_request(format!("bad query string: {}", e.body_text())))
    }
}

/// The `{session_id}` of the path (the routes' name for it), as sent.
async fn path_session_id(parts: &mut Parts, core: &AppState) -> Result<String, Response> {
    let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, core).await.map_err(IntoResponse::into_response)?;
    Ok(params.get("session_id").cloned().unwrap_or_default())
}

/// One of the calling agent's sessions: the agent from its token, the
/// path's `{session_id}`, checked. Answered in that order: a wrong token,
/// then a malformed session id.
pub(super) struct AgentSession(pub SessionKey);

impl FromRequestParts<AppState> for AgentSession {
    type Rejection = Response;
    async fn from_request_parts(parts: &mut Parts, core: &AppState) -> Result<Self, Response> {
        let AgentAuth(agent) = AgentAuth::from_request_parts(parts, core).await.map_err(IntoResponse::into_response)?;
        let sid = path_session_id(parts, core).await?;
        session_key(agent, &sid).map(AgentSession).map_err(IntoResponse::into_response)
    }
}

/// An agent's call on one of its sessions with a JSON body `T`: answered
/// in the order the API always has, a wrong token, then the body
/// ([`ApiJson`]'s errors), then a malformed session id.
pub(super) struct AgentCall<T> {
    pub key: SessionKey,
    pub body: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for AgentCall<T> {
    type Rejection = Response;
    async fn from_request(req: Request, core: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let AgentAuth(agent) = AgentAuth::from_request_parts(&mut parts, core).await.map_err(IntoResponse::into_response)?;
        let sid = path_session_id(&mut parts, core).await?;
        let ApiJson(body) =
            ApiJson::<T>::from_request(Request::from_parts(parts, body), core).await.map_err(IntoResponse::into_response)?;
        let key = session_key(agent, &sid).map_err(IntoResponse::into_response)?;
        Ok(AgentCall { key, body })
    }
}
