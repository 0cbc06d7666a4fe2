//! Signed webhooks: every decision and answer of an agent that has
//! `[agents.<id>.webhook]` is POSTed to its receiver, at least once.
//!
//! **Where a delivery comes from.** The engine already says everything a
//! receiver needs: a transition's new state next to the state before it
//! shows whether the latest proposal was decided (its status left
//! `pending`, or a proposal arrived decided in auto mode), whether a
//! question was answered (`Transition::answered`), and whether a session
//! with nothing pending was released. So the server derives the deliveries
//! from the transition ([`webhook_jobs`]) instead of the engine growing a
//! notification effect: the engine stays unaware of who listens, and one
//! comparison here covers every path to a decision (buttons, `/plan`
//! commands, the operator API, timeouts, auto mode).
//!
//! **Durable.** Each delivery is a [`Job::Webhook`] written to the outbox in
//! the commit of the transition that decided, and removed only once it was
//! delivered or given up on: a crash before that resumes it at the next
//! start. Its body is serialized once, at commit time, so every attempt
//! (and every duplicate a crash may cause) carries the same bytes and the
//! same `X-Plangate-Delivery` key.
//!
//! **Never in the way.** Deliveries have their own queues, one per session
//! (a session's decisions arrive in the order they were made: a
//! "changes requested" on v1 never lands after the approval of v2), served
//! by one task per session with something to deliver. They share no worker,
//! queue or backlog count with the chat jobs, so a receiver that is down for
//! hours, or a backlog of thousands of retries, never delays a card, a nudge
//! or a decision; the transition that decided committed before its delivery
//! started, and its caller's answer does not wait for the delivery. A delivery holds one of
//! [`IN_FLIGHT`] places only while its request is on the wire (at most
//! [`REQUEST_TIMEOUT`]), never while it waits for its next attempt.

use super::jobs::Job;
use super::Core;
use crate::config::{Settings, WebhookConfig};
use hmac::{Hmac, Mac};
use plangate_engine::view::DecisionView;
use plangate_engine::{ApprovalId, DecisionStatus, Proposal, Question, QuestionStatus, SessionKey, State, Transition};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::Semaphore;
use tracing::{info_span, warn, Instrument};

/// Requests to receivers on the wire at once, over all agents.
pub const IN_FLIGHT: usize = 64;
/// How long one attempt may take, connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts before a delivery is given up on (recorded as failed).
pub const MAX_ATTEMPTS: u32 = 20;
/// The wait after the first failed attempt; it doubles after each failure.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two attempts (before jitter).
pub const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);
/// The longest `Retry-After` honoured; a longer one waits this long (and a
/// shorter one than [`FIRST_BACKOFF`] waits that long).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60 * 60);

/// The signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub const SIGNATURE_HEADER: &str = "x-plangate-signature";
/// The idempotency key, the same on every attempt of one delivery.
pub const DELIVERY_HEADER: &str = "x-plangate-delivery";
/// `decision`, `answer` or `release`.
pub const EVENT_HEADER: &str = "x-plangate-event";
/// Which attempt this is (1 for the first; counted again from 1 after a restart).
pub const ATTEMPT_HEADER: &str = "x-plangate-attempt";

/// One delivery, as it waits in the outbox and the queue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Webhook {
    /// The agent (whose webhook receives it) and its session.
    pub session: SessionKey,
    /// `X-Plangate-Delivery`.
    pub delivery: String,
    /// `decision`, `answer` or `release`.
    pub event: String,
    /// The approval decided, for the audit.
    pub approval: Option<(ApprovalId, u32)>,
    /// The JSON body, exactly as signed and sent on every attempt.
    pub body: String,
}

/// What happened that the agent's receiver must learn, found by comparing a
/// transition with the state before it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Event<'a> {
    /// The latest proposal was decided (approved, edited, changes requested,
    /// timed out, cancelled or cancelled by a release).
    Decision(&'a Proposal),
    /// A question of the agent's was answered.
    Answer(&'a Question),
    /// A person released a session that had nothing pending: the gate is
    /// open and no plan is required.
    Release { released_by: &'a str },
}

/// The events of one transition. A superseded proposal is not one: only
/// the agent's own new proposal supersedes, so the agent knows already,
/// and the new proposal's decision follows as its own event.
pub(super) fn events<'a>(before: &State, t: &'a Transition) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    if let Some(p) = t.state.latest.as_ref().filter(|p| p.status != DecisionStatus::Pending) {
        let known = before.latest.as_ref().is_some_and(|b| b.approval_id == p.approval_id && b.status == p.status);
        if !known {
            out.push(Event::Decision(p));
        }
    }
    if let Some(q) = t.answered.as_ref().filter(|q| q.status == QuestionStatus::Answered) {
        out.push(Event::Answer(q));
    }
    let released = t.state.session.released_by.as_deref().filter(|_| before.session.released_by.is_none());
    if let (Some(by), true) = (released, out.iter().all(|e| !matches!(e, Event::Decision(_)))) {
        out.push(Event::Release { released_by: by });
    }
    out
}

