//! Fake of the Slack Web API and of Socket Mode, on 127.0.0.1.
//!
//! * `POST|GET /api/<method>`: the Web API. Every request is recorded (HTTP
//!   method, path, query, the headers that matter, body parsed as JSON, form
//!   or multipart parts) and answered with a scripted response if the test
//!   queued one for that method ([`SlackFake::script`]: errors, 429 with
//!   `Retry-After`, 500), else with a plausible default: `chat.postMessage`
//!   returns a fresh `ts`, `files.getUploadURLExternal` an upload URL on this
//!   fake, `views.open` the view with an id and hash, `apps.connections.open`
//!   the fake's websocket URL, `auth.test` the bot with its scopes in
//!   `x-oauth-scopes`, `conversations.info` a channel the bot is in and
//!   `conversations.members` only the bot…
//! * `POST /upload/<file id>`: the upload URL of the external upload flow.
//! * `POST /response/<id>`: a `response_url` ([`SlackFake::response_url`]).
//! * `GET /socket`: Socket Mode. The fake greets each connection with
//!   `hello`, sends the envelopes a test scripts ([`SlackFake::send_envelope`])
//!   and records every frame the client sends (the acks).
//!
//! Tests never sleep: [`SlackFake::wait_for`], [`SlackFake::wait_calls`],
//! [`SlackFake::wait_connected`] and [`SlackFake::wait_for_ack`] wake on each
//! recorded request or frame.

use crate::limits::{whole_seconds, Enforcer, Limits, RateStats};
use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// The team every default response and helper payload uses, and the one
/// `auth.test` reports: the bot's own workspace.
pub const TEAM: &str = "T0FAKE";
/// Another workspace (a Slack Connect partner, another install of the app):
/// see [`from_team`].
pub const OTHER_TEAM: &str = "T0OTHER";

/// The bot's user id (`auth.test`), the one member of every channel by
/// default (`conversations.members`).
pub const BOT_USER: &str = "UBOT";
/// The bot token's scopes, which Slack reports in `x-oauth-scopes` (here on
/// `auth.test`).
pub const SCOPES: &str = "chat:write,commands,files:write,channels:read,groups:read";

/// A request body as the fake understood it.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Empty,
    Json(Value),
    Form(Vec<(String, String)>),
    Multipart(Vec<Part>),
    /// Anything else (the raw upload of the external upload flow).
    Bytes(Vec<u8>),
}

/// One part of a multipart body.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`…
    pub http_method: String,
    pub path: String,
    /// The Web API method (`chat.postMessage`), or `upload` / `response_url`.
    pub api: String,
    pub query: Vec<(String, String)>,
    /// `authorization`, `content-type` and every `x-*` header, lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Recorded {
    /// The JSON body, or `Null` when the body was not JSON.
    pub fn json(&self) -> &Value {
        match &self.body {
            Body::Json(v) => v,
            _ => &Value::Null,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The raw bytes of a `Bytes` body (the upload).
    pub fn bytes(&self) -> &[u8] {
        match &self.body {
            Body::Bytes(b) => b,
            _ => &[],
        }
    }
}

/// A response the test wants for the next call of one method.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Scripted {
    /// `{"ok":true}` merged with `extra`'s fields.
    pub fn ok(extra: Value) -> Scripted {
        let mut body = json!({"ok": true});
        if let (Some(b), Value::Object(extra)) = (body.as_object_mut(), extra) {
            b.extend(extra);
        }
        Scripted { status: 200, headers: vec![], body }
    }

    /// `{"ok":false,"error":code}` with HTTP 200, as Slack refuses requests.
    pub fn error(code: &str) -> Scripted {
        Scripted { status: 200, headers: vec![], body: json!({"ok": false, "error": code}) }
    }

    /// HTTP 429 with `Retry-After: secs`.
    pub fn rate_limited(secs: u64) -> Scripted {
        Scripted {
            status: 429,
            headers: vec![("retry-after".into(), secs.to_string())],
            body: json!({"ok": false, "error": "ratelimited"}),
        }
    }

    pub fn status(status: u16, body: Value) -> Scripted {
        Scripted { status, headers: vec![], body }
    }
}

