//! Values for the unit tests of the modules that read proposals, made the
//! way every proposal is: by the state machine.

use crate::command::{Command, Ctx};
use crate::ids::{SessionKey, Timestamp};
use crate::model::{Actor, Proposal, State, TimerPolicy};
use crate::plan::Plan;

/// What the agent of `demo/s1` proposed at `at`: a pending proposal,
/// made the way every proposal is, by the state machine.
pub(crate) fn proposed(plan: Plan, at: Timestamp) -> Proposal {
    let ctx = Ctx { now: at, random: [1; 16], timers: TimerPolicy::default(), approvals: Default::default() };
    let run = |state: &State, command| match crate::machine::apply(state, &Actor::Agent, command, &ctx) {
        Ok(t) => t.state,
        Err(refusal) => panic!("{refusal}"),
    };
    let planning = run(&State::new(SessionKey::new("demo", "s1")), Command::Enter { reason: None });
    match run(&planning, Command::Propose { plan, markdown: None, requested_by: None, harness: crate::Harness::Api, project: None }).latest
    {
        Some(proposal) => proposal,
        None => panic!("no proposal"),
    }
}
