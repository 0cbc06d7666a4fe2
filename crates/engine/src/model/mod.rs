//! What the approval state machine works on: a session, its proposals,
//! questions and timers, and who acts on them.
//!
//! Plain data: every rule that changes these values is in
//! [`machine`](crate::machine), and `docs/STATE_MACHINE.md` draws the table.
//!
//! The values the state holds that belong to one subject live in a
//! submodule named after the module of its rules (`model::review` holds
//! [`Review`], whose rules are in [`crate::review`], which re-exports it),
//! so the model sits below every rule that reads it and imports none of
//! them.

pub mod amendment;
pub mod authority;
pub mod keep_going;
pub mod review;
pub mod subagents;

use crate::ids::{ApprovalId, QuestionId, SessionKey, Timestamp};
use crate::plan::{self, Plan, Step};
use serde::{Deserialize, Serialize};
use subagents::SubagentRun;

pub use review::{ApprovalPolicy, Review};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Where a session stands, as the gate sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Not planning: executing an approved plan, released by a person, or
    /// never planned. Whether mutations may run here depends on the agent's
    /// [`GateScope`] (see [`crate::gate`]).
    #[default]
    Normal,
    /// Planning: read-only until a human approves a proposal.
    Plan,
    /// A person cancelled the plan ("do not do this"). Read-only, like plan
    /// mode, until the agent proposes again and a new plan is approved, or a
    /// person explicitly releases the session (`/plan off`, operator
    /// `release`). Cancelling never opens the gate.
    Halted,
}

/// Which sessions the mutation gate lets mutate, per agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GateScope {
    /// The default: *no approved plan, no mutation*. Mutations run only while
    /// the session executes a plan a human approved (or auto mode approved),
    /// or after a person released it with `/plan off`. Unknown sessions,
    /// sessions that never planned, and sessions whose plan completed or was
    /// cancelled are read-only.
    #[default]
    ApprovedPlan,
    /// The seed's opt-in behaviour: only plan mode (and a cancelled plan) is
    /// gated; a session that is not planning may mutate freely.
    PlanModeOnly,
}

/// The session's approval, as `Status.approval` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    #[default]
    None,
    Pending,
    Approved,
    Edited,
    Rejected,
    TimedOut,
    /// A person cancelled the latest plan; the session is [`Mode::Halted`].
    Cancelled,
}

/// A proposal's fate, as `Decision.status` reports it. Once it leaves
/// `Pending` it never changes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionStatus {
    Pending,
    Approved,
    Edited,
    Rejected,
    TimedOut,
    Cancelled,
    Superseded,
}

impl DecisionStatus {
    /// Every status, pending first.
    pub const ALL: [DecisionStatus; 7] = [
        DecisionStatus::Pending,
        DecisionStatus::Approved,
        DecisionStatus::Edited,
        DecisionStatus::Rejected,
        DecisionStatus::TimedOut,
        DecisionStatus::Cancelled,
        DecisionStatus::Superseded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DecisionStatus::Pending => "pending",
            DecisionStatus::Approved => "approved",
            DecisionStatus::Edited => "edited",
            DecisionStatus::Rejected => "rejected",
            DecisionStatus::TimedOut => "timed_out",
            DecisionStatus::Cancelled => "cancelled",
            DecisionStatus::Superseded => "superseded",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// The n-th reminder to approvers (1-based).
    Nudge(u8),
    Timeout,
    /// Post the card to the escalation destinations (after the last nudge).
    /// Stored by versions before the ladder; fires as [`TimerKind::Level`] 1.
    Escalate,
    /// The n-th reminder to the *agent* that it sits in plan mode without a proposal.
    AgentNudge(u8),
    /// An open subagent run was not heard of for the configured expiry
    /// ([`crate::subagents`]); the timer's `approval_id` is
    /// [`crate::subagents::timer_id`] of the run.
    SubagentExpiry,
    /// The n-th level (1-based) of the escalation ladder
    /// ([`TimerPolicy::ladder`]): reached for the first time, or again
    /// (its `repeat`). Which people and places a level reaches is the
    /// shell's (it reads schedules); the engine only says when.
    Level(u8),
}

/// A persisted timer. Due times are wall-clock so they survive restarts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Timer {
    pub due: Timestamp,
    pub session: SessionKey,
    pub approval_id: ApprovalId,
    pub kind: TimerKind,
}

