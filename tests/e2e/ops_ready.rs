//! `/readyz` through the real binary: ready when the store takes a durable
//! write and every configured channel is connected; 503 with the reason
//! when Telegram's polling stops succeeding. `/healthz` stays liveness.

use plangate_testkit::server::{eventually, ServerProcess};
use plangate_testkit::telegram::{FakeTelegram, Scripted};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

#[tokio::test]
async fn readyz_reports_the_store_and_each_channel_with_the_reason() {
    // No channel: the store alone.
    let plain = ServerProcess::start(BIN, "").await;
    let (st, body) = ServerProcess::send(plain.http.get(plain.url("/readyz"))).await;
    assert_eq!((st, body["status"].as_str(), body["checks"]["store"].as_str()), (200, Some("ready"), Some("ok")), "{body}");

    let fake = FakeTelegram::start().await;
    let s = ServerProcess::start_with(BIN, &["ops"], &crate::telegram::config(&fake)).await;
    // Ready once connected: at once on sled (one process leads from the
    // start); on PostgreSQL after this replica wins the Telegram election
    // and its first getUpdates answers ("taking over" until then).
    let ready = s.url("/readyz");
    eventually(Duration::from_secs(10), "ready with Telegram connected", || {
        let req = s.http.get(&ready);
        async move {
            let (st, body) = ServerProcess::send(req).await;
            st == 200 && body["checks"]["telegram"] == "ok"
        }
    })
    .await;

    // getUpdates starts failing: after two poll timeouts + 5 s, not ready, and why.
    for _ in 0..100 {
        fake.script("getUpdates", Scripted::Error { status: 502, description: "Bad Gateway".into() });
    }
    let url = s.url("/readyz");
    eventually(Duration::from_secs(30), "telegram not ready", || {
        let req = s.http.get(&url);
        async move { ServerProcess::send(req).await.0 == 503 }
    })
    .await;
    let (_, body) = ServerProcess::send(s.http.get(s.url("/readyz"))).await;
    assert_eq!(body["status"], "not_ready", "{body}");
    assert_eq!(body["checks"]["store"], "ok", "{body}");
    assert!(body["checks"]["telegram"].as_str().is_some_and(|r| r.contains("no successful getUpdates")), "{body}");
    // Liveness is not readiness: the process is alive.
    let (st, _) = ServerProcess::send(s.http.get(s.url("/healthz"))).await;
    assert_eq!(st, 200);
}
