//! Fake of the Telegram Bot API on 127.0.0.1.
//!
//! Point a real client at [`FakeTelegram::api_url`] (teloxide:
//! `Bot::new(TOKEN).set_api_url(..)`). The fake answers the way Telegram does
//! (`POST /bot<TOKEN>/<Method>`, method names matched case-insensitively,
//! `{"ok":true,"result":…}` or `{"ok":false,"error_code":…,"description":…}`),
//! records every request with its parsed body (JSON, or multipart parts with
//! `attach://` references resolved to the attached file), and lets a test
//! script both directions:
//!
//! * responses: [`FakeTelegram::script`] queues one answer for the next call
//!   of a method (a 429 with `retry_after`, an API error, a raw result);
//! * inbound: [`FakeTelegram::push_update`] queues an update that the next
//!   `getUpdates` long poll returns, and [`FakeTelegram::deliver_webhook`]
//!   posts one to a webhook the way Telegram would.
//!
//! `getUpdates` is strict: it returns every queued update whose id is at least
//! the requested `offset` and never forgets one, so a client that does not
//! keep its offset across restarts sees old updates again.
//!
//! The fake never answers 5xx on its own (teloxide sleeps 10 s after one).

use crate::limits::{whole_seconds, Enforcer, Limits, RateStats};
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The bot token the fake accepts.
pub const TOKEN: &str = "123456:TEST-token_abcdefghijklmnopqrstuvwxyz";
/// The fake bot's user id.
pub const BOT_ID: i64 = 4242;
/// The fake bot's username (`getMe`).
pub const BOT_USERNAME: &str = "PlanGateBot";
/// The exact description Telegram gives for an edit that changes nothing.
pub const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Canonical Telegram method name (`sendMessage`), whatever the case on the wire.
    pub method: String,
    /// The token from the path.
    pub token: String,
    pub content_type: Option<String>,
    /// JSON body, or multipart parts as an object (text parts parsed as JSON
    /// when they are JSON objects, arrays or numbers; file parts as
    /// `{"file_name", "text", "size"}`, also put in place of `attach://` refs).
    pub body: Value,
    /// When the request arrived.
    pub at: Instant,
    /// The HTTP status the fake answered with.
    pub status: u16,
    /// The JSON the fake answered with (`{"ok":…,"result":…}`).
    pub response: Value,
}

impl Recorded {
    /// A body field, `Value::Null` when absent.
    pub fn field(&self, name: &str) -> &Value {
        self.body.get(name).unwrap_or(&Value::Null)
    }

