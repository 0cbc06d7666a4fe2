//! The pages a decision link opens. Opening a link (`GET /e/<token>`)
//! answers [`confirm`], which decides nothing: mail scanners and link
//! previews open links. Its form POSTs the token (in the body, never a
//! cookie: nothing a third site could make a browser send) to `/e`, and
//! only that POST decides; [`outcome`] is every answer after it, and the
//! answer to a link that no longer works.

use crate::token::Action;
use maud::{html, Markup, DOCTYPE};

/// What the confirmation page shows about the link and its plan.
pub struct Confirm<'a> {
    /// The token as the link wrote it, posted back by the form.
    pub token: &'a str,
    pub action: Action,
    pub title: &'a str,
    pub version: u32,
    /// `#a1b2c3`
    pub short_ref: &'a str,
    /// `demo/s1`
    pub session: &'a str,
    /// Who the link was sent to.
    pub approver: &'a str,
    /// The plan document (markdown, shown as text).
    pub document: &'a str,
}

/// The form that decides: the plan, the action, and one button.
pub fn confirm(c: &Confirm<'_>) -> String {
    let heading = format!("{}: {} (v{})", c.action.label(), c.title, c.version);
    layout(
        &heading,
        html! {
            h1 { (heading) }
            p { "Plan " (c.short_ref) " of " (c.session) ", version " (c.version) ". This link was sent to " (c.approver) "." }
            p { strong { "Nothing is decided until you press the button below." } " The link works once." }
            form method="post" action="/e" {
                input type="hidden" name="token" value=(c.token);
                @if c.action == Action::RequestChanges {
                    p { label for="feedback" { "What should change?" } }
                    p { textarea id="feedback" name="feedback" rows="4" cols="60" required {} }
                }
                p { button type="submit" { (c.action.label()) " v" (c.version) } }
            }
            h2 { "The plan" }
            pre style="white-space: pre-wrap" { (c.document) }
        },
    )
}

/// A page that only says something: the outcome of a POST, or why a link
/// does not work.
pub fn outcome(heading: &str, text: &str) -> String {
    layout(heading, html! { h1 { (heading) } p { (text) } })
}

fn layout(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="robots" content="noindex";
                title { (title) " — plangate" }
            }
            body style="font-family: sans-serif; max-width: 40em; margin: 1em auto; padding: 0 1em" { (body) }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(action: Action) -> String {
        confirm(&Confirm {
            token: "ab",
            action,
            title: "<script>x</script>",
            version: 3,
            short_ref: "#abcdef",
            session: "demo/s1",
            approver: "telegram:111",
            document: "# Plan\n<b>",
        })
    }

    #[test]
    fn the_confirmation_page_posts_the_token_and_escapes_the_plan() {
        let html = page(Action::Approve);
        assert!(html.contains(r#"<form method="post" action="/e">"#), "{html}");
        assert!(html.contains(r#"name="token" value="ab""#), "{html}");
        assert!(!html.contains("<script>x") && html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("feedback"), "approving asks for no text");
        assert!(page(Action::RequestChanges).contains(r#"name="feedback""#));
    }

    #[test]
    fn an_outcome_escapes_its_text() {
        assert!(outcome("Refused", "<i>").contains("&lt;i&gt;"));
    }
}
