//! Configuration (every key is in `config/example.toml`): a TOML file plus
//! `PLANGATE__…` environment overrides, validated completely at start so a
//! bad setting fails with its key name and what was expected, never later at
//! 3 a.m.

use plangate_channel::Style;
use plangate_engine::amendment::Policy as AmendmentPolicy;
use plangate_engine::authority::Approvers;
use plangate_engine::ids::is_valid_agent_id;
use plangate_engine::{ApprovalPolicy, TimerPolicy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// The embedded defaults, used when no `--config` is given.
pub const DEFAULT_TOML: &str = include_str!("../../../config/default.toml");

/// The example configuration. Embedded (like [`DEFAULT_TOML`]) so that the
/// secrets shipped in `config/` are read from the files themselves and the
/// list of refused values cannot drift from them.
pub const EXAMPLE_TOML: &str = include_str!("../../../config/example.toml");

/// The README's quick-start `plangate.toml` (Telegram + one agent). Its
/// secret values are public stand-ins for the environment variables they
/// name, treated like the development values of [`DEFAULT_TOML`].
pub const QUICKSTART_TOML: &str = include_str!("../../../config/quickstart.toml");

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read the configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid setting `{key}`: {problem}")]
    Invalid { key: String, problem: String },
    /// More than one setting is wrong: each, one per line.
    #[error("{} settings are invalid:\n{}", .0.len(), .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Several(Vec<ConfigError>),
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
    /// Step namespaces shared by several agents (`[namespaces.<name>]`);
    /// any other namespace name an agent uses is private to that agent.
    #[serde(default)]
    pub namespaces: BTreeMap<String, NamespaceConfig>,
    #[serde(default)]
    pub retention: RetentionConfig,
    /// Where the state lives: sled under `data_dir` (one process), or one
    /// PostgreSQL database several replicas share.
    #[serde(default)]
    pub store: StoreConfig,
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
    /// Where people reach this server's web page (`https://plans.example`):
    /// cards link to it and `/plan web` sends sign-in links to it. Unset:
    /// no web page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub token: String,
    #[serde(default)]
    pub destinations: Vec<String>,
    /// Per-agent overrides of `[approvals]`: each key it sets replaces the
    /// global one; the keys it leaves out are inherited.
    #[serde(default)]
    pub approvals: Option<ApprovalsOverride>,
    /// Per-agent mutation-gate policy (extra tools/commands, stricter lists).
    #[serde(default)]
    pub gate: plangate_gate::Policy,
    /// Which sessions may mutate: `"approved_plan"` (the default: no approved
    /// plan, no mutation) or `"plan_mode_only"` (the seed's opt-in behaviour:
    /// only plan mode and cancelled plans are gated).
    #[serde(default)]
    pub gate_scope: plangate_engine::GateScope,
    /// Where to POST this agent's decisions and answers, signed (for runners
    /// that are neither Claude Code nor Codex: CI bots, scripts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookConfig>,
    /// Who asks this agent for work (`"slack:U0123456789"`): every proposal
    /// made with this token names them as its requester, and a proposal body
    /// cannot name anyone else. For separation of duties
    /// (`approvals.forbid_self`) that the agent cannot talk its way around.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

/// `[agents.<id>.webhook]`: plangate POSTs every decision and answer of the
/// agent to `url`, signed with HMAC-SHA256 under `secret` (docs/AGENTS.md,
/// "Webhooks").
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// An `http://` or `https://` URL; redirects from it are not followed.
    pub url: String,
    /// The HMAC key receivers verify the signature with. Masked like every
    /// secret, refused when it is a shipped placeholder, never logged.
    pub secret: String,
}

/// Never prints the secret (settings are `Debug`).
impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig").field("url", &self.url).field("secret", &"********").finish()
    }
}

/// The shortest webhook secret accepted: an HMAC key a receiver shares with
/// plangate, as long as the shortest platform secret plangate takes.
pub const MIN_WEBHOOK_SECRET_CHARS: usize = 16;

/// Refuse a webhook URL that is not a plain http(s) URL of a host: plangate
/// would not know how to POST to it, or would leak credentials into logs.
fn check_webhook(id: &str, hook: &WebhookConfig, tokens: &[(&str, String)]) -> Result<(), ConfigError> {
    let key = format!("agents.{id}.webhook.url");
    let example = "expected e.g. \"https://runner.example.com/plangate\"";
    let url = reqwest::Url::parse(hook.url.trim()).map_err(|e| invalid(&key, format!("is not a URL ({e}); {example}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(
            &key,
            format!("uses the {:?} scheme; only http:// and https:// URLs are accepted (plangate POSTs JSON to it)", url.scheme()),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(&key, format!("has no host; {example}")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            &key,
            "carries a user name or password; remove them (the signature tells the receiver the request is plangate's)",
        ));
    }
    let secret_key = format!("agents.{id}.webhook.secret");
    if hook.secret.trim().chars().count() < MIN_WEBHOOK_SECRET_CHARS {
        return Err(invalid(
            secret_key,
            format!(
                "must be at least {MIN_WEBHOOK_SECRET_CHARS} characters (e.g. `openssl rand -hex 32`): receivers verify signatures with it"
            ),
        ));
    }
    if let Some((_, other)) = tokens.iter().find(|(t, _)| *t == hook.secret) {
        return Err(invalid(
            secret_key,
            format!("is the same as {other}; the receiver learns this secret, so it must not open anything else"),
        ));
    }
    Ok(())
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
    /// The approval rules of plans whose cards go here (the strictest
    /// setting that applies wins; see [`Settings::approval_policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<DestinationApprovals>,
}

/// `[destinations.<name>.approvals]`: the quorum and separation of duties
/// for plans shown in this chat.
#[derive(Debug, Clone, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct DestinationApprovals {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbid_self: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendments: Option<AmendmentPolicy>,
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
    /// How long an open subagent run may go unheard of (no close, no
    /// heartbeat) before it expires and stops blocking approval; or "off".
    #[serde(default = "default_subagent_expiry")]
    pub subagent_expiry: String,
    /// Distinct approvers a plan needs (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<u32>,
    /// The requester of a plan may not approve or edit it (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbid_self: Option<bool>,
    /// Steps added after approval: "ask" (default) or "flag".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendments: Option<AmendmentPolicy>,
}

/// A step namespace shared by the agents it names (`[namespaces.<name>]`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceConfig {
    /// Agent ids (`[agents.<id>]`) that read and merge this namespace.
    pub agents: Vec<String>,
}

fn default_subagent_expiry() -> String {
    "30m".into()
}

fn default_nudges() -> Vec<String> {
    vec!["10m".into(), "30m".into(), "60m".into()]
}

fn default_timeout() -> String {
    "24h".into()
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            nudges: default_nudges(),
            timeout: default_timeout(),
            escalate_to: Vec::new(),
            subagent_expiry: default_subagent_expiry(),
            required: None,
            forbid_self: None,
            amendments: None,
        }
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
        let subagent_expiry_ms = match self.subagent_expiry.trim() {
            "off" => None,
            t => match parse(format!("{key}.subagent_expiry"), t)? {
                0 => return Err(invalid(format!("{key}.subagent_expiry"), "must be longer than 0 (or \"off\")")),
                ms => Some(ms),
            },
        };
        Ok(TimerPolicy { nudges_ms, timeout_ms, escalate_ms, subagent_expiry_ms })
    }
}