    /// A body field as text (strings as they are, other values as JSON).
    pub fn str(&self, name: &str) -> String {
        match self.field(name) {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }

    /// `chat_id` as a number when it is one.
    pub fn chat_id(&self) -> Option<i64> {
        match self.field("chat_id") {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// `message_thread_id`: the forum topic a send went to.
    pub fn thread(&self) -> Option<i64> {
        self.field("message_thread_id").as_i64()
    }

    /// `reply_parameters.message_id`, the message this one replies to.
    pub fn reply_to(&self) -> Option<i64> {
        self.field("reply_parameters").get("message_id").and_then(Value::as_i64)
    }

    /// `result.message_id` of the answer: the id of the message sent or edited.
    pub fn message_id_sent(&self) -> Option<i64> {
        self.response.get("result")?.get("message_id")?.as_i64()
    }

    /// The inline keyboard as rows of `(text, callback_data)`.
    pub fn keyboard(&self) -> Option<Vec<Vec<(String, String)>>> {
        let rows = self.field("reply_markup").get("inline_keyboard")?.as_array()?;
        Some(
            rows.iter()
                .map(|row| {
                    row.as_array()
                        .map(|buttons| {
                            buttons
                                .iter()
                                .map(|b| {
                                    (
                                        b.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
                                        b.get("callback_data").and_then(Value::as_str).unwrap_or_default().to_string(),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect(),
        )
    }
}

/// A scripted answer for the next call of one method.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// HTTP 429 `Too Many Requests` with `parameters.retry_after`.
    RetryAfter(u32),
    /// An API error with this HTTP status, error code and description.
    Error { status: u16, description: String },
    /// `{"ok":true,"result": value}`.
    Result(Value),
    /// Hold the request this long, then answer it as usual: a send a
    /// replica is killed in the middle of ([`FakeTelegram::stalled`] counts
    /// the requests held so far).
    Stall(Duration),
}

#[derive(Default)]
struct FakeState {
    requests: Vec<Recorded>,
    scripted: HashMap<String, VecDeque<Scripted>>,
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    next_callback_id: i64,
    messages: HashMap<(i64, i64), Value>,
    limits: Enforcer,
    /// Chats that are forum supergroups ([`FakeTelegram::make_forum`]).
    forums: std::collections::HashSet<i64>,
    /// Open forum topics: (chat, message_thread_id) → name.
    topics: HashMap<(i64, i64), String>,
    /// Requests a [`Scripted::Stall`] has begun to hold.
    stalled: usize,
}

struct Inner {
    state: Mutex<FakeState>,
    /// Bumped on every request and every pushed update, so waiters wake.
    changed: watch::Sender<u64>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }
}

/// A running fake Telegram Bot API.
pub struct FakeTelegram {
    base: String,
    inner: Arc<Inner>,
    server: JoinHandle<()>,
    http: reqwest::Client,
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeTelegram {
    /// Bind 127.0.0.1:0 and serve.
    pub async fn start() -> FakeTelegram {
        let (changed, _) = watch::channel(0);
        let inner =
            Arc::new(Inner { state: Mutex::new(FakeState { next_update_id: 1, next_message_id: 100, ..FakeState::default() }), changed });
        let app = Router::new().route("/{bot}/{method}", post(api)).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake telegram");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeTelegram { base, inner, server, http: reqwest::Client::new() }
    }

    /// `http://127.0.0.1:PORT`, the value for the client's API URL.
    pub fn api_url(&self) -> String {
        self.base.clone()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.lock().requests.clone()
    }

    /// The requests of one method (case-insensitive), in order.
    pub fn calls(&self, method: &str) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.method.eq_ignore_ascii_case(method)).collect()
    }

    /// Every request except the `getUpdates` long polls: what a client *did*.
    pub fn actions(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| !r.method.eq_ignore_ascii_case("getUpdates")).collect()
    }

    /// Answer the next call of `method` with `answer` (queued per method).
    pub fn script(&self, method: &str, answer: Scripted) {
        self.inner.lock().scripted.entry(method.to_ascii_lowercase()).or_default().push_back(answer);
    }

    /// How many requests a [`Scripted::Stall`] has begun to hold (recorded
    /// only once answered, like every request).
    pub fn stalled(&self) -> usize {
        self.inner.lock().stalled
    }

    /// From now on, refuse sends and edits beyond `limits` with Telegram's 429
    /// (`parameters.retry_after` in whole seconds), as the real API does.
    pub fn enforce_limits(&self, limits: Limits) {
        self.inner.lock().limits.enforce(limits);
    }

    /// Sends and edits admitted and refused since [`enforce_limits`](Self::enforce_limits).
    pub fn rate_stats(&self) -> RateStats {
        self.inner.lock().limits.stats()
    }

    /// A message the fake has sent on the bot's behalf (or been told about).
    pub fn message(&self, chat: i64, message_id: i64) -> Option<Value> {
        self.inner.lock().messages.get(&(chat, message_id)).cloned()
    }

    /// Queue an inbound update; its `update_id` is assigned unless present.
    /// Returns the update id.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut state = self.inner.lock();
            let id = match update.get("update_id").and_then(Value::as_i64) {
                Some(id) => id,
                None => {
                    let id = state.next_update_id;
                    update["update_id"] = json!(id);
                    id
                }
            };
            state.next_update_id = state.next_update_id.max(id + 1);
            state.updates.push(update);
            id
        };
        self.inner.bump();
        id
    }

    /// Make `chat` a forum supergroup: `createForumTopic` works there.
    /// Elsewhere it answers Telegram's "the chat is not a forum".
    pub fn make_forum(&self, chat: i64) {
        self.inner.lock().forums.insert(chat);
    }

    /// The open topics of `chat`: (message_thread_id, name), oldest first.
    pub fn topics(&self, chat: i64) -> Vec<(i64, String)> {
        let mut topics: Vec<(i64, String)> =
            self.inner.lock().topics.iter().filter(|((c, _), _)| *c == chat).map(|((_, id), name)| (*id, name.clone())).collect();
        topics.sort();
        topics
    }

    /// Someone deleted topic `thread` of `chat`: sends into it fail with
    /// Telegram's "message thread not found".
    pub fn delete_topic(&self, chat: i64, thread: i64) {
        self.inner.lock().topics.remove(&(chat, thread));
    }

    /// A text-message update typed in forum topic `thread` of `chat`.
    pub fn topic_message_update(&self, chat: i64, thread: i64, from: Value, text: &str) -> Value {
        let mut update = self.message_update(chat, from, text, None);
        update["message"]["message_thread_id"] = json!(thread);
        update["message"]["is_topic_message"] = json!(true);
        update["message"]["chat"]["is_forum"] = json!(true);
        update
    }

    /// A human user object.
    pub fn user(id: i64, username: Option<&str>, first_name: &str) -> Value {
        let mut user = json!({"id": id, "is_bot": false, "first_name": first_name});
        if let Some(name) = username {
            user["username"] = json!(name);
        }
        user
    }

    /// A chat object as Telegram describes it (negative ids are supergroups).
    pub fn chat(id: i64) -> Value {
        if id < 0 {
            json!({"id": id, "type": "supergroup", "title": "Fake group"})
        } else {
            json!({"id": id, "type": "private", "first_name": "Fake"})
        }
    }

    /// A callback-query update: `from` clicked a button with `data` on the
    /// stored message `(chat, message_id)` (a minimal one when unknown).
    pub fn callback_update(&self, chat: i64, message_id: i64, from: Value, data: &str) -> Value {
        let message = self.message(chat, message_id).unwrap_or_else(
            || json!({"message_id": message_id, "date": now(), "chat": Self::chat(chat), "from": bot_user(), "text": "card"}),
        );
        let id = {
            let mut state = self.inner.lock();
            state.next_callback_id += 1;
            format!("cbq-{}", state.next_callback_id)
        };
        json!({"callback_query": {"id": id, "from": from, "message": message, "chat_instance": "ci-1", "data": data}})
    }

    /// A text-message update from `from` in `chat`, optionally replying to
    /// the stored message `reply_to`. The message is stored too.
    pub fn message_update(&self, chat: i64, from: Value, text: &str, reply_to: Option<i64>) -> Value {
        let mut state = self.inner.lock();
        let id = state.next_message_id;
        state.next_message_id += 1;
        let mut message = json!({"message_id": id, "date": now(), "chat": Self::chat(chat), "from": from, "text": text});
        if let Some(reply) = reply_to.and_then(|r| state.messages.get(&(chat, r)).cloned()) {
            message["reply_to_message"] = reply;
        }
        state.messages.insert((chat, id), message.clone());
        json!({"message": message})
    }

    /// POST `update` to a webhook as Telegram would, with the secret header
    /// when given. Returns the HTTP status.
    pub async fn deliver_webhook(&self, url: &str, secret: Option<&str>, update: &Value) -> u16 {
        let mut request = self.http.post(url).json(update);
        if let Some(secret) = secret {
            request = request.header("X-Telegram-Bot-Api-Secret-Token", secret);
        }
        request.send().await.map(|r| r.status().as_u16()).unwrap_or(0)
    }

    /// Wait until `check` finds what it looks for in the recorded requests.
    /// Panics with the recorded method list after `timeout`.
    pub async fn wait_for<T>(&self, timeout: Duration, mut check: impl FnMut(&[Recorded]) -> Option<T>) -> T {
        let mut changed = self.inner.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let state = self.inner.lock();
                if let Some(found) = check(&state.requests) {
                    return found;
                }
            }
            if tokio::time::timeout_at(deadline, changed.changed()).await.is_err() {
                let methods: Vec<String> = self.requests().iter().map(|r| r.method.clone()).collect();
                panic!("fake telegram: condition not met within {timeout:?}; requests so far: {methods:?}");
            }
        }
    }

    /// Wait until [`Scripted::Stall`] holds its `n`-th request.
    pub async fn wait_stalled(&self, n: usize, timeout: Duration) {
        let mut changed = self.inner.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        while self.stalled() < n {
            if tokio::time::timeout_at(deadline, changed.changed()).await.is_err() {
                panic!("fake telegram: {} of {n} requests stalled within {timeout:?}", self.stalled());
            }
        }
    }

    /// Wait for the `n`-th (1-based) call of `method` and return it.
    pub async fn wait_call(&self, method: &str, n: usize, timeout: Duration) -> Recorded {
        self.wait_for(timeout, |reqs| reqs.iter().filter(|r| r.method.eq_ignore_ascii_case(method)).nth(n.saturating_sub(1)).cloned()).await
    }

    /// Wait for the first call of `method` that satisfies `pred`.
    pub async fn wait_request(&self, method: &str, timeout: Duration, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        self.wait_for(timeout, |reqs| reqs.iter().find(|r| r.method.eq_ignore_ascii_case(method) && pred(r)).cloned()).await
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(1)
}

fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "PlanGate", "username": BOT_USERNAME})
}

