//! The Slack adapter against the loopback Slack fake, with the real
//! slack-morphism client: exact requests out, exact `Inbound`s in, every
//! `Reply` rendered, and the attacks (forged data, bad signatures, stale
//! timestamps, replays, foreign team).

use plangate_channel::{
    always_leader, Action, Adapter, Channel, ChannelError, Delivery, Destination, Document, Inbound, InboundHandler, Reply, Style, User,
};
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
use std::sync::atomic::{AtomicI64, Ordering};
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
    clock: Arc<AtomicI64>,
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

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

async fn harness_with(
    transport: Transport,
    tweak: impl FnOnce(&mut SlackConfig),
    reply: impl Fn(&Inbound) -> Reply + Send + Sync + 'static,
) -> Harness {
    let fake = SlackFake::start().await;
    let handler = Recorder::new(reply);
    let (shutdown, rx) = watch::channel(false);
    let clock = Arc::new(AtomicI64::new(now()));
    let clock_fn = clock.clone();
    let mut cfg = config(&fake, transport);
    tweak(&mut cfg);
    let adapter =
        start_with(cfg, handler.clone(), rx, always_leader(), StartOptions { clock: Arc::new(move || clock_fn.load(Ordering::SeqCst)) })
            .await
            .expect("adapter starts");
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
        self.post_signed("/slack/interactivity", &body, self.clock.load(Ordering::SeqCst), &[]).await
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
    Destination { name: "ops-slack".into(), channel: "slack".into(), chat: "C1".into(), style }
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

// ---------------------------------------------------------------- outbound

#[tokio::test]
async fn proposal_posts_the_block_kit_card_then_uploads_the_document_into_its_thread() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let id = aid(0xab);
    let card = open_card(id, &["Read the client", "Add backoff"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();

    let log = h.fake.requests();
    let seq: Vec<&str> = log.iter().map(|r| r.api.as_str()).collect();
    assert_eq!(seq, ["chat.postMessage", "files.getUploadURLExternal", "upload", "files.completeUploadExternal"]);

    let post = &log[0];
    assert_eq!(post.http_method, "POST");
    assert_eq!(post.header("authorization"), Some("Bearer xoxb-test-bot"));
    let ts = "1700000000.000001";
    assert_eq!(
        post.json(),
        &json!({
            "channel": "C1",
            "text": "Plan for approval: Add retries #ababab (demo/s1 · v1 · just now)",
            "unfurl_links": false,
            "unfurl_media": false,
            "blocks": [
                {"type": "header", "text": literal("Add retries")},
                {"type": "context", "elements": [literal("demo/s1 · v1 · just now · #ababab")]},
                plain("Make the client resilient."),
                plain("Steps\n1. ○ Read the client\n2. ○ Add backoff"),
                plain("Risks\n• flaky tests"),
                plain("Verification\n• cargo test"),
                card_actions_json(id),
            ],
        })
    );

    let get_url = &log[1];
    assert_eq!(get_url.http_method, "GET");
    assert_eq!(get_url.query("filename"), Some("plan-add-retries-v1.md"));
    assert_eq!(get_url.query("length"), Some(document().text.len().to_string().as_str()));

    let upload = &log[2];
    assert_eq!(upload.path, "/upload/F2");
    assert_eq!(upload.header("content-type"), Some("text/markdown"));
    assert_eq!(upload.bytes(), document().text.as_bytes());

    assert_eq!(log[3].json(), &json!({"files": [{"id": "F2", "title": "plan-add-retries-v1.md"}], "channel_id": "C1", "thread_ts": ts}));
    assert_eq!(
        delivery,
        Delivery {
            destination: "ops-slack".into(),
            channel: "slack".into(),
            chat: "C1".into(),
            message_id: ts.into(),
            thread: None,
            style: Style::Buttons
        }
    );
}

#[tokio::test]
async fn text_style_cards_show_the_commands_instead_of_buttons() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let card = open_card(aid(1), &["one"]);
    h.channel().post_card(&destination(Style::Text), &card, &document()).await.unwrap();
    let post = &h.fake.calls("chat.postMessage")[0];
    let blocks = post.json()["blocks"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] != "actions"), "{blocks:?}");
    assert_eq!(
        blocks.last().unwrap(),
        &section("Reply with one of:\n`/plan accept #010101`\n`/plan revise #010101 &lt;what to change&gt;`\n`/plan cancel #010101`\n`/plan view #010101`")
    );
}

#[tokio::test]
async fn a_failed_upload_does_not_fail_the_posted_card() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    h.fake.script("files.getUploadURLExternal", Scripted::error("missing_scope"));
    let delivery = h.channel().post_card(&destination(Style::Buttons), &open_card(aid(18), &["one"]), &document()).await.unwrap();
    assert_eq!(delivery.message_id, "1700000000.000001");
    assert_eq!(h.fake.sequence(), ["chat.postMessage", "files.getUploadURLExternal"]);
    // View plan sends it later on demand, into the thread.
    h.channel().send_document("C1", Some(&delivery.message_id), &document()).await.unwrap();
    assert_eq!(h.fake.calls("files.completeUploadExternal")[0].json()["thread_ts"], delivery.message_id.as_str());
}

#[tokio::test]
async fn update_card_turns_the_card_into_its_receipt_without_buttons() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let card = open_card(aid(2), &["one"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let receipt = "✅ Approved v1 by slack:@alice · 14:02 UTC";
    h.channel().update_card(&delivery, &decided(&card, DecisionStatus::Approved, receipt)).await.unwrap();
    let update = &h.fake.calls("chat.update")[0];
    assert_eq!(update.json()["channel"], "C1");
    assert_eq!(update.json()["ts"], delivery.message_id.as_str());
    assert_eq!(update.json()["text"], format!("Add retries #020202: {receipt}"));
    let blocks = update.json()["blocks"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] != "actions"));
    assert_eq!(blocks.last().unwrap(), &plain(receipt));
    assert_eq!(blocks[0]["type"], "header");
}

