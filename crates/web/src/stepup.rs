//! The page's passkey routes: registering a person's passkey, and
//! confirming an approval with it (step-up). The WebAuthn checks are
//! [`crate::passkey`]'s; this module binds them to the session, the
//! approval and the store.
//!
//! * `GET /passkeys`: the signed-in person's passkey, or the button that
//!   registers one; `POST /passkeys/options` (JSON, CSRF) gives the
//!   creation options, `POST /passkeys` stores the new passkey — only while
//!   the person has none (compare-and-swap), so a session alone cannot
//!   swap in another one later; audited.
//! * `GET /p/{id}/confirm`: what the person approves and the button;
//!   `POST /p/{id}/confirm/options` gives a challenge bound to the
//!   approval, the plan hash now pending, the person and a nonce;
//!   `POST /p/{id}/confirm` checks the answer (below) and only then decides
//!   through [`crate::Backend::decide`] with the confirmation
//!   ([`plangate_engine::Decision::confirmed`]), which the engine counts.
//!
//! An answer is refused, audited and never counted when: the challenge is
//! not one this page issued for this approval and this person; the plan
//! hash it was bound to is no longer the pending one; it is older than
//! [`passkey::CHALLENGE_TTL`]; the credential is not the person's own
//! passkey; the authenticator did not verify the user; the signature or
//! the counter is wrong; the challenge was answered before (a record in
//! the store, [`crate::Backend::use_once`]). When the store cannot tell,
//! the answer is a refusal.

use crate::auth::csrf_ok;
use crate::passkey::{self, b64, unb64, Passkey, PasskeyError, Purpose};
use crate::routes::{html, not_found, session, Shared};
use crate::{page, Identity, Refused, Web};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use plangate_engine::{ApprovalId, Decision, DecisionStatus, Proposal, StepUp};
use serde::Deserialize;
use serde_json::json;

/// The page's passkey routes, merged into [`crate::router`].
pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/passkeys", get(passkeys_page).post(register))
        .route("/passkeys/options", post(register_options))
        .route("/p/{id}/confirm", get(confirm_page).post(confirm))
        .route("/p/{id}/confirm/options", post(confirm_options))
}

/// Where a step-up link leads after sign-in.
pub(crate) fn confirm_path(id: &ApprovalId) -> String {
    format!("/p/{id}/confirm")
}

/// `next` when it is a confirmation page of this site, else nothing: a
/// sign-in never redirects anywhere else.
pub(crate) fn safe_next(next: &str) -> Option<String> {
    let id = next.strip_prefix("/p/")?.strip_suffix("/confirm")?;
    ApprovalId::parse(id).map(|id| confirm_path(&id))
}

/// A JSON answer for the script: `{"error": …}` with `status`.
fn refused(status: StatusCode, why: impl std::fmt::Display) -> Response {
    (status, Json(json!({"error": why.to_string()}))).into_response()
}

fn store_refused(r: Refused) -> Response {
    refused(StatusCode::SERVICE_UNAVAILABLE, r)
}

/// Who posts a passkey request, and the relying party they answer.
struct Caller<'a> {
    approver: String,
    who: Identity,
    rp: &'a passkey::RelyingParty,
}

/// The signed-in person of a JSON POST whose CSRF token is right; the
/// operator (who needs no passkey) and anyone else are refused, and so is
/// every request when the public URL names no host.
async fn person<'a>(web: &'a Web, headers: &HeaderMap, csrf: &str) -> Result<Caller<'a>, Response> {
    let Some(session) = session(web, headers).await else {
        return Err(refused(StatusCode::FORBIDDEN, "Sign in first: ask the bot for a link (/plan web)."));
    };
    if !csrf_ok(&session, csrf) {
        return Err(refused(StatusCode::FORBIDDEN, "This page is stale or was not sent by plangate; reload it and try again."));
    }
    let Identity::Person { id, .. } = &session.who else {
        return Err(refused(StatusCode::FORBIDDEN, "The operator decides without a passkey; passkeys are for people."));
    };
    let rp =
        web.links.rp.as_ref().ok_or_else(|| refused(StatusCode::SERVICE_UNAVAILABLE, "server.public_url names no host for passkeys."))?;
    Ok(Caller { approver: id.clone(), who: session.who.clone(), rp })
}

