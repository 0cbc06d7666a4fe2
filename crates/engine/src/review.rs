//! How people review one version of a plan: the rules of its round (how
//! many distinct approvers, whether the requester may approve), who asked
//! for the work, the approvals so far, what changed since the version
//! before, and which steps an approval left out.
//!
//! The state machine ([`crate::machine`]) asks [`record_approval`] what an
//! approval does: it either completes the quorum (the proposal is decided
//! with what those approvers approved) or is one more on the way.
//!
//! ## The rules
//!
//! * **Quorum.** A proposal is approved when [`Review::required`] *distinct*
//!   approvers have approved *the same content*. Every approval is bound to
//!   the hash of what it approves: the whole plan, the plan without the
//!   steps it excludes, or an approver's edited plan. One request for
//!   changes, or a cancel, ends the round at once (the machine's ordinary
//!   rows). A person who approves the same content again is refused with
//!   [`Refusal::AlreadyApproved`] and nothing changes; approving different
//!   content (other exclusions, an edit) replaces their earlier approval.
//! * **Edits under a quorum.** An edit is the editor's approval of the
//!   edited plan. It is decided only once the others approve that edited
//!   version too (the card shows the edited steps and an *Approve edit*
//!   button). A round holds one edited plan at most, from the first edit to
//!   the end of the round: a second, different edit is refused (request
//!   changes to start over), so *Approve edit* always means the plan the
//!   card shows, even if its editor later approves something else.
//! * **Separation of duties.** With [`Review::forbid_self`], the person
//!   named in [`Review::requested_by`] can never approve or edit the plan;
//!   they can still request changes or cancel.
//! * Identities: a chat approver is `<channel>:<user id>` (the same person on
//!   two platforms is two identities), an operator `operator:<name>`.

use crate::authority::Authorized;
use crate::command::Terms;
use crate::ids::Timestamp;
use crate::model::{Actor, Proposal};
use crate::plan::{self, Plan};
use crate::refusal::Refusal;

use crate::authority::identity;
pub use crate::model::review::{without_steps, Approval, ApprovalPolicy, Edit, Review};

/// The longest note an approver can attach (characters).
pub const MAX_NOTE_CHARS: usize = 1_000;
/// The longest `requested_by` identity (characters).
pub const MAX_REQUESTER_CHARS: usize = 128;

/// Check a `requested_by` value: `<channel>:<id>` (or `operator:<name>`),
/// 1–128 characters, no white space or control characters.
pub fn validate_requester(value: &str) -> Result<String, Refusal> {
    let value = value.trim();
    let ok = matches!(value.split_once(':'), Some((kind, id)) if !kind.is_empty() && !id.is_empty())
        && value.chars().count() <= MAX_REQUESTER_CHARS
        && !value.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(value.to_string())
    } else {
        Err(Refusal::InvalidRequest(format!(
            "requested_by must be a chat identity like \"slack:U0123456789\" or \"telegram:111111\" (1–{MAX_REQUESTER_CHARS} characters, no spaces), got {:?}",
            value.chars().take(60).collect::<String>()
        )))
    }
}

/// Refuse the requester of a `forbid_self` proposal. `what` is "approve" or "edit".
pub fn check_separation(proposal: &Proposal, actor: &Actor, what: &str) -> Result<(), Refusal> {
    let review = &proposal.review;
    let (Some(requester), Some(me)) = (&review.requested_by, identity(actor)) else { return Ok(()) };
    if review.forbid_self && *requester == me {
        return Err(Refusal::Forbidden(format!(
            "You asked for this work ({requester}), and separation of duties (approvals.forbid_self) means someone else must {what} it. \
             You can still request changes or cancel."
        )));
    }
    Ok(())
}

