//! Passkeys: the WebAuthn relying party of the page's step-up
//! (registration with "none" attestation, and assertions), pure functions
//! over the bytes a browser returns.
//!
//! Where the operator's policy says `step_up`, a person's approval counts
//! only with an assertion of a passkey that person registered, for a
//! challenge that binds the approval id, the plan hash, the person and a
//! single-use nonce ([`ChallengeKey`]), with user verification (a PIN, a
//! fingerprint, a face), at most [`CHALLENGE_TTL`] old.
//!
//! **Why not `webauthn-rs`.** It is the well-kept Rust relying party, but
//! 0.5 hard-depends on the `openssl` crate: a machine with only Rust would
//! need OpenSSL's headers, or its `vendored` feature would build OpenSSL
//! from C (perl, make and a C compiler; measured in docs/SECURITY.md,
//! *Passkey step-up*). What a relying party must check of an assertion is
//! small and fixed by the spec (WebAuthn Level 2, §7.2): the client data's
//! type, challenge and origin; the authenticator data's RP id hash and its
//! UP and UV flags; the signature counter; the signature over
//! `authenticatorData ‖ SHA-256(clientDataJSON)`. Registration with
//! attestation "none" needs only the credential's COSE key. So this module
//! does exactly that on RustCrypto's `p256` (ES256, what passkeys use) and
//! `ed25519-dalek` (EdDSA, already in the tree), with `ciborium` for CBOR.
//! Not done: RS256 keys (some Windows Hello authenticators), attestation
//! statements (no authenticator model is enforced), extensions.
//!
//! Challenges are stateless like the page's other tokens: an HMAC under a
//! key derived from the web secret, so any replica verifies what another
//! issued. Only its single use is a record in the store (`use_once`).

use crate::auth::mac;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ciborium::value::Value;
use plangate_engine::{ApprovalId, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::time::Duration;
use thiserror::Error;

/// How long a challenge may be answered: older is refused.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(5 * 60);
/// COSE algorithm ids the page asks authenticators for, preferred first.
pub const ES256: i64 = -7;
pub const EDDSA: i64 = -8;

const VERSION: u8 = 1;
const KIND_REGISTER: u8 = b'R';
const KIND_CONFIRM: u8 = b'A';
const MAC_LEN: usize = 32;
const FLAG_UP: u8 = 0x01;
const FLAG_UV: u8 = 0x04;
const FLAG_AT: u8 = 0x40;
/// The longest credential id the spec allows.
const MAX_CREDENTIAL_ID: usize = 1023;

/// Why a registration or a confirmation was refused. Each is a sentence for
/// the person, and nothing was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PasskeyError {
    #[error("The browser's answer is not a WebAuthn {0} response; reload the page and try again.")]
    Malformed(&'static str),
    #[error("This passkey answer is not for this page (a challenge plangate did not issue, or one for another plan, person or purpose); reload the page and try again.")]
    WrongChallenge,
    #[error("The passkey answer is for another version of the plan than the one waiting; reload the page and confirm what it shows now.")]
    OtherPlan,
    #[error("The challenge expired (answers are accepted within 5 minutes); reload the page and try again.")]
    Expired,
    #[error("This challenge was answered before; a confirmation works once. Reload the page and try again.")]
    Replayed,
    #[error(
        "The passkey did not verify you (user verification is required: a PIN, a fingerprint or a face); try again with one that does."
    )]
    NoUserVerification,
    #[error("The passkey answer came from another site ({0}); open plangate's own page.")]
    WrongOrigin(String),
    #[error("That is not a passkey you registered with plangate; use the one registered on your passkey page.")]
    NotYours,
    #[error("The passkey's signature does not verify; nothing was recorded.")]
    BadSignature,
    #[error("The passkey's counter went backwards (a cloned authenticator?); nothing was recorded. Ask the operator.")]
    Counter,
    #[error("This kind of passkey key is not supported (only ES256 and EdDSA); try another authenticator.")]
    Unsupported,
}

/// A registered passkey, as the store keeps it (JSON in the cursor
/// [`cursor_key`]): one per person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passkey {
    /// The credential id, base64url (what the audit names).
    pub id: String,
    /// [`ES256`] or [`EDDSA`].
    pub alg: i64,
    /// The public key, base64url: SEC1 uncompressed for ES256, the 32
    /// bytes for EdDSA.
    pub key: String,
    /// The authenticator's signature counter at the last use.
    pub sign_count: u32,
    pub created_at: Timestamp,
}