#[tokio::test]
async fn nudges_go_into_the_cards_thread_with_the_buttons_while_open() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let card = open_card(aid(3), &["one"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let text = "⏰ Plan 'Add retries' v1 has waited 10 min for your approval (#030303)";
    h.channel().send_nudge(&delivery, &card, text).await.unwrap();
    let nudge = &h.fake.calls("chat.postMessage")[1];
    assert_eq!(nudge.json()["thread_ts"], delivery.message_id.as_str());
    assert_eq!(nudge.json()["channel"], "C1");
    assert_eq!(nudge.json()["blocks"], json!([plain(text), card_actions_json(aid(3))]));
    // A decided card is nudged without buttons.
    h.channel().send_nudge(&delivery, &decided(&card, DecisionStatus::Approved, "done"), text).await.unwrap();
    assert_eq!(h.fake.calls("chat.postMessage")[2].json()["blocks"], json!([plain(text)]));
}

#[tokio::test]
async fn a_long_plan_is_split_into_sections_and_cut_at_fifty_blocks() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    // 40 steps of ~100 chars: > 3,000 characters, fewer than 50 blocks.
    let medium: Vec<String> = (0..40).map(|i| format!("step {i} {}", "m".repeat(92))).collect();
    let medium_refs: Vec<&str> = medium.iter().map(String::as_str).collect();
    h.channel().post_card(&destination(Style::Buttons), &open_card(aid(4), &medium_refs), &document()).await.unwrap();
    let blocks = h.fake.calls("chat.postMessage")[0].json()["blocks"].as_array().unwrap().clone();
    let step_sections: Vec<&str> = blocks.iter().filter_map(|b| b["text"]["text"].as_str()).filter(|t| t.contains("○ step")).collect();
    assert_eq!(step_sections.len(), 2, "{step_sections:#?}");
    assert!(step_sections.iter().all(|t| t.chars().count() <= 3000));
    let lines: Vec<&str> = step_sections.iter().flat_map(|t| t.lines()).filter(|l| *l != "Steps").collect();
    assert_eq!(lines.len(), 40, "every step is shown, each line whole");
    assert!(lines.iter().enumerate().all(|(i, l)| l.starts_with(&format!("{}. ○ step {i} ", i + 1))));
    assert!(!blocks.iter().any(|b| b["text"]["text"].as_str().is_some_and(|t| t.contains("full plan"))));

    // 400 steps of ~400 chars: far more than 50 sections.
    let long: Vec<String> = (0..400).map(|i| format!("step {i} {}", "l".repeat(392))).collect();
    let long_refs: Vec<&str> = long.iter().map(String::as_str).collect();
    h.channel().post_card(&destination(Style::Buttons), &open_card(aid(5), &long_refs), &document()).await.unwrap();
    let blocks = h.fake.calls("chat.postMessage")[1].json()["blocks"].as_array().unwrap().clone();
    assert_eq!(blocks.len(), 50);
    assert_eq!(blocks[48], section("_… full plan in the attached document_"));
    assert_eq!(blocks[49], card_actions_json(aid(5)));
    let mut texts = Vec::new();
    all_texts(&Value::Array(blocks.clone()), &mut texts);
    assert!(texts.iter().all(|t| t.chars().count() <= 3000));
    // The document still goes with it.
    assert_eq!(h.fake.calls("files.completeUploadExternal").len(), 2);
}

#[tokio::test]
async fn mentions_in_agent_text_are_neutralized() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let mut card = open_card(aid(6), &["ping <!channel> & <@U999> then <!here>", "<https://evil.example|click>"]);
    card.summary = Some("<!everyone> look".into());
    card.risks = vec!["<#C42> leaks".into()];
    card.warning = Some("⚠ hidden <!channel>".into());
    h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let post = h.fake.calls("chat.postMessage")[0].json().clone();
    // No mrkdwn text (nor the notification text) carries a mention or link.
    let mut texts = vec![post["text"].as_str().unwrap().to_string()];
    mrkdwn_texts(&post["blocks"], &mut texts);
    for t in &texts {
        for raw in ["<!channel>", "<!here>", "<!everyone>", "<@U999>", "<#C42>", "<https://"] {
            assert!(!t.contains(raw), "{raw} reached Slack as mrkdwn in {t:?}");
        }
    }
    // The agent's words are plain_text, which Slack never parses for
    // mentions or links: shown exactly as written.
    let blocks = post["blocks"].as_array().unwrap();
    assert_eq!(blocks[2], plain("<!everyone> look"));
    assert_eq!(blocks[3], plain("Steps\n1. ○ ping <!channel> & <@U999> then <!here>\n2. ○ <https://evil.example|click>"));
    assert_eq!(blocks[4], plain("Risks\n• <#C42> leaks"));
    assert_eq!(blocks[6], plain("⚠ hidden <!channel>"));
    assert_eq!(post["blocks"][0]["text"], literal("Add retries"));
}

#[tokio::test]
async fn agent_formatting_is_shown_verbatim_not_as_mrkdwn() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let id = aid(0x1f);
    let mut card = open_card(id, &["*Approved by @alice*", "_it_ ~strike~ `code` ```block```"]);
    card.title = "*Approved by @alice* <!channel>".into();
    card.context = "demo/s_1 · v1 · just now".into();
    card.summary = Some("> *Approved by @alice*\n:white_check_mark: <https://evil.example|Approve>".into());
    card.risks = vec![];
    card.verification = vec![];
    card.assumptions = vec!["& <> &amp;".into()];
    h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let post = h.fake.calls("chat.postMessage")[0].json().clone();
    let mut actions = card_actions_json(id);
    actions["elements"][3]["confirm"]["text"] = literal(&format!(
        "This cancels “*Approved by @alice* <!channel>” #{}. Its session stays blocked (read-only) until a new plan is approved.",
        id.short()
    ));
    assert_eq!(
        post,
        json!({
            "channel": "C1",
            "text": format!("Plan for approval: ∗Approved by @alice∗ &lt;!channel&gt; #{} (demo/sˍ1 · v1 · just now)", id.short()),
            "unfurl_links": false,
            "unfurl_media": false,
            "blocks": [
                {"type": "header", "text": literal("*Approved by @alice* <!channel>")},
                {"type": "context", "elements": [literal(&format!("demo/s_1 · v1 · just now · #{}", id.short()))]},
                plain("> *Approved by @alice*\n:white_check_mark: <https://evil.example|Approve>"),
                plain("Steps\n1. ○ *Approved by @alice*\n2. ○ _it_ ~strike~ `code` ```block```"),
                plain("Assumptions\n• & <> &amp;"),
                actions,
            ],
        })
    );
    // The receipt quotes the decider's feedback: verbatim too; the
    // notification text is escaped.
    let delivery = Delivery::posted(&destination(Style::Buttons), "C1", "1700000000.000001");
    let receipt = "✏️ Changes requested on v1 by slack:@bob: *Approved by @alice* <!here>";
    h.channel().update_card(&delivery, &decided(&card, DecisionStatus::Rejected, receipt)).await.unwrap();
    let update = h.fake.calls("chat.update")[0].json().clone();
    assert_eq!(update["blocks"].as_array().unwrap().last().unwrap(), &plain(receipt));
    assert_eq!(
        update["text"],
        format!(
            "∗Approved by @alice∗ &lt;!channel&gt; #{}: ✏️ Changes requested on v1 by slack:@bob: ∗Approved by @alice∗ &lt;!here&gt;",
            id.short()
        )
    );
}

