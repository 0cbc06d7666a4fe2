//! Issue 49, policy as code, through the real binary: the operator's rules
//! (`[policy]` and `policy.d/` beside the config file) route plans and risky
//! calls; `plangate policy show` prints where each rule came from, and
//! `plangate policy test` replays the recorded audit through a candidate.

use super::kit::{call, gate, operator_cli};
use super::sec_classes::{ordinary_work_runs, uploader_plan, RISKY};
use plangate_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A deny for dropped databases on production hosts, two approvers for
/// plans that change infrastructure, migrations without a card.
const POLICY: &str = r#"
[[policy.rules]]
id = "two-for-infra"
quorum = 2
class = "infra.change"

[[policy.rules]]
id = "migrations-run"
action = "auto"
class = ["db.migrate"]
agent = "demo"
"#;

/// A file of `policy.d/` beside the config file.
const DROPS: &str = r#"
[[rules]]
id = "no-drops"
action = "deny"
class = "db.drop"
"#;

async fn start() -> ServerProcess {
    let s = ServerProcess::start(BIN, POLICY).await;
    let dir = s.config_path().parent().expect("config dir").join("policy.d");
    std::fs::create_dir_all(&dir).expect("policy.d");
    std::fs::write(dir.join("10-databases.toml"), DROPS).expect("policy file");
    // Read at start: a rule added later waits for a restart.
    let mut s = s;
    s.restart().await;
    s
}

async fn audit(s: &ServerProcess, action: &str) -> Vec<Value> {
    let (st, v) = call(s.operator(Method::GET, "/v1/audit?limit=0")).await;
    assert_eq!(st, 200, "{v}");
    v.as_array().into_iter().flatten().filter(|e| e["action"] == action).cloned().collect()
}

