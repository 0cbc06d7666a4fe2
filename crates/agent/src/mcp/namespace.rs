//! The MCP tools of cross-session step namespaces: `get_namespace` and
//! `update_namespace` (`GET`/`POST /v1/namespaces/{name}`). A namespace is
//! one step list shared by an agent's sessions (a lead and its subagents),
//! and by other agents when the server's `[namespaces.<name>]` names them.
//!
//! A separate router ([`PlangateMcp::namespace_router`]), merged into the
//! server's in [`PlangateMcp::new`].

use super::{failed, invalid, result, tool_errors, Args, PlangateMcp};
use plangate_engine::StepUpdate;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData as McpError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetNamespaceArgs {
    /// The namespace: 1–64 characters of letters, digits, `-`, `_` and inner `.`.
    pub name: String,
    /// Not needed to read; inside Claude Code plangate's hook adds it.
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateNamespaceArgs {
    /// The namespace: 1–64 characters of letters, digits, `-`, `_` and inner `.`.
    pub name: String,
    /// Steps to merge, joined by step text: a known step changes only in the
    /// fields given, a new one is appended. Every rule is checked on the result.
    pub steps: Vec<StepUpdate>,
    /// The session recorded as the steps' author; defaults to this server's session.
    #[serde(default)]
    pub session_id: Option<String>,
}

#[tool_router(router = namespace_router, vis = "pub(super)")]
impl PlangateMcp {
    #[tool(
        description = "Read a step list shared across sessions (and with the agents plangate's config names together): {name, steps: [Step + updated_by, updated_at]}."
    )]
    async fn get_namespace(&self, Parameters(Args(args)): Parameters<Args<GetNamespaceArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_get_namespace(args).await)
    }

    #[tool(
        description = "Merge steps into a shared step list by step text (a known step changes only in the fields you give). Rules: at most one step in_progress; no duplicate step text; a step is completed only once verified_criteria cover its acceptance_criteria."
    )]
    async fn update_namespace(&self, Parameters(Args(args)): Parameters<Args<UpdateNamespaceArgs>>) -> Result<CallToolResult, McpError> {
        tool_errors(self.run_update_namespace(args).await)
    }
}

impl PlangateMcp {
    async fn run_get_namespace(&self, args: GetNamespaceArgs) -> Result<CallToolResult, McpError> {
        plangate_engine::namespace::validate_name(&args.name).map_err(|e| invalid("name", e))?;
        // A read needs no session, but a malformed one is still an error.
        if args.session_id.is_some() {
            self.session(args.session_id)?;
        }
        match self.client().namespace(&args.name).await {
            Ok(ns) => Ok(result(json!(ns), None)),
            Err(e) => failed(e),
        }
    }

    async fn run_update_namespace(&self, args: UpdateNamespaceArgs) -> Result<CallToolResult, McpError> {
        plangate_engine::namespace::validate_name(&args.name).map_err(|e| invalid("name", e))?;
        let session = self.session(args.session_id)?;
        match self.client().update_namespace(&args.name, &session, &args.steps).await {
            Ok(ns) => Ok(result(json!(ns), None)),
            Err(e) => failed(e),
        }
    }
}
