//! The Discord adapter against the loopback fake of Discord's REST API and
//! gateway (plangate-testkit), with a recording `InboundHandler`.

use async_trait::async_trait;
use ed25519_dalek::{Signer, SigningKey};
use plangate_channel::{
    always_leader, Action, Adapter, Channel, Delivery, Destination, Document, Inbound, InboundHandler, Reply, Style, User,
};
use plangate_discord::{start, start_with_clock, DiscordConfig, Transport, INTERACTIONS_PATH};
use plangate_engine::card::{Card, CardStep};
use plangate_engine::codec::{encode, Button};
use plangate_engine::grammar::{Parsed, PlanCommand, Target};
use plangate_engine::{ApprovalId, DecisionStatus, Question, QuestionStatus, SessionKey, Timestamp};
use plangate_testkit::cards::{self, decided};
use plangate_testkit::discord::{self as fake, Actor, DiscordFake, Recorded};
use plangate_testkit::server::eventually;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
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
    Destination { name: "ops-dc".into(), channel: "discord".into(), chat: CHANNEL.to_string(), style }
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

async fn run(fake: &DiscordFake, config: DiscordConfig, handler: Arc<Recorder>, clock: Option<plangate_discord::Clock>) -> Running {
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
        {"type": 2, "style": 4, "label": "Cancel", "custom_id": encode(Button::Cancel(id))},
        {"type": 2, "style": 2, "label": "View plan", "custom_id": encode(Button::View(id))}
    ]}, {"type": 1, "components": [
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

// ---------------------------------------------------------------- outbound

#[tokio::test]
async fn start_registers_plan_with_every_subcommand_in_the_guild() {
    let fake = DiscordFake::start(APP).await;
    let (_stop, shutdown) = watch::channel(false);
    let adapter = start(config(&fake, Transport::Http), Recorder::new(|_| Reply::None), shutdown, always_leader()).await.unwrap();
    assert_eq!(adapter.expected_team.as_deref(), Some(GUILD.to_string().as_str()));
    assert!(adapter.task.is_none(), "no gateway in HTTP mode");
    let requests = fake.requests();
    assert_eq!(
        requests.iter().map(Recorded::line).collect::<Vec<_>>(),
        vec![format!("POST /api/v10/applications/{APP}/guilds/{GUILD}/commands")]
    );
    let command = requests[0].json().unwrap();
    assert_eq!(requests[0].authorization.as_deref(), Some("Bot test-bot-token"));
    assert_eq!(command["name"], "plan");
    let subs: Vec<&str> = command["options"].as_array().unwrap().iter().map(|o| o["name"].as_str().unwrap()).collect();
    assert_eq!(
        subs,
        ["help", "status", "list", "view", "accept", "revise", "reject", "edit", "cancel", "answer", "on", "off", "auto", "restate", "web"]
    );
    let revise = &command["options"][5];
    assert_eq!(revise["type"], 1);
    assert_eq!(revise["options"][0]["name"], "feedback");
    assert_eq!(revise["options"][0]["required"], true);
    assert_eq!(revise["options"][1]["name"], "target");
    assert_eq!(revise["options"][1]["required"], false);
}

#[tokio::test]
async fn global_registration_without_guild() {
    let fake = DiscordFake::start(APP).await;
    let mut c = config(&fake, Transport::Http);
    c.guild_id = None;
    let (_stop, shutdown) = watch::channel(false);
    let adapter = start(c, Recorder::new(|_| Reply::None), shutdown, always_leader()).await.unwrap();
    assert_eq!(adapter.expected_team, None);
    assert_eq!(fake.requests()[0].line(), format!("POST /api/v10/applications/{APP}/commands"));
}

#[tokio::test]
async fn proposal_posts_embed_buttons_no_mentions_and_the_document() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Buttons).await;

    let requests = fake.message_requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.line(), format!("POST /api/v10/channels/{CHANNEL}/messages"));
    assert_eq!(r.authorization.as_deref(), Some("Bot test-bot-token"));
    assert_eq!(
        trimmed(r.json().unwrap()),
        json!({
            "embeds": [card_embed()],
            "allowed_mentions": no_mentions(),
            "components": card_buttons(approval()),
            "attachments": [{"id": 0, "filename": "plan-add-retries-v2.md", "description": null}]
        })
    );
    let files = r.files();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].name, "files[0]");
    assert_eq!(files[0].file_name.as_deref(), Some("plan-add-retries-v2.md"));
    assert_eq!(files[0].text(), document().text);

    assert_eq!(delivery.channel, "discord");
    assert_eq!(delivery.chat, CHANNEL.to_string());
    assert_eq!(delivery.destination, "ops-dc");
    assert_eq!(delivery.style, Style::Buttons);
    assert!(delivery.message_id.parse::<u64>().unwrap() > 0);
}

#[tokio::test]
async fn update_card_shows_the_receipt_without_buttons_and_is_idempotent() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Buttons).await;
    let done = decided(&card(), DecisionStatus::Approved, "✅ Approved v2 by discord:@alice · 14:02 UTC");
    channel.update_card(&delivery, &done).await.unwrap();
    channel.update_card(&delivery, &done).await.unwrap();
    let edits = fake.wait_for_count(WAIT, "PATCH", "/messages/", 2).await;
    assert_eq!(edits[0].line(), format!("PATCH /api/v10/channels/{CHANNEL}/messages/{}", delivery.message_id));
    let mut embed = card_embed();
    embed["color"] = json!(0x57F287);
    embed["footer"] = json!({"text": "✅ Approved v2 by discord:\\@alice · 14:02 UTC"});
    assert_eq!(edits[0].json().unwrap(), json!({"embeds": [embed], "allowed_mentions": no_mentions(), "components": []}));
    assert_eq!(edits[0].body, edits[1].body, "the same card gives the same edit");
}

