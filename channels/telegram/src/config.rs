//! The `[telegram]` section of plangate's configuration.

use plangate_channel::ConfigError;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer};

/// The Bot API base URL Telegram itself serves.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// teloxide's HTTP client gives up after 17 s, so a long poll must ask
/// Telegram to answer well before that.
pub const MAX_POLL_TIMEOUT_SECS: u32 = 15;

/// How updates reach plangate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// `getUpdates` long polling: works behind NAT, needs no public URL.
    #[default]
    Polling,
    /// Telegram POSTs updates to `/telegram/webhook` on plangate's HTTP
    /// server; needs a public HTTPS `webhook_url` and a `webhook_secret`.
    Webhook,
}

/// `[telegram]`. Secrets are [`SecretString`]s: redacted from `Debug`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// The bot token from @BotFather.
    pub token: SecretString,
    /// Bot API base URL; tests point it at a loopback fake.
    #[serde(default = "default_api_url")]
    pub api_url: String,
    #[serde(default)]
    pub transport: Transport,
    /// Webhook mode only (required there): the `secret_token` Telegram sends
    /// back in `X-Telegram-Bot-Api-Secret-Token`; 16–256 of `A-Z a-z 0-9 _ -`.
    #[serde(default)]
    pub webhook_secret: Option<SecretString>,
    /// Webhook mode only (required there): the public HTTPS URL that reaches
    /// plangate's `/telegram/webhook`.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// Long-poll timeout in seconds, 1–15.
    #[serde(default = "default_poll_timeout", deserialize_with = "number_or_string")]
    pub poll_timeout_secs: u32,
    /// Messages per second into one chat (Telegram allows about 1).
    #[serde(default = "default_per_chat", deserialize_with = "number_or_string")]
    pub per_chat_per_second: u32,
    /// Messages per second overall (Telegram allows about 30).
    #[serde(default = "default_global", deserialize_with = "number_or_string")]
    pub global_per_second: u32,
}

fn default_api_url() -> String {
    DEFAULT_API_URL.to_string()
}
fn default_poll_timeout() -> u32 {
    10
}
fn default_per_chat() -> u32 {
    1
}
fn default_global() -> u32 {
    30
}

/// Environment overrides arrive as strings (`PLANGATE__TELEGRAM__POLL_TIMEOUT_SECS=5`).
fn number_or_string<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(u32),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Number(n) => Ok(n),
        Raw::Text(s) => s.trim().parse().map_err(|_| serde::de::Error::custom(format!("expected a whole number, got {s:?}"))),
    }
}

impl TelegramConfig {
    /// A polling configuration with every default and this token.
    pub fn new(token: impl Into<String>) -> TelegramConfig {
        TelegramConfig {
            token: SecretString::new(token.into()),
            api_url: default_api_url(),
            transport: Transport::Polling,
            webhook_secret: None,
            webhook_url: None,
            poll_timeout_secs: default_poll_timeout(),
            per_chat_per_second: default_per_chat(),
            global_per_second: default_global(),
        }
    }

    /// Check every key; the error names the key, what is wrong and what to do.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, problem: &str, fix: &str| Err(ConfigError::new(key, problem, fix));
        if self.token.expose_secret().trim().is_empty() {
            return invalid("telegram.token", "is empty", "set the bot token from @BotFather (PLANGATE__TELEGRAM__TOKEN)");
        }
        if !(self.api_url.starts_with("https://") || self.api_url.starts_with("http://")) {
            return invalid("telegram.api_url", "is not an http(s) URL", "use one such as https://api.telegram.org");
        }
        if !(1..=MAX_POLL_TIMEOUT_SECS).contains(&self.poll_timeout_secs) {
            return invalid("telegram.poll_timeout_secs", "is out of range", "use 1 to 15 seconds (the HTTP client gives up at 17 s)");
        }
        if self.per_chat_per_second == 0 {
            return invalid("telegram.per_chat_per_second", "is 0", "use at least 1");
        }
        if self.global_per_second == 0 {
            return invalid("telegram.global_per_second", "is 0", "use at least 1");
        }
        if self.transport == Transport::Webhook {
            let secret = self.webhook_secret.as_ref().map(|s| s.expose_secret().as_str()).unwrap_or_default();
            let charset_ok = secret.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !(16..=256).contains(&secret.len()) || !charset_ok {
                return invalid(
                    "telegram.webhook_secret",
                    "is missing, too short or too long, or has characters Telegram refuses",
                    "use 16 to 256 characters of A-Z a-z 0-9 _ - (required with transport = \"webhook\": it is how plangate knows a request comes from Telegram)",
                );
            }
            match self.webhook_url.as_deref() {
                Some(url) if url.starts_with("https://") && url.len() > "https://".len() => {}
                _ => {
                    return invalid(
                        "telegram.webhook_url",
                        "is missing or not an https:// URL",
                        "set the public https:// URL of plangate's /telegram/webhook (required with transport = \"webhook\")",
                    )
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_json(v: serde_json::Value) -> Result<TelegramConfig, serde_json::Error> {
        serde_json::from_value(v)
    }

    fn secret(text: &str) -> SecretString {
        SecretString::new(text.to_string())
    }

    #[test]
    fn defaults_and_validation() {
        let c = from_json(serde_json::json!({"token": "t"})).unwrap();
        assert_eq!(c.api_url, DEFAULT_API_URL);
        assert_eq!((c.transport, c.poll_timeout_secs, c.per_chat_per_second, c.global_per_second), (Transport::Polling, 10, 1, 30));
        c.validate().unwrap();

        let c = from_json(serde_json::json!({"token": "t", "poll_timeout_secs": "5"})).unwrap();
        assert_eq!(c.poll_timeout_secs, 5);
        assert!(from_json(serde_json::json!({"token": "t", "pol_timeout": 5})).is_err(), "unknown keys are refused");

        let mut c = TelegramConfig::new("t");
        c.poll_timeout_secs = 17;
        assert!(matches!(c.validate(), Err(ConfigError { key: "telegram.poll_timeout_secs", .. })));
        let shown = c.validate().unwrap_err().to_string();
        assert_eq!(shown, "`telegram.poll_timeout_secs`: is out of range; use 1 to 15 seconds (the HTTP client gives up at 17 s)");
    }

    #[test]
    fn webhook_requires_a_strong_secret_and_https_url() {
        let mut c = TelegramConfig::new("t");
        c.transport = Transport::Webhook;
        c.webhook_url = Some("https://example.org/telegram/webhook".into());
        assert!(matches!(c.validate(), Err(ConfigError { key: "telegram.webhook_secret", .. })));
        c.webhook_secret = Some(secret("short"));
        assert!(matches!(c.validate(), Err(ConfigError { key: "telegram.webhook_secret", .. })));
        c.webhook_secret = Some(secret("has spaces in it, not allowed"));
        assert!(c.validate().is_err());
        c.webhook_secret = Some(secret("0123456789abcdef_-XYZ"));
        c.validate().unwrap();
        c.webhook_url = Some("http://example.org/hook".into());
        assert!(matches!(c.validate(), Err(ConfigError { key: "telegram.webhook_url", .. })));
    }

    #[test]
    fn debug_hides_secrets() {
        let mut c = TelegramConfig::new("123:SECRET-TOKEN");
        c.webhook_secret = Some(secret("very-secret-value-123"));
        let shown = format!("{c:?}");
        assert!(!shown.contains("SECRET-TOKEN") && !shown.contains("very-secret"), "{shown}");
    }
}
