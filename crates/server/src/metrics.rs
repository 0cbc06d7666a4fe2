//! What `GET /metrics` exposes, in the Prometheus text format
//! (`prometheus-client`). Every metric is documented in docs/OPERATIONS.md.
//!
//! Counted where the thing happens, once for every channel: transitions in
//! [`Core::execute`](crate::core::Core::execute) (proposals, decisions,
//! pending approvals, time to decision, commit latency), chat calls through
//! [`Metered`] (nudges sent, platform errors and 429s), the gate handler
//! (verdicts). Gauges that are cheap to read (chat backlog, parked
//! long-polls) are read when scraped.

use async_trait::async_trait;
use plangate_channel::{Channel, ChannelError, Delivery, Destination, Document};
use plangate_engine::card::Card;
use plangate_engine::{Actor, DecisionStatus, Question, State, Transition};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::{Arc, Mutex};

type One = [(&'static str, String); 1];
type Two = [(&'static str, String); 2];

/// The server's metrics. One per process, inside the [`Core`](crate::core::Core).
pub struct Metrics {
    registry: Registry,
    proposals: Family<One, Counter>,
    decisions: Family<Two, Counter>,
    pending: Gauge,
    /// How many transitions changed the pending count since start; its
    /// lock makes the start's background count and a change one at a time
    /// (see [`Metrics::settle_pending`]).
    pending_changes: Arc<Mutex<u64>>,
    time_to_decision: Histogram,
    nudges: Family<One, Counter>,
    chat_errors: Family<Two, Counter>,
    commit_seconds: Histogram,
    gate: Family<One, Counter>,
    chat_backlog: Gauge,
    spilled: Counter,
    waiting: Gauge,
    leader: Family<One, Gauge>,
    conflicts: Counter,
    auth_failures: Family<Two, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("plangate");
        let proposals = Family::<One, Counter>::default();
        registry.register("proposals", "Plans proposed, by agent", proposals.clone());
        let decisions = Family::<Two, Counter>::default();
        registry.register(
            "decisions",
            "Approvals decided, by outcome (approved, edited, rejected, cancelled, timed_out, superseded) and by where the decision came from (telegram, slack, discord, operator, scheduler, agent, auto)",
            decisions.clone(),
        );
        let pending = Gauge::default();
        registry.register("pending_approvals", "Approvals waiting for a decision", pending.clone());
        // 1 s … ~36 h.
        let time_to_decision = Histogram::new(exponential_buckets(1.0, 3.0, 12));
        registry.register("time_to_decision_seconds", "From proposal to decision", time_to_decision.clone());
        let nudges = Family::<One, Counter>::default();
        registry.register("nudges_sent", "Reminders delivered under a card, by platform", nudges.clone());
        let chat_errors = Family::<Two, Counter>::default();
        registry.register(
            "chat_api_errors",
            "Chat platform calls that failed, by platform and kind (rate_limited is a 429 not absorbed by the adapter's own retry)",
            chat_errors.clone(),
        );
        // 0.1 ms … ~3.3 s.
        let commit_seconds = Histogram::new(exponential_buckets(0.0001, 2.0, 16));
        registry.register("store_commit_seconds", "Durable commit of one transition (group commit included)", commit_seconds.clone());
        let gate = Family::<One, Counter>::default();
        registry.register("gate_verdicts", "Mutation-gate answers, by verdict (allow, deny, ask)", gate.clone());
        let chat_backlog = Gauge::default();
        registry.register("outbox_backlog", "Chat jobs (cards, edits, nudges, receipts) queued or running", chat_backlog.clone());
        let spilled = Counter::default();
        registry.register(
            "outbox_spilled",
            "Chat jobs left in the store's outbox because the chat backlog was full (a storm of timeouts), queued from there once it drained",
            spilled.clone(),
        );
        let waiting = Gauge::default();
        registry.register("waiting_long_polls", "Agent long-polls parked waiting for a decision or an answer", waiting.clone());
        let leader = Family::<One, Gauge>::default();
        registry.register(
            "leader",
            "1 while this process holds the role's one inbound platform connection (telegram, slack, discord), else 0; always 1 on sled",
            leader.clone(),
        );
        let conflicts = Counter::default();
        registry.register(
            "store_commit_conflicts",
            "Commits refused because another replica changed the session first (each is re-applied to the new state)",
            conflicts.clone(),
        );
        let auth_failures = Family::<Two, Counter>::default();
        registry.register(
            "auth_failures",
            "Wrong credentials, by surface (api: a bearer token; web_operator, web_link: the web page's sign-ins) and outcome (refused: within the address's budget; limited: answered 429)",
            auth_failures.clone(),
        );
        Metrics {
            auth_failures,
            registry,
            proposals,
            decisions,
            pending,
            pending_changes: Arc::default(),
            time_to_decision,
            nudges,
            chat_errors,
            commit_seconds,
            gate,
            chat_backlog,
            spilled,
            waiting,
            leader,
            conflicts,
        }
    }

    /// Whether this process leads `role` now.
    pub fn set_leader(&self, role: &str, leading: bool) {
        self.leader.get_or_create(&[("role", role.to_string())]).set(i64::from(leading));
    }

    /// A wrong credential on `surface`, `refused` or `limited` (429).
    pub fn auth_failure(&self, surface: &'static str, outcome: &'static str) {
        self.auth_failures.get_or_create(&[("surface", surface.to_string()), ("outcome", outcome.to_string())]).inc();
    }

    /// A commit lost a race with another replica.
    /// A chat job was left in the outbox (the backlog was full).
    pub fn chat_job_spilled(&self) {
        self.spilled.inc();
    }

    pub fn commit_conflict(&self) {
        self.conflicts.inc();
    }

    /// How many transitions changed the pending count so far.
    pub fn pending_changes(&self) -> u64 {
        *self.pending_changes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pending approvals counted in the store after start (in the
    /// background: PostgreSQL counts its index). Taken only when
    /// no transition changed the count since `changes_before` (read before
    /// counting), so the gauge is the store's count from then on;
    /// `false` when one did (count again).
    pub fn settle_pending(&self, counted: i64, changes_before: u64) -> bool {
        let changes = self.pending_changes.lock().unwrap_or_else(|e| e.into_inner());
        if *changes != changes_before {
            return false;
        }
        self.pending.set(counted);
        true
    }

    /// Count what a committed transition did.
    pub fn transition(&self, before: &State, t: &Transition, actor: &Actor) {
        let was_pending = before.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending);
        let now_pending = t.state.latest.as_ref().filter(|p| p.status == DecisionStatus::Pending);
        if let Some(latest) = &t.state.latest {
            if before.latest.as_ref().map(|p| p.approval_id) != Some(latest.approval_id) {
                self.proposals.get_or_create(&[("agent", latest.session.agent.clone())]).inc();
            }
        }
        // Every proposal this transition took out of pending: the latest
        // decided, or a pending one retired (superseded).
        for p in t.state.latest.iter().chain(&t.retired) {
            let was = was_pending.is_some_and(|w| w.approval_id == p.approval_id);
            if was && p.status != DecisionStatus::Pending {
                let source = match p.decided_by.as_deref() {
                    Some("auto") => "auto".to_string(),
                    _ => source_of(actor),
                };
                self.decisions.get_or_create(&[("status", p.status.as_str().to_string()), ("source", source)]).inc();
                if let Some(at) = p.decided_at {
                    self.time_to_decision.observe(((at.0 - p.created_at.0).max(0) as f64) / 1000.0);
                }
            }
        }
        // A proposal auto-approved on arrival never waited: counted as decided.
        if let Some(p) = &t.state.latest {
            let new = before.latest.as_ref().map(|b| b.approval_id) != Some(p.approval_id);
            if new && p.status != DecisionStatus::Pending {
                self.decisions.get_or_create(&[("status", p.status.as_str().to_string()), ("source", "auto".to_string())]).inc();
            }
        }
        let change = i64::from(now_pending.is_some()) - i64::from(was_pending.is_some());
        if change != 0 {
            let mut changes = self.pending_changes.lock().unwrap_or_else(|e| e.into_inner());
            *changes += 1;
            self.pending.inc_by(change);
        }
    }

    pub fn commit_latency(&self, seconds: f64) {
        self.commit_seconds.observe(seconds);
    }

    pub fn gate_verdict(&self, verdict: &'static str) {
        self.gate.get_or_create(&[("verdict", verdict.to_string())]).inc();
    }

    fn chat_error(&self, e: &ChannelError) {
        let (platform, kind) = match e {
            ChannelError::NotModified { .. } => return,
            ChannelError::RateLimited { platform, .. } => (*platform, "rate_limited"),
            ChannelError::Transport { platform, status: Some(429), .. } | ChannelError::Api { platform, status: Some(429), .. } => {
                (*platform, "rate_limited")
            }
            ChannelError::NotFound { platform, .. } => (*platform, "not_found"),
            ChannelError::Forbidden { platform, .. } => (*platform, "forbidden"),
            ChannelError::Api { platform, .. } => (*platform, "refused"),
            ChannelError::Transport { platform, .. } => (*platform, "unreachable"),
            #[allow(unreachable_patterns)]
            _ => ("unknown", "other"),
        };
        self.chat_errors.get_or_create(&[("platform", platform.to_string()), ("kind", kind.to_string())]).inc();
    }

    /// The text exposition, with the read-at-scrape gauges set first.
    pub fn render(&self, chat_backlog: usize, waiting: usize) -> String {
        self.chat_backlog.set(chat_backlog as i64);
        self.waiting.set(waiting as i64);
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// Where a decision came from, as a label: the platform of a chat user,
/// `operator`, `scheduler` (timeouts) or `agent` (superseded by a new plan).
fn source_of(actor: &Actor) -> String {
    match actor {
        Actor::Human { id, .. } => id.split_once(':').map(|(channel, _)| channel).unwrap_or("chat").to_string(),
        Actor::Operator { .. } => "operator".into(),
        Actor::Scheduler => "scheduler".into(),
        Actor::Agent => "agent".into(),
    }
}

/// A channel whose calls are counted: failures by platform and kind, nudges
/// delivered. Wraps each adapter as the core registers it.
pub struct Metered {
    pub inner: Arc<dyn Channel>,
    pub metrics: Arc<Metrics>,
}

impl Metered {
    fn count<T>(&self, result: Result<T, ChannelError>) -> Result<T, ChannelError> {
        if let Err(e) = &result {
            self.metrics.chat_error(e);
        }
        result
    }
}

#[async_trait]
impl Channel for Metered {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    async fn post_card(&self, destination: &Destination, card: &Card, document: &Document) -> Result<Delivery, ChannelError> {
        self.count(self.inner.post_card(destination, card, document).await)
    }
    async fn post_card_under(
        &self,
        parent: &Delivery,
        destination: &Destination,
        card: &Card,
        document: &Document,
    ) -> Result<Delivery, ChannelError> {
        self.count(self.inner.post_card_under(parent, destination, card, document).await)
    }
    async fn update_card(&self, delivery: &Delivery, card: &Card) -> Result<(), ChannelError> {
        self.count(self.inner.update_card(delivery, card).await)
    }
    async fn send_nudge(&self, delivery: &Delivery, card: &Card, text: &str) -> Result<(), ChannelError> {
        let sent = self.count(self.inner.send_nudge(delivery, card, text).await);
        if sent.is_ok() {
            self.metrics.nudges.get_or_create(&[("platform", self.inner.name().to_string())]).inc();
        }
        sent
    }
    async fn send_document(&self, chat: &str, reply_to: Option<&str>, document: &Document) -> Result<(), ChannelError> {
        self.count(self.inner.send_document(chat, reply_to, document).await)
    }
    async fn send_text(&self, chat: &str, text: &str) -> Result<(), ChannelError> {
        self.count(self.inner.send_text(chat, text).await)
    }
    async fn post_question(&self, destination: &Destination, question: &Question) -> Result<Delivery, ChannelError> {
        self.count(self.inner.post_question(destination, question).await)
    }
    async fn update_question(&self, delivery: &Delivery, question: &Question) -> Result<(), ChannelError> {
        self.count(self.inner.update_question(delivery, question).await)
    }

    fn thread_link(&self, chat: &str, thread: &str) -> Option<String> {
        self.inner.thread_link(chat, thread)
    }
}