/// `SendMessage` → `sendMessage`.
fn canonical(method: &str) -> String {
    let mut chars = method.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// What Telegram shows as a message's text after HTML parsing, roughly:
/// tags removed, the four entities unescaped.
fn strip_html(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
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

async fn parse_body(request: Request) -> (Option<String>, Value) {
    let content_type = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let is_multipart = content_type.as_deref().is_some_and(|c| c.starts_with("multipart/form-data"));
    if is_multipart {
        let mut fields = Map::new();
        if let Ok(mut multipart) = Multipart::from_request(request, &()).await {
            while let Ok(Some(field)) = multipart.next_field().await {
                let name = field.name().unwrap_or_default().to_string();
                let file_name = field.file_name().map(str::to_string);
                let bytes = field.bytes().await.unwrap_or_default();
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let value = match file_name {
                    Some(file_name) => {
                        json!({"file_name": file_name, "text": text, "size": bytes.len()})
                    }
                    None => match serde_json::from_str::<Value>(&text) {
                        Ok(v @ (Value::Object(_) | Value::Array(_) | Value::Number(_))) => v,
                        _ => Value::String(text),
                    },
                };
                fields.insert(name, value);
            }
        }
        // Resolve `attach://<name>` references to the attached part.
        let keys: Vec<String> = fields.keys().cloned().collect();
        for key in keys {
            let target = fields.get(&key).and_then(Value::as_str).and_then(|s| s.strip_prefix("attach://")).map(str::to_string);
            if let Some(part) = target.and_then(|t| fields.get(&t).cloned()) {
                fields.insert(key, part);
            }
        }
        (content_type, Value::Object(fields))
    } else {
        let bytes = axum::body::to_bytes(request.into_body(), 16 * 1024 * 1024).await.unwrap_or_default();
        let body = if bytes.is_empty() { json!({}) } else { serde_json::from_slice(&bytes).unwrap_or(Value::Null) };
        (content_type, body)
    }
}

async fn api(State(inner): State<Arc<Inner>>, Path((bot, method)): Path<(String, String)>, request: Request) -> Response {
    let at = Instant::now();
    let (content_type, body) = parse_body(request).await;
    let token = bot.strip_prefix("bot").unwrap_or_default().to_string();
    let method = canonical(&method);
    let scripted = {
        let mut state = inner.lock();
        let sends = ["sendmessage", "senddocument", "editmessagetext", "editmessagereplymarkup"];
        match sends.contains(&method.to_ascii_lowercase().as_str()) {
            true => state
                .limits
                .admit(&chat_of(&body).to_string(), at.into())
                .err()
                .map(|wait| Scripted::RetryAfter(whole_seconds(wait) as u32)),
            false => None,
        }
        .or_else(|| state.scripted.get_mut(&method.to_ascii_lowercase()).and_then(VecDeque::pop_front))
    };
    let scripted = match scripted {
        Some(Scripted::Stall(held)) => {
            inner.lock().stalled += 1;
            inner.bump();
            tokio::time::sleep(held).await;
            None
        }
        other => other,
    };
    let (status, response) = answer(&inner, &token, &method, &body, scripted).await;
    // Recorded once answered, so a test that sees a request also sees what
    // the client got back (long polls appear when they return).
    inner.lock().requests.push(Recorded { method, token, content_type, body, at, status: status.as_u16(), response: response.clone() });
    inner.bump();
    (status, Json(response)).into_response()
}

fn ok(result: Value) -> (StatusCode, Value) {
    (StatusCode::OK, json!({"ok": true, "result": result}))
}

fn error(status: u16, description: &str) -> (StatusCode, Value) {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, json!({"ok": false, "error_code": status.as_u16(), "description": description}))
}

async fn answer(inner: &Inner, token: &str, method: &str, body: &Value, scripted: Option<Scripted>) -> (StatusCode, Value) {
    if token != TOKEN {
        return error(401, "Unauthorized");
    }
    match scripted {
        Some(Scripted::RetryAfter(secs)) => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {secs}"), "parameters": {"retry_after": secs}}),
            )
        }
        Some(Scripted::Error { status, description }) => return error(status, &description),
        Some(Scripted::Result(value)) => return ok(value),
        Some(Scripted::Stall(_)) | None => {}
    }
    match method.to_ascii_lowercase().as_str() {
        "getme" => ok(json!({
            "id": BOT_ID, "is_bot": true, "first_name": "PlanGate", "username": BOT_USERNAME,
            "can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false,
            "can_connect_to_business": false, "has_main_web_app": false
        })),
        "getupdates" => get_updates(inner, body).await,
        // `plangate doctor`: every chat exists with the bot in it, every user is a member (script errors to say otherwise).
        "getchat" => {
            let id = body.get("chat_id").and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok())).unwrap_or(0);
            ok(json!({"id": id, "type": "supergroup", "title": format!("Chat {id}")}))
        }
        "getchatmember" => {
            let user = body.get("user_id").and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok())).unwrap_or(0);
            ok(json!({"status": "member", "user": {"id": user, "is_bot": false, "first_name": format!("User {user}")}}))
        }
        "createforumtopic" => create_topic(inner, body),
        "sendmessage" | "senddocument" => send(inner, method, body),
        "editmessagetext" | "editmessagereplymarkup" => edit(inner, method, body),
        "answercallbackquery" | "setmycommands" | "setwebhook" | "deletewebhook" => ok(json!(true)),
        _ => error(404, "Not Found: method not found"),
    }
}

