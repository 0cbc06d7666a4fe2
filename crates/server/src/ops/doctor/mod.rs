//! `plangate doctor`: a configuration checked against the live platform
//! APIs, run by the operator before (or instead of) a first start. Each
//! check is one line: ✓ or ✗, what was checked, and on failure what to do.
//!
//! Telegram is checked whole: the token (`getMe`), each destination chat
//! (`getChat`: it exists and the bot can see it, so it is in it) and each
//! approver (`getChatMember`: a member of that chat). Slack and Discord:
//! the token only (`auth.test`, `GET /users/@me`); their chats and
//! approvers are not checked yet.
//!
//! With `[store] backend = "postgres"`, the database comes first: plangate
//! connects once the way `serve` does (password included) and reads how far
//! the schema is migrated (`plangate_store::probe_postgres`), so a wrong
//! host, a wrong password, a database or role that does not exist, a
//! `pg_hba.conf` that refuses this machine or a schema migrated by a newer
//! plangate is named here rather than at the first start. Nothing is created.
//!
//! Last, plangate's Codex hooks ([`codex_hooks`]): installed but not trusted
//! in Codex's `config.toml`, they gate nothing, and Codex does not say so.

use crate::config::Settings;
use serde_json::{json, Value};

/// One check's outcome.
pub struct Check {
    pub ok: bool,
    pub what: String,
    pub detail: String,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", if self.ok { "✓" } else { "✗" }, self.what, self.detail)
    }
}

fn text(section: &Value, key: &str) -> String {
    section.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Call a Bot API method; `Ok(result)` or `Err(description)`.
async fn telegram(http: &reqwest::Client, base: &str, token: &str, method: &str, body: Value) -> Result<Value, String> {
    let url = format!("{}/bot{token}/{method}", base.trim_end_matches('/'));
    let resp = http.post(url).json(&body).send().await.map_err(|e| format!("cannot reach {base}: {}", e.without_url()))?;
    let value: Value = resp.json().await.map_err(|e| format!("unreadable answer: {e}"))?;
    if value["ok"] == true {
        Ok(value["result"].clone())
    } else {
        Err(value["description"].as_str().unwrap_or("refused").to_string())
    }
}

/// Run every check of `settings`.
pub async fn run(settings: &Settings) -> Vec<Check> {
    let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(15)).build().unwrap_or_default();
    let raw = &settings.raw;
    let mut checks = Vec::new();
    if let Some(section) = &raw.telegram {
        let base = Some(text(section, "api_url")).filter(|u| !u.is_empty()).unwrap_or_else(|| "https://api.telegram.org".into());
        let token = text(section, "token");
        match telegram(&http, &base, &token, "getMe", json!({})).await {
            Ok(me) => checks.push(Check {
                ok: true,
                what: "telegram.token".into(),
                detail: format!("works (bot @{})", me["username"].as_str().unwrap_or("?")),
            }),
            Err(e) => {
                checks.push(Check { ok: false, what: "telegram.token".into(), detail: format!("{e}; copy the token from @BotFather") });
                return checks; // nothing else can be checked with a token that does not work
            }
        }
        for (name, d) in raw.destinations.iter().filter(|(_, d)| d.channel == "telegram") {
            match telegram(&http, &base, &token, "getChat", json!({"chat_id": d.chat})).await {
                Ok(chat) => checks.push(Check {
                    ok: true,
                    what: format!("destinations.{name}.chat"),
                    detail: format!(
                        "{} resolves to {:?}, and the bot is in it",
                        d.chat,
                        chat["title"].as_str().unwrap_or("a private chat")
                    ),
                }),
                Err(e) => {
                    checks.push(Check {
                        ok: false,
                        what: format!("destinations.{name}.chat"),
                        detail: format!("{}: {e}; add the bot to the chat, then send /plan there to see its id", d.chat),
                    });
                    continue;
                }
            }
            for (i, approver) in d.approvers.iter().enumerate() {
                let user = approver.strip_prefix("telegram:").unwrap_or(approver);
                let what = format!("destinations.{name}.approvers[{i}]");
                match telegram(&http, &base, &token, "getChatMember", json!({"chat_id": d.chat, "user_id": user})).await {
                    Ok(m) if !matches!(m["status"].as_str(), Some("left" | "kicked")) => checks.push(Check {
                        ok: true,
                        what,
                        detail: format!("{approver} is in the chat ({})", m["user"]["first_name"].as_str().unwrap_or("?")),
                    }),
                    Ok(m) => checks.push(Check {
                        ok: false,
                        what,
                        detail: format!("{approver} is not in the chat ({}); invite them", m["status"].as_str().unwrap_or("?")),
                    }),
                    Err(e) => checks.push(Check {
                        ok: false,
                        what,
                        detail: format!("{approver}: {e}; the user id is what /plan in the chat shows them"),
                    }),
                }
            }
        }
    }
    if let Some(section) = &raw.slack {
        let base = Some(text(section, "api_url")).filter(|u| !u.is_empty()).unwrap_or_else(|| "https://slack.com/api".into());
        let answer = http.post(format!("{}/auth.test", base.trim_end_matches('/'))).bearer_auth(text(section, "bot_token")).send().await;
        let value: Value = match answer {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(e) => json!({"ok": false, "error": format!("cannot reach {base}: {}", e.without_url())}),
        };
        let ok = value["ok"] == true;
        let detail = if ok {
            format!("works (team {})", value["team_id"].as_str().unwrap_or("?"))
        } else {
            format!("{}; copy the bot token (xoxb-…) from the app's OAuth page", value["error"].as_str().unwrap_or("refused"))
        };
        checks.push(Check { ok, what: "slack.bot_token".into(), detail });
    }
    if let Some(section) = &raw.discord {
        let base = Some(text(section, "api_url")).filter(|u| !u.is_empty()).unwrap_or_else(|| "https://discord.com".into());
        let token = text(section, "bot_token");
        let token = token.strip_prefix("Bot ").unwrap_or(&token).to_string();
        let answer = http
            .get(format!("{}/api/v10/users/@me", base.trim_end_matches('/')))
            .header("Authorization", format!("Bot {token}"))
            .send()
            .await;
        let (ok, detail) = match answer {
            Ok(r) if r.status().is_success() => (true, "works".to_string()),
            Ok(r) => (false, format!("refused ({}); reset the bot token in the developer portal", r.status())),
            Err(e) => (false, format!("cannot reach {base}: {}", e.without_url())),
        };
        checks.push(Check { ok, what: "discord.bot_token".into(), detail });
    }
    checks
}

