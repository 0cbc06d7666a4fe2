//! Threads in the Discord fake, as Discord keeps them: "Start Thread from
//! Message" (`POST /channels/{channel}/messages/{message}/threads`) makes a
//! thread whose id is the message's (a thread is a channel: messages are
//! posted in it by that id); a message can start one thread only (400,
//! code 160004). A deleted thread answers 404 Unknown Channel (10003). An
//! archived thread is reopened by a message posted in it unless it is
//! locked (400, 160005); an edit in an archived thread is refused (400,
//! 50083); `PATCH /channels/{thread}` with `archived: false` reopens it
//! (the fake's bot has Manage Threads).

use super::{message_json, Inner, Recorded, GUILD_ID};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// One thread the fake holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub id: u64,
    pub parent: u64,
    pub name: String,
    pub archived: bool,
    pub locked: bool,
    pub deleted: bool,
}

fn refuse(status: StatusCode, code: u64, message: &str) -> Response {
    (status, axum::Json(json!({"code": code, "message": message}))).into_response()
}

fn channel_json(t: &Thread) -> Value {
    json!({
        "id": t.id.to_string(), "type": 11, "guild_id": GUILD_ID.to_string(), "parent_id": t.parent.to_string(),
        "name": t.name, "owner_id": super::BOT_USER_ID.to_string(), "message_count": 0, "member_count": 1,
        "thread_metadata": {"archived": t.archived, "auto_archive_duration": 10080, "locked": t.locked,
                            "archive_timestamp": "2026-01-01T00:00:00.000000+00:00"}
    })
}

/// The fake's answer when the request is about a thread; `None` otherwise
/// (the default answers then).
pub(super) fn answer(inner: &Inner, r: &Recorded) -> Option<Response> {
    let segments: Vec<&str> = r.path.trim_start_matches("/api/v10/").split('/').collect();
    let mut threads = inner.threads.lock().unwrap();
    let id = |text: &str| text.parse::<u64>().unwrap_or(0);
    match (r.method.as_str(), segments.as_slice()) {
        ("POST", ["channels", channel, "messages", message, "threads"]) => {
            if threads.iter().any(|t| t.id == id(message)) {
                return Some(refuse(StatusCode::BAD_REQUEST, 160_004, "A thread has already been created for this message"));
            }
            let name = r.json().and_then(|j| j["name"].as_str().map(str::to_string)).unwrap_or_default();
            let thread = Thread { id: id(message), parent: id(channel), name, archived: false, locked: false, deleted: false };
            let body = channel_json(&thread);
            threads.push(thread);
            Some((StatusCode::CREATED, axum::Json(body)).into_response())
        }
        (method, ["channels", channel, rest @ ..]) => {
            let thread = threads.iter_mut().find(|t| t.id == id(channel))?;
            if thread.deleted {
                return Some(refuse(StatusCode::NOT_FOUND, 10_003, "Unknown Channel"));
            }
            match (method, rest) {
                ("POST", ["messages"]) if thread.archived && thread.locked => {
                    Some(refuse(StatusCode::BAD_REQUEST, 160_005, "Thread is locked"))
                }
                ("POST", ["messages"]) => {
                    thread.archived = false;
                    let content = r.json().and_then(|j| j["content"].as_str().map(str::to_string)).unwrap_or_default();
                    Some((StatusCode::OK, axum::Json(message_json(inner.snowflake(), thread.id, &content))).into_response())
                }
                ("PATCH", ["messages", _]) if thread.archived => Some(refuse(StatusCode::BAD_REQUEST, 50_083, "Thread is archived")),
                ("PATCH", []) => {
                    if let Some(archived) = r.json().and_then(|j| j["archived"].as_bool()) {
                        thread.archived = archived;
                    }
                    Some((StatusCode::OK, axum::Json(channel_json(thread))).into_response())
                }
                ("GET", []) => Some((StatusCode::OK, axum::Json(channel_json(thread))).into_response()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// How long the fake takes to start a thread ([`super::DiscordFake::slow_threads`]),
/// when `r` starts one.
pub(super) fn delay(inner: &Inner, r: &Recorded) -> Option<std::time::Duration> {
    let starts = r.method == "POST" && r.path.ends_with("/threads");
    starts.then(|| *inner.thread_delay.lock().unwrap()).filter(|d| !d.is_zero())
}

impl super::DiscordFake {
    /// From now on, take `delay` to answer each "Start Thread from Message"
    /// (a slow platform, so that racing replicas overlap).
    pub fn slow_threads(&self, delay: std::time::Duration) {
        *self.inner.thread_delay.lock().unwrap() = delay;
    }

    /// The threads started so far (deleted ones included, marked).
    pub fn threads(&self) -> Vec<Thread> {
        self.inner.threads.lock().unwrap().clone()
    }

    /// Delete thread `id`, as a moderator would: Discord then answers
    /// 10003 Unknown Channel for it.
    pub fn delete_thread(&self, id: u64) {
        self.inner.threads.lock().unwrap().iter_mut().filter(|t| t.id == id).for_each(|t| t.deleted = true);
    }

    /// Archive thread `id` (and lock it with `locked`), as Discord does after
    /// its inactivity or a moderator.
    pub fn archive_thread(&self, id: u64, locked: bool) {
        self.inner.threads.lock().unwrap().iter_mut().filter(|t| t.id == id).for_each(|t| (t.archived, t.locked) = (true, locked));
    }
}

/// `interaction` (built for a channel) as if it happened inside thread
/// `thread` of that channel: `channel_id` is the thread, and the `channel`
/// object says so with Discord's type and `parent_id`.
pub fn in_thread(mut interaction: Value, thread: u64) -> Value {
    let parent = interaction["channel_id"].clone();
    interaction["channel_id"] = json!(thread.to_string());
    interaction["channel"] = json!({"id": thread.to_string(), "type": 11, "parent_id": parent, "name": "thread"});
    interaction
}
