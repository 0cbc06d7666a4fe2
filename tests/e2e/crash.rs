//! Crash safety, tested the way sled tests itself: run the real binary under
//! load (proposals, decisions, nudges and timeouts on second-scale timers,
//! cards to the Telegram fake), SIGKILL it at random moments, restart, and
//! check the invariants every time.

use super::kit::telegram_unpaced;
use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const CYCLES: usize = 20;

#[derive(Default)]
struct Acknowledged {
    /// Every proposal the server answered 201 for.
    proposals: Vec<String>,
    /// Every decision the server answered 200 for: id → (status, decided_by).
    decisions: HashMap<String, (String, String)>,
}

/// A tiny deterministic PRNG so a failure can be replayed from its seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

async fn try_call(req: reqwest::RequestBuilder) -> Option<(u16, Value)> {
    let resp = req.timeout(Duration::from_secs(5)).send().await.ok()?;
    let status = resp.status().as_u16();
    let body = resp.json().await.unwrap_or(Value::Null);
    Some((status, body))
}

/// One client's worth of load until `stop`: propose, and decide some.
async fn load(base: String, worker: u64, seed: u64, acked: Arc<Mutex<Acknowledged>>, stop: Arc<std::sync::atomic::AtomicBool>) {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let agent = |m: Method, p: &str| http.request(m, format!("{base}{p}")).bearer_auth(plangate_testkit::server::AGENT_TOKEN);
    let op = |m: Method, p: &str| http.request(m, format!("{base}{p}")).bearer_auth(plangate_testkit::server::OPERATOR_TOKEN);
    let mut rng = Rng(seed | 1);
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        n += 1;
        let session = format!("w{worker}-{}", rng.below(4));
        let _ = try_call(agent(Method::POST, &format!("/v1/sessions/{session}/enter"))).await;
        let body = json!({"title": format!("plan {worker}-{n}"), "steps": [{"step": format!("s{n}")}]});
        let Some((201, d)) = try_call(agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&body)).await else {
            continue;
        };
        let id = d["approval_id"].as_str().unwrap_or_default().to_string();
        acked.lock().unwrap().proposals.push(id.clone());
        let action = match rng.below(4) {
            0 => "approve",
            1 => "revise",
            2 => "cancel",
            _ => continue, // leave it pending: nudges and the timeout take over
        };
        let body = json!({"action": action, "feedback": "change it", "actor": format!("w{worker}")});
        if let Some((200, dec)) = try_call(op(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&body)).await {
            let entry =
                (dec["status"].as_str().unwrap_or_default().to_string(), dec["decided_by"].as_str().unwrap_or_default().to_string());
            acked.lock().unwrap().decisions.insert(id, entry);
        }
    }
}

async fn approval(s: &ServerProcess, id: &str) -> Value {
    let (st, v) = ServerProcess::send(s.operator(Method::GET, &format!("/v1/approvals/{id}"))).await;
    assert_eq!(st, 200, "approval {id} lost: {v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_at_random_moments_never_breaks_the_invariants() {
    crash_loop("", CYCLES).await;
}

/// The same crash loop on the PostgreSQL backend (#18): every commit is one
/// PostgreSQL transaction, and the restarted process (a new replica id)
/// takes over the dead one's leased timers and chat work once its leases
/// (3 s here, the shortest the config allows) run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_at_random_moments_never_breaks_the_invariants_on_postgres() {
    let Some(pg) = plangate_testkit::pg::TestSchema::create_or_skip().await else { return };
    crash_loop(&plangate_testkit::pg::store_config(&pg), CYCLES / 2).await;
    pg.cleanup().await;
}