#[tokio::test]
async fn a_429_is_waited_out_as_retry_after_says_then_the_send_succeeds() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    h.fake.script("chat.postMessage", Scripted::rate_limited(1));
    let started = Instant::now();
    let delivery = h.channel().post_card(&destination(Style::Buttons), &open_card(aid(7), &["one"]), &document()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After was not honoured: {:?}", started.elapsed());
    let posts = h.fake.calls("chat.postMessage");
    assert_eq!(posts.len(), 2);
    assert_eq!(posts[0].json(), posts[1].json(), "the same message is sent again");
    assert_eq!(delivery.message_id, "1700000000.000001");

    // A Retry-After longer than the policy allows is reported, not slept on.
    h.fake.script("chat.update", Scripted::rate_limited(3600));
    let err = h.channel().update_card(&delivery, &open_card(aid(7), &["one"])).await.unwrap_err();
    assert!(
        matches!(err, ChannelError::RateLimited { platform: "slack", retry_after } if retry_after == Duration::from_secs(3600)),
        "{err:?}"
    );
    // Refusals are errors, not retried.
    h.fake.script("chat.postMessage", Scripted::error("channel_not_found"));
    let err = h.channel().send_text("CNOPE", "hi").await.unwrap_err();
    assert!(matches!(&err, ChannelError::NotFound { message, .. } if message == "channel_not_found"), "{err:?}");
    assert_eq!(h.fake.calls("chat.postMessage").len(), 3);
}

#[tokio::test]
async fn messages_to_one_channel_are_paced_at_one_per_second() {
    let h = harness_with(Transport::Http, |c| c.per_channel_per_second = 1, |_| Reply::None).await;
    let started = Instant::now();
    h.channel().send_text("C1", "first").await.unwrap();
    h.channel().send_text("C2", "other channel, not held up").await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(900));
    h.channel().send_text("C1", "second").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950), "{:?}", started.elapsed());
    assert_eq!(h.fake.calls("chat.postMessage").len(), 3);
}

#[tokio::test]
async fn questions_get_one_button_per_option_and_show_the_answer_afterwards() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let qid = aid(8);
    let mut q = Question {
        question_id: qid,
        session: SessionKey::new("demo", "s1"),
        question: "Which DB <!here>?".into(),
        options: vec!["sled".into(), "postgres".into()],
        allow_freetext: true,
        asked_at: Timestamp(0),
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
    };
    let delivery = h.channel().post_question(&destination(Style::Buttons), &q).await.unwrap();
    let post = h.fake.calls("chat.postMessage")[0].json().clone();
    assert_eq!(
        post["blocks"],
        json!([
            plain("❓ demo/s1 asks:\nWhich DB <!here>?"),
            {"type": "actions", "block_id": "plangate_actions", "elements": [
                option_json("sled", Button::Answer(qid, 0)),
                option_json("postgres", Button::Answer(qid, 1)),
                button_json("Other…", Button::AnswerOther(qid)),
            ]},
        ])
    );
    q.status = QuestionStatus::Answered;
    q.answer = Some("sled".into());
    q.answered_by = Some("slack:@alice".into());
    h.channel().update_question(&delivery, &q).await.unwrap();
    let update = h.fake.calls("chat.update")[0].json().clone();
    assert_eq!(update["ts"], delivery.message_id.as_str());
    assert_eq!(update["blocks"], json!([plain("❓ demo/s1 asks:\nWhich DB <!here>?"), plain("✅ Answered by slack:@alice: sled")]));
}

// ---------------------------------------------------------------- inbound: Socket Mode

#[tokio::test]
async fn approve_round_trip_over_socket_mode() {
    let h = harness(Transport::Socket, |e| match e.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("Approved v1 ✅".into()),
        _ => Reply::None,
    })
    .await;
    assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM));
    assert!(h.adapter.routes.is_none());
    h.fake.wait_connected(T).await;
    let open = &h.fake.calls("apps.connections.open")[0];
    assert_eq!(open.header("authorization"), Some("Bearer xapp-test-app"), "Socket Mode uses the app-level token");

    let id = aid(9);
    let card = open_card(id, &["Read the client", "Add backoff"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let payload = block_actions(
        "U1",
        "alice",
        "C1",
        &delivery.message_id,
        &encode(Button::Approve(id)),
        "1700000100.000001",
        &h.fake.response_url("r1"),
    );
    let envelope = h.fake.send_envelope("interactive", payload.clone());
    assert_eq!(h.fake.wait_for_ack(&envelope, T).await, json!({"envelope_id": envelope}));

    let events = h.handler.wait_events(1).await;
    assert_eq!(
        events[0],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: user(TEAM),
            action: Action::Button(Button::Approve(id)),
            idempotency_key: Some("slack:action:1700000100.000001".into())
        }
    );
    let notice = h.fake.wait_calls("response_url", 1, T).await;
    assert_eq!(
        notice[0].json(),
        &json!({"response_type": "ephemeral", "replace_original": false, "text": "Approved v1 ✅", "blocks": [plain("Approved v1 ✅")]})
    );

    // The server edits the card into its receipt.
    h.channel()
        .update_card(&delivery, &decided(&card, DecisionStatus::Approved, "✅ Approved v1 by slack:@alice · 14:02 UTC"))
        .await
        .unwrap();

    // Slack redelivers the same click (no ack seen): acked, not handled twice.
    let again = h.fake.send_envelope("interactive", payload);
    h.fake.wait_for_ack(&again, T).await;
    assert_eq!(h.handler.events().len(), 1);

    let seq = h.fake.sequence();
    dump("approve round trip (Socket Mode)", &h);
    assert_eq!(
        seq,
        [
            "apps.connections.open",
            "chat.postMessage",
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal",
            "response_url",
            "chat.update"
        ]
    );
}

