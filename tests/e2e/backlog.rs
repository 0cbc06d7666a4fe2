//! Chat work after a commit. The backlog: while the platforms work through
//! queued chat jobs, due nudges stay in the store (disk, not memory) and
//! fire once the backlog drains; timeouts never wait; a reminder that waited
//! is re-checked before it is sent. The outbox: chat work committed with a
//! transition but not done when the process died is resumed on the next
//! start, once.

use async_trait::async_trait;
use plangate_channel::{Channel, ChannelError, Delivery, Destination, Document};
use plangate_engine::card::Card;
use plangate_engine::{Actor, Command, DecisionStatus, Plan, Question, SessionKey, TimerKind};
use plangate_server::clock::{Clock, ManualClock, SystemClock};
use plangate_server::config::Settings;
use plangate_server::core::{Core, ExecMeta};
use plangate_server::scheduler::fire_due;
use plangate_store::prelude::*;
use plangate_store::{PgOptions, PgStore, SledStore, Store};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// A channel whose nudges (and, when held, card posts and edits) wait until
/// the test lets them through.
struct Gated {
    nudged: Mutex<Vec<String>>,
    /// Nudges that reached the gate (past the job's re-check of the plan).
    at_gate: std::sync::atomic::AtomicUsize,
    gate: Semaphore,
    /// A buggy adapter: nudges panic.
    panics: bool,
    /// Card posts and edits wait here while `Some` (a platform that hangs).
    cards_held: Option<Semaphore>,
    /// `post <approval>` / `update <approval> <receipt>`, in order.
    cards: Mutex<Vec<String>>,
}

impl Gated {
    fn new(panics: bool, hold_cards: bool) -> Gated {
        Gated {
            nudged: Mutex::new(Vec::new()),
            at_gate: std::sync::atomic::AtomicUsize::new(0),
            gate: Semaphore::new(0),
            panics,
            cards_held: hold_cards.then(|| Semaphore::new(0)),
            cards: Mutex::new(Vec::new()),
        }
    }

    async fn card_call(&self, line: String) {
        if let Some(held) = &self.cards_held {
            held.acquire().await.expect("held").forget();
        }
        self.cards.lock().unwrap().push(line);
    }
}

#[async_trait]
impl Channel for Gated {
    fn name(&self) -> &'static str {
        "telegram"
    }
    async fn post_card(&self, d: &Destination, card: &Card, _doc: &Document) -> Result<Delivery, ChannelError> {
        self.card_call(format!("post {}", card.approval_id)).await;
        Ok(Delivery::posted(d, d.chat.clone(), format!("card-{}", card.approval_id)))
    }
    async fn update_card(&self, _d: &Delivery, card: &Card) -> Result<(), ChannelError> {
        self.card_call(format!("update {} {}", card.approval_id, card.receipt.clone().unwrap_or_default())).await;
        Ok(())
    }
    async fn send_nudge(&self, d: &Delivery, _card: &Card, _text: &str) -> Result<(), ChannelError> {
        self.at_gate.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.gate.acquire().await.expect("gate open").forget();
        assert!(!self.panics, "adapter bug");
        self.nudged.lock().unwrap().push(d.message_id.clone());
        Ok(())
    }
    async fn send_document(&self, _chat: &str, _reply_to: Option<&str>, _doc: &Document) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send_text(&self, _chat: &str, _text: &str) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn post_question(&self, d: &Destination, _q: &Question) -> Result<Delivery, ChannelError> {
        Ok(Delivery::posted(d, d.chat.clone(), "q"))
    }
    async fn update_question(&self, _d: &Delivery, _q: &Question) -> Result<(), ChannelError> {
        Ok(())
    }
}

fn backlog_config(timeout: &str) -> String {
    format!(
        r#"
[server]
bind = "127.0.0.1:0"
data_dir = "unused"
operator_token = "operator-token-123"

[agents.demo]
token = "agent-token-demo-1"
destinations = ["team"]

[telegram]
token = "123456:abc"

[destinations.team]
channel = "telegram"
chat = "-100"
approvers = ["telegram:1"]

[approvals]
nudges = ["1s"]
timeout = "{timeout}"
"#
    )
}

struct Harness<S = SledStore> {
    core: Arc<Core>,
    /// The core's clock: tests turn it instead of sleeping.
    clock: Arc<ManualClock>,
    store: Arc<S>,
    channel: Arc<Gated>,
    sessions: Vec<SessionKey>,
    _dir: tempfile::TempDir,
}

