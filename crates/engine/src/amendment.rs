//! Staying within the approved plan: the steps a human approved are locked,
//! and steps added while executing are an amendment that waits for people.
//!
//! An approval binds a content hash, but the agent keeps a live step list
//! (`update_plan`) while it executes. If that list could be rewritten, an
//! approval of "Fix the typo" would be a key to "Drop the production
//! database". So while a session executes, the texts of the approved steps
//! are the reference ([`crate::model::Session::approved_steps`]):
//!
//! * changing a step's status, active form or criteria is free;
//! * rewriting or removing an approved step is refused
//!   ([`crate::Refusal::ApprovedStepsLocked`]): a different plan is a new
//!   version, proposed from plan mode;
//! * a step that is not in the reference makes the update an
//!   **amendment**: a new version of the plan (its own approval id, card,
//!   reminders and timeout) decided like any proposal, through
//!   [`crate::authority::check`] and the round's quorum. While it waits the
//!   gate denies mutations; approved, its steps join the reference;
//!   rejected or timed out, they are dropped and the approved plan goes on.
//!
//! The rules here are pure functions of the step lists; the transitions are
//! in [`crate::machine`].

use crate::model::{ApprovalState, DecisionStatus, Mode, Proposal, Session, State};
use crate::plan::{Plan, Step};
use crate::refusal::Refusal;

pub use crate::model::amendment::{Amendment, Policy};

/// What an update of an executing session's step list amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Within what was approved (or what a pending amendment already asks for).
    Within,
    /// New steps: an amendment asking for them (all the steps beyond the
    /// approved ones, a pending amendment's included).
    Amend(Vec<Step>),
}

/// Whether the session executes an approved plan, where the lock holds.
pub fn executing(session: &Session) -> bool {
    session.mode == Mode::Normal && matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited)
}

/// The approved step texts of an executing session. Sessions approved
/// before the lock existed carry none: their latest approved plan is the
/// reference then.
pub fn reference(state: &State) -> Vec<String> {
    if !state.session.approved_steps.is_empty() {
        return state.session.approved_steps.clone();
    }
    match &state.latest {
        Some(p) if matches!(p.status, DecisionStatus::Approved | DecisionStatus::Edited) => texts(&p.approved_plan().steps),
        _ => Vec::new(),
    }
}

/// The paths a new amendment asks to widen the scope by: those of a
/// pending amendment it supersedes, then `new`, each once.
pub fn widening(state: &State, new: Vec<String>) -> Vec<String> {
    let mut all: Vec<String> = pending(state).and_then(|p| p.amends.as_ref()).map(|a| a.widen.clone()).unwrap_or_default();
    for path in new {
        if !all.contains(&path) {
            all.push(path);
        }
    }
    all
}

/// The scope of `globs` widened by the files `widen`, each as the glob
/// that matches just it; `None` when both are empty (no scope declared).
pub fn scope_of(globs: &[String], widen: &[String]) -> Option<crate::scope::Scope> {
    let mut paths = globs.to_vec();
    paths.extend(widen.iter().map(|p| crate::scope::literal(p)).filter(|g| !globs.contains(g)));
    (!paths.is_empty()).then_some(crate::scope::Scope { paths })
}

/// The trimmed texts of `steps`: how steps are matched, as a merge matches them.
pub fn texts(steps: &[Step]) -> Vec<String> {
    steps.iter().map(|s| s.step.trim().to_string()).collect()
}

/// The session's latest proposal when it is an amendment still waiting.
pub fn pending(state: &State) -> Option<&Proposal> {
    state.latest.as_ref().filter(|p| p.amends.is_some() && p.status == DecisionStatus::Pending)
}

/// What the audit adds to a flagged amendment's record.
pub const FLAGGED_AUDIT: &str = "added after approval (amendments = \"flag\"): let through without a decision, approvers notified";