#[tokio::test]
async fn rules_route_risky_calls_and_plans_and_nothing_else_changes() {
    let s = start().await;
    crate::sec_amend::approved(&s, "p1", uploader_plan(&[])).await;

    // The issue's four commands: a card each (`ask`), except the drop,
    // which the operator's rule denies by its id, and `curl … | sh`: a
    // fetched script may do anything, a drop too, so the rule holds it.
    for (command, says) in RISKY {
        let (decision, reason) = gate(&s, "p1", "Bash", json!({"command": command})).await;
        if command.contains("DROP DATABASE") || command.contains("| sh") {
            assert_eq!(decision, "deny", "{command}: {reason}");
            assert!(reason.contains("policy rule no-drops") && reason.contains(says), "{reason}");
        } else {
            assert_eq!(decision, "ask", "{command}: {reason}");
            assert!(reason.contains("not in the approved plan"), "{reason}");
        }
    }
    ordinary_work_runs(&s, "p1").await;
    // A harness that asks about the drop anyway gets no card to allow it.
    let drop = json!({"tool": "Bash", "input": {"command": "psql -c \"DROP DATABASE prod\""}});
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/p1/permissions").json(&drop)).await;
    assert_eq!((st, v["decision"].as_str()), (200, Some("deny")), "{v}");
    assert!(v["reason"].as_str().unwrap_or_default().contains("policy rule no-drops"), "{v}");

    // `auto`: a migration the plan did not declare runs without a card,
    // audited with the rule's id; a migration chained to a delete does not.
    let (decision, reason) = gate(&s, "p1", "Bash", json!({"command": "sqlx migrate run"})).await;
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("policy rule migrations-run"), "{reason}");
    let (decision, _) = gate(&s, "p1", "Bash", json!({"command": "sqlx migrate run && rm -rf /srv/db"})).await;
    assert_eq!(decision, "ask");
    let calls = audit(&s, "gate_call").await;
    let auto = calls.iter().find(|e| e["detail"].as_str().unwrap_or_default().contains("sqlx migrate run\"")).expect("audited");
    let detail: Value = serde_json::from_str(auto["detail"].as_str().unwrap_or_default()).expect("JSON detail");
    assert_eq!((detail["verdict"].as_str(), detail["rule"].as_str()), (Some("allow"), Some("migrations-run")), "{detail}");
    assert!(calls.len() >= 6, "each risky call is audited: {calls:?}");

    // A plan that declares db.migrate runs it without a card, no rule needed.
    crate::sec_amend::approved(&s, "p2", uploader_plan(&["db.migrate"])).await;
    let (decision, reason) = gate(&s, "p2", "Bash", json!({"command": "sqlx migrate run"})).await;
    assert_eq!(decision, "allow", "{reason}");

    // Plans: `deny` refuses one that declares a drop (403, naming the rule);
    // `quorum = 2` raises what an infrastructure plan needs.
    let (st, _) = call(s.agent(Method::POST, "/v1/sessions/p3/enter")).await;
    assert_eq!(st, 200);
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/p3/proposals").json(&uploader_plan(&["db.drop"]))).await;
    assert_eq!(st, 403, "{v}");
    assert!(v.to_string().contains("policy rule no-drops"), "{v}");
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/p3/proposals").json(&uploader_plan(&["infra.change"]))).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["required_approvals"], 2, "{v}");
    let (st, _) = call(s.agent(Method::POST, "/v1/sessions/p4/enter")).await;
    assert_eq!(st, 200);
    let (st, v) = call(s.agent(Method::POST, "/v1/sessions/p4/proposals").json(&uploader_plan(&[]))).await;
    // (One approver is the default, which the answer leaves out.)
    assert_eq!((st, v["required_approvals"].as_u64().unwrap_or(1)), (201, 1), "no rule: as configured: {v}");
    let plans = audit(&s, "plan_routed").await;
    assert!(plans.iter().any(|e| e["detail"].as_str().unwrap_or_default().contains("\"no-drops\"")), "{plans:?}");

    // `policy show`: every rule, each under the file it came from.
    let config = s.config_path().display().to_string();
    let (code, out, err) = operator_cli(&s, &["policy", "show", "--config", &config]).await;
    assert_eq!(code, 0, "{err}");
    let from_file = out.find("10-databases.toml").expect("the policy.d file named");
    assert!(out.find("id = \"no-drops\"").is_some_and(|at| at > from_file), "{out}");
    assert!(out.contains("id = \"two-for-infra\"") && out.contains("quorum = 2") && out.contains("test-config.toml [policy]"), "{out}");

    // `policy test`: without the drop rule, the refused plan and the denied
    // drop would have gone through; the table and the JSON say so.
    let candidate = s.config_path().parent().expect("dir").join("candidate.toml");
    std::fs::write(&candidate, "[[rules]]\nid = \"migrations-run\"\naction = \"auto\"\nclass = \"db.migrate\"\n").expect("candidate");
    let candidate = candidate.display().to_string();
    let (code, out, err) = operator_cli(&s, &["policy", "test", "--config", &candidate]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.contains("DROP DATABASE prod") && l.contains("deny") && l.contains("ask")), "{out}");
    assert!(out.lines().any(|l| l.contains("plan") && l.contains("refused") && l.contains("as configured")), "{out}");
    assert!(out.contains("recorded decisions would change"), "{out}");
    let (code, out, _) = operator_cli(&s, &["policy", "test", "--config", &candidate, "--json"]).await;
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let changes = v["changes"].as_array().cloned().unwrap_or_default();
    assert!(changes.iter().any(|c| c["was"] == "deny" && c["would_be"] == "ask"), "{v}");
    // The policy in force changes nothing it decided itself.
    let (code, out, _) = operator_cli(&s, &["policy", "test", "--config", &config]).await;
    assert_eq!(code, 0);
    assert!(out.starts_with("0 of "), "{out}");

    // `policy suggest`: nobody answered a card here, so nothing to suggest.
    let (code, out, _) = operator_cli(&s, &["policy", "suggest"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("no candidate rule"), "{out}");
    let (code, out, _) = operator_cli(&s, &["policy", "suggest", "--json"]).await;
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["suggestions"], json!([]), "{v}");
}

#[tokio::test]
async fn a_bad_policy_file_is_refused_naming_the_rule_and_its_file() {
    let s = ServerProcess::start(BIN, "").await;
    let config = s.config_path().display().to_string();
    let dir = s.config_path().parent().expect("dir").join("policy.d");
    std::fs::create_dir_all(&dir).expect("policy.d");
    std::fs::write(dir.join("20-bad.toml"), "[[rules]]\nid = \"oops\"\naction = \"sometimes\"\n").expect("file");
    let (code, _, err) = operator_cli(&s, &["config", "check", "--config", &config]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("oops") && err.contains("20-bad.toml") && err.contains("not one of auto, one, quorum, deny"), "{err}");
}
