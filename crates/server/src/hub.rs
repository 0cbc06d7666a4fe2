//! Inbound chat events → engine commands.
//!
//! Every channel adapter hands its events to [`Hub::handle`]. This is where
//! the business rules of chat live, once for all platforms: which session a
//! `/plan` command means, who may decide (the destination's approver
//! allowlist), foreign workspaces, duplicate events, and what to tell the
//! user. Card edits that follow a decision are effects of the transition,
//! performed by [`Core`] for every card of the approval on every channel.

use crate::approvers::Venue;
use crate::core::{Core, CoreError, Decision, DecisionRefused, ExecMeta};
use async_trait::async_trait;
use plangate_channel::{Action, Inbound, InboundHandler, Reply};
use plangate_engine::codec::Button;
use plangate_engine::grammar::AcceptTerms;
use plangate_engine::grammar::{self, Parsed, PlanCommand, Target};
use plangate_engine::view::short_ref;
use plangate_engine::{Actor, ApprovalId, Command, DecisionStatus, Mode, Plan, Proposal, Refusal, SessionKey, State, Step, Terms};
use std::collections::HashMap;
use std::sync::Arc;
use tracing::Instrument;

mod list;
mod pair;
mod permissions;
mod session;
mod text;

use text::{bad_command, status_text, subagents_text, summary_line};

/// How a chat becomes a destination, for the chats that are none.
const PAIR_HINT: &str =
    "Pair it (`plangate pair <platform>` on the server, then `/plan pair CODE` here), or add it as a destination in plangate's config.";

pub struct Hub {
    core: Arc<Core>,
    /// Per channel: the only workspaces/guilds whose users may act. Filled
    /// as adapters start, which is after the hub is handed to them.
    expected_teams: std::sync::RwLock<HashMap<String, Vec<String>>>,
    /// The name each person (`telegram:111`) last showed, as the platform
    /// gave it: approver lists show `@alice (telegram:111)` rather than a
    /// bare number. Kept durably (the cursor `name:<identity>`), written
    /// only when it changes; shown beside the id, never used to decide who
    /// someone is.
    names: std::sync::Mutex<HashMap<String, String>>,
}

/// Why an event did nothing: a sentence for the user, or nothing to say
/// at all because another replica handled the same event first (a
/// platform's retry reaching a second replica) and answers it.
#[derive(Debug)]
enum Refused {
    Say(String),
    /// For the person's eyes only (a passkey confirmation link).
    Private(String),
    HandledElsewhere,
}

impl From<String> for Refused {
    fn from(why: String) -> Refused {
        Refused::Say(why)
    }
}

impl From<&str> for Refused {
    fn from(why: &str) -> Refused {
        Refused::Say(why.to_string())
    }
}

impl From<CoreError> for Refused {
    fn from(e: CoreError) -> Refused {
        if e.handled_elsewhere() {
            return Refused::HandledElsewhere;
        }
        Refused::Say(e.to_person())
    }
}

impl Refused {
    /// A refused decision, with this chat's and user's ids when the refusal
    /// is about who may decide here: finding them is the hardest step of a
    /// first setup, and the person refused is usually the one setting it up.
    fn of(ev: &Inbound, refused: DecisionRefused) -> Refused {
        match refused {
            DecisionRefused::NotAllowed(why) => Refused::Say(format!("{why}{}", Hub::ids_hint(ev))),
            DecisionRefused::Core(e) => e.into(),
            other => Refused::Say(other.to_string()),
        }
    }

    fn text(self) -> Reply {
        match self {
            Refused::Say(why) => Reply::Text(why),
            Refused::Private(text) => Reply::Private(text),
            Refused::HandledElsewhere => Reply::None,
        }
    }

    fn notice(self) -> Reply {
        match self {
            Refused::Say(why) => Reply::Notice(why),
            Refused::Private(text) => Reply::Private(text),
            Refused::HandledElsewhere => Reply::None,
        }
    }
}

