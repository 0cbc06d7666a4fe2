//! A device's push subscription, as the browser's
//! `PushSubscription.toJSON()` gives it, checked before it is stored.
//!
//! Stored as JSON under [`store_key`]: `push.sub.` and the SHA-256 of the
//! endpoint, so a device that subscribes again replaces its record. The
//! record names the approver who subscribed (a subscription reaches only
//! them) and when it expires; the server removes it then, and as soon as
//! the push service answers 404 or 410 for it.
//!
//! The endpoint is where the server will POST, so it is checked like any
//! URL a user hands a server: `https` to a host the operator allows
//! (`push.endpoint_hosts`: the browsers' push services by default), or
//! `http` to a loopback address only (tests, a local relay).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The prefix of every subscription's store key.
pub const KEY_PREFIX: &str = "push.sub.";

/// The browsers' push services (Chrome and Edge's FCM, Firefox's autopush,
/// Safari's, Windows'): the default of `push.endpoint_hosts`. A host
/// matches itself and its subdomains.
pub const DEFAULT_ENDPOINT_HOSTS: [&str; 4] = ["fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com"];

/// What the browser sends: `PushSubscription.toJSON()`.
#[derive(Debug, Clone, Deserialize)]
pub struct Offered {
    pub endpoint: String,
    pub keys: OfferedKeys,
}

/// The subscription's keys, base64url.
#[derive(Debug, Clone, Deserialize)]
pub struct OfferedKeys {
    pub p256dh: String,
    pub auth: String,
}

/// A stored subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub endpoint: String,
    /// The browser's P-256 public key (uncompressed, base64url).
    pub p256dh: String,
    /// The browser's 16-byte authentication secret (base64url).
    pub auth: String,
    /// Who subscribed: the identity approver lists hold (`telegram:111`).
    pub approver: String,
    /// When (ms since the epoch).
    pub created_at: i64,
    /// When it lapses (ms since the epoch): no push after it, and removed.
    pub expires_at: i64,
}

/// Why a subscription is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    #[error("the endpoint is not a URL this server pushes to: {0}")]
    Endpoint(String),
    #[error("the subscription's p256dh is not a P-256 public key")]
    Key,
    #[error("the subscription's auth is not 16 bytes of base64url")]
    Auth,
}

impl Subscription {
    /// Check what a browser offered and make the record: `approver` from
    /// the session, `now` and `lifetime_ms` from the server.
    pub fn accept(
        offered: &Offered,
        approver: &str,
        allowed_hosts: &[String],
        now: i64,
        lifetime_ms: i64,
    ) -> Result<Subscription, SubscriptionError> {
        check_endpoint(&offered.endpoint, allowed_hosts)?;
        public_key(&offered.keys.p256dh).ok_or(SubscriptionError::Key)?;
        auth_secret(&offered.keys.auth).ok_or(SubscriptionError::Auth)?;
        Ok(Subscription {
            endpoint: offered.endpoint.clone(),
            p256dh: offered.keys.p256dh.clone(),
            auth: offered.keys.auth.clone(),
            approver: approver.to_string(),
            created_at: now,
            expires_at: now.saturating_add(lifetime_ms),
        })
    }

    /// Its store key.
    pub fn store_key(&self) -> String {
        store_key(&self.endpoint)
    }

    /// The record as stored.
    pub fn to_record(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored record; `None` when it is not one.
    pub fn from_record(text: &str) -> Option<Subscription> {
        serde_json::from_str(text).ok()
    }
}

/// The store key of the subscription of `endpoint`.
pub fn store_key(endpoint: &str) -> String {
    format!("{KEY_PREFIX}{}", hex::encode(Sha256::digest(endpoint.as_bytes())))
}

/// A subscription's public key, if it is one.
pub(crate) fn public_key(p256dh: &str) -> Option<p256::PublicKey> {
    p256::PublicKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(p256dh.trim_end_matches('=')).ok()?).ok()
}

/// A subscription's authentication secret, if it is 16 bytes.
pub(crate) fn auth_secret(auth: &str) -> Option<[u8; 16]> {
    URL_SAFE_NO_PAD.decode(auth.trim_end_matches('=')).ok()?.try_into().ok()
}

