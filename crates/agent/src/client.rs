//! A typed client of plangate's agent API (API.md).
//!
//! Answers come back as the engine's own view types, so an integration sees
//! exactly what the HTTP API returns. Every request has a connect and a total
//! timeout: a hook must answer its harness in time even when the server
//! hangs, and a long-poll's timeout is its `wait` plus the usual margin.

use crate::plain_http::PlainHttp;
use crate::proposal::ProposalBody;
use crate::session;
use plangate_engine::namespace::NamespaceStep;
use plangate_engine::view::{DecisionView, StatusView};
use plangate_engine::{Harness, QuestionStatus, Step, StepUpdate};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::Duration;
use thiserror::Error;

/// Where `plangate serve` listens unless `PLANGATE_URL` says otherwise.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8787";
/// The longest `wait` the server holds one request (API.md).
pub use plangate_basics::wait::MAX_WAIT;

/// Why a call to plangate failed. The messages tell a person what to do next.
#[derive(Debug, Error)]
pub enum AgentError {
    #[error("cannot reach plangate at {url} ({reason}); is `plangate serve` running there?")]
    Unreachable { url: String, reason: String },
    #[error("plangate at {url} did not answer within {secs} s")]
    Timeout { url: String, secs: u64 },
    /// The server refused the call: `code` is API.md's error code.
    #[error("{code} ({status}): {message}")]
    Api { status: u16, code: String, message: String, details: Value },
    #[error("plangate answered {status} with a body this client does not understand: {reason}")]
    Protocol { status: u16, reason: String },
    /// The caller's own input or environment is wrong (no token, a bad id…).
    #[error("{0}")]
    Usage(String),
}

impl AgentError {
    /// The API error code, when the server refused the call.
    pub fn code(&self) -> Option<&str> {
        match self {
            AgentError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Connect and per-request timeouts.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub request: Duration,
}

impl Timeouts {
    /// For people at a terminal: patient.
    pub const CLI: Timeouts = Timeouts { connect: Duration::from_secs(5), request: Duration::from_secs(30) };
    /// For a harness hook that must answer within a couple of seconds.
    pub const HOOK: Timeouts = Timeouts { connect: Duration::from_millis(500), request: Duration::from_millis(1500) };
    /// For a long-running tool server.
    pub const SERVER: Timeouts = Timeouts { connect: Duration::from_secs(2), request: Duration::from_secs(10) };
}

/// A step-list update (`POST /v1/sessions/{id}/steps`). With `merge`, each
/// entry patches the step with the same text: only the fields it carries.
#[derive(Debug, Clone, Serialize)]
pub struct StepsUpdate {
    pub steps: Vec<StepUpdate>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub merge: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// A step namespace (`GET /v1/namespaces/{name}`): shared by the agent's
/// sessions, and by other agents when `[namespaces.<name>]` names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceView {
    pub name: String,
    /// Whether other agents share it (set on merges).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    pub steps: Vec<NamespaceStep>,
}

/// A question for the human (`POST /v1/sessions/{id}/questions`).
#[derive(Debug, Clone, Serialize)]
pub struct QuestionBody {
    pub question: String,
    pub options: Vec<String>,
    pub allow_freetext: bool,
}

/// A question's state (`GET /v1/sessions/{id}/questions/{qid}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    pub status: QuestionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

/// What `POST …/proposals` answers: the Decision plus where the plan was written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Proposed {
    #[serde(flatten)]
    pub decision: DecisionView,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateDecision {
    Allow,
    Deny,
    /// Not without a person: a configured `ask` rule caught the call, so
    /// the harness must show its permission dialog (which plangate relays)
    /// or, where it has none a hook can call up, refuse.
    Ask,
}

/// The mutation gate's verdict on one tool call (`POST /v1/gate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateAnswer {
    pub decision: GateDecision,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    token: Option<String>,
    /// For an `http://` base: hyper-util's client, no TLS built
    /// ([`crate::plain_http`]). `None` for `https://`.
    plain: Option<PlainHttp>,
    /// reqwest's client: built at once for `https://`; for `http://` only
    /// if a request needs it (a redirect, a path hyper's URI refuses).
    http: OnceLock<reqwest::Client>,
    timeouts: Timeouts,
    /// Who asked for the work, sent with every proposal as `requested_by`
    /// (from `PLANGATE_REQUESTED_BY`); the server prefers the agent's token
    /// config and refuses a body that contradicts it.
    requested_by: Option<String>,
    /// Which harness this client speaks for, sent with gate calls and
    /// proposals so the texts the model reads name its own tools
    /// ([`plangate_engine::Harness`]); [`Harness::Api`] sends nothing.
    harness: Harness,
    /// The working directory whose project ([`crate::project`]) proposals
    /// carry: the hook input's `cwd`, else the process's own. Read when a
    /// proposal is sent, not before (gate calls never need it).
    project_dir: Option<std::path::PathBuf>,
}

/// The environment variable naming who asked for the work (`slack:U0123`).
pub const REQUESTED_BY_ENV: &str = "PLANGATE_REQUESTED_BY";

/// What plangate answers a stop ([`Client::stop`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The approved plan has open steps: the instruction to go on.
    Continue(String),
    /// Nothing holds the agent.
    Stop,
    /// Plan `version` awaits people's decision.
    AwaitDecision { version: u64 },
}