impl Hub {
    pub fn new(core: Arc<Core>) -> Hub {
        Hub { core, expected_teams: std::sync::RwLock::new(HashMap::new()), names: std::sync::Mutex::new(HashMap::new()) }
    }

    /// Allow `team` on `channel` (in addition to any allowed before): from
    /// the first call on, users of every other team are refused there.
    pub fn expect_team(&self, channel: &str, team: String) {
        let mut expected = self.expected_teams.write().unwrap_or_else(|e| e.into_inner());
        let teams = expected.entry(channel.to_string()).or_default();
        if !teams.contains(&team) {
            teams.push(team);
        }
    }

    fn who(ev: &Inbound) -> String {
        format!("{}:{}", ev.channel, ev.user.id)
    }

    fn actor(ev: &Inbound) -> Actor {
        let name = ev.user.name.trim();
        let name = if name.is_empty() { ev.user.id.as_str() } else { name };
        Actor::Human { id: Self::who(ev), name: format!("{}:{}", ev.channel, name) }
    }

    /// Agents whose cards go to this chat.
    fn chat_agents(&self, ev: &Inbound) -> Vec<String> {
        self.core.pairing.approvers().agents_in(ev.channel, &ev.chat)
    }

    /// The ids of this chat and this user in the exact form plangate's
    /// config wants, for a refusal: finding them is the hardest step of a
    /// first setup, and the person being refused is usually the one setting
    /// it up. Logged as well, for an operator reading the server's output.
    fn ids_hint(ev: &Inbound) -> String {
        let who = Self::who(ev);
        tracing::warn!(channel = ev.channel, chat = %ev.chat, user = %who, "refused: to allow this, put chat = \"{}\" in a [destinations.<name>] with channel = \"{}\", and \"{who}\" in its approvers", ev.chat, ev.channel);
        format!("\nThis chat: chat = \"{}\" (channel = \"{}\"). You: \"{who}\" (for approvers = [...]).", ev.chat, ev.channel)
    }

