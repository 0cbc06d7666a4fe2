//! The plan-mode brief: what an agent is told when it enters plan mode,
//! so it learns the rules before its first denial instead of from it.
//!
//! Short (at most [`MAX_CHARS`]) and in the terms of the harness that
//! drives the session ([`Harness`]): read-only until approval, what a good
//! plan holds, where the plan goes, how the decision comes back, and who
//! decides (the destinations and approvers it reaches, which the shell
//! knows from its configuration: [`Reach`]).

use crate::harness::Harness;

/// The longest brief.
pub const MAX_CHARS: usize = 1500;

/// Who a plan reaches: the chats its cards go to and how many people
/// decide there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// `telegram chat ops`, as people know them (destination names).
    pub destinations: Vec<String>,
    /// Distinct approvers listed for those destinations.
    pub approvers: usize,
    /// Distinct approvals a plan needs.
    pub required: u32,
}

/// The brief for `harness`, for a plan that reaches `reach`.
pub fn brief(harness: Harness, reach: &Reach) -> String {
    let (propose, decision) = match harness {
        Harness::Api => (
            "propose it with exit_plan_mode (or POST /v1/sessions/{id}/proposals)",
            "wait for the decision (GET …/decision?wait=N): approved, execute exactly those steps and report them with update_plan; changes requested, revise and propose again; cancelled, stop",
        ),
        Harness::ClaudeCode => (
            "write it to the plan file plan mode names and call ExitPlanMode",
            "the decision comes back as ExitPlanMode's result: approved, execute exactly those steps; changes requested, the feedback word for word: revise and call ExitPlanMode again; cancelled, stop",
        ),
        Harness::Codex => (
            "end your turn with it in a proposed_plan block",
            "the decision comes back as your next prompt: approved, execute exactly those steps; changes requested, the feedback word for word: revise and present the plan again; cancelled, stop",
        ),
    };
    let who = match (reach.destinations.as_slice(), reach.approvers) {
        ([], _) => "an operator decides it (no chat is set up for this agent)".to_string(),
        (chats, 0) => format!("it is posted to {} for a person to decide", chats.join(", ")),
        (chats, n) => format!(
            "it is posted to {} where {n} approver{} decide{}{}",
            chats.join(", "),
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" },
            if reach.required > 1 { format!(" ({} must approve)", reach.required) } else { String::new() }
        ),
    };
    let text = format!(
        "[PLAN_MODE] plangate keeps this session read-only until a person approves your plan: tools that can change anything are blocked; reads and read-only commands run. Explore, then write a plan a person can check on a phone: a title, a one-line summary, numbered steps, the files it touches (a Scope section), the risky kinds of command it needs (an Allows section: db.migrate, git.push, …; others ask a person while you work), risks, and how you will verify it. To submit it, {propose}; {who}. Then {decision}. A denial is not a puzzle to get around: propose instead."
    );
    plangate_basics::text::cut_chars(&text, MAX_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_harness_is_told_its_own_way_briefly() {
        let reach = Reach { destinations: vec!["telegram chat ops".into()], approvers: 2, required: 2 };
        for (harness, own) in [(Harness::Api, "exit_plan_mode"), (Harness::ClaudeCode, "ExitPlanMode"), (Harness::Codex, "proposed_plan")] {
            let text = brief(harness, &reach);
            assert!(text.chars().count() <= MAX_CHARS, "{}", text.chars().count());
            assert!(text.contains(own) && text.contains("read-only") && text.contains("telegram chat ops"), "{text}");
            assert!(text.contains("2 approvers decide (2 must approve)"), "{text}");
        }
        assert!(brief(Harness::ClaudeCode, &Reach::default()).contains("an operator decides"));
        assert!(!brief(Harness::Codex, &Reach::default()).contains('<'), "Codex escapes angle brackets");
    }
}
