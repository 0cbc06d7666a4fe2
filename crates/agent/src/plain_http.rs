//! Plain `http://` to the plangate server (the default `PLANGATE_URL`,
//! `http://127.0.0.1:8787`) without building TLS.
//!
//! A hook process sends one or two requests and exits, so what its client
//! costs to build is paid once per tool call: reqwest's client builds its
//! rustls configuration (the crypto provider, the compiled-in root store) at
//! every start, also for an `http://` URL that never uses it
//! (docs/PERFORMANCE.md §28). For `http://` the [`crate::client::Client`]
//! sends through hyper-util's client here, over the same hyper, the same
//! connector and the same connection settings reqwest itself uses (reqwest
//! 0.12 is built on them: TCP_NODELAY, 15 s keep-alive probes, the connect
//! timeout, an idle pool of 90 s); `https://` stays with reqwest.
//!
//! What the caller sees is what reqwest gave: the status, the headers, the
//! body as text (invalid UTF-8 replaced), and on failure an error whose
//! chain reads as reqwest's ("error sending request for url (…): client
//! error (Connect): tcp connect error: …") and that [`is_timeout`] tells
//! apart as reqwest's `is_timeout` does. A redirect is not followed here:
//! the client hands it to reqwest, which follows it as before.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

/// A client of one `http://` server, with reqwest's connection settings.
#[derive(Clone, Debug)]
pub(crate) struct PlainHttp {
    client: Client<HttpConnector, Full<Bytes>>,
}

/// A failed exchange: what failed (as reqwest words it) and why.
#[derive(Debug)]
pub(crate) struct Failure {
    what: String,
    cause: Box<dyn StdError + Send + Sync>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl StdError for Failure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.cause)
    }
}

/// An answer: status, headers and the body as text.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl PlainHttp {
    /// No I/O and no TLS: the connector and an empty pool.
    pub(crate) fn new(connect_timeout: Duration) -> PlainHttp {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        http.set_keepalive(Some(Duration::from_secs(15)));
        http.set_keepalive_interval(Some(Duration::from_secs(15)));
        http.set_keepalive_retries(Some(3));
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(http);
        PlainHttp { client }
    }

    /// Send one request to `uri` (`url`, as the caller wrote it, for the
    /// messages) and read the whole answer. The caller bounds it in time
    /// (reqwest's per-request timeout).
    pub(crate) async fn send(
        &self,
        method: Method,
        uri: Uri,
        url: &str,
        token: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Result<Answer, Failure> {
        let builder = |cause: Box<dyn StdError + Send + Sync>| Failure { what: "builder error".into(), cause };
        let mut request = Request::builder().method(method).uri(uri).header(ACCEPT, HeaderValue::from_static("*/*"));
        if let Some(token) = token {
            let mut value = HeaderValue::try_from(format!("Bearer {token}")).map_err(|e| builder(e.into()))?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        if body.is_some() {
            request = request.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let request = request.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| builder(e.into()))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| Failure { what: format!("error sending request for url ({url})"), cause: e.into() })?;
        let (parts, incoming) = response.into_parts();
        let bytes =
            incoming.collect().await.map_err(|e| Failure { what: "error decoding response body".into(), cause: e.into() })?.to_bytes();
        Ok(Answer { status: parts.status.as_u16(), headers: parts.headers, text: String::from_utf8_lossy(&bytes).into_owned() })
    }
}

/// Whether reqwest would follow `answer` (its default policy: these
/// statuses with a `Location`).
pub(crate) fn is_redirect(answer: &Answer) -> bool {
    matches!(answer.status, 301 | 302 | 303 | 307 | 308) && answer.headers.contains_key(LOCATION)
}

/// Whether `error` is a timeout, as reqwest's `Error::is_timeout` tells it:
/// an I/O `TimedOut` or a hyper timeout anywhere in its chain.
pub(crate) fn is_timeout(error: &(dyn StdError + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout)
            || e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_basics::errors::chain;

    /// A loopback port nothing listens on.
    fn closed_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    }

    #[tokio::test]
    async fn a_refused_connection_reads_as_reqwest_words_it() {
        let url = format!("http://127.0.0.1:{}/v1/gate", closed_port());
        let uri = Uri::try_from(&url).expect("uri");
        let plain = PlainHttp::new(Duration::from_secs(1)).send(Method::POST, uri, &url, Some("t"), Some(b"{}".to_vec())).await;
        let plain = plain.err().expect("refused");
        let http = reqwest::Client::builder().no_proxy().connect_timeout(Duration::from_secs(1)).build().expect("client");
        let theirs = http.post(&url).bearer_auth("t").body("{}").send().await.expect_err("refused");
        assert_eq!(chain(&plain), chain(&theirs));
        assert!(!is_timeout(&plain) && !theirs.is_timeout());
    }
}
