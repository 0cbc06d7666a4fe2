//! The server's VAPID key (RFC 8292) and the JWT each push carries.
//!
//! The key is a P-256 private scalar, generated on the server's first
//! start and kept as 64 hex digits (`data_dir/vapid-key`, mode 0600, or
//! the store's `push.vapid` cursor when replicas share a store). Its
//! public half, uncompressed and base64url, is the `applicationServerKey`
//! the page subscribes with and the `k=` of every push.
//!
//! The JWT is three base64url parts: the fixed ES256 header, the claims
//! (`aud`: the endpoint's origin, `exp`: at most 24 h ahead, `sub`: the
//! operator's contact), and the raw `r || s` signature. Made here with
//! the `p256` the workspace pins rather than through `jwt-simple`, whose
//! pure-Rust build brings a dozen crates for this one signature.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};

/// How long a push's JWT is valid: well under RFC 8292's 24 h cap.
pub const JWT_VALID_SECS: i64 = 12 * 60 * 60;

/// The server's VAPID signing key.
#[derive(Clone)]
pub struct VapidKey(SigningKey);

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VapidKey({})", self.public_key())
    }
}

/// Why a stored key or an endpoint cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VapidError {
    #[error("the VAPID key is not 64 hex digits of a P-256 private key")]
    BadKey,
    #[error("the endpoint {0:?} has no scheme://host origin")]
    NoOrigin(String),
}

impl VapidKey {
    /// A key from 32 random bytes (the caller's); `None` in the
    /// vanishing case that they are no valid scalar (draw again).
    pub fn from_random(bytes: [u8; 32]) -> Option<VapidKey> {
        SigningKey::from_bytes(&bytes.into()).ok().map(VapidKey)
    }

    /// A key as stored (64 hex digits).
    pub fn from_hex(text: &str) -> Result<VapidKey, VapidError> {
        let bytes: [u8; 32] = hex::decode(text.trim()).ok().and_then(|b| b.try_into().ok()).ok_or(VapidError::BadKey)?;
        VapidKey::from_random(bytes).ok_or(VapidError::BadKey)
    }

    /// As stored.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.to_bytes())
    }

    /// The public key, uncompressed SEC1, base64url without padding: the
    /// page's `applicationServerKey` and the header's `k=`.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0.verifying_key().to_encoded_point(false).as_bytes())
    }

    /// The `Authorization` header of a push to `endpoint`: `vapid t=<JWT>,
    /// k=<public key>`, the JWT valid until `now_secs` + [`JWT_VALID_SECS`].
    pub fn authorization(&self, endpoint: &str, subject: &str, now_secs: i64) -> Result<String, VapidError> {
        let audience = origin(endpoint).ok_or_else(|| VapidError::NoOrigin(endpoint.to_string()))?;
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({"aud": audience, "exp": now_secs + JWT_VALID_SECS, "sub": subject});
        let signed = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature: Signature = self.0.sign(signed.as_bytes());
        Ok(format!("vapid t={signed}.{}, k={}", URL_SAFE_NO_PAD.encode(signature.to_bytes()), self.public_key()))
    }
}

/// `scheme://host[:port]` of a URL, lowercased; `None` without one.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next().filter(|h| !h.is_empty() && !h.contains('@'))?;
    Some(format!("{}://{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;

    #[test]
    fn a_key_round_trips_and_never_prints_its_secret() {
        let key = VapidKey::from_random([7; 32]).expect("a scalar");
        assert_eq!(VapidKey::from_hex(&key.to_hex()).expect("read back").public_key(), key.public_key());
        assert!(!format!("{key:?}").contains(&key.to_hex()));
        for bad in ["", "zz", &"0".repeat(64), &"a".repeat(63)] {
            assert_eq!(VapidKey::from_hex(bad).err(), Some(VapidError::BadKey), "{bad:?}");
        }
    }

    #[test]
    fn the_jwt_names_the_endpoints_origin_and_verifies_with_the_public_key() {
        let key = VapidKey::from_random([9; 32]).expect("a scalar");
        let header = key.authorization("https://push.example:8443/send/abc?x=1", "mailto:ops@example.com", 1_000).expect("signed");
        let (t, k) = header.strip_prefix("vapid t=").and_then(|rest| rest.split_once(", k=")).expect("vapid t=…, k=…");
        assert_eq!(k, key.public_key());
        let parts: Vec<&str> = t.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(claims["aud"], "https://push.example:8443");
        assert_eq!(claims["exp"], 1_000 + JWT_VALID_SECS);
        assert_eq!(claims["sub"], "mailto:ops@example.com");
        let public = VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(k).expect("b64")).expect("a point");
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).expect("b64")).expect("r||s");
        public.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).expect("verifies");
        assert_eq!(key.authorization("no-scheme", "s", 0), Err(VapidError::NoOrigin("no-scheme".into())));
    }
}
