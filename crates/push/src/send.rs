//! Sending one push: the body encrypted for the subscription (RFC 8291
//! aes128gcm, by `web-push-native`), POSTed to its endpoint with RFC 8030's
//! headers and the VAPID header, and what the push service's answer means.

use crate::subscription::{auth_secret, public_key, Subscription};
use crate::vapid::VapidKey;
use std::time::Duration;

/// How long the push service keeps an undelivered push (RFC 8030 `TTL`):
/// a plan's reminder follows after that anyway.
pub const TTL_SECS: u32 = 60 * 60;

/// How long one POST may take before it counts as failed (and is tried
/// again): the plan's chat card waits behind it in the approval's queue.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What the push service's answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// 2xx: accepted for delivery.
    Delivered,
    /// 404 or 410: the subscription is gone; remove it.
    Gone(u16),
    /// 429, 5xx or no answer: try again later.
    Retry(String),
    /// Any other answer (400, 401, 403, 413, …): trying again would not
    /// help; the reason, for the audit.
    Refused(String),
}

/// The sender: the VAPID key, the operator's contact, an HTTP client.
#[derive(Clone)]
pub struct Pusher {
    key: VapidKey,
    subject: String,
    http: reqwest::Client,
}

impl Pusher {
    /// `subject` is the `sub` of every JWT (`mailto:` or `https:`).
    pub fn new(key: VapidKey, subject: &str) -> Result<Pusher, reqwest::Error> {
        // Never follow a redirect: the endpoint was checked, its target was not.
        let http = reqwest::Client::builder().timeout(TIMEOUT).redirect(reqwest::redirect::Policy::none()).build()?;
        Ok(Pusher { key, subject: subject.to_string(), http })
    }

    /// The public key the page subscribes with.
    pub fn public_key(&self) -> String {
        self.key.public_key()
    }

    /// Push `body` to `sub`, the JWT timed from `now_secs`.
    pub async fn send(&self, sub: &Subscription, body: Vec<u8>, now_secs: i64) -> Outcome {
        let (Some(ua_public), Some(auth)) = (public_key(&sub.p256dh), auth_secret(&sub.auth)) else {
            return Outcome::Refused("the stored subscription's keys do not parse".to_string());
        };
        let encrypted = match web_push_native::encrypt(body, &ua_public, &auth.into()) {
            Ok(encrypted) => encrypted,
            Err(e) => return Outcome::Refused(format!("cannot encrypt: {e}")),
        };
        let authorization = match self.key.authorization(&sub.endpoint, &self.subject, now_secs) {
            Ok(header) => header,
            Err(e) => return Outcome::Refused(e.to_string()),
        };
        let sent = self
            .http
            .post(&sub.endpoint)
            .header("TTL", TTL_SECS)
            .header("Urgency", "high")
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Authorization", authorization)
            .body(encrypted)
            .send()
            .await;
        match sent {
            Err(e) => Outcome::Retry(format!("no answer: {e}")),
            Ok(answer) => outcome(answer.status().as_u16()),
        }
    }
}

/// What a status means.
pub fn outcome(status: u16) -> Outcome {
    match status {
        200..=299 => Outcome::Delivered,
        404 | 410 => Outcome::Gone(status),
        429 | 500..=599 => Outcome::Retry(format!("the push service answered {status}")),
        _ => Outcome::Refused(format!("the push service answered {status}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_mean_what_rfc_8030_says() {
        assert_eq!(outcome(201), Outcome::Delivered);
        assert_eq!(outcome(404), Outcome::Gone(404));
        assert_eq!(outcome(410), Outcome::Gone(410));
        assert!(matches!(outcome(429), Outcome::Retry(_)));
        assert!(matches!(outcome(503), Outcome::Retry(_)));
        assert!(matches!(outcome(400), Outcome::Refused(_)));
        assert!(matches!(outcome(301), Outcome::Refused(_)));
    }
}
