//! A scripted fake of the Anthropic Messages API on 127.0.0.1, for driving
//! the real Claude Code offline (`ANTHROPIC_BASE_URL`; see [`crate::claude`]).
//!
//! The model's side is a script: a queue of [`Turn`]s, each a list of
//! [`Block`]s (text, or a `tool_use` with a name and an input). Every *main*
//! request — `POST /v1/messages` with `stream: true`, a non-empty `tools`
//! list and a model that is not a small (haiku) one — takes the next step of
//! the script and gets it back as server-sent events, the way the real API
//! streams: `message_start`, per block `content_block_start` /
//! `content_block_delta` (`text_delta`, `input_json_delta`) /
//! `content_block_stop`, then `message_delta` with the `stop_reason`
//! (`tool_use` when the turn calls a tool, else `end_turn`) and
//! `message_stop`. The fake gives every `tool_use` an id of its own
//! (`toolu_fake_0001`, …); Claude Code answers it with a `tool_result` of
//! that id in its next request, which [`FakeAnthropic::tool_results`] reads.
//!
//! Side requests — `count_tokens`, non-streamed requests, haiku requests
//! (titles, summaries), requests without tools — get a short text and never
//! consume the script. A main request that finds the script empty gets an
//! `end_turn` text ([`EXHAUSTED`]) and is counted in
//! [`FakeAnthropic::exhausted`].
//!
//! A step can be dynamic ([`FakeAnthropic::push_with`]): a closure that sees
//! the request it answers (its tool results, the plan file path the system
//! prompt names, …). A step can be conditional
//! ([`FakeAnthropic::push_when`]): it answers only requests it accepts, so a
//! subagent's requests can have a script of their own beside the main
//! agent's.

use crate::scripted::{self, sse_response, Fake, Protocol};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

pub use crate::scripted::Kind;

/// The text a main request gets when the script is empty.
pub const EXHAUSTED: &str = "(fake model: script exhausted)";
/// The text every side request gets.
pub const SIDE_TEXT: &str = "Fake side answer";

/// One content block of a scripted assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    ToolUse { name: String, input: Value },
}

/// One scripted assistant message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub blocks: Vec<Block>,
}

impl Turn {
    /// A turn that only says `text` (and so ends the agent's turn).
    pub fn text(text: impl Into<String>) -> Turn {
        Turn { blocks: vec![Block::Text(text.into())] }
    }

    /// A turn that calls tool `name` with `input`.
    pub fn tool(name: impl Into<String>, input: Value) -> Turn {
        Turn { blocks: vec![Block::ToolUse { name: name.into(), input }] }
    }

    /// This turn, then `text`.
    pub fn and_text(mut self, text: impl Into<String>) -> Turn {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// This turn, then a call of `name` with `input` (parallel tool calls).
    pub fn and_tool(mut self, name: impl Into<String>, input: Value) -> Turn {
        self.blocks.push(Block::ToolUse { name: name.into(), input });
        self
    }

    /// `ToolSearch` loading deferred tools by name (`select:A,B`): how
    /// `ExitPlanMode`, `EnterPlanMode`, `WebFetch`, MCP tools… get into the
    /// tools list.
    pub fn tool_search(names: &[&str]) -> Turn {
        Turn::tool("ToolSearch", json!({"query": format!("select:{}", names.join(",")), "max_results": names.len().max(1)}))
    }

    fn calls_a_tool(&self) -> bool {
        self.blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }))
    }
}

/// A request the fake got; [`Request::header`] and the fields are
/// [`scripted::Request`]'s, the rest below reads the Messages API's body.
pub type Request = scripted::Request<ToolCall>;

/// A `tool_use` block the fake sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// A `tool_result` block Claude Code sent back.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub tool_use_id: String,
    /// The tool's name, when the call was the fake's.
    pub tool_name: Option<String>,
    /// The content as text: a string as is, text blocks joined by newlines,
    /// other blocks as their JSON (`{"type":"tool_reference",…}`).
    pub text: String,
    pub is_error: bool,
    pub raw: Value,
}

