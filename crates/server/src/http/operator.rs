//! The operator endpoints: list, inspect and decide approvals, release
//! sessions, clear stuck subagent runs, read the audit.

use super::extract::*;
use super::ApiError;
use super::AppState;
use crate::approvers::Venue;
use crate::core::{Decision, DecisionRefused, ExecMeta};
use axum::extract::{Path, State};
use axum::http::header::LINK;
use axum::http::{HeaderMap, HeaderValue};
use axum::Json;
use plangate_engine::view::{ApprovalSummary, DecisionView, StatusView};
use plangate_engine::{Actor, Command, DecisionStatus, Plan, Terms};
use plangate_engine::{ApprovalId, Timestamp};
use plangate_store::{AuditQuery, PagePosition};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovalsQuery {
    status: Option<String>,
    limit: Option<usize>,
    after: Option<String>,
}

/// A page's size when the caller names none, and the most it may ask for:
/// no request builds an answer whose size grows with the store.
pub(super) const PAGE_DEFAULT: usize = 100;
pub(super) const PAGE_MAX: usize = 1000;

/// The `after` cursor: the last listed proposal's position (creation time,
/// approval id) as 48 hex characters. Opaque to callers (they send back
/// what `Link` gave them), checked on the way in, and stable across
/// restarts and replicas since it names data, not server state.
fn cursor(at: PagePosition) -> String {
    let mut bytes = [0u8; 24];
    bytes[..8].copy_from_slice(&at.created_at.0.to_be_bytes());
    bytes[8..].copy_from_slice(&at.approval_id.0);
    hex::encode(bytes)
}

fn parse_cursor(text: &str) -> Option<PagePosition> {
    if text.len() != 48 || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let bytes = hex::decode(text).ok()?;
    let created_at = Timestamp(i64::from_be_bytes(bytes[..8].try_into().ok()?));
    let approval_id = ApprovalId(bytes[8..].try_into().ok()?);
    Some(PagePosition { created_at, approval_id })
}

/// One page of approvals, oldest first. A full page carries `Link: <…>;
/// rel="next"` with the next page's path (same status and limit); the last
/// page carries none.
pub(super) async fn approvals(
    State(core): State<AppState>,
    _op: OperatorAuth,
    ApiQuery(q): ApiQuery<ApprovalsQuery>,
) -> Result<(HeaderMap, Json<Vec<ApprovalSummary>>), ApiError> {
    let status_text = q.status.clone().unwrap_or_else(|| "pending".to_string());
    let status = match status_text.as_str() {
        "all" => None,
        s => Some(serde_json::from_value::<DecisionStatus>(json!(s)).map_err(|_| {
            ApiError::invalid_request(format!(
                "unknown status {s:?}; use pending, approved, edited, rejected, timed_out, cancelled, superseded or all"
            ))
        })?),
    };
    let limit = q.limit.unwrap_or(PAGE_DEFAULT);
    if !(1..=PAGE_MAX).contains(&limit) {
        return Err(ApiError::invalid_request(format!("limit must be between 1 and {PAGE_MAX} (default {PAGE_DEFAULT})")));
    }
    let after = match q.after.as_deref() {
        None => None,
        Some(text) => Some(parse_cursor(text).ok_or_else(|| {
            ApiError::invalid_request("after must be a cursor from the Link header of a previous page; omit it for the first page")
        })?),
    };
    let page = core.blocking(move |s| s.proposals_page(status, after, limit)).await?;
    let mut headers = HeaderMap::new();
    if let (true, Some(last)) = (page.len() == limit, page.last()) {
        let next = format!("</v1/approvals?status={status_text}&limit={limit}&after={}>; rel=\"next\"", cursor(PagePosition::of(last)));
        if let Ok(value) = HeaderValue::from_str(&next) {
            headers.insert(LINK, value);
        }
    }
    Ok((headers, Json(page.iter().map(ApprovalSummary::of).collect())))
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

/// `GET /v1/approvals/{id}/receipt`: what ran under an approval
/// ([`plangate_engine::ran`]), for CI. The sealed receipt once the plan
/// ended (`"final": true`, from whichever version executed last), the live
/// tally while it runs (`"final": false`), 404 `no_receipt` for a version
/// nothing ran under. The operator reads any; an agent only its own (any
/// other is as unknown as a missing one).
pub(super) async fn receipt(
    State(core): State<AppState>,
    AnyAuth(caller): AnyAuth,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = parse_approval_id(&id)?;
    let unknown = || ApiError::not_found("no such approval");
    let p = core.blocking(move |s| s.proposal(&id)).await?.ok_or_else(unknown)?;
    if matches!(&caller, Caller::Agent(agent) if *agent != p.session.agent) {
        return Err(unknown());
    }
    if let Some(ran) = &p.ran {
        return Ok(Json(receipt_json(id, ran.execution.clone(), Some(ran))));
    }
    let state = core.load(&p.session).await?;
    if let Some(ran) = state.latest.as_ref().and_then(|l| l.ran.as_ref()).filter(|r| r.execution.approvals.contains(&id)) {
        return Ok(Json(receipt_json(id, ran.execution.clone(), Some(ran))));
    }
    let executing = plangate_engine::amendment::executing(&state.session);
    match state.session.execution {
        Some(e) if executing && e.approvals.contains(&id) => Ok(Json(receipt_json(id, e, None))),
        None if executing && state.session.latest_approval == Some(id) => {
            Ok(Json(receipt_json(id, plangate_engine::ran::Execution::new(id, p.decided_at.unwrap_or(p.created_at)), None)))
        }
        _ => Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            "no_receipt",
            format!(
                "nothing ran under v{} ({}): receipts are kept for approved plans, from their approval to their end",
                p.version,
                p.status.as_str()
            ),
        )),
    }
}

