//! The HTML of every page, rendered on the server (maud escapes every
//! interpolation; only [`markdown::to_safe_html`] output goes in raw).
//!
//! Pure functions of engine values: no I/O, so tests render pages directly.
//! Agent text passes through [`reveal`] first, so hidden characters show as
//! `⟦U+202E⟧` markers and the page carries the cards' warning.

use crate::auth::Identity;
use crate::diff;
use crate::markdown::to_safe_html;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use plangate_engine::card::{self, Card};
use plangate_engine::ids::humanize_ms;
use plangate_engine::text::{reveal, HIDDEN_CHARS_WARNING};
use plangate_engine::{AuditEvent, DecisionStatus, Proposal, State, Step, Timestamp};

/// Where the embedded stylesheet and script are served.
pub const STYLE_PATH: &str = "/web/style.css";
pub const SCRIPT_PATH: &str = "/web/live.js";
pub const PASSKEY_SCRIPT_PATH: &str = "/web/passkey.js";
/// The script that registers the service worker and subscribes to push.
pub const PUSH_SCRIPT_PATH: &str = "/web/push.js";
/// The service worker, at the root (it controls the paths under its own).
pub const SERVICE_WORKER_PATH: &str = "/sw.js";
/// The web app manifest: the page installs to a home screen.
pub const MANIFEST_PATH: &str = "/manifest.webmanifest";

