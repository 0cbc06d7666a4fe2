//! Configuration (DESIGN §10): a TOML file plus `PLANGATE__…` environment
//! overrides, validated completely at start so a bad setting fails with its
//! key name and what was expected, never later at 3 a.m.

use plangate_channel::Style;
use plangate_engine::ids::is_valid_agent_id;
use plangate_engine::TimerPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// The embedded defaults, used when no `--config` is given.
pub const DEFAULT_TOML: &str = include_str!("../../../config/default.toml");

/// Tokens shipped in `config/default.toml`: fine on loopback, refused elsewhere.
const DEV_TOKENS: &[&str] = &["dev-operator-token", "dev-agent-token"];

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read the configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid setting `{key}`: {problem}")]
    Invalid { key: String, problem: String },
}

fn invalid(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.into(), problem: problem.into() }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    #[serde(default)]
    pub destinations: BTreeMap<String, DestinationConfig>,
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// Raw channel sections, handed to each adapter's own config type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telegram: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discord: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub bind: String,
    pub data_dir: PathBuf,
    #[serde(default)]
    pub operator_token: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub token: String,
    #[serde(default)]
    pub destinations: Vec<String>,
    /// Per-agent overrides of `[approvals]`.
    #[serde(default)]
    pub approvals: Option<ApprovalsConfig>,
    /// Per-agent mutation-gate policy (extra tools/commands, stricter lists).
    #[serde(default)]
    pub gate: plangate_gate::Policy,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationConfig {
    pub channel: String,
    pub chat: String,
    #[serde(default)]
    pub approvers: Vec<String>,
    #[serde(default)]
    pub style: Style,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    #[serde(default = "default_nudges")]
    pub nudges: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout: String,
    /// Destinations that get the card when the last nudge found nobody.
    #[serde(default)]
    pub escalate_to: Vec<String>,
}

fn default_nudges() -> Vec<String> {
    vec!["10m".into(), "30m".into(), "60m".into()]
}

fn default_timeout() -> String {
    "24h".into()
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig { nudges: default_nudges(), timeout: default_timeout(), escalate_to: Vec::new() }
    }
}

impl ApprovalsConfig {
    fn policy(&self, key: &str) -> Result<TimerPolicy, ConfigError> {
        let parse = |k: String, v: &str| -> Result<u64, ConfigError> {
            humantime::parse_duration(v)
                .map(|d| d.as_millis() as u64)
                .map_err(|e| invalid(k, format!("expected a duration like \"10m\" or \"24h\", got {v:?} ({e})")))
        };
        let nudges_ms =
            self.nudges.iter().enumerate().map(|(i, n)| parse(format!("{key}.nudges[{i}]"), n)).collect::<Result<Vec<_>, _>>()?;
        let timeout_ms = match self.timeout.trim() {
            "off" => None,
            t => Some(parse(format!("{key}.timeout"), t)?),
        };
        if let Some(timeout) = timeout_ms {
            if let Some(late) = nudges_ms.iter().position(|n| *n >= timeout) {
                return Err(invalid(
                    format!("{key}.nudges[{late}]"),
                    format!(
                        "the nudge at {} comes at or after the timeout of {}; nudges must fall before the timeout",
                        self.nudges[late], self.timeout
                    ),
                ));
            }
        }
        let escalate_ms = match (self.escalate_to.is_empty(), nudges_ms.last()) {
            (true, _) => None,
            (false, Some(last)) => Some(*last),
            (false, None) => {
                return Err(invalid(format!("{key}.escalate_to"), "escalation follows the last nudge; configure at least one nudge"))
            }
        };
        Ok(TimerPolicy { nudges_ms, timeout_ms, escalate_ms })
    }
}

/// A validated configuration, with derived lookups.
#[derive(Debug, Clone)]
pub struct Settings {
    pub raw: Config,
    pub bind: SocketAddr,
    pub data_dir: PathBuf,
    pub policies: BTreeMap<String, TimerPolicy>,
    /// Per agent: the escalation destinations (names).
    pub escalations: BTreeMap<String, Vec<String>>,
}

