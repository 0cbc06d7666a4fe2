//! Hand-built [`Card`]s for the channel crates' render and adapter tests:
//! a card as the engine's builder would make it, without a proposal and a
//! clock to make it from, so a test states only what it renders.

use plangate_engine::card::{Card, CardStep};
use plangate_engine::{ApprovalId, DecisionStatus};

/// A pending v1 card of `id` titled `title` with `steps` (marked `○`) and
/// the four commands of an open card; no summary, risks or verification.
/// Tests set what else they render with struct update syntax.
pub fn pending(id: ApprovalId, title: &str, steps: &[&str]) -> Card {
    let short_ref = format!("#{}", id.short());
    Card {
        approval_id: id,
        short_ref: short_ref.clone(),
        title: title.into(),
        context: "demo/s1 · v1 · just now".into(),
        summary: None,
        steps: steps.iter().enumerate().map(|(i, s)| CardStep { number: i + 1, mark: "○", text: s.to_string() }).collect(),
        risks: vec![],
        assumptions: vec![],
        verification: vec![],
        subagents: vec![],
        progress: vec![],
        agent: vec![],
        edit: None,
        changes: None,
        excluded: vec![],
        warning: None,
        receipt: None,
        commands: vec![
            format!("/plan accept {short_ref}"),
            format!("/plan changes {short_ref} <what to change>"),
            format!("/plan cancel {short_ref}"),
            format!("/plan view {short_ref}"),
        ],
        version: 1,
        status: DecisionStatus::Pending,
        link: None,
        ran: Vec::new(),
    }
}

/// `card` once decided: `status`, the `receipt` line, and no commands left.
pub fn decided(card: &Card, status: DecisionStatus, receipt: &str) -> Card {
    Card { receipt: Some(receipt.into()), commands: vec![], status, ..card.clone() }
}
