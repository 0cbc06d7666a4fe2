//! Interactions → `Inbound`, and the server's `Reply` → interaction response.
//!
//! Shared by both transports: each hands an already-authenticated
//! [`Interaction`] to [`Inbox::process`] and delivers the initial response it
//! returns (REST callback for the gateway, HTTP body for the endpoint).

use crate::config::Settings;
use crate::render::{self, Answer, Context, EXCEPT_ID, INPUT_ID};
use crate::rest::Rest;
use plangate_channel::{Action, Inbound, InboundHandler, Reply, User};
use plangate_engine::codec::{decode, Button};
use plangate_engine::grammar::{parse_args, Parsed};
use plangate_engine::list;
use serenity::all::{ActionRowComponent, CommandDataOption, CommandDataOptionValue, ComponentInteractionDataKind, Interaction};
use serenity::builder::CreateInteractionResponse;
use serenity::model::channel::{ChannelType, PartialChannel};
use serenity::model::id::{ApplicationId, ChannelId, GuildId, InteractionId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

/// Discord allows 100 characters of `custom_id`; anything longer is forged.
const CUSTOM_ID_MAX: usize = 100;

/// Interaction ids already handled in this process, remembered long enough
/// that a replay is either caught here or refused for its timestamp.
pub(crate) struct Seen {
    ttl: Duration,
    ids: Mutex<HashMap<u64, Instant>>,
}

impl Seen {
    pub fn new(ttl: Duration) -> Seen {
        Seen { ttl, ids: Mutex::new(HashMap::new()) }
    }

    /// `true` the first time `id` is offered.
    pub fn first_time(&self, id: InteractionId) -> bool {
        let now = Instant::now();
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        if ids.len() > 1024 {
            let ttl = self.ttl;
            ids.retain(|_, at| now.duration_since(*at) < ttl);
        }
        match ids.get(&id.get()) {
            Some(at) if now.duration_since(*at) < self.ttl => false,
            _ => {
                ids.insert(id.get(), now);
                true
            }
        }
    }
}

/// What the transport must send first, and how to tell the follow-up that
/// it has been sent.
pub(crate) struct Outcome {
    /// `None`: nothing to answer (a replay, or an interaction for another app).
    pub initial: Option<CreateInteractionResponse>,
    /// Fire once `initial` has been delivered; a deferred reply waits for it.
    pub sent: Option<oneshot::Sender<()>>,
}

pub(crate) struct Inbox {
    handler: Arc<dyn InboundHandler>,
    rest: Arc<Rest>,
    application_id: ApplicationId,
    defer_after: Duration,
    seen: Seen,
}

impl Inbox {
    pub fn new(handler: Arc<dyn InboundHandler>, rest: Arc<Rest>, settings: &Settings) -> Inbox {
        Inbox {
            handler,
            rest,
            application_id: settings.application_id,
            defer_after: settings.defer_after,
            seen: Seen::new(Duration::from_secs(settings.interaction_window_secs * 2 + 60)),
        }
    }

    /// Route one interaction: translate, ask the handler (deferring if it is
    /// slow), render its reply.
    pub async fn process(self: &Arc<Self>, interaction: Interaction) -> Outcome {
        let none = Outcome { initial: None, sent: None };
        if let Interaction::Ping(_) = interaction {
            return Outcome { initial: Some(CreateInteractionResponse::Pong), sent: None };
        }
        let id = interaction.id();
        let span = tracing::info_span!("discord.interaction", id = %id, kind = ?interaction.kind());
        async move {
            if interaction.application_id() != self.application_id {
                tracing::warn!(app = %interaction.application_id(), "interaction for another application; ignored");
                return none;
            }
            if !self.seen.first_time(id) {
                tracing::warn!("interaction id seen before; replay ignored");
                return none;
            }
            let ctx = context(&interaction);
            let token = interaction.token().to_string();
            let Some(inbound) = to_inbound(&interaction) else {
                let answer = render::render_reply(&Reply::Notice("This interaction is not one of plangate's.".into()), ctx, false);
                return self.finish(answer, token);
            };
            tracing::info!(chat = %inbound.chat, user = %inbound.user.id, action = ?inbound.action.kind(), "discord: inbound");
            let handler = self.handler.clone();
            let mut task = tokio::spawn(async move { handler.handle(inbound).await });
            match tokio::time::timeout(self.defer_after, &mut task).await {
                Ok(reply) => self.finish(render::render_reply(&reply_or_error(reply), ctx, false), token),
                Err(_) => {
                    tracing::info!(after = ?self.defer_after, "handler is slow; deferring the response");
                    let (sent, delivered) = oneshot::channel();
                    let inbox = self.clone();
                    tokio::spawn(
                        async move {
                            let reply = reply_or_error(task.await);
                            if delivered.await.is_err() {
                                return;
                            }
                            if let Answer::Later(edit, file) = render::render_reply(&reply, ctx, true) {
                                inbox.edit_original(&token, edit, file).await;
                            }
                        }
                        .in_current_span(),
                    );
                    Outcome { initial: Some(render::defer()), sent: Some(sent) }
                }
            }
        }
        .instrument(span)
        .await
    }

    fn finish(self: &Arc<Self>, answer: Answer, token: String) -> Outcome {
        match answer {
            Answer::Now(response) => Outcome { initial: Some(response), sent: None },
            Answer::Later(edit, file) => {
                let (sent, delivered) = oneshot::channel();
                let inbox = self.clone();
                tokio::spawn(
                    async move {
                        if delivered.await.is_ok() {
                            inbox.edit_original(&token, edit, file).await;
                        }
                    }
                    .in_current_span(),
                );
                Outcome { initial: Some(render::defer()), sent: Some(sent) }
            }
        }
    }

    /// Replace the deferred response. The retries (a 404 while Discord has
    /// not processed the deferral yet, 429s, transport errors) live in
    /// `Rest::edit_original`, through the shared `send_with_retry`.
    async fn edit_original(
        &self,
        token: &str,
        edit: serenity::builder::EditInteractionResponse,
        file: Option<serenity::builder::CreateAttachment>,
    ) {
        if let Err(e) = self.rest.edit_original(token, &edit, file).await {
            tracing::warn!(error = %e, "discord: could not deliver the deferred reply");
        }
    }
}

fn reply_or_error(result: Result<Reply, tokio::task::JoinError>) -> Reply {
    result.unwrap_or_else(|e| {
        tracing::error!(error = %e, "inbound handler failed");
        Reply::Notice("Something went wrong on plangate's side; nothing was decided. Try again.".into())
    })
}

fn context(interaction: &Interaction) -> Context {
    match interaction {
        Interaction::Component(_) => Context { has_message: true, is_modal_submit: false },
        Interaction::Modal(m) => Context { has_message: m.message.is_some(), is_modal_submit: true },
        _ => Context { has_message: false, is_modal_submit: false },
    }
}

fn user(user: &serenity::model::user::User, guild: Option<GuildId>) -> User {
    User { id: user.id.to_string(), name: format!("@{}", user.name), team: guild.map(|g| g.to_string()) }
}

fn idempotency_key(id: InteractionId) -> Option<String> {
    Some(format!("discord:interaction:{id}"))
}

fn clip(custom_id: &str) -> String {
    custom_id.chars().take(CUSTOM_ID_MAX).collect()
}

/// One interaction as plangate sees it; `None` for what is not plangate's
/// (another command, autocomplete, pings).
pub(crate) fn to_inbound(interaction: &Interaction) -> Option<Inbound> {
    let ((chat, thread), who, action, id) = match interaction {
        Interaction::Component(c) => {
            let action = match (&c.data.kind, c.data.custom_id.len() <= CUSTOM_ID_MAX) {
                (ComponentInteractionDataKind::Button, true) => {
                    decode(&c.data.custom_id).map(Action::Button).unwrap_or_else(|_| Action::UnknownButton(clip(&c.data.custom_id)))
                }
                _ => Action::UnknownButton(clip(&c.data.custom_id)),
            };
            (place(c.channel_id, c.channel.as_ref()), user(&c.user, c.guild_id), action, c.id)
        }
        Interaction::Command(c) if c.data.name == "plan" => {
            (place(c.channel_id, c.channel.as_ref()), user(&c.user, c.guild_id), command_action(&c.data.options), c.id)
        }
        Interaction::Modal(m) => {
            let field = |id: &str| {
                m.data
                    .components
                    .iter()
                    .flat_map(|row| row.components.iter())
                    .find_map(|component| match component {
                        ActionRowComponent::InputText(input) if input.custom_id == id => Some(input.value.clone().unwrap_or_default()),
                        _ => None,
                    })
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            };
            let text = field(INPUT_ID);
            let action = match decode(&m.data.custom_id) {
                // The approve modal: an optional note and the step numbers to leave out.
                Ok(Button::ApproveWithNote(approval_id)) => {
                    let except = field(EXCEPT_ID);
                    match plangate_engine::grammar::parse_step_numbers(&except) {
                        Ok(except) => Action::Approve { approval_id, note: (!text.is_empty()).then_some(text), except },
                        // The grammar's own usage error explains the format.
                        Err(_) => Action::BadCommand(format!("accept except {except}")),
                    }
                }
                Ok(Button::RequestChanges(approval_id)) => Action::Feedback { approval_id, text },
                // One step per line, markers dropped: the engine's rule for typed lists.
                Ok(Button::Edit(approval_id)) => Action::Edit { approval_id, steps: list::parse_lines(&text) },
                Ok(Button::AnswerOther(question_id)) => Action::AnswerText { question_id, text },
                _ => Action::UnknownButton(clip(&m.data.custom_id)),
            };
            (place(m.channel_id, m.channel.as_ref()), user(&m.user, m.guild_id), action, m.id)
        }
        _ => return None,
    };
    Some(Inbound { channel: "discord", chat, user: who, action, idempotency_key: idempotency_key(id), thread })
}

/// The chat and the thread an interaction came from. In a thread (on
/// Discord a channel of its own) the chat is the thread's parent channel,
/// where destinations are configured and people authorized, and the thread
/// is the session's place (a `/plan` typed there means that session). Both
/// come from the `channel` object Discord puts in the interaction (its
/// type and `parent_id`), never from anything a member wrote; a thread
/// whose parent Discord did not name stays a chat of its own, which no
/// destination names.
fn place(channel_id: ChannelId, channel: Option<&PartialChannel>) -> (String, Option<String>) {
    let threaded = |c: &&PartialChannel| {
        c.id == channel_id && matches!(c.kind, ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread)
    };
    match channel.filter(threaded).and_then(|c| c.parent_id) {
        Some(parent) => (parent.to_string(), Some(channel_id.to_string())),
        None => (channel_id.to_string(), None),
    }
}

/// `/plan approvers [action] [user]`: the user option is Discord's own
/// mention (an id the platform resolved), given to the grammar as `<@id>`.
fn approvers_action(args: &[CommandDataOption]) -> Action {
    let action = string_option(args, "action").filter(|a| !a.is_empty()).unwrap_or("list");
    let user = args.iter().find(|o| o.name == "user").and_then(|o| match &o.value {
        CommandDataOptionValue::User(id) => Some(format!("<@{id}>")),
        _ => None,
    });
    let words = ["approvers", action].into_iter().map(str::to_string).chain(user).collect::<Vec<_>>().join(" ");
    parsed_or_bad(parse_args(&words), words)
}

fn string_option<'a>(options: &'a [CommandDataOption], name: &str) -> Option<&'a str> {
    options.iter().find(|o| o.name == name).and_then(|o| match &o.value {
        CommandDataOptionValue::String(s) => Some(s.trim()),
        _ => None,
    })
}

