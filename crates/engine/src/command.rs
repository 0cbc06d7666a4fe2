//! What goes into the state machine besides the state (a [`Command`] and its
//! [`Ctx`]) and what comes out of it (a [`Transition`] with its [`Effect`]s
//! and audit records, or a [`Refusal`]).

use crate::ids::{ApprovalId, QuestionId, Timestamp};
use crate::model::ApprovalPolicy;
use crate::model::{Proposal, Question, State, Timer, TimerKind, TimerPolicy};
use crate::plan::{Plan, StepUpdate};
use serde::{Deserialize, Serialize};

pub use crate::authority::StepUp;
pub use crate::refusal::Refusal;

/// What an approval may add to a plain "yes": a note for the agent, and
/// steps left out of what is approved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Terms {
    /// A short note ("ok, but don't touch the migrations"): it goes into the
    /// injection, the receipt and the audit.
    pub note: Option<String>,
    /// Step numbers (1-based, as on the card) the approval leaves out: the
    /// approved plan is the remaining steps, and its hash is the hash bound
    /// to the approval.
    pub except: Vec<usize>,
}

/// How an approver decides a pending proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    /// Approve with a note and/or except some steps (`Approve` is this with
    /// empty [`Terms`]).
    ApproveWith(Terms),
    Edit(Plan),
    /// Request changes: the agent keeps planning with this feedback.
    Revise(String),
}

/// What a person decides about an approval, from any venue: a button or a
/// `/plan` command in a chat, the web page, the operator's API. Every venue
/// builds it with the constructors below, so "approve" means the same
/// everywhere (approving with no terms is a plain approval), and turns it
/// into the engine's command with [`Decision::command`].
// Built once per request and moved into the command: boxing the plan would
// only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve (with or without terms), edit, or request changes.
    Verdict(Verdict),
    /// "Do not do this": the session halts, read-only.
    Cancel,
    /// Release the approval's session: no plan required (the operator's
    /// `release` action; under a quorum, one request of the ones needed).
    Release,
    /// A verdict confirmed with the person's passkey ([`Decision::confirmed`]).
    Confirmed { verdict: Verdict, step_up: StepUp },
    /// "I am on it": the person claims the plan ([`crate::claim`]). Not a
    /// verdict, but held to who may decide the plan, from the same door.
    Claim,
}

impl Decision {
    /// Approve the plan as proposed.
    pub fn approve() -> Decision {
        Decision::Verdict(Verdict::Approve)
    }

    /// Approve with a note and/or steps left out; with neither, a plain
    /// [`Decision::approve`].
    pub fn approve_with(terms: Terms) -> Decision {
        if terms == Terms::default() {
            Decision::approve()
        } else {
            Decision::Verdict(Verdict::ApproveWith(terms))
        }
    }

    /// Approve `plan` instead of the agent's.
    pub fn edit(plan: Plan) -> Decision {
        Decision::Verdict(Verdict::Edit(plan))
    }

    /// Request changes with `feedback`.
    pub fn revise(feedback: impl Into<String>) -> Decision {
        Decision::Verdict(Verdict::Revise(feedback.into()))
    }

    /// This decision, confirmed with a passkey: a verdict carries the
    /// confirmation; a cancel or a release needs none and stays as it is.
    pub fn confirmed(self, step_up: StepUp) -> Decision {
        match self {
            Decision::Verdict(verdict) | Decision::Confirmed { verdict, .. } => Decision::Confirmed { verdict, step_up },
            other => other,
        }
    }

