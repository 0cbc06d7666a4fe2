//! The agent and operator HTTP API, exactly as `API.md` specifies it.
//!
//! Handlers only translate: authenticate, parse strictly (unknown fields are
//! errors), call [`Core::execute`] or read state, and map the outcome to the
//! contract's JSON shapes and error codes.

use crate::core::{Core, CoreError, ExecMeta};
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use plangate_engine::ids::is_valid_session_id;
use plangate_engine::view::{hydration, ApprovalSummary, DecisionView, StatusView};
use plangate_engine::{plan, Actor, ApprovalId, Command, DecisionStatus, Plan, Refusal, SessionKey, Step, Verdict};
use plangate_store::{AuditQuery, StoreError};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tracing::Instrument;

/// Request bodies over this are refused with 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The longest a long-poll may hold (seconds).
pub const MAX_WAIT_SECS: u64 = 300;

type AppState = Arc<Core>;

pub fn router(core: Arc<Core>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/sessions/{session_id}", get(status))
        .route("/v1/sessions/{session_id}/enter", post(enter))
        .route("/v1/sessions/{session_id}/steps", post(steps))
        .route("/v1/sessions/{session_id}/proposals", post(propose))
        .route("/v1/sessions/{session_id}/decision", get(decision))
        .route("/v1/sessions/{session_id}/subagents", post(subagent_open))
        .route("/v1/sessions/{session_id}/subagents/{run_id}", delete(subagent_close))
        .route("/v1/sessions/{session_id}/questions", post(ask))
        .route("/v1/sessions/{session_id}/questions/{question_id}", get(question))
        .route("/v1/sessions/{session_id}/injection/take", post(take_injection))
        .route("/v1/sessions/{session_id}/hydration", get(get_hydration))
        .route("/v1/gate", post(gate))
        .route("/v1/namespaces/{name}", get(namespace_get))
        .route("/v1/namespaces/{name}/steps", post(namespace_steps))
        .route("/v1/approvals", get(approvals))
        .route("/v1/approvals/{approval_id}", get(approval))
        .route("/v1/approvals/{approval_id}/decision", post(operator_decision))
        .route("/v1/audit", get(audit))
        .route("/v1/operator/sessions/{agent}/{session_id}/release", post(operator_release))
        .fallback(not_found_route)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(trace_request))
        .with_state(core)
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

// ---------------------------------------------------------------- errors

/// An error in the contract's shape: `{"error": {"code", "message", "details"}}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Value,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), details: json!({}) }
    }
    fn details(mut self, details: Value) -> ApiError {
        self.details = details;
        self
    }
    fn invalid_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
    }
    fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message, "details": self.details}});
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
            Refusal::Forbidden(_) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", message),
            Refusal::InvalidRequest(_) => ApiError::invalid_request(message),
        }
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> ApiError {
        match e {
            CoreError::Refused(r) => r.into(),
            CoreError::Storage(s) => s.into(),
            CoreError::NotFound(m) => ApiError::not_found(m),
        }
    }
}

async fn not_found_route() -> ApiError {
    ApiError::not_found("no such endpoint; see API.md (session ids are 1–128 characters of [A-Za-z0-9._:-])")
}

// ---------------------------------------------------------------- extractors

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

fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "malformed JSON",
            serde_json::error::Category::Io => "unreadable body",
            serde_json::error::Category::Data => "invalid request",
        };
        ApiError::invalid_request(format!("{what}: {e}")).details(json!({"line": e.line(), "column": e.column()}))
    })
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ").map(str::trim)
}

fn token_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

enum Caller {
    Agent(String),
    Operator,
}

fn identify(core: &Core, headers: &HeaderMap) -> Result<Caller, ApiError> {
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
    found.ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "unknown token"))
}

/// The calling agent, from its token alone.
pub struct AgentAuth(pub String);

impl FromRequestParts<AppState> for AgentAuth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, core: &AppState) -> Result<Self, ApiError> {
        match identify(core, &parts.headers)? {
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
        match identify(core, &parts.headers)? {
            Caller::Operator => Ok(OperatorAuth),
            Caller::Agent(_) => {
                Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "this endpoint needs the operator token; agents cannot decide"))
            }
        }
    }
}

fn session_key(agent: String, session_id: &str) -> Result<SessionKey, ApiError> {
    if !is_valid_session_id(session_id) {
        return Err(ApiError::invalid_request("session_id must be 1–128 characters of [A-Za-z0-9._:-]"));
    }
    Ok(SessionKey::new(agent, session_id))
}

