//! The chat hub in process: every inbound action and `/plan` command against
//! a recording channel, a real sled store and the real engine.

use async_trait::async_trait;
use plangate_channel::{Action, Channel, ChannelError, Delivery, Destination, Document, Inbound, InboundHandler, Reply, User};
use plangate_engine::card::Card;
use plangate_engine::codec::Button;
use plangate_engine::grammar::parse;
use plangate_engine::{Actor, ApprovalId, Command, Plan, Question, SessionKey, Step};
use plangate_server::config::Settings;
use plangate_server::core::{Core, ExecMeta};
use plangate_server::hub::Hub;
use plangate_store::{AuditQuery, SledStore};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records every outbound call as one line.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
    next: AtomicU64,
}

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
    fn push(&self, line: String) {
        self.calls.lock().unwrap().push(line);
    }
}

#[async_trait]
impl Channel for Recorder {
    fn name(&self) -> &'static str {
        "telegram"
    }
    async fn post_card(&self, d: &Destination, card: &Card, doc: &Document) -> Result<Delivery, ChannelError> {
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        self.push(format!("post {} v{} open={} doc={}", d.chat, card.version, card.is_open(), doc.file_name));
        Ok(Delivery {
            destination: d.name.clone(),
            channel: "telegram".into(),
            chat: d.chat.clone(),
            message_id: id.to_string(),
            thread: None,
            style: d.style,
        })
    }
    async fn update_card(&self, d: &Delivery, card: &Card) -> Result<(), ChannelError> {
        self.push(format!("update {} msg{} {}", d.chat, d.message_id, card.receipt.clone().unwrap_or_else(|| "open".into())));
        Ok(())
    }
    async fn send_nudge(&self, d: &Delivery, _card: &Card, text: &str) -> Result<(), ChannelError> {
        self.push(format!("nudge {} {text}", d.chat));
        Ok(())
    }
    async fn send_document(&self, chat: &str, _reply_to: Option<&str>, doc: &Document) -> Result<(), ChannelError> {
        self.push(format!("document {chat} {}", doc.file_name));
        Ok(())
    }
    async fn send_text(&self, chat: &str, text: &str) -> Result<(), ChannelError> {
        self.push(format!("text {chat} {text}"));
        Ok(())
    }
    async fn post_question(&self, d: &Destination, q: &Question) -> Result<Delivery, ChannelError> {
        self.push(format!("question {} {}", d.chat, q.question));
        Ok(Delivery {
            destination: d.name.clone(),
            channel: "telegram".into(),
            chat: d.chat.clone(),
            message_id: "q1".into(),
            thread: None,
            style: d.style,
        })
    }
    async fn update_question(&self, d: &Delivery, q: &Question) -> Result<(), ChannelError> {
        self.push(format!("question-update {} {}", d.chat, q.answer.clone().unwrap_or_default()));
        Ok(())
    }
}

const CONFIG: &str = r#"
[server]
bind = "127.0.0.1:0"
data_dir = "unused"
operator_token = "operator-token-123"

[agents.demo]
token = "agent-token-demo-1"
destinations = ["ops"]

[agents.ci]
token = "agent-token-ci-123"
destinations = ["ops"]

[agents.lonely]
token = "agent-token-lonely"
destinations = ["elsewhere"]

[destinations.ops]
channel = "telegram"
chat = "100"
approvers = ["telegram:1", "telegram:2"]

[destinations.elsewhere]
channel = "telegram"
chat = "200"
approvers = ["telegram:9"]

[telegram]
token = "x"
"#;

struct Fixture {
    core: Arc<Core>,
    hub: Hub,
    chan: Arc<Recorder>,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::from_toml(CONFIG).unwrap();
    settings.data_dir = dir.path().to_path_buf();
    let store = SledStore::open(dir.path()).unwrap();
    let core = Core::new(Arc::new(settings), Arc::new(store));
    let chan = Arc::new(Recorder::default());
    core.adapters.register(chan.clone());
    let hub = Hub::new(core.clone());
    hub.expect_team("slack", "T1".into());
    Fixture { hub, core, chan, _dir: dir }
}

