//! The page's HTTP surface: handlers translate requests into reads of the
//! [`Backend`] and decisions through [`Backend::decide`], nothing more.
//!
//! * `GET /`: the inbox (signed in) or how to sign in.
//! * `GET /p/{id}` (`?k=` read token, or a session): the plan page;
//!   `GET /p/{id}/events`: its live updates (server-sent events);
//!   `POST /p/{id}/decide`: a decision (session + CSRF token).
//! * `GET /signin/{token}` then `POST /signin`: a personal sign-in link
//!   (`?next=/p/{id}/confirm`: then to that page); `POST /signin/operator`:
//!   the operator token; `POST /signout`.
//! * Passkeys (`crate::stepup`): `GET /passkeys`, `POST /passkeys/options`,
//!   `POST /passkeys`; `GET /p/{id}/confirm`, `POST /p/{id}/confirm/options`,
//!   `POST /p/{id}/confirm`.
//!
//! A wrong operator token or sign-in link takes one from the client
//! address's budget of failures ([`Backend::sign_in_failed`](crate::Backend::sign_in_failed));
//! beyond it the answer is `429` with `Retry-After`.
//!
//! No handler keeps state between requests: a session is its signed cookie
//! (checked with [`Web::session`]), so a load balancer may send each request
//! of one browser to a different replica.
//! * `GET /web/style.css`, `/web/live.js`, `/web/passkey.js`,
//!   `/web/push.js`, the icons: the embedded assets; `GET /sw.js` (the
//!   service worker, at the root so that it controls every page) and
//!   `GET /manifest.webmanifest`: what makes the page installable. Web
//!   Push's own routes (`/push/…`) are the server's (`plangate-push`).
//!
//! Every response carries a Content-Security-Policy without inline script,
//! `no-referrer` (read tokens never leak to a linked site) and `no-store`.

use crate::auth::{self, csrf_ok, Identity, Session};
use crate::page::{self, InboxRow, PlanPage};
use crate::{Refused, SignInSurface, Web};
use axum::extract::{ConnectInfo, Form, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use maud::Markup;
use plangate_engine::text::reveal;
use plangate_engine::{ApprovalId, Decision, DecisionStatus, Plan, Proposal, Step};
use serde::Deserialize;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

const STYLE: &str = include_str!("../assets/style.css");
const SCRIPT: &str = include_str!("../assets/live.js");
const PASSKEY_SCRIPT: &str = include_str!("../assets/passkey.js");
// The installable page (PWA): its manifest, service worker, icons and the
// script that registers the worker and subscribes to Web Push.
const PUSH_SCRIPT: &str = include_str!("../assets/push.js");
const SERVICE_WORKER: &str = include_str!("../assets/sw.js");
const MANIFEST: &str = include_str!("../assets/manifest.webmanifest");
const ICON_SVG: &str = include_str!("../assets/icon.svg");
const ICON_192: &[u8] = include_bytes!("../assets/icon-192.png");
const ICON_512: &[u8] = include_bytes!("../assets/icon-512.png");
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
                   manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// How many decided approvals the inbox lists.
const DECIDED_SHOWN: usize = 50;

/// Pending plans the inbox shows at most.
const PENDING_SHOWN: usize = 100;

/// Pending plans the inbox reads at once.
const PENDING_PAGE: usize = 200;

/// Pending plans the inbox reads at most looking for the ones a person may
/// decide (an approver of one agent among thousands of others' plans).
const PENDING_READ: usize = 2_000;

pub(crate) type Shared = Arc<Web>;

/// The page's routes, to merge into plangate's router.
pub fn router(web: Arc<Web>) -> Router {
    Router::new()
        .route("/", get(inbox))
        .route("/p/{id}", get(plan))
        .route("/p/{id}/events", get(events))
        .route("/p/{id}/decide", post(decide))
        .route("/signin", get(sign_in_page).post(sign_in))
        .route("/signin/operator", post(sign_in_operator))
        .route("/signin/{token}", get(confirm_sign_in))
        .route("/signout", post(sign_out))
        .merge(crate::stepup::routes())
        .route(page::STYLE_PATH, get(|| async { asset("text/css; charset=utf-8", STYLE) }))
        .route(page::SCRIPT_PATH, get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }))
        .route(page::PASSKEY_SCRIPT_PATH, get(|| async { asset("text/javascript; charset=utf-8", PASSKEY_SCRIPT) }))
        .route(page::PUSH_SCRIPT_PATH, get(|| async { asset("text/javascript; charset=utf-8", PUSH_SCRIPT) }))
        // At the root: a service worker controls only the paths under its own.
        .route(page::SERVICE_WORKER_PATH, get(|| async { asset("text/javascript; charset=utf-8", SERVICE_WORKER) }))
        .route(page::MANIFEST_PATH, get(|| async { asset("application/manifest+json", MANIFEST) }))
        .route("/web/icon.svg", get(|| async { asset("image/svg+xml", ICON_SVG) }))
        .route("/web/icon-192.png", get(|| async { asset("image/png", ICON_192) }))
        .route("/web/icon-512.png", get(|| async { asset("image/png", ICON_512) }))
        .layer(axum::middleware::from_fn_with_state(web.clone(), same_origin_posts))
        .layer(axum::middleware::map_response(security_headers))
        .with_state(web)
}

