//! Fake of the Discord REST API and gateway on 127.0.0.1.
//!
//! Point serenity at [`DiscordFake::base`] (plangate's `discord.api_url`):
//! REST calls arrive as `/api/v10/...` and are recorded ([`Recorded`]) with
//! their parsed body (JSON, or multipart parts with `payload_json` parsed).
//! Every route answers like Discord by default (messages get fresh snowflake
//! ids, interaction callbacks 204, command registration echoes; the bot
//! (`/users/@me`), a channel in [`GUILD_ID`] where `@everyone` may post,
//! any guild member and the guild's roles for `plangate doctor`); a test can
//! [`script`](DiscordFake::script) one-shot answers (429 with `retry_after`,
//! 500, 403…) for a method and path.
//!
//! `GET /api/v10/gateway` (and `/gateway/bot`) answer `ws://127.0.0.1:P/gateway`,
//! where a scripted gateway runs: `op 10 Hello` → waits for `op 2 Identify`
//! → `READY` → whatever the test [`dispatch`](DiscordFake::dispatch)es;
//! heartbeats are acknowledged. Payload builders for interactions
//! ([`component_interaction`], [`command_interaction`], [`modal_interaction`],
//! [`ping_interaction`]) produce JSON serenity accepts.
//!
//! Threads started from messages, deleted, archived and locked: `threads`
//! ([`in_thread`] puts an interaction inside one).
//!
//! Tests wait with [`DiscordFake::wait_for`] instead of sleeping.

mod threads;
pub use threads::{in_thread, Thread};

use crate::limits::{whole_seconds, Enforcer, Limits, RateStats};
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// The bot's own user id in READY and in authored messages.
pub const BOT_USER_ID: u64 = 900_000_000_000_000_001;

/// The guild every channel is in by default (`GET /channels/{id}`).
pub const GUILD_ID: u64 = 800_000_000_000_000_001;
/// `@everyone`'s permissions by default: View Channel, Send Messages,
/// Embed Links.
pub const EVERYONE_PERMISSIONS: u64 = (1 << 10) | (1 << 11) | (1 << 14);

/// One REST request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// e.g. `/api/v10/channels/123/messages`
    pub path: String,
    pub query: Option<String>,
    pub authorization: Option<String>,
    pub content_type: Option<String>,
    pub body: Body,
    /// When it arrived (for retry-after assertions).
    pub at: Instant,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Empty,
    Json(Value),
    Multipart(Vec<Part>),
    Other(Vec<u8>),
}

/// One part of a multipart body.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

impl Part {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

impl Recorded {
    /// The JSON payload: the body itself, or the multipart `payload_json` part.
    pub fn json(&self) -> Option<Value> {
        match &self.body {
            Body::Json(v) => Some(v.clone()),
            Body::Multipart(parts) => parts.iter().find(|p| p.name == "payload_json").and_then(|p| serde_json::from_slice(&p.data).ok()),
            _ => None,
        }
    }

