//! The Discord adapter against the loopback fake of Discord's REST API and
//! gateway (plangate-testkit), with a recording `InboundHandler`.

use async_trait::async_trait;
use ed25519_dalek::{Signer, SigningKey};
use plangate_channel::{
    always_leader, Action, Adapter, Channel, Delivery, Destination, Document, Inbound, InboundHandler, Reply, Style, User,
};
use plangate_channel::{Clock, ManualClock};
use plangate_discord::{start, start_with_clock, DiscordConfig, Transport, INTERACTIONS_PATH};
use plangate_engine::card::{Card, CardStep};
use plangate_engine::codec::{encode, Button};
use plangate_engine::grammar::{ApproversChange, Parsed, PlanCommand, Target};
use plangate_engine::{ApprovalId, DecisionStatus, Question, QuestionStatus, SessionKey, Timestamp};
use plangate_testkit::cards::{self, decided};
use plangate_testkit::discord::{self as fake, Actor, DiscordFake, Recorded};
use plangate_testkit::server::eventually;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

const APP: u64 = 700_000_000_000_000_007;
const GUILD: u64 = 800_000_000_000_000_008;
const CHANNEL: u64 = 600_000_000_000_000_006;
const ALICE: u64 = 500_000_000_000_000_005;
const TOKEN: &str = "test-bot-token";
const WAIT: Duration = Duration::from_secs(10);
const SEED: [u8; 32] = [7; 32];

fn approval() -> ApprovalId {
    ApprovalId([0xa1, 0xb2, 0xc3, 0xd4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
}

fn card() -> Card {
    Card {
        context: "demo/s1 · v2 · just now".into(),
        summary: Some("Make *the* client retry.".into()),
        steps: vec![
            CardStep { number: 1, mark: "⏳", text: "Add a retry loop".into() },
            CardStep { number: 2, mark: "⏳", text: "Test it".into() },
        ],
        risks: vec!["More load".into()],
        verification: vec!["cargo test".into()],
        version: 2,
        ..cards::pending(approval(), "Add retries @everyone", &[])
    }
}

fn document() -> Document {
    Document { file_name: "plan-add-retries-v2.md".into(), text: "# Add retries\n\n1. Add a retry loop\n2. Test it\n".into() }
}

fn destination(style: Style) -> Destination {
    Destination { name: "ops-dc".into(), channel: "discord".into(), chat: CHANNEL.to_string(), style, ..Destination::default() }
}

fn alice() -> Actor {
    Actor { user_id: ALICE, username: "alice".into(), guild_id: Some(GUILD), channel_id: CHANNEL }
}

fn alice_user() -> User {
    User { id: ALICE.to_string(), name: "@alice".into(), team: Some(GUILD.to_string()) }
}

fn inbound(action: Action, interaction_id: u64) -> Inbound {
    Inbound {
        channel: "discord",
        chat: CHANNEL.to_string(),
        user: alice_user(),
        action,
        idempotency_key: Some(format!("discord:interaction:{interaction_id}")),
        thread: None,
    }
}

type Script = Box<dyn Fn(&Inbound) -> Reply + Send + Sync>;

/// Records every `Inbound` and answers with a scripted `Reply` (optionally slowly).
struct Recorder {
    events: Mutex<Vec<Inbound>>,
    changed: watch::Sender<usize>,
    script: Script,
    delay: Duration,
}

impl Recorder {
    fn new(script: impl Fn(&Inbound) -> Reply + Send + Sync + 'static) -> Arc<Recorder> {
        Recorder::slow(Duration::ZERO, script)
    }

    fn slow(delay: Duration, script: impl Fn(&Inbound) -> Reply + Send + Sync + 'static) -> Arc<Recorder> {
        Arc::new(Recorder { events: Mutex::new(Vec::new()), changed: watch::channel(0).0, script: Box::new(script), delay })
    }

    fn events(&self) -> Vec<Inbound> {
        self.events.lock().unwrap().clone()
    }

    async fn wait(&self, n: usize) -> Vec<Inbound> {
        let mut rx = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if self.events.lock().unwrap().len() >= n {
                return self.events();
            }
            tokio::time::timeout_at(deadline, rx.changed()).await.expect("handler was not called in time").expect("recorder alive");
        }
    }
}

#[async_trait]
impl InboundHandler for Recorder {
    async fn handle(&self, event: Inbound) -> Reply {
        let reply = (self.script)(&event);
        self.events.lock().unwrap().push(event);
        self.changed.send_modify(|n| *n += 1);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        reply
    }
    fn load_cursor(&self, _key: &str) -> Option<String> {
        None
    }
    fn save_cursor(&self, _key: &str, _value: &str) {}
}

fn config(fake: &DiscordFake, transport: Transport) -> DiscordConfig {
    let mut c = DiscordConfig::new(TOKEN, APP.to_string());
    c.api_url = fake.base.clone();
    c.transport = transport;
    c.guild_id = Some(GUILD.to_string());
    c.application_public_key = Some(hex::encode(SigningKey::from_bytes(&SEED).verifying_key().as_bytes()));
    c
}

struct Running {
    adapter: Adapter,
    /// Kept so the adapter's shutdown signal stays open.
    _stop: watch::Sender<bool>,
    /// `http://127.0.0.1:P/discord/interactions` when the transport is HTTP.
    endpoint: Option<String>,
}

async fn run(fake: &DiscordFake, config: DiscordConfig, handler: Arc<Recorder>, clock: Option<Arc<ManualClock>>) -> Running {
    let (stop, shutdown) = watch::channel(false);
    let mut adapter = match clock {
        Some(clock) => start_with_clock(config, handler, shutdown, always_leader(), clock).await,
        None => start(config, handler, shutdown, always_leader()).await,
    }
    .expect("adapter starts");
    let endpoint = match adapter.routes.take() {
        Some(routes) => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, routes).await.unwrap() });
            Some(format!("http://{addr}{INTERACTIONS_PATH}"))
        }
        None => None,
    };
    if adapter.task.is_some() {
        fake.wait_identified(WAIT).await;
    }
    fake.clear();
    Running { adapter, _stop: stop, endpoint }
}