#[tokio::test]
async fn nudge_replies_to_the_card_with_buttons() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Buttons).await;
    channel.send_nudge(&delivery, &card(), "⏰ Plan 'Add retries' v2 has waited 10 min for your approval (#a1b2c3)").await.unwrap();
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 2).await;
    assert_eq!(
        trimmed(posts[1].json().unwrap()),
        json!({
            "content": "⏰ Plan 'Add retries' v2 has waited 10 min for your approval (#a1b2c3)",
            "embeds": [],
            "allowed_mentions": no_mentions(),
            "message_reference": {"type": 0, "message_id": delivery.message_id, "channel_id": CHANNEL.to_string(), "guild_id": null, "fail_if_not_exists": false},
            "components": card_buttons(approval())
        })
    );
}

#[tokio::test]
async fn text_style_has_commands_and_no_components() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = post(&fake, &channel, Style::Text).await;
    let body = trimmed(fake.message_requests()[0].json().unwrap());
    assert_eq!(
        body["content"],
        "📋 Add retries \\@everyone\ndemo/s1 · v2 · just now · #a1b2c3\n\nMake \\*the\\* client retry.\n\nSteps\n1. ⏳ Add a retry loop\n2. ⏳ Test it\n\nRisks\n• More load\n\nVerification\n• cargo test\n\nReply with one of:\n`/plan accept #a1b2c3`\n`/plan revise #a1b2c3 <what to change>`\n`/plan cancel #a1b2c3`\n`/plan view #a1b2c3`"
    );
    assert_eq!(body["embeds"], json!([]));
    assert!(body.get("components").is_none());
    assert_eq!(body["allowed_mentions"], no_mentions());
    assert_eq!(fake.message_requests()[0].files().len(), 1);
    // The text card's edit drops the commands and shows the receipt.
    channel.update_card(&delivery, &decided(&card(), DecisionStatus::Cancelled, "✖ Cancelled v2 by discord:@alice")).await.unwrap();
    let edit = fake.wait_for_count(WAIT, "PATCH", "/messages/", 1).await.remove(0).json().unwrap();
    assert!(edit["content"].as_str().unwrap().ends_with("• cargo test\n\n✖ Cancelled v2 by discord:\\@alice"), "{edit}");
    assert_eq!(edit["components"], json!([]));
}

#[tokio::test]
async fn a_plan_past_the_embed_limits_is_cut_with_a_note() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let mut big = card();
    big.summary = Some("A long summary line.\n".repeat(400));
    big.steps = (1..=120).map(|n| CardStep { number: n, mark: "⏳", text: format!("Step {n}: {}", "do the thing ".repeat(6)) }).collect();
    big.risks = (0..60).map(|n| format!("Risk {n}")).collect();
    channel.post_card(&destination(Style::Buttons), &big, &document()).await.unwrap();
    let r = fake.wait_for_count(WAIT, "POST", "/messages", 1).await.remove(0);
    let body = r.json().unwrap();
    let embeds = body["embeds"].as_array().unwrap();
    assert_eq!(embeds.len(), 1);
    let embed = &embeds[0];
    assert!(embed_total(embed) <= 6000, "embed total {}", embed_total(embed));
    let description = embed["description"].as_str().unwrap();
    assert!(description.chars().count() <= 4096);
    assert!(description.ends_with("A long summary line.\n… full plan in the attached document"), "cut at a line boundary with the note");
    assert!(embed.get("fields").is_none() || embed["fields"] == json!([]), "nothing after the cut");
    // Steps that overflow a field continue in more fields, and the cut lands in the last one.
    big.summary = None;
    channel.post_card(&destination(Style::Buttons), &big, &document()).await.unwrap();
    let r = fake.wait_for_count(WAIT, "POST", "/messages", 2).await.remove(1);
    let embed = r.json().unwrap()["embeds"][0].clone();
    assert!(embed_total(&embed) <= 6000, "embed total {}", embed_total(&embed));
    let fields = embed["fields"].as_array().unwrap();
    assert_eq!(fields[0]["name"], "Steps");
    assert_eq!(fields[1]["name"], "Steps (cont.)");
    for f in fields {
        let value = f["value"].as_str().unwrap();
        assert!(value.chars().count() <= 1024);
        assert!(
            value.lines().all(|l| l.starts_with(|c: char| c.is_ascii_digit()) || l == "… full plan in the attached document"),
            "whole lines only: {value}"
        );
    }
    assert!(fields.last().unwrap()["value"].as_str().unwrap().ends_with("\n… full plan in the attached document"));
    assert_eq!(r.files().len(), 1, "the document carries everything");
}

#[tokio::test]
async fn a_429_is_waited_out_then_the_card_is_sent() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    fake.script_rate_limit("POST", &format!("/api/v10/channels/{CHANNEL}/messages"), 0.4);
    let delivery = channel.post_card(&destination(Style::Buttons), &card(), &document()).await.expect("sent after the 429");
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 2).await;
    let waited = posts[1].at.duration_since(posts[0].at);
    assert!(waited >= Duration::from_millis(400), "retry_after honoured: waited {waited:?}");
    assert_eq!(posts[0].body, posts[1].body, "the same message again");
    assert!(!delivery.message_id.is_empty());
    // A refusal is not retried and says what Discord said.
    fake.script(
        "PATCH",
        &format!("/api/v10/channels/{CHANNEL}/messages/{}", delivery.message_id),
        403,
        &[],
        json!({"code": 50013, "message": "Missing Permissions"}),
    );
    let err = channel.update_card(&delivery, &card()).await.unwrap_err();
    assert!(matches!(&err, plangate_channel::ChannelError::Forbidden { message, .. } if message.contains("Missing Permissions")), "{err}");
    assert_eq!(fake.wait_for_count(WAIT, "PATCH", "/messages/", 1).await.len(), 1);
}

#[tokio::test]
async fn rate_limiter_keeps_five_per_window_per_channel() {
    let fake = DiscordFake::start(APP).await;
    let mut c = config(&fake, Transport::Http);
    c.per_channel = 2;
    c.per_channel_window_secs = 1;
    let running = run(&fake, c, Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    for n in 0..3 {
        channel.send_text(&CHANNEL.to_string(), &format!("text {n}")).await.unwrap();
    }
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 3).await;
    assert!(posts[2].at.duration_since(posts[0].at) >= Duration::from_millis(950), "third send waited for the window");
    assert_eq!(posts[0].json().unwrap()["content"], "text 0");
}

