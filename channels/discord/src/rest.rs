//! Executing serenity-built REST requests against `api_url`.
//!
//! serenity builds each request (route, `Bot` auth, user agent, JSON or
//! multipart with `payload_json`) and rewrites `https://discord.com` to the
//! configured base; this module sends it and reads the answer itself, because
//! serenity's error type drops a 429's `retry_after` and its own ratelimiter
//! (which would read it) ignores the base URL.

use crate::config::Settings;
use plangate_channel::{global_limit_key, send_with_retry, ChannelError, RateLimiter, RetryPolicy, RetryRefusals};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serenity::builder::{
    CreateAttachment, CreateCommand, CreateInteractionResponse, CreateMessage, CreateThread, EditInteractionResponse, EditMessage,
    EditThread,
};
use serenity::http::{LightMethod, Multipart, MultipartUpload, Request, Route};
use serenity::model::id::{ApplicationId, ChannelId, GuildId, InteractionId, MessageId};
use std::fmt;
use std::time::Duration;

const PLATFORM: &str = "discord";

pub(crate) struct Rest {
    client: reqwest::Client,
    /// `Bot <token>`
    token: SecretString,
    base: String,
    pub application_id: ApplicationId,
}

impl fmt::Debug for Rest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rest").field("base", &self.base).field("application_id", &self.application_id).finish_non_exhaustive()
    }
}

/// Just the id of a created message: all plangate needs, and lenient about
/// whatever else Discord adds to message objects.
#[derive(Deserialize)]
struct Created {
    id: MessageId,
}

/// Just the id of a started thread.
#[derive(Deserialize)]
struct CreatedThread {
    id: ChannelId,
}

/// What [`map_refusal`] appends to the message of a refusal because the
/// thread is archived (50083) or locked (160005), so [`thread_closed`]
/// can tell it from other 400s.
const CLOSED_THREAD: &str = " (thread archived or locked)";

/// Whether Discord refused because the thread is archived or locked.
pub(crate) fn thread_closed(error: &ChannelError) -> bool {
    matches!(error, ChannelError::Api { message, .. } if message.ends_with(CLOSED_THREAD))
}

impl Rest {
    pub fn new(settings: &Settings) -> Result<Rest, reqwest::Error> {
        let client = reqwest::Client::builder().use_rustls_tls().timeout(Duration::from_secs(30)).build()?;
        Ok(Rest { client, token: settings.token.clone(), base: settings.api_url.clone(), application_id: settings.application_id })
    }

    /// The serenity `Http` for the gateway client: same base, ratelimiter off
    /// (serenity ignores the base while its ratelimiter is on).
    pub fn serenity_http(&self) -> serenity::http::Http {
        serenity::http::HttpBuilder::new(self.token.expose_secret())
            .client(self.client.clone())
            .proxy(self.base.clone())
            .ratelimiter_disabled(true)
            .application_id(self.application_id)
            .build()
    }

