//! The plan model (`Plan` and `Step` in `docs/API.md`, "Types") and its rules.
//!
//! Every rule refusal is a [`PlanError`] whose message names the rule, so an
//! agent that broke it can fix its call without reading our source.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use thiserror::Error;

pub use crate::step::{Step, StepStatus, StepUpdate};

/// Markdown proposals longer than this are refused (characters, not bytes).
pub const MAX_MARKDOWN_CHARS: usize = 60_000;
/// Titles are shown as card headers; longer ones are refused.
pub const MAX_TITLE_CHARS: usize = 200;
/// A plan with more steps than this cannot be reviewed on a phone.
pub const MAX_STEPS: usize = 200;

/// A proposal: the plan *archetype* (`Plan` in `docs/API.md`, "Types").
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<String>,
    /// The steps; a proposal shaped like OpenClaw's plan tool names them
    /// `plan`.
    #[serde(default, alias = "plan")]
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub risks: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verification: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// The paths the plan says it touches ([`crate::scope`]); none declared,
    /// file tools are not held to paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::scope::Scope>,
    /// The risk classes the plan needs ([`plangate_gate::classes`]):
    /// approving the plan approves calls of these; a call of any other
    /// class asks people while the plan executes. An unknown id is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schemars", schemars(with = "Vec<String>"))]
    pub allows: Vec<plangate_gate::classes::RiskClass>,
}

impl Plan {
    pub fn titled(title: impl Into<String>) -> Plan {
        Plan {
            title: title.into(),
            summary: None,
            analysis: None,
            steps: Vec::new(),
            assumptions: Vec::new(),
            risks: Vec::new(),
            verification: Vec::new(),
            references: Vec::new(),
            scope: None,
            allows: Vec::new(),
        }
    }
}

/// Why a plan or a step update was refused. The message names the rule.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    #[error("rule `title_required`: a plan needs a non-empty title")]
    TitleRequired,
    #[error("rule `title_length`: the title has {chars} characters; at most {MAX_TITLE_CHARS} are allowed")]
    TitleTooLong { chars: usize },
    #[error("rule `step_text_required`: step {index} has empty text")]
    EmptyStep { index: usize },
    #[error("rule `single_in_progress`: at most one step may be in_progress, but {steps:?} are")]
    MultipleInProgress { steps: Vec<String> },
    #[error("rule `unique_steps`: step text {step:?} appears more than once in one update")]
    DuplicateStep { step: String },
    #[error("rule `verified_before_completed`: step {step:?} cannot be completed until its verified_criteria cover its acceptance_criteria; missing {missing:?}")]
    UnverifiedCompletion { step: String, missing: Vec<String> },
    #[error("rule `markdown_length`: the markdown has {chars} characters; at most {MAX_MARKDOWN_CHARS} are allowed; shorten it or attach details elsewhere")]
    MarkdownTooLong { chars: usize },
    #[error("rule `step_count`: the plan has {count} steps; at most {MAX_STEPS} are allowed")]
    TooManySteps { count: usize },
    #[error("rule `scope`: {glob:?} cannot be part of a scope: {why}")]
    InvalidScope { glob: String, why: String },
    #[error("rule `allows`: {item:?} is not a risk class; the classes are {known}")]
    UnknownAllow { item: String, known: String },
}

impl PlanError {
    /// The rule's machine name, for error details.
    pub fn rule(&self) -> &'static str {
        match self {
            PlanError::TitleRequired => "title_required",
            PlanError::TitleTooLong { .. } => "title_length",
            PlanError::EmptyStep { .. } => "step_text_required",
            PlanError::MultipleInProgress { .. } => "single_in_progress",
            PlanError::DuplicateStep { .. } => "unique_steps",
            PlanError::UnverifiedCompletion { .. } => "verified_before_completed",
            PlanError::MarkdownTooLong { .. } => "markdown_length",
            PlanError::TooManySteps { .. } => "step_count",
            PlanError::InvalidScope { .. } => "scope",
            PlanError::UnknownAllow { .. } => "allows",
        }
    }
}

impl From<crate::scope::ScopeError> for PlanError {
    fn from(e: crate::scope::ScopeError) -> PlanError {
        PlanError::InvalidScope { glob: e.glob, why: e.why }
    }
}