#[derive(Serialize)]
struct DecisionBody<'a> {
    event: &'static str,
    delivery_id: &'a str,
    agent: &'a str,
    session_id: &'a str,
    /// Exactly what `GET /v1/sessions/{id}/decision` answers.
    #[serde(flatten)]
    decision: DecisionView,
}

#[derive(Serialize)]
struct AnswerBody<'a> {
    event: &'static str,
    delivery_id: &'a str,
    agent: &'a str,
    session_id: &'a str,
    question_id: String,
    question: &'a str,
    status: QuestionStatus,
    answer: Option<&'a str>,
    answered_by: Option<&'a str>,
    answered_at: Option<String>,
}

#[derive(Serialize)]
struct ReleaseBody<'a> {
    event: &'static str,
    delivery_id: &'a str,
    agent: &'a str,
    session_id: &'a str,
    released_by: &'a str,
    injection: Option<&'a str>,
}

/// The webhook deliveries a committed transition asks for: none unless the
/// agent has a webhook. Each joins the outbox in the transition's commit.
pub(super) fn webhook_jobs(settings: &Settings, before: &State, t: &Transition) -> Vec<(ApprovalId, Job)> {
    let key = &t.state.session.key;
    if settings.webhook(&key.agent).is_none() {
        return Vec::new();
    }
    let (agent, session_id) = (key.agent.as_str(), key.session_id.as_str());
    events(before, t)
        .into_iter()
        .map(|event| {
            let (id, delivery, name, approval, body) = match event {
                Event::Decision(p) => {
                    let delivery = format!("decision:{}:v{}:{}", p.approval_id, p.version, p.status.as_str());
                    let body = serde_json::to_string(&DecisionBody {
                        event: "decision",
                        delivery_id: &delivery,
                        agent,
                        session_id,
                        decision: settings.decision_for(agent, p),
                    });
                    (p.approval_id, delivery, "decision", Some((p.approval_id, p.version)), body)
                }
                Event::Answer(q) => {
                    let delivery = format!("answer:{}", q.question_id);
                    let body = serde_json::to_string(&AnswerBody {
                        event: "answer",
                        delivery_id: &delivery,
                        agent,
                        session_id,
                        question_id: q.question_id.to_string(),
                        question: &q.question,
                        status: q.status,
                        answer: q.answer.as_deref(),
                        answered_by: q.answered_by.as_deref(),
                        answered_at: q.answered_at.map(|at| at.rfc3339()),
                    });
                    (q.question_id, delivery, "answer", None, body)
                }
                Event::Release { released_by } => {
                    let delivery = format!("release:{agent}/{session_id}:{}", t.state.session.updated_at.0);
                    let body = serde_json::to_string(&ReleaseBody {
                        event: "release",
                        delivery_id: &delivery,
                        agent,
                        session_id,
                        released_by,
                        injection: t.state.session.injection.as_deref(),
                    });
                    let id = t.state.latest.as_ref().map(|p| p.approval_id).unwrap_or(ApprovalId([0; 16]));
                    (id, delivery, "release", None, body)
                }
            };
            let hook = Webhook { session: key.clone(), delivery, event: name.to_string(), approval, body: body.unwrap_or_default() };
            (id, Job::Webhook(Box::new(hook)))
        })
        .collect()
}

/// A delivery waiting, with its outbox entry.
type Queued = (Webhook, Option<u64>);

/// The per-session delivery queues (see the module doc).
pub(super) struct WebhookQueues {
    /// Deliveries not yet started, per session. A session is here exactly
    /// while a task is delivering its queue.
    waiting: Mutex<HashMap<SessionKey, VecDeque<Queued>>>,
    in_flight: Arc<Semaphore>,
    http: OnceLock<Result<reqwest::Client, String>>,
}

impl Default for WebhookQueues {
    fn default() -> WebhookQueues {
        WebhookQueues { waiting: Mutex::new(HashMap::new()), in_flight: Arc::new(Semaphore::new(IN_FLIGHT)), http: OnceLock::new() }
    }
}