#[tokio::test]
async fn revise_round_trip_over_socket_mode_with_the_feedback_modal() {
    let h = harness(Transport::Socket, |e| match &e.action {
        Action::Button(Button::RequestChanges(id)) => {
            Reply::AskFeedback { approval_id: *id, version: 1, prompt: "What should change in 'Add retries' v1?".into() }
        }
        Action::Feedback { .. } => Reply::Notice("Changes requested on v1".into()),
        _ => Reply::None,
    })
    .await;
    h.fake.wait_connected(T).await;
    let id = aid(10);
    let card = open_card(id, &["Read the client", "Add backoff"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let ts = delivery.message_id.clone();

    let click =
        block_actions("U1", "alice", "C1", &ts, &encode(Button::RequestChanges(id)), "1700000200.000001", &h.fake.response_url("r2"));
    let env = h.fake.send_envelope("interactive", click);
    h.fake.wait_for_ack(&env, T).await;
    let open = h.fake.wait_calls("views.open", 1, T).await;
    let meta = format!("{id}|C1|{ts}");
    assert_eq!(
        open[0].json(),
        &json!({
            "trigger_id": "trigger-1700000200.000001",
            "view": {
                "type": "modal",
                "title": {"type": "plain_text", "text": "Request changes"},
                "submit": {"type": "plain_text", "text": "Send"},
                "close": {"type": "plain_text", "text": "Cancel"},
                "callback_id": "plangate_feedback",
                "private_metadata": meta,
                "blocks": [
                    plain("What should change in 'Add retries' v1?"),
                    {"type": "input", "block_id": "plangate_input", "label": {"type": "plain_text", "text": "What should change?"},
                     "element": {"type": "plain_text_input", "action_id": "plangate_text", "multiline": true, "max_length": 3000}},
                ],
            },
        })
    );

    // Empty feedback: the modal stays open with the error; nothing reaches the server.
    let empty = view_submission("U1", "alice", "V1", "h1", "plangate_feedback", &meta, input("   "));
    let env = h.fake.send_envelope("interactive", empty);
    let ack = h.fake.wait_for_ack(&env, T).await;
    assert_eq!(
        ack,
        json!({"envelope_id": env, "payload": {"response_action": "errors", "errors": {"plangate_input": "Say what should change."}}})
    );
    assert_eq!(h.handler.events().len(), 1);

    let submit = view_submission("U1", "alice", "V1", "h2", "plangate_feedback", &meta, input("Split step 2 <!channel>"));
    let env = h.fake.send_envelope("interactive", submit);
    assert_eq!(h.fake.wait_for_ack(&env, T).await, json!({"envelope_id": env}));
    let events = h.handler.wait_events(2).await;
    assert_eq!(events[0].action, Action::Button(Button::RequestChanges(id)));
    assert_eq!(
        events[1],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: user(TEAM),
            action: Action::Feedback { approval_id: id, text: "Split step 2 <!channel>".into() },
            idempotency_key: Some("slack:view:V1:h2".into()),
        }
    );
    // No response_url on a view submission: the notice is a chat.postEphemeral in the thread.
    let eph = h.fake.wait_calls("chat.postEphemeral", 1, T).await;
    assert_eq!(
        eph[0].json(),
        &json!({"channel": "C1", "user": "U1", "text": "Changes requested on v1", "blocks": [plain("Changes requested on v1")], "thread_ts": ts})
    );

    h.channel()
        .update_card(
            &delivery,
            &decided(&card, DecisionStatus::Rejected, "✏️ Changes requested on v1 by slack:@alice · 14:05 UTC: Split step 2 <!channel>"),
        )
        .await
        .unwrap();
    let update = &h.fake.calls("chat.update")[0];
    assert_eq!(
        update.json()["blocks"].as_array().unwrap().last().unwrap(),
        &plain("✏️ Changes requested on v1 by slack:@alice · 14:05 UTC: Split step 2 <!channel>")
    );

    let seq = h.fake.sequence();
    dump("revise round trip (Socket Mode)", &h);
    assert_eq!(
        seq,
        [
            "apps.connections.open",
            "chat.postMessage",
            "files.getUploadURLExternal",
            "upload",
            "files.completeUploadExternal",
            "views.open",
            "chat.postEphemeral",
            "chat.update"
        ]
    );
}

#[tokio::test]
async fn edit_and_other_answer_modals_become_edit_and_answer_text() {
    let h = harness(Transport::Socket, |e| match &e.action {
        Action::Button(Button::Edit(id)) => {
            Reply::AskEdit { approval_id: *id, version: 1, steps: vec!["Read the client".into(), "Add backoff".into()] }
        }
        Action::Button(Button::AnswerOther(q)) => Reply::AskAnswer { question_id: *q, prompt: "Which DB?".into() },
        _ => Reply::None,
    })
    .await;
    h.fake.wait_connected(T).await;
    let id = aid(11);
    let env = h.fake.send_envelope(
        "interactive",
        block_actions("U1", "alice", "C1", "1700000000.000009", &encode(Button::Edit(id)), "1700000300.000001", &h.fake.response_url("r")),
    );
    h.fake.wait_for_ack(&env, T).await;
    let open = h.fake.wait_calls("views.open", 1, T).await;
    let view = &open[0].json()["view"];
    assert_eq!(view["callback_id"], "plangate_edit");
    assert_eq!(view["submit"]["text"], "Approve");
    assert_eq!(view["blocks"][0]["element"]["initial_value"], "Read the client\nAdd backoff");
    let meta = view["private_metadata"].as_str().unwrap().to_string();
    let env = h.fake.send_envelope(
        "interactive",
        view_submission(
            "U1",
            "alice",
            "V7",
            "h7",
            "plangate_edit",
            &meta,
            input("1. Read the client\n2. Add jittered backoff\n\n- Test it"),
        ),
    );
    h.fake.wait_for_ack(&env, T).await;
    let events = h.handler.wait_events(2).await;
    assert_eq!(
        events[1].action,
        Action::Edit { approval_id: id, steps: vec!["Read the client".into(), "Add jittered backoff".into(), "Test it".into()] }
    );

    let qid = aid(12);
    let env = h.fake.send_envelope(
        "interactive",
        block_actions(
            "U1",
            "alice",
            "C1",
            "1700000000.000010",
            &encode(Button::AnswerOther(qid)),
            "1700000300.000002",
            &h.fake.response_url("r"),
        ),
    );
    h.fake.wait_for_ack(&env, T).await;
    let open = h.fake.wait_calls("views.open", 2, T).await;
    let view = &open[1].json()["view"];
    assert_eq!(view["callback_id"], "plangate_answer");
    let meta = view["private_metadata"].as_str().unwrap().to_string();
    assert!(meta.starts_with(&qid.to_string()));
    let env = h
        .fake
        .send_envelope("interactive", view_submission("U1", "alice", "V8", "h8", "plangate_answer", &meta, input("postgres, please")));
    h.fake.wait_for_ack(&env, T).await;
    let events = h.handler.wait_events(4).await;
    assert_eq!(events[3].action, Action::AnswerText { question_id: qid, text: "postgres, please".into() });

    // A submission of somebody else's modal, or with forged metadata, is ignored.
    let env = h.fake.send_envelope("interactive", view_submission("U1", "alice", "V9", "h9", "other_app_modal", &meta, input("x")));
    h.fake.wait_for_ack(&env, T).await;
    let env =
        h.fake.send_envelope("interactive", view_submission("U1", "alice", "V9", "h9", "plangate_feedback", "not-an-id|C1|", input("x")));
    h.fake.wait_for_ack(&env, T).await;
    assert_eq!(h.handler.events().len(), 4);
}

#[tokio::test]
async fn slash_commands_over_socket_mode_are_acked_bare_and_answered_ephemerally() {
    let h = harness(Transport::Socket, |_| Reply::Text("plangate commands: <!here>".into())).await;
    h.fake.wait_connected(T).await;
    let env =
        h.fake.send_envelope("slash_commands", slash_command("U1", "alice", "C1", "accept #abcd", "trig-1", &h.fake.response_url("c1")));
    assert_eq!(h.fake.wait_for_ack(&env, T).await, json!({"envelope_id": env}));
    let events = h.handler.wait_events(1).await;
    // slack-morphism's command model drops user_name: the id stands in.
    assert_eq!(
        events[0],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: User { id: "U1".into(), name: "U1".into(), team: Some(TEAM.into()) },
            action: Action::Command(parse_args("accept #abcd").unwrap()),
            idempotency_key: Some("slack:command:trig-1".into()),
        }
    );
    let reply = h.fake.wait_calls("response_url", 1, T).await;
    assert_eq!(reply[0].json()["text"], "plangate commands: &lt;!here&gt;");
}