/// Check every step rule on a complete step list.
pub fn validate_steps(steps: &[Step]) -> Result<(), PlanError> {
    if steps.len() > MAX_STEPS {
        return Err(PlanError::TooManySteps { count: steps.len() });
    }
    let mut seen = HashSet::new();
    for (index, step) in steps.iter().enumerate() {
        let text = step.step.trim();
        if text.is_empty() {
            return Err(PlanError::EmptyStep { index: index + 1 });
        }
        if !seen.insert(text) {
            return Err(PlanError::DuplicateStep { step: text.to_string() });
        }
    }
    let in_progress: Vec<String> = steps.iter().filter(|s| s.status == StepStatus::InProgress).map(|s| s.step.trim().to_string()).collect();
    if in_progress.len() > 1 {
        return Err(PlanError::MultipleInProgress { steps: in_progress });
    }
    for step in steps.iter().filter(|s| s.status == StepStatus::Completed) {
        let verified: HashSet<&str> = step.verified_criteria.iter().map(|c| c.trim()).collect();
        let missing: Vec<String> = step
            .acceptance_criteria
            .iter()
            .map(|c| c.trim())
            .filter(|c| !c.is_empty() && !verified.contains(c))
            .map(str::to_string)
            .collect();
        if !missing.is_empty() {
            return Err(PlanError::UnverifiedCompletion { step: step.step.trim().to_string(), missing });
        }
    }
    Ok(())
}

/// Check a whole plan: title and steps.
pub fn validate_plan(plan: &Plan) -> Result<(), PlanError> {
    let title = plan.title.trim();
    if title.is_empty() {
        return Err(PlanError::TitleRequired);
    }
    let chars = title.chars().count();
    if chars > MAX_TITLE_CHARS {
        return Err(PlanError::TitleTooLong { chars });
    }
    if let Some(scope) = &plan.scope {
        crate::scope::validate(scope)?;
    }
    validate_steps(&plan.steps)
}

/// Apply a step update. With `merge`, steps are joined by (trimmed) text: a
/// known step is patched in place with the fields its update carries (see
/// [`StepUpdate`]), a new one is appended, the order is kept; without it the
/// update replaces the list. Either way the resulting list is checked by
/// every rule ([`validate_steps`]), so a merge cannot complete a step whose
/// inherited acceptance criteria nobody verified.
pub fn update_steps(current: &[Step], update: Vec<StepUpdate>, merge: bool) -> Result<Vec<Step>, PlanError> {
    // Duplicates inside one update are refused before merging, so a merge can
    // never silently collapse two of the agent's steps into one.
    validate_unique(update.iter().map(|u| u.step.as_str()))?;
    let merged = if merge {
        let mut merged = current.to_vec();
        for update in update {
            match merged.iter_mut().find(|s| s.step.trim() == update.step.trim()) {
                Some(existing) => {
                    // The step keeps the text it was known by.
                    let text = existing.step.clone();
                    update.patch(existing);
                    existing.step = text;
                }
                None => merged.push(update.into_step()),
            }
        }
        merged
    } else {
        update.into_iter().map(StepUpdate::into_step).collect()
    };
    validate_steps(&merged)?;
    Ok(merged)
}

fn validate_unique<'a>(texts: impl Iterator<Item = &'a str>) -> Result<(), PlanError> {
    let mut seen = HashSet::new();
    for text in texts {
        if !seen.insert(text.trim()) {
            return Err(PlanError::DuplicateStep { step: text.trim().to_string() });
        }
    }
    Ok(())
}

/// `sha256:<hex>` of the canonical serialization of what is approved: the
/// plan and, for markdown proposals, the verbatim markdown.
///
/// serde_json writes struct fields in declaration order and omits empty
/// optional fields, so the same plan always hashes the same.
pub fn plan_hash(plan: &Plan, markdown: Option<&str>) -> String {
    #[derive(Serialize)]
    struct Canonical<'a> {
        plan: &'a Plan,
        #[serde(skip_serializing_if = "Option::is_none")]
        markdown: Option<&'a str>,
    }
    let bytes = serde_json::to_vec(&Canonical { plan, markdown }).unwrap_or_default();
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}

