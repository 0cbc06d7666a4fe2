//! Chat work after a commit: per-approval job queues served by a bounded
//! pool of workers, the backlog count the scheduler watches, per-platform
//! lanes, and the outbox that makes queued work survive a crash. Webhook
//! deliveries share the outbox but not the queues (see `core::webhooks`).
//!
//! **Spilling.** Every chat job a commit asks for is in the store's outbox
//! before it is queued here, so while the chat backlog is full (the
//! platforms are slower than the work arrives: 100,000 approvals timing out
//! together after a long downtime, each asking for a card edit and a
//! receipt) a new job with an outbox entry is not queued in memory at all:
//! it stays in the outbox only ("spilled"), and its transition's
//! [`Written`] is dropped. Due nudges already wait in the store then (see
//! `scheduler`); timeouts cannot wait, but their chat work can. A refill
//! task queues the spilled work again once the backlog has drained to half
//! its limit, a page at a time in `seq` order
//! ([`Outbox::claim_outbox_page`](plangate_store::Outbox::claim_outbox_page)),
//! no more than the backlog has room for, until a page comes back short:
//! memory stays bounded by the backlog limit, whatever the number of
//! timeouts. Refilled jobs load what they show from the store, as resumed
//! ones do (the latest state, which is what a card should show).
//!
//! Order per approval (its card post before its edit, the plan document
//! before a receipt) holds because, once anything spilled, every later
//! outbox-backed job spills too until the refill has read past it (the
//! refill's cursor, [`Spill`]); an entry at or before the cursor is queued
//! directly, since the refill has queued everything before it. Two races
//! are closed under the one lock of [`Spill`]: an entry committed but whose
//! `enqueue` has not run while the refill reads is still marked in
//! `queued_outbox` (marked before its commit), so the refill leaves it, and
//! its `enqueue`, finding it at or before the cursor, queues it; and an
//! entry spilled while a read was in flight (its commit may have landed too
//! late for that read) stops the cursor before it, so the next read gets it.
//!
//! The start-up resume is the same refill from the first entry: 100,000
//! leftovers are not queued at once either. On replicas (PostgreSQL) an
//! outbox entry is written leased to the committing replica and its lease
//! is renewed while it lives, so spilled work stays this replica's, and a
//! page read returns it (plus free entries, leased to this replica); if the
//! replica dies, its leases run out and another replica's claim takes the
//! entries. `queued_outbox` keeps any entry from being queued twice in one
//! process. Entries of a dead replica are claimed only while this one has
//! room and nothing spilled (see [`Core::claim_outbox`]).

use super::Core;
use futures_util::FutureExt;
use plangate_engine::{ApprovalId, Effect, Transition};
use plangate_store::StoreError;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tracing::{info_span, warn, Instrument};

mod outbox;

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

/// Outbox entries the refill reads at once (fewer when the backlog has
/// less room): see [`Spill`].
const REFILL_PAGE: usize = 512;

/// The refill's pause after the store failed, before it reads again.
const REFILL_RETRY: Duration = Duration::from_secs(1);

