//! The running server, asked over its API the way the agents, the hooks
//! and the operator's CLI ask it: it answers and is ready (`/readyz`), it
//! accepts the agent token the hooks will send (`PLANGATE_TOKEN`, an
//! authenticated read that changes nothing), and, with the operator token,
//! its destinations, paired ones included (`GET /v1/operator/destinations`,
//! as `plangate destinations` lists them): each has an approver, and each
//! agent doctor knows of has a destination.
//!
//! Where the server is: `--url` / `PLANGATE_URL`, else `http://<server.bind>`
//! of the configuration doctor loaded (`http://127.0.0.1:8787` with the
//! embedded defaults). Nothing answering there fails, except with `--config`
//! and no address given: a file is checked before its first start too, so
//! that is a warning.

use super::Check;
use crate::config::{DestinationConfig, Settings};
use crate::ops::list_destinations;
use plangate_agent::client::Timeouts;
use plangate_agent::AgentError;
use plangate_agent::Client;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::time::Duration;

/// The session the agent token is checked with: read, never written.
const PROBE_SESSION: &str = "plangate-doctor";

/// A non-empty environment variable, trimmed.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// Where doctor looks for the running server, and why there.
pub struct Target {
    pub url: String,
    /// Where the address came from: `--url`, `PLANGATE_URL`, `server.bind in FILE`…
    pub source: String,
    /// Nothing answering is a failure (else a warning).
    pub required: bool,
}