struct FakeState {
    base: String,
    log: Mutex<Vec<Recorded>>,
    scripts: Mutex<HashMap<String, VecDeque<Scripted>>>,
    counter: AtomicU64,
    sockets: Mutex<Vec<mpsc::UnboundedSender<String>>>,
    frames: Mutex<Vec<Value>>,
    connections: AtomicU64,
    limits: Mutex<Enforcer>,
    /// Messages someone deleted ([`SlackFake::delete_message`]): a reply
    /// into their thread answers `thread_not_found`.
    deleted: Mutex<std::collections::HashSet<String>>,
    /// Bumped on every recorded request, frame and connection.
    version: watch::Sender<u64>,
}

impl FakeState {
    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    fn next(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// The running fake. Dropping it stops the server.
pub struct SlackFake {
    addr: SocketAddr,
    state: Arc<FakeState>,
    task: JoinHandle<()>,
}

impl Drop for SlackFake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SlackFake {
    pub async fn start() -> SlackFake {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the Slack fake");
        let addr = listener.local_addr().expect("local addr");
        let (version, _) = watch::channel(0);
        let state = Arc::new(FakeState {
            base: format!("http://{addr}"),
            log: Mutex::new(Vec::new()),
            scripts: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
            sockets: Mutex::new(Vec::new()),
            frames: Mutex::new(Vec::new()),
            connections: AtomicU64::new(0),
            limits: Mutex::new(Enforcer::default()),
            deleted: Mutex::default(),
            version,
        });
        let app = Router::new().route("/socket", get(socket)).fallback(any_request).with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        SlackFake { addr, state, task }
    }

    /// From now on, refuse message posts and edits (`chat.postMessage`,
    /// `chat.update`, `chat.postEphemeral`, `files.completeUploadExternal`)
    /// beyond `limits` per channel and overall, with Slack's HTTP 429 and
    /// `Retry-After` in whole seconds.
    pub fn enforce_limits(&self, limits: Limits) {
        lock(&self.state.limits).enforce(limits);
    }

    /// Posts and edits admitted and refused since [`enforce_limits`](Self::enforce_limits).
    pub fn rate_stats(&self) -> RateStats {
        lock(&self.state.limits).stats()
    }

    /// `http://127.0.0.1:PORT`
    pub fn base(&self) -> String {
        self.state.base.clone()
    }

    /// What `slack.api_url` should be: `http://127.0.0.1:PORT/api`.
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.addr)
    }

    /// A `response_url` served (and recorded, as api `response_url`) by the fake.
    pub fn response_url(&self, id: &str) -> String {
        format!("http://{}/response/{id}", self.addr)
    }

    /// Answer the next call of `api` with `response` (queued in order).
    pub fn script(&self, api: &str, response: Scripted) {
        lock(&self.state.scripts).entry(api.to_string()).or_default().push_back(response);
    }

