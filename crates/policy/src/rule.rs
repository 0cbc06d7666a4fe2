//! One operator rule: what it matches and where it routes what matches.

use crate::route::Facts;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use plangate_gate::classes::RiskClass;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::path::PathBuf;

/// Where a matching rule sends a plan or a call. Stronger actions win:
/// `deny` > `quorum` (the larger N first) > `one` > `auto` ([`Action::rank`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A risky call runs without a card, audited with the rule's id (calls only:
    /// a plan is always decided by people).
    Auto,
    /// One person decides: the card, as without a policy.
    One,
    /// At least N distinct people decide.
    Quorum(u32),
    /// Refused, with the rule's id in the reason.
    Deny,
}

impl Action {
    /// The precedence of an action: the larger wins when several rules match.
    pub fn rank(self) -> u64 {
        match self {
            Action::Auto => 0,
            Action::One => 1,
            Action::Quorum(n) => 1 + u64::from(n),
            Action::Deny => u64::MAX,
        }
    }

    /// Whether matching this rule can only make the answer stricter than
    /// without a policy. Such a rule errs toward a match (an unknown value
    /// matches); `auto`, which skips people, matches only what it is sure of.
    pub fn restricts(self) -> bool {
        !matches!(self, Action::Auto)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Auto => f.write_str("auto"),
            Action::One => f.write_str("one"),
            Action::Quorum(n) => write!(f, "quorum = {n}"),
            Action::Deny => f.write_str("deny"),
        }
    }
}

/// Which decisions a rule routes (`on = "calls"`, `"plans"`, or both, the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Applies {
    #[default]
    Both,
    Calls,
    Plans,
}

impl Applies {
    fn is_both(&self) -> bool {
        *self == Applies::Both
    }
}

/// Where a rule was written: the config file's `[policy]` section or a
/// file of `policy.d/`. `plangate policy show` prints it beside the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Config(Option<PathBuf>),
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Config(Some(p)) => write!(f, "{} [policy]", p.display()),
            Source::Config(None) => f.write_str("the embedded config [policy]"),
            Source::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A rule as an operator writes it in TOML.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Named in reasons and in the audit; unique across every source.
    pub id: String,
    /// `auto`, `one`, `quorum` (with `quorum = N`) or `deny`; left out with
    /// `quorum = N` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<u32>,
    #[serde(default, skip_serializing_if = "Applies::is_both")]
    pub on: Applies,
    /// Plans this rule matches need each person's approval confirmed with
    /// their passkey on the web page (WebAuthn step-up), whatever the
    /// strongest rule decides about how many approve. Plans only. Alone
    /// (no `action`, no `quorum`) it means `action = "one"`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub step_up: bool,
    /// Matches plans of at least this many steps (plan size; plans only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_steps: Option<usize>,
    /// Why the rule exists, for the person reading `policy show`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub agent: Vec<String>,
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub project: Vec<String>,
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub branch: Vec<String>,
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub host: Vec<String>,
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub class: Vec<String>,
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub tool: Vec<String>,
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
}

/// `agent = "ci"` and `agent = ["ci", "docs-*"]` mean the same.
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// The longest rule id: it is shown in reasons and cards.
pub const MAX_ID_CHARS: usize = 64;

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub action: Action,
    pub on: Applies,
    /// Plans it matches need passkey confirmations ([`RuleSpec::step_up`]).
    pub step_up: bool,
    pub source: Source,
    /// As written, for `policy show`.
    pub spec: RuleSpec,
    agent: Globs,
    project: Globs,
    branch: Globs,
    host: Globs,
    tool: Globs,
    path: Globs,
    classes: Vec<RiskClass>,
    min_steps: Option<usize>,
}

/// A matcher of one attribute: none written matches every value.
#[derive(Debug, Clone, Default)]
struct Globs(Option<GlobSet>);

impl Globs {
    /// `separated`: `*` stays within a directory (paths), as in a plan's scope.
    fn new(patterns: &[String], separated: bool) -> Result<Globs, String> {
        if patterns.is_empty() {
            return Ok(Globs(None));
        }
        let mut set = GlobSetBuilder::new();
        for p in patterns {
            if p.trim().is_empty() {
                return Err("holds an empty pattern".to_string());
            }
            let glob = GlobBuilder::new(p.trim()).literal_separator(separated).build().map_err(|e| format!("{p:?} is not a glob: {e}"))?;
            set.add(glob);
        }
        set.build().map(|s| Globs(Some(s))).map_err(|e| format!("the patterns do not compile: {e}"))
    }

    fn written(&self) -> bool {
        self.0.is_some()
    }

    fn is_match(&self, value: &str) -> bool {
        self.0.as_ref().is_none_or(|s| s.is_match(value))
    }

    /// A value the caller may not know (`None`): a restricting rule
    /// matches it, `auto` does not.
    fn matches_maybe(&self, value: Option<&str>, restricts: bool) -> bool {
        match (&self.0, value) {
            (None, _) => true,
            (Some(_), None) => restricts,
            (Some(s), Some(v)) => s.is_match(v),
        }
    }
}

