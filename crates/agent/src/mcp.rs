//! `plangate mcp`: plan mode as MCP tools, over stdio (rmcp).
//!
//! The server is a client of a running `plangate serve` (`PLANGATE_URL`,
//! `PLANGATE_TOKEN`), so any number of agents share one plangate. Each tool
//! takes an optional `session_id`; without it the session is
//! `PLANGATE_SESSION`, and without that the call is refused — never a session
//! made up for the process, which no gate would check.
//!
//! Inside Claude Code the session must be the one the hook gates, Claude's
//! `session_id`, which Claude Code does not tell MCP servers (and which
//! changes under a running server on `/clear` or `--resume`; several Claude
//! sessions in one project each run their own server). So the hook supplies
//! it: it sees every call of these tools as `mcp__plangate__<tool>` together
//! with Claude's session and answers with the input plus `session_id`
//! (see [`crate::claude::hook`]). Register this server under the name
//! `plangate`, so the hook and the gate recognise its tools.
//!
//! Tool inputs are deserialized from the same engine types as the HTTP API
//! (`Plan`, `Step`), and their JSON Schemas are derived from those types.
//! Arguments that do not fit are a tool error (`isError`, the way rmcp
//! reports arguments that do not deserialize) naming the field, e.g.
//! ``invalid arguments: `steps[1].status`: unknown variant `done` …``; so is a
//! plan rule the server refuses (naming the rule) and a refusal the agent can
//! act on (`invalid_state`, `subagents_open`, an unreachable server). The
//! model reads the message and corrects its call; the server never crashes.
//!
//! The step namespaces shared across sessions and agents have their own
//! tools and router in [`namespace`].
//!
//! `exit_plan_mode` and `ask_user_question` wait for the human up to
//! `wait_seconds` (default `PLANGATE_MCP_WAIT`, else 50 s) and then answer
//! `pending`: calling again with the same plan (or with no plan), or with the
//! `question_id`, keeps waiting on the same approval or question.

mod namespace;

use crate::client::{AgentError, Client, QuestionBody, StepsUpdate, Timeouts};
use crate::proposal::{submit, MemoryRecall, ProposalBody};
use plangate_engine::view::DecisionView;
use plangate_engine::{DecisionStatus, Plan, QuestionStatus, StepUpdate};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// How long `exit_plan_mode` and `ask_user_question` wait by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(50);

/// Every tool this server offers.
pub const TOOLS: [&str; 9] = [
    "enter_plan_mode",
    "update_plan",
    "exit_plan_mode",
    "ask_user_question",
    "plan_mode_status",
    "check_tool",
    "take_decision_injection",
    "get_namespace",
    "update_namespace",
];

/// How Claude Code names these tools when the server is registered as
/// `plangate`: `mcp__plangate__<tool>`.
pub const CLAUDE_TOOL_PREFIX: &str = "mcp__plangate__";

/// Tool arguments: deserialized through `serde_path_to_error` so that a bad
/// argument is reported with its path; the schema is `T`'s own.
#[derive(Debug)]
pub struct Args<T>(pub T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Args<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        serde_path_to_error::deserialize(value).map(Args).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." {
                D::Error::custom(inner)
            } else {
                D::Error::custom(format!("`{path}`: {inner}"))
            }
        })
    }
}

