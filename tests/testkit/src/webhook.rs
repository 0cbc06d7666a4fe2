//! A webhook receiver on 127.0.0.1, for plangate's signed webhooks; also
//! the fake of the on-call schedules plangate reads (an iCalendar feed,
//! PagerDuty's and Opsgenie's APIs: [`Reply::Body`], the query recorded).
//!
//! It records every request (path, headers, body, and the status it answered
//! with, if it answered) and answers from a per-path script: a status (with
//! headers, e.g. `Retry-After` or `Location`), or never (the request hangs
//! until the sender gives up or dies). Unscripted requests get 200.
//! Verifying signatures is left to the tests, which recompute them
//! independently of plangate's code.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// This status and these headers, empty body.
    Status(u16, Vec<(String, String)>),
    /// Never answer.
    Hang,
    /// This status with a body of this content type.
    Body(u16, String, String),
}

impl Reply {
    pub fn status(code: u16) -> Reply {
        Reply::Status(code, Vec::new())
    }

    /// 200 with `body` as `content_type`.
    pub fn body(content_type: &str, body: impl Into<String>) -> Reply {
        Reply::Body(200, content_type.to_string(), body.into())
    }
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// The query string (without `?`), as sent.
    pub query: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: String,
    pub at: Instant,
    /// The status it answered with; `None` while (or because) it hung.
    pub answered: Option<u16>,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str).unwrap_or("")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    pub fn delivered(&self) -> bool {
        self.answered.is_some_and(|s| (200..300).contains(&s))
    }
}

#[derive(Default)]
struct Inner {
    script: HashMap<String, VecDeque<Reply>>,
    received: Vec<Received>,
}

struct Shared {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

/// The receiver; stops serving when dropped.
pub struct FakeReceiver {
    base: String,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl Drop for FakeReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeReceiver {
    /// Bind 127.0.0.1:0 and serve every path.
    pub async fn start() -> FakeReceiver {
        let shared = Arc::new(Shared { inner: Mutex::new(Inner::default()), changed: watch::channel(0).0 });
        let app = Router::new().fallback(receive).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake receiver");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeReceiver { base, shared, server }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Answer the next requests to `path` with `replies`, in order.
    pub fn script(&self, path: &str, replies: impl IntoIterator<Item = Reply>) {
        self.lock().script.entry(path.to_string()).or_default().extend(replies);
    }

    /// Every request so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// The requests to `path`.
    pub fn received_at(&self, path: &str) -> Vec<Received> {
        self.received().into_iter().filter(|r| r.path == path).collect()
    }

    /// Wait until `check` finds what it looks for in the requests so far.
    pub async fn wait_for<T>(&self, within: Duration, what: &str, mut check: impl FnMut(&[Received]) -> Option<T>) -> T {
        let failure = || format!("webhook receiver: still not true after {within:?}: {what}; got {:#?}", self.received());
        crate::wait::until(&self.shared.changed, within, || check(&self.received()), failure).await
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn receive(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 4 * 1024 * 1024).await.unwrap_or_default();
    let path = parts.uri.path().to_string();
    let (index, reply) = {
        let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
        let reply = inner.script.get_mut(&path).and_then(VecDeque::pop_front).unwrap_or(Reply::status(200));
        inner.received.push(Received {
            method: parts.method.to_string(),
            path,
            query: parts.uri.query().unwrap_or("").to_string(),
            headers: headers(&parts.headers),
            body: String::from_utf8_lossy(&body).into_owned(),
            at: Instant::now(),
            answered: None,
        });
        (inner.received.len() - 1, reply)
    };
    shared.changed.send_modify(|n| *n += 1);
    match reply {
        Reply::Hang => std::future::pending().await,
        Reply::Body(code, content_type, body) => {
            shared.inner.lock().unwrap_or_else(|e| e.into_inner()).received[index].answered = Some(code);
            shared.changed.send_modify(|n| *n += 1);
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, [(axum::http::header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Reply::Status(code, extra) => {
            shared.inner.lock().unwrap_or_else(|e| e.into_inner()).received[index].answered = Some(code);
            shared.changed.send_modify(|n| *n += 1);
            let mut response = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR).into_response();
            for (name, value) in extra {
                if let (Ok(name), Ok(value)) = (name.parse::<axum::http::HeaderName>(), value.parse()) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
    }
}

fn headers(map: &HeaderMap) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}
