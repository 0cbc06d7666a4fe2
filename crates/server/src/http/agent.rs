//! The agent endpoints (and `/healthz`).

use super::extract::*;
use super::proposal::ProposalBody;
use super::ApiError;
use super::AppState;
use crate::core::ExecMeta;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use plangate_engine::view::{hydration, DecisionView, StatusView};
use plangate_engine::{Actor, ApprovalId, Command, Plan, Refusal, SessionKey, StepUpdate};
use plangate_store::{Committed, Preempted};
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) async fn healthz(State(core): State<AppState>) -> Response {
    if core.is_degraded() {
        let body = json!({"status": "degraded", "reason": "the last commit failed; decisions are not being recorded"});
        (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
    } else {
        let mut body = json!({"status": "ok", "waiting": core.waiters.parked()});
        // Replicas only: which one this is and the platform connections it holds.
        if core.storage.store.shared() {
            body["replica"] = json!(core.storage.info().and_then(|i| i.replica_id.clone()));
            body["leader_for"] = json!(core.roles.leading());
        }
        Json(body).into_response()
    }
}

/// Readiness (liveness stays `/healthz`): the store takes a durable write
/// within 2 s, and every configured channel is connected to its platform.
/// 503 with the reason of each failing check otherwise. Also says which
/// store backend serves, this replica's id, and the roles it leads.
pub(super) async fn readyz(State(core): State<AppState>) -> Response {
    let mut checks = serde_json::Map::new();
    let mut ready = true;
    let now = core.now().0.to_string();
    let probe = core.blocking(move |s| s.set_cursor("readyz", &now));
    let store = match tokio::time::timeout(std::time::Duration::from_secs(2), probe).await {
        Ok(Ok(())) if !core.is_degraded() => "ok".to_string(),
        Ok(Ok(())) => "the last commit failed; decisions are not being recorded".to_string(),
        Ok(Err(e)) => format!("a durable write failed: {e}"),
        Err(_) => "a durable write took more than 2 s".to_string(),
    };
    ready &= store == "ok";
    checks.insert("store".into(), json!(store));
    for (name, state) in core.adapters.readiness() {
        ready &= state.is_ok();
        let shown = match state {
            Ok(None) => "ok".to_string(),
            Ok(Some(note)) => note.to_string(),
            Err(why) => why,
        };
        checks.insert(name.into(), json!(shown));
    }
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let backend = core.storage.info().map(|i| i.backend).unwrap_or(if core.storage.store.shared() { "shared" } else { "sled" });
    let body = json!({
        "status": if ready { "ready" } else { "not_ready" },
        "checks": checks,
        "store_backend": backend,
        "replica": core.storage.info().and_then(|i| i.replica_id.clone()),
        // The roles whose platform connection this process holds; a replica
        // that leads none is ready all the same (it serves the API).
        "leader_for": core.roles.leading(),
    });
    let mut body = body;
    // Destinations that want a topic or thread per session but could not
    // get one: their cards go to the main chat (ready all the same).
    let notes = core.threads.notes();
    if !notes.is_empty() {
        body["thread_fallbacks"] = notes.into_iter().map(|(dest, note)| (dest, json!(note))).collect::<serde_json::Map<_, _>>().into();
    }
    (status, Json(body)).into_response()
}

/// A long-poll, cut short by a graceful shutdown with `503 shutting_down`.
pub(super) async fn unless_stopping<T>(core: &AppState, wait: impl std::future::Future<Output = T>) -> Result<T, ApiError> {
    tokio::select! {
        done = wait => Ok(done),
        () = core.waiters.shutting_down() => Err(ApiError::shutting_down()),
    }
}

pub(super) async fn status(State(core): State<AppState>, AgentSession(key): AgentSession) -> Result<Json<StatusView>, ApiError> {
    Ok(Json(StatusView::of(&core.load(&key).await?)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EnterBody {
    reason: Option<String>,
}

pub(super) async fn enter(State(core): State<AppState>, AgentCall { key, body }: AgentCall<EnterBody>) -> Result<Json<Value>, ApiError> {
    let done = core.execute(&key, Actor::Agent, Command::Enter { reason: body.reason }, ExecMeta::default()).await?;
    let mut view = serde_json::to_value(StatusView::of(&done.transition.state)).unwrap_or_default();
    // The plan-mode brief, in the terms of the session's harness.
    view["instructions"] = json!(plangate_engine::brief::brief(done.transition.state.session.harness, &core.reach(&key.agent)));
    Ok(Json(view))
}

/// `GET /v1/sessions/{id}/brief?harness=…`: the plan-mode brief
/// ([`plangate_engine::brief`]) for a harness that enters its own plan
/// mode (Claude Code's hook asks for it on a prompt in plan mode).
pub(super) async fn brief(
    State(core): State<AppState>,
    AgentSession(key): AgentSession,
    ApiQuery(q): ApiQuery<BriefQuery>,
) -> Result<Json<Value>, ApiError> {
    let harness = q.harness.unwrap_or_default();
    Ok(Json(json!({"instructions": plangate_engine::brief::brief(harness, &core.reach(&key.agent))})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BriefQuery {
    #[serde(default)]
    harness: Option<plangate_engine::Harness>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StepsBody {
    /// With `merge`, each entry is a patch of the step with the same text.
    /// OpenClaw's `update_plan` calls it `plan`.
    #[serde(alias = "plan")]
    steps: Vec<StepUpdate>,
    #[serde(default)]
    merge: bool,
    explanation: Option<String>,
}

pub(super) async fn steps(State(core): State<AppState>, AgentCall { key, body }: AgentCall<StepsBody>) -> Result<Json<Value>, ApiError> {
    let command = Command::UpdatePlan { steps: body.steps, merge: body.merge, explanation: body.explanation };
    let done = core.execute(&key, Actor::Agent, command, ExecMeta::default()).await?;
    Ok(Json(json!({"steps": done.transition.state.session.steps})))
}

pub(super) async fn propose(State(core): State<AppState>, AgentCall { key, body }: AgentCall<Value>) -> Result<Response, ApiError> {
    let ProposalBody { plan, markdown, requested_by, harness, project } =
        ProposalBody::parse(body, core.settings.requested_by(&key.agent))?;
    let routed = route_plan(&core, &key, &plan, project.as_ref()).await?;
    let min_quorum = match routed.verdict {
        plangate_policy::PlanVerdict::Quorum(n) => Some(n),
        _ => None,
    };
    let meta = ExecMeta { min_quorum, step_up: routed.step_up.is_some(), ..ExecMeta::default() };
    let done = core.execute(&key, Actor::Agent, Command::Propose { plan, markdown, requested_by, harness, project }, meta).await?;
    if let Some(latest) = done.transition.state.latest.as_ref() {
        core.audit(&key, "plangate", plangate_policy::replay::PLAN_ACTION, Some((latest.approval_id, latest.version)), routed.detail())
            .await;
    }
    let Some(latest) = done.transition.state.latest.as_ref() else {
        return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "proposal vanished"));
    };
    let document_path = match done.document_path {
        Some(path) => path,
        // An identical re-proposal: the document of the pending proposal.
        None => core.document_location(latest).await.display().to_string(),
    };
    let mut value = serde_json::to_value(for_agent(&core, &key.agent, latest)).unwrap_or_default();
    value["document_path"] = json!(document_path);
    Ok((StatusCode::CREATED, Json(value)).into_response())
}

/// A proposal through the operator's policy ([`plangate_policy::Policy::route_plan`])
/// by the classes it allows, its scope, its size and where it runs: `deny`
/// refuses it (403, audited as `plan_routed` with the rule), `quorum = N`
/// raises how many people must approve it, `step_up` makes each person's
/// approval count only with their passkey. Nothing in the plan can lift a
/// rule.
async fn route_plan(
    core: &AppState,
    key: &SessionKey,
    plan: &Plan,
    project: Option<&plangate_engine::Project>,
) -> Result<plangate_policy::replay::PlanRecord, ApiError> {
    let facts = plangate_policy::Facts {
        agent: key.agent.clone(),
        project: project.map(|p| p.name.trim().to_string()),
        branch: project.and_then(|p| p.branch.clone()),
        host: project.and_then(|p| p.host.clone()),
        tool: None,
        classes: plan.allows.clone(),
        undeclared: Vec::new(),
        paths: plan.scope.as_ref().map(|s| s.paths.clone()),
        steps: Some(plan.steps.len()),
    };
    let route = core.settings.policy.route_plan(&facts);
    let verdict = plangate_policy::plan_verdict(route.map(|r| r.action));
    let rule = route.map(|r| r.rule.id.clone());
    let step_up = core.settings.policy.step_up_plan(&facts).map(|r| r.id.clone());
    let record = plangate_policy::replay::PlanRecord { facts, title: plan.title.clone(), verdict, rule, step_up };
    if verdict == plangate_policy::PlanVerdict::Refused {
        let id = record.rule.clone().unwrap_or_default();
        tracing::info!(rule = %id, "policy refused a plan");
        core.audit(key, "plangate", plangate_policy::replay::PLAN_ACTION, None, record.detail()).await;
        let allows = plan.allows.iter().map(|c| c.id()).collect::<Vec<_>>().join(", ");
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "the operator's policy rule {id} refuses this plan (it allows {allows}); propose a plan without what the rule names, or ask the operator"
            ),
        ));
    }
    Ok(record)
}

pub(super) async fn decision(
    State(core): State<AppState>,
    AgentSession(key): AgentSession,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> Result<Json<DecisionView>, ApiError> {
    let wait = wait_of(&q)?;
    match unless_stopping(&core, core.wait_decision(&key, wait)).await?? {
        Some(p) => Ok(Json(for_agent(&core, &key.agent, &p))),
        None => Err(ApiError::not_found("this session has no proposal yet")),
    }
}

fn for_agent(core: &AppState, agent: &str, p: &plangate_engine::Proposal) -> DecisionView {
    core.settings.decision_for(agent, p)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoppingBody {
    /// The agent's last message (Claude Code's and Codex's
    /// `last_assistant_message`), for the audit.
    #[serde(default)]
    last_message: Option<String>,
    /// How long the harness's stop waited for the pending plan's decision
    /// before giving up (after a `wait` answer).
    #[serde(default)]
    waited_secs: Option<u64>,
}

/// `POST /v1/sessions/{id}/stopping`: the agent tries to stop. While the
/// approved plan has open steps the answer is `{"decision": "continue",
/// "reason": <the instruction>}`, escalating, then `{"decision": "stop"}`
/// ([`plangate_engine::keep_going`]). While the session's plan awaits
/// people's decision: `{"decision": "wait", "approval_id", "version"}`
/// (a harness that can hold the agent at its stop waits there, then posts
/// again with `waited_secs`, and the open card says the agent left).
pub(super) async fn stopping(
    State(core): State<AppState>,
    AgentCall { key, body }: AgentCall<StoppingBody>,
) -> Result<Json<Value>, ApiError> {
    use plangate_engine::keep_going::Answer;
    let command = Command::Stopping { last_message: body.last_message, waited_secs: body.waited_secs };
    let done = core.execute(&key, Actor::Agent, command, ExecMeta::default()).await?;
    let answer = match done.transition.keep_going {
        Some(Answer::AwaitDecision { approval_id, version }) => {
            json!({"decision": "wait", "approval_id": approval_id.to_string(), "version": version})
        }
        Some(Answer::KeepGoing(text)) => json!({"decision": "continue", "reason": text}),
        Some(Answer::Stop(why)) => json!({"decision": "stop", "reason": why}),
        None => json!({"decision": "stop", "reason": "nothing holds the agent"}),
    };
    tracing::info!(decision = %answer["decision"], "stopping");
    Ok(Json(answer))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TodosBody {
    todos: Vec<plangate_engine::keep_going::Todo>,
}

/// `POST /v1/sessions/{id}/todos`: the harness's own to-do list (Claude
/// Code's `TodoWrite`, relayed by the hook): the approved plan's progress
/// where the agent reports no steps. `{"todos": n}` kept; outside an
/// executing plan nothing is kept (`{"todos": 0}`).
pub(super) async fn todos(State(core): State<AppState>, AgentCall { key, body }: AgentCall<TodosBody>) -> Result<Json<Value>, ApiError> {
    let done = core.execute(&key, Actor::Agent, Command::Todos { todos: body.todos }, ExecMeta::default()).await?;
    Ok(Json(json!({"todos": done.transition.state.session.todos.len()})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SubagentBody {
    run_id: String,
}

pub(super) async fn subagent_open(
    State(core): State<AppState>,
    AgentCall { key, body }: AgentCall<SubagentBody>,
) -> Result<StatusCode, ApiError> {
    core.execute(&key, Actor::Agent, Command::RegisterSubagent(body.run_id), ExecMeta::default()).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn subagent_close(
    State(core): State<AppState>,
    AgentSession(key): AgentSession,
    Path((_, run_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    core.execute(&key, Actor::Agent, Command::UnregisterSubagent(run_id), ExecMeta::default()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AskBody {
    question: String,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    allow_freetext: bool,
}

pub(super) async fn ask(State(core): State<AppState>, AgentCall { key, body }: AgentCall<AskBody>) -> Result<Response, ApiError> {
    let command = Command::Ask { question: body.question, options: body.options, allow_freetext: body.allow_freetext };
    let done = core.execute(&key, Actor::Agent, command, ExecMeta::default()).await?;
    let id = done.transition.state.session.pending_question.as_ref().map(|q| q.question_id.to_string());
    Ok((StatusCode::CREATED, Json(json!({"question_id": id}))).into_response())
}

pub(super) async fn question(
    State(core): State<AppState>,
    AgentSession(key): AgentSession,
    Path((_, qid)): Path<(String, String)>,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> Result<Json<Value>, ApiError> {
    let wait = wait_of(&q)?;
    let id = ApprovalId::parse(&qid).ok_or_else(|| ApiError::not_found("no such question"))?;
    let Some(q) = unless_stopping(&core, core.wait_question(&key, id, wait)).await?? else {
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

pub(super) async fn take_injection(State(core): State<AppState>, AgentSession(key): AgentSession) -> Result<Json<Value>, ApiError> {
    let done = core.execute(&key, Actor::Agent, Command::TakeInjection, ExecMeta::default()).await?;
    Ok(Json(injection_body(done.transition.taken_injection, &done.transition.state)))
}

/// `GET …/injection?wait=N`: the untaken injection, without taking it;
/// holds up to N s until there is one. What a Claude Code channel parks on
/// between decisions (then it takes with `POST …/injection/take`).
pub(super) async fn peek_injection(
    State(core): State<AppState>,
    AgentSession(key): AgentSession,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> Result<Json<Value>, ApiError> {
    let wait = wait_of(&q)?;
    let state = unless_stopping(&core, core.wait_injection(&key, wait)).await??;
    Ok(Json(injection_body(state.session.injection.clone(), &state)))
}

/// `{"injection": str|null}` plus, when there is an injection and a
/// proposal, what it is about: the latest proposal's `approval_id`,
/// `version` and `status` (a release or a `[PLAN_NUDGE]` may concern no
/// proposal's decision, and says so in its text).
fn injection_body(injection: Option<String>, state: &plangate_engine::State) -> Value {
    let mut out = json!({"injection": injection});
    if let (Some(_), Some(p)) = (&injection, &state.latest) {
        out["approval_id"] = json!(p.approval_id.to_string());
        out["version"] = json!(p.version);
        out["status"] = json!(p.status.as_str());
    }
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HydrationQuery {
    /// `compact` (the default) or `resume`: what happened to the agent's
    /// context, which the first line names.
    #[serde(default)]
    after: plangate_engine::view::Rehydration,
}

pub(super) async fn get_hydration(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(sid): Path<String>,
    ApiQuery(q): ApiQuery<HydrationQuery>,
) -> Result<Json<Value>, ApiError> {
    // Not `AgentSession`: a bad query string is answered before a
    // malformed session id here, as it always was.
    let after = q.after;
    let key = session_key(agent, &sid)?;
    Ok(Json(json!({"text": hydration(&core.load(&key).await?, after)})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GateBody {
    session_id: String,
    tool: String,
    #[serde(default)]
    input: Value,
    /// Who asks: the denial's advice names this harness's tools.
    #[serde(default)]
    harness: plangate_engine::Harness,
    /// The harness's hook checked on the agent's machine that this call
    /// writes only the harness's own plan file ([`plangate_engine::GateCall`]).
    #[serde(default)]
    plan_file: bool,
    /// The harness reports that it is in its own plan mode.
    #[serde(default)]
    harness_plan_mode: bool,
    /// The files a file tool writes, as the hook normalized them on the
    /// agent's machine ([`plangate_engine::scope`]).
    #[serde(default)]
    paths: Option<Vec<plangate_engine::scope::Target>>,
}

pub(super) async fn gate(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    ApiJson(body): ApiJson<GateBody>,
) -> Result<Json<Value>, ApiError> {
    let key = session_key(agent.clone(), &body.session_id)?;
    let state = core.load(&key).await?;
    let call = plangate_engine::GateCall {
        tool: &body.tool,
        input: &body.input,
        harness: body.harness,
        plan_file: body.plan_file,
        harness_plan_mode: body.harness_plan_mode,
        paths: body.paths.as_deref(),
    };
    let verdict = crate::gate::check(&core.settings, &agent, &state.session, &call);
    let mut out_of_scope = false;
    if let (crate::gate::Verdict::Deny(_), Some(paths)) = (&verdict, plangate_engine::scope_widening(&state.session, &call)) {
        // Outside the approved scope: people are asked to widen it (once per path).
        out_of_scope = true;
        core.execute(&key, Actor::Agent, Command::WidenScope { paths }, ExecMeta::default()).await?;
    }
    let (decision, reason) = match (&verdict, crate::gate::by_rules(&core.settings, &agent, &call)) {
        (crate::gate::Verdict::Deny(r), _) => ("deny", r.clone()),
        (crate::gate::Verdict::Allow(_), Some(crate::gate::ByRules::Deny(r))) => ("deny", r),
        (crate::gate::Verdict::Allow(r), Some(crate::gate::ByRules::Ask(why))) => match crate::gate::risky_call(&agent, &state, &call) {
            // The operator's `deny` is stronger than an agent's ask rule.
            Some(facts) if core.settings.policy.route_call(&facts).is_some_and(|p| p.action == plangate_policy::Action::Deny) => {
                routed(&core, &key, &state, &call, facts, r).await?
            }
            _ => ("ask", why),
        },
        (crate::gate::Verdict::Allow(r), None) => match crate::gate::risky_call(&agent, &state, &call) {
            None => ("allow", r.clone()),
            Some(facts) => routed(&core, &key, &state, &call, facts, r).await?,
        },
    };
    tracing::info!(tool = %body.tool, decision, "gate");
    if plangate_engine::amendment::executing(&state.session) {
        // Counted for the approval's receipt before the agent hears the
        // verdict: a call that ran is on the receipt, also after a crash.
        // A failure to count is an error, which the hook takes as a deny.
        let outcome = match decision {
            "allow" => plangate_engine::ran::CallOutcome::Allowed,
            "ask" => plangate_engine::ran::CallOutcome::Asked,
            _ if out_of_scope => plangate_engine::ran::CallOutcome::OutOfScope,
            _ => plangate_engine::ran::CallOutcome::Denied,
        };
        let paths: Vec<String> = call.paths.unwrap_or_default().iter().map(|t| t.shown().to_string()).collect();
        let shown = plangate_engine::ran::shown(call.tool, plangate_gate::reading::command(call.tool, call.input), &paths);
        let counted = Command::Called { tool: body.tool.clone(), shown, outcome };
        core.execute(&key, Actor::Agent, counted, ExecMeta::default()).await?;
    }
    core.metrics.gate_verdict(decision);
    Ok(Json(json!({"decision": decision, "reason": reason})))
}

/// A risky call during an approved plan, through the operator's policy:
/// `deny` refuses, `auto` runs it without a card, `one` and `quorum` ask
/// people, and without a rule a class the plan did not declare asks
/// ([`plangate_policy::call_verdict`]). Each is audited as `gate_call`
/// with its facts and rule, which `plangate policy test` replays.
async fn routed(
    core: &AppState,
    key: &SessionKey,
    state: &plangate_engine::State,
    call: &plangate_engine::GateCall<'_>,
    facts: plangate_policy::Facts,
    allowed: &str,
) -> Result<(&'static str, String), ApiError> {
    use plangate_policy::Action;
    let route = core.settings.policy.route_call(&facts);
    let undeclared = !facts.undeclared.is_empty();
    // A grant matters only where people would be asked.
    let asks = match route.map(|r| r.action) {
        Some(Action::Deny | Action::Auto) => false,
        Some(Action::One | Action::Quorum(_)) => true,
        None => undeclared,
    };
    let covered = asks && granted(core, &key.agent, state, call).await?;
    let verdict = plangate_policy::call_verdict(route.map(|r| r.action), undeclared, covered);
    let reason = crate::gate::routed_reason(state, &facts, route, verdict, allowed);
    let rule = route.map(|r| r.rule.id.clone());
    if let Some(rule) = &rule {
        tracing::info!(rule = %rule, verdict = verdict.as_str(), "policy routed a call");
    }
    let shown = plangate_gate::reading::command(call.tool, call.input).unwrap_or_else(|| call.tool.to_string());
    let record =
        plangate_policy::replay::CallRecord { facts, granted: covered, verdict, rule, shown: plangate_policy::replay::shown(&shown) };
    let approval = state.latest.as_ref().map(|p| (p.approval_id, p.version));
    core.audit(key, "plangate", plangate_policy::replay::CALL_ACTION, approval, record.detail()).await;
    Ok((verdict.as_str(), reason))
}

/// Whether people already allowed exactly this call: an "Allow for this
/// session" of the session, an "Always allow" of the agent, or the
/// configuration's allow rules, read strictly
/// ([`plangate_engine::permission::Rule::allows`]), as the permission
/// request would be.
async fn granted(
    core: &AppState,
    agent: &str,
    state: &plangate_engine::State,
    call: &plangate_engine::GateCall<'_>,
) -> Result<bool, ApiError> {
    use plangate_engine::permission::Call;
    let call = Call { tool: call.tool, input: call.input, paths: call.paths };
    if state.session.session_rules.iter().any(|r| r.allows(&call)) {
        return Ok(true);
    }
    if core.settings.raw.agents.get(agent).is_some_and(|a| a.permissions.allow.iter().any(|r| r.allows(&call))) {
        return Ok(true);
    }
    let agent = agent.to_string();
    let stored = core.blocking(move |s| s.permission_rules(&agent)).await?;
    Ok(stored.iter().any(|r| r.rule.allows(&call)))
}

/// How many times a namespace merge is done again after another replica
/// wrote the namespace first, before the caller is told to retry (503).
const MAX_NAMESPACE_CONFLICTS: u32 = 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NamespaceBody {
    steps: Vec<StepUpdate>,
    session_id: String,
}

pub(super) async fn namespace_get(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    plangate_engine::namespace::validate_name(&name).map_err(|e| ApiError::invalid_request(e.to_string()))?;
    let key = core.settings.namespace_key(&agent, &name);
    let ns = core.blocking(move |s| s.namespace(&key.store)).await?;
    Ok(Json(json!({"name": name, "steps": ns.steps})))
}

pub(super) async fn namespace_steps(
    State(core): State<AppState>,
    AgentAuth(agent): AgentAuth,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<NamespaceBody>,
) -> Result<Json<Value>, ApiError> {
    plangate_engine::namespace::validate_name(&name).map_err(|e| ApiError::invalid_request(e.to_string()))?;
    session_key(agent.clone(), &body.session_id)?;
    // A namespace is the agent's own unless `[namespaces.<name>]` shares it
    // with other agents; then steps record which agent's session touched them.
    let key = core.settings.namespace_key(&agent, &name);
    let author = if key.shared { format!("{agent}/{}", body.session_id) } else { body.session_id.clone() };
    // Merges of one namespace on this replica take turns through the lock
    // of a synthetic session key (`~` is in no agent id, so it is no
    // agent's session); merges on other replicas are caught by the
    // revision check of `set_namespace`, and merged again on what won.
    let lock_key = SessionKey::new("~namespaces", key.store.clone());
    let merged = core
        .with_session_lock(&lock_key, async {
            let mut conflicts = 0;
            loop {
                let store_key = key.store.clone();
                let (ns, revision) = core.blocking(move |s| s.namespace_revision(&store_key)).await?;
                let merged = plangate_engine::namespace::merge(&ns, body.steps.clone(), &author, core.now()).map_err(|e| match e {
                    plangate_engine::namespace::NamespaceError::Plan(p) => ApiError::from(Refusal::from(p)),
                    other => ApiError::invalid_request(other.to_string()),
                })?;
                let (store_key, m) = (key.store.clone(), merged.clone());
                match core.blocking(move |s| s.set_namespace(&store_key, &m, revision)).await {
                    Ok(Committed::Written(())) => return Ok::<_, ApiError>(merged),
                    Ok(Committed::Preempted(Preempted::Conflict)) if conflicts < MAX_NAMESPACE_CONFLICTS => {
                        conflicts += 1;
                        tracing::debug!(attempt = conflicts, "another replica changed the namespace first; merging again");
                        tokio::time::sleep(std::time::Duration::from_millis(rand::random::<u64>() % 10 + 1)).await;
                    }
                    Ok(Committed::Preempted(p)) => return Err(p.into()),
                    Err(e) => return Err(e.into()),
                }
            }
        })
        .await?;
    Ok(Json(json!({"name": name, "shared": key.shared, "steps": merged.steps})))
}