/// `/plan <sub> [text] [target]` → the words after `/plan`, parsed by the
/// shared grammar. Free text (feedback, answer, steps) is never read as a
/// target: the grammar would take a leading `#abcd` or `a/b` for one.
pub(crate) fn command_action(options: &[CommandDataOption]) -> Action {
    let Some(sub) = options.first() else {
        return parsed_or_bad(parse_args(""), String::new());
    };
    let CommandDataOptionValue::SubCommand(args) = &sub.value else {
        return Action::BadCommand(sub.name.clone());
    };
    let verb = sub.name.as_str();
    if verb == "approvers" {
        return approvers_action(args);
    }
    let target = string_option(args, "target").filter(|t| !t.is_empty());
    let text = match verb {
        // `revise` and `reject`: registered by plangate before `changes`.
        "changes" | "revise" | "reject" => string_option(args, "feedback"),
        "answer" => string_option(args, "text"),
        "edit" => string_option(args, "steps"),
        "auto" => string_option(args, "state"),
        "allow" => string_option(args, "grade"),
        "deny" => string_option(args, "reason"),
        "pair" => string_option(args, "code"),
        _ => None,
    }
    .filter(|t| !t.is_empty());
    // `/plan rules remove:N` is the grammar's `rules remove N`.
    let removal = args.iter().find(|o| o.name == "remove").and_then(|o| match o.value {
        CommandDataOptionValue::Integer(n) => Some(format!("remove {n}")),
        _ => None,
    });
    let text = match (verb, removal.as_deref()) {
        ("rules", Some(removal)) => Some(removal),
        _ => text,
    };
    let words = [Some(verb), target, text].into_iter().flatten().collect::<Vec<_>>().join(" ");
    if let Some(target) = target {
        // The target option must be a target on its own, not the start of the text.
        let valid = matches!(parse_args(&format!("status {target}")), Ok(Parsed { target: Some(_), .. }));
        if !valid {
            return Action::BadCommand(words);
        }
        return parsed_or_bad(parse_args(&words), words);
    }
    match (verb, text) {
        ("changes" | "revise" | "reject" | "answer" | "edit" | "deny", Some(text)) => {
            // A placeholder target makes the grammar take all of `text` as text.
            let parsed = parse_args(&format!("{verb} #0000 {text}")).map(|p| Parsed { target: None, ..p });
            parsed_or_bad(parsed, words)
        }
        _ => parsed_or_bad(parse_args(&words), words),
    }
}

