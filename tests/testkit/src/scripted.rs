//! The machinery the scripted model fakes ([`crate::fake_anthropic`],
//! [`crate::fake_openai`]) share, so that each of them is only its protocol.
//!
//! A [`Fake`] serves one [`Protocol`] on 127.0.0.1 and keeps:
//!
//! * the script: a queue of steps, each making a turn (fixed, or from the
//!   request it answers) and optionally accepting only some requests. A
//!   *main* request (the protocol's [`Protocol::classify`] says which) takes
//!   the first step that accepts it; a side request never consumes the
//!   script, and a main request that finds no step is counted as exhausted;
//! * the log of every request, with the tool calls the fake answered a main
//!   one with, numbered across the whole run (`…_fake_0001`, …) so that the
//!   client's results can be matched to the fake's calls;
//! * a change counter, which [`Fake::wait_for`] waits on instead of polling.
//!
//! The protocol says what is specific to its API: which requests are main,
//! what a turn's calls are, and how a turn is sent back (its SSE events).
//! Its public names stay its own: `FakeAnthropic` is `Fake<Messages>`, whose
//! protocol-specific accessors (`tool_results`, `plan_file_path`, …) are
//! inherent methods of `Fake<Messages>` and `Request<ToolCall>` written next
//! to the protocol.

use axum::extract::{Request as HttpRequest, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The largest request body read; a client's history can be large.
const MAX_BODY: usize = 256 * 1024 * 1024;

/// What one model API is to its fake.
pub trait Protocol: Send + Sync + 'static {
    /// One scripted answer.
    type Turn: Send + 'static;
    /// A tool call the fake sent, with the id it was given.
    type Call: Clone + Send + Sync + 'static;
    /// How panics name the fake (`fake Anthropic API`).
    const NAME: &'static str;

    /// Whether a request is answered from the script.
    fn classify(method: &str, path: &str, body: &Value) -> Kind;
    /// The answer to a request no step answers: a main one on an exhausted
    /// script, or a side one.
    fn unscripted(kind: Kind) -> Self::Turn;
    /// The calls `turn` makes, numbered from `first_id` on.
    fn calls(turn: &Self::Turn, first_id: u64) -> Vec<Self::Call>;
    /// The HTTP answer: `turn` (with its numbered calls in
    /// `request.answered_calls`) as the API would send it; `seq` is the
    /// request's place in the log (for a message id).
    fn respond(request: &Request<Self::Call>, turn: &Self::Turn, seq: usize) -> Response;
}

/// What kind of request it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Answered from the script.
    Main,
    /// Answered with a short fixed text (or what the route wants, such as a
    /// token count); never consumes the script.
    Side,
}

/// A request a fake got.
#[derive(Debug, Clone)]
pub struct Request<Call> {
    pub method: String,
    /// With the query: `/v1/messages?beta=true`.
    pub path: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Value,
    pub kind: Kind,
    pub at: Instant,
    /// For main requests: the tool calls the fake answered it with.
    pub answered_calls: Vec<Call>,
}

impl<Call> Request<Call> {
    /// A header's value, `""` when absent; `name` in any case.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str).unwrap_or("")
    }

    /// The path without the query.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }
}

type Make<P> = Box<dyn FnOnce(&Request<<P as Protocol>::Call>) -> <P as Protocol>::Turn + Send>;
type Accept<P> = Box<dyn Fn(&Request<<P as Protocol>::Call>) -> bool + Send>;

struct Step<P: Protocol> {
    accept: Option<Accept<P>>,
    make: Make<P>,
}

struct Inner<P: Protocol> {
    script: VecDeque<Step<P>>,
    requests: Vec<Request<P::Call>>,
    calls: Vec<P::Call>,
    next_id: u64,
    exhausted: usize,
}

struct Shared<P: Protocol> {
    inner: Mutex<Inner<P>>,
    changed: watch::Sender<u64>,
}

impl<P: Protocol> Shared<P> {
    fn lock(&self) -> MutexGuard<'_, Inner<P>> {
        // A panicking dynamic step must not take every later request down.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A scripted fake of one model API; stops serving when dropped.
pub struct Fake<P: Protocol> {
    origin: String,
    shared: Arc<Shared<P>>,
    server: JoinHandle<()>,
}

impl<P: Protocol> Drop for Fake<P> {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl<P: Protocol> Fake<P> {
    /// Bind 127.0.0.1:0 and serve.
    pub async fn start() -> Fake<P> {
        let inner = Inner { script: VecDeque::new(), requests: Vec::new(), calls: Vec::new(), next_id: 0, exhausted: 0 };
        let shared = Arc::new(Shared { inner: Mutex::new(inner), changed: watch::channel(0).0 });
        let app = Router::new().fallback(receive::<P>).with_state(shared.clone());
        let (origin, server) = serve(app, P::NAME).await;
        Fake { origin, shared, server }
    }

