//! The shell around the engine: load → apply → commit → effects.
//!
//! [`Core::execute`] is the one door every state change goes through, from
//! HTTP, chat channels, the CLI and the scheduler alike. It serializes
//! transitions per session (striped async locks), commits each one durably
//! before anything else happens, then performs the effects: plan documents
//! are written inline (their path is part of the answer), long-pollers are
//! woken, and chat work (posting and editing cards, nudges, questions,
//! receipts) is queued per approval so it happens in transition order
//! without holding up the caller. Within one job the destinations are served
//! side by side: each platform has its own rate limiter, and a slow one
//! (Slack's 20/s) must not pace the others.

use crate::config::Settings;
use futures_util::future::join_all;
use futures_util::FutureExt;
use plangate_channel::{Channel, Destination, Document};
use plangate_engine::card::{card, document_file_name, nudge_text};
use plangate_engine::machine::describe_stale;
use plangate_engine::{
    apply, Actor, ApprovalId, AuditEvent, Command, Ctx, DecisionStatus, Effect, Proposal, Refusal, SessionKey, State, Timer, Timestamp,
    Transition,
};
use plangate_store::{Commit, OutboxEntry, Store, StoreError};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use thiserror::Error;
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tracing::{info_span, warn, Instrument};

const LOCK_STRIPES: usize = 64;

/// Chat jobs queued at once beyond which the scheduler leaves due nudges
/// in the store (see `scheduler`): a backlog costs disk, not memory.
pub const CHAT_BACKLOG: usize = 4096;

/// Approvals whose chat jobs run at once. As large as the nudge backlog, so
/// every queued nudge is at its platform's limiter and a slow platform does
/// not pace the others; each costs a few KB while it waits there.
const CHAT_WORKERS: usize = CHAT_BACKLOG;

/// Nudge sends per platform that may be loaded and rendered at once; the
/// rest wait for a place, holding nothing but their delivery record. Wider
/// than any platform's per-second limit, so the limiter, not the lane, sets
/// the pace.
const LANE_WIDTH: usize = 256;

#[derive(Debug, Error)]
pub enum CoreError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("storage failed, nothing was recorded: {0}")]
    Storage(#[from] StoreError),
    #[error("{0}")]
    NotFound(String),
}

/// The current wall-clock time.
pub fn now() -> Timestamp {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    Timestamp(ms)
}

/// What `execute` gives back besides the transition.
pub struct Executed {
    pub before: State,
    pub transition: Transition,
    /// Set when the transition wrote a plan document.
    pub document_path: Option<String>,
}

/// Extra inputs of one execution.
#[derive(Debug, Default, Clone)]
pub struct ExecMeta {
    /// The inbound event key handled by this transition, recorded with it.
    pub idempotency: Option<String>,
    /// The timer that fired, removed in the same transaction.
    pub fired: Option<Timer>,
}

/// The chat jobs a transition asks for, in effect order, each with the
/// approval (or question) whose queue it joins.
fn jobs_of(t: &Transition) -> Vec<(ApprovalId, Job)> {
    t.effects
        .iter()
        .filter_map(|effect| {
            Some(match effect {
                Effect::AppendReceipt { approval_id, text } => (*approval_id, Job::AppendReceipt(*approval_id, text.clone())),
                Effect::PostCards { approval_id } => (*approval_id, Job::PostCards(*approval_id)),
                Effect::UpdateCards { approval_id } => (*approval_id, Job::UpdateCards(*approval_id)),
                Effect::Nudge { approval_id, number } => (*approval_id, Job::Nudge(*approval_id, *number)),
                Effect::Escalate { approval_id } => (*approval_id, Job::Escalate(*approval_id)),
                Effect::PostQuestion { question_id } => (*question_id, Job::PostQuestion(*question_id)),
                Effect::UpdateQuestion { question_id } => (*question_id, Job::UpdateQuestion(*question_id)),
                Effect::WriteDocument { .. } | Effect::Schedule(_) | Effect::Cancel(_) | Effect::Wake => return None,
            })
        })
        .collect()
}

