//! Lists as people type them: one rule for what the text of a list item is.
//!
//! An approver edits a plan by typing its steps, one per line, in a Telegram
//! reply, a Slack or Discord modal, or after `/plan edit`; an agent writes
//! list items in its markdown plan. Whatever marker a line starts with (`1.`,
//! `2)`, `-`, `*`, `+`, `•`, a card's status mark `○ ◐ ● ✕`, a task box
//! `[ ]`), the step is what follows it. The rule lives here only, so a step
//! reads the same whichever door it came in through.
//!
//! A marker counts only when white space (or the end of the line) follows
//! it, as in CommonMark: `1.5x faster` and `2024 plan` are text, not the
//! numbers 1 and 2024; `-5 degrees` keeps its minus.

use crate::step::StepStatus;

/// Bullets that start a list item.
const BULLETS: [char; 4] = ['-', '*', '+', '•'];
/// Marks a card puts before a step; people copy steps off cards.
const STATUS_MARKS: [StepStatus; 4] = [StepStatus::Pending, StepStatus::InProgress, StepStatus::Completed, StepStatus::Cancelled];
/// CommonMark's longest ordered-list number.
const MAX_DIGITS: usize = 9;

/// The text of one list line: surrounding white space, one number or bullet,
/// one status mark and one task box removed, in that order. Empty when the
/// line holds nothing else.
pub fn item_text(line: &str) -> String {
    let text = line.trim();
    let text = number(text).or_else(|| bullet(text)).unwrap_or(text);
    let text = status_mark(text).unwrap_or(text);
    let text = task_box(text).unwrap_or(text);
    text.trim().to_string()
}

/// One item per line; blank lines (and lines that are only a marker) are
/// skipped. Numbering is not checked: gaps and repeats are fine.
pub fn parse_lines(text: &str) -> Vec<String> {
    text.lines().map(item_text).filter(|item| !item.is_empty()).collect()
}

/// What follows a marker, if the marker stands alone (white space or the end
/// of the line after it).
fn after_marker(rest: &str) -> Option<&str> {
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim_start())
}

/// `12. ` or `12) `.
fn number(text: &str) -> Option<&str> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=MAX_DIGITS).contains(&digits) {
        return None;
    }
    after_marker(text[digits..].strip_prefix(['.', ')'])?)
}

fn bullet(text: &str) -> Option<&str> {
    after_marker(text.strip_prefix(BULLETS)?)
}

fn status_mark(text: &str) -> Option<&str> {
    STATUS_MARKS.iter().find_map(|status| after_marker(text.strip_prefix(status.mark())?))
}

fn task_box(text: &str) -> Option<&str> {
    ["[ ]", "[x]", "[X]"].iter().find_map(|b| after_marker(text.strip_prefix(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way a person types a step, and the text that must stay whole.
    #[test]
    fn one_rule_for_every_typed_list() {
        const TABLE: &[(&str, &str)] = &[
            // Text that only looks like a marker stays text.
            ("1.5x faster", "1.5x faster"),
            ("2024 plan", "2024 plan"),
            ("2024 plan: ship", "2024 plan: ship"),
            ("-5 degrees", "-5 degrees"),
            ("*bold* step", "*bold* step"),
            ("v1.2) release", "v1.2) release"),
            ("1.a", "1.a"),
            // Numbers, with either delimiter, any width up to nine digits.
            ("1. a", "a"),
            ("1) a", "a"),
            ("10. ten", "ten"),
            ("  3.\tindented  ", "indented"),
            ("123456789. nine digits", "nine digits"),
            ("1234567890. ten digits", "1234567890. ten digits"),
            // Bullets.
            ("- a", "a"),
            ("* a", "a"),
            ("+ a", "a"),
            ("• b", "b"),
            // A card's status marks, alone or after the card's numbering.
            ("○ c", "c"),
            ("◐ c", "c"),
            ("● c", "c"),
            ("✕ c", "c"),
            ("2. ○ copied off a card", "copied off a card"),
            // Task boxes.
            ("- [ ] d", "d"),
            ("- [x] d", "d"),
            ("[X] d", "d"),
            ("1. [ ] d", "d"),
            // One marker only: what follows it is text.
            ("- - dash", "- dash"),
            ("1. 2. two", "2. two"),
            // Nothing but a marker.
            ("", ""),
            ("-", ""),
            ("1.", ""),
            ("- [ ]", ""),
        ];
        for (line, expected) in TABLE {
            assert_eq!(item_text(line), *expected, "{line:?}");
        }
    }

    #[test]
    fn lines_skip_blanks_and_ignore_numbering_gaps() {
        let typed = "1. read\n\n   \n3) write\n- test\n• ship\n○ watch\n- [ ] tidy\n10. ten\n1.5x faster\n2024 plan\n-\n";
        assert_eq!(parse_lines(typed), ["read", "write", "test", "ship", "watch", "tidy", "ten", "1.5x faster", "2024 plan"]);
        assert_eq!(parse_lines("a\r\nb\r\n"), ["a", "b"]);
        assert!(parse_lines("\n \n").is_empty());
    }
}