    fn venue(ev: &Inbound) -> Venue<'_> {
        Venue::Chat { channel: ev.channel, chat: &ev.chat }
    }

    /// Whether the user may decide plans of `key`'s agent from this chat
    /// (a refusal is audited by the core).
    async fn authorize(&self, ev: &Inbound, key: &SessionKey, approval: Option<(ApprovalId, u32)>) -> Result<(), Refused> {
        let checked = self.core.authorize(key, approval, &Self::actor(ev), Self::venue(ev)).await;
        checked.map_err(|why| Refused::of(ev, why.into()))
    }

    /// Audit a refusal that is not about who decides (those the core audits).
    async fn refuse(&self, ev: &Inbound, key: &SessionKey, approval: Option<(ApprovalId, u32)>, why: &str) {
        let detail = format!("{} refused in {} chat {}: {why}", Self::who(ev), ev.channel, ev.chat);
        self.core.audit(key, &Self::who(ev), "refused", approval, detail).await;
    }

    /// Handle one event. An event another replica handled first gets no
    /// reply ([`Refused::HandledElsewhere`]), like an event seen before.
    async fn dispatch(&self, ev: Inbound) -> Reply {
        if let Some(key) = ev.idempotency_key.clone() {
            if self.core.blocking(move |s| s.seen(&key)).await.unwrap_or(false) {
                return Reply::None;
            }
        }
        let expected = self.expected_teams.read().unwrap_or_else(|e| e.into_inner()).get(ev.channel).cloned();
        self.remember_name(&ev).await;
        if let Some(teams) = expected {
            if !ev.user.team.as_ref().is_some_and(|team| teams.contains(team)) {
                let key = SessionKey::new("-", "-");
                self.refuse(&ev, &key, None, &format!("foreign team {:?}", ev.user.team)).await;
                self.mark_seen(&ev).await;
                return Reply::Notice("This workspace is not allowed to decide plans here.".to_string());
            }
        }
        let reply = match ev.action.clone() {
            Action::Command(parsed) => Box::pin(self.command(&ev, parsed)).await,
            Action::BadCommand(text) => Reply::Text(bad_command(&text)),
            Action::Button(button) => Box::pin(self.button(&ev, button)).await,
            Action::UnknownButton(raw) => {
                let shown: String = raw.chars().take(80).collect();
                self.refuse(&ev, &SessionKey::new("-", "-"), None, &format!("unknown button data {shown:?}")).await;
                Reply::Notice("Unknown button.".to_string())
            }
            Action::Feedback { approval_id, text } => self.decide(&ev, approval_id, Decision::revise(text)).await.into_notice(),
            Action::Edit { approval_id, steps } => self.edit(&ev, approval_id, steps).await.into_notice(),
            Action::Approve { approval_id, note, except } => {
                self.decide(&ev, approval_id, Decision::approve_with(Terms { note, except })).await.into_notice()
            }
            Action::AnswerText { question_id, text } => self.answer(&ev, Some(question_id), None, text).await.into_notice(),
        };
        self.mark_seen(&ev).await;
        reply
    }

    /// Record the event as handled. A transition already wrote its key in
    /// its own commit; only events that changed nothing (reads, refusals)
    /// still need the (durable, flushed) write.
    async fn mark_seen(&self, ev: &Inbound) {
        if let Some(key) = ev.idempotency_key.clone() {
            let _ = self.core.blocking(move |s| if s.seen(&key)? { Ok(()) } else { s.mark_seen(&key) }).await;
        }
    }

    async fn proposal(&self, id: ApprovalId) -> Option<Proposal> {
        self.core.blocking(move |s| s.proposal(&id)).await.ok().flatten()
    }

    /// Load `id`, check the user may decide it, and that it is still open:
    /// before a form (feedback, edit, a note, a confirmation) is opened.
    async fn decidable(&self, ev: &Inbound, id: ApprovalId) -> Result<Proposal, Refused> {
        let Some(p) = self.proposal(id).await else { return Err(DecisionRefused::NotFound.to_string().into()) };
        self.authorize(ev, &p.session, Some((id, p.version))).await?;
        if p.status != DecisionStatus::Pending {
            let version = self.core.load(&p.session).await.map(|s| s.session.version).unwrap_or(p.version);
            return Err(plangate_engine::machine::describe_stale(&p, version).into());
        }
        Ok(p)
    }

    async fn button(&self, ev: &Inbound, button: Button) -> Reply {
        match button {
            Button::Approve(id) => self.decide(ev, id, Decision::approve()).await.into_notice(),
            Button::ApproveWithNote(id) => match self.decidable(ev, id).await {
                Ok(p) => match self.separated(ev, &p).await {
                    Ok(()) => Reply::AskApproval {
                        approval_id: id,
                        version: p.version,
                        steps: p.plan.steps.iter().map(|s| s.step.clone()).collect(),
                        prompt: format!("Approve v{} ({}) with a note for the agent.", p.version, short_ref(&id)),
                    },
                    Err(why) => why.notice(),
                },
                Err(why) => why.notice(),
            },
            Button::ApproveEdit(id) => self.approve_edit(ev, id).await.into_notice(),
            Button::ConfirmCancel(id) => self.decide(ev, id, Decision::Cancel).await.into_notice(),
            Button::Claim(id) => self.decide(ev, id, Decision::Claim).await.into_notice(),
            Button::RequestChanges(id) => match self.decidable(ev, id).await {
                Ok(p) => Reply::AskFeedback {
                    approval_id: id,
                    version: p.version,
                    prompt: format!("Reply with what should change in v{} ({}).", p.version, short_ref(&id)),
                },
                Err(why) => why.notice(),
            },
            Button::Cancel(id) => match self.decidable(ev, id).await {
                Ok(p) => Reply::ConfirmCancel {
                    approval_id: id,
                    version: p.version,
                    prompt: format!(
                        "Cancel v{} for {}? The agent stays blocked (read-only) until a new plan is approved.",
                        p.version, p.session
                    ),
                },
                Err(why) => why.notice(),
            },
            Button::Edit(id) => match self.decidable(ev, id).await {
                Ok(p) => {
                    Reply::AskEdit { approval_id: id, version: p.version, steps: p.plan.steps.iter().map(|s| s.step.clone()).collect() }
                }
                Err(why) => why.notice(),
            },
            Button::View(id) => match self.proposal(id).await {
                Some(p) if !self.chat_agents(ev).contains(&p.session.agent) => {
                    Reply::Notice(format!("This plan is not shared with this chat.{}", Self::ids_hint(ev)))
                }
                Some(p) => Reply::Document { document: Core::document_of(&p), caption: format!("{} v{}", p.plan.title, p.version) },
                None => Reply::Notice("This plan no longer exists.".to_string()),
            },
            Button::Answer(qid, n) => self.answer(ev, Some(qid), Some(n), String::new()).await.into_notice(),
            Button::AnswerOther(qid) => match self.question_for(ev, qid).await {
                Ok(q) if q.permission.is_some() => Reply::AskAnswer {
                    question_id: qid,
                    prompt: format!(
                        "Reply with why {} is denied (the agent reads it).",
                        q.permission.as_ref().map(|p| p.tool.as_str()).unwrap_or("this call")
                    ),
                },
                Ok(q) => Reply::AskAnswer { question_id: qid, prompt: format!("Reply with your answer to: {}", q.question) },
                Err(why) => why.notice(),
            },
        }
    }

    /// Refuse (and audit) the requester of a `forbid_self` plan before a
    /// form is opened for them; the engine checks again when they submit.
    async fn separated(&self, ev: &Inbound, p: &Proposal) -> Result<(), Refused> {
        match plangate_engine::review::check_separation(p, &Self::actor(ev), "approve") {
            Ok(()) => Ok(()),
            Err(refusal) => {
                let why = refusal.to_string();
                self.refuse(ev, &p.session, Some((p.approval_id, p.version)), &why).await;
                Err(why.into())
            }
        }
    }

    /// Approve the round's edited plan, the one the card shows.
    async fn approve_edit(&self, ev: &Inbound, id: ApprovalId) -> Result<String, Refused> {
        // Authorized and still open (else: who decided it, or what replaced it).
        let p = self.decidable(ev, id).await?;
        let Some(edit) = p.review.edit.as_ref() else { return Err("No edited plan awaits approval on this plan.".into()) };
        self.decide(ev, id, Decision::edit(edit.plan.clone())).await
    }

    async fn question_for(&self, ev: &Inbound, qid: ApprovalId) -> Result<plangate_engine::Question, Refused> {
        let q = self.core.blocking(move |s| s.question(&qid)).await.ok().flatten().ok_or("This question no longer exists.")?;
        self.authorize(ev, &q.session, None).await?;
        match q.status {
            plangate_engine::QuestionStatus::Pending => Ok(q),
            plangate_engine::QuestionStatus::Expired => {
                Err("This request expired: nobody answered in time, so the agent asked at its terminal.".into())
            }
            plangate_engine::QuestionStatus::Answered => {
                Err(format!("Already answered by {}.", q.answered_by.as_deref().unwrap_or("someone")).into())
            }
        }
    }

    async fn answer(&self, ev: &Inbound, qid: Option<ApprovalId>, option: Option<u8>, text: String) -> Result<String, Refused> {
        let Some(qid) = qid else { return Err("No question to answer.".into()) };
        let q = self.question_for(ev, qid).await?;
        if q.permission.is_some() {
            // A button is a graded answer; a reply is a reason to deny.
            let answer = match option {
                Some(n) => plangate_engine::permission::PermissionAnswer::from_option(n as usize).ok_or("Unknown option.")?,
                None => plangate_engine::permission::PermissionAnswer::Deny { reason: Some(text) },
            };
            return Box::pin(self.answer_permission(ev, &q, answer)).await;
        }
        let answer = match option {
            Some(n) => q.options.get(n as usize).cloned().ok_or("Unknown option.")?,
            None => text,
        };
        let command = Command::Answer { question_id: Some(qid), answer: answer.clone() };
        Box::pin(self.core.execute(&q.session, Self::actor(ev), command, self.meta(ev))).await?;
        Ok(format!("Answered: {answer}"))
    }

    fn meta(&self, ev: &Inbound) -> ExecMeta {
        ExecMeta { idempotency: ev.idempotency_key.clone(), ..ExecMeta::default() }
    }

    /// Decide through the core's one door ([`Core::decide`]), and say what happened.
    async fn decide(&self, ev: &Inbound, id: ApprovalId, decision: Decision) -> Result<String, Refused> {
        // Boxed, as every transition here: inline, the transition's future
        // grows each `/plan` command's past a debug test thread's stack.
        match Box::pin(self.core.decide(id, Self::actor(ev), Self::venue(ev), decision, self.meta(ev))).await {
            Ok(decided) => Ok(decided.said()),
            Err(DecisionRefused::Core(CoreError::Refused(Refusal::StepUpRequired(why)))) => Err(self.step_up_link(ev, id, why)),
            Err(refused) => Err(Refused::of(ev, refused)),
        }
    }

    /// The answer to an approval the policy wants confirmed with a passkey:
    /// nothing was counted; the person gets, privately, a personal link
    /// that signs them in to the page where their passkey confirms it.
    /// Without the web page there is no way to confirm: refused, said so.
    fn step_up_link(&self, ev: &Inbound, id: ApprovalId, why: String) -> Refused {
        let Some(links) = self.core.web_links() else {
            return Refused::Say(format!("{why} The web page is off (server.public_url), so ask the operator."));
        };
        let who = plangate_web::Identity::Person { id: Self::who(ev), name: Self::actor(ev).label() };
        let url = links.step_up_url(who, &id);
        Refused::Private(format!(
            "{why}\nConfirm with your passkey (a personal link: it works once, within 10 minutes; do not share it):\n{url}"
        ))
    }

    async fn edit(&self, ev: &Inbound, id: ApprovalId, steps: Vec<String>) -> Result<String, Refused> {
        let Some(p) = self.proposal(id).await else { return Err(DecisionRefused::NotFound.to_string().into()) };
        let plan = Plan { steps: steps.into_iter().map(Step::pending).collect(), ..p.plan.clone() };
        self.decide(ev, id, Decision::edit(plan)).await
    }

    // ------------------------------------------------------------ /plan commands

    /// Active sessions of this chat's agents: in plan mode or with a pending approval.
    async fn active_sessions(&self, ev: &Inbound) -> Vec<State> {
        let agents = self.chat_agents(ev);
        let sessions = self.core.blocking(|s| s.sessions()).await.unwrap_or_default();
        let mut out = Vec::new();
        // An amendment waits while its session executes (normal mode).
        let active = |s: &plangate_engine::Session| matches!(s.mode, Mode::Plan | Mode::Halted) || s.amendment_pending.is_some();
        for session in sessions.into_iter().filter(|s| agents.contains(&s.key.agent) && active(s)) {
            if let Ok(state) = self.core.load(&session.key).await {
                // Only the projects whose cards come here.
                if self.receives(ev, &state) {
                    out.push(state);
                }
            }
        }
        out
    }

    /// Whether the cards of `state`'s session (its latest plan's project) come to this chat.
    fn receives(&self, ev: &Inbound, state: &State) -> bool {
        let project = state.latest.as_ref().and_then(|p| p.project.as_ref());
        self.core.pairing.approvers().receives(&state.session.key.agent, project, ev.channel, &ev.chat)
    }

    /// The answer in a chat no agent sends its plans to, with its ids.
    fn not_a_destination(&self, ev: &Inbound) -> Option<String> {
        self.chat_agents(ev).is_empty().then(|| format!("No agent sends its plans to this chat. {PAIR_HINT}{}", Self::ids_hint(ev)))
    }

    async fn resolve(&self, ev: &Inbound, target: Option<&Target>) -> Result<(State, Option<ApprovalId>), Refused> {
        self.resolve_target(ev, target).await.map_err(Refused::Say)
    }

    async fn resolve_target(&self, ev: &Inbound, target: Option<&Target>) -> Result<(State, Option<ApprovalId>), String> {
        if let Some(why) = self.not_a_destination(ev) {
            return Err(why);
        }
        let agents = self.chat_agents(ev);
        match target {
            Some(Target::Approval(prefix)) => {
                let prefix = prefix.clone();
                let found = self.core.blocking(move |s| s.proposals_by_prefix(&prefix)).await.unwrap_or_default();
                let approvers = self.core.pairing.approvers();
                let found: Vec<_> =
                    found.into_iter().filter(|p| approvers.receives(&p.session.agent, p.project.as_ref(), ev.channel, &ev.chat)).collect();
                match found.as_slice() {
                    [] => Err("No plan with that #id in this chat.".to_string()),
                    [p] => Ok((self.core.load(&p.session).await.map_err(|e| e.to_string())?, Some(p.approval_id))),
                    many => Err(format!(
                        "That #id matches {} plans; use more characters: {}",
                        many.len(),
                        many.iter().map(|p| format!("#{}", &p.approval_id.to_string()[..8])).collect::<Vec<_>>().join(" ")
                    )),
                }
            }
            Some(Target::Session(key)) => {
                if !agents.contains(&key.agent) {
                    return Err(format!("Agent {} does not send its plans to this chat.", key.agent));
                }
                let state = self.core.load(key).await.map_err(|e| e.to_string())?;
                if !self.receives(ev, &state) {
                    return Err(format!("The plans of {key} are about a project this chat does not take."));
                }
                Ok((state, None))
            }
            // Typed in a session's topic or thread: that session.
            None if ev.thread.is_some() && self.thread_session(ev).await.is_some() => {
                let key = self.thread_session(ev).await.ok_or("That topic's session is gone.")?;
                let state = self.core.load(&key).await.map_err(|e| e.to_string())?;
                if !agents.contains(&key.agent) || !self.receives(ev, &state) {
                    return Err(format!("The plans of {key} do not come to this chat."));
                }
                Ok((state, None))
            }
            None => {
                let active = self.active_sessions(ev).await;
                match active.as_slice() {
                    [] => Err("No plan is active in this chat. Use /plan on agent/session to start one.".to_string()),
                    [one] => Ok((one.clone(), None)),
                    many => Err(format!(
                        "More than one plan is active here; add a target:\n{}",
                        many.iter().map(summary_line).collect::<Vec<_>>().join("\n")
                    )),
                }
            }
        }
    }

    async fn command(&self, ev: &Inbound, parsed: Parsed) -> Reply {
        let target = parsed.target.as_ref();
        match parsed.command {
            PlanCommand::Help => {
                let active = self.active_sessions(ev).await;
                let status = if let Some(why) = self.not_a_destination(ev) {
                    why
                } else if active.is_empty() {
                    "No plan is active in this chat.".to_string()
                } else {
                    active.iter().map(summary_line).collect::<Vec<_>>().join("\n")
                };
                Reply::Text(format!("{}\n\n{status}", grammar::help()))
            }
            PlanCommand::List => {
                let active = self.active_sessions(ev).await;
                if let Some(why) = self.not_a_destination(ev) {
                    Reply::Text(why)
                } else if active.is_empty() {
                    Reply::Text("No plan is active in this chat.".to_string())
                } else {
                    let links = self.thread_links(ev, &active).await;
                    Reply::Text(list::grouped(&active, self.core.now(), summary_line, |s| links.get(&s.session.key).cloned()))
                }
            }
            PlanCommand::Status => match self.resolve(ev, target).await {
                Ok((state, _)) => Reply::Text(status_text(&state, self.core.now())),
                Err(why) => why.text(),
            },
            PlanCommand::Subagents => match self.resolve(ev, target).await {
                Ok((state, _)) => Reply::Text(subagents_text(&state, self.core.now())),
                Err(why) => why.text(),
            },
            // Approver-only, like a decision: a crashed child must not keep
            // the plan unapprovable, but only a person may say so.
            PlanCommand::ClearSubagents => match self.resolve(ev, target).await {
                Ok((state, _)) => {
                    let runs: Vec<String> = state.session.open_subagents.keys().cloned().collect();
                    let ok = format!(
                        "Cleared by {}: {} no longer waits for {} ({}).",
                        Self::actor(ev).label(),
                        state.session.key,
                        if runs.len() == 1 { "1 subagent run".to_string() } else { format!("{} subagent runs", runs.len()) },
                        runs.join(", "),
                    );
                    self.session_command(ev, &state.session.key, Command::ClearSubagents { run_id: None }, &ok).await
                }
                Err(why) => why.text(),
            },
            PlanCommand::View => match self.resolve(ev, target).await {
                Ok((state, id)) => {
                    let p = match id {
                        Some(id) => self.proposal(id).await,
                        None => state.latest.clone(),
                    };
                    match p {
                        Some(p) => Reply::Document { document: Core::document_of(&p), caption: format!("{} v{}", p.plan.title, p.version) },
                        None => Reply::Text("This session has not proposed a plan yet.".to_string()),
                    }
                }
                Err(why) => why.text(),
            },
            PlanCommand::Web => self.web_sign_in(ev),
            PlanCommand::Pair(code) => Box::pin(self.pair(ev, &code)).await,
            PlanCommand::Approvers(change) => Box::pin(self.approvers(ev, change)).await,
            PlanCommand::Restate => match self.resolve(ev, target).await {
                Ok((state, _)) => self.restate(ev, &state).await,
                Err(why) => why.text(),
            },
            PlanCommand::Accept(terms) => self.decide_command(ev, target, move |p| accept_decision(p, &terms)).await,
            PlanCommand::Revise(feedback) => self.decide_command(ev, target, move |_| Ok(Decision::revise(feedback.clone()))).await,
            PlanCommand::Edit(steps) => {
                self.decide_command(ev, target, move |p| {
                    Ok(Decision::edit(Plan { steps: steps.iter().cloned().map(Step::pending).collect(), ..p.plan.clone() }))
                })
                .await
            }
            // Cancel means "do not do this": the session halts (read-only).
            PlanCommand::Cancel => self.decide_command(ev, target, |_| Ok(Decision::Cancel)).await,
            // Who may claim is who may decide: the same door.
            PlanCommand::Claim => self.decide_command(ev, target, |_| Ok(Decision::Claim)).await,
            // Off is the explicit release: no plan required, the gate opens.
            PlanCommand::Off => {
                let (state, _) = match self.resolve(ev, target).await {
                    Ok(found) => found,
                    Err(why) => return why.text(),
                };
                self.release(ev, &state.session.key).await
            }
            // Boxed: these futures hold a whole transition; inline, they would
            // grow every `/plan` command's future past a test thread's stack.
            PlanCommand::Permission(answer) => Box::pin(self.permission_command(ev, target, answer)).await,
            PlanCommand::Rules => Box::pin(self.rules(ev)).await,
            PlanCommand::RemoveRule(n) => Box::pin(self.remove_rule(ev, n)).await,
            PlanCommand::Answer(text) => match self.resolve(ev, target).await {
                Ok((state, _)) => {
                    let qid = state.session.pending_question.as_ref().map(|q| q.question_id);
                    self.answer(ev, qid, None, text).await.into_text()
                }
                Err(why) => why.text(),
            },
            PlanCommand::On => {
                let key = match target {
                    Some(Target::Session(key)) => key.clone(),
                    _ => match self.resolve(ev, target).await {
                        Ok((state, _)) => state.session.key,
                        Err(_) => return Reply::Text("Say which session: /plan on agent/session".to_string()),
                    },
                };
                if !self.chat_agents(ev).contains(&key.agent) {
                    return Reply::Text(format!("Agent {} does not send its plans to this chat.{}", key.agent, Self::ids_hint(ev)));
                }
                self.session_command(
                    ev,
                    &key,
                    Command::Enter { reason: Some(format!("/plan on by {}", Self::who(ev))) },
                    "Plan mode is on: the agent is read-only until a plan is approved.",
                )
                .await
            }
            PlanCommand::Auto(on) => match self.resolve(ev, target).await {
                Ok((state, _)) => {
                    let text = if on { "Auto-approve is on: later proposals approve themselves." } else { "Auto-approve is off." };
                    self.session_command(ev, &state.session.key, Command::SetAuto(on), text).await
                }
                Err(why) => why.text(),
            },
        }
    }
}