impl Target {
    /// `url` (from `--url` or `PLANGATE_URL`), else `settings`' bind, on
    /// loopback when it binds every address.
    pub fn of(settings: &Settings, config: Option<&Path>, url: Option<String>) -> Target {
        if let Some(url) = url.map(|u| u.trim().trim_end_matches('/').to_string()).filter(|u| !u.is_empty()) {
            let from_env = env("PLANGATE_URL").is_some_and(|e| e.trim_end_matches('/') == url);
            return Target { url, source: if from_env { "PLANGATE_URL" } else { "--url" }.into(), required: true };
        }
        let mut bind = settings.bind;
        if bind.ip().is_unspecified() {
            bind.set_ip(if bind.is_ipv4() { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { IpAddr::V6(Ipv6Addr::LOCALHOST) });
        }
        let source = match config {
            _ if env("PLANGATE__SERVER__BIND").is_some() => "PLANGATE__SERVER__BIND".to_string(),
            Some(file) => format!("server.bind in {}", file.display()),
            None => "the default".to_string(),
        };
        Target { url: format!("http://{bind}"), source, required: config.is_none() }
    }
}

/// What the running server told doctor.
#[derive(Default)]
pub struct Running {
    pub checks: Vec<Check>,
    /// The server's destinations (not shadowed), for the platform checks.
    pub destinations: BTreeMap<String, DestinationConfig>,
}

/// Every check of the server at `target`.
pub async fn check(settings: &Settings, config: Option<&Path>, target: &Target) -> Running {
    let mut running = Running::default();
    let (ready, answered) = readiness(target).await;
    running.checks.push(ready);
    if !answered {
        return running;
    }
    let url = &target.url;
    let token_agent = match env("PLANGATE_TOKEN") {
        None => {
            running.checks.push(Check::caution(
                "agent token",
                "not checked: PLANGATE_TOKEN is not set; export it (or the one PLANGATE__AGENTS__<ID>__TOKEN the server runs with) \
                 where the agent's hooks run, and doctor checks that the server accepts it",
            ));
            None
        }
        Some(token) => {
            let (check, agent) = agent_token(url, token).await;
            running.checks.push(check);
            agent
        }
    };
    let operator = match env("PLANGATE_OPERATOR_TOKEN") {
        Some(token) => Some((token, "PLANGATE_OPERATOR_TOKEN".to_string())),
        None => config.and_then(|file| {
            let token = settings.raw.server.operator_token.clone().filter(|t| !t.trim().is_empty())?;
            Some((token, format!("server.operator_token in {}", file.display())))
        }),
    };
    let Some((token, source)) = operator else {
        running.checks.push(Check::caution(
            "destinations",
            "not checked: listing the server's destinations and their approvers takes the operator token; \
             set PLANGATE_OPERATOR_TOKEN (or export PLANGATE__SERVER__OPERATOR_TOKEN, as for `plangate serve`)",
        ));
        return running;
    };
    let listed = match Client::with_timeouts(url, Some(token), Timeouts::SERVER) {
        Ok(client) => list_destinations(&client).await,
        Err(e) => Err(e),
    };
    let list = match listed {
        Ok(list) => list,
        Err(e) => {
            running
                .checks
                .push(Check::fail("operator token", refused(&source, url, &e, "its operator token", "PLANGATE__SERVER__OPERATOR_TOKEN")));
            return running;
        }
    };
    let mut agents: BTreeSet<String> = token_agent.into_iter().collect();
    if config.is_some() {
        agents.extend(settings.raw.agents.keys().cloned());
    }
    destinations(settings, config.is_some(), url, &list, agents, &mut running);
    running
}

/// `GET /readyz`, and whether plangate answered (ready or not: its API
/// serves either way). Nothing answering is a failure or, when not
/// [`Target::required`], a warning.
async fn readiness(target: &Target) -> (Check, bool) {
    let (url, source) = (&target.url, &target.source);
    let http = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build().unwrap_or_default();
    let resp = match http.get(format!("{url}/readyz")).send().await {
        Ok(resp) => resp,
        Err(e) => {
            let reason = innermost(&e);
            let check = if target.required {
                Check::fail(
                    "server",
                    format!(
                        "nothing answers at {url} ({source}): {reason}; start it with `plangate serve` (in the directory and with the \
                         environment it always runs with), or point doctor at it with --url or PLANGATE_URL"
                    ),
                )
            } else {
                Check::caution(
                    "server",
                    format!(
                        "nothing answers at {url} ({source}): {reason}; the agent token and the server's destinations were not checked: \
                         start it with `plangate serve --config FILE` and run doctor again, or point doctor at it with --url or PLANGATE_URL"
                    ),
                )
            };
            return (check, false);
        }
    };
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or_default();
    let backend = body["store_backend"].as_str().unwrap_or("?");
    match body["status"].as_str() {
        Some("ready") => (Check::pass("server", format!("{url} ({source}) answers and is ready (store: {backend})")), true),
        Some(_) => {
            let failing: Vec<String> = body["checks"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| v.as_str() != Some("ok"))
                .map(|(k, v)| format!("{k}: {}", v.as_str().unwrap_or("?")))
                .collect();
            let check =
                Check::fail("server", format!("{url} ({source}) answers but is not ready ({}); its log says why", failing.join("; ")));
            (check, true)
        }
        None => {
            let check = Check::fail(
                "server",
                format!("{url} ({source}) answers {status}, but not as plangate does; point --url or PLANGATE_URL at the plangate server"),
            );
            (check, false)
        }
    }
}

/// The innermost cause of a transport error ("Connection refused (os error 111)").
fn innermost(e: &reqwest::Error) -> String {
    plangate_basics::errors::innermost(e).to_string()
}

/// `GET /v1/sessions/plangate-doctor` with `token`: the check, and whose
/// token it is when the server accepts it.
async fn agent_token(url: &str, token: String) -> (Check, Option<String>) {
    let what = "agent token";
    let read = match Client::with_timeouts(url, Some(token), Timeouts::SERVER) {
        Ok(client) => client.ok(Method::GET, &format!("/v1/sessions/{PROBE_SESSION}"), None).await,
        Err(e) => Err(e),
    };
    match read {
        Ok(status) => {
            let agent = status["agent"].as_str().unwrap_or("?").to_string();
            (Check::pass(what, format!("PLANGATE_TOKEN is accepted by the server at {url}: it is agent {agent}'s")), Some(agent))
        }
        Err(e) => (
            Check::fail(what, refused("PLANGATE_TOKEN", url, &e, "the token of any agent in its config", "PLANGATE__AGENTS__<ID>__TOKEN")),
            None,
        ),
    }
}

/// Why the server at `url` refused the credential from `source`, and what to
/// use instead: `variable`, the one `plangate serve` reads it from.
fn refused(source: &str, url: &str, e: &AgentError, is_not: &str, variable: &str) -> String {
    match e {
        AgentError::Api { status: 401, .. } => {
            format!("{source} is not accepted by the server at {url}: it is not {is_not}; use the value of {variable} the server runs with")
        }
        AgentError::Api { status: 403, message, .. } => {
            format!("{source} is refused by the server at {url} ({message}); use the value of {variable} the server runs with")
        }
        AgentError::Api { status: 429, .. } => format!(
            "the server at {url} refuses this address's credentials for now, after too many wrong ones (429); \
             wait a minute, then run doctor again with the value of {variable} the server runs with"
        ),
        other => format!("the server at {url} did not answer the check of {source}: {other}"),
    }
}

/// One destination of `GET /v1/operator/destinations`.
struct Listed {
    name: String,
    source: String,
    channel: String,
    chat: String,
    agents: Vec<String>,
    approvers: Vec<String>,
    shadowed: bool,
    /// " (paired by … at …)" for a paired one.
    paired: String,
}

impl Listed {
    fn of(d: &Value) -> Listed {
        let text = |key: &str| d[key].as_str().unwrap_or_default().to_string();
        let words = |key: &str| d[key].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
        Listed {
            name: text("name"),
            source: text("source"),
            channel: text("channel"),
            chat: text("chat"),
            agents: words("agents"),
            approvers: words("approvers"),
            shadowed: d["shadowed"].as_bool() == Some(true),
            paired: match d["paired_by"].as_str() {
                Some(by) => format!(" (paired by {by} at {})", d["paired_at"].as_str().unwrap_or("?")),
                None => String::new(),
            },
        }
    }

