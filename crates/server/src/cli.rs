//! The `plangate` subcommands, one function each; `main.rs` only parses
//! the command line ([`args`]) and calls them.
//!
//! Those that talk to a running server over HTTP are clients of the same
//! API as every agent (through [`plangate_agent::Client`]), so what the CLI
//! shows is what an agent would see: `propose`, `status`, `decide`, `list`
//! and `namespace` are here, `plangate wait` lives in [`wait`], `plangate
//! pair` and `plangate destinations` in [`pair`], `plangate audit` in
//! [`audit`], `plangate policy` in [`policy`]. The others: `plangate serve`
//! in [`serve`], `config check` in [`check`], `backup`, `prune`, `restore`
//! and `migrate` in [`ops`], `hook install` and `mcp` in [`hook`] (the
//! hooks themselves are answered by `main.rs`'s fast path), `doctor` in
//! [`crate::ops::doctor`].

pub mod args;
pub mod audit;
pub mod check;
pub mod hook;
pub mod ops;
pub mod pair;
pub mod policy;
pub mod serve;
pub mod wait;

use anyhow::Result;
use plangate_agent::codex::extract_proposed_plan;
use plangate_agent::{session, submit, NoRecall, ProposalBody};
use plangate_engine::view::DecisionView;
use plangate_engine::{DecisionStatus, Plan, StepUpdate};
use serde_json::{json, Value};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

pub use plangate_agent::Client;

/// Exit codes of `propose --wait` and `wait` (which adds
/// [`wait::EXIT_EXEC_FAILED`]).
pub const EXIT_APPROVED: i32 = 0;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_REVISED: i32 = 3;
pub const EXIT_NOT_APPROVED: i32 = 4;

/// `plangate propose`'s arguments.
pub struct ProposeArgs {
    pub file: String,
    pub session: String,
    pub title: Option<String>,
    pub wait: bool,
    pub timeout: Duration,
    pub json: bool,
    /// Print only the approval id on stdout (`ID=$(plangate propose …
    /// --print-id)`), for `plangate wait --approval ID`.
    pub print_id: bool,
    pub codex: bool,
    pub token: String,
    pub url: String,
}

/// `plangate propose`: read, propose, optionally wait; returns the exit code.
/// Input that cannot be proposed (unreadable file, no Codex block, a JSON
/// plan that does not parse, a bad session id) is a usage error (2).
pub async fn propose_command(args: ProposeArgs) -> Result<i32> {
    if !session::is_valid(&args.session) {
        eprintln!("plangate: --session {:?} is invalid: use 1–128 characters of A-Z a-z 0-9 . _ : -", args.session);
        return Ok(EXIT_USAGE);
    }
    let body = match read_proposal(&args.file, args.title.as_deref(), args.codex) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("plangate: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let client = Client::new(&args.url, Some(args.token))?;
    let out = if args.print_id {
        Output::Id
    } else if args.json {
        Output::Json
    } else {
        Output::Text
    };
    propose(&client, &args.session, body, args.wait, out, args.timeout).await
}

/// `plangate status`: the session's status as JSON.
pub async fn status(url: &str, token: String, session: &str) -> Result<i32> {
    let client = Client::new(url, Some(token))?;
    let status = client.ok(reqwest::Method::GET, &format!("/v1/sessions/{session}"), None).await?;
    println!("{}", serde_json::to_string_pretty(&status)?);
    Ok(0)
}

/// `plangate decide`'s arguments.
pub struct DecideArgs {
    pub approval_id: String,
    pub action: String,
    pub feedback: Option<String>,
    pub note: Option<String>,
    pub except: Vec<usize>,
    pub actor: String,
    pub operator_token: String,
    pub url: String,
}

/// `plangate decide`: decide an approval as an operator, and print the decision.
pub async fn decide(args: DecideArgs) -> Result<i32> {
    let DecideArgs { approval_id, action, feedback, note, except, actor, operator_token, url } = args;
    let client = Client::new(&url, Some(operator_token))?;
    let mut body = json!({"action": action, "feedback": feedback, "actor": actor});
    if note.is_some() || !except.is_empty() {
        body["note"] = json!(note);
        body["except"] = json!(except);
    }
    let decision = client.ok(reqwest::Method::POST, &format!("/v1/approvals/{approval_id}/decision"), Some(body)).await?;
    print_decision(&decision, false);
    Ok(0)
}

/// What `plangate propose` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A line per fact: `v1 <approval id> pending`, feedback, approvals…
    Text,
    /// The Decision JSON.
    Json,
    /// The approval id alone, one line: what a script captures to bind
    /// `plangate wait --approval` to this proposal and no other.
    Id,
}