/// Five sessions with a pending proposal each, cards posted, backlog limit 2.
async fn harness(timeout: &str) -> Harness {
    harness_with(timeout, false).await
}

async fn harness_with(timeout: &str, panics: bool) -> Harness {
    let h = proposing(5, timeout, Gated::new(panics, false)).await;
    h.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert_eq!(h.core.chat.backlog(), 0, "the cards are out");
    h
}

/// `n` sessions proposing a plan each, cards to `channel`, backlog limit 2.
async fn proposing(n: usize, timeout: &str, channel: Gated) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    proposing_on(store, dir, n, timeout, channel).await
}

/// [`proposing`] on `store`, with plan documents under `dir`.
async fn proposing_on<S: Store + 'static>(store: Arc<S>, dir: tempfile::TempDir, n: usize, timeout: &str, channel: Gated) -> Harness<S> {
    let mut settings = Settings::from_toml(&backlog_config(timeout)).unwrap();
    settings.data_dir = dir.path().to_path_buf();
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let core = Core::with_clock(Arc::new(settings), store.clone(), clock.clone());
    let channel = Arc::new(channel);
    core.adapters.register(channel.clone());
    core.chat.set_backlog_limit(2);
    let mut sessions = Vec::new();
    for i in 0..n {
        let key = SessionKey::new("demo", format!("s{i}"));
        core.execute(&key, Actor::Agent, Command::Enter { reason: None }, ExecMeta::default()).await.unwrap();
        let propose = Command::Propose {
            plan: Plan::titled(format!("plan {i}")),
            markdown: None,
            requested_by: None,
            harness: plangate_engine::Harness::Api,
            project: None,
        };
        core.execute(&key, Actor::Agent, propose, ExecMeta::default()).await.unwrap();
        sessions.push(key);
    }
    Harness { core, clock, store, channel, sessions, _dir: dir }
}

fn nudge_timers(store: &SledStore) -> usize {
    store.timers().unwrap().iter().filter(|t| matches!(t.kind, TimerKind::Nudge(_))).count()
}

async fn latest_status<S>(h: &Harness<S>, key: &SessionKey) -> DecisionStatus {
    h.core.load(key).await.unwrap().latest.unwrap().status
}

/// A SIGTERM during a catch-up of overdue timers is not held until the
/// catch-up is done: once a shutdown began, nothing more fires, and every
/// due timer stays in the store for the next start.
#[tokio::test]
async fn once_a_shutdown_began_due_timers_stay_in_the_store() {
    let h = harness("off").await;
    h.clock.advance(1100);
    h.core.waiters.begin_shutdown();
    assert!(!fire_due(&h.core).await, "nothing was left due for a full backlog: the pass stopped");
    assert_eq!(h.core.chat.backlog(), 0, "no nudge job was queued");
    assert_eq!(nudge_timers(&h.store), 5, "every due nudge is still in the store");
    assert!(h.channel.nudged.lock().unwrap().is_empty());
}

#[tokio::test]
async fn due_nudges_wait_in_the_store_while_the_backlog_is_full_then_each_goes_out_once() {
    let h = harness("off").await;
    h.clock.advance(1100);

    assert!(fire_due(&h.core).await, "nudges were left due");
    assert_eq!(h.core.chat.backlog(), 2, "only as many nudge jobs as the limit");
    assert_eq!(nudge_timers(&h.store), 3, "the rest stay in the store");

    // The platform takes the two; the next two then wait at it in turn.
    h.channel.gate.add_permits(2);
    h.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert!(fire_due(&h.core).await, "room for two more; the last still waits");
    assert_eq!(nudge_timers(&h.store), 1);
    h.channel.gate.add_permits(100);
    h.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert!(!fire_due(&h.core).await, "the last one fires");
    h.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert_eq!(nudge_timers(&h.store), 0);
    let mut nudged = h.channel.nudged.lock().unwrap().clone();
    nudged.sort();
    nudged.dedup();
    assert_eq!(nudged.len(), 5, "one nudge per approval, none twice: {nudged:?}");
    assert_eq!(h.channel.nudged.lock().unwrap().len(), 5);
}