/// Turn raw markdown (Claude Code's ExitPlanMode text, a Codex
/// `<proposed_plan>` block) into a plan. The markdown itself is kept verbatim
/// by the caller; this only extracts what a card can show. The structure is
/// CommonMark's ([`crate::markdown`]), so nothing inside a code block is a
/// heading or a step.
///
/// * title: `title` if given, else the first heading, else the first
///   non-empty line outside code blocks (cut at 120 characters);
/// * steps: the items of top-level lists under a heading that mentions
///   "step" or "plan" (other than the title heading), up to the next heading
///   of the same or a higher level; else every top-level numbered item. Item
///   text follows [`crate::list::item_text`] (task boxes and status marks go);
/// * summary: the paragraph right after the title heading (or, without a
///   heading, the first block), when it is a paragraph.
pub fn plan_from_markdown(markdown: &str, title: Option<&str>) -> Result<Plan, PlanError> {
    use crate::markdown::{blocks, fenced_lines, Block};
    let chars = markdown.chars().count();
    if chars > MAX_MARKDOWN_CHARS {
        return Err(PlanError::MarkdownTooLong { chars });
    }
    let blocks = blocks(markdown);
    let first_heading = blocks.iter().position(|b| matches!(b, Block::Heading { .. }));
    let title = match title.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => t.to_string(),
        None => match first_heading.map(|i| &blocks[i]) {
            Some(Block::Heading { text, .. }) if !text.is_empty() => text.clone(),
            _ => markdown
                .split('\n')
                .zip(fenced_lines(markdown))
                .filter(|(_, fenced)| !fenced)
                .map(|(line, _)| strip_markdown_marks(line))
                .find(|l| !l.is_empty())
                .map(|l| l.chars().take(120).collect())
                .unwrap_or_default(),
        },
    };

    let item = |b: &Block, numbered_only: bool| match b {
        Block::Item { ordered, text } if *ordered || !numbered_only => Some(crate::list::item_text(text)),
        _ => None,
    };
    // Steps under a "Steps"/"Plan" heading (not the title heading itself).
    let mut steps = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let Block::Heading { level, text } = block else { continue };
        let lower = text.to_lowercase();
        if Some(i) == first_heading || !(lower.contains("step") || lower.contains("plan")) {
            continue;
        }
        steps = blocks[i + 1..]
            .iter()
            .take_while(|b| !matches!(b, Block::Heading { level: l, .. } if l <= level))
            .filter_map(|b| item(b, false))
            .collect();
        if !steps.is_empty() {
            break;
        }
    }
    if steps.is_empty() {
        steps = blocks.iter().filter_map(|b| item(b, true)).collect();
    }
    let mut unique = HashSet::new();
    let steps: Vec<Step> =
        steps.into_iter().filter(|s: &String| !s.is_empty() && unique.insert(s.clone())).take(MAX_STEPS).map(Step::pending).collect();

    let summary = match blocks.get(first_heading.map(|i| i + 1).unwrap_or(0)) {
        Some(Block::Paragraph(text)) if !text.is_empty() => Some(text.chars().take(500).collect()),
        _ => None,
    };

    let unfenced = markdown.split('\n').zip(fenced_lines(markdown)).filter(|(_, fenced)| !fenced).map(|(line, _)| line);
    let scope = crate::scope::from_markdown_lines(unfenced.clone());
    let allows = allows_from_markdown_lines(unfenced)?;
    let plan = Plan { summary, steps, scope, allows, ..Plan::titled(title) };
    validate_plan(&plan)?;
    Ok(plan)
}

fn strip_markdown_marks(line: &str) -> String {
    line.trim().trim_start_matches(['#', '*', '-', '>', ' ']).trim().to_string()
}

/// The risk classes under a `## Allows` heading, one per item, its first
/// word the class id (`- db.migrate: the new column`); an item that names
/// no class is refused, so the card never shows less than the plan meant.
fn allows_from_markdown_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Result<Vec<plangate_gate::classes::RiskClass>, PlanError> {
    use plangate_gate::classes::RiskClass;
    let mut inside = false;
    let mut out = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix('#') {
            inside = heading.trim_start_matches('#').trim().eq_ignore_ascii_case("allows");
            continue;
        }
        if !inside || trimmed.is_empty() {
            continue;
        }
        let item = trimmed.trim_start_matches(['-', '*', '+']).trim();
        let id = item.split(|c: char| c.is_whitespace() || c == ':' || c == ',').next().unwrap_or("").trim_matches('`');
        match RiskClass::parse(id) {
            Some(class) if !out.contains(&class) => out.push(class),
            Some(_) => {}
            None => return Err(unknown_allow(item)),
        }
    }
    Ok(out)
}

