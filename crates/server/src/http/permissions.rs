//! Permission requests (docs/API.md, "Permission requests"): the agent's
//! hook relays a dialog its harness would show, and waits for a person.
//!
//! The order is fixed and every step fails closed: the gate first (a call
//! it denies never becomes a card), then the configured and stored rules,
//! then a card — only where the agent has somewhere to post it and has not
//! turned relaying off. Anything else is `local`: the harness's own dialog
//! asks at the terminal, which is never an allow.

use super::agent::unless_stopping;
use super::extract::*;
use super::{ApiError, AppState};
use crate::core::ExecMeta;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use plangate_engine::permission::{self, Call, Judged, Rules};
use plangate_engine::scope::Target;
use plangate_engine::{Actor, ApprovalId, Command, Harness};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AskBody {
    tool: String,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    harness: Harness,
    /// The harness reports that it is in its own plan mode.
    #[serde(default)]
    harness_plan_mode: bool,
    /// The files a file tool writes, as the hook normalized them.
    #[serde(default)]
    paths: Option<Vec<Target>>,
}

/// `POST /v1/sessions/{id}/permissions`: `{"decision": "allow" | "deny" |
/// "local" | "ask", …}`; `ask` (201) carries the `question_id` to wait on.
pub(super) async fn ask(State(core): State<AppState>, AgentCall { key, body }: AgentCall<AskBody>) -> Result<Response, ApiError> {
    let agent = key.agent.clone();
    let state = core.load(&key).await?;
    let gate_call = plangate_engine::GateCall {
        tool: &body.tool,
        input: &body.input,
        harness: body.harness,
        plan_file: false,
        harness_plan_mode: body.harness_plan_mode,
        paths: body.paths.as_deref(),
    };
    if let crate::gate::Verdict::Deny(reason) = crate::gate::check(&core.settings, &agent, &state.session, &gate_call) {
        return Ok(Json(json!({"decision": "deny", "reason": reason})).into_response());
    }
    let config = core.settings.raw.agents.get(&agent).map(|a| a.permissions.clone()).unwrap_or_default();
    let stored = {
        let agent = agent.clone();
        core.blocking(move |s| s.permission_rules(&agent)).await?
    };
    let (denied, required) = by_policy(&core, &agent, &state, &gate_call);
    if let Some(reason) = denied {
        // The operator's `deny` holds here too: no card can allow it.
        return Ok(Json(json!({"decision": "deny", "reason": reason})).into_response());
    }
    let rules = Rules { deny: config.deny, ask: config.ask, allow: config.allow, stored, required };
    // Posted where the session's cards go: the project of its latest plan.
    let project = state.latest.as_ref().and_then(|p| p.project.as_ref());
    let relay = config.relay && !core.destinations(&agent, project).is_empty();
    let call = Call { tool: &body.tool, input: &body.input, paths: body.paths.as_deref() };
    if !relay && permission::judge(&call, &rules, &state.session.session_rules) == Judged::Ask {
        let why = if config.relay { "the agent has no chat destination" } else { "relaying is off for this agent" };
        return Ok(Json(json!({"decision": "local", "reason": format!("{why}: ask at the terminal")})).into_response());
    }
    let tool = body.tool.clone();
    let command = Command::AskPermission { tool: body.tool, input: body.input, paths: body.paths, rules };
    let done = core.execute(&key, Actor::Agent, command, ExecMeta::default()).await?;
    let (status, body) = match done.transition.permission {
        Some(Judged::Allow { rule, from }) => (
            StatusCode::OK,
            json!({"decision": "allow", "rule": rule.to_string(), "reason": format!("allowed by {from}: {}", rule.shown())}),
        ),
        Some(Judged::Deny(rule)) => (
            StatusCode::OK,
            json!({"decision": "deny", "rule": rule.to_string(), "reason": format!("denied by plangate's rule {} for this agent", rule.shown())}),
        ),
        Some(Judged::Ask) => {
            let id = done.transition.state.session.pending_permission.as_ref().map(|q| q.question_id.to_string());
            (StatusCode::CREATED, json!({"decision": "ask", "question_id": id}))
        }
        // The engine judges every request it accepts; fail closed regardless.
        None => (StatusCode::OK, json!({"decision": "deny", "reason": "plangate could not judge this call, so it is denied"})),
    };
    tracing::info!(%tool, decision = %body["decision"], "permission");
    Ok((status, Json(body)).into_response())
}

/// What the operator's policy says of a risky call during an approved
/// plan that the harness asks about: the reason when a rule denies it, and
/// how many people must allow it (`quorum = N`; 0 otherwise).
fn by_policy(core: &AppState, agent: &str, state: &plangate_engine::State, call: &plangate_engine::GateCall<'_>) -> (Option<String>, u32) {
    let Some(facts) = crate::gate::risky_call(agent, state, call) else { return (None, 0) };
    let route = core.settings.policy.route_call(&facts);
    match route.map(|r| r.action) {
        Some(plangate_policy::Action::Deny) => {
            (Some(crate::gate::routed_reason(state, &facts, route, plangate_policy::CallVerdict::Deny, "")), 0)
        }
        Some(plangate_policy::Action::Quorum(n)) => (None, n),
        _ => (None, 0),
    }
}

/// `GET /v1/sessions/{id}/permissions/{question_id}?wait=N`: the request
/// with its outcome once a person answered (or it expired).
pub(super) async fn get(
    State(core): State<AppState>,
    AgentSession(key): AgentSession,
    Path((_, qid)): Path<(String, String)>,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> Result<Json<Value>, ApiError> {
    let wait = wait_of(&q)?;
    let id = ApprovalId::parse(&qid).ok_or_else(|| ApiError::not_found("no such permission request"))?;
    // The hook says it waits until the poll's end: a person's answer counts
    // while someone waits (`plangate_engine::permission::HEARD_GRACE_MS`).
    let until = core.now().plus_ms(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
    core.execute(&key, Actor::Agent, Command::PermissionWaiting { question_id: id, until }, ExecMeta::default()).await?;
    let found = unless_stopping(&core, core.wait_question(&key, id, wait)).await??;
    let Some((q, ask)) = found.and_then(|q| q.permission.clone().map(|a| (q, a))) else {
        return Err(ApiError::not_found("no such permission request in this session"));
    };
    Ok(Json(json!({
        "question_id": q.question_id.to_string(),
        "status": q.status,
        "tool": ask.tool,
        "outcome": ask.outcome,
        "answered_by": q.answered_by,
    })))
}

/// `POST /v1/sessions/{id}/permissions/{question_id}/expire`: the hook
/// stopped waiting; the card says so. 204 whether or not it still waited.
pub(super) async fn expire(
    State(core): State<AppState>,
    AgentSession(key): AgentSession,
    Path((_, qid)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let id = ApprovalId::parse(&qid).ok_or_else(|| ApiError::not_found("no such permission request"))?;
    core.execute(&key, Actor::Agent, Command::ExpirePermission { question_id: id }, ExecMeta::default()).await?;
    Ok(StatusCode::NO_CONTENT)
}