/// The chat jobs a transition asks for, in effect order, each with the
/// approval (or question) whose queue it joins; with `email` (`[email]`
/// set), each card post, reminder and escalation is followed by its email
/// in the same queue; with `push` (`[push]` set), each card post and
/// reminder is preceded by its push to the approvers' devices, each level
/// of the ladder by its push to the level's people's devices.
pub(super) fn jobs_of(t: &Transition, email: bool, push: bool) -> Vec<(ApprovalId, Job)> {
    // An amendment's chat work queues behind its plan's: its card is posted
    // under the plan's card, which must be out first.
    let queue = |id: &ApprovalId| {
        let amends = t.state.latest.as_ref().filter(|p| p.approval_id == *id).and_then(|p| p.amends.as_ref());
        amends.and_then(|a| a.of_approval).unwrap_or(*id)
    };
    let mut jobs = Vec::new();
    for effect in &t.effects {
        let job = match effect {
            Effect::AppendReceipt { approval_id, text } => (queue(approval_id), Job::AppendReceipt(*approval_id, text.clone())),
            Effect::PostCards { approval_id } => {
                // The push first: the chat card behind it waits for the
                // platform's per-chat pacing (Telegram: 20 a minute in a
                // group), which would hold a push by seconds.
                if push {
                    jobs.push((queue(approval_id), Job::Push(*approval_id, 0)));
                }
                (queue(approval_id), Job::PostCards(*approval_id))
            }
            Effect::UpdateCards { approval_id } => (queue(approval_id), Job::UpdateCards(*approval_id)),
            Effect::Nudge { approval_id, number } => {
                if push {
                    jobs.push((queue(approval_id), Job::PushAgain(*approval_id, super::push::Round::Reminder(*number), 0)));
                }
                (queue(approval_id), Job::Nudge(*approval_id, *number))
            }
            Effect::Escalate { approval_id, level, round } => {
                if push {
                    jobs.push((queue(approval_id), Job::PushAgain(*approval_id, super::push::Round::Level(*level, *round), 0)));
                }
                (queue(approval_id), Job::Level(*approval_id, *level, *round, 0))
            }
            Effect::PostQuestion { question_id } => (*question_id, Job::PostQuestion(*question_id)),
            Effect::UpdateQuestion { question_id } => (*question_id, Job::UpdateQuestion(*question_id)),
            Effect::WriteDocument { approval_id } => (queue(approval_id), Job::WriteDocument(*approval_id)),
            Effect::Schedule(_) | Effect::Cancel(_) | Effect::Wake => continue,
        };
        let mailing = super::email::Mailing::of(effect).filter(|_| email);
        jobs.push(job);
        if let Some((id, mailing)) = mailing {
            jobs.push((queue(&id), Job::Email(id, mailing, 0)));
        }
    }
    jobs
}

/// What running a job came to.
enum Ran {
    /// Done: its outbox entry goes once these files (written without
    /// fsync) are durable.
    Done(Vec<PathBuf>),
    /// Not yet: queue this job again after [`RUN_AGAIN_AFTER`], its outbox
    /// entry kept (a reminder or a card edit waiting for a card another
    /// replica still posts, see `Core::nudge`). Queued again without what
    /// its transition wrote: it loads the latest, which is what a card
    /// should show by then.
    Later(Job),
}

/// How long a job that asked to run later waits out of its queue.
const RUN_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// The audit detail of a card with nowhere to go.
pub(super) const NO_DESTINATIONS: &str = "no destinations configured for this agent: the card was recorded here only";

/// How long the outbox remover waits after the first done entry for
/// others to share its statement. Short next to a job (a chat API call);
/// long enough that a busy process removes dozens at once.
const REAP_LINGER: Duration = Duration::from_millis(10);

/// Done outbox entries not yet removed, the files their jobs wrote without
/// fsync (made durable before the entries go), and whether a remover runs.
#[derive(Default)]
pub(super) struct DoneOutbox {
    pending: Vec<(u64, Reaped)>,
    unsynced: Vec<PathBuf>,
    reaping: bool,
}

/// What to do once an entry is removed: tell a waiting caller, or give
/// up the chat job's place in the backlog.
enum Reaped {
    Tell(tokio::sync::oneshot::Sender<Result<(), String>>),
    Release(Ticket),
}

/// A job waiting in its approval's queue: its outbox entry, its place in
/// the backlog, and what its transition wrote (none when resumed).
type Queued = (Job, Option<u64>, Ticket, Option<Arc<Written>>);

/// Chat jobs waiting, per approval, and the approvals ready for a worker.
/// Jobs wait here as data (a few dozen bytes each), not as tasks: at most
/// [`CHAT_WORKERS`] approvals are worked on at once.
#[derive(Default)]
pub(super) struct JobQueues {
    /// Jobs not yet started, per approval, in transition order.
    waiting: HashMap<ApprovalId, VecDeque<Queued>>,
    /// Approvals with waiting jobs and no worker on them, oldest first.
    ready: VecDeque<ApprovalId>,
    /// Approvals a worker is on.
    busy: HashSet<ApprovalId>,
    /// Workers running.
    workers: usize,
}