/// `[agents.<id>.approvals]`: the same keys as `[approvals]`, each optional.
/// A key left out is inherited from `[approvals]` (an agent that only sets
/// `nudges` keeps the global `timeout` and `escalate_to`); a key set, even
/// to `[]`, replaces it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudges: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_to: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_expiry: Option<String>,
    /// Unlike the keys above, these never loosen `[approvals]`: a plan
    /// follows the strictest rule that applies ([`Settings::approval_policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbid_self: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendments: Option<AmendmentPolicy>,
}

impl ApprovalsOverride {
    /// The effective settings of an agent: these keys over `base`'s.
    pub fn over(&self, base: &ApprovalsConfig) -> ApprovalsConfig {
        ApprovalsConfig {
            nudges: self.nudges.clone().unwrap_or_else(|| base.nudges.clone()),
            timeout: self.timeout.clone().unwrap_or_else(|| base.timeout.clone()),
            escalate_to: self.escalate_to.clone().unwrap_or_else(|| base.escalate_to.clone()),
            subagent_expiry: self.subagent_expiry.clone().unwrap_or_else(|| base.subagent_expiry.clone()),
            required: self.required.max(base.required),
            forbid_self: self.forbid_self.max(base.forbid_self),
            amendments: strictest_amendments([self.amendments, base.amendments]),
        }
    }
}

/// `[retention]`: how long decided approvals and the audit are kept. Off
/// by default: nothing is deleted unless an operator asks for it. Pending
/// approvals and their timers are never pruned.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionConfig {
    /// Decided approvals (with their deliveries and plan documents) this
    /// long after their decision, e.g. "90d"; or "off".
    #[serde(default = "retention_off")]
    pub decided_approvals: String,
    /// Audit records this old, e.g. "365d"; or "off".
    #[serde(default = "retention_off")]
    pub audit: String,
    /// How often the background pruning runs.
    #[serde(default = "retention_interval")]
    pub interval: String,
    /// Records removed per batch (each batch is one short pause of nothing).
    #[serde(default = "retention_batch")]
    pub batch: usize,
}

fn retention_off() -> String {
    "off".into()
}
fn retention_interval() -> String {
    "1h".into()
}
fn retention_batch() -> usize {
    500
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            decided_approvals: retention_off(),
            audit: retention_off(),
            interval: retention_interval(),
            batch: retention_batch(),
        }
    }
}

impl RetentionConfig {
    fn age(key: &str, value: &str) -> Result<Option<Duration>, ConfigError> {
        match value.trim() {
            "off" => Ok(None),
            v => humantime::parse_duration(v)
                .map(Some)
                .map_err(|e| invalid(key, format!("expected a duration like \"90d\" or \"off\", got {v:?} ({e})"))),
        }
    }

    /// (decided approvals, audit, interval), checked.
    pub fn parsed(&self) -> Result<(Option<Duration>, Option<Duration>, Duration), ConfigError> {
        let decided = Self::age("retention.decided_approvals", &self.decided_approvals)?;
        let audit = Self::age("retention.audit", &self.audit)?;
        let interval = Self::age("retention.interval", &self.interval)?
            .ok_or_else(|| invalid("retention.interval", "must be a duration like \"1h\" (turn retention off with its ages)"))?;
        if self.batch == 0 {
            return Err(invalid("retention.batch", "must be at least 1"));
        }
        Ok((decided, audit, interval))
    }
}

/// `[store]`: sled (the default: one process, embedded, under
/// `server.data_dir`) or PostgreSQL (several replicas on one database).
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `"sled"` or `"postgres"`.
    #[serde(default = "store_backend")]
    pub backend: String,
    /// `postgres://user[:password]@host[:port]/database` (or a `key=value`
    /// connection string); required with `backend = "postgres"`. Its
    /// password is masked by `config check`; prefer the environment
    /// (`PLANGATE__STORE__POSTGRES_URL`) or a password file the client reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_url: Option<String>,
    /// The schema plangate's tables live in (created if missing).
    #[serde(default = "store_schema")]
    pub postgres_schema: String,
    /// Connections each replica keeps open.
    #[serde(default = "store_pool_size")]
    pub pool_size: u32,
    /// How long a replica's claim on a timer or an outbox entry lasts
    /// without renewal (renewed every third of it): how long a dead
    /// replica's work waits before another takes it over. (Platform
    /// leadership is an advisory lock that goes with its connection.)
    #[serde(default = "store_lease_seconds")]
    pub lease_seconds: u64,
}

fn store_backend() -> String {
    "sled".into()
}
fn store_schema() -> String {
    "plangate".into()
}
fn store_pool_size() -> u32 {
    16
}
fn store_lease_seconds() -> u64 {
    10
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            backend: store_backend(),
            postgres_url: None,
            postgres_schema: store_schema(),
            pool_size: store_pool_size(),
            lease_seconds: store_lease_seconds(),
        }
    }
}

/// Never prints the URL's password (settings are `Debug`).
impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreConfig")
            .field("backend", &self.backend)
            .field("postgres_url", &self.postgres_url.as_deref().map(mask_url_password))
            .field("postgres_schema", &self.postgres_schema)
            .field("pool_size", &self.pool_size)
            .field("lease_seconds", &self.lease_seconds)
            .finish()
    }
}

/// The shortest lease accepted: renewed every third of it, so at least
/// once a second.
pub const MIN_LEASE_SECONDS: u64 = 3;
/// The longest lease accepted: a dead replica's timers wait this long.
pub const MAX_LEASE_SECONDS: u64 = 600;

impl StoreConfig {
    /// Whether the store is PostgreSQL (else sled).
    pub fn is_postgres(&self) -> bool {
        self.backend.trim() == "postgres"
    }

    /// The lease of claims and leadership.
    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_seconds)
    }

    /// Every problem of the section, each with its key and the fix.
    fn problems(&self) -> Vec<ConfigError> {
        let mut out = Vec::new();
        match self.backend.trim() {
            "sled" | "postgres" => {}
            other => out.push(invalid(
                "store.backend",
                format!("expected \"sled\" (one process, under server.data_dir) or \"postgres\" (replicas), got {other:?}"),
            )),
        }
        if !self.is_postgres() {
            return out;
        }
        match self.postgres_url.as_deref().map(str::trim) {
            None | Some("") => out.push(invalid(
                "store.postgres_url",
                "is required with backend = \"postgres\": e.g. \"postgres://plangate@db.internal:5432/plangate\" \
                 (or set PLANGATE__STORE__POSTGRES_URL)",
            )),
            Some(url) => {
                if let Err(problem) = check_postgres_url(url) {
                    out.push(invalid("store.postgres_url", problem));
                }
            }
        }
        if !is_valid_schema_name(&self.postgres_schema) {
            out.push(invalid(
                "store.postgres_schema",
                format!(
                    "{:?} is not a schema name plangate takes: 1–63 characters of lowercase letters, digits and `_`, \
                     starting with a letter or `_` (e.g. \"plangate\"), and not starting with `pg_`",
                    self.postgres_schema
                ),
            ));
        }
        if self.pool_size == 0 || self.pool_size > 1000 {
            out.push(invalid("store.pool_size", format!("must be 1–1000 connections per replica, got {}", self.pool_size)));
        }
        if !(MIN_LEASE_SECONDS..=MAX_LEASE_SECONDS).contains(&self.lease_seconds) {
            out.push(invalid(
                "store.lease_seconds",
                format!(
                    "must be {MIN_LEASE_SECONDS}–{MAX_LEASE_SECONDS} seconds (renewed every third of it; a dead replica's work \
                     is taken over after it), got {}",
                    self.lease_seconds
                ),
            ));
        }
        out
    }
}

