//! The remote reads: a GET with a timeout and a size cap, and the two
//! on-call APIs' requests and answers.

use crate::{ScheduleError, Token};

/// An on-call API's schedule: where, which, and the token to read it with.
#[derive(Debug, Clone)]
pub struct Api {
    /// The API's base URL (`https://api.pagerduty.com`).
    pub api_url: String,
    /// The schedule's id.
    pub schedule: String,
    pub token: Token,
}

impl Api {
    fn base(&self) -> &str {
        self.api_url.trim_end_matches('/')
    }
}
use std::time::Duration;

/// GET `url` with `headers` within `timeout`: the body as text
/// (at most [`crate::ical::MAX_FEED`] bytes), or why not.
pub(crate) async fn get_text(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    timeout: Duration,
) -> Result<String, ScheduleError> {
    let read = async {
        let mut request = client.get(url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.map_err(|e| ScheduleError::Transport(transport(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(ScheduleError::Status(status.as_u16()));
        }
        let body = response.bytes().await.map_err(|e| ScheduleError::Transport(transport(&e)))?;
        if body.len() > crate::ical::MAX_FEED {
            return Err(ScheduleError::Garbage(format!("{} bytes, more than a schedule", body.len())));
        }
        String::from_utf8(body.to_vec()).map_err(|_| ScheduleError::Garbage("not UTF-8 text".into()))
    };
    tokio::time::timeout(timeout, read).await.map_err(|_| ScheduleError::Timeout(timeout))?
}

/// The error without its URL (a feed's URL may carry a secret in its query).
fn transport(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".to_string();
    }
    if e.is_connect() {
        return "connection refused or unreachable".to_string();
    }
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "<url>");
    }
    text
}

/// GET `url` as [`get_text`] does, read as JSON.
async fn get_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, String)],
    timeout: Duration,
) -> Result<serde_json::Value, ScheduleError> {
    let body = get_text(client, url, headers, timeout).await?;
    serde_json::from_str(&body).map_err(|_| ScheduleError::Garbage("not JSON".into()))
}

/// PagerDuty: `GET <api_url>/oncalls?schedule_ids[]=<id>&include[]=users`
/// (REST API v2, `Authorization: Token token=<token>`): each on-call's
/// user email (else its summary).
pub(crate) async fn pagerduty(client: &reqwest::Client, api: &Api, timeout: Duration) -> Result<Vec<String>, ScheduleError> {
    let url = format!("{}/oncalls?schedule_ids%5B%5D={}&include%5B%5D=users", api.base(), encode(&api.schedule));
    let headers =
        [("Authorization", format!("Token token={}", api.token.0)), ("Accept", "application/vnd.pagerduty+json;version=2".to_string())];
    let json = get_json(client, &url, &headers, timeout).await?;
    let oncalls = json.get("oncalls").and_then(|o| o.as_array()).ok_or_else(|| ScheduleError::Garbage("no \"oncalls\" list".into()))?;
    let mut who: Vec<(i64, String)> = oncalls
        .iter()
        .filter_map(|o| {
            let user = o.get("user")?;
            let name = user.get("email").or_else(|| user.get("summary")).and_then(|v| v.as_str())?;
            Some((o.get("escalation_level").and_then(|l| l.as_i64()).unwrap_or(1), name.to_string()))
        })
        .collect();
    // The first escalation level of the schedule is who is on call.
    who.sort();
    let first = who.first().map(|w| w.0);
    Ok(who.into_iter().filter(|w| Some(w.0) == first).map(|w| w.1).collect())
}

/// Opsgenie: `GET <api_url>/v2/schedules/<id>/on-calls?flat=true`
/// (`Authorization: GenieKey <token>`): `data.onCallRecipients`.
pub(crate) async fn opsgenie(client: &reqwest::Client, api: &Api, timeout: Duration) -> Result<Vec<String>, ScheduleError> {
    let url = format!("{}/v2/schedules/{}/on-calls?scheduleIdentifierType=id&flat=true", api.base(), encode(&api.schedule));
    let headers = [("Authorization", format!("GenieKey {}", api.token.0))];
    let json = get_json(client, &url, &headers, timeout).await?;
    let recipients = json
        .pointer("/data/onCallRecipients")
        .and_then(|r| r.as_array())
        .ok_or_else(|| ScheduleError::Garbage("no \"data.onCallRecipients\" list".into()))?;
    Ok(recipients.iter().filter_map(|r| r.as_str().map(str::to_string)).collect())
}

/// A path or query segment: unreserved characters only, the rest %-encoded.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