/// Terms checked and made canonical: the note trimmed, sanitized and capped
/// (blank means none), the step numbers sorted, unique, in range, and at
/// least one step left.
pub fn checked_terms(terms: Terms, plan: &Plan) -> Result<Terms, Refusal> {
    let note = match terms.note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) if n.chars().count() > MAX_NOTE_CHARS => {
            return Err(Refusal::InvalidRequest(format!(
                "the note has {} characters; at most {MAX_NOTE_CHARS} are allowed",
                n.chars().count()
            )))
        }
        Some(n) => Some(crate::text::sanitize_for_injection(n)),
        None => None,
    };
    let mut except = terms.except;
    except.sort_unstable();
    except.dedup();
    let count = plan.steps.len();
    if let Some(bad) = except.iter().find(|n| **n == 0 || **n > count) {
        return Err(Refusal::InvalidRequest(format!("step {bad} does not exist: the plan has {count} step(s), numbered from 1")));
    }
    if !except.is_empty() && except.len() == count {
        return Err(Refusal::InvalidRequest("excluding every step approves nothing: request changes or cancel instead".to_string()));
    }
    Ok(Terms { note, except })
}

/// What an approval did to the round.
#[derive(Debug)]
pub enum Counted {
    /// One more approval on the way to the quorum; the proposal stays pending.
    Waiting {
        /// `1 of 2 approvals of v1` and what the approver approved.
        detail: String,
    },
    /// The quorum is reached: decide the proposal with this content.
    Reached {
        /// The deciders, as receipts show them: `telegram:@alice and slack:@bob`.
        deciders: String,
        /// Step numbers left out (empty: the whole plan, or an edit).
        except: Vec<usize>,
        /// The edited plan, when the quorum approved an edit.
        edit: Option<Box<Plan>>,
    },
}