/// `approver`'s passkey and its stored text (for the compare-and-swap).
async fn stored(web: &Web, approver: &str) -> Result<Option<(Passkey, String)>, Response> {
    match web.backend.passkey(approver).await {
        Ok(None) => Ok(None),
        Ok(Some(text)) => match serde_json::from_str(&text) {
            Ok(key) => Ok(Some((key, text))),
            Err(_) => Err(refused(StatusCode::SERVICE_UNAVAILABLE, "Your stored passkey cannot be read; ask the operator.")),
        },
        Err(r) => Err(store_refused(r)),
    }
}

fn timeout_ms() -> u64 {
    passkey::CHALLENGE_TTL.as_millis() as u64
}

fn challenge(web: &Web, purpose: &Purpose, approver: &str) -> String {
    b64(&web.links.challenges.issue(purpose, approver, web.links.now(), rand::random()))
}

// ------------------------------------------------------------ registration

async fn passkeys_page(State(web): State<Shared>, headers: axum::http::HeaderMap) -> Response {
    let Some(session) = session(&web, &headers).await else {
        return html(StatusCode::FORBIDDEN, page::message("Sign in first", "Ask the bot for a sign-in link: /plan web", None));
    };
    let Identity::Person { id, .. } = &session.who else {
        return html(
            StatusCode::OK,
            page::message("No passkey for the operator", "The operator decides without a passkey.", Some(&session.who)),
        );
    };
    match stored(&web, id).await {
        Ok(key) => html(StatusCode::OK, page::passkeys(&session.who, &session.csrf, key.as_ref().map(|(k, _)| k))),
        Err(response) => response,
    }
}

#[derive(Debug, Deserialize)]
struct CsrfBody {
    csrf: String,
}

async fn register_options(State(web): State<Shared>, headers: HeaderMap, Json(body): Json<CsrfBody>) -> Response {
    let Caller { approver, who, rp } = match person(&web, &headers, &body.csrf).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    // A stable, opaque user handle: no chat id in the authenticator.
    let handle = user_handle(&approver);
    Json(json!({
        "challenge": challenge(&web, &Purpose::Register, &approver),
        "rp": {"id": rp.id, "name": "plangate"},
        "user": {"id": b64(&handle), "name": approver, "displayName": who.label()},
        "params": [{"type": "public-key", "alg": passkey::ES256}, {"type": "public-key", "alg": passkey::EDDSA}],
        "timeout": timeout_ms(),
    }))
    .into_response()
}

/// The WebAuthn user handle of `approver`: 16 bytes derived from the
/// identity, so the authenticator stores no chat id.
fn user_handle(approver: &str) -> [u8; 16] {
    let full = crate::auth::mac(b"plangate passkey user handle v1", &[approver.as_bytes()]);
    let mut out = [0; 16];
    out.copy_from_slice(&full[..16]);
    out
}

#[derive(Debug, Deserialize)]
struct RegisterBody {
    csrf: String,
    client_data: String,
    attestation: String,
}

