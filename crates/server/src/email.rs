//! What an email's decision links open (`[email]`, crates/email):
//! `GET /e/<token>` answers a confirmation page and decides nothing (mail
//! scanners and link previews open links); the page's form POSTs the token
//! to `/e`, and that POST decides, through the same [`Core::decide`] as a
//! chat button, from [`Venue::Email`], as the approver the link was sent
//! to ("… via email" in the receipt and the audit).
//!
//! A link is refused (a page saying why, 4xx, nothing decided) when its
//! token is not one (unknown, forged, malformed: 404), it was used (410),
//! or its plan is no longer the one it was sent for: decided, superseded,
//! cancelled or gone (410). Use is a compare-and-swap of the link's record
//! to a used one before deciding, so of two POSTs racing, one decides.
//! No cookie is involved: the form carries the token, which a third site
//! does not have.
//!
//! A token that is no link (unknown, forged, malformed) is a wrong
//! credential like a wrong API token: it takes a cell of the client
//! address's budget ([`crate::throttle`]), and beyond the budget the
//! answer is `429` with `Retry-After`. A live, used or dead link is a real
//! token and is never counted.

use crate::approvers::Venue;
use crate::core::{Core, CoreError, Decision, DecisionRefused, ExecMeta};
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use plangate_email::page::{self, Confirm};
use plangate_email::{Action, Link, Token};
use plangate_engine::{Actor, DecisionStatus, Proposal, Refusal};
use std::sync::Arc;

/// The routes, when `[email]` is set.
pub fn router(core: Arc<Core>) -> Router {
    Router::new().route("/e/{token}", get(open)).route("/e", post(use_link)).with_state(core)
}

/// A page with the headers every link page carries: never cached, never
/// framed, no referrer (the token is in the URL), no script.
fn answer(status: StatusCode, html: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CONTENT_SECURITY_POLICY, "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"),
        ],
        html,
    )
        .into_response()
}

fn refused(status: StatusCode, heading: &str, text: &str) -> Response {
    answer(status, page::outcome(heading, text))
}

const NOT_A_LINK: &str =
    "This link is not a valid plangate link: it may be mistyped or cut. Nothing was decided. Use the buttons of the email, or the chat card.";

/// A link that can still decide: its record, the record as stored, the plan.
struct Live {
    link: Link,
    record: String,
    proposal: Proposal,
}

/// The page for a token that is no link, after it was taken from the
/// client's budget of failures: `404`, or `429` once the budget is spent.
async fn not_a_link(core: &Core, parts: &Parts) -> Response {
    match core.auth_failed(crate::http::client_addr(parts), crate::throttle::Surface::EmailLink).await {
        None => refused(StatusCode::NOT_FOUND, "Not a valid link", NOT_A_LINK),
        Some(wait) => {
            let secs = crate::throttle::retry_after_secs(wait);
            let mut page = refused(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many wrong links",
                &format!("Too many links that are not plangate links came from this address. Nothing was decided. Try again in {secs} s with the link from the email."),
            );
            page.headers_mut().insert(header::RETRY_AFTER, secs.into());
            page
        }
    }
}

/// The link of `token` if it can still decide; otherwise the page that says why.
async fn live(core: &Core, parts: &Parts, token: &str) -> Result<Live, Response> {
    let Some(token) = Token::parse(token) else { return Err(not_a_link(core, parts).await) };
    let key = token.store_key();
    let unavailable = || {
        refused(StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "plangate cannot read its records right now. Nothing was decided.")
    };
    let record = core.blocking(move |s| s.cursor(&key)).await.map_err(|_| unavailable())?;
    let Some((record, link)) = record.and_then(|r| Link::from_record(&r).map(|link| (r, link))) else {
        return Err(not_a_link(core, parts).await);
    };
    let gone = |text: String| refused(StatusCode::GONE, "This link no longer works", &text);
    if link.used_at.is_some() {
        return Err(gone("This link was already used; a link decides once. Nothing was decided now.".to_string()));
    }
    let id = link.approval_id;
    let proposal = core.blocking(move |s| s.proposal(&id)).await.map_err(|_| unavailable())?;
    let Some(proposal) = proposal else { return Err(gone("This plan no longer exists. Nothing was decided.".to_string())) };
    let latest = core.load(&proposal.session).await.map_err(|_| unavailable())?.session.latest_approval;
    if proposal.status == DecisionStatus::Superseded || latest != Some(id) || proposal.version != link.version {
        return Err(gone(format!(
            "Version {} of this plan was replaced by a newer one; its links no longer work. Nothing was decided: look for the newer email or card.",
            link.version
        )));
    }
    if proposal.status != DecisionStatus::Pending {
        let said = plangate_engine::card::receipt(&proposal).unwrap_or_else(|| proposal.status.as_str().replace('_', " "));
        return Err(gone(format!("This plan was already decided ({said}); its links no longer work. Nothing was decided now.")));
    }
    Ok(Live { link, record, proposal })
}

