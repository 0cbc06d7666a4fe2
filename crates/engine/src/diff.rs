//! What changed between two versions of a plan: the steps added, removed and
//! reworded, whether their order changed, and which other fields differ.
//!
//! Approvers of v3 have usually read v2. A re-proposal carries the
//! [`PlanDiff`] against the version before it, so the card can say "+2
//! steps, −1, 1 changed: 'Add backoff' → 'Add jittered backoff'", the plan
//! document can list every change, and the API can hand the structure to
//! tools.
//!
//! ## How steps are matched
//!
//! A step of the old plan and a step of the new one are *the same step* when
//! they are paired, one to one, by these rounds, each over the steps still
//! unpaired:
//!
//! 1. **identical text** (surrounding white space ignored), in order;
//! 2. **identical normalized text** (lowercase, white space collapsed, the
//!    punctuation around words dropped): reported as changed, since the words
//!    on the card did change;
//! 3. **similar text**: every remaining pair gets a score, the larger of the
//!    token Jaccard index (shared words / all words, over normalized words)
//!    and the normalized edit similarity (1 − Levenshtein distance / longer
//!    length, over normalized text; computed only for texts up to
//!    [`EDIT_DISTANCE_MAX_CHARS`] characters and at most
//!    [`EDIT_DISTANCE_MAX_PAIRS`] pairs, so a hostile plan cannot make it
//!    slow). Pairs scoring at least [`SIMILARITY_THRESHOLD`] are taken
//!    greedily, best score first (ties: earlier old step, then earlier new
//!    step). A paired step whose text differs is *changed*.
//!
//! Old steps left unpaired were *removed*, new ones *added*. Matching never
//! looks at positions, so moving steps around is not a change of any step;
//! it only sets [`PlanDiff::reordered`]. A permutation of unchanged steps
//! has no added, removed or changed step (property-tested).

use crate::plan::{Plan, Step};
use serde::{Deserialize, Serialize};

/// The least similarity score at which two different texts are the same step.
pub const SIMILARITY_THRESHOLD: f64 = 0.5;
/// Texts longer than this (in characters) are compared by words only.
pub const EDIT_DISTANCE_MAX_CHARS: usize = 120;
/// Beyond this many candidate pairs, steps are compared by words only.
pub const EDIT_DISTANCE_MAX_PAIRS: usize = 2_500;

/// A step that exists in only one of the two versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffStep {
    /// 1-based position in the version it belongs to (the new one for an
    /// added step, the old one for a removed step).
    pub number: usize,
    pub step: String,
}

/// A step whose wording changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepChange {
    /// 1-based position in the old version.
    pub from_number: usize,
    /// 1-based position in the new version.
    pub to_number: usize,
    pub from: String,
    pub to: String,
}

/// What changed from version `from_version` to the version that carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDiff {
    pub from_version: u32,
    pub steps_added: Vec<DiffStep>,
    pub steps_removed: Vec<DiffStep>,
    pub steps_changed: Vec<StepChange>,
    /// Steps paired across the versions whose acceptance criteria differ
    /// (numbered in the new version): an approver agrees to those too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria_changed: Vec<DiffStep>,
    /// The steps both versions share are in a different order.
    pub reordered: bool,
    /// Plan fields other than the steps that differ: `title`, `summary`,
    /// `analysis`, `assumptions`, `risks`, `verification`, `references`.
    pub fields_changed: Vec<String>,
}

impl PlanDiff {
    /// No step was added, removed or reworded (the order may have changed).
    pub fn steps_unchanged(&self) -> bool {
        self.steps_added.is_empty() && self.steps_removed.is_empty() && self.steps_changed.is_empty()
    }

    /// Nothing at all differs.
    pub fn is_empty(&self) -> bool {
        self.steps_unchanged() && self.criteria_changed.is_empty() && !self.reordered && self.fields_changed.is_empty()
    }