async fn register(State(web): State<Shared>, headers: HeaderMap, Json(body): Json<RegisterBody>) -> Response {
    let Caller { approver, who, rp } = match person(&web, &headers, &body.csrf).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (Some(client_data), Some(object)) = (unb64(&body.client_data), unb64(&body.attestation)) else {
        return refused(StatusCode::BAD_REQUEST, PasskeyError::Malformed("registration"));
    };
    let checked = rp.client_data(&client_data, "webauthn.create").and_then(|c| {
        let c = web.links.challenges.open(&c).ok_or(PasskeyError::WrongChallenge)?;
        if c.purpose != Purpose::Register || c.approver != approver {
            return Err(PasskeyError::WrongChallenge);
        }
        if !c.fresh(web.links.now()) {
            return Err(PasskeyError::Expired);
        }
        Ok(c)
    });
    let new = checked.and_then(|c| rp.registration(&object, web.links.now()).map(|key| (c, key)));
    let (challenge, key) = match new {
        Ok(found) => found,
        Err(why) => {
            web.backend.record(&who, "passkey_refused", None, format!("registration refused: {why}")).await;
            return refused(StatusCode::FORBIDDEN, why);
        }
    };
    if !web.backend.use_once(&challenge.once_key()).await {
        return refused(StatusCode::GONE, PasskeyError::Replayed);
    }
    let text = serde_json::to_string(&key).unwrap_or_default();
    match web.backend.swap_passkey(&approver, None, Some(&text)).await {
        Ok(true) => {
            web.backend.record(&who, "passkey_registered", None, format!("passkey {} registered by {approver}", key.id)).await;
            Json(json!({"registered": key.id})).into_response()
        }
        Ok(false) => refused(StatusCode::CONFLICT, "You have a passkey already (one per person); to replace it, ask the operator."),
        Err(r) => store_refused(r),
    }
}

// ------------------------------------------------------------ confirmation

/// The pending proposal `id` that the signed-in `who` may decide.
async fn decidable(web: &Web, who: &Identity, id: &str) -> Result<Proposal, Response> {
    let Some(id) = ApprovalId::parse(id) else { return Err(refused(StatusCode::NOT_FOUND, "There is no such plan.")) };
    let Some(p) = web.backend.proposal(id).await else { return Err(refused(StatusCode::NOT_FOUND, "There is no such plan.")) };
    if !web.backend.may_decide(who, &p) {
        return Err(refused(StatusCode::FORBIDDEN, "You are not an approver of this plan."));
    }
    if p.status != DecisionStatus::Pending {
        return Err(refused(StatusCode::CONFLICT, format!("This plan is {} already; nothing to confirm.", p.status.as_str())));
    }
    Ok(p)
}

/// The caller of a confirmation request and the pending proposal `id`
/// they may decide.
async fn deciding<'a>(web: &'a Web, headers: &HeaderMap, csrf: &str, id: &str) -> Result<(Caller<'a>, Proposal), Response> {
    let caller = person(web, headers, csrf).await?;
    let p = decidable(web, &caller.who, id).await?;
    Ok((caller, p))
}

async fn confirm_page(State(web): State<Shared>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let Some(session) = session(&web, &headers).await else {
        return html(StatusCode::FORBIDDEN, page::message("Sign in first", "Ask the bot for a sign-in link: /plan web", None));
    };
    let who = Some(&session.who);
    let Identity::Person { id: approver, .. } = &session.who else { return not_found(who) };
    let p = match decidable(&web, &session.who, &id).await {
        Ok(p) => p,
        Err(_) => return not_found(who),
    };
    match stored(&web, approver).await {
        Ok(key) => html(StatusCode::OK, page::confirm(&p, &session.who, &session.csrf, key.is_some())),
        Err(response) => response,
    }
}