fn unknown_allow(item: &str) -> PlanError {
    let known: Vec<&str> = plangate_gate::classes::RiskClass::ALL.iter().map(|c| c.id()).collect();
    PlanError::UnknownAllow { item: plangate_basics::text::cut_chars(item, 100), known: known.join(", ") }
}

/// Render a structured plan as the markdown document attached to cards.
pub fn render_markdown(plan: &Plan) -> String {
    let mut out = format!("# {}\n\n", plan.title.trim());
    if let Some(summary) = &plan.summary {
        out.push_str(&format!("{}\n\n", summary.trim()));
    }
    if let Some(analysis) = &plan.analysis {
        out.push_str(&format!("## Analysis\n\n{}\n\n", analysis.trim()));
    }
    if !plan.steps.is_empty() {
        out.push_str("## Steps\n\n");
        for (i, step) in plan.steps.iter().enumerate() {
            out.push_str(&format!("{}. {} _({})_\n", i + 1, step.step.trim(), step.status.as_str()));
            for c in &step.acceptance_criteria {
                let done = if step.verified_criteria.iter().any(|v| v.trim() == c.trim()) { "x" } else { " " };
                out.push_str(&format!("   - [{done}] {}\n", c.trim()));
            }
        }
        out.push('\n');
    }
    let scope = plan.scope.as_ref().map(|s| s.paths.clone()).unwrap_or_default();
    let allows: Vec<String> = plan.allows.iter().map(|c| format!("{} ({})", c.id(), c.says())).collect();
    for (heading, items) in [
        ("Scope", &scope),
        ("Allows", &allows),
        ("Assumptions", &plan.assumptions),
        ("Risks", &plan.risks),
        ("Verification", &plan.verification),
        ("References", &plan.references),
    ] {
        if !items.is_empty() {
            out.push_str(&format!("## {heading}\n\n"));
            for item in items {
                out.push_str(&format!("- {}\n", item.trim()));
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(text: &str, status: StepStatus) -> Step {
        Step { status, ..Step::pending(text) }
    }

    #[test]
    fn title_is_required() {
        assert_eq!(validate_plan(&Plan::titled("  ")), Err(PlanError::TitleRequired));
        assert!(validate_plan(&Plan::titled("x")).is_ok());
    }

    #[test]
    fn at_most_one_in_progress() {
        let steps = vec![step("a", StepStatus::InProgress), step("b", StepStatus::InProgress)];
        let err = validate_steps(&steps).unwrap_err();
        assert_eq!(err.rule(), "single_in_progress");
        assert!(err.to_string().contains("single_in_progress"));
    }

    #[test]
    fn duplicate_step_text_is_refused_even_with_spacing() {
        let steps = vec![step("a", StepStatus::Pending), step(" a ", StepStatus::Pending)];
        assert_eq!(validate_steps(&steps).unwrap_err().rule(), "unique_steps");
    }

    #[test]
    fn completed_needs_verified_criteria() {
        let mut s = step("a", StepStatus::Completed);
        s.acceptance_criteria = vec!["tests pass".into(), "docs".into()];
        s.verified_criteria = vec![" tests pass ".into()];
        let err = validate_steps(std::slice::from_ref(&s)).unwrap_err();
        assert_eq!(err, PlanError::UnverifiedCompletion { step: "a".into(), missing: vec!["docs".into()] });
        s.verified_criteria.push("docs".into());
        assert!(validate_steps(&[s]).is_ok());
    }

    #[test]
    fn merge_joins_by_text_keeps_order_appends_and_revalidates() {
        let current = vec![step("a", StepStatus::InProgress), step("b", StepStatus::Pending)];
        let update = |text: &str, status| StepUpdate::status(text, status);
        let merged = update_steps(&current, vec![update("b ", StepStatus::Completed), update("c", StepStatus::Pending)], true).unwrap();
        let names: Vec<_> = merged.iter().map(|s| (s.step.as_str(), s.status)).collect();
        assert_eq!(names, vec![("a", StepStatus::InProgress), ("b", StepStatus::Completed), ("c", StepStatus::Pending)]);
        // Merged result must still satisfy the rules: a second in_progress is refused.
        let err = update_steps(&current, vec![update("b", StepStatus::InProgress)], true).unwrap_err();
        assert_eq!(err.rule(), "single_in_progress");
        // Replace mode drops the old list.
        assert_eq!(update_steps(&current, vec![update("z", StepStatus::Pending)], false).unwrap().len(), 1);
        // Duplicates within one update are refused before merging.
        let err = update_steps(&current, vec![update("x", StepStatus::Pending), update("x", StepStatus::Pending)], true).unwrap_err();
        assert_eq!(err.rule(), "unique_steps");
    }

    #[test]
    fn a_merge_patch_changes_only_what_it_carries() {
        let guarded = Step {
            active_form: Some("Running the tests".into()),
            acceptance_criteria: vec!["green".into()],
            ..step("run tests", StepStatus::InProgress)
        };
        // Completing without the inherited criterion verified is refused…
        let err = update_steps(std::slice::from_ref(&guarded), vec![StepUpdate::status("run tests", StepStatus::Completed)], true);
        assert_eq!(err.unwrap_err(), PlanError::UnverifiedCompletion { step: "run tests".into(), missing: vec!["green".into()] });
        // …a patch of one field keeps the others…
        let verify = StepUpdate { verified_criteria: Some(vec!["green".into()]), ..StepUpdate::status("run tests", StepStatus::Completed) };
        let merged = update_steps(std::slice::from_ref(&guarded), vec![verify], true).unwrap();
        assert_eq!(merged, vec![Step { status: StepStatus::Completed, verified_criteria: vec!["green".into()], ..guarded.clone() }]);
        // …an empty value clears, and a whole step replaces.
        let clear = StepUpdate {
            active_form: Some(String::new()),
            acceptance_criteria: Some(vec![]),
            ..StepUpdate::status("run tests", StepStatus::Pending)
        };
        let merged = update_steps(std::slice::from_ref(&guarded), vec![clear], true).unwrap();
        assert_eq!(merged, vec![step("run tests", StepStatus::Pending)]);
        let merged = update_steps(std::slice::from_ref(&guarded), vec![step("run tests", StepStatus::Pending).into()], true).unwrap();
        assert_eq!(merged, vec![step("run tests", StepStatus::Pending)]);
        // Without merge an update is the whole step, with defaults.
        let whole =
            update_steps(std::slice::from_ref(&guarded), vec![StepUpdate::status("run tests", StepStatus::Completed)], false).unwrap();
        assert_eq!(whole, vec![step("run tests", StepStatus::Completed)]);
        // JSON: absent and null leave a field alone.
        let patch: StepUpdate = serde_json::from_str(r#"{"step": "run tests", "active_form": null}"#).unwrap();
        assert_eq!(update_steps(std::slice::from_ref(&guarded), vec![patch], true).unwrap(), vec![guarded]);
    }

    #[test]
    fn markdown_cap() {
        let md = "x".repeat(MAX_MARKDOWN_CHARS + 1);
        assert_eq!(plan_from_markdown(&md, None).unwrap_err().rule(), "markdown_length");
        // Characters, not bytes.
        let md = format!("# t\n{}", "é".repeat(MAX_MARKDOWN_CHARS - 4));
        assert!(plan_from_markdown(&md, None).is_ok());
    }

    #[test]
    fn markdown_extraction() {
        let md = "# Add retries\n\nMake the client resilient.\n\n## Steps\n1. Read the client\n2. Add backoff\n   - detail\n- [ ] Test it\n\n## Risks\n- flaky\n";
        let plan = plan_from_markdown(md, None).unwrap();
        assert_eq!(plan.title, "Add retries");
        assert_eq!(plan.summary.as_deref(), Some("Make the client resilient."));
        let steps: Vec<_> = plan.steps.iter().map(|s| s.step.as_str()).collect();
        assert_eq!(steps, vec!["Read the client", "Add backoff", "Test it"]);
        let plan = plan_from_markdown(md, Some("Given")).unwrap();
        assert_eq!(plan.title, "Given");
    }

    #[test]
    fn markdown_without_heading_uses_numbered_items() {
        let plan = plan_from_markdown("Do this:\n1) one\n2) two\n", None).unwrap();
        assert_eq!(plan.title, "Do this:");
        assert_eq!(plan.steps.len(), 2);
        assert_eq!(plan_from_markdown("   \n", None).unwrap_err(), PlanError::TitleRequired);
    }

    fn step_texts(plan: &Plan) -> Vec<&str> {
        plan.steps.iter().map(|s| s.step.as_str()).collect()
    }

    #[test]
    fn a_comment_in_a_code_block_does_not_end_the_step_list() {
        let md = "# Deploy\n\nShip it.\n\n## Steps\n\n1. Build\n\n   ```sh\n   # build it\n   make\n   ```\n\n2. Ship\n\n\
                  ```sh\n# a comment, not a heading\n```\n\n3. Check\n\n## Risks\n\n- none\n";
        let plan = plan_from_markdown(md, None).unwrap();
        assert_eq!(step_texts(&plan), ["Build", "Ship", "Check"]);
        assert_eq!((plan.title.as_str(), plan.summary.as_deref()), ("Deploy", Some("Ship it.")));
    }

    #[test]
    fn numbered_lines_in_code_are_not_steps() {
        let md = "# Fix\n\nRun this:\n\n```\n1. not a step\n2) nor this\n```\n\n    3. indented code, not a step\n\n1. real step\n";
        assert_eq!(step_texts(&plan_from_markdown(md, None).unwrap()), ["real step"]);
        let md = "# Fix\n\n## Steps\n\n~~~\n1. only code\n~~~\n";
        assert!(plan_from_markdown(md, None).unwrap().steps.is_empty());
    }

    #[test]
    fn a_comment_in_a_code_block_is_not_the_title() {
        let md = "```sh\n# not a title\n```\n\n# Real title\n\n1. a\n";
        assert_eq!(plan_from_markdown(md, None).unwrap().title, "Real title");
        let md = "```\n# code\n```\nPlan: tidy up\n1. a\n";
        let plan = plan_from_markdown(md, None).unwrap();
        assert_eq!((plan.title.as_str(), step_texts(&plan)), ("Plan: tidy up", vec!["a"]));
    }

    #[test]
    fn markdown_items_follow_the_list_rule_and_setext_headings_count() {
        let md = "Retry plan\n==========\n\nSummary\nhere.\n\nSteps\n-----\n\n- ○ 1.5x faster parsing\n- [x] 2024 plan\n\
                  * **bold** step\n  continued\n";
        let plan = plan_from_markdown(md, None).unwrap();
        assert_eq!(plan.title, "Retry plan");
        assert_eq!(plan.summary.as_deref(), Some("Summary here."));
        assert_eq!(step_texts(&plan), ["1.5x faster parsing", "2024 plan", "**bold** step continued"]);
    }

    #[test]
    fn hash_is_stable_and_content_bound() {
        let a = Plan { steps: vec![Step::pending("x")], ..Plan::titled("t") };
        let b = a.clone();
        assert_eq!(plan_hash(&a, None), plan_hash(&b, None));
        let mut c = a.clone();
        c.steps[0].step = "y".into();
        assert_ne!(plan_hash(&a, None), plan_hash(&c, None));
        assert_ne!(plan_hash(&a, None), plan_hash(&a, Some("md")));
        assert!(plan_hash(&a, None).starts_with("sha256:"));
    }

    #[test]
    fn allows_come_from_markdown_and_survive_the_document() {
        use plangate_gate::classes::RiskClass;
        let md = "# T\n\n1. a\n\n## Allows\n\n- `db.migrate`: the column\n- git.push\n- git.push\n\n## Risks\n\n- none\n";
        let plan = plan_from_markdown(md, None).expect("plan");
        assert_eq!(plan.allows, [RiskClass::DbMigrate, RiskClass::GitPush]);
        assert_eq!(plan_from_markdown(&render_markdown(&plan), None).expect("again").allows, plan.allows);
        let err = plan_from_markdown("# T\n\n1. a\n\n## Allows\n\n- anything goes\n", None).unwrap_err();
        assert_eq!(err.rule(), "allows");
        assert!(plan_from_markdown("# T\n\n1. a\n", None).expect("plan").allows.is_empty());
    }
}