/// One proposal (a version of a session's plan) and its fate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub approval_id: ApprovalId,
    pub session: SessionKey,
    pub version: u32,
    pub plan: Plan,
    /// The verbatim markdown for markdown proposals.
    pub markdown: Option<String>,
    /// Bound to `approval_id`: the hash of exactly what was proposed.
    pub plan_hash: String,
    pub created_at: Timestamp,
    pub status: DecisionStatus,
    pub decided_by: Option<String>,
    pub decided_at: Option<Timestamp>,
    pub feedback: Option<String>,
    pub edited_plan: Option<Plan>,
    pub injection: Option<String>,
    pub superseded_by: Option<u32>,
    /// Timers still scheduled for this proposal.
    pub timers: Vec<Timer>,
    /// For a `Cancelled` proposal: a person released the session (`/plan
    /// off`: no plan required, the gate opened) rather than pressing Cancel
    /// (the session halted). Receipts say which.
    #[serde(default)]
    pub released: bool,
    /// How people review this version: who asked for it, the round's rules
    /// and approvals, what changed since the version before, and which steps
    /// the approval left out ([`crate::review`]).
    #[serde(default)]
    pub review: Review,
    /// Set when this version is an amendment: steps the agent added while
    /// executing an approved plan, waiting for an approval of their own
    /// ([`crate::amendment`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amends: Option<amendment::Amendment>,
    /// When the agent stopped waiting for this pending version's decision
    /// (its harness's wait ran out and it stopped): the open card says the
    /// decision reaches it only when it resumes. Cleared when the agent
    /// sends the same plan again (it waits again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_left_at: Option<Timestamp>,
    /// Where the agent runs (repository, branch, host), when it said
    /// ([`crate::project`]): labels the card and routes it to the
    /// destinations whose `projects` match. An amendment keeps its plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<crate::project::Project>,
    /// The session's version before this one, when there was one: what the
    /// web page diffs against, found by id rather than by a search of
    /// every proposal. Proposals stored before it was kept read as none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<ApprovalId>,
    /// The number of the latest reminder sent about it (0: none yet), so a
    /// listing shows it without reading the audit. Proposals stored before
    /// it was kept read as 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reminders_sent: u8,
    /// The highest level of the escalation ladder reached (0: none), kept
    /// with the proposal in the commit that fires the level's timer, so a
    /// restart never reaches a level twice and `plangate ladder show`
    /// knows where the ladder stands without reading the audit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub escalated: u8,
    /// What ran under this approval, once the plan it approved (with its
    /// amendments) ended: set on the version that executed last
    /// ([`crate::ran`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<crate::ran::Ran>,
    /// Who took this pending version on (the Claim button, `/plan claim`)
    /// and until when: the cards name them, and the reminders to the others
    /// wait until the claim runs out ([`crate::claim`]). Proposals stored
    /// before claims existed read as unclaimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
}

/// A person's claim on a pending proposal: "I am on it".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// How receipts and cards name the claimer (`telegram:@alice`), as
    /// decisions record `decided_by`.
    pub by: String,
    /// Who they are ([`crate::authority::identity`], `telegram:111`): what
    /// makes a second claim the same person's (a name can change).
    pub identity: String,
    pub at: Timestamp,
    /// When the claim runs out without a decision: the reminders resume.
    pub until: Timestamp,
}

impl Claim {
    /// Whether the claim still holds at `now`.
    pub fn holds(&self, now: Timestamp) -> bool {
        now < self.until
    }
}

