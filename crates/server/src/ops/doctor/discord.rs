//! Discord: the bot token (`GET /users/@me`), each destination channel
//! (`GET /channels/{id}`: the bot can see it; then its permissions there,
//! computed as Discord does from the server's roles, the bot's roles and
//! the channel's overwrites: it can see the channel, post and embed the
//! card) and each approver (`GET /guilds/{guild}/members/{user}`: a member
//! of the server the channel is in).

use super::{api_url, destinations, text, Check};
use crate::config::Config;
use serde_json::Value;

const ADMINISTRATOR: u64 = 1 << 3;
/// What posting a card needs, with the names the server settings show.
const NEEDED: [(u64, &str); 3] = [(1 << 10, "View Channel"), (1 << 11, "Send Messages"), (1 << 14, "Embed Links")];
/// What `threads = "per_session"` needs besides: starting a thread from a
/// card, and posting in it.
const THREADS_NEEDED: [(u64, &str); 2] = [(1 << 35, "Create Public Threads"), (1 << 38, "Send Messages in Threads")];

/// Whether the bot may keep a thread per session in `label`: a warning when
/// not (the cards then stay in the channel, as the server says once).
fn threads_check(name: &str, label: &str, granted: u64) -> Check {
    let what = format!("destinations.{name}.threads");
    let missing: Vec<&str> = THREADS_NEEDED.iter().filter(|(bit, _)| granted & bit == 0).map(|(_, name)| *name).collect();
    match missing.join(", ") {
        none if none.is_empty() => Check::pass(what, format!("the bot may start threads in {label}: a thread per session")),
        missing => {
            Check::warn(what, format!("the bot lacks {missing} in {label}: cards stay in the channel; grant its role {missing} there"))
        }
    }
}

/// A refusal: the HTTP status and Discord's message and code.
struct Refused {
    status: u16,
    message: String,
}

/// `GET /api/v10/<path>` as the bot.
async fn get(http: &reqwest::Client, base: &str, token: &str, path: &str) -> Result<Value, Refused> {
    let resp = http.get(format!("{base}/api/v10/{path}")).header("Authorization", format!("Bot {token}")).send().await;
    let resp = resp.map_err(|e| Refused { status: 0, message: format!("cannot reach {base}: {}", e.without_url()) })?;
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or_default();
    if (200..300).contains(&status) {
        return Ok(body);
    }
    let message = match (body["message"].as_str(), body["code"].as_u64()) {
        (Some(m), Some(code)) => format!("{m} ({status}, code {code})"),
        _ => format!("refused ({status})"),
    };
    Err(Refused { status, message })
}