    /// Send `request` and read a refusal into a `ChannelError` (see
    /// [`map_refusal`]). `route` names the call in errors and logs (never the
    /// interaction token).
    async fn send(&self, route: &str, request: Request<'_>) -> Result<reqwest::Response, ChannelError> {
        let builder = request
            .build(&self.client, self.token.expose_secret(), Some(&self.base))
            .map_err(|e| ChannelError::Other(format!("building {route}: {e}")))?;
        let response = builder.send().await.map_err(|e| ChannelError::Transport {
            platform: PLATFORM,
            status: None,
            message: format!("{route}: {}", without_url(&e)),
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let header_retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok());
        let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
        let error = map_refusal(route, status, header_retry, &body);
        if let ChannelError::RateLimited { retry_after, .. } = &error {
            tracing::warn!(%route, ?retry_after, global = body.get("global").and_then(|g| g.as_bool()).unwrap_or(false), "discord: 429");
        }
        Err(error)
    }

    async fn send_json<T: DeserializeOwned>(&self, route: &str, request: Request<'_>) -> Result<T, ChannelError> {
        let response = self.send(route, request).await?;
        response.json::<T>().await.map_err(|e| ChannelError::Transport {
            platform: PLATFORM,
            status: None,
            message: format!("unreadable answer: {}", without_url(&e)),
        })
    }

    fn body<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, ChannelError> {
        serde_json::to_vec(value).map_err(|e| ChannelError::Other(format!("serializing a discord payload: {e}")))
    }

    /// JSON body, or multipart with `payload_json` and `files[0]` when a file rides along.
    fn with_body<'a, T: serde::Serialize>(
        request: Request<'a>,
        value: &T,
        file: Option<CreateAttachment>,
    ) -> Result<Request<'a>, ChannelError> {
        Ok(match file {
            None => request.body(Some(Self::body(value)?)),
            Some(file) => request.multipart(Some(Multipart {
                upload: MultipartUpload::Attachments(vec![file]),
                fields: Vec::new(),
                payload_json: Some(String::from_utf8(Self::body(value)?).map_err(|e| ChannelError::Other(e.to_string()))?),
            })),
        })
    }

    /// `POST /channels/{id}/messages`. `file` must also be added to `message`
    /// (`add_file`), so its `attachments` entry (id 0) names the `files[0]` part.
    pub async fn create_message(
        &self,
        channel_id: ChannelId,
        message: &CreateMessage,
        file: Option<CreateAttachment>,
    ) -> Result<MessageId, ChannelError> {
        let request = Self::with_body(Request::new(Route::ChannelMessages { channel_id }, LightMethod::Post), message, file)?;
        Ok(self.send_json::<Created>("create message", request).await?.id)
    }

    /// `PATCH /channels/{id}/messages/{id}`.
    pub async fn edit_message(&self, channel_id: ChannelId, message_id: MessageId, edit: &EditMessage) -> Result<(), ChannelError> {
        let request = Request::new(Route::ChannelMessage { channel_id, message_id }, LightMethod::Patch).body(Some(Self::body(edit)?));
        self.send("edit message", request).await.map(drop)
    }

    /// `POST /channels/{channel}/messages/{message}/threads` (Discord's
    /// "Start Thread from Message"): the new thread's id, which is also a
    /// channel id to post in.
    pub async fn start_thread(
        &self,
        channel_id: ChannelId,
        message_id: MessageId,
        thread: &CreateThread<'_>,
    ) -> Result<ChannelId, ChannelError> {
        let request =
            Request::new(Route::ChannelMessageThreads { channel_id, message_id }, LightMethod::Post).body(Some(Self::body(thread)?));
        Ok(self.send_json::<CreatedThread>("start thread", request).await?.id)
    }

    /// `PATCH /channels/{thread}` with `archived: false`: reopen an archived
    /// thread (a locked one only with Manage Threads).
    pub async fn unarchive(&self, thread: ChannelId) -> Result<(), ChannelError> {
        let edit = EditThread::new().archived(false);
        let request = Request::new(Route::Channel { channel_id: thread }, LightMethod::Patch).body(Some(Self::body(&edit)?));
        self.send("unarchive thread", request).await.map(drop)
    }

    /// `POST /interactions/{id}/{token}/callback`: the initial response.
    pub async fn interaction_callback(
        &self,
        interaction_id: InteractionId,
        token: &str,
        response: &CreateInteractionResponse,
    ) -> Result<(), ChannelError> {
        let request =
            Request::new(Route::InteractionResponse { interaction_id, token }, LightMethod::Post).body(Some(Self::body(response)?));
        self.send("interaction callback", request).await.map(drop)
    }

    /// `PATCH /webhooks/{app}/{token}/messages/@original`: replace a
    /// deferred response. Retried through `send_with_retry`: a 429 (up to
    /// 10 s), transport errors, and a 404, because over HTTP Discord may not
    /// have processed our deferral yet when this runs.
    pub async fn edit_original(
        &self,
        token: &str,
        edit: &EditInteractionResponse,
        file: Option<CreateAttachment>,
    ) -> Result<(), ChannelError> {
        // Not a channel message: no pacing, and a 429 here pauses only this
        // response. The key never holds the interaction token.
        let limiter = RateLimiter::unlimited();
        let policy = RetryPolicy {
            attempts: 4,
            backoff: Duration::from_millis(250),
            max_retry_after: Duration::from_secs(10),
            refusals: RetryRefusals::NotFound,
            ..RetryPolicy::default()
        };
        send_with_retry(&limiter, &global_limit_key(PLATFORM), policy, || async {
            let route = Route::WebhookOriginalInteractionResponse { application_id: self.application_id, token };
            let request = Self::with_body(Request::new(route, LightMethod::Patch), edit, file.clone())?;
            self.send("edit interaction response", request).await.map(drop)
        })
        .await
    }

    /// `POST /applications/{app}/commands` (or the guild's): create or
    /// overwrite `/plan` by name.
    pub async fn register_plan_command(&self, guild: Option<GuildId>) -> Result<(), ChannelError> {
        let command: CreateCommand = crate::render::plan_command();
        let application_id = self.application_id;
        let route = match guild {
            Some(guild_id) => Route::GuildCommands { application_id, guild_id },
            None => Route::Commands { application_id },
        };
        let request = Request::new(route, LightMethod::Post).body(Some(Self::body(&command)?));
        self.send("register /plan", request).await.map(drop)
    }
}

