//! `plangate doctor`: a configuration checked against the live platform
//! APIs and this machine, run by the operator before (or instead of) a
//! first start. Each check is one line: ✓ or ✗, what was checked, and on
//! failure what to do (which setting, which permission, which command).
//!
//! * Chat platforms ([`run`]), each token first (nothing else can be checked
//!   with a token that does not work), then each destination chat (the bot
//!   sees it and can post there) and each approver (a member of it):
//!   [`telegram`], [`slack`], [`discord`]. Every request goes to the
//!   section's `api_url`, so the checks run against the loopback fakes in
//!   tests.
//! * `server.public_url` ([`public_url`]): its `/healthz` answers from this
//!   machine as plangate's does, and over TLS unless the host is loopback.
//! * With `[store] backend = "postgres"`, the database ([`store`]): plangate
//!   connects once the way `serve` does (password included) and reads how far
//!   the schema is migrated (`plangate_store::probe_postgres`), so a wrong
//!   host, a wrong password, a database or role that does not exist, a
//!   `pg_hba.conf` that refuses this machine or a schema migrated by a newer
//!   plangate is named here rather than at the first start. Nothing is created.
//! * The agent hooks installed for this project and user ([`hooks`]): Claude
//!   Code's and Codex's, present, naming a binary that exists, and for Codex
//!   trusted.
//! * The data dir doctor resolved ([`data_dir`]): absolute, with where its
//!   value came from, and whether it exists.
//! * The running server ([`server`]): it answers and is ready, accepts
//!   `PLANGATE_TOKEN`, and (with the operator token) its destinations,
//!   paired ones included, have approvers and every agent has one; those
//!   chats are then checked against their platform too.
//!
//! [`command`] runs them all, in that order of dependence.

mod command;
mod data_dir;
mod discord;
mod hooks;
mod server;
mod slack;
mod telegram;

pub use command::command;

use crate::config::{Config, DestinationConfig, Settings};
use serde_json::Value;
use std::time::Duration;

/// One check's outcome.
pub struct Check {
    pub ok: bool,
    pub what: String,
    pub detail: String,
    /// Not a failure, and not a ✓ either (⚠): something doctor could not
    /// check, or that is likely not what was meant.
    pub caution: bool,
}

impl Check {
    fn pass(what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { ok: true, what: what.into(), detail: detail.into(), caution: false }
    }

    fn fail(what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { ok: false, what: what.into(), detail: detail.into(), caution: false }
    }

    /// Printed ⚠, and does not fail the run.
    fn caution(what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { ok: true, what: what.into(), detail: detail.into(), caution: true }
    }

    /// Works, but not as configured (a fallback plangate takes on its own):
    /// passes, with the warning in its words.
    fn warn(what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { ok: true, what: what.into(), detail: format!("⚠ {}", detail.into()), caution: false }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mark = match (self.ok, self.caution) {
            (false, _) => "✗",
            (true, true) => "⚠",
            (true, false) => "✓",
        };
        write!(f, "{mark} {}: {}", self.what, self.detail)
    }
}

fn text(section: &Value, key: &str) -> String {
    section.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The section's `api_url` (without a trailing `/`), or the platform's own.
fn api_url(section: &Value, default: &str) -> String {
    Some(text(section, "api_url")).filter(|u| !u.is_empty()).unwrap_or_else(|| default.into()).trim_end_matches('/').to_string()
}

/// The destinations on `channel`, in name order.
fn destinations<'a>(raw: &'a Config, channel: &'a str) -> impl Iterator<Item = (&'a String, &'a DestinationConfig)> {
    raw.destinations.iter().filter(move |(_, d)| d.channel == channel)
}

/// Run every chat platform check of `settings`.
pub async fn run(settings: &Settings) -> Vec<Check> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(15)).build().unwrap_or_default();
    let raw = &settings.raw;
    let mut checks = Vec::new();
    if let Some(section) = &raw.telegram {
        telegram::check(&http, raw, section, &mut checks).await;
    }
    if let Some(section) = &raw.slack {
        slack::check(&http, raw, section, &mut checks).await;
    }
    if let Some(section) = &raw.discord {
        discord::check(&http, raw, section, &mut checks).await;
    }
    checks
}

/// The agent hooks of this project (`project_dir`) and user: Claude Code's,
/// then Codex's. Nothing when none is installed.
pub fn hooks(project_dir: &std::path::Path) -> Vec<Check> {
    let mut checks = hooks::claude(project_dir);
    checks.extend(hooks::codex(project_dir));
    checks
}