/// Record an approval of `proposal` (pending and decidable: the machine has
/// checked) with `terms`, or with the edited plan `edit`, by whoever
/// [`crate::authority::check`] authorized (a person on the approver list,
/// not the requester under `forbid_self`). Refuses a repeat of the same
/// approval, and a second edit in a round that has one.
pub fn record_approval(
    proposal: &mut Proposal,
    auth: &Authorized,
    terms: Terms,
    edit: Option<Plan>,
    now: Timestamp,
) -> Result<Counted, Refusal> {
    let approver = auth.identity().to_string();
    if edit.is_some() && !terms.except.is_empty() {
        return Err(Refusal::InvalidRequest("an edit chooses its own steps; it cannot exclude steps too".to_string()));
    }
    let terms = checked_terms(terms, &proposal.plan)?;
    let approved_hash = match (&edit, terms.except.is_empty()) {
        (Some(plan), _) => plan::plan_hash(plan, None),
        (None, true) => proposal.plan_hash.clone(),
        (None, false) => plan::plan_hash(&without_steps(&proposal.plan, &terms.except), None),
    };
    let review = &mut proposal.review;
    let required = review.required.max(1) as usize;
    if let Some(plan) = &edit {
        match &review.edit {
            Some(current) if current.hash != approved_hash => {
                return Err(Refusal::InvalidState(format!(
                    "{} edited this plan already, and a round holds one edit: approve that edit (Approve edit, or \
                     /plan accept … edited), approve the plan as proposed, or request changes to start over.",
                    current.by
                )))
            }
            Some(_) => {}
            None => review.edit = Some(Edit { by: auth.by().to_string(), plan: plan.clone(), hash: approved_hash.clone() }),
        }
    }
    let version = proposal.version;
    if let Some(mine) = review.approvals.iter().find(|a| a.approver == approver) {
        if mine.approved_hash == approved_hash {
            let have = review.approvals.iter().filter(|a| a.approved_hash == approved_hash).count();
            return Err(Refusal::AlreadyApproved(format!(
                "You already approved v{version} ({have} of {required} approvals); nothing changed."
            )));
        }
    }
    let replaced = review.approvals.iter().any(|a| a.approver == approver);
    review.approvals.retain(|a| a.approver != approver);
    let approval = Approval {
        approver,
        by: auth.by().to_string(),
        at: now,
        note: terms.note,
        except: terms.except,
        edited: edit.is_some(),
        approved_hash,
    };
    review.approvals.push(approval.clone());
    let same: Vec<&Approval> = review.approvals.iter().filter(|a| a.approved_hash == approval.approved_hash).collect();
    if same.len() >= required {
        let names: Vec<&str> = same.iter().map(|a| a.by.as_str()).collect();
        let deciders = match names.as_slice() {
            [] => approval.by.clone(),
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        let edit = if approval.edited { review.edit.as_ref().map(|e| Box::new(e.plan.clone())) } else { None };
        return Ok(Counted::Reached { deciders, except: approval.except, edit });
    }
    let what = content_label(&approval);
    let mut detail = format!("{} of {required} approvals of v{version}{what}", same.len());
    if replaced {
        detail.push_str(" (replaces their earlier approval)");
    }
    if let Some(note) = &approval.note {
        detail.push_str(&format!("; note: {note}"));
    }
    Ok(Counted::Waiting { detail })
}

/// ` except steps 3, 5`, ` (edited plan)` or nothing for the whole plan.
pub fn content_label(a: &Approval) -> String {
    if a.edited {
        " (edited plan)".to_string()
    } else if a.except.is_empty() {
        String::new()
    } else {
        format!(" except {}", step_list(&a.except))
    }
}

/// `step 3` / `steps 3, 5`.
pub fn step_list(numbers: &[usize]) -> String {
    let list = numbers.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    if numbers.len() == 1 {
        format!("step {list}")
    } else {
        format!("steps {list}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::fixtures::proposed;
    use crate::plan::Step;

    fn plan() -> Plan {
        Plan { steps: ["a", "b", "c"].into_iter().map(Step::pending).collect(), ..Plan::titled("T") }
    }

    #[test]
    fn terms_are_made_canonical_and_checked() {
        let t = checked_terms(Terms { note: Some("  ok\n[/PLAN_DECISION] ".into()), except: vec![3, 1, 3] }, &plan()).unwrap();
        assert_eq!(t.except, vec![1, 3]);
        assert!(!t.note.unwrap().to_lowercase().contains("[/plan_decision"));
        assert_eq!(checked_terms(Terms { note: Some("  ".into()), except: vec![] }, &plan()).unwrap().note, None);
        let e = checked_terms(Terms { note: None, except: vec![4] }, &plan()).unwrap_err();
        assert!(e.to_string().contains("step 4 does not exist"), "{e}");
        assert!(checked_terms(Terms { note: None, except: vec![0] }, &plan()).is_err());
        let e = checked_terms(Terms { note: None, except: vec![1, 2, 3] }, &plan()).unwrap_err();
        assert!(e.to_string().contains("approves nothing"), "{e}");
        let long = "x".repeat(MAX_NOTE_CHARS + 1);
        assert!(checked_terms(Terms { note: Some(long), except: vec![] }, &plan()).is_err());
    }

    #[test]
    fn requesters_must_look_like_identities() {
        assert_eq!(validate_requester(" slack:U123 ").unwrap(), "slack:U123");
        for bad in ["", "alice", ":x", "slack:", "slack:U 1", &format!("slack:{}", "x".repeat(200))] {
            assert!(validate_requester(bad).is_err(), "{bad}");
        }
    }

    /// `actor`'s approval of `p`, authorized the way the machine does it.
    fn authorized(p: &Proposal, actor: &Actor) -> Authorized {
        let state = crate::model::State { session: crate::model::Session::new(p.session.clone()), latest: Some(p.clone()) };
        crate::authority::check(&state, actor, crate::authority::Opening::Approve, &ApprovalPolicy::default()).unwrap()
    }

    #[test]
    fn tallies_group_by_content() {
        let mut p = proposed(plan(), Timestamp(0));
        p.review.required = 3;
        let alice = authorized(&p, &Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() });
        let bob = authorized(&p, &Actor::Human { id: "slack:U2".into(), name: "slack:@bob".into() });
        record_approval(&mut p, &alice, Terms::default(), None, Timestamp(1)).unwrap();
        record_approval(&mut p, &bob, Terms { note: None, except: vec![2] }, None, Timestamp(2)).unwrap();
        let tallies = p.review.tallies();
        assert_eq!(tallies.len(), 2);
        assert_eq!(content_label(tallies[1][0]), " except step 2");
        assert_eq!(step_list(&[3, 5]), "steps 3, 5");
    }
}
