//! `plangate doctor` against the fake Telegram (offline): the token works,
//! each destination chat resolves with the bot in it, each approver is a
//! member; every failure is named with what to do, and fails the run.

use plangate_testkit::telegram::{FakeTelegram, Scripted, TOKEN};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

async fn doctor(toml: &str) -> (i32, String) {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("plangate.toml");
    std::fs::write(&file, toml).expect("write");
    let out = tokio::process::Command::new(BIN).args(["doctor", "--config"]).arg(&file).env_remove("PLANGATE__TELEGRAM__TOKEN").output();
    let out = tokio::time::timeout(Duration::from_secs(60), out).await.expect("finished").expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), stdout)
}

fn config(fake: &FakeTelegram, token: &str) -> String {
    format!(
        "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"{token}\"\napi_url = \"{}\"\n\
         [destinations.ops]\nchannel = \"telegram\"\nchat = \"-1001\"\napprovers = [\"telegram:111\", \"telegram:222\"]\n\
         [destinations.gone]\nchannel = \"telegram\"\nchat = \"-1002\"\n\
         [agents.claude]\ntoken = \"claude-5f2c9a7e01b3d4a6\"\ndestinations = [\"ops\", \"gone\"]\n",
        fake.api_url()
    )
}

#[tokio::test]
async fn doctor_checks_token_chats_and_approvers_against_the_platform() {
    let fake = FakeTelegram::start().await;
    let (code, out) = doctor(&config(&fake, TOKEN)).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("✓ telegram.token: works"), "{out}");
    assert!(out.contains("✓ destinations.ops.chat: -1001 resolves"), "{out}");
    assert!(out.contains("✓ destinations.ops.approvers[1]: telegram:222 is in the chat"), "{out}");

    // A chat the bot is not in, and an approver who left.
    // (Destinations are checked in name order: `gone`, then `ops`.)
    fake.script("getChat", Scripted::Error { status: 400, description: "Bad Request: chat not found".into() });
    fake.script("getChat", Scripted::Result(serde_json::json!({"id": -1001, "type": "supergroup", "title": "Ops"})));
    fake.script(
        "getChatMember",
        Scripted::Result(serde_json::json!({"status": "member", "user": {"id": 111, "is_bot": false, "first_name": "A"}})),
    );
    fake.script(
        "getChatMember",
        Scripted::Result(serde_json::json!({"status": "left", "user": {"id": 222, "is_bot": false, "first_name": "B"}})),
    );
    let (code, out) = doctor(&config(&fake, TOKEN)).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("✗ destinations.ops.approvers[1]: telegram:222 is not in the chat (left); invite them"), "{out}");
    assert!(out.contains("✗ destinations.gone.chat: -1002: Bad Request: chat not found; add the bot"), "{out}");

    // A token that does not work stops there.
    let (code, out) = doctor(&config(&fake, "999:wrong-token-abcdefghijkl")).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("✗ telegram.token: Unauthorized; copy the token from @BotFather"), "{out}");
    assert!(!out.contains("wrong-token"), "the token is not printed: {out}");
}
