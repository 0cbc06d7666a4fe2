//! `plangate serve --log-format json` through the real binary: every line is
//! one JSON object with the fields of its spans, and no configured secret
//! appears anywhere in the logs, even at debug level with a chat channel
//! polling, cards posted and decisions made.

use plangate_testkit::server::{AGENT_TOKEN, OPERATOR_TOKEN, OTHER_AGENT_TOKEN};
use plangate_testkit::telegram::{FakeTelegram, TOKEN};
use reqwest::Method;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

#[tokio::test]
async fn json_logs_carry_span_fields_and_never_a_secret() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("plangate.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nbind = \"127.0.0.1:0\"\ndata_dir = \"{}\"\noperator_token = \"{OPERATOR_TOKEN}\"\n\
             [agents.demo]\ntoken = \"{AGENT_TOKEN}\"\ndestinations = [\"ops\"]\n\
             [agents.other]\ntoken = \"{OTHER_AGENT_TOKEN}\"\n{}",
            dir.path().join("data").display(),
            crate::telegram::config(&fake)
        ),
    )
    .expect("config");
    let log_path = dir.path().join("stderr.log");
    let mut child = tokio::process::Command::new(BIN)
        .args(["serve", "--log-format", "json", "--config"])
        .arg(&config)
        .env("RUST_LOG", "debug")
        .env_remove("PLANGATE_TEST_CLOCK_MS")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).expect("log file"))
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let base = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.strip_prefix("plangate listening on ") {
                return rest.trim().to_string();
            }
        }
        panic!("exited before listening")
    })
    .await
    .expect("listening");
    let http = reqwest::Client::builder().no_proxy().build().expect("client");
    let agent = |m: Method, p: &str| http.request(m, format!("{base}{p}")).bearer_auth(AGENT_TOKEN);
    agent(Method::POST, "/v1/sessions/l1/enter").send().await.expect("enter");
    let plan = json!({"title": "Log me", "steps": [{"step": "one"}]});
    let d: Value = agent(Method::POST, "/v1/sessions/l1/proposals").json(&plan).send().await.expect("propose").json().await.expect("json");
    let id = d["approval_id"].as_str().expect("id").to_string();
    fake.wait_call("sendMessage", 1, Duration::from_secs(15)).await;
    let decided = http
        .post(format!("{base}/v1/approvals/{id}/decision"))
        .bearer_auth(OPERATOR_TOKEN)
        .json(&json!({"action": "approve", "actor": "alice"}))
        .send()
        .await
        .expect("decide");
    assert_eq!(decided.status(), 200);
    // A refused token is logged as a refusal, not as the token.
    let wrong = http.get(format!("{base}/v1/approvals")).bearer_auth("not-the-operator-token-4711").send().await.expect("wrong");
    assert_eq!(wrong.status(), 401);
    // Started as an operator starts it (no PLANGATE_TEST_CLOCK_MS), even a
    // debug build has no test clock to turn.
    let turn = http.post(format!("{base}/v1/operator/test/clock")).bearer_auth(OPERATOR_TOKEN).json(&json!({"advance_ms": 60_000}));
    assert_eq!(turn.send().await.expect("turn").status(), 404);
    fake.wait_call("editMessageText", 1, Duration::from_secs(15)).await;
    child.start_kill().expect("kill");
    let _ = child.wait().await;

    let logs = std::fs::read_to_string(&log_path).expect("logs");
    assert!(logs.lines().count() > 10, "{logs}");
    let mut spans = std::collections::BTreeSet::new();
    for line in logs.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert!(v["timestamp"].is_string() && v["level"].is_string() && v["fields"].is_object(), "{line}");
        for span in v["spans"].as_array().into_iter().flatten() {
            spans.insert(span["name"].as_str().unwrap_or_default().to_string());
        }
    }
    for span in ["request", "transition"] {
        assert!(spans.contains(span), "no line in a {span} span: {spans:?}");
    }
    let request = logs
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .find(|v| v["span"]["name"] == "request" && v["fields"]["message"] == "answered")
        .expect("an answered request");
    assert!(request["span"]["method"].is_string() && request["span"]["path"].is_string(), "{request}");
    for secret in [AGENT_TOKEN, OTHER_AGENT_TOKEN, OPERATOR_TOKEN, TOKEN, "not-the-operator-token-4711"] {
        assert!(!logs.contains(secret), "the secret {secret:?} is in the logs");
    }
}
