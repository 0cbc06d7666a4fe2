//! The Slack adapter against the loopback Slack fake, with the real
//! slack-morphism client: exact requests out, exact `Inbound`s in, every
//! `Reply` rendered, and the attacks (forged data, bad signatures, stale
//! timestamps, replays, foreign team).

use plangate_channel::{
    always_leader, Action, Adapter, Channel, ChannelError, Delivery, Destination, Document, Inbound, InboundHandler, Reply, Style, User,
};
use plangate_channel::{Clock, ManualClock, SystemClock};
use plangate_engine::card::Card;
use plangate_engine::codec::{encode, Button};
use plangate_engine::grammar::parse_args;
use plangate_engine::{ApprovalId, DecisionStatus, Question, QuestionStatus, SessionKey, Timestamp};
use plangate_slack::{start, start_with, SlackConfig, StartOptions, Transport};
use plangate_testkit::cards::{self, decided};
use plangate_testkit::server::eventually;
use plangate_testkit::slack::{
    block_actions, from_team, slash_command, text_input, view_submission, Body, Scripted, SlackFake, OTHER_TEAM, TEAM,
};
use secrecy::SecretString;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

const BOT: &str = "xoxb-test-bot";
const APP: &str = "xapp-test-app";
const SECRET: &str = "test-signing-secret";
const T: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------- harness

type ReplyFn = Box<dyn Fn(&Inbound) -> Reply + Send + Sync>;

/// The server's side, recorded: every `Inbound`, and a scripted `Reply`.
struct Recorder {
    events: Mutex<Vec<Inbound>>,
    reply: ReplyFn,
    version: watch::Sender<u64>,
}

#[async_trait::async_trait]
impl InboundHandler for Recorder {
    async fn handle(&self, event: Inbound) -> Reply {
        let reply = (self.reply)(&event);
        self.events.lock().unwrap().push(event);
        self.version.send_modify(|v| *v += 1);
        reply
    }

    fn load_cursor(&self, _key: &str) -> Option<String> {
        None
    }

    fn save_cursor(&self, _key: &str, _value: &str) {}
}

impl Recorder {
    fn new(reply: impl Fn(&Inbound) -> Reply + Send + Sync + 'static) -> Arc<Recorder> {
        Arc::new(Recorder { events: Mutex::new(Vec::new()), reply: Box::new(reply), version: watch::channel(0).0 })
    }

    fn events(&self) -> Vec<Inbound> {
        self.events.lock().unwrap().clone()
    }

    async fn wait_events(&self, n: usize) -> Vec<Inbound> {
        let mut rx = self.version.subscribe();
        let deadline = tokio::time::Instant::now() + T;
        loop {
            rx.borrow_and_update();
            let events = self.events();
            if events.len() >= n {
                return events;
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                panic!("expected {n} inbound events, got {events:#?}");
            }
        }
    }
}

struct Harness {
    fake: SlackFake,
    adapter: Adapter,
    handler: Arc<Recorder>,
    /// Held so the adapter's shutdown signal stays open for the test.
    _shutdown: watch::Sender<bool>,
    /// HTTP mode: where the adapter's routes are served.
    base: String,
    /// HTTP mode: the verifier's clock (Unix seconds).
    clock: Arc<ManualClock>,
    http: reqwest::Client,
}

fn config(fake: &SlackFake, transport: Transport) -> SlackConfig {
    let mut config = SlackConfig::new(BOT);
    config.app_token = Some(SecretString::new(APP.into()));
    config.signing_secret = Some(SecretString::new(SECRET.into()));
    config.api_url = fake.api_url();
    config.transport = transport;
    config.team_id = Some(TEAM.into());
    // Most tests are not about pacing; the pacing test sets 1 again.
    config.per_channel_per_second = 100;
    config
}

/// Unix seconds on the system clock.
fn now() -> i64 {
    SystemClock.unix_secs()
}

async fn harness_with(
    transport: Transport,
    tweak: impl FnOnce(&mut SlackConfig),
    reply: impl Fn(&Inbound) -> Reply + Send + Sync + 'static,
) -> Harness {
    let fake = SlackFake::start().await;
    let handler = Recorder::new(reply);
    let (shutdown, rx) = watch::channel(false);
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let mut cfg = config(&fake, transport);
    tweak(&mut cfg);
    let adapter =
        start_with(cfg, handler.clone(), rx, always_leader(), StartOptions { clock: clock.clone() }).await.expect("adapter starts");
    let mut base = String::new();
    if let Some(routes) = adapter.routes.clone() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, routes).await;
        });
    }
    Harness { fake, adapter, handler, _shutdown: shutdown, base, clock, http: reqwest::Client::builder().no_proxy().build().unwrap() }
}

async fn harness(transport: Transport, reply: impl Fn(&Inbound) -> Reply + Send + Sync + 'static) -> Harness {
    harness_with(transport, |_| {}, reply).await
}

impl Harness {
    fn channel(&self) -> Arc<dyn Channel> {
        self.adapter.channel.clone()
    }