/// Long poll: answer at once when updates at or past `offset` exist, else
/// wait up to `timeout` seconds for one to be pushed.
async fn get_updates(inner: &Inner, body: &Value) -> (StatusCode, Value) {
    let offset = body.get("offset").and_then(Value::as_i64).unwrap_or(0);
    let timeout = Duration::from_secs(body.get("timeout").and_then(Value::as_u64).unwrap_or(0));
    let mut changed = inner.changed.subscribe();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let ready: Vec<Value> = inner
            .lock()
            .updates
            .iter()
            .filter(|u| u.get("update_id").and_then(Value::as_i64).is_some_and(|id| id >= offset))
            .cloned()
            .collect();
        if !ready.is_empty() {
            return ok(Value::Array(ready));
        }
        if tokio::time::timeout_at(deadline, changed.changed()).await.is_err() {
            return ok(json!([]));
        }
    }
}

fn chat_of(body: &Value) -> i64 {
    match body.get("chat_id") {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s.parse().unwrap_or(-1),
        _ => 0,
    }
}

/// `createForumTopic`: only in a forum ([`FakeTelegram::make_forum`]); the
/// topic's id is a message id, as on Telegram.
fn create_topic(inner: &Inner, body: &Value) -> (StatusCode, Value) {
    let chat = chat_of(body);
    let name = body.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut state = inner.lock();
    if !state.forums.contains(&chat) {
        return error(400, "Bad Request: the chat is not a forum");
    }
    if name.is_empty() || name.chars().count() > 128 {
        return error(400, "Bad Request: TOPIC_NAME_INVALID");
    }
    let id = state.next_message_id;
    state.next_message_id += 1;
    state.topics.insert((chat, id), name.clone());
    ok(json!({"message_thread_id": id, "name": name, "icon_color": 7322096}))
}

