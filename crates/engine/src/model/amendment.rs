//! What a proposal holds when it is an amendment (steps added after
//! approval), and the `[approvals] amendments` setting: plain values. The
//! rules are in [`crate::amendment`].

use crate::plan::Step;
use serde::{Deserialize, Serialize};

/// What makes a proposal an amendment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amendment {
    /// The version whose approved steps it extends.
    pub of_version: u32,
    /// The approval of the plan it amends (the first approved version, not
    /// an earlier amendment): its cards are where this one's are threaded.
    /// Absent in amendments recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of_approval: Option<crate::ids::ApprovalId>,
    /// The steps added after approval, as the agent sent them.
    pub added: Vec<Step>,
    /// Let through without a wait under [`Policy::Flag`]: nobody decided it,
    /// and every card, the page and the audit say "added after approval".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flagged: bool,
    /// Paths to widen the approved scope by ([`crate::scope`]): files the
    /// agent tried to write outside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub widen: Vec<String>,
}

/// `[approvals] amendments`: what steps added after approval do.
///
/// `ask` (the default) makes them an amendment that waits for people while
/// the gate is shut. `flag` is for teams that would rather not be asked for
/// every extra step: the steps go through at once, marked "added after
/// approval" wherever the plan is shown, and the approvers get one notice
/// (the amendment's card) per batch of added steps. Either way nothing
/// added ever reads as approved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// First, so that the strictest setting is the smallest: `min` over
    /// every key that applies picks `ask` if any says so.
    #[default]
    Ask,
    Flag,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Ask => "ask",
            Policy::Flag => "flag",
        }
    }
}