/// Refuse a state-changing request (every POST: sign-in, sign-out, a
/// decision) that a browser says comes from another site. Without it a
/// form on any site could sign a visitor's browser in as the attacker
/// (login CSRF) or post with their cookie. A browser sends
/// `Sec-Fetch-Site` (modern ones) or at least `Origin` on a POST; a request
/// with neither is not a browser's cross-site form, and its cookie and CSRF
/// token are checked as before.
async fn same_origin_posts(State(web): State<Shared>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if request.method() == axum::http::Method::POST {
        if let Err(why) = same_origin(request.headers(), web.links.origin()) {
            tracing::warn!(path = %request.uri().path(), why, "web: cross-site request refused");
            return html(
                StatusCode::FORBIDDEN,
                page::message("Refused", "This request came from another site. Open plangate's page and try again there.", None),
            );
        }
    }
    next.run(request).await
}

/// Whether a POST's fetch metadata says it came from the page itself: the
/// public URL's origin, or the host the request was sent to (a page opened
/// at another address of the same server, such as a loopback one).
///
/// `Sec-Fetch-Site` is set by the browser itself (no page can forge it), so
/// when it is there it decides alone: under the page's own
/// `Referrer-Policy: no-referrer`, Chrome posts the page's forms with
/// `Origin: null` and `Sec-Fetch-Site: same-origin`. `Origin` decides only
/// for a browser that sends no `Sec-Fetch-Site`.
fn same_origin(headers: &HeaderMap, origin: &str) -> Result<(), &'static str> {
    if let Some(site) = headers.get("sec-fetch-site") {
        // `none`: the person started it (a bookmark, the address bar).
        // A browser sets this header itself (no page can), so it settles
        // the question; `Origin` is then not consulted: under the page's
        // `Referrer-Policy: no-referrer` Chromium sends `Origin: null` on
        // the page's own form posts.
        return match site.as_bytes() {
            b"same-origin" | b"none" => Ok(()),
            _ => Err("Sec-Fetch-Site is not same-origin"),
        };
    }
    if let Some(sent) = headers.get(header::ORIGIN) {
        let sent = sent.to_str().unwrap_or_default();
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
        let sent_host = sent.split_once("://").map(|(_, rest)| rest).unwrap_or_default();
        let ours = sent.eq_ignore_ascii_case(origin) || (!host.is_empty() && sent_host.eq_ignore_ascii_case(host));
        if !ours {
            return Err("Origin is not the page's");
        }
    }
    Ok(())
}

async fn security_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

fn asset<B: IntoResponse>(content_type: &'static str, body: B) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

pub(crate) fn html(status: StatusCode, markup: Markup) -> Response {
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], markup.into_string()).into_response()
}

/// The signed-in session of this request, if any: a valid cookie of a
/// session that did not sign out. Anything else is no session, alike.
pub(crate) async fn session(web: &Web, headers: &HeaderMap) -> Option<Session> {
    let cookie = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(auth::cookie_value)?;
    web.session(cookie).await
}

