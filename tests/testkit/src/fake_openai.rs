//! A scripted fake of the OpenAI Responses API on 127.0.0.1, for driving the
//! real Codex CLI offline (a `[model_providers.fake]` with `wire_api =
//! "responses"`; see [`crate::codex`]).
//!
//! The same machinery as [`crate::fake_anthropic`] ([`crate::scripted`]): a script of [`Turn`]s, each
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

use crate::scripted::{self, sse_response, Fake, Protocol};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

pub use crate::scripted::Kind;

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

/// A request the fake got; [`Request::header`] and the fields are
/// [`scripted::Request`]'s, the rest below reads the Responses API's body.
pub type Request = scripted::Request<Call>;

impl Request {
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

/// The OpenAI Responses API as a [`Protocol`].
pub enum Responses {}

impl Protocol for Responses {
    type Turn = Turn;
    type Call = Call;
    const NAME: &'static str = "fake OpenAI API";

    fn classify(method: &str, path: &str, body: &Value) -> Kind {
        classify(method, path, body)
    }

    fn unscripted(kind: Kind) -> Turn {
        Turn::message(if kind == Kind::Main { EXHAUSTED } else { SIDE_TEXT })
    }

    fn calls(turn: &Turn, first_id: u64) -> Vec<Call> {
        let calls = turn.items.iter().filter_map(|item| match item {
            Item::Message(_) => None,
            Item::FunctionCall { name, arguments } => Some((name, arguments.clone())),
            Item::CustomToolCall { name, input } => Some((name, Value::String(input.clone()))),
        });
        (first_id..)
            .zip(calls)
            .map(|(n, (name, arguments))| Call { call_id: format!("call_fake_{n:04}"), name: name.clone(), arguments })
            .collect()
    }

    fn respond(request: &Request, turn: &Turn, seq: usize) -> Response {
        if request.method != "POST" || !request.route().ends_with("/responses") {
            return (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"error": {"message": "fake: no such route", "type": "invalid_request_error"}})),
            )
                .into_response();
        }
        let model = request.body["model"].as_str().unwrap_or("fake");
        sse_response(sse_events(&format!("resp_fake_{seq:04}"), model, turn, &request.answered_calls))
    }
}

/// The fake API (the script, the request log: see [`Fake`]); stops serving
/// when dropped.
pub type FakeOpenAi = Fake<Responses>;

impl Fake<Responses> {
    /// `http://127.0.0.1:PORT/v1`: the provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// Every call output that reached the fake, once each, in order, named
    /// after the fake's call of that id.
    pub fn outputs(&self) -> Vec<Output> {
        let mut outputs = self.first_sent(Request::outputs, |o| &o.call_id);
        let calls = self.calls();
        for output in &mut outputs {
            output.name = calls.iter().find(|c| c.call_id == output.call_id).map(|c| c.name.clone());
        }
        outputs
    }

    /// The outputs of every call of tool `name`.
    pub fn outputs_of(&self, name: &str) -> Vec<Output> {
        self.outputs().into_iter().filter(|o| o.name.as_deref() == Some(name)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Instant;

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
