//! `plangate pair` and `plangate destinations`: the operator's side of
//! pairing a chat ([`crate::pairing`]), over the running server's API.

use super::{Client, EXIT_USAGE};
use crate::ops::list_destinations;
use anyhow::Result;
use plangate_agent::AgentError;
use reqwest::Method;
use serde_json::{json, Value};

/// `plangate pair telegram|slack|discord`.
#[derive(clap::Args)]
pub struct PairArgs {
    /// The platform of the chat to pair.
    #[arg(value_parser = ["telegram", "slack", "discord"])]
    pub platform: String,
    /// The agent whose plans the chat will receive (needed when several are configured).
    #[arg(long)]
    pub agent: Option<String>,
    /// The destination's name (default: <agent>-<platform>).
    #[arg(long = "name", value_name = "DEST")]
    pub name: Option<String>,
    /// Seconds the code stays valid (1–600; default 600).
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u64>,
    /// Who asked (audited as operator:<actor>).
    #[arg(long, env = "USER", default_value = "cli")]
    pub actor: String,
    #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
    pub operator_token: String,
    /// Base URL of a running plangate.
    #[arg(long, env = "PLANGATE_URL", default_value = "http://127.0.0.1:8787")]
    pub url: String,
}

/// `plangate destinations [remove NAME]`.
#[derive(clap::Args)]
pub struct DestinationsArgs {
    #[command(subcommand)]
    pub command: Option<DestinationsCmd>,
    /// (Before `remove`, or from the environment.)
    #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
    pub operator_token: String,
    /// Base URL of a running plangate.
    #[arg(long, env = "PLANGATE_URL", default_value = "http://127.0.0.1:8787", global = true)]
    pub url: String,
}

#[derive(clap::Subcommand)]
pub enum DestinationsCmd {
    /// Remove a paired destination (one from the config file is removed there).
    Remove {
        name: String,
        #[arg(long, env = "USER", default_value = "cli")]
        actor: String,
    },
}

/// A refusal of the server is the caller's to fix (2), anything else fails (1).
fn refused(e: AgentError) -> Result<i32> {
    match e {
        AgentError::Api { message, .. } | AgentError::Usage(message) => {
            eprintln!("plangate: {message}");
            Ok(EXIT_USAGE)
        }
        other => Err(other.into()),
    }
}

/// Ask for a code and say what to do with it.
pub async fn pair(args: PairArgs) -> Result<i32> {
    let client = Client::new(&args.url, Some(args.operator_token))?;
    let body = json!({"platform": args.platform, "agent": args.agent, "name": args.name, "ttl_seconds": args.ttl, "actor": args.actor});
    let issued = match client.ok(Method::POST, "/v1/operator/pairings", Some(body)).await {
        Ok(v) => v,
        Err(e) => return refused(e),
    };
    let code = issued["code"].as_str().unwrap_or_default();
    let minutes = issued["expires_in"].as_u64().unwrap_or(600).div_ceil(60);
    println!("Send this in the {} chat that should receive {}'s plans:", args.platform, issued["agent"].as_str().unwrap_or("?"));
    println!();
    println!("    /plan pair {code}");
    println!();
    println!("It works once, within {minutes} minute(s) (until {}).", issued["expires_at"].as_str().unwrap_or("?"));
    println!("Whoever sends it becomes the chat's first approver; `plangate destinations` shows the result.");
    Ok(0)
}

/// List destinations, or remove a paired one.
pub async fn destinations(args: DestinationsArgs) -> Result<i32> {
    let client = Client::new(&args.url, Some(args.operator_token))?;
    match args.command {
        None => match list_destinations(&client).await {
            Ok(list) => {
                print!("{}", describe(&list));
                Ok(0)
            }
            Err(e) => refused(e),
        },
        Some(DestinationsCmd::Remove { name, actor }) => {
            let path = format!("/v1/operator/destinations/{name}?actor={actor}");
            match client.ok(Method::DELETE, &path, None).await {
                Ok(d) => {
                    println!(
                        "removed paired destination {name} ({} chat {})",
                        d["channel"].as_str().unwrap_or(""),
                        d["chat"].as_str().unwrap_or("")
                    );
                    Ok(0)
                }
                Err(e) => refused(e),
            }
        }
    }
}

/// One line per destination of `GET /v1/operator/destinations`.
pub fn describe(list: &Value) -> String {
    let mut out = String::new();
    for d in list.as_array().into_iter().flatten() {
        let words = |key: &str| d[key].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", ");
        let mut line = format!(
            "{}  {}  {} {}  agents: {}  approvers: {}",
            d["name"].as_str().unwrap_or(""),
            d["source"].as_str().unwrap_or(""),
            d["channel"].as_str().unwrap_or(""),
            d["chat"].as_str().unwrap_or(""),
            words("agents"),
            words("approvers"),
        );
        if let Some(by) = d["paired_by"].as_str() {
            line.push_str(&format!("  paired by {by} at {}", d["paired_at"].as_str().unwrap_or("")));
        }
        if d["shadowed"].as_bool() == Some(true) {
            line.push_str("  (unused: the config file has a destination of this name, which wins)");
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// For `config check`: the paired destinations, asked of the server this
/// config runs (its `server.bind`, its operator token). Paired ones live in
/// the store, which a running server holds; without one, say so.
pub async fn paired_for_config_check(settings: &crate::config::Settings) -> String {
    let Some(token) = settings.raw.server.operator_token.clone() else {
        return "paired destinations: not listed (no server.operator_token to ask the server with)\n".to_string();
    };
    let url = format!("http://{}", settings.bind);
    // A check, not a wait: a server that does not answer at once is reported as such.
    let listed = async { list_destinations(&Client::with_timeouts(&url, Some(token), plangate_agent::client::Timeouts::SERVER)?).await };
    match listed.await {
        Ok(list) => {
            let paired: Vec<Value> = list.as_array().into_iter().flatten().filter(|d| d["source"] == "paired").cloned().collect();
            if paired.is_empty() {
                format!("paired destinations (the server at {url}): none\n")
            } else {
                format!("paired destinations (the server at {url}):\n{}", describe(&Value::Array(paired)))
            }
        }
        Err(e) => format!("paired destinations: not listed ({e}); `plangate destinations` lists them while the server runs\n"),
    }
}