/// Every page: phone-first, dark mode by `prefers-color-scheme` (in the
/// stylesheet), no inline script or style (the CSP forbids them).
pub fn layout(title: &str, who: Option<&Identity>, csrf: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                meta name="referrer" content="no-referrer";
                title { (title) " · plangate" }
                meta name="theme-color" content="#1f4f8f";
                link rel="manifest" href=(MANIFEST_PATH);
                link rel="icon" href="/web/icon.svg" type="image/svg+xml";
                link rel="apple-touch-icon" href="/web/icon-192.png";
                link rel="stylesheet" href=(STYLE_PATH);
                script src=(SCRIPT_PATH) defer {}
                script src=(PASSKEY_SCRIPT_PATH) defer {}
                script src=(PUSH_SCRIPT_PATH) defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "plangate" }
                    @if let Some(who) = who {
                        span.who { "Signed in as " strong { (who.label()) } }
                        @if matches!(who, Identity::Person { .. }) {
                            a.who href="/passkeys" { "Passkey" }
                            // Shown by /web/push.js where the browser and the server do push.
                            button.link #push-subscribe type="button" hidden { "Notify this device" }
                            span.who #push-status {}
                        }
                        @if let Some(csrf) = csrf {
                            form.inline method="post" action="/signout" {
                                input type="hidden" name="csrf" value=(csrf);
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    } @else {
                        a.who href="/signin" { "Sign in" }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A page that only says something (errors, expired links).
pub fn message(title: &str, text: &str, who: Option<&Identity>) -> Markup {
    layout(title, who, None, html! { h1 { (title) } p { (text) } p { a href="/" { "Inbox" } } })
}

/// The sign-in page: how to get a personal link, and the operator's form.
pub fn sign_in() -> Markup {
    layout(
        "Sign in",
        None,
        None,
        html! {
            h1 { "Sign in" }
            p { "Send " code { "/plan web" } " in a chat where plangate posts plans. The bot sends you a personal sign-in link privately; it works once, within 10 minutes." }
            details {
                summary { "Operator" }
                form method="post" action="/signin/operator" {
                    label for="token" { "Operator token" }
                    input #token type="password" name="token" autocomplete="current-password" required;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

/// The page a sign-in link opens: one more click, so a link preview that
/// fetches the URL cannot use up the single-use link.
pub fn confirm_sign_in(token: &str, next: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        None,
        html! {
            h1 { "Sign in" }
            form method="post" action="/signin" {
                input type="hidden" name="token" value=(token);
                @if let Some(next) = next { input type="hidden" name="next" value=(next); }
                button #signin type="submit" { "Sign in to plangate" }
            }
        },
    )
}

/// One line of the inbox.
pub struct InboxRow<'a> {
    pub proposal: &'a Proposal,
    pub nudges: usize,
}

/// The approvals this person may decide: pending first, then decided.
/// `more`: pending plans beyond these wait too (the inbox shows a bounded
/// number; the page says where to see them all).
pub fn inbox(rows: &[InboxRow<'_>], more: bool, who: &Identity, csrf: &str, now: Timestamp) -> Markup {
    let (pending, decided): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r.proposal.status == DecisionStatus::Pending);
    let row = |r: &InboxRow<'_>| {
        let p = r.proposal;
        let (title, _) = reveal(p.plan.title.trim());
        let (agent, _) = reveal(&p.session.to_string());
        let project = p.project.as_ref().map(|project| reveal(&project.label()).0);
        html! {
            li.row {
                a href=(format!("/p/{}", p.approval_id)) { (title) }
                span.meta {
                    @if let Some(project) = &project { (project) " — " }
                    (agent) " · v" (p.version) " · " (age(p.created_at, now))
                    @if p.status == DecisionStatus::Pending {
                        " · " (r.nudges) " nudge" @if r.nudges != 1 { "s" }
                    } @else {
                        " · " span class=(format!("badge {}", p.status.as_str())) { (p.status.as_str()) }
                    }
                }
            }
        }
    };
    layout(
        "Inbox",
        Some(who),
        Some(csrf),
        html! {
            h1 { "Plans to decide" }
            @if pending.is_empty() { p.empty { "Nothing is waiting for you." } }
            ul.list #pending { @for r in &pending { (row(r)) } }
            @if more {
                p.more #more-pending {
                    "More plans are pending than this page reads; these are the oldest. "
                    "Every one: " code { "plangate list" } " or " code { "GET /v1/approvals?status=pending" } "."
                }
            }
            @if !decided.is_empty() {
                h2 { "Decided" }
                ul.list #decided { @for r in &decided { (row(r)) } }
            }
        },
    )
}

/// Everything the plan page shows.
pub struct PlanPage<'a> {
    pub proposal: &'a Proposal,
    /// The session now, for live step progress of an approved plan.
    pub state: Option<&'a State>,
    /// The session's previous version, for the diff.
    pub previous: Option<&'a Proposal>,
    pub audit: &'a [AuditEvent],
    /// The agent's stored "always allow" permission rules.
    pub rules: &'a [plangate_engine::permission::StoredRule],
    pub now: Timestamp,
    pub who: Option<&'a Identity>,
    /// The session's CSRF token, when someone is signed in.
    pub csrf: Option<&'a str>,
    /// Whether the signed-in person may decide this plan.
    pub may_decide: bool,
    /// Where the page's live updates come from (with the read token when
    /// the page was opened through a read link).
    pub events_url: String,
}

/// The checklist as it stands: the live steps of an approved plan being
/// executed, else the plan's own.
pub fn live_steps<'a>(p: &'a Proposal, state: Option<&'a State>) -> &'a [Step] {
    let plan = p.edited_plan.as_ref().unwrap_or(&p.plan);
    match state {
        Some(st)
            if st.session.latest_approval == Some(p.approval_id)
                && matches!(p.status, DecisionStatus::Approved | DecisionStatus::Edited) =>
        {
            &st.session.steps
        }
        _ => &plan.steps,
    }
}

fn age(at: Timestamp, now: Timestamp) -> String {
    match humanize_ms(now.0 - at.0).as_str() {
        "just now" => "just now".to_string(),
        other => format!("{other} ago"),
    }
}

fn shown(text: &str, hidden: &mut bool) -> String {
    let (text, h) = reveal(text.trim());
    *hidden |= h;
    text
}

pub fn plan_page(v: &PlanPage<'_>) -> Markup {
    let p = v.proposal;
    let card: Card = card::card(p, v.state, v.now);
    let plan = p.edited_plan.as_ref().unwrap_or(&p.plan);
    let mut hidden = card.warning.is_some();
    let (markdown, md_hidden) = reveal(&p.document());
    hidden |= md_hidden;
    let steps = live_steps(p, v.state);
    // Steps added after approval read as such here too (the cards' rule).
    let marks = card::AddedMarks::of(p, v.state);
    let step_rows: Vec<(usize, &Step, String, Vec<String>)> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let text = shown(&s.step, &mut hidden);
            let text = match marks.of_step(s) {
                Some(note) => format!("+ {text}{note}"),
                None => text,
            };
            (i + 1, s, text, s.acceptance_criteria.iter().map(|c| shown(c, &mut hidden)).collect())
        })
        .collect();
    let analysis = plan.analysis.as_deref().map(|a| shown(a, &mut hidden));
    let references: Vec<String> = plan.references.iter().map(|r| shown(r, &mut hidden)).collect();
    let open = p.status == DecisionStatus::Pending;
    let decider = v.may_decide && open;
    let audit: Vec<(String, String, String, String)> =
        v.audit.iter().map(|e| (e.at.clock(), shown(&e.actor, &mut hidden), e.action.clone(), shown(&e.detail, &mut hidden))).collect();
    let body = html! {
        article #plan data-events=(v.events_url) data-status=(p.status.as_str()) {
            @if hidden { p.warning role="alert" { (HIDDEN_CHARS_WARNING) } }
            h1 { (card.title) }
            p.context {
                (card.context) " · " (card.short_ref) " · proposed " (p.created_at.rfc3339())
            }
            p.status {
                "Status: " span #status class=(format!("badge {}", p.status.as_str())) { (p.status.as_str()) }
            }
            p #receipt .receipt hidden[card.receipt.is_none()] { (card.receipt.clone().unwrap_or_default()) }
            @if let Some(summary) = &card.summary { p.summary { (summary) } }
            @if decider { (actions(p, v.csrf.unwrap_or_default(), p.review.step_up && matches!(v.who, Some(Identity::Person { .. })))) }
            @else if open && v.who.is_none() {
                p.hint { "Read-only link. To decide, " a href="/signin" { "sign in" } "." }
            }
            section {
                h2 { "Steps" }
                ol #steps .steps {
                    @for (n, s, text, criteria) in &step_rows {
                        li class=(format!("step {}", s.status.as_str())) data-n=(n) {
                            span.mark aria-hidden="true" { (s.status.mark()) }
                            " "
                            span.text { (text) }
                            span.state { " (" (s.status.as_str().replace('_', " ")) ")" }
                            @if !criteria.is_empty() {
                                ul.criteria { @for c in criteria { li { (c) } } }
                            }
                        }
                    }
                }
            }
            @if let Some(ran) = p.what_ran(v.state) { (ran_section(ran)) }
            @for (heading, items) in [("Assumptions", &card.assumptions), ("Risks", &card.risks), ("Verification", &card.verification)] {
                @if !items.is_empty() {
                    section { h2 { (heading) } ul { @for i in items { li { (i) } } } }
                }
            }
            @if let Some(a) = &analysis { section { h2 { "Analysis" } p.pre { (a) } } }
            @if !references.is_empty() { section { h2 { "References" } ul { @for r in &references { li { (r) } } } } }
            @if let Some(prev) = v.previous { (diff_section(prev, p)) }
            section.document {
                h2 { "The plan document" }
                div.markdown { (PreEscaped(to_safe_html(&markdown))) }
            }
            @if !v.rules.is_empty() {
                section #rules {
                    h2 { "Always allowed for " (p.session.agent) }
                    p { "Permission requests these rules answer without asking (remove one in chat: /plan rules remove N)." }
                    ol.rules {
                        @for r in v.rules {
                            li { code { (r.rule.shown()) } " — by " (r.created_by) ", " (r.created_at.rfc3339()) }
                        }
                    }
                }
            }
            @if !audit.is_empty() {
                section {
                    h2 { "Audit trail" }
                    ol.audit {
                        @for (at, actor, action, detail) in &audit {
                            li { time { (at) } " " strong { (actor) } " " (action) @if !detail.is_empty() { " — " (detail) } }
                        }
                    }
                }
            }
        }
    };
    layout(&card.title, v.who, v.csrf, body)
}

