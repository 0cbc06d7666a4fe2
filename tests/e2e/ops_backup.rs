//! `plangate backup` of a running server under load, and `plangate restore`
//! into an empty dir: every decision acknowledged before the backup began is
//! in the restored data, and the restore refuses a non-empty dir.

use plangate_engine::{ApprovalId, DecisionStatus};
use plangate_store::prelude::*;
use plangate_store::SledStore;
use plangate_testkit::server::{ServerProcess, OPERATOR_TOKEN};
use reqwest::Method;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

async fn operator_cli_run(args: &[&str]) -> (i32, String) {
    let out = tokio::process::Command::new(BIN).args(args).env("PLANGATE_OPERATOR_TOKEN", OPERATOR_TOKEN).output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await.expect("finished").expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("plangate {args:?}: {stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

#[tokio::test]
async fn a_backup_taken_under_load_restores_every_acknowledged_decision() {
    // `plangate backup` is a sled feature (PostgreSQL has pg_dump): sled
    // here even in the PostgreSQL pass of the suite.
    let s = Arc::new(ServerProcess::start(BIN, plangate_testkit::pg::SLED).await);
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for lane in 0..6 {
        let (s, acknowledged, stop) = (s.clone(), acknowledged.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let session = format!("b{lane}-{n}");
                n += 1;
                s.agent(Method::POST, &format!("/v1/sessions/{session}/enter")).send().await.expect("enter");
                let body = json!({"title": format!("Plan {session}"), "steps": [{"step": "one"}]});
                let (st, d) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{session}/proposals")).json(&body)).await;
                assert_eq!(st, 201, "{d}");
                let id = d["approval_id"].as_str().expect("id").to_string();
                let decide =
                    s.operator(Method::POST, &format!("/v1/approvals/{id}/decision")).json(&json!({"action": "approve", "actor": "load"}));
                let (st, _) = ServerProcess::send(decide).await;
                assert_eq!(st, 200);
                acknowledged.lock().unwrap().push(id);
            }
        }));
    }
    // Let the load run, then back up while it goes on.
    plangate_testkit::server::eventually(Duration::from_secs(30), "some decisions made", || {
        let n = acknowledged.lock().unwrap().len();
        async move { n >= 30 }
    })
    .await;
    let before: Vec<String> = acknowledged.lock().unwrap().clone();
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("plangate.backup");
    let file_arg = file.to_str().expect("utf-8");
    let (code, _) = operator_cli_run(&["backup", "--to", file_arg, "--url", &s.base]).await;
    assert_eq!(code, 0);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for task in load {
        task.await.expect("load task");
    }
    assert!(acknowledged.lock().unwrap().len() > before.len(), "the load went on during the backup");

    let restored = dir.path().join("restored");
    let restored_arg = restored.to_str().expect("utf-8");
    let (code, stderr) = operator_cli_run(&["restore", file_arg, "--data-dir", restored_arg]).await;
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = operator_cli_run(&["restore", file_arg, "--data-dir", restored_arg]).await;
    assert!(code != 0 && stderr.contains("not empty"), "{stderr}");

    let store = SledStore::open(&restored).expect("the restored store opens");
    for id in &before {
        let p = store.proposal(&ApprovalId::parse(id).expect("id")).expect("read").unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(p.status, DecisionStatus::Approved, "{id}");
        let state = store.load(&p.session).expect("session");
        assert_eq!(state.latest.map(|l| l.approval_id), Some(p.approval_id), "the session points at its proposal");
    }
    // Whole transitions only: no proposal is missing the session that points at it.
    for session in store.sessions().expect("sessions") {
        if let Some(id) = session.latest_approval {
            assert!(store.proposal(&id).expect("read").is_some(), "{id}");
        }
    }
}