/// Chat jobs waiting, per approval, and the approvals ready for a worker.
/// Jobs wait here as data (a few dozen bytes each), not as tasks: at most
/// [`CHAT_WORKERS`] approvals are worked on at once.
#[derive(Default)]
struct JobQueues {
    /// Jobs not yet started, per approval, in transition order.
    waiting: HashMap<ApprovalId, VecDeque<(Job, Option<u64>, Ticket)>>,
    /// Approvals with waiting jobs and no worker on them, oldest first.
    ready: VecDeque<ApprovalId>,
    /// Approvals a worker is on.
    busy: HashSet<ApprovalId>,
    /// Workers running.
    workers: usize,
}

/// The count of chat jobs queued or running.
#[derive(Default)]
struct Backlog {
    count: AtomicUsize,
    /// Poked whenever a job leaves the count.
    progress: Notify,
}

/// One job's place in the [`Backlog`]. It travels with the job and leaves
/// the count when dropped, however the job ended (done, failed, panicked,
/// or its worker cancelled at shutdown), so the count, and the nudges that
/// wait on it, can never stick.
struct Ticket(Arc<Backlog>);

impl Ticket {
    fn new(backlog: &Arc<Backlog>) -> Ticket {
        backlog.count.fetch_add(1, Ordering::Relaxed);
        Ticket(backlog.clone())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::Relaxed);
        self.0.progress.notify_one();
    }
}

/// Chat work queued after a commit, performed in order per approval.
/// Written to the store's outbox in the transition's own commit and removed
/// once done, so a crash in between resumes it on the next start (at least
/// once: every job is safe to repeat).
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Job {
    PostCards(ApprovalId),
    UpdateCards(ApprovalId),
    Nudge(ApprovalId, u8),
    Escalate(ApprovalId),
    AppendReceipt(ApprovalId, String),
    PostQuestion(ApprovalId),
    UpdateQuestion(ApprovalId),
}

pub struct Core {
    pub settings: Arc<Settings>,
    pub store: Arc<dyn Store>,
    locks: Vec<tokio::sync::Mutex<()>>,
    waiters: Mutex<HashMap<SessionKey, watch::Sender<u64>>>,
    channels: RwLock<HashMap<String, Arc<dyn Channel>>>,
    queues: Mutex<JobQueues>,
    /// Chat jobs queued or running, so the scheduler can leave reminders in
    /// the store while the platforms work through a backlog.
    backlog: Arc<Backlog>,
    /// Chat jobs queued at once beyond which due nudges stay in the store.
    chat_backlog_limit: AtomicUsize,
    lanes: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Poked whenever a timer is scheduled, so the scheduler re-reads the earliest.
    pub scheduler_wake: Notify,
    /// Set when a commit failed; `/healthz` reports degraded until one succeeds.
    degraded: AtomicBool,
}

impl Core {
    pub fn new(settings: Arc<Settings>, store: Arc<dyn Store>) -> Arc<Core> {
        Arc::new(Core {
            settings,
            store,
            locks: (0..LOCK_STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
            waiters: Mutex::new(HashMap::new()),
            channels: RwLock::new(HashMap::new()),
            queues: Mutex::new(JobQueues::default()),
            backlog: Arc::new(Backlog::default()),
            chat_backlog_limit: AtomicUsize::new(CHAT_BACKLOG),
            lanes: Mutex::new(HashMap::new()),
            scheduler_wake: Notify::new(),
            degraded: AtomicBool::new(false),
        })
    }

    pub fn register_channel(&self, channel: Arc<dyn Channel>) {
        self.channels.write().unwrap_or_else(|e| e.into_inner()).insert(channel.name().to_string(), channel);
    }

    pub fn channel(&self, name: &str) -> Option<Arc<dyn Channel>> {
        self.channels.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// Chat jobs queued or running.
    pub fn chat_backlog(&self) -> usize {
        self.backlog.count.load(Ordering::Relaxed)
    }

    /// Resolves when a chat job has finished since the last call.
    pub async fn chat_progressed(&self) {
        self.backlog.progress.notified().await;
    }

    /// Whether the chat backlog is full: due nudges then wait in the store.
    pub fn chat_backlog_full(&self) -> bool {
        self.chat_backlog() >= self.chat_backlog_limit.load(Ordering::Relaxed)
    }

    /// Whether the chat backlog has drained to half its limit.
    pub fn chat_backlog_halved(&self) -> bool {
        self.chat_backlog() <= self.chat_backlog_limit.load(Ordering::Relaxed) / 2
    }

    /// Change the backlog limit (default [`CHAT_BACKLOG`]; tests use small ones).
    pub fn set_chat_backlog_limit(&self, limit: usize) {
        self.chat_backlog_limit.store(limit.max(1), Ordering::Relaxed);
    }

    /// A place in `channel`'s lane (see [`LANE_WIDTH`]).
    async fn lane(&self, channel: &str) -> Option<OwnedSemaphorePermit> {
        let lane = {
            let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
            lanes.entry(channel.to_string()).or_insert_with(|| Arc::new(Semaphore::new(LANE_WIDTH))).clone()
        };
        lane.acquire_owned().await.ok()
    }

    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    fn lock_for(&self, key: &SessionKey) -> &tokio::sync::Mutex<()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        &self.locks[(h.finish() as usize) % LOCK_STRIPES]
    }

    /// Run a blocking store call off the async workers.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(store.as_ref()))
            .await
            .unwrap_or_else(|e| Err(StoreError::Unavailable(format!("store task failed: {e}"))))
    }