/// `https` to an allowed host (itself or a subdomain), or `http` to a
/// loopback address; nothing else (no user info, no other scheme).
pub fn check_endpoint(endpoint: &str, allowed_hosts: &[String]) -> Result<(), SubscriptionError> {
    let refuse = |why: &str| Err(SubscriptionError::Endpoint(why.to_string()));
    if endpoint.len() > 2048 {
        return refuse("longer than 2048 characters");
    }
    let Some(origin) = crate::vapid::origin(endpoint) else { return refuse("no scheme://host") };
    let (scheme, authority) = origin.split_once("://").unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match scheme {
        "https" => {}
        "http" if loopback => {}
        _ => return refuse("not https (plain http is for a loopback address only)"),
    }
    let allowed = allowed_hosts.iter().any(|allowed| {
        let allowed = allowed.trim().to_ascii_lowercase();
        host == allowed || host.ends_with(&format!(".{allowed}"))
    });
    if !allowed {
        return refuse("its host is not in push.endpoint_hosts");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Vec<String> {
        list.iter().map(|h| h.to_string()).collect()
    }

    fn offered(endpoint: &str) -> Offered {
        let key = p256::SecretKey::from_bytes(&[5u8; 32].into()).expect("scalar").public_key();
        let p256dh = URL_SAFE_NO_PAD.encode(p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&key, false).as_bytes());
        Offered { endpoint: endpoint.to_string(), keys: OfferedKeys { p256dh, auth: URL_SAFE_NO_PAD.encode([1u8; 16]) } }
    }

    #[test]
    fn endpoints_of_the_push_services_and_loopback_pass_others_do_not() {
        let allowed = hosts(&DEFAULT_ENDPOINT_HOSTS);
        assert_eq!(check_endpoint("https://fcm.googleapis.com/fcm/send/abc", &allowed), Ok(()));
        assert_eq!(check_endpoint("https://updates.push.services.mozilla.com/wpush/v2/x", &allowed), Ok(()));
        for bad in [
            "http://fcm.googleapis.com/fcm/send/abc",
            "https://evil.example/fcm.googleapis.com",
            "https://fcm.googleapis.com.evil.example/x",
            "https://user@fcm.googleapis.com/x",
            "file:///etc/passwd",
            "https://169.254.169.254/latest",
            "nonsense",
        ] {
            assert!(check_endpoint(bad, &allowed).is_err(), "{bad}");
        }
        let local = hosts(&["127.0.0.1"]);
        assert_eq!(check_endpoint("http://127.0.0.1:4567/push/1", &local), Ok(()));
        assert!(check_endpoint("http://127.0.0.1:4567/push/1", &allowed).is_err(), "loopback only when allowed");
        assert!(check_endpoint("http://10.0.0.1/push", &hosts(&["10.0.0.1"])).is_err(), "plain http off loopback");
    }

    #[test]
    fn a_subscription_is_checked_and_round_trips() {
        let allowed = hosts(&["127.0.0.1"]);
        let sub = Subscription::accept(&offered("http://127.0.0.1:9/p"), "telegram:1", &allowed, 1_000, 60_000).expect("accepted");
        assert_eq!((sub.approver.as_str(), sub.expires_at), ("telegram:1", 61_000));
        assert_eq!(Subscription::from_record(&sub.to_record()), Some(sub.clone()));
        assert!(sub.store_key().starts_with(KEY_PREFIX) && !sub.store_key().contains("127.0.0.1"));
        let mut bad = offered("http://127.0.0.1:9/p");
        bad.keys.p256dh = URL_SAFE_NO_PAD.encode([4u8; 65]);
        assert_eq!(Subscription::accept(&bad, "a", &allowed, 0, 1), Err(SubscriptionError::Key));
        let mut bad = offered("http://127.0.0.1:9/p");
        bad.keys.auth = URL_SAFE_NO_PAD.encode([1u8; 15]);
        assert_eq!(Subscription::accept(&bad, "a", &allowed, 0, 1), Err(SubscriptionError::Auth));
    }
}
