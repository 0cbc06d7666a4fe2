//! `plangate config check` through the real binary: every problem at once
//! (the channel sections included, which only `serve` used to read), each
//! with its key and the fix; and for a valid file, what it resolved.

use std::path::Path;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

async fn check(toml: &str, cwd: &Path) -> (i32, String) {
    let file = cwd.join("plangate.toml");
    std::fs::write(&file, toml).expect("write");
    let out = tokio::process::Command::new(BIN)
        .args(["config", "check", "--config"])
        .arg(&file)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out).await.expect("finished").expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{stderr}");
    (out.status.code().unwrap_or(-1), stderr)
}

const BASE: &str = r#"
[server]
bind = "127.0.0.1:8787"
data_dir = "./var/plangate"
operator_token = "op-5f2c9a7e01b3d4a6"

[telegram]
token = "123456:real-bot-token"

[destinations.phone]
channel = "telegram"
chat = "-1001234567890"
approvers = ["telegram:111111"]

[destinations.leads]
channel = "telegram"
chat = "-1009876543210"

[approvals]
nudges = ["10m", "30m"]
timeout = "2h"
escalate_to = ["leads"]

[agents.claude]
token = "claude-5f2c9a7e01b3d4a6"
destinations = ["phone"]

[agents.claude.approvals]
nudges = ["5m"]
"#;

#[tokio::test]
async fn config_check_reports_every_problem_with_its_key_and_fix() {
    let dir = tempfile::tempdir().expect("dir");
    let broken = BASE
        .replace("token = \"123456:real-bot-token\"", "token = \"123456:real-bot-token\"\ntransprot = \"polling\"")
        .replace("claude-5f2c9a7e01b3d4a6", "short")
        .replace("nudges = [\"5m\"]", "nudges = [\"5 minutes-ish\"]")
        .replace("approvers = [\"telegram:111111\"]", "approvers = [\"111111\"]");
    let (code, stderr) = check(&broken, dir.path()).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("4 settings are invalid"), "{stderr}");
    for (key, fix) in [
        ("`telegram`", "unknown field `transprot`"),
        ("`agents.claude.token`", "openssl rand -hex 32"),
        ("`agents.claude.approvals.nudges[0]`", "expected a duration like"),
        ("`destinations.phone.approvers[0]`", "expected \"telegram:<user id>\""),
    ] {
        let line = stderr.lines().find(|l| l.contains(key)).unwrap_or_else(|| panic!("{key} missing: {stderr}"));
        assert!(line.contains(fix), "{key}: {line}");
    }

    // A channel section's own rules: webhook transport without its URL.
    let webhook = BASE.replace("token = \"123456:real-bot-token\"", "token = \"123456:real-bot-token\"\ntransport = \"webhook\"");
    let (code, stderr) = check(&webhook, dir.path()).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("`telegram.webhook"), "{stderr}");
}

#[tokio::test]
async fn config_check_explains_what_it_resolved() {
    let dir = tempfile::tempdir().expect("dir");
    let (code, stderr) = check(BASE, dir.path()).await;
    assert_eq!(code, 0, "{stderr}");
    let cwd = std::fs::canonicalize(dir.path()).expect("cwd");
    let data_dir = stderr.lines().find(|l| l.starts_with("data_dir: ")).expect("data_dir line");
    let shown = data_dir.trim_start_matches("data_dir: ").split(" (").next().expect("path");
    assert!(Path::new(shown).is_absolute(), "{data_dir}");
    assert!(Path::new(shown).ends_with("var/plangate"), "{data_dir}");
    assert!(std::fs::canonicalize(dir.path()).is_ok() && data_dir.contains(cwd.file_name().unwrap().to_str().unwrap()), "{data_dir}");
    assert!(stderr.contains("channels: telegram"), "{stderr}");
    assert!(stderr.contains("agent claude: destinations phone"), "{stderr}");
    assert!(stderr.contains("nudges 5m (from its own [agents.claude.approvals])"), "{stderr}");
    assert!(stderr.contains("timeout 2h (from [approvals])"), "{stderr}");
    assert!(stderr.contains("escalate_to leads (from [approvals])"), "{stderr}");
    // escalate_to is a one-level ladder at the agent's last nudge.
    assert!(stderr.contains("ladder level 1 at +5m: destination leads"), "{stderr}");
    assert!(stderr.contains("configuration is valid"), "{stderr}");
}

/// A permission rule that does not parse stops the start, naming its key
/// and the rule's form; good rules pass.
#[tokio::test]
async fn config_check_refuses_a_permission_rule_that_does_not_parse() {
    let dir = tempfile::tempdir().expect("dir");
    let good =
        format!("{BASE}\n[agents.claude.permissions]\nallow = [\"Bash(npm test:*)\", \"Edit(src/**)\"]\ndeny = [\"Bash(git push:*)\"]\n");
    assert_eq!(check(&good, dir.path()).await.0, 0);
    let bad = format!("{BASE}\n[agents.claude.permissions]\nallow = [\"Bash(npm test:*)\", \"WebFetch(domain:x.com)\"]\n");
    let (code, stderr) = check(&bad, dir.path()).await;
    assert_ne!(code, 0);
    assert!(
        stderr.contains("agents.claude.permissions.allow") && stderr.contains("rule [1]") && stderr.contains("WebFetch takes no pattern"),
        "{stderr}"
    );
}