fn is_no_stop(n: &u32) -> bool {
    *n == 0
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

impl Proposal {
    /// What the agent must execute once approved: the edited plan when
    /// approvers edited it, the plan without the excluded steps when they
    /// left some out, else the proposal.
    pub fn approved_plan(&self) -> Cow<'_, Plan> {
        match &self.edited_plan {
            Some(edited) => Cow::Borrowed(edited),
            None if !self.review.excluded.is_empty() => Cow::Owned(review::without_steps(&self.plan, &self.review.excluded)),
            None => Cow::Borrowed(&self.plan),
        }
    }

    /// The hash of what the agent must execute ([`Proposal::approved_plan`]):
    /// bound to the approval, so an approval "except steps 3, 5" carries the
    /// hash of the remaining steps.
    pub fn effective_hash(&self) -> String {
        match &self.edited_plan {
            Some(edited) => plan::plan_hash(edited, None),
            None if !self.review.excluded.is_empty() => plan::plan_hash(&self.approved_plan(), None),
            None => self.plan_hash.clone(),
        }
    }

    /// The approvals that decided this proposal: those of the approved
    /// content. Empty while pending and for other fates.
    pub fn deciding_approvals(&self) -> Vec<&review::Approval> {
        if !matches!(self.status, DecisionStatus::Approved | DecisionStatus::Edited) {
            return Vec::new();
        }
        let hash = self.effective_hash();
        self.review.approvals.iter().filter(|a| a.approved_hash == hash).collect()
    }

    /// The receipt of what ran under this proposal: its own, or the one
    /// sealed on the session's latest version when this proposal is among
    /// the approvals it ran under (an amendment turned down after the plan
    /// was approved leaves the receipt on the amendment, the version that
    /// was latest when the plan ended).
    pub fn what_ran<'a>(&'a self, state: Option<&'a State>) -> Option<&'a crate::ran::Ran> {
        self.ran.as_ref().or_else(|| {
            let ran = state?.latest.as_ref()?.ran.as_ref()?;
            ran.execution.approvals.contains(&self.approval_id).then_some(ran)
        })
    }

    /// The markdown document: verbatim for markdown proposals, rendered
    /// otherwise; then, for a re-proposal, what changed since the version
    /// before.
    pub fn document(&self) -> String {
        let mut doc = match &self.markdown {
            Some(md) => md.clone(),
            None => plan::render_markdown(&self.plan),
        };
        if let Some(changes) = &self.review.changes {
            if !doc.ends_with('\n') {
                doc.push('\n');
            }
            if !doc.ends_with("\n\n") {
                doc.push('\n');
            }
            doc.push_str(&changes.markdown());
        }
        doc
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    Pending,
    Answered,
    /// Nobody answered in time (a permission request handed back to the
    /// harness's own dialog, or replaced by a newer one).
    Expired,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub question_id: QuestionId,
    pub session: SessionKey,
    pub question: String,
    pub options: Vec<String>,
    pub allow_freetext: bool,
    pub asked_at: Timestamp,
    pub status: QuestionStatus,
    pub answer: Option<String>,
    pub answered_by: Option<String>,
    pub answered_at: Option<Timestamp>,
    /// Set when this is a permission request ([`crate::permission`]): the
    /// graded answers instead of free options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<crate::permission::PermissionAsk>,
    /// Set when plangate asks, not the agent: the agent stopped with the
    /// approved plan's steps open ([`crate::keep_going::Stalled`]); the
    /// answers are Continue and Done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<keep_going::Stalled>,
}

/// Everything the engine knows about one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub key: SessionKey,
    pub mode: Mode,
    pub approval: ApprovalState,
    pub version: u32,
    pub rejection_count: u32,
    pub auto_approve: bool,
    pub steps: Vec<Step>,
    /// Subagent runs the plan waits for, by run id ([`crate::subagents`]).
    #[serde(deserialize_with = "subagents::deserialize_runs")]
    pub open_subagents: BTreeMap<String, SubagentRun>,
    pub pending_question: Option<Question>,
    /// The permission request the agent's hook waits on, if any (one at a
    /// time: the harness asks one thing at a time).
    #[serde(default)]
    pub pending_permission: Option<Question>,
    /// When the last permission request stopped waiting (answered,
    /// expired, replaced): a typed answer without a request id is refused
    /// while the waiting one may not be the card its sender read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_settled_at: Option<Timestamp>,
    /// How many times the agent tried to stop with the approved plan's
    /// steps open since it last made progress ([`crate::keep_going`]).
    #[serde(default, skip_serializing_if = "is_no_stop")]
    pub stop_count: u32,
    /// The harness's own to-do list as last seen (Claude Code's
    /// `TodoWrite`), while an approved plan executes: its progress where the
    /// agent reports no plan steps ([`crate::keep_going::next_open`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<keep_going::Todo>,
    /// What people allowed "for this session" ([`crate::permission`]),
    /// until the plan is replaced or done.
    #[serde(default)]
    pub session_rules: Vec<crate::permission::Rule>,
    /// The `[PLAN_DECISION]` text waiting for the agent's next turn.
    pub injection: Option<String>,
    pub latest_approval: Option<ApprovalId>,
    pub updated_at: Timestamp,
    /// Reminders to the agent while it plans without proposing.
    #[serde(default)]
    pub agent_timers: Vec<Timer>,
    /// Who explicitly released the session from planning (`/plan off`,
    /// operator `release`): the only way, besides an approved plan, that an
    /// [`GateScope::ApprovedPlan`] gate lets mutations run. Cleared when the
    /// agent plans again.
    #[serde(default)]
    pub released_by: Option<String>,
    /// The harness of the last proposal ([`crate::harness`]): what the
    /// texts this session's agent reads tell it to do.
    #[serde(default)]
    pub harness: crate::harness::Harness,
    /// People who asked to release the session while a quorum needs more
    /// of them ([`crate::authority::record_release`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub release_requests: Vec<authority::ReleaseRequest>,
    /// The texts of the steps a human approved, while the session executes
    /// them: the reference the agent's step updates are held to
    /// ([`crate::amendment`]). Empty when nothing is approved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved_steps: Vec<String>,
    /// The texts of steps let through after approval under
    /// `[approvals] amendments = "flag"`: not approved by anyone, so not
    /// locked like [`Session::approved_steps`], and marked "added after
    /// approval" wherever the plan is shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged_steps: Vec<String>,
    /// The approved plan's scope while it executes ([`crate::scope`]):
    /// file tools outside it are denied. Empty when none was declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    /// Paths an amendment already asked to widen the scope by since the
    /// approval: asked once, so an agent retrying a refused path does not
    /// post card after card.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope_asked: Vec<String>,
    /// The amendment waiting for people while the session executes: the
    /// gate, which sees only the session, denies mutations until it is
    /// decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendment_pending: Option<ApprovalId>,
    /// The tally of the approved plan executing now ([`crate::ran`]):
    /// sealed into the proposal's [`Proposal::ran`] when the plan ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<crate::ran::Execution>,
}