impl Request {
    /// `model` of the body.
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or("")
    }

    /// The names in the `tools` list, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"].as_array().map(|t| t.iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()).unwrap_or_default()
    }

    /// The entry of `tools` named `name`.
    pub fn tool(&self, name: &str) -> Option<&Value> {
        self.body["tools"].as_array()?.iter().find(|t| t["name"] == name)
    }

    /// The `system` field's text, blocks joined by newlines.
    pub fn system_text(&self) -> String {
        match &self.body["system"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
            _ => String::new(),
        }
    }

    /// Every string anywhere in the body, joined by newlines: what to search
    /// for text the model was shown (Claude Code also puts system text in
    /// `messages`, as `role: "system"` entries).
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        collect_strings(&self.body, &mut out);
        out
    }

    /// The `messages` array.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"].as_array().map(Vec::as_slice).unwrap_or(&[])
    }

    /// The text of the first user message (the prompt, after Claude Code's
    /// own reminders).
    pub fn first_user_text(&self) -> String {
        let Some(first) = self.messages().iter().find(|m| m["role"] == "user") else { return String::new() };
        content_text(&first["content"])
    }

    /// Every `tool_result` block in the messages, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        let mut out = Vec::new();
        for message in self.messages() {
            if let Some(blocks) = message["content"].as_array() {
                for block in blocks.iter().filter(|b| b["type"] == "tool_result") {
                    out.push(ToolResult {
                        tool_use_id: block["tool_use_id"].as_str().unwrap_or("").to_string(),
                        tool_name: None,
                        text: content_text(&block["content"]),
                        is_error: block["is_error"].as_bool().unwrap_or(false),
                        raw: block.clone(),
                    });
                }
            }
        }
        out
    }

    /// The tool results of the last message (what the previous turn's calls
    /// gave).
    pub fn last_tool_results(&self) -> Vec<ToolResult> {
        let Some(last) = self.messages().iter().rev().find(|m| m["role"] == "user" && m["content"].is_array()) else {
            return Vec::new();
        };
        Request { body: json!({"messages": [last]}), ..self.clone() }.tool_results()
    }

    /// The plan file the plan-mode system prompt names
    /// (`/HOME/.claude/plans/<slug>.md`), if any.
    pub fn plan_file_path(&self) -> Option<String> {
        find_path(&self.all_text(), "/.claude/plans/", ".md")
    }

    /// The deferred tools the system text offers through `ToolSearch`.
    pub fn deferred_tools(&self) -> Vec<String> {
        let text = self.all_text();
        let Some(start) = text.find("The following deferred tools are now available via ToolSearch") else { return Vec::new() };
        text[start..].lines().skip(1).take_while(|l| !l.trim().is_empty()).map(|l| l.trim().to_string()).collect()
    }

    /// Whether this is a request of a subagent (the `Agent` tool): Claude
    /// Code marks them `cc_is_subagent=true` in the billing line that opens
    /// the system prompt (a subagent may have an `Agent` tool too).
    pub fn is_subagent(&self) -> bool {
        self.system_text().lines().next().is_some_and(|l| l.contains("cc_is_subagent=true"))
    }
}

fn collect_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// A content field as text: a string as is, text blocks' text, other blocks
/// as JSON; joined by newlines.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["text"].as_str() {
                Some(t) if b["type"] == "text" => t.to_string(),
                _ => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The first absolute path in `text` containing `infix` and ending at the
/// first `suffix` after it.
fn find_path(text: &str, infix: &str, suffix: &str) -> Option<String> {
    let at = text.find(infix)?;
    let start = text[..at].rfind(|c: char| c.is_whitespace() || "`'\"(<".contains(c)).map(|i| i + 1).unwrap_or(0);
    let end = at + infix.len() + text[at + infix.len()..].find(suffix)? + suffix.len();
    let path = &text[start..end];
    (path.starts_with('/') && !path.contains(char::is_whitespace)).then(|| path.to_string())
}

/// The Anthropic Messages API as a [`Protocol`].
pub enum Messages {}