fn embed_total(embed: &Value) -> usize {
    let len = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    len(&embed["title"])
        + len(&embed["description"])
        + len(&embed["footer"]["text"])
        + embed["fields"].as_array().map_or(0, |fs| fs.iter().map(|f| len(&f["name"]) + len(&f["value"])).sum())
}

fn no_mentions() -> Value {
    json!({"parse": [], "users": [], "roles": [], "replied_user": false})
}

fn card_buttons(id: ApprovalId) -> Value {
    json!([{"type": 1, "components": [
        {"type": 2, "style": 3, "label": "Approve", "custom_id": encode(Button::Approve(id))},
        {"type": 2, "style": 3, "label": "Approve with note…", "custom_id": encode(Button::ApproveWithNote(id))},
        {"type": 2, "style": 1, "label": "Request changes", "custom_id": encode(Button::RequestChanges(id))},
        {"type": 2, "style": 2, "label": "Claim", "custom_id": encode(Button::Claim(id))},
        {"type": 2, "style": 4, "label": "Cancel", "custom_id": encode(Button::Cancel(id))}
    ]}, {"type": 1, "components": [
        {"type": 2, "style": 2, "label": "View plan", "custom_id": encode(Button::View(id))},
        {"type": 2, "style": 2, "label": "Edit", "custom_id": encode(Button::Edit(id))}
    ]}])
}

fn card_embed() -> Value {
    json!({
        "title": "📋 Add retries \\@everyone",
        "description": "demo/s1 · v2 · just now · #a1b2c3\n\nMake \\*the\\* client retry.",
        "color": 0x5865F2,
        "type": "rich",
        "fields": [
            {"name": "Steps", "value": "1. ⏳ Add a retry loop\n2. ⏳ Test it", "inline": false},
            {"name": "Risks", "value": "• More load", "inline": false},
            {"name": "Verification", "value": "• cargo test", "inline": false}
        ]
    })
}

/// Drop the keys serenity always sends with their empty defaults, so the
/// assertions below show what matters.
fn trimmed(mut v: Value) -> Value {
    if let Some(map) = v.as_object_mut() {
        for key in ["tts", "sticker_ids", "enforce_nonce"] {
            if matches!(map.get(key), Some(Value::Bool(false))) || map.get(key) == Some(&json!([])) {
                map.remove(key);
            }
        }
        if map.get("attachments") == Some(&json!([])) {
            map.remove("attachments");
        }
        for button in map.get_mut("components").and_then(|c| c.as_array_mut()).into_iter().flatten() {
            for b in button.get_mut("components").and_then(|c| c.as_array_mut()).into_iter().flatten() {
                if b.get("disabled") == Some(&json!(false)) {
                    b.as_object_mut().unwrap().remove("disabled");
                }
            }
        }
    }
    v
}

async fn post(fake: &DiscordFake, channel: &Arc<dyn Channel>, style: Style) -> Delivery {
    let delivery = channel.post_card(&destination(style), &card(), &document()).await.expect("card posted");
    fake.wait_for_count(WAIT, "POST", "/messages", 1).await;
    delivery
}

mod gateway;
mod http_endpoint;
mod outbound;
