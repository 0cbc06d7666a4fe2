//! The audit as a policy reads it, and its replay through a candidate
//! policy (`plangate policy test`).
//!
//! The server records each routed decision with its facts: `gate_call` for
//! a risky call during an approved plan, `plan_routed` for a proposal; the
//! record's `detail` is the JSON of [`CallRecord`] or [`PlanRecord`]. A
//! replay routes the same facts through another policy with the same
//! functions the server uses ([`crate::call_verdict`],
//! [`crate::plan_verdict`]) and lists every decision that would change.

use crate::route::{call_verdict, plan_verdict, CallVerdict, Facts, PlanVerdict};
use crate::Policy;
use plangate_gate::classes::RiskClass;
use serde::{Deserialize, Serialize};

/// The audit action of a routed call.
pub const CALL_ACTION: &str = "gate_call";
/// The audit action of a routed proposal.
pub const PLAN_ACTION: &str = "plan_routed";
/// How much of a command a record keeps (enough to recognise it in a table).
pub const SHOWN_CHARS: usize = 200;

/// A risky call as the gate decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    pub facts: Facts,
    /// A person's grant covered exactly this call ("for this session",
    /// "always", or the configuration's allow rules).
    #[serde(default)]
    pub granted: bool,
    pub verdict: CallVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The command (or tool), cut to [`SHOWN_CHARS`].
    pub shown: String,
}

/// A proposal as it was routed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub facts: Facts,
    pub title: String,
    pub verdict: PlanVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The rule that asked for passkey step-up on it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_up: Option<String>,
}

/// One decision of either kind, read back from an audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    Call(CallRecord),
    Plan(PlanRecord),
}

impl Recorded {
    /// The record's decision, or `None` for an action a policy does not
    /// route (or a detail that is not one of ours).
    pub fn read(action: &str, detail: &str) -> Option<Recorded> {
        match action {
            CALL_ACTION => serde_json::from_str(detail).ok().map(Recorded::Call),
            PLAN_ACTION => serde_json::from_str(detail).ok().map(Recorded::Plan),
            _ => None,
        }
    }
}

impl CallRecord {
    /// The record's detail text.
    pub fn detail(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl PlanRecord {
    pub fn detail(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Cut a command for a record.
pub fn shown(command: &str) -> String {
    let one_line: String = command.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match one_line.char_indices().nth(SHOWN_CHARS) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// One audit record, as much of it as a replay needs.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Milliseconds since the epoch.
    pub at: i64,
    pub session_id: &'a str,
    pub action: &'a str,
    pub detail: &'a str,
}

/// A decision that a candidate policy would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub at: i64,
    pub kind: &'static str,
    pub agent: String,
    pub session_id: String,
    /// The command, or the plan's title.
    pub what: String,
    pub classes: Vec<RiskClass>,
    pub was: String,
    pub was_rule: Option<String>,
    pub would_be: String,
    pub rule: Option<String>,
}

/// What a replay found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replay {
    /// Routed decisions read (calls and plans).
    pub decisions: usize,
    pub changes: Vec<Change>,
}

/// Route every recorded decision through `policy` and keep those whose
/// outcome differs (a different rule with the same outcome is no change).
pub fn replay<'a>(policy: &Policy, entries: impl IntoIterator<Item = Entry<'a>>) -> Replay {
    let mut out = Replay::default();
    for entry in entries {
        let Some(recorded) = Recorded::read(entry.action, entry.detail) else { continue };
        out.decisions += 1;
        if let Some(change) = changed(policy, &entry, recorded) {
            out.changes.push(change);
        }
    }
    out
}

fn changed(policy: &Policy, entry: &Entry<'_>, recorded: Recorded) -> Option<Change> {
    let (facts, what, kind, was, was_rule, would_be, rule) = match recorded {
        Recorded::Call(c) => {
            let route = policy.route_call(&c.facts);
            let now = call_verdict(route.map(|r| r.action), !c.facts.undeclared.is_empty(), c.granted);
            if now == c.verdict {
                return None;
            }
            let rule = route.map(|r| r.rule.id.clone());
            (c.facts, c.shown, "call", c.verdict.as_str().to_string(), c.rule, now.as_str().to_string(), rule)
        }
        Recorded::Plan(p) => {
            let route = policy.route_plan(&p.facts);
            let now = plan_verdict(route.map(|r| r.action));
            if now == p.verdict {
                return None;
            }
            let rule = route.map(|r| r.rule.id.clone());
            (p.facts, p.title, "plan", p.verdict.to_string(), p.rule, now.to_string(), rule)
        }
    };
    Some(Change {
        at: entry.at,
        kind,
        agent: facts.agent,
        session_id: entry.session_id.to_string(),
        what,
        classes: facts.classes,
        was,
        was_rule,
        would_be,
        rule,
    })
}