/// A non-2xx answer in the contract's terms, once for the whole adapter: 429
/// → `RateLimited` with Discord's `retry_after` (body, else header), 5xx →
/// `Transport`, 404 or an "Unknown …" JSON code → `NotFound`, 401/403 or a
/// permission code → `Forbidden`, anything else → `Api` with the status. The
/// message is `<route>: HTTP <status> <Discord's message>`.
fn map_refusal(route: &str, status: reqwest::StatusCode, header_retry: Option<f64>, body: &serde_json::Value) -> ChannelError {
    let message = body.get("message").and_then(|m| m.as_str()).unwrap_or("").chars().take(300).collect::<String>();
    let code = body.get("code").and_then(|c| c.as_u64()).unwrap_or(0);
    let message = format!("{route}: HTTP {status} {message}");
    let status = status.as_u16();
    match status {
        429 => {
            let seconds = body.get("retry_after").and_then(|v| v.as_f64()).or(header_retry).unwrap_or(1.0);
            let retry_after = Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::from_secs(3600));
            ChannelError::RateLimited { platform: PLATFORM, retry_after }
        }
        500..=599 => ChannelError::Transport { platform: PLATFORM, status: Some(status), message },
        // Discord's JSON codes: 10xxx "Unknown <thing>"; 50001 Missing
        // Access, 50013 Missing Permissions, 50007 cannot DM this user.
        _ if (10_000..20_000).contains(&code) || status == 404 => ChannelError::NotFound { platform: PLATFORM, message },
        _ if matches!(code, 50_001 | 50_007 | 50_013) || matches!(status, 401 | 403) => {
            ChannelError::Forbidden { platform: PLATFORM, message }
        }
        _ if matches!(code, 50_083 | 160_005) => {
            ChannelError::Api { platform: PLATFORM, status: Some(status), message: format!("{message}{CLOSED_THREAD}") }
        }
        _ => ChannelError::Api { platform: PLATFORM, status: Some(status), message },
    }
}

/// reqwest errors print the URL, which for interaction webhooks contains the
/// interaction token: keep it out of logs.
fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "<url>");
    }
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        format!("connection failed ({text})")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Discord's answers (status, JSON error body, Retry-After header) land
    /// on their contract variants.
    #[test]
    fn discord_errors_map_to_typed_variants() {
        // (status, Retry-After header, body) → (kind, status kept, end of the message)
        type Case = (u16, Option<f64>, serde_json::Value, &'static str, Option<u16>, &'static str);
        let table: Vec<Case> = vec![
            (404, None, json!({"code": 10008, "message": "Unknown Message"}), "not_found", None, "HTTP 404 Not Found Unknown Message"),
            (
                404,
                None,
                json!({"code": 10062, "message": "Unknown interaction"}),
                "not_found",
                None,
                "HTTP 404 Not Found Unknown interaction",
            ),
            (404, None, serde_json::Value::Null, "not_found", None, "HTTP 404 Not Found "),
            (400, None, json!({"code": 10003, "message": "Unknown Channel"}), "not_found", None, "HTTP 400 Bad Request Unknown Channel"),
            (
                403,
                None,
                json!({"code": 50013, "message": "Missing Permissions"}),
                "forbidden",
                None,
                "HTTP 403 Forbidden Missing Permissions",
            ),
            (403, None, json!({"code": 50001, "message": "Missing Access"}), "forbidden", None, "HTTP 403 Forbidden Missing Access"),
            (401, None, json!({"code": 0, "message": "401: Unauthorized"}), "forbidden", None, "HTTP 401 Unauthorized 401: Unauthorized"),
            (400, None, json!({"code": 50035, "message": "Invalid Form Body"}), "api", Some(400), "HTTP 400 Bad Request Invalid Form Body"),
            (
                413,
                None,
                json!({"code": 40005, "message": "Request entity too large"}),
                "api",
                Some(413),
                "HTTP 413 Payload Too Large Request entity too large",
            ),
            (
                500,
                None,
                json!({"message": "Internal Server Error"}),
                "transport",
                Some(500),
                "HTTP 500 Internal Server Error Internal Server Error",
            ),
            (502, None, serde_json::Value::Null, "transport", Some(502), "HTTP 502 Bad Gateway "),
            (
                429,
                Some(9.0),
                json!({"message": "You are being rate limited.", "retry_after": 0.4, "global": false}),
                "rate_limited",
                None,
                "400ms",
            ),
            (429, Some(2.0), json!({"message": "You are being rate limited."}), "rate_limited", None, "2s"),
            (429, None, serde_json::Value::Null, "rate_limited", None, "1s"),
            (
                400,
                None,
                json!({"code": 50083, "message": "Thread is archived"}),
                "api",
                Some(400),
                "Thread is archived (thread archived or locked)",
            ),
        ];
        for (status, header, body, expected, expected_status, expected_shown) in table {
            let mapped = map_refusal("edit message", reqwest::StatusCode::from_u16(status).unwrap(), header, &body);
            let shown = mapped.to_string();
            assert_eq!((mapped.kind(), mapped.status()), (expected, expected_status), "{status} {body} became {mapped:?}");
            assert!(shown.ends_with(expected_shown), "{shown}");
            assert_eq!(thread_closed(&mapped), body["code"] == 50083, "{shown}");
        }
    }
}