impl Session {
    /// A never-seen session: normal mode, no approval, version 0.
    pub fn new(key: SessionKey) -> Session {
        Session {
            key,
            mode: Mode::Normal,
            approval: ApprovalState::None,
            version: 0,
            rejection_count: 0,
            auto_approve: false,
            steps: Vec::new(),
            open_subagents: BTreeMap::new(),
            pending_question: None,
            pending_permission: None,
            permission_settled_at: None,
            stop_count: 0,
            todos: Vec::new(),
            session_rules: Vec::new(),
            injection: None,
            latest_approval: None,
            updated_at: Timestamp(0),
            agent_timers: Vec::new(),
            released_by: None,
            harness: crate::harness::Harness::Api,
            release_requests: Vec::new(),
            approved_steps: Vec::new(),
            flagged_steps: Vec::new(),
            scope: Vec::new(),
            scope_asked: Vec::new(),
            amendment_pending: None,
            execution: None,
        }
    }
}

/// The input of [`apply`](crate::machine::apply): a session and its latest proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub session: Session,
    pub latest: Option<Proposal>,
}

impl State {
    pub fn new(key: SessionKey) -> State {
        State { session: Session::new(key), latest: None }
    }

    /// The approved plan the session carries out, if it does (not while it
    /// plans, after a cancel, or once released without a plan).
    pub fn executing_plan(&self) -> Option<&Plan> {
        let session = &self.session;
        let executing = session.mode == Mode::Normal && matches!(session.approval, ApprovalState::Approved | ApprovalState::Edited);
        self.latest.as_ref().map(|p| &p.plan).filter(|_| executing)
    }

