//! What changed since the previous version, for the page.
//!
//! The steps: the engine's [`PlanDiff`], the very diff the card's "Changes"
//! line and the plan document are made from, so the page and the card can
//! never disagree about what changed. The markdown: a line diff through
//! `similar` (Myers' algorithm, memory linear in the input), bounded in
//! lines and in time, so a hostile pair of plans cannot make a request
//! expensive.

use plangate_engine::diff::{diff, PlanDiff};
use plangate_engine::Proposal;
use similar::{ChangeTag, TextDiff};
use std::time::Duration;

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Same(&'a str),
    Added(&'a str),
    Removed(&'a str),
}

/// How `p`'s steps differ from `prev`'s: the diff `p` was proposed with
/// when it is against `prev` (what its card shows), else computed the same way.
pub fn steps(prev: &Proposal, p: &Proposal) -> PlanDiff {
    match &p.review.changes {
        Some(changes) if changes.from_version == prev.version => changes.clone(),
        _ => diff(&prev.plan, &p.plan, prev.version),
    }
}

/// Most lines either text may have for the line diff; beyond it the page
/// says so instead of diffing.
pub const MAX_DIFF_LINES: usize = 2_000;
/// How long a line diff may take before `similar` settles for a coarser
/// (still correct) one.
const DIFF_DEADLINE: Duration = Duration::from_millis(50);

/// A line diff; `None` when either text has more than [`MAX_DIFF_LINES`] lines.
pub fn lines<'a>(before: &'a str, after: &'a str) -> Option<Vec<Line<'a>>> {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    if a.len() > MAX_DIFF_LINES || b.len() > MAX_DIFF_LINES {
        return None;
    }
    // Lines without their endings: a last line with and without a newline is the same line.
    let diff = TextDiff::configure().timeout(DIFF_DEADLINE).diff_slices(&a, &b);
    let out = diff
        .iter_all_changes()
        .map(|change| {
            let text = change.value();
            match change.tag() {
                ChangeTag::Equal => Line::Same(text),
                ChangeTag::Insert => Line::Added(text),
                ChangeTag::Delete => Line::Removed(text),
            }
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_diff_keeps_order() {
        let d = lines("a\nb\nc", "a\nx\nc\nd").unwrap_or_default();
        assert_eq!(d, vec![Line::Same("a"), Line::Removed("b"), Line::Added("x"), Line::Same("c"), Line::Added("d")]);
        assert!(lines(&"x\n".repeat(MAX_DIFF_LINES + 1), "x").is_none());
    }

    #[test]
    fn a_large_diff_stays_within_its_bounds() {
        // Two unrelated texts at the line limit: no quadratic table.
        let before: String = (0..MAX_DIFF_LINES).map(|i| format!("a{i}\n")).collect();
        let after: String = (0..MAX_DIFF_LINES).map(|i| format!("b{i}\n")).collect();
        let d = lines(&before, &after).unwrap_or_default();
        assert_eq!(d.len(), 2 * MAX_DIFF_LINES);
    }
}
