//! The `[slack]` section of plangate's configuration.

use plangate_channel::ConfigError;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use url::Url;

/// How Slack delivers clicks, modal submissions and slash commands to us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// Socket Mode: we open a websocket to Slack with the app-level token.
    /// Needs no public URL, which is why it is the default.
    #[default]
    Socket,
    /// Slack POSTs signed requests to `/slack/interactivity` and
    /// `/slack/commands` on plangate's own HTTP server.
    Http,
}

/// `[slack]`: the keys documented in config/example.toml plus the adapter's limits. Secrets are
/// [`SecretString`]s: redacted from `Debug`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// Bot token (`xoxb-…`): every Web API call.
    pub bot_token: SecretString,
    /// App-level token (`xapp-…`) with `connections:write`: Socket Mode only.
    #[serde(default)]
    pub app_token: Option<SecretString>,
    /// Signing secret of the Slack app: HTTP mode only.
    #[serde(default)]
    pub signing_secret: Option<SecretString>,
    /// Web API base URL; tests point it at a loopback fake (http or https).
    #[serde(default = "default_api_url")]
    pub api_url: String,
    #[serde(default)]
    pub transport: Transport,
    /// The workspace (`T…`) this adapter serves: the server refuses (and
    /// audits) clicks, modal submissions and commands from any other team.
    /// Unset: the bot's own workspace, learned from `auth.test` at start (the
    /// adapter does not start when that fails; see [`crate::start`]).
    #[serde(default)]
    pub team_id: Option<String>,
    /// Other workspaces whose users may also decide (Slack Connect partners,
    /// other installs of a multi-workspace app), on top of the home one above.
    /// Empty (the default): nobody outside the home workspace. The approver
    /// allowlists still apply to every user.
    #[serde(default)]
    pub allow_other_teams: Vec<String>,
    /// Messages per second into one channel (Slack allows about 1).
    #[serde(default = "default_per_channel")]
    pub per_channel_per_second: u32,
    /// Messages per second overall.
    #[serde(default = "default_global")]
    pub global_per_second: u32,
}

pub const DEFAULT_API_URL: &str = "https://slack.com/api";

fn default_api_url() -> String {
    DEFAULT_API_URL.to_string()
}

fn default_per_channel() -> u32 {
    1
}

fn default_global() -> u32 {
    20
}

impl SlackConfig {
    /// A config with every default, for the given bot token.
    pub fn new(bot_token: impl Into<String>) -> SlackConfig {
        SlackConfig {
            bot_token: SecretString::new(bot_token.into()),
            app_token: None,
            signing_secret: None,
            api_url: default_api_url(),
            transport: Transport::default(),
            team_id: None,
            allow_other_teams: Vec::new(),
            per_channel_per_second: default_per_channel(),
            global_per_second: default_global(),
        }
    }

    /// Check every key the chosen transport needs, naming the key, what is
    /// wrong and what to do, so a bad deployment fails at start and not at
    /// the first click.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key, problem: &str, fix: &str| Err(ConfigError::new(key, problem, fix));
        if self.bot_token.expose_secret().trim().is_empty() {
            return bad("slack.bot_token", "is empty", "set the bot token (xoxb-…) (PLANGATE__SLACK__BOT_TOKEN)");
        }
        match Url::parse(&self.api_url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {}
            _ => return bad("slack.api_url", "is not an http(s) URL", "use one such as https://slack.com/api"),
        }
        match self.transport {
            Transport::Socket if secret_text(&self.app_token).is_none() => {
                return bad("slack.app_token", "is missing", "set an app-level token (xapp-…) for transport = \"socket\"");
            }
            Transport::Http if secret_text(&self.signing_secret).is_none() => {
                return bad("slack.signing_secret", "is missing", "set the app's signing secret for transport = \"http\"");
            }
            _ => {}
        }
        if self.allow_other_teams.iter().any(|t| !is_team_id(t)) {
            return bad(
                "slack.allow_other_teams",
                "has an entry that is not a workspace id",
                "list workspace ids such as [\"T0123456789\"]",
            );
        }
        if self.per_channel_per_second == 0 {
            return bad("slack.per_channel_per_second", "is 0", "use a whole number of messages per second, at least 1");
        }
        if self.global_per_second == 0 {
            return bad("slack.global_per_second", "is 0", "use a whole number of messages per second, at least 1");
        }
        Ok(())
    }

    /// The configured team, ignoring an empty value (an unset environment override).
    pub fn expected_team(&self) -> Option<String> {
        non_empty(&self.team_id).map(str::to_string)
    }

    /// Every workspace the configuration names as allowed: `team_id` (when
    /// set) and `allow_other_teams`. The server registers these (and the
    /// workspace the adapter learned, [`plangate_channel::Adapter::expected_team`])
    /// with its foreign-team check.
    pub fn allowed_teams(&self) -> Vec<String> {
        let mut teams: Vec<String> = self.expected_team().into_iter().collect();
        for team in &self.allow_other_teams {
            let team = team.trim().to_string();
            if !teams.contains(&team) {
                teams.push(team);
            }
        }
        teams
    }
}