    /// Every request so far, in arrival order.
    /// Someone deleted message `ts` (a thread's root): replies posted into
    /// its thread from now on answer Slack's `thread_not_found`.
    pub fn delete_message(&self, ts: &str) {
        lock(&self.state.deleted).insert(ts.to_string());
    }

    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state.log).clone()
    }

    /// The calls of one method so far.
    pub fn calls(&self, api: &str) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.api == api).collect()
    }

    /// The methods called so far, in order (`chat.postMessage`, `upload`, …).
    pub fn sequence(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.api).collect()
    }

    /// Forget the requests recorded so far (frames and connections stay).
    pub fn clear(&self) {
        lock(&self.state.log).clear();
    }

    /// Wait until `done` holds for the recorded requests; panics after
    /// `timeout` with what was recorded.
    pub async fn wait_for(&self, timeout: Duration, done: impl Fn(&[Recorded]) -> bool) -> Vec<Recorded> {
        let mut rx = self.state.version.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            let log = self.requests();
            if done(&log) {
                return log;
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                panic!(
                    "the Slack fake did not see the expected requests within {timeout:?}; got {:#?}",
                    log.iter().map(|r| (&r.api, &r.body)).collect::<Vec<_>>()
                );
            }
        }
    }

    /// Wait for at least `n` calls of `api` and return all of them.
    pub async fn wait_calls(&self, api: &str, n: usize, timeout: Duration) -> Vec<Recorded> {
        self.wait_for(timeout, |log| log.iter().filter(|r| r.api == api).count() >= n).await;
        self.calls(api)
    }

    /// How many websocket connections were opened so far.
    pub fn connections(&self) -> u64 {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Socket Mode connections open right now.
    pub fn open_sockets(&self) -> usize {
        lock(&self.state.sockets).len()
    }

    /// Wait until a Socket Mode client is connected.
    pub async fn wait_connected(&self, timeout: Duration) {
        let mut rx = self.state.version.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            if !lock(&self.state.sockets).is_empty() {
                return;
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                panic!("no Socket Mode client connected within {timeout:?}");
            }
        }
    }

    /// Send a raw frame to every connected Socket Mode client.
    pub fn send_frame(&self, frame: &Value) {
        let text = frame.to_string();
        lock(&self.state.sockets).retain(|tx| tx.send(text.clone()).is_ok());
    }

    /// Send an envelope (`interactive`, `slash_commands`, `events_api`) with
    /// `payload`; returns its `envelope_id`.
    pub fn send_envelope(&self, kind: &str, payload: Value) -> String {
        let id = format!("env-{}", self.state.next());
        self.send_frame(&json!({
            "envelope_id": id,
            "type": kind,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": 0,
            "retry_reason": "",
            "payload": payload,
        }));
        id
    }

    /// Every frame the clients sent, parsed as JSON.
    pub fn frames(&self) -> Vec<Value> {
        lock(&self.state.frames).clone()
    }

    /// Wait for the client's ack of `envelope_id` and return it.
    pub async fn wait_for_ack(&self, envelope_id: &str, timeout: Duration) -> Value {
        let mut rx = self.state.version.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            if let Some(ack) = self.frames().into_iter().find(|f| f["envelope_id"] == envelope_id) {
                return ack;
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                panic!("no ack for {envelope_id} within {timeout:?}; frames: {:?}", self.frames());
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kept headers: what a test may assert on.
fn kept_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "authorization" | "content-type") || k.as_str().starts_with("x-"))
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("<binary>").to_string()))
        .collect()
}

fn parse_form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn any_request(State(state): State<Arc<FakeState>>, request: Request) -> Response {
    let arrived = tokio::time::Instant::now();
    let http_method = request.method().to_string();
    let path = request.uri().path().to_string();
    let query = request.uri().query().map(parse_form).unwrap_or_default();
    let headers = kept_headers(request.headers());
    let content_type = request.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let body = if content_type.starts_with("multipart/form-data") {
        let mut parts = Vec::new();
        if let Ok(mut multipart) = Multipart::from_request(request, &()).await {
            while let Ok(Some(field)) = multipart.next_field().await {
                let name = field.name().unwrap_or("").to_string();
                let file_name = field.file_name().map(str::to_string);
                let content_type = field.content_type().map(str::to_string);
                let data = field.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
                parts.push(Part { name, file_name, content_type, data });
            }
        }
        Body::Multipart(parts)
    } else {
        let bytes = axum::body::to_bytes(request.into_body(), 16 * 1024 * 1024).await.unwrap_or_else(|_| Bytes::new());
        if bytes.is_empty() {
            Body::Empty
        } else if content_type.starts_with("application/json") {
            serde_json::from_slice(&bytes).map(Body::Json).unwrap_or(Body::Bytes(bytes.to_vec()))
        } else if content_type.starts_with("application/x-www-form-urlencoded") {
            Body::Form(parse_form(&String::from_utf8_lossy(&bytes)))
        } else {
            Body::Bytes(bytes.to_vec())
        }
    };
    let (api, kind) = if let Some(method) = path.strip_prefix("/api/") {
        (method.to_string(), "api")
    } else if path.starts_with("/upload/") {
        ("upload".to_string(), "upload")
    } else if path.starts_with("/response/") {
        ("response_url".to_string(), "response")
    } else {
        (path.clone(), "unknown")
    };
    let recorded = Recorded { http_method, path: path.clone(), api: api.clone(), query, headers, body };
    let sends = ["chat.postMessage", "chat.update", "chat.postEphemeral", "files.completeUploadExternal"];
    let refused = match sends.contains(&api.as_str()) {
        true => lock(&state.limits).admit(&channel_of(&recorded), arrived).err().map(|wait| Scripted::rate_limited(whole_seconds(wait))),
        false => None,
    };
    let scripted = refused.or_else(|| lock(&state.scripts).get_mut(&api).and_then(|q| q.pop_front()));
    let response = match scripted {
        Some(s) => respond(s.status, &s.headers, &s.body),
        None => match kind {
            "upload" => {
                let len = recorded.bytes().len();
                (StatusCode::OK, [("content-type", "text/plain")], format!("OK - {len}")).into_response()
            }
            "response" => respond(200, &[], &json!({"ok": true})),
            "api" if api == "auth.test" => respond(200, &[("x-oauth-scopes".into(), SCOPES.into())], &default_response(&state, &recorded)),
            "api" => respond(200, &[], &default_response(&state, &recorded)),
            _ => StatusCode::NOT_FOUND.into_response(),
        },
    };
    lock(&state.log).push(recorded);
    state.bump();
    response
}