#[tokio::test]
async fn start_checks_the_config_and_shutdown_ends_the_socket_mode_task() {
    let fake = SlackFake::start().await;
    let (tx, rx) = watch::channel(false);
    let mut missing = config(&fake, Transport::Socket);
    missing.app_token = None;
    match start(missing, Recorder::new(|_| Reply::None), rx.clone(), always_leader()).await {
        Err(plangate_slack::SlackError::Config(plangate_channel::ConfigError { key: "slack.app_token", .. })) => {}
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("started without an app token"),
    }
    let mut adapter = start(config(&fake, Transport::Socket), Recorder::new(|_| Reply::None), rx, always_leader()).await.expect("starts");
    fake.wait_connected(T).await;
    tx.send(true).unwrap();
    let task = adapter.task.take().expect("Socket Mode runs a task");
    tokio::time::timeout(T, task).await.expect("the task ends on shutdown").unwrap();
}

#[tokio::test]
async fn only_the_leader_holds_the_socket_mode_connection() {
    let fake = SlackFake::start().await;
    let handler = Recorder::new(|_| Reply::None);
    let (lead, leader) = watch::channel(false);
    let (stop, shutdown) = watch::channel(false);
    let mut adapter = start(config(&fake, Transport::Socket), handler.clone(), shutdown, leader).await.expect("a follower starts");
    let live = adapter.liveness.clone();
    let follower = || live.status() == Ok(Some(plangate_channel::FOLLOWER));
    let command = |trigger: &str| slash_command("U1", "alice", "C1", "status", trigger, &fake.response_url(trigger));

    // A follower still sends; by the time the fake has answered this send, a
    // connection opened at start would be recorded too: it opens none.
    adapter.channel.send_text("C1", "from a follower").await.unwrap();
    assert_eq!(fake.calls("chat.postMessage").len(), 1);
    assert!(fake.calls("apps.connections.open").is_empty(), "a follower asks for no socket");
    assert_eq!(fake.connections(), 0);
    assert!(follower());

    // Elected: connects; ready once Slack says hello.
    lead.send_replace(true);
    fake.wait_connected(T).await;
    eventually(T, "ready after hello", || std::future::ready(live.status() == Ok(None))).await;
    let env = fake.send_envelope("slash_commands", command("t1"));
    fake.wait_for_ack(&env, T).await;
    handler.wait_events(1).await;

    // Deposed: the socket closes, and envelopes reach nobody here.
    lead.send_replace(false);
    eventually(T, "a follower again", || std::future::ready(follower())).await;
    let frames = fake.frames().len();
    // The socket's close reaches the fake.
    eventually(T, "the socket closed", || std::future::ready(fake.open_sockets() == 0)).await;
    let lost = fake.send_envelope("slash_commands", command("t2"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.frames().len(), frames, "no frame after losing leadership (no ack of {lost})");
    assert_eq!(handler.events().len(), 1);
    assert_eq!(fake.connections(), 1, "no new connection while a follower");
    assert_eq!(fake.calls("apps.connections.open").len(), 1);

    // Elected again: a new connection that works.
    lead.send_replace(true);
    fake.wait_calls("apps.connections.open", 2, T).await;
    eventually(T, "connected again", || std::future::ready(fake.connections() == 2 && live.status() == Ok(None))).await;
    let env = fake.send_envelope("slash_commands", command("t3"));
    fake.wait_for_ack(&env, T).await;
    let events = handler.wait_events(2).await;
    assert_eq!(events[1].idempotency_key.as_deref(), Some("slack:command:t3"));

    stop.send_replace(true);
    let task = adapter.task.take().expect("Socket Mode runs a task");
    tokio::time::timeout(T, task).await.expect("the task ends on shutdown").unwrap();
}

// ---------------------------------------------------------------- inbound: signed HTTP

#[tokio::test]
async fn approve_round_trip_over_signed_http() {
    let h = harness(Transport::Http, |e| match e.action {
        Action::Button(Button::Approve(_)) => Reply::Notice("Approved v1 ✅".into()),
        _ => Reply::None,
    })
    .await;
    assert!(h.adapter.task.is_none());
    let id = aid(13);
    let card = open_card(id, &["one"]);
    let delivery = h.channel().post_card(&destination(Style::Buttons), &card, &document()).await.unwrap();
    let payload = block_actions(
        "U1",
        "alice",
        "C1",
        &delivery.message_id,
        &encode(Button::Approve(id)),
        "1700000400.000001",
        &h.fake.response_url("r1"),
    );
    let response = h.post_interaction(&payload).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "", "acked at once with an empty body");
    let events = h.handler.wait_events(1).await;
    assert_eq!(
        events[0],
        Inbound {
            channel: "slack",
            chat: "C1".into(),
            user: user(TEAM),
            action: Action::Button(Button::Approve(id)),
            idempotency_key: Some("slack:action:1700000400.000001".into())
        }
    );
    let notice = h.fake.wait_calls("response_url", 1, T).await;
    assert_eq!(
        notice[0].json(),
        &json!({"response_type": "ephemeral", "replace_original": false, "text": "Approved v1 ✅", "blocks": [plain("Approved v1 ✅")]})
    );
    h.channel()
        .update_card(&delivery, &decided(&card, DecisionStatus::Approved, "✅ Approved v1 by slack:@alice · 14:02 UTC"))
        .await
        .unwrap();
    let seq = h.fake.sequence();
    dump("approve round trip (HTTP)", &h);
    assert_eq!(
        seq,
        ["chat.postMessage", "files.getUploadURLExternal", "upload", "files.completeUploadExternal", "response_url", "chat.update"]
    );
}