/// How one attempt went.
enum Attempt {
    Delivered(u16),
    /// Worth another try (a network error, a 5xx, a 429), after `after` if
    /// the receiver said when.
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    /// The receiver refused this delivery for good (a 4xx other than 429,
    /// a redirect): retrying would get the same answer.
    Refused(String),
}

/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, unix_secs: i64, body: &str) -> String {
    // HMAC takes a key of any length; this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(format!("{unix_secs}.").as_bytes());
    mac.update(body.as_bytes());
    format!("t={unix_secs},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// The wait after failed attempt number `attempt` (1-based): doubling from
/// [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`], then a random point in its upper
/// half (`jitter` in 0..1), so receivers coming back are not hit in lockstep.
pub fn backoff(attempt: u32, jitter: f64) -> Duration {
    use plangate_basics::backoff::{after, jittered};
    jittered(after(attempt, FIRST_BACKOFF, MAX_BACKOFF), jitter)
}

/// A `Retry-After` in seconds or as an HTTP date, relative to `now_ms`,
/// capped at [`MAX_RETRY_AFTER`].
fn retry_after(headers: &reqwest::header::HeaderMap, now_ms: i64) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            let at_ms = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
            Duration::from_millis(at_ms.saturating_sub(now_ms).max(0) as u64)
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// A transport error in words, without the URL (which may carry a token in
/// its query) and with its causes ("connection refused").
fn transport_error(e: reqwest::Error) -> String {
    let timed_out = e.is_timeout();
    let mut reason = plangate_basics::errors::chain(&e.without_url());
    if timed_out {
        reason = format!("no answer within {} s ({reason})", REQUEST_TIMEOUT.as_secs());
    }
    reason
}

impl Core {
    /// Queue a delivery behind the earlier ones of its session; start the
    /// session's delivery task if none runs. `seq` is its outbox entry.
    pub(super) fn enqueue_webhook(self: &Arc<Self>, hook: Webhook, seq: Option<u64>) {
        let session = hook.session.clone();
        let mut waiting = self.webhooks.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = waiting.get_mut(&session) {
            queue.push_back((hook, seq));
            return;
        }
        waiting.insert(session.clone(), VecDeque::from([(hook, seq)]));
        let core = self.clone();
        tokio::spawn(async move { core.deliver_session(session).await });
    }

    /// Deliver one session's queue in order, until it is empty.
    async fn deliver_session(self: Arc<Self>, session: SessionKey) {
        loop {
            let next = {
                let mut waiting = self.webhooks.waiting.lock().unwrap_or_else(|e| e.into_inner());
                match waiting.get_mut(&session).and_then(VecDeque::pop_front) {
                    Some(next) => next,
                    None => {
                        // Enqueue looks at the map under this lock: a delivery
                        // queued after this starts a new task.
                        waiting.remove(&session);
                        return;
                    }
                }
            };
            let (hook, seq) = next;
            let span = info_span!("webhook", agent = %session.agent, session = %session.session_id, delivery = %hook.delivery);
            self.deliver_webhook(hook).instrument(span).await;
            if let Some(seq) = seq {
                if let Err(e) = self.outbox_done(seq).await {
                    warn!(seq, error = %e, "outbox entry not removed; the delivery will be made again after a restart");
                }
            }
        }
    }

    /// Attempt a delivery until it is delivered, refused, or
    /// [`MAX_ATTEMPTS`] attempts have failed; every attempt is audited.
    pub(super) async fn deliver_webhook(&self, hook: Webhook) {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(config) = self.settings.webhook(&hook.session.agent).cloned() else {
                let detail = format!(
                    "{} {}: agents.{}.webhook is no longer configured; not delivered",
                    hook.event, hook.delivery, hook.session.agent
                );
                self.audit(&hook.session, "plangate", "webhook_dropped", hook.approval, detail).await;
                return;
            };
            let outcome = {
                let _place = self.webhooks.in_flight.clone().acquire_owned().await;
                self.attempt_webhook(&config, &hook, attempt).await
            };
            let host = reqwest::Url::parse(&config.url).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default();
            let what = format!("{} {} to {host}, attempt {attempt}", hook.event, hook.delivery);
            match outcome {
                Attempt::Delivered(status) => {
                    self.audit(&hook.session, "plangate", "webhook_delivered", hook.approval, format!("{what}: HTTP {status}")).await;
                    return;
                }
                Attempt::Retry { reason, after } if attempt < MAX_ATTEMPTS => {
                    // A `Retry-After: 0` must not burn the attempts in a burst.
                    let wait = after.map(|a| a.max(FIRST_BACKOFF)).unwrap_or_else(|| backoff(attempt, rand::random::<f64>()));
                    warn!(attempt, %reason, wait_ms = wait.as_millis() as u64, "webhook not delivered; retrying");
                    let detail = format!("{what}: {reason}; next attempt in {:.1} s", wait.as_secs_f64());
                    self.audit(&hook.session, "plangate", "webhook_retry", hook.approval, detail).await;
                    tokio::time::sleep(wait).await;
                }
                Attempt::Retry { reason, .. } => {
                    warn!(attempt, %reason, "webhook given up on");
                    let detail = format!("{what}: {reason}; given up after {MAX_ATTEMPTS} attempts");
                    self.audit(&hook.session, "plangate", "webhook_failed", hook.approval, detail).await;
                    return;
                }
                Attempt::Refused(reason) => {
                    warn!(attempt, %reason, "webhook refused by the receiver");
                    let detail = format!("{what}: {reason}; not retried");
                    self.audit(&hook.session, "plangate", "webhook_failed", hook.approval, detail).await;
                    return;
                }
            }
        }
    }

    /// One signed POST.
    async fn attempt_webhook(&self, config: &WebhookConfig, hook: &Webhook, attempt: u32) -> Attempt {
        let http = match self.webhook_client() {
            Ok(http) => http,
            Err(e) => return Attempt::Retry { reason: e, after: None },
        };
        let now_ms = self.now().0;
        let signed = signature(&config.secret, now_ms.div_euclid(1000), &hook.body);
        let request = http
            .post(config.url.trim())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, signed)
            .header(DELIVERY_HEADER, &hook.delivery)
            .header(EVENT_HEADER, &hook.event)
            .header(ATTEMPT_HEADER, attempt.to_string())
            .body(hook.body.clone());
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Attempt::Retry { reason: transport_error(e), after: None },
        };
        let status = response.status();
        let code = status.as_u16();
        let after = retry_after(response.headers(), self.now().0);
        // The receiver's body is not read: nothing in it changes the outcome.
        drop(response);
        if status.is_success() {
            Attempt::Delivered(code)
        } else if code == 429 || status.is_server_error() {
            Attempt::Retry { reason: format!("HTTP {code}"), after }
        } else if status.is_redirection() {
            Attempt::Refused(format!(
                "HTTP {code}, a redirect, which plangate does not follow; set agents.{}.webhook.url to the final URL",
                hook.session.agent
            ))
        } else {
            Attempt::Refused(format!("HTTP {code}"))
        }
    }

    /// The client every delivery uses: no redirects, bounded in time.
    fn webhook_client(&self) -> Result<&reqwest::Client, String> {
        self.webhooks
            .http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(REQUEST_TIMEOUT)
                    .connect_timeout(CONNECT_TIMEOUT)
                    .user_agent(concat!("plangate/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| format!("cannot build the webhook HTTP client: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_engine::{apply, Actor, Command, Ctx, TimerKind, TimerPolicy, Verdict};

    fn ctx(n: u8) -> Ctx {
        let timers = TimerPolicy {
            nudges_ms: vec![],
            timeout_ms: Some(60_000),
            ladder: Vec::new(),
            subagent_expiry_ms: None,
            ..TimerPolicy::default()
        };
        Ctx { now: plangate_engine::Timestamp(1_000 * i64::from(n)), random: [n; 16], timers, approvals: Default::default() }
    }

    fn run(state: &State, actor: Actor, command: Command, n: u8) -> Transition {
        apply(state, &actor, command, &ctx(n)).expect("applies")
    }

    fn person() -> Actor {
        Actor::Operator { name: "alice".into() }
    }

    fn proposed(n: u8) -> State {
        let key = SessionKey::new("demo", "s1");
        let mut state = State::new(key);
        state = run(&state, Actor::Agent, Command::Enter { reason: None }, n).state;
        let plan = plangate_engine::plan::plan_from_markdown("# Fix\n\n1. read\n2. write\n", None).unwrap();
        run(
            &state,
            Actor::Agent,
            Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
            n + 1,
        )
        .state
    }

    fn kinds(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                Event::Decision(p) => format!("decision {}", p.status.as_str()),
                Event::Answer(q) => format!("answer {}", q.answer.clone().unwrap_or_default()),
                Event::Release { released_by } => format!("release {released_by}"),
            })
            .collect()
    }

    #[test]
    fn every_kind_of_decision_is_one_event() {
        let state = proposed(1);
        let id = state.latest.as_ref().unwrap().approval_id;
        for (command, actor, expected) in [
            (Command::Decide { approval_id: id, verdict: Verdict::Approve }, person(), "decision approved"),
            (Command::Decide { approval_id: id, verdict: Verdict::Revise("smaller".into()) }, person(), "decision rejected"),
            (Command::CancelApproval(id), person(), "decision cancelled"),
            (Command::Off, person(), "decision cancelled"),
        ] {
            let t = run(&state, actor, command, 9);
            assert_eq!(kinds(&events(&state, &t)), [expected]);
        }
        let timeout = state.latest.as_ref().unwrap().timers.iter().find(|t| t.kind == TimerKind::Timeout).cloned().unwrap();
        let t = run(&state, Actor::Scheduler, Command::TimerFired(timeout), 9);
        assert_eq!(kinds(&events(&state, &t)), ["decision timed_out"]);
    }

    #[test]
    fn nothing_else_is_an_event() {
        let state = proposed(1);
        let id = state.latest.as_ref().unwrap().approval_id;
        let approved = run(&state, person(), Command::Decide { approval_id: id, verdict: Verdict::Approve }, 3).state;
        // Taking the injection, updating steps, proposing: no decision made.
        let t = run(&approved, Actor::Agent, Command::TakeInjection, 4);
        assert!(events(&approved, &t).is_empty());
        let steps = approved.session.steps.iter().cloned().map(Into::into).collect();
        let t = run(&approved, Actor::Agent, Command::UpdatePlan { steps, merge: false, explanation: None }, 5);
        assert!(events(&approved, &t).is_empty());
        // A new proposal supersedes the pending one: the agent did it itself.
        let plan = plangate_engine::plan::plan_from_markdown("# Other\n\n1. again\n", None).unwrap();
        let t = run(
            &state,
            Actor::Agent,
            Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
            6,
        );
        assert!(t.retired.is_some());
        assert!(events(&state, &t).is_empty());
    }

    #[test]
    fn answers_auto_approvals_and_releases_without_a_proposal_are_events() {
        let key = SessionKey::new("demo", "q");
        let state = run(&State::new(key.clone()), Actor::Agent, Command::Enter { reason: None }, 1).state;
        let asked =
            run(&state, Actor::Agent, Command::Ask { question: "Which?".into(), options: vec!["pg".into()], allow_freetext: false }, 2)
                .state;
        let t = run(&asked, person(), Command::Answer { question_id: None, answer: "pg".into() }, 3);
        assert_eq!(kinds(&events(&asked, &t)), ["answer pg"]);

        let t = run(&state, person(), Command::Off, 4);
        assert_eq!(kinds(&events(&state, &t)), ["release operator:alice"]);

        let auto = run(&state, person(), Command::SetAuto(true), 5).state;
        let plan = plangate_engine::plan::plan_from_markdown("# Auto\n\n1. go\n", None).unwrap();
        let t = run(
            &auto,
            Actor::Agent,
            Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
            6,
        );
        assert_eq!(kinds(&events(&auto, &t)), ["decision approved"]);
    }

    #[test]
    fn signature_is_hmac_sha256_of_timestamp_dot_body() {
        // Checked against `printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac 0123456789abcdef`.
        let sig = signature("0123456789abcdef", 1_700_000_000, r#"{"a":1}"#);
        assert_eq!(sig, "t=1700000000,v1=9eb18f493f8ec135d9eb2dad817c369bb4e9cbfa818657897a7437c1cd8c3a23");
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        assert_eq!(backoff(1, 1.0), Duration::from_secs(1));
        assert_eq!(backoff(1, 0.0), Duration::from_millis(500));
        assert_eq!(backoff(4, 1.0), Duration::from_secs(8));
        assert_eq!(backoff(30, 1.0), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX, 0.0), MAX_BACKOFF / 2);
        let total: Duration = (1..MAX_ATTEMPTS).map(|a| backoff(a, 1.0)).sum();
        assert!(total < Duration::from_secs(3 * 3600), "{total:?}");
    }

    #[test]
    fn retry_after_takes_seconds_or_a_date_and_is_capped() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers, 0), None);
        headers.insert(reqwest::header::RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&headers, 0), Some(Duration::from_secs(7)));
        headers.insert(reqwest::header::RETRY_AFTER, "999999".parse().unwrap());
        assert_eq!(retry_after(&headers, 0), Some(MAX_RETRY_AFTER));
        // 1994-11-06T08:49:37Z is 784111777 s after the epoch.
        headers.insert(reqwest::header::RETRY_AFTER, "Sun, 06 Nov 1994 08:49:37 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers, 784_111_777_000 - 30_000), Some(Duration::from_secs(30)));
        assert_eq!(retry_after(&headers, 784_111_777_000 + 30_000), Some(Duration::ZERO));
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers, 0), None);
    }
}