/// A PostgreSQL schema name plangate can use unquoted: lowercase, so the
/// name in the config is the name in the database.
pub fn is_valid_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    first_ok
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with("pg_")
}

/// A `postgres://` / `postgresql://` URL with a host, or a `key=value`
/// connection string naming a host.
fn check_postgres_url(url: &str) -> Result<(), String> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let parsed =
            reqwest::Url::parse(url).map_err(|e| format!("is not a URL ({e}); expected e.g. \"postgres://plangate@db:5432/plangate\""))?;
        if parsed.host_str().is_none_or(str::is_empty) && !url.contains("host=") {
            return Err("has no host; expected e.g. \"postgres://plangate@db:5432/plangate\"".into());
        }
        Ok(())
    } else if url.contains('=') && url.split_whitespace().all(|pair| pair.contains('=')) {
        if url.split_whitespace().any(|pair| pair.starts_with("host=") || pair.starts_with("hostaddr=")) {
            Ok(())
        } else {
            Err("a key=value connection string needs host=…".into())
        }
    } else {
        Err(format!("expected a postgres:// or postgresql:// URL (or a key=value connection string), got {:?}", mask_url_password(url)))
    }
}

/// `url` with any password replaced by `********` (URLs and `password=`
/// in key=value strings), for `config check`, logs and `Debug`.
pub fn mask_url_password(url: &str) -> String {
    let mask_pairs = |text: &str, sep: char| -> String {
        text.split(sep)
            .map(|pair| match pair.split_once("password=") {
                Some((before, _)) => format!("{before}password=********"),
                None => pair.to_string(),
            })
            .collect::<Vec<_>>()
            .join(&sep.to_string())
    };
    let Some((scheme, rest)) = url.split_once("://") else { return mask_pairs(url, ' ') };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:********@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    format!("{scheme}://{authority}{}", mask_pairs(tail, '&'))
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
    /// Per agent: the approval rules of its proposals.
    pub approval_policies: BTreeMap<String, ApprovalPolicy>,
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

    /// Check every setting and report every problem at once (one
    /// [`ConfigError::Invalid`], or [`ConfigError::Several`] listing each
    /// with its key and what to do), so a new deployment is fixed in one
    /// round instead of one error per start.
    pub fn validate(raw: Config) -> Result<Settings, ConfigError> {
        let mut problems: Vec<ConfigError> = Vec::new();
        let mut problem = |e: ConfigError| problems.push(e);
        let bind: Option<SocketAddr> = raw
            .server
            .bind
            .parse()
            .map_err(|_| problem(invalid("server.bind", format!("expected an address like 127.0.0.1:8787, got {:?}", raw.server.bind))))
            .ok();
        // Relative to the current directory, as it always was; absolute from
        // here on, so the logs and `config check` say where the data is.
        let data_dir = std::path::absolute(&raw.server.data_dir)
            .map_err(|e| {
                problem(invalid(
                    "server.data_dir",
                    format!("cannot make {:?} an absolute path ({e}); give a directory path", raw.server.data_dir),
                ))
            })
            .unwrap_or_default();
        // The public development tokens of config/default.toml are judged by
        // where the server listens (`check_secrets`), every other by itself.
        let weak = |key: &str, token: &str| -> Option<ConfigError> {
            let shipped_default = shipped_secrets().is_ok_and(|all| all.iter().any(|(v, k)| v == token && *k == Shipped::Default));
            let env = format!("PLANGATE__{}", key.replace('.', "__").to_ascii_uppercase());
            let why = weakness(token).filter(|_| !shipped_default)?;
            Some(invalid(key, format!("{why}; generate one with `openssl rand -hex 32` and set it in the file or in {env}")))
        };
        let mut tokens: Vec<(&str, String)> = Vec::new();
        if let Some(op) = &raw.server.operator_token {
            if let Some(e) = weak("server.operator_token", op) {
                problem(e);
            }
            tokens.push((op, "server.operator_token".into()));
        }
        for (id, agent) in &raw.agents {
            if !is_valid_agent_id(id) {
                problem(invalid(
                    format!("agents.{id}"),
                    "agent ids are 1–64 characters of letters, digits, `-` and `_`; rename the section",
                ));
            }
            if let Some(e) = weak(&format!("agents.{id}.token"), &agent.token) {
                problem(e);
            }
            if let Some((_, other)) = tokens.iter().find(|(t, _)| *t == agent.token) {
                problem(invalid(format!("agents.{id}.token"), format!("is the same as {other}; every token must be unique")));
            }
            tokens.push((&agent.token, format!("agents.{id}.token")));
            for d in &agent.destinations {
                if !raw.destinations.contains_key(d) {
                    problem(invalid(
                        format!("agents.{id}.destinations"),
                        format!("names {d:?}, which is not a [destinations.{d}] section; add the section or remove the name"),
                    ));
                }
            }
        }
        if let Some(bind) = &bind {
            if !bind.ip().is_loopback() && (raw.server.operator_token.is_none() || raw.agents.is_empty()) {
                problem(invalid(
                    "server.bind",
                    "a non-loopback address needs server.operator_token and at least one agent token; set them or bind to 127.0.0.1",
                ));
            }
            if let Err(e) = check_secrets(&raw, bind) {
                problem(e);
            }
        }
        for e in check_channel_sections(&raw) {
            problem(e);
        }
        if let Err(e) = raw.retention.parsed() {
            problem(e);
        }
        for e in raw.store.problems() {
            problem(e);
        }
        for (id, agent) in &raw.agents {
            if let Some(hook) = &agent.webhook {
                if let Err(e) = check_webhook(id, hook, &tokens) {
                    problem(e);
                }
            }
        }
        if let Some(url) = &raw.server.public_url {
            if let Err(e) = check_public_url(url) {
                problem(e);
            }
        }
        for (name, d) in &raw.destinations {
            let configured = match d.channel.as_str() {
                "telegram" => Some(raw.telegram.is_some()),
                "slack" => Some(raw.slack.is_some()),
                "discord" => Some(raw.discord.is_some()),
                other => {
                    problem(invalid(format!("destinations.{name}.channel"), format!("expected telegram, slack or discord, got {other:?}")));
                    None
                }
            };
            if configured == Some(false) {
                problem(invalid(
                    format!("destinations.{name}.channel"),
                    format!("uses {} but there is no [{}] section; add it (see config/example.toml)", d.channel, d.channel),
                ));
            }
            if d.chat.trim().is_empty() {
                problem(invalid(
                    format!("destinations.{name}.chat"),
                    "must be the chat or channel id; write to the bot from that chat and it replies with the id",
                ));
            }
            for (i, a) in d.approvers.iter().enumerate() {
                match a.split_once(':') {
                    Some((ch, id)) if ch == d.channel && !id.is_empty() => {}
                    _ => problem(invalid(
                        format!("destinations.{name}.approvers[{i}]"),
                        format!("expected \"{}:<user id>\", got {a:?}", d.channel),
                    )),
                }
            }
        }
        let mut policies = BTreeMap::new();
        let mut escalations = BTreeMap::new();
        let default_policy = raw.approvals.policy("approvals").map_err(&mut problem).unwrap_or_default();
        for (id, agent) in &raw.agents {
            let (policy, approvals, key) = match &agent.approvals {
                Some(a) => {
                    let merged = a.over(&raw.approvals);
                    let key = format!("agents.{id}.approvals");
                    (merged.policy(&key).map_err(&mut problem).unwrap_or_default(), merged, key)
                }
                None => (default_policy.clone(), raw.approvals.clone(), "approvals".to_string()),
            };
            for d in &approvals.escalate_to {
                if !raw.destinations.contains_key(d) {
                    problem(invalid(
                        format!("{key}.escalate_to"),
                        format!("names {d:?}, which is not a [destinations.{d}] section; add the section or remove the name"),
                    ));
                }
            }
            policies.insert(id.clone(), policy);
            escalations.insert(id.clone(), approvals.escalate_to.clone());
        }
        for (name, ns) in &raw.namespaces {
            let key = format!("namespaces.{name}");
            if let Err(e) = plangate_engine::namespace::validate_name(name) {
                problem(invalid(&key, e.to_string()));
            }
            if ns.agents.is_empty() {
                problem(invalid(format!("{key}.agents"), "name the agents (ids of [agents.*] sections) that share this namespace"));
            }
            for agent in &ns.agents {
                if !raw.agents.contains_key(agent) {
                    problem(invalid(format!("{key}.agents"), format!("names {agent:?}, which is not an [agents.{agent}] section")));
                }
            }
        }
        let approval_policies = approval_policies(&raw, &escalations).map_err(&mut problem).unwrap_or_default();
        // The same key reported twice (an [approvals] problem seen through
        // each agent that inherits it) is one problem.
        let mut seen = std::collections::BTreeSet::new();
        problems.retain(|e| seen.insert(e.to_string()));
        match (problems.len(), bind) {
            (0, Some(bind)) => {
                let mut raw = raw;
                raw.server.data_dir = data_dir.clone();
                Ok(Settings { data_dir, bind, policies, escalations, approval_policies, raw })
            }
            (1, _) => Err(problems.remove(0)),
            _ => Err(ConfigError::Several(problems)),
        }
    }

    /// The effective configuration as TOML-ish JSON with every secret masked.
    pub fn masked(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.raw).unwrap_or_default();
        mask(&mut value);
        if let Some(url) = value.pointer_mut("/store/postgres_url") {
            if let Some(text) = url.as_str() {
                *url = serde_json::Value::String(mask_url_password(text));
            }
        }
        value
    }

    /// The webhook of `agent`, if it has one.
    pub fn webhook(&self, agent: &str) -> Option<&WebhookConfig> {
        self.raw.agents.get(agent)?.webhook.as_ref()
    }

    pub fn timer_policy(&self, agent: &str) -> TimerPolicy {
        self.policies.get(agent).cloned().unwrap_or_default()
    }

    /// The store key of namespace `name` as `agent` sees it: the shared one
    /// when `[namespaces.<name>]` lists the agent, else the agent's own.
    /// Agent ids cannot contain `~`, so no agent's own key is a shared one.
    pub fn namespace_key(&self, agent: &str, name: &str) -> NamespaceKey {
        match self.raw.namespaces.get(name) {
            Some(ns) if ns.agents.iter().any(|a| a == agent) => NamespaceKey { store: format!("~shared:{name}"), shared: true },
            _ => NamespaceKey { store: format!("{agent}:{name}"), shared: false },
        }
    }

    /// The approval rules of `agent`'s proposals: the strictest of
    /// `[approvals]`, `[agents.<agent>.approvals]` and the
    /// `[destinations.<d>.approvals]` of every destination its cards go to
    /// (its own and its escalation ones). `required` is the largest that
    /// applies, `forbid_self` holds if any says so. With them, who may open
    /// the gate (the approver lists of those destinations) and the requester
    /// the agent's config names. Unknown agents: one approver, and nobody
    /// on the list (only the operator may act).
    pub fn approval_policy(&self, agent: &str) -> ApprovalPolicy {
        self.approval_policies
            .get(agent)
            .cloned()
            .unwrap_or_else(|| ApprovalPolicy { approvers: Approvers::listed(Vec::<String>::new()), ..ApprovalPolicy::default() })
    }

    /// The requester `agent`'s token config names, if any.
    pub fn requested_by(&self, agent: &str) -> Option<&str> {
        self.raw.agents.get(agent).and_then(|a| a.requested_by.as_deref())
    }

    pub fn nudge_interval_hint(&self) -> Duration {
        Duration::from_secs(1)
    }
}

