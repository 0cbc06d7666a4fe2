//! Two replicas on one PostgreSQL store posting the first cards of one
//! session at once (#30): the opening of the session's thread is claimed
//! in the store, so one replica starts the thread and the other waits for
//! it and posts into it; never two threads for one session. Discord's
//! thread start is made slow on the fake, so the two overlap every time.

use super::kit::{audit, propose};
use super::threads_discord::{discord_threads_config, APP};
use plangate_testkit::discord::DiscordFake;
use plangate_testkit::pg::{start_replicas, TestSchema};
use plangate_testkit::server::eventually;
use serde_json::json;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_open_one_thread_for_a_session() {
    let Some(pg) = TestSchema::create_or_skip().await else { return };
    let fake = DiscordFake::start(APP).await;
    let rs = start_replicas(BIN, 2, &pg, &["dc"], &discord_threads_config(&fake, "")).await;
    fake.slow_threads(Duration::from_millis(700));
    let sessions = ["r1", "r2", "r3"];
    for session in sessions {
        // v1 on one replica, v2 on the other at once: each posts a first
        // card of the session while no thread is stored yet.
        let v1 = json!({"title": format!("{session} one"), "steps": [{"step": "Read"}], "project": {"name": session}});
        let v2 = json!({"title": format!("{session} two"), "steps": [{"step": "Read twice"}], "project": {"name": session}});
        propose(&rs[0], session, &v1).await;
        propose(&rs[1], session, &v2).await;
    }
    for session in sessions {
        // Both cards posted and recorded (after their threads, if any, were started).
        eventually(WAIT, &format!("{session}'s two cards recorded"), || async {
            let posted = audit(&rs[0], &format!("session={session}")).await;
            [1, 2].iter().all(|v| posted.iter().any(|e| e["action"] == "card_posted" && e["version"] == *v))
        })
        .await;
        let threads: Vec<u64> = fake.threads().into_iter().filter(|t| t.name.starts_with(&format!("{session} · "))).map(|t| t.id).collect();
        assert_eq!(threads.len(), 1, "{session}: one thread, not one per replica: {:?}", fake.threads());
        // The other card went into that thread.
        let in_thread = format!("/api/v10/channels/{}/messages", threads[0]);
        let posted_there = fake
            .requests()
            .iter()
            .any(|r| r.method == "POST" && r.path == in_thread && r.json().is_some_and(|j| j.to_string().contains(&format!("{session} "))));
        assert!(posted_there, "{session}: the loser posted into the winner's thread");
    }
    pg.cleanup().await;
}