    pub async fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        let key = key.clone();
        self.blocking(move |s| s.load(&key)).await
    }

    /// Apply one command to one session: the only way state changes.
    pub async fn execute(
        self: &Arc<Self>,
        key: &SessionKey,
        actor: Actor,
        command: Command,
        meta: ExecMeta,
    ) -> Result<Executed, CoreError> {
        let span =
            info_span!("transition", agent = %key.agent, session = %key.session_id, command = command.name(), actor = %actor.label());
        async move {
            let _guard = self.lock_for(key).lock().await;
            let before = self.load(key).await?;
            let ctx = Ctx { now: now(), random: rand::random(), timers: self.settings.timer_policy(&key.agent) };
            let transition = apply(&before, &actor, command, &ctx)?;
            let jobs = jobs_of(&transition);
            let mut seqs = vec![None; jobs.len()];
            if transition.changed || meta.fired.is_some() || meta.idempotency.is_some() {
                let mut commit = Commit::of(&transition, &before, meta.fired.as_ref());
                commit.idempotency.extend(meta.idempotency.clone());
                let work: Vec<Vec<u8>> = jobs.iter().map(|job| serde_json::to_vec(job).unwrap_or_default()).collect();
                let committed = self
                    .blocking(move |s| {
                        for work in work {
                            commit.outbox.push(OutboxEntry { seq: s.generate_seq()?, work });
                        }
                        let seqs: Vec<Option<u64>> = commit.outbox.iter().map(|e| Some(e.seq)).collect();
                        s.commit(commit)?;
                        Ok(seqs)
                    })
                    .await;
                match committed {
                    Ok(committed) => {
                        seqs = committed;
                        self.degraded.store(false, Ordering::Relaxed);
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "commit failed; the transition is not applied");
                        self.degraded.store(true, Ordering::Relaxed);
                        return Err(e.into());
                    }
                }
            }
            tracing::info!(changed = transition.changed, effects = transition.effects.len(), "committed");
            let document_path = self.perform(key, &transition).await;
            for ((id, job), seq) in jobs.into_iter().zip(seqs) {
                self.enqueue(id, job, seq);
            }
            Ok(Executed { before, transition, document_path })
        }
        .instrument(span)
        .await
    }

    /// Execute a command that decides approval `id` (approve, edit, revise,
    /// cancel): finds its session, and explains a stale id in the words of
    /// the proposal's own fate ("already approved by …", "superseded by v3").
    pub async fn decide(self: &Arc<Self>, id: ApprovalId, actor: Actor, command: Command, meta: ExecMeta) -> Result<Executed, CoreError> {
        let Some(target) = self.blocking(move |s| s.proposal(&id)).await? else {
            return Err(CoreError::NotFound(format!("no approval {id}")));
        };
        match self.execute(&target.session, actor, command, meta).await {
            Err(CoreError::Refused(Refusal::Stale(_))) => {
                let state = self.load(&target.session).await?;
                let current = self.blocking(move |s| s.proposal(&id)).await?.unwrap_or(target);
                Err(CoreError::Refused(Refusal::Stale(describe_stale(&current, state.session.version))))
            }
            other => other,
        }
    }

    /// Run `work` while holding the lock of `key` (for read-modify-write
    /// outside the engine, such as namespaces).
    pub async fn with_session_lock<T>(&self, key: &SessionKey, work: impl std::future::Future<Output = T>) -> T {
        let _guard = self.lock_for(key).lock().await;
        work.await
    }

    /// Perform a committed transition's effects other than chat jobs (see
    /// [`jobs_of`]). Called under the session lock.
    async fn perform(self: &Arc<Self>, key: &SessionKey, t: &Transition) -> Option<String> {
        let mut document_path = None;
        for effect in &t.effects {
            match effect {
                Effect::WriteDocument { approval_id } => {
                    if let Some(p) = t.state.latest.as_ref().filter(|p| p.approval_id == *approval_id) {
                        document_path = self.write_document(p).await;
                    }
                }
                Effect::Schedule(_) => self.scheduler_wake.notify_one(),
                Effect::Wake => self.wake(key),
                Effect::Cancel(_)
                | Effect::AppendReceipt { .. }
                | Effect::PostCards { .. }
                | Effect::UpdateCards { .. }
                | Effect::Nudge { .. }
                | Effect::Escalate { .. }
                | Effect::PostQuestion { .. }
                | Effect::UpdateQuestion { .. } => {}
            }
        }
        document_path
    }

    async fn write_document(&self, p: &Proposal) -> Option<String> {
        let data_dir: PathBuf = self.settings.data_dir.clone();
        let (agent, title, created, text, id) = (p.session.agent.clone(), p.plan.title.clone(), p.created_at, p.document(), p.approval_id);
        let written = tokio::task::spawn_blocking(move || plangate_store::write_document(&data_dir, &agent, &title, created, &text)).await;
        match written {
            Ok(Ok(path)) => {
                let path = path.display().to_string();
                let stored = path.clone();
                if let Err(e) = self.blocking(move |s| s.set_document_path(&id, &stored)).await {
                    warn!(error = %e, "could not record the document path");
                }
                Some(path)
            }
            Ok(Err(e)) => {
                warn!(error = %e, "plan document not written");
                None
            }
            Err(e) => {
                warn!(error = %e, "plan document task failed");
                None
            }
        }
    }

    /// A receiver that sees every later wake-up of `key`. Subscribe before
    /// reading state, so no wake-up can slip between the read and the wait.
    pub fn subscribe(&self, key: &SessionKey) -> watch::Receiver<u64> {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        waiters.entry(key.clone()).or_insert_with(|| watch::channel(0).0).subscribe()
    }

    fn wake(&self, key: &SessionKey) {
        let waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = waiters.get(key) {
            tx.send_modify(|n| *n += 1);
        }
    }

    /// The latest proposal of `key`, waiting up to `wait` for it to be decided.
    pub async fn wait_decision(&self, key: &SessionKey, wait: Duration) -> Result<Option<Proposal>, StoreError> {
        let mut rx = self.subscribe(key);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let state = self.load(key).await?;
            let Some(p) = state.latest else { return Ok(None) };
            if p.status != DecisionStatus::Pending || tokio::time::Instant::now() >= deadline {
                return Ok(Some(p));
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                // Deadline: answer with the state as it is now.
                continue;
            }
        }
    }

    /// A question of `key`, waiting up to `wait` for its answer.
    pub async fn wait_question(
        &self,
        key: &SessionKey,
        id: ApprovalId,
        wait: Duration,
    ) -> Result<Option<plangate_engine::Question>, StoreError> {
        let mut rx = self.subscribe(key);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let q = self.blocking(move |s| s.question(&id)).await?;
            let Some(q) = q.filter(|q| q.session == *key) else { return Ok(None) };
            if q.status == plangate_engine::QuestionStatus::Answered || tokio::time::Instant::now() >= deadline {
                return Ok(Some(q));
            }
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                continue;
            }
        }
    }

    /// The destinations configured for an agent.
    pub fn destinations(&self, agent: &str) -> Vec<Destination> {
        let names = self.settings.raw.agents.get(agent).map(|a| a.destinations.clone()).unwrap_or_default();
        self.named_destinations(&names)
    }

    /// The escalation destinations of an agent.
    pub fn escalation_destinations(&self, agent: &str) -> Vec<Destination> {
        let names = self.settings.escalations.get(agent).cloned().unwrap_or_default();
        self.named_destinations(&names)
    }

    fn named_destinations(&self, names: &[String]) -> Vec<Destination> {
        let raw = &self.settings.raw;
        names
            .iter()
            .filter_map(|name| {
                let d = raw.destinations.get(name)?;
                Some(Destination { name: name.clone(), channel: d.channel.clone(), chat: d.chat.clone(), style: d.style })
            })
            .collect()
    }

    /// Record something that happened outside a transition.
    pub async fn audit(&self, key: &SessionKey, actor: &str, action: &str, approval: Option<(ApprovalId, u32)>, detail: String) {
        let event = AuditEvent {
            at: now(),
            agent: key.agent.clone(),
            session_id: key.session_id.clone(),
            actor: actor.to_string(),
            action: action.to_string(),
            approval_id: approval.map(|a| a.0),
            version: approval.map(|a| a.1),
            detail,
        };
        if let Err(e) = self.blocking(move |s| s.append_audit(&[event])).await {
            warn!(error = %e, "audit record lost");
        }
    }

    /// Re-queue the chat work committed but not done before the last stop
    /// (a crash between a decision's commit and its card edits, say). Call
    /// once at start, after the channels are registered. Returns how many
    /// jobs were queued (unreadable entries are logged and dropped).
    pub async fn resume_outbox(self: &Arc<Self>) -> Result<usize, StoreError> {
        let entries = self.blocking(|s| s.outbox()).await?;
        let mut count = 0;
        for entry in entries {
            match serde_json::from_slice::<(ApprovalId, Job)>(&entry.work) {
                Ok((id, job)) => {
                    self.enqueue(id, job, Some(entry.seq));
                    count += 1;
                }
                Err(e) => {
                    warn!(seq = entry.seq, error = %e, "unreadable outbox entry dropped");
                    let seq = entry.seq;
                    let _ = self.blocking(move |s| s.remove_outbox(seq)).await;
                }
            }
        }
        if count > 0 {
            tracing::info!(count, "resumed chat work left over from the last run");
        }
        Ok(count)
    }

    /// Queue a chat job behind the earlier jobs of the same approval, and
    /// start a worker if one is free to take it. `seq` is its outbox entry.
    fn enqueue(self: &Arc<Self>, id: ApprovalId, job: Job, seq: Option<u64>) {
        let item = (job, seq, Ticket::new(&self.backlog));
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let waiting = queues.waiting.entry(id).or_default();
        waiting.push_back(item);
        if waiting.len() == 1 && !queues.busy.contains(&id) {
            queues.ready.push_back(id);
        }
        if queues.workers < CHAT_WORKERS && !queues.ready.is_empty() {
            queues.workers += 1;
            let core = self.clone();
            tokio::spawn(async move { core.work().await });
        }
    }

    /// A chat worker: takes the approval that has waited longest, runs its
    /// jobs in order until none are left, and stops when no approval is ready.
    async fn work(self: Arc<Self>) {
        loop {
            let id = {
                let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
                let Some(id) = queues.ready.pop_front() else {
                    queues.workers -= 1;
                    return;
                };
                queues.busy.insert(id);
                id
            };
            loop {
                let next = {
                    let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
                    match queues.waiting.get_mut(&id).and_then(VecDeque::pop_front) {
                        Some(item) => item,
                        None => {
                            // Enqueue looks at `busy` under this lock, so a job
                            // arriving after this makes the approval ready again.
                            queues.waiting.remove(&id);
                            queues.busy.remove(&id);
                            break;
                        }
                    }
                };
                let (job, seq, ticket) = next;
                let span = info_span!("job", approval = %id, job = ?job);
                // A bug in an adapter must not take the worker (and the
                // approval's later jobs) down with it.
                if AssertUnwindSafe(self.run_job(job).instrument(span)).catch_unwind().await.is_err() {
                    tracing::error!(approval = %id, "a chat job panicked; carrying on with the next");
                }
                if let Some(seq) = seq {
                    if let Err(e) = self.blocking(move |s| s.remove_outbox(seq)).await {
                        warn!(seq, error = %e, "outbox entry not removed; the job will run again after a restart");
                    }
                }
                drop(ticket);
            }
        }
    }

    /// Wait until every queued chat job has run (tests and shutdown).
    pub async fn drain(&self) {
        for _ in 0..2000 {
            if self.chat_backlog() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn run_job(self: &Arc<Self>, job: Job) {
        match job {
            Job::PostCards(id) => self.post_cards(id).await,
            Job::UpdateCards(id) => self.update_cards(id).await,
            Job::Nudge(id, n) => self.nudge(id, n).await,
            Job::Escalate(id) => self.escalate(id).await,
            Job::AppendReceipt(id, text) => {
                let Ok(Some(path)) = self.blocking(move |s| s.document_path(&id)).await else { return };
                let result = tokio::task::spawn_blocking(move || plangate_store::append_receipt(std::path::Path::new(&path), &text)).await;
                if !matches!(result, Ok(Ok(()))) {
                    warn!(approval = %id, "receipt not appended to the plan document");
                }
            }
            Job::PostQuestion(id) => self.post_question(id).await,
            Job::UpdateQuestion(id) => self.update_question(id).await,
        }
    }

    async fn proposal_and_state(&self, id: ApprovalId) -> Option<(Proposal, State)> {
        let p = self.blocking(move |s| s.proposal(&id)).await.ok()??;
        let state = self.load(&p.session).await.ok()?;
        Some((p, state))
    }

    pub fn document_of(p: &Proposal) -> Document {
        Document { file_name: document_file_name(p), text: p.document() }
    }

    async fn post_cards(self: &Arc<Self>, id: ApprovalId) {
        let Some((p, state)) = self.proposal_and_state(id).await else { return };
        let mut destinations = self.destinations(&p.session.agent);
        let pid = Some((id, p.version));
        // Resumed after a crash: the cards already out stay, the rest go.
        let posted = self.blocking(move |s| s.deliveries(&id)).await.unwrap_or_default();
        if !posted.is_empty() {
            destinations.retain(|d| !posted.iter().any(|delivered| delivered.destination == d.name));
            if destinations.is_empty() {
                return;
            }
        }
        if destinations.is_empty() {
            let detail = "no destinations configured for this agent: the card was recorded here only".to_string();
            self.audit(&p.session, "plangate", "card_recorded", pid, detail).await;
            return;
        }
        let view = card(&p, Some(&state), now());
        let document = Self::document_of(&p);
        // Side by side: each platform has its own limiter, so a slow one must
        // not pace the others.
        let (p, view, document) = (&p, &view, &document);
        join_all(destinations.into_iter().map(|dest| async move {
            let Some(channel) = self.channel(&dest.channel) else {
                let detail = format!("{}: channel {} is not running", dest.name, dest.channel);
                self.audit(&p.session, "plangate", "card_not_delivered", pid, detail).await;
                return;
            };
            match channel.post_card(&dest, view, document).await {
                Ok(delivery) => {
                    let detail = format!("{} {} message {}", dest.name, delivery.chat, delivery.message_id);
                    if let Err(e) = self.blocking(move |s| s.add_delivery(&id, &delivery)).await {
                        warn!(error = %e, "delivery not recorded; this card will not be updated");
                    }
                    self.audit(&p.session, "plangate", "card_posted", pid, detail).await;
                }
                Err(e) => {
                    warn!(destination = %dest.name, error = %e, "card not delivered");
                    self.audit(&p.session, "plangate", "card_not_delivered", pid, format!("{}: {e}", dest.name)).await;
                }
            }
        }))
        .await;
    }

    async fn update_cards(&self, id: ApprovalId) {
        let Some((p, state)) = self.proposal_and_state(id).await else { return };
        let Ok(deliveries) = self.blocking(move |s| s.deliveries(&id)).await else { return };
        let view = card(&p, Some(&state), now());
        let (p, view) = (&p, &view);
        join_all(deliveries.into_iter().map(|delivery| async move {
            let Some(channel) = self.channel(&delivery.channel) else { return };
            if let Err(e) = channel.update_card(&delivery, view).await {
                warn!(chat = %delivery.chat, error = %e, "card not updated");
                self.audit(&p.session, "plangate", "card_not_updated", Some((id, p.version)), format!("{}: {e}", delivery.destination))
                    .await;
            }
        }))
        .await;
    }

    /// Remind every destination of a pending approval. Each send first takes
    /// a place in its platform's lane and only then loads, re-checks and
    /// renders: a storm of reminders waits as a few hundred bytes each, not
    /// as rendered messages, and a plan decided while its reminder waited is
    /// never nudged.
    async fn nudge(&self, id: ApprovalId, number: u8) {
        let Ok(deliveries) = self.blocking(move |s| s.deliveries(&id)).await else { return };
        join_all(deliveries.into_iter().map(|delivery| async move {
            let Some(channel) = self.channel(&delivery.channel) else { return };
            let _lane = self.lane(&delivery.channel).await;
            let Some((p, state)) = self.proposal_and_state(id).await else { return };
            // Re-check: a decided, superseded or cancelled plan never gets a nudge.
            if p.status != DecisionStatus::Pending || state.session.latest_approval != Some(id) {
                return;
            }
            let key = format!("nudge:{id}:{number}:{}:{}", delivery.destination, delivery.chat);
            let probe = key.clone();
            if self.blocking(move |s| s.seen(&probe)).await.unwrap_or(false) {
                return; // sent before a restart: never twice
            }
            let now = now();
            let (view, text) = (card(&p, Some(&state), now), nudge_text(&p, number, now));
            match channel.send_nudge(&delivery, &view, &text).await {
                Ok(()) => {
                    let _ = self.blocking(move |s| s.mark_seen(&key)).await;
                }
                Err(e) => warn!(chat = %delivery.chat, error = %e, "nudge not sent"),
            }
        }))
        .await;
    }

    /// Post the card to the escalation destinations; their deliveries are
    /// recorded like any other, so later decisions edit them too.
    async fn escalate(&self, id: ApprovalId) {
        let Some((p, state)) = self.proposal_and_state(id).await else { return };
        if p.status != DecisionStatus::Pending {
            return;
        }
        let mut view = card(&p, Some(&state), now());
        let waited = plangate_engine::ids::humanize_ms(now().0 - p.created_at.0);
        view.context = format!("⚠ escalated: no decision after {waited} · {}", view.context);
        let document = Self::document_of(&p);
        let posted = self.blocking(move |s| s.deliveries(&id)).await.unwrap_or_default();
        for dest in self.escalation_destinations(&p.session.agent) {
            if posted.iter().any(|delivered| delivered.destination == dest.name) {
                continue; // resumed after a crash: already escalated there
            }
            let Some(channel) = self.channel(&dest.channel) else { continue };
            match channel.post_card(&dest, &view, &document).await {
                Ok(delivery) => {
                    let _ = self.blocking(move |s| s.add_delivery(&id, &delivery)).await;
                    self.audit(&p.session, "plangate", "card_escalated", Some((id, p.version)), dest.name.clone()).await;
                }
                Err(e) => warn!(destination = %dest.name, error = %e, "escalation not delivered"),
            }
        }
    }

    async fn post_question(&self, id: ApprovalId) {
        let Ok(Some(q)) = self.blocking(move |s| s.question(&id)).await else { return };
        let posted = self.blocking(move |s| s.question_deliveries(&id)).await.unwrap_or_default();
        for dest in self.destinations(&q.session.agent) {
            if posted.iter().any(|delivered| delivered.destination == dest.name) {
                continue; // resumed after a crash: already asked there
            }
            let Some(channel) = self.channel(&dest.channel) else { continue };
            match channel.post_question(&dest, &q).await {
                Ok(delivery) => {
                    let _ = self.blocking(move |s| s.add_question_delivery(&id, &delivery)).await;
                }
                Err(e) => warn!(destination = %dest.name, error = %e, "question not delivered"),
            }
        }
    }

    async fn update_question(&self, id: ApprovalId) {
        let Ok(Some(q)) = self.blocking(move |s| s.question(&id)).await else { return };
        let Ok(deliveries) = self.blocking(move |s| s.question_deliveries(&id)).await else { return };
        for delivery in deliveries {
            let Some(channel) = self.channel(&delivery.channel) else { continue };
            if let Err(e) = channel.update_question(&delivery, &q).await {
                warn!(chat = %delivery.chat, error = %e, "question not updated");
            }
        }
    }
}