/// Read a proposal file: markdown, a JSON Plan, or a Codex message (`-` for
/// stdin), whose last `<proposed_plan>` block is the plan
/// ([`plangate_agent::codex`]).
pub fn read_proposal(file: &str, title: Option<&str>, codex: bool) -> Result<ProposalBody, String> {
    let name = if file == "-" { "stdin" } else { file };
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read stdin: {e}"))?;
        s
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("cannot read {file}: {e}"))?
    };
    if codex {
        let plan = extract_proposed_plan(&text).map_err(|e| format!("{name}: {e}"))?;
        return Ok(ProposalBody::markdown(plan.markdown, title.map(str::to_string)));
    }
    let is_json = Path::new(file).extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
    if is_json {
        let mut plan: Plan = serde_json::from_str(&text).map_err(|e| format!("{name} is not a valid JSON Plan: {e}"))?;
        if let Some(t) = title {
            plan.title = t.to_string();
        }
        Ok(ProposalBody::Plan(plan))
    } else {
        Ok(ProposalBody::markdown(text, title.map(str::to_string)))
    }
}

/// Propose, optionally wait, and return the process exit code.
///
/// On a terminal, `--wait` keeps one live status line on stderr (version,
/// short id, elapsed time) and replaces it with the outcome; elsewhere it
/// prints nothing until the decision. The decision goes to stdout (the
/// Decision JSON with `--json`).
pub async fn propose(client: &Client, session: &str, body: ProposalBody, wait: bool, out: Output, timeout: Duration) -> Result<i32> {
    let json_out = out == Output::Json;
    let submitted = submit(client, &NoRecall, session, &body, "plangate propose").await?;
    let mut current = submitted.decision;
    if wait && !current.is_final() {
        let tty = std::io::stderr().is_terminal() && !json_out;
        let started = Instant::now();
        let waiting = client.wait_decision(session, timeout);
        tokio::pin!(waiting);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let outcome = loop {
            tokio::select! {
                outcome = &mut waiting => break outcome,
                _ = tick.tick(), if tty => status_line(&format!(
                    "⏳ plan v{} (#{}) awaiting approval · {}s",
                    current.version,
                    current.approval_id.get(..6).unwrap_or(""),
                    started.elapsed().as_secs()
                )),
            }
        };
        if let Some(d) = outcome? {
            current = d;
        }
        if tty {
            status_line(&outcome_line(&current, started.elapsed()));
            eprintln!();
        } else if !current.is_final() {
            eprintln!("plangate: still pending after {}s; not approved", started.elapsed().as_secs());
        }
    }
    if out == Output::Id {
        println!("{}", current.approval_id);
        return Ok(exit_code(&current, wait));
    }
    let mut value = serde_json::to_value(&current)?;
    if let Some(p) = submitted.document_path {
        value["document_path"] = json!(p);
    }
    print_decision(&value, json_out);
    Ok(exit_code(&current, wait))
}

fn status_line(text: &str) {
    // Carriage return and erase-line: one line, redrawn in place.
    eprint!("\r\x1b[2K{text}");
    let _ = std::io::stderr().flush();
}

fn outcome_line(d: &DecisionView, elapsed: Duration) -> String {
    let by = d.decided_by.as_deref().unwrap_or("someone");
    let secs = elapsed.as_secs();
    match d.status {
        DecisionStatus::Pending => format!("⌛ plan v{} still pending after {secs}s; not approved", d.version),
        DecisionStatus::Approved => format!("✓ plan v{} approved by {by} after {secs}s", d.version),
        DecisionStatus::Edited => format!("✓ plan v{} approved with edits by {by} after {secs}s", d.version),
        DecisionStatus::Rejected => format!("↩ plan v{}: changes requested by {by} after {secs}s", d.version),
        DecisionStatus::TimedOut => format!("⌛ plan v{} timed out after {secs}s; not approved", d.version),
        DecisionStatus::Cancelled => format!("✗ plan v{} cancelled by {by} after {secs}s", d.version),
        DecisionStatus::Superseded => format!("✗ plan v{} superseded after {secs}s", d.version),
    }
}

/// 0 approved/edited (or proposed, without `--wait`), 3 changes requested,
/// 4 not approved (timed out, cancelled, superseded, still pending after the wait).
fn exit_code(decision: &DecisionView, waited: bool) -> i32 {
    match decision.status {
        DecisionStatus::Approved | DecisionStatus::Edited => EXIT_APPROVED,
        DecisionStatus::Rejected => EXIT_REVISED,
        DecisionStatus::Pending if !waited => EXIT_APPROVED,
        _ => EXIT_NOT_APPROVED,
    }
}

