//! The HTTP interactions endpoint (`transport = "http"`).
//!
//! Order matters: the signature is checked over the raw bytes, then the
//! timestamp window, and only then is the body parsed. Anything that fails
//! gets a bare 401 (Discord probes endpoints with bad signatures and
//! disables the ones that accept them).

use crate::inbound::Inbox;
use crate::Clock;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use ed25519_dalek::{Signature, VerifyingKey};
use serenity::all::Interaction;
use std::sync::Arc;

/// Where the server mounts the endpoint.
pub const INTERACTIONS_PATH: &str = "/discord/interactions";

/// Ed25519 verification of Discord's request signatures with `verify_strict`
/// semantics: non-canonical `S`, small-order `R` and weak (small-order)
/// public keys are refused. serenity's `interactions_endpoint::Verifier`
/// calls the lenient `verify`, under which the identity key accepts a forged
/// signature for any message, and its hex parser takes `+f` as a byte.
#[derive(Clone)]
pub struct Verifier {
    key: VerifyingKey,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Verifier({})", hex::encode(self.key.as_bytes()))
    }
}

fn hex_exact<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    if text.len() != N * 2 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

impl Verifier {
    /// From the application's public key in hex (64 characters).
    pub fn new(public_key_hex: &str) -> Result<Verifier, String> {
        let bytes = hex_exact::<32>(public_key_hex.trim()).ok_or("is not 64 hex characters")?;
        Verifier::from_bytes(bytes)
    }

    pub fn from_bytes(bytes: [u8; 32]) -> Result<Verifier, String> {
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| "is not a valid Ed25519 public key".to_string())?;
        if key.is_weak() {
            return Err("is a small-order (weak) Ed25519 key: every signature could be forged".into());
        }
        Ok(Verifier { key })
    }

    /// Whether `signature_hex` signs `timestamp + body`.
    pub fn verify(&self, signature_hex: &str, timestamp: &str, body: &[u8]) -> bool {
        let Some(bytes) = hex_exact::<64>(signature_hex) else { return false };
        let signature = Signature::from_bytes(&bytes);
        let mut message = Vec::with_capacity(timestamp.len() + body.len());
        message.extend_from_slice(timestamp.as_bytes());
        message.extend_from_slice(body);
        self.key.verify_strict(&message, &signature).is_ok()
    }

    #[cfg(test)]
    fn weak_for_test(bytes: [u8; 32]) -> Verifier {
        Verifier { key: VerifyingKey::from_bytes(&bytes).expect("decodes") }
    }
}

struct Endpoint {
    verifier: Verifier,
    inbox: Arc<Inbox>,
    window_secs: i64,
    clock: Arc<dyn Clock>,
}

pub(crate) fn router(verifier: Verifier, inbox: Arc<Inbox>, window_secs: u64, clock: Arc<dyn Clock>) -> Router {
    let endpoint = Endpoint { verifier, inbox, window_secs: i64::try_from(window_secs).unwrap_or(i64::MAX), clock };
    Router::new().route(INTERACTIONS_PATH, post(interactions)).with_state(Arc::new(endpoint))
}

fn unauthorized(why: &'static str) -> Response {
    tracing::warn!(why, "discord interactions endpoint: request refused");
    (StatusCode::UNAUTHORIZED, "invalid request signature").into_response()
}

async fn interactions(State(endpoint): State<Arc<Endpoint>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(signature), Some(timestamp)) = (header("x-signature-ed25519"), header("x-signature-timestamp")) else {
        return unauthorized("missing signature headers");
    };
    if !endpoint.verifier.verify(signature, timestamp, &body) {
        return unauthorized("bad signature");
    }
    let Some(sent_at) = timestamp.parse::<i64>().ok().filter(|_| timestamp.bytes().all(|b| b.is_ascii_digit())) else {
        return unauthorized("malformed timestamp");
    };
    if endpoint.clock.unix_secs().saturating_sub(sent_at).abs() > endpoint.window_secs {
        return unauthorized("timestamp outside the window");
    }
    let interaction: Interaction = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(error = %e, "discord interactions endpoint: unreadable interaction");
            return (StatusCode::BAD_REQUEST, "unreadable interaction").into_response();
        }
    };
    let outcome = endpoint.inbox.process(interaction).await;
    let response = match outcome.initial {
        Some(initial) => axum::Json(initial).into_response(),
        None => (StatusCode::CONFLICT, "interaction already handled").into_response(),
    };
    if let Some(sent) = outcome.sent {
        let _ = sent.send(());
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_key_forgery_is_refused() {
        // The identity point: a small-order key. Under the lenient `verify`,
        // R = identity and S = 0 "sign" every message for it.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(Verifier::new(&hex::encode(identity)).is_err(), "weak keys must be refused at start");
        let weak = Verifier::weak_for_test(identity);
        let mut forged = [0u8; 64];
        forged[0] = 1;
        let lenient = ed25519_dalek::Verifier::verify(&weak.key, b"1700000000{}", &Signature::from_bytes(&forged));
        assert!(lenient.is_ok(), "the lenient check accepts the forgery (this is why it is not used)");
        assert!(!weak.verify(&hex::encode(forged), "1700000000", b"{}"));
    }

    #[test]
    fn hex_is_strict() {
        assert!(hex_exact::<1>("+f").is_none());
        assert!(hex_exact::<1>("0f").is_some());
        assert!(hex_exact::<1>("0").is_none());
        assert!(hex_exact::<1>("é").is_none());
    }
}