#[tokio::test]
async fn questions_have_option_buttons_other_and_show_the_answer() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    let qid = ApprovalId([0x0f; 16]);
    let mut question = Question {
        question_id: qid,
        session: SessionKey::new("demo", "s1"),
        question: "Which database?".into(),
        options: vec!["Postgres".into(), "SQLite".into()],
        allow_freetext: true,
        asked_at: Timestamp(0),
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
    };
    let delivery = channel.post_question(&destination(Style::Buttons), &question).await.unwrap();
    let post = fake.wait_for_count(WAIT, "POST", "/messages", 1).await.remove(0);
    assert_eq!(
        trimmed(post.json().unwrap()),
        json!({
            "content": "❓ **demo/s1 asks:**\nWhich database?\n\n1. Postgres\n2. SQLite",
            "embeds": [],
            "allowed_mentions": no_mentions(),
            "components": [{"type": 1, "components": [
                {"type": 2, "style": 1, "label": "Postgres", "custom_id": encode(Button::Answer(qid, 0))},
                {"type": 2, "style": 1, "label": "SQLite", "custom_id": encode(Button::Answer(qid, 1))},
                {"type": 2, "style": 2, "label": "Other…", "custom_id": encode(Button::AnswerOther(qid))}
            ]}]
        })
    );
    question.status = QuestionStatus::Answered;
    question.answer = Some("SQLite".into());
    question.answered_by = Some("discord:@alice".into());
    channel.update_question(&delivery, &question).await.unwrap();
    let edit = fake.wait_for_count(WAIT, "PATCH", "/messages/", 1).await.remove(0);
    assert_eq!(
        edit.json().unwrap(),
        json!({
            "content": "❓ **demo/s1 asks:**\nWhich database?\n\n1. Postgres\n2. SQLite\n\n✅ Answered by discord:\\@alice: SQLite",
            "allowed_mentions": no_mentions(),
            "components": []
        })
    );
}

#[tokio::test]
async fn send_document_and_text() {
    let fake = DiscordFake::start(APP).await;
    let running = run(&fake, config(&fake, Transport::Http), Recorder::new(|_| Reply::None), None).await;
    let channel = running.adapter.channel.clone();
    channel.send_document(&CHANNEL.to_string(), Some("123"), &document()).await.unwrap();
    channel.send_text(&CHANNEL.to_string(), &format!("@here {}", "line\n".repeat(500))).await.unwrap();
    let posts = fake.wait_for_count(WAIT, "POST", "/messages", 2).await;
    assert_eq!(posts[0].files()[0].file_name.as_deref(), Some("plan-add-retries-v2.md"));
    assert_eq!(posts[0].json().unwrap()["message_reference"]["message_id"], "123");
    let text = posts[1].json().unwrap()["content"].as_str().unwrap().to_string();
    assert!(text.starts_with("\\@here line\n"));
    assert!(text.chars().count() <= 2000 && text.ends_with("\n…"));
    assert_eq!(
        channel.send_text("general", "x").await.unwrap_err().to_string(),
        "discord refused the request: channel \"general\" is not a Discord id"
    );
}

// ---------------------------------------------------------------- gateway

/// The interaction callbacks the fake received, as `(path, body)`.
fn callbacks(fake: &DiscordFake) -> Vec<(String, Value)> {
    fake.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/callback"))
        .map(|r| (r.path.clone(), r.json().unwrap_or(Value::Null)))
        .collect()
}