/// What ran under the approval, once its plan ended: the card's lines
/// with every listed attempt and permission answer, and the receipt's
/// hash as the audit chain holds it ([`plangate_engine::ran`]).
fn ran_section(ran: &plangate_engine::ran::Ran) -> Markup {
    let e = &ran.execution;
    let per_step: Vec<String> = ran.card_lines().into_iter().skip(1).take(e.steps.len()).collect();
    let attempts: Vec<String> = e.attempts.iter().map(plangate_engine::ran::attempt_line).map(|l| reveal(&l).0).collect();
    html! {
        section #ran {
            h2 { (plangate_engine::card::RAN_HEADING) }
            p.summary { (ran.summary()) }
            ul { @for line in &per_step { li { (line) } } }
            @if !attempts.is_empty() {
                h3 { "Not simply run" }
                ul.attempts { @for a in &attempts { li { (a) } } }
                @if e.unlisted > 0 { p { "… and " (e.unlisted) " more, counted above" } }
            }
            @if !e.answers.is_empty() {
                h3 { "Permission answers" }
                ul { @for a in &e.answers { li { (reveal(a).0) } } }
            }
            @if !e.amendments.is_empty() {
                p { "Amendments: " (e.amendments.iter().map(|v| format!("v{v}")).collect::<Vec<_>>().join(", ")) }
            }
            p.hash { "Receipt " code { (ran.hash) } " (in the audit chain)" }
        }
    }
}

