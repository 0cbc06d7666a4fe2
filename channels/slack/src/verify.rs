//! Verification of Slack's signed HTTP requests, done before any parsing.
//!
//! Slack signs every request with the app's signing secret:
//! `X-Slack-Signature: v0=<hex HMAC-SHA256(secret, "v0:{timestamp}:{raw body}")>`
//! and sends the timestamp in `X-Slack-Request-Timestamp`. A request older or
//! newer than five minutes is refused, so a captured request cannot be
//! replayed later; within the window, replays are caught by the idempotency
//! keys. The computed MAC is never logged or returned.

use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The shell's one clock (its Unix seconds); injected so tests can move time.
pub use plangate_channel::clock::Clock;

/// How far a request timestamp may be from our clock (Slack's own advice).
pub const WINDOW_SECS: i64 = 300;

pub const SIGNATURE_HEADER: &str = "x-slack-signature";
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";

/// Why a request was refused; the status is what the caller answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No usable `X-Slack-Request-Timestamp`.
    MalformedTimestamp,
    /// Outside the ±300 s window.
    StaleTimestamp,
    /// No usable `X-Slack-Signature`.
    MalformedSignature,
    /// The MAC does not match.
    BadSignature,
}

impl Rejection {
    pub fn status(self) -> StatusCode {
        match self {
            Rejection::MalformedTimestamp | Rejection::MalformedSignature => StatusCode::BAD_REQUEST,
            Rejection::StaleTimestamp | Rejection::BadSignature => StatusCode::UNAUTHORIZED,
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Rejection::MalformedTimestamp => "missing or malformed X-Slack-Request-Timestamp",
            Rejection::StaleTimestamp => "request timestamp outside the 300 s window",
            Rejection::MalformedSignature => "missing or malformed X-Slack-Signature",
            Rejection::BadSignature => "signature mismatch",
        }
    }
}

/// Checks signatures with one signing secret.
pub struct Verifier {
    secret: Vec<u8>,
    clock: Arc<dyn Clock>,
}

impl Verifier {
    pub fn new(secret: &[u8], clock: Arc<dyn Clock>) -> Verifier {
        Verifier { secret: secret.to_vec(), clock }
    }

    /// Verify one request from its headers and raw body.
    pub fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Rejection> {
        let timestamp = headers.get(TIMESTAMP_HEADER).and_then(|v| v.to_str().ok()).ok_or(Rejection::MalformedTimestamp)?;
        let signature = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok()).ok_or(Rejection::MalformedSignature)?;
        self.verify_parts(timestamp, signature, body)
    }

    /// Verify the timestamp header value, the signature header value and the raw body.
    pub fn verify_parts(&self, timestamp: &str, signature: &str, body: &[u8]) -> Result<(), Rejection> {
        if timestamp.is_empty() || timestamp.len() > 12 || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Rejection::MalformedTimestamp);
        }
        let ts: i64 = timestamp.parse().map_err(|_| Rejection::MalformedTimestamp)?;
        if (self.clock.unix_secs() - ts).abs() > WINDOW_SECS {
            return Err(Rejection::StaleTimestamp);
        }
        let hex_mac = signature.strip_prefix("v0=").ok_or(Rejection::MalformedSignature)?;
        let mut given = [0u8; 32];
        hex::decode_to_slice(hex_mac, &mut given).map_err(|_| Rejection::MalformedSignature)?;
        let expected = mac(&self.secret, timestamp, body);
        if bool::from(expected.as_slice().ct_eq(&given)) {
            Ok(())
        } else {
            Err(Rejection::BadSignature)
        }
    }
}

fn mac(secret: &[u8], timestamp: &str, body: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length; the error branch cannot happen.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        Err(_) => return [0; 32],
    };
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// The `X-Slack-Signature` value for a body: what Slack would send. Public
/// for tests and tools that play Slack.
pub fn sign(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    format!("v0={}", hex::encode(mac(secret, timestamp, body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(now: i64) -> Verifier {
        Verifier::new(b"8f742231b10e8888abcd99yyyzzz85a5", Arc::new(plangate_channel::ManualClock::at_secs(now)))
    }

    #[test]
    fn slack_documented_example() {
        // The worked example from Slack's "Verifying requests" guide.
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let sig = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(sign(b"8f742231b10e8888abcd99yyyzzz85a5", "1531420618", body), sig);
        assert_eq!(at(1531420618).verify_parts("1531420618", sig, body), Ok(()));
        assert_eq!(at(1531420618 + 300).verify_parts("1531420618", sig, body), Ok(()));
        assert_eq!(at(1531420618 + 301).verify_parts("1531420618", sig, body), Err(Rejection::StaleTimestamp));
        assert_eq!(at(1531420618 - 301).verify_parts("1531420618", sig, body), Err(Rejection::StaleTimestamp));
        let mut tampered = body.to_vec();
        tampered[0] = b'T';
        assert_eq!(at(1531420618).verify_parts("1531420618", sig, &tampered), Err(Rejection::BadSignature));
    }

    #[test]
    fn malformed_headers() {
        let v = at(100);
        let good = sign(b"8f742231b10e8888abcd99yyyzzz85a5", "100", b"x");
        assert_eq!(v.verify_parts("", &good, b"x"), Err(Rejection::MalformedTimestamp));
        assert_eq!(v.verify_parts("-100", &good, b"x"), Err(Rejection::MalformedTimestamp));
        assert_eq!(v.verify_parts("1e2", &good, b"x"), Err(Rejection::MalformedTimestamp));
        assert_eq!(v.verify_parts("100", &good[3..], b"x"), Err(Rejection::MalformedSignature));
        assert_eq!(v.verify_parts("100", "v0=zz", b"x"), Err(Rejection::MalformedSignature));
        assert_eq!(v.verify_parts("100", &format!("{good}00"), b"x"), Err(Rejection::MalformedSignature));
        assert_eq!(v.verify_parts("100", &good, b"x"), Ok(()));
        // Same MAC, other timestamp: the timestamp is signed too.
        assert_eq!(v.verify_parts("101", &good, b"x"), Err(Rejection::BadSignature));
    }
}