impl Rule {
    /// Check and compile a written rule, or say what is wrong with it.
    pub fn compile(spec: RuleSpec, source: Source) -> Result<Rule, String> {
        check_id(&spec.id)?;
        let action = action_of(&spec)?;
        if action == Action::Auto && spec.on == Applies::Plans {
            return Err("`auto` routes calls only: a plan is always decided by people".to_string());
        }
        if spec.step_up && (action == Action::Auto || spec.on == Applies::Calls || !spec.tool.is_empty()) {
            return Err("step_up asks people for a passkey on the plans the rule routes: write it on a plan rule (not auto, not on = \"calls\", no tool)".to_string());
        }
        if spec.min_steps == Some(0) || (spec.min_steps.is_some() && spec.on == Applies::Calls) {
            return Err("min_steps matches plans of at least N steps: write 1 or more, on a rule that routes plans".to_string());
        }
        let classes = spec
            .class
            .iter()
            .map(|c| RiskClass::parse(c).ok_or_else(|| format!("class {c:?} is not a risk class; one of {}", class_list())))
            .collect::<Result<Vec<_>, _>>()?;
        let field = |name: &str, patterns: &[String], separated: bool| Globs::new(patterns, separated).map_err(|e| format!("{name} {e}"));
        Ok(Rule {
            id: spec.id.clone(),
            action,
            on: spec.on,
            step_up: spec.step_up,
            min_steps: spec.min_steps,
            source,
            agent: field("agent", &spec.agent, false)?,
            project: field("project", &spec.project, false)?,
            branch: field("branch", &spec.branch, false)?,
            host: field("host", &spec.host, false)?,
            tool: field("tool", &spec.tool, false)?,
            path: field("path", &spec.path, true)?,
            classes,
            spec,
        })
    }

    /// Whether this rule routes a call (`plan: false`) or a plan with these facts.
    pub fn matches(&self, facts: &Facts, plan: bool) -> bool {
        let applies = match self.on {
            Applies::Both => true,
            Applies::Calls => !plan,
            Applies::Plans => plan,
        };
        if !applies || (plan && (self.action == Action::Auto || self.tool.written())) || (!plan && self.min_steps.is_some()) {
            return false;
        }
        let restricts = self.action.restricts();
        let big_enough = match (self.min_steps, facts.steps) {
            (None, _) => true,
            (Some(n), Some(steps)) => steps >= n,
            (Some(_), None) => restricts,
        };
        big_enough
            && self.agent.is_match(&facts.agent)
            && self.project.matches_maybe(facts.project.as_deref(), restricts)
            && self.branch.matches_maybe(facts.branch.as_deref(), restricts)
            && self.host.matches_maybe(facts.host.as_deref(), restricts)
            && self.tool.matches_maybe(facts.tool.as_deref(), restricts)
            && self.paths_match(facts.paths.as_deref(), restricts)
            && self.classes_match(facts, restricts)
    }

    /// A restricting rule matches when any file matches, or the files are
    /// unknown (a shell command); `auto` only when every file is known and
    /// matches.
    fn paths_match(&self, paths: Option<&[String]>, restricts: bool) -> bool {
        match (self.path.written(), paths) {
            (false, _) => true,
            (true, None) => restricts,
            (true, Some(ps)) if restricts => ps.iter().any(|p| self.path.is_match(p)),
            (true, Some(ps)) => !ps.is_empty() && ps.iter().all(|p| self.path.is_match(p)),
        }
    }

    /// A restricting rule matches when the call (or plan) has any of its
    /// classes; `auto` only when it names every class the plan did not
    /// declare, so `sqlx migrate run && rm -rf /srv` is not waved through by
    /// a rule for migrations.
    fn classes_match(&self, facts: &Facts, restricts: bool) -> bool {
        if self.classes.is_empty() {
            return true;
        }
        if restricts {
            facts.classes.iter().any(|c| self.classes.contains(c))
        } else {
            !facts.classes.is_empty() && facts.undeclared.iter().all(|c| self.classes.contains(c))
        }
    }
}

fn check_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.chars().count() <= MAX_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(format!("id {id:?} must be 1–{MAX_ID_CHARS} characters of A-Z a-z 0-9 - _ . :"))
    }
}

fn action_of(spec: &RuleSpec) -> Result<Action, String> {
    match (spec.action.as_deref().map(str::trim), spec.quorum) {
        (Some("auto"), None) => Ok(Action::Auto),
        (Some("one"), None) => Ok(Action::One),
        (Some("deny"), None) => Ok(Action::Deny),
        (Some("quorum") | None, Some(n)) if (2..=20).contains(&n) => Ok(Action::Quorum(n)),
        (Some("quorum") | None, Some(n)) => Err(format!("quorum = {n}: write 2 to 20 (one approver is `action = \"one\"`)")),
        (Some("quorum"), None) => Err("action = \"quorum\" needs `quorum = N`".to_string()),
        (Some(a @ ("auto" | "one" | "deny")), Some(_)) => Err(format!("`quorum` goes with action = \"quorum\", not {a:?}")),
        (Some(other), _) => Err(format!("action {other:?} is not one of auto, one, quorum, deny")),
        (None, None) if spec.step_up => Ok(Action::One),
        (None, None) => Err("has no action: write action = \"auto\" | \"one\" | \"deny\", or quorum = N".to_string()),
    }
}

fn class_list() -> String {
    RiskClass::ALL.iter().map(|c| c.id()).collect::<Vec<_>>().join(", ")
}
