//! The email of a plan card: subject, a text part, an HTML part (every
//! interpolation escaped by maud) and the plan markdown attached.

use crate::token::Action;
use maud::{html, DOCTYPE};
use plangate_engine::card::{render_text, Card};

/// Why the email is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A plan waits for approval.
    Proposed,
    /// A reminder: the chats' nudge line.
    Reminder(String),
    /// The plan waited too long and goes to the escalation approvers: what it waited.
    Escalated(String),
}

/// A rendered email, ready for [`crate::Mailer::send`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// The plan document: file name and markdown.
    pub attachment: (String, String),
}

/// The email of `card` to `to`, with one link per action (`links`: the
/// action and its full URL) and the plan document attached.
pub fn render(to: &str, card: &Card, reason: &Reason, links: &[(Action, String)], document: (String, String)) -> Email {
    let lead = match reason {
        Reason::Proposed => "A plan waits for your approval.".to_string(),
        Reason::Reminder(line) => line.clone(),
        Reason::Escalated(waited) => format!("⚠ Escalated: no decision after {waited}."),
    };
    let prefix = match reason {
        Reason::Proposed => "",
        Reason::Reminder(_) => "Reminder: ",
        Reason::Escalated(_) => "Escalated: ",
    };
    let subject = format!("{prefix}Plan '{}' ({}) waits for approval", one_line(&card.title), card.short_ref);
    let mut text = format!("{lead}\n\n{}", render_text(card, false));
    text.push_str("\nEach link below opens a page that asks you to confirm; opening it decides nothing. Each works once.\n");
    for (action, url) in links {
        text.push_str(&format!("{}: {url}\n", action.label()));
    }
    text.push_str(&format!("\nThe plan is attached ({}).\n", document.0));
    let html = html! {
        (DOCTYPE)
        html {
            head { meta charset="utf-8"; title { (subject) } }
            body style="font-family: sans-serif; max-width: 40em" {
                p { (lead) }
                @if let Some(w) = &card.warning { p style="color: #a00" { (w) } }
                h2 { "📋 " (card.title) }
                p style="color: #555" { (card.context) " · " (card.short_ref) }
                @if let Some(s) = &card.summary { p { (s) } }
                @for section in card.sections() {
                    h3 { (section.heading) }
                    ul style="list-style: none; padding-left: 0" {
                        @for entry in &section.entries { li { (entry.marker) " " (entry.text) } }
                    }
                }
                @if let Some(link) = &card.link { p { a href=(link) { "Open the plan page" } } }
                p { "Each button opens a page that asks you to confirm; opening it decides nothing. Each works once." }
                p {
                    @for (action, url) in links {
                        a href=(url) style="display: inline-block; margin: 0 .5em .5em 0; padding: .5em 1em; border: 1px solid #333; border-radius: 4px; text-decoration: none" { (action.label()) }
                    }
                }
                p style="color: #555" { "The plan is attached (" (document.0) ")." }
            }
        }
    }
    .into_string();
    Email { to: to.to_string(), subject, text, html, attachment: document }
}

/// `text` on one line (a subject has no line breaks).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn card() -> Card {
        let card = plangate_testkit::cards::pending(plangate_engine::ApprovalId([1; 16]), "Add <retries>\nnow", &["read", "write"]);
        Card { summary: Some("Retry & back off".into()), ..card }
    }

    #[test]
    fn the_email_carries_every_link_in_both_parts_and_escapes_the_plan() {
        let links: Vec<(Action, String)> = Action::ALL.iter().map(|a| (*a, format!("https://plans.example/e/{:?}", a))).collect();
        let mail = render("alice@example.com", &card(), &Reason::Proposed, &links, ("plan.md".into(), "# Plan".into()));
        for (_, url) in &links {
            assert!(mail.text.contains(url.as_str()) && mail.html.contains(url.as_str()), "{url}");
        }
        assert!(mail.html.contains("Add &lt;retries&gt;"), "{}", mail.html);
        assert!(!mail.html.contains("<retries>"));
        assert!(mail.subject.contains("Add <retries> now") && !mail.subject.contains('\n'), "{}", mail.subject);
        assert_eq!(mail.attachment.0, "plan.md");
    }

    #[test]
    fn reminders_and_escalations_say_so() {
        let reminder = render("a@b.c", &card(), &Reason::Reminder("⏰ waited".into()), &[], ("p.md".into(), String::new()));
        assert!(reminder.subject.starts_with("Reminder: ") && reminder.text.starts_with("⏰ waited"));
        let escalated = render("a@b.c", &card(), &Reason::Escalated("2 h".into()), &[], ("p.md".into(), String::new()));
        assert!(escalated.subject.starts_with("Escalated: ") && escalated.text.contains("no decision after 2 h"));
    }
}
