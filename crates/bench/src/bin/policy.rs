//! `plangate policy test` over a long audit: the real binary reads
//! `--records` audit records from a running release server (`GET
//! /v1/audit`, every record since `--since`) and replays the routed ones
//! through a candidate policy, printing every decision that changes.
//! Issue 49 asks ≤ 5 s for 100,000 records.
//!
//! The records are written straight into a sled data dir before the server
//! starts: 8 of 10 `gate_call` (risky calls: asked, allowed, denied, of
//! every class, a few agents and projects), 1 of 10 `plan_routed`, 1 of 10
//! other actions the replay passes over. The candidate denies `db.drop`,
//! lets `db.migrate` of one agent run without a card and asks two people
//! for infrastructure plans, so a share of the decisions changes and the
//! table is long. Each run is timed three times; the median is reported,
//! and the replay alone (in process, without HTTP and JSON) beside it.
//!
//! Run: `cargo run --release -p plangate-bench --bin policy -- --records 100000`
//! `--smoke`: 2,000 records, one run (`target/debug/policy --smoke`, seconds).

use plangate_bench::server::start;
use plangate_bench::{plangate_bin, sys};
use plangate_engine::{AuditEvent, Timestamp};
use plangate_gate::classes::RiskClass;
use plangate_policy::replay::{CallRecord, PlanRecord, CALL_ACTION, PLAN_ACTION};
use plangate_policy::{CallVerdict, Facts, PlanVerdict};
use plangate_store::prelude::*;
use plangate_store::SledStore;
use std::path::Path;
use std::time::{Duration, Instant};

const OPERATOR_TOKEN: &str = "bench-operator-token-0123456789";
const AGENT_TOKEN: &str = "bench-agent-token-0123456789ab";

const CANDIDATE: &str = r#"
[[rules]]
id = "no-drops"
action = "deny"
class = "db.drop"

[[rules]]
id = "ci-migrations"
action = "auto"
agent = "ci"
class = "db.migrate"

[[rules]]
id = "two-for-infra"
quorum = 2
on = "plans"
class = "infra.change"
"#;

const AGENTS: [&str; 3] = ["demo", "ci", "docs"];
const PROJECTS: [&str; 4] = ["billing-api", "web", "infra", "docs"];
const COMMANDS: [(&str, RiskClass); 6] = [
    ("psql -c \"DROP DATABASE prod\"", RiskClass::DbDrop),
    ("sqlx migrate run", RiskClass::DbMigrate),
    ("git push origin HEAD", RiskClass::GitPush),
    ("git push --force origin main", RiskClass::GitRewrite),
    ("rm -rf /srv/db", RiskClass::FilesDelete),
    ("terraform apply", RiskClass::InfraChange),
];

/// Record `i`: what the server would have written for the i-th decision.
fn record(i: u64, now: i64) -> AuditEvent {
    let agent = AGENTS[(i % 3) as usize];
    let project = PROJECTS[(i / 3 % 4) as usize];
    let facts = |classes: Vec<RiskClass>, undeclared: Vec<RiskClass>, tool: Option<&str>| Facts {
        agent: agent.to_string(),
        project: Some(project.to_string()),
        branch: Some("main".into()),
        host: Some("dev-laptop".into()),
        tool: tool.map(str::to_string),
        classes,
        undeclared,
        paths: None,
        steps: None,
    };
    let (action, detail) = match i % 10 {
        0 => {
            let allows = if i.is_multiple_of(20) { vec![RiskClass::InfraChange] } else { vec![] };
            let plan = PlanRecord {
                facts: facts(allows, vec![], None),
                title: format!("Plan {i}"),
                verdict: PlanVerdict::AsConfigured,
                rule: None,
                step_up: None,
            };
            (PLAN_ACTION, plan.detail())
        }
        1 => ("card_posted", format!("telegram -100 message {i}")),
        _ => {
            let (command, class) = COMMANDS[(i / 10 % 6) as usize];
            let declared = i.is_multiple_of(7);
            let undeclared = if declared { vec![] } else { vec![class] };
            let verdict = if declared { CallVerdict::Allow } else { CallVerdict::Ask };
            let call = CallRecord {
                facts: facts(vec![class], undeclared, Some("Bash")),
                granted: false,
                verdict,
                rule: None,
                shown: command.into(),
            };
            (CALL_ACTION, call.detail())
        }
    };
    AuditEvent {
        at: Timestamp(now - 1_000 - i as i64),
        agent: agent.into(),
        session_id: format!("s{}", i / 50),
        actor: "plangate".into(),
        action: action.into(),
        approval_id: None,
        version: None,
        detail,
    }
}