    /// Uploaded files (multipart parts with a file name).
    pub fn files(&self) -> Vec<Part> {
        match &self.body {
            Body::Multipart(parts) => parts.iter().filter(|p| p.file_name.is_some()).cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// `POST /api/v10/channels/1/messages` style summary for logs and reports.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// A one-shot answer for the next request matching `method` and `path`.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

struct Inner {
    requests: Mutex<Vec<Recorded>>,
    scripted: Mutex<VecDeque<Scripted>>,
    /// Frames the gateway client sent (Identify, heartbeats…).
    frames: Mutex<Vec<Value>>,
    changed: watch::Sender<u64>,
    next_id: AtomicU64,
    gateway_url: Mutex<String>,
    events_tx: mpsc::UnboundedSender<(String, Value)>,
    events_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<(String, Value)>>,
    application_id: u64,
    limits: Mutex<Enforcer>,
    /// Threads started from messages (see `threads`).
    threads: Mutex<Vec<Thread>>,
    /// How long starting a thread takes (zero: at once).
    thread_delay: Mutex<Duration>,
}

impl Inner {
    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    fn snowflake(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::SeqCst)
    }
}

/// A running fake. Dropping it stops the server.
pub struct DiscordFake {
    /// `http://127.0.0.1:P`: the `api_url` to configure.
    pub base: String,
    /// `ws://127.0.0.1:P/gateway`
    pub gateway_url: String,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DiscordFake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl DiscordFake {
    /// Bind 127.0.0.1:0 and serve. `application_id` is what READY reports.
    pub async fn start(application_id: u64) -> DiscordFake {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake");
        let addr = listener.local_addr().expect("addr");
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            requests: Mutex::new(Vec::new()),
            scripted: Mutex::new(VecDeque::new()),
            frames: Mutex::new(Vec::new()),
            changed: watch::channel(0).0,
            next_id: AtomicU64::new(1_100_000_000_000_000_000),
            gateway_url: Mutex::new(format!("ws://{addr}/gateway")),
            events_tx,
            events_rx: tokio::sync::Mutex::new(events_rx),
            application_id,
            limits: Mutex::new(Enforcer::default()),
            threads: Mutex::new(Vec::new()),
            thread_delay: Mutex::new(Duration::ZERO),
        });
        let app = Router::new().route("/gateway", any(gateway)).fallback(rest).with_state(inner.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        DiscordFake { base: format!("http://{addr}"), gateway_url: format!("ws://{addr}/gateway"), inner, task }
    }

    /// From now on, refuse channel message creates and edits beyond `limits`
    /// (per channel and overall) with Discord's 429: `retry_after` seconds
    /// as a float in the body, whole seconds in `Retry-After`.
    pub fn enforce_limits(&self, limits: Limits) {
        self.inner.limits.lock().unwrap().enforce(limits);
    }

    /// Message creates and edits admitted and refused since [`enforce_limits`](Self::enforce_limits).
    pub fn rate_stats(&self) -> RateStats {
        self.inner.limits.lock().unwrap().stats()
    }

    /// Answer the next `method path` request with `status`, `headers` and `body`.
    pub fn script(&self, method: &str, path: &str, status: u16, headers: &[(&str, &str)], body: Value) {
        self.inner.scripted.lock().unwrap().push_back(Scripted {
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
            status,
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            body,
        });
    }

    /// A 429 like Discord's, with `retry_after` seconds in the body and the header.
    pub fn script_rate_limit(&self, method: &str, path: &str, retry_after: f64) {
        let header = format!("{retry_after}");
        self.script(
            method,
            path,
            429,
            &[("retry-after", header.as_str()), ("x-ratelimit-scope", "user")],
            json!({"message": "You are being rate limited.", "retry_after": retry_after, "global": false}),
        );
    }

    /// Every REST request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.requests.lock().unwrap().clone()
    }

    /// Requests other than the gateway URL lookups and command registration:
    /// what a card/interaction test usually asserts.
    pub fn message_requests(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| !r.path.starts_with("/api/v10/gateway") && !r.path.contains("/commands")).collect()
    }

    /// Forget recorded requests (e.g. after start-up calls were checked).
    pub fn clear(&self) {
        self.inner.requests.lock().unwrap().clear();
    }

    /// Gateway frames the client sent, in order.
    pub fn frames(&self) -> Vec<Value> {
        self.inner.frames.lock().unwrap().clone()
    }

    /// Wait until `predicate(requests)` holds, or panic after `timeout`.
    pub async fn wait_for(&self, timeout: Duration, what: &str, predicate: impl Fn(&[Recorded]) -> bool) -> Vec<Recorded> {
        let mut rx = self.inner.changed.subscribe();
        let deadline = Instant::now() + timeout;
        loop {
            {
                let requests = self.inner.requests.lock().unwrap();
                if predicate(&requests) {
                    return requests.clone();
                }
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => {
                    panic!("timed out waiting for {what}; requests: {:#?}", self.requests().iter().map(Recorded::line).collect::<Vec<_>>())
                }
            }
        }
    }

    /// Wait until the fake has seen `n` requests matching `method` and a path containing `path_part`.
    pub async fn wait_for_count(&self, timeout: Duration, method: &str, path_part: &str, n: usize) -> Vec<Recorded> {
        let what = format!("{n} × {method} *{path_part}*");
        let all =
            self.wait_for(timeout, &what, |rs| rs.iter().filter(|r| r.method == method && r.path.contains(path_part)).count() >= n).await;
        all.into_iter().filter(|r| r.method == method && r.path.contains(path_part)).collect()
    }