/// The receipt's JSON: totals, per step, the attempts listed, and for a
/// sealed one how it ended, its hash and whether the hash still matches.
fn receipt_json(id: ApprovalId, e: plangate_engine::ran::Execution, sealed: Option<&plangate_engine::ran::Ran>) -> Value {
    let totals = e.totals();
    let attempts: Vec<Value> = e
        .attempts
        .iter()
        .map(|a| json!({"at": a.at.rfc3339(), "step": a.step, "tool": a.tool, "shown": a.shown, "outcome": a.outcome}))
        .collect();
    let mut out = json!({
        "approval_id": id.to_string(),
        "final": sealed.is_some(),
        "approvals": e.approvals.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "started_at": e.started_at.rfc3339(),
        "summary": totals.line(),
        "totals": totals,
        "steps": e.steps,
        "attempts": attempts,
        "unlisted": e.unlisted,
        "permission_answers": e.answers,
        "amendments": e.amendments,
    });
    if let Some(ran) = sealed {
        out["ending"] = json!(ran.ending);
        out["ended_at"] = json!(ran.ended_at.rfc3339());
        out["summary"] = json!(ran.summary());
        out["hash"] = json!(ran.hash);
        out["intact"] = json!(ran.intact());
    }
    out
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
    /// Claim the approval: the others' reminders wait while it holds.
    Claim,
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
        OperatorAction::Approve => Decision::approve_with(Terms { note: body.note, except: body.except }),
        OperatorAction::Edit => Decision::edit(body.plan.ok_or_else(|| ApiError::invalid_request("action edit needs the edited `plan`"))?),
        OperatorAction::Revise => Decision::revise(body.feedback.unwrap_or_default()),
        OperatorAction::Cancel => Decision::Cancel,
        OperatorAction::Release => Decision::Release,
        OperatorAction::Claim => Decision::Claim,
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

/// Remove a person's passkey (`telegram:111`), the one way to replace one:
/// a signed-in page registers a passkey only while the person has none, so
/// a stolen chat account cannot swap its own in. Until they register a new
/// one, their step-up approvals cannot count. Audited as `passkey_removed`.
pub(super) async fn remove_passkey(
    State(core): State<AppState>,
    _op: OperatorAuth,
    Path(approver): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let key = plangate_web::passkey::cursor_key(&approver);
    let read = key.clone();
    let Some(current) = core.blocking(move |s| s.cursor(&read)).await? else {
        return Err(ApiError::not_found(format!("{approver} has no passkey registered")));
    };
    let credential = serde_json::from_str::<Value>(&current).ok().and_then(|v| v["id"].as_str().map(str::to_string)).unwrap_or_default();
    if !core.blocking(move |s| s.swap_cursor(&key, Some(&current), None)).await? {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "conflict",
            "the passkey changed meanwhile; nothing was removed, try again",
        ));
    }
    let detail = format!("passkey {credential} of {approver} removed by the operator");
    core.audit(&plangate_engine::SessionKey::new("-", "-"), "operator", "passkey_removed", None, detail).await;
    Ok(Json(json!({"removed": approver, "credential": credential})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuditParams {
    agent: Option<String>,
    session: Option<String>,
    approval: Option<String>,
    limit: Option<usize>,
    /// Only records at or after this time (ms since the epoch).
    since: Option<i64>,
}

pub(super) async fn audit(
    State(core): State<AppState>,
    _op: OperatorAuth,
    ApiQuery(q): ApiQuery<AuditParams>,
) -> Result<Json<Value>, ApiError> {
    let approval_id = match q.approval.as_deref() {
        Some(a) => Some(parse_approval_id(a)?),
        None => None,
    };
    let since = q.since.map(plangate_engine::Timestamp);
    let mut query = AuditQuery { agent: q.agent, session_id: q.session, approval_id, limit: q.limit.unwrap_or(200), since };
    let filters = format!("agent {:?}, session {:?}, approval {:?}", query.agent, query.session_id, q.approval);
    super::audit::record_read(&core, crate::audit::READ, format!("operator read the audit ({filters})")).await?;
    let events = core
        .blocking(move |s| {
            // One approval's trail begins when it was proposed: read from there.
            if let Some(id) = &query.approval_id {
                let proposed = s.proposal(id)?.map(|p| crate::core::audit_since(&p));
                query.since = query.since.max(proposed);
            }
            s.audit(&query)
        })
        .await?;
    Ok(Json(json!(events)))
}

/// `GET /metrics`: the Prometheus text exposition (docs/OPERATIONS.md),
/// behind the operator token like every operator endpoint: a scraper sends
/// it as a bearer token (`authorization: {credentials_file: …}`).
pub(super) async fn metrics(State(core): State<AppState>, _op: OperatorAuth) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = core.metrics.render(core.chat.backlog(), core.waiters.parked());
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

/// `GET /v1/operator/approvals/<id>/ladder` (`plangate ladder show`): per
/// level of the approval's escalation ladder, when and whom it reaches,
/// as lines for people (`{"text": …}`). Schedules are read as the level
/// would read them (a rota or feed for the level's moment, an on-call API
/// for now).
pub(super) async fn ladder(State(core): State<AppState>, _op: OperatorAuth, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let id = parse_approval_id(&id)?;
    let text = core.ladder_show(id).await.ok_or_else(|| ApiError::not_found("no such approval"))?;
    Ok(Json(json!({ "text": text })))
}

/// `POST /v1/operator/prune?dry_run=true|false`: prune by `[retention]` now
/// (`plangate prune`); a dry run reports what would go and removes nothing.
pub(super) async fn prune(
    State(core): State<AppState>,
    _op: OperatorAuth,
    ApiQuery(q): ApiQuery<PruneQuery>,
) -> Result<Json<Value>, ApiError> {
    let dry_run = q.dry_run.unwrap_or(false);
    if crate::ops::retention::policy(&core, dry_run).is_none() {
        return Err(ApiError::invalid_request("retention is off: set [retention] decided_approvals and/or audit (e.g. \"90d\")"));
    }
    let report = crate::ops::retention::prune_all(&core, dry_run).await?;
    Ok(Json(
        json!({"dry_run": dry_run, "approvals": report.approvals, "deliveries": report.deliveries, "documents": report.documents, "audit": report.audit}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_nothing_else_parses() {
        for at in [
            PagePosition { created_at: Timestamp(-5), approval_id: ApprovalId([0xab; 16]) },
            PagePosition { created_at: Timestamp(1_764_000_000_000), approval_id: ApprovalId([0; 16]) },
        ] {
            assert_eq!(parse_cursor(&cursor(at)), Some(at));
        }
        let good = cursor(PagePosition { created_at: Timestamp(7), approval_id: ApprovalId([0xab; 16]) });
        for bad in ["", "abc", &good[1..], &good.to_uppercase(), &format!("{good}00"), &good.replacen('0', "g", 1)] {
            assert_eq!(parse_cursor(bad), None, "{bad:?}");
        }
    }
}