pub(crate) fn not_found(who: Option<&Identity>) -> Response {
    html(
        StatusCode::NOT_FOUND,
        page::message("Not found", "There is no such plan, or this link does not open it. Check the link on the card.", who),
    )
}

/// Whether a read link of `p` still opens it: while the approval is
/// pending, and while its approved plan is being executed. Cards show the
/// link only then.
pub fn read_link_live(p: &Proposal, state: Option<&plangate_engine::State>) -> bool {
    p.status == DecisionStatus::Pending
        || page::live_steps(p, state).iter().any(|s| !s.status.is_closed())
            && state.is_some_and(|st| st.session.latest_approval == Some(p.approval_id))
            && matches!(p.status, DecisionStatus::Approved | DecisionStatus::Edited)
}

#[derive(Debug, Deserialize)]
struct ReadQuery {
    k: Option<String>,
}

/// What a request may do with approval `id`.
enum Access {
    /// A signed-in person who may decide it (or the operator).
    Decider(Session),
    /// A read link, or a signed-in person who is no approver but holds one.
    Reader(Option<Session>),
}

struct Loaded {
    proposal: Proposal,
    state: Option<plangate_engine::State>,
    access: Access,
}

async fn load(web: &Web, headers: &HeaderMap, id: &str, k: Option<&str>) -> Result<Loaded, Response> {
    let session = session(web, headers).await;
    let who = session.as_ref().map(|s| &s.who);
    let Some(id) = ApprovalId::parse(id) else { return Err(not_found(who)) };
    let Some(proposal) = web.backend.proposal(id).await else { return Err(not_found(who)) };
    let state = web.backend.state(&proposal.session).await;
    if let Some(s) = session.as_ref().filter(|s| web.backend.may_decide(&s.who, &proposal)) {
        return Ok(Loaded { access: Access::Decider(s.clone()), proposal, state });
    }
    match k {
        Some(k) if web.links.read_key.verify(&id, k) => {
            if !read_link_live(&proposal, state.as_ref()) {
                return Err(html(
                    StatusCode::GONE,
                    page::message(
                        "This link has expired",
                        "A read link works while its plan waits for a decision and while it is being carried out. Approvers can sign in to see it.",
                        who,
                    ),
                ));
            }
            Ok(Loaded { access: Access::Reader(session), proposal, state })
        }
        _ => Err(not_found(who)),
    }
}

async fn plan(State(web): State<Shared>, headers: HeaderMap, Path(id): Path<String>, Query(q): Query<ReadQuery>) -> Response {
    let loaded = match load(&web, &headers, &id, q.k.as_deref()).await {
        Ok(l) => l,
        Err(response) => return response,
    };
    let p = &loaded.proposal;
    let previous = if p.version > 1 { web.backend.previous_version(p).await } else { None };
    let (session, may_decide) = match &loaded.access {
        Access::Decider(s) => (Some(s), true),
        Access::Reader(s) => (s.as_ref(), false),
    };
    let reader = session.map_or_else(|| crate::LINK_READER.to_string(), |s| s.who.label());
    let audit = web.backend.audit(p, &reader).await;
    let rules = web.backend.permission_rules(&p.session.agent).await;
    let events_url = match &q.k {
        Some(k) if !may_decide => format!("/p/{}/events?k={k}", p.approval_id),
        _ => format!("/p/{}/events", p.approval_id),
    };
    let view = PlanPage {
        proposal: p,
        state: loaded.state.as_ref(),
        previous: previous.as_ref(),
        audit: &audit,
        rules: &rules,
        now: web.backend.now(),
        who: session.map(|s| &s.who),
        csrf: session.map(|s| s.csrf.as_str()),
        may_decide,
        events_url,
    };
    html(StatusCode::OK, page::plan_page(&view))
}

