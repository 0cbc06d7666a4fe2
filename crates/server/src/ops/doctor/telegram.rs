//! Telegram, checked whole: the token (`getMe`), each destination chat
//! (`getChat`: it exists and the bot can see it, so it is in it) and each
//! approver (`getChatMember`: a member of that chat, not left or kicked).

use super::{api_url, destinations, text, Check};
use crate::config::Config;
use serde_json::{json, Value};

/// Call a Bot API method; `Ok(result)` or `Err(description)`.
async fn call(http: &reqwest::Client, base: &str, token: &str, method: &str, body: Value) -> Result<Value, String> {
    let url = format!("{base}/bot{token}/{method}");
    let resp = http.post(url).json(&body).send().await.map_err(|e| format!("cannot reach {base}: {}", e.without_url()))?;
    let value: Value = resp.json().await.map_err(|e| format!("unreadable answer: {e}"))?;
    if value["ok"] == true {
        Ok(value["result"].clone())
    } else {
        Err(value["description"].as_str().unwrap_or("refused").to_string())
    }
}

/// The bot's user id (for its own rights in a chat).
async fn me_id(http: &reqwest::Client, base: &str, token: &str) -> String {
    call(http, base, token, "getMe", json!({})).await.map(|me| me["id"].to_string()).unwrap_or_default()
}

/// `threads = "per_session"` needs a forum supergroup where the bot may
/// manage topics; otherwise cards go to the main chat (a warning, not a
/// failure: plangate still works).
async fn forum_check(http: &reqwest::Client, base: &str, token: &str, name: &str, chat_id: &str, chat: &Value, me: &str) -> Check {
    let what = format!("destinations.{name}.threads");
    if chat["is_forum"].as_bool() != Some(true) {
        return Check::warn(what, format!("{chat_id} is not a forum: cards go to the chat itself; turn on Topics in the group's settings"));
    }
    match call(http, base, token, "getChatMember", json!({"chat_id": chat_id, "user_id": me})).await {
        Ok(m) if m["status"] == "creator" || m["can_manage_topics"].as_bool() == Some(true) => {
            Check::pass(what, "a forum, and the bot may open topics: a topic per session")
        }
        Ok(_) => Check::warn(what, "the bot may not manage topics here: cards go to the chat itself; make it an admin with Manage Topics"),
        Err(e) => Check::warn(what, format!("the bot's rights could not be read ({e}); a topic per session may fall back to the chat")),
    }
}

/// The `[telegram]` section's checks, appended to `checks`.
pub(super) async fn check(http: &reqwest::Client, raw: &Config, section: &Value, checks: &mut Vec<Check>) {
    let base = api_url(section, "https://api.telegram.org");
    let token = text(section, "token");
    match call(http, &base, &token, "getMe", json!({})).await {
        Ok(me) => checks.push(Check::pass("telegram.token", format!("works (bot @{})", me["username"].as_str().unwrap_or("?")))),
        Err(e) => {
            checks.push(Check::fail("telegram.token", format!("{e}; copy the token from @BotFather")));
            return; // nothing else can be checked with a token that does not work
        }
    }
    for (name, d) in destinations(raw, "telegram") {
        match call(http, &base, &token, "getChat", json!({"chat_id": d.chat})).await {
            Ok(chat) => {
                checks.push(Check::pass(
                    format!("destinations.{name}.chat"),
                    format!("{} resolves to {:?}, and the bot is in it", d.chat, chat["title"].as_str().unwrap_or("a private chat")),
                ));
                if d.threads == plangate_channel::Threads::PerSession {
                    checks.push(forum_check(http, &base, &token, name, &d.chat, &chat, &me_id(http, &base, &token).await).await);
                }
            }
            Err(e) => {
                checks.push(Check::fail(
                    format!("destinations.{name}.chat"),
                    format!("{}: {e}; add the bot to the chat, then send /plan there to see its id", d.chat),
                ));
                continue;
            }
        }
        for (i, approver) in d.approvers.iter().enumerate() {
            let user = approver.strip_prefix("telegram:").unwrap_or(approver);
            let what = format!("destinations.{name}.approvers[{i}]");
            checks.push(match call(http, &base, &token, "getChatMember", json!({"chat_id": d.chat, "user_id": user})).await {
                Ok(m) if !matches!(m["status"].as_str(), Some("left" | "kicked")) => {
                    Check::pass(what, format!("{approver} is in the chat ({})", m["user"]["first_name"].as_str().unwrap_or("?")))
                }
                Ok(m) => Check::fail(what, format!("{approver} is not in the chat ({}); invite them", m["status"].as_str().unwrap_or("?"))),
                Err(e) => Check::fail(what, format!("{approver}: {e}; the user id is what /plan in the chat shows them")),
            });
        }
    }
}