    /// The card's one line, e.g. `+2 steps, −1, 1 changed: 'Add backoff' →
    /// 'Add jittered backoff'; risks changed`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        if !self.steps_added.is_empty() {
            let n = self.steps_added.len();
            parts.push(format!("+{n} step{}", plural(n)));
        }
        if !self.steps_removed.is_empty() {
            let n = self.steps_removed.len();
            parts.push(if parts.is_empty() { format!("−{n} step{}", plural(n)) } else { format!("−{n}") });
        }
        if !self.steps_changed.is_empty() {
            let shown: Vec<String> =
                self.steps_changed.iter().take(2).map(|c| format!("'{}' → '{}'", clip(&c.from), clip(&c.to))).collect();
            let more = if self.steps_changed.len() > 2 { ", …" } else { "" };
            parts.push(format!("{} changed: {}{more}", self.steps_changed.len(), shown.join(", ")));
        }
        if !self.criteria_changed.is_empty() {
            let n = self.criteria_changed.len();
            parts.push(format!("criteria of {n} step{} changed", plural(n)));
        }
        if self.reordered {
            parts.push("steps reordered".to_string());
        }
        let mut out = if parts.is_empty() { "same steps".to_string() } else { parts.join(", ") };
        if !self.fields_changed.is_empty() {
            out.push_str(&format!("; {} changed", self.fields_changed.join(", ")));
        }
        if self.is_empty() {
            out = "no change to the steps or fields (formatting only)".to_string();
        }
        out
    }

    /// The plan document's section: `## Changes since vN` and one line per change.
    pub fn markdown(&self) -> String {
        let mut out = format!("## Changes since v{}\n\n", self.from_version);
        for s in &self.steps_added {
            out.push_str(&format!("- Added step {}: {}\n", s.number, one_line(&s.step)));
        }
        for s in &self.steps_removed {
            out.push_str(&format!("- Removed step {} of v{}: {}\n", s.number, self.from_version, one_line(&s.step)));
        }
        for c in &self.steps_changed {
            let at = if c.from_number == c.to_number {
                format!("step {}", c.to_number)
            } else {
                format!("step {} (was {})", c.to_number, c.from_number)
            };
            out.push_str(&format!("- Changed {at}: \"{}\" → \"{}\"\n", one_line(&c.from), one_line(&c.to)));
        }
        for s in &self.criteria_changed {
            out.push_str(&format!("- Changed the acceptance criteria of step {}: {}\n", s.number, one_line(&s.step)));
        }
        if self.reordered {
            out.push_str("- Steps reordered\n");
        }
        if !self.fields_changed.is_empty() {
            out.push_str(&format!("- Changed fields: {}\n", self.fields_changed.join(", ")));
        }
        if self.is_empty() {
            out.push_str("- No change to the steps or fields (formatting only)\n");
        }
        out
    }
}

fn one_line(text: &str) -> String {
    text.trim().replace(['\n', '\r'], " ")
}

/// At most 40 characters of a step, for the card's one line.
fn clip(text: &str) -> String {
    plangate_basics::text::cut_chars(&one_line(text), 40)
}

/// Lowercase, punctuation around words dropped, white space collapsed.
fn normalize(text: &str) -> String {
    words(text).join(" ")
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()).filter(|w| !w.is_empty()).collect()
}

/// A text's distinct words, as sorted ids of one vocabulary.
type WordSet = Vec<u32>;

