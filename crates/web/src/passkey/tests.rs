use super::*;
use plangate_testkit::passkey::{unb64 as decode, SoftPasskey};

const T0: Timestamp = Timestamp(1_800_000_000_000);

fn rp() -> RelyingParty {
    RelyingParty::of("https://plans.example.com/").expect("a host")
}

fn soft(seed: u8) -> SoftPasskey {
    SoftPasskey::new("plans.example.com", "https://plans.example.com", seed)
}

fn registered(key: &SoftPasskey) -> Passkey {
    let (client, object) = key.register(b"any challenge");
    let challenge = rp().client_data(&decode(&client), "webauthn.create").expect("client data");
    assert_eq!(challenge, b"any challenge");
    rp().registration(&decode(&object), T0).expect("registered")
}

fn confirm(key: &mut SoftPasskey, passkey: &Passkey) -> Result<u32, PasskeyError> {
    let a = key.assert(b"challenge");
    rp().client_data(&decode(&a.client_data), "webauthn.get")?;
    let counted = rp().assertion(passkey, &decode(&a.client_data), &decode(&a.authenticator_data), &decode(&a.signature))?;
    check_counter(passkey, counted)
}

#[test]
fn a_registered_passkey_verifies_its_assertions_and_their_counter_must_grow() {
    let mut key = soft(7);
    let passkey = registered(&key);
    assert_eq!((passkey.alg, passkey.id.as_str()), (ES256, key.id_b64().as_str()));
    assert_eq!(confirm(&mut key, &passkey), Ok(1));
    let used = Passkey { sign_count: 5, ..passkey.clone() };
    assert_eq!(confirm(&mut key, &used), Err(PasskeyError::Counter), "2 after 5: a cloned authenticator");
}

#[test]
fn without_user_verification_another_key_or_another_site_nothing_verifies() {
    let mut key = soft(7);
    let passkey = registered(&key);
    key.verifies_user = false;
    assert_eq!(confirm(&mut key, &passkey), Err(PasskeyError::NoUserVerification));
    let mut other = soft(8);
    assert_eq!(confirm(&mut other, &passkey), Err(PasskeyError::BadSignature), "another person's key");
    let mut phished = SoftPasskey::new("evil.example", "https://evil.example", 7);
    assert!(matches!(confirm(&mut phished, &passkey), Err(PasskeyError::WrongOrigin(_))));
    let a = key.assert(b"c");
    assert!(rp().client_data(&decode(&a.client_data), "webauthn.create").is_err(), "a get is no create");
}

#[test]
fn challenges_bind_their_purpose_and_person_and_expire_after_five_minutes() {
    let keys = ChallengeKey::derive(b"secret one");
    let purpose = Purpose::Confirm { approval: ApprovalId([3; 16]), plan_hash: "sha256:ab".into() };
    let bytes = keys.issue(&purpose, "telegram:1", T0, [9; 16]);
    let c = keys.open(&bytes).expect("opens");
    assert_eq!((c.purpose.clone(), c.approver.as_str(), c.issued), (purpose, "telegram:1", T0));
    assert_eq!(c.once_key(), format!("passkey-challenge:{}", hex::encode([9; 16])));
    assert!(c.fresh(T0.plus_ms(CHALLENGE_TTL.as_millis() as u64)));
    assert!(!c.fresh(T0.plus_ms(CHALLENGE_TTL.as_millis() as u64 + 1)), "older than 5 minutes");
    for at in 0..bytes.len() {
        let mut forged = bytes.clone();
        forged[at] ^= 1;
        assert!(keys.open(&forged).is_none(), "byte {at} changed");
    }
    assert!(ChallengeKey::derive(b"secret two").open(&bytes).is_none());
    let register = keys.issue(&Purpose::Register, "telegram:1", T0, [1; 16]);
    assert_eq!(keys.open(&register).expect("opens").purpose, Purpose::Register);
}

#[test]
fn the_relying_party_is_the_public_host_and_http_only_on_localhost() {
    assert_eq!(RelyingParty::of("http://localhost:8787").expect("host").id, "localhost");
    let local = RelyingParty::of("http://localhost").expect("host");
    assert!(local.origin_ok("http://localhost:39123"));
    assert!(!local.origin_ok("http://localhost.evil:1"));
    assert!(rp().origin_ok("https://plans.example.com"));
    assert!(!rp().origin_ok("http://plans.example.com"), "plain http only on localhost");
    assert!(!rp().origin_ok("https://evil.example"));
}