/// The count of chat jobs queued or running.
pub(super) struct Backlog {
    count: AtomicUsize,
    /// Counts jobs that left the count. A watch, not a `Notify`: whoever
    /// subscribes before looking at the count can never miss a departure.
    progress: watch::Sender<u64>,
}

impl Default for Backlog {
    fn default() -> Backlog {
        Backlog { count: AtomicUsize::new(0), progress: watch::channel(0).0 }
    }
}

/// [`ChatWork::drain`] gave up: chat jobs were still queued or running, or
/// waiting in the outbox for room in the backlog (`spilled`).
#[derive(Debug, thiserror::Error)]
#[error("{left} chat job(s) still queued or running after {waited:?}{}", if *.spilled { ", more waiting in the outbox" } else { "" })]
pub struct Undrained {
    pub left: usize,
    pub waited: Duration,
    pub spilled: bool,
}

/// Chat work left in the store's outbox while the backlog was full, and the
/// refill that queues it from there (see the module doc). Decided under
/// one lock, by [`Core::enqueue`] for each new job and by the refill for
/// each page it read, so the two never disagree about a `seq`.
#[derive(Default)]
pub(super) struct Spill {
    /// Whether new outbox-backed chat jobs after `cursor` stay in the store.
    spilling: bool,
    /// How far the refill has read the outbox: every entry at or before it
    /// is queued here already, on its way here (committed, its `enqueue`
    /// not yet run: it will queue directly), done, or another replica's.
    /// `None`: from the first entry (at start).
    cursor: Option<u64>,
    /// A refill read is in flight.
    reading: bool,
    /// The lowest `seq` spilled while a read was in flight: its entry may
    /// have been committed too late for that read, which must not move the
    /// cursor past it.
    late: Option<u64>,
    /// Whether a refill task runs (one at most).
    refilling: bool,
    /// Jobs spilled, and entries queued back, since spilling started.
    spilled: u64,
    refilled: u64,
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
        self.0.progress.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// What a transition wrote, handed to the chat jobs it queued so that they
/// do not read back what the commit just wrote (on PostgreSQL, a
/// transaction each). A job renders what *its* transition decided; a later
/// transition queues its own jobs behind it in the same queue, so the
/// last card edit shows the last state. Jobs resumed from the outbox after
/// a restart have none and load fresh.
pub(super) struct Written {
    state: plangate_engine::State,
    retired: Option<plangate_engine::Proposal>,
}

impl Written {
    pub(super) fn of(t: &Transition) -> Arc<Written> {
        Arc::new(Written { state: t.state.clone(), retired: t.retired.clone() })
    }

    /// Approval `id` as the transition left it.
    pub(super) fn proposal(&self, id: ApprovalId) -> Option<&plangate_engine::Proposal> {
        let latest = self.state.latest.iter().find(|p| p.approval_id == id);
        latest.or_else(|| self.retired.iter().find(|p| p.approval_id == id))
    }