/// The live part of the page as JSON: status, receipt and the checklist.
/// Texts are revealed like the page's; the script sets them as text, never
/// as HTML.
fn live_json(p: &Proposal, state: Option<&plangate_engine::State>) -> String {
    let steps = page::live_steps(p, state);
    let open_steps = steps.iter().any(|s| !s.status.is_closed());
    let executing = state.is_some_and(|st| st.session.latest_approval == Some(p.approval_id))
        && matches!(p.status, DecisionStatus::Approved | DecisionStatus::Edited);
    serde_json::json!({
        "status": p.status.as_str(),
        "receipt": plangate_engine::card::receipt(p),
        "final": p.status != DecisionStatus::Pending && !(executing && open_steps),
        "steps": steps.iter().map(|s| serde_json::json!({
            "mark": s.status.mark(),
            "status": s.status.as_str(),
            "text": reveal(s.step.trim()).0,
        })).collect::<Vec<_>>(),
    })
    .to_string()
}

async fn events(State(web): State<Shared>, headers: HeaderMap, Path(id): Path<String>, Query(q): Query<ReadQuery>) -> Response {
    let loaded = match load(&web, &headers, &id, q.k.as_deref()).await {
        Ok(l) => l,
        Err(response) => return response,
    };
    let key = loaded.proposal.session.clone();
    let id = loaded.proposal.approval_id;
    // Subscribe before the first read, so no commit slips between them.
    let rx = web.backend.subscribe(&key);
    let first = live_json(&loaded.proposal, loaded.state.as_ref());
    let stream = futures_util::stream::unfold((web, rx, None::<String>, Some(first)), move |(web, mut rx, last, ready)| {
        let key = key.clone();
        async move {
            let mut ready = ready;
            loop {
                if let Some(data) = ready.take() {
                    if last.as_deref() != Some(data.as_str()) {
                        let event: Result<Event, Infallible> = Ok(Event::default().event("plan").data(data.clone()));
                        return Some((event, (web, rx, Some(data), None)));
                    }
                }
                rx.changed().await.ok()?;
                let p = web.backend.proposal(id).await?;
                let state = web.backend.state(&key).await;
                ready = Some(live_json(&p, state.as_ref()));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

#[derive(Debug, Deserialize)]
struct DecideForm {
    csrf: String,
    action: String,
    #[serde(default)]
    feedback: String,
    #[serde(default)]
    steps: String,
}

async fn decide(State(web): State<Shared>, headers: HeaderMap, Path(id): Path<String>, Form(form): Form<DecideForm>) -> Response {
    let Some(session) = session(&web, &headers).await else {
        return html(
            StatusCode::FORBIDDEN,
            page::message("Sign in to decide", "Deciding needs a sign-in link from the bot (/plan web).", None),
        );
    };
    let who = Some(&session.who);
    if !csrf_ok(&session, &form.csrf) {
        return html(
            StatusCode::FORBIDDEN,
            page::message("Refused", "This form is stale or was not sent by this page; reload and try again.", who),
        );
    }
    let Some(approval_id) = ApprovalId::parse(&id) else { return not_found(who) };
    let decision = match form.action.as_str() {
        "approve" => Decision::approve(),
        "cancel" => Decision::Cancel,
        "revise" if !form.feedback.trim().is_empty() => Decision::revise(form.feedback.trim()),
        "edit" => {
            let steps: Vec<Step> =
                form.steps.lines().map(plangate_engine::list::item_text).filter(|s| !s.is_empty()).map(Step::pending).collect();
            if steps.is_empty() {
                return html(StatusCode::BAD_REQUEST, page::message("Nothing to approve", "Give at least one step, one per line.", who));
            }
            let Some(p) = web.backend.proposal(approval_id).await else { return not_found(who) };
            Decision::edit(Plan { steps, ..p.plan })
        }
        "revise" => return html(StatusCode::BAD_REQUEST, page::message("Say what should change", "The feedback is empty.", who)),
        other => {
            let shown: String = other.chars().take(40).collect();
            return html(
                StatusCode::BAD_REQUEST,
                page::message("Unknown action", &format!("{shown:?} is not approve, revise, edit or cancel."), who),
            );
        }
    };
    match web.backend.decide(&session.who, approval_id, decision).await {
        Ok(_) => Redirect::to(&format!("/p/{approval_id}")).into_response(),
        Err(refused) => {
            let status = match refused {
                Refused::Forbidden(_) => StatusCode::FORBIDDEN,
                Refused::Conflict(_) => StatusCode::CONFLICT,
                Refused::NotFound(_) => StatusCode::NOT_FOUND,
                Refused::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            };
            html(status, page::message("Not decided", &refused.to_string(), who))
        }
    }
}

/// The inbox: the pending plans this person may decide, oldest first, then
/// the latest decisions. Bounded whatever the store holds: pending plans
/// are read a page at a time until [`PENDING_SHOWN`] are theirs or
/// [`PENDING_READ`] were read (then the page says more wait, and where to
/// see them all); decisions are the latest of each outcome. A row's
/// reminder count is the proposal's own (`reminders_sent`), not a read of
/// the audit.
async fn inbox(State(web): State<Shared>, headers: HeaderMap) -> Response {
    let Some(session) = session(&web, &headers).await else { return html(StatusCode::OK, page::sign_in()) };
    let mine = |p: &Proposal| web.backend.may_decide(&session.who, p);
    let (mut pending, mut after, mut read, mut more) = (Vec::new(), None, 0, false);
    loop {
        let page = web.backend.pending_page(after, PENDING_PAGE).await;
        read += page.len();
        let full = page.len() == PENDING_PAGE;
        after = page.last().map(|p| (p.created_at, p.approval_id));
        pending.extend(page.into_iter().filter(|p| mine(p)));
        if pending.len() > PENDING_SHOWN || (full && read >= PENDING_READ) {
            more = true;
            break;
        }
        if !full {
            break;
        }
    }
    pending.truncate(PENDING_SHOWN);
    // Of the latest decisions, those this person may decide (an approver
    // of few agents may see fewer than DECIDED_SHOWN).
    let decided: Vec<Proposal> = web.backend.recently_decided(DECIDED_SHOWN).await.into_iter().filter(|p| mine(p)).collect();
    let rows: Vec<InboxRow<'_>> = pending
        .iter()
        .map(|p| InboxRow { proposal: p, nudges: usize::from(p.reminders_sent) })
        .chain(decided.iter().map(|p| InboxRow { proposal: p, nudges: 0 }))
        .collect();
    html(StatusCode::OK, page::inbox(&rows, more, &session.who, &session.csrf, web.backend.now()))
}

async fn sign_in_page() -> Response {
    html(StatusCode::OK, page::sign_in())
}

#[derive(Debug, Deserialize)]
struct NextQuery {
    next: Option<String>,
}

/// The page of a sign-in link: its shape only (the MAC, the expiry and the
/// single use are checked on the POST), so opening it uses nothing up.
/// `next` is kept only when it is a page plangate sends people to after a
/// sign-in (a passkey confirmation), never another site.
async fn confirm_sign_in(Path(token): Path<String>, Query(q): Query<NextQuery>) -> Response {
    if token.is_empty() || token.len() > auth::MAX_TOKEN_LEN || !token.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return html(StatusCode::NOT_FOUND, page::message("Not a sign-in link", "Ask the bot for a new one: /plan web", None));
    }
    let next = q.next.as_deref().and_then(crate::stepup::safe_next);
    html(StatusCode::OK, page::confirm_sign_in(&token, next.as_deref()))
}

#[derive(Debug, Deserialize)]
struct TokenForm {
    token: String,
    #[serde(default)]
    next: String,
}

fn signed_in(web: &Web, who: Identity, next: &str) -> Response {
    let Some((value, _)) = web.start_session(who) else {
        return html(StatusCode::FORBIDDEN, page::message("Wrong token", "No operator token is configured.", None));
    };
    let cookie = auth::session_cookie(&value, web.links.secure());
    let to = crate::stepup::safe_next(next).unwrap_or_else(|| "/".to_string());
    let mut response = Redirect::to(&to).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The address a request came from: the TCP peer the server recorded
/// (behind a reverse proxy, the proxy's), or the unspecified address when
/// it recorded none (a router driven without a socket).
struct Client(IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        Ok(Client(peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))))
    }
}

/// The answer to a wrong credential: `refused` while the address is within
/// its budget of failures, else `429` with `Retry-After`. Only failures are
/// counted: a correct token or link never gets here, so it is never slowed.
async fn failed(web: &Web, client: IpAddr, surface: SignInSurface, refused: Response) -> Response {
    let Some(wait) = web.backend.sign_in_failed(client, surface).await else { return refused };
    let secs = wait.as_millis().div_ceil(1000).max(1);
    let mut response = html(
        StatusCode::TOO_MANY_REQUESTS,
        page::message("Too many failed sign-ins", &format!("Too many failed sign-ins from this address. Try again in {secs} s."), None),
    );
    if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

async fn sign_in(State(web): State<Shared>, Client(client): Client, Form(form): Form<TokenForm>) -> Response {
    match web.redeem_sign_in(form.token.trim()).await {
        Some(who) => {
            tracing::info!(who = %who.label(), "signed in to the web page");
            signed_in(&web, who, &form.next)
        }
        None => {
            let refused = html(
                StatusCode::GONE,
                page::message(
                    "This sign-in link is used up",
                    "Sign-in links work once, within 10 minutes. Ask the bot again: /plan web",
                    None,
                ),
            );
            failed(&web, client, SignInSurface::Link, refused).await
        }
    }
}

async fn sign_in_operator(State(web): State<Shared>, Client(client): Client, Form(form): Form<TokenForm>) -> Response {
    if web.backend.is_operator_token(form.token.trim()) {
        tracing::info!("operator signed in to the web page");
        signed_in(&web, Identity::Operator, "")
    } else {
        tracing::warn!(%client, "wrong operator token on the web sign-in");
        let refused = html(StatusCode::FORBIDDEN, page::message("Wrong token", "That is not the operator token.", None));
        failed(&web, client, SignInSurface::OperatorToken, refused).await
    }
}

#[derive(Debug, Deserialize)]
struct CsrfForm {
    csrf: String,
}

/// Sign out: the cookie is cleared, and the session is recorded as signed
/// out in the store, so a copy of the cookie opens nothing on any replica.
async fn sign_out(State(web): State<Shared>, headers: HeaderMap, Form(form): Form<CsrfForm>) -> Response {
    let mut response = Redirect::to("/").into_response();
    if let Some(session) = session(&web, &headers).await.filter(|s| csrf_ok(s, &form.csrf)) {
        if web.backend.revoke(&session.id).await {
            tracing::info!(who = %session.who.label(), "signed out of the web page");
        } else {
            tracing::error!(who = %session.who.label(), "web sign-out not recorded (storage trouble)");
            response = html(
                StatusCode::SERVICE_UNAVAILABLE,
                page::message(
                    "Not signed out everywhere",
                    "This browser is signed out, but plangate could not record it (storage trouble): the session stays valid elsewhere until it expires. Sign out again shortly.",
                    None,
                ),
            );
        }
    }
    if let Ok(value) = HeaderValue::from_str(&auth::clear_cookie(web.links.secure())) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::same_origin;
    use axum::http::HeaderMap;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().expect("name"), v.parse().expect("value"))).collect()
    }

    #[test]
    fn posts_from_the_page_pass_and_from_other_sites_do_not() {
        let page = "https://plans.example.com";
        let host = ("host", "127.0.0.1:8787");
        for ok in [
            &[][..],
            &[("origin", "https://plans.example.com"), ("sec-fetch-site", "same-origin")][..],
            &[("origin", "http://127.0.0.1:8787"), host][..],
            &[("sec-fetch-site", "none")][..],
            // Chrome's own form post under `Referrer-Policy: no-referrer`.
            &[("origin", "null"), ("sec-fetch-site", "same-origin"), host][..],
        ] {
            assert!(same_origin(&headers(ok), page).is_ok(), "{ok:?}");
        }
        for bad in [
            &[("origin", "https://evil.example"), host][..],
            &[("origin", "null"), host][..],
            &[("sec-fetch-site", "cross-site")][..],
            &[("sec-fetch-site", "same-site"), ("origin", "https://plans.example.com")][..],
            &[("origin", "https://plans.example.com.evil.example")][..],
        ] {
            assert!(same_origin(&headers(bad), page).is_err(), "{bad:?}");
        }
    }
}