async fn confirm_options(State(web): State<Shared>, headers: HeaderMap, Path(id): Path<String>, Json(body): Json<CsrfBody>) -> Response {
    let (Caller { approver, rp, .. }, p) = match deciding(&web, &headers, &body.csrf, &id).await {
        Ok(found) => found,
        Err(r) => return r,
    };
    let key = match stored(&web, &approver).await {
        Ok(Some((key, _))) => key,
        Ok(None) => return refused(StatusCode::CONFLICT, "You have no passkey yet: register one on /passkeys first."),
        Err(r) => return r,
    };
    let purpose = Purpose::Confirm { approval: p.approval_id, plan_hash: p.plan_hash.clone() };
    Json(json!({
        "challenge": challenge(&web, &purpose, &approver),
        "rpId": rp.id,
        "allow": [key.id],
        "timeout": timeout_ms(),
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
struct ConfirmBody {
    csrf: String,
    /// The credential id (base64url).
    id: String,
    client_data: String,
    authenticator_data: String,
    signature: String,
}

async fn confirm(State(web): State<Shared>, headers: HeaderMap, Path(id): Path<String>, Json(body): Json<ConfirmBody>) -> Response {
    let (Caller { approver, who, rp }, p) = match deciding(&web, &headers, &body.csrf, &id).await {
        Ok(found) => found,
        Err(r) => return r,
    };
    let (key, text) = match stored(&web, &approver).await {
        Ok(Some(found)) => found,
        Ok(None) => return refused(StatusCode::FORBIDDEN, PasskeyError::NotYours),
        Err(r) => return r,
    };
    let counted = match check_assertion(&web, rp, &p, &approver, &key, &body).await {
        Ok(counted) => counted,
        Err(why) => {
            let detail = format!("{approver}'s passkey confirmation refused: {why}");
            web.backend.record(&who, "step_up_refused", Some(&p), detail).await;
            let status = if why == PasskeyError::Replayed { StatusCode::GONE } else { StatusCode::FORBIDDEN };
            return refused(status, why);
        }
    };
    let updated = serde_json::to_string(&Passkey { sign_count: counted, ..key.clone() }).unwrap_or_default();
    match web.backend.swap_passkey(&approver, Some(&text), Some(&updated)).await {
        Ok(true) => {}
        Ok(false) => return refused(StatusCode::CONFLICT, "Your passkey was used at the same moment elsewhere; reload and try again."),
        Err(r) => return store_refused(r),
    }
    let step_up = StepUp { credential: key.id.clone(), plan_hash: p.plan_hash.clone() };
    match web.backend.decide(&who, p.approval_id, Decision::approve().confirmed(step_up)).await {
        Ok(said) => Json(json!({"said": said, "to": format!("/p/{}", p.approval_id)})).into_response(),
        Err(r @ Refused::Forbidden(_)) => refused(StatusCode::FORBIDDEN, r),
        Err(r @ Refused::NotFound(_)) => refused(StatusCode::NOT_FOUND, r),
        Err(r @ Refused::Conflict(_)) => refused(StatusCode::CONFLICT, r),
        Err(r @ Refused::Unavailable(_)) => refused(StatusCode::SERVICE_UNAVAILABLE, r),
    }
}

/// Every check of a confirmation, in order; the challenge is used up only
/// once everything else holds. The new signature counter.
async fn check_assertion(
    web: &Web,
    rp: &passkey::RelyingParty,
    p: &Proposal,
    approver: &str,
    key: &Passkey,
    body: &ConfirmBody,
) -> Result<u32, PasskeyError> {
    let decode = |text: &str| unb64(text).ok_or(PasskeyError::Malformed("assertion"));
    let (client_data, auth_data, signature) = (decode(&body.client_data)?, decode(&body.authenticator_data)?, decode(&body.signature)?);
    let challenge = web.links.challenges.open(&rp.client_data(&client_data, "webauthn.get")?).ok_or(PasskeyError::WrongChallenge)?;
    let Purpose::Confirm { approval, plan_hash } = &challenge.purpose else { return Err(PasskeyError::WrongChallenge) };
    if *approval != p.approval_id || challenge.approver != approver {
        return Err(PasskeyError::WrongChallenge);
    }
    if *plan_hash != p.plan_hash {
        return Err(PasskeyError::OtherPlan);
    }
    if !challenge.fresh(web.links.now()) {
        return Err(PasskeyError::Expired);
    }
    if body.id != key.id {
        return Err(PasskeyError::NotYours);
    }
    let counted = rp.assertion(key, &client_data, &auth_data, &signature)?;
    if !web.backend.use_once(&challenge.once_key()).await {
        return Err(PasskeyError::Replayed);
    }
    passkey::check_counter(key, counted)
}