impl<T: JsonSchema> JsonSchema for Args<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// The plangate session (1–128 of `A-Z a-z 0-9 . _ : -`); defaults to
    /// `PLANGATE_SESSION`. Inside Claude Code, plangate's hook sets it to
    /// Claude's session: leave it out.
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnterArgs {
    #[serde(default)]
    pub session_id: Option<String>,
    /// Why plan mode is entered (recorded in the audit trail).
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdatePlanArgs {
    #[serde(default)]
    pub session_id: Option<String>,
    /// The step list; at most one step `in_progress`, no duplicate step text.
    /// With `merge`, each entry changes only the fields it gives.
    /// (`plan`, OpenClaw's name for it, is read too.)
    #[serde(alias = "plan")]
    pub steps: Vec<StepUpdate>,
    /// Join with the current list by step text instead of replacing it.
    #[serde(default)]
    pub merge: bool,
    #[serde(default)]
    pub explanation: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitPlanModeArgs {
    #[serde(default)]
    pub session_id: Option<String>,
    /// The plan to propose (title, summary, steps, risks…). Give this or `markdown`.
    #[serde(default)]
    pub plan: Option<Plan>,
    /// A plan in markdown, kept verbatim (title from its first heading unless `title` is given).
    #[serde(default)]
    pub markdown: Option<String>,
    /// Title for a markdown plan.
    #[serde(default)]
    pub title: Option<String>,
    /// How long to wait for the human (0–300 s).
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    #[serde(default)]
    pub session_id: Option<String>,
    /// The question; required unless `question_id` is given to keep waiting.
    #[serde(default)]
    pub question: Option<String>,
    /// Choices offered to the human.
    #[serde(default)]
    pub options: Vec<String>,
    /// Whether the human may answer in their own words.
    #[serde(default)]
    pub allow_freetext: bool,
    /// A question asked before, to keep waiting for its answer.
    #[serde(default)]
    pub question_id: Option<String>,
    /// How long to wait for the answer (0–300 s).
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckToolArgs {
    #[serde(default)]
    pub session_id: Option<String>,
    /// The tool's name as the harness calls it (`Bash`, `write_file`, `mcp__github__create_issue`…).
    pub tool: String,
    /// The tool's arguments: they matter, not only the name.
    #[serde(default)]
    pub input: Map<String, Value>,
}

struct Inner {
    client: Client,
    default_session: Option<String>,
    wait: Duration,
    recall: MemoryRecall,
}

/// The MCP server; see the module docs.
#[derive(Clone)]
pub struct PlangateMcp {
    inner: Arc<Inner>,
    /// Every tool this server serves; `#[tool_handler]` dispatches through it.
    tool_router: ToolRouter<PlangateMcp>,
}

/// Why a call without a session is refused, and what to do.
pub const NO_SESSION: &str = "required: this call names no plangate session and PLANGATE_SESSION is not set, so it is refused \
     (a session nobody gates would let your changes through). Inside Claude Code, plangate's PreToolUse hook adds Claude's \
     session to every call of this server's tools: install it with `plangate hook install claude --scope local` and register \
     this server under the name `plangate` (tools mcp__plangate__*). Any other MCP client: set PLANGATE_SESSION in this \
     server's environment, or pass session_id.";

fn invalid(field: &str, problem: impl std::fmt::Display) -> McpError {
    McpError::invalid_params(format!("`{field}`: {problem}"), None)
}

/// A server refusal the agent can act on is a tool error it reads; a
/// request the server calls malformed is `invalid_params`.
fn failed(e: AgentError) -> Result<CallToolResult, McpError> {
    match &e {
        AgentError::Api { status: 422, message, details, .. } => Err(McpError::invalid_params(message.clone(), Some(details.clone()))),
        AgentError::Usage(message) => Err(McpError::invalid_params(message.clone(), None)),
        _ => Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())])),
    }
}

/// Invalid arguments as a tool error the model reads and can correct, as
/// rmcp reports arguments that do not deserialize (MCP: input validation
/// errors are tool execution errors).
fn tool_errors(outcome: Result<CallToolResult, McpError>) -> Result<CallToolResult, McpError> {
    match outcome {
        Err(e) if e.code == ErrorCode::INVALID_PARAMS => {
            let mut text = format!("invalid arguments: {}", e.message);
            if let Some(data) = e.data.filter(|d| !d.is_null()) {
                text.push_str(&format!(" ({data})"));
            }
            Ok(CallToolResult::error(vec![ContentBlock::text(text)]))
        }
        other => other,
    }
}

fn result(value: Value, note: Option<String>) -> CallToolResult {
    let mut out = CallToolResult::structured(value);
    if let Some(n) = note {
        out.content.push(ContentBlock::text(n));
    }
    out
}

fn wait_arg(seconds: Option<u64>, default: Duration) -> Result<Duration, McpError> {
    use plangate_basics::wait::{secs_within, MAX_WAIT_SECS};
    match seconds {
        None => Ok(default),
        Some(s) => secs_within(s, MAX_WAIT_SECS).ok_or_else(|| invalid("wait_seconds", format!("must be 0–{MAX_WAIT_SECS}, got {s}"))),
    }
}

