//! A scripted fake of the OpenAI Responses API on 127.0.0.1, for driving the
//! real Codex CLI offline (a `[model_providers.fake]` with `wire_api =
//! "responses"`; see [`crate::codex`]).
//!
//! The same design as [`crate::fake_anthropic`]: a script of [`Turn`]s, each
//! a list of output [`Item`]s (an assistant message, a `function_call` such
//! as `exec_command {"cmd": …}`, or a freeform `custom_tool_call` such as
//! `apply_patch`). Every main request — `POST /v1/responses` with a
//! non-empty `tools` list — takes the next step and gets it streamed as
//! server-sent events: `response.created`, per item
//! `response.output_item.added` (text deltas for messages) and
//! `response.output_item.done`, then `response.completed`. The fake gives
//! every call an id of its own (`call_fake_0001`, …); Codex answers it with
//! a `function_call_output` (or `custom_tool_call_output`) of that id in its
//! next request, which [`FakeOpenAi::outputs`] reads. Other requests get a
//! short message and never consume the script; a main request that finds
//! the script empty gets [`EXHAUSTED`].

use axum::extract::{Request as HttpRequest, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The text a main request gets when the script is empty.
pub const EXHAUSTED: &str = "(fake model: script exhausted)";
/// The text every side request gets.
pub const SIDE_TEXT: &str = "Fake side answer";

/// One output item of a scripted model response.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An assistant message.
    Message(String),
    /// A function tool call; `arguments` is sent as its JSON text.
    FunctionCall { name: String, arguments: Value },
    /// A freeform tool call (Codex's `apply_patch`): `input` as is.
    CustomToolCall { name: String, input: String },
}

/// One scripted model response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub items: Vec<Item>,
}

impl Turn {
    /// A response that only says `text` (and so ends Codex's turn).
    pub fn message(text: impl Into<String>) -> Turn {
        Turn { items: vec![Item::Message(text.into())] }
    }

    /// A response calling function `name` with `arguments`.
    pub fn call(name: impl Into<String>, arguments: Value) -> Turn {
        Turn { items: vec![Item::FunctionCall { name: name.into(), arguments }] }
    }

    /// A response running a shell command through `exec_command`.
    pub fn exec(cmd: &str) -> Turn {
        Turn::call("exec_command", json!({"cmd": cmd}))
    }

    /// A response applying a patch (`*** Begin Patch…`) with `apply_patch`.
    pub fn apply_patch(patch: &str) -> Turn {
        Turn { items: vec![Item::CustomToolCall { name: "apply_patch".into(), input: patch.to_string() }] }
    }

    /// This response, then a message.
    pub fn and_message(mut self, text: impl Into<String>) -> Turn {
        self.items.push(Item::Message(text.into()));
        self
    }

    /// This response, then one more function call.
    pub fn and_call(mut self, name: impl Into<String>, arguments: Value) -> Turn {
        self.items.push(Item::FunctionCall { name: name.into(), arguments });
        self
    }
}

/// What kind of request it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Main,
    Side,
}

/// A call the fake sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub call_id: String,
    pub name: String,
    /// The arguments (function) or the input as a JSON string (custom).
    pub arguments: Value,
}

/// A call's output that Codex sent back.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub call_id: String,
    /// The called tool, when the call was the fake's.
    pub name: Option<String>,
    /// The output as text (content items' text joined by newlines).
    pub text: String,
    pub raw: Value,
}

/// A request the fake got.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Value,
    pub kind: Kind,
    pub at: Instant,
    /// For main requests: the calls the fake answered with.
    pub answered_calls: Vec<Call>,
}

impl Request {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str).unwrap_or("")
    }

    /// The `input` array.
    pub fn input(&self) -> &[Value] {
        self.body["input"].as_array().map(Vec::as_slice).unwrap_or(&[])
    }

    /// The tools' names (`type` for those without one, e.g. `web_search`).
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str().or(t["type"].as_str()).map(String::from)).collect())
            .unwrap_or_default()
    }

    /// Every call output in the input, in order.
    pub fn outputs(&self) -> Vec<Output> {
        self.input()
            .iter()
            .filter(|i| i["type"] == "function_call_output" || i["type"] == "custom_tool_call_output")
            .map(|i| Output {
                call_id: i["call_id"].as_str().unwrap_or("").to_string(),
                name: None,
                text: output_text(&i["output"]),
                raw: i.clone(),
            })
            .collect()
    }

    /// The text of the last user message (the prompt).
    pub fn last_user_text(&self) -> String {
        let Some(message) = self.input().iter().rev().find(|i| i["type"] == "message" && i["role"] == "user") else { return String::new() };
        output_text(&message["content"])
    }
}

fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            items.iter().map(|i| i["text"].as_str().map(String::from).unwrap_or_else(|| i.to_string())).collect::<Vec<_>>().join("\n")
        }
        Value::Null => String::new(),
        other => other["content"].as_str().map(String::from).unwrap_or_else(|| other.to_string()),
    }
}

