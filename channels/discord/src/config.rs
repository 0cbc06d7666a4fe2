//! The `[discord]` settings and their validation.

use crate::endpoint::Verifier;
use plangate_channel::ConfigError;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer};
use serenity::model::id::{ApplicationId, GuildId};
use std::time::Duration;

/// How interactions reach plangate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// serenity's gateway client; needs no public URL.
    #[default]
    Gateway,
    /// The Ed25519-signed interactions endpoint at `/discord/interactions`.
    Http,
}

/// `[discord]` in plangate's config. The token is a [`SecretString`]:
/// redacted from `Debug`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// Bot token (without or with the `Bot ` prefix). Secret: never logged.
    pub bot_token: SecretString,
    /// The application (client) id; a snowflake, as text or number.
    #[serde(deserialize_with = "snowflake_text")]
    pub application_id: String,
    /// Hex Ed25519 public key of the application; required for `transport = "http"`.
    #[serde(default)]
    pub application_public_key: Option<String>,
    /// REST base; `/api/v10` is appended. Tests point it at a loopback fake.
    #[serde(default = "default_api_url")]
    pub api_url: String,
    #[serde(default)]
    pub transport: Transport,
    /// Register `/plan` in this guild (instant) instead of globally, and
    /// refuse events from other guilds (the server does, via `expected_team`).
    #[serde(default, deserialize_with = "optional_snowflake_text")]
    pub guild_id: Option<String>,
    /// Messages per channel per window (Discord allows 5 per 5 s).
    #[serde(default = "default_per_channel")]
    pub per_channel: usize,
    #[serde(default = "default_per_channel_window_secs")]
    pub per_channel_window_secs: u64,
    /// How far `X-Signature-Timestamp` may be from now (HTTP transport).
    #[serde(default = "default_interaction_window_secs")]
    pub interaction_window_secs: u64,
    /// How long the handler may take before the interaction is deferred
    /// (Discord wants an answer within 3 s).
    #[serde(default = "default_defer_after_ms")]
    pub defer_after_ms: u64,
    /// Create/overwrite the `/plan` command at start.
    #[serde(default = "default_true")]
    pub register_commands: bool,
}

impl DiscordConfig {
    /// A config with the defaults for everything but the required keys.
    pub fn new(bot_token: impl Into<String>, application_id: impl Into<String>) -> DiscordConfig {
        DiscordConfig {
            bot_token: SecretString::new(bot_token.into()),
            application_id: application_id.into(),
            application_public_key: None,
            api_url: default_api_url(),
            transport: Transport::Gateway,
            guild_id: None,
            per_channel: default_per_channel(),
            per_channel_window_secs: default_per_channel_window_secs(),
            interaction_window_secs: default_interaction_window_secs(),
            defer_after_ms: default_defer_after_ms(),
            register_commands: true,
        }
    }

    /// Check every key without starting anything (`plangate config check`);
    /// the error names the key, what is wrong and what to do.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.clone().validate().map(|_| ())
    }

    pub(crate) fn validate(self) -> Result<Settings, ConfigError> {
        let token = self.bot_token.expose_secret().trim();
        let token = token.strip_prefix("Bot ").unwrap_or(token).trim();
        if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError::new(
                "discord.bot_token",
                "is empty or has spaces in it",
                "set the bot token from the Discord developer portal (PLANGATE__DISCORD__BOT_TOKEN)",
            ));
        }
        let application_id = parse_snowflake(&self.application_id).map(ApplicationId::new).ok_or_else(|| {
            ConfigError::new("discord.application_id", "is not a Discord id", "set the numeric application id from the developer portal")
        })?;
        let guild_id =
            match self.guild_id.as_deref().map(str::trim).filter(|g| !g.is_empty()) {
                None => None,
                Some(g) => Some(parse_snowflake(g).map(GuildId::new).ok_or_else(|| {
                    ConfigError::new("discord.guild_id", "is not a Discord id", "set the numeric guild id, or leave it out")
                })?),
            };
        let public_key = match self.application_public_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            None => None,
            Some(k) => Some(Verifier::new(k).map_err(|m| {
                ConfigError::new("discord.application_public_key", m, "copy the application's public key (hex) from the developer portal")
            })?),
        };
        if self.transport == Transport::Http && public_key.is_none() {
            return Err(ConfigError::new(
                "discord.application_public_key",
                "is missing",
                "set it when transport = \"http\" (the hex public key from the developer portal)",
            ));
        }
        let api_url = self.api_url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&api_url)
            .map_err(|e| ConfigError::new("discord.api_url", format!("is not a URL ({e})"), "use a base like https://discord.com"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() || parsed.path() != "/" || parsed.query().is_some() {
            return Err(ConfigError::new(
                "discord.api_url",
                "is not a bare http(s) base",
                "use a base like https://discord.com (no path; /api/v10 is appended)",
            ));
        }
        if self.per_channel == 0 {
            return Err(ConfigError::new("discord.per_channel", "is 0", "use at least 1"));
        }
        if self.per_channel_window_secs == 0 {
            return Err(ConfigError::new("discord.per_channel_window_secs", "is 0", "use at least 1"));
        }
        if self.interaction_window_secs == 0 {
            return Err(ConfigError::new("discord.interaction_window_secs", "is 0", "use at least 1"));
        }
        if !(1..=2900).contains(&self.defer_after_ms) {
            return Err(ConfigError::new(
                "discord.defer_after_ms",
                "is out of range",
                "use 1 to 2900 (Discord wants an answer within 3 s)",
            ));
        }
        Ok(Settings {
            token: SecretString::new(format!("Bot {token}")),
            application_id,
            public_key,
            api_url,
            transport: self.transport,
            guild_id,
            per_channel: (self.per_channel, Duration::from_secs(self.per_channel_window_secs)),
            interaction_window_secs: self.interaction_window_secs,
            defer_after: Duration::from_millis(self.defer_after_ms),
            register_commands: self.register_commands,
        })
    }
}