    /// Approval `id` as the transition left it, with the session's state.
    pub(super) fn proposal_and_state(&self, id: ApprovalId) -> Option<(plangate_engine::Proposal, plangate_engine::State)> {
        Some((self.proposal(id)?.clone(), self.state.clone()))
    }
}

/// Chat work queued after a commit, performed in order per approval.
/// Written to the store's outbox in the transition's own commit and removed
/// once done, so a crash in between resumes it on the next start (at least
/// once: every job is safe to repeat).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum Job {
    /// Write the plan document (first in its approval's queue, so receipts
    /// append to a file that exists).
    WriteDocument(ApprovalId),
    PostCards(ApprovalId),
    UpdateCards(ApprovalId),
    Nudge(ApprovalId, u8),
    /// Queued before the ladder: reach its level 1.
    Escalate(ApprovalId),
    /// Reach a level of the escalation ladder (level, round, email attempts so far; `core::ladder`).
    Level(ApprovalId, u8, u16, u8),
    AppendReceipt(ApprovalId, String),
    PostQuestion(ApprovalId),
    UpdateQuestion(ApprovalId),
    /// The card by email to each approver with an address (`[email]`), and
    /// the attempts made so far (see `core::email`).
    Email(ApprovalId, super::email::Mailing, u8),
    /// The plan to its approvers' subscribed devices (`[push]`), and the
    /// attempts made so far (see `core::push`).
    Push(ApprovalId, u8),
    /// The plan pushed again: a reminder to its approvers' devices, or a
    /// level of the ladder to its people's; the attempts made so far.
    PushAgain(ApprovalId, super::push::Round, u8),
    /// A signed POST to the agent's webhook. Queued per session, apart from
    /// the chat jobs (see `core::webhooks`).
    Webhook(Box<super::webhooks::Webhook>),
}

/// The core's part for chat work: the per-approval queues and their
/// workers' count, the backlog and its limit, the lanes per platform, and
/// the marks that keep an outbox entry from being queued twice or lost
/// (queued, spilled, done). The jobs it queues run with the whole core
/// (their bodies, `chat`, post and edit through every part); what only
/// counts and marks is here.
pub struct ChatWork {
    queues: Mutex<JobQueues>,
    /// Chat jobs queued or running, so the scheduler can leave reminders in
    /// the store while the platforms work through a backlog.
    backlog: Arc<Backlog>,
    /// Chat jobs queued at once beyond which due nudges stay in the store.
    limit: AtomicUsize,
    lanes: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Outbox entries queued in this process (their `seq`), from the commit
    /// that writes them until their job is done: a replica's claimer
    /// queues only the entries not already here.
    queued_outbox: Mutex<HashSet<u64>>,
    /// Chat work left in the outbox while the backlog was full (see the module doc).
    spill: Mutex<Spill>,
    /// Outbox entries done and waiting to be removed in one batch.
    done_outbox: Mutex<DoneOutbox>,
}

impl Default for ChatWork {
    fn default() -> ChatWork {
        ChatWork {
            queues: Mutex::new(JobQueues::default()),
            backlog: Arc::new(Backlog::default()),
            limit: AtomicUsize::new(CHAT_BACKLOG),
            lanes: Mutex::new(HashMap::new()),
            queued_outbox: Mutex::new(HashSet::new()),
            spill: Mutex::new(Spill::default()),
            done_outbox: Mutex::new(DoneOutbox::default()),
        }
    }
}

impl ChatWork {
    /// Chat jobs queued or running.
    pub fn backlog(&self) -> usize {
        self.backlog.count.load(Ordering::Relaxed)
    }

    /// Sees every chat job that finishes from now on: subscribe, then look
    /// at [`ChatWork::backlog`], then wait on `changed()`.
    pub fn progress(&self) -> watch::Receiver<u64> {
        self.backlog.progress.subscribe()
    }

    /// Whether the chat backlog is full: due nudges then wait in the store,
    /// and so does every new chat job that has an outbox entry.
    pub fn backlog_full(&self) -> bool {
        self.backlog() >= self.limit.load(Ordering::Relaxed)
    }

    /// Whether chat work waits in the outbox for room in the backlog.
    pub fn spilling(&self) -> bool {
        super::lock(&self.spill).spilling
    }

    /// Whether the chat backlog has drained to half its limit.
    pub fn backlog_halved(&self) -> bool {
        self.backlog() <= self.limit.load(Ordering::Relaxed) / 2
    }

