//! The real teloxide client against the loopback fake Bot API
//! (`plangate_testkit::telegram`), with a recording `InboundHandler`.
//! Every test asserts the exact requests Telegram would receive and the exact
//! `Inbound` the server would see.

use async_trait::async_trait;
use plangate_channel::{
    always_leader, Action, Adapter, ChannelError, ConfigError, Delivery, Destination, Document, Inbound, InboundHandler, Reply, Style, User,
};
use plangate_engine::card::{card, document_file_name, Card};
use plangate_engine::codec::{encode, Button};
use plangate_engine::grammar::{Parsed, PlanCommand, Target};
use plangate_engine::{ApprovalId, DecisionStatus, Plan, Proposal, Question, QuestionStatus, SessionKey, Step, Timestamp};
use plangate_telegram::render::CUT_MARKER;
use plangate_telegram::{start, TelegramConfig, TelegramError, Transport, CURSOR_KEY, SECRET_HEADER, UNKNOWN_BUTTON, WEBHOOK_PATH};
use plangate_testkit::server::eventually;
use plangate_testkit::telegram::{FakeTelegram, Recorded, Scripted, BOT_USERNAME, NOT_MODIFIED, TOKEN};
use secrecy::SecretString;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

const CHAT: i64 = -1001234567890;
const WAIT: Duration = Duration::from_secs(10);
const ID: ApprovalId = ApprovalId([0x11; 16]);
const QID: ApprovalId = ApprovalId([0x22; 16]);
const ALICE: i64 = 111111;

// ---------------------------------------------------------------- the mock server

type Responder = Box<dyn Fn(&Inbound) -> Reply + Send + Sync>;

/// Records every Inbound, answers with `respond`, keeps cursors in memory
/// (shared across adapter restarts, like plangate's database).
struct Recorder {
    seen: Mutex<Vec<Inbound>>,
    cursors: Mutex<HashMap<String, String>>,
    respond: Responder,
    changed: watch::Sender<usize>,
}

impl Recorder {
    fn new(respond: impl Fn(&Inbound) -> Reply + Send + Sync + 'static) -> Arc<Recorder> {
        Arc::new(Recorder { seen: Mutex::default(), cursors: Mutex::default(), respond: Box::new(respond), changed: watch::channel(0).0 })
    }

    fn seen(&self) -> Vec<Inbound> {
        self.seen.lock().unwrap().clone()
    }

    fn cursor(&self) -> Option<String> {
        self.cursors.lock().unwrap().get(CURSOR_KEY).cloned()
    }

    /// Wait until the handler has seen `n` events; returns all of them.
    async fn wait_seen(&self, n: usize) -> Vec<Inbound> {
        let mut rx = self.changed.subscribe();
        tokio::time::timeout(WAIT, rx.wait_for(|_| self.seen.lock().unwrap().len() >= n))
            .await
            .unwrap_or_else(|_| panic!("handler saw {:?}, expected {n} events", self.seen()))
            .unwrap();
        self.seen()
    }

    /// Wait until the saved cursor equals `value`.
    async fn wait_cursor(&self, value: &str) {
        let mut rx = self.changed.subscribe();
        tokio::time::timeout(WAIT, rx.wait_for(|_| self.cursor().as_deref() == Some(value)))
            .await
            .unwrap_or_else(|_| panic!("cursor is {:?}, expected {value}", self.cursor()))
            .unwrap();
    }
}

#[async_trait]
impl InboundHandler for Recorder {
    async fn handle(&self, event: Inbound) -> Reply {
        let reply = (self.respond)(&event);
        self.seen.lock().unwrap().push(event);
        self.changed.send_modify(|n| *n += 1);
        reply
    }
    fn load_cursor(&self, key: &str) -> Option<String> {
        self.cursors.lock().unwrap().get(key).cloned()
    }
    fn save_cursor(&self, key: &str, value: &str) {
        self.cursors.lock().unwrap().insert(key.to_string(), value.to_string());
        self.changed.send_modify(|n| *n += 1);
    }
}

// ---------------------------------------------------------------- fixtures

fn config(fake: &FakeTelegram) -> TelegramConfig {
    TelegramConfig {
        api_url: fake.api_url(),
        poll_timeout_secs: 1,
        // Fast by default; the rate-limit tests set their own.
        per_chat_per_second: 100,
        global_per_second: 100,
        ..TelegramConfig::new(TOKEN)
    }
}

struct Running {
    adapter: Adapter,
    stop: watch::Sender<bool>,
}

impl Running {
    async fn stop(self) {
        self.stop.send_replace(true);
        if let Some(task) = self.adapter.task {
            tokio::time::timeout(WAIT, task).await.expect("polling task ends on shutdown").expect("task did not panic");
        }
    }
}