impl Protocol for Messages {
    type Turn = Turn;
    type Call = ToolCall;
    const NAME: &'static str = "fake Anthropic API";

    fn classify(method: &str, path: &str, body: &Value) -> Kind {
        classify(method, path, body)
    }

    fn unscripted(kind: Kind) -> Turn {
        Turn::text(if kind == Kind::Main { EXHAUSTED } else { SIDE_TEXT })
    }

    fn calls(turn: &Turn, first_id: u64) -> Vec<ToolCall> {
        let uses = turn.blocks.iter().filter_map(|b| match b {
            Block::ToolUse { name, input } => Some((name, input)),
            Block::Text(_) => None,
        });
        (first_id..)
            .zip(uses)
            .map(|(n, (name, input))| ToolCall { id: format!("toolu_fake_{n:04}"), name: name.clone(), input: input.clone() })
            .collect()
    }

    fn respond(request: &Request, turn: &Turn, seq: usize) -> Response {
        let route = request.route();
        if route.ends_with("/count_tokens") {
            return axum::Json(json!({"input_tokens": 1000})).into_response();
        }
        if request.method != "POST" || !route.starts_with("/v1/messages") {
            return (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"type": "error", "error": {"type": "not_found_error", "message": "fake: no such route"}})),
            )
                .into_response();
        }
        let message_id = format!("msg_fake_{seq:04}");
        let model = request.body["model"].as_str().unwrap_or("claude-fake");
        if request.body["stream"] == true {
            sse_response(sse_events(&message_id, model, turn, &request.answered_calls))
        } else {
            axum::Json(message_json(&message_id, model, turn, &request.answered_calls)).into_response()
        }
    }
}

/// The fake API (the script, the request log: see [`Fake`]); stops serving
/// when dropped.
pub type FakeAnthropic = Fake<Messages>;

impl Fake<Messages> {
    /// `http://127.0.0.1:PORT`: the `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> &str {
        self.origin()
    }

    /// Every tool result that reached the fake, once each (the first time it
    /// was sent), in order, named after the fake's call of that id.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        let mut results = self.first_sent(Request::tool_results, |r| &r.tool_use_id);
        let calls = self.calls();
        for result in &mut results {
            result.tool_name = calls.iter().find(|c| c.id == result.tool_use_id).map(|c| c.name.clone());
        }
        results
    }

    /// The result of the fake's call with this id.
    pub fn tool_result(&self, tool_use_id: &str) -> Option<ToolResult> {
        self.tool_results().into_iter().find(|r| r.tool_use_id == tool_use_id)
    }

    /// The results of every call of tool `name`, in order.
    pub fn results_of(&self, name: &str) -> Vec<ToolResult> {
        self.tool_results().into_iter().filter(|r| r.tool_name.as_deref() == Some(name)).collect()
    }
}

fn classify(method: &str, path: &str, body: &Value) -> Kind {
    let route = path.split('?').next().unwrap_or("");
    let tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let small = body["model"].as_str().is_some_and(|m| m.contains("haiku"));
    if method == "POST" && route == "/v1/messages" && body["stream"] == true && tools && !small {
        Kind::Main
    } else {
        Kind::Side
    }
}

fn usage() -> Value {
    json!({"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn stop_reason(turn: &Turn) -> &'static str {
    if turn.calls_a_tool() {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn message_json(id: &str, model: &str, turn: &Turn, calls: &[ToolCall]) -> Value {
    let mut calls = calls.iter();
    let content: Vec<Value> = turn
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::ToolUse { .. } => {
                let call = calls.next().expect("a call per tool_use block");
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
            }
        })
        .collect();
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": stop_reason(turn), "stop_sequence": null, "usage": usage(),
    })
}