/// Validated settings.
#[derive(Clone)]
pub(crate) struct Settings {
    /// `Bot <token>`
    pub token: SecretString,
    pub application_id: ApplicationId,
    pub public_key: Option<Verifier>,
    /// Without trailing slash.
    pub api_url: String,
    pub transport: Transport,
    pub guild_id: Option<GuildId>,
    pub per_channel: (usize, Duration),
    pub interaction_window_secs: u64,
    pub defer_after: Duration,
    pub register_commands: bool,
}

fn parse_snowflake(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|n| *n != 0)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TextOrNumber {
    Text(String),
    Number(u64),
}

impl TextOrNumber {
    fn into_string(self) -> String {
        match self {
            TextOrNumber::Text(s) => s,
            TextOrNumber::Number(n) => n.to_string(),
        }
    }
}

fn snowflake_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    TextOrNumber::deserialize(d).map(TextOrNumber::into_string)
}

fn optional_snowflake_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<TextOrNumber>::deserialize(d).map(|v| v.map(TextOrNumber::into_string))
}

fn default_api_url() -> String {
    "https://discord.com".to_string()
}
fn default_per_channel() -> usize {
    5
}
fn default_per_channel_window_secs() -> u64 {
    5
}
fn default_interaction_window_secs() -> u64 {
    300
}
fn default_defer_after_ms() -> u64 {
    2000
}
fn default_true() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_numbers() {
        let c: DiscordConfig =
            serde_json::from_value(serde_json::json!({"bot_token": "t", "application_id": 42, "guild_id": "7"})).unwrap();
        assert_eq!(c.api_url, "https://discord.com");
        assert_eq!(c.transport, Transport::Gateway);
        assert_eq!((c.per_channel, c.per_channel_window_secs, c.interaction_window_secs), (5, 5, 300));
        let s = c.validate().unwrap();
        assert_eq!(s.application_id.get(), 42);
        assert_eq!(s.guild_id.map(|g| g.get()), Some(7));
        assert_eq!(s.token.expose_secret(), "Bot t");
    }

    #[test]
    fn bad_settings_name_their_key() {
        let bad = |patch: serde_json::Value| {
            let mut v = serde_json::json!({"bot_token": "t", "application_id": "42"});
            for (k, val) in patch.as_object().unwrap() {
                v[k] = val.clone();
            }
            let c: DiscordConfig = serde_json::from_value(v).unwrap();
            c.validate().err().expect("a config error").key
        };
        assert_eq!(bad(serde_json::json!({"application_id": "abc"})), "discord.application_id");
        assert_eq!(bad(serde_json::json!({"transport": "http"})), "discord.application_public_key");
        assert_eq!(bad(serde_json::json!({"application_public_key": "zz"})), "discord.application_public_key");
        assert_eq!(bad(serde_json::json!({"api_url": "https://discord.com/api/v10"})), "discord.api_url");
        assert_eq!(bad(serde_json::json!({"per_channel": 0})), "discord.per_channel");
        assert_eq!(bad(serde_json::json!({"bot_token": " "})), "discord.bot_token");
        let unknown: Result<DiscordConfig, _> =
            serde_json::from_value(serde_json::json!({"bot_token": "t", "application_id": "1", "tokn": "x"}));
        assert!(unknown.is_err());
    }

    #[test]
    fn debug_hides_the_token() {
        let c = DiscordConfig::new("super-secret-token", "1");
        assert!(!format!("{c:?}").contains("super-secret"));
        let shown = DiscordConfig::new(" ", "1").validate().err().unwrap().to_string();
        assert!(shown.starts_with("`discord.bot_token`: is empty or has spaces in it; set the bot token"), "{shown}");
    }
}