impl Fixture {
    async fn propose(&self, agent: &str, session: &str, title: &str) -> ApprovalId {
        let key = SessionKey::new(agent, session);
        self.core.execute(&key, Actor::Agent, Command::Enter { reason: None }, ExecMeta::default()).await.unwrap();
        let plan = Plan { steps: vec![Step::pending("one"), Step::pending("two")], ..Plan::titled(title) };
        let done = self
            .core
            .execute(
                &key,
                Actor::Agent,
                Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
                ExecMeta::default(),
            )
            .await
            .unwrap();
        self.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
        done.transition.state.latest.unwrap().approval_id
    }

    async fn act(&self, user: &str, chat: &str, action: Action) -> Reply {
        let ev = Inbound {
            channel: "telegram",
            chat: chat.into(),
            user: User { id: user.into(), name: format!("@user{user}"), team: None },
            action,
            idempotency_key: None,
            thread: None,
        };
        let reply = self.hub.handle(ev).await;
        self.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
        reply
    }

    async fn say(&self, user: &str, text: &str) -> Reply {
        let action = match parse(text, Some("PlanBot")) {
            Ok(Some(p)) => Action::Command(p),
            _ => Action::BadCommand(text.into()),
        };
        self.act(user, "100", action).await
    }

    async fn status(&self, agent: &str, session: &str) -> plangate_engine::State {
        self.core.load(&SessionKey::new(agent, session)).await.unwrap()
    }

    async fn audit(&self) -> Vec<String> {
        let events = self.core.storage.store.audit(&AuditQuery::default()).unwrap();
        events.into_iter().map(|e| format!("{} {} {}", e.actor, e.action, e.detail)).collect()
    }
}

fn text(r: &Reply) -> String {
    match r {
        Reply::Notice(t) | Reply::Text(t) => t.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn approve_by_button_edits_every_card_and_refuses_the_rest() {
    let f = fixture().await;
    let id = f.propose("demo", "s1", "Add retries").await;
    assert_eq!(f.chan.take(), vec!["post 100 v1 open=true doc=plan-add-retries-v1.md"]);

    // A non-approver is refused, audited, and nothing changes.
    let r = f.act("7", "100", Action::Button(Button::Approve(id))).await;
    assert!(text(&r).starts_with("You are not an approver for this plan."), "{}", text(&r));
    // …told its ids in the config's own form, to paste into approvers.
    assert!(text(&r).contains("chat = \"100\"") && text(&r).contains("\"telegram:7\""), "{}", text(&r));
    assert!(f.audit().await.iter().any(|l| l.starts_with("telegram:7 refused")), "{:?}", f.audit().await);
    assert_eq!(f.status("demo", "s1").await.latest.unwrap().status, plangate_engine::DecisionStatus::Pending);

    // An approver of another chat cannot decide from a chat that does not get the card.
    let r = f.act("9", "200", Action::Button(Button::Approve(id))).await;
    assert!(text(&r).contains("cannot be decided here"), "{}", text(&r));
    assert!(text(&r).contains("chat = \"200\"") && text(&r).contains("\"telegram:9\""), "{}", text(&r));

    // The approver decides: receipt toast, card edited.
    let r = f.act("1", "100", Action::Button(Button::Approve(id))).await;
    assert!(text(&r).starts_with("✅ Approved v1 by telegram:@user1"), "{}", text(&r));
    let calls = f.chan.take();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].starts_with("update 100 msg1 ✅ Approved v1 by telegram:@user1"), "{calls:?}");

    // A second click: changes nothing, says who won.
    let r = f.act("2", "100", Action::Button(Button::Approve(id))).await;
    assert!(text(&r).starts_with("Plan v1 was already approved by telegram:@user1"), "{}", text(&r));
    assert!(f.chan.take().is_empty());
}

