//! Configuration (every key is in `config/example.toml`): a TOML file plus
//! `PLANGATE__…` environment overrides, validated completely at start so a
//! bad setting fails with its key name and what was expected, never later at
//! 3 a.m.

use plangate_channel::{Style, Threads};
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

mod checks;
pub mod ladder;
mod schema;
mod secrets;
#[cfg(test)]
mod tests;

use checks::*;
pub use checks::{is_valid_schema_name, MIN_WEBHOOK_SECRET_CHARS};
pub use schema::*;
use secrets::*;
pub use secrets::{mask_url_password, MIN_TOKEN_CHARS};

/// The channels whose adapters give a session a topic or thread of its own
/// (`threads = "per_session"`).
const THREADED_CHANNELS: &[&str] = &["telegram", "slack", "discord"];

/// The embedded defaults, used when no `--config` is given.
pub const DEFAULT_TOML: &str = include_str!("../../../../config/default.toml");

/// The example configuration. Embedded (like [`DEFAULT_TOML`]) so that the
/// secrets shipped in `config/` are read from the files themselves and the
/// list of refused values cannot drift from them.
pub const EXAMPLE_TOML: &str = include_str!("../../../../config/example.toml");

/// The README's quick-start `plangate.toml` (Telegram + one agent). Its
/// secret values are public stand-ins for the environment variables they
/// name, treated like the development values of [`DEFAULT_TOML`].
pub const QUICKSTART_TOML: &str = include_str!("../../../../config/quickstart.toml");

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

pub(super) fn invalid(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.into(), problem: problem.into() }
}

/// A validated configuration, with derived lookups.
#[derive(Debug, Clone)]
pub struct Settings {
    pub raw: Config,
    pub bind: SocketAddr,
    pub data_dir: PathBuf,
    pub policies: BTreeMap<String, TimerPolicy>,
    /// Per agent: the escalation destinations (names, of every level of its ladder).
    pub escalations: BTreeMap<String, Vec<String>>,
    /// Per agent: its escalation ladder's levels ([`ladder`]).
    pub ladders: BTreeMap<String, Vec<ladder::Level>>,
    /// `[schedules.*]`, checked.
    pub schedules: BTreeMap<String, ladder::OnCall>,
    /// `[people.*]`, checked.
    pub people: BTreeMap<String, ladder::Person>,
    /// Per agent: the approval rules of its proposals.
    pub approval_policies: BTreeMap<String, ApprovalPolicy>,
    /// The effective routing policy: `[policy]` and, for a config file,
    /// `policy.d/` beside it.
    pub policy: plangate_policy::Policy,
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
        let mut settings = Settings::validate(raw)?;
        if let Some(path) = path {
            settings.policy =
                plangate_policy::Policy::load(&settings.raw.policy, Some(path)).map_err(|e| invalid("policy", e.to_string()))?;
        }
        Ok(settings)
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
        if let Err(e) = raw.audit.interval() {
            problem(e);
        }
        // The section alone here; `load` adds `policy.d/` beside the file.
        let policy = plangate_policy::Policy::load(&raw.policy, None)
            .map_err(|e| problem(invalid("policy", format!("{e}; fix the rule or remove it"))))
            .unwrap_or_default();
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
        if let Some(email) = &raw.email {
            check_email(email, &raw.server).into_iter().for_each(&mut problem);
        }
        if let Some(push) = &raw.push {
            check_push(push, &raw.server).into_iter().for_each(&mut problem);
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
            if d.threads == Threads::PerSession && !THREADED_CHANNELS.contains(&d.channel.as_str()) {
                problem(invalid(
                    format!("destinations.{name}.threads"),
                    format!("\"per_session\" is not available on {} yet; remove the key or set it to \"off\"", d.channel),
                ));
            }
            if let Err(why) = plangate_engine::ProjectPatterns::new(&d.projects) {
                problem(invalid(format!("destinations.{name}.projects"), why));
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
        let mut ladders = BTreeMap::new();
        let schedules = ladder::schedules(&raw, &mut problem);
        let people = ladder::people(&raw, &mut problem);
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
            let nudges_ms: Vec<u64> = policy.nudges_ms.clone();
            let levels = ladder::levels(&approvals, &key, &nudges_ms, policy.timeout_ms).unwrap_or_default();
            ladder::check_levels(&raw, id, &key, &approvals, &levels, &mut problem);
            let mut reached: Vec<String> = levels.iter().flat_map(|l| l.destinations.iter().cloned()).collect();
            reached.sort();
            reached.dedup();
            policies.insert(id.clone(), policy);
            escalations.insert(id.clone(), reached);
            ladders.insert(id.clone(), levels);
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
                Ok(Settings { data_dir, bind, policies, escalations, ladders, schedules, people, approval_policies, policy, raw })
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

    /// Where email links point (`[email]` set): `email.public_url`, else
    /// `server.public_url`, without a trailing `/`.
    pub fn email_public_url(&self) -> Option<&str> {
        let email = self.raw.email.as_ref()?;
        email.public_url.as_deref().or(self.raw.server.public_url.as_deref()).map(|url| url.trim_end_matches('/'))
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

    /// The mode `agent`'s Claude Code continues in after an approval.
    pub fn after_approval(&self, agent: &str) -> schema::AfterApproval {
        self.raw.agents.get(agent).map(|a| a.after_approval).unwrap_or_default()
    }

    /// A decision as `agent` is given it (the API's answer, the webhook's
    /// body): an approval carries the mode the operator chose for it to
    /// continue in (`[agents.<id>] after_approval`), so a hook needs no
    /// setting of its own.
    pub fn decision_for(&self, agent: &str, p: &plangate_engine::Proposal) -> plangate_engine::view::DecisionView {
        let mut view = plangate_engine::view::DecisionView::of(p);
        if matches!(p.status, plangate_engine::DecisionStatus::Approved | plangate_engine::DecisionStatus::Edited) {
            view.after_approval = Some(self.after_approval(agent).claude_mode().to_string());
        }
        view
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
