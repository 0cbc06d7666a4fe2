//! Which agent harness a session is driven by, so that every text the model
//! reads (a gate denial, a `[PLAN_DECISION]`, a nudge) names what *that*
//! harness can actually do.
//!
//! Why this exists: the texts were written for plangate's own API and MCP
//! tools ("call enter_plan_mode", "keep the step list current with
//! update_plan"). Claude Code's native plan mode has no such tools (its plan
//! is a file, approved through `ExitPlanMode`), and Codex 0.169.0 has neither
//! plan-mode tools nor `update_plan`: its plan is a `<proposed_plan>` block
//! that the `Stop` hook proposes. A model told to call a tool it does not
//! have either stalls or improvises. The harness is stated by the
//! integration (the hooks send it with every gate call and proposal); the
//! API default is [`Harness::Api`], whose texts are the original ones.

use serde::{Deserialize, Serialize};

/// The agent harness on the other side of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Harness {
    /// plangate's HTTP API, CLI or MCP server: the plan tools are
    /// plangate's own (`enter_plan_mode`, `exit_plan_mode`, `update_plan`,
    /// `ask_user_question`).
    #[default]
    Api,
    /// Claude Code through `plangate hook claude`: native plan mode
    /// (`EnterPlanMode`, the plan file, `ExitPlanMode`, `AskUserQuestion`).
    ClaudeCode,
    /// Codex through `plangate hook codex`: the plan is a `<proposed_plan>`
    /// block in the final message of a turn.
    ///
    /// Codex hands a `Stop` hook's answer to the model XML-escaped (`<`,
    /// `>`, `&` become `&lt;`, `&gt;`, `&amp;` inside its `<hook_prompt>`;
    /// seen with 0.169.0), and that is how every `[PLAN_*]` text reaches it,
    /// so those texts name the block without angle brackets. A gate denial
    /// arrives verbatim (the `PreToolUse` reason) and spells the tag out.
    Codex,
}

impl Harness {
    /// How an agent with no approved plan gets one, for a gate denial.
    pub fn how_to_get_approval(self) -> &'static str {
        match self {
            Harness::Api => {
                "enter plan mode (enter_plan_mode, or POST /v1/sessions/{id}/enter), propose a plan, and wait for a human to approve it"
            }
            Harness::ClaudeCode => {
                "enter plan mode (EnterPlanMode, or the user's shift+tab), write your plan to the plan file, and call ExitPlanMode; a human approves it from chat"
            }
            Harness::Codex => {
                "write your plan in a <proposed_plan> block and end your turn; plangate sends it to a human, and once they approve, this call is allowed"
            }
        }
    }

    /// How the agent proposes a plan while planning (nudges).
    pub fn how_to_propose(self) -> &'static str {
        match self {
            Harness::Api => "Propose one (exit_plan_mode, or POST …/proposals), or ask the user a question (ask_user_question)",
            Harness::ClaudeCode => "Write your plan to the plan file and call ExitPlanMode, or ask the user a question (AskUserQuestion)",
            Harness::Codex => {
                "End your turn with the plan in a proposed_plan block (its opening and closing tags each on a line of its own), or ask the user a question in your reply"
            }
        }
    }

    /// What to do after changes were requested.
    pub fn how_to_revise(self) -> &'static str {
        match self {
            Harness::Api => "Stay in plan mode, revise the plan to address this feedback, and propose it again.",
            Harness::ClaudeCode => {
                "Stay in plan mode: revise your plan file to address this feedback and call ExitPlanMode again. Change nothing else."
            }
            Harness::Codex => {
                "Change nothing yet: revise the plan to address this feedback and present it again in a proposed_plan block, as before, then end your turn."
            }
        }
    }

    /// What to do when plans keep being sent back.
    pub fn how_to_ask(self) -> &'static str {
        match self {
            Harness::Api => "ask the user a clarifying question (ask_user_question) instead of guessing",
            Harness::ClaudeCode => "ask the user a clarifying question (AskUserQuestion) instead of guessing",
            Harness::Codex => "ask the user a clarifying question in your reply and end your turn instead of guessing",
        }
    }

    /// What to do once a plan is approved.
    pub fn how_to_execute(self) -> &'static str {
        match self {
            Harness::Api => "execute exactly this plan, step by step, and keep the step list current with update_plan",
            Harness::ClaudeCode | Harness::Codex => "execute exactly this plan, step by step",
        }
    }

    /// What to do when a plan was not approved (timed out).
    pub fn how_to_go_on_unapproved(self) -> &'static str {
        match self {
            Harness::Api => "Stay in plan mode; propose again or ask a question.",
            Harness::ClaudeCode => "Stay in plan mode; call ExitPlanMode again to re-propose, or ask the user (AskUserQuestion).",
            Harness::Codex => "Change nothing; present the plan again in a proposed_plan block, as before, or ask the user in your reply.",
        }
    }

    /// The prefix of a quoted line (feedback, questions). Codex XML-escapes
    /// the text a `Stop` hook hands back (`&gt; …`, seen with 0.169.0; see
    /// [`Harness::Codex`]), so its quotes use a bar.
    pub fn quote_prefix(self) -> &'static str {
        match self {
            Harness::Codex => "| ",
            Harness::Api | Harness::ClaudeCode => "> ",
        }
    }
}