/// Let `proposal`, a new amendment, through under [`Policy::Flag`]: it is
/// on record as decided (nothing waits), by nobody, and its steps join the
/// session's flagged ones, never the approved reference.
pub fn flag(proposal: &mut Proposal, session: &mut Session, now: crate::ids::Timestamp) {
    proposal.status = DecisionStatus::Approved;
    proposal.decided_by = Some("nobody (amendments = \"flag\")".to_string());
    proposal.decided_at = Some(now);
    if let Some(a) = proposal.amends.as_mut() {
        a.flagged = true;
        session.flagged_steps.extend(texts(&a.added));
    }
}

/// Forget what the last approval locked: a new version, plan mode, a
/// release or a cancel starts over.
pub fn reset(session: &mut Session) {
    session.approved_steps.clear();
    session.flagged_steps.clear();
    session.scope.clear();
    session.scope_asked.clear();
}

/// Make what was just approved the reference: the session's step texts
/// and `approved`'s scope (a person's edit that says nothing of the scope
/// keeps the `proposed` one: an edit never drops a boundary).
pub fn lock(session: &mut Session, approved: &Plan, proposed: &Plan) {
    session.approved_steps = texts(&session.steps);
    session.scope = approved.scope.as_ref().or(proposed.scope.as_ref()).map(|s| s.paths.clone()).unwrap_or_default();
}

/// Check `updated`, the step list the agent's update would leave, against
/// the approved `reference` and a `pending` amendment. Steps already let
/// through under [`Policy::Flag`] (`flagged`) are neither locked nor new.
pub fn check(reference: &[String], flagged: &[String], pending: Option<&Proposal>, updated: &[Step]) -> Result<Update, Refusal> {
    let now = texts(updated);
    let missing: Vec<&String> = reference.iter().filter(|r| !now.contains(r)).collect();
    if !missing.is_empty() {
        let quoted: Vec<String> = missing.iter().map(|m| format!("{m:?}")).collect();
        return Err(Refusal::ApprovedStepsLocked(format!(
            "A human approved {} and it cannot be rewritten or removed while the plan executes. You may change a step's status, \
             active_form and criteria, or add steps (an amendment a human must approve); to change what the plan does, enter plan \
             mode and propose a new version instead.",
            match quoted.as_slice() {
                [one] => format!("the step {one}"),
                many => format!("the steps {}", many.join(", ")),
            }
        )));
    }
    let added: Vec<Step> = updated
        .iter()
        .filter(|s| {
            let text = s.step.trim().to_string();
            !reference.contains(&text) && !flagged.contains(&text)
        })
        .cloned()
        .collect();
    let asked: Vec<String> = pending.and_then(|p| p.amends.as_ref()).map(|a| texts(&a.added)).unwrap_or_default();
    match (pending, added.is_empty()) {
        (_, false) if texts(&added) == asked => Ok(Update::Within),
        (Some(p), true) if !asked.is_empty() => Err(Refusal::InvalidState(format!(
            "amendment v{} ({} step(s) added after approval) waits for a human's decision; its steps stay until it is decided",
            p.version,
            asked.len()
        ))),
        (_, true) => Ok(Update::Within),
        (_, false) => Ok(Update::Amend(added)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(texts: &[&str]) -> Vec<Step> {
        texts.iter().map(|t| Step::pending(*t)).collect()
    }

    #[test]
    fn approved_steps_may_not_be_rewritten_or_removed() {
        let reference = vec!["Fix the typo in README".to_string()];
        for updated in [steps(&["Drop the production database", "Force-push main"]), steps(&[]), steps(&["Fix the typo in README!"])] {
            match check(&reference, &[], None, &updated) {
                Err(Refusal::ApprovedStepsLocked(m)) => {
                    assert!(m.contains("\"Fix the typo in README\"") && m.contains("propose a new version"), "{m}")
                }
                other => panic!("{updated:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn status_changes_are_within_and_new_steps_amend() {
        let reference = vec!["Read".to_string(), "Write".to_string()];
        let mut moved = steps(&["Write", "Read"]);
        moved[0].status = crate::plan::StepStatus::Completed;
        assert_eq!(check(&reference, &[], None, &moved), Ok(Update::Within));
        let more = steps(&["Read", "Write", "Rotate secrets"]);
        assert_eq!(check(&reference, &[], None, &more), Ok(Update::Amend(steps(&["Rotate secrets"]))));
    }
}
