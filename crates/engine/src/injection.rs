//! The `[PLAN_DECISION]` texts an agent reads on its next turn.
//!
//! Everything a human or the agent wrote is passed through
//! [`sanitize_for_injection`](crate::text::sanitize_for_injection) and quoted
//! line by line, so it can neither close the envelope nor forge a decision.

use crate::harness::Harness;
use crate::model::Proposal;
use crate::plan::Plan;
use crate::text::sanitize_for_injection;

fn header(status: &str) -> String {
    format!("[PLAN_DECISION]: {status}\n")
}

const FOOTER: &str = "\n[/PLAN_DECISION]";

fn quote(text: &str, h: Harness) -> String {
    let prefix = h.quote_prefix();
    sanitize_for_injection(text).lines().map(|l| format!("{prefix}{l}")).collect::<Vec<_>>().join("\n")
}

/// A decider's display name comes from a chat platform or the operator's
/// request: text a person wrote, so it is sanitized like feedback.
fn name(who: &str) -> String {
    sanitize_for_injection(who).replace('\n', " ")
}

fn title(p: &Proposal) -> String {
    sanitize_for_injection(&p.plan.title).replace('\n', " ")
}

fn steps(plan: &Plan) -> String {
    plan.steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {}", i + 1, sanitize_for_injection(&s.step).replace('\n', " ")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The approved plan's steps go with the decision (the seed's approved-plan
/// injection), so the agent executes that list even when the plan it wrote
/// has left its context.
pub fn approved(p: &Proposal, who: &str, h: Harness) -> String {
    let who = name(who);
    // What was approved: the proposal, or its steps but those an approver left out.
    let approved = p.approved_plan();
    let list = if approved.steps.is_empty() { String::new() } else { format!("\nThe approved steps:\n{}", steps(&approved)) };
    format!(
        "{}Plan v{} \"{}\" (approval {}, {}) was approved by {who}. Plan mode is off: {}.{list}{FOOTER}",
        header("approved"),
        p.version,
        title(p),
        p.approval_id,
        p.effective_hash(),
        h.how_to_execute(),
    )
}

pub fn edited(p: &Proposal, who: &str) -> String {
    let who = name(who);
    let plan = p.edited_plan.as_ref().unwrap_or(&p.plan);
    format!(
        "{}Plan v{} \"{}\" (approval {}) was approved with edits by {who}. Plan mode is off: execute the edited plan below ({}), not your original.\n{}{FOOTER}",
        header("edited"),
        p.version,
        title(p),
        p.approval_id,
        p.effective_hash(),
        steps(plan),
    )
}

pub fn rejected(p: &Proposal, who: &str, feedback: &str, rejection_count: u32, h: Harness) -> String {
    let who = name(who);
    let next = if rejection_count >= 3 {
        format!("This plan has been sent back {rejection_count} times. Before proposing again, {}.", h.how_to_ask())
    } else {
        h.how_to_revise().to_string()
    };
    format!(
        "{}{who} requested changes to plan v{} \"{}\":\n{}\n{next}{FOOTER}",
        header("rejected"),
        p.version,
        title(p),
        quote(feedback, h)
    )
}

pub fn timed_out(p: &Proposal, waited_ms: i64, h: Harness) -> String {
    format!(
        "{}Nobody decided plan v{} \"{}\" within {}. It was NOT approved: do not execute it. {}{FOOTER}",
        header("timed_out"),
        p.version,
        title(p),
        crate::ids::humanize_ms(waited_ms),
        h.how_to_go_on_unapproved(),
    )
}

pub fn cancelled(p: &Proposal, who: &str) -> String {
    let who = name(who);
    format!(
        "{}{who} cancelled plan v{} \"{}\". Do not execute it. The session is halted: every change stays blocked until you propose a new plan and a human approves it, or a person releases the session. Wait for the user's next instruction.{FOOTER}",
        header("cancelled"),
        p.version,
        title(p),
    )
}

/// A person released the session (`/plan off`): no plan is required.
pub fn released(who: &str) -> String {
    let who = name(who);
    format!(
        "{}Released by {who}: no plan required. Plan mode is off and no plan was approved; wait for the user's next instruction.{FOOTER}",
        header("released")
    )
}

/// A person answered the agent's question. Delivered like a decision text
/// when no waiting call took the answer (a Claude Code channel event, the
/// next prompt); its own tag, because it decides nothing.
pub fn answered(question: &str, answer: &str, who: &str, h: Harness) -> String {
    format!(
        "[PLAN_ANSWER]\n{} answered your question.\nQuestion:\n{}\nAnswer:\n{}\n[/PLAN_ANSWER]",
        name(who),
        quote(question, h),
        quote(answer, h)
    )
}

/// The reminder an agent gets when it sits in plan mode without proposing.
/// Not a decision, so it has its own tag.
pub fn plan_nudge(waited_ms: u64, h: Harness) -> String {
    format!(
        "[PLAN_NUDGE]\nYou have been in plan mode for {} without proposing a plan. {}. Do not change anything until a plan is approved.\n[/PLAN_NUDGE]",
        crate::ids::humanize_ms(i64::try_from(waited_ms).unwrap_or(i64::MAX)),
        h.how_to_propose()
    )
}

/// Add what the approvers attached to an approval to its text, before the
/// closing tag: the steps they left out (with the steps to execute instead,
/// and the order not to do the others) and their notes, quoted like
/// feedback. The text is returned unchanged when there is nothing to add.
pub fn with_review_terms(text: String, p: &Proposal, h: Harness) -> String {
    let mut extra = Vec::new();
    let excluded = &p.review.excluded;
    if !excluded.is_empty() && p.edited_plan.is_none() {
        let left_out: Vec<String> = excluded
            .iter()
            .filter_map(|n| {
                p.plan
                    .steps
                    .get(n - 1)
                    .map(|s| format!("- step {n} of the proposal: {}", sanitize_for_injection(&s.step).replace('\n', " ")))
            })
            .collect();
        extra.push(format!(
            "The approval EXCLUDES {} of the proposal: do NOT do {}, only the approved steps above.\n{}",
            crate::review::step_list(excluded),
            if excluded.len() == 1 { "it" } else { "them" },
            left_out.join("\n"),
        ));
    }
    for a in p.deciding_approvals() {
        if let Some(note) = &a.note {
            extra.push(format!("Note from {}:\n{}", name(&a.by), quote(note, h)));
        }
    }
    if extra.is_empty() {
        return text;
    }
    match text.strip_suffix(FOOTER) {
        Some(body) => format!("{body}\n{}{FOOTER}", extra.join("\n")),
        None => text,
    }
}

/// The steps an amendment added, one a line, as `+ step`.
fn added(p: &Proposal) -> String {
    p.amends
        .iter()
        .flat_map(|a| &a.added)
        .map(|s| format!("+ {}", sanitize_for_injection(&s.step).replace('\n', " ")))
        .chain(p.amends.iter().flat_map(|a| &a.widen).map(|path| format!("+ may edit {}", sanitize_for_injection(path).replace('\n', " "))))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An amendment approved: the added steps may now be done, and the amended
/// list (its hash) is what the approval binds.
pub fn amendment_approved(p: &Proposal, who: &str) -> String {
    let who = name(who);
    let approved = p.approved_plan();
    format!(
        "{}Amendment v{} to \"{}\" (approval {}, {}) was approved by {who}: the steps you added may be done. Go on executing the amended plan.\nAdded:\n{}\nThe approved steps:\n{}{FOOTER}",
        header("approved"),
        p.version,
        title(p),
        p.approval_id,
        p.effective_hash(),
        added(p),
        steps(&approved),
    )
}

/// An amendment rejected: like a revise, the feedback goes to the agent;
/// the added steps are gone and the approved plan goes on.
pub fn amendment_rejected(p: &Proposal, who: &str, feedback: &str, h: Harness) -> String {
    let who = name(who);
    format!(
        "{}{who} rejected amendment v{} to \"{}\": the steps you added after approval were NOT approved and were removed from your plan. Do not do them:\n{}\nFeedback:\n{}\nGo on with the approved steps only; to do more, enter plan mode and propose a new version.{FOOTER}",
        header("rejected"),
        p.version,
        title(p),
        added(p),
        quote(feedback, h),
    )
}

/// Nobody decided an amendment in time: as a rejection without feedback.
pub fn amendment_timed_out(p: &Proposal, waited_ms: i64) -> String {
    format!(
        "{}Nobody decided amendment v{} to \"{}\" within {}. The steps you added after approval were NOT approved and were removed from your plan; do not do them:\n{}\nGo on with the approved steps only.{FOOTER}",
        header("timed_out"),
        p.version,
        title(p),
        crate::ids::humanize_ms(waited_ms),
        added(p),
    )
}