fn send(inner: &Inner, method: &str, body: &Value) -> (StatusCode, Value) {
    let chat = chat_of(body);
    let mut state = inner.lock();
    let thread = body.get("message_thread_id").and_then(Value::as_i64);
    if let Some(thread) = thread {
        if !state.topics.contains_key(&(chat, thread)) {
            return error(400, "Bad Request: message thread not found");
        }
    }
    let id = state.next_message_id;
    state.next_message_id += 1;
    let mut message = json!({"message_id": id, "date": now(), "chat": FakeTelegram::chat(chat), "from": bot_user()});
    if method.eq_ignore_ascii_case("sendDocument") {
        let doc = body.get("document").cloned().unwrap_or(Value::Null);
        message["document"] = json!({
            "file_id": format!("doc-{id}"), "file_unique_id": format!("udoc-{id}"),
            "file_name": doc.get("file_name").cloned().unwrap_or(Value::Null),
            "file_size": doc.get("size").cloned().unwrap_or(json!(0)),
        });
        if let Some(caption) = body.get("caption").and_then(Value::as_str) {
            message["caption"] = json!(strip_html(caption));
        }
    } else {
        let text = body.get("text").and_then(Value::as_str).unwrap_or_default();
        message["text"] = json!(strip_html(text));
    }
    if let Some(markup) = body.get("reply_markup").filter(|m| m.get("inline_keyboard").is_some()) {
        message["reply_markup"] = markup.clone();
    }
    let reply_to = body.get("reply_parameters").and_then(|r| r.get("message_id")).and_then(Value::as_i64);
    if let Some(reply) = reply_to.and_then(|r| state.messages.get(&(chat, r)).cloned()) {
        message["reply_to_message"] = reply;
    }
    if let Some(thread) = thread {
        message["message_thread_id"] = json!(thread);
        message["is_topic_message"] = json!(true);
    }
    state.messages.insert((chat, id), message.clone());
    ok(message)
}

fn edit(inner: &Inner, method: &str, body: &Value) -> (StatusCode, Value) {
    let chat = chat_of(body);
    let id = body.get("message_id").and_then(Value::as_i64).unwrap_or(0);
    let mut state = inner.lock();
    let Some(message) = state.messages.get_mut(&(chat, id)) else {
        return error(400, "Bad Request: message to edit not found");
    };
    let old = message.clone();
    if method.eq_ignore_ascii_case("editMessageText") {
        message["text"] = json!(strip_html(body.get("text").and_then(Value::as_str).unwrap_or_default()));
    }
    match body.get("reply_markup").and_then(|m| m.get("inline_keyboard")) {
        Some(Value::Array(rows)) if !rows.is_empty() => message["reply_markup"] = body["reply_markup"].clone(),
        _ => {
            if let Some(obj) = message.as_object_mut() {
                obj.remove("reply_markup");
            }
        }
    }
    if *message == old {
        return error(400, NOT_MODIFIED);
    }
    message["edit_date"] = json!(now());
    ok(message.clone())
}
