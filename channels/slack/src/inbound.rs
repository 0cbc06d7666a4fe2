//! Inbound half: Slack payloads → [`Inbound`], and each [`Reply`] → Slack.
//!
//! Both transports end here. The payload models below are deliberately
//! minimal (only the fields plangate reads, everything optional that Slack
//! may omit), so a payload with fields this crate does not know still parses.
//! Decisions are acknowledged at once and handled in a spawned task: Slack
//! wants its ack within 3 s, and the server's work (engine, store, card
//! edits) may take longer.

use crate::outbound::Api;
use crate::render::{self, escape, ModalKind, ModalMeta};
use plangate_channel::{Action, Inbound, InboundHandler, Reply, User};
use plangate_engine::codec::decode;
use plangate_engine::grammar::parse_args;
use serde::Deserialize;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::Instrument;

const PLATFORM: &str = "slack";
/// Unknown callback data is kept for the audit, but not all of it.
const MAX_UNKNOWN_DATA: usize = 100;
/// Longest ephemeral text we send (Slack truncates messages past 40,000).
const MAX_REPLY_TEXT: usize = 12_000;

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum Interaction {
    #[serde(rename = "block_actions")]
    BlockActions(BlockActions),
    #[serde(rename = "view_submission")]
    ViewSubmission(ViewSubmission),
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Team {
    id: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SlackUser {
    id: String,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    team_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChannelRef {
    id: String,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Container {
    #[serde(default)]
    channel_id: Option<String>,
    #[serde(default)]
    message_ts: Option<String>,
    #[serde(default)]
    is_ephemeral: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct MessageRef {
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    thread_ts: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ActionInfo {
    #[serde(default)]
    action_id: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    action_ts: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BlockActions {
    #[serde(default)]
    team: Option<Team>,
    #[serde(default)]
    user: Option<SlackUser>,
    #[serde(default)]
    channel: Option<ChannelRef>,
    #[serde(default)]
    container: Option<Container>,
    #[serde(default)]
    trigger_id: Option<String>,
    #[serde(default)]
    response_url: Option<String>,
    #[serde(default)]
    message: Option<MessageRef>,
    #[serde(default)]
    actions: Vec<ActionInfo>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ViewSubmission {
    #[serde(default)]
    team: Option<Team>,
    user: SlackUser,
    view: View,
    #[serde(default)]
    trigger_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct View {
    id: String,
    #[serde(default)]
    hash: Option<String>,
    #[serde(default)]
    callback_id: Option<String>,
    #[serde(default)]
    private_metadata: Option<String>,
    #[serde(default)]
    state: Option<ViewState>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ViewState {
    #[serde(default)]
    values: HashMap<String, HashMap<String, StateValue>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StateValue {
    #[serde(default)]
    value: Option<String>,
    /// A multi-select's choices (the approve modal's step picker).
    #[serde(default)]
    selected_options: Option<Vec<SelectedOption>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SelectedOption {
    value: String,
}

/// A slash command (form fields of HTTP mode, or Socket Mode's payload).
#[derive(Debug, Deserialize)]
pub(crate) struct SlashCommand {
    #[serde(default)]
    team_id: Option<String>,
    channel_id: String,
    user_id: String,
    /// Sent in HTTP mode; Socket Mode's client model drops it.
    #[serde(default)]
    user_name: Option<String>,
    command: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    response_url: Option<String>,
    #[serde(default)]
    trigger_id: Option<String>,
}

/// What to answer Slack right away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ack {
    /// An empty acknowledgement (closes a submitted modal).
    Empty,
    /// `response_action: errors`: keep the modal open, show these per block.
    ViewErrors(HashMap<String, String>),
}

/// Where and how to answer one event.
#[derive(Debug, Clone)]
struct ReplyCtx {
    channel: String,
    user: String,
    trigger_id: Option<String>,
    response_url: Option<String>,
    /// The card's thread (uploads, modals' follow-ups); `None` outside one.
    thread: Option<String>,
    /// The click was on an ephemeral message (the cancel confirmation): the
    /// answer replaces it.
    from_ephemeral: bool,
}

/// Keys already handled by this process. Slack retries an event it thinks
/// was not acknowledged, and a replayed signed request repeats one; both
/// carry the same key. The server's durable store is the real guard; this
/// only spares it obvious repeats.
struct Seen {
    order: VecDeque<(Instant, String)>,
    keys: HashSet<String>,
}

const SEEN_TTL: Duration = Duration::from_secs(15 * 60);
const SEEN_CAP: usize = 10_000;

impl Seen {
    fn first_time(&mut self, key: &str) -> bool {
        let now = Instant::now();
        while let Some((at, _)) = self.order.front() {
            if now.duration_since(*at) < SEEN_TTL && self.order.len() < SEEN_CAP {
                break;
            }
            if let Some((_, old)) = self.order.pop_front() {
                self.keys.remove(&old);
            }
        }
        if self.keys.contains(key) {
            return false;
        }
        self.keys.insert(key.to_string());
        self.order.push_back((now, key.to_string()));
        true
    }
}

/// Turns payloads into [`Inbound`]s for the server and renders its replies.
pub(crate) struct Dispatcher {
    handler: Arc<dyn InboundHandler>,
    api: Arc<Api>,
    seen: Mutex<Seen>,
}

impl Dispatcher {
    pub(crate) fn new(handler: Arc<dyn InboundHandler>, api: Arc<Api>) -> Dispatcher {
        Dispatcher { handler, api, seen: Mutex::new(Seen { order: VecDeque::new(), keys: HashSet::new() }) }
    }

    fn first_time(&self, key: &Option<String>) -> bool {
        match key {
            Some(key) => self.seen.lock().unwrap_or_else(|e| e.into_inner()).first_time(key),
            None => true,
        }
    }

    /// One interactivity payload. Returns at once; the handler runs spawned.
    pub(crate) fn interaction(self: &Arc<Self>, payload: Interaction) -> Ack {
        match payload {
            Interaction::BlockActions(event) => {
                self.block_actions(event);
                Ack::Empty
            }
            Interaction::ViewSubmission(event) => self.view_submission(event),
            Interaction::Other => {
                tracing::debug!("ignoring an interaction type plangate does not use");
                Ack::Empty
            }
        }
    }

    fn block_actions(self: &Arc<Self>, event: BlockActions) {
        let Some(slack_user) = event.user else {
            tracing::warn!("block_actions without a user; ignored");
            return;
        };
        let container = event.container.unwrap_or_default();
        let Some(chat) = event.channel.map(|c| c.id).or(container.channel_id) else {
            tracing::warn!("block_actions outside a channel; ignored");
            return;
        };
        let team = team_of(event.team, &slack_user);
        // Uploads and modal follow-ups go to the card's thread; an ephemeral
        // message (the cancel confirmation) has no thread of its own.
        let from_ephemeral = container.is_ephemeral == Some(true);
        // The thread the clicked message is a reply in (a session's, under
        // threads = "per_session").
        let in_thread = event.message.as_ref().and_then(|m| m.thread_ts.clone()).filter(|_| !from_ephemeral);
        let thread = if from_ephemeral { None } else { event.message.and_then(|m| m.thread_ts.or(m.ts)).or(container.message_ts) };
        let user = user_of(&slack_user, team);
        for info in event.actions {
            let data = info.value.or(info.action_id).unwrap_or_default();
            let action = match decode(&data) {
                Ok(button) => Action::Button(button),
                Err(_) => Action::UnknownButton(render::cut_chars(&data, MAX_UNKNOWN_DATA)),
            };
            let key = info.action_ts.map(|ts| format!("slack:action:{ts}"));
            let ctx = ReplyCtx {
                channel: chat.clone(),
                user: slack_user.id.clone(),
                trigger_id: event.trigger_id.clone(),
                response_url: event.response_url.clone(),
                thread: thread.clone(),
                from_ephemeral,
            };
            self.dispatch(
                Inbound {
                    channel: PLATFORM,
                    chat: chat.clone(),
                    user: user.clone(),
                    action,
                    idempotency_key: key,
                    thread: in_thread.clone(),
                },
                ctx,
            );
        }
    }

    fn view_submission(self: &Arc<Self>, event: ViewSubmission) -> Ack {
        let view = event.view;
        let Some(kind) = view.callback_id.as_deref().and_then(ModalKind::from_callback_id) else {
            tracing::debug!("a view_submission of a modal that is not plangate's; ignored");
            return Ack::Empty;
        };
        let Some(meta) = view.private_metadata.as_deref().and_then(ModalMeta::decode) else {
            tracing::warn!("plangate modal with unreadable private_metadata; ignored");
            return Ack::Empty;
        };
        let text = view
            .state
            .as_ref()
            .and_then(|s| s.values.get(render::INPUT_BLOCK))
            .and_then(|block| block.get(render::INPUT_ACTION))
            .and_then(|v| v.value.clone())
            .unwrap_or_default();
        let text = text.trim().to_string();
        let refuse = |message: &str| Ack::ViewErrors(HashMap::from([(render::INPUT_BLOCK.to_string(), message.to_string())]));
        let action = match kind {
            ModalKind::Feedback if text.is_empty() => return refuse("Say what should change."),
            ModalKind::Feedback => Action::Feedback { approval_id: meta.id, text },
            ModalKind::Edit => {
                let steps = render::parse_steps(&text);
                if steps.is_empty() {
                    return refuse("Give at least one step, one per line.");
                }
                Action::Edit { approval_id: meta.id, steps }
            }
            ModalKind::Answer if text.is_empty() => return refuse("Type your answer."),
            ModalKind::Answer => Action::AnswerText { question_id: meta.id, text },
            ModalKind::Approve => {
                // Option values are the step numbers plangate set; anything
                // else is refused rather than guessed at.
                let picked = view
                    .state
                    .as_ref()
                    .and_then(|s| s.values.get(render::EXCEPT_BLOCK))
                    .and_then(|block| block.get(render::EXCEPT_ACTION))
                    .and_then(|v| v.selected_options.as_ref())
                    .map(|options| options.iter().map(|o| o.value.parse::<usize>()).collect::<Result<Vec<_>, _>>())
                    .unwrap_or(Ok(Vec::new()));
                let Ok(except) = picked else {
                    let errors = HashMap::from([(render::EXCEPT_BLOCK.to_string(), "Pick steps from the list.".to_string())]);
                    return Ack::ViewErrors(errors);
                };
                Action::Approve { approval_id: meta.id, note: (!text.is_empty()).then_some(text), except }
            }
        };
        let team = team_of(event.team, &event.user);
        let key = Some(format!("slack:view:{}:{}", view.id, view.hash.as_deref().unwrap_or("")));
        let ctx = ReplyCtx {
            channel: meta.channel.clone(),
            user: event.user.id.clone(),
            trigger_id: event.trigger_id,
            response_url: None,
            thread: meta.thread,
            from_ephemeral: false,
        };
        self.dispatch(
            Inbound { channel: PLATFORM, chat: meta.channel, user: user_of(&event.user, team), action, idempotency_key: key, thread: None },
            ctx,
        );
        Ack::Empty
    }

    /// One `/plan …` slash command.
    pub(crate) fn command(self: &Arc<Self>, command: SlashCommand) -> Ack {
        if !command.command.eq_ignore_ascii_case("/plan") {
            tracing::warn!(command = %command.command, "a slash command that is not /plan; ignored");
            return Ack::Empty;
        }
        let text = command.text.unwrap_or_default();
        let action = match parse_args(&text) {
            Ok(parsed) => Action::Command(parsed),
            Err(_) => Action::BadCommand(text.trim().to_string()),
        };
        let name =
            command.user_name.as_deref().filter(|n| !n.is_empty()).map(|n| format!("@{n}")).unwrap_or_else(|| command.user_id.clone());
        let user = User { id: command.user_id.clone(), name, team: command.team_id };
        let key = command.trigger_id.as_ref().map(|t| format!("slack:command:{t}"));
        let ctx = ReplyCtx {
            channel: command.channel_id.clone(),
            user: command.user_id,
            trigger_id: command.trigger_id,
            response_url: command.response_url,
            thread: None,
            from_ephemeral: false,
        };
        self.dispatch(Inbound { channel: PLATFORM, chat: command.channel_id, user, action, idempotency_key: key, thread: None }, ctx);
        Ack::Empty
    }

    /// Drop repeats, then hand the event to the server in its own task and
    /// render what it answers.
    fn dispatch(self: &Arc<Self>, inbound: Inbound, ctx: ReplyCtx) {
        let span = tracing::info_span!("slack_inbound", chat = %inbound.chat, user = %inbound.user.id, key = ?inbound.idempotency_key);
        let _entered = span.enter();
        if !self.first_time(&inbound.idempotency_key) {
            tracing::info!("duplicate event dropped");
            return;
        }
        tracing::info!(action = inbound.action.kind(), "inbound event");
        let this = self.clone();
        tokio::spawn(
            async move {
                let reply = this.handler.handle(inbound).await;
                this.render(reply, &ctx).await;
            }
            .instrument(span.clone()),
        );
    }

    async fn render(&self, reply: Reply, ctx: &ReplyCtx) {
        // Server text quotes agents and users (titles, feedback, answers), so
        // it is shown as plain_text blocks; `text` is only the notification.
        let result = match reply {
            Reply::None => Ok(()),
            Reply::Notice(text) | Reply::Text(text) | Reply::Private(text) => {
                self.ephemeral(ctx, reply_text(&text), Some(render::text_blocks(&text))).await
            }
            // In the channel; where the bot may not post, to the sender at least.
            Reply::Announce(text) => {
                match self.api.post_message(&ctx.channel, ctx.thread.as_deref(), reply_text(&text), render::text_blocks(&text)).await {
                    Ok(_) => Ok(()),
                    Err(_) => self.ephemeral(ctx, reply_text(&text), Some(render::text_blocks(&text))).await,
                }
            }
            Reply::AskFeedback { approval_id, prompt, .. } => {
                let hint = format!("Or type `/plan changes #{} <what should change>`", approval_id.short());
                self.open_modal(ctx, ModalKind::Feedback, approval_id, &prompt, None, &hint).await
            }
            Reply::AskEdit { approval_id, steps, .. } => {
                let initial = steps.join("\n");
                let hint = format!("Type `/plan edit #{} <step 1>; <step 2>; …`", approval_id.short());
                if initial.chars().count() > render::INPUT_LIMIT {
                    self.hint(ctx, "This plan is too long to edit in a form.", &hint).await
                } else {
                    self.open_modal(ctx, ModalKind::Edit, approval_id, "", Some(initial), &hint).await
                }
            }
            Reply::AskApproval { approval_id, steps, prompt, .. } => {
                let hint = format!("Or type `/plan accept #{} except <step numbers> -- <note>`", approval_id.short());
                self.open_approve_modal(ctx, approval_id, &prompt, &steps, &hint).await
            }
            Reply::AskAnswer { question_id, prompt } => {
                self.open_modal(ctx, ModalKind::Answer, question_id, &prompt, None, "Type `/plan answer <your answer>`").await
            }
            Reply::ConfirmCancel { approval_id, prompt, .. } => {
                self.ephemeral(ctx, reply_text(&prompt), Some(render::confirm_cancel_blocks(approval_id, &prompt))).await
            }
            Reply::Document { document, caption } => {
                self.api.upload(&ctx.channel, ctx.thread.as_deref(), &document, Some(reply_text(&caption))).await
            }
        };
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not show the reply");
        }
    }

    /// A modal, or when it cannot be opened, `prompt` and a command `hint` in text.
    async fn open_modal(
        &self,
        ctx: &ReplyCtx,
        kind: ModalKind,
        id: plangate_engine::ApprovalId,
        prompt: &str,
        initial: Option<String>,
        hint: &str,
    ) -> Result<(), plangate_channel::ChannelError> {
        if let Some(trigger) = &ctx.trigger_id {
            let meta = ModalMeta { id, channel: ctx.channel.clone(), thread: ctx.thread.clone() };
            match self.api.views_open(&ctx.user, trigger, render::modal(kind, &meta, prompt, initial)).await {
                Ok(()) => return Ok(()),
                // The trigger expires after 3 s; say it in text instead.
                Err(e) => tracing::warn!(error = %e, "views.open failed; answering in text"),
            }
        }
        self.hint(ctx, prompt, hint).await
    }

    /// The approve modal, or when it cannot be opened, `prompt` and a command `hint` in text.
    async fn open_approve_modal(
        &self,
        ctx: &ReplyCtx,
        id: plangate_engine::ApprovalId,
        prompt: &str,
        steps: &[String],
        hint: &str,
    ) -> Result<(), plangate_channel::ChannelError> {
        if let Some(trigger) = &ctx.trigger_id {
            let meta = ModalMeta { id, channel: ctx.channel.clone(), thread: ctx.thread.clone() };
            match self.api.views_open(&ctx.user, trigger, render::approve_modal(&meta, prompt, steps)).await {
                Ok(()) => return Ok(()),
                Err(e) => tracing::warn!(error = %e, "views.open failed; answering in text"),
            }
        }
        self.hint(ctx, prompt, hint).await
    }

    /// `text` (verbatim) and one of plangate's command hints (mrkdwn code).
    async fn hint(&self, ctx: &ReplyCtx, text: &str, hint: &str) -> Result<(), plangate_channel::ChannelError> {
        let fallback = if text.trim().is_empty() { hint.to_string() } else { format!("{text}\n{hint}") };
        self.ephemeral(ctx, reply_text(&fallback), Some(render::hint_blocks(text, hint))).await
    }

    /// A message only the user sees: through `response_url` when the event
    /// has a trusted one (works where the bot is not a channel member), else
    /// `chat.postEphemeral`.
    async fn ephemeral(
        &self,
        ctx: &ReplyCtx,
        text: String,
        blocks: Option<Vec<slack_morphism::prelude::SlackBlock>>,
    ) -> Result<(), plangate_channel::ChannelError> {
        if let Some(url) = ctx.response_url.as_deref() {
            if self.api.response_url_allowed(url) {
                match self.api.respond(&ctx.channel, url, ctx.from_ephemeral, text.clone(), blocks.clone()).await {
                    Ok(()) => return Ok(()),
                    Err(e) => tracing::warn!(error = %e, "response_url failed; using chat.postEphemeral"),
                }
            } else {
                tracing::warn!("response_url outside Slack's hosts; not used");
            }
        }
        self.api.post_ephemeral(&ctx.channel, &ctx.user, ctx.thread.as_deref(), text, blocks).await
    }
}

/// Server text as a message's mrkdwn `text` (the notification; the blocks
/// show it verbatim): escaped ([`escape`]), and cut (at a line boundary) to a
/// size Slack shows in full.
fn reply_text(text: &str) -> String {
    let escaped = escape(text);
    if escaped.chars().count() <= MAX_REPLY_TEXT {
        return escaped;
    }
    let lines: Vec<String> = escaped.lines().map(str::to_string).collect();
    let first = render::chunk_lines(None, &lines, MAX_REPLY_TEXT - 2).into_iter().next().unwrap_or_default();
    format!("{first}\n…")
}

/// The workspace the server checks an interaction against. The user's own
/// team (`user.team_id`) comes first when it is a workspace id (`T…`): in a
/// Slack Connect channel it names the clicker's home, where `team` may name
/// the channel's. On Enterprise Grid `user.team_id` is the organization
/// (`E…`), so the payload's `team.id` (the workspace) is used instead, and the
/// organization only when there is nothing else. `None` is refused by the
/// server as any unknown team is.
fn team_of(team: Option<Team>, user: &SlackUser) -> Option<String> {
    let own = user.team_id.as_deref().map(str::trim).filter(|t| !t.is_empty());
    match own {
        Some(own) if own.starts_with('T') => Some(own.to_string()),
        _ => team.map(|t| t.id).filter(|t| !t.trim().is_empty()).or(own.map(str::to_string)),
    }
}

fn user_of(user: &SlackUser, team: Option<String>) -> User {
    let name = user
        .username
        .as_deref()
        .or(user.name.as_deref())
        .filter(|n| !n.is_empty())
        .map(|n| format!("@{n}"))
        .unwrap_or_else(|| user.id.clone());
    User { id: user.id.clone(), name, team }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_drops_repeats() {
        let mut seen = Seen { order: VecDeque::new(), keys: HashSet::new() };
        assert!(seen.first_time("a"));
        assert!(!seen.first_time("a"));
        assert!(seen.first_time("b"));
        for i in 0..SEEN_CAP + 5 {
            seen.first_time(&format!("k{i}"));
        }
        assert!(seen.keys.len() <= SEEN_CAP + 1);
        // "a" was evicted by the cap, so it is new again.
        assert!(seen.first_time("a"));
    }

    #[test]
    fn the_users_own_workspace_is_the_one_checked() {
        let user = |team: Option<&str>| SlackUser { id: "U1".into(), username: None, name: None, team_id: team.map(str::to_string) };
        let team = |id: &str| Some(Team { id: id.into() });
        // Slack Connect: a partner's user in the host's channel.
        assert_eq!(team_of(team("THOST"), &user(Some("TPARTNER"))).as_deref(), Some("TPARTNER"));
        assert_eq!(team_of(team("T1"), &user(Some("T1"))).as_deref(), Some("T1"));
        // Enterprise Grid: the user's team is the organization.
        assert_eq!(team_of(team("T1"), &user(Some("E1"))).as_deref(), Some("T1"));
        assert_eq!(team_of(None, &user(Some("E1"))).as_deref(), Some("E1"));
        assert_eq!(team_of(team("T1"), &user(None)).as_deref(), Some("T1"));
        assert_eq!(team_of(None, &user(Some(" "))), None);
        assert_eq!(team_of(team(""), &user(None)), None);
    }

    #[test]
    fn unknown_interaction_types_parse() {
        let p: Interaction = serde_json::from_str(r#"{"type":"shortcut","callback_id":"x"}"#).unwrap();
        assert!(matches!(p, Interaction::Other));
    }

    #[test]
    fn long_replies_are_cut_at_a_line() {
        let text = (0..2000).map(|i| format!("line {i} <!here>")).collect::<Vec<_>>().join("\n");
        let out = reply_text(&text);
        assert!(out.chars().count() <= MAX_REPLY_TEXT);
        assert!(out.ends_with("\n…"));
        assert!(!out.contains("<!here>"));
    }
}