    /// The risk classes of a call that the approved plan being carried out
    /// did not declare ([`plangate_gate::classes`]): the gate asks people
    /// about such a call, and its permission card says why. Empty when no
    /// plan executes (before approval the gate itself holds; after it, the
    /// agent's rules) or the plan allows them all.
    pub fn outside_the_plan(&self, tool: &str, input: &serde_json::Value) -> Vec<plangate_gate::classes::RiskClass> {
        let Some(plan) = self.executing_plan() else { return Vec::new() };
        plangate_gate::classes::classes(tool, input).into_iter().filter(|c| !plan.allows.contains(c)).collect()
    }
}

/// Who issued a command. Authorization (is this human an approver for this
/// destination?) is the shell's job, because it depends on configuration;
/// the engine enforces what no configuration may change: an agent never
/// decides, edits, cancels or turns plan mode off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Actor {
    Agent,
    /// A person on a chat channel: `id` is `<channel>:<user id>`, `name` how
    /// receipts show them (`telegram:@alice`).
    Human {
        id: String,
        name: String,
    },
    /// A holder of the operator token (CLI, scripts). `name` is what they claimed.
    Operator {
        name: String,
    },
    /// The timer scheduler.
    Scheduler,
}

impl Actor {
    /// How receipts and the audit name this actor.
    pub fn label(&self) -> String {
        match self {
            Actor::Agent => "agent".to_string(),
            Actor::Human { name, .. } => name.clone(),
            Actor::Operator { name } => format!("operator:{name}"),
            Actor::Scheduler => "scheduler".to_string(),
        }
    }

    pub(crate) fn is_agent(&self) -> bool {
        matches!(self, Actor::Agent)
    }

    pub(crate) fn is_person(&self) -> bool {
        matches!(self, Actor::Human { .. } | Actor::Operator { .. })
    }
}

/// When reminders and the timeout fire, relative to the proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerPolicy {
    pub nudges_ms: Vec<u64>,
    pub timeout_ms: Option<u64>,
    /// The escalation ladder: when each level is reached and how often it
    /// is reached again, in order (empty: no escalation).
    pub ladder: Vec<Rung>,
    /// How long an open subagent run may go unheard of before it expires;
    /// `None`: runs stay open until closed or cleared by a person.
    pub subagent_expiry_ms: Option<u64>,
    /// How long a person's claim of a pending plan holds without a
    /// decision; meanwhile the reminders to the others wait
    /// ([`crate::claim`]).
    pub claim_timeout_ms: u64,
}
/// One level of the escalation ladder, as the engine sees it: when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rung {
    /// From the proposal.
    pub after_ms: u64,
    /// Reach the level again this often until the plan is decided or a
    /// later level is reached; `None`: once.
    pub repeat_ms: Option<u64>,
}

impl Rung {
    /// A level reached once, `after_ms` after the proposal.
    pub fn once(after_ms: u64) -> Rung {
        Rung { after_ms, repeat_ms: None }
    }
}

/// How long a claim holds without a decision (`[approvals] claim_timeout`),
/// by default: 30 minutes.
pub const DEFAULT_CLAIM_TIMEOUT_MS: u64 = 30 * 60_000;

impl Default for TimerPolicy {
    fn default() -> TimerPolicy {
        TimerPolicy {
            nudges_ms: Vec::new(),
            timeout_ms: None,
            ladder: Vec::new(),
            subagent_expiry_ms: None,
            claim_timeout_ms: DEFAULT_CLAIM_TIMEOUT_MS,
        }
    }
}