/// Approve, Request changes, Edit, Cancel: every one a POST with the CSRF
/// token, decided by the same engine command as a button in a chat. Where
/// the policy asks a person for a passkey (`passkey`), Approve leads to the
/// page that confirms it with one.
fn actions(p: &Proposal, csrf: &str, passkey: bool) -> Markup {
    let to = format!("/p/{}/decide", p.approval_id);
    let steps: Vec<&str> = p.plan.steps.iter().map(|s| s.step.as_str()).collect();
    html! {
        section #actions .actions aria-label="Decide" {
            @if passkey {
                p { a #approve .button.primary href=(format!("/p/{}/confirm", p.approval_id)) { "Approve with your passkey" } }
            } @else {
                form method="post" action=(to) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="version" value=(p.version);
                    button #approve .primary type="submit" name="action" value="approve" { "Approve" }
                }
            }
            details {
                summary { "Request changes" }
                form method="post" action=(to) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="version" value=(p.version);
                    label for="feedback" { "What should change?" }
                    textarea #feedback name="feedback" rows="4" required {}
                    button type="submit" name="action" value="revise" { "Request changes" }
                }
            }
            details {
                summary { "Edit steps" }
                form method="post" action=(to) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="version" value=(p.version);
                    label for="steps-edit" { "One step per line; approving with these steps." }
                    textarea #steps-edit name="steps" rows=(steps.len().clamp(3, 20)) required { (steps.join("\n")) }
                    button type="submit" name="action" value="edit" { "Approve with these steps" }
                }
            }
            details {
                summary { "Cancel" }
                form method="post" action=(to) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="version" value=(p.version);
                    p { "The agent stays blocked (read-only) until a new plan is approved." }
                    button.danger type="submit" name="action" value="cancel" { "Cancel this plan" }
                }
            }
        }
    }
}

fn diff_section(prev: &Proposal, p: &Proposal) -> Markup {
    let changes = diff::steps(prev, p);
    let (before, _) = reveal(&prev.document());
    let (after, _) = reveal(&p.document());
    let lines = diff::lines(&before, &after);
    let show = |s: &String| reveal(s).0;
    html! {
        section.diff {
            h2 { "Changes since v" (prev.version) }
            p { (changes.summary()) }
            ul.stepdiff {
                @for s in &changes.steps_added { li.added { "Added: " (show(&s.step)) } }
                @for s in &changes.steps_removed { li.removed { "Removed: " (show(&s.step)) } }
                @for c in &changes.steps_changed { li.changed { "Changed: " (show(&c.from)) " → " (show(&c.to)) } }
                @for s in &changes.criteria_changed { li.changed { "Changed criteria: " (show(&s.step)) } }
            }
            details {
                summary { "Line diff of the markdown" }
                @match lines {
                    Some(lines) => pre.linediff {
                        @for l in lines {
                            @match l {
                                diff::Line::Same(t) => span.same { "  " (t) "\n" },
                                diff::Line::Added(t) => ins { "+ " (t) "\n" },
                                diff::Line::Removed(t) => del { "- " (t) "\n" },
                            }
                        }
                    },
                    None => p { "Too long to diff here; compare the documents." },
                }
            }
        }
    }
}