/// Load, SIGKILL, restart, check, `cycles` times; `store` is the `[store]`
/// section (empty: sled).
async fn crash_loop(store: &str, cycles: usize) {
    let seed = std::env::var("PLANGATE_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_u64);
    let fake = FakeTelegram::start().await;
    let extra = format!("{store}\n[approvals]\nnudges = [\"1s\", \"2s\"]\ntimeout = \"3s\"\n{}", telegram_unpaced(&fake, -100, 1));
    let mut s = ServerProcess::start_with(BIN, &["tg"], &extra).await;
    let acked = Arc::new(Mutex::new(Acknowledged::default()));
    let mut rng = Rng(seed);
    let mut settled: HashMap<String, Value> = HashMap::new();
    for cycle in 0..cycles {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                tokio::spawn(load(
                    s.base.clone(),
                    w,
                    seed.wrapping_mul(31).wrapping_add((cycle * 4) as u64 + w),
                    acked.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(150 + rng.below(600))).await;
        s.kill9().await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in workers {
            let _ = w.await;
        }
        s.restart().await;

        let (proposals, decisions) = {
            let acked = acked.lock().unwrap();
            (acked.proposals.clone(), acked.decisions.clone())
        };
        // No acknowledged proposal lost; no acknowledged decision missing.
        for id in &proposals {
            let v = approval(&s, id).await;
            let d = &v["decision"];
            if let Some((status, by)) = decisions.get(id) {
                assert_eq!(
                    (d["status"].as_str(), d["decided_by"].as_str()),
                    (Some(status.as_str()), Some(by.as_str())),
                    "cycle {cycle}: {id}"
                );
            }
            // No approved plan without its hash.
            if d["status"] == "approved" || d["status"] == "edited" {
                assert!(d["plan_hash"].as_str().is_some_and(|h| h.starts_with("sha256:")), "{v}");
            }
            // Every pending approval still has its timeout.
            if d["status"] == "pending" {
                let timers = v["timers"].as_array().unwrap();
                assert!(timers.iter().any(|t| t["kind"] == "timeout"), "cycle {cycle}: pending {id} lost its timers: {v}");
            }
            // A decided approval never changes.
            if d["status"] != "pending" {
                if let Some(before) = settled.get(id) {
                    assert_eq!(before, d, "cycle {cycle}: decided approval {id} changed");
                }
                settled.insert(id.clone(), d.clone());
            }
        }
    }
    // Let the last timers fire: the server's clock turned past every
    // timeout (3 s), so no approval is left pending.
    s.advance_clock(4_000).await;
    eventually(Duration::from_secs(30), "every approval decided or timed out", || async {
        let (_, pending) = ServerProcess::send(s.operator(Method::GET, "/v1/approvals?status=pending&limit=1")).await;
        pending.as_array().is_some_and(|a| a.is_empty())
    })
    .await;

    // Every card of a decided approval ends without buttons: the edits a
    // decision (or timeout) asks for are committed with it, in the outbox,
    // so a crash before they ran only delays them to the next start.
    // A card whose post was answered but not yet recorded when the process
    // died cannot be found again (no platform tells us its id): the post is
    // repeated on start (at least once) and the new card carries the
    // outcome. Anything else left with buttons is a lost edit.
    let (mut orphaned, mut lost) = (0, Vec::new());
    for _ in 0..40 {
        let stale = stale_cards(&s, &fake).await;
        let cards: Vec<_> = fake.calls("sendMessage").into_iter().filter(|r| r.status == 200 && !r.str("text").contains("⏰")).collect();
        let settled_card = |id: &str, after: i64| {
            let short = format!("#{}", &id[..6]);
            cards.iter().filter(|r| r.str("text").contains(&short) && r.message_id_sent() > Some(after)).any(|r| {
                fake.message(r.chat_id().unwrap_or(0), r.message_id_sent().unwrap_or(0)).is_some_and(|m| m.get("reply_markup").is_none())
            })
        };
        lost = stale.iter().filter(|(id, message)| !settled_card(id, *message)).cloned().collect();
        orphaned = stale.len() - lost.len();
        if lost.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("cards orphaned by a crash mid-post (posted again with the outcome): {orphaned}; lost edits: {}", lost.len());
    assert!(lost.is_empty(), "decided approvals whose card still shows buttons and was not posted again: {lost:?}");

    // Then the nudges (each approval's chat jobs run in order, so its
    // nudges went out before its settled card's edit): at most one per
    // (approval, nudge number) — the send key is recorded after the send,
    // so a crash in between may repeat one (at-least-once); count those.
    let nudges: Vec<String> = fake.calls("sendMessage").iter().map(|r| r.str("text")).filter(|t| t.contains("⏰")).collect();
    let mut per_text: HashMap<&str, usize> = HashMap::new();
    for t in &nudges {
        *per_text.entry(t.as_str()).or_default() += 1;
    }
    let repeats: usize = per_text.values().map(|n| n - 1).sum();
    let (proposals, decisions) = {
        let acked = acked.lock().unwrap();
        (acked.proposals.len(), acked.decisions.len())
    };
    println!(
        "{cycles} kill -9 cycles: {proposals} proposals, {decisions} acknowledged decisions, {} nudges sent, {repeats} repeated",
        nudges.len()
    );
    assert!(repeats <= cycles, "{repeats} nudges repeated across {cycles} crashes");
    assert!(proposals > 0 && decisions > 0);
}

/// Cards (not nudges) still showing buttons although their approval is
/// decided: (approval id, message id).
async fn stale_cards(s: &ServerProcess, fake: &FakeTelegram) -> Vec<(String, i64)> {
    use plangate_engine::codec::{decode, Button};
    let mut stale = Vec::new();
    for r in fake.calls("sendMessage").iter().filter(|r| r.status == 200 && !r.str("text").contains("⏰")) {
        let Some(data) = r.keyboard().and_then(|rows| rows.into_iter().flatten().map(|(_, data)| data).find(|d| !d.is_empty())) else {
            continue;
        };
        let id = match decode(&data) {
            Ok(Button::Approve(id) | Button::RequestChanges(id) | Button::Cancel(id) | Button::View(id) | Button::Edit(id)) => id,
            _ => continue,
        };
        let (Some(chat), Some(message)) = (r.chat_id(), r.message_id_sent()) else { continue };
        let still_buttons = fake.message(chat, message).is_some_and(|m| m.get("reply_markup").is_some());
        if still_buttons && approval(s, &id.to_string()).await["decision"]["status"] != "pending" {
            stale.push((id.to_string(), message));
        }
    }
    stale
}
