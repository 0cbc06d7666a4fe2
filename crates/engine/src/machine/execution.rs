//! Counting what runs under an approval, and sealing the receipt when the
//! plan ends ([`crate::ran`]).

use super::{audit, require_agent, Actor, Ctx, Effect, Refusal, Transition};
use crate::amendment;
use crate::ran::{CallOutcome, Ending, Execution};

/// The audit action of a sealed receipt; its detail ends with the hash.
pub const RECEIPT_ACTION: &str = "receipt";

/// [`crate::Command::Called`]: count a call of the executing plan. Outside
/// an execution nothing changes (the gate's own answer stands either way).
pub(super) fn called(t: &mut Transition, actor: &Actor, tool: &str, shown: &str, outcome: CallOutcome, ctx: &Ctx) -> Result<(), Refusal> {
    require_agent(actor)?;
    if !amendment::executing(&t.state.session) {
        t.changed = false;
        return Ok(());
    }
    tally(t, ctx);
    let session = &mut t.state.session;
    if let Some(execution) = session.execution.as_mut() {
        execution.record(&session.steps, tool, shown, outcome, ctx.now);
    }
    Ok(())
}

/// The executing plan's tally, begun on first use, with the latest
/// approved version among the approvals it ran under.
fn tally<'t>(t: &'t mut Transition, ctx: &Ctx) -> &'t mut Execution {
    use crate::model::DecisionStatus::{Approved, Edited};
    let latest = t.state.latest.as_ref();
    let approved = latest.filter(|p| matches!(p.status, Approved | Edited)).map(|p| p.approval_id);
    // While an amendment waits, the plan it amends is what runs.
    let first = approved.or_else(|| latest.and_then(|p| p.amends.as_ref()?.of_approval)).or(latest.map(|p| p.approval_id));
    let session = &mut t.state.session;
    let execution = session.execution.get_or_insert_with(|| Execution::new(first.unwrap_or(crate::ApprovalId([0; 16])), ctx.now));
    if let Some(id) = approved.filter(|id| !execution.approvals.contains(id)) {
        execution.approvals.push(id);
    }
    execution
}

/// An amendment was proposed while the plan runs: the receipt names it.
pub(super) fn note_amendment(t: &mut Transition, version: u32, ctx: &Ctx) {
    if amendment::executing(&t.state.session) {
        tally(t, ctx).amendments.push(version);
    }
}

/// The executing plan ended: seal its tally onto the latest proposal,
/// re-render its cards, append the receipt to its document and enter the
/// receipt's hash in the audit.
pub(super) fn seal(t: &mut Transition, actor: &Actor, ending: Ending, ctx: &Ctx) {
    if t.state.latest.is_none() {
        t.state.session.execution = None;
        return;
    }
    tally(t, ctx);
    let Some(execution) = t.state.session.execution.take() else { return };
    let ran = execution.seal(ending, ctx.now);
    let Some(latest) = t.state.latest.as_mut() else { return };
    let (approval_id, version) = (latest.approval_id, latest.version);
    let (line, detail) = (ran.document_line(), format!("{} ({})", ran.summary(), ran.hash));
    // Every approved version it ran under shows it ([`Proposal::what_ran`](crate::model::Proposal::what_ran)).
    let cards: Vec<_> = std::iter::once(approval_id).chain(ran.execution.approvals.iter().copied()).collect();
    latest.ran = Some(ran);
    for id in cards {
        if !t.effects.contains(&Effect::UpdateCards { approval_id: id }) {
            t.effects.push(Effect::UpdateCards { approval_id: id });
        }
    }
    t.effects.push(Effect::AppendReceipt { approval_id, text: line });
    audit(t, actor, RECEIPT_ACTION, Some((approval_id, version)), detail, ctx);
}