#[tokio::test]
async fn revise_modal_over_signed_http_answers_validation_errors_in_the_response() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let meta = format!("{}|C1|1700000000.000001", aid(14));
    let empty = view_submission("U1", "alice", "V1", "h1", "plangate_feedback", &meta, input(""));
    let response = h.post_interaction(&empty).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"response_action": "errors", "errors": {"plangate_input": "Say what should change."}})
    );
    let ok = view_submission("U1", "alice", "V1", "h2", "plangate_feedback", &meta, input("smaller steps"));
    let response = h.post_interaction(&ok).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "");
    let events = h.handler.wait_events(1).await;
    assert_eq!(events[0].action, Action::Feedback { approval_id: aid(14), text: "smaller steps".into() });
    assert_eq!(events[0].idempotency_key.as_deref(), Some("slack:view:V1:h2"));
}

#[tokio::test]
async fn every_plan_form_as_a_signed_slash_command_reaches_the_handler() {
    let h = harness(Transport::Http, |e| match &e.action {
        Action::BadCommand(t) => Reply::Text(format!("Unknown: {t}")),
        _ => Reply::Text("ok".into()),
    })
    .await;
    let forms = [
        "",
        "help",
        "status",
        "status demo/s1",
        "list",
        "view",
        "view #a1b2c3",
        "accept",
        "approve #a1b2",
        "edit #a1b2 Read the client; Add backoff",
        "revise make step 2 smaller",
        "reject #a1b2 not now",
        "cancel #a1b2",
        "answer demo/s1 use sled",
        "on demo/s1",
        "off",
        "auto on",
        "auto off demo/s1",
        "restate",
        "frobnicate",
        "revise",
        "on #a1b2",
    ];
    for (i, text) in forms.iter().enumerate() {
        let body = serde_urlencoded::to_string([
            ("token", "unused"),
            ("team_id", TEAM),
            ("team_domain", "fake"),
            ("channel_id", "C1"),
            ("channel_name", "ops"),
            ("user_id", "U1"),
            ("user_name", "alice"),
            ("command", "/plan"),
            ("text", text),
            ("api_app_id", "A0FAKE"),
            ("response_url", &h.fake.response_url(&format!("cmd{i}"))),
            ("trigger_id", &format!("trig-{i}")),
        ])
        .unwrap();
        let response = h.post_signed("/slack/commands", &body, now(), &[]).await;
        assert_eq!(response.status(), 200, "{text}");
        assert_eq!(response.text().await.unwrap(), "");
    }
    let events = h.handler.wait_events(forms.len()).await;
    for (i, text) in forms.iter().enumerate() {
        let event = events
            .iter()
            .find(|e| e.idempotency_key.as_deref() == Some(&format!("slack:command:trig-{i}")))
            .expect("every form reaches the handler");
        let expected = match parse_args(text) {
            Ok(parsed) => Action::Command(parsed),
            Err(_) => Action::BadCommand(text.to_string()),
        };
        assert_eq!(event.action, expected, "{text:?}");
        assert_eq!(event.user, user(TEAM));
        assert_eq!(event.chat, "C1");
    }
    assert!(matches!(
        events.iter().find(|e| e.idempotency_key.as_deref() == Some("slack:command:trig-19")).unwrap().action,
        Action::BadCommand(_)
    ));
    let replies = h.fake.wait_calls("response_url", forms.len(), T).await;
    assert!(replies.iter().any(|r| r.path == "/response/cmd19" && r.json()["text"] == "Unknown: frobnicate"));
}