    /// "paired telegram chat -100… of agent demo"
    fn label(&self) -> String {
        let of = match self.agents.as_slice() {
            [] => String::new(),
            [one] => format!(" of agent {one}"),
            many => format!(" of agents {}", many.join(", ")),
        };
        format!("{} {} chat {}{of}", self.source, self.channel, self.chat)
    }
}

/// The destinations' and agents' checks; the destinations in use go to
/// `running.destinations` for the platform checks.
fn destinations(settings: &Settings, with_config: bool, url: &str, list: &Value, mut agents: BTreeSet<String>, running: &mut Running) {
    let listed: Vec<Listed> = list.as_array().into_iter().flatten().map(Listed::of).collect();
    // `plangate pair <platform>`: a platform doctor can check, else one the server uses.
    let configured = [
        ("telegram", settings.raw.telegram.is_some()),
        ("slack", settings.raw.slack.is_some()),
        ("discord", settings.raw.discord.is_some()),
    ];
    let platform = configured
        .iter()
        .find(|(_, on)| *on)
        .map(|(p, _)| p.to_string())
        .or_else(|| listed.first().map(|d| d.channel.clone()))
        .unwrap_or_else(|| "telegram|slack|discord".to_string());
    let mut used: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let checks = &mut running.checks;
    for d in &listed {
        let what = format!("destinations.{}", d.name);
        if d.shadowed {
            checks.push(Check::caution(what, format!("{} is unused: a destination of the config file has this name, and wins", d.label())));
            continue;
        }
        for agent in &d.agents {
            used.entry(agent.clone()).or_default().push(d.name.clone());
            agents.insert(agent.clone());
        }
        if d.agents.is_empty() {
            checks.push(Check::caution(
                what,
                format!("{} has no agent: no agents.<id>.destinations of the server's config lists it, so no card goes there", d.label()),
            ));
        } else if d.approvers.is_empty() {
            let fix = if d.source == "paired" {
                format!(
                    "pair the chat again (`plangate destinations remove {}`, then `plangate pair {} --agent {}`): whoever sends the code becomes its approver",
                    d.name, d.channel, d.agents[0]
                )
            } else {
                format!("list who may decide in destinations.{}.approvers of the server's config (`/plan` in that chat tells each person their id)", d.name)
            };
            checks.push(Check::caution(
                what,
                format!("{} has no approver: only the operator decides its plans (`plangate decide`); {fix}", d.label()),
            ));
        } else {
            checks.push(Check::pass(what, format!("{}; approvers {}{}", d.label(), d.approvers.join(", "), d.paired)));
        }
        if let Ok(config) =
            serde_json::from_value::<DestinationConfig>(json!({"channel": d.channel, "chat": d.chat, "approvers": d.approvers}))
        {
            running.destinations.insert(d.name.clone(), config);
        }
    }
    for agent in &agents {
        let what = format!("agents.{agent}");
        match used.get(agent) {
            Some(names) => checks.push(Check::pass(what, format!("its plans go to {} (the server at {url})", names.join(", ")))),
            None => {
                let or_config = if with_config { format!(", or list one in agents.{agent}.destinations") } else { String::new() };
                checks.push(Check::fail(
                    what,
                    format!(
                        "no destination on the server at {url}, so its plans reach no chat (only `plangate decide` decides them); \
                         pair one: `plangate pair {platform} --agent {agent}`, then send the code in the chat{or_config}"
                    ),
                ));
            }
        }
    }
    if listed.is_empty() && agents.is_empty() {
        checks.push(Check::caution(
            "destinations",
            format!("the server at {url} has none, so no plan reaches a chat; pair one: `plangate pair {platform}`, then send the code in the chat"),
        ));
    }
}