fn parse_approval_id(text: &str) -> Result<ApprovalId, ApiError> {
    ApprovalId::parse(text)
        .ok_or_else(|| ApiError::not_found(format!("no approval {text:?}: approval ids are 32 lowercase hex characters")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitQuery {
    wait: Option<String>,
}

fn wait_of(q: &WaitQuery) -> Result<Duration, ApiError> {
    let Some(w) = &q.wait else { return Ok(Duration::ZERO) };
    match w.parse::<u64>() {
        Ok(n) if n <= MAX_WAIT_SECS => Ok(Duration::from_secs(n)),
        _ => Err(ApiError::invalid_request(format!("wait must be a whole number of seconds from 0 to {MAX_WAIT_SECS}, got {w:?}"))),
    }
}

fn query<T: DeserializeOwned>(q: Result<Query<T>, axum::extract::rejection::QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(t)| t).map_err(|e| ApiError::invalid_request(format!("bad query string: {}", e.body_text())))
}

// ---------------------------------------------------------------- agent endpoints

async fn healthz(State(core): State<AppState>) -> Response {
    if core.is_degraded() {
        let body = json!({"status": "degraded", "reason": "the last commit failed; decisions are not being recorded"});
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    } else {
        Json(json!({"status": "ok", "waiting": core.parked_waiters()})).into_response()
    }
}

async fn status(State(core): State<AppState>, AgentAuth(agent): AgentAuth, Path(sid): Path<String>) -> Result<Json<StatusView>, ApiError> {
    let key = session_key(agent, &sid)?;
    Ok(Json(StatusView::of(&core.load(&key).await?)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnterBody {
    reason: Option<String>,
}

async fn enter(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<EnterBody>,
) -> Result<Json<StatusView>, ApiError> {
    let key = session_key(agent, &sid)?;
    let done = core.execute(&key, Actor::Agent, Command::Enter { reason: body.reason }, ExecMeta::default()).await?;
    Ok(Json(StatusView::of(&done.transition.state)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepsBody {
    steps: Vec<Step>,
    #[serde(default)]
    merge: bool,
    explanation: Option<String>,
}

async fn steps(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<StepsBody>,
) -> Result<Json<Value>, ApiError> {
    let key = session_key(agent, &sid)?;
    let command = Command::UpdatePlan { steps: body.steps, merge: body.merge, explanation: body.explanation };
    let done = core.execute(&key, Actor::Agent, command, ExecMeta::default()).await?;
    Ok(Json(json!({"steps": done.transition.state.session.steps})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkdownProposal {
    markdown: String,
    title: Option<String>,
}

/// A proposal body: a structured Plan, or `{"markdown", "title"?}`.
pub fn parse_proposal(body: Value) -> Result<(Plan, Option<String>), ApiError> {
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    if body.get("markdown").is_some() {
        let md: MarkdownProposal = parse_json(&bytes)?;
        let plan = plan::plan_from_markdown(&md.markdown, md.title.as_deref()).map_err(Refusal::from)?;
        Ok((plan, Some(md.markdown)))
    } else {
        Ok((parse_json(&bytes)?, None))
    }
}

async fn propose(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let key = session_key(agent, &sid)?;
    if !body.is_object() {
        return Err(ApiError::invalid_request("the body must be a Plan object or {\"markdown\": …}"));
    }
    let (plan, markdown) = parse_proposal(body)?;
    let done = core.execute(&key, Actor::Agent, Command::Propose { plan, markdown }, ExecMeta::default()).await?;
    let Some(latest) = done.transition.state.latest.as_ref() else {
        return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "proposal vanished"));
    };
    let document_path = match done.document_path {
        Some(path) => path,
        None => {
            let id = latest.approval_id;
            core.blocking(move |s| s.document_path(&id)).await?.unwrap_or_default()
        }
    };
    let mut value = serde_json::to_value(DecisionView::of(latest)).unwrap_or_default();
    value["document_path"] = json!(document_path);
    Ok((StatusCode::CREATED, Json(value)).into_response())
}

async fn decision(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
    q: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<DecisionView>, ApiError> {
    let key = session_key(agent, &sid)?;
    let wait = wait_of(&query(q)?)?;
    match core.wait_decision(&key, wait).await? {
        Some(p) => Ok(Json(DecisionView::of(&p))),
        None => Err(ApiError::not_found("this session has no proposal yet")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SubagentBody {
    run_id: String,
}

async fn subagent_open(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<SubagentBody>,
) -> Result<StatusCode, ApiError> {
    let key = session_key(agent, &sid)?;
    core.execute(&key, Actor::Agent, Command::RegisterSubagent(body.run_id), ExecMeta::default()).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn subagent_close(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path((sid, run_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let key = session_key(agent, &sid)?;
    core.execute(&key, Actor::Agent, Command::UnregisterSubagent(run_id), ExecMeta::default()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AskBody {
    question: String,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    allow_freetext: bool,
}

async fn ask(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
    ApiJson(body): ApiJson<AskBody>,
) -> Result<Response, ApiError> {
    let key = session_key(agent, &sid)?;
    let command = Command::Ask { question: body.question, options: body.options, allow_freetext: body.allow_freetext };
    let done = core.execute(&key, Actor::Agent, command, ExecMeta::default()).await?;
    let id = done.transition.state.session.pending_question.as_ref().map(|q| q.question_id.to_string());
    Ok((StatusCode::CREATED, Json(json!({"question_id": id}))).into_response())
}

async fn question(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path((sid, qid)): Path<(String, String)>,
    q: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let key = session_key(agent, &sid)?;
    let wait = wait_of(&query(q)?)?;
    let id = ApprovalId::parse(&qid).ok_or_else(|| ApiError::not_found("no such question"))?;
    let Some(q) = core.wait_question(&key, id, wait).await? else {
        return Err(ApiError::not_found("no such question in this session"));
    };
    let mut out = json!({"status": q.status});
    if let Some(a) = q.answer {
        out["answer"] = json!(a);
    }
    if let Some(by) = q.answered_by {
        out["answered_by"] = json!(by);
    }
    Ok(Json(out))
}

async fn take_injection(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let key = session_key(agent, &sid)?;
    let done = core.execute(&key, Actor::Agent, Command::TakeInjection, ExecMeta::default()).await?;
    Ok(Json(json!({"injection": done.transition.taken_injection})))
}

async fn get_hydration(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let key = session_key(agent, &sid)?;
    Ok(Json(json!({"text": hydration(&core.load(&key).await?)})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GateBody {
    session_id: String,
    tool: String,
    #[serde(default)]
    input: Value,
}

async fn gate(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    ApiJson(body): ApiJson<GateBody>,
) -> Result<Json<Value>, ApiError> {
    let key = session_key(agent.clone(), &body.session_id)?;
    let state = core.load(&key).await?;
    let verdict = crate::gate::check(&core.settings, &agent, &state.session, &body.tool, &body.input);
    let (decision, reason) = match &verdict {
        crate::gate::Verdict::Allow(r) => ("allow", r.clone()),
        crate::gate::Verdict::Deny(r) => ("deny", r.clone()),
    };
    tracing::info!(tool = %body.tool, decision, "gate");
    Ok(Json(json!({"decision": decision, "reason": reason})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NamespaceBody {
    steps: Vec<Step>,
    session_id: String,
}

async fn namespace_get(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    plangate_engine::namespace::validate_name(&name).map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let scoped = format!("{agent}:{name}");
    let ns = core.blocking(move |s| s.namespace(&scoped)).await?;
    Ok(Json(json!({"name": name, "steps": ns.steps})))
}

async fn namespace_steps(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<NamespaceBody>,
) -> Result<Json<Value>, ApiError> {
    plangate_engine::namespace::validate_name(&name).map_err(|e| ApiError::invalid_request(e.to_string()))?;
    session_key(agent.clone(), &body.session_id)?;
    // Namespaces are per agent, and merges of one namespace are serialized
    // through the lock of a synthetic session key.
    let scoped = format!("{agent}:{name}");
    let lock_key = SessionKey::new(agent, format!("namespace:{name}"));
    let merged = core
        .with_session_lock(&lock_key, async {
            let s2 = scoped.clone();
            let ns = core.blocking(move |s| s.namespace(&s2)).await?;
            let merged = plangate_engine::namespace::merge(&ns, body.steps, &body.session_id, core.now()).map_err(|e| match e {
                plangate_engine::namespace::NamespaceError::Plan(p) => ApiError::from(Refusal::from(p)),
                other => ApiError::invalid_request(other.to_string()),
            })?;
            let (s3, m) = (scoped.clone(), merged.clone());
            core.blocking(move |s| s.set_namespace(&s3, &m)).await?;
            Ok::<_, ApiError>(merged)
        })
        .await?;
    Ok(Json(json!({"name": name, "steps": merged.steps})))
}

// ---------------------------------------------------------------- operator endpoints

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsQuery {
    status: Option<String>,
}

async fn approvals(
    State(core): State<AppState>,
    _op: OperatorAuth,
    q: Result<Query<ApprovalsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<ApprovalSummary>>, ApiError> {
    let q = query(q)?;
    let status = match q.status.as_deref().unwrap_or("pending") {
        "all" => None,
        s => Some(serde_json::from_value::<DecisionStatus>(json!(s)).map_err(|_| {
            ApiError::invalid_request(format!(
                "unknown status {s:?}; use pending, approved, edited, rejected, timed_out, cancelled, superseded or all"
            ))
        })?),
    };
    // One proposal decoded at a time; only the summaries are kept.
    let mut list = core
        .blocking(move |s| {
            let mut out = Vec::new();
            s.visit_proposals(status, &mut |p| out.push((p.created_at, ApprovalSummary::of(p))))?;
            Ok(out)
        })
        .await?;
    list.sort_by_key(|(created_at, _)| *created_at);
    Ok(Json(list.into_iter().map(|(_, summary)| summary).collect()))
}

async fn approval(State(core): State<AppState>, _op: OperatorAuth, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let id = parse_approval_id(&id)?;
    let p = core.blocking(move |s| s.proposal(&id)).await?.ok_or_else(|| ApiError::not_found("no such approval"))?;
    let mut value = serde_json::to_value(ApprovalSummary::of(&p)).unwrap_or_default();
    value["decision"] = serde_json::to_value(DecisionView::of(&p)).unwrap_or_default();
    value["plan"] = serde_json::to_value(&p.plan).unwrap_or_default();
    value["timers"] = json!(p.timers.iter().map(|t| json!({"due": t.due.rfc3339(), "kind": t.kind})).collect::<Vec<_>>());
    Ok(Json(value))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum OperatorAction {
    Approve,
    Edit,
    Revise,
    Cancel,
    /// Release the approval's session: no plan required, the gate opens.
    Release,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OperatorDecisionBody {
    action: OperatorAction,
    feedback: Option<String>,
    plan: Option<Plan>,
    actor: String,
}

/// The name an operator call records as `operator:<actor>`.
fn operator_actor(actor: &str) -> Result<&str, ApiError> {
    let name = actor.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ApiError::invalid_request("actor must name who decides (1–100 characters)"));
    }
    Ok(name)
}

async fn operator_decision(
    State(core): State<AppState>,
    _op: OperatorAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<OperatorDecisionBody>,
) -> Result<Json<DecisionView>, ApiError> {
    let id = parse_approval_id(&id)?;
    let actor_name = operator_actor(&body.actor)?;
    let target = core.blocking(move |s| s.proposal(&id)).await?.ok_or_else(|| ApiError::not_found("no such approval"))?;
    let actor = Actor::Operator { name: actor_name.to_string() };
    let command = match body.action {
        OperatorAction::Approve => Command::Decide { approval_id: id, verdict: Verdict::Approve },
        OperatorAction::Edit => {
            let plan = body.plan.ok_or_else(|| ApiError::invalid_request("action edit needs the edited `plan`"))?;
            Command::Decide { approval_id: id, verdict: Verdict::Edit(plan) }
        }
        OperatorAction::Revise => Command::Decide { approval_id: id, verdict: Verdict::Revise(body.feedback.unwrap_or_default()) },
        OperatorAction::Cancel => Command::CancelApproval(id),
        OperatorAction::Release => Command::Off,
    };
    let done = core.execute_on_approval(id, actor, command, ExecMeta::default()).await?;
    let decided = done.transition.state.latest.as_ref().filter(|p| p.approval_id == id).cloned().unwrap_or(target);
    Ok(Json(DecisionView::of(&decided)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseBody {
    actor: String,
}

/// The operator's explicit release of any session, planned or not: the way to
/// let an agent mutate without an approved plan under the default gate
/// scope. Audited as "released by operator:<actor>".
async fn operator_release(
    State(core): State<AppState>,
    _op: OperatorAuth,
    Path((agent, session_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<ReleaseBody>,
) -> Result<Json<StatusView>, ApiError> {
    if !core.settings.raw.agents.contains_key(&agent) {
        return Err(ApiError::not_found(format!("no agent {agent:?} in plangate's config")));
    }
    let key = session_key(agent, &session_id)?;
    let actor = Actor::Operator { name: operator_actor(&body.actor)?.to_string() };
    let done = core.execute(&key, actor, Command::Off, ExecMeta::default()).await?;
    Ok(Json(StatusView::of(&done.transition.state)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditParams {
    agent: Option<String>,
    session: Option<String>,
    approval: Option<String>,
    limit: Option<usize>,
}

async fn audit(
    State(core): State<AppState>,
    _op: OperatorAuth,
    q: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = query(q)?;
    let approval_id = match q.approval.as_deref() {
        Some(a) => Some(parse_approval_id(a)?),
        None => None,
    };
    let query = AuditQuery { agent: q.agent, session_id: q.session, approval_id, limit: q.limit.unwrap_or(200) };
    let events = core.blocking(move |s| s.audit(&query)).await?;
    Ok(Json(json!(events)))
}