    /// Wait until a gateway client has identified; returns the Identify frame.
    pub async fn wait_identified(&self, timeout: Duration) -> Value {
        let mut rx = self.inner.changed.subscribe();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(frame) = self.frames().into_iter().find(|f| f["op"] == 2) {
                return frame;
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                panic!("no gateway Identify within {timeout:?}");
            }
        }
    }

    /// Send a dispatch event (`op 0`, `t`, `d`) to the connected gateway client.
    pub fn dispatch(&self, event: &str, data: Value) {
        let _ = self.inner.events_tx.send((event.to_string(), data));
    }

    /// A fresh snowflake (message ids, interaction ids…).
    pub fn snowflake(&self) -> u64 {
        self.inner.snowflake()
    }
}

async fn gateway(State(inner): State<Arc<Inner>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| run_gateway(inner, socket))
}

/// `Hello` → wait for `Identify` → `READY` → forward dispatched events; ack heartbeats.
async fn run_gateway(inner: Arc<Inner>, mut socket: WebSocket) {
    let send = |v: Value| WsMessage::Text(v.to_string().into());
    if socket.send(send(json!({"op": 10, "d": {"heartbeat_interval": 41250}}))).await.is_err() {
        return;
    }
    let mut seq = 0u64;
    let mut events = inner.events_rx.lock().await;
    let mut identified = false;
    loop {
        tokio::select! {
            frame = socket.recv() => {
                let Some(Ok(frame)) = frame else { return };
                let WsMessage::Text(text) = frame else { continue };
                let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                let op = value["op"].as_u64();
                inner.frames.lock().unwrap().push(value);
                inner.bump();
                let answer = match op {
                    // Heartbeat → heartbeat ACK.
                    Some(1) => Some(json!({"op": 11})),
                    Some(2) if !identified => {
                        identified = true;
                        seq += 1;
                        Some(json!({
                            "op": 0, "t": "READY", "s": seq,
                            "d": {
                                "v": 10,
                                "user": {"id": BOT_USER_ID.to_string(), "username": "plangate", "discriminator": "0", "avatar": null, "bot": true},
                                "guilds": [],
                                "session_id": "fake-session",
                                "resume_gateway_url": inner.gateway_url.lock().unwrap().clone(),
                                "application": {"id": inner.application_id.to_string(), "flags": 0}
                            }
                        }))
                    }
                    _ => None,
                };
                if let Some(answer) = answer {
                    if socket.send(send(answer)).await.is_err() { return; }
                }
            }
            event = events.recv(), if identified => {
                let Some((name, data)) = event else { return };
                seq += 1;
                if socket.send(send(json!({"op": 0, "t": name, "s": seq, "d": data}))).await.is_err() { return; }
            }
        }
    }
}

async fn rest(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let arrived = Instant::now();
    let method = request.method().clone();
    let uri = request.uri().clone();
    let headers = request.headers().clone();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let content_type = header("content-type");
    let body = if content_type.as_deref().is_some_and(|c| c.starts_with("multipart/form-data")) {
        match Multipart::from_request(request, &()).await {
            Ok(mut multipart) => {
                let mut parts = Vec::new();
                while let Ok(Some(field)) = multipart.next_field().await {
                    let name = field.name().unwrap_or_default().to_string();
                    let file_name = field.file_name().map(str::to_string);
                    let content_type = field.content_type().map(str::to_string);
                    let data = field.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
                    parts.push(Part { name, file_name, content_type, data });
                }
                Body::Multipart(parts)
            }
            Err(_) => Body::Other(Vec::new()),
        }
    } else {
        let bytes = axum::body::to_bytes(request.into_body(), 16 * 1024 * 1024).await.unwrap_or_default();
        if bytes.is_empty() {
            Body::Empty
        } else {
            serde_json::from_slice(&bytes).map(Body::Json).unwrap_or_else(|_| Body::Other(bytes.to_vec()))
        }
    };
    let recorded = Recorded {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().map(str::to_string),
        authorization: header("authorization"),
        content_type,
        body,
        at: Instant::now(),
    };
    let segments: Vec<&str> = recorded.path.trim_start_matches("/api/v10/").split('/').collect();
    let refused = match (recorded.method.as_str(), segments.as_slice()) {
        ("POST", ["channels", channel, "messages"]) | ("PATCH", ["channels", channel, "messages", _]) => {
            inner.limits.lock().unwrap().admit(channel, arrived).err()
        }
        _ => None,
    };
    if let Some(wait) = refused {
        let secs = whole_seconds(wait).to_string();
        let headers = [("retry-after", secs.as_str()), ("x-ratelimit-scope", "user")];
        let body = json!({"message": "You are being rate limited.", "retry_after": wait.as_secs_f64(), "global": false});
        let response = (StatusCode::TOO_MANY_REQUESTS, headers_of(&headers), axum::Json(body)).into_response();
        inner.requests.lock().unwrap().push(recorded);
        inner.bump();
        return response;
    }
    if let Some(delay) = threads::delay(&inner, &recorded) {
        tokio::time::sleep(delay).await;
    }
    let scripted = {
        let mut queue = inner.scripted.lock().unwrap();
        let position = queue.iter().position(|s| s.method == recorded.method && s.path == recorded.path);
        position.and_then(|i| queue.remove(i))
    };
    let response = match scripted {
        Some(s) => {
            let pairs: Vec<(&str, &str)> = s.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let headers = headers_of(&pairs);
            (StatusCode::from_u16(s.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), headers, axum::Json(s.body)).into_response()
        }
        None => threads::answer(&inner, &recorded).unwrap_or_else(|| default_answer(&inner, &method, &recorded)),
    };
    inner.requests.lock().unwrap().push(recorded);
    inner.bump();
    response
}

