//! A software passkey: a WebAuthn authenticator with one ES256 credential,
//! answering registration and assertion challenges with the bytes a
//! browser would send (`clientDataJSON`, `attestationObject` with
//! attestation "none", `authenticatorData`, a DER signature). The page's
//! refusals (no user verification, another person's passkey, a replay, an
//! expired challenge, another plan) are tested with it over plain HTTP;
//! headless Chromium's virtual authenticator covers the browser's side.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ciborium::value::Value;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use sha2::{Digest, Sha256};

/// One credential of a software authenticator.
pub struct SoftPasskey {
    key: SigningKey,
    /// The credential id.
    pub id: Vec<u8>,
    /// The RP id its credential is scoped to (the page's host).
    pub rp_id: String,
    /// The origin the "browser" answers from.
    pub origin: String,
    /// The signature counter, counted up on each assertion.
    pub count: u32,
    /// Whether it reports user verification (a PIN, a fingerprint).
    pub verifies_user: bool,
}

/// What a browser posts for an assertion, base64url.
#[derive(Debug, Clone)]
pub struct Assertion {
    pub id: String,
    pub client_data: String,
    pub authenticator_data: String,
    pub signature: String,
}

pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn unb64(text: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(text).expect("base64url")
}

impl SoftPasskey {
    /// A credential whose key and id derive from `seed` (tests tell them apart by it).
    pub fn new(rp_id: &str, origin: &str, seed: u8) -> SoftPasskey {
        let key = SigningKey::from_bytes(&[seed.max(1); 32].into()).expect("a valid P-256 scalar");
        SoftPasskey { key, id: vec![seed; 20], rp_id: rp_id.to_string(), origin: origin.to_string(), count: 0, verifies_user: true }
    }

    pub fn id_b64(&self) -> String {
        b64(&self.id)
    }

    pub fn client_data(&self, ty: &str, challenge: &[u8]) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"type": ty, "challenge": b64(challenge), "origin": self.origin, "crossOrigin": false}))
            .expect("json")
    }

    fn auth_data(&self, attested: bool) -> Vec<u8> {
        let mut flags = 0x01;
        if self.verifies_user {
            flags |= 0x04;
        }
        if attested {
            flags |= 0x40;
        }
        let mut data = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        data.push(flags);
        data.extend_from_slice(&self.count.to_be_bytes());
        if attested {
            data.extend_from_slice(&[0; 16]);
            data.extend_from_slice(&u16::try_from(self.id.len()).expect("short id").to_be_bytes());
            data.extend_from_slice(&self.id);
            let point = self.key.verifying_key().to_encoded_point(false);
            let cose = Value::Map(vec![
                (Value::Integer(1.into()), Value::Integer(2.into())),
                (Value::Integer(3.into()), Value::Integer((-7).into())),
                (Value::Integer((-1).into()), Value::Integer(1.into())),
                (Value::Integer((-2).into()), Value::Bytes(point.x().expect("x").to_vec())),
                (Value::Integer((-3).into()), Value::Bytes(point.y().expect("y").to_vec())),
            ]);
            ciborium::ser::into_writer(&cose, &mut data).expect("cbor");
        }
        data
    }

    /// The registration answer to `challenge`: `(clientDataJSON, attestationObject)`, base64url.
    pub fn register(&self, challenge: &[u8]) -> (String, String) {
        let object = Value::Map(vec![
            (Value::Text("fmt".into()), Value::Text("none".into())),
            (Value::Text("attStmt".into()), Value::Map(vec![])),
            (Value::Text("authData".into()), Value::Bytes(self.auth_data(true))),
        ]);
        let mut bytes = Vec::new();
        ciborium::ser::into_writer(&object, &mut bytes).expect("cbor");
        (b64(&self.client_data("webauthn.create", challenge)), b64(&bytes))
    }

    /// The assertion answering `challenge`, its counter one up.
    pub fn assert(&mut self, challenge: &[u8]) -> Assertion {
        self.count += 1;
        let client_data = self.client_data("webauthn.get", challenge);
        let auth_data = self.auth_data(false);
        let mut signed = auth_data.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data));
        let signature: Signature = self.key.sign(&signed);
        Assertion {
            id: self.id_b64(),
            client_data: b64(&client_data),
            authenticator_data: b64(&auth_data),
            signature: b64(signature.to_der().as_bytes()),
        }
    }
}
