//! Keeping the agent on an approved plan: what plangate answers when the
//! agent tries to stop while the plan still has open steps.
//!
//! A person approves from a phone, and the agent stops after step 2 with
//! "Shall I continue?": the approval meant "do this plan", so the harness's
//! stop is answered with its "keep going" form (Claude Code's `Stop` hook:
//! `{"decision": "block", "reason": …}`; Codex's the same) and an
//! instruction naming the next open step, escalating ([`Answer`]):
//!
//! 1. a reminder of the approved plan and its next step;
//! 2. a firm instruction naming the step and the progress report expected;
//! 3. a last one: go on, or mark the step cancelled with a reason;
//!
//! then, under `[approvals] auto_continue` (default: on, 3 cycles), up to
//! `max_cycles` continue acknowledgements; after those the agent may stop,
//! and the stop is audited as stalled. Every stop counted is in the
//! session ([`crate::Session::stop_count`], so it survives restarts), and
//! progress (a step's status changing) starts the count again.
//!
//! Never when there is nothing to go on with, or the agent must not: the
//! session is not executing an approved plan (planning, halted, released,
//! done), an amendment waits, a question or permission request waits, or
//! no step is open. And only where the agent *reports* its steps: a plan
//! whose steps all still read `pending` is one whose progress plangate is
//! not told (Claude Code and Codex keep their own lists), so it cannot say
//! which step is next and does not hold the agent back.
//!
//! `stop_hook_active` (Claude Code sets it while a stop hook already made
//! it go on) is not a reason to let it stop: the count bounds the loop, and
//! the escalation needs the stops that follow a first "keep going".

use crate::model::{ApprovalState, Mode, Session};
use crate::plan::StepStatus;

pub use crate::model::keep_going::{AutoContinue, Stalled, Todo};

/// How many escalating instructions come before the continue cycles.
pub const LEVELS: u32 = 3;

/// What a stop is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Go on: the instruction the model reads.
    KeepGoing(String),
    /// The agent may stop (why, for the audit and the caller).
    Stop(String),
    /// The plan awaits people's decision: a harness that can hold the agent
    /// at its stop (Claude Code's `Stop` hook) waits for it there, so a tap
    /// made after `ExitPlanMode` stopped waiting still reaches the agent
    /// without anyone typing; then it says how long it waited
    /// ([`crate::Command::Stopping`]'s `waited_secs`).
    AwaitDecision { approval_id: crate::ids::ApprovalId, version: u32 },
}

/// The most to-dos of a harness's own list plangate keeps, and the longest
/// text of one (a list is the agent's; the rest is cut, never refused).
pub const MAX_TODOS: usize = 100;
pub const MAX_TODO_CHARS: usize = 500;

/// The open work to go on with: a step of the plan, or, where the agent
/// reports no step, an item of its own to-do list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open<'a> {
    /// 0-based.
    pub index: usize,
    pub total: usize,
    pub text: &'a str,
    /// "step" or "to-do".
    pub noun: &'static str,
}

/// Whether a to-do and a plan step name the same work: equal once case,
/// spacing, a leading number or bullet and a final period are set aside
/// ("2. Add retries." is "add retries"). Exact otherwise: a to-do that
/// merely resembles a step leaves it alone.
pub fn same_work(a: &str, b: &str) -> bool {
    fn key(text: &str) -> String {
        let t = text.trim();
        let t = t.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | ')' | '-' | '*' | '•')).trim();
        let t = t.trim_end_matches('.');
        t.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
    }
    let (a, b) = (key(a), key(b));
    !a.is_empty() && a == b
}

/// Whether the agent reports the plan's steps (any left `pending`).
fn steps_reported(session: &Session) -> bool {
    session.steps.iter().any(|s| s.status != StepStatus::Pending)
}