pub fn print_decision(decision: &Value, json_out: bool) {
    if json_out {
        println!("{}", serde_json::to_string_pretty(decision).unwrap_or_default());
        return;
    }
    let status = decision["status"].as_str().unwrap_or("?");
    let by = decision["decided_by"].as_str().map(|b| format!(" by {b}")).unwrap_or_default();
    println!("v{} {} {status}{by}", decision["version"], decision["approval_id"].as_str().unwrap_or(""));
    if let Some(f) = decision["feedback"].as_str() {
        println!("feedback: {f}");
    }
    let approvals = decision["approvals"].as_array().map(Vec::as_slice).unwrap_or_default();
    let required = decision["required_approvals"].as_u64().unwrap_or(1);
    if !approvals.is_empty() && (required > 1 || status == "pending") {
        let names: Vec<&str> = approvals.iter().filter_map(|a| a["by"].as_str()).collect();
        println!("approvals ({required} required): {}", names.join(", "));
    }
    for a in approvals {
        if let (Some(by), Some(note)) = (a["by"].as_str(), a["note"].as_str()) {
            println!("note from {by}: {note}");
        }
    }
    for step in decision["excluded_steps"].as_array().map(Vec::as_slice).unwrap_or_default() {
        println!("excluded: step {} {}", step["number"], step["step"].as_str().unwrap_or(""));
    }
    if let Ok(changes) = serde_json::from_value::<plangate_engine::diff::PlanDiff>(decision["changes"].clone()) {
        println!("changes since v{}: {}", changes.from_version, changes.summary());
    }
    if let Some(p) = decision["document_path"].as_str() {
        println!("document: {p}");
    }
}

/// `plangate list`: every approval with `status`, oldest first, fetched a
/// page at a time by following the answers' `Link: rel="next"` (at most
/// `limit` printed when given).
pub async fn list(client: &Client, status: &str, limit: Option<usize>) -> Result<i32> {
    // The server's default page (100) unless fewer are wanted.
    let page = limit.filter(|l| *l < 100).map(|l| format!("&limit={}", l.max(1))).unwrap_or_default();
    let mut path = Some(format!("/v1/approvals?status={}{page}", plangate_agent::client::path_segment(status)));
    let mut printed = 0;
    while let Some(p) = path.take() {
        let (list, next) = client.page(&p).await?;
        for a in list.as_array().into_iter().flatten() {
            if limit.is_some_and(|l| printed >= l) {
                return Ok(0);
            }
            println!(
                "{}  {}/{}  v{}  {}  {}",
                a["approval_id"].as_str().unwrap_or(""),
                a["agent"].as_str().unwrap_or(""),
                a["session_id"].as_str().unwrap_or(""),
                a["version"],
                a["status"].as_str().unwrap_or(""),
                a["title"].as_str().unwrap_or("")
            );
            printed += 1;
        }
        path = next;
    }
    Ok(0)
}

/// `plangate namespace show NAME`: the namespace as JSON; 2 for a bad name.
pub async fn namespace_show(client: &Client, name: &str) -> Result<i32> {
    match client.namespace(name).await {
        Ok(ns) => {
            println!("{}", serde_json::to_string_pretty(&ns)?);
            Ok(0)
        }
        Err(plangate_agent::AgentError::Usage(why)) => {
            eprintln!("plangate: {why}");
            Ok(EXIT_USAGE)
        }
        Err(e) => Err(e.into()),
    }
}

/// `plangate namespace update NAME FILE --session S`: merge the steps in
/// FILE (`-`: stdin), a JSON array of steps or `{"steps": [...]}`, and print
/// the merged namespace. Input that is not steps, and a step list a plan
/// rule refuses, are usage errors (2) naming what is wrong.
pub async fn namespace_update(client: &Client, name: &str, session: &str, file: &str) -> Result<i32> {
    let steps = match read_steps(file) {
        Ok(steps) => steps,
        Err(why) => {
            eprintln!("plangate: {why}");
            return Ok(EXIT_USAGE);
        }
    };
    match client.update_namespace(name, session, &steps).await {
        Ok(ns) => {
            println!("{}", serde_json::to_string_pretty(&ns)?);
            Ok(0)
        }
        Err(plangate_agent::AgentError::Usage(why)) => {
            eprintln!("plangate: {why}");
            Ok(EXIT_USAGE)
        }
        Err(plangate_agent::AgentError::Api { status: 422, message, .. }) => {
            eprintln!("plangate: {message}");
            Ok(EXIT_USAGE)
        }
        Err(e) => Err(e.into()),
    }
}

fn read_steps(file: &str) -> Result<Vec<StepUpdate>, String> {
    let name = if file == "-" { "stdin" } else { file };
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read stdin: {e}"))?;
        s
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("cannot read {file}: {e}"))?
    };
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Steps {
        List(Vec<StepUpdate>),
        Object { steps: Vec<StepUpdate> },
    }
    match serde_json::from_str::<Steps>(&text) {
        Ok(Steps::List(steps) | Steps::Object { steps }) => Ok(steps),
        Err(_) => {
            // Say what is wrong with it as a list of steps.
            let err = serde_json::from_str::<Vec<StepUpdate>>(&text).err().map(|e| e.to_string()).unwrap_or_default();
            Err(format!("{name} is not a JSON array of steps (or {{\"steps\": [...]}}): {err}"))
        }
    }
}
