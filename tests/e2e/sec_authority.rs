//! Security regressions of issue 26 through the real binary: every way to
//! open the gate obeys the same rules as Approve. A requester who may not
//! approve their own work may not release it either, and one approver may
//! not release what two must approve.

use super::kit::{audit, call, gate_rm_rf, plan, propose, say, status, telegram_section, tg_user};
use plangate_testkit::server::ServerProcess;
use plangate_testkit::telegram::FakeTelegram;
use reqwest::Method;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");
const CHAT: i64 = -1002600;
const ALICE: i64 = 111;
const BOB: i64 = 222;
/// Asks for the work (`[agents.demo] requested_by`); an approver of others' plans.
const CAROL: i64 = 333;

/// Telegram chat `ops` (alice, bob, carol) whose plans need two distinct
/// approvers, never the requester; carol is the requester of every plan of
/// agent `demo`, named by its config.
async fn start_ops(fake: &FakeTelegram) -> ServerProcess {
    let extra = format!(
        r#"
{}
[destinations.ops]
channel = "telegram"
chat = "{CHAT}"
approvers = ["telegram:{ALICE}", "telegram:{BOB}", "telegram:{CAROL}"]

[destinations.ops.approvals]
required = 2
forbid_self = true
"#,
        telegram_section(fake)
    );
    let mut s = ServerProcess::start_with(BIN, &["ops"], &extra).await;
    // The harness writes `[agents.demo]` itself: name the requester there.
    let config = std::fs::read_to_string(s.config_path()).expect("config");
    let config = config.replacen("[agents.demo]\n", &format!("[agents.demo]\nrequested_by = \"telegram:{CAROL}\"\n"), 1);
    std::fs::write(s.config_path(), config).expect("config");
    s.restart().await;
    s
}

async fn enter(s: &ServerProcess, session: &str) {
    let (st, d) = call(s.agent(Method::POST, &format!("/v1/sessions/{session}/enter"))).await;
    assert!(st == 200 || st == 201, "{st} {d}");
}

/// "Drop the table", which carol requested and two others must approve.
async fn propose_drop_table(s: &ServerProcess, session: &str) {
    let d = propose(s, session, &plan("Drop the table", &["Read the table", "Drop the table"])).await;
    assert_eq!((d["required_approvals"].as_u64(), d["requested_by"].as_str()), (Some(2), Some("telegram:333")), "{d}");
}

/// The audit of `session`, one `actor action: detail` line per entry.
async fn audit_entries(s: &ServerProcess, session: &str) -> Vec<String> {
    audit(s, &format!("session={session}")).await.iter().map(|e| format!("{} {}: {}", e["actor"], e["action"], e["detail"])).collect()
}

/// Issue 26, item 1: the requester's `/plan accept` was refused, but their
/// `/plan off` released the session (`released_by: telegram:@carol`) and the
/// gate allowed `rm -rf`, with a pending plan and without one.
#[tokio::test]
async fn the_requester_cannot_release_their_own_work() {
    let fake = FakeTelegram::start().await;
    let s = start_ops(&fake).await;
    let carol = || tg_user(CAROL, "carol");

    propose_drop_table(&s, "s1").await;
    say(&fake, CHAT, carol(), "/plan accept demo/s1", "someone else must approve").await;
    let said = say(&fake, CHAT, carol(), "/plan off demo/s1", "separation of duties").await;
    assert!(said.contains("someone else must release it"), "{said}");
    let st = status(&s, "s1").await;
    assert_eq!((st["mode"].as_str(), st["released_by"].as_str()), (Some("plan"), None), "{st}");
    assert_eq!(gate_rm_rf(&s, "s1").await.0, "deny");

    // Without a proposal: the requester the agent's config names.
    enter(&s, "s1b").await;
    say(&fake, CHAT, carol(), "/plan off demo/s1b", "someone else must release it").await;
    assert_eq!(status(&s, "s1b").await["mode"], "plan");
    assert_eq!(gate_rm_rf(&s, "s1b").await.0, "deny");
    let audit = audit_entries(&s, "s1b").await;
    assert!(audit.iter().any(|l| l.contains("\"refused\"") && l.contains("separation of duties")), "{audit:?}");
}

/// Issue 26, item 1: one approver's `/plan off demo/s2` released a session
/// whose plan waited for 2 of 2 approvals. A release now counts distinct
/// approvers like approvals; the operator's release is counted the same way.
#[tokio::test]
async fn one_approver_cannot_release_what_two_must_approve() {
    let fake = FakeTelegram::start().await;
    let s = start_ops(&fake).await;

    propose_drop_table(&s, "s2").await;
    let said = say(&fake, CHAT, tg_user(ALICE, "alice"), "/plan off demo/s2", "elease").await;
    assert!(said.contains("Not released yet") && said.contains("1 of 2"), "{said}");
    assert_eq!(status(&s, "s2").await["mode"], "plan");
    assert_eq!(gate_rm_rf(&s, "s2").await.0, "deny");
    // The same approver again changes nothing.
    say(&fake, CHAT, tg_user(ALICE, "alice"), "/plan off demo/s2", "already asked").await;
    assert_eq!(gate_rm_rf(&s, "s2").await.0, "deny");
    // A second, distinct approver completes it.
    let said = say(&fake, CHAT, tg_user(BOB, "bob"), "/plan off demo/s2", "Released by").await;
    assert!(said.contains("alice and telegram:@") && said.contains("bob"), "{said}");
    assert_eq!(gate_rm_rf(&s, "s2").await.0, "allow");

    // The operator API: one operator release is one of two.
    propose_drop_table(&s, "s3").await;
    let (st, d) = call(s.operator(Method::POST, "/v1/operator/sessions/demo/s3/release").json(&json!({"actor": "ops"}))).await;
    assert_eq!(st, 200, "{d}");
    assert_eq!((d["mode"].as_str(), d["released_by"].as_str()), (Some("plan"), None), "{d}");
    assert_eq!(gate_rm_rf(&s, "s3").await.0, "deny");
}