/// The step to go on with: the one in progress, else the first pending;
/// where no step is reported, the harness's to-do list the same way.
pub fn next_open(session: &Session) -> Option<Open<'_>> {
    fn first<'a>(items: impl Iterator<Item = (&'a str, StepStatus)> + Clone) -> Option<(usize, &'a str)> {
        let find = |want: StepStatus| items.clone().position(|(_, s)| s == want);
        let n = find(StepStatus::InProgress).or_else(|| find(StepStatus::Pending))?;
        items.clone().nth(n).map(|(text, _)| (n, text))
    }
    if steps_reported(session) || session.todos.is_empty() {
        let (index, text) = first(session.steps.iter().map(|s| (s.step.as_str(), s.status)))?;
        return Some(Open { index, total: session.steps.len(), text, noun: "step" });
    }
    let (index, text) = first(session.todos.iter().map(|t| (t.content.as_str(), t.status)))?;
    Some(Open { index, total: session.todos.len(), text, noun: "to-do" })
}

/// The step to go on with (see [`next_open`]): its index and text.
pub fn next_open_step(session: &Session) -> Option<(usize, &str)> {
    next_open(session).map(|o| (o.index, o.text))
}

/// Why the agent may stop now without being held back, if it may.
pub fn free_to_stop(session: &Session) -> Option<&'static str> {
    let executing = session.mode == Mode::Normal && matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited);
    if !executing {
        return Some("the session is not executing an approved plan");
    }
    if session.amendment_pending.is_some() {
        return Some("an amendment waits for people");
    }
    if session.pending_question.is_some() || session.pending_permission.is_some() {
        return Some("a question waits for an answer");
    }
    if !steps_reported(session) && session.todos.is_empty() {
        return Some("the agent does not report its steps, so the next one cannot be told");
    }
    if next_open(session).is_none() {
        return Some("no step of the plan is open");
    }
    None
}

/// The answer to stop number `n` (1-based, counted since the last
/// progress) with `cycles` continue cycles allowed after the levels.
pub fn answer(session: &Session, n: u32, cycles: u32, harness: crate::Harness) -> Answer {
    let Some(open) = next_open(session) else { return Answer::Stop("no step of the plan is open".to_string()) };
    let (total, noun) = (open.total, open.noun);
    let step = crate::text::sanitize_for_injection(open.text);
    let number = open.index + 1;
    let report = match (harness, noun) {
        (_, "to-do") => "then mark it completed in your to-do list",
        (crate::Harness::Api, _) => "then report it with update_plan (status completed)",
        (crate::Harness::ClaudeCode | crate::Harness::Codex, _) => "then say it is done",
    };
    let text = match n {
        1 => format!(
            "[PLAN_CONTINUE] The approved plan is not finished: {noun} {number} of {total} is open (\"{step}\"). The approval covers it, so there is no need to ask whether to continue: go on with it."
        ),
        2 => format!(
            "[PLAN_CONTINUE] Do {noun} {number} of {total} now: \"{step}\"; {report}. Do not stop or ask for confirmation: the human approved every step of this plan."
        ),
        3 => format!(
            "[PLAN_CONTINUE] The approved plan's {noun} {number} of {total} (\"{step}\") is still open. Go on with it; if you cannot, report it as cancelled with the reason (update_plan, status cancelled) or say why, so the approvers know the plan is blocked."
        ),
        n if n <= LEVELS + cycles => {
            format!("[PLAN_CONTINUE] Continue with the approved plan: {noun} {number} of {total}, \"{step}\" ({} of {cycles} automatic continues).", n - LEVELS)
        }
        _ => return Answer::Stop(format!("stalled at {noun} {number} of {total} (\"{step}\") after {n} stops without progress")),
    };
    Answer::KeepGoing(text)
}

/// The two answers of the stalled card: go on, or end the plan here.
pub const CONTINUE: &str = "Continue";
pub const DONE: &str = "Done";

/// Who the harness is, for a person reading the card.
fn agent_name(harness: crate::Harness) -> &'static str {
    match harness {
        crate::Harness::ClaudeCode => "Claude",
        crate::Harness::Codex => "Codex",
        crate::Harness::Api => "The agent",
    }
}

