//! Relaying a harness's permission dialog to the approvers' phones: what
//! both hooks (`PermissionRequest` of Claude Code and of Codex) do once the
//! gate let the call through.
//!
//! `POST /v1/sessions/{id}/permissions` answers at once from plangate's
//! rules (`allow`, `deny`), says the dialog stays at the terminal
//! (`local`), or posts a card (`ask`); then the hook waits for a person,
//! chaining long-polls, for at most `PLANGATE_HOOK_WAIT`. Whatever goes
//! wrong after the gate said yes — plangate unreachable, nobody answering,
//! a malformed answer — is [`Relayed::Terminal`]: no decision, so the
//! harness asks at its own terminal. Never an allow that no person or rule
//! gave.

use crate::client::{AgentError, Client};
use serde_json::Value;
use std::time::Duration;

/// What the hook tells its harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relayed {
    /// A person (or a rule) allowed this call.
    Allow { reason: String },
    /// A person (or a rule) denied it; the reason reaches the model.
    Deny { reason: String },
    /// No decision: the harness's own dialog asks at the terminal.
    Terminal { why: String },
}

/// Relay one permission dialog and wait up to `wait` for its answer.
pub async fn relay(
    client: &Client,
    session_id: &str,
    tool: &str,
    input: &Value,
    paths: Option<Vec<plangate_engine::scope::Target>>,
    wait: Duration,
) -> Relayed {
    let asked = match client.ask_permission(session_id, tool, input, paths).await {
        Ok(v) => v,
        Err(e) => return Relayed::Terminal { why: format!("plangate could not relay it ({e})") },
    };
    let reason = asked["reason"].as_str().unwrap_or_default().to_string();
    let question_id = match asked["decision"].as_str() {
        Some("allow") => return Relayed::Allow { reason },
        Some("deny") => return Relayed::Deny { reason: format!("plangate: {reason}") },
        Some("ask") => match asked["question_id"].as_str() {
            Some(id) => id.to_string(),
            None => return Relayed::Terminal { why: "plangate answered without a request id".to_string() },
        },
        _ => return Relayed::Terminal { why: if reason.is_empty() { "plangate relays nothing here".to_string() } else { reason } },
    };
    match answer(client, session_id, &question_id, wait).await {
        Ok(Some(relayed)) => relayed,
        outcome => {
            // Nobody answered (or plangate went away): the card says it
            // expired, and the terminal asks. Best effort.
            let _ = client.expire_permission(session_id, &question_id).await;
            let why = match outcome {
                Err(e) => format!("plangate stopped answering ({e})"),
                _ => format!("nobody answered within {} s", wait.as_secs()),
            };
            Relayed::Terminal { why }
        }
    }
}

/// Wait for request `question_id`'s answer, chaining long-polls until
/// `wait` is over. `None`: no answer in time (or it expired).
async fn answer(client: &Client, session_id: &str, question_id: &str, wait: Duration) -> Result<Option<Relayed>, AgentError> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let state = client.permission(session_id, question_id, left).await?;
        match state["status"].as_str() {
            Some("answered") => return Ok(Some(of_outcome(&state))),
            Some("expired") => return Ok(None),
            _ if left.is_zero() || tokio::time::Instant::now() >= deadline => return Ok(None),
            _ => {}
        }
    }
}

/// A person's answer as the harness hears it.
fn of_outcome(state: &Value) -> Relayed {
    let by = state["answered_by"].as_str().unwrap_or("an approver");
    let answer = &state["outcome"]["answer"];
    match answer["answer"].as_str() {
        Some("allow") => Relayed::Allow { reason: format!("allowed by {by} ({})", answer["grade"].as_str().unwrap_or("once")) },
        Some("deny") => Relayed::Deny {
            reason: match answer["reason"].as_str() {
                Some(r) => format!("plangate: {by} denied this: {r}"),
                None => format!("plangate: {by} denied this."),
            },
        },
        // Unknown shape: no decision, never an allow.
        _ => Relayed::Terminal { why: "plangate's answer was not understood".to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_become_decisions_and_anything_else_is_no_decision() {
        let answered = |answer: Value| json!({"status": "answered", "answered_by": "telegram:@alice", "outcome": {"outcome": "answered", "answer": answer}});
        assert_eq!(
            of_outcome(&answered(json!({"answer": "allow", "grade": "session"}))),
            Relayed::Allow { reason: "allowed by telegram:@alice (session)".into() }
        );
        assert_eq!(
            of_outcome(&answered(json!({"answer": "deny", "reason": "use the staging tag"}))),
            Relayed::Deny { reason: "plangate: telegram:@alice denied this: use the staging tag".into() }
        );
        assert!(matches!(of_outcome(&answered(json!({"answer": "maybe"}))), Relayed::Terminal { .. }));
        assert!(matches!(of_outcome(&json!({})), Relayed::Terminal { .. }));
    }
}