#[tokio::test]
async fn timeouts_fire_through_a_full_backlog_and_waiting_nudges_of_decided_plans_are_dropped() {
    let h = harness("2s").await;
    h.clock.advance(1100);
    assert!(fire_due(&h.core).await);
    assert_eq!(h.core.chat.backlog(), 2);
    // Both nudge jobs re-checked their plans (still pending) and wait at the
    // platform; else a timeout could come first and rightly cancel one.
    while h.channel.at_gate.load(std::sync::atomic::Ordering::Relaxed) < 2 {
        tokio::task::yield_now().await;
    }

    // The timeouts fall due while two nudges are stuck on the platform.
    h.clock.advance(1000);
    fire_due(&h.core).await;
    for key in &h.sessions {
        assert_eq!(latest_status(&h, key).await, DecisionStatus::TimedOut, "{key:?}: a timeout never waits for the backlog");
    }
    assert_eq!(nudge_timers(&h.store), 0, "deciding an approval cancels its nudges");

    // The two nudges already at the platform finish; the three that waited
    // in the store died with their approvals.
    h.channel.gate.add_permits(100);
    h.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    fire_due(&h.core).await;
    h.core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert_eq!(h.channel.nudged.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_panicking_adapter_does_not_leave_the_backlog_stuck() {
    let h = harness_with("off", true).await;
    h.clock.advance(1100);
    assert!(fire_due(&h.core).await);
    assert_eq!(h.core.chat.backlog(), 2);
    h.channel.gate.add_permits(2);
    // Both jobs panic inside the adapter; the workers carry on and the places
    // are given back, so the other three nudges still fire (the next two then
    // wait at the closed gate again).
    h.core.chat.drain(Duration::from_secs(5)).await.expect("the backlog drains even though every job panicked");
    assert!(fire_due(&h.core).await, "room for two more");
    assert_eq!(nudge_timers(&h.store), 1);
}

/// What a restart does: a new core on the same store, a fresh channel.
async fn restart(h: &Harness, timeout: &str) -> (Arc<Core>, Arc<Gated>, usize) {
    let mut settings = Settings::from_toml(&backlog_config(timeout)).unwrap();
    settings.data_dir = h._dir.path().to_path_buf();
    let core = Core::new(Arc::new(settings), h.store.clone());
    let channel = Arc::new(Gated::new(false, false));
    core.adapters.register(channel.clone());
    let resumed = core.resume_outbox().await.unwrap();
    core.chat.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    (core, channel, resumed)
}

#[tokio::test]
async fn card_edits_committed_before_a_crash_are_resumed_on_start_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::from_toml(&backlog_config("off")).unwrap();
    settings.data_dir = dir.path().to_path_buf();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    let core = Core::new(Arc::new(settings), store.clone());
    // The platform hangs: nothing this process sends ever completes.
    let hung = Arc::new(Gated::new(false, true));
    core.adapters.register(hung.clone());
    let key = SessionKey::new("demo", "crash");
    core.execute(&key, Actor::Agent, Command::Enter { reason: None }, ExecMeta::default()).await.unwrap();
    let propose = Command::Propose {
        plan: Plan::titled("survives"),
        markdown: None,
        requested_by: None,
        harness: plangate_engine::Harness::Api,
        project: None,
    };
    let id = core.execute(&key, Actor::Agent, propose, ExecMeta::default()).await.unwrap().transition.state.latest.unwrap().approval_id;
    let approver = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
    let approve = Command::Decide { approval_id: id, verdict: plangate_engine::Verdict::Approve };
    core.execute_on_approval(id, approver, approve, ExecMeta::default()).await.unwrap();
    assert!(!store.outbox().unwrap().is_empty(), "the card work is in the outbox with the commits");
    assert!(hung.cards.lock().unwrap().is_empty(), "and none of it happened");

    // The process dies here. The next one resumes the work, in order.
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let h = Harness { core, clock, store: store.clone(), channel: hung, sessions: vec![key], _dir: dir };
    let (_core, channel, resumed) = restart(&h, "off").await;
    assert!(resumed >= 2, "post and edit at least: {resumed}");
    let cards = channel.cards.lock().unwrap().clone();
    assert_eq!(cards.len(), 2, "{cards:?}");
    assert_eq!(cards[0], format!("post {id}"));
    assert!(cards[1].starts_with(&format!("update {id} ")) && cards[1].contains("Approved"), "{cards:?}");
    assert!(store.outbox().unwrap().is_empty(), "done work leaves the outbox");

    // A second restart has nothing left to do, and posts nothing twice.
    let (_core, channel, resumed) = restart(&h, "off").await;
    assert_eq!(resumed, 0);
    assert!(channel.cards.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_resumed_post_skips_the_destinations_already_posted() {
    let h = harness("off").await;
    // Work the first process did but could not mark done before dying:
    // re-queue every approval's card post as an outbox entry would.
    for key in &h.sessions {
        let id = h.core.load(key).await.unwrap().latest.unwrap().approval_id;
        let work = serde_json::to_vec(&(id, serde_json::json!({"PostCards": id}))).unwrap();
        let seq = h.store.generate_seq().unwrap();
        let mut commit = plangate_store::Commit::default();
        commit.outbox.push(plangate_store::OutboxEntry { seq, work });
        h.store.commit(commit).unwrap().written().unwrap();
    }
    let (_core, channel, resumed) = restart(&h, "off").await;
    assert_eq!(resumed, 5, "all five read back as card posts");
    assert!(channel.cards.lock().unwrap().is_empty(), "every card was out already: {:?}", channel.cards.lock().unwrap());
    assert!(h.store.outbox().unwrap().is_empty());
}

/// `n` sessions each proposing a plan (timing out after 2 s) while the
/// platform holds every card call: the first approval's jobs fill the
/// backlog (limit 2), the other approvals' card posts wait in the outbox.
async fn storm(n: usize) -> Harness {
    proposing(n, "2s", Gated::new(false, true)).await
}

/// The most chat jobs, and outbox entries, queued at once in `core` while
/// the returned flag is down. Sampled between every two steps of the other
/// tasks (the test runtime has one thread), so no peak is missed.
fn peaks(core: Arc<Core>) -> (Arc<std::sync::atomic::AtomicBool>, tokio::task::JoinHandle<(usize, usize)>) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let watch = tokio::spawn(async move {
        let mut peak = (0, 0);
        while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
            peak = (peak.0.max(core.chat.backlog()), peak.1.max(core.chat.queued_outbox()));
            tokio::task::yield_now().await;
        }
        peak
    });
    (stop, watch)
}

/// Every approval's card was posted once and edited once after it (with its
/// timeout), and its plan document got the timeout's receipt once (so the
/// document was written before the receipt was appended).
async fn each_card_posted_then_edited_once(core: &Arc<Core>, channel: &Gated, sessions: &[SessionKey]) {
    let cards = channel.cards.lock().unwrap().clone();
    for key in sessions {
        let p = core.load(key).await.unwrap().latest.unwrap();
        assert_eq!(p.status, DecisionStatus::TimedOut, "{key:?}");
        let id = p.approval_id.to_string();
        let mine: Vec<&String> = cards.iter().filter(|line| line.split(' ').nth(1) == Some(id.as_str())).collect();
        assert_eq!(mine.len(), 2, "{key:?}: one post, one edit: {mine:?}");
        assert_eq!(*mine[0], format!("post {id}"), "{key:?}: {mine:?}");
        assert!(mine[1].starts_with(&format!("update {id} ")) && mine[1].contains("Timed out"), "{key:?}: {mine:?}");
        let document = std::fs::read_to_string(core.plan_document_path(&p)).unwrap();
        assert_eq!(document.matches("Timed out v1").count(), 1, "{key:?}: the receipt once, after the plan:\n{document}");
    }
}

#[tokio::test]
async fn card_work_after_a_storm_of_timeouts_waits_in_the_outbox_then_goes_out_in_order_once() {
    storm_then_release(storm(40).await).await;
}

/// Timeouts committed while the refill is still working through the card
/// posts that waited: each approval's edit still comes after its post (its
/// job waits in the outbox behind the post, though the backlog has room).
#[tokio::test]
async fn timeouts_committed_while_the_refill_catches_up_keep_each_approvals_order() {
    let h = storm(40).await;
    let (stop, watch) = peaks(h.core.clone());
    h.channel.cards_held.as_ref().unwrap().add_permits(100_000);
    h.clock.advance(2100);
    fire_due(&h.core).await;
    h.core.chat.drain(Duration::from_secs(60)).await.expect("chat work drained");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (backlog, queued) = watch.await.unwrap();
    each_card_posted_then_edited_once(&h.core, &h.channel, &h.sessions).await;
    assert!(backlog <= 2 && queued <= 2 + 2, "{backlog} jobs, {queued} entries");
    assert_eq!(h.core.chat.queued_outbox(), 0);
}

/// The same on PostgreSQL (one process, which holds a lease on every entry
/// it commits): its spilled entries stay its own, and the refill pages
/// through them.
#[tokio::test]
async fn on_postgres_the_spilled_card_work_stays_this_replicas_and_goes_out_in_order_once() {
    let Some(db) = plangate_testkit::pg::TestSchema::create_or_skip().await else { return };
    let options = PgOptions { schema: db.schema.clone(), pool_size: 4, ..PgOptions::new(db.url.clone()) };
    let store = tokio::task::spawn_blocking(move || PgStore::open(&options)).await.unwrap().unwrap();
    let h = proposing_on(Arc::new(store), tempfile::tempdir().unwrap(), 40, "2s", Gated::new(false, true)).await;
    storm_then_release(h).await;
    db.cleanup().await;
}

/// Every approval of `h` times out while the platform holds the first card
/// calls; then the platform lets them through.
async fn storm_then_release<S: Store + 'static>(h: Harness<S>) {
    let approvals = h.sessions.len();
    let (stop, watch) = peaks(h.core.clone());
    h.clock.advance(2100);
    fire_due(&h.core).await;
    for key in &h.sessions {
        assert_eq!(latest_status(&h, key).await, DecisionStatus::TimedOut, "{key:?}: a timeout never waits for the backlog");
    }
    assert!(h.core.chat.backlog() <= 2, "held back like nudges: {}", h.core.chat.backlog());
    let waiting = h.core.blocking(|s| s.outbox()).await.unwrap().len();
    assert!(waiting >= 3 * approvals, "posts, edits and receipts wait in the store: {waiting}");
    let metrics = h.core.metrics.render(0, 0);
    let spilled: f64 = metrics.lines().find_map(|l| l.strip_prefix("plangate_outbox_spilled_total ")).unwrap().parse().unwrap();
    assert!(spilled as usize + 2 >= waiting, "counted in /metrics: {spilled} spilled, {waiting} waiting");

    // The platform lets the calls through: the outbox is worked off in
    // pages of what the backlog takes.
    h.channel.cards_held.as_ref().unwrap().add_permits(100_000);
    h.core.chat.drain(Duration::from_secs(60)).await.expect("chat work drained");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (backlog, queued) = watch.await.unwrap();
    assert!(backlog <= 2, "never more chat jobs queued than the limit: {backlog}");
    // Plus the two entries of the one transition being committed: marked
    // queued before the commit, so that no claim takes them meanwhile.
    assert!(queued <= 2 + 2, "never more outbox entries queued in memory than the limit: {queued}");
    each_card_posted_then_edited_once(&h.core, &h.channel, &h.sessions).await;
    assert!(h.core.blocking(|s| s.outbox()).await.unwrap().is_empty(), "every job done once its entry is gone");
    assert_eq!(h.core.chat.queued_outbox(), 0);
    assert!(!h.core.chat.spilling(), "caught up");
}

