//! A Web Push service on 127.0.0.1, the push service's side of RFC 8030,
//! for plangate's `[push]`.
//!
//! A test makes [`Device`]s: each holds its own P-256 key and 16-byte auth
//! secret, as a browser's subscription does, and its endpoint is this
//! fake (`/push/<device>`). For every request the fake records what it
//! checked, independently of plangate's code:
//!
//! * the VAPID header (RFC 8292): `vapid t=<JWT>, k=<key>`, the JWT's
//!   ES256 signature verified with `k` (p256), its `aud` this fake's
//!   origin, its `exp` in the future and at most 24 h ahead, a `sub`;
//! * the body (RFC 8291 aes128gcm), decrypted with the device's private
//!   key and auth secret: HKDF by hand over HMAC-SHA-256, AES-128-GCM from
//!   `aes-gcm`, the padding delimiter checked.
//!
//! It answers from a per-device script (201 when none): 404, 410, 429,
//! 500, whatever the test needs.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use p256::ecdsa::signature::Verifier;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use sha2::Sha256;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A browser's side of one subscription: its keys, and its endpoint here.
#[derive(Clone)]
pub struct Device {
    pub name: String,
    secret: p256::SecretKey,
    auth: [u8; 16],
    pub endpoint: String,
}

impl Device {
    /// `PushSubscription.toJSON()` of this device, as the page sends it.
    pub fn subscription(&self) -> serde_json::Value {
        serde_json::json!({
            "endpoint": self.endpoint,
            "expirationTime": null,
            "keys": {
                "p256dh": URL_SAFE_NO_PAD.encode(self.secret.public_key().to_encoded_point(false).as_bytes()),
                "auth": URL_SAFE_NO_PAD.encode(self.auth),
            }
        })
    }
}

/// One push the fake got.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub device: String,
    pub at: Instant,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    /// The VAPID JWT's claims, once its signature, audience and expiry
    /// checked out; otherwise why not.
    pub vapid: Result<serde_json::Value, String>,
    /// The VAPID public key (`k=`).
    pub vapid_key: String,
    /// The body decrypted with the device's keys; otherwise why not.
    pub plaintext: Result<Vec<u8>, String>,
    /// The raw (encrypted) body.
    pub body: Vec<u8>,
    pub answered: u16,
}

impl Pushed {
    /// The decrypted body as text ("" when it did not decrypt).
    pub fn text(&self) -> String {
        self.plaintext.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default()
    }
}

#[derive(Default)]
struct Inner {
    devices: HashMap<String, Device>,
    script: HashMap<String, VecDeque<u16>>,
    pushed: Vec<Pushed>,
}