fn parsed_or_bad(parsed: Result<Parsed, plangate_engine::grammar::GrammarError>, words: String) -> Action {
    match parsed {
        Ok(p) => Action::Command(p),
        Err(_) => Action::BadCommand(words),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_engine::grammar::{PlanCommand, Target};
    use plangate_engine::SessionKey;

    fn options(sub: &str, args: &[(&str, &str)]) -> Vec<CommandDataOption> {
        let json = serde_json::json!([{
            "name": sub, "type": 1,
            "options": args.iter().map(|(n, v)| serde_json::json!({"name": n, "type": 3, "value": v})).collect::<Vec<_>>()
        }]);
        serde_json::from_value(json).unwrap()
    }

    fn cmd(sub: &str, args: &[(&str, &str)]) -> Action {
        command_action(&options(sub, args))
    }

    #[test]
    fn free_text_is_never_a_target() {
        assert_eq!(
            cmd("revise", &[("feedback", "#abcd is wrong, and demo/s1 too")]),
            Action::Command(Parsed { command: PlanCommand::Revise("#abcd is wrong, and demo/s1 too".into()), target: None })
        );
        assert_eq!(
            cmd("revise", &[("feedback", "smaller"), ("target", "demo/s1")]),
            Action::Command(Parsed {
                command: PlanCommand::Revise("smaller".into()),
                target: Some(Target::Session(SessionKey::new("demo", "s1")))
            })
        );
        // An invalid target is refused, not folded into the feedback.
        assert_eq!(cmd("revise", &[("feedback", "smaller"), ("target", "nope")]), Action::BadCommand("revise nope smaller".into()));
    }

    #[test]
    fn auto_and_edit() {
        assert_eq!(
            cmd("auto", &[("state", "off"), ("target", "#a1b2")]),
            Action::Command(Parsed { command: PlanCommand::Auto(false), target: Some(Target::Approval("a1b2".into())) })
        );
        assert_eq!(
            cmd("edit", &[("steps", "one; two")]),
            Action::Command(Parsed { command: PlanCommand::Edit(vec!["one".into(), "two".into()]), target: None })
        );
        assert_eq!(cmd("list", &[("target", "#a1b2")]), Action::BadCommand("list #a1b2".into()));
    }

    #[test]
    fn permission_subcommands() {
        use plangate_engine::permission::{Grade, PermissionAnswer};
        assert_eq!(
            cmd("allow", &[("grade", "session")]),
            Action::Command(Parsed { command: PlanCommand::Permission(PermissionAnswer::Allow { grade: Grade::Session }), target: None })
        );
        assert_eq!(
            cmd("deny", &[("reason", "demo/s2 is the wrong one")]),
            Action::Command(Parsed {
                command: PlanCommand::Permission(PermissionAnswer::Deny { reason: Some("demo/s2 is the wrong one".into()) }),
                target: None
            })
        );
        let json = serde_json::json!([{"name": "rules", "type": 1, "options": [{"name": "remove", "type": 4, "value": 2}]}]);
        let removal: Vec<CommandDataOption> = serde_json::from_value(json).unwrap();
        assert_eq!(command_action(&removal), Action::Command(Parsed { command: PlanCommand::RemoveRule(2), target: None }));
        assert_eq!(cmd("rules", &[]), Action::Command(Parsed { command: PlanCommand::Rules, target: None }));
    }

    #[test]
    fn a_thread_is_its_parent_channel_with_the_thread_beside_it() {
        let channel = |v: serde_json::Value| -> PartialChannel { serde_json::from_value(v).unwrap() };
        let thread = channel(serde_json::json!({"id": "30", "type": 11, "parent_id": "20"}));
        assert_eq!(place(ChannelId::new(30), Some(&thread)), ("20".to_string(), Some("30".to_string())));
        // A plain channel, a thread without a parent named, and a channel
        // object about another channel than the interaction's: no thread.
        let text = channel(serde_json::json!({"id": "20", "type": 0, "parent_id": "10"}));
        assert_eq!(place(ChannelId::new(20), Some(&text)), ("20".to_string(), None));
        let orphan = channel(serde_json::json!({"id": "30", "type": 11}));
        assert_eq!(place(ChannelId::new(30), Some(&orphan)), ("30".to_string(), None));
        assert_eq!(place(ChannelId::new(31), Some(&thread)), ("31".to_string(), None));
        assert_eq!(place(ChannelId::new(31), None), ("31".to_string(), None));
    }

    #[test]
    fn modal_steps_one_per_line() {
        assert_eq!(
            list::parse_lines("1. first\n\n2) second; still second\n- third\n2024 plan"),
            vec!["first", "second; still second", "third", "2024 plan"]
        );
    }
}