fn populate(data: &Path, records: u64) {
    let store = SledStore::open(data).expect("store");
    let now = plangate_bench::workload::now().0;
    // Oldest first, as the server appends.
    let all: Vec<u64> = (0..records).rev().collect();
    for chunk in all.chunks(1000) {
        let events: Vec<AuditEvent> = chunk.iter().map(|i| record(*i, now)).collect();
        store.append_audit(&events).expect("append");
    }
}

fn config(dir: &Path) -> String {
    format!(
        "[server]\nbind = \"127.0.0.1:0\"\ndata_dir = \"{}\"\noperator_token = \"{OPERATOR_TOKEN}\"\n\n[agents.demo]\ntoken = \"{AGENT_TOKEN}\"\n",
        dir.join("data").display()
    )
}

/// One `plangate policy test` run: its time and its last line.
fn run_cli(bin: &str, base: &str, candidate: &Path) -> (Duration, String, usize) {
    let t0 = Instant::now();
    let out = std::process::Command::new(bin)
        .args(["policy", "test", "--since", "3650d", "--config"])
        .arg(candidate)
        .env("PLANGATE_URL", base)
        .env("PLANGATE_OPERATOR_TOKEN", OPERATOR_TOKEN)
        .output()
        .expect("run plangate policy test");
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "policy test failed: {}{}", stdout, String::from_utf8_lossy(&out.stderr));
    (took, stdout.lines().last().unwrap_or_default().to_string(), stdout.len())
}

/// The replay alone, in process, on the records as JSON values.
fn replay_in_process(data: &Path, candidate: &Path) -> (Duration, usize) {
    let store = SledStore::open(data).expect("reopen store");
    let events = store.audit(&plangate_store::AuditQuery::default()).expect("audit");
    let values: Vec<serde_json::Value> = events.iter().map(|e| serde_json::to_value(e).expect("json")).collect();
    let rules = plangate_policy::Policy::read_file(candidate).expect("candidate");
    let policy = plangate_policy::Policy::compile(vec![(plangate_policy::Source::File(candidate.into()), rules)]).expect("compile");
    let t0 = Instant::now();
    let replayed = plangate_policy::replay::replay(&policy, plangate_server::cli::policy::entries(&values));
    let mut sink = Vec::new();
    plangate_server::cli::policy::print_replay(&replayed, false, &mut sink).expect("print");
    (t0.elapsed(), replayed.changes.len())
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

#[tokio::main]
async fn main() {
    let records: u64 = plangate_bench::sized("--records", 100_000, 2_000);
    let runs: usize = plangate_bench::sized("--runs", 3, 1);
    let dir: String = plangate_bench::arg("--dir", std::env::temp_dir().display().to_string());
    let bin = plangate_bin();
    println!("{}", sys::describe_machine(Path::new(&dir)));
    println!("binary: {bin}\n");
    let root = tempfile::tempdir_in(&dir).expect("temp dir");
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let written = Instant::now();
    populate(&data, records);
    println!("wrote {records} audit records in {:.1} s", written.elapsed().as_secs_f64());
    let candidate = root.path().join("candidate.toml");
    std::fs::write(&candidate, CANDIDATE).expect("candidate");
    let (alone, changes) = replay_in_process(&data, &candidate);
    println!("replay alone (in process, records already parsed): {:.3} s, {changes} changes", alone.as_secs_f64());

    let config_path = root.path().join("config.toml");
    std::fs::write(&config_path, config(root.path())).expect("config");
    let http = reqwest::Client::builder().no_proxy().build().expect("client");
    let mut started = start(&bin, &config_path, &http).await;
    let mut times = Vec::new();
    for run in 0..runs {
        let (took, last, bytes) = run_cli(&bin, &started.base, &candidate);
        println!("run {}: plangate policy test: {:.2} s ({bytes} bytes printed; {last})", run + 1, took.as_secs_f64());
        times.push(took);
    }
    started.stop();
    let m = median(times);
    println!("\npolicy test over {records} audit records: median {:.2} s of {runs} run(s) (issue 49 asks ≤ 5 s)", m.as_secs_f64());
}