    /// The engine command that carries this decision out on approval `id`.
    pub fn command(self, id: ApprovalId) -> Command {
        match self {
            Decision::Verdict(verdict) => Command::Decide { approval_id: id, verdict },
            Decision::Confirmed { verdict, step_up } => Command::DecideConfirmed { approval_id: id, verdict, step_up },
            Decision::Cancel => Command::CancelApproval(id),
            Decision::Release => Command::Off,
            Decision::Claim => Command::Claim { approval_id: id },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Enter {
        reason: Option<String>,
    },
    /// Record the step list; with `merge`, each update patches the step with
    /// the same text ([`StepUpdate`]).
    UpdatePlan {
        steps: Vec<StepUpdate>,
        merge: bool,
        explanation: Option<String>,
    },
    Propose {
        plan: Plan,
        markdown: Option<String>,
        /// Who asked for the work (`slack:U123`), for separation of duties;
        /// the shell decides where it comes from (token config, body, env).
        requested_by: Option<String>,
        /// Which harness proposes: the texts the agent reads from now on
        /// name its tools ([`crate::harness`]).
        harness: crate::harness::Harness,
        /// Where the agent runs, when it said ([`crate::project`]);
        /// validated by the engine.
        project: Option<crate::project::Project>,
    },
    Decide {
        approval_id: ApprovalId,
        verdict: Verdict,
    },
    /// [`Command::Decide`] with a passkey confirmation: the only way a
    /// person's approval counts on a proposal whose rules ask for step-up
    /// ([`crate::Review::step_up`]).
    DecideConfirmed {
        approval_id: ApprovalId,
        verdict: Verdict,
        step_up: StepUp,
    },
    /// A person releases the session: plan mode off, no plan required, the
    /// gate opens. A pending approval is cancelled. `/plan off`, operator
    /// `release`/`off`.
    Off,
    /// The Cancel button / `/plan cancel` / operator `cancel`: the pending
    /// plan must not be executed. The session is [`Mode::Halted`](crate::model::Mode::Halted) (read-only)
    /// until a new plan is approved or a person releases it. Only while this
    /// approval is the pending one (a stale click changes nothing).
    CancelApproval(ApprovalId),
    SetAuto(bool),
    /// A person claims the pending plan: their name on every card, the
    /// others' reminders held until the claim runs out ([`crate::claim`]).
    Claim {
        approval_id: ApprovalId,
    },
    /// The agent opens a subagent run, or reports that an open one is still
    /// alive (a heartbeat).
    RegisterSubagent(String),
    UnregisterSubagent(String),
    /// A person closes open subagent runs (all, or the one named): a crashed
    /// child must not keep a plan unapprovable. `/plan subagents clear`,
    /// operator API.
    ClearSubagents {
        run_id: Option<String>,
    },
    Ask {
        question: String,
        options: Vec<String>,
        allow_freetext: bool,
    },
    Answer {
        question_id: Option<QuestionId>,
        answer: String,
    },
    TakeInjection,
    /// The agent's hook relays a tool call its harness would ask its user
    /// about ([`crate::permission`]): the rules answer it, or people are
    /// asked. `rules` are the configuration's and the agent's stored ones
    /// (the shell loads them; the session's own are in the state).
    AskPermission {
        tool: String,
        input: serde_json::Value,
        paths: Option<Vec<crate::scope::Target>>,
        rules: crate::permission::Rules,
    },
    /// A person answers the waiting permission request.
    AnswerPermission {
        question_id: Option<QuestionId>,
        answer: crate::permission::PermissionAnswer,
    },
    /// The hook stopped waiting for an answer: the request expires.
    ExpirePermission {
        question_id: QuestionId,
    },
    /// The agent's hook waits for an answer to the request until `until`
    /// (a long-poll began): a person's answer is for someone waiting only
    /// while such polls keep coming ([`crate::permission::HEARD_GRACE_MS`]).
    PermissionWaiting {
        question_id: QuestionId,
        until: Timestamp,
    },
    /// The gate denied a file tool outside the approved plan's scope: ask
    /// people to widen it by these (normalized, relative) paths, as an
    /// amendment ([`crate::scope`]). Each path is asked for once.
    WidenScope {
        paths: Vec<String>,
    },
    TimerFired(Timer),
    /// The agent tries to stop (Claude Code's and Codex's `Stop` hook, the
    /// API): held to the approved plan while its steps are open
    /// ([`crate::keep_going`]); the answer is [`Transition::keep_going`].
    Stopping {
        /// The agent's last message, for the audit (cut).
        last_message: Option<String>,
        /// How long the harness's stop already waited for people's decision
        /// of a pending plan (Claude Code's `Stop` hook waits first, then
        /// says so): `None` asks whether to wait at all.
        waited_secs: Option<u64>,
    },
    /// The harness wrote its own to-do list (Claude Code's `TodoWrite`):
    /// progress of the approved plan ([`crate::keep_going::Todo`]).
    Todos {
        todos: Vec<crate::keep_going::Todo>,
    },
    /// The gate saw a call while an approved plan executes: count it
    /// against the step in progress ([`crate::ran`]). Nothing happens
    /// outside an execution.
    Called {
        tool: String,
        /// The command, or the tool and its paths ([`crate::ran::shown`]).
        shown: String,
        outcome: crate::ran::CallOutcome,
    },
}

impl Command {
    /// A short name for spans and the audit.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Enter { .. } => "enter",
            Command::UpdatePlan { .. } => "update_plan",
            Command::Propose { .. } => "propose",
            Command::Decide { verdict: Verdict::Approve | Verdict::ApproveWith(_), .. }
            | Command::DecideConfirmed { verdict: Verdict::Approve | Verdict::ApproveWith(_), .. } => "approve",
            Command::Decide { verdict: Verdict::Edit(_), .. } | Command::DecideConfirmed { verdict: Verdict::Edit(_), .. } => "edit",
            Command::Decide { verdict: Verdict::Revise(_), .. } | Command::DecideConfirmed { verdict: Verdict::Revise(_), .. } => "revise",
            Command::Off => "release",
            Command::CancelApproval(_) => "cancel",
            Command::SetAuto(_) => "auto",
            Command::Claim { .. } => "claim",
            Command::RegisterSubagent(_) => "subagent_open",
            Command::UnregisterSubagent(_) => "subagent_close",
            Command::ClearSubagents { .. } => "subagents_clear",
            Command::Ask { .. } => "ask",
            Command::Answer { .. } => "answer",
            Command::TakeInjection => "take_injection",
            Command::AskPermission { .. } => "ask_permission",
            Command::AnswerPermission { .. } => "permission",
            Command::ExpirePermission { .. } => "permission_expired",
            Command::PermissionWaiting { .. } => "permission_waiting",
            Command::WidenScope { .. } => "widen_scope",
            Command::TimerFired(Timer { kind: TimerKind::Timeout, .. }) => "timeout",
            Command::TimerFired(Timer { kind: TimerKind::Nudge(_), .. }) => "nudge",
            Command::TimerFired(Timer { kind: TimerKind::Escalate | TimerKind::Level(_), .. }) => "escalate",
            Command::TimerFired(Timer { kind: TimerKind::AgentNudge(_), .. }) => "agent_nudge",
            Command::TimerFired(Timer { kind: TimerKind::SubagentExpiry, .. }) => "subagent_expiry",
            Command::Stopping { .. } => "stopping",
            Command::Todos { .. } => "todos",
            Command::Called { .. } => "called",
        }
    }
}