#[tokio::test]
async fn gateway_approve_round_trip() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|e| match &e.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("✅ Approved v2".into()),
        _ => Reply::None,
    });
    // The default transport: serenity's gateway client.
    let mut c = config(&fake, Transport::Gateway);
    c.application_public_key = None;
    let (stop, shutdown) = watch::channel(false);
    let adapter = start(c, handler.clone(), shutdown, always_leader()).await.unwrap();
    assert!(adapter.routes.is_none());
    let identify = fake.wait_identified(WAIT).await;
    assert_eq!(identify["d"]["token"], "Bot test-bot-token");
    let startup: Vec<String> = fake.requests().iter().map(Recorded::line).collect();
    assert_eq!(startup, vec![format!("POST /api/v10/applications/{APP}/guilds/{GUILD}/commands"), "GET /api/v10/gateway".to_string()]);

    let channel = adapter.channel.clone();
    let delivery = channel.post_card(&destination(Style::Buttons), &card(), &document()).await.unwrap();
    let message: u64 = delivery.message_id.parse().unwrap();
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::component_interaction(9001, "tok-approve", APP, &alice(), message, &encode(Button::Approve(approval()))),
    );
    let events = handler.wait(1).await;
    assert_eq!(events, vec![inbound(Action::Button(Button::Approve(approval())), 9001)]);
    fake.wait_for_count(WAIT, "POST", "/callback", 1).await;
    // What the server does after the decision: edit the card.
    channel
        .update_card(&delivery, &decided(&card(), DecisionStatus::Approved, "✅ Approved v2 by discord:@alice · 14:02 UTC"))
        .await
        .unwrap();

    let sequence: Vec<String> = fake.requests().iter().skip(2).map(Recorded::line).collect();
    assert_eq!(
        sequence,
        vec![
            format!("POST /api/v10/channels/{CHANNEL}/messages"),
            "POST /api/v10/interactions/9001/tok-approve/callback".to_string(),
            format!("PATCH /api/v10/channels/{CHANNEL}/messages/{message}"),
        ]
    );
    assert_eq!(
        callbacks(&fake)[0].1,
        json!({"type": 4, "data": {"content": "✅ Approved v2", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
    print_sequence("approve (gateway)", &fake);

    stop.send(true).unwrap();
    tokio::time::timeout(WAIT, adapter.task.unwrap()).await.expect("gateway task ends on shutdown").unwrap();
}

#[tokio::test]
async fn only_the_leader_runs_the_gateway_session() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::None);
    let mut c = config(&fake, Transport::Gateway);
    c.application_public_key = None;
    let (lead, leader) = watch::channel(false);
    let (stop, shutdown) = watch::channel(false);
    let adapter = start(c, handler.clone(), shutdown, leader).await.expect("a follower starts");
    let live = adapter.liveness.clone();
    let follower = || live.status() == Ok(Some(plangate_channel::FOLLOWER));
    let identified = || fake.frames().iter().filter(|f| f["op"] == 2).count();
    let click = |id: u64| fake::component_interaction(id, &format!("tok-{id}"), APP, &alice(), 42, &encode(Button::View(approval())));

    // A follower registers /plan (every replica may) but opens no session,
    // and still sends: by the time the fake has answered this send, a
    // session opened at start would have looked the gateway up.
    adapter.channel.send_text(&CHANNEL.to_string(), "from a follower").await.unwrap();
    let lines: Vec<String> = fake.requests().iter().map(Recorded::line).filter(|l| !l.ends_with("/messages")).collect();
    assert_eq!(lines, [format!("POST /api/v10/applications/{APP}/guilds/{GUILD}/commands")], "no gateway lookup");
    assert_eq!(identified(), 0, "no IDENTIFY from a follower");
    assert!(follower());

    // Elected: looks the gateway up, identifies, handles interactions.
    lead.send_replace(true);
    fake.wait_identified(WAIT).await;
    eventually(WAIT, "ready", || std::future::ready(live.status() == Ok(None))).await;
    fake.dispatch("INTERACTION_CREATE", click(9001));
    handler.wait(1).await;

    // Deposed: the shard shuts down; an interaction sent now waits at the
    // fake (Discord would give it to the session that leads) instead.
    lead.send_replace(false);
    eventually(WAIT, "a follower again", || std::future::ready(follower())).await;
    fake.dispatch("INTERACTION_CREATE", click(9002));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(handler.events().len(), 1, "no session here any more");
    assert_eq!(identified(), 1, "no new IDENTIFY while a follower");

    // Elected again: a new session, which gets the waiting interaction.
    lead.send_replace(true);
    let events = handler.wait(2).await;
    assert_eq!(identified(), 2);
    assert_eq!(events[1], inbound(Action::Button(Button::View(approval())), 9002));
    let gateway_lookups = fake.requests().iter().filter(|r| r.path.starts_with("/api/v10/gateway")).count();
    assert_eq!(gateway_lookups, 2, "one per term");

    stop.send(true).unwrap();
    tokio::time::timeout(WAIT, adapter.task.unwrap()).await.expect("gateway task ends on shutdown").unwrap();
}

fn print_sequence(name: &str, fake: &DiscordFake) {
    println!("--- {name}");
    for r in fake.requests() {
        let body = r.json().map(|j| j.to_string()).unwrap_or_default();
        let files: Vec<String> = r.files().iter().map(|f| format!("{}={}", f.name, f.file_name.clone().unwrap_or_default())).collect();
        println!("{} {} {}", r.line(), body, files.join(","));
    }
}

#[tokio::test]
async fn gateway_revise_round_trip_through_the_feedback_modal() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::RequestChanges(a)) => {
            Reply::AskFeedback { approval_id: *a, version: 2, prompt: "What should change in 'Add retries' v2?".into() }
        }
        Action::Feedback { .. } => Reply::Notice("✏️ Changes requested on v2".into()),
        _ => Reply::None,
    });
    let running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let channel = running.adapter.channel.clone();
    let delivery = channel.post_card(&destination(Style::Buttons), &card(), &document()).await.unwrap();
    let message: u64 = delivery.message_id.parse().unwrap();

    fake.dispatch(
        "INTERACTION_CREATE",
        fake::component_interaction(9101, "tok-click", APP, &alice(), message, &encode(Button::RequestChanges(id))),
    );
    fake.wait_for_count(WAIT, "POST", "/callback", 1).await;
    assert_eq!(
        callbacks(&fake)[0],
        (
            "/api/v10/interactions/9101/tok-click/callback".to_string(),
            json!({"type": 9, "data": {
                "custom_id": encode(Button::RequestChanges(id)),
                "title": "Request changes to v2",
                "components": [{"type": 1, "components": [{
                    "type": 4, "style": 2, "label": "What should change?", "custom_id": "text",
                    "placeholder": "What should change in 'Add retries' v2?", "max_length": 4000, "required": true
                }]}]
            }})
        )
    );
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::modal_interaction(
            9102,
            "tok-modal",
            APP,
            &alice(),
            &encode(Button::RequestChanges(id)),
            &[("text", "  Split step 2 into two  ")],
            Some(message),
        ),
    );
    let events = handler.wait(2).await;
    assert_eq!(
        events,
        vec![
            inbound(Action::Button(Button::RequestChanges(id)), 9101),
            inbound(Action::Feedback { approval_id: id, text: "Split step 2 into two".into() }, 9102),
        ]
    );
    fake.wait_for_count(WAIT, "POST", "/callback", 2).await;
    assert_eq!(
        callbacks(&fake)[1].1,
        json!({"type": 4, "data": {"content": "✏️ Changes requested on v2", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
    channel
        .update_card(
            &delivery,
            &decided(&card(), DecisionStatus::Rejected, "✏️ Changes requested on v2 by discord:@alice · 14:03 UTC: Split step 2 into two"),
        )
        .await
        .unwrap();
    let sequence: Vec<String> = fake.requests().iter().map(Recorded::line).collect();
    assert_eq!(
        sequence,
        vec![
            format!("POST /api/v10/channels/{CHANNEL}/messages"),
            "POST /api/v10/interactions/9101/tok-click/callback".to_string(),
            "POST /api/v10/interactions/9102/tok-modal/callback".to_string(),
            format!("PATCH /api/v10/channels/{CHANNEL}/messages/{message}"),
        ]
    );
    print_sequence("revise (gateway)", &fake);
}

/// `/plan <sub>`, its options, and what the server must receive.
type Case = (&'static str, Vec<(&'static str, &'static str)>, Action);

#[tokio::test]
async fn every_plan_subcommand_reaches_the_handler() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Text("ok".into()));
    let _running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let session = || Some(Target::Session(SessionKey::new("demo", "s1")));
    let approval = || Some(Target::Approval("a1b2c3".into()));
    let cases: Vec<Case> = vec![
        ("help", vec![], Action::Command(Parsed { command: PlanCommand::Help, target: None })),
        ("status", vec![("target", "demo/s1")], Action::Command(Parsed { command: PlanCommand::Status, target: session() })),
        ("list", vec![], Action::Command(Parsed { command: PlanCommand::List, target: None })),
        ("view", vec![("target", "#a1b2c3")], Action::Command(Parsed { command: PlanCommand::View, target: approval() })),
        ("accept", vec![], Action::Command(Parsed { command: PlanCommand::Accept(Default::default()), target: None })),
        (
            "revise",
            vec![("feedback", "smaller steps"), ("target", "#a1b2c3")],
            Action::Command(Parsed { command: PlanCommand::Revise("smaller steps".into()), target: approval() }),
        ),
        (
            "reject",
            vec![("feedback", "#nope is not a target here")],
            Action::Command(Parsed { command: PlanCommand::Revise("#nope is not a target here".into()), target: None }),
        ),
        (
            "edit",
            vec![("steps", "one; two")],
            Action::Command(Parsed { command: PlanCommand::Edit(vec!["one".into(), "two".into()]), target: None }),
        ),
        ("cancel", vec![("target", "demo/s1")], Action::Command(Parsed { command: PlanCommand::Cancel, target: session() })),
        ("answer", vec![("text", "Postgres")], Action::Command(Parsed { command: PlanCommand::Answer("Postgres".into()), target: None })),
        ("on", vec![("target", "demo/s1")], Action::Command(Parsed { command: PlanCommand::On, target: session() })),
        ("off", vec![], Action::Command(Parsed { command: PlanCommand::Off, target: None })),
        (
            "auto",
            vec![("state", "on"), ("target", "demo/s1")],
            Action::Command(Parsed { command: PlanCommand::Auto(true), target: session() }),
        ),
        ("restate", vec![], Action::Command(Parsed { command: PlanCommand::Restate, target: None })),
        // Bad input reaches the server as BadCommand with the words typed.
        ("on", vec![("target", "#a1b2")], Action::BadCommand("on #a1b2".into())),
        ("status", vec![("target", "not a target")], Action::BadCommand("status not a target".into())),
    ];
    for (n, (sub, options, _)) in cases.iter().enumerate() {
        let id = 9200 + n as u64;
        fake.dispatch(
            "INTERACTION_CREATE",
            fake::command_interaction(id, &format!("tok-{id}"), APP, &alice(), "plan", fake::plan_subcommand(sub, options)),
        );
        handler.wait(n + 1).await;
    }
    let events = handler.events();
    let expected: Vec<Inbound> = cases.into_iter().enumerate().map(|(n, (_, _, action))| inbound(action, 9200 + n as u64)).collect();
    assert_eq!(events, expected);
    let answered = fake.wait_for_count(WAIT, "POST", "/callback", expected.len()).await;
    assert_eq!(
        answered[0].json().unwrap(),
        json!({"type": 4, "data": {"content": "ok", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
}

#[tokio::test]
async fn replies_render_as_modal_confirm_and_document() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let qid = ApprovalId([0x0f; 16]);
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::Cancel(a)) => {
            Reply::ConfirmCancel { approval_id: *a, version: 2, prompt: "Cancel 'Add retries' v2 and turn plan mode off?".into() }
        }
        Action::Button(Button::Edit(a)) => {
            Reply::AskEdit { approval_id: *a, version: 2, steps: vec!["Add a retry loop".into(), "Test it".into()] }
        }
        Action::Button(Button::AnswerOther(q)) => Reply::AskAnswer { question_id: *q, prompt: "Which database?".into() },
        Action::Button(Button::View(_)) => Reply::Document { document: document(), caption: "Plan v2 of demo/s1".into() },
        Action::Edit { .. } | Action::AnswerText { .. } => Reply::Notice("done".into()),
        _ => Reply::None,
    });
    let _running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let click = |n: u64, data: Button| {
        fake.dispatch("INTERACTION_CREATE", fake::component_interaction(n, &format!("tok-{n}"), APP, &alice(), 42, &encode(data)))
    };

    click(1, Button::Cancel(id));
    let r = fake.wait_for_count(WAIT, "POST", "/callback", 1).await;
    assert_eq!(
        r[0].json().unwrap(),
        json!({"type": 4, "data": {
            "content": "Cancel 'Add retries' v2 and turn plan mode off?", "allowed_mentions": no_mentions(), "flags": 64, "attachments": [],
            "components": [{"type": 1, "components": [{"type": 2, "style": 4, "label": "Yes, cancel v2", "custom_id": encode(Button::ConfirmCancel(id)), "disabled": false}]}]
        }})
    );

    click(2, Button::Edit(id));
    let r = fake.wait_for_count(WAIT, "POST", "/callback", 2).await;
    let modal = r[1].json().unwrap();
    assert_eq!(modal["type"], 9);
    assert_eq!(modal["data"]["custom_id"], encode(Button::Edit(id)));
    assert_eq!(modal["data"]["components"][0]["components"][0]["value"], "Add a retry loop\nTest it");
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::modal_interaction(
            3,
            "tok-3",
            APP,
            &alice(),
            &encode(Button::Edit(id)),
            &[("text", "1. Add a retry loop\n\n2. Test it twice\n")],
            Some(42),
        ),
    );

    click(4, Button::AnswerOther(qid));
    let r = fake.wait_for_count(WAIT, "POST", "/callback", 4).await;
    assert_eq!(r[3].json().unwrap()["data"]["custom_id"], encode(Button::AnswerOther(qid)));
    fake.dispatch(
        "INTERACTION_CREATE",
        fake::modal_interaction(5, "tok-5", APP, &alice(), &encode(Button::AnswerOther(qid)), &[("text", "MariaDB")], Some(42)),
    );

    // A document is deferred, then the original response is replaced with the file.
    click(6, Button::View(id));
    let patch = fake.wait_for_count(WAIT, "PATCH", "/messages/@original", 1).await.remove(0);
    assert_eq!(patch.path, format!("/api/v10/webhooks/{APP}/tok-6/messages/@original"));
    assert_eq!(patch.json().unwrap()["content"], "Plan v2 of demo/s1");
    assert_eq!(patch.files()[0].file_name.as_deref(), Some("plan-add-retries-v2.md"));
    assert_eq!(patch.files()[0].text(), document().text);
    let deferred = fake.requests().into_iter().find(|r| r.path == "/api/v10/interactions/6/tok-6/callback").unwrap();
    assert_eq!(deferred.json().unwrap(), json!({"type": 5, "data": {"flags": 64, "attachments": []}}));
    assert!(deferred.at <= patch.at);

    let events = handler.wait(6).await;
    assert_eq!(events[2].action, Action::Edit { approval_id: id, steps: vec!["Add a retry loop".into(), "Test it twice".into()] });
    assert_eq!(events[4].action, Action::AnswerText { question_id: qid, text: "MariaDB".into() });
}

#[tokio::test]
async fn forged_and_oversized_custom_ids_are_unknown_buttons() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("Unknown button".into()));
    let _running = run(&fake, config(&fake, Transport::Gateway), handler.clone(), None).await;
    let long = format!("pg1:a:{}{}", "a".repeat(32), "x".repeat(200));
    for (n, data) in ["pg1:a:zz", "pg2:a:a1b2c3d4000102030405060708090a0b", long.as_str()].iter().enumerate() {
        fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7000 + n as u64, "tok", APP, &alice(), 42, data));
    }
    let events = handler.wait(3).await;
    assert_eq!(events[0].action, Action::UnknownButton("pg1:a:zz".into()));
    assert_eq!(events[1].action, Action::UnknownButton("pg2:a:a1b2c3d4000102030405060708090a0b".into()));
    assert_eq!(events[2].action, Action::UnknownButton(long.chars().take(100).collect()));
    // A foreign guild's event still reaches the server, which refuses it by `expected_team`.
    let stranger = Actor { user_id: 1, username: "mallory".into(), guild_id: Some(13), channel_id: 14 };
    fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7100, "tok", APP, &stranger, 42, &encode(Button::Approve(approval()))));
    let events = handler.wait(4).await;
    assert_eq!(events[3].user, User { id: "1".into(), name: "@mallory".into(), team: Some("13".into()) });
    // The same interaction id twice is handled once.
    fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7100, "tok", APP, &stranger, 42, &encode(Button::Approve(approval()))));
    fake.dispatch("INTERACTION_CREATE", fake::component_interaction(7101, "tok", APP, &stranger, 42, "pg1:zz"));
    let events = handler.wait(5).await;
    assert_eq!(events.len(), 5);
    assert_eq!(events[4].idempotency_key.as_deref(), Some("discord:interaction:7101"));
}

