//! What changed since the previous version: steps added, removed and
//! changed, and a line diff of the markdown.
//!
//! Written here, for the page only; the engine has no structured step diff
//! yet. Steps are matched by their (trimmed) text, the way the engine merges
//! step updates; a step whose text matches but whose acceptance criteria
//! differ is "changed".

use plangate_engine::Step;

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Same(&'a str),
    Added(&'a str),
    Removed(&'a str),
}

/// How the steps of one version differ from the previous one's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Same text, different acceptance criteria.
    pub changed: Vec<String>,
}

impl StepDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

pub fn steps(before: &[Step], after: &[Step]) -> StepDiff {
    let find = |list: &[Step], text: &str| list.iter().find(|s| s.step.trim() == text.trim()).cloned();
    let mut diff = StepDiff::default();
    for step in after {
        match find(before, &step.step) {
            None => diff.added.push(step.step.trim().to_string()),
            Some(old) if old.acceptance_criteria != step.acceptance_criteria => diff.changed.push(step.step.trim().to_string()),
            Some(_) => {}
        }
    }
    diff.removed = before.iter().filter(|s| find(after, &s.step).is_none()).map(|s| s.step.trim().to_string()).collect();
    diff
}

/// Most lines either text may have for the line diff; beyond it the diff
/// says so instead of spending quadratic time on it.
pub const MAX_DIFF_LINES: usize = 2_000;

/// A line diff (longest common subsequence); `None` when either text has
/// more than [`MAX_DIFF_LINES`] lines.
pub fn lines<'a>(before: &'a str, after: &'a str) -> Option<Vec<Line<'a>>> {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    if a.len() > MAX_DIFF_LINES || b.len() > MAX_DIFF_LINES {
        return None;
    }
    // lcs[i][j]: the LCS length of a[i..] and b[j..].
    let mut lcs = vec![vec![0u16; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(Line::Same(a[i]));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(Line::Removed(a[i]));
            i += 1;
        } else {
            out.push(Line::Added(b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| Line::Removed(l)));
    out.extend(b[j..].iter().map(|l| Line::Added(l)));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_added_removed_and_changed() {
        let before = vec![Step::pending("Read"), Step::pending("Patch"), Step::pending("Test")];
        let mut patch = Step::pending("Patch");
        patch.acceptance_criteria = vec!["no panics".into()];
        let after = vec![Step::pending("Read"), patch, Step::pending("Benchmark")];
        let d = steps(&before, &after);
        assert_eq!(d.added, vec!["Benchmark"]);
        assert_eq!(d.removed, vec!["Test"]);
        assert_eq!(d.changed, vec!["Patch"]);
        assert!(steps(&before, &before).is_empty());
    }

    #[test]
    fn line_diff_keeps_order() {
        let d = lines("a\nb\nc", "a\nx\nc\nd").unwrap_or_default();
        assert_eq!(d, vec![Line::Same("a"), Line::Removed("b"), Line::Added("x"), Line::Same("c"), Line::Added("d")]);
        assert!(lines(&"x\n".repeat(MAX_DIFF_LINES + 1), "x").is_none());
    }
}
