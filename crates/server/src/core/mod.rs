//! The shell around the engine: load → apply → commit → effects.
//!
//! [`Core::execute`] is the one door every state change goes through, from
//! HTTP, chat channels, the CLI and the scheduler alike. It serializes
//! transitions per session (an async lock per session key: [`locks`]),
//! commits each one durably before anything else happens, then performs
//! the effects: the plan document's path is part of the answer (its file
//! is written by the approval's first chat job), long-pollers are woken
//! ([`waiters`]), and chat work (posting and editing cards, nudges,
//! questions, receipts) is queued per approval ([`jobs`]) so it happens in
//! transition order without holding up the caller. The bodies of those chat
//! jobs live in [`chat`]. Decisions and answers of an agent with a webhook
//! are POSTed to it, signed, through the same outbox ([`webhooks`]).
//!
//! Time comes from the [`Clock`] the core was built with, never from the
//! system directly, so tests turn time instead of sleeping.

mod adapters;
mod chat;
mod decide;
mod email;
mod jobs;
mod ladder;
mod locks;
mod push;
mod roles;
mod threads;
mod timers;
mod waiters;
pub mod webhooks;

pub use adapters::Adapters;
pub use decide::{Decided, Decision, DecisionRefused};
pub use jobs::{ChatWork, Undrained, CHAT_BACKLOG};
pub use roles::Roles;
pub use threads::SessionThreads;
pub use timers::TimerWake;
pub use waiters::Waiters;

use crate::clock::{Clock, SystemClock};
use crate::config::Settings;
use crate::pairing::Pairing;
use crate::storage::Storage;
use jobs::jobs_of;
use plangate_engine::machine::describe_stale;
use plangate_engine::{apply, Actor, ApprovalId, Command, Ctx, Effect, Proposal, Refusal, SessionKey, State, Timer, Timestamp, Transition};
use plangate_store::{Commit, Committed, Flush, Preempted, Store, StoreError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use thiserror::Error;
use tracing::{info_span, warn, Instrument};
use webhooks::{webhook_jobs, WebhookQueues};

/// How many times a transition is re-applied after another replica
/// changed its session first, before the caller is told to retry.
const MAX_CONFLICT_RETRIES: u32 = 20;
/// The pause before a re-apply, at random within these bounds (ms), so two
/// replicas racing on one session do not collide again in lockstep.
const CONFLICT_PAUSE_MS: (u64, u64) = (1, 10);

/// A poisoned lock's data is still consistent here (sets and maps of ids).
/// How far before an approval was proposed its audit trail is read from:
/// a wall clock stepped back (or another replica's, a little behind) may
/// have stamped its first entries before its `created_at`.
const AUDIT_CLOCK_MARGIN_MS: i64 = 10 * 60 * 1000;

/// Where `p`'s audit trail begins, for [`plangate_store::AuditQuery::since`]:
/// nothing of an approval is audited before it was proposed, so the store
/// need not read the history before it.
pub fn audit_since(p: &plangate_engine::Proposal) -> plangate_engine::Timestamp {
    plangate_engine::Timestamp(p.created_at.0.saturating_sub(AUDIT_CLOCK_MARGIN_MS))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Error)]