#[tokio::test]
async fn a_restart_resumes_the_work_left_in_the_outbox_no_more_at_once_than_the_backlog_takes() {
    const APPROVALS: usize = 30;
    let h = storm(APPROVALS).await;
    h.clock.advance(2100);
    fire_due(&h.core).await;
    let left = h.store.outbox().unwrap().len();
    assert!(left >= 3 * APPROVALS, "{left}");

    // The process dies with all of it in the outbox; the next one starts
    // with the same limit and a platform that holds calls at first.
    let mut settings = Settings::from_toml(&backlog_config("2s")).unwrap();
    settings.data_dir = h._dir.path().to_path_buf();
    let core = Core::with_clock(Arc::new(settings), h.store.clone(), h.clock.clone());
    let channel = Arc::new(Gated::new(false, true));
    core.adapters.register(channel.clone());
    core.chat.set_backlog_limit(2);
    let (stop, watch) = peaks(core.clone());
    let resumed = core.resume_outbox().await.unwrap();
    assert!((1..=2).contains(&resumed), "only what the backlog takes is queued at start: {resumed}");
    assert!(core.chat.spilling(), "the rest waits in the outbox");
    channel.cards_held.as_ref().unwrap().add_permits(100_000);
    core.chat.drain(Duration::from_secs(60)).await.expect("chat work drained");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (backlog, queued) = watch.await.unwrap();
    assert!(backlog <= 2 && queued <= 2, "bounded after a restart too (no commits here): {backlog} jobs, {queued} entries");
    each_card_posted_then_edited_once(&core, &channel, &h.sessions).await;
    assert!(h.store.outbox().unwrap().is_empty());
}