// ---------------------------------------------------------------- HTTP endpoint

fn sign(key: &SigningKey, timestamp: &str, body: &[u8]) -> String {
    let mut message = timestamp.as_bytes().to_vec();
    message.extend_from_slice(body);
    hex::encode(key.sign(&message).to_bytes())
}

struct Http {
    url: String,
    key: SigningKey,
    clock: Arc<AtomicI64>,
    client: reqwest::Client,
}

impl Http {
    async fn send(&self, body: &Value) -> reqwest::Response {
        let body = body.to_string();
        let timestamp = self.clock.load(Ordering::SeqCst).to_string();
        let signature = sign(&self.key, &timestamp, body.as_bytes());
        self.raw(&signature, &timestamp, body).await
    }

    async fn raw(&self, signature: &str, timestamp: &str, body: String) -> reqwest::Response {
        self.client
            .post(&self.url)
            .header("x-signature-ed25519", signature)
            .header("x-signature-timestamp", timestamp)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
    }
}

async fn http_endpoint(fake: &DiscordFake, handler: Arc<Recorder>, defer_after_ms: u64) -> (Running, Http) {
    let clock = Arc::new(AtomicI64::new(1_760_000_000));
    let reading = clock.clone();
    let mut c = config(fake, Transport::Http);
    c.defer_after_ms = defer_after_ms;
    let running = run(fake, c, handler, Some(Arc::new(move || reading.load(Ordering::SeqCst)))).await;
    let http = Http {
        url: running.endpoint.clone().unwrap(),
        key: SigningKey::from_bytes(&SEED),
        clock,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
    };
    (running, http)
}