fn decision_note(d: &DecisionView) -> String {
    let by = d.decided_by.as_deref().unwrap_or("a human");
    match d.status {
        DecisionStatus::Pending => format!(
            "pending: plan v{} (approval {}) is awaiting a human; call exit_plan_mode again with the same plan (or with no plan) to keep waiting",
            d.version, d.approval_id
        ),
        DecisionStatus::Approved => format!("approved by {by}: plan mode is off, execute exactly this plan"),
        DecisionStatus::Edited => format!("approved with edits by {by}: execute the edited plan in `plan`, not your original"),
        DecisionStatus::Rejected => {
            format!("changes requested by {by}: {}; stay in plan mode, revise and propose again", d.feedback.as_deref().unwrap_or(""))
        }
        DecisionStatus::TimedOut => "timed out: nobody decided; the plan is NOT approved".to_string(),
        DecisionStatus::Cancelled => format!("cancelled by {by}: plan mode is off; do not execute the plan"),
        DecisionStatus::Superseded => "superseded by a newer proposal".to_string(),
    }
}

impl PlangateMcp {
    /// `default_session` is the session of calls that name none (`PLANGATE_SESSION`);
    /// without it such calls are refused.
    pub fn new(client: Client, default_session: Option<String>, wait: Duration) -> PlangateMcp {
        let inner = Inner { client, default_session, wait, recall: MemoryRecall::default() };
        PlangateMcp { inner: Arc::new(inner), tool_router: Self::tool_router() + Self::namespace_router() }
    }

    /// From `PLANGATE_URL`, `PLANGATE_TOKEN`, `PLANGATE_SESSION`, `PLANGATE_MCP_WAIT`.
    pub fn from_env() -> Result<PlangateMcp, AgentError> {
        let client = Client::from_env(Timeouts::SERVER)?;
        let session = std::env::var("PLANGATE_SESSION").ok().filter(|s| !s.trim().is_empty()).map(|s| crate::session::sanitize(s.trim()));
        let wait = match std::env::var("PLANGATE_MCP_WAIT") {
            Ok(v) if !v.trim().is_empty() => {
                use plangate_basics::wait::{parse_secs, MAX_WAIT_SECS};
                parse_secs(v.trim(), MAX_WAIT_SECS).ok_or_else(|| {
                    AgentError::Usage(format!("PLANGATE_MCP_WAIT must be whole seconds from 0 to {MAX_WAIT_SECS}, got {v:?}"))
                })?
            }
            _ => DEFAULT_WAIT,
        };
        Ok(PlangateMcp::new(client, session, wait))
    }

    /// The session this process uses when a call names none.
    pub fn default_session(&self) -> Option<&str> {
        self.inner.default_session.as_deref()
    }

    fn session(&self, arg: Option<String>) -> Result<String, McpError> {
        match arg {
            None => self.inner.default_session.clone().ok_or_else(|| invalid("session_id", NO_SESSION)),
            Some(s) if crate::session::is_valid(&s) => Ok(s),
            Some(s) => Err(invalid("session_id", format!("{s:?} is not 1–128 characters of A-Z a-z 0-9 . _ : -"))),
        }
    }

    fn client(&self) -> &Client {
        &self.inner.client
    }
}