struct Shared {
    origin: String,
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

/// The fake push service; stops serving when dropped.
pub struct FakePush {
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl Drop for FakePush {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakePush {
    /// Bind 127.0.0.1:0.
    pub async fn start() -> FakePush {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake push service");
        let origin = format!("http://{}", listener.local_addr().expect("local addr"));
        let shared = Arc::new(Shared { origin, inner: Mutex::new(Inner::default()), changed: watch::channel(0).0 });
        let app = Router::new().route("/push/{device}", post(receive)).with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakePush { shared, server }
    }

    /// `http://127.0.0.1:PORT`: the JWT's expected audience.
    pub fn origin(&self) -> &str {
        &self.shared.origin
    }

    /// A new device (fresh keys) whose endpoint is here.
    pub fn device(&self, name: &str) -> Device {
        let device = Device {
            name: name.to_string(),
            secret: p256::SecretKey::random(&mut rand::rngs::OsRng),
            auth: rand::random(),
            endpoint: format!("{}/push/{name}", self.shared.origin),
        };
        self.lock().devices.insert(name.to_string(), device.clone());
        device
    }

    /// Answer the next pushes to `device` with these statuses, in order.
    pub fn script(&self, device: &str, statuses: impl IntoIterator<Item = u16>) {
        self.lock().script.entry(device.to_string()).or_default().extend(statuses);
    }

    /// Every push so far, in arrival order.
    pub fn pushed(&self) -> Vec<Pushed> {
        self.lock().pushed.clone()
    }

    /// Wait until `check` finds what it looks for in the pushes so far.
    pub async fn wait_for<T>(&self, within: Duration, what: &str, mut check: impl FnMut(&[Pushed]) -> Option<T>) -> T {
        let failure = || format!("push service: still not true after {within:?}: {what}; got {:#?}", self.pushed());
        crate::wait::until(&self.shared.changed, within, || check(&self.pushed()), failure).await
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn receive(State(shared): State<Arc<Shared>>, Path(device): Path<String>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default().to_vec();
    let headers: HashMap<String, String> =
        parts.headers.iter().map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect();
    let authorization = headers.get("authorization").cloned().unwrap_or_default();
    let (vapid, vapid_key) = check_vapid(&authorization, &shared.origin);
    let status = {
        let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
        let known = inner.devices.get(&device).cloned();
        let plaintext = match (&known, headers.get("content-encoding").map(String::as_str)) {
            (None, _) => Err(format!("no device {device:?}")),
            (Some(_), encoding) if encoding != Some("aes128gcm") => Err(format!("Content-Encoding {encoding:?}")),
            (Some(d), _) => decrypt(&body, &d.secret, &d.auth),
        };
        let scripted = inner.script.get_mut(&device).and_then(VecDeque::pop_front);
        let status = match (&known, &vapid) {
            (None, _) => 404,
            (_, Err(_)) => 401,
            _ => scripted.unwrap_or(201),
        };
        inner.pushed.push(Pushed { device, at: Instant::now(), headers, vapid, vapid_key, plaintext, body, answered: status });
        status
    };
    shared.changed.send_modify(|n| *n += 1);
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR).into_response()
}

/// The JWT's claims if `vapid t=…, k=…` verifies for `origin`; the key.
fn check_vapid(header: &str, origin: &str) -> (Result<serde_json::Value, String>, String) {
    let Some((t, k)) = header.strip_prefix("vapid t=").and_then(|rest| rest.split_once(", k=")) else {
        return (Err(format!("not a vapid header: {header:?}")), String::new());
    };
    let checked = (|| {
        let parts: Vec<&str> = t.split('.').collect();
        let [head, claims, signature] = parts[..] else { return Err("not three JWT parts".to_string()) };
        let head: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(head).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        if head["alg"] != "ES256" {
            return Err(format!("alg {}", head["alg"]));
        }
        let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(k).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let sig = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        key.verify(format!("{}.{claims}", t.split('.').next().unwrap_or_default()).as_bytes(), &sig)
            .map_err(|_| "bad signature".to_string())?;
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        if claims["aud"] != origin {
            return Err(format!("aud {} is not {origin}", claims["aud"]));
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        let exp = claims["exp"].as_i64().unwrap_or(0);
        if exp <= now || exp > now + 24 * 60 * 60 {
            return Err(format!("exp {exp} is not within the next 24 h (now {now})"));
        }
        if !claims["sub"].as_str().is_some_and(|s| s.starts_with("mailto:") || s.starts_with("https://")) {
            return Err(format!("sub {}", claims["sub"]));
        }
        Ok(claims)
    })();
    (checked, k.to_string())
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    parts.iter().for_each(|p| mac.update(p));
    mac.finalize().into_bytes().into()
}

/// HKDF-SHA-256, one block: extract with `salt`, expand `info` to `len` ≤ 32.
fn hkdf(salt: &[u8], ikm: &[u8], info: &[u8], len: usize) -> Vec<u8> {
    let prk = hmac(salt, &[ikm]);
    hmac(&prk, &[info, &[1]])[..len].to_vec()
}

/// RFC 8291 / RFC 8188 aes128gcm, one record, with the device's keys.
fn decrypt(body: &[u8], secret: &p256::SecretKey, auth: &[u8; 16]) -> Result<Vec<u8>, String> {
    if body.len() < 21 {
        return Err("shorter than the aes128gcm header".into());
    }
    let (salt, idlen) = (&body[..16], body[20] as usize);
    let keyid = body.get(21..21 + idlen).ok_or("cut key id")?;
    let ciphertext = &body[21 + idlen..];
    let sender = p256::PublicKey::from_sec1_bytes(keyid).map_err(|_| "the key id is no P-256 key")?;
    let shared = p256::ecdh::diffie_hellman(secret.to_nonzero_scalar(), sender.as_affine());
    let ua_public = secret.public_key().to_encoded_point(false);
    let info = [b"WebPush: info\0".as_slice(), ua_public.as_bytes(), keyid].concat();
    let ikm = hkdf(auth, shared.raw_secret_bytes(), &info, 32);
    let cek = hkdf(salt, &ikm, b"Content-Encoding: aes128gcm\0", 16);
    let nonce = hkdf(salt, &ikm, b"Content-Encoding: nonce\0", 12);
    let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|e| e.to_string())?;
    let mut padded = cipher.decrypt(Nonce::from_slice(&nonce), ciphertext).map_err(|_| "AES-GCM: not for these keys")?;
    while padded.last() == Some(&0) {
        padded.pop();
    }
    match padded.pop() {
        Some(2) => Ok(padded),
        other => Err(format!("no last-record delimiter (found {other:?})")),
    }
}