/// A signed-in person's passkey: the one registered (a person has one; it
/// is what their step-up approvals are confirmed with), or the button that
/// registers it. The script (`/web/passkey.js`) does the WebAuthn part.
pub fn passkeys(who: &Identity, csrf: &str, registered: Option<&crate::passkey::Passkey>) -> Markup {
    let body = html! {
        h1 { "Your passkey" }
        @if let Some(key) = registered {
            p #passkey-registered { "Registered " (key.created_at.rfc3339()) " (credential " code { (key.id.chars().take(16).collect::<String>()) "…" } ")." }
            p { "Plans the operator's policy marks for step-up count your approval only once you confirm it with this passkey. \
                 One passkey per person: to replace it, ask the operator." }
        } @else {
            p { "Register a passkey (your phone's or laptop's screen lock, or a security key) to confirm approvals the operator's policy marks for step-up." }
            p { button #register-passkey .primary type="button" data-csrf=(csrf) { "Register a passkey" } }
        }
        p #passkey-status role="status" {}
    };
    layout("Your passkey", Some(who), Some(csrf), body)
}

/// The page where a person confirms their approval of `p` with their
/// passkey: what they approve (title, version, plan hash) and the button.
pub fn confirm(p: &Proposal, who: &Identity, csrf: &str, has_passkey: bool) -> Markup {
    let body = html! {
        h1 { "Confirm with your passkey" }
        p { "Approve " strong { (reveal(p.plan.title.trim()).0) } " v" (p.version) " as proposed ("
            a href=(format!("/p/{}", p.approval_id)) { "read it" } ")." }
        p.meta { "Plan " code { (p.plan_hash) } }
        @if has_passkey {
            p { button #confirm-passkey .primary type="button" data-csrf=(csrf) data-approval=(p.approval_id.to_string()) { "Approve with your passkey" } }
        } @else {
            p #no-passkey { "You have no passkey yet: " a href="/passkeys" { "register one" } ", then come back to this page." }
        }
        p #passkey-status role="status" {}
    };
    layout("Confirm with your passkey", Some(who), Some(csrf), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_engine::{apply, Actor, Command, Ctx, Plan, SessionKey, TimerPolicy};

    /// A proposal made the way every proposal is: by the state machine.
    fn proposed(plan: Plan, markdown: Option<String>) -> Proposal {
        let ctx = Ctx { now: Timestamp(0), random: [1; 16], timers: TimerPolicy::default(), approvals: Default::default() };
        let run = |state: &State, command| match apply(state, &Actor::Agent, command, &ctx) {
            Ok(t) => t.state,
            Err(refusal) => panic!("{refusal}"),
        };
        let planning = run(&State::new(SessionKey::new("demo", "s1")), Command::Enter { reason: None });
        run(&planning, Command::Propose { plan, markdown, requested_by: None, harness: plangate_engine::Harness::Api, project: None })
            .latest
            .unwrap_or_else(|| panic!("no proposal"))
    }

    fn render(p: &Proposal, may_decide: bool) -> String {
        let who = Identity::Person { id: "telegram:1".into(), name: "telegram:@alice".into() };
        let view = PlanPage {
            proposal: p,
            state: None,
            previous: None,
            audit: &[],
            rules: &[],
            now: Timestamp(0),
            who: Some(&who),
            csrf: Some("c5rf"),
            may_decide,
            events_url: format!("/p/{}/events", p.approval_id),
        };
        plan_page(&view).into_string()
    }

    #[test]
    fn the_agents_always_rules_are_listed_as_text() {
        use plangate_engine::permission::{Rule, StoredRule};
        let p = proposed(Plan { steps: vec![Step::pending("x")], ..Plan::titled("t") }, None);
        let rule = StoredRule {
            agent: "demo".into(),
            id: "ab".into(),
            rule: Rule::parse("Bash(echo <b>hi</b>)").unwrap_or_else(|e| panic!("{e}")),
            created_by: "telegram:1".into(),
            created_at: Timestamp(0),
            prompt: None,
        };
        let view = PlanPage {
            proposal: &p,
            state: None,
            previous: None,
            audit: &[],
            rules: std::slice::from_ref(&rule),
            now: Timestamp(0),
            who: None,
            csrf: None,
            may_decide: false,
            events_url: String::new(),
        };
        let page = plan_page(&view).into_string();
        assert!(page.contains("Always allowed for demo"), "{page}");
        assert!(page.contains("<code>Bash(echo &lt;b&gt;hi&lt;/b&gt;)</code> — by telegram:1"), "{page}");
    }

    #[test]
    fn a_script_in_a_step_title_is_text() {
        let plan = Plan {
            steps: vec![Step::pending("<script>alert(1)</script>"), Step::pending("<img src=x onerror=alert(2)>")],
            ..Plan::titled("<b>bold</b> & \"quoted\"")
        };
        let page = render(&proposed(plan, None), true);
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
        assert!(page.contains("&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;"), "{page}");
        for bad in ["<script>alert", "<img", "<b>bold"] {
            assert!(!page.contains(bad), "{bad} is live in the page");
        }
        // The only scripts are the embedded files; nothing inline.
        assert_eq!(page.matches("<script").count(), 3);
        assert!(page.contains(&format!("<script src=\"{SCRIPT_PATH}\" defer></script>")));
        assert!(page.contains(&format!("<script src=\"{PASSKEY_SCRIPT_PATH}\" defer></script>")));
        assert!(page.contains(&format!("<script src=\"{PUSH_SCRIPT_PATH}\" defer></script>")));
    }

    #[test]
    fn a_javascript_link_in_the_markdown_is_not_live() {
        let md = "# Fix it\n\n1. Read [the docs](javascript:alert(document.cookie))\n2. Open <a href=\"javascript:x()\" onclick=\"y()\">here</a>\n";
        let plan = Plan { steps: vec![Step::pending("Read the docs"), Step::pending("Open here")], ..Plan::titled("Fix it") };
        let page = render(&proposed(plan, Some(md.to_string())), false);
        assert!(!page.contains("javascript:"), "{page}");
        assert!(!page.contains("onclick"), "{page}");
    }

    #[test]
    fn bidi_characters_are_revealed_with_the_cards_warning() {
        let plan = Plan { steps: vec![Step::pending("Delete \u{202E}gol.txt")], ..Plan::titled("Tidy \u{200B}up") };
        let page = render(&proposed(plan, None), false);
        assert!(!page.contains('\u{202E}') && !page.contains('\u{200B}'), "a hidden character reached the page");
        assert!(page.contains("⟦U+202E⟧") && page.contains("⟦U+200B⟧"), "{page}");
        assert!(page.contains(HIDDEN_CHARS_WARNING));
    }

    #[test]
    fn steps_added_after_approval_read_as_such() {
        use plangate_engine::{amendment, ApprovalId, ApprovalPolicy, StepUpdate, Verdict};
        let approvals = ApprovalPolicy { amendments: amendment::Policy::Flag, ..ApprovalPolicy::default() };
        let ctx =
            |n: u8| Ctx { now: Timestamp(i64::from(n)), random: [n; 16], timers: TimerPolicy::default(), approvals: approvals.clone() };
        let run = |state: &State, actor: &Actor, command, n| match apply(state, actor, command, &ctx(n)) {
            Ok(t) => t.state,
            Err(refusal) => panic!("{refusal}"),
        };
        let alice = Actor::Human { id: "telegram:1".into(), name: "telegram:@alice".into() };
        let s = run(&State::new(SessionKey::new("demo", "s1")), &Actor::Agent, Command::Enter { reason: None }, 1);
        let plan = Plan { steps: vec![Step::pending("Fix the handler")], ..Plan::titled("T") };
        let s = run(
            &s,
            &Actor::Agent,
            Command::Propose { plan, markdown: None, requested_by: None, harness: plangate_engine::Harness::Api, project: None },
            2,
        );
        let s = run(&s, &alice, Command::Decide { approval_id: ApprovalId([2; 16]), verdict: Verdict::Approve }, 3);
        let add = Command::UpdatePlan { steps: vec![StepUpdate::from(Step::pending("Rotate the keys"))], merge: true, explanation: None };
        let s = run(&s, &Actor::Agent, add, 4);
        let p = s.latest.clone().unwrap_or_else(|| panic!("no proposal"));
        let view = PlanPage {
            proposal: &p,
            state: Some(&s),
            previous: None,
            audit: &[],
            rules: &[],
            now: Timestamp(5),
            who: None,
            csrf: None,
            may_decide: false,
            events_url: String::new(),
        };
        let page = plan_page(&view).into_string();
        assert!(page.contains("+ Rotate the keys (added after approval)"), "{page}");
        assert!(!page.contains("+ Fix the handler"), "{page}");
    }

    #[test]
    fn buttons_only_for_a_decider_of_a_pending_plan() {
        let p = proposed(Plan { steps: vec![Step::pending("One")], ..Plan::titled("T") }, None);
        let decider = render(&p, true);
        assert!(decider.contains("id=\"approve\"") && decider.contains("name=\"csrf\" value=\"c5rf\""));
        assert_eq!(decider.matches("name=\"csrf\"").count(), 5, "every form carries the CSRF token (4 actions + sign out)");
        assert!(!render(&p, false).contains("id=\"actions\""));
    }
}