#[tokio::test]
async fn bad_signatures_stale_timestamps_and_replays_are_refused_before_parsing() {
    let h = harness(Transport::Http, |_| Reply::None).await;
    let id = aid(15);
    let payload = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000001",
        &encode(Button::Approve(id)),
        "1700000500.000001",
        &h.fake.response_url("r"),
    );
    let body = serde_urlencoded::to_string([("payload", payload.to_string())]).unwrap();
    let url = format!("{}/slack/interactivity", h.base);
    let ts = now().to_string();

    // Signed with another secret.
    let forged = plangate_slack::verify::sign(b"not-the-secret", &ts, body.as_bytes());
    let r = h
        .http
        .post(&url)
        .header("x-slack-request-timestamp", &ts)
        .header("x-slack-signature", &forged)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.text().await.unwrap(), "", "nothing about the MAC is returned");
    // Garbage with a bad signature is 401, not 400: the body is never parsed.
    let r = h
        .http
        .post(&url)
        .header("x-slack-request-timestamp", &ts)
        .header("x-slack-signature", format!("v0={}", "0".repeat(64)))
        .body("%%%{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // A good signature over another body.
    let good = plangate_slack::verify::sign(SECRET.as_bytes(), &ts, body.as_bytes());
    let r = h
        .http
        .post(&url)
        .header("x-slack-request-timestamp", &ts)
        .header("x-slack-signature", &good)
        .body(body.replace("Approve", "Approvf"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Missing headers.
    let r = h.http.post(&url).body(body.clone()).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let r = h.http.post(&url).header("x-slack-request-timestamp", &ts).body(body.clone()).send().await.unwrap();
    assert_eq!(r.status(), 400);

    // Stale and future timestamps, correctly signed: the verifier's clock moves.
    let signed_at = h.clock.load(Ordering::SeqCst);
    h.clock.store(signed_at + 301, Ordering::SeqCst);
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 401);
    h.clock.store(signed_at - 301, Ordering::SeqCst);
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 401);
    h.clock.store(signed_at + 300, Ordering::SeqCst);
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 200, "the edge of the window is accepted");
    h.handler.wait_events(1).await;

    // Replays within the window (and Slack's own retries) are acked but handled once.
    assert_eq!(h.post_signed("/slack/interactivity", &body, signed_at, &[]).await.status(), 200);
    assert_eq!(
        h.post_signed("/slack/interactivity", &body, signed_at, &[("x-slack-retry-num", "1"), ("x-slack-retry-reason", "http_timeout")])
            .await
            .status(),
        200
    );
    // A correctly signed body that is not a payload is a 400.
    assert_eq!(h.post_signed("/slack/interactivity", "payload=%7Bnot-json", signed_at, &[]).await.status(), 400);
    assert_eq!(h.post_signed("/slack/commands", "text=no+user", signed_at, &[]).await.status(), 400);
    // Nothing after the first accepted request reached the handler: a fresh
    // click is the second event, and no replay got in before or after it.
    let fresh =
        block_actions("U1", "alice", "C1", "1700000000.000001", &encode(Button::View(id)), "1700000500.000002", &h.fake.response_url("r"));
    assert_eq!(h.post_interaction(&fresh).await.status(), 200);
    let events = h.handler.wait_events(2).await;
    assert_eq!(
        events.iter().map(|e| e.idempotency_key.clone().unwrap()).collect::<Vec<_>>(),
        ["slack:action:1700000500.000001", "slack:action:1700000500.000002"]
    );
    assert_eq!(h.handler.events().len(), 2);
}

#[tokio::test]
async fn forged_callback_data_and_foreign_teams_reach_the_server_marked() {
    let h = harness(Transport::Http, |_| Reply::Notice("Unknown button".into())).await;
    let long = format!("pg1:a:{}", "f".repeat(500));
    for (i, data) in ["pg1:a:zz", "pg2:a:00000000000000000000000000000000", long.as_str()].iter().enumerate() {
        let p = block_actions("U1", "alice", "C1", "1700000000.000001", data, &format!("1700000600.00000{i}"), &h.fake.response_url("r"));
        assert_eq!(h.post_interaction(&p).await.status(), 200);
    }
    let events = h.handler.wait_events(3).await;
    let mut unknown: Vec<String> = events
        .iter()
        .map(|e| match &e.action {
            Action::UnknownButton(d) => d.clone(),
            other => panic!("forged data decoded as {other:?}"),
        })
        .collect();
    unknown.sort_by_key(|d| d.len());
    assert_eq!(unknown[0], "pg1:a:zz");
    assert_eq!(unknown[1], "pg2:a:00000000000000000000000000000000");
    assert_eq!(unknown[2], format!("pg1:a:{}…", "f".repeat(93)), "oversized data is cut for the audit");

    // A click from another workspace carries its team; the server refuses it
    // against Adapter::expected_team.
    let mut foreign = block_actions(
        "UEVIL",
        "mallory",
        "C1",
        "1700000000.000001",
        &encode(Button::Approve(aid(16))),
        "1700000600.000009",
        &h.fake.response_url("r"),
    );
    foreign["team"]["id"] = json!("TEVIL");
    foreign["user"]["team_id"] = json!("TEVIL");
    h.post_interaction(&foreign).await;
    let events = h.handler.wait_events(4).await;
    let e = events.iter().find(|e| e.user.id == "UEVIL").unwrap();
    assert_eq!(e.user.team.as_deref(), Some("TEVIL"));
    assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM));
}

