//! Tests of [`super`] (card.rs).

use super::*;
use crate::ids::{QuestionId, SessionKey};
use crate::machine::fixtures::proposed;
use crate::model::QuestionStatus;
use crate::plan::{Plan, StepStatus};

/// The open card of a plan with steps in three states, risks and checks.
fn open_card() -> Card {
    let step = |text: &str, status| Step { status, ..Step::pending(text) };
    let plan = Plan {
        summary: Some("Make the client retry.".into()),
        steps: vec![step("Read the client", StepStatus::Completed), step("Add backoff", StepStatus::InProgress)],
        risks: vec!["flaky tests".into()],
        verification: vec!["cargo test".into()],
        ..Plan::titled("Add retries")
    };
    card(&proposed(plan, Timestamp(0)), None, Timestamp(0))
}

#[test]
fn sections_come_in_one_order_and_only_when_they_have_entries() {
    let card = open_card();
    let sections = card.sections();
    let shape: Vec<(&str, SectionKind, Vec<String>)> =
        sections.iter().map(|s| (s.heading, s.kind, s.entries.iter().map(Entry::line).collect())).collect();
    assert_eq!(
        shape,
        vec![
            ("Steps", SectionKind::Steps, vec!["1. ● Read the client".to_string(), "2. ◐ Add backoff".to_string()]),
            ("Risks", SectionKind::Bullets, vec!["• flaky tests".to_string()]),
            ("Verification", SectionKind::Bullets, vec!["• cargo test".to_string()]),
        ]
    );
    let bare = Card { steps: vec![], risks: vec![], verification: vec![], ..open_card() };
    assert!(bare.sections().is_empty());
}

#[test]
fn the_plain_text_card_and_its_commands() {
    let card = open_card();
    let text = format!(
        "📋 Add retries\ndemo/s1 · v1 · just now · {r}\n\nMake the client retry.\n\nSteps\n1. ● Read the client\n2. ◐ Add backoff\n\n\
         Risks\n• flaky tests\n\nVerification\n• cargo test\n",
        r = card.short_ref
    );
    assert_eq!(render_text(&card, false), text);
    let commands = card.commands.join("\n");
    assert_eq!(render_text(&card, true), format!("{text}\nReply with one of:\n{commands}\n"));
    assert_eq!(card.reply_commands().map(<[String]>::len), Some(6));
    let decided = Card { receipt: Some("✅ Approved v1 by telegram:@alice · 14:02 UTC".into()), ..open_card() };
    assert_eq!(decided.reply_commands(), None);
    assert!(render_text(&decided, true).ends_with("• cargo test\n\n✅ Approved v1 by telegram:@alice · 14:02 UTC\n"));
    assert_eq!(Card { commands: vec![], ..open_card() }.reply_commands(), None);
}

#[test]
fn fit_keeps_whole_lines_and_room_for_the_note() {
    // Lines of 4, 4, 4 joined by newlines: 14 in all.
    let lens = [4, 4, 4];
    assert_eq!(fit_lines(&lens, 1, 14, 3), Fit::All);
    // 13: keep two lines, then the note (4+1+4+1+3 = 13).
    assert_eq!(fit_lines(&lens, 1, 13, 3), Fit::Cut(2));
    assert_eq!(fit_lines(&lens, 1, 12, 3), Fit::Cut(1));
    assert_eq!(fit_lines(&lens, 1, 7, 3), Fit::Cut(0));
    assert_eq!(fit_lines(&[40], 1, 10, 3), Fit::Cut(0), "a line is never split");
    // Blocks: each costs one, joining costs nothing.
    assert_eq!(fit_lines(&[1; 50], 0, 50, 1), Fit::All);
    assert_eq!(fit_lines(&[1; 60], 0, 49, 1), Fit::Cut(48));
    assert_eq!(whole_lines(&lens, 1, 9), 2);
    assert_eq!(whole_lines(&lens, 1, 8), 1);
    assert_eq!(whole_lines(&[], 1, 0), 0);
}

#[test]
fn at_most_ten_options_get_a_button() {
    let id: QuestionId = ApprovalId([7; 16]);
    let q = Question {
        question_id: id,
        session: SessionKey::new("demo", "s1"),
        question: "Which?".into(),
        options: (0..12).map(|i| format!("option {i}")).collect(),
        allow_freetext: false,
        asked_at: Timestamp(0),
        status: QuestionStatus::Pending,
        answer: None,
        answered_by: None,
        answered_at: None,
        permission: None,
        stalled: None,
    };
    let buttons: Vec<(Button, &str)> = option_buttons(&q).collect();
    assert_eq!(buttons.len(), MAX_OPTIONS);
    assert_eq!(buttons[9], (Button::Answer(id, 9), "option 9"));
    for (button, _) in buttons {
        assert_eq!(crate::codec::decode(&crate::codec::encode(button)), Ok(button));
    }
}
