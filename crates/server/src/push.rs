//! Web Push's HTTP surface (`[push]`, crates/push), beside the plan page:
//!
//! * `GET /push/key`: the server's VAPID public key, the page's
//!   `applicationServerKey`.
//! * `POST /push/subscription` (signed in): store this device's
//!   subscription for the signed-in person; `DELETE` removes it.
//! * `GET /push/n/<id>` (signed in): what the service worker shows for a
//!   push's note id: the plan's title and version, its risk, the actions
//!   a tap may take, the page's path. No plan text ever travels in a push.
//! * `POST /push/n/<id>` (signed in, `{"action": "approve" |
//!   "request_changes"}`): a notification's button. It decides through the
//!   same [`Core::decide`] as a chat button, from [`Venue::Push`], as the
//!   signed-in person ("… via push" in the receipt and the audit), and only
//!   for a plan whose policy allows one tap ([`plangate_push::note::one_tap`]);
//!   any other plan is decided on its page.
//!
//! A note opens only for the person it was pushed to, with their session
//! (the service worker's fetches carry the page's `SameSite=Strict`
//! cookie), while its plan is the same version and still pending, and for
//! a day at most. A note id that is none (forged, unknown, malformed)
//! takes a cell of the client address's budget of failed credentials
//! ([`crate::throttle`]), as a wrong email link does. POSTs must come from
//! the page's own origin (`Sec-Fetch-Site`) and be JSON, which no other
//! site's form can send.

use crate::approvers::Venue;
use crate::core::{Core, Decision, ExecMeta};
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use plangate_engine::{Actor, DecisionStatus, Proposal, SessionKey};
use plangate_push::note::{Note, NoteId};
use plangate_push::subscription::Offered;
use plangate_push::{Pusher, Subscription, VapidKey};
use plangate_web::{Identity, Web};
use serde_json::json;
use std::sync::Arc;

/// The file under `data_dir` holding the VAPID key (hex, 0600).
pub const KEY_FILE: &str = "vapid-key";
/// The store cursor holding it when replicas share the store.
pub const KEY_CURSOR: &str = "push.vapid";

/// Read (or, on first start, create) the VAPID key and give the core its
/// sender; nothing when `[push]` is not set.
pub fn start(core: &Arc<Core>) -> std::io::Result<()> {
    let Some(config) = core.settings.raw.push.as_ref() else { return Ok(()) };
    let bytes: [u8; 32] = crate::web::keep_secret(core, KEY_CURSOR, KEY_FILE)?
        .try_into()
        .map_err(|_| std::io::Error::other(format!("the VAPID key ({KEY_FILE} or the {KEY_CURSOR} cursor) is not 32 bytes")))?;
    let key = VapidKey::from_random(bytes)
        .ok_or_else(|| std::io::Error::other(format!("the VAPID key ({KEY_FILE} or the {KEY_CURSOR} cursor) is no P-256 key")))?;
    let pusher = Pusher::new(key, &config.subject).map_err(std::io::Error::other)?;
    tracing::info!(public_key = %pusher.public_key(), "web push on");
    core.set_pusher(pusher);
    Ok(())
}

struct Shared {
    core: Arc<Core>,
    web: Arc<Web>,
}

/// The routes, when `[push]` is set and the page is on.
pub fn router(core: Arc<Core>, web: Arc<Web>) -> Router {
    Router::new()
        .route("/push/key", get(key))
        .route("/push/subscription", post(subscribe).delete(unsubscribe))
        .route("/push/n/{id}", get(card).post(act))
        .with_state(Arc::new(Shared { core, web }))
}

fn refused(status: StatusCode, why: &str) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store")], Json(json!({ "error": why }))).into_response()
}

fn ok(status: StatusCode, body: serde_json::Value) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

async fn key(State(s): State<Arc<Shared>>) -> Response {
    match s.core.pusher() {
        Some(pusher) => ok(StatusCode::OK, json!({ "public_key": pusher.public_key() })),
        None => refused(StatusCode::NOT_FOUND, "push is off"),
    }
}