type Make = Box<dyn FnOnce(&Request) -> Turn + Send>;
type Accept = Box<dyn Fn(&Request) -> bool + Send>;

struct Step {
    accept: Option<Accept>,
    make: Make,
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Step>,
    requests: Vec<Request>,
    calls: Vec<Call>,
    next_id: u64,
    exhausted: usize,
}

struct Shared {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

/// The fake API; stops serving when dropped.
pub struct FakeOpenAi {
    base: String,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeOpenAi {
    /// Bind 127.0.0.1:0 and serve.
    pub async fn start() -> FakeOpenAi {
        let shared = Arc::new(Shared { inner: Mutex::new(Inner::default()), changed: watch::channel(0).0 });
        let app = Router::new().fallback(receive).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake OpenAI API");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeOpenAi { base, shared, server }
    }

    /// `http://127.0.0.1:PORT/v1`: the provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.base)
    }

    /// Append fixed turns to the script.
    pub fn push(&self, turns: impl IntoIterator<Item = Turn>) {
        let mut inner = self.lock();
        for turn in turns {
            inner.script.push_back(Step { accept: None, make: Box::new(move |_| turn) });
        }
    }

    /// Append a step that makes its turn from the request it answers.
    pub fn push_with(&self, make: impl FnOnce(&Request) -> Turn + Send + 'static) {
        self.lock().script.push_back(Step { accept: None, make: Box::new(make) });
    }

    /// Append a step that answers only a request `accept` accepts (a request
    /// takes the first step that accepts it).
    pub fn push_when(&self, accept: impl Fn(&Request) -> bool + Send + 'static, make: impl FnOnce(&Request) -> Turn + Send + 'static) {
        self.lock().script.push_back(Step { accept: Some(Box::new(accept)), make: Box::new(make) });
    }

    /// How many steps are left.
    pub fn pending(&self) -> usize {
        self.lock().script.len()
    }

    /// How many main requests found no step for them.
    pub fn exhausted(&self) -> usize {
        self.lock().exhausted
    }

    /// Every request, side ones included.
    pub fn all_requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    /// The main requests.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.iter().filter(|r| r.kind == Kind::Main).cloned().collect()
    }

    /// Every call the fake sent.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Every call output that reached the fake, once each, in order, named
    /// after the fake's call of that id.
    pub fn outputs(&self) -> Vec<Output> {
        let inner = self.lock();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for request in inner.requests.iter().filter(|r| r.kind == Kind::Main) {
            for mut output in request.outputs() {
                if seen.insert(output.call_id.clone()) {
                    output.name = inner.calls.iter().find(|c| c.call_id == output.call_id).map(|c| c.name.clone());
                    out.push(output);
                }
            }
        }
        out
    }

    /// The outputs of every call of tool `name`.
    pub fn outputs_of(&self, name: &str) -> Vec<Output> {
        self.outputs().into_iter().filter(|o| o.name.as_deref() == Some(name)).collect()
    }

    /// Wait until `check` finds what it looks for in the requests so far.
    pub async fn wait_for<T>(&self, within: Duration, what: &str, mut check: impl FnMut(&[Request]) -> Option<T>) -> T {
        let mut changed = self.shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(found) = check(&self.all_requests()) {
                return found;
            }
            if tokio::time::timeout_at(deadline, changed.changed()).await.is_err() {
                panic!("fake OpenAI API: still not true after {within:?}: {what}; {} requests", self.all_requests().len());
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn classify(method: &str, path: &str, body: &Value) -> Kind {
    let route = path.split('?').next().unwrap_or("");
    if method == "POST" && route.ends_with("/responses") && body["tools"].as_array().is_some_and(|t| !t.is_empty()) {
        Kind::Main
    } else {
        Kind::Side
    }
}

async fn receive(State(shared): State<Arc<Shared>>, request: HttpRequest) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 256 * 1024 * 1024).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let method = parts.method.to_string();
    let kind = classify(&method, &path, &body);
    let mut request =
        Request { method, path, headers: headers(&parts.headers), body, kind, at: Instant::now(), answered_calls: Vec::new() };
    let step = if kind == Kind::Main {
        let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
        let found = inner.script.iter().position(|s| s.accept.as_ref().is_none_or(|a| a(&request)));
        let step = found.and_then(|i| inner.script.remove(i));
        if step.is_none() {
            inner.exhausted += 1;
        }
        step
    } else {
        None
    };
    let turn = match step {
        Some(step) => (step.make)(&request),
        None if kind == Kind::Main => Turn::message(EXHAUSTED),
        None => Turn::message(SIDE_TEXT),
    };
    let response_id = {
        let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
        let response_id = format!("resp_fake_{:04}", inner.requests.len());
        let mut calls = Vec::new();
        for item in &turn.items {
            let (name, arguments) = match item {
                Item::Message(_) => continue,
                Item::FunctionCall { name, arguments } => (name, arguments.clone()),
                Item::CustomToolCall { name, input } => (name, Value::String(input.clone())),
            };
            inner.next_id += 1;
            calls.push(Call { call_id: format!("call_fake_{:04}", inner.next_id), name: name.clone(), arguments });
        }
        inner.calls.extend(calls.iter().cloned());
        request.answered_calls = calls;
        inner.requests.push(request.clone());
        response_id
    };
    shared.changed.send_modify(|n| *n += 1);
    if request.method != "POST" || !request.path.split('?').next().unwrap_or("").ends_with("/responses") {
        return (StatusCode::NOT_FOUND, axum::Json(json!({"error": {"message": "fake: no such route", "type": "invalid_request_error"}})))
            .into_response();
    }
    let mut body = String::new();
    for event in sse_events(&response_id, request.body["model"].as_str().unwrap_or("fake"), &turn, &request.answered_calls) {
        body.push_str(&format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or("")));
    }
    ([("content-type", "text/event-stream"), ("cache-control", "no-cache")], body).into_response()
}

