//! The operator endpoints: list, inspect and decide approvals, release
//! sessions, clear stuck subagent runs, read the audit.

use super::extract::*;
use super::ApiError;
use super::AppState;
use crate::approvers::Venue;
use crate::core::{Decision, DecisionRefused, ExecMeta};
use axum::extract::{Path, Query, State};
use axum::Json;
use plangate_engine::view::{ApprovalSummary, DecisionView, StatusView};
use plangate_engine::{Actor, Command, DecisionStatus, Plan, Terms, Verdict};
use plangate_store::AuditQuery;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovalsQuery {
    status: Option<String>,
}

pub(super) async fn approvals(
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

pub(super) async fn approval(State(core): State<AppState>, _op: OperatorAuth, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
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
pub(super) enum OperatorAction {
    Approve,
    Edit,
    Revise,
    Cancel,
    /// Release the approval's session: no plan required, the gate opens.
    Release,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OperatorDecisionBody {
    action: OperatorAction,
    feedback: Option<String>,
    plan: Option<Plan>,
    actor: String,
    /// `approve` only: a note for the agent (injection, receipt, audit).
    note: Option<String>,
    /// `approve` only: step numbers (1-based) left out of the approval.
    #[serde(default)]
    except: Vec<usize>,
}

/// The name an operator call records as `operator:<actor>`.
fn operator_actor(actor: &str) -> Result<&str, ApiError> {
    let name = actor.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ApiError::invalid_request("actor must name who decides (1–100 characters)"));
    }
    Ok(name)
}

pub(super) async fn operator_decision(
    State(core): State<AppState>,
    _op: OperatorAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<OperatorDecisionBody>,
) -> Result<Json<DecisionView>, ApiError> {
    let id = parse_approval_id(&id)?;
    let actor = Actor::Operator { name: operator_actor(&body.actor)?.to_string() };
    if !matches!(body.action, OperatorAction::Approve) && (body.note.is_some() || !body.except.is_empty()) {
        return Err(ApiError::invalid_request("note and except go with action approve only"));
    }
    let decision = match body.action {
        OperatorAction::Approve if body.note.is_none() && body.except.is_empty() => Decision::Verdict(Verdict::Approve),
        OperatorAction::Approve => Decision::Verdict(Verdict::ApproveWith(Terms { note: body.note, except: body.except })),
        OperatorAction::Edit => {
            let plan = body.plan.ok_or_else(|| ApiError::invalid_request("action edit needs the edited `plan`"))?;
            Decision::Verdict(Verdict::Edit(plan))
        }
        OperatorAction::Revise => Decision::Verdict(Verdict::Revise(body.feedback.unwrap_or_default())),
        OperatorAction::Cancel => Decision::Cancel,
        OperatorAction::Release => Decision::Release,
    };
    match core.decide(id, actor, Venue::Operator, decision, ExecMeta::default()).await {
        Ok(decided) => Ok(Json(DecisionView::of(&decided.proposal))),
        Err(DecisionRefused::NotFound) => Err(ApiError::not_found("no such approval")),
        Err(DecisionRefused::Core(e)) => Err(e.into()),
        // The operator holds everything; kept total should that change.
        Err(refused @ DecisionRefused::NotAllowed(_)) => Err(plangate_engine::Refusal::Forbidden(refused.to_string()).into()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReleaseBody {
    actor: String,
}

/// The operator's explicit release of any session, planned or not: the way to
/// let an agent mutate without an approved plan under the default gate
/// scope. Audited as "released by operator:<actor>".
pub(super) async fn operator_release(
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
pub(super) struct ClearSubagentsBody {
    actor: String,
    /// Only this run; all open runs when absent.
    run_id: Option<String>,
}

/// The operator's clear of a session's open subagent runs: a child that
/// crashed must not keep a plan unapprovable. Audited as
/// `subagents_clear` by `operator:<actor>`.
pub(super) async fn operator_clear_subagents(
    State(core): State<AppState>,
    _op: OperatorAuth,
    Path((agent, session_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<ClearSubagentsBody>,
) -> Result<Json<StatusView>, ApiError> {
    if !core.settings.raw.agents.contains_key(&agent) {
        return Err(ApiError::not_found(format!("no agent {agent:?} in plangate's config")));
    }
    let key = session_key(agent, &session_id)?;
    let actor = Actor::Operator { name: operator_actor(&body.actor)?.to_string() };
    let done = core.execute(&key, actor, Command::ClearSubagents { run_id: body.run_id }, ExecMeta::default()).await?;
    Ok(Json(StatusView::of(&done.transition.state)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuditParams {
    agent: Option<String>,
    session: Option<String>,
    approval: Option<String>,
    limit: Option<usize>,
}

pub(super) async fn audit(
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

/// `GET /metrics`: the Prometheus text exposition (docs/OPERATIONS.md),
/// behind the operator token like every operator endpoint: a scraper sends
/// it as a bearer token (`authorization: {credentials_file: …}`).
pub(super) async fn metrics(State(core): State<AppState>, _op: OperatorAuth) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = core.metrics.render(core.chat_backlog(), core.parked_waiters());
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response()
}

/// `GET /v1/operator/backup`: a consistent snapshot of the store and the
/// plan documents (`plangate backup --to FILE`), taken by this process, the
/// database's only writer, with commits held at their boundary meanwhile.
pub(super) async fn backup(State(core): State<AppState>, _op: OperatorAuth) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let data_dir = core.settings.data_dir.clone();
    let (bytes, stats) = core
        .blocking(move |s| {
            let mut bytes = Vec::new();
            let stats = s.snapshot(&data_dir, &mut bytes)?;
            Ok((bytes, stats))
        })
        .await?;
    tracing::info!(bytes = bytes.len(), trees = stats.trees, entries = stats.entries, documents = stats.documents, "backup taken");
    Ok(([(axum::http::header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PruneQuery {
    dry_run: Option<bool>,
}

/// `POST /v1/operator/prune?dry_run=true|false`: prune by `[retention]` now
/// (`plangate prune`); a dry run reports what would go and removes nothing.
pub(super) async fn prune(
    State(core): State<AppState>,
    _op: OperatorAuth,
    q: Result<Query<PruneQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let dry_run = query(q)?.dry_run.unwrap_or(false);
    if crate::ops::retention::policy(&core, dry_run).is_none() {
        return Err(ApiError::invalid_request("retention is off: set [retention] decided_approvals and/or audit (e.g. \"90d\")"));
    }
    let report = crate::ops::retention::prune_all(&core, dry_run).await?;
    Ok(Json(
        json!({"dry_run": dry_run, "approvals": report.approvals, "deliveries": report.deliveries, "documents": report.documents, "audit": report.audit}),
    ))
}