/// The store cursor holding `approver`'s passkey.
pub fn cursor_key(approver: &str) -> String {
    format!("passkey:{approver}")
}

pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn unb64(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

/// What a challenge is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// Registering a passkey.
    Register,
    /// Confirming an approval of this plan hash.
    Confirm { approval: ApprovalId, plan_hash: String },
}

/// A challenge this server issued, opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub purpose: Purpose,
    /// Who it was issued to (`telegram:111`).
    pub approver: String,
    pub issued: Timestamp,
    pub nonce: [u8; 16],
}

impl Challenge {
    /// What makes the challenge single-use across replicas.
    pub fn once_key(&self) -> String {
        format!("passkey-challenge:{}", hex::encode(self.nonce))
    }

    /// Whether it is still within [`CHALLENGE_TTL`] at `now` (and not from
    /// a clock more than a minute ahead).
    pub fn fresh(&self, now: Timestamp) -> bool {
        let ttl = CHALLENGE_TTL.as_millis() as i64;
        self.issued.0 <= now.0.saturating_add(crate::auth::CLOCK_SKEW.as_millis() as i64) && now.0.saturating_sub(self.issued.0) <= ttl
    }
}

/// Signs and opens challenges: a key derived from the web secret for this
/// purpose alone, so no other token of the page passes for a challenge.
#[derive(Clone)]
pub struct ChallengeKey([u8; 32]);

impl std::fmt::Debug for ChallengeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChallengeKey(…)")
    }
}

impl ChallengeKey {
    pub fn derive(secret: &[u8]) -> ChallengeKey {
        ChallengeKey(mac(secret, &[b"plangate web key v1\0", b"passkey challenge"]))
    }

    /// The challenge bytes for `approver` and `purpose`, issued at `now`
    /// with a fresh nonce: `version ‖ kind ‖ time ‖ nonce ‖ [approval id ‖
    /// hash] ‖ approver ‖ HMAC-SHA256`, texts length-prefixed (u16).
    pub fn issue(&self, purpose: &Purpose, approver: &str, now: Timestamp, nonce: [u8; 16]) -> Vec<u8> {
        let mut body = vec![VERSION];
        body.push(match purpose {
            Purpose::Register => KIND_REGISTER,
            Purpose::Confirm { .. } => KIND_CONFIRM,
        });
        body.extend_from_slice(&now.0.to_be_bytes());
        body.extend_from_slice(&nonce);
        if let Purpose::Confirm { approval, plan_hash } = purpose {
            body.extend_from_slice(&approval.0);
            push_text(&mut body, plan_hash);
        }
        push_text(&mut body, approver);
        let tag = mac(&self.0, &[&body]);
        body.extend_from_slice(&tag);
        body
    }

    /// The challenge `bytes` stand for, if this key signed them (checked in
    /// constant time before anything else is read).
    pub fn open(&self, bytes: &[u8]) -> Option<Challenge> {
        let (body, tag) = bytes.split_at(bytes.len().checked_sub(MAC_LEN)?);
        let expected = mac(&self.0, &[body]);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&expected[..], tag)) {
            return None;
        }
        let mut r = body;
        let version = take(&mut r, 1)?[0];
        let kind = take(&mut r, 1)?[0];
        if version != VERSION {
            return None;
        }
        let issued = Timestamp(i64::from_be_bytes(take(&mut r, 8)?.try_into().ok()?));
        let nonce: [u8; 16] = take(&mut r, 16)?.try_into().ok()?;
        let purpose = match kind {
            KIND_REGISTER => Purpose::Register,
            KIND_CONFIRM => {
                let approval = ApprovalId(take(&mut r, 16)?.try_into().ok()?);
                Purpose::Confirm { approval, plan_hash: take_text(&mut r)? }
            }
            _ => return None,
        };
        let approver = take_text(&mut r)?;
        r.is_empty().then_some(Challenge { purpose, approver, issued, nonce })
    }
}

fn push_text(body: &mut Vec<u8>, text: &str) {
    let len = u16::try_from(text.len()).unwrap_or(u16::MAX);
    body.extend_from_slice(&len.to_be_bytes());
    body.extend_from_slice(&text.as_bytes()[..usize::from(len)]);
}

fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if r.len() < n {
        return None;
    }
    let (head, rest) = r.split_at(n);
    *r = rest;
    Some(head)
}

fn take_text(r: &mut &[u8]) -> Option<String> {
    let len = u16::from_be_bytes(take(r, 2)?.try_into().ok()?);
    String::from_utf8(take(r, usize::from(len))?.to_vec()).ok()
}