#[tokio::test]
async fn http_ping_and_signed_approve() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("✅ Approved v2".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;

    let pong = http.send(&fake::ping_interaction(1, APP)).await;
    assert_eq!(pong.status(), 200);
    assert_eq!(pong.json::<Value>().await.unwrap()["type"], 1);

    let click = fake::component_interaction(9301, "tok-http", APP, &alice(), 42, &encode(Button::Approve(approval())));
    let response = http.send(&click).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"type": 4, "data": {"content": "✅ Approved v2", "allowed_mentions": no_mentions(), "flags": 64, "attachments": []}})
    );
    assert_eq!(handler.events(), vec![inbound(Action::Button(Button::Approve(approval())), 9301)]);
    assert!(fake.requests().is_empty(), "the answer rides in the HTTP response; no REST call");

    // The same signed request again (a replay) is refused without reaching the server.
    let replay = http.send(&click).await;
    assert_eq!(replay.status(), 409);
    assert_eq!(handler.events().len(), 1);
}

#[tokio::test]
async fn http_refuses_bad_signatures_before_parsing() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("ok".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let body = fake::component_interaction(9400, "tok", APP, &alice(), 42, &encode(Button::Approve(approval()))).to_string();
    let ts = http.clock.load(Ordering::SeqCst).to_string();
    let good = sign(&http.key, &ts, body.as_bytes());

    // Wrong key.
    let other = SigningKey::from_bytes(&[9; 32]);
    assert_eq!(http.raw(&sign(&other, &ts, body.as_bytes()), &ts, body.clone()).await.status(), 401);
    // A flipped bit.
    let mut flipped = hex::decode(&good).unwrap();
    flipped[10] ^= 1;
    assert_eq!(http.raw(&hex::encode(&flipped), &ts, body.clone()).await.status(), 401);
    // Non-canonical S (S + L): the same signature in a malleated encoding.
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0x10,
    ];
    let mut malleated = hex::decode(&good).unwrap();
    let mut carry = 0u16;
    for i in 0..32 {
        let sum = u16::from(malleated[32 + i]) + u16::from(L[i]) + carry;
        malleated[32 + i] = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    assert_eq!(http.raw(&hex::encode(&malleated), &ts, body.clone()).await.status(), 401);
    // Signed body, different body.
    assert_eq!(http.raw(&good, &ts, body.replace("9400", "9401")).await.status(), 401);
    // Signature for another timestamp.
    assert_eq!(http.raw(&good, &(http.clock.load(Ordering::SeqCst) + 1).to_string(), body.clone()).await.status(), 401);
    // Missing headers, malformed hex, uppercase-tolerant but not sign-tolerant.
    let bare = http.client.post(&http.url).body(body.clone()).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    assert_eq!(http.raw(&format!("+{}", &good[1..]), &ts, body.clone()).await.status(), 401);
    assert_eq!(http.raw(&good[..126], &ts, body.clone()).await.status(), 401);
    // A validly signed body that is not an interaction: 400, and still nothing reaches the server.
    let junk = "{\"type\": 99}".to_string();
    assert_eq!(http.raw(&sign(&http.key, &ts, junk.as_bytes()), &ts, junk).await.status(), 400);
    assert!(handler.events().is_empty());
    // And the genuine request passes.
    assert_eq!(http.raw(&good, &ts, body).await.status(), 200);
    assert_eq!(handler.events().len(), 1);
}

