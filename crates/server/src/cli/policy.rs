//! `plangate policy show|test|suggest`: the operator's routing policy
//! ([`plangate_policy`]) as it is merged, and as it would have decided.
//!
//! `test` and `suggest` read the recorded audit of a running server
//! (`GET /v1/audit`, the operator's token) and run it through the same
//! functions the server decides with, so a replay says what the server
//! would have answered, not an approximation of it.

use super::Client;
use anyhow::{Context, Result};
use plangate_policy::replay::{self, Entry, Replay};
use plangate_policy::{Policy, RuleSpec, Section, Source};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Subcommand)]
pub enum PolicyCmd {
    /// Print the effective policy (the config's [policy], then policy.d/*.toml beside it), each rule with the file it
    /// came from, as a policy file.
    Show {
        /// The server's config file (default: the embedded config, which has no policy).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Re-run the recorded audit (plans and risky calls) through a candidate policy and print every decision that
    /// would change.
    Test {
        /// The candidate: a config file (its [policy] and the policy.d/ beside it) or one policy.d file of
        /// [[rules]]. Without it: no policy at all.
        #[arg(long)]
        config: Option<PathBuf>,
        #[command(flatten)]
        window: AuditWindow,
    },
    /// Rank candidate `auto` rules from repeated human approvals, with how many prompts each would have saved
    /// (never for a risk class above low).
    Suggest {
        #[command(flatten)]
        window: AuditWindow,
    },
}

/// Which recorded audit `test` and `suggest` read, from which server, and
/// how they print.
#[derive(clap::Args)]
pub struct AuditWindow {
    /// How far back to read the audit (`30d`, `12h`).
    #[arg(long, default_value = "30d")]
    pub since: String,
    /// Only this agent's decisions.
    #[arg(long)]
    pub agent: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub remote: OperatorRemote,
}

#[derive(clap::Args)]
pub struct OperatorRemote {
    #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
    pub operator_token: String,
    /// Base URL of a running plangate.
    #[arg(long, env = "PLANGATE_URL", default_value = "http://127.0.0.1:8787")]
    pub url: String,
}

pub async fn run(cmd: PolicyCmd) -> Result<i32> {
    match cmd {
        PolicyCmd::Show { config } => show(config.as_deref()),
        PolicyCmd::Test { config, window } => {
            let policy = candidate(config.as_deref())?;
            let events = fetch(&window).await?;
            let replayed = replay::replay(&policy, entries(&events));
            print_replay(&replayed, window.json, &mut std::io::stdout().lock())?;
            Ok(0)
        }
        PolicyCmd::Suggest { window } => {
            let events = fetch(&window).await?;
            print_suggestions(&plangate_policy::suggest::suggest(entries(&events)), window.json)?;
            Ok(0)
        }
    }
}

/// The `[policy]` section of a config file, read with the server's own
/// config reader; the rest of the file is not judged here.
fn section_of(path: &Path) -> Result<Section> {
    let read = config::Config::builder()
        .add_source(config::File::from(path).format(config::FileFormat::Toml))
        .build()
        .with_context(|| format!("cannot read {}", path.display()))?;
    match read.get::<Section>("policy") {
        Ok(section) => Ok(section),
        Err(config::ConfigError::NotFound(_)) => Ok(Section::default()),
        Err(e) => Err(e).with_context(|| format!("the [policy] of {} does not read", path.display())),
    }
}

/// The effective policy of a config file, or of the embedded defaults.
fn effective(config: Option<&Path>) -> Result<Policy> {
    let section = config.map(section_of).transpose()?.unwrap_or_default();
    Ok(Policy::load(&section, config)?)
}

/// A candidate for `policy test`: a lone `policy.d` file (`[[rules]]` at
/// the top), or a config file with what sits beside it.
fn candidate(config: Option<&Path>) -> Result<Policy> {
    match config {
        Some(path) if is_rules_file(path) => {
            let rules = Policy::read_file(path)?;
            Ok(Policy::compile(vec![(Source::File(path.to_path_buf()), rules)])?)
        }
        other => effective(other),
    }
}

fn is_rules_file(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.lines().any(|l| l.trim() == "[[rules]]"))
}