    /// `http://127.0.0.1:PORT`, without a path.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Append fixed turns to the script.
    pub fn push(&self, turns: impl IntoIterator<Item = P::Turn>) {
        let mut inner = self.shared.lock();
        for turn in turns {
            inner.script.push_back(Step { accept: None, make: Box::new(move |_| turn) });
        }
    }

    /// Append a step that makes its turn from the request it answers.
    pub fn push_with(&self, make: impl FnOnce(&Request<P::Call>) -> P::Turn + Send + 'static) {
        self.shared.lock().script.push_back(Step { accept: None, make: Box::new(make) });
    }

    /// Append a step that answers only a request `accept` accepts; a request
    /// takes the first step in the script that accepts it (a step without a
    /// condition accepts every request). So a subagent's requests can have a
    /// script of their own beside the main agent's.
    pub fn push_when(
        &self,
        accept: impl Fn(&Request<P::Call>) -> bool + Send + 'static,
        make: impl FnOnce(&Request<P::Call>) -> P::Turn + Send + 'static,
    ) {
        self.shared.lock().script.push_back(Step { accept: Some(Box::new(accept)), make: Box::new(make) });
    }

    /// How many steps are left.
    pub fn pending(&self) -> usize {
        self.shared.lock().script.len()
    }

    /// How many main requests found no step for them.
    pub fn exhausted(&self) -> usize {
        self.shared.lock().exhausted
    }

    /// Every request, side ones included, in arrival order.
    pub fn all_requests(&self) -> Vec<Request<P::Call>> {
        self.shared.lock().requests.clone()
    }

    /// The main requests, in arrival order.
    pub fn requests(&self) -> Vec<Request<P::Call>> {
        self.shared.lock().requests.iter().filter(|r| r.kind == Kind::Main).cloned().collect()
    }

    /// The last main request.
    pub fn last_request(&self) -> Option<Request<P::Call>> {
        self.requests().pop()
    }

    /// Every tool call the fake sent, in order.
    pub fn calls(&self) -> Vec<P::Call> {
        self.shared.lock().calls.clone()
    }

    /// What `read` finds in the main requests, each id once (the first time
    /// it was sent: a client sends its whole history again every turn), in
    /// order. For reading the tool results back.
    pub fn first_sent<T>(&self, read: impl Fn(&Request<P::Call>) -> Vec<T>, id: impl Fn(&T) -> &str) -> Vec<T> {
        let inner = self.shared.lock();
        let mut seen = HashSet::new();
        inner.requests.iter().filter(|r| r.kind == Kind::Main).flat_map(read).filter(|t| seen.insert(id(t).to_string())).collect()
    }

    /// Wait until `check` finds what it looks for in the requests so far
    /// (all of them, side ones included).
    pub async fn wait_for<T>(&self, within: Duration, what: &str, mut check: impl FnMut(&[Request<P::Call>]) -> Option<T>) -> T {
        let mut changed = self.shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(found) = check(&self.all_requests()) {
                return found;
            }
            if tokio::time::timeout_at(deadline, changed.changed()).await.is_err() {
                panic!("{}: still not true after {within:?}: {what}; {} requests", P::NAME, self.all_requests().len());
            }
        }
    }
}

/// Bind 127.0.0.1:0 and serve `app` on it until the handle is aborted;
/// returns `http://127.0.0.1:PORT` and the handle. `what` names the server
/// in a failure to bind.
pub async fn serve(app: Router, what: &str) -> (String, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind {what}: {e}"));
    let origin = format!("http://{}", listener.local_addr().expect("local addr"));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (origin, server)
}

async fn receive<P: Protocol>(State(shared): State<Arc<Shared<P>>>, request: HttpRequest) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let method = parts.method.to_string();
    let kind = P::classify(&method, &path, &body);
    let mut request =
        Request { method, path, headers: headers(&parts.headers), body, kind, at: Instant::now(), answered_calls: Vec::new() };
    // Take the step under the lock, make its turn without it (a dynamic
    // step may look at the fake), then number the calls and record.
    let step = if kind == Kind::Main {
        let mut inner = shared.lock();
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
        None => P::unscripted(kind),
    };
    let seq = {
        let mut inner = shared.lock();
        let seq = inner.requests.len();
        let calls = P::calls(&turn, inner.next_id + 1);
        inner.next_id += calls.len() as u64;
        inner.calls.extend(calls.iter().cloned());
        request.answered_calls = calls;
        inner.requests.push(request.clone());
        seq
    };
    shared.changed.send_modify(|n| *n += 1);
    P::respond(&request, &turn, seq)
}

fn headers(map: &HeaderMap) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}

/// `events` as a `text/event-stream` body, each event named after its
/// `type`, the way both APIs stream.
pub fn sse_response(events: impl IntoIterator<Item = Value>) -> Response {
    let mut body = String::new();
    for event in events {
        body.push_str(&format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or("")));
    }
    ([("content-type", "text/event-stream"), ("cache-control", "no-cache")], body).into_response()
}