/// The signed-in person of a request (`id`, `name`); the operator, who
/// approves no plan from a phone's notification, and nobody are refused.
async fn person(s: &Shared, headers: &HeaderMap, post: bool) -> Result<(String, String), Response> {
    if post {
        let site = headers.get("sec-fetch-site").map(|v| v.as_bytes());
        if site.is_some_and(|site| site != b"same-origin") {
            return Err(refused(StatusCode::FORBIDDEN, "this request came from another site"));
        }
    }
    let cookie = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(plangate_web::auth::cookie_value);
    let session = match cookie {
        Some(cookie) => s.web.session(cookie).await,
        None => None,
    };
    match session.map(|session| session.who) {
        Some(Identity::Person { id, name }) => Ok((id, name)),
        Some(Identity::Operator) => Err(refused(StatusCode::FORBIDDEN, "the operator signs in to decide on the page, not by push")),
        None => Err(refused(StatusCode::UNAUTHORIZED, "sign in on the plan page first")),
    }
}

/// Who subscribed or unsubscribed, in the audit (no session: `-/-`).
async fn record(core: &Core, who: &str, action: &str, detail: String) {
    core.audit(&SessionKey::new("-", "-"), who, action, None, detail).await;
}

/// `POST /push/subscription`: this device, for the signed-in person.
async fn subscribe(State(s): State<Arc<Shared>>, headers: HeaderMap, Json(offered): Json<Offered>) -> Response {
    let (who, _) = match person(&s, &headers, true).await {
        Ok(who) => who,
        Err(answer) => return answer,
    };
    let Some(config) = s.core.settings.raw.push.as_ref() else { return refused(StatusCode::NOT_FOUND, "push is off") };
    let sub = match Subscription::accept(&offered, &who, &config.endpoint_hosts, s.core.now().0, config.lifetime_ms()) {
        Ok(sub) => sub,
        Err(e) => return refused(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let (key, value) = (sub.store_key(), sub.to_record());
    if s.core.blocking(move |store| store.set_cursor(&key, &value)).await.is_err() {
        return refused(StatusCode::SERVICE_UNAVAILABLE, "plangate cannot record that right now; try again shortly");
    }
    record(&s.core, &who, "push_subscribed", format!("{who} subscribed a device to push")).await;
    ok(StatusCode::CREATED, json!({ "expires_at": sub.expires_at }))
}

/// `DELETE /push/subscription` (`{"endpoint": …}`): the person's own only.
async fn unsubscribe(State(s): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<serde_json::Value>) -> Response {
    let (who, _) = match person(&s, &headers, true).await {
        Ok(who) => who,
        Err(answer) => return answer,
    };
    let key = plangate_push::subscription::store_key(body["endpoint"].as_str().unwrap_or_default());
    let owner = who.clone();
    let removed = s
        .core
        .blocking(move |store| match store.cursor(&key)? {
            Some(record) if Subscription::from_record(&record).is_some_and(|sub| sub.approver == owner) => {
                store.swap_cursor(&key, Some(&record), None)
            }
            _ => Ok(false),
        })
        .await;
    match removed {
        Ok(true) => {
            record(&s.core, &who, "push_unsubscribed", format!("{who} removed a device's push subscription")).await;
            ok(StatusCode::OK, json!({ "removed": true }))
        }
        Ok(false) => refused(StatusCode::NOT_FOUND, "no subscription of yours with that endpoint"),
        Err(_) => refused(StatusCode::SERVICE_UNAVAILABLE, "plangate cannot record that right now; try again shortly"),
    }
}

/// A note that still opens for the person: the note, its plan.
async fn note_of(s: &Shared, parts: &Parts, id: &str, post: bool) -> Result<(String, String, Note, Proposal), Response> {
    let (who, name) = person(s, &parts.headers, post).await?;
    let not_a_note = || async {
        match s.core.auth_failed(crate::http::client_addr(parts), crate::throttle::Surface::PushNote).await {
            None => refused(StatusCode::NOT_FOUND, "no such notification"),
            Some(wait) => {
                let secs = crate::throttle::retry_after_secs(wait);
                let mut answer = refused(StatusCode::TOO_MANY_REQUESTS, "too many unknown notifications from this address");
                answer.headers_mut().insert(header::RETRY_AFTER, secs.into());
                answer
            }
        }
    };
    let Some(note_id) = NoteId::parse(id) else { return Err(not_a_note().await) };
    let key = note_id.store_key();
    let unavailable = || refused(StatusCode::SERVICE_UNAVAILABLE, "plangate cannot read its records right now");
    let stored = s.core.blocking(move |store| store.cursor(&key)).await.map_err(|_| unavailable())?;
    let Some(note) = stored.as_deref().and_then(Note::from_record) else { return Err(not_a_note().await) };
    if note.approver != who {
        let detail = format!("{who} opened a notification pushed to {}: refused", note.approver);
        record(&s.core, &who, "push_refused", detail).await;
        return Err(refused(StatusCode::FORBIDDEN, "this notification was sent to someone else"));
    }
    if note.expires_at <= s.core.now().0 {
        return Err(refused(StatusCode::GONE, "this notification is too old; open the plan page"));
    }
    let approval = note.approval_id;
    let p = s.core.blocking(move |store| store.proposal(&approval)).await.map_err(|_| unavailable())?;
    let Some(p) = p else { return Err(refused(StatusCode::GONE, "this plan no longer exists")) };
    let latest = s.core.load(&p.session).await.map_err(|_| unavailable())?.session.latest_approval;
    if p.status != DecisionStatus::Pending || latest != Some(approval) || p.version != note.version {
        return Err(refused(StatusCode::GONE, "this plan was decided or replaced since; open the plan page"));
    }
    Ok((who, name, note, p))
}

/// `GET /push/n/<id>`: what the notification shows.
async fn card(State(s): State<Arc<Shared>>, parts: Parts, Path(id): Path<String>) -> Response {
    match note_of(&s, &parts, &id, false).await {
        Ok((who, _, note, p)) => {
            let mut offer = plangate_push::note::offer(&p, format!("/p/{}", note.approval_id));
            // A person a ladder level reached who may not decide the plan
            // (an on-call engineer, a delegate): its card, Open only.
            if s.core.pairing.approvers().check(&p.session.agent, p.project.as_ref(), &who, Venue::Push).is_err() {
                offer.actions = vec!["open"];
            }
            ok(StatusCode::OK, serde_json::to_value(offer).unwrap_or_default())
        }
        Err(answer) => answer,
    }
}

/// A notification's button.
#[derive(serde::Deserialize)]
struct Act {
    action: String,
}

/// What "Request changes" from a notification says: it has no text field.
const FROM_A_NOTIFICATION: &str = "Changes requested from a phone notification; details follow on the plan page or in chat.";

/// `POST /push/n/<id>`: decide from the notification.
async fn act(State(s): State<Arc<Shared>>, parts: Parts, Path(id): Path<String>, Json(act): Json<Act>) -> Response {
    let (who, name, note, p) = match note_of(&s, &parts, &id, true).await {
        Ok(found) => found,
        Err(answer) => return answer,
    };
    if !plangate_push::note::one_tap(&p) {
        return refused(StatusCode::FORBIDDEN, "this plan's policy asks for more than a tap: open the plan page");
    }
    let decision = match act.action.as_str() {
        "approve" => Decision::approve(),
        "request_changes" => Decision::revise(FROM_A_NOTIFICATION),
        _ => return refused(StatusCode::BAD_REQUEST, "action must be approve or request_changes"),
    };
    let actor = Actor::Human { id: who, name: format!("{name} via push") };
    match s.core.decide(note.approval_id, actor, Venue::Push, decision, ExecMeta::default()).await {
        Ok(decided) => ok(StatusCode::OK, json!({ "said": decided.said() })),
        Err(why) => refused(crate::email::refused_status(&why), &why.to_string()),
    }
}