/// Where a namespace lives in the store, and whether several agents share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceKey {
    pub store: String,
    pub shared: bool,
}

/// `server.public_url` goes into links on cards and in private messages:
/// an absolute http(s) URL without query, fragment or characters that chat
/// markup would read.
fn check_public_url(url: &str) -> Result<(), ConfigError> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split('/').next().unwrap_or_default()).unwrap_or_default();
    let bad = url.chars().find(|c| c.is_whitespace() || c.is_control() || "<>|\"'`?#&{}\\^[]".contains(*c));
    match (rest, bad) {
        (None, _) => Err(invalid("server.public_url", format!("expected an http:// or https:// URL, got {url:?}"))),
        (_, Some(c)) => {
            Err(invalid("server.public_url", format!("{url:?} contains {c:?}; give a plain URL like \"https://plans.example.com\"")))
        }
        _ if host.is_empty() => Err(invalid("server.public_url", format!("{url:?} has no host"))),
        _ => Ok(()),
    }
}

/// Check each configured channel section with its adapter's own config type
/// and rules (unknown keys, missing tokens, bad transports), as `serve`
/// would when it starts the adapter; one problem per section.
fn check_channel_sections(raw: &Config) -> Vec<ConfigError> {
    fn one<T: serde::de::DeserializeOwned>(
        name: &str,
        value: &Option<serde_json::Value>,
        check: impl Fn(&T) -> Result<(), plangate_channel::ConfigError>,
    ) -> Option<ConfigError> {
        let value = value.as_ref()?;
        match serde_json::from_value::<T>(value.clone()) {
            Err(e) => Some(invalid(name, format!("{e}; see the [{name}] section of config/example.toml for every key"))),
            Ok(config) => {
                check(&config).err().map(|e| ConfigError::Invalid { key: e.key.to_string(), problem: format!("{}; {}", e.problem, e.fix) })
            }
        }
    }
    [
        one::<plangate_telegram::TelegramConfig>("telegram", &raw.telegram, |c| c.validate()),
        one::<plangate_slack::SlackConfig>("slack", &raw.slack, |c| c.validate()),
        one::<plangate_discord::DiscordConfig>("discord", &raw.discord, |c| c.check()),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Every agent's approval rules (see [`Settings::approval_policy`]),
/// validated: `required` at least 1 wherever it is set, and no more than the
/// distinct approvers the agent's destinations list (without its fixed
/// requester, under `forbid_self`), so no plan can wait for approvers who do
/// not exist.
fn approval_policies(raw: &Config, escalations: &BTreeMap<String, Vec<String>>) -> Result<BTreeMap<String, ApprovalPolicy>, ConfigError> {
    let at_least_one = |key: String, n: Option<u32>| match n {
        Some(0) => Err(invalid(key, "must be at least 1 (the number of distinct approvers a plan needs)")),
        _ => Ok(()),
    };
    at_least_one("approvals.required".into(), raw.approvals.required)?;
    for (name, d) in &raw.destinations {
        at_least_one(format!("destinations.{name}.approvals.required"), d.approvals.as_ref().and_then(|a| a.required))?;
    }
    let mut out = BTreeMap::new();
    for (id, agent) in &raw.agents {
        let own = agent.approvals.as_ref();
        at_least_one(format!("agents.{id}.approvals.required"), own.and_then(|a| a.required))?;
        if let Some(requester) = &agent.requested_by {
            plangate_engine::review::validate_requester(requester)
                .map_err(|e| invalid(format!("agents.{id}.requested_by"), e.to_string()))?;
        }
        let names: Vec<&String> = agent.destinations.iter().chain(escalations.get(id).map(Vec::as_slice).unwrap_or_default()).collect();
        let destinations: Vec<(&String, &DestinationConfig)> =
            names.iter().filter_map(|n| raw.destinations.get(*n).map(|d| (*n, d))).collect();
        let listed = destinations.iter().flat_map(|(_, d)| d.approvers.iter().cloned());
        let mut policy =
            ApprovalPolicy { approvers: Approvers::listed(listed), requested_by: agent.requested_by.clone(), ..ApprovalPolicy::default() };
        let mut strictest = "approvals.required".to_string();
        let mut amendments = Vec::new();
        let mut consider = |key: String, required: Option<u32>, forbid_self: Option<bool>, amend: Option<AmendmentPolicy>| {
            if let Some(n) = required.filter(|n| *n > policy.required) {
                policy.required = n;
                strictest = key;
            }
            policy.forbid_self |= forbid_self.unwrap_or(false);
            amendments.push(amend);
        };
        let global = &raw.approvals;
        consider("approvals.required".into(), global.required, global.forbid_self, global.amendments);
        if let Some(a) = own {
            consider(format!("agents.{id}.approvals.required"), a.required, a.forbid_self, a.amendments);
        }
        for (name, d) in &destinations {
            if let Some(a) = &d.approvals {
                consider(format!("destinations.{name}.approvals.required"), a.required, a.forbid_self, a.amendments);
            }
        }
        policy.amendments = strictest_amendments(amendments).unwrap_or_default();
        if policy.required > 1 {
            let mut approvers: Vec<&String> = destinations.iter().flat_map(|(_, d)| d.approvers.iter()).collect();
            approvers.sort();
            approvers.dedup();
            let requester_counts = policy.forbid_self && agent.requested_by.as_ref().is_some_and(|r| approvers.contains(&r));
            let available = approvers.len() - usize::from(requester_counts);
            if (policy.required as usize) > available {
                let why = if requester_counts { " (not counting its requester, under forbid_self)" } else { "" };
                return Err(invalid(
                    strictest,
                    format!(
                        "agent {id} needs {} distinct approvers, but its destinations list {available}{why}; add approvers or lower the number",
                        policy.required
                    ),
                ));
            }
        }
        out.insert(id.clone(), policy);
    }
    Ok(out)
}

/// The strictest `amendments` of the keys that set one: "ask" if any asks
/// (a chat that wants to be asked is asked), "flag" only where every key
/// that says anything says "flag"; `None` when none does (then "ask").
fn strictest_amendments(keys: impl IntoIterator<Item = Option<AmendmentPolicy>>) -> Option<AmendmentPolicy> {
    keys.into_iter().flatten().min()
}

/// Whether a setting named `key` holds a secret (tokens, secrets, keys).
fn is_secret_key(key: &str) -> bool {
    key.contains("token") || key.contains("secret") || key.ends_with("_key")
}

/// Every string under a secret key of `value`, with its key path
/// (`agents.claude.token`, `slack.signing_secret`).
fn secrets(value: &serde_json::Value, path: &str, secret: bool, out: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                secrets(v, &key, secret || is_secret_key(k), out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                secrets(v, &format!("{path}[{i}]"), secret, out);
            }
        }
        serde_json::Value::String(text) if secret && !text.trim().is_empty() => out.push((path.to_string(), text.clone())),
        _ => {}
    }
}