#[tokio::test]
async fn http_refuses_stale_and_future_timestamps() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::new(|_| Reply::Notice("ok".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let now = http.clock.load(Ordering::SeqCst);
    let body = |id: u64| fake::component_interaction(id, "tok", APP, &alice(), 42, &encode(Button::Approve(approval()))).to_string();
    for (id, ts) in [(1u64, now - 301), (2, now + 301), (3, now - 100_000)] {
        let b = body(id);
        let response = http.raw(&sign(&http.key, &ts.to_string(), b.as_bytes()), &ts.to_string(), b).await;
        assert_eq!(response.status(), 401, "timestamp {ts} vs now {now}");
    }
    for (id, ts) in [(4u64, now - 299), (5, now + 299)] {
        let b = body(id);
        assert_eq!(http.raw(&sign(&http.key, &ts.to_string(), b.as_bytes()), &ts.to_string(), b).await.status(), 200);
    }
    assert_eq!(handler.events().len(), 2);
    // A captured request replayed later is refused for its age (after the id cache too).
    let b = body(6);
    let signature = sign(&http.key, &now.to_string(), b.as_bytes());
    assert_eq!(http.raw(&signature, &now.to_string(), b.clone()).await.status(), 200);
    http.clock.store(now + 400, Ordering::SeqCst);
    assert_eq!(http.raw(&signature, &now.to_string(), b).await.status(), 401);
    assert_eq!(handler.events().len(), 3);
}

#[tokio::test]
async fn http_revise_via_modal_submit() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::RequestChanges(a)) => {
            Reply::AskFeedback { approval_id: *a, version: 2, prompt: "What should change?".into() }
        }
        Action::Feedback { .. } => Reply::Notice("✏️ Changes requested on v2".into()),
        _ => Reply::None,
    });
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let modal = http.send(&fake::component_interaction(9501, "tok", APP, &alice(), 42, &encode(Button::RequestChanges(id)))).await;
    let modal: Value = modal.json().await.unwrap();
    assert_eq!(modal["type"], 9);
    assert_eq!(modal["data"]["custom_id"], encode(Button::RequestChanges(id)));
    let submit = http
        .send(&fake::modal_interaction(
            9502,
            "tok",
            APP,
            &alice(),
            &encode(Button::RequestChanges(id)),
            &[("text", "Fewer steps")],
            Some(42),
        ))
        .await;
    assert_eq!(submit.json::<Value>().await.unwrap()["data"]["content"], "✏️ Changes requested on v2");
    assert_eq!(handler.wait(2).await[1], inbound(Action::Feedback { approval_id: id, text: "Fewer steps".into() }, 9502));
    // An Ask* reply to a modal submission cannot be another modal: it says what to type.
    let handler2 = Recorder::new(move |_| Reply::AskFeedback { approval_id: id, version: 2, prompt: "Say more *please*".into() });
    let fake2 = DiscordFake::start(APP).await;
    let (_r2, http2) = http_endpoint(&fake2, handler2, 2000).await;
    let again = http2
        .send(&fake::modal_interaction(9503, "tok", APP, &alice(), &encode(Button::RequestChanges(id)), &[("text", "")], Some(42)))
        .await;
    assert_eq!(
        again.json::<Value>().await.unwrap()["data"]["content"],
        "Say more \\*please\\*\nSend `/plan revise #a1b2c3 <what should change>`"
    );
}

#[tokio::test]
async fn a_slow_handler_is_deferred_then_the_reply_replaces_it() {
    let fake = DiscordFake::start(APP).await;
    let handler = Recorder::slow(Duration::from_millis(1500), |_| Reply::Notice("✅ Approved v2".into()));
    let (_running, http) = http_endpoint(&fake, handler.clone(), 100).await;
    let started = tokio::time::Instant::now();
    let response = http.send(&fake::component_interaction(9601, "tok-slow", APP, &alice(), 42, &encode(Button::Approve(approval())))).await;
    assert!(started.elapsed() < Duration::from_millis(1200), "answered before the handler finished");
    assert_eq!(response.json::<Value>().await.unwrap(), json!({"type": 5, "data": {"flags": 64, "attachments": []}}));
    let patch = fake.wait_for_count(WAIT, "PATCH", "/messages/@original", 1).await.remove(0);
    assert_eq!(patch.path, format!("/api/v10/webhooks/{APP}/tok-slow/messages/@original"));
    assert_eq!(patch.json().unwrap(), json!({"content": "✅ Approved v2", "allowed_mentions": no_mentions()}));
}