    /// Change the backlog limit (default [`CHAT_BACKLOG`]; tests use small ones).
    pub fn set_backlog_limit(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::Relaxed);
    }

    /// A place in `channel`'s lane (see [`LANE_WIDTH`]).
    pub(super) async fn lane(&self, channel: &str) -> Option<OwnedSemaphorePermit> {
        let lane = {
            let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
            lanes.entry(channel.to_string()).or_insert_with(|| Arc::new(Semaphore::new(LANE_WIDTH))).clone()
        };
        lane.acquire_owned().await.ok()
    }

    /// Wait until every queued chat job has run and none waits in the
    /// outbox for room, or report how many are left once `within` has
    /// passed (tests and shutdown).
    pub async fn drain(&self, within: Duration) -> Result<(), Undrained> {
        let deadline = tokio::time::Instant::now() + within;
        let mut progress = self.progress();
        loop {
            let (left, spilled) = (self.backlog(), self.spilling());
            if left == 0 && !spilled {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, progress.changed()).await.is_err() {
                return Err(Undrained { left, waited: within, spilled });
            }
        }
    }

    /// Outbox entries queued in this process and not yet done.
    pub fn queued_outbox(&self) -> usize {
        super::lock(&self.queued_outbox).len()
    }

    /// Mark the outbox entries of a commit under way as queued, before they
    /// exist: the outbox claimer (replicas) must never queue them a second time.
    pub(super) fn mark_queued(&self, seqs: &[u64]) {
        super::lock(&self.queued_outbox).extend(seqs.iter().copied());
    }

    /// Outbox entries marked queued for a commit that did not land.
    pub(super) fn unmark_queued(&self, seqs: &[u64]) {
        let mut queued = super::lock(&self.queued_outbox);
        seqs.iter().for_each(|seq| {
            queued.remove(seq);
        });
    }
}

impl Core {
    /// Take out the card posts of an agent that has no destinations: there
    /// is nothing to post, only the audit line saying so, which is returned
    /// for the transition's own commit instead of costing a job, an outbox
    /// entry and a write of its own. With no escalation destinations
    /// either, no card of the agent can be out, so its card edits go too
    /// (cards posted under an earlier config that had destinations are
    /// then no longer edited: the operator took every chat away).
    pub(super) fn cards_nowhere(&self, jobs: &mut Vec<(ApprovalId, Job)>, t: &Transition) -> Vec<plangate_engine::AuditEvent> {
        let key = &t.state.session.key;
        // Every place, whatever projects it takes (a card routed away by
        // its project is said so by the post job), paired ones included.
        let index = self.pairing.approvers();
        let places = index.places(&key.agent);
        if places.iter().any(|p| !p.escalation) {
            return Vec::new();
        }
        let no_edits = !places.iter().any(|p| p.escalation);
        let mut audit = Vec::new();
        jobs.retain(|(_, job)| {
            if no_edits && matches!(job, Job::UpdateCards(_)) {
                return false;
            }
            let Job::PostCards(id) = job else { return true };
            let version = t.state.latest.iter().chain(&t.retired).find(|p| p.approval_id == *id).map(|p| p.version);
            audit.push(plangate_engine::AuditEvent {
                at: self.now(),
                agent: key.agent.clone(),
                session_id: key.session_id.clone(),
                actor: "plangate".to_string(),
                action: "card_recorded".to_string(),
                approval_id: Some(*id),
                version,
                detail: NO_DESTINATIONS.to_string(),
            });
            false
        });
        audit
    }

