//! The checks `Settings::validate` runs that need more than a key's own
//! type: URLs, webhooks, channel sections, reachable quorums.

use super::*;

/// The shortest webhook secret accepted: an HMAC key a receiver shares with
/// plangate, as long as the shortest platform secret plangate takes.
pub const MIN_WEBHOOK_SECRET_CHARS: usize = 16;

/// Refuse a webhook URL that is not a plain http(s) URL of a host: plangate
/// would not know how to POST to it, or would leak credentials into logs.
pub(super) fn check_webhook(id: &str, hook: &WebhookConfig, tokens: &[(&str, String)]) -> Result<(), ConfigError> {
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
pub(super) fn check_postgres_url(url: &str) -> Result<(), String> {
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

/// `server.public_url` goes into links on cards and in private messages:
/// an absolute http(s) URL without query, fragment or characters that chat
/// markup would read.
pub(super) fn check_public_url(url: &str) -> Result<(), ConfigError> {
    check_url_at("server.public_url", url)
}

/// [`check_public_url`] of the URL at `key`.
fn check_url_at(key: &str, url: &str) -> Result<(), ConfigError> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split('/').next().unwrap_or_default()).unwrap_or_default();
    let bad = url.chars().find(|c| c.is_whitespace() || c.is_control() || "<>|\"'`?#&{}\\^[]".contains(*c));
    match (rest, bad) {
        (None, _) => Err(invalid(key, format!("expected an http:// or https:// URL, got {url:?}"))),
        (_, Some(c)) => Err(invalid(key, format!("{url:?} contains {c:?}; give a plain URL like \"https://plans.example.com\""))),
        _ if host.is_empty() => Err(invalid(key, format!("{url:?} has no host"))),
        _ => Ok(()),
    }
}

/// Check each configured channel section with its adapter's own config type
/// and rules (unknown keys, missing tokens, bad transports), as `serve`
/// would when it starts the adapter; one problem per section.
pub(super) fn check_channel_sections(raw: &Config) -> Vec<ConfigError> {
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
pub(super) fn approval_policies(
    raw: &Config,
    escalations: &BTreeMap<String, Vec<String>>,
) -> Result<BTreeMap<String, ApprovalPolicy>, ConfigError> {
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
        let mut continues = Vec::new();
        let global = &raw.approvals;
        continues.extend(global.auto_continue);
        continues.extend(own.and_then(|a| a.auto_continue));
        continues.extend(destinations.iter().filter_map(|(_, d)| d.approvals.as_ref().and_then(|a| a.auto_continue)));
        policy.auto_continue = plangate_engine::keep_going::AutoContinue::strictest(continues).unwrap_or_default();
        let mut consider = |key: String, required: Option<u32>, forbid_self: Option<bool>, amend: Option<AmendmentPolicy>| {
            if let Some(n) = required.filter(|n| *n > policy.required) {
                policy.required = n;
                strictest = key;
            }
            policy.forbid_self |= forbid_self.unwrap_or(false);
            amendments.push(amend);
        };
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
pub(super) fn strictest_amendments(keys: impl IntoIterator<Item = Option<AmendmentPolicy>>) -> Option<AmendmentPolicy> {
    keys.into_iter().flatten().min()
}

/// Every problem of `[email]`: a sender and addresses that parse, a URL for
/// the links, a login given whole, and no plain-text SMTP off loopback.
pub(super) fn check_email(email: &EmailConfig, server: &ServerConfig) -> Vec<ConfigError> {
    let mut problems = Vec::new();
    if email.smtp_host.trim().is_empty() {
        problems.push(invalid("email.smtp_host", "give the SMTP server's host name"));
    }
    let loopback = email.smtp_host == "localhost" || email.smtp_host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if email.tls == plangate_email::Tls::None && !loopback {
        problems.push(invalid(
            "email.tls",
            format!("\"none\" sends approval links in plain text and is only for an SMTP server on loopback, not {:?}; use \"starttls\" or \"tls\"", email.smtp_host),
        ));
    }
    if let Err(why) = plangate_email::smtp::check_address(&email.from) {
        problems
            .push(invalid("email.from", format!("{:?} is not an address ({why}); write \"plangate <plangate@example.com>\"", email.from)));
    }
    if email.smtp_user.is_some() != email.smtp_password.is_some() {
        problems.push(invalid("email.smtp_user", "give both smtp_user and smtp_password (PLANGATE__EMAIL__SMTP_PASSWORD), or neither"));
    }
    match (&email.public_url, &server.public_url) {
        (Some(url), _) => problems.extend(check_url_at("email.public_url", url).err()),
        (None, Some(_)) => {}
        (None, None) => {
            problems.push(invalid("email.public_url", "the links need this server's public URL; set email.public_url or server.public_url"))
        }
    }
    for (approver, address) in &email.approvers {
        let key = format!("email.approvers.{approver:?}");
        if !approver.split_once(':').is_some_and(|(ch, id)| !ch.is_empty() && !id.is_empty()) {
            problems.push(invalid(&key, "name an approver as approver lists do (\"telegram:111\")"));
        }
        if let Err(why) = plangate_email::smtp::check_address(address) {
            problems.push(invalid(&key, format!("{address:?} is not an address ({why})")));
        }
    }
    problems
}

/// Every problem of `[push]`: the page it needs, a contact the push
/// services accept, endpoint hosts that are host names.
pub(super) fn check_push(push: &PushConfig, server: &ServerConfig) -> Vec<ConfigError> {
    let mut problems = Vec::new();
    if server.public_url.is_none() {
        problems.push(invalid("push", "push needs the plan page: set server.public_url"));
    }
    if !(push.subject.starts_with("mailto:") || push.subject.starts_with("https://")) {
        problems.push(invalid(
            "push.subject",
            format!("{:?} is no contact; write \"mailto:ops@example.com\" or an https:// URL", push.subject),
        ));
    }
    if push.endpoint_hosts.is_empty() {
        problems.push(invalid("push.endpoint_hosts", "list at least one push service host (omit the key for the browsers' own)"));
    }
    for host in &push.endpoint_hosts {
        if host.trim().is_empty() || host.contains(['/', ':', '@', ' ']) {
            problems.push(invalid("push.endpoint_hosts", format!("{host:?} is not a host name (write \"fcm.googleapis.com\")")));
        }
    }
    problems
}
