//! The chat backlog: while the platforms work through queued chat jobs, due
//! nudges stay in the store (disk, not memory) and fire once the backlog
//! drains; timeouts never wait; a reminder that waited is re-checked before
//! it is sent.

use async_trait::async_trait;
use plangate_channel::{Channel, ChannelError, Delivery, Destination, Document};
use plangate_engine::card::Card;
use plangate_engine::{Actor, Command, DecisionStatus, Plan, Question, SessionKey, TimerKind};
use plangate_server::config::Settings;
use plangate_server::core::{Core, ExecMeta};
use plangate_server::scheduler::fire_due;
use plangate_store::{SledStore, Store};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// A channel whose nudges wait until the test lets them through.
struct Gated {
    nudged: Mutex<Vec<String>>,
    gate: Semaphore,
    /// A buggy adapter: nudges panic.
    panics: bool,
}

#[async_trait]
impl Channel for Gated {
    fn name(&self) -> &'static str {
        "telegram"
    }
    async fn post_card(&self, d: &Destination, card: &Card, _doc: &Document) -> Result<Delivery, ChannelError> {
        Ok(Delivery::posted(d, d.chat.clone(), format!("card-{}", card.approval_id)))
    }
    async fn update_card(&self, _d: &Delivery, _card: &Card) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send_nudge(&self, d: &Delivery, _card: &Card, _text: &str) -> Result<(), ChannelError> {
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

fn config(timeout: &str) -> String {
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
    let mut settings = Settings::from_toml(&config(timeout)).unwrap();
    settings.data_dir = dir.path().to_path_buf();
    let store = Arc::new(SledStore::open(dir.path()).unwrap());
    let core = Core::new(Arc::new(settings), store.clone());
    let channel = Arc::new(Gated { nudged: Mutex::new(Vec::new()), gate: Semaphore::new(0), panics });
    core.register_channel(channel.clone());
    core.set_chat_backlog_limit(2);
    let mut sessions = Vec::new();
    for i in 0..5 {
        let key = SessionKey::new("demo", format!("s{i}"));
        core.execute(&key, Actor::Agent, Command::Enter { reason: None }, ExecMeta::default()).await.unwrap();
        let propose = Command::Propose { plan: Plan::titled(format!("plan {i}")), markdown: None };
        core.execute(&key, Actor::Agent, propose, ExecMeta::default()).await.unwrap();
        sessions.push(key);
    }
    core.drain().await;
    assert_eq!(core.chat_backlog(), 0, "the cards are out");
    Harness { core, store, channel, sessions, _dir: dir }
}

fn nudge_timers(store: &SledStore) -> usize {
    store.timers().unwrap().iter().filter(|t| matches!(t.kind, TimerKind::Nudge(_))).count()
}

async fn status(h: &Harness, key: &SessionKey) -> DecisionStatus {
    h.core.load(key).await.unwrap().latest.unwrap().status
}

#[tokio::test]
async fn due_nudges_wait_in_the_store_while_the_backlog_is_full_then_each_goes_out_once() {
    let h = harness("off").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;

    assert!(fire_due(&h.core).await, "nudges were left due");
    assert_eq!(h.core.chat_backlog(), 2, "only as many nudge jobs as the limit");
    assert_eq!(nudge_timers(&h.store), 3, "the rest stay in the store");

    h.channel.gate.add_permits(100);
    h.core.drain().await;
    assert!(fire_due(&h.core).await, "room for two more; the last still waits");
    assert_eq!(nudge_timers(&h.store), 1);
    h.core.drain().await;
    assert!(!fire_due(&h.core).await, "the last one fires");
    h.core.drain().await;
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
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(fire_due(&h.core).await);
    assert_eq!(h.core.chat_backlog(), 2);

    // The timeouts fall due while two nudges are stuck on the platform.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    fire_due(&h.core).await;
    for key in &h.sessions {
        assert_eq!(status(&h, key).await, DecisionStatus::TimedOut, "{key:?}: a timeout never waits for the backlog");
    }
    assert_eq!(nudge_timers(&h.store), 0, "deciding an approval cancels its nudges");

    // The two nudges already at the platform finish; the three that waited
    // in the store died with their approvals.
    h.channel.gate.add_permits(100);
    h.core.drain().await;
    fire_due(&h.core).await;
    h.core.drain().await;
    assert_eq!(h.channel.nudged.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_panicking_adapter_does_not_leave_the_backlog_stuck() {
    let h = harness_with("off", true).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(fire_due(&h.core).await);
    assert_eq!(h.core.chat_backlog(), 2);
    h.channel.gate.add_permits(100);
    // Both jobs panic inside the adapter; the workers carry on and the places
    // are given back, so the other three nudges still fire.
    tokio::time::timeout(Duration::from_secs(5), async {
        while h.core.chat_backlog() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the backlog drains even though every job panicked");
    assert!(fire_due(&h.core).await, "room for two more");
    assert_eq!(nudge_timers(&h.store), 1);
}