#[tokio::test]
async fn request_changes_cancel_view_and_stale_clicks() {
    let f = fixture().await;
    let v1 = f.propose("demo", "s1", "First").await;
    match f.act("1", "100", Action::Button(Button::RequestChanges(v1))).await {
        Reply::AskFeedback { approval_id, version, prompt } => {
            assert_eq!((approval_id, version), (v1, 1));
            assert!(prompt.contains("v1"));
        }
        other => panic!("{other:?}"),
    }
    let r = f.act("1", "100", Action::Feedback { approval_id: v1, text: "smaller".into() }).await;
    assert!(text(&r).contains("Changes requested on v1 by telegram:@user1") && text(&r).ends_with(": smaller"), "{}", text(&r));
    let state = f.status("demo", "s1").await;
    assert_eq!(state.session.rejection_count, 1);
    f.chan.take();

    // v2 supersedes nothing pending (v1 was decided); v3 supersedes v2.
    let key = SessionKey::new("demo", "s1");
    let propose = |t: &str| Command::Propose {
        plan: Plan::titled(t),
        markdown: None,
        requested_by: None,
        harness: plangate_engine::Harness::Api,
        project: None,
    };
    let v2 = f
        .core
        .execute(&key, Actor::Agent, propose("Second"), ExecMeta::default())
        .await
        .unwrap()
        .transition
        .state
        .latest
        .unwrap()
        .approval_id;
    f.core.execute(&key, Actor::Agent, propose("Third"), ExecMeta::default()).await.unwrap();
    f.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    let calls = f.chan.take();
    // Approvals' chat queues are independent: v2's card may go out before or
    // after v3's, but the message it went out as is edited to superseded.
    let v2_card = f.core.storage.store.deliveries(&v2).unwrap().pop().expect("v2's card").message_id;
    assert!(calls.contains(&format!("update 100 msg{v2_card} ↪ Superseded by v3")), "{calls:?}");
    let r = f.act("1", "100", Action::Button(Button::Approve(v2))).await;
    assert_eq!(text(&r), "This plan was superseded by v3.");

    // View is open to the chat.
    match f.act("7", "100", Action::Button(Button::View(v2))).await {
        Reply::Document { document, .. } => assert_eq!(document.file_name, "plan-second-v2.md"),
        other => panic!("{other:?}"),
    }
    // Cancel asks first, then the confirmation halts the session (read-only).
    let v3 = f.status("demo", "s1").await.latest.unwrap().approval_id;
    assert!(matches!(f.act("1", "100", Action::Button(Button::Cancel(v3))).await, Reply::ConfirmCancel { .. }));
    assert_eq!(f.status("demo", "s1").await.session.mode, plangate_engine::Mode::Plan);
    let r = f.act("1", "100", Action::Button(Button::ConfirmCancel(v3))).await;
    assert!(text(&r).starts_with("✖ Cancelled v3") && text(&r).contains("session halted (read-only)"), "{}", text(&r));
    let session = f.status("demo", "s1").await.session;
    assert_eq!((session.mode, session.released_by), (plangate_engine::Mode::Halted, None));
    // Forged data.
    let r = f.act("1", "100", Action::UnknownButton("pg1:a:zz".into())).await;
    assert_eq!(text(&r), "Unknown button.");
}

#[tokio::test]
async fn plan_commands_resolve_targets_and_explain_ambiguity() {
    let f = fixture().await;
    // Nothing active yet.
    assert!(text(&f.say("1", "/plan status").await).contains("No plan is active"));
    let a = f.propose("demo", "s1", "Alpha").await;
    // One active: no target needed.
    assert!(text(&f.say("7", "/plan status").await).contains("demo/s1 · plan mode"));
    let b = f.propose("ci", "build", "Beta").await;
    // Two active: a target is required, and the error lists the candidates.
    let r = text(&f.say("1", "/plan accept").await);
    assert!(r.contains("More than one plan") && r.contains(&format!("#{}", a.short())) && r.contains("ci/build"), "{r}");
    let r = text(&f.say("1", "/plan list").await);
    assert!(r.contains("Alpha") && r.contains("Beta"), "{r}");
    let r = text(&f.say("1", &format!("/plan accept #{}", a.short())).await);
    assert!(r.starts_with("✅ Approved v1"), "{r}");
    let r = text(&f.say("1", "/plan changes ci/build make it faster").await);
    assert!(r.contains("Changes requested on v1") && r.contains("make it faster"), "{r}");
    assert_eq!(f.status("ci", "build").await.session.rejection_count, 1);
    // Unknown id, bad grammar, help.
    assert!(text(&f.say("1", "/plan accept #ffffff").await).contains("No plan with that #id"));
    assert!(text(&f.say("1", "/plan frobnicate").await).contains("unknown command"));
    assert!(text(&f.say("1", "/plan").await).contains("/plan changes"));
    let _ = b;
}