    /// POST a signed form body to one of the adapter's routes.
    async fn post_signed(&self, path: &str, body: &str, ts: i64, extra: &[(&str, &str)]) -> reqwest::Response {
        let ts = ts.to_string();
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-slack-request-timestamp", &ts)
            .header("x-slack-signature", plangate_slack::verify::sign(SECRET.as_bytes(), &ts, body.as_bytes()))
            .body(body.to_string());
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        req.send().await.unwrap()
    }

    async fn post_interaction(&self, payload: &Value) -> reqwest::Response {
        let body = serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap();
        self.post_signed("/slack/interactivity", &body, self.clock.unix_secs(), &[]).await
    }
}

fn aid(n: u8) -> ApprovalId {
    ApprovalId([n; 16])
}

fn open_card(id: ApprovalId, steps: &[&str]) -> Card {
    Card {
        summary: Some("Make the client resilient.".into()),
        risks: vec!["flaky tests".into()],
        verification: vec!["cargo test".into()],
        ..cards::pending(id, "Add retries", steps)
    }
}

fn destination(style: Style) -> Destination {
    Destination { name: "ops-slack".into(), channel: "slack".into(), chat: "C1".into(), style, ..Destination::default() }
}

fn document() -> Document {
    Document { file_name: "plan-add-retries-v1.md".into(), text: "# Add retries\n\n1. Read the client\n2. Add backoff\n".into() }
}

fn user(team: &str) -> User {
    User { id: "U1".into(), name: "@alice".into(), team: Some(team.into()) }
}

fn button_json(label: &str, data: Button) -> Value {
    let d = encode(data);
    json!({"type": "button", "action_id": d, "value": d, "text": {"type": "plain_text", "text": label}})
}

/// A question option: the agent's words as the label.
fn option_json(label: &str, data: Button) -> Value {
    let mut b = button_json(label, data);
    b["text"] = literal(label);
    b
}

fn card_actions_json(id: ApprovalId) -> Value {
    let mut approve = button_json("Approve", Button::Approve(id));
    approve["style"] = json!("primary");
    let mut cancel = button_json("Cancel", Button::Cancel(id));
    cancel["style"] = json!("danger");
    cancel["confirm"] = json!({
        "title": {"type": "plain_text", "text": "Cancel this plan?"},
        "text": literal(&format!("This cancels “Add retries” #{}. Its session stays blocked (read-only) until a new plan is approved.", id.short())),
        "confirm": {"type": "plain_text", "text": "Yes, cancel"},
        "deny": {"type": "plain_text", "text": "Keep it"},
        "style": "danger",
    });
    json!({
        "type": "actions",
        "block_id": "plangate_actions",
        "elements": [
            approve,
            button_json("Approve with note…", Button::ApproveWithNote(id)),
            button_json("Request changes", Button::RequestChanges(id)),
            button_json("Claim", Button::Claim(id)),
            cancel,
            button_json("View plan", Button::View(id)),
            button_json("Edit", Button::Edit(id))
        ],
    })
}

/// The state of plangate's modal input holding `text`.
fn input(text: &str) -> Value {
    text_input("plangate_input", "plangate_text", text)
}

/// plangate's own mrkdwn.
fn section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
}

/// Agent or user text: plain_text, verbatim, no emoji codes.
fn literal(text: &str) -> Value {
    json!({"type": "plain_text", "text": text, "emoji": false})
}

fn plain(text: &str) -> Value {
    json!({"type": "section", "text": literal(text)})
}

/// Every text object (mrkdwn and plain_text) in a JSON tree.
fn all_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if matches!(map.get("type").and_then(Value::as_str), Some("mrkdwn" | "plain_text")) {
                if let Some(Value::String(t)) = map.get("text") {
                    out.push(t.clone());
                }
            }
            map.values().for_each(|v| all_texts(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| all_texts(v, out)),
        _ => {}
    }
}

/// Every mrkdwn text in a JSON tree.
fn mrkdwn_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("mrkdwn")) {
                if let Some(Value::String(t)) = map.get("text") {
                    out.push(t.clone());
                }
            }
            map.values().for_each(|v| mrkdwn_texts(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| mrkdwn_texts(v, out)),
        _ => {}
    }
}

/// Print what the fake saw (run with `--nocapture`): the round trips quoted
/// in the adapter's documentation come from here.
fn dump(label: &str, h: &Harness) {
    println!("== {label}");
    for r in h.fake.requests() {
        let body = match &r.body {
            Body::Json(v) => v.to_string(),
            Body::Bytes(b) => format!("<{} bytes>", b.len()),
            other => format!("{other:?}"),
        };
        println!("{} {} {}{}", r.http_method, r.path, if r.query.is_empty() { String::new() } else { format!("{:?} ", r.query) }, body);
    }
    for f in h.fake.frames() {
        println!("ws ack {f}");
    }
    for e in h.handler.events() {
        println!("inbound {e:?}");
    }
}

mod outbound;
mod signed_http;
mod socket_mode;
mod workspaces;