fn headers_of(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (k, v) in pairs {
        if let (Ok(k), Ok(v)) = (k.parse::<axum::http::HeaderName>(), v.parse()) {
            headers.insert(k, v);
        }
    }
    headers
}

fn default_answer(inner: &Inner, method: &Method, r: &Recorded) -> Response {
    let segments: Vec<&str> = r.path.trim_start_matches("/api/v10/").split('/').collect();
    let content = r.json().and_then(|j| j["content"].as_str().map(str::to_string)).unwrap_or_default();
    let ok = |v: Value| (StatusCode::OK, axum::Json(v)).into_response();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["gateway"]) => ok(json!({"url": inner.gateway_url.lock().unwrap().clone()})),
        ("GET", ["gateway", "bot"]) => ok(json!({
            "url": inner.gateway_url.lock().unwrap().clone(),
            "shards": 1,
            "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        })),
        ("POST", ["channels", channel, "messages"]) => {
            let id = inner.snowflake();
            ok(message_json(id, channel.parse().unwrap_or(0), &content))
        }
        ("PATCH", ["channels", channel, "messages", message]) => {
            ok(message_json(message.parse().unwrap_or(0), channel.parse().unwrap_or(0), &content))
        }
        ("GET", ["users", "@me"]) => ok(json!({"id": BOT_USER_ID.to_string(), "username": "plangate", "bot": true})),
        ("GET", ["channels", channel]) => ok(json!({
            "id": channel, "type": 0, "guild_id": GUILD_ID.to_string(), "name": "plans", "permission_overwrites": []
        })),
        ("GET", ["guilds", _, "members", user]) => ok(json!({"user": {"id": user, "username": format!("user{user}")}, "roles": []})),
        ("GET", ["guilds", guild, "roles"]) => {
            ok(json!([{"id": guild, "name": "@everyone", "permissions": EVERYONE_PERMISSIONS.to_string()}]))
        }
        ("POST", ["interactions", _, _, "callback"]) => StatusCode::NO_CONTENT.into_response(),
        ("PATCH", ["webhooks", _, _, "messages", _]) | ("POST", ["webhooks", _, _]) => ok(message_json(inner.snowflake(), 0, &content)),
        ("POST", ["applications", app, "commands"]) | ("POST", ["applications", app, "guilds", _, "commands"]) => {
            let mut command = r.json().unwrap_or(json!({}));
            command["id"] = json!(inner.snowflake().to_string());
            command["application_id"] = json!(app);
            command["version"] = json!("1");
            (StatusCode::CREATED, axum::Json(command)).into_response()
        }
        ("PUT", ["applications", ..]) => ok(r.json().unwrap_or(json!([]))),
        _ => (StatusCode::NOT_FOUND, axum::Json(json!({"code": 0, "message": "404: Not Found"}))).into_response(),
    }
}

/// A message object as Discord returns it (authored by the bot).
pub fn message_json(id: u64, channel_id: u64, content: &str) -> Value {
    json!({
        "id": id.to_string(),
        "channel_id": channel_id.to_string(),
        "author": {"id": BOT_USER_ID.to_string(), "username": "plangate", "discriminator": "0", "avatar": null, "bot": true},
        "content": content,
        "timestamp": "2026-01-01T00:00:00.000000+00:00",
        "edited_timestamp": null,
        "tts": false,
        "mention_everyone": false,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": false,
        "type": 0,
        "flags": 0,
        "components": []
    })
}

/// Who clicks or types, and where.
#[derive(Debug, Clone)]
pub struct Actor {
    pub user_id: u64,
    pub username: String,
    /// `None`: a DM (the user comes as `user`, not `member`).
    pub guild_id: Option<u64>,
    pub channel_id: u64,
}

fn base_interaction(kind: u8, id: u64, token: &str, application_id: u64, actor: &Actor) -> Value {
    let user =
        json!({"id": actor.user_id.to_string(), "username": actor.username, "discriminator": "0", "global_name": null, "avatar": null});
    let mut v = json!({
        "id": id.to_string(),
        "application_id": application_id.to_string(),
        "type": kind,
        "token": token,
        "version": 1,
        "channel_id": actor.channel_id.to_string(),
        "channel": {"id": actor.channel_id.to_string(), "type": 0},
        "app_permissions": "2248473465835073",
        "locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "attachment_size_limit": 10485760
    });
    match actor.guild_id {
        Some(guild) => {
            v["guild_id"] = json!(guild.to_string());
            v["guild_locale"] = json!("en-US");
            v["context"] = json!(0);
            v["member"] = json!({
                "user": user, "roles": [], "joined_at": "2025-01-01T00:00:00.000000+00:00",
                "deaf": false, "mute": false, "flags": 0, "pending": false, "nick": null, "avatar": null,
                "premium_since": null, "permissions": "2248473465835073", "communication_disabled_until": null
            });
        }
        None => {
            v["context"] = json!(1);
            v["user"] = user;
        }
    }
    v
}

/// A button click (`type 3`) on message `message_id` with `custom_id`.
pub fn component_interaction(id: u64, token: &str, application_id: u64, actor: &Actor, message_id: u64, custom_id: &str) -> Value {
    let mut v = base_interaction(3, id, token, application_id, actor);
    v["data"] = json!({"custom_id": custom_id, "component_type": 2});
    v["message"] = message_json(message_id, actor.channel_id, "");
    v
}

/// A slash command (`type 2`): `name` with `options` as Discord nests them,
/// e.g. `[{"name":"revise","type":1,"options":[{"name":"feedback","type":3,"value":"…"}]}]`.
pub fn command_interaction(id: u64, token: &str, application_id: u64, actor: &Actor, name: &str, options: Value) -> Value {
    let mut v = base_interaction(2, id, token, application_id, actor);
    v["data"] = json!({"id": "1200000000000000001", "name": name, "type": 1, "options": options});
    if let Some(guild) = actor.guild_id {
        v["data"]["guild_id"] = json!(guild.to_string());
    }
    v
}

/// `/plan <sub> [option:value…]` options in Discord's nesting.
pub fn plan_subcommand(sub: &str, options: &[(&str, &str)]) -> Value {
    let options: Vec<Value> = options.iter().map(|(name, value)| json!({"name": name, "type": 3, "value": value})).collect();
    json!([{"name": sub, "type": 1, "options": options}])
}

/// A modal submission (`type 5`) of modal `custom_id` with text inputs
/// `(custom_id, value)`; `message_id` when the modal was opened from a button.
pub fn modal_interaction(
    id: u64,
    token: &str,
    application_id: u64,
    actor: &Actor,
    custom_id: &str,
    inputs: &[(&str, &str)],
    message_id: Option<u64>,
) -> Value {
    let mut v = base_interaction(5, id, token, application_id, actor);
    let rows: Vec<Value> =
        inputs.iter().map(|(input, value)| json!({"type": 1, "components": [{"type": 4, "custom_id": input, "value": value}]})).collect();
    v["data"] = json!({"custom_id": custom_id, "components": rows});
    if let Some(message) = message_id {
        v["message"] = message_json(message, actor.channel_id, "");
    }
    v
}

/// Discord's endpoint probe (`type 1`).
pub fn ping_interaction(id: u64, application_id: u64) -> Value {
    json!({"id": id.to_string(), "application_id": application_id.to_string(), "type": 1, "token": "ping-token", "version": 1})
}