/// What the shell passes in besides the state: the time, fresh random bytes
/// (used only when the command mints an id), the agent's timer policy and
/// its approval rules (stamped on each new proposal).
#[derive(Debug, Clone)]
pub struct Ctx {
    pub now: Timestamp,
    pub random: [u8; 16],
    pub timers: TimerPolicy,
    pub approvals: ApprovalPolicy,
}

/// One append-only audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub at: Timestamp,
    pub agent: String,
    pub session_id: String,
    pub actor: String,
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<ApprovalId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    pub detail: String,
}

/// What the shell must do after committing a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Write the proposal's markdown document (before its cards go out).
    WriteDocument {
        approval_id: ApprovalId,
    },
    /// Append a decision receipt to the proposal's document.
    AppendReceipt {
        approval_id: ApprovalId,
        text: String,
    },
    /// Post the proposal's card (and document) to every destination.
    PostCards {
        approval_id: ApprovalId,
    },
    /// Re-render every posted card of the proposal (decided, superseded, progress).
    UpdateCards {
        approval_id: ApprovalId,
    },
    /// Remind approvers; the shell re-checks the approval is still pending.
    Nudge {
        approval_id: ApprovalId,
        number: u8,
    },
    /// Reach level `level` (1-based) of the escalation ladder: the
    /// `round`-th time (0: first; more: its `repeat`).
    Escalate {
        approval_id: ApprovalId,
        level: u8,
        round: u16,
    },
    Schedule(Timer),
    Cancel(Timer),
    /// The session's decision or question changed: release long-pollers.
    Wake,
    PostQuestion {
        question_id: QuestionId,
    },
    UpdateQuestion {
        question_id: QuestionId,
    },
}