    /// Queue a committed transition's job: a chat job behind the earlier
    /// jobs of the same approval, a webhook delivery in its session's queue.
    /// `seq` is its outbox entry. While the chat backlog is full, a chat job
    /// with an outbox entry is left there instead ("spilled") and queued by
    /// the refill once the backlog drained to half (see the module doc).
    ///
    /// Webhook deliveries never spill: they have queues of their own and do
    /// not count in the chat backlog, so that a slow chat platform never
    /// holds back a receiver (see `core::webhooks`); one costs its signed
    /// body, not a copy of the session.
    pub(super) fn enqueue(self: &Arc<Self>, id: ApprovalId, job: Job, seq: Option<u64>, written: Option<Arc<Written>>) {
        let job = match job {
            Job::Webhook(hook) => return self.enqueue_webhook(*hook, seq),
            chat => chat,
        };
        let Some(seq) = seq else {
            return self.queue(id, job, None, written);
        };
        let mut spill = super::lock(&self.chat.spill);
        // Once anything spilled, every later entry spills until the refill
        // has read past it: the refill queues in `seq` order, so an
        // approval's jobs stay in order (its card post before its edit).
        let spills = if spill.spilling { spill.cursor.is_none_or(|cursor| seq > cursor) } else { self.chat.backlog_full() };
        if !spills {
            // Under the lock, like the refill's decisions.
            return self.queue(id, job, Some(seq), written);
        }
        if !spill.spilling {
            spill.spilling = true;
            spill.cursor = seq.checked_sub(1);
            tracing::info!(
                backlog = self.chat.backlog(),
                "the chat backlog is full: new chat work waits in the outbox, queued from there as the backlog drains"
            );
        }
        if spill.reading {
            spill.late = Some(spill.late.map_or(seq, |first| first.min(seq)));
        }
        spill.spilled += 1;
        self.metrics.chat_job_spilled();
        // Not queued here: the refill queues it (the mark kept the claim
        // and the refill off it while its commit was under way).
        super::lock(&self.chat.queued_outbox).remove(&seq);
        if !spill.refilling {
            spill.refilling = true;
            let core = self.clone();
            tokio::spawn(async move { core.refill().instrument(info_span!("outbox_refill")).await });
        }
    }

    /// Queue a chat job behind the earlier jobs of the same approval, and
    /// start a worker if one is free to take it. `seq` is its outbox entry.
    fn queue(self: &Arc<Self>, id: ApprovalId, job: Job, seq: Option<u64>, written: Option<Arc<Written>>) {
        self.queue_with(id, (job, seq, Ticket::new(&self.chat.backlog), written));
    }

