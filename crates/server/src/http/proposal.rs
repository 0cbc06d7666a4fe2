//! The body of `POST /v1/sessions/{session_id}/proposals`, typed: a
//! structured Plan or `{"markdown", "title"?}`, beside the optional
//! `requested_by`, `harness` and `project`. Read from the JSON in a fixed
//! order (the object, `requested_by`, `harness`, `project`, who asked, the
//! plan), so each mistake is answered as the API always has.

use super::extract::parse_json;
use super::ApiError;
use plangate_engine::{plan, Plan, Refusal};
use serde::Deserialize;
use serde_json::Value;

/// A proposal as the handler uses it.
pub(super) struct ProposalBody {
    pub plan: Plan,
    /// The markdown it was written in, for a markdown proposal.
    pub markdown: Option<String>,
    /// Who asked for the work (see [`requester`]).
    pub requested_by: Option<String>,
    pub harness: plangate_engine::Harness,
    pub project: Option<plangate_engine::Project>,
}

impl ProposalBody {
    /// Read `body`; `configured` is the requester the agent's token config
    /// names, if any.
    pub(super) fn parse(body: Value, configured: Option<&str>) -> Result<ProposalBody, ApiError> {
        if !body.is_object() {
            return Err(ApiError::invalid_request("the body must be a Plan object or {\"markdown\": …}"));
        }
        let mut body = body;
        let named = take_requested_by(&mut body)?;
        let harness = take_harness(&mut body)?;
        let project = take_project(&mut body)?;
        let requested_by = requester(configured, named)?;
        let (plan, markdown) = parse_proposal(body)?;
        Ok(ProposalBody { plan, markdown, requested_by, harness, project })
    }
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

/// Take the proposal body's optional `requested_by` (a string) out of it,
/// so what remains is a Plan or a markdown proposal.
fn take_requested_by(body: &mut Value) -> Result<Option<String>, ApiError> {
    match body.as_object_mut().and_then(|o| o.remove("requested_by")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid_request("requested_by must be a string like \"slack:U0123456789\"")),
    }
}

/// Take the proposal body's optional `harness` (`"api"`, `"claude_code"`,
/// `"codex"`) out of it: which harness proposes, so the texts its model
/// reads name its own tools. Absent means `api`.
fn take_harness(body: &mut Value) -> Result<plangate_engine::Harness, ApiError> {
    match body.as_object_mut().and_then(|o| o.remove("harness")) {
        None | Some(Value::Null) => Ok(plangate_engine::Harness::Api),
        Some(v) => {
            serde_json::from_value(v).map_err(|_| ApiError::invalid_request("harness must be one of \"api\", \"claude_code\", \"codex\""))
        }
    }
}

/// Take the proposal body's optional `project` (`{"name", "branch",
/// "host"}`: where the agent runs) out of it; the engine checks its parts.
fn take_project(body: &mut Value) -> Result<Option<plangate_engine::Project>, ApiError> {
    match body.as_object_mut().and_then(|o| o.remove("project")) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v).map(Some).map_err(|e| {
            ApiError::invalid_request(format!(
                "project must be an object {{\"name\": string, \"branch\": string, \"host\": string}} (branch and host optional): {e}"
            ))
        }),
    }
}

/// Who asked for the work: the agent's token config wins, and a body that
/// names someone else is refused (an agent must not be able to pick who
/// counts as "self" for separation of duties when its operator fixed it);
/// else the body's `requested_by` (which the CLI, hook and MCP server fill
/// from `PLANGATE_REQUESTED_BY`); else nobody.
fn requester(configured: Option<&str>, named: Option<String>) -> Result<Option<String>, ApiError> {
    match (configured, named) {
        (Some(fixed), Some(named)) if named.trim() != fixed => Err(ApiError::invalid_request(format!(
            "this agent's token names its requester ({fixed}); a proposal cannot name another ({:?}): drop requested_by",
            named.chars().take(60).collect::<String>()
        ))),
        (Some(fixed), _) => Ok(Some(fixed.to_string())),
        (None, named) => Ok(named),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The token's requester wins and cannot be contradicted; the body's is
    /// used otherwise.
    #[test]
    fn requested_by_precedence() {
        assert_eq!(requester(Some("slack:U1"), None).ok().flatten().as_deref(), Some("slack:U1"));
        assert_eq!(requester(Some("slack:U1"), Some("slack:U1".into())).ok().flatten().as_deref(), Some("slack:U1"));
        assert!(requester(Some("slack:U1"), Some("slack:U2".into())).is_err());
        assert_eq!(requester(None, Some("slack:U2".into())).ok().flatten().as_deref(), Some("slack:U2"));
        assert_eq!(requester(None, None).ok().flatten(), None);
        let mut body = serde_json::json!({"title": "t", "requested_by": "slack:U2"});
        assert_eq!(take_requested_by(&mut body).ok().flatten().as_deref(), Some("slack:U2"));
        assert_eq!(body, serde_json::json!({"title": "t"}));
        assert!(take_requested_by(&mut serde_json::json!({"requested_by": 5})).is_err());
    }
}