/// `GET /e/<token>`: the confirmation page. Decides nothing.
async fn open(State(core): State<Arc<Core>>, parts: Parts, Path(token): Path<String>) -> Response {
    let Live { link, proposal: p, .. } = match live(&core, &parts, &token).await {
        Ok(live) => live,
        Err(page) => return page,
    };
    let (short_ref, session, document) = (format!("#{}", p.approval_id.short()), p.session.to_string(), p.document());
    answer(
        StatusCode::OK,
        page::confirm(&Confirm {
            token: token.trim(),
            action: link.action,
            title: &p.plan.title,
            version: p.version,
            short_ref: &short_ref,
            session: &session,
            approver: &link.approver,
            document: &document,
        }),
    )
}

/// The confirmation page's form.
#[derive(serde::Deserialize)]
struct Posted {
    token: String,
    #[serde(default)]
    feedback: String,
}

/// `POST /e`: decide through the link, once.
async fn use_link(State(core): State<Arc<Core>>, parts: Parts, Form(posted): Form<Posted>) -> Response {
    let Live { link, record, proposal } = match live(&core, &parts, &posted.token).await {
        Ok(live) => live,
        Err(page) => return page,
    };
    let decision = match link.action {
        Action::Approve => Decision::approve(),
        Action::Cancel => Decision::Cancel,
        Action::RequestChanges if posted.feedback.trim().is_empty() => {
            return refused(
                StatusCode::BAD_REQUEST,
                "Say what should change",
                "Write what should change, then send the form again. Nothing was decided.",
            );
        }
        Action::RequestChanges => Decision::revise(posted.feedback.trim()),
    };
    // Used before it decides: of two POSTs of one link, one gets here.
    let used = Link { used_at: Some(core.now().0), ..link.clone() }.to_record();
    let key = Token::parse(&posted.token).map(|t| t.store_key()).unwrap_or_default();
    match core.blocking(move |s| s.swap_cursor(&key, Some(&record), Some(&used))).await {
        Ok(true) => {}
        Ok(false) => return refused(StatusCode::GONE, "This link no longer works", "This link was already used; a link decides once."),
        Err(_) => {
            return refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again shortly",
                "plangate cannot record that right now. Nothing was decided.",
            )
        }
    }
    let actor = Actor::Human { id: link.approver.clone(), name: format!("{} via email", link.approver) };
    let heading = format!("{} v{}", proposal.plan.title, proposal.version);
    match core.decide(link.approval_id, actor, Venue::Email, decision, ExecMeta::default()).await {
        Ok(decided) => answer(StatusCode::OK, page::outcome(&heading, &decided.said())),
        Err(why) => refused(refused_status(&why), "Not decided", &why.to_string()),
    }
}

/// The status of a decision refused through a link (an email's, a push's
/// note): the plan gone 410, not this person's 403, storage trouble 503,
/// anything else (decided since, a quorum's rule) 409.
pub(crate) fn refused_status(why: &DecisionRefused) -> StatusCode {
    match why {
        DecisionRefused::NotFound | DecisionRefused::Core(CoreError::NotFound(_)) => StatusCode::GONE,
        DecisionRefused::NotAllowed(_) | DecisionRefused::Core(CoreError::Refused(Refusal::Forbidden(_))) => StatusCode::FORBIDDEN,
        DecisionRefused::Core(CoreError::Storage(_)) => StatusCode::SERVICE_UNAVAILABLE,
        DecisionRefused::Core(_) => StatusCode::CONFLICT,
    }
}