fn word_set(text: &str, vocabulary: &mut std::collections::HashMap<String, u32>) -> WordSet {
    let mut ids: Vec<u32> = words(text)
        .into_iter()
        .map(|w| {
            let next = vocabulary.len() as u32;
            *vocabulary.entry(w).or_insert(next)
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Shared words / all words of two sorted word sets.
fn jaccard(a: &WordSet, b: &WordSet) -> f64 {
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - shared;
    if union == 0 {
        return 0.0;
    }
    shared as f64 / union as f64
}

/// 1 − Levenshtein(a, b) / max(len a, len b), over characters (`strsim`).
fn edit_similarity(a: &str, b: &str) -> f64 {
    let (a_len, b_len) = (a.chars().count(), b.chars().count());
    let longer = a_len.max(b_len);
    if longer == 0 {
        return 1.0;
    }
    // The length difference bounds the distance from below: skip hopeless pairs.
    if 1.0 - (a_len.abs_diff(b_len) as f64 / longer as f64) < SIMILARITY_THRESHOLD {
        return 0.0;
    }
    strsim::normalized_levenshtein(a, b)
}

/// The pairs (old index, new index) of steps that are the same step; see the
/// module docs for the rounds.
fn match_steps(old: &[Step], new: &[Step]) -> Vec<(usize, usize)> {
    let mut old_free: Vec<bool> = vec![true; old.len()];
    let mut new_free: Vec<bool> = vec![true; new.len()];
    let mut pairs = Vec::new();
    let rounds: [fn(&str) -> String; 2] = [|s| s.trim().to_string(), normalize];
    for key in rounds {
        let old_keys: Vec<String> = old.iter().map(|s| key(&s.step)).collect();
        for (j, n) in new.iter().enumerate() {
            if !new_free[j] {
                continue;
            }
            let wanted = key(&n.step);
            if let Some(i) = (0..old.len()).find(|&i| old_free[i] && old_keys[i] == wanted) {
                old_free[i] = false;
                new_free[j] = false;
                pairs.push((i, j));
            }
        }
    }
    let old_left: Vec<usize> = (0..old.len()).filter(|&i| old_free[i]).collect();
    let new_left: Vec<usize> = (0..new.len()).filter(|&j| new_free[j]).collect();
    let edit_ok = old_left.len() * new_left.len() <= EDIT_DISTANCE_MAX_PAIRS;
    // Each text's normalized form and word set, computed once.
    let mut vocabulary = std::collections::HashMap::new();
    let mut prepare = |step: &Step| {
        let text = normalize(&step.step);
        let short = text.chars().count() <= EDIT_DISTANCE_MAX_CHARS;
        (word_set(&step.step, &mut vocabulary), text, short)
    };
    let new_prepared: Vec<(usize, (WordSet, String, bool))> = new_left.iter().map(|&j| (j, prepare(&new[j]))).collect();
    let old_prepared: Vec<(usize, (WordSet, String, bool))> = old_left.iter().map(|&i| (i, prepare(&old[i]))).collect();
    let mut scored = Vec::new();
    for (i, (a_words, a, a_short)) in &old_prepared {
        let (i, a_short) = (*i, *a_short);
        for (j, (b_words, b, b_short)) in &new_prepared {
            let j = *j;
            let mut score = jaccard(a_words, b_words);
            if edit_ok && a_short && *b_short {
                score = score.max(edit_similarity(a, b));
            }
            if score >= SIMILARITY_THRESHOLD {
                scored.push((score, i, j));
            }
        }
    }
    scored.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    for (_, i, j) in scored {
        if old_free[i] && new_free[j] {
            old_free[i] = false;
            new_free[j] = false;
            pairs.push((i, j));
        }
    }
    pairs.sort_unstable();
    pairs
}

/// What changed from `old` (version `from_version`) to `new`.
pub fn diff(old: &Plan, new: &Plan, from_version: u32) -> PlanDiff {
    let pairs = match_steps(&old.steps, &new.steps);
    let steps_changed = pairs
        .iter()
        .filter(|(i, j)| old.steps[*i].step.trim() != new.steps[*j].step.trim())
        .map(|&(i, j)| StepChange {
            from_number: i + 1,
            to_number: j + 1,
            from: old.steps[i].step.trim().to_string(),
            to: new.steps[j].step.trim().to_string(),
        })
        .collect();
    let steps_removed = (0..old.steps.len())
        .filter(|i| !pairs.iter().any(|(pi, _)| pi == i))
        .map(|i| DiffStep { number: i + 1, step: old.steps[i].step.trim().to_string() })
        .collect();
    let steps_added = (0..new.steps.len())
        .filter(|j| !pairs.iter().any(|(_, pj)| pj == j))
        .map(|j| DiffStep { number: j + 1, step: new.steps[j].step.trim().to_string() })
        .collect();
    let criteria = |step: &Step| step.acceptance_criteria.iter().map(|c| c.trim().to_string()).collect::<Vec<_>>();
    let criteria_changed = pairs
        .iter()
        .filter(|(i, j)| criteria(&old.steps[*i]) != criteria(&new.steps[*j]))
        .map(|&(_, j)| DiffStep { number: j + 1, step: new.steps[j].step.trim().to_string() })
        .collect();
    // Pairs are sorted by old index; the order is kept when the new indices rise too.
    let reordered = pairs.windows(2).any(|w| w[0].1 > w[1].1);
    let mut fields_changed = Vec::new();
    let trimmed = |s: &Option<String>| s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let list = |items: &[String]| items.iter().map(|s| s.trim().to_string()).collect::<Vec<_>>();
    if old.title.trim() != new.title.trim() {
        fields_changed.push("title".to_string());
    }
    for (name, a, b) in [("summary", &old.summary, &new.summary), ("analysis", &old.analysis, &new.analysis)] {
        if trimmed(a) != trimmed(b) {
            fields_changed.push(name.to_string());
        }
    }
    for (name, a, b) in [
        ("assumptions", &old.assumptions, &new.assumptions),
        ("risks", &old.risks, &new.risks),
        ("verification", &old.verification, &new.verification),
        ("references", &old.references, &new.references),
    ] {
        if list(a) != list(b) {
            fields_changed.push(name.to_string());
        }
    }
    PlanDiff { from_version, steps_added, steps_removed, steps_changed, criteria_changed, reordered, fields_changed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edit_similarity_counts_characters_not_bytes() {
        assert_eq!(edit_similarity("", ""), 1.0);
        assert_eq!(edit_similarity("kitten", "sitting"), 1.0 - 3.0 / 7.0);
        assert_eq!(edit_similarity("café", "cafe"), 0.75, "é is one character, one substitution");
        assert_eq!(edit_similarity("日本語", "日本人"), 1.0 - 1.0 / 3.0);
        assert_eq!(edit_similarity("ab", "abcdefgh"), 0.0, "hopeless by length alone");
    }

    fn plan(steps: &[&str]) -> Plan {
        Plan { steps: steps.iter().map(|s| Step::pending(*s)).collect(), ..Plan::titled("Add retries") }
    }

    #[test]
    fn a_change_of_acceptance_criteria_is_a_change() {
        let old = plan(&["Read", "Patch"]);
        let mut new = old.clone();
        new.steps[1].acceptance_criteria = vec!["no panics".into()];
        let d = diff(&old, &new, 1);
        assert_eq!(d.criteria_changed, vec![DiffStep { number: 2, step: "Patch".into() }]);
        assert!(d.steps_unchanged() && !d.is_empty());
        assert_eq!(d.summary(), "criteria of 1 step changed");
        assert!(d.markdown().contains("- Changed the acceptance criteria of step 2: Patch"), "{}", d.markdown());
        assert!(diff(&old, &old, 1).criteria_changed.is_empty());
    }

    #[test]
    fn the_issue_example() {
        let old = plan(&["Read the client", "Add backoff", "Delete the old retry loop", "Test it"]);
        let new = plan(&["Read the client", "Add jittered backoff", "Test it", "Add a metric", "Document the knob"]);
        let d = diff(&old, &new, 1);
        assert_eq!(
            d.steps_added,
            vec![DiffStep { number: 4, step: "Add a metric".into() }, DiffStep { number: 5, step: "Document the knob".into() }]
        );
        assert_eq!(d.steps_removed, vec![DiffStep { number: 3, step: "Delete the old retry loop".into() }]);
        assert_eq!(
            d.steps_changed,
            vec![StepChange { from_number: 2, to_number: 2, from: "Add backoff".into(), to: "Add jittered backoff".into() }]
        );
        assert!(!d.reordered);
        assert_eq!(d.summary(), "+2 steps, −1, 1 changed: 'Add backoff' → 'Add jittered backoff'");
        let md = d.markdown();
        assert!(md.starts_with("## Changes since v1\n\n- Added step 4: Add a metric\n"), "{md}");
        assert!(md.contains("- Removed step 3 of v1: Delete the old retry loop\n"), "{md}");
        assert!(md.contains("- Changed step 2: \"Add backoff\" → \"Add jittered backoff\"\n"), "{md}");
    }

    #[test]
    fn small_edits_and_typos_match_their_step() {
        let old = plan(&["Add backof to the client", "Run cargo test"]);
        let new = plan(&["Run cargo test --all", "Add backoff to the client"]);
        let d = diff(&old, &new, 2);
        assert!(d.steps_added.is_empty() && d.steps_removed.is_empty(), "{d:?}");
        assert_eq!(d.steps_changed.len(), 2);
        assert!(d.reordered);
        // Case and punctuation only: the same step, reported as changed.
        let d = diff(&plan(&["Add backoff."]), &plan(&["add Backoff"]), 1);
        assert_eq!(d.steps_changed.len(), 1);
    }

    #[test]
    fn unrelated_steps_are_removed_and_added_not_changed() {
        let d = diff(&plan(&["Add backoff"]), &plan(&["Rewrite the parser"]), 1);
        assert_eq!((d.steps_added.len(), d.steps_removed.len(), d.steps_changed.len()), (1, 1, 0));
        assert_eq!(d.summary(), "+1 step, −1");
    }

    #[test]
    fn greedy_takes_the_best_pair_first() {
        // "Add retry backoff" is closer to "Add retry backoff now" than "Add backoff" is.
        let old = plan(&["Add backoff", "Add retry backoff"]);
        let new = plan(&["Add retry backoff now"]);
        let d = diff(&old, &new, 1);
        assert_eq!(d.steps_changed[0].from, "Add retry backoff");
        assert_eq!(d.steps_removed, vec![DiffStep { number: 1, step: "Add backoff".into() }]);
    }

    #[test]
    fn fields_and_an_empty_diff() {
        let old = Plan { risks: vec!["flaky".into()], ..plan(&["a"]) };
        let new = Plan { risks: vec!["flaky tests".into()], title: "Add retries v2".into(), ..plan(&["a"]) };
        let d = diff(&old, &new, 1);
        assert_eq!(d.fields_changed, vec!["title", "risks"]);
        assert_eq!(d.summary(), "same steps; title, risks changed");
        let same = diff(&old, &old, 1);
        assert!(same.is_empty());
        assert_eq!(same.summary(), "no change to the steps or fields (formatting only)");
    }

    #[test]
    fn long_texts_still_match_by_words_and_stay_fast() {
        let shared: Vec<String> = (0..60).map(|k| format!("w{k}")).collect();
        let long = |tail: &str| format!("{} {tail}", shared.join(" "));
        let old: Vec<String> = (0..200).map(|i| long(&format!("old{i}"))).collect();
        let new: Vec<String> = (0..200).map(|i| long(&format!("new{i}"))).collect();
        let d =
            diff(&plan(&old.iter().map(String::as_str).collect::<Vec<_>>()), &plan(&new.iter().map(String::as_str).collect::<Vec<_>>()), 1);
        assert_eq!(d.steps_changed.len(), 200);
        assert!(!d.reordered);
    }

    proptest! {
        /// Reordering unchanged steps changes no step.
        #[test]
        fn a_permutation_of_unchanged_steps_has_no_step_changes(
            texts in proptest::collection::btree_set("[a-z]{1,6}( [a-z]{1,6}){0,4}", 1..12),
            seed in any::<u64>(),
        ) {
            let texts: Vec<String> = texts.into_iter().collect();
            let mut shuffled = texts.clone();
            // A deterministic shuffle from the seed (Fisher–Yates with an LCG).
            let mut x = seed;
            for i in (1..shuffled.len()).rev() {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                shuffled.swap(i, (x >> 33) as usize % (i + 1));
            }
            let old = plan(&texts.iter().map(String::as_str).collect::<Vec<_>>());
            let new = plan(&shuffled.iter().map(String::as_str).collect::<Vec<_>>());
            let d = diff(&old, &new, 1);
            prop_assert!(d.steps_unchanged(), "{:?}", d);
            prop_assert!(d.fields_changed.is_empty());
            prop_assert_eq!(d.reordered, texts != shuffled);
        }
    }
}
