//! Slack: the bot token (`auth.test`, and the scopes Slack reports with it
//! in `x-oauth-scopes`), each destination channel (`conversations.info`:
//! the bot can see it and is a member, which with `chat:write` is what
//! posting needs) and each approver (`conversations.members`: in that
//! channel, so they see the card).

use super::{api_url, destinations, text, Check};
use crate::config::Config;
use serde_json::Value;
use std::collections::HashSet;

/// The scope posting a card needs.
const POST_SCOPE: &str = "chat:write";

/// A successful answer: its body and the token's scopes (empty when Slack
/// did not say).
struct Answer {
    body: Value,
    scopes: String,
}

/// Call a Web API method with `query`; `Err` is Slack's error code (with
/// the scope it needed, for `missing_scope`) or why it was not reached.
async fn call(http: &reqwest::Client, base: &str, token: &str, method: &str, query: &[(&str, &str)]) -> Result<Answer, String> {
    let resp = http
        .get(format!("{base}/{method}"))
        .query(query)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| format!("cannot reach {base}: {}", e.without_url()))?;
    let scopes = resp.headers().get("x-oauth-scopes").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let body: Value = resp.json().await.map_err(|e| format!("unreadable answer: {e}"))?;
    match (body["ok"] == true, body["error"].as_str().unwrap_or("refused"), body["needed"].as_str()) {
        (true, ..) => Ok(Answer { body, scopes }),
        (false, error, Some(needed)) => Err(format!("{error} (needs {needed}; add it under OAuth & Permissions, then reinstall the app)")),
        (false, error, None) => Err(error.to_string()),
    }
}

/// Every member of `channel`, following Slack's cursor pagination.
async fn members(http: &reqwest::Client, base: &str, token: &str, channel: &str) -> Result<HashSet<String>, String> {
    let mut all = HashSet::new();
    let mut cursor = String::new();
    loop {
        let page =
            call(http, base, token, "conversations.members", &[("channel", channel), ("limit", "1000"), ("cursor", &cursor)]).await?;
        all.extend(page.body["members"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string));
        cursor = page.body["response_metadata"]["next_cursor"].as_str().unwrap_or_default().to_string();
        if cursor.is_empty() {
            return Ok(all);
        }
    }
}

/// The `[slack]` section's checks, appended to `checks`.
pub(super) async fn check(http: &reqwest::Client, raw: &Config, section: &Value, checks: &mut Vec<Check>) {
    let base = api_url(section, "https://slack.com/api");
    let token = text(section, "bot_token");
    let (bot, scopes) = match call(http, &base, &token, "auth.test", &[]).await {
        Ok(me) => {
            let bot = me.body["user"].as_str().unwrap_or("plangate").to_string();
            checks.push(Check::pass("slack.bot_token", format!("works (team {}, bot @{bot})", me.body["team_id"].as_str().unwrap_or("?"))));
            (bot, me.scopes)
        }
        Err(e) => {
            checks.push(Check::fail("slack.bot_token", format!("{e}; copy the bot token (xoxb-…) from the app's OAuth page")));
            return;
        }
    };
    let can_post = scopes.is_empty() || scopes.split(',').any(|s| s.trim() == POST_SCOPE);
    if !can_post {
        checks.push(Check::fail(
            "slack.bot_token",
            format!("the token lacks {POST_SCOPE} (it has {scopes}), so no card can be posted; add {POST_SCOPE} under OAuth & Permissions → Bot Token Scopes, then reinstall the app"),
        ));
    }
    for (name, d) in destinations(raw, "slack") {
        let what = format!("destinations.{name}.chat");
        let channel = match call(http, &base, &token, "conversations.info", &[("channel", &d.chat)]).await {
            Ok(info) => info.body["channel"].clone(),
            Err(e) => {
                checks.push(Check::fail(
                    what,
                    format!(
                        "{}: {e}; the bot cannot see it: check the id (channel details, at the bottom), and for a private channel /invite @{bot} there",
                        d.chat
                    ),
                ));
                continue;
            }
        };
        let label = format!("#{}", channel["name"].as_str().unwrap_or(&d.chat));
        if channel["is_member"] != true {
            checks.push(Check::fail(
                what,
                format!("{} is {label}, but the bot is not in it, so it cannot post there; /invite @{bot} in {label}", d.chat),
            ));
            continue;
        }
        let post = if can_post { format!(" and can post ({POST_SCOPE})") } else { String::new() };
        checks.push(Check::pass(what, format!("{} is {label}, and the bot is in it{post}", d.chat)));
        if d.approvers.is_empty() {
            continue;
        }
        let found = members(http, &base, &token, &d.chat).await;
        for (i, approver) in d.approvers.iter().enumerate() {
            let user = approver.strip_prefix("slack:").unwrap_or(approver);
            let what = format!("destinations.{name}.approvers[{i}]");
            checks.push(match &found {
                Ok(found) if found.contains(user) => Check::pass(what, format!("{approver} is in {label}")),
                Ok(_) => Check::fail(
                    what,
                    format!("{approver} is not in {label}, so they never see the card; /invite them there, or fix the id (their profile → ⋮ → Copy member ID)"),
                ),
                Err(e) => Check::fail(what, format!("{approver}: cannot list the members of {label}: {e}")),
            });
        }
    }
}