#[tokio::test]
async fn replies_are_rendered_the_slack_way() {
    let id = aid(17);
    let h = harness(Transport::Http, move |e| match &e.action {
        Action::Button(Button::Cancel(id)) => {
            Reply::ConfirmCancel { approval_id: *id, version: 1, prompt: "Cancel 'Add retries' v1? Plan mode goes off.".into() }
        }
        Action::Button(Button::View(_)) => Reply::Document { document: document(), caption: "Plan v1 <!here>".into() },
        Action::Button(Button::Approve(_)) => Reply::Text("status: <@U2> & co".into()),
        Action::Button(Button::ConfirmCancel(_)) => Reply::Notice("Cancelled v1".into()),
        _ => Reply::None,
    })
    .await;
    let cancel = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000001",
        &encode(Button::Cancel(id)),
        "1700000700.000001",
        &h.fake.response_url("cancel"),
    );
    h.post_interaction(&cancel).await;
    let r = h.fake.wait_calls("response_url", 1, T).await;
    let mut confirm = button_json("Yes, cancel the plan", Button::ConfirmCancel(id));
    confirm["style"] = json!("danger");
    assert_eq!(
        r[0].json(),
        &json!({
            "response_type": "ephemeral",
            "replace_original": false,
            "text": "Cancel 'Add retries' v1? Plan mode goes off.",
            "blocks": [plain("Cancel 'Add retries' v1? Plan mode goes off."), {"type": "actions", "block_id": "plangate_actions", "elements": [confirm]}],
        })
    );

    // The click on that ephemeral button replaces it with the outcome.
    let mut yes = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000077",
        &encode(Button::ConfirmCancel(id)),
        "1700000700.000009",
        &h.fake.response_url("yes"),
    );
    yes["container"]["is_ephemeral"] = json!(true);
    h.post_interaction(&yes).await;
    let r = h.fake.wait_calls("response_url", 2, T).await;
    assert_eq!(r[1].path, "/response/yes");
    assert_eq!(
        r[1].json(),
        &json!({"response_type": "ephemeral", "replace_original": true, "text": "Cancelled v1", "blocks": [plain("Cancelled v1")]})
    );
    assert_eq!(h.handler.events()[1].action, Action::Button(Button::ConfirmCancel(id)));

    // View plan: the document goes into the card's thread with the caption.
    let view = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000042",
        &encode(Button::View(id)),
        "1700000700.000002",
        &h.fake.response_url("view"),
    );
    h.post_interaction(&view).await;
    let complete = h.fake.wait_calls("files.completeUploadExternal", 1, T).await;
    assert_eq!(complete[0].json()["channel_id"], "C1");
    assert_eq!(complete[0].json()["thread_ts"], "1700000000.000042");
    assert_eq!(complete[0].json()["initial_comment"], "Plan v1 &lt;!here&gt;");

    // A response_url that is not Slack's (nor the configured API's) is never called.
    let evil = block_actions(
        "U1",
        "alice",
        "C1",
        "1700000000.000001",
        &encode(Button::Approve(id)),
        "1700000700.000003",
        "http://127.0.0.2:9/steal",
    );
    h.post_interaction(&evil).await;
    let eph = h.fake.wait_calls("chat.postEphemeral", 1, T).await;
    assert_eq!(
        eph[0].json(),
        &json!({
            "channel": "C1",
            "user": "U1",
            "text": "status: &lt;@U2&gt; &amp; co",
            "blocks": [plain("status: <@U2> & co")],
            "thread_ts": "1700000000.000001"
        })
    );
    assert_eq!(h.fake.calls("response_url").len(), 2);
    // The mention only ever reached Slack inert: escaped, or in plain_text.
    for r in h.fake.requests() {
        let mut texts = Vec::new();
        mrkdwn_texts(r.json(), &mut texts);
        texts.extend(r.json()["text"].as_str().map(str::to_string));
        assert!(texts.iter().all(|t| !t.contains("<@U2>")), "{texts:?}");
    }
}

// ---------------------------------------------------------------- workspaces

#[tokio::test]
async fn without_team_id_the_home_workspace_is_learned_from_auth_test() {
    for transport in [Transport::Socket, Transport::Http] {
        let h = harness_with(
            transport,
            |c| {
                c.team_id = None;
                c.allow_other_teams = vec![OTHER_TEAM.into()];
            },
            |_| Reply::None,
        )
        .await;
        let auth = h.fake.calls("auth.test");
        assert_eq!(auth.len(), 1, "{transport:?}");
        assert_eq!(auth[0].header("authorization"), Some("Bearer xoxb-test-bot"), "auth.test asks with the bot token");
        assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM), "{transport:?}");
    }
    // A configured team is trusted as it is: no call at start.
    let h = harness(Transport::Http, |_| Reply::None).await;
    assert!(h.fake.calls("auth.test").is_empty());
    assert_eq!(h.adapter.expected_team.as_deref(), Some(TEAM));
}

#[tokio::test]
async fn without_team_id_a_failed_auth_test_stops_the_start() {
    for (transport, failure) in [
        (Transport::Http, Scripted::error("invalid_auth")),
        (Transport::Socket, Scripted::error("account_inactive")),
        (Transport::Http, Scripted::ok(json!({"team_id": ""}))),
    ] {
        let fake = SlackFake::start().await;
        fake.script("auth.test", failure.clone());
        let mut cfg = config(&fake, transport);
        cfg.team_id = Some(" ".into());
        let (_tx, rx) = watch::channel(false);
        let handler = Recorder::new(|_| Reply::None);
        let error = match start(cfg, handler, rx, always_leader()).await {
            Err(e) => e,
            Ok(_) => panic!("started without knowing its workspace ({failure:?})"),
        };
        assert!(matches!(error, plangate_slack::SlackError::Workspace(_)), "{error}");
        let message = error.to_string();
        assert!(message.contains("auth.test failed") && message.contains("slack.team_id"), "{message}");
        // Nothing else was tried: no Socket Mode connection, no message.
        assert_eq!(fake.sequence(), ["auth.test"], "{failure:?}");
    }
}

#[tokio::test]
async fn every_inbound_path_reports_the_workspace_it_came_from() {
    let h = harness(Transport::Socket, |_| Reply::None).await;
    h.fake.wait_connected(T).await;
    let id = aid(0x21);
    let meta = format!("{id}|C1|");
    let click = block_actions("UX", "x", "C1", "1.0", &encode(Button::Approve(id)), "1700000900.000001", &h.fake.response_url("a"));
    let modal = view_submission("UX", "x", "V9", "h9", "plangate_feedback", &meta, input("no"));
    let command = slash_command("UX", "x", "C1", "accept", "trig-x", &h.fake.response_url("c"));
    for (kind, payload) in [("interactive", click.clone()), ("interactive", modal.clone()), ("slash_commands", command.clone())] {
        let env = h.fake.send_envelope(kind, from_team(payload, OTHER_TEAM));
        h.fake.wait_for_ack(&env, T).await;
    }
    // Slack Connect: the host's team in `team`, the clicker's own in `user.team_id`.
    let mut connect = click.clone();
    connect["user"]["team_id"] = json!(OTHER_TEAM);
    connect["actions"][0]["action_ts"] = json!("1700000900.000002");
    h.fake.wait_for_ack(&h.fake.send_envelope("interactive", connect), T).await;
    let events = h.handler.wait_events(4).await;
    assert!(events.iter().all(|e| e.user.team.as_deref() == Some(OTHER_TEAM)), "{events:#?}");

    // The same over signed HTTP.
    let h = harness(Transport::Http, |_| Reply::None).await;
    h.post_interaction(&from_team(click, OTHER_TEAM)).await;
    h.post_interaction(&from_team(modal, OTHER_TEAM)).await;
    let form = format!(
        "team_id={OTHER_TEAM}&channel_id=C1&user_id=UX&user_name=x&command=%2Fplan&text=accept&trigger_id=trig-h&response_url={}",
        h.fake.response_url("h")
    );
    assert_eq!(h.post_signed("/slack/commands", &form, h.clock.load(Ordering::SeqCst), &[]).await.status(), 200);
    let events = h.handler.wait_events(3).await;
    assert!(events.iter().all(|e| e.user.team.as_deref() == Some(OTHER_TEAM)), "{events:#?}");
}