/// The stalled card's text: where it stopped, what it last said (cut),
/// and what each button does.
pub fn stalled_text(session: &Session, stops: u32, last_message: &str) -> String {
    let (noun, number, total, step) = next_open(session).map_or(("step", 0, session.steps.len(), String::new()), |o| {
        (o.noun, o.index + 1, o.total, plangate_basics::text::cut_chars(o.text, 200))
    });
    let mut out =
        format!("{} stopped at {noun} {number} of {total}: \"{step}\" ({stops} stops without progress).", agent_name(session.harness));
    if !last_message.trim().is_empty() {
        out.push_str(&format!("\nIt said: \"{}\"", plangate_basics::text::cut_chars(last_message.trim(), 300)));
    }
    out.push_str(&format!(
        "\n\nContinue: it goes on with this {noun} when it resumes. Done: the open steps are cancelled and the plan ends here."
    ));
    out
}

/// The instruction a person's Continue leaves for the agent.
pub fn continue_text(session: &Session, who: &str) -> String {
    match next_open(session) {
        Some(o) => format!(
            "[PLAN_CONTINUE] {who} asks you to continue the approved plan: go on with {} {} of {}, \"{}\".",
            o.noun,
            o.index + 1,
            o.total,
            crate::text::sanitize_for_injection(o.text)
        ),
        None => format!("[PLAN_CONTINUE] {who} asks you to continue the approved plan."),
    }
}

/// The instruction a person's Done leaves for the agent.
pub fn done_text(cancelled: &[usize], who: &str) -> String {
    let list: Vec<String> = cancelled.iter().map(|n| (n + 1).to_string()).collect();
    format!(
        "[PLAN_DONE] {who} ended the approved plan here: step(s) {} are cancelled. Do not carry them out; stop, or propose a new plan for further work.",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Step;
    use crate::{Harness, SessionKey};

    fn executing(statuses: &[StepStatus]) -> Session {
        let mut s = Session::new(SessionKey::new("demo", "s"));
        s.approval = ApprovalState::Approved;
        s.steps = statuses.iter().enumerate().map(|(n, st)| Step { status: *st, ..Step::pending(format!("step {}", n + 1)) }).collect();
        s
    }

    #[test]
    fn the_next_open_step_escalates_then_continues_then_stops() {
        let s = executing(&[StepStatus::Completed, StepStatus::Pending, StepStatus::Pending]);
        assert_eq!(free_to_stop(&s), None);
        let texts: Vec<Answer> = (1..=7).map(|n| answer(&s, n, 3, Harness::Api)).collect();
        for a in &texts[..6] {
            assert!(matches!(a, Answer::KeepGoing(t) if t.contains("step 2 of 3") && t.contains("\"step 2\"")), "{a:?}");
        }
        assert!(matches!(&texts[1], Answer::KeepGoing(t) if t.contains("update_plan")));
        assert!(matches!(&texts[2], Answer::KeepGoing(t) if t.contains("cancelled")));
        assert!(matches!(&texts[5], Answer::KeepGoing(t) if t.contains("3 of 3")));
        assert!(matches!(&texts[6], Answer::Stop(why) if why.contains("stalled at step 2")));
        assert!(matches!(answer(&s, 4, 0, Harness::Api), Answer::Stop(_)));
    }

    #[test]
    fn nothing_holds_an_agent_that_must_or_may_stop() {
        assert!(free_to_stop(&executing(&[StepStatus::Completed, StepStatus::Cancelled])).is_some());
        assert!(free_to_stop(&executing(&[StepStatus::Pending, StepStatus::Pending])).is_some(), "untracked steps");
        let mut halted = executing(&[StepStatus::Completed, StepStatus::Pending]);
        halted.mode = Mode::Halted;
        assert!(free_to_stop(&halted).is_some());
        let mut planning = executing(&[StepStatus::InProgress]);
        planning.approval = ApprovalState::Pending;
        assert!(free_to_stop(&planning).is_some());
    }

    #[test]
    fn the_strictest_setting_wins() {
        let on = |n| AutoContinue { enabled: true, max_cycles: n };
        assert_eq!(AutoContinue::strictest([on(3), on(1)]), Some(on(1)));
        assert_eq!(AutoContinue::strictest([on(3), AutoContinue { enabled: false, max_cycles: 5 }]).map(|a| a.cycles()), Some(0));
        assert_eq!(AutoContinue::strictest([]), None);
    }
}