async fn run(config: TelegramConfig, handler: Arc<Recorder>) -> Running {
    let (stop, shutdown) = watch::channel(false);
    let adapter = start(config, handler, shutdown, always_leader()).await.expect("adapter starts");
    Running { adapter, stop }
}

fn proposal(title: &str, steps: &[&str], status: DecisionStatus) -> Proposal {
    Proposal {
        approval_id: ID,
        session: SessionKey::new("demo", "s1"),
        version: 1,
        plan: Plan {
            summary: Some("Make the client resilient.".into()),
            steps: steps.iter().map(|s| Step::pending(*s)).collect(),
            risks: vec!["retries could hide outages".into()],
            ..Plan::titled(title)
        },
        markdown: None,
        plan_hash: "hash".into(),
        created_at: Timestamp(0),
        status,
        decided_by: (status != DecisionStatus::Pending).then(|| "telegram:@alice".into()),
        decided_at: (status != DecisionStatus::Pending).then_some(Timestamp(14 * 3_600_000 + 2 * 60_000)),
        feedback: (status == DecisionStatus::Rejected).then(|| "split step 2".into()),
        edited_plan: None,
        injection: None,
        superseded_by: None,
        timers: Vec::new(),
        released: false,
        review: Default::default(),
        amends: None,
        project: None,
        previous: None,
        reminders_sent: 0,
        escalated: 0,
        claim: None,
        agent_left_at: None,
        ran: None,
    }
}

fn card_of(p: &Proposal) -> Card {
    card(p, None, Timestamp(3 * 60_000))
}

fn document_of(p: &Proposal, markdown: &str) -> Document {
    Document { file_name: document_file_name(p), text: markdown.to_string() }
}

fn destination(style: Style) -> Destination {
    Destination { name: "ops-tg".into(), channel: "telegram".into(), chat: CHAT.to_string(), style, ..Destination::default() }
}

fn alice() -> Value {
    FakeTelegram::user(ALICE, Some("alice"), "Alice")
}

fn alice_user() -> User {
    User { id: ALICE.to_string(), name: "@alice".into(), team: None }
}

fn card_keyboard(id: ApprovalId) -> Vec<Vec<(String, String)>> {
    vec![
        vec![("✅ Approve".into(), encode(Button::Approve(id))), ("📝 Approve with note…".into(), encode(Button::ApproveWithNote(id)))],
        vec![("✏️ Request changes".into(), encode(Button::RequestChanges(id))), ("🙋 Claim".into(), encode(Button::Claim(id)))],
        vec![("✖ Cancel".into(), encode(Button::Cancel(id))), ("📄 View plan".into(), encode(Button::View(id)))],
        vec![("✍️ Edit steps".into(), encode(Button::Edit(id)))],
    ]
}

/// `method key=value …` for the report and for sequence assertions.
fn describe(r: &Recorded) -> String {
    let mut parts = vec![r.method.clone()];
    for key in ["chat_id", "message_id", "callback_query_id", "offset"] {
        if !r.field(key).is_null() {
            parts.push(format!("{key}={}", r.str(key)));
        }
    }
    if let Some(to) = r.reply_to() {
        parts.push(format!("reply_to={to}"));
    }
    if !r.field("text").is_null() && r.method != "answerCallbackQuery" {
        let text = r.str("text");
        let first: String = text.lines().next().unwrap_or_default().chars().take(60).collect();
        parts.push(format!("text={first:?}"));
    }
    if r.method == "answerCallbackQuery" {
        parts.push(format!("text={:?}", r.str("text")));
    }
    if let Some(kb) = r.keyboard() {
        let data: Vec<String> = kb.iter().flatten().map(|(label, data)| format!("{label}={data}")).collect();
        parts.push(format!("keyboard=[{}]", data.join(", ")));
    }
    if r.field("reply_markup").get("force_reply").is_some() {
        parts.push(format!("force_reply selective={}", r.field("reply_markup")["selective"]));
    }
    if let Some(doc) = r.field("document").get("file_name") {
        parts.push(format!("document={doc}"));
    }
    if !r.field("caption").is_null() {
        parts.push(format!("caption={:?}", r.str("caption")));
    }
    parts.join(" ")
}

/// The id the fake gave the message sent by the `n`-th (1-based) successful
/// sendMessage.
fn sent_id(fake: &FakeTelegram, n: usize) -> i64 {
    let sends: Vec<Recorded> = fake.calls("sendMessage").into_iter().filter(|r| r.status == 200).collect();
    sends[n - 1].message_id_sent().expect("sendMessage answered with a message")
}

/// Telegram's view of HTML text, like the fake computes it.
fn strip(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

mod adapter;
mod webhook;