/// `server.public_url`: `None` when unset (no web page). Cards link to it
/// and sign-in links are sent to it, so it must answer, and over TLS: a
/// plain `http://` URL on a host other than this machine's loopback would
/// carry sign-in links and session cookies in clear, so it fails without
/// being fetched. Otherwise `GET <public_url>/healthz`, with a short
/// timeout, must answer as plangate's does (`{"status": …}`).
pub async fn public_url(settings: &Settings) -> Option<Check> {
    let url = settings.raw.server.public_url.as_deref()?.trim_end_matches('/').to_string();
    let what = "server.public_url";
    let parsed = match reqwest::Url::parse(&url) {
        Ok(parsed) => parsed,
        Err(e) => return Some(Check::fail(what, format!("{url}: {e}; give a URL like \"https://plans.example.com\""))),
    };
    let host = parsed.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if parsed.scheme() != "https" && !loopback {
        return Some(Check::fail(
            what,
            format!(
                "{url} is plain http on a host other than loopback: sign-in links and session cookies would cross the network in clear; \
                 serve plangate behind a TLS proxy and set server.public_url = \"https://…\""
            ),
        ));
    }
    let http = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap_or_default();
    let health = format!("{url}/healthz");
    let bind = &settings.raw.server.bind;
    Some(match http.get(&health).send().await {
        Err(e) => Check::fail(
            what,
            format!(
                "{health} does not answer ({}); start plangate (`plangate serve`), and check that this name resolves here and that the proxy forwards to server.bind ({bind})",
                e.without_url()
            ),
        ),
        Ok(resp) => {
            let status = resp.status();
            let body: Value = resp.json().await.unwrap_or_default();
            match body["status"].as_str() {
                Some(state) => Check::pass(what, format!("{health} answers ({status}, {state})")),
                None => Check::fail(
                    what,
                    format!("{health} answers {status}, but not as plangate does; point the proxy for this name at server.bind ({bind})"),
                ),
            }
        }
    })
}

/// The store check: `None` on sled (nothing to reach), else whether the
/// configured PostgreSQL answers and accepts the user and database.
pub async fn store(settings: &Settings) -> Option<Check> {
    let config = &settings.raw.store;
    if !config.is_postgres() {
        return None;
    }
    let (url, schema) = (config.postgres_url.clone().unwrap_or_default(), config.postgres_schema.clone());
    let what = "store.postgres_url".to_string();
    let probed = tokio::task::spawn_blocking(move || plangate_store::probe_postgres(url.trim(), &schema)).await;
    Some(match probed {
        Ok(Ok(found)) => Check::pass(what, found),
        Ok(Err(e)) => Check::fail(
            what,
            format!("{e}; is PostgreSQL running there, does the role exist with this password, and does pg_hba.conf allow this host?"),
        ),
        Err(e) => Check::fail(what, format!("the probe failed: {e}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str) -> Settings {
        let toml = format!(
            "[server]\nbind = \"127.0.0.1:0\"\noperator_token = \"doctor-test-operator-token-0123\"\ndata_dir = \"./data\"\n\n\
             [store]\nbackend = \"postgres\"\npostgres_url = \"{url}\"\npostgres_schema = \"t_doctor_probe\"\n"
        );
        Settings::from_toml(&toml).expect("a valid config")
    }

    /// A port nobody listens on: named, with what to look at.
    #[tokio::test]
    async fn an_unreachable_postgres_is_named() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let check = store(&settings(&format!("postgres://u@127.0.0.1:{free}/d"))).await.expect("a store check");
        assert!(!check.ok);
        assert!(check.detail.contains(&format!("127.0.0.1:{free}")) && check.detail.contains("is PostgreSQL running"), "{}", check.detail);
    }

    /// The PostgreSQL the tests run against (trust auth) lets the probe in;
    /// a database that does not exist there is named. Without it the test
    /// skips loudly (a failure under `PLANGATE_REQUIRE_ALL`).
    #[tokio::test]
    async fn the_test_postgres_accepts_the_probe() {
        let Some(url) = plangate_testkit::pg::url_or_skip().await else { return };
        let check = store(&settings(&url)).await.expect("a store check");
        assert!(check.ok, "the probe of {url}: {}", check.detail);
        assert!(check.detail.contains("not created yet"), "{}", check.detail);
        // The same server and user, another database.
        let base = url.split('?').next().unwrap_or(&url);
        let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
        let missing = store(&settings(&format!("{server}/plangate_no_such_database"))).await.expect("a store check");
        assert!(!missing.ok && missing.detail.contains("plangate_no_such_database"), "{}", missing.detail);
    }
}