/// Boxed: this one async body awaits the whole hub pipeline many times over,
/// and unboxed its future (moved through the debug build's frames) came
/// within a few bytes of the test thread's 2 MiB stack.
#[tokio::test]
async fn edit_on_off_auto_answer_restate() {
    Box::pin(edit_on_off_auto_answer_restate_body()).await
}

async fn edit_on_off_auto_answer_restate_body() {
    let f = fixture().await;
    // /plan on starts plan mode for a session of an agent of this chat.
    let r = text(&f.say("1", "/plan on demo/s9").await);
    assert!(r.starts_with("Plan mode is on"), "{r}");
    assert_eq!(f.status("demo", "s9").await.session.mode, plangate_engine::Mode::Plan);
    // …but not for an agent whose cards go elsewhere, nor by a non-approver.
    assert!(text(&f.say("1", "/plan on lonely/x").await).contains("does not send its plans to this chat"));
    assert!(text(&f.say("7", "/plan off demo/s9").await).contains("not an approver"));
    let r = text(&f.say("1", "/plan off demo/s9").await);
    assert!(r.starts_with("Released by telegram:") && r.contains("no plan required"), "{r}");
    assert!(f.status("demo", "s9").await.session.released_by.is_some());

    let id = f.propose("demo", "s1", "Editable").await;
    let r = text(&f.say("2", "/plan edit first thing; second thing").await);
    assert!(r.starts_with("✅ Approved v1 with edits by telegram:@user2"), "{r}");
    let state = f.status("demo", "s1").await;
    let steps: Vec<_> = state.session.steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(steps, vec!["first thing", "second thing"]);
    let _ = id;

    // Auto mode: the next proposal approves itself.
    f.core.execute(&SessionKey::new("demo", "s1"), Actor::Agent, Command::Enter { reason: None }, ExecMeta::default()).await.unwrap();
    assert!(text(&f.say("1", "/plan auto on demo/s1").await).starts_with("Auto-approve is on"));
    let done = f
        .core
        .execute(
            &SessionKey::new("demo", "s1"),
            Actor::Agent,
            Command::Propose {
                plan: Plan::titled("Auto"),
                markdown: None,
                requested_by: None,
                harness: plangate_engine::Harness::Api,
                project: None,
            },
            ExecMeta::default(),
        )
        .await
        .unwrap();
    assert_eq!(done.transition.state.latest.unwrap().decided_by.as_deref(), Some("auto"));

    // Questions: posted, answered by a button, updated.
    let key = SessionKey::new("demo", "q");
    let ask = Command::Ask { question: "Which DB?".into(), options: vec!["pg".into(), "sqlite".into()], allow_freetext: false };
    let done = f.core.execute(&key, Actor::Agent, ask, ExecMeta::default()).await.unwrap();
    let qid = done.transition.state.session.pending_question.unwrap().question_id;
    f.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert!(f.chan.take().contains(&"question 100 Which DB?".to_string()));
    let r = text(&f.act("7", "100", Action::Button(Button::Answer(qid, 0))).await);
    assert!(r.starts_with("You are not an approver for this plan."), "{r}");
    let r = text(&f.act("1", "100", Action::Button(Button::Answer(qid, 1))).await);
    assert_eq!(r, "Answered: sqlite");
    assert!(f.chan.take().contains(&"question-update 100 sqlite".to_string()));
    let q = f.core.storage.store.question(&qid).unwrap().unwrap();
    assert_eq!(q.answered_by.as_deref(), Some("telegram:@user1"));

    // Restate posts the card again.
    f.propose("demo", "r", "Again").await;
    f.chan.take();
    assert_eq!(f.say("1", "/plan restate demo/r").await, Reply::None);
    assert_eq!(f.chan.take(), vec!["post 100 v1 open=true doc=plan-again-v1.md"]);
}

