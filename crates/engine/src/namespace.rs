//! Cross-session plan namespaces (the seed's PlanStore): several sessions
//! (a lead agent and its subagents, say) share one step list, merged by step
//! text, each step remembering which session last touched it and when.

use crate::ids::Timestamp;
use crate::plan::{self, PlanError, Step, StepUpdate};
use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceStep {
    #[serde(flatten)]
    pub step: Step,
    pub updated_by: String,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Namespace {
    pub steps: Vec<NamespaceStep>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NamespaceError {
    #[error("namespace names are 1–64 characters of letters, digits, `-`, `_` and inner `.`; no `..`, `/`, `\\`, absolute paths or control characters")]
    InvalidName,
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// Namespace names end up in keys and, for exports, file names: refuse
/// anything that could walk a path.
pub fn validate_name(name: &str) -> Result<(), NamespaceError> {
    let ok = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..");
    if ok {
        Ok(())
    } else {
        Err(NamespaceError::InvalidName)
    }
}

/// Merge `update` from `session` into the namespace by step text (each update
/// patches the fields it carries, [`StepUpdate`]) and re-check every rule on
/// the result. Untouched steps keep their author and time.
pub fn merge(ns: &Namespace, update: Vec<StepUpdate>, session: &str, now: Timestamp) -> Result<Namespace, NamespaceError> {
    let current: Vec<Step> = ns.steps.iter().map(|s| s.step.clone()).collect();
    let touched: Vec<String> = update.iter().map(|s| s.step.trim().to_string()).collect();
    let merged = plan::update_steps(&current, update, true)?;
    let steps = merged
        .into_iter()
        .map(|step| {
            let text = step.step.trim().to_string();
            match ns.steps.iter().find(|s| s.step.step.trim() == text) {
                Some(old) if !touched.contains(&text) => old.clone(),
                _ => NamespaceStep { step, updated_by: session.to_string(), updated_at: now },
            }
        })
        .collect();
    Ok(Namespace { steps })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::StepStatus;

    #[test]
    fn names() {
        assert!(validate_name("team.alpha-1").is_ok());
        for bad in ["", "..", "a/b", "/abs", "a\\b", "a..b", ".hidden", "x\u{7}", &"a".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn merge_tracks_authors() {
        let pending = |text: &str| StepUpdate::from(Step::pending(text));
        let ns = merge(&Namespace::default(), vec![pending("a"), pending("b")], "s1", Timestamp(1)).unwrap();
        let started = StepUpdate::status("b", StepStatus::InProgress);
        let ns = merge(&ns, vec![started, pending("c")], "s2", Timestamp(2)).unwrap();
        let who: Vec<_> = ns.steps.iter().map(|s| (s.step.step.as_str(), s.updated_by.as_str())).collect();
        assert_eq!(who, vec![("a", "s1"), ("b", "s2"), ("c", "s2")]);
        let two = vec![StepUpdate::status("a", StepStatus::InProgress)];
        assert!(matches!(merge(&ns, two, "s3", Timestamp(3)), Err(NamespaceError::Plan(_))));
    }
}