fn show(config: Option<&Path>) -> Result<i32> {
    let policy = effective(config)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "# {} rule(s); the strongest matching rule wins: deny > quorum > one > auto; no match: as without a policy",
        policy.rules().len()
    )?;
    let mut last: Option<&Source> = None;
    for rule in policy.rules() {
        if last != Some(&rule.source) {
            writeln!(out, "\n# from {}", rule.source)?;
            last = Some(&rule.source);
        }
        writeln!(out, "{}", plangate_policy::to_toml(std::slice::from_ref(&rule.spec)))?;
    }
    Ok(0)
}

/// The audit since `since` ago, oldest first: the API's `since` (ms) with
/// `limit=0` (every record since then).
async fn fetch(window: &AuditWindow) -> Result<Vec<Value>> {
    let (since, remote) = (&window.since, &window.remote);
    let back: Duration =
        humantime::parse_duration(since).with_context(|| format!("--since {since:?}: write a duration like 30d or 12h"))?;
    let from = std::time::SystemTime::now().checked_sub(back).unwrap_or(std::time::UNIX_EPOCH);
    let ms = from.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
    let mut path = format!("/v1/audit?limit=0&since={ms}");
    if let Some(a) = &window.agent {
        path.push_str(&format!("&agent={}", plangate_agent::client::path_segment(a)));
    }
    let client = Client::with_timeouts(&remote.url, Some(remote.operator_token.clone()), plangate_agent::client::Timeouts::CLI)?;
    let events = client.ok(reqwest::Method::GET, &path, None).await?;
    match events {
        Value::Array(events) => Ok(events),
        other => anyhow::bail!("the server answered {other} instead of a list of audit records"),
    }
}

/// The records as a replay reads them.
pub fn entries(events: &[Value]) -> impl Iterator<Item = Entry<'_>> {
    events.iter().map(|e| Entry {
        at: e["at"].as_i64().unwrap_or(0),
        session_id: e["session_id"].as_str().unwrap_or(""),
        action: e["action"].as_str().unwrap_or(""),
        detail: e["detail"].as_str().unwrap_or(""),
    })
}

/// Every change as a table row (or the whole replay as JSON), then a count.
pub fn print_replay(replayed: &Replay, json: bool, out: &mut impl Write) -> Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, &json!({"decisions": replayed.decisions, "changes": replayed.changes}))?;
        writeln!(out)?;
        return Ok(());
    }
    if !replayed.changes.is_empty() {
        writeln!(
            out,
            "{:<24} {:<5} {:<24} {:<14} {:<14} {:<26} WHAT",
            "AT", "KIND", "AGENT/SESSION", "WAS", "WOULD BE", "RULE (WAS → WOULD BE)"
        )?;
    }
    for c in &replayed.changes {
        let at = plangate_engine::Timestamp(c.at).rfc3339();
        let who = format!("{}/{}", c.agent, c.session_id);
        let rule = match (c.was_rule.as_deref(), c.rule.as_deref()) {
            (was, now) if was == now => now.unwrap_or("-").to_string(),
            (was, now) => format!("{} → {}", was.unwrap_or("-"), now.unwrap_or("-")),
        };
        writeln!(out, "{at:<24} {:<5} {who:<24} {:<14} {:<14} {rule:<26} {}", c.kind, c.was, c.would_be, c.what)?;
    }
    writeln!(out, "{} of {} recorded decisions would change", replayed.changes.len(), replayed.decisions)?;
    Ok(())
}

fn print_suggestions(found: &plangate_policy::suggest::Suggestions, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(found)?);
        return Ok(());
    }
    if found.suggestions.is_empty() {
        println!("# no candidate rule: no low-risk call was allowed by people {} times or more", plangate_policy::suggest::MIN_APPROVALS);
    }
    for s in &found.suggestions {
        println!("# would have saved {} prompt(s) of {} asked", s.saved, s.asked);
        print!("{}", plangate_policy::to_toml(std::slice::from_ref::<RuleSpec>(&s.rule)));
        println!();
    }
    for h in &found.held_back {
        let classes = h.classes.iter().map(|c| c.id()).collect::<Vec<_>>().join(", ");
        println!("# held back: {} {} allowed {} times ({classes}): {}", h.agent, h.tool.as_deref().unwrap_or(""), h.approvals, h.why);
    }
    Ok(())
}
