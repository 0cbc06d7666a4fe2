//! Outbound half: the Web API calls, rate limited and retried, and the
//! [`Channel`] implementation built on them.

use crate::render;
use crate::{SlackConfig, SlackError};
use async_trait::async_trait;
use plangate_channel::{
    global_limit_key, limit_key, send_with_retry, Channel, ChannelError, Delivery, Destination, Document, RateLimiter, RetryPolicy, Threads,
};
use plangate_engine::card::Card;
use plangate_engine::Question;
use secrecy::ExposeSecret;
use serde::Serialize;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;
use url::Url;

pub(crate) type Client = SlackClient<SlackClientHyperHttpsConnector>;

const PLATFORM: &str = "slack";

/// The Slack Web API as plangate uses it: one client, the bot token, the
/// shared limiter. Every call is one `tracing` span named after the method.
pub(crate) struct Api {
    pub(crate) client: Arc<Client>,
    token: SlackApiToken,
    limiter: RateLimiter,
    retry: RetryPolicy,
    /// A `response_url` must start with one of these: Slack's hooks host, or
    /// the configured API origin (a fake in tests). Anything else is not
    /// trusted with a request, even from a verified payload.
    response_origins: Vec<String>,
}

impl Api {
    pub(crate) fn new(config: &SlackConfig) -> Result<Api, SlackError> {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| SlackError::Tls(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let api_url = config.api_url.trim_end_matches('/');
        let connector = SlackClientHyperConnector::with_connector(https).with_slack_api_url(api_url);
        let mut response_origins = vec!["https://hooks.slack.com/".to_string()];
        if let Ok(url) = Url::parse(api_url) {
            response_origins.push(format!("{}/", url.origin().ascii_serialization()));
        }
        Ok(Api {
            client: Arc::new(SlackClient::new(connector)),
            token: SlackApiToken::new(SlackApiTokenValue::new(config.bot_token.expose_secret().clone())),
            limiter: RateLimiter::new(
                (config.per_channel_per_second as usize, Duration::from_secs(1)),
                (config.global_per_second as usize, Duration::from_secs(1)),
            ),
            retry: RetryPolicy::default(),
            response_origins,
        })
    }

    /// The workspace (`team_id`) the bot token belongs to, from `auth.test`.
    pub(crate) async fn auth_team(&self) -> Result<String, ChannelError> {
        let res = self
            .call("auth.test", &global_limit_key(PLATFORM), || async { self.client.open_session(&self.token).auth_test().await })
            .await?;
        let team = res.team_id.to_string();
        if team.trim().is_empty() {
            return Err(ChannelError::Api { platform: PLATFORM, status: None, message: "auth.test returned no team_id".to_string() });
        }
        Ok(team)
    }

    /// Run one rate-limited, retried API call budgeted under `key` (see
    /// [`chat`] for messages into a channel).
    async fn call<T, F, Fut>(&self, method: &'static str, key: &str, send: F) -> Result<T, ChannelError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SlackClientError>>,
    {
        let mut send = send;
        let span = tracing::info_span!("slack_api", method, key);
        async {
            let result = send_with_retry(&self.limiter, key, self.retry, || {
                let fut = send();
                async move { fut.await.map_err(map_error) }
            })
            .await;
            if let Err(e) = &result {
                tracing::warn!(error = %e, "Slack call failed");
            }
            result
        }
        .instrument(span)
        .await
    }

    pub(crate) async fn post_message(
        &self,
        channel: &str,
        thread: Option<&str>,
        text: String,
        blocks: Vec<SlackBlock>,
    ) -> Result<(String, String), ChannelError> {
        self.post_message_as(channel, thread, false, text, blocks).await
    }

    /// [`post_message`](Self::post_message); a reply in a thread with
    /// `broadcast` is also shown in the channel (`reply_broadcast`).
    pub(crate) async fn post_message_as(
        &self,
        channel: &str,
        thread: Option<&str>,
        broadcast: bool,
        text: String,
        blocks: Vec<SlackBlock>,
    ) -> Result<(String, String), ChannelError> {
        let req = SlackApiChatPostMessageRequest::new(channel.into(), SlackMessageContent::new().with_text(text).with_blocks(blocks))
            .opt_thread_ts(thread.map(SlackTs::from))
            .opt_reply_broadcast((broadcast && thread.is_some()).then_some(true))
            .with_unfurl_links(false)
            .with_unfurl_media(false);
        let res = self
            .call("chat.postMessage", &chat(channel), || async { self.client.open_session(&self.token).chat_post_message(&req).await })
            .await?;
        Ok((res.channel.to_string(), res.ts.to_string()))
    }

    pub(crate) async fn update(&self, channel: &str, ts: &str, text: String, blocks: Vec<SlackBlock>) -> Result<(), ChannelError> {
        let req = SlackApiChatUpdateRequest::new(channel.into(), SlackMessageContent::new().with_text(text).with_blocks(blocks), ts.into());
        self.call("chat.update", &chat(channel), || async { self.client.open_session(&self.token).chat_update(&req).await })
            .await
            .map(|_| ())
    }

    pub(crate) async fn post_ephemeral(
        &self,
        channel: &str,
        user: &str,
        thread: Option<&str>,
        text: String,
        blocks: Option<Vec<SlackBlock>>,
    ) -> Result<(), ChannelError> {
        let req = SlackApiChatPostEphemeralRequest::new(
            channel.into(),
            user.into(),
            SlackMessageContent::new().with_text(text).opt_blocks(blocks),
        )
        .opt_thread_ts(thread.map(SlackTs::from));
        self.call("chat.postEphemeral", &chat(channel), || async { self.client.open_session(&self.token).chat_post_ephemeral(&req).await })
            .await
            .map(|_| ())
    }

    /// Whether a `response_url` may be used (see `response_origins`).
    pub(crate) fn response_url_allowed(&self, url: &str) -> bool {
        self.response_origins.iter().any(|origin| url.starts_with(origin.as_str()))
    }

    /// An ephemeral answer through the interaction's `response_url`, which
    /// works even where the bot is not a member of the channel.
    /// `replace_original` swaps out the ephemeral message the user clicked
    /// (the cancel confirmation), so its button cannot be clicked twice.
    pub(crate) async fn respond(
        &self,
        channel: &str,
        response_url: &str,
        replace_original: bool,
        text: String,
        blocks: Option<Vec<SlackBlock>>,
    ) -> Result<(), ChannelError> {
        #[derive(Serialize)]
        struct Respond {
            response_type: &'static str,
            replace_original: bool,
            text: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            blocks: Option<Vec<SlackBlock>>,
        }
        let url = Url::parse(response_url).map_err(|e| ChannelError::Other(format!("bad response_url: {e}")))?;
        let body = Respond { response_type: "ephemeral", replace_original, text, blocks };
        let connector = self.client.http_api.connector.clone();
        self.call("response_url", &chat(channel), || {
            let connector = connector.clone();
            let url = url.clone();
            let body = &body;
            async move {
                let span = tracing::Span::current();
                let context =
                    SlackClientApiCallContext { rate_control_params: None, token: None, tracing_span: &span, is_sensitive_url: true };
                connector.http_post_uri::<_, serde_json::Value>(url, body, context).await
            }
        })
        .await
        .map(|_| ())
    }

    pub(crate) async fn views_open(&self, user: &str, trigger_id: &str, view: SlackView) -> Result<(), ChannelError> {
        let req = SlackApiViewsOpenRequest::new(trigger_id.into(), view);
        // Not a channel message: keyed by user, so a busy channel cannot make
        // the 3 s trigger expire.
        self.call("views.open", &limit_key(PLATFORM, "user", user), || async {
            self.client.open_session(&self.token).views_open(&req).await
        })
        .await
        .map(|_| ())
    }

    /// The external upload flow: get an upload URL, send the bytes there,
    /// then share the file into `channel` (and the thread of `thread`).
    pub(crate) async fn upload(
        &self,
        channel: &str,
        thread: Option<&str>,
        document: &Document,
        comment: Option<String>,
    ) -> Result<(), ChannelError> {
        let bytes = document.text.as_bytes().to_vec();
        let get = SlackApiFilesGetUploadUrlExternalRequest::new(document.file_name.clone(), bytes.len());
        let upload_key = limit_key(PLATFORM, "files", channel);
        let target = self
            .call("files.getUploadURLExternal", &upload_key, || async {
                self.client.open_session(&self.token).get_upload_url_external(&get).await
            })
            .await?;
        let put = SlackApiFilesUploadViaUrlRequest::new(target.upload_url.clone(), bytes, "text/markdown".to_string());
        self.call("files.upload_via_url", &upload_key, || async { self.client.open_session(&self.token).files_upload_via_url(&put).await })
            .await?;
        let complete = SlackApiFilesCompleteUploadExternalRequest::new(vec![
            SlackApiFilesComplete::new(target.file_id.clone()).with_title(document.file_name.clone())
        ])
        .with_channel_id(channel.into())
        .opt_thread_ts(thread.map(SlackTs::from))
        .opt_initial_comment(comment);
        self.call("files.completeUploadExternal", &chat(channel), || async {
            self.client.open_session(&self.token).files_complete_upload_external(&complete).await
        })
        .await
        .map(|_| ())
    }
}

/// The rate-limit key of messages into `channel`.
fn chat(channel: &str) -> String {
    limit_key(PLATFORM, "chat", channel)
}

/// slack-morphism's errors in the contract's terms, once for the whole
/// adapter: 429 → `RateLimited` (so `send_with_retry` waits as asked), 5xx
/// and network trouble → `Transport` (retried), refusals by what their error
/// code or HTTP status means (not retried).
pub(crate) fn map_error(error: SlackClientError) -> ChannelError {
    match error {
        SlackClientError::RateLimitError(e) => {
            ChannelError::RateLimited { platform: PLATFORM, retry_after: e.retry_after.unwrap_or(Duration::from_secs(1)) }
        }
        SlackClientError::ApiError(e) => refusal(e.code),
        SlackClientError::HttpError(e) => {
            let status = e.status_code.as_u16();
            let message = format!("HTTP {}", e.status_code);
            match status {
                500..=599 => ChannelError::Transport { platform: PLATFORM, status: Some(status), message },
                401 | 403 => ChannelError::Forbidden { platform: PLATFORM, message },
                404 | 410 => ChannelError::NotFound { platform: PLATFORM, message },
                _ => ChannelError::Api { platform: PLATFORM, status: Some(status), message },
            }
        }
        SlackClientError::HttpProtocolError(_) | SlackClientError::EndOfStream(_) => {
            ChannelError::Transport { platform: PLATFORM, status: None, message: error.to_string() }
        }
        other => ChannelError::Other(format!("slack: {other}")),
    }
}

/// A Web API `{"ok": false, "error": code}` (HTTP 200) by what the code means.
fn refusal(code: String) -> ChannelError {
    const FORBIDDEN: [&str; 14] = [
        "not_in_channel",
        "is_archived",
        "restricted_action",
        "missing_scope",
        "not_authed",
        "invalid_auth",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "no_permission",
        "access_denied",
        "ekm_access_denied",
        "team_access_not_granted",
        "cant_update_message",
    ];
    if code.ends_with("_not_found") {
        ChannelError::NotFound { platform: PLATFORM, message: code }
    } else if FORBIDDEN.contains(&code.as_str()) {
        ChannelError::Forbidden { platform: PLATFORM, message: code }
    } else {
        ChannelError::Api { platform: PLATFORM, status: None, message: code }
    }
}

/// The outbound half of the adapter, given to the server as `Arc<dyn Channel>`.
pub struct SlackChannel {
    api: Arc<Api>,
}

impl SlackChannel {
    pub(crate) fn new(api: Arc<Api>) -> SlackChannel {
        SlackChannel { api }
    }

    /// Post a session's message where `destination` wants it: under
    /// `threads = "per_session"`, a reply in the session's thread (also in
    /// the channel with `broadcast`), or, when the session has none yet or
    /// its root was deleted, a new top-level message that roots it. Returns
    /// the channel, the message's `ts` and the session thread's root.
    async fn post_in_session_thread(
        &self,
        destination: &Destination,
        broadcast: bool,
        text: String,
        blocks: Vec<SlackBlock>,
    ) -> Result<(String, String, Option<String>), ChannelError> {
        if destination.threads != Threads::PerSession {
            let (chat, ts) = self.api.post_message(&destination.chat, None, text, blocks).await?;
            return Ok((chat, ts, None));
        }
        if let Some(root) = destination.thread.as_deref() {
            match self.api.post_message_as(&destination.chat, Some(root), broadcast, text.clone(), blocks.clone()).await {
                Ok((chat, ts)) => return Ok((chat, ts, Some(root.to_string()))),
                // The root was deleted: this message roots a new thread.
                Err(ChannelError::NotFound { message, .. }) => {
                    tracing::warn!(chat = %destination.chat, root, %message, "the session's thread is gone; starting a new one");
                }
                Err(e) => return Err(e),
            }
        }
        let (chat, ts) = self.api.post_message(&destination.chat, None, text, blocks).await?;
        Ok((chat, ts.clone(), Some(ts)))
    }
}

#[async_trait]
impl Channel for SlackChannel {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    /// Under `threads = "per_session"`, the session's first card is the
    /// thread's root and every later one a reply in it, also broadcast to
    /// the channel (a new version nobody should miss).
    async fn post_card(&self, destination: &Destination, card: &Card, document: &Document) -> Result<Delivery, ChannelError> {
        let blocks = render::card_blocks(card, destination.style);
        let (chat, ts, root) = self.post_in_session_thread(destination, true, render::card_fallback(card), blocks).await?;
        // The card is posted; a failed upload must not make the server post
        // it again. "View plan" re-sends the document on demand.
        let thread = root.as_deref().unwrap_or(&ts);
        if let Err(e) = self.api.upload(&chat, Some(thread), document, None).await {
            tracing::warn!(error = %e, chat, ts, "plan document upload failed; the card is posted without it");
        }
        Ok(Delivery { thread: root, ..Delivery::posted(destination, chat, ts) })
    }

    /// In the parent card's thread, with its document beside it; the
    /// delivery remembers the thread, so reminders go there too.
    async fn post_card_under(
        &self,
        parent: &Delivery,
        destination: &Destination,
        card: &Card,
        document: &Document,
    ) -> Result<Delivery, ChannelError> {
        let thread = parent.thread.as_deref().unwrap_or(&parent.message_id);
        let blocks = render::card_blocks(card, destination.style);
        let (chat, ts) = self.api.post_message(&parent.chat, Some(thread), render::card_fallback(card), blocks).await?;
        if let Err(e) = self.api.upload(&chat, Some(thread), document, None).await {
            tracing::warn!(error = %e, chat, ts, "plan document upload failed; the card is posted without it");
        }
        let mut delivery = Delivery::posted(destination, chat, ts);
        delivery.thread = Some(thread.to_string());
        Ok(delivery)
    }

    async fn update_card(&self, delivery: &Delivery, card: &Card) -> Result<(), ChannelError> {
        let blocks = render::card_blocks(card, delivery.style);
        self.api.update(&delivery.chat, &delivery.message_id, render::card_fallback(card), blocks).await
    }

    async fn send_nudge(&self, delivery: &Delivery, card: &Card, text: &str) -> Result<(), ChannelError> {
        let thread = delivery.thread.as_deref().unwrap_or(&delivery.message_id);
        let blocks = render::nudge_blocks(card, delivery.style, text);
        self.api.post_message(&delivery.chat, Some(thread), render::escape(text), blocks).await.map(|_| ())
    }

    async fn send_document(&self, chat: &str, reply_to: Option<&str>, document: &Document) -> Result<(), ChannelError> {
        self.api.upload(chat, reply_to, document, None).await
    }

    async fn send_text(&self, chat: &str, text: &str) -> Result<(), ChannelError> {
        self.api.post_message(chat, None, render::cut_chars(&render::escape(text), 3000), render::text_blocks(text)).await.map(|_| ())
    }

    async fn post_question(&self, destination: &Destination, question: &Question) -> Result<Delivery, ChannelError> {
        let blocks = render::question_blocks(question, destination.style);
        let (chat, ts, root) = self.post_in_session_thread(destination, false, render::question_fallback(question), blocks).await?;
        Ok(Delivery { thread: root, ..Delivery::posted(destination, chat, ts) })
    }

    async fn update_question(&self, delivery: &Delivery, question: &Question) -> Result<(), ChannelError> {
        let blocks = render::question_blocks(question, delivery.style);
        self.api.update(&delivery.chat, &delivery.message_id, render::question_fallback(question), blocks).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use slack_morphism::errors::{
        SlackClientApiError, SlackClientEndOfStreamError, SlackClientHttpError, SlackClientSocketModeProtocolError, SlackRateLimitError,
    };

    /// Every kind of slack-morphism error lands on its contract variant.
    #[test]
    fn slack_errors_map_to_typed_variants() {
        let api = |code: &str| {
            SlackClientError::ApiError(SlackClientApiError {
                code: code.to_string(),
                errors: None,
                warnings: None,
                http_response_body: Some(format!("{{\"ok\":false,\"error\":\"{code}\"}}")),
            })
        };
        let http = |status: u16| {
            SlackClientError::HttpError(SlackClientHttpError {
                status_code: StatusCode::from_u16(status).unwrap(),
                http_response_body: Some("<html>".into()),
            })
        };
        let limited = |retry_after: Option<u64>| {
            SlackClientError::RateLimitError(SlackRateLimitError {
                retry_after: retry_after.map(Duration::from_secs),
                code: Some("ratelimited".into()),
                warnings: None,
                http_response_body: None,
            })
        };
        let table: Vec<(SlackClientError, &str, Option<u16>, &str)> = vec![
            (api("channel_not_found"), "not_found", None, "slack refused the request: channel_not_found"),
            (api("message_not_found"), "not_found", None, "slack refused the request: message_not_found"),
            (api("not_in_channel"), "forbidden", None, "slack refused the request: not_in_channel"),
            (api("missing_scope"), "forbidden", None, "slack refused the request: missing_scope"),
            (api("invalid_auth"), "forbidden", None, "slack refused the request: invalid_auth"),
            (api("invalid_blocks"), "api", None, "slack refused the request: invalid_blocks"),
            (api("msg_too_long"), "api", None, "slack refused the request: msg_too_long"),
            (http(404), "not_found", None, "slack refused the request: HTTP 404 Not Found"),
            (http(403), "forbidden", None, "slack refused the request: HTTP 403 Forbidden"),
            (http(400), "api", Some(400), "slack refused the request: HTTP 400 Bad Request"),
            (http(500), "transport", Some(500), "slack is unreachable: HTTP 500 Internal Server Error"),
            (http(503), "transport", Some(503), "slack is unreachable: HTTP 503 Service Unavailable"),
            (limited(Some(30)), "rate_limited", None, "rate limited by slack; retry after 30s"),
            (limited(None), "rate_limited", None, "rate limited by slack; retry after 1s"),
            (
                SlackClientError::EndOfStream(SlackClientEndOfStreamError {}),
                "transport",
                None,
                "slack is unreachable: Slack end of stream error",
            ),
            (
                SlackClientError::SocketModeProtocolError(SlackClientSocketModeProtocolError { message: "bad envelope".into() }),
                "other",
                None,
                "slack: Slack socket mode protocol error: bad envelope",
            ),
        ];
        for (error, expected, expected_status, expected_shown) in table {
            let mapped = map_error(error);
            assert_eq!(
                (mapped.kind(), mapped.status(), mapped.to_string().as_str()),
                (expected, expected_status, expected_shown),
                "{mapped:?}"
            );
        }
    }
}