/// Which shipped file a secret value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shipped {
    /// `config/default.toml` and `config/quickstart.toml`: public
    /// development values, fine on a loopback server nothing else can reach.
    Default,
    /// `config/example.toml`: placeholders, never valid.
    Example,
}

/// The secret values of the files in `config/`, read from the embedded files.
fn shipped_secrets() -> Result<&'static [(String, Shipped)], ConfigError> {
    static SHIPPED: std::sync::OnceLock<Result<Vec<(String, Shipped)>, String>> = std::sync::OnceLock::new();
    let read = |text: &str, name: &str, kind: Shipped| -> Result<Vec<(String, Shipped)>, String> {
        let value: serde_json::Value = config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .and_then(|c| c.try_deserialize())
            .map_err(|e| format!("the embedded config/{name} does not parse ({e})"))?;
        let mut found = Vec::new();
        secrets(&value, "", false, &mut found);
        Ok(found.into_iter().map(|(_, v)| (v, kind)).collect())
    };
    let shipped = SHIPPED.get_or_init(|| {
        let mut all = read(EXAMPLE_TOML, "example.toml", Shipped::Example)?;
        all.extend(read(DEFAULT_TOML, "default.toml", Shipped::Default)?);
        all.extend(read(QUICKSTART_TOML, "quickstart.toml", Shipped::Default)?);
        Ok(all)
    });
    shipped.as_deref().map_err(|e| invalid("(built-in)", e.clone()))
}

/// The webhook or HTTP endpoint a platform calls, if one is configured: a
/// server with one is reachable from outside, whatever `server.bind` says.
fn public_endpoint(raw: &Config) -> Option<&'static str> {
    let transport = |section: &Option<serde_json::Value>| -> Option<String> {
        section.as_ref()?.get("transport")?.as_str().map(|t| t.trim().to_ascii_lowercase())
    };
    if transport(&raw.telegram).as_deref() == Some("webhook") {
        return Some("telegram.transport = \"webhook\"");
    }
    if transport(&raw.slack).as_deref() == Some("http") {
        return Some("slack.transport = \"http\"");
    }
    if transport(&raw.discord).as_deref() == Some("http") {
        return Some("discord.transport = \"http\"");
    }
    None
}

/// The shortest token of plangate's own it accepts (characters): 16 random
/// characters are what `openssl rand -hex 8` gives, the least worth having.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Why a token of plangate's own (the operator's, an agent's) is too weak
/// to guard anything, if it is — a platform's credential is the platform's
/// business:
/// too short, or one character or a short pattern repeated
/// (`000000000000000000000000`, `abcabcabcabc…`, `passwordpassword`).
fn weakness(value: &str) -> Option<String> {
    let chars: Vec<char> = value.trim().chars().collect();
    if chars.len() < MIN_TOKEN_CHARS {
        return Some(format!("is too short ({} characters; at least {MIN_TOKEN_CHARS})", chars.len()));
    }
    let repeats = |unit: usize| chars.len().is_multiple_of(unit) && chars.chunks(unit).all(|c| c == &chars[..unit]);
    if (1..=8).any(|unit| unit < chars.len() && repeats(unit)) {
        return Some("is weak (one character or a short pattern repeated)".to_string());
    }
    let mut distinct = chars.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 6 {
        return Some(format!("is weak (only {} distinct characters)", distinct.len()));
    }
    None
}

