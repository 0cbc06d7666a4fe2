//! The replica paths of the core against a store that behaves like a shared
//! one: sled in the store's `Faulty` wrapper, which keeps a revision,
//! refuses stale commits with `Conflict`, and can be scripted to lose a
//! race to "another replica" or to answer `TimerGone` / `AlreadyHandled`.

use crate::config::Settings;
use crate::core::{Core, CoreError, ExecMeta};
use crate::hub::Hub;
use async_trait::async_trait;
use plangate_channel::Style;
use plangate_channel::{Action, Channel, ChannelError, Delivery, Destination, Document, Inbound, InboundHandler, Reply, User};
use plangate_engine::card::Card;
use plangate_engine::codec::Button;
use plangate_engine::{
    apply, Actor, ApprovalId, ApprovalPolicy, Command, Ctx, DecisionStatus, Plan, Question, SessionKey, Step, TimerPolicy, Verdict,
};
use plangate_store::prelude::*;
use plangate_store::testing::{Faulty, Scripted};
use plangate_store::{Commit, OutboxEntry, Preempted, SledStore, StoreError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A sled store that says it is shared (one revision for everything).
type Racing = Faulty<SledStore>;

/// Another replica's operator `who` approves `id`.
fn approve_elsewhere(store: &Racing, id: ApprovalId, who: &str) {
    let p = store.proposal(&id).unwrap().unwrap();
    let before = store.load(&p.session).unwrap();
    let ctx = Ctx {
        now: crate::clock::Clock::now(&crate::clock::SystemClock),
        random: [7; 16],
        timers: TimerPolicy::default(),
        approvals: ApprovalPolicy::default(),
    };
    let actor = Actor::Operator { name: who.into() };
    let t = apply(&before, &actor, Command::Decide { approval_id: id, verdict: Verdict::Approve }, &ctx).unwrap();
    store.commit_elsewhere(Commit::of(&t, &before, None)).unwrap().written().unwrap();
}

/// A "telegram" channel that counts posts and holds card edits until told.
struct Held {
    posts: AtomicUsize,
    edits: AtomicUsize,
    gate: tokio::sync::Semaphore,
}

#[async_trait]
impl Channel for Held {
    fn name(&self) -> &'static str {
        "telegram"
    }
    async fn post_card(&self, d: &Destination, _: &Card, _: &Document) -> Result<Delivery, ChannelError> {
        let n = self.posts.fetch_add(1, Ordering::SeqCst);
        Ok(Delivery {
            destination: d.name.clone(),
            channel: "telegram".into(),
            chat: d.chat.clone(),
            message_id: n.to_string(),
            thread: None,
            style: d.style,
        })
    }
    async fn update_card(&self, _: &Delivery, _: &Card) -> Result<(), ChannelError> {
        let _permit = self.gate.acquire().await;
        self.edits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    async fn send_nudge(&self, _: &Delivery, _: &Card, _: &str) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send_document(&self, _: &str, _: Option<&str>, _: &Document) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn send_text(&self, _: &str, _: &str) -> Result<(), ChannelError> {
        Ok(())
    }
    async fn post_question(&self, d: &Destination, _: &Question) -> Result<Delivery, ChannelError> {
        Ok(Delivery {
            destination: d.name.clone(),
            channel: "telegram".into(),
            chat: d.chat.clone(),
            message_id: "q".into(),
            thread: None,
            style: d.style,
        })
    }
    async fn update_question(&self, _: &Delivery, _: &Question) -> Result<(), ChannelError> {
        Ok(())
    }
}

const CONFIG: &str = r#"
[server]
bind = "127.0.0.1:0"
data_dir = "unused"
operator_token = "operator-token-0123456789"

[agents.ci]
token = "agent-token-ci-123"
destinations = ["ops"]

[destinations.ops]
channel = "telegram"
chat = "100"
approvers = ["telegram:1", "telegram:2"]

[telegram]
token = "1:real-bot-token"
"#;

struct Fixture {
    core: Arc<Core>,
    store: Arc<Racing>,
    chan: Arc<Held>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings::from_toml(CONFIG).unwrap();
    settings.data_dir = dir.path().to_path_buf();
    let store = Arc::new(Faulty::shared(SledStore::open(&dir.path().join("db")).unwrap()));
    let core = Core::new(Arc::new(settings), store.clone());
    let chan = Arc::new(Held { posts: AtomicUsize::new(0), edits: AtomicUsize::new(0), gate: tokio::sync::Semaphore::new(1_000) });
    core.adapters.register(chan.clone());
    Fixture { core, store, chan, _dir: dir }
}

impl Fixture {
    async fn propose(&self, session: &str) -> (SessionKey, ApprovalId) {
        let key = SessionKey::new("ci", session);
        self.core.execute(&key, Actor::Agent, Command::Enter { reason: None }, ExecMeta::default()).await.unwrap();
        let plan = Plan { steps: vec![Step::pending("one")], ..Plan::titled("Deploy") };
        let done = self
            .core
            .execute(
                &key,
                Actor::Agent,
                Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
                ExecMeta::default(),
            )
            .await
            .unwrap();
        self.core.chat.drain(Duration::from_secs(10)).await.unwrap();
        (key, done.transition.state.latest.unwrap().approval_id)
    }

    fn approve(id: ApprovalId) -> Command {
        Command::Decide { approval_id: id, verdict: Verdict::Approve }
    }
}

/// Wait (up to 5 s) for `condition`, which another thread makes true.
async fn eventually(condition: impl Fn() -> bool) {
    for _ in 0..500 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("still not true after 5 s");
}

/// Two approvers on two replicas: this one loses the race, loads what the
/// other wrote, and the engine refuses its click; one decision, by the
/// other, and none of this attempt's effects.
#[tokio::test]
async fn a_lost_race_is_reapplied_and_refused_by_the_engine() {
    let f = fixture();
    let (_, id) = f.propose("s1").await;
    let posts = f.chan.posts.load(Ordering::SeqCst);
    assert_eq!(posts, 1, "the card was posted once");
    f.store.before_next_commit(move |store| {
        approve_elsewhere(store, id, "bob");
        None
    });
    let attempts = f.store.commit_attempts();
    let alice = Actor::Operator { name: "alice".into() };
    let err = f.core.execute_on_approval(id, alice, Fixture::approve(id), ExecMeta::default()).await.err().expect("refused");
    let said = err.to_string();
    assert!(matches!(err, CoreError::Refused(_)), "{said}");
    assert!(said.contains("already approved by operator:bob"), "{said}");
    assert_eq!(f.store.commit_attempts() - attempts, 1, "one commit attempt: the re-apply was refused before committing");
    let p = f.store.proposal(&id).unwrap().unwrap();
    assert_eq!((p.status, p.decided_by.as_deref()), (DecisionStatus::Approved, Some("operator:bob")));
    assert!(!f.core.is_degraded(), "a lost race is not degradation");
    f.core.chat.drain(Duration::from_secs(10)).await.unwrap();
    assert_eq!(f.chan.edits.load(Ordering::SeqCst), 0, "the losing attempt queued no card edit");
    assert_eq!(f.core.chat.queued_outbox(), 0);
}

/// A conflict with nothing changed (the other replica touched the session
/// harmlessly): the re-apply commits, and only that attempt's jobs run.
#[tokio::test]
async fn a_conflict_then_success_runs_the_jobs_once() {
    let f = fixture();
    let (_, id) = f.propose("s2").await;
    f.store.before_next_commit(|store| {
        store.bump_revision();
        None
    });
    let attempts = f.store.commit_attempts();
    let done =
        f.core.execute_on_approval(id, Actor::Operator { name: "alice".into() }, Fixture::approve(id), ExecMeta::default()).await.unwrap();
    assert!(done.transition.changed);
    assert_eq!(f.store.commit_attempts() - attempts, 2, "one conflict, one commit");
    f.core.chat.drain(Duration::from_secs(10)).await.unwrap();
    assert_eq!(f.chan.edits.load(Ordering::SeqCst), 1, "one card edit for one decision");
    assert!(f.store.outbox().unwrap().is_empty(), "every committed job done");
    assert_eq!(f.core.chat.queued_outbox(), 0);
    let p = f.store.proposal(&id).unwrap().unwrap();
    assert_eq!(p.decided_by.as_deref(), Some("operator:alice"));
}

/// A session that never stops changing: the transition gives up after a
/// bounded number of attempts, records nothing, and is not degradation.
#[tokio::test]
async fn endless_conflicts_give_up_without_degrading() {
    let f = fixture();
    let (_, id) = f.propose("s3").await;
    for _ in 0..100 {
        f.store.before_next_commit(|store| {
            store.bump_revision();
            None
        });
    }
    let attempts = f.store.commit_attempts();
    let err = f.core.execute_on_approval(id, Actor::Operator { name: "a".into() }, Fixture::approve(id), ExecMeta::default()).await;
    assert!(matches!(err, Err(CoreError::Preempted(Preempted::Conflict))), "{:?}", err.err());
    assert_eq!(f.store.commit_attempts() - attempts, 21, "the first attempt and 20 retries");
    assert_eq!(f.store.proposal(&id).unwrap().unwrap().status, DecisionStatus::Pending);
    assert!(!f.core.is_degraded());
    f.store.clear_script();
}

/// A timer another replica fired first: an error for the scheduler to
/// shrug at, no effects, no degradation. A real store failure still degrades.
#[tokio::test]
async fn a_timer_fired_elsewhere_has_no_effects() {
    let f = fixture();
    let (key, id) = f.propose("s4").await;
    let timer = f.store.timers().unwrap().into_iter().find(|t| t.session == key).expect("a nudge or timeout is scheduled");
    f.store.before_next_commit(|_| Some(Scripted::Preempt(Preempted::TimerGone)));
    let meta = ExecMeta { fired: Some(timer.clone()), ..ExecMeta::default() };
    let err = f.core.execute(&key, Actor::Scheduler, Command::TimerFired(timer), meta).await;
    assert!(matches!(err, Err(CoreError::Preempted(Preempted::TimerGone))), "{:?}", err.err());
    assert!(!f.core.is_degraded());
    f.core.chat.drain(Duration::from_secs(10)).await.unwrap();
    assert_eq!(f.core.chat.backlog(), 0);

    f.store.before_next_commit(|_| Some(Scripted::Fail(StoreError::Postgres("connection reset".into()))));
    let err = f.core.execute_on_approval(id, Actor::Operator { name: "a".into() }, Fixture::approve(id), ExecMeta::default()).await;
    assert!(matches!(err, Err(CoreError::Storage(StoreError::Postgres(_)))), "{:?}", err.err());
    assert!(f.core.is_degraded(), "a failing store is degradation");
}

/// A click another replica handled first (the platform retried on this
/// one): no reply, as for an event seen before, and no second decision.
#[tokio::test]
async fn an_event_handled_elsewhere_gets_no_reply() {
    let f = fixture();
    let (_, id) = f.propose("s5").await;
    let hub = Hub::new(f.core.clone());
    f.store.before_next_commit(|_| Some(Scripted::Preempt(Preempted::AlreadyHandled("telegram:cb:42".into()))));
    let click = Inbound {
        channel: "telegram",
        chat: "100".into(),
        user: User { id: "1".into(), name: "ann".into(), team: None },
        action: Action::Button(Button::Approve(id)),
        idempotency_key: Some("telegram:cb:42".into()),
        thread: None,
    };
    assert_eq!(hub.handle(click.clone()).await, Reply::None);
    assert_eq!(f.store.proposal(&id).unwrap().unwrap().status, DecisionStatus::Pending);
    assert!(!f.core.is_degraded());
    // The same click, not handled anywhere yet: decided, and answered.
    let reply = hub.handle(Inbound { idempotency_key: Some("telegram:cb:43".into()), ..click }).await;
    assert!(matches!(&reply, Reply::Notice(text) if text.contains("Approved")), "{reply:?}");
}

/// Other replicas' commits wake this replica's waiters (`None`: all of
/// them) and the scheduler.
#[tokio::test]
async fn changes_from_the_store_wake_waiters_and_the_scheduler() {
    let f = fixture();
    let (a, b) = (SessionKey::new("ci", "a"), SessionKey::new("ci", "b"));
    let (mut wa, mut wb) = (f.core.waiters.subscribe(&a), f.core.waiters.subscribe(&b));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(super::forward_changes(super::Replicas::of(&f.core), rx, shutdown));
    tx.send(Some(a.clone())).unwrap();
    tokio::time::timeout(Duration::from_secs(5), wa.changed()).await.expect("a woken").unwrap();
    tokio::time::timeout(Duration::from_secs(5), f.core.timers.changed.notified()).await.expect("scheduler woken");
    assert!(!wb.has_changed().unwrap(), "b was not touched");
    tx.send(None).unwrap();
    tokio::time::timeout(Duration::from_secs(5), wb.changed()).await.expect("b woken by a missed-changes signal").unwrap();
    tokio::time::timeout(Duration::from_secs(5), wa.changed()).await.expect("a woken too").unwrap();
    drop(tx);
    task.await.unwrap();
}

/// Leadership comes from the store's election, once per role; the
/// listener flips the watch, `Roles::leading` and the metric.
#[tokio::test]
async fn leadership_follows_the_election() {
    let f = fixture();
    let mut telegram = f.core.roles.leadership("telegram");
    assert!(!*telegram.borrow());
    let again = f.core.roles.leadership("telegram");
    eventually(|| f.store.elections().len() == 1).await;
    let listener = f.store.elections()[0].1.clone();
    assert_eq!(f.store.elections()[0].0, "telegram");
    listener(true);
    tokio::time::timeout(Duration::from_secs(5), telegram.changed()).await.unwrap().unwrap();
    assert!(*telegram.borrow_and_update() && *again.borrow());
    assert_eq!(f.core.roles.leading(), vec!["telegram"]);
    assert!(f.core.metrics.render(0, 0).contains("plangate_leader{role=\"telegram\"} 1"));
    listener(false);
    assert!(!*telegram.borrow_and_update());
    assert!(f.core.roles.leading().is_empty());
    assert_eq!(f.store.elections().len(), 1, "one election per role");

    // One process on sled leads at once, without asking anyone.
    let dir = tempfile::tempdir().unwrap();
    let sled = Core::new(f.core.settings.clone(), Arc::new(SledStore::open(dir.path()).unwrap()));
    assert!(*sled.roles.leadership("slack").borrow());
    assert_eq!(sled.roles.leading(), vec!["slack"]);
}

/// A dead replica's outbox entry is claimed and queued once, however often
/// the claim runs while its job is under way.
#[tokio::test]
async fn claimed_outbox_entries_are_queued_once() {
    let f = fixture();
    let (_, id) = f.propose("s6").await;
    assert_eq!(f.core.claim_outbox(10).await.unwrap(), 0, "nothing left over");
    // Left behind by another replica: an edit of the card.
    let delivery = Delivery {
        destination: "ops".into(),
        channel: "telegram".into(),
        chat: "100".into(),
        message_id: "9".into(),
        thread: None,
        style: Style::default(),
    };
    f.store.add_delivery(&id, &delivery).unwrap();
    let seq = f.store.generate_seq().unwrap();
    let work = serde_json::to_vec(&serde_json::json!([id, {"UpdateCards": id}])).unwrap();
    f.store.commit_elsewhere(Commit { outbox: vec![OutboxEntry { seq, work }], ..Commit::default() }).unwrap().written().unwrap();
    let gate = f.chan.gate.acquire_many(1_000).await.unwrap();
    assert_eq!(f.core.claim_outbox(10).await.unwrap(), 1);
    assert_eq!(f.core.claim_outbox(10).await.unwrap(), 0, "queued already");
    super::claim_abandoned(&super::Replicas::of(&f.core).claim).await;
    drop(gate);
    f.core.chat.drain(Duration::from_secs(10)).await.unwrap();
    let edits = f.chan.edits.load(Ordering::SeqCst);
    let cards = f.store.deliveries(&id).unwrap().len();
    assert!(cards >= 1);
    assert_eq!(edits, cards, "the job ran once: every card of the approval edited once");
    assert!(f.store.outbox().unwrap().is_empty());
    assert_eq!(f.core.chat.queued_outbox(), 0);
    assert_eq!(f.core.claim_outbox(10).await.unwrap(), 0);
    f.core.chat.drain(Duration::from_secs(10)).await.unwrap();
    assert_eq!(f.chan.edits.load(Ordering::SeqCst), edits, "not made again");
}

/// The machinery starts only on a shared store, and stops with the server.
#[tokio::test]
async fn replica_tasks_run_on_a_shared_store_until_shutdown() {
    let f = fixture();
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let tasks = super::start(super::Replicas::of(&f.core), shutdown.clone()).await.unwrap();
    assert_eq!(tasks.len(), 2, "change wake-ups and lease renewal");
    stop.send(true).unwrap();
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(5), task).await.expect("stopped at shutdown").unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let sled = Core::new(f.core.settings.clone(), Arc::new(SledStore::open(dir.path()).unwrap()));
    assert!(super::start(super::Replicas::of(&sled), shutdown).await.unwrap().is_empty(), "nothing to do for one process");
}