/// The bot's permissions in `channel` (Discord's "permission overwrites"
/// algorithm): `@everyone` (the role whose id is the guild's) and the
/// member's roles, then the channel's `@everyone`, role and member
/// overwrites, in that order. Administrator has everything.
fn permissions(guild: &str, user: &str, member: &Value, roles: &Value, channel: &Value) -> u64 {
    let bits = |v: &Value, key: &str| v[key].as_str().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let mine: Vec<&str> = member["roles"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let has = |id: &str| id == guild || mine.contains(&id);
    let base =
        roles.as_array().into_iter().flatten().filter(|r| r["id"].as_str().is_some_and(has)).fold(0, |p, r| p | bits(r, "permissions"));
    if base & ADMINISTRATOR != 0 {
        return u64::MAX;
    }
    let overwrites: Vec<&Value> = channel["permission_overwrites"].as_array().into_iter().flatten().collect();
    let apply = |p: u64, pick: &dyn Fn(&Value) -> bool| {
        let (allow, deny) = overwrites.iter().filter(|o| pick(o)).fold((0, 0), |(a, d), o| (a | bits(o, "allow"), d | bits(o, "deny")));
        (p & !deny) | allow
    };
    let p = apply(base, &|o| o["id"] == guild);
    let p = apply(p, &|o| o["type"] == 0 && o["id"] != guild && o["id"].as_str().is_some_and(has));
    apply(p, &|o| o["type"] == 1 && o["id"] == user)
}

/// The `[discord]` section's checks, appended to `checks`.
pub(super) async fn check(http: &reqwest::Client, raw: &Config, section: &Value, checks: &mut Vec<Check>) {
    let base = api_url(section, "https://discord.com");
    let token = text(section, "bot_token");
    let token = token.strip_prefix("Bot ").unwrap_or(&token).to_string();
    let bot = match get(http, &base, &token, "users/@me").await {
        Ok(me) => {
            checks.push(Check::pass("discord.bot_token", format!("works (bot {})", me["username"].as_str().unwrap_or("?"))));
            me["id"].as_str().unwrap_or_default().to_string()
        }
        Err(e) => {
            checks.push(Check::fail(
                "discord.bot_token",
                format!("{}; reset the bot token in the developer portal (Bot → Reset Token)", e.message),
            ));
            return;
        }
    };
    for (name, d) in destinations(raw, "discord") {
        let what = format!("destinations.{name}.chat");
        let channel = match get(http, &base, &token, &format!("channels/{}", d.chat)).await {
            Ok(channel) => channel,
            Err(e) => {
                let fix = match e.status {
                    403 => "the bot cannot see it: give its role View Channel there (channel settings → Permissions), or invite the bot to that server",
                    404 => "no such channel: with Developer Mode on, right-click the channel → Copy Channel ID",
                    _ => "is Discord reachable from here?",
                };
                checks.push(Check::fail(what, format!("{}: {}; {fix}", d.chat, e.message)));
                continue;
            }
        };
        let label = format!("#{}", channel["name"].as_str().unwrap_or(&d.chat));
        let Some(guild) = channel["guild_id"].as_str() else {
            checks.push(Check::pass(what, format!("{} is a direct message channel the bot can see", d.chat)));
            continue;
        };
        let member = get(http, &base, &token, &format!("guilds/{guild}/members/{bot}")).await;
        let roles = get(http, &base, &token, &format!("guilds/{guild}/roles")).await;
        let mut threads = None;
        checks.push(match (member, roles) {
            (Ok(member), Ok(roles)) => {
                let granted = permissions(guild, &bot, &member, &roles, &channel);
                if d.threads == plangate_channel::Threads::PerSession {
                    threads = Some(threads_check(name, &label, granted));
                }
                let missing: Vec<&str> = NEEDED.iter().filter(|(bit, _)| granted & bit == 0).map(|(_, name)| *name).collect();
                if missing.is_empty() {
                    Check::pass(what, format!("{} is {label}, and the bot can see it and post cards there", d.chat))
                } else {
                    let missing = missing.join(", ");
                    Check::fail(what, format!("{} is {label}, but the bot lacks {missing} there; grant its role {missing} in {label} (channel settings → Permissions)", d.chat))
                }
            }
            (Err(e), _) | (_, Err(e)) => Check::fail(what, format!("{} is {label}, but its permissions cannot be read: {}", d.chat, e.message)),
        });
        checks.extend(threads);
        for (i, approver) in d.approvers.iter().enumerate() {
            let user = approver.strip_prefix("discord:").unwrap_or(approver);
            let what = format!("destinations.{name}.approvers[{i}]");
            checks.push(match get(http, &base, &token, &format!("guilds/{guild}/members/{user}")).await {
                Ok(m) => Check::pass(what, format!("{approver} is a member of the server ({})", m["user"]["username"].as_str().unwrap_or("?"))),
                Err(e) if e.status == 404 => Check::fail(
                    what,
                    format!("{approver} is not a member of the server {label} is in ({}); invite them, or fix the id (right-click the user → Copy User ID)", e.message),
                ),
                Err(e) => Check::fail(what, format!("{approver}: {}", e.message)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `@everyone` may post, a role takes Send Messages away in the channel,
    /// a member overwrite gives it back; Administrator overrides everything.
    #[test]
    fn permissions_follow_discords_overwrite_order() {
        let roles = json!([{"id": "g", "permissions": "19456"}, {"id": "muted", "permissions": "0"}, {"id": "admin", "permissions": "8"}]);
        let member = json!({"roles": ["muted"]});
        let send = 1 << 11;
        let deny = json!({"permission_overwrites": [{"id": "muted", "type": 0, "allow": "0", "deny": "2048"}]});
        assert_eq!(permissions("g", "bot", &member, &roles, &deny) & send, 0);
        let back = json!({"permission_overwrites": [
            {"id": "muted", "type": 0, "allow": "0", "deny": "2048"},
            {"id": "bot", "type": 1, "allow": "2048", "deny": "0"}]});
        assert_ne!(permissions("g", "bot", &member, &roles, &back) & send, 0);
        assert_eq!(permissions("g", "bot", &json!({"roles": ["admin"]}), &roles, &deny), u64::MAX);
    }
}