/// Refuse every secret that is a shipped or placeholder value: anything that
/// starts with `change-me` or `from-env-` (a value that exists only to be
/// replaced, never valid anywhere), any value of `config/example.toml`, and
/// the public development values of `config/default.toml` unless the server
/// listens on loopback only, no platform calls it (webhook or HTTP
/// transport) and it has no public web page (`server.public_url`).
fn check_secrets(raw: &Config, bind: &SocketAddr) -> Result<(), ConfigError> {
    let shipped = shipped_secrets()?;
    let exposed = if !bind.ip().is_loopback() {
        Some(format!("server.bind = \"{bind}\" is not loopback"))
    } else if let Some(e) = public_endpoint(raw) {
        Some(format!("{e} lets a platform reach this server"))
    } else {
        raw.server.public_url.as_ref().map(|url| format!("server.public_url = \"{url}\" puts its sign-in page on the network"))
    };
    let mut found = Vec::new();
    secrets(&serde_json::to_value(raw).unwrap_or_default(), "", false, &mut found);
    let mut refused: Vec<(String, String)> = Vec::new();
    for (key, value) in found {
        let env = format!("PLANGATE__{}", key.replace('.', "__").to_ascii_uppercase());
        let fix = format!("set a real secret (e.g. `openssl rand -hex 32` for a token of plangate's own) in the file or in {env}");
        let normalized: String = value.trim().to_ascii_lowercase().chars().filter(|c| !matches!(c, '-' | '_')).collect();
        let kind = shipped.iter().filter(|(v, _)| *v == value).map(|(_, k)| *k).min_by_key(|k| *k != Shipped::Example);
        let named = value.trim().strip_prefix("from-env-").map(str::to_string);
        let problem = match (kind, &exposed) {
            _ if normalized.starts_with("changeme") => format!("is a placeholder (\"change-me…\"); {fix}"),
            _ if named.is_some() => format!(
                "is a placeholder (\"{value}\") left in place: export {} (or put a real secret in the file); \
                 a placeholder never works as a secret",
                named.unwrap_or(env.clone())
            ),
            (Some(Shipped::Example), _) => format!("is the example value from config/example.toml, public to anyone; {fix}"),
            (Some(Shipped::Default), Some(why)) => format!(
                "still has the public development value from config/default.toml, accepted only on a loopback bind \
                 without webhook or HTTP transports, but {why}; {fix}"
            ),
            _ => continue,
        };
        refused.push((key, problem));
    }
    let mut refused = refused.into_iter();
    let Some((key, mut problem)) = refused.next() else {
        return Ok(());
    };
    let others: Vec<String> = refused.map(|(k, _)| format!("`{k}` (PLANGATE__{})", k.replace('.', "__").to_ascii_uppercase())).collect();
    if !others.is_empty() {
        problem.push_str(&format!(" (the same goes for {})", others.join(", ")));
    }
    Err(invalid(key, problem))
}