/// Who the relying party is: its RP id (the host of the page's public URL)
/// and which origins may answer for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelyingParty {
    pub id: String,
}

impl RelyingParty {
    /// The relying party of a page at `public_url`: its host, without port.
    pub fn of(public_url: &str) -> Option<RelyingParty> {
        let rest = public_url.split_once("://")?.1;
        let authority = rest.split(['/', '?', '#']).next()?;
        let host = match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => authority,
        };
        (!host.is_empty()).then(|| RelyingParty { id: host.to_ascii_lowercase() })
    }

    /// Whether a browser answered from `origin`: this host (any port), over
    /// https, or over http on `localhost` (browsers allow WebAuthn there).
    fn origin_ok(&self, origin: &str) -> bool {
        let Some((scheme, rest)) = origin.split_once("://") else { return false };
        let host = match rest.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => rest,
        };
        host.eq_ignore_ascii_case(&self.id) && (scheme == "https" || (scheme == "http" && self.id == "localhost"))
    }

    /// The challenge bytes of a browser's `clientDataJSON`, once its type
    /// (`webauthn.create` or `webauthn.get`) and origin are right.
    pub fn client_data(&self, json: &[u8], ty: &'static str) -> Result<Vec<u8>, PasskeyError> {
        #[derive(Deserialize)]
        struct ClientData {
            #[serde(rename = "type")]
            ty: String,
            challenge: String,
            origin: String,
        }
        let data: ClientData = serde_json::from_slice(json).map_err(|_| PasskeyError::Malformed(ty))?;
        if data.ty != ty {
            return Err(PasskeyError::Malformed(ty));
        }
        if !self.origin_ok(&data.origin) {
            let shown: String = data.origin.chars().take(80).collect();
            return Err(PasskeyError::WrongOrigin(shown));
        }
        unb64(&data.challenge).ok_or(PasskeyError::Malformed(ty))
    }

    /// The authenticator data's RP id hash is ours, and the person was
    /// present and verified.
    fn check(&self, data: &AuthData) -> Result<(), PasskeyError> {
        let ours: [u8; 32] = Sha256::digest(self.id.as_bytes()).into();
        if data.rp_id_hash != ours {
            return Err(PasskeyError::WrongOrigin(format!("an RP id other than {}", self.id)));
        }
        if data.flags & FLAG_UP == 0 || data.flags & FLAG_UV == 0 {
            return Err(PasskeyError::NoUserVerification);
        }
        Ok(())
    }

    /// A new passkey from a registration's `attestationObject` (attestation
    /// "none": its statement is not looked at), its client data already
    /// read with [`RelyingParty::client_data`].
    pub fn registration(&self, attestation_object: &[u8], now: Timestamp) -> Result<Passkey, PasskeyError> {
        let malformed = PasskeyError::Malformed("registration");
        let object: Value = ciborium::de::from_reader(attestation_object).map_err(|_| malformed.clone())?;
        let auth_data = object
            .as_map()
            .and_then(|m| m.iter().find(|(k, _)| k.as_text() == Some("authData")))
            .and_then(|(_, v)| v.as_bytes())
            .ok_or(malformed.clone())?;
        let data = AuthData::parse(auth_data).ok_or(malformed.clone())?;
        self.check(&data)?;
        let (id, cose) = data.attested.ok_or(malformed)?;
        let (alg, key) = cose_key(&cose)?;
        Ok(Passkey { id: b64(&id), alg, key: b64(&key), sign_count: data.sign_count, created_at: now })
    }

    /// Verify an assertion of `passkey`: its client data (already read with
    /// [`RelyingParty::client_data`]), authenticator data and signature.
    /// Returns the authenticator's signature counter, for [`check_counter`]
    /// once the challenge is known to be unused (a replay is a replay, not
    /// a counter problem).
    pub fn assertion(&self, passkey: &Passkey, client_data: &[u8], auth_data: &[u8], signature: &[u8]) -> Result<u32, PasskeyError> {
        let data = AuthData::parse(auth_data).ok_or(PasskeyError::Malformed("assertion"))?;
        self.check(&data)?;
        let mut signed = auth_data.to_vec();
        signed.extend_from_slice(&Sha256::digest(client_data));
        let key = unb64(&passkey.key).ok_or(PasskeyError::Unsupported)?;
        verify(passkey.alg, &key, &signed, signature)?;
        Ok(data.sign_count)
    }
}