/// What `/plan accept` means for `p`: the round's edited plan (`edited`),
/// with a note and/or except steps, or a plain approval; or why it cannot
/// apply to this plan.
fn accept_decision(p: &Proposal, terms: &AcceptTerms) -> Result<Decision, String> {
    if terms.edited {
        return match &p.review.edit {
            Some(edit) if terms.note.is_none() => Ok(Decision::edit(edit.plan.clone())),
            Some(_) => Err("Approving an edit takes no note; approve it, then say more in the chat.".to_string()),
            None => Err(format!("No edited plan awaits approval on v{} ({}).", p.version, short_ref(&p.approval_id))),
        };
    }
    Ok(Decision::approve_with(Terms { note: terms.note.clone(), except: terms.except.clone() }))
}

/// How a result becomes the reply: a notice (the answer to a button or a
/// form) or a message (the answer to a typed command); nothing when
/// another replica answers.
trait IntoReply {
    fn into_notice(self) -> Reply;
    fn into_text(self) -> Reply;
}

impl IntoReply for Result<String, Refused> {
    fn into_notice(self) -> Reply {
        match self {
            Ok(said) => Reply::Notice(said),
            Err(why) => why.notice(),
        }
    }

    fn into_text(self) -> Reply {
        match self {
            Ok(said) => Reply::Text(said),
            Err(why) => why.text(),
        }
    }
}