fn mask(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let secret = is_secret_key(k);
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

    /// `toml` with every secret value shipped in `config/` replaced by a real-looking one.
    fn with_real_secrets(toml: &str) -> String {
        let mut out = toml.to_string();
        for (i, (value, _)) in shipped_secrets().unwrap().iter().enumerate() {
            // The Discord public key must be one: RFC 8032's first test vector.
            let real = if value.contains("hex") {
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a".to_string()
            } else {
                format!("real-secret-{i}-5f2c9a7e01b3d4")
            };
            out = out.replace(&format!("\"{value}\""), &format!("\"{real}\""));
        }
        out
    }

    #[test]
    fn shipped_secrets_are_read_from_both_files() {
        let shipped = shipped_secrets().unwrap();
        for (value, kind) in [
            ("dev-agent-token", Shipped::Default),
            ("dev-operator-token", Shipped::Default),
            ("change-me-claude-token", Shipped::Example),
            ("a-long-random-secret-16-256-chars", Shipped::Example),
            ("123456:bot-token-from-botfather", Shipped::Example),
            ("xoxb-…", Shipped::Example),
            ("…hex…", Shipped::Example),
        ] {
            assert!(shipped.contains(&(value.to_string(), kind)), "{value} missing from {shipped:?}");
        }
    }

    #[test]
    fn the_example_as_shipped_is_refused_naming_the_key() {
        let err = parse(EXAMPLE_TOML).unwrap_err().to_string();
        assert!(err.contains("invalid setting `agents.claude.token`: is a placeholder"), "{err}");
        assert!(err.contains("PLANGATE__AGENTS__CLAUDE__TOKEN"), "{err}");
        for other in ["server.operator_token", "telegram.token", "telegram.webhook_secret", "slack.signing_secret", "discord.bot_token"] {
            assert!(err.contains(&format!("`{other}`")), "{other}: {err}");
        }
        let public = EXAMPLE_TOML.replace("127.0.0.1:8787", "0.0.0.0:8787");
        assert!(parse(&public).is_err());
        // Only the webhook secret left as shipped: still refused, by name.
        let real = with_real_secrets(EXAMPLE_TOML);
        let webhook = real.replace(
            &real.lines().find(|l| l.starts_with("webhook_secret")).unwrap().to_string(),
            "webhook_secret = \"a-long-random-secret-16-256-chars\"",
        );
        let err = parse(&webhook).unwrap_err().to_string();
        assert!(err.contains("telegram.webhook_secret") && err.contains("config/example.toml"), "{err}");
        let err = parse(&real.replace("real-secret-", "CHANGE_ME-")).unwrap_err().to_string();
        assert!(err.contains("placeholder"), "{err}");
    }

    #[test]
    fn dev_tokens_refused_with_a_webhook_or_http_transport_even_on_loopback() {
        let polling = format!("{DEFAULT_TOML}\n[telegram]\ntoken = \"1:real-bot-token\"\n");
        parse(&polling).unwrap();
        for section in [
            "[telegram]\ntoken = \"1:real-bot-token\"\ntransport = \"webhook\"\n",
            "[slack]\nbot_token = \"xoxb-real\"\ntransport = \"http\"\n",
            "[discord]\nbot_token = \"real\"\napplication_id = \"1\"\ntransport = \"http\"\n",
        ] {
            let err = parse(&format!("{DEFAULT_TOML}\n{section}")).unwrap_err().to_string();
            assert!(err.contains("public development value") && err.contains("transport"), "{err}");
        }
    }

    #[test]
    fn data_dir_is_made_absolute() {
        let s = parse(DEFAULT_TOML).unwrap();
        assert!(s.data_dir.is_absolute());
        assert_eq!(s.data_dir, std::env::current_dir().unwrap().join("./data"));
        assert_eq!(s.raw.server.data_dir, s.data_dir);
    }

    #[test]
    fn example_config_with_real_secrets_is_valid() {
        let example = with_real_secrets(EXAMPLE_TOML);
        let s = parse(&example).unwrap();
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

    /// `[approvals]`, an agent's and its destinations' rules combine to the
    /// strictest, and impossible quorums are refused naming the key.
    #[test]
    fn approval_rules_combine_to_the_strictest_and_must_be_reachable() {
        let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"t\"\n[slack]\nbot_token = \"b\"\napp_token = \"xapp-1\"\n\
                    [destinations.a]\nchannel = \"telegram\"\nchat = \"1\"\napprovers = [\"telegram:1\", \"telegram:2\"]\n\
                    [destinations.b]\nchannel = \"slack\"\nchat = \"C1\"\napprovers = [\"slack:U1\"]\n";
        let agent = |extra: &str| format!("[agents.x]\ntoken = \"0123456789abcdef\"\ndestinations = [\"a\", \"b\"]\n{extra}");
        let s = parse(&format!("{base}{}", agent(""))).unwrap();
        assert_eq!((s.approval_policy("x").required, s.approval_policy("x").forbid_self), (1, false));
        assert_eq!(s.approval_policy("unknown").approvers, Approvers::listed(Vec::<String>::new()));
        // amendments: "ask" by default and wherever any key asks; "flag" where every key that speaks flags.
        let flag = |toml: String| parse(&toml).unwrap().approval_policy("x").amendments == AmendmentPolicy::Flag;
        assert!(!flag(format!("{base}{}", agent(""))));
        assert!(flag(format!("{base}{}", agent("[agents.x.approvals]\namendments = \"flag\"\n"))));
        assert!(!flag(format!(
            "{base}[destinations.b.approvals]\namendments = \"ask\"\n[approvals]\namendments = \"flag\"\n{}",
            agent("")
        )));
        // The destination's stricter rule wins over the global one.
        let toml = format!("{base}[destinations.b.approvals]\nrequired = 3\nforbid_self = true\n[approvals]\nrequired = 2\n{}", agent(""));
        let p = parse(&toml).unwrap().approval_policy("x");
        assert_eq!((p.required, p.forbid_self), (3, true));
        // Four approvers wanted, three exist.
        let toml = format!("{base}{}[agents.x.approvals]\nrequired = 4\n", agent(""));
        let err = parse(&toml).unwrap_err().to_string();
        assert!(err.contains("agents.x.approvals.required") && err.contains("needs 4 distinct approvers"), "{err}");
        // The fixed requester does not count under forbid_self.
        let toml = format!("{base}{}[agents.x.approvals]\nrequired = 3\nforbid_self = true\n", agent("requested_by = \"slack:U1\"\n"));
        let err = parse(&toml).unwrap_err().to_string();
        assert!(err.contains("not counting its requester"), "{err}");
        let toml = format!("{base}[approvals]\nrequired = 0\n{}", agent(""));
        assert!(parse(&toml).unwrap_err().to_string().contains("approvals.required"));
        let err = parse(&format!("{base}{}", agent("requested_by = \"alice\"\n"))).unwrap_err().to_string();
        assert!(err.contains("agents.x.requested_by"), "{err}");
        let s = parse(&format!("{base}{}", agent("requested_by = \"slack:U9\"\n"))).unwrap();
        assert_eq!(s.requested_by("x"), Some("slack:U9"));
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("[server]\nbind = \"nope\"\ndata_dir = \"d\"\n", "server.bind"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"short\"\n", "agents.a.token"),
            ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"0123456789abcdef-a\"\ndestinations = [\"x\"]\n", "agents.a.destinations"),
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

    /// `[agents.X.approvals]` overrides only the keys it sets: the others
    /// (here `escalate_to` and `timeout`) come from `[approvals]`.
    #[test]
    fn agent_approvals_inherit_the_keys_they_do_not_set() {
        let toml = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n\
            [telegram]\ntoken = \"1:real-bot-token\"\n\
            [destinations.leads]\nchannel = \"telegram\"\nchat = \"-1\"\n\
            [approvals]\nnudges = [\"10m\"]\ntimeout = \"2h\"\nescalate_to = [\"leads\"]\n\
            [agents.a]\ntoken = \"0123456789abcdef-a\"\n[agents.a.approvals]\nnudges = [\"5m\", \"20m\"]\n\
            [agents.b]\ntoken = \"0123456789abcdef-b\"\n[agents.b.approvals]\nescalate_to = []\n";
        let s = parse(toml).unwrap();
        let a = s.timer_policy("a");
        assert_eq!(a.nudges_ms, vec![300_000, 1_200_000]);
        assert_eq!(a.timeout_ms, Some(7_200_000), "timeout inherited");
        assert_eq!(a.escalate_ms, Some(1_200_000), "escalation inherited, after a's own last nudge");
        assert_eq!(s.escalations["a"], vec!["leads".to_string()]);
        // Setting a key to empty is an override too.
        let b = s.timer_policy("b");
        assert_eq!(b.nudges_ms, vec![600_000]);
        assert_eq!(b.escalate_ms, None);
        assert!(s.escalations["b"].is_empty());
        // An inherited key is validated against the agent's own keys: a
        // timeout inherited from [approvals] before the agent's nudge fails,
        // naming the agent's key.
        let late = toml.replace("nudges = [\"5m\", \"20m\"]", "nudges = [\"3h\"]");
        let err = parse(&late).unwrap_err().to_string();
        assert!(err.contains("agents.a.approvals.nudges[0]"), "{err}");
    }

    /// The README's quick-start config, taken from README.md itself, is
    /// `config/quickstart.toml` and loads once the environment variables its
    /// stand-in secrets name are set (so the doc cannot drift); left in
    /// place, a stand-in is refused naming its variable, anywhere.
    #[test]
    fn the_readme_quick_start_config_loads_as_written() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
        let after = readme.split("<!-- quickstart:plangate.toml -->").nth(1).expect("the README marks its quick-start config");
        let block = after.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).expect("a toml block after the marker");
        assert_eq!(block, QUICKSTART_TOML, "README.md and config/quickstart.toml differ");
        let err = parse(block).unwrap_err().to_string();
        assert!(err.contains("is a placeholder") && err.contains("export PLANGATE__"), "{err}");
        let block = &block
            .replace("from-env-PLANGATE__SERVER__OPERATOR_TOKEN", "5b1e9c2a7f3d4e6081a9c3e5f7b2d4a6")
            .replace("from-env-PLANGATE__TELEGRAM__TOKEN", "123456:a-real-bot-token")
            .replace("from-env-PLANGATE__AGENTS__CLAUDE__TOKEN", "9f2c4e7a1b3d5f60a8c2e4b6d8f0a1c3");
        let s = parse(block).unwrap();
        assert_eq!(s.raw.agents["claude"].destinations, vec!["phone".to_string()]);
        serde_json::from_value::<plangate_telegram::TelegramConfig>(s.raw.telegram.clone().unwrap()).unwrap().validate().unwrap();
        assert_eq!(s.timer_policy("claude").nudges_ms, vec![600_000, 1_800_000, 3_600_000], "the default nudges");
    }

    /// Tokens of plangate's own: short ones and repeated patterns are refused.
    #[test]
    fn weak_tokens_of_our_own_are_refused() {
        for weak in ["short", "000000000000000000000000", "abcabcabcabcabcabcabc", "passwordpassword", "aabbccaabbccaabbccab"] {
            assert!(weakness(weak).is_some(), "{weak}");
        }
        for strong in ["9f2c4e7a1b3d5f60a8c2e4b6d8f0a1c3", "test-agent-token-0123456789", "operator-token-123"] {
            assert_eq!(weakness(strong), None, "{strong}");
        }
    }

    #[test]
    fn webhooks_take_only_http_urls_and_long_unique_secrets() {
        let base =
            "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.ci]\ntoken = \"ci-token-0123456789\"\n[agents.ci.webhook]\n";
        let hook = |url: &str, secret: &str| parse(&format!("{base}url = \"{url}\"\nsecret = \"{secret}\"\n"));
        let s = hook("https://runner.example.com/plangate?x=1", "0123456789abcdef").unwrap();
        assert_eq!(s.webhook("ci").unwrap().url, "https://runner.example.com/plangate?x=1");
        hook("http://127.0.0.1:9/hook", "0123456789abcdef").unwrap();
        for (url, secret, key, says) in [
            ("ftp://files.example.com/x", "0123456789abcdef", "agents.ci.webhook.url", "only http:// and https://"),
            ("file:///etc/passwd", "0123456789abcdef", "agents.ci.webhook.url", "\"file\" scheme"),
            ("runner.example.com/hook", "0123456789abcdef", "agents.ci.webhook.url", "is not a URL"),
            ("https://user:pw@runner.example.com/", "0123456789abcdef", "agents.ci.webhook.url", "password"),
            ("https://runner.example.com/", "too-short", "agents.ci.webhook.secret", "at least 16"),
            ("https://runner.example.com/", "ci-token-0123456789", "agents.ci.webhook.secret", "agents.ci.token"),
        ] {
            let err = hook(url, secret).unwrap_err().to_string();
            assert!(err.contains(key) && err.contains(says), "{url} {secret}: {err}");
        }
        let err = hook("https://runner.example.com/", "change-me-webhook-secret").unwrap_err().to_string();
        assert!(err.contains("agents.ci.webhook.secret") && err.contains("placeholder"), "{err}");
        // Masked and never in Debug.
        let s = hook("https://runner.example.com/", "0123456789abcdef").unwrap();
        assert!(!s.masked().to_string().contains("0123456789abcdef"));
        assert!(!format!("{s:?}").contains("0123456789abcdef"));
    }

    #[test]
    fn subagent_expiry_and_shared_namespaces() {
        let s = parse(DEFAULT_TOML).unwrap();
        assert_eq!(s.timer_policy("demo").subagent_expiry_ms, Some(30 * 60_000));
        let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"0123456789abcdef-a\"\n[agents.b]\ntoken = \"0123456789abcdef-b\"\n";
        let s = parse(&format!("{base}[approvals]\nsubagent_expiry = \"off\"\n[agents.b.approvals]\nsubagent_expiry = \"5m\"\n")).unwrap();
        assert_eq!((s.timer_policy("a").subagent_expiry_ms, s.timer_policy("b").subagent_expiry_ms), (None, Some(300_000)));
        for (extra, key) in [
            ("[approvals]\nsubagent_expiry = \"soon\"\n", "approvals.subagent_expiry"),
            ("[approvals]\nsubagent_expiry = \"0s\"\n", "approvals.subagent_expiry"),
            ("[namespaces.\"a/b\"]\nagents = [\"a\"]\n", "namespaces.a/b"),
            ("[namespaces.release]\nagents = []\n", "namespaces.release.agents"),
            ("[namespaces.release]\nagents = [\"a\", \"ghost\"]\n", "namespaces.release.agents"),
        ] {
            let err = parse(&format!("{base}{extra}")).unwrap_err().to_string();
            assert!(err.contains(key), "{key}: {err}");
        }
        let s = parse(&format!("{base}[namespaces.release]\nagents = [\"a\", \"b\"]\n")).unwrap();
        assert_eq!(s.namespace_key("a", "release"), s.namespace_key("b", "release"));
        assert!(s.namespace_key("a", "release").shared);
        assert_eq!(s.namespace_key("a", "notes"), NamespaceKey { store: "a:notes".into(), shared: false });
        assert_ne!(s.namespace_key("a", "notes"), s.namespace_key("b", "notes"));
    }

    #[test]
    fn store_defaults_to_sled_and_postgres_needs_a_url_and_a_plain_schema() {
        let s = parse(DEFAULT_TOML).unwrap();
        assert!(!s.raw.store.is_postgres());
        assert_eq!((s.raw.store.pool_size, s.raw.store.lease_seconds, s.raw.store.postgres_schema.as_str()), (16, 10, "plangate"));
        let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n";
        let pg = |extra: &str| parse(&format!("{base}[store]\nbackend = \"postgres\"\n{extra}"));
        let s = pg("postgres_url = \"postgres://plangate@db.internal:5432/plangate\"\n").unwrap();
        assert!(s.raw.store.is_postgres());
        assert_eq!(s.raw.store.lease(), Duration::from_secs(10));
        pg("postgres_url = \"host=/run/postgresql dbname=plangate\"\npostgres_schema = \"team_a\"\n").unwrap();
        pg("postgres_url = \"postgresql:///plangate?host=/run/postgresql\"\n").unwrap();
        for (extra, key, says) in [
            ("", "store.postgres_url", "is required with backend = \"postgres\""),
            ("postgres_url = \"  \"\n", "store.postgres_url", "is required"),
            ("postgres_url = \"mysql://db/x\"\n", "store.postgres_url", "postgres:// or postgresql://"),
            ("postgres_url = \"dbname=x\"\n", "store.postgres_url", "needs host="),
            ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"Plans\"\n", "store.postgres_schema", "lowercase"),
            ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"a; drop\"\n", "store.postgres_schema", "not a schema name"),
            ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"pg_catalog\"\n", "store.postgres_schema", "pg_"),
            ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"\"\n", "store.postgres_schema", "1–63"),
            ("postgres_url = \"postgres://db/x\"\npool_size = 0\n", "store.pool_size", "1–1000"),
            ("postgres_url = \"postgres://db/x\"\nlease_seconds = 1\n", "store.lease_seconds", "3–600"),
        ] {
            let err = pg(extra).unwrap_err().to_string();
            assert!(err.contains(&format!("`{key}`")) && err.contains(says), "{extra}: {err}");
        }
        let err = parse(&format!("{base}[store]\nbackend = \"mysql\"\n")).unwrap_err().to_string();
        assert!(err.contains("`store.backend`") && err.contains("\"sled\"") && err.contains("\"postgres\""), "{err}");
        // Every problem of the section at once.
        let err = pg("postgres_schema = \"X\"\n").unwrap_err().to_string();
        assert!(err.contains("2 settings are invalid"), "{err}");
        // Sled ignores the PostgreSQL keys (a config can be switched back by one line).
        parse(&format!("{base}[store]\nbackend = \"sled\"\npostgres_schema = \"X\"\n")).unwrap();
        let err = parse(&format!("{base}[store]\nbackend = \"sled\"\nurl = \"x\"\n")).unwrap_err().to_string();
        assert!(err.contains("url"), "{err}");
    }

    #[test]
    fn the_postgres_password_is_masked_everywhere() {
        for (url, masked) in [
            ("postgres://plangate:s3cret@db:5432/plangate", "postgres://plangate:********@db:5432/plangate"),
            (
                "postgres://plangate@db/plangate?password=s3cret&sslmode=require",
                "postgres://plangate@db/plangate?password=********&sslmode=require",
            ),
            ("postgresql://u:s3cret@db", "postgresql://u:********@db"),
            ("host=db user=u password=s3cret dbname=p", "host=db user=u password=******** dbname=p"),
            ("postgres://db/plangate", "postgres://db/plangate"),
        ] {
            assert_eq!(mask_url_password(url), masked);
        }
        let toml = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[store]\nbackend = \"postgres\"\npostgres_url = \"postgres://u:s3cret@db/p\"\n";
        let s = parse(toml).unwrap();
        assert_eq!(s.masked()["store"]["postgres_url"], "postgres://u:********@db/p");
        assert!(!s.masked().to_string().contains("s3cret"));
        assert!(!format!("{s:?}").contains("s3cret"));
        assert_eq!(s.raw.store.postgres_url.as_deref(), Some("postgres://u:s3cret@db/p"), "the real URL is kept for the store");
    }

    #[test]
    fn masked_hides_secrets() {
        let s = parse(DEFAULT_TOML).unwrap();
        let text = s.masked().to_string();
        assert!(!text.contains("dev-agent-token") && !text.contains("dev-operator-token"), "{text}");
    }
}