pub enum CoreError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("storage failed, nothing was recorded: {0}")]
    Storage(#[from] StoreError),
    /// Another replica came first (it decided, fired the timer, or handled
    /// the event); nothing was recorded here. Not a failure of the store.
    #[error("{0}")]
    Preempted(#[from] Preempted),
    #[error("{0}")]
    NotFound(String),
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
    /// The fewest approvers a new proposal needs, when the operator's
    /// policy asks for more than the configuration (`quorum = N`).
    pub min_quorum: Option<u32>,
    /// The operator's policy asks for passkey step-up on a new proposal
    /// (`step_up = true` on a matching plan rule): stamped on it.
    pub step_up: bool,
}

/// What one attempt of a transition came to (see [`Core::attempt`]).
enum Attempt {
    /// The command changed nothing and nothing needed recording.
    Unchanged { before: State, transition: Transition, jobs: Vec<(ApprovalId, jobs::Job)> },
    /// The commit was tried: written, preempted or failed.
    Committed {
        before: State,
        transition: Transition,
        jobs: Vec<(ApprovalId, jobs::Job)>,
        /// The commit's outcome, and its flush to await before it counts
        /// as durable (see [`plangate_store::flushed`]).
        committed: Result<(Committed<Vec<u64>>, Flush), StoreError>,
        /// When the commit began, for the commit-latency metric.
        started: std::time::Instant,
    },
}

/// The shell: settings, store, clock, locks, waiters, channels and the chat
/// job machinery. One per process, shared by every handler.
pub struct Core {
    pub settings: Arc<Settings>,
    /// The store and the clock (see [`Storage`]).
    pub storage: Arc<Storage>,
    locks: locks::SessionLocks,
    /// Long-polls and the shutdown they answer (see [`Waiters`]).
    pub waiters: Arc<Waiters>,
    /// The started channel adapters and their liveness (see [`Adapters`]).
    pub adapters: Adapters,
    /// The chat jobs: queues, backlog, lanes, outbox marks (see [`ChatWork`]).
    pub chat: ChatWork,
    /// Webhook deliveries, queued per session apart from the chat jobs.
    webhooks: WebhookQueues,
    /// What wakes the scheduler (see [`TimerWake`]).
    pub timers: TimerWake,
    /// Set when a commit failed; `/healthz` reports degraded until one succeeds.
    degraded: AtomicBool,
    /// The web page's links (`server.public_url` set): cards link to it.
    web_links: OnceLock<Arc<plangate_web::Links>>,
    /// What `GET /metrics` reports.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Which platforms' inbound connection this process holds (see [`Roles`]).
    pub roles: Roles,
    /// Failed authentications per client address (API bearer tokens and
    /// the web page's sign-ins share one budget per address).
    auth_throttle: crate::throttle::AuthThrottle,
    /// The live approver index (config + paired destinations) and the
    /// pairing attempts' budget (see [`crate::pairing`]).
    pub pairing: Arc<Pairing>,
    /// Which topic or thread holds a session (see [`SessionThreads`]).
    pub threads: SessionThreads,
    /// The SMTP sender when `[email]` is set (see `core::email`).
    pub mailer: Option<plangate_email::Mailer>,
    /// The Web Push sender when `[push]` is set, with the VAPID key read at
    /// start (see `core::push`, `crate::push`).
    pusher: OnceLock<plangate_push::Pusher>,
}

impl Core {
    /// A core on the system clock.
    pub fn new(settings: Arc<Settings>, store: Arc<dyn Store>) -> Arc<Core> {
        Core::with_clock(settings, store, Arc::new(SystemClock))
    }

    /// A core whose "now" is `clock` (tests pass a clock they can turn).
    pub fn with_clock(settings: Arc<Settings>, store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Arc<Core> {
        let storage = Arc::new(Storage::new(store.clone(), clock));
        let pairing = Arc::new(Pairing::new(storage.clone(), settings.clone()));
        let metrics = Arc::new(crate::metrics::Metrics::new());
        let mailer = email::mailer(&settings);
        Arc::new(Core {
            roles: Roles::new(store, metrics.clone()),
            adapters: Adapters::new(metrics.clone()),
            pairing,
            settings,
            threads: SessionThreads::new(storage.clone()),
            storage,
            locks: locks::SessionLocks::default(),
            waiters: Arc::new(Waiters::default()),
            chat: ChatWork::default(),
            webhooks: WebhookQueues::default(),
            timers: TimerWake::default(),
            degraded: AtomicBool::new(false),
            web_links: OnceLock::new(),
            metrics,
            auth_throttle: crate::throttle::AuthThrottle::default(),
            mailer,
            pusher: OnceLock::new(),
        })
    }

    /// Serve the web page's links from now on (once, at start).
    pub fn set_web_links(&self, links: Arc<plangate_web::Links>) {
        let _ = self.web_links.set(links);
    }

    /// The web page's links, when `server.public_url` is set.
    /// Push from now on with `pusher` (once, at start, `[push]` set).
    pub fn set_pusher(&self, pusher: plangate_push::Pusher) {
        let _ = self.pusher.set(pusher);
    }

    /// The Web Push sender, when `[push]` is on.
    pub fn pusher(&self) -> Option<&plangate_push::Pusher> {
        self.pusher.get()
    }

    pub fn web_links(&self) -> Option<&Arc<plangate_web::Links>> {
        self.web_links.get()
    }

    /// The card of `p` as of `now`, with its "Open in browser" link while
    /// the read link opens the page (pending, or being executed).
    pub fn card_of(&self, p: &Proposal, state: &State, now: Timestamp) -> plangate_engine::card::Card {
        let mut view = plangate_engine::card::card(p, Some(state), now);
        if let Some(links) = self.web_links().filter(|_| plangate_web::read_link_live(p, Some(state))) {
            view.link = Some(links.read_url(&p.approval_id));
        }
        view
    }

    /// The current time, from the core's clock.
    pub fn now(&self) -> Timestamp {
        self.storage.now()
    }

    /// The core's clock, for what keeps time beside the core (the web
    /// page's links).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.storage.clock()
    }

    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// [`Storage::blocking`]: a blocking store call off the async workers.
    pub async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.storage.blocking(f).await
    }

    /// [`Storage::blocking_sync`]: a rare store call from synchronous code.
    pub fn blocking_sync<T: Send>(&self, f: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send) -> Result<T, StoreError> {
        self.storage.blocking_sync(f)
    }

    pub async fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        self.storage.load(key).await
    }

    /// One attempt of [`Core::execute`], on a blocking thread: load the
    /// session, apply the command, and commit what changed (conditional on
    /// the revision loaded when the store is `shared`), its chat jobs
    /// numbered in the same commit. The caller retries a conflict.
    ///
    /// Boxed: an attempt holds two states and a transition (kilobytes),
    /// and a blocking task's output is moved from its thread to the
    /// awaiting task through several frames; a box moves as a pointer
    /// (moves of such values were a quarter of a decision's instructions,
    /// docs/PERFORMANCE.md §23).
    fn attempt(&self, key: &SessionKey, actor: &Actor, command: Command, meta: &ExecMeta, shared: bool) -> Result<Box<Attempt>, CoreError> {
        let store = self.storage.store.as_ref();
        let (before, revision) = store.load_revision(key)?;
        let mut ctx = Ctx {
            now: self.now(),
            random: rand::random(),
            timers: self.settings.timer_policy(&key.agent),
            approvals: self.pairing.approval_policy(&key.agent),
        };
        if let Some(n) = meta.min_quorum {
            ctx.approvals.required = ctx.approvals.required.max(n);
        }
        ctx.approvals.step_up |= meta.step_up;
        let transition = apply(&before, actor, command, &ctx)?;
        let mut jobs = jobs_of(&transition, self.mailer.is_some(), self.settings.raw.push.is_some());
        let recorded = self.cards_nowhere(&mut jobs, &transition);
        jobs.extend(webhook_jobs(&self.settings, &before, &transition));
        if !(transition.changed || meta.fired.is_some() || meta.idempotency.is_some()) {
            return Ok(Box::new(Attempt::Unchanged { before, transition, jobs }));
        }
        let mut commit = Commit::of(&transition, &before, meta.fired.as_ref());
        commit.audit.extend(recorded);
        commit.idempotency.extend(meta.idempotency.clone());
        commit.expected_revision = shared.then_some(revision);
        let work: Vec<Vec<u8>> = jobs.iter().map(|job| serde_json::to_vec(job).unwrap_or_default()).collect();
        let started = std::time::Instant::now();
        let mut marked = Vec::new();
        // Marked queued before they exist: the outbox claimer (replicas)
        // must never queue them a second time.
        // Written here, flushed later: the caller awaits the flush off this
        // thread (`Core::execute`).
        let committed = store.commit_numbered_unflushed(commit, work, &mut |seqs| {
            self.chat.mark_queued(seqs);
            marked = seqs.to_vec();
        });
        if !matches!(committed, Ok((Committed::Written(_), _))) {
            self.chat.unmark_queued(&marked);
        }
        Ok(Box::new(Attempt::Committed { before, transition, jobs, committed, started }))
    }

    /// Apply one command to one session: the only way state changes.
    ///
    /// On a store shared by replicas the commit is conditional on the
    /// session's revision at load: when another replica committed first
    /// ([`Preempted::Conflict`]), the session is loaded again and the
    /// command re-applied to what that replica wrote, so two approvers
    /// clicking on two replicas get one decision and one refusal from the
    /// engine ("already approved by …"), never two decisions. Only the
    /// attempt that committed has its effects performed and its jobs queued.
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
            let _guard = self.locks.lock(key).await;
            let shared = self.storage.store.shared();
            let mut conflicts = 0;
            let (before, transition, jobs, seqs) = loop {
                // Load, apply and commit on one blocking thread: one hop off
                // the async runtime per attempt, not one for the load and
                // another for the commit (fewer context switches; no
                // throughput change measured, docs/PERFORMANCE.md §16).
                let core = self.clone();
                let (key, actor, command, meta) = (key.clone(), actor.clone(), command.clone(), meta.clone());
                let span = tracing::Span::current();
                let attempt = tokio::task::spawn_blocking(move || span.in_scope(|| core.attempt(&key, &actor, command, &meta, shared)))
                    .await
                    .unwrap_or_else(|e| Err(StoreError::Unavailable(format!("store task failed: {e}")).into()))?;
                let (before, transition, jobs, committed) = match *attempt {
                    Attempt::Unchanged { before, transition, jobs } => {
                        let seqs = vec![None; jobs.len()];
                        break (before, transition, jobs, seqs);
                    }
                    Attempt::Committed { before, transition, jobs, committed, started } => {
                        // Durable before anything is told of it: the flush
                        // is awaited here, under the session's lock, without
                        // a thread parked for it.
                        let committed = match committed {
                            Ok((written @ Committed::Written(_), flush)) => {
                                match plangate_store::flushed(self.storage.store.clone(), flush).await {
                                    Ok(()) => Ok(written),
                                    Err(e) => {
                                        if let Committed::Written(seqs) = &written {
                                            self.chat.unmark_queued(seqs);
                                        }
                                        Err(e)
                                    }
                                }
                            }
                            Ok((preempted, _)) => Ok(preempted),
                            Err(e) => Err(e),
                        };
                        if committed.is_ok() {
                            self.metrics.commit_latency(started.elapsed().as_secs_f64());
                        }
                        (before, transition, jobs, committed)
                    }
                };
                match committed {
                    Ok(Committed::Written(seqs)) => {
                        self.degraded.store(false, Ordering::Relaxed);
                        break (before, transition, jobs, seqs.into_iter().map(Some).collect());
                    }
                    Ok(Committed::Preempted(Preempted::Conflict)) if conflicts < MAX_CONFLICT_RETRIES => {
                        conflicts += 1;
                        self.metrics.commit_conflict();
                        tracing::debug!(attempt = conflicts, "another replica changed the session first; loading it again");
                        let pause = rand::random::<u64>() % (CONFLICT_PAUSE_MS.1 - CONFLICT_PAUSE_MS.0 + 1) + CONFLICT_PAUSE_MS.0;
                        tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                    }
                    // Not degradation: the store works, others keep winning.
                    Ok(Committed::Preempted(p @ Preempted::Conflict)) => {
                        self.metrics.commit_conflict();
                        warn!(attempts = conflicts + 1, "the session kept changing under this transition; gave up, nothing was recorded");
                        return Err(p.into());
                    }
                    // The timer fired on another replica: its transition is
                    // that replica's to perform.
                    Ok(Committed::Preempted(p @ Preempted::TimerGone)) => {
                        tracing::debug!("the timer already fired on another replica; nothing to do");
                        return Err(p.into());
                    }
                    // The event was handled by another replica (a platform's
                    // retry reaching a second replica): like a seen event.
                    Ok(Committed::Preempted(p @ Preempted::AlreadyHandled(_))) => {
                        tracing::debug!(preempted = %p, "the event was already handled by another replica");
                        return Err(p.into());
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "commit failed; the transition is not applied");
                        self.degraded.store(true, Ordering::Relaxed);
                        return Err(e.into());
                    }
                }
            };
            tracing::info!(changed = transition.changed, effects = transition.effects.len(), "committed");
            if transition.changed {
                self.metrics.transition(&before, &transition, &actor);
            }
            let document_path = self.perform(key, &transition).await;
            // Every committed change wakes the session's watchers, not only
            // decisions: the web page's live checklist follows step updates.
            // A long-poll woken by one re-reads and waits on.
            if transition.changed && !transition.effects.iter().any(|e| matches!(e, Effect::Wake)) {
                self.waiters.wake(key);
            }
            let written = (!jobs.is_empty()).then(|| jobs::Written::of(&transition));
            for ((id, job), seq) in jobs.into_iter().zip(seqs) {
                self.enqueue(id, job, seq, written.clone());
            }
            Ok(Executed { before, transition, document_path })
        }
        .instrument(span)
        .await
    }

    /// Execute a command aimed at approval `id` (approve, edit, revise,
    /// cancel, release): finds its session, and explains a stale id in the
    /// words of the proposal's own fate ("already approved by …",
    /// "superseded by v3").
    pub async fn execute_on_approval(
        self: &Arc<Self>,
        id: ApprovalId,
        actor: Actor,
        command: Command,
        meta: ExecMeta,
    ) -> Result<Executed, CoreError> {
        let Some(target) = self.blocking(move |s| s.proposal(&id)).await? else {
            return Err(CoreError::NotFound(format!("no approval {id}")));
        };
        self.execute_on_proposal(target, actor, command, meta).await
    }

    /// [`Core::execute_on_approval`] for a caller that has loaded the
    /// proposal already (the hub, to authorize the click): one load fewer.
    pub async fn execute_on_proposal(
        self: &Arc<Self>,
        target: Proposal,
        actor: Actor,
        command: Command,
        meta: ExecMeta,
    ) -> Result<Executed, CoreError> {
        let id = target.approval_id;
        let (who, what) = (actor.label(), command.name());
        match self.execute(&target.session, actor, command, meta).await {
            // Who may not decide, and a repeated approval: said to the
            // person, and audited, though nothing changed.
            Err(CoreError::Refused(refusal @ (Refusal::Forbidden(_) | Refusal::AlreadyApproved(_)))) => {
                let detail = format!("{what} refused: {refusal}");
                self.audit(&target.session, &who, "refused", Some((id, target.version)), detail).await;
                Err(CoreError::Refused(refusal))
            }
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
        let _guard = self.locks.lock(key).await;
        work.await
    }

    /// Perform a committed transition's effects other than chat jobs (see
    /// [`jobs_of`]). Called under the session lock; no I/O but wake-ups. The
    /// plan document's path is known now and returned; the file is written
    /// by the approval's first chat job, off the request path.
    async fn perform(self: &Arc<Self>, key: &SessionKey, t: &Transition) -> Option<String> {
        let mut document_path = None;
        for effect in &t.effects {
            match effect {
                Effect::WriteDocument { approval_id } => {
                    if let Some(p) = t.state.latest.as_ref().filter(|p| p.approval_id == *approval_id) {
                        document_path = Some(self.plan_document_path(p).display().to_string());
                    }
                }
                Effect::Schedule(timer) => {
                    self.timers.scheduled(timer.due);
                }
                Effect::Wake => self.waiters.wake(key),
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

    /// Where `p`'s plan document is (or will be, once its job has run).
    pub fn plan_document_path(&self, p: &Proposal) -> PathBuf {
        let id = p.approval_id.to_string();
        plangate_store::plan_document_path(&self.settings.data_dir, &p.session.agent, &p.plan.title, p.created_at, &id[..8])
    }

    /// Where `p`'s plan document is: recorded by an older plangate, which
    /// named documents differently, else [`Core::plan_document_path`].
    pub async fn document_location(&self, p: &Proposal) -> PathBuf {
        // A file under today's name settles it without asking the store
        // (on PostgreSQL, a transaction saved per receipt).
        let named = self.plan_document_path(p);
        if tokio::fs::try_exists(&named).await.unwrap_or(false) {
            return named;
        }
        let id = p.approval_id;
        match self.blocking(move |s| s.document_path(&id)).await {
            Ok(Some(recorded)) => PathBuf::from(recorded),
            _ => self.plan_document_path(p),
        }
    }

    /// A credential from `client` on `surface` was wrong: take it from the
    /// address's budget, count it, log it, and audit it (every failure
    /// within the budget, then at most one `429` a minute per address, so
    /// a flood cannot fill the audit). `Some(retry after)` when the address
    /// is over budget and must be answered 429.
    pub async fn auth_failed(&self, client: std::net::IpAddr, surface: crate::throttle::Surface) -> Option<std::time::Duration> {
        let failure = self.auth_throttle.fail(client);
        let key = SessionKey::new("-", "-");
        let actor = format!("client {client}");
        match failure {
            crate::throttle::Failure::Counted => {
                self.metrics.auth_failure(surface.as_str(), "refused");
                warn!(%client, surface = surface.as_str(), "authentication failed");
                self.audit(&key, &actor, "auth_failed", None, format!("wrong credential on {}", surface.as_str())).await;
                None
            }
            crate::throttle::Failure::Limited { retry_after, audit } => {
                self.metrics.auth_failure(surface.as_str(), "limited");
                if audit {
                    warn!(%client, surface = surface.as_str(), retry_after_s = retry_after.as_secs_f64(), "too many failed authentications; answering 429");
                    let detail = format!(
                        "too many failed authentications on {}: answered 429, retry after {} s (further 429s of this address are counted in /metrics, audited at most once a minute)",
                        surface.as_str(),
                        crate::throttle::retry_after_secs(retry_after)
                    );
                    self.audit(&key, &actor, "auth_limited", None, detail).await;
                }
                Some(retry_after)
            }
        }
    }

    /// [`Storage::audit`]: record something that happened outside a transition.
    pub async fn audit(&self, key: &SessionKey, actor: &str, action: &str, approval: Option<(ApprovalId, u32)>, detail: String) {
        self.storage.audit(key, actor, action, approval, detail).await
    }
}
