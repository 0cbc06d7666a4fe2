//! `plangate migrate` (#18): a populated sled store moved to PostgreSQL by
//! the real binary, then the same approvals decided through the new
//! backend, their cards edited where they were posted; a live sled
//! directory and a non-empty target are refused.

use super::kit::telegram_unpaced;
use plangate_testkit::pg::{store_config, TestSchema};
use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const CHAT: i64 = -100_555;

/// Telegram (unpaced, destination `tg`) and hour-long timers.
fn telegram_hourly(fake: &FakeTelegram) -> String {
    format!(
        "[approvals]
nudges = [\"1h\"]
timeout = \"2h\"
{}",
        telegram_unpaced(fake, CHAT, 111)
    )
}

/// `plangate migrate --from DIR --to URL --schema S`: (exit code, stdout, stderr).
async fn migrate(from: &std::path::Path, pg: &TestSchema) -> (i32, String, String) {
    let out = tokio::process::Command::new(BIN)
        .args(["migrate", "--from"])
        .arg(from)
        .args(["--to", &pg.url, "--schema", &pg.schema])
        .output()
        .await
        .expect("run plangate migrate");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sled_store_moves_to_postgres_and_its_approvals_are_decided_there() {
    let Some(pg) = TestSchema::create_or_skip().await else { return };
    let fake = FakeTelegram::start().await;
    let mut sled = ServerProcess::start_with(BIN, &["tg"], &format!("{}\n{}", plangate_testkit::pg::SLED, telegram_hourly(&fake))).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let session = format!("move-{i}");
        let (st, _) = ServerProcess::send(sled.agent(Method::POST, &format!("/v1/sessions/{session}/enter"))).await;
        assert_eq!(st, 200);
        let body = json!({"title": format!("Move {i}"), "steps": [{"step": "Change it"}, {"step": "Test it"}]});
        let (st, v) = ServerProcess::send(sled.agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&body)).await;
        assert_eq!(st, 201, "{v}");
        ids.push(v["approval_id"].as_str().expect("id").to_string());
    }
    // Two decided on sled; three left pending, with their cards out.
    for id in &ids[..2] {
        let body = json!({"action": "approve", "actor": "alice"});
        let (st, v) = ServerProcess::send(sled.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&body)).await;
        assert_eq!(st, 200, "{v}");
    }
    let cards = fake
        .wait_for(Duration::from_secs(15), |reqs| {
            let cards: Vec<_> = reqs.iter().filter(|r| r.method == "sendMessage" && r.status == 200).cloned().collect();
            (cards.len() >= 5).then_some(cards)
        })
        .await;
    sled.http.get(sled.url("/healthz")).send().await.expect("up");

    // A live data dir is refused.
    let (code, _, err) = migrate(&sled.data_path(), &pg).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("in use by a running plangate") && err.contains("stop it first"), "{err}");

    let stopped = sled.terminate().await;
    assert!(stopped.success(), "{stopped:?}");
    let (code, out, err) = migrate(&sled.data_path(), &pg).await;
    assert_eq!(code, 0, "migrate failed: {out}\n{err}");
    println!("plangate migrate:\n{out}");
    assert!(out.contains("proposals") && out.contains("plan documents: not copied"), "{out}");
    assert_eq!(pg.query(&format!("SELECT count(*) FROM {}.proposals", pg.schema)).await, "5");
    // Again into the same schema: refused, nothing doubled.
    let (code, _, err) = migrate(&sled.data_path(), &pg).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("already holds plangate data"), "{err}");

    // The same approvals, decided through PostgreSQL.
    let moved = ServerProcess::start_with(BIN, &["tg"], &format!("{}\n{}", store_config(&pg), telegram_hourly(&fake))).await;
    for id in &ids[..2] {
        let (st, v) = ServerProcess::send(moved.operator(Method::GET, &format!("/v1/approvals/{id}"))).await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(
            (v["decision"]["status"].as_str(), v["decision"]["decided_by"].as_str()),
            (Some("approved"), Some("operator:alice")),
            "{v}"
        );
    }
    for id in &ids[2..] {
        let body = json!({"action": "revise", "actor": "bob", "feedback": "split it"});
        let (st, v) = ServerProcess::send(moved.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&body)).await;
        assert_eq!(st, 200, "decided after the move: {v}");
        assert_eq!(v["status"], "rejected", "{v}");
    }
    // Their cards, posted by the sled process, are edited by the new one:
    // the deliveries moved with them.
    for id in &ids[2..] {
        let short = format!("#{}", &id[..6]);
        let card = cards.iter().find(|c| c.str("text").contains(&short)).expect("card posted before the move");
        let message_id = card.message_id_sent().expect("message id");
        eventually(Duration::from_secs(15), &format!("the card of {short} edited after the move"), || {
            let edited = fake.calls("editMessageText").iter().any(|r| r.field("message_id") == &json!(message_id));
            async move { edited }
        })
        .await;
        // The audit came along: the proposal (on sled) and the decision (on PostgreSQL).
        let (_, audit) = ServerProcess::send(moved.operator(Method::GET, &format!("/v1/audit?approval={id}"))).await;
        let actions: Vec<&str> = audit.as_array().into_iter().flatten().filter_map(|e| e["action"].as_str()).collect();
        assert!(actions.contains(&"propose") && actions.contains(&"revise"), "{id}: {actions:?}");
    }
    pg.cleanup().await;
}