/// Over HTTP, Discord may not have processed the deferral yet when the late
/// reply comes: a 404 on `@original` is retried (and a 500, and a 429 after
/// its retry_after), all through the shared `send_with_retry`.
#[tokio::test]
async fn a_deferred_reply_is_retried_after_a_404_a_500_and_a_429() {
    let fake = DiscordFake::start(APP).await;
    let original = format!("/api/v10/webhooks/{APP}/tok-late/messages/@original");
    fake.script("PATCH", &original, 404, &[], json!({"code": 10062, "message": "Unknown interaction"}));
    fake.script("PATCH", &original, 500, &[], json!({"message": "Internal Server Error"}));
    fake.script_rate_limit("PATCH", &original, 0.3);
    let handler = Recorder::slow(Duration::from_millis(300), |_| Reply::Notice("✅ Approved v2".into()));
    let (_running, http) = http_endpoint(&fake, handler, 100).await;
    let response = http.send(&fake::component_interaction(9602, "tok-late", APP, &alice(), 42, &encode(Button::Approve(approval())))).await;
    assert_eq!(response.json::<Value>().await.unwrap()["type"], 5, "deferred");
    // Answered 404, 500, 429 as scripted, then 200.
    let patches = fake.wait_for_count(WAIT, "PATCH", "/messages/@original", 4).await;
    assert!(patches.iter().all(|p| p.path == original && p.body == patches[0].body), "the same edit each time");
    let waited = patches[3].at.duration_since(patches[2].at);
    assert!(waited >= Duration::from_millis(300), "retry_after honoured: waited {waited:?}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(fake.requests().iter().filter(|r| r.method == "PATCH").count(), 4, "nothing after the success");
}

#[tokio::test]
async fn weak_or_missing_public_keys_fail_at_start() {
    let fake = DiscordFake::start(APP).await;
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let mut c = config(&fake, Transport::Http);
    c.application_public_key = Some(hex::encode(identity));
    let (_stop, shutdown) = watch::channel(false);
    let Err(err) = start(c, Recorder::new(|_| Reply::None), shutdown.clone(), always_leader()).await else {
        panic!("a weak key must be refused")
    };
    assert!(err.to_string().starts_with("`discord.application_public_key`: is a small-order"), "{err}");
    let mut c = config(&fake, Transport::Http);
    c.application_public_key = None;
    let Err(err) = start(c, Recorder::new(|_| Reply::None), shutdown, always_leader()).await else { panic!("HTTP mode needs a key") };
    assert!(err.to_string().contains("application_public_key"), "{err}");
    assert!(fake.requests().is_empty(), "nothing is sent with a bad config");
}

/// Approve with note…: a modal with a note and the steps to leave out; its
/// submission is an approval with both, and step numbers that are not
/// numbers are the grammar's usage error, not a guess.
#[tokio::test]
async fn http_approve_with_a_note_and_steps_left_out_via_the_modal() {
    let fake = DiscordFake::start(APP).await;
    let id = approval();
    let handler = Recorder::new(move |e| match &e.action {
        Action::Button(Button::ApproveWithNote(a)) => Reply::AskApproval {
            approval_id: *a,
            version: 2,
            steps: vec!["Add a retry loop".into(), "Test it".into()],
            prompt: "Approve v2 (#a1b2c3) with a note for the agent.".into(),
        },
        Action::Approve { .. } => Reply::Notice("✅ Approved v2".into()),
        _ => Reply::None,
    });
    let (_running, http) = http_endpoint(&fake, handler.clone(), 2000).await;
    let modal = http.send(&fake::component_interaction(9601, "tok", APP, &alice(), 42, &encode(Button::ApproveWithNote(id)))).await;
    let modal: Value = modal.json().await.unwrap();
    assert_eq!(modal["type"], 9);
    assert_eq!(modal["data"]["custom_id"], encode(Button::ApproveWithNote(id)));
    assert_eq!(modal["data"]["title"], "Approve v2");
    let inputs: Vec<&Value> = modal["data"]["components"].as_array().unwrap().iter().map(|row| &row["components"][0]).collect();
    assert_eq!((inputs[0]["custom_id"].as_str(), inputs[0]["required"].as_bool()), (Some("text"), Some(false)));
    assert_eq!((inputs[1]["custom_id"].as_str(), inputs[1]["required"].as_bool()), (Some("except"), Some(false)));
    assert!(inputs[1]["placeholder"].as_str().unwrap().contains("1–2"), "{}", inputs[1]);
    let submit = |n: u64, note: &'static str, except: &'static str| {
        fake::modal_interaction(
            n,
            "tok",
            APP,
            &alice(),
            &encode(Button::ApproveWithNote(id)),
            &[("text", note), ("except", except)],
            Some(42),
        )
    };
    let answer = http.send(&submit(9602, "ok, but no migrations", "2")).await;
    assert_eq!(answer.json::<Value>().await.unwrap()["data"]["content"], "✅ Approved v2");
    let events = handler.wait(2).await;
    assert_eq!(events[1], inbound(Action::Approve { approval_id: id, note: Some("ok, but no migrations".into()), except: vec![2] }, 9602));
    // Empty fields: a plain approval.
    http.send(&submit(9603, "", "")).await;
    assert_eq!(handler.wait(3).await[2], inbound(Action::Approve { approval_id: id, note: None, except: vec![] }, 9603));
    http.send(&submit(9604, "", "two")).await;
    assert_eq!(handler.wait(4).await[3], inbound(Action::BadCommand("accept except two".into()), 9604));
}