    /// [`Core::queue`] of a job that already has its place in the backlog.
    fn queue_with(self: &Arc<Self>, id: ApprovalId, item: Queued) {
        let mut queues = self.chat.queues.lock().unwrap_or_else(|e| e.into_inner());
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
                let mut queues = self.chat.queues.lock().unwrap_or_else(|e| e.into_inner());
                let Some(id) = queues.ready.pop_front() else {
                    queues.workers -= 1;
                    return;
                };
                queues.busy.insert(id);
                id
            };
            loop {
                let next = {
                    let mut queues = self.chat.queues.lock().unwrap_or_else(|e| e.into_inner());
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
                let (job, seq, ticket, written) = next;
                let span = info_span!("job", approval = %id, job = ?job);
                // A bug in an adapter must not take the worker (and the
                // approval's later jobs) down with it.
                // Boxed: a job's future (every adapter's request inline)
                // is kilobytes, and the worker's own future would carry
                // it, copied on every spawn and poll hand-off.
                let ran = AssertUnwindSafe(Box::pin(self.run_job(job, written.as_deref())).instrument(span)).catch_unwind().await;
                let unsynced = match ran {
                    Ok(Ran::Done(unsynced)) => unsynced,
                    Ok(Ran::Later(job)) => {
                        // Out of the queue while it waits (the job it waits
                        // for may be queued behind it), keeping its outbox
                        // entry and its place in the backlog.
                        let core = self.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(RUN_AGAIN_AFTER).await;
                            core.queue_with(id, (job, seq, ticket, None));
                        });
                        continue;
                    }
                    Err(_) => {
                        tracing::error!(approval = %id, "a chat job panicked; carrying on with the next");
                        Vec::new()
                    }
                };
                match seq {
                    Some(seq) => self.outbox_done_later(seq, ticket, unsynced),
                    // No outbox entry would write it again: durable now.
                    None => {
                        if let Err(e) = sync_files(unsynced).await {
                            warn!(approval = %id, error = %e, "a plan document was written but not made durable");
                        }
                        drop(ticket);
                    }
                }
            }
        }
    }

    /// Run one job.
    async fn run_job(self: &Arc<Self>, job: Job, written: Option<&Written>) -> Ran {
        match job {
            Job::PostCards(id) => self.post_cards(id, written).await,
            Job::UpdateCards(id) => {
                if self.update_cards(id, written).await == super::chat::CardWork::WaitsForItsCard {
                    return Ran::Later(Job::UpdateCards(id));
                }
            }
            Job::Nudge(id, n) => {
                if self.nudge(id, n).await == super::chat::CardWork::WaitsForItsCard {
                    return Ran::Later(Job::Nudge(id, n));
                }
            }
            Job::Escalate(id) => {
                if let Some(again) = self.reach_level(id, 1, 0, 0).await {
                    return Ran::Later(Job::Level(id, 1, 0, again));
                }
            }
            Job::Level(id, level, round, attempts) => {
                if let Some(again) = self.reach_level(id, level, round, attempts).await {
                    return Ran::Later(Job::Level(id, level, round, again));
                }
            }
            Job::WriteDocument(id) => return Ran::Done(self.write_document(id, written).await.into_iter().collect()),
            Job::AppendReceipt(id, text) => return Ran::Done(self.append_receipt(id, text, written).await.into_iter().collect()),
            Job::PostQuestion(id) => self.post_question(id).await,
            Job::Email(id, mailing, attempts) => {
                if let Some(again) = self.send_emails(id, mailing, attempts).await {
                    return Ran::Later(Job::Email(id, mailing, again));
                }
            }
            Job::Push(id, attempts) => {
                if let Some(again) = self.send_pushes(id, super::push::Round::Card, attempts).await {
                    return Ran::Later(Job::Push(id, again));
                }
            }
            Job::PushAgain(id, round, attempts) => {
                if let Some(again) = self.send_pushes(id, round, attempts).await {
                    return Ran::Later(Job::PushAgain(id, round, again));
                }
            }
            Job::UpdateQuestion(id) => {
                if self.update_question(id).await == super::chat::CardWork::WaitsForItsCard {
                    return Ran::Later(Job::UpdateQuestion(id));
                }
            }
            // `enqueue` sends these to their own queues; delivered in place
            // should one ever reach a chat queue.
            Job::Webhook(hook) => self.deliver_webhook(*hook).await,
        }
        Ran::Done(Vec::new())
    }

    /// Append a decision's receipt to its plan document (without fsync, like
    /// the document; returns the path once appended).
    async fn append_receipt(self: &Arc<Self>, id: ApprovalId, text: String, written: Option<&Written>) -> Option<PathBuf> {
        let p = self.proposal_of(id, written).await?;
        // A file under today's name: appended in one blocking hop. Else the
        // name an older plangate recorded (see `Core::document_location`).
        let named = self.plan_document_path(&p);
        let (appending, receipt) = (named.clone(), text.clone());
        let result =
            tokio::task::spawn_blocking(move || appending.exists().then(|| plangate_store::append_receipt_unsynced(&appending, &receipt)))
                .await;
        let (path, result) = match result {
            Ok(Some(appended)) => (named, Ok(appended)),
            _ => {
                let path = self.document_location(&p).await;
                // On replicas the document is a file on the replica whose job
                // wrote it (see README, "Running several replicas"): the
                // decision may land on another one, which has no file to add to.
                if self.storage.store.shared() && !path.exists() {
                    tracing::debug!(approval = %id, "the plan document is on another replica; receipt not appended here");
                    return None;
                }
                let appending = path.clone();
                (path, tokio::task::spawn_blocking(move || plangate_store::append_receipt_unsynced(&appending, &text)).await)
            }
        };
        if !matches!(result, Ok(Ok(()))) {
            warn!(approval = %id, "receipt not appended to the plan document");
            return None;
        }
        Some(path)
    }
}

/// [`plangate_store::sync_files`] off the async workers, each path once.
async fn sync_files(mut paths: Vec<PathBuf>) -> std::io::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    paths.sort_unstable();
    paths.dedup();
    tokio::task::spawn_blocking(move || plangate_store::sync_files(&paths)).await.unwrap_or_else(|e| Err(std::io::Error::other(e)))
}