impl Settings {
    /// Load `path` (or the embedded defaults) and the environment, and validate.
    pub fn load(path: Option<&Path>) -> Result<Settings, ConfigError> {
        let builder = config::Config::builder();
        let builder = match path {
            Some(p) => builder.add_source(config::File::from(p).format(config::FileFormat::Toml)),
            None => builder.add_source(config::File::from_str(DEFAULT_TOML, config::FileFormat::Toml)),
        };
        let raw: Config = builder
            .add_source(config::Environment::with_prefix("PLANGATE").prefix_separator("__").separator("__").try_parsing(true))
            .build()?
            .try_deserialize()?;
        Settings::validate(raw)
    }

    /// Parse and validate a TOML text (tests, `config check` of snippets).
    pub fn from_toml(toml: &str) -> Result<Settings, ConfigError> {
        let raw: Config =
            config::Config::builder().add_source(config::File::from_str(toml, config::FileFormat::Toml)).build()?.try_deserialize()?;
        Settings::validate(raw)
    }

    pub fn validate(raw: Config) -> Result<Settings, ConfigError> {
        let bind: SocketAddr = raw
            .server
            .bind
            .parse()
            .map_err(|_| invalid("server.bind", format!("expected an address like 127.0.0.1:8787, got {:?}", raw.server.bind)))?;
        let mut tokens: Vec<(&str, String)> = Vec::new();
        if let Some(op) = &raw.server.operator_token {
            if op.trim().len() < 12 {
                return Err(invalid("server.operator_token", "must be at least 12 characters"));
            }
            tokens.push((op, "server.operator_token".into()));
        }
        for (id, agent) in &raw.agents {
            if !is_valid_agent_id(id) {
                return Err(invalid(format!("agents.{id}"), "agent ids are 1–64 characters of letters, digits, `-` and `_`"));
            }
            if agent.token.trim().len() < 12 {
                return Err(invalid(format!("agents.{id}.token"), "must be at least 12 characters"));
            }
            if let Some((_, other)) = tokens.iter().find(|(t, _)| *t == agent.token) {
                return Err(invalid(format!("agents.{id}.token"), format!("is the same as {other}; every token must be unique")));
            }
            tokens.push((&agent.token, format!("agents.{id}.token")));
            for d in &agent.destinations {
                if !raw.destinations.contains_key(d) {
                    return Err(invalid(
                        format!("agents.{id}.destinations"),
                        format!("names {d:?}, which is not a [destinations.{d}] section"),
                    ));
                }
            }
        }
        if !bind.ip().is_loopback() {
            if raw.server.operator_token.is_none() || raw.agents.is_empty() {
                return Err(invalid("server.bind", "a non-loopback address needs server.operator_token and at least one agent token"));
            }
            if let Some((_, key)) = tokens.iter().find(|(t, _)| DEV_TOKENS.contains(t)) {
                return Err(invalid(
                    key.clone(),
                    "still has the public development value from default.toml; set a real secret before listening beyond loopback",
                ));
            }
        }
        for (name, d) in &raw.destinations {
            let configured = match d.channel.as_str() {
                "telegram" => raw.telegram.is_some(),
                "slack" => raw.slack.is_some(),
                "discord" => raw.discord.is_some(),
                other => {
                    return Err(invalid(
                        format!("destinations.{name}.channel"),
                        format!("expected telegram, slack or discord, got {other:?}"),
                    ))
                }
            };
            if !configured {
                return Err(invalid(
                    format!("destinations.{name}.channel"),
                    format!("uses {} but there is no [{}] section", d.channel, d.channel),
                ));
            }
            if d.chat.trim().is_empty() {
                return Err(invalid(format!("destinations.{name}.chat"), "must be the chat or channel id"));
            }
            for (i, a) in d.approvers.iter().enumerate() {
                match a.split_once(':') {
                    Some((ch, id)) if ch == d.channel && !id.is_empty() => {}
                    _ => {
                        return Err(invalid(
                            format!("destinations.{name}.approvers[{i}]"),
                            format!("expected \"{}:<user id>\", got {a:?}", d.channel),
                        ))
                    }
                }
            }
        }
        let mut policies = BTreeMap::new();
        let mut escalations = BTreeMap::new();
        let default_policy = raw.approvals.policy("approvals")?;
        for (id, agent) in &raw.agents {
            let (policy, approvals, key) = match &agent.approvals {
                Some(a) => (a.policy(&format!("agents.{id}.approvals"))?, a, format!("agents.{id}.approvals")),
                None => (default_policy.clone(), &raw.approvals, "approvals".to_string()),
            };
            for d in &approvals.escalate_to {
                if !raw.destinations.contains_key(d) {
                    return Err(invalid(format!("{key}.escalate_to"), format!("names {d:?}, which is not a [destinations.{d}] section")));
                }
            }
            policies.insert(id.clone(), policy);
            escalations.insert(id.clone(), approvals.escalate_to.clone());
        }
        Ok(Settings { data_dir: raw.server.data_dir.clone(), bind, policies, escalations, raw })
    }