#[tool_router]
impl PlangateMcp {
    #[tool(
        description = "Enter plan mode: from now on only read-only tools pass plangate's gate until a human approves a plan. Returns the session Status."
    )]
    async fn enter_plan_mode(&self, Parameters(Args(args)): Parameters<Args<EnterArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_enter_plan_mode(args).await)
    }

    #[tool(
        description = "Record the step list (while planning or executing). Rules: at most one step in_progress; no duplicate step text; a step is completed only once verified_criteria cover its acceptance_criteria."
    )]
    async fn update_plan(&self, Parameters(Args(args)): Parameters<Args<UpdatePlanArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_update_plan(args).await)
    }

    #[tool(
        description = "Propose your plan to a human and wait for the decision (up to wait_seconds). Give `plan` (structured) or `markdown`. Returns the Decision: approved/edited (execute it; `injection` says how), rejected (revise per `feedback`), or pending (call again with the same plan, or with no plan, to keep waiting)."
    )]
    async fn exit_plan_mode(&self, Parameters(Args(args)): Parameters<Args<ExitPlanModeArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_exit_plan_mode(args).await)
    }

    #[tool(
        description = "Ask the human a question (while planning) and wait up to wait_seconds for the answer. Returns {question_id, status, answer?, answered_by?}; when pending, call again with question_id to keep waiting."
    )]
    async fn ask_user_question(&self, Parameters(Args(args)): Parameters<Args<AskArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_ask_user_question(args).await)
    }

    #[tool(
        description = "The session's Status: mode, approval state, latest approval id and version, steps, open subagents, pending question."
    )]
    async fn plan_mode_status(&self, Parameters(Args(args)): Parameters<Args<SessionArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_plan_mode_status(args).await)
    }

    #[tool(
        description = "Ask plangate's mutation gate whether a tool call may run now. In plan mode only provably read-only calls are allowed. Returns {decision: allow|deny, reason}."
    )]
    async fn check_tool(&self, Parameters(Args(args)): Parameters<Args<CheckToolArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_check_tool(args).await)
    }

    #[tool(
        description = "Read and clear the [PLAN_DECISION] text waiting for you (after an approval, edit, change request, timeout or cancel). Returns {injection: string|null}."
    )]
    async fn take_decision_injection(&self, Parameters(Args(args)): Parameters<Args<SessionArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_take_decision_injection(args).await)
    }
}

/// The tools' bodies; the `#[tool]` wrappers above turn argument errors into tool errors.
impl PlangateMcp {
    async fn run_enter_plan_mode(&self, args: EnterArgs) -> Result<CallToolResult, McpError> {
        let session = self.session(args.session_id)?;
        match self.client().enter_briefed(&session, args.reason.as_deref()).await {
            Ok(status) => Ok(result(status, None)),
            Err(e) => failed(e),
        }
    }

    async fn run_update_plan(&self, args: UpdatePlanArgs) -> Result<CallToolResult, McpError> {
        let session = self.session(args.session_id)?;
        let update = StepsUpdate { steps: args.steps, merge: args.merge, explanation: args.explanation };
        match self.client().update_steps(&session, &update).await {
            Ok(steps) => Ok(result(json!({"steps": steps}), None)),
            Err(e) => failed(e),
        }
    }

    async fn run_exit_plan_mode(&self, args: ExitPlanModeArgs) -> Result<CallToolResult, McpError> {
        let session = self.session(args.session_id)?;
        let wait = wait_arg(args.wait_seconds, self.inner.wait)?;
        let body = match (args.plan, args.markdown) {
            (Some(_), Some(_)) => return Err(invalid("plan", "give either `plan` or `markdown`, not both")),
            (Some(_), None) if args.title.is_some() => return Err(invalid("title", "only goes with `markdown`; a plan has its own title")),
            (Some(plan), None) => Some(ProposalBody::Plan(plan)),
            (None, Some(md)) => Some(ProposalBody::markdown(md, args.title)),
            (None, None) => None,
        };
        let (mut decision, document_path) = match body {
            Some(body) => match submit(self.client(), &self.inner.recall, &session, &body, "exit_plan_mode (MCP)").await {
                Ok(s) => (s.decision, s.document_path),
                Err(e) => return failed(e),
            },
            None => match self.client().decision(&session, Duration::ZERO).await {
                Ok(Some(d)) => (d, None),
                Ok(None) => return Err(invalid("plan", "required: this session has no proposal to wait for yet")),
                Err(e) => return failed(e),
            },
        };
        if !decision.is_final() {
            match self.client().wait_decision(&session, wait).await {
                Ok(Some(d)) => decision = d,
                Ok(None) | Err(AgentError::Timeout { .. }) => {}
                Err(e) => return failed(e),
            }
        }
        if decision.is_final() {
            // Delivered here: no other path (a channel, the next prompt)
            // delivers this decision again. Best effort: the decision stands.
            let _ = self.client().take_injection(&session).await;
        }
        let note = decision_note(&decision);
        let mut value = json!(decision);
        if let Some(p) = document_path {
            value["document_path"] = json!(p);
        }
        Ok(result(value, Some(note)))
    }