impl Client {
    /// A client with the CLI's timeouts.
    pub fn new(base: &str, token: Option<String>) -> Result<Client, AgentError> {
        Client::with_timeouts(base, token, Timeouts::CLI)
    }

    pub fn with_timeouts(base: &str, token: Option<String>, timeouts: Timeouts) -> Result<Client, AgentError> {
        let base = base.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(AgentError::Usage(format!("PLANGATE_URL must be an http:// or https:// URL, got {base:?}")));
        }
        let (plain, http) = if base.starts_with("http://") {
            (Some(PlainHttp::new(timeouts.connect)), OnceLock::new())
        } else {
            (None, OnceLock::from(reqwest_client(timeouts)?))
        };
        let requested_by = std::env::var(REQUESTED_BY_ENV).ok().map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
        Ok(Client { base, token, plain, http, timeouts, requested_by, harness: Harness::Api, project_dir: None })
    }

    /// reqwest's client, built now if it was not yet.
    fn reqwest(&self) -> Result<&reqwest::Client, AgentError> {
        if let Some(http) = self.http.get() {
            return Ok(http);
        }
        let built = reqwest_client(self.timeouts)?;
        Ok(self.http.get_or_init(|| built))
    }

    /// An agent client from `PLANGATE_URL` (default [`DEFAULT_URL`]) and
    /// `PLANGATE_TOKEN` (required).
    pub fn from_env(timeouts: Timeouts) -> Result<Client, AgentError> {
        let base = std::env::var("PLANGATE_URL").ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| DEFAULT_URL.to_string());
        let token = std::env::var("PLANGATE_TOKEN").ok().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
            AgentError::Usage(
                "PLANGATE_TOKEN is not set: export the agent's token from the plangate config (the value of PLANGATE__AGENTS__<ID>__TOKEN the server runs with; exported alone, that one is read too)".to_string(),
            )
        })?;
        Client::with_timeouts(&base, Some(token), timeouts)
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Send a request and return `(status, JSON body or Null)`.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<(u16, Value), AgentError> {
        self.call_within(method, path, body, self.timeouts.request).await
    }

    async fn call_within(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        timeout: Duration,
    ) -> Result<(u16, Value), AgentError> {
        self.send_within(method, path, body, timeout).await.map(|(status, _, value)| (status, value))
    }

    /// A GET of one page of a paged listing (`GET /v1/approvals`): the
    /// body, and the path of the next page from the answer's `Link: <path>;
    /// rel="next"` (`None` on the last page). An API error is
    /// [`AgentError::Api`], as with [`Client::ok`].
    pub async fn page(&self, path: &str) -> Result<(Value, Option<String>), AgentError> {
        let (status, headers, value) = self.send_within(reqwest::Method::GET, path, None, self.timeouts.request).await?;
        if !(200..300).contains(&status) {
            return Err(api_error(status, &value));
        }
        let next = headers.get_all(reqwest::header::LINK).iter().filter_map(|v| v.to_str().ok()).find_map(next_link);
        Ok((value, next))
    }

    async fn send_within(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        timeout: Duration,
    ) -> Result<(u16, reqwest::header::HeaderMap, Value), AgentError> {
        let url = format!("{}{}", self.base, path);
        if let (Some(plain), Ok(uri)) = (&self.plain, hyper::Uri::try_from(&url)) {
            let deadline = tokio::time::Instant::now() + timeout;
            let bytes = body.as_ref().map(serde_json::to_vec).transpose().map_err(|e| AgentError::Usage(e.to_string()))?;
            let answer = match tokio::time::timeout(timeout, plain.send(method.clone(), uri, &url, self.token.as_deref(), bytes)).await {
                Err(_) => return Err(self.timeout_error(timeout)),
                Ok(Err(e)) if crate::plain_http::is_timeout(&e) => return Err(self.timeout_error(timeout)),
                Ok(Err(e)) => return Err(AgentError::Unreachable { url: self.base.clone(), reason: plangate_basics::errors::chain(&e) }),
                Ok(Ok(answer)) => answer,
            };
            // reqwest follows redirects; so does this client, by handing
            // the request to it (which asks again and follows).
            if !crate::plain_http::is_redirect(&answer) {
                return Ok((answer.status, answer.headers, serde_json::from_str(&answer.text).unwrap_or(Value::Null)));
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            return self.send_reqwest(method, url, body, left, timeout).await;
        }
        self.send_reqwest(method, url, body, timeout, timeout).await
    }

    /// [`Client::send_within`] through reqwest, within `left` of the
    /// request's `timeout`.
    async fn send_reqwest(
        &self,
        method: reqwest::Method,
        url: String,
        body: Option<Value>,
        left: Duration,
        timeout: Duration,
    ) -> Result<(u16, reqwest::header::HeaderMap, Value), AgentError> {
        let mut req = self.reqwest()?.request(method, url).timeout(left);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.map_err(|e| self.transport_error(e, timeout))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.map_err(|e| self.transport_error(e, timeout))?;
        Ok((status, headers, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    fn transport_error(&self, e: reqwest::Error, timeout: Duration) -> AgentError {
        if e.is_timeout() {
            return self.timeout_error(timeout);
        }
        AgentError::Unreachable { url: self.base.clone(), reason: plangate_basics::errors::chain(&e) }
    }

    fn timeout_error(&self, timeout: Duration) -> AgentError {
        AgentError::Timeout { url: self.base.clone(), secs: timeout.as_secs_f64().ceil() as u64 }
    }

    /// Call and turn an API error (non-2xx) into [`AgentError::Api`].
    pub async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, AgentError> {
        self.ok_within(method, path, body, self.timeouts.request).await
    }

    async fn ok_within(&self, method: reqwest::Method, path: &str, body: Option<Value>, timeout: Duration) -> Result<Value, AgentError> {
        let (status, value) = self.call_within(method, path, body, timeout).await?;
        if (200..300).contains(&status) {
            return Ok(value);
        }
        Err(api_error(status, &value))
    }

    async fn typed<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        timeout: Duration,
    ) -> Result<T, AgentError> {
        let value = self.ok_within(method, path, body, timeout).await?;
        serde_json::from_value(value).map_err(|e| AgentError::Protocol { status: 200, reason: e.to_string() })
    }

    /// A long-poll GET that survives a server restart: a graceful shutdown
    /// answers every waiting long-poll `503 shutting_down`, and the request
    /// is sent again (also while the restarting server refuses connections)
    /// until the wait is over. Any other failure is returned as it is.
    async fn long_poll<T: DeserializeOwned>(&self, path: &str, wait: Duration) -> Result<T, AgentError> {
        let deadline = tokio::time::Instant::now() + wait + self.timeouts.request;
        let (mut pause, mut restarting) = (Duration::from_millis(100), false);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.typed(reqwest::Method::GET, path, None, left).await {
                Err(AgentError::Api { code, .. }) if code == "shutting_down" => restarting = true,
                Err(AgentError::Unreachable { .. }) if restarting => {}
                other => return other,
            }
            if tokio::time::Instant::now() + pause >= deadline {
                return Err(AgentError::Unreachable { url: self.base.clone(), reason: "plangate restarted and is not back yet".into() });
            }
            tokio::time::sleep(pause).await;
            pause = plangate_basics::backoff::doubled(pause, Duration::from_secs(2));
        }
    }

    fn session_path(session_id: &str, rest: &str) -> Result<String, AgentError> {
        if !session::is_valid(session_id) {
            return Err(AgentError::Usage(format!("session_id {session_id:?} is invalid: use 1–128 characters of A-Z a-z 0-9 . _ : -")));
        }
        Ok(format!("/v1/sessions/{session_id}{rest}"))
    }

    fn wait_query(wait: Duration) -> (u64, Duration) {
        let secs = wait.min(MAX_WAIT).as_secs();
        (secs, Duration::from_secs(secs))
    }

    pub async fn status(&self, session_id: &str) -> Result<StatusView, AgentError> {
        let path = Self::session_path(session_id, "")?;
        self.typed(reqwest::Method::GET, &path, None, self.timeouts.request).await
    }

    /// Enter plan mode (a no-op when already in it).
    pub async fn enter(&self, session_id: &str, reason: Option<&str>) -> Result<StatusView, AgentError> {
        let path = Self::session_path(session_id, "/enter")?;
        let body = match reason {
            Some(r) => json!({"reason": r}),
            None => json!({}),
        };
        self.typed(reqwest::Method::POST, &path, Some(body), self.timeouts.request).await
    }

    /// [`Client::enter`], with the plan-mode brief (`instructions`) the
    /// answer carries besides the session's status.
    pub async fn enter_briefed(&self, session_id: &str, reason: Option<&str>) -> Result<Value, AgentError> {
        let path = Self::session_path(session_id, "/enter")?;
        let body = match reason {
            Some(r) => json!({"reason": r}),
            None => json!({}),
        };
        self.ok(reqwest::Method::POST, &path, Some(body)).await
    }

    /// `GET /v1/sessions/{id}/brief`: the plan-mode brief in this client's
    /// harness's terms.
    pub async fn brief(&self, session_id: &str) -> Result<String, AgentError> {
        let harness = json!(self.harness);
        let path = Self::session_path(session_id, &format!("/brief?harness={}", harness.as_str().unwrap_or("api")))?;
        let answer = self.ok(reqwest::Method::GET, &path, None).await?;
        Ok(answer["instructions"].as_str().unwrap_or_default().to_string())
    }

    pub async fn update_steps(&self, session_id: &str, update: &StepsUpdate) -> Result<Vec<Step>, AgentError> {
        #[derive(Deserialize)]
        struct Steps {
            steps: Vec<Step>,
        }
        let path = Self::session_path(session_id, "/steps")?;
        let body = serde_json::to_value(update).map_err(|e| AgentError::Usage(e.to_string()))?;
        let steps: Steps = self.typed(reqwest::Method::POST, &path, Some(body), self.timeouts.request).await?;
        Ok(steps.steps)
    }

    /// Propose a plan. Outside plan mode the server refuses (`invalid_state`);
    /// [`crate::proposal::submit`] enters first.
    pub async fn propose(&self, session_id: &str, body: &ProposalBody) -> Result<Proposed, AgentError> {
        let path = Self::session_path(session_id, "/proposals")?;
        let mut body = serde_json::to_value(body).map_err(|e| AgentError::Usage(e.to_string()))?;
        if let (Some(requester), Some(fields)) = (&self.requested_by, body.as_object_mut()) {
            fields.insert("requested_by".to_string(), serde_json::Value::String(requester.clone()));
        }
        if let (Harness::ClaudeCode | Harness::Codex, Some(fields)) = (self.harness, body.as_object_mut()) {
            fields.insert("harness".to_string(), json!(self.harness));
        }
        let dir = self.project_dir.clone().or_else(|| std::env::current_dir().ok());
        if let (Some(project), Some(fields)) = (dir.as_deref().and_then(crate::project::detect), body.as_object_mut()) {
            fields.insert("project".to_string(), json!(project));
        }
        self.typed(reqwest::Method::POST, &path, Some(body), self.timeouts.request).await
    }

    /// Speak for `harness` (see the field).
    pub fn for_harness(mut self, harness: Harness) -> Client {
        self.harness = harness;
        self
    }

    /// Tell proposals the project of `dir` (a hook's `cwd`) rather than of
    /// the process's working directory.
    pub fn in_dir(mut self, dir: Option<&std::path::Path>) -> Client {
        self.project_dir = dir.filter(|d| d.is_absolute()).map(std::path::Path::to_path_buf);
        self
    }

    /// Send `requested_by` with proposals (instead of [`REQUESTED_BY_ENV`]).
    pub fn with_requested_by(mut self, requested_by: Option<String>) -> Client {
        self.requested_by = requested_by;
        self
    }

    /// The latest proposal's Decision, holding up to `wait` (at most 300 s)
    /// while it is pending. `None` when the session has no proposal.
    pub async fn decision(&self, session_id: &str, wait: Duration) -> Result<Option<DecisionView>, AgentError> {
        let (secs, wait) = Self::wait_query(wait);
        let path = Self::session_path(session_id, &format!("/decision?wait={secs}"))?;
        match self.long_poll(&path, wait).await {
            Ok(d) => Ok(Some(d)),
            Err(AgentError::Api { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Long-poll until the latest proposal is decided or `total` has passed,
    /// in requests of at most 300 s. `None` when there is no proposal.
    pub async fn wait_decision(&self, session_id: &str, total: Duration) -> Result<Option<DecisionView>, AgentError> {
        let deadline = tokio::time::Instant::now() + total;
        loop {
            // Whole seconds, rounded up: the server's `wait` is in seconds.
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let secs = left.as_millis().div_ceil(1000) as u64;
            let decision = self.decision(session_id, Duration::from_secs(secs)).await?;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match decision {
                Some(d) if !d.is_final() && left > Duration::from_millis(100) => continue,
                other => return Ok(other),
            }
        }
    }

    /// Ask the human a question; returns its id.
    pub async fn ask(&self, session_id: &str, question: &QuestionBody) -> Result<String, AgentError> {
        #[derive(Deserialize)]
        struct Asked {
            question_id: String,
        }
        let path = Self::session_path(session_id, "/questions")?;
        let body = serde_json::to_value(question).map_err(|e| AgentError::Usage(e.to_string()))?;
        let asked: Asked = self.typed(reqwest::Method::POST, &path, Some(body), self.timeouts.request).await?;
        Ok(asked.question_id)
    }

    /// A question's state, holding up to `wait` while it is unanswered.
    pub async fn question(&self, session_id: &str, question_id: &str, wait: Duration) -> Result<QuestionAnswer, AgentError> {
        if question_id.is_empty() || question_id.len() > 64 || !question_id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(AgentError::Usage(format!("question_id {question_id:?} is invalid: it is the hex id ask returned")));
        }
        let (secs, wait) = Self::wait_query(wait);
        let path = Self::session_path(session_id, &format!("/questions/{question_id}?wait={secs}"))?;
        self.long_poll(&path, wait).await
    }

    /// Read and clear the `[PLAN_DECISION]` text waiting for the agent.
    pub async fn take_injection(&self, session_id: &str) -> Result<Option<String>, AgentError> {
        #[derive(Deserialize)]
        struct Taken {
            injection: Option<String>,
        }
        let path = Self::session_path(session_id, "/injection/take")?;
        let taken: Taken = self.typed(reqwest::Method::POST, &path, None, self.timeouts.request).await?;
        Ok(taken.injection)
    }

    /// The untaken injection and what it is about, without taking it,
    /// holding up to `wait` (at most 300 s) until there is one.
    pub async fn peek_injection(&self, session_id: &str, wait: Duration) -> Result<Injection, AgentError> {
        let (secs, wait) = Self::wait_query(wait);
        let path = Self::session_path(session_id, &format!("/injection?wait={secs}"))?;
        self.long_poll(&path, wait).await
    }

    /// [`Client::take_injection`] with what the injection is about.
    pub async fn take_injection_with_meta(&self, session_id: &str) -> Result<Injection, AgentError> {
        let path = Self::session_path(session_id, "/injection/take")?;
        self.typed(reqwest::Method::POST, &path, None, self.timeouts.request).await
    }

    /// The active steps phrased as facts, for re-injection after the
    /// agent's context was compacted; `None` when there is nothing to preserve.
    /// `GET /v1/sessions/{id}/hydration`: the plan as it stands, for an
    /// agent whose context was compacted (`compacted`) or that resumed.
    pub async fn hydration(&self, session_id: &str, compacted: bool) -> Result<Option<String>, AgentError> {
        #[derive(Deserialize)]
        struct Hydration {
            text: Option<String>,
        }
        let path = Self::session_path(session_id, if compacted { "/hydration" } else { "/hydration?after=resume" })?;
        let h: Hydration = self.typed(reqwest::Method::GET, &path, None, self.timeouts.request).await?;
        Ok(h.text)
    }

    /// Open a subagent run the plan must wait for, or report that an open
    /// one is still alive (a heartbeat, which keeps it from expiring).
    pub async fn open_subagent(&self, session_id: &str, run_id: &str) -> Result<(), AgentError> {
        let path = Self::session_path(session_id, "/subagents")?;
        self.ok(reqwest::Method::POST, &path, Some(json!({"run_id": run_id}))).await.map(drop)
    }

    /// Close a subagent run (a run that is not open is fine).
    pub async fn close_subagent(&self, session_id: &str, run_id: &str) -> Result<(), AgentError> {
        if run_id.trim_matches('.').is_empty() {
            return Err(AgentError::Usage(format!("run_id {run_id:?} is invalid")));
        }
        let path = Self::session_path(session_id, &format!("/subagents/{}", path_segment(run_id)))?;
        self.ok(reqwest::Method::DELETE, &path, None).await.map(drop)
    }

    /// A step namespace as this agent sees it.
    pub async fn namespace(&self, name: &str) -> Result<NamespaceView, AgentError> {
        plangate_engine::namespace::validate_name(name).map_err(|e| AgentError::Usage(e.to_string()))?;
        let path = format!("/v1/namespaces/{}", path_segment(name));
        self.typed(reqwest::Method::GET, &path, None, self.timeouts.request).await
    }

    /// Merge `steps` (patches, joined by step text) into a namespace on
    /// behalf of `session_id`; every rule is checked on the result.
    pub async fn update_namespace(&self, name: &str, session_id: &str, steps: &[StepUpdate]) -> Result<NamespaceView, AgentError> {
        plangate_engine::namespace::validate_name(name).map_err(|e| AgentError::Usage(e.to_string()))?;
        if !session::is_valid(session_id) {
            return Err(AgentError::Usage(format!("session_id {session_id:?} is invalid: use 1–128 characters of A-Z a-z 0-9 . _ : -")));
        }
        let path = format!("/v1/namespaces/{}/steps", path_segment(name));
        let body = json!({"steps": steps, "session_id": session_id});
        self.typed(reqwest::Method::POST, &path, Some(body), self.timeouts.request).await
    }

    /// Ask the mutation gate about one tool call.
    pub async fn gate(&self, session_id: &str, tool: &str, input: &Value) -> Result<GateAnswer, AgentError> {
        self.gate_call(session_id, tool, input, PlanFile::No, None).await
    }

    /// [`Client::gate`] with what the harness's hook knows about a plan file.
    /// `paths`: the files a file tool writes, resolved on this machine
    /// ([`crate::scope_paths`]).
    /// `POST /v1/sessions/{id}/permissions`: relay a permission dialog
    /// (docs/API.md, "Permission requests"); the answer's `decision` is
    /// `allow`, `deny`, `local` or `ask` (with `question_id`).
    pub async fn ask_permission(
        &self,
        session_id: &str,
        tool: &str,
        input: &Value,
        paths: Option<Vec<plangate_engine::scope::Target>>,
    ) -> Result<Value, AgentError> {
        let path = Self::session_path(session_id, "/permissions")?;
        let mut body = json!({"tool": tool, "input": input});
        if self.harness != Harness::Api {
            body["harness"] = json!(self.harness);
        }
        if let Some(paths) = paths {
            body["paths"] = json!(paths);
        }
        self.ok(reqwest::Method::POST, &path, Some(body)).await
    }

    /// `POST /v1/sessions/{id}/stopping`: the agent tries to stop. `Some`
    /// instruction while the approved plan keeps it going; `None` to stop.
    pub async fn stopping(&self, session_id: &str, last_message: Option<&str>) -> Result<Option<String>, AgentError> {
        Ok(match self.stop(session_id, last_message, None).await? {
            Stop::Continue(instruction) => Some(instruction),
            Stop::Stop | Stop::AwaitDecision { .. } => None,
        })
    }

    /// `POST /v1/sessions/{id}/stopping`, whole: go on, stop, or (while the
    /// plan awaits people) wait for the decision; `waited_secs` says the
    /// stop waited that long and gave up.
    pub async fn stop(&self, session_id: &str, last_message: Option<&str>, waited_secs: Option<u64>) -> Result<Stop, AgentError> {
        let path = Self::session_path(session_id, "/stopping")?;
        let body = json!({"last_message": last_message, "waited_secs": waited_secs});
        let answer = self.ok(reqwest::Method::POST, &path, Some(body)).await?;
        Ok(match answer["decision"].as_str() {
            Some("continue") => Stop::Continue(answer["reason"].as_str().unwrap_or_default().to_string()),
            Some("wait") => Stop::AwaitDecision { version: answer["version"].as_u64().unwrap_or_default() },
            _ => Stop::Stop,
        })
    }

    /// `POST /v1/sessions/{id}/todos`: the harness's own to-do list, as it
    /// wrote it (`[{"content", "status", …}]`).
    pub async fn todos(&self, session_id: &str, todos: &Value) -> Result<(), AgentError> {
        let path = Self::session_path(session_id, "/todos")?;
        self.ok(reqwest::Method::POST, &path, Some(json!({"todos": todos}))).await.map(|_| ())
    }

    /// `GET /v1/sessions/{id}/permissions/{question_id}?wait=N` (one long-poll).
    pub async fn permission(&self, session_id: &str, question_id: &str, wait: Duration) -> Result<Value, AgentError> {
        if !is_hex_id(question_id) {
            return Err(AgentError::Usage(format!("question_id {question_id:?} is not a plangate id")));
        }
        let (secs, _) = Self::wait_query(wait);
        let path = Self::session_path(session_id, &format!("/permissions/{question_id}?wait={secs}"))?;
        self.long_poll(&path, Duration::from_secs(secs)).await
    }

    /// `POST …/permissions/{question_id}/expire`: this hook stopped waiting.
    pub async fn expire_permission(&self, session_id: &str, question_id: &str) -> Result<(), AgentError> {
        if !is_hex_id(question_id) {
            return Err(AgentError::Usage(format!("question_id {question_id:?} is not a plangate id")));
        }
        let path = Self::session_path(session_id, &format!("/permissions/{question_id}/expire"))?;
        self.ok(reqwest::Method::POST, &path, None).await.map(|_| ())
    }

    pub async fn gate_call(
        &self,
        session_id: &str,
        tool: &str,
        input: &Value,
        plan_file: PlanFile,
        paths: Option<Vec<plangate_engine::scope::Target>>,
    ) -> Result<GateAnswer, AgentError> {
        if !session::is_valid(session_id) {
            return Err(AgentError::Usage(format!("session_id {session_id:?} is invalid")));
        }
        let mut body = json!({"session_id": session_id, "tool": tool, "input": input});
        if self.harness != Harness::Api {
            body["harness"] = json!(self.harness);
        }
        match plan_file {
            PlanFile::No => {}
            PlanFile::Write { harness_plan_mode } => {
                body["plan_file"] = json!(true);
                body["harness_plan_mode"] = json!(harness_plan_mode);
            }
        }
        if let Some(paths) = paths {
            body["paths"] = json!(paths);
        }
        self.typed(reqwest::Method::POST, "/v1/gate", Some(body), self.timeouts.request).await
    }
}

/// Whether a gate call writes the harness's own plan file, as its hook
/// verified on this machine (`POST /v1/gate`'s `plan_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFile {
    /// Not a plan file write (or not verified as one).
    No,
    /// A write of only the plan file; `harness_plan_mode` when the harness
    /// says it is in its own plan mode.
    Write { harness_plan_mode: bool },
}

/// An untaken `[PLAN_DECISION]` (or `[PLAN_NUDGE]`) text and, when it
/// concerns a proposal, which one and how it was decided (API.md,
/// `GET …/injection`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Injection {
    pub injection: Option<String>,
    #[serde(default)]
    pub approval_id: Option<String>,
    #[serde(default)]
    pub version: Option<u32>,
    #[serde(default)]
    pub status: Option<String>,
}

/// `text` as one URL path segment: unreserved characters as they are, every
/// other byte percent-encoded, so an id can never add a path segment
/// (callers refuse `.` and `..`, which URL parsers resolve even encoded).
/// Also a safe query value (`&`, `=` and `#` are encoded).
pub fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A plangate id as the API prints it: 32 hex digits. Checked before it
/// goes into a URL path.
fn is_hex_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// reqwest's client with `timeouts`' connect timeout and no proxy.
fn reqwest_client(timeouts: Timeouts) -> Result<reqwest::Client, AgentError> {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(timeouts.connect)
        .build()
        .map_err(|e| AgentError::Usage(format!("cannot build an HTTP client: {e}")))
}

/// A non-2xx answer as [`AgentError::Api`], from the contract's error shape.
fn api_error(status: u16, value: &Value) -> AgentError {
    let error = &value["error"];
    AgentError::Api {
        status,
        code: error["code"].as_str().unwrap_or("error").to_string(),
        message: error["message"].as_str().unwrap_or("(no message)").to_string(),
        details: error.get("details").cloned().unwrap_or(Value::Null),
    }
}

/// The target of a `rel="next"` link in one `Link` header value, accepted
/// only as a path on the same server (never a full URL a response could
/// point elsewhere with).
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|link| {
        let (target, params) = link.trim().strip_prefix('<')?.split_once('>')?;
        let next = params.split(';').any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"));
        (next && target.starts_with('/') && !target.starts_with("//")).then(|| target.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_cannot_escape() {
        assert_eq!(path_segment("tool:toolu_01ABC"), "tool%3Atoolu_01ABC");
        assert_eq!(path_segment("../x y/é"), "..%2Fx%20y%2F%C3%A9");
    }

    /// A server on loopback that answers every request by its path:
    /// `/hang` never, `/moved` with a redirect to `/v1/page`, anything else
    /// a page of JSON with a `Link` to the next, echoing the method and the
    /// bearer token it got.
    async fn fake_server() -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else { return };
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    // The head, then the body (unread bytes would reset the connection).
                    let whole = |r: &[u8]| {
                        let end = r.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
                        let head = String::from_utf8_lossy(&r[..end]).to_lowercase();
                        let length = head.lines().find_map(|l| l.strip_prefix("content-length: ")?.trim().parse().ok()).unwrap_or(0);
                        (r.len() >= end + length).then_some(())
                    };
                    while whole(&request).is_none() {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&request).to_string();
                    let line = head.lines().next().unwrap_or_default().to_string();
                    let token = head.lines().find_map(|l| l.strip_prefix("authorization: Bearer ")).unwrap_or_default().to_string();
                    let answer = if line.contains(" /hang ") {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        return;
                    } else if line.contains(" /moved ") {
                        "HTTP/1.1 302 Found\r\nconnection: close\r\nlocation: /v1/page\r\ncontent-length: 0\r\n\r\n".to_string()
                    } else {
                        let body = json!({"line": line, "token": token}).to_string();
                        format!(
                            "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\nlink: </v1/page?after=x>; rel=\"next\"\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        )
                    };
                    let _ = conn.write_all(answer.as_bytes()).await;
                });
            }
        });
        base
    }

    #[tokio::test]
    async fn plain_http_answers_as_reqwest_did() {
        let base = fake_server().await;
        let client = Client::with_timeouts(&base, Some("tok".into()), Timeouts::HOOK).expect("client");
        assert!(client.plain.is_some() && client.http.get().is_none(), "http:// builds no reqwest client");
        let (page, next) = client.page("/v1/page").await.expect("page");
        assert_eq!(page, json!({"line": "GET /v1/page HTTP/1.1", "token": "tok"}));
        assert_eq!(next.as_deref(), Some("/v1/page?after=x"));
        let (status, body) = client.call(reqwest::Method::POST, "/v1/gate", Some(json!({}))).await.expect("post");
        assert_eq!((status, &body["line"]), (200, &json!("POST /v1/gate HTTP/1.1")));
        // A redirect is reqwest's to follow, as before.
        let (status, body) = client.call(reqwest::Method::GET, "/moved", None).await.expect("redirect");
        assert_eq!((status, &body["line"]), (200, &json!("GET /v1/page HTTP/1.1")));
        assert!(client.http.get().is_some());
    }

    #[tokio::test]
    async fn plain_http_times_out_and_refuses_as_reqwest_did() {
        let base = fake_server().await;
        let quick = Timeouts { connect: Duration::from_millis(500), request: Duration::from_millis(300) };
        let client = Client::with_timeouts(&base, None, quick).expect("client");
        let late = client.call(reqwest::Method::GET, "/hang", None).await.expect_err("hangs");
        assert!(matches!(&late, AgentError::Timeout { secs: 1, .. }), "{late:?}");
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let closed = format!("http://127.0.0.1:{port}");
        let plain = Client::with_timeouts(&closed, None, quick).expect("client").call(reqwest::Method::GET, "/v1/x", None).await;
        let AgentError::Unreachable { reason, .. } = plain.expect_err("refused") else { panic!("not unreachable") };
        assert!(
            reason.starts_with(&format!("error sending request for url ({closed}/v1/x): client error (Connect): tcp connect error")),
            "{reason}"
        );
    }

    #[test]
    fn only_a_same_server_next_link_is_followed() {
        assert_eq!(next_link("</v1/approvals?after=ab>; rel=\"next\"").as_deref(), Some("/v1/approvals?after=ab"));
        assert_eq!(next_link("</a>; rel=\"prev\", </b>; rel=\"next\"").as_deref(), Some("/b"));
        for foreign in ["<https://evil.example/x>; rel=\"next\"", "<//evil.example/x>; rel=\"next\"", "</a>; rel=\"prev\"", "garbage"] {
            assert_eq!(next_link(foreign), None, "{foreign}");
        }
    }
}
