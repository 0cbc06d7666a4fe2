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
use plangate_store::SledStore;
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

struct Harness {
    core: Arc<Core>,
    /// The core's clock: tests turn it instead of sleeping.
    clock: Arc<ManualClock>,
    store: Arc<SledStore>,
    channel: Arc<Gated>,
    sessions: Vec<SessionKey>,
    _dir: tempfile::TempDir,
}

/// Five sessions with a pending proposal each, cards posted, backlog limit 2.
async fn harness(timeout: &str) -> Harness {
    harness_with(timeout, false).await
}

async fn harness_with(timeout: &str, panics: bool) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::from_toml(&backlog_config(timeout)).unwrap();
    settings.data_dir = dir.path().to_path_buf();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    let clock = Arc::new(ManualClock::new(SystemClock.now()));
    let core = Core::with_clock(Arc::new(settings), store.clone(), clock.clone());
    let channel = Arc::new(Gated::new(panics, false));
    core.register_channel(channel.clone());
    core.set_chat_backlog_limit(2);
    let mut sessions = Vec::new();
    for i in 0..5 {
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
    core.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert_eq!(core.chat_backlog(), 0, "the cards are out");
    Harness { core, clock, store, channel, sessions, _dir: dir }
}

fn nudge_timers(store: &SledStore) -> usize {
    store.timers().unwrap().iter().filter(|t| matches!(t.kind, TimerKind::Nudge(_))).count()
}

async fn latest_status(h: &Harness, key: &SessionKey) -> DecisionStatus {
    h.core.load(key).await.unwrap().latest.unwrap().status
}

/// A SIGTERM during a catch-up of overdue timers is not held until the
/// catch-up is done: once a shutdown began, nothing more fires, and every
/// due timer stays in the store for the next start.
#[tokio::test]
async fn once_a_shutdown_began_due_timers_stay_in_the_store() {
    let h = harness("off").await;
    h.clock.advance(1100);
    h.core.begin_shutdown();
    assert!(!fire_due(&h.core).await, "nothing was left due for a full backlog: the pass stopped");
    assert_eq!(h.core.chat_backlog(), 0, "no nudge job was queued");
    assert_eq!(nudge_timers(&h.store), 5, "every due nudge is still in the store");
    assert!(h.channel.nudged.lock().unwrap().is_empty());
}

#[tokio::test]
async fn due_nudges_wait_in_the_store_while_the_backlog_is_full_then_each_goes_out_once() {
    let h = harness("off").await;
    h.clock.advance(1100);

    assert!(fire_due(&h.core).await, "nudges were left due");
    assert_eq!(h.core.chat_backlog(), 2, "only as many nudge jobs as the limit");
    assert_eq!(nudge_timers(&h.store), 3, "the rest stay in the store");

    // The platform takes the two; the next two then wait at it in turn.
    h.channel.gate.add_permits(2);
    h.core.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert!(fire_due(&h.core).await, "room for two more; the last still waits");
    assert_eq!(nudge_timers(&h.store), 1);
    h.channel.gate.add_permits(100);
    h.core.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert!(!fire_due(&h.core).await, "the last one fires");
    h.core.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
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
    assert_eq!(h.core.chat_backlog(), 2);
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
    h.core.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    fire_due(&h.core).await;
    h.core.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
    assert_eq!(h.channel.nudged.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_panicking_adapter_does_not_leave_the_backlog_stuck() {
    let h = harness_with("off", true).await;
    h.clock.advance(1100);
    assert!(fire_due(&h.core).await);
    assert_eq!(h.core.chat_backlog(), 2);
    h.channel.gate.add_permits(2);
    // Both jobs panic inside the adapter; the workers carry on and the places
    // are given back, so the other three nudges still fire (the next two then
    // wait at the closed gate again).
    h.core.drain(Duration::from_secs(5)).await.expect("the backlog drains even though every job panicked");
    assert!(fire_due(&h.core).await, "room for two more");
    assert_eq!(nudge_timers(&h.store), 1);
}

/// What a restart does: a new core on the same store, a fresh channel.
async fn restart(h: &Harness, timeout: &str) -> (Arc<Core>, Arc<Gated>, usize) {
    let mut settings = Settings::from_toml(&backlog_config(timeout)).unwrap();
    settings.data_dir = h._dir.path().to_path_buf();
    let core = Core::new(Arc::new(settings), h.store.clone());
    let channel = Arc::new(Gated::new(false, false));
    core.register_channel(channel.clone());
    let resumed = core.resume_outbox().await.unwrap();
    core.drain(Duration::from_secs(10)).await.expect("chat jobs drained");
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
    core.register_channel(hung.clone());
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