    async fn run_ask_user_question(&self, args: AskArgs) -> Result<CallToolResult, McpError> {
        let session = self.session(args.session_id)?;
        let wait = wait_arg(args.wait_seconds, self.inner.wait)?;
        let question_id = match (args.question_id, args.question) {
            (Some(id), _) => id,
            (None, None) => return Err(invalid("question", "required unless `question_id` is given")),
            (None, Some(q)) if q.trim().is_empty() => return Err(invalid("question", "must not be empty")),
            (None, Some(question)) => {
                // The same question asked again while it waits is the same question.
                let open = match self.client().status(&session).await {
                    Ok(status) => status.pending_question.filter(|p| p.question == question).map(|p| p.question_id),
                    Err(e) => return failed(e),
                };
                match open {
                    Some(id) => id,
                    None => {
                        let body = QuestionBody { question, options: args.options, allow_freetext: args.allow_freetext };
                        match self.client().ask(&session, &body).await {
                            Ok(id) => id,
                            Err(e) => return failed(e),
                        }
                    }
                }
            }
        };
        let answer = match self.client().question(&session, &question_id, wait).await {
            Ok(a) => a,
            Err(AgentError::Api { status: 404, .. }) => {
                return Err(invalid("question_id", format!("no question {question_id} in this session")))
            }
            Err(e) => return failed(e),
        };
        let note = match answer.status {
            QuestionStatus::Answered => format!("answered by {}", answer.answered_by.as_deref().unwrap_or("a human")),
            QuestionStatus::Pending => {
                format!("pending: no answer yet; call ask_user_question again with question_id {question_id} to keep waiting")
            }
            // Only permission requests expire; an agent's own question waits.
            QuestionStatus::Expired => "expired: nobody answered".to_string(),
        };
        let mut value = json!(answer);
        value["question_id"] = json!(question_id);
        if answer.status == QuestionStatus::Answered {
            // The answer is delivered here, so it is taken; anything else
            // that was waiting with it (a decision) is handed over too.
            if let Ok(Some(text)) = self.client().take_injection(&session).await {
                value["injection"] = json!(text);
            }
        }
        Ok(result(value, Some(note)))
    }

    async fn run_plan_mode_status(&self, args: SessionArgs) -> Result<CallToolResult, McpError> {
        let session = self.session(args.session_id)?;
        match self.client().status(&session).await {
            Ok(status) => Ok(result(json!(status), None)),
            Err(e) => failed(e),
        }
    }

    async fn run_check_tool(&self, args: CheckToolArgs) -> Result<CallToolResult, McpError> {
        let session = self.session(args.session_id)?;
        if args.tool.trim().is_empty() {
            return Err(invalid("tool", "must not be empty"));
        }
        match self.client().gate(&session, &args.tool, &Value::Object(args.input)).await {
            Ok(verdict) => Ok(result(json!(verdict), None)),
            Err(e) => failed(e),
        }
    }

    async fn run_take_decision_injection(&self, args: SessionArgs) -> Result<CallToolResult, McpError> {
        let session = self.session(args.session_id)?;
        match self.client().take_injection(&session).await {
            Ok(injection) => Ok(result(json!({"injection": injection}), None)),
            Err(e) => failed(e),
        }
    }
}

// The router built in `new` (the plan tools plus the namespace tools), not
// the macro's default `Self::tool_router()`, which knows only the first.
#[tool_handler(router = self.tool_router)]
impl ServerHandler for PlangateMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("plangate", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "plangate puts a human between your plan and your first change. Call enter_plan_mode, explore with read-only \
                 tools (check_tool tells you what passes), keep the steps current with update_plan, then exit_plan_mode with \
                 your plan and wait for the decision. Execute only an approved plan; on changes requested, revise and propose again.",
            )
    }
}

/// Serve MCP on stdin/stdout until the client closes the connection.
pub async fn serve_stdio() -> Result<(), String> {
    let server = PlangateMcp::from_env().map_err(|e| e.to_string())?;
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| format!("MCP handshake failed: {e}"))?;
    running.waiting().await.map_err(|e| format!("MCP server stopped: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_lists_every_tool_the_router_serves() {
        let router = PlangateMcp::tool_router() + PlangateMcp::namespace_router();
        let mut served: Vec<String> = router.list_all().into_iter().map(|t| t.name.to_string()).collect();
        served.sort();
        let mut listed: Vec<String> = TOOLS.iter().map(|t| t.to_string()).collect();
        listed.sort();
        assert_eq!(served, listed);
    }
}