/// The longest name kept for a person (a display name, shown beside the id).
const MAX_NAME_CHARS: usize = 64;

impl Hub {
    /// Remember the name the platform gave the sender (see [`Hub::names`]).
    async fn remember_name(&self, ev: &Inbound) {
        let name: String = ev.user.name.trim().chars().filter(|c| !c.is_control()).take(MAX_NAME_CHARS).collect();
        if name.is_empty() || ev.user.id.is_empty() {
            return;
        }
        let identity = format!("{}:{}", ev.channel, ev.user.id);
        let changed = {
            let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
            names.insert(identity.clone(), name.clone()).as_ref() != Some(&name)
        };
        if changed {
            let key = format!("name:{identity}");
            if let Err(e) = self.core.blocking(move |s| s.set_cursor(&key, &name)).await {
                tracing::warn!(error = %e, "a person's name was not kept");
            }
        }
    }

    /// `@alice (telegram:111)` when the person was seen, else the identity.
    pub(crate) fn named(&self, identity: &str) -> String {
        let known = self.names.lock().unwrap_or_else(|e| e.into_inner()).get(identity).cloned();
        match known.or_else(|| self.load_cursor(&format!("name:{identity}"))) {
            Some(name) if name != identity => format!("{name} ({identity})"),
            _ => identity.to_string(),
        }
    }
}

#[async_trait]
impl InboundHandler for Hub {
    async fn handle(&self, event: Inbound) -> Reply {
        let span = tracing::info_span!("inbound", channel = event.channel, chat = %event.chat, user = %event.user.id);
        async move {
            // On the heap: every kind of event's future is in it, and a
            // debug build copies such a future across a 2 MiB thread stack.
            let reply = Box::pin(self.dispatch(event)).await;
            tracing::info!(reply = ?std::mem::discriminant(&reply), "handled");
            reply
        }
        .instrument(span)
        .await
    }

    fn load_cursor(&self, key: &str) -> Option<String> {
        self.core.blocking_sync(|s| s.cursor(key)).ok().flatten()
    }

    fn save_cursor(&self, key: &str, value: &str) {
        if let Err(e) = self.core.blocking_sync(|s| s.set_cursor(key, value)) {
            tracing::warn!(key, error = %e, "cursor not saved");
        }
    }
}