/// plangate's Codex hooks, one check per hooks file that has them (this
/// project's `.codex/hooks.json`, the user's `$CODEX_HOME/hooks.json`):
/// whether Codex runs them, i.e. whether the user's `config.toml` trusts
/// each one at its current hash. Codex skips an untrusted hook without a
/// word, so an installed gate that is not trusted gates nothing; a hash
/// that changed (the binary moved, another `--wait`) is the same. Computed
/// from the two files ([`plangate_agent::codex::trust`]), without starting
/// Codex.
pub fn codex_hooks(project_dir: &std::path::Path) -> Vec<Check> {
    use plangate_agent::codex::{install, trust};
    let mut checks = Vec::new();
    let mut seen = Vec::new();
    for scope in install::Scope::ALL {
        let Ok(path) = install::hooks_path(scope, project_dir) else { continue };
        if seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        let Some(hooks) = plangate_agent::hooks_file::peek(&path) else { continue };
        if trust::plangate_hooks(&path, &hooks).is_empty() {
            continue;
        }
        let what = format!("codex hooks {}", path.display());
        let (flag, from) = match scope {
            install::Scope::Project => ("", format!(" in {}", project_dir.display())),
            install::Scope::User => (" --scope user", String::new()),
        };
        let fix = format!("run `plangate hook install codex{flag} --trust`{from}, or review them in Codex's /hooks dialog");
        checks.push(match trust::review(&path, &hooks) {
            Ok(review) if review.all_trusted() => {
                Check { ok: true, what, detail: format!("Codex runs them: {} trusted in {}", review.hooks.len(), review.config.display()) }
            }
            Ok(review) => Check {
                ok: false,
                what,
                detail: format!(
                    "{} in {}; Codex skips such hooks without a word, so nothing is gated: {fix}",
                    review.problems(),
                    review.config.display()
                ),
            },
            Err(e) => Check { ok: false, what, detail: format!("cannot tell whether Codex trusts them: {e}") },
        });
    }
    checks
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
        Ok(Ok(found)) => Check { ok: true, what, detail: found },
        Ok(Err(e)) => Check {
            ok: false,
            what,
            detail: format!(
                "{e}; is PostgreSQL running there, does the role exist with this password, and does pg_hba.conf allow this host?"
            ),
        },
        Err(e) => Check { ok: false, what, detail: format!("the probe failed: {e}") },
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
    /// a database that does not exist is named.
    #[tokio::test]
    async fn the_test_postgres_accepts_the_probe() {
        let url = std::env::var("PLANGATE_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let check = store(&settings(&url)).await.expect("a store check");
        assert!(check.ok, "PostgreSQL is not reachable at {url} (these tests need it; .ci/run starts it): {}", check.detail);
        assert!(check.detail.contains("not created yet"), "{}", check.detail);
        let missing = store(&settings("postgres://postgres@127.0.0.1:5432/plangate_no_such_database")).await.expect("a store check");
        assert!(!missing.ok && missing.detail.contains("plangate_no_such_database"), "{}", missing.detail);
    }
}