#[tokio::test]
async fn duplicate_events_and_foreign_teams() {
    let f = fixture().await;
    let id = f.propose("demo", "s1", "Once").await;
    let ev = |key: &str| Inbound {
        channel: "telegram",
        chat: "100".into(),
        user: User { id: "1".into(), name: "@a".into(), team: None },
        action: Action::Button(Button::RequestChanges(id)),
        idempotency_key: Some(key.into()),
        thread: None,
    };
    assert!(matches!(f.hub.handle(ev("telegram:update:5")).await, Reply::AskFeedback { .. }));
    assert_eq!(f.hub.handle(ev("telegram:update:5")).await, Reply::None);
    // A decision keyed by an update id is recorded with the transition.
    let approve = Inbound { action: Action::Button(Button::Approve(id)), ..ev("telegram:update:6") };
    assert!(text(&f.hub.handle(approve.clone()).await).starts_with("✅"));
    assert_eq!(f.hub.handle(approve).await, Reply::None);

    let slack = Inbound {
        channel: "slack",
        chat: "C1".into(),
        user: User { id: "U1".into(), name: "@x".into(), team: Some("T-other".into()) },
        action: Action::Button(Button::Approve(id)),
        idempotency_key: None,
        thread: None,
    };
    assert!(text(&f.hub.handle(slack).await).contains("workspace is not allowed"));
}

#[tokio::test]
async fn a_stuck_subagent_shows_on_the_card_and_status_and_an_approver_clears_it() {
    let f = fixture().await;
    let id = f.propose("demo", "s1", "Add retries").await;
    f.chan.take();
    let key = SessionKey::new("demo", "s1");
    f.core.execute(&key, Actor::Agent, Command::RegisterSubagent("crashed-child".into()), ExecMeta::default()).await.unwrap();
    f.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    // The open card is redrawn with the run on it.
    assert_eq!(f.chan.take(), vec!["update 100 msg1 open"]);
    let card =
        plangate_engine::card::card(&f.status("demo", "s1").await.latest.unwrap(), Some(&f.status("demo", "s1").await), f.core.now());
    assert!(card.subagents[0].starts_with("crashed-child · open since"), "{:?}", card.subagents);

    // Anyone in the chat sees it; approving is refused while it is open.
    let status = text(&f.say("7", "/plan status").await);
    assert!(status.contains("Open subagents (approval waits for them; /plan subagents clear)\n⏳ crashed-child · open since"), "{status}");
    assert!(text(&f.say("7", "/plan list").await).contains("1 subagent run(s) open"));
    assert!(text(&f.say("7", "/plan subagents").await).contains("⏳ crashed-child"));
    let r = text(&f.say("1", "/plan accept").await);
    assert!(r.contains("subagent run(s) are still open (crashed-child)") && r.contains("/plan subagents clear"), "{r}");

    // Only an approver clears, and the refusal is audited.
    let r = text(&f.say("7", "/plan subagents clear").await);
    assert!(r.starts_with("You are not an approver for this plan.\nThis chat: chat = \"100\""), "{r}");
    assert!(f.audit().await.iter().any(|l| l.starts_with("telegram:7 refused")));
    assert_eq!(f.status("demo", "s1").await.session.open_subagents.len(), 1);
    let r = text(&f.say("2", &format!("/plan subagents clear {}", plangate_engine::view::short_ref(&id))).await);
    assert_eq!(r, "Cleared by telegram:@user2: demo/s1 no longer waits for 1 subagent run (crashed-child).");
    assert!(f.audit().await.iter().any(|l| l
        == "telegram:@user2 subagents_clear telegram:@user2 cleared 1 subagent run(s): crashed-child (the plan no longer waits for them)"));
    assert_eq!(f.chan.take(), vec!["update 100 msg1 open"]);
    let r = text(&f.say("2", "/plan subagents clear").await);
    assert!(r.contains("nothing to clear"), "{r}");
    let r = text(&f.say("1", "/plan accept").await);
    assert!(r.starts_with("✅ Approved v1 by telegram:@user1"), "{r}");
}

/// Someone writing `/plan` in a chat that is no destination (the first thing
/// a new operator does) is told this chat's id and their own, in the exact
/// form the config wants.
#[tokio::test]
async fn a_chat_that_is_no_destination_is_told_its_ids() {
    let f = fixture().await;
    let action = match parse("/plan list", Some("PlanBot")) {
        Ok(Some(p)) => Action::Command(p),
        other => panic!("{other:?}"),
    };
    let r = text(&f.act("4242", "-100555", action).await);
    assert!(r.starts_with("No agent sends its plans to this chat."), "{r}");
    assert!(r.contains("chat = \"-100555\" (channel = \"telegram\")") && r.contains("\"telegram:4242\""), "{r}");
}