/// The turn as the streamed events of the Responses API.
pub fn sse_events(id: &str, model: &str, turn: &Turn, calls: &[Call]) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": id, "object": "response", "model": model, "status": "in_progress", "output": []}}),
    ];
    let mut calls = calls.iter();
    let mut output = Vec::new();
    for (index, item) in turn.items.iter().enumerate() {
        let item_id = format!("{id}_item_{index}");
        let done = match item {
            Item::Message(text) => {
                let added = json!({"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []});
                events.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                events.push(json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": index, "content_index": 0, "delta": text}));
                json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
            }
            Item::FunctionCall { .. } => {
                let call = calls.next().expect("a call per call item");
                let done = json!({"type": "function_call", "id": item_id, "call_id": call.call_id, "name": call.name,
                                  "arguments": call.arguments.to_string(), "status": "completed"});
                events.push(json!({"type": "response.output_item.added", "output_index": index, "item": done}));
                done
            }
            Item::CustomToolCall { input, .. } => {
                let call = calls.next().expect("a call per call item");
                let done = json!({"type": "custom_tool_call", "id": item_id, "call_id": call.call_id, "name": call.name,
                                  "input": input, "status": "completed"});
                events.push(json!({"type": "response.output_item.added", "output_index": index, "item": done}));
                done
            }
        };
        events.push(json!({"type": "response.output_item.done", "output_index": index, "item": done}));
        output.push(done);
    }
    events.push(json!({"type": "response.completed", "response": {
        "id": id, "object": "response", "model": model, "status": "completed", "output": output,
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15},
    }}));
    events
}

fn headers(map: &HeaderMap) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_responses_with_tools_are_main() {
        assert_eq!(classify("POST", "/v1/responses", &json!({"tools": [{"type": "function", "name": "exec_command"}]})), Kind::Main);
        assert_eq!(classify("POST", "/v1/responses", &json!({"tools": []})), Kind::Side);
        assert_eq!(classify("GET", "/v1/models", &Value::Null), Kind::Side);
    }

    #[test]
    fn a_call_streams_as_a_done_item_with_its_id() {
        let turn = Turn::exec("touch x").and_message("ok");
        let calls = vec![Call { call_id: "call_fake_0001".into(), name: "exec_command".into(), arguments: json!({"cmd": "touch x"}) }];
        let events = sse_events("resp_1", "m", &turn, &calls);
        let done: Vec<&Value> = events.iter().filter(|e| e["type"] == "response.output_item.done").collect();
        assert_eq!(done[0]["item"]["call_id"], "call_fake_0001");
        assert_eq!(serde_json::from_str::<Value>(done[0]["item"]["arguments"].as_str().unwrap()).unwrap(), json!({"cmd": "touch x"}));
        assert_eq!(done[1]["item"]["content"][0]["text"], "ok");
        assert_eq!(events.last().unwrap()["type"], "response.completed");
    }

    #[test]
    fn outputs_are_read_as_text() {
        let r = Request {
            method: "POST".into(),
            path: "/v1/responses".into(),
            headers: HashMap::new(),
            body: json!({"input": [
                {"type": "function_call_output", "call_id": "call_fake_0001", "output": "Process exited with code 0"},
                {"type": "custom_tool_call_output", "call_id": "call_fake_0002", "output": [{"type": "input_text", "text": "Done!"}]},
            ]}),
            kind: Kind::Main,
            at: Instant::now(),
            answered_calls: Vec::new(),
        };
        let outputs = r.outputs();
        assert_eq!(outputs[0].text, "Process exited with code 0");
        assert_eq!((outputs[1].call_id.as_str(), outputs[1].text.as_str()), ("call_fake_0002", "Done!"));
    }
}