/// The channel a Web API call addresses (`channel`, or `channel_id` for uploads), JSON or form.
fn channel_of(request: &Recorded) -> String {
    let from_form = |name: &str| match &request.body {
        Body::Form(fields) => fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
        _ => None,
    };
    ["channel", "channel_id"]
        .iter()
        .find_map(|name| request.json()[*name].as_str().map(str::to_string).or_else(|| from_form(name)))
        .unwrap_or_default()
}

fn respond(status: u16, headers: &[(String, String)], body: &Value) -> Response {
    let mut response = (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body.to_string()).into_response();
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json; charset=utf-8"));
    for (k, v) in headers {
        if let (Ok(name), Ok(value)) = (axum::http::HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// A successful answer shaped like Slack's, for the methods plangate calls.
fn default_response(state: &FakeState, request: &Recorded) -> Value {
    let body = request.json();
    let n = state.next();
    let ts = format!("1700000000.{n:06}");
    match request.api.as_str() {
        "chat.postMessage" if body["thread_ts"].as_str().is_some_and(|t| lock(&state.deleted).contains(t)) => {
            json!({"ok": false, "error": "thread_not_found"})
        }
        "chat.postMessage" => json!({
            "ok": true,
            "channel": body["channel"],
            "ts": ts,
            "message": {"ts": ts, "text": body["text"], "thread_ts": body["thread_ts"]},
        }),
        "chat.update" => {
            json!({"ok": true, "channel": body["channel"], "ts": body["ts"], "text": body["text"], "message": {"text": body["text"]}})
        }
        "chat.postEphemeral" => json!({"ok": true, "message_ts": ts}),
        "files.getUploadURLExternal" => {
            json!({"ok": true, "upload_url": format!("{}/upload/F{n}", state.base), "file_id": format!("F{n}")})
        }
        "files.completeUploadExternal" => {
            let files: Vec<Value> = body["files"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|f| json!({"id": f["id"], "title": f["title"]}))
                .collect();
            json!({"ok": true, "files": files})
        }
        "views.open" => {
            let mut view = body["view"].clone();
            if let Some(v) = view.as_object_mut() {
                v.insert("id".into(), json!(format!("V{n}")));
                v.insert("team_id".into(), json!(TEAM));
                v.insert("hash".into(), json!(format!("{n}.hash")));
            }
            json!({"ok": true, "view": view})
        }
        "apps.connections.open" => json!({"ok": true, "url": format!("{}/socket", state.base.replacen("http://", "ws://", 1))}),
        "conversations.info" => {
            let channel = request.query("channel").map(str::to_string).unwrap_or_else(|| channel_of(request));
            json!({"ok": true, "channel": {"id": channel, "name": "plans", "is_channel": true, "is_private": false, "is_member": true}})
        }
        "conversations.members" => json!({"ok": true, "members": [BOT_USER], "response_metadata": {"next_cursor": ""}}),
        "auth.test" => {
            json!({"ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "plangate", "team_id": TEAM, "user_id": BOT_USER, "bot_id": "BBOT"})
        }
        _ => json!({"ok": false, "error": "unknown_method"}),
    }
}

async fn socket(State(state): State<Arc<FakeState>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |ws| run_socket(state, ws))
}

async fn run_socket(state: Arc<FakeState>, mut ws: WebSocket) {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let hello = json!({
        "type": "hello",
        "num_connections": 1,
        "debug_info": {"host": "fake-slack", "build_number": 1, "approximate_connection_time": 3600},
        "connection_info": {"app_id": "A0FAKE"},
    });
    if ws.send(Message::Text(hello.to_string().into())).await.is_err() {
        return;
    }
    lock(&state.sockets).push(tx);
    state.connections.fetch_add(1, Ordering::SeqCst);
    state.bump();
    loop {
        tokio::select! {
            outgoing = rx.recv() => match outgoing {
                Some(text) => {
                    if ws.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
            incoming = ws.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    let frame = serde_json::from_str(text.as_str()).unwrap_or(Value::String(text.to_string()));
                    lock(&state.frames).push(frame);
                    state.bump();
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
        }
    }
    // Close this socket's queue first, so the pruning below sees it closed
    // (while `rx` lived, its sender counted as open and stayed listed).
    drop(rx);
    lock(&state.sockets).retain(|tx| !tx.is_closed());
    state.bump();
}

/// A `block_actions` payload as Slack sends it for a click on a message
/// button: `data` is the button's value and action id.
pub fn block_actions(
    user: &str,
    username: &str,
    channel: &str,
    message_ts: &str,
    data: &str,
    action_ts: &str,
    response_url: &str,
) -> Value {
    json!({
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "fake"},
        "user": {"id": user, "username": username, "name": username, "team_id": TEAM},
        "api_app_id": "A0FAKE",
        "token": "verification-token-unused",
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": false},
        "trigger_id": format!("trigger-{action_ts}"),
        "channel": {"id": channel, "name": "ops"},
        "message": {"type": "message", "ts": message_ts, "text": "card", "user": "UBOT"},
        "response_url": response_url,
        "actions": [{
            "type": "button",
            "action_id": data,
            "block_id": "plangate_actions",
            "text": {"type": "plain_text", "text": "Approve"},
            "value": data,
            "action_ts": action_ts,
        }],
    })
}

/// A `view_submission` of a modal; `values` is the view's `state.values`
/// (see [`text_input`]).
pub fn view_submission(
    user: &str,
    username: &str,
    view_id: &str,
    hash: &str,
    callback_id: &str,
    private_metadata: &str,
    values: Value,
) -> Value {
    json!({
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "fake"},
        "user": {"id": user, "username": username, "name": username, "team_id": TEAM},
        "api_app_id": "A0FAKE",
        "trigger_id": format!("trigger-{view_id}"),
        "view": {
            "id": view_id,
            "team_id": TEAM,
            "type": "modal",
            "title": {"type": "plain_text", "text": "Modal"},
            "blocks": [],
            "private_metadata": private_metadata,
            "callback_id": callback_id,
            "hash": hash,
            "state": {"values": values},
        },
    })
}

/// `state.values` of a modal whose one plain-text input holds `text`.
pub fn text_input(block_id: &str, action_id: &str, text: &str) -> Value {
    json!({block_id: {action_id: {"type": "plain_text_input", "value": text}}})
}

/// A slash command payload (Socket Mode `slash_commands` envelope payload).
pub fn slash_command(user: &str, username: &str, channel: &str, text: &str, trigger_id: &str, response_url: &str) -> Value {
    json!({
        "token": "verification-token-unused",
        "team_id": TEAM,
        "team_domain": "fake",
        "channel_id": channel,
        "channel_name": "ops",
        "user_id": user,
        "user_name": username,
        "command": "/plan",
        "text": text,
        "api_app_id": "A0FAKE",
        "response_url": response_url,
        "trigger_id": trigger_id,
    })
}

/// The same payload as sent from workspace `team`: every team field the
/// helpers above fill (`team.id`, `user.team_id`, a slash command's
/// `team_id`, a view's `team_id`) is set to it.
pub fn from_team(mut payload: Value, team: &str) -> Value {
    if payload["team"].is_object() {
        payload["team"]["id"] = json!(team);
    }
    if payload["user"].is_object() {
        payload["user"]["team_id"] = json!(team);
    }
    if payload["view"].is_object() {
        payload["view"]["team_id"] = json!(team);
    }
    if payload.get("team_id").is_some() {
        payload["team_id"] = json!(team);
    }
    payload
}
