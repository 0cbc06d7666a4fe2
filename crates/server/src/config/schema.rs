//! The configuration's shape: every section and key as `serde` reads them,
//! with their defaults and the small parsers of their values.

use super::*;

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
    /// Signed checkpoints of the tamper-evident audit.
    #[serde(default)]
    pub audit: AuditConfig,
    /// Where the state lives: sled under `data_dir` (one process), or one
    /// PostgreSQL database several replicas share.
    #[serde(default)]
    pub store: StoreConfig,
    /// The operator's routing rules (`[[policy.rules]]`), merged with the
    /// files of `policy.d/` beside the config file ([`plangate_policy`]).
    #[serde(default, skip_serializing_if = "is_empty_policy")]
    pub policy: plangate_policy::Section,
    /// Plan cards by email, with one-use decision links (`[email]`): off
    /// unless the section is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<EmailConfig>,
    /// On-call schedules the escalation ladder's levels name
    /// (`[schedules.<name>]`, [`super::ladder`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub schedules: BTreeMap<String, super::ladder::ScheduleConfig>,
    /// How a person is reached (`[people."telegram:111"]`): address, quiet
    /// hours, out of office.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub people: BTreeMap<String, super::ladder::PersonConfig>,
    /// Web Push to the devices approvers subscribe on the plan page
    /// (`[push]`, crates/push): off unless the section is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushConfig>,
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
    /// The agent's permission requests (docs/AGENTS.md, "Permission
    /// requests"): rules that answer them without asking, and whether
    /// they are relayed to the approvers at all.
    #[serde(default)]
    pub permissions: PermissionsConfig,
    /// The permission mode Claude Code continues in once people approved
    /// this agent's plan (the hook of its `ExitPlanMode` sets it).
    #[serde(default)]
    pub after_approval: AfterApproval,
}

/// `[agents.<id>] after_approval`: what an approval lets Claude Code do
/// without asking at its terminal. plangate's gate holds every call to the
/// approved plan and its scope whichever is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterApproval {
    /// `acceptEdits`: file edits run without a second ask (the approval was
    /// the person's one tap); shell commands still ask.
    #[default]
    AcceptEdits,
    /// Claude Code's manual mode: every edit asks at the terminal (and, with
    /// permission relay on, as a card).
    Default,
    /// Claude Code's auto mode: its classifier decides what asks.
    Auto,
    /// The mode Claude Code picks itself.
    Keep,
}

impl AfterApproval {
    /// The value the hook reads from the decision (`DecisionView::after_approval`).
    pub fn claude_mode(self) -> &'static str {
        match self {
            AfterApproval::AcceptEdits => "acceptEdits",
            AfterApproval::Default => "default",
            AfterApproval::Auto => "auto",
            AfterApproval::Keep => "keep",
        }
    }
}

/// `[agents.<id>.permissions]`: `Tool(pattern)` rules
/// ([`plangate_engine::permission`]) — `deny` wins, then `ask` (always a
/// card), then `allow` — and `relay`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    #[serde(default, with = "plangate_engine::permission::written")]
    pub allow: Vec<plangate_engine::permission::Rule>,
    #[serde(default, with = "plangate_engine::permission::written")]
    pub ask: Vec<plangate_engine::permission::Rule>,
    #[serde(default, with = "plangate_engine::permission::written")]
    pub deny: Vec<plangate_engine::permission::Rule>,
    /// Relay the harness's permission dialogs to the approvers (true, the
    /// default, when the agent has a chat destination). `false`: the
    /// dialog stays at the terminal, and only the rules above apply.
    #[serde(default = "yes")]
    pub relay: bool,
}

fn yes() -> bool {
    true
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        PermissionsConfig { allow: Vec::new(), ask: Vec::new(), deny: Vec::new(), relay: true }
    }
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

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationConfig {
    pub channel: String,
    pub chat: String,
    #[serde(default)]
    pub approvers: Vec<String>,
    #[serde(default)]
    pub style: Style,
    /// Globs on the project name (`["billing-*"]`): only the cards of those
    /// projects come here. Empty (the default): every card of the agents
    /// that list this destination.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    /// `"per_session"`: each agent session gets a forum topic (Telegram) or
    /// a thread (Slack, Discord) of its own; `"off"` (the default).
    #[serde(default, skip_serializing_if = "Threads::is_off")]
    pub threads: Threads,
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
    /// A stopping agent kept on its approved plan: `{ enabled, max_cycles }`
    /// (default on, 3 cycles; [`plangate_engine::keep_going`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_continue: Option<plangate_engine::keep_going::AutoContinue>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    #[serde(default = "default_nudges")]
    pub nudges: Vec<String>,
    #[serde(default = "default_timeout")]
    pub timeout: String,
    /// Destinations that get the card when the last nudge found nobody:
    /// a one-level [`ApprovalsConfig::ladder`] at the last nudge.
    #[serde(default)]
    pub escalate_to: Vec<String>,
    /// The escalation ladder (`[[approvals.ladder]]`): levels reached in
    /// turn while the plan waits. Not together with `escalate_to`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ladder: Vec<super::ladder::LevelConfig>,
    /// How long an open subagent run may go unheard of (no close, no
    /// heartbeat) before it expires and stops blocking approval; or "off".
    #[serde(default = "default_subagent_expiry")]
    pub subagent_expiry: String,
    /// How long a person's claim of a pending plan (the Claim button,
    /// `/plan claim`) holds without a decision; meanwhile the others are
    /// not reminded.
    #[serde(default = "default_claim_timeout")]
    pub claim_timeout: String,
    /// Distinct approvers a plan needs (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<u32>,
    /// The requester of a plan may not approve or edit it (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbid_self: Option<bool>,
    /// Steps added after approval: "ask" (default) or "flag".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendments: Option<AmendmentPolicy>,
    /// A stopping agent kept on its approved plan: `{ enabled, max_cycles }`
    /// (default on, 3 cycles; [`plangate_engine::keep_going`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_continue: Option<plangate_engine::keep_going::AutoContinue>,
}

