//! Secrets in the configuration: masked wherever settings are shown, and
//! refused when they are the shipped development values or weak on a
//! non-loopback address.

use super::*;

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

/// Whether a setting named `key` holds a secret (tokens, secrets, keys).
pub(super) fn is_secret_key(key: &str) -> bool {
    key.contains("token") || key.contains("secret") || key.contains("password") || key.ends_with("_key")
}

/// Every string under a secret key of `value`, with its key path
/// (`agents.claude.token`, `slack.signing_secret`).
pub(super) fn secrets(value: &serde_json::Value, path: &str, secret: bool, out: &mut Vec<(String, String)>) {
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
pub(super) enum Shipped {
    /// `config/default.toml` and `config/quickstart.toml`: public
    /// development values, fine on a loopback server nothing else can reach.
    Default,
    /// `config/example.toml`: placeholders, never valid.
    Example,
}

/// The secret values of the files in `config/`, read from the embedded files.
pub(super) fn shipped_secrets() -> Result<&'static [(String, Shipped)], ConfigError> {
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
pub(super) fn public_endpoint(raw: &Config) -> Option<&'static str> {
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
pub(super) fn weakness(value: &str) -> Option<String> {
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
pub(super) fn check_secrets(raw: &Config, bind: &SocketAddr) -> Result<(), ConfigError> {
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

pub(super) fn mask(value: &mut serde_json::Value) {
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