/// The turn as the streamed events of the Messages API.
pub fn sse_events(id: &str, model: &str, turn: &Turn, calls: &[ToolCall]) -> Vec<Value> {
    let mut events = vec![json!({
        "type": "message_start",
        "message": {"id": id, "type": "message", "role": "assistant", "model": model, "content": [],
                    "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}},
    })];
    let mut calls = calls.iter();
    for (index, block) in turn.blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
                for part in halves(text) {
                    events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": part}}));
                }
            }
            Block::ToolUse { .. } => {
                let call = calls.next().expect("a call per tool_use block");
                events.push(json!({"type": "content_block_start", "index": index,
                                   "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}));
                for part in halves(&call.input.to_string()) {
                    events.push(
                        json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
                    );
                }
            }
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    );
    events.push(json!({"type": "message_stop"}));
    events
}

/// `text` in two pieces (split on a char boundary), so the client has to
/// join deltas; one piece when it is short.
fn halves(text: &str) -> Vec<&str> {
    if text.len() < 2 {
        return vec![text];
    }
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    vec![&text[..mid], &text[mid..]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Instant;

    fn request(body: Value) -> Request {
        Request {
            method: "POST".into(),
            path: "/v1/messages?beta=true".into(),
            headers: HashMap::new(),
            body,
            kind: Kind::Main,
            at: Instant::now(),
            answered_calls: Vec::new(),
        }
    }

    #[test]
    fn side_requests_are_told_apart() {
        let main = json!({"model": "claude-opus-5-5", "stream": true, "tools": [{"name": "Bash"}]});
        assert_eq!(classify("POST", "/v1/messages?beta=true", &main), Kind::Main);
        assert_eq!(classify("POST", "/v1/messages/count_tokens?beta=true", &main), Kind::Side);
        assert_eq!(
            classify("POST", "/v1/messages", &json!({"model": "claude-haiku-4-5", "stream": true, "tools": [{"name": "Bash"}]})),
            Kind::Side
        );
        assert_eq!(classify("POST", "/v1/messages", &json!({"model": "claude-opus-5-5", "stream": true, "tools": []})), Kind::Side);
        assert_eq!(classify("POST", "/v1/messages", &json!({"model": "claude-opus-5-5", "tools": [{"name": "Bash"}]})), Kind::Side);
    }

    #[test]
    fn the_plan_file_path_is_found_in_the_text() {
        let r = request(json!({"messages": [{"role": "system", "content": [{"type": "text",
            "text": "No plan file exists yet. You should create your plan at /tmp/h/.claude/plans/fix-it-jolly-thimble.md using the Write tool."}]}]}));
        assert_eq!(r.plan_file_path().as_deref(), Some("/tmp/h/.claude/plans/fix-it-jolly-thimble.md"));
        assert_eq!(request(json!({})).plan_file_path(), None);
    }

    #[test]
    fn tool_results_are_read_as_text() {
        let r = request(json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_fake_0001", "content": "done"},
                {"type": "tool_result", "tool_use_id": "toolu_fake_0002", "is_error": true, "content": [{"type": "text", "text": "no"}]},
            ]},
        ]}));
        let results = r.last_tool_results();
        assert_eq!(results.len(), 2);
        assert_eq!((results[0].tool_use_id.as_str(), results[0].text.as_str(), results[0].is_error), ("toolu_fake_0001", "done", false));
        assert_eq!((results[1].text.as_str(), results[1].is_error), ("no", true));
    }

    #[test]
    fn a_tool_turn_streams_its_input_as_json_deltas() {
        let turn = Turn::text("running").and_tool("Bash", json!({"command": "touch x"}));
        let calls = vec![ToolCall { id: "toolu_fake_0001".into(), name: "Bash".into(), input: json!({"command": "touch x"}) }];
        let events = sse_events("msg_1", "m", &turn, &calls);
        let partial: String = events.iter().filter_map(|e| e["delta"]["partial_json"].as_str()).collect();
        assert_eq!(serde_json::from_str::<Value>(&partial).unwrap(), json!({"command": "touch x"}));
        let text: String = events.iter().filter_map(|e| e["delta"]["text"].as_str()).collect();
        assert_eq!(text, "running");
        assert_eq!(events[events.len() - 2]["delta"]["stop_reason"], "tool_use");
        assert_eq!(events.last().unwrap()["type"], "message_stop");
    }
}