/// A step namespace shared by the agents it names (`[namespaces.<name>]`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceConfig {
    /// Agent ids (`[agents.<id>]`) that read and merge this namespace.
    pub agents: Vec<String>,
}

pub(super) fn default_subagent_expiry() -> String {
    "30m".into()
}

pub(super) fn default_claim_timeout() -> String {
    "30m".into()
}

pub(super) fn default_nudges() -> Vec<String> {
    vec!["10m".into(), "30m".into(), "60m".into()]
}

pub(super) fn default_timeout() -> String {
    "24h".into()
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            nudges: default_nudges(),
            timeout: default_timeout(),
            escalate_to: Vec::new(),
            ladder: Vec::new(),
            subagent_expiry: default_subagent_expiry(),
            claim_timeout: default_claim_timeout(),
            required: None,
            forbid_self: None,
            amendments: None,
            auto_continue: None,
        }
    }
}

impl ApprovalsConfig {
    pub(super) fn policy(&self, key: &str) -> Result<TimerPolicy, ConfigError> {
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
        let ladder = super::ladder::rungs(&super::ladder::levels(self, key, &nudges_ms, timeout_ms)?);
        let subagent_expiry_ms = match self.subagent_expiry.trim() {
            "off" => None,
            t => match parse(format!("{key}.subagent_expiry"), t)? {
                0 => return Err(invalid(format!("{key}.subagent_expiry"), "must be longer than 0 (or \"off\")")),
                ms => Some(ms),
            },
        };
        let claim_timeout_ms = match parse(format!("{key}.claim_timeout"), &self.claim_timeout)? {
            0 => return Err(invalid(format!("{key}.claim_timeout"), "must be longer than 0")),
            ms => ms,
        };
        Ok(TimerPolicy { nudges_ms, timeout_ms, ladder, subagent_expiry_ms, claim_timeout_ms })
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
    /// The agent's own ladder; set (even to `[]`), it replaces both the
    /// global `ladder` and `escalate_to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<Vec<super::ladder::LevelConfig>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_expiry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_timeout: Option<String>,
    /// Unlike the keys above, these never loosen `[approvals]`: a plan
    /// follows the strictest rule that applies ([`Settings::approval_policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbid_self: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendments: Option<AmendmentPolicy>,
    /// A stopping agent kept on its approved plan: `{ enabled, max_cycles }`
    /// (default on, 3 cycles; [`plangate_engine::keep_going`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_continue: Option<plangate_engine::keep_going::AutoContinue>,
}

impl ApprovalsOverride {
    /// The effective settings of an agent: these keys over `base`'s.
    pub fn over(&self, base: &ApprovalsConfig) -> ApprovalsConfig {
        ApprovalsConfig {
            nudges: self.nudges.clone().unwrap_or_else(|| base.nudges.clone()),
            timeout: self.timeout.clone().unwrap_or_else(|| base.timeout.clone()),
            // An agent's own ladder or escalate_to replaces both of the base:
            // one way of escalating per agent.
            escalate_to: match (&self.escalate_to, &self.ladder) {
                (Some(e), _) => e.clone(),
                (None, Some(_)) => Vec::new(),
                (None, None) => base.escalate_to.clone(),
            },
            ladder: match (&self.ladder, &self.escalate_to) {
                (Some(l), _) => l.clone(),
                (None, Some(_)) => Vec::new(),
                (None, None) => base.ladder.clone(),
            },
            subagent_expiry: self.subagent_expiry.clone().unwrap_or_else(|| base.subagent_expiry.clone()),
            claim_timeout: self.claim_timeout.clone().unwrap_or_else(|| base.claim_timeout.clone()),
            required: self.required.max(base.required),
            forbid_self: self.forbid_self.max(base.forbid_self),
            amendments: strictest_amendments([self.amendments, base.amendments]),
            auto_continue: plangate_engine::keep_going::AutoContinue::strictest(self.auto_continue.into_iter().chain(base.auto_continue)),
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

pub(super) fn retention_off() -> String {
    "off".into()
}
pub(super) fn retention_interval() -> String {
    "1h".into()
}
pub(super) fn retention_batch() -> usize {
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

/// `[audit]`: how often the audit chain's head is signed (a checkpoint)
/// and where each checkpoint goes besides the chain itself. One is also
/// made at shutdown. docs/SECURITY.md says what a checkpoint proves.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// e.g. "1h"; at least one second.
    #[serde(default = "audit_checkpoint_interval")]
    pub checkpoint_interval: String,
    /// A file each checkpoint is appended to, one JSON line each (put it
    /// on another machine's mount, or ship it off): what `plangate audit
    /// verify --checkpoints` checks a cut tail against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_file: Option<PathBuf>,
}

pub(super) fn audit_checkpoint_interval() -> String {
    "1h".into()
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig { checkpoint_interval: audit_checkpoint_interval(), checkpoint_file: None }
    }
}

impl AuditConfig {
    /// The checkpoint interval, checked.
    pub fn interval(&self) -> Result<Duration, ConfigError> {
        let key = "audit.checkpoint_interval";
        match humantime::parse_duration(self.checkpoint_interval.trim()) {
            Ok(d) if d >= Duration::from_secs(1) => Ok(d),
            Ok(_) => Err(invalid(key, "must be at least \"1s\"")),
            Err(e) => Err(invalid(key, format!("expected a duration like \"1h\", got {:?} ({e})", self.checkpoint_interval))),
        }
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

pub(super) fn store_backend() -> String {
    "sled".into()
}
pub(super) fn store_schema() -> String {
    "plangate".into()
}
pub(super) fn store_pool_size() -> u32 {
    16
}
pub(super) fn store_lease_seconds() -> u64 {
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
    pub(super) fn problems(&self) -> Vec<ConfigError> {
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

fn is_empty_policy(p: &plangate_policy::Section) -> bool {
    p.rules.is_empty()
}

/// `[email]`: plan cards by email over SMTP, each approver with an address
/// in `approvers` getting one-use decision links (crates/email).
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    pub smtp_host: String,
    /// Default: 587 for `starttls`, 465 for `tls`, 25 for `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_port: Option<u16>,
    /// `"starttls"` (the default), `"tls"`, or `"none"` (a loopback SMTP
    /// server only: the configuration refuses it for any other host).
    #[serde(default)]
    pub tls: plangate_email::Tls,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_user: Option<String>,
    /// Best set in `PLANGATE__EMAIL__SMTP_PASSWORD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp_password: Option<String>,
    /// The sender: `"plangate <plangate@example.com>"`.
    pub from: String,
    /// Where the links point (`https://plans.example.com`); unset:
    /// `server.public_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// Approver identity (as approver lists write it, `telegram:111`) →
    /// email address.
    #[serde(default)]
    pub approvers: BTreeMap<String, String>,
}

/// `[push]`: Web Push to the plan page's subscribed devices (needs
/// `server.public_url`, where the page and its service worker are).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PushConfig {
    /// The operator's contact, the `sub` of every VAPID JWT: the push
    /// services write to it about trouble (`mailto:ops@example.com`).
    pub subject: String,
    /// Hosts (and their subdomains) a subscription's endpoint may be on;
    /// `http` only for a loopback address. Default: the browsers' push
    /// services ([`plangate_push::subscription::DEFAULT_ENDPOINT_HOSTS`]).
    #[serde(default = "default_endpoint_hosts")]
    pub endpoint_hosts: Vec<String>,
    /// How long a device's subscription lasts before it must subscribe
    /// again (it does whenever the page is opened on it).
    #[serde(default = "default_subscription_days")]
    pub subscription_days: u32,
}

fn default_endpoint_hosts() -> Vec<String> {
    plangate_push::subscription::DEFAULT_ENDPOINT_HOSTS.iter().map(|h| h.to_string()).collect()
}

fn default_subscription_days() -> u32 {
    30
}

impl PushConfig {
    /// A subscription's lifetime in ms.
    pub fn lifetime_ms(&self) -> i64 {
        i64::from(self.subscription_days.max(1)) * 24 * 60 * 60 * 1000
    }
}

/// The sender's settings (password masked, [`plangate_email::Smtp`]'s
/// `Debug`), then the rest.
impl std::fmt::Debug for EmailConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailConfig")
            .field("smtp", &self.smtp())
            .field("public_url", &self.public_url)
            .field("approvers", &self.approvers)
            .finish()
    }
}

impl EmailConfig {
    /// The port: `smtp_port`, else the usual one of the TLS mode.
    pub fn port(&self) -> u16 {
        self.smtp_port.unwrap_or(match self.tls {
            plangate_email::Tls::Starttls => 587,
            plangate_email::Tls::Tls => 465,
            plangate_email::Tls::None => 25,
        })
    }

    /// The sender's settings.
    pub fn smtp(&self) -> plangate_email::Smtp {
        plangate_email::Smtp {
            host: self.smtp_host.clone(),
            port: self.port(),
            tls: self.tls,
            login: self.smtp_user.clone().zip(self.smtp_password.clone()),
            from: self.from.clone(),
        }
    }
}