    /// The effective configuration as TOML-ish JSON with every secret masked.
    pub fn masked(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.raw).unwrap_or_default();
        mask(&mut value);
        value
    }

    pub fn timer_policy(&self, agent: &str) -> TimerPolicy {
        self.policies.get(agent).cloned().unwrap_or_default()
    }

    pub fn nudge_interval_hint(&self) -> Duration {
        Duration::from_secs(1)
    }
}

fn mask(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let secret = k.contains("token") || k.contains("secret") || k.ends_with("_key");
                if secret && v.is_string() {
                    let text = v.as_str().unwrap_or_default();
                    *v = serde_json::Value::String(if text.is_empty() { String::new() } else { "********".into() });
                } else {
                    mask(v);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml: &str) -> Result<Settings, ConfigError> {
        Settings::from_toml(toml)
    }

    #[test]
    fn default_config_is_valid() {
        let s = parse(DEFAULT_TOML).unwrap();
        assert!(s.bind.ip().is_loopback());
        assert_eq!(s.timer_policy("demo").nudges_ms, vec![600_000, 1_800_000, 3_600_000]);
    }

    #[test]
    fn example_config_is_valid() {
        let example = include_str!("../../../config/example.toml");
        let s = parse(example).unwrap();
        // Every channel section must also satisfy its adapter's own config type.
        let raw = &s.raw;
        serde_json::from_value::<plangate_telegram::TelegramConfig>(raw.telegram.clone().unwrap()).unwrap();
        serde_json::from_value::<plangate_slack::SlackConfig>(raw.slack.clone().unwrap()).unwrap();
        serde_json::from_value::<plangate_discord::DiscordConfig>(raw.discord.clone().unwrap()).unwrap();
        assert!(!raw.agents["claude"].gate.allow_commands.is_empty());
    }

    #[test]
    fn dev_tokens_refused_beyond_loopback() {
        let toml = DEFAULT_TOML.replace("127.0.0.1:8787", "0.0.0.0:8787");
        let err = parse(&toml).unwrap_err().to_string();
        assert!(err.contains("public development value"), "{err}");
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("[server]\nbind = \"nope\"\ndata_dir = \"d\"\n", "server.bind"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"short\"\n", "agents.a.token"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"0123456789abc\"\ndestinations = [\"x\"]\n", "agents.a.destinations"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[approvals]\nnudges = [\"2h\"]\ntimeout = \"1h\"\n", "approvals.nudges[0]"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[approvals]\ntimeout = \"soon\"\n", "approvals.timeout"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[destinations.x]\nchannel = \"irc\"\nchat = \"1\"\n", "destinations.x.channel"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"t\"\n[destinations.x]\nchannel = \"telegram\"\nchat = \"1\"\napprovers = [\"slack:U1\"]\n", "destinations.x.approvers[0]"),
        ];
        for (toml, key) in cases {
            let err = parse(toml).unwrap_err().to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
        let err = parse("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\ntypo = 1\n").unwrap_err().to_string();
        assert!(err.contains("typo"), "{err}");
    }

    #[test]
    fn masked_hides_secrets() {
        let s = parse(DEFAULT_TOML).unwrap();
        let text = s.masked().to_string();
        assert!(!text.contains("dev-agent-token") && !text.contains("dev-operator-token"), "{text}");
    }
}