/// The result of [`apply`](crate::machine::apply): the new state, records to persist beside it, the
/// effects, and whether anything changed at all (idempotent re-proposals and
/// stale timers change nothing).
#[derive(Debug, Clone)]
pub struct Transition {
    pub state: State,
    /// A proposal that stopped being the latest (superseded) and must be persisted.
    pub retired: Option<Proposal>,
    /// A question that was answered and must be persisted.
    pub answered: Option<Question>,
    pub effects: Vec<Effect>,
    pub audit: Vec<AuditEvent>,
    /// For [`Command::TakeInjection`]: the injection that was taken.
    pub taken_injection: Option<String>,
    pub changed: bool,
    /// The [`crate::authority::check`] that let this transition open the
    /// gate, if it did: [`crate::machine::apply`] refuses a transition that
    /// opens it without one.
    pub(crate) opened_by: Option<crate::authority::Authorized>,
    /// For [`Command::AskPermission`]: what the rules said (`Ask`: people
    /// were asked; the request is the session's `pending_permission`).
    pub permission: Option<crate::permission::Judged>,
    /// An "always allow" rule a person's answer created, stored for the
    /// agent in the transition's commit.
    pub rule_added: Option<crate::permission::StoredRule>,
    /// For [`Command::Stopping`]: go on (the instruction), or stop.
    pub keep_going: Option<crate::keep_going::Answer>,
}

impl Transition {
    /// Who opened the gate with this transition (the approvers of a quorum
    /// count one by one; this is the last), if it did.
    pub fn opened_by(&self) -> Option<&crate::authority::Authorized> {
        self.opened_by.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_venue_means_the_same_by_each_decision() {
        let id = ApprovalId([7; 16]);
        let decide = |verdict| Command::Decide { approval_id: id, verdict };
        assert_eq!(Decision::approve().command(id), decide(Verdict::Approve));
        assert_eq!(Decision::approve_with(Terms::default()).command(id), decide(Verdict::Approve), "no terms: a plain approval");
        let note = Terms { note: Some("not the migrations".into()), except: vec![] };
        assert_eq!(Decision::approve_with(note.clone()).command(id), decide(Verdict::ApproveWith(note)));
        let except = Terms { note: None, except: vec![3] };
        assert_eq!(Decision::approve_with(except.clone()).command(id), decide(Verdict::ApproveWith(except)));
        let plan = Plan::titled("Smaller");
        assert_eq!(Decision::edit(plan.clone()).command(id), decide(Verdict::Edit(plan)));
        assert_eq!(Decision::revise("smaller").command(id), decide(Verdict::Revise("smaller".into())));
        assert_eq!(Decision::Cancel.command(id), Command::CancelApproval(id));
        assert_eq!(Decision::Release.command(id), Command::Off);
        assert_eq!(Decision::Claim.command(id), Command::Claim { approval_id: id });
    }
}