/// A Slack workspace (`T…`) or Enterprise Grid organization (`E…`) id.
fn is_team_id(id: &str) -> bool {
    let id = id.trim();
    id.len() >= 2 && id.len() <= 32 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A secret's text, trimmed; `None` when unset or blank (an unset environment override).
pub(crate) fn secret_text(value: &Option<SecretString>) -> Option<&str> {
    value.as_ref().map(|v| v.expose_secret().trim()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(text: &str) -> SecretString {
        SecretString::new(text.to_string())
    }

    #[test]
    fn defaults_and_validation() {
        let cfg: SlackConfig = serde_json::from_value(serde_json::json!({"bot_token": "xoxb-1", "app_token": "xapp-1"})).unwrap();
        assert_eq!(cfg.api_url, DEFAULT_API_URL);
        assert_eq!(cfg.transport, Transport::Socket);
        assert_eq!((cfg.per_channel_per_second, cfg.global_per_second), (1, 20));
        assert!(cfg.validate().is_ok());

        let mut http = cfg.clone();
        http.transport = Transport::Http;
        assert!(matches!(http.validate(), Err(ConfigError { key: "slack.signing_secret", .. })));
        let mut no_app = cfg.clone();
        no_app.app_token = Some(secret(" "));
        assert!(matches!(no_app.validate(), Err(ConfigError { key: "slack.app_token", .. })));
        let mut bad_url = cfg.clone();
        bad_url.api_url = "ftp://x".into();
        assert!(matches!(bad_url.validate(), Err(ConfigError { key: "slack.api_url", .. })));
        assert_eq!(
            bad_url.validate().unwrap_err().to_string(),
            "`slack.api_url`: is not an http(s) URL; use one such as https://slack.com/api"
        );
        let unknown = serde_json::from_value::<SlackConfig>(serde_json::json!({"bot_token": "x", "tokn": "y"}));
        assert!(unknown.is_err());
        let mut bad_team = cfg.clone();
        bad_team.allow_other_teams = vec!["T1".into(), "T 2".into()];
        assert!(matches!(bad_team.validate(), Err(ConfigError { key: "slack.allow_other_teams", .. })));
        bad_team.allow_other_teams = vec![String::new()];
        assert!(bad_team.validate().is_err());
    }

    #[test]
    fn allowed_teams_are_the_home_team_and_the_listed_ones() {
        let mut cfg = SlackConfig::new("xoxb-1");
        assert!(cfg.allowed_teams().is_empty(), "unset: learned from auth.test at start");
        cfg.team_id = Some(" ".into());
        assert!(cfg.allowed_teams().is_empty(), "an empty override is unset");
        cfg.team_id = Some("T1".into());
        cfg.allow_other_teams = vec!["T2".into(), "T1".into(), " E3 ".into()];
        assert!(cfg.validate().is_err(), "no app token");
        assert_eq!(cfg.allowed_teams(), ["T1", "T2", "E3"]);
        let parsed: SlackConfig = serde_json::from_value(serde_json::json!({"bot_token": "x", "allow_other_teams": ["T2"]})).unwrap();
        assert_eq!((parsed.expected_team(), parsed.allowed_teams()), (None, vec!["T2".to_string()]));
    }

    #[test]
    fn debug_hides_secrets() {
        let mut cfg = SlackConfig::new("xoxb-secret-bot");
        cfg.app_token = Some(secret("xapp-secret-app"));
        cfg.signing_secret = Some(secret("signing-secret-value"));
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("secret-bot") && !shown.contains("secret-app") && !shown.contains("signing-secret-value"), "{shown}");
        // Set secrets show as set (and redacted), unset ones as unset.
        assert_eq!(shown.matches("REDACTED").count(), 3, "{shown}");
        cfg.app_token = None;
        assert!(format!("{cfg:?}").contains("app_token: None"));
    }
}