/// The counter of an assertion against the stored one: one that does not
/// grow means a cloned authenticator; both zero means an authenticator
/// that keeps none (allowed).
pub fn check_counter(passkey: &Passkey, counted: u32) -> Result<u32, PasskeyError> {
    if (counted != 0 || passkey.sign_count != 0) && counted <= passkey.sign_count {
        return Err(PasskeyError::Counter);
    }
    Ok(counted)
}

fn verify(alg: i64, key: &[u8], signed: &[u8], signature: &[u8]) -> Result<(), PasskeyError> {
    match alg {
        ES256 => {
            use p256::ecdsa::signature::Verifier;
            let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(key).map_err(|_| PasskeyError::Unsupported)?;
            let sig = p256::ecdsa::Signature::from_der(signature).map_err(|_| PasskeyError::BadSignature)?;
            key.verify(signed, &sig).map_err(|_| PasskeyError::BadSignature)
        }
        EDDSA => {
            let key: [u8; 32] = key.try_into().map_err(|_| PasskeyError::Unsupported)?;
            let key = ed25519_dalek::VerifyingKey::from_bytes(&key).map_err(|_| PasskeyError::Unsupported)?;
            let sig = ed25519_dalek::Signature::from_slice(signature).map_err(|_| PasskeyError::BadSignature)?;
            key.verify_strict(signed, &sig).map_err(|_| PasskeyError::BadSignature)
        }
        _ => Err(PasskeyError::Unsupported),
    }
}

/// Authenticator data (WebAuthn §6.1), the parts a relying party reads.
struct AuthData {
    rp_id_hash: [u8; 32],
    flags: u8,
    sign_count: u32,
    /// With the AT flag: the credential id and its COSE public key.
    attested: Option<(Vec<u8>, Value)>,
}

impl AuthData {
    fn parse(bytes: &[u8]) -> Option<AuthData> {
        let mut r = bytes;
        let rp_id_hash = take(&mut r, 32)?.try_into().ok()?;
        let flags = take(&mut r, 1)?[0];
        let sign_count = u32::from_be_bytes(take(&mut r, 4)?.try_into().ok()?);
        let attested = if flags & FLAG_AT != 0 {
            let _aaguid = take(&mut r, 16)?;
            let len = usize::from(u16::from_be_bytes(take(&mut r, 2)?.try_into().ok()?));
            if len > MAX_CREDENTIAL_ID {
                return None;
            }
            let id = take(&mut r, len)?.to_vec();
            // The COSE key is one CBOR item; extensions may follow it.
            let key: Value = ciborium::de::from_reader(&mut r).ok()?;
            Some((id, key))
        } else {
            None
        };
        Some(AuthData { rp_id_hash, flags, sign_count, attested })
    }
}

/// The algorithm and public key of a COSE key (RFC 9053): EC2 P-256 with
/// ES256 (SEC1 uncompressed), or OKP Ed25519 with EdDSA (32 bytes).
fn cose_key(cose: &Value) -> Result<(i64, Vec<u8>), PasskeyError> {
    let map = cose.as_map().ok_or(PasskeyError::Unsupported)?;
    let int = |label: i64| map.iter().find(|(k, _)| k.as_integer().map(i128::from) == Some(i128::from(label))).map(|(_, v)| v);
    let number = |label: i64| int(label).and_then(Value::as_integer).and_then(|i| i64::try_from(i128::from(i)).ok());
    let bytes = |label: i64| int(label).and_then(Value::as_bytes).cloned();
    match (number(1), number(3), number(-1)) {
        // kty EC2, alg ES256, crv P-256.
        (Some(2), Some(ES256), Some(1)) => {
            let (x, y) = (bytes(-2).ok_or(PasskeyError::Unsupported)?, bytes(-3).ok_or(PasskeyError::Unsupported)?);
            if x.len() != 32 || y.len() != 32 {
                return Err(PasskeyError::Unsupported);
            }
            let key = [&[0x04][..], &x, &y].concat();
            p256::ecdsa::VerifyingKey::from_sec1_bytes(&key).map_err(|_| PasskeyError::Unsupported)?;
            Ok((ES256, key))
        }
        // kty OKP, alg EdDSA, crv Ed25519.
        (Some(1), Some(EDDSA), Some(6)) => {
            let x = bytes(-2).ok_or(PasskeyError::Unsupported)?;
            let key: [u8; 32] = x.as_slice().try_into().map_err(|_| PasskeyError::Unsupported)?;
            ed25519_dalek::VerifyingKey::from_bytes(&key).map_err(|_| PasskeyError::Unsupported)?;
            Ok((EDDSA, x))
        }
        _ => Err(PasskeyError::Unsupported),
    }
}

#[cfg(test)]
mod tests;
