//! Permission prompts: a tool call the harness would ask its user about
//! ("Allow `npm publish --tag next`?"), relayed to the approvers' phones,
//! and the rules that answer such calls without asking.
//!
//! The harness asks only where its own rules say so, and only after the
//! gate let the call through (the gate decides first: in plan mode or
//! without an approved plan a mutation is denied before any prompt
//! exists). A prompt is a [`crate::Question`] with a [`PermissionAsk`]: the
//! same cards, deliveries, buttons and card edits as an agent's question,
//! with graded answers ([`PermissionAnswer`]):
//!
//! * **Allow once** — this call;
//! * **Allow for this session** — the same [`Rule`] until the session's
//!   plan is replaced (a new proposal) or the session leaves execution;
//! * **Always allow** — the rule stored for the agent ([`StoredRule`],
//!   listed by `/plan rules`, removed by `/plan rules remove N`);
//! * **Deny**, with an optional reason that reaches the model.
//!
//! Rules use the harnesses' `Tool(pattern)` form. What a pattern means
//! depends on the tool, and is deliberately narrower than a shell's idea
//! of "starts with":
//!
//! | tool | `Tool` alone | `Tool(pattern)` |
//! |---|---|---|
//! | shell (`Bash`, Codex `exec_command`) | every command | the exact command; `prefix:*` a *single simple command* (the gate's strict tokenizer: no `;`, `&&`, `\|`, `$(…)`, redirection) whose words start with `prefix`'s words |
//! | file tools (`Edit`, `Write`, `MultiEdit`, `NotebookEdit`, `apply_patch`) | every file | a glob every file the call writes must match, the files as the hook normalized them on the agent's machine (relative to the working directory); a file outside it never matches |
//! | any other | every call | not accepted (a rule on another tool is the whole tool) |
//!
//! The rule a grade creates is the narrowest that covers the call: the
//! exact command, the exact files, or (other tools) the tool.
//!
//! Precedence, as in the harnesses: a matching `deny` rule (configuration)
//! wins, then `ask` (configuration: always a prompt), then `allow`
//! (configuration, stored "always" rules, this session's rules).

use crate::ids::{QuestionId, Timestamp};
use crate::scope::{self, Target};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use thiserror::Error;

/// The longest pattern a rule holds (a long exact command still fits).
pub const MAX_PATTERN_CHARS: usize = 4000;
/// The longest tool input a prompt keeps (the whole of it is what an
/// approver may read as a document).
pub const MAX_INPUT_BYTES: usize = 256 * 1024;
/// How much of the rendered input a card shows before it says the rest
/// is attached.
pub const SHOWN_CHARS: usize = 1500;
/// The answers as buttons, in order: [`PermissionAnswer::from_option`].
pub const OPTIONS: [&str; 4] = ["Allow once", "Allow for this session", "Always allow", "Deny"];

/// A rule in the harnesses' `Tool(pattern)` form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rule {
    tool: String,
    pattern: Option<String>,
}

/// Why a rule does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RuleError {
    #[error("a rule is `Tool` or `Tool(pattern)`, e.g. `Bash(npm test:*)` or `Edit(src/**)`; got {0:?}")]
    Shape(String),
    #[error("the tool name {0:?} is not a tool name (letters, digits, `_`, `-`, `.`, `:`; at most 100)")]
    Tool(String),
    #[error("the pattern of {tool} is empty or longer than {MAX_PATTERN_CHARS} characters, or holds a control character")]
    Pattern { tool: String },
    #[error("{tool} takes no pattern: patterns are for shell commands (`Bash(npm test:*)`) and file tools (`Edit(src/**)`); write `{tool}` for every call")]
    NoPatternFor { tool: String },
    #[error("the glob {glob:?} of {tool} does not parse: {why}")]
    Glob { tool: String, glob: String, why: String },
}

fn is_shell(tool: &str) -> bool {
    plangate_gate::is_shell_tool(tool) || tool == "exec_command"
}

fn is_file(tool: &str) -> bool {
    plangate_gate::paths::is_file_tool(tool)
}

impl Rule {
    /// Parse `Tool` or `Tool(pattern)`.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let (tool, pattern) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else { return Err(RuleError::Shape(text.to_string())) };
                (&text[..open], Some(inner.trim().to_string()))
            }
        };
        let tool_ok =
            !tool.is_empty() && tool.len() <= 100 && tool.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
        if !tool_ok {
            return Err(RuleError::Tool(tool.to_string()));
        }
        let tool = tool.to_string();
        if let Some(p) = &pattern {
            if p.is_empty() || p.chars().count() > MAX_PATTERN_CHARS || p.chars().any(|c| c.is_control()) {
                return Err(RuleError::Pattern { tool });
            }
            if !is_shell(&tool) && !is_file(&tool) {
                return Err(RuleError::NoPatternFor { tool });
            }
            if is_file(&tool) {
                if let Err(e) = globset::GlobBuilder::new(p).literal_separator(true).build() {
                    return Err(RuleError::Glob { tool, glob: p.clone(), why: e.kind().to_string() });
                }
            }
        }
        Ok(Rule { tool, pattern })
    }

    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The narrowest rule that covers `call`: the exact command, the exact
    /// files, or the tool. What "for this session" and "always" grant.
    pub fn covering(call: &Call<'_>) -> Rule {
        let tool = call.tool.to_string();
        if is_shell(call.tool) {
            if let Some(command) = call.command() {
                return Rule { tool, pattern: Some(command.trim().to_string()) };
            }
        } else if is_file(call.tool) {
            let files: Vec<String> = call.files().unwrap_or_default().into_iter().map(scope::literal).collect();
            let pattern = match files.len() {
                0 => None,
                1 => files.into_iter().next(),
                _ => Some(format!("{{{}}}", files.join(","))),
            };
            // A call whose files are not all known inside the project gets a
            // rule no call can match, rather than one for every file.
            return Rule { tool, pattern: Some(pattern.unwrap_or_else(|| "(no file inside the project)".to_string())) };
        }
        Rule { tool, pattern: None }
    }

    /// Whether this rule covers `call` (see the module docs for what a
    /// pattern means for each kind of tool).
    pub fn matches(&self, call: &Call<'_>) -> bool {
        if self.tool != call.tool {
            return false;
        }
        let Some(pattern) = &self.pattern else { return true };
        if is_shell(call.tool) {
            let Some(command) = call.command() else { return false };
            match pattern.strip_suffix(":*") {
                Some(prefix) => {
                    let Some(words) = plangate_gate::simple_words(&command) else { return false };
                    let wanted: Vec<&str> = prefix.split_whitespace().collect();
                    !wanted.is_empty() && words.len() >= wanted.len() && words.iter().zip(&wanted).all(|(w, p)| w == p)
                }
                None => command.trim() == pattern,
            }
        } else if is_file(call.tool) {
            match call.files() {
                Some(files) if !files.is_empty() => files.iter().all(|f| scope::within(std::slice::from_ref(pattern), f)),
                _ => false,
            }
        } else {
            false
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Some(p) => write!(f, "{}({p})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

impl TryFrom<String> for Rule {
    type Error = RuleError;
    fn try_from(s: String) -> Result<Rule, RuleError> {
        Rule::parse(&s)
    }
}

impl From<Rule> for String {
    fn from(r: Rule) -> String {
        r.to_string()
    }
}

/// A tool call as rules match it and people read it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    /// The files a file tool writes, as the hook normalized them on the
    /// agent's machine ([`scope::Target`]); `None` when it sent none.
    pub paths: Option<&'a [Target]>,
}

impl Call<'_> {
    /// A shell tool's command (Codex sends an argv list).
    fn command(&self) -> Option<String> {
        match self.input.get("command")? {
            Value::String(s) => Some(s.clone()),
            Value::Array(words) => Some(words.iter().map(|w| w.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()?.join(" ")),
            _ => None,
        }
    }

    /// The files, when every one is a clean path inside the project.
    fn files(&self) -> Option<Vec<&str>> {
        self.paths?
            .iter()
            .map(|t| match t {
                Target::Path(p) if scope::is_normalized(p) => Some(p.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// An approver's answer to a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "answer")]
pub enum PermissionAnswer {
    Allow { grade: Grade },
    Deny { reason: Option<String> },
}

/// How far an allow reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    Once,
    Session,
    Always,
}

impl PermissionAnswer {
    /// The answer of button `n` ([`OPTIONS`]).
    pub fn from_option(n: usize) -> Option<PermissionAnswer> {
        Some(match n {
            0 => PermissionAnswer::Allow { grade: Grade::Once },
            1 => PermissionAnswer::Allow { grade: Grade::Session },
            2 => PermissionAnswer::Allow { grade: Grade::Always },
            3 => PermissionAnswer::Deny { reason: None },
            _ => return None,
        })
    }

    /// A typed answer: `once`, `session`, `always` (each may start with
    /// `allow`), or `deny` with an optional reason (`deny too risky`,
    /// `deny: too risky`). The button labels are accepted as typed.
    pub fn parse(text: &str) -> Result<PermissionAnswer, String> {
        let t = text.trim();
        if let Some(n) = OPTIONS.iter().position(|o| o.eq_ignore_ascii_case(t)) {
            return Ok(PermissionAnswer::from_option(n).expect("every option has an answer"));
        }
        let lower = t.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("deny") {
            let reason = t[4..].trim_start_matches([':', ' ', '-', '—']).trim();
            return match rest.chars().next() {
                None | Some(' ' | ':' | '-' | '—') => {
                    Ok(PermissionAnswer::Deny { reason: (!reason.is_empty()).then(|| reason.to_string()) })
                }
                Some(_) => Err(usage()),
            };
        }
        let grade = lower.strip_prefix("allow").unwrap_or(&lower).trim();
        let grade = grade.strip_prefix("for").unwrap_or(grade).trim();
        let grade = grade.strip_prefix("this").unwrap_or(grade).trim();
        match grade {
            "" | "once" => Ok(PermissionAnswer::Allow { grade: Grade::Once }),
            "session" => Ok(PermissionAnswer::Allow { grade: Grade::Session }),
            "always" => Ok(PermissionAnswer::Allow { grade: Grade::Always }),
            _ => Err(usage()),
        }
    }

    /// How the card and the audit say it.
    pub fn said(&self) -> String {
        match self {
            PermissionAnswer::Allow { grade: Grade::Once } => "allowed once".to_string(),
            PermissionAnswer::Allow { grade: Grade::Session } => "allowed for this session".to_string(),
            PermissionAnswer::Allow { grade: Grade::Always } => "always allowed".to_string(),
            PermissionAnswer::Deny { reason: None } => "denied".to_string(),
            PermissionAnswer::Deny { reason: Some(r) } => format!("denied: {r}"),
        }
    }
}

fn usage() -> String {
    "answer `allow once`, `allow session`, `allow always`, or `deny` with an optional reason".to_string()
}

/// What became of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum PermissionOutcome {
    /// A person answered.
    Answered { answer: PermissionAnswer },
    /// Nobody answered in time: the harness asks at its own terminal (no
    /// decision, never an allow), or a newer prompt replaced this one.
    Expired { why: String },
}

/// The permission part of a [`crate::Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionAsk {
    pub tool: String,
    /// The whole input, as JSON, for the attached document.
    pub input: String,
    /// The input for a person: the command, the change as a diff; cut at a
    /// line to [`SHOWN_CHARS`] when `shown_whole` is false.
    pub shown: String,
    pub shown_whole: bool,
    /// What the call risks ([`plangate_gate::risk`]), for the line above it.
    pub risks: Vec<String>,
    /// What "for this session" and "always" grant.
    pub rule: Rule,
    pub outcome: Option<PermissionOutcome>,
}

/// An "always" rule plangate keeps for an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRule {
    pub agent: String,
    /// Random, hex: the store's key.
    pub id: String,
    pub rule: Rule,
    pub created_by: String,
    pub created_at: Timestamp,
    /// The prompt whose answer made it, if any.
    pub prompt: Option<QuestionId>,
}

/// The rules a call is judged by before anyone is asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// `[agents.<id>.permissions]` from the configuration.
    pub deny: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub allow: Vec<Rule>,
    /// "Always" answers stored for the agent.
    pub stored: Vec<StoredRule>,
}

/// What the rules say about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    Deny(Rule),
    Allow { rule: Rule, from: &'static str },
    Ask,
}

/// Judge `call` by `rules` and the session's own (`session`): deny, then
/// ask, then allow (see the module docs).
pub fn judge(call: &Call<'_>, rules: &Rules, session: &[Rule]) -> Judged {
    if let Some(r) = rules.deny.iter().find(|r| r.matches(call)) {
        return Judged::Deny(r.clone());
    }
    if rules.ask.iter().any(|r| r.matches(call)) {
        return Judged::Ask;
    }
    if let Some(r) = rules.allow.iter().find(|r| r.matches(call)) {
        return Judged::Allow { rule: r.clone(), from: "the configuration" };
    }
    if let Some(r) = rules.stored.iter().find(|r| r.rule.matches(call)) {
        return Judged::Allow { rule: r.rule.clone(), from: "an always-allow rule" };
    }
    if let Some(r) = session.iter().find(|r| r.matches(call)) {
        return Judged::Allow { rule: r.clone(), from: "this session's rules" };
    }
    Judged::Ask
}

/// The input for a person: a shell command as `$ command` (with the
/// harness's description), a file change as a line diff, anything else as
/// indented JSON; hidden characters revealed; cut at a line.
pub fn render(tool: &str, input: &Value) -> (String, bool) {
    let text = render_whole(tool, input);
    let (text, _) = crate::text::reveal(&text);
    if text.chars().count() <= SHOWN_CHARS {
        return (text, true);
    }
    (crate::text::cut_at_line(&text, SHOWN_CHARS, "…"), false)
}

fn render_whole(tool: &str, input: &Value) -> String {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    if is_shell(tool) {
        let command = Call { tool, input, paths: None }.command().unwrap_or_default();
        return match s("description") {
            Some(d) => format!("$ {command}\n# {d}"),
            None => format!("$ {command}"),
        };
    }
    match tool {
        "Write" | "write" => {
            let path = s("file_path").or(s("path")).unwrap_or("?");
            let body = s("content").unwrap_or("");
            format!("{path} (whole file, {} lines)\n{}", body.lines().count(), prefixed(body, "+ "))
        }
        "Edit" | "edit" => {
            let path = s("file_path").or(s("path")).unwrap_or("?");
            format!("{path}\n{}", edit_diff(s("old_string").unwrap_or(""), s("new_string").unwrap_or("")))
        }
        "MultiEdit" => {
            let path = s("file_path").unwrap_or("?");
            let edits = input.get("edits").and_then(Value::as_array).cloned().unwrap_or_default();
            let parts: Vec<String> = edits
                .iter()
                .map(|e| {
                    let g = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
                    edit_diff(g("old_string"), g("new_string"))
                })
                .collect();
            format!("{path}\n{}", parts.join("\n@@\n"))
        }
        "apply_patch" => ["command", "input", "patch"].iter().find_map(|k| s(k)).map(str::to_string).unwrap_or_else(|| pretty(input)),
        _ => pretty(input),
    }
}

fn edit_diff(old: &str, new: &str) -> String {
    let mut out = prefixed(old, "- ");
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&prefixed(new, "+ "));
    out
}

fn prefixed(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}")).collect::<Vec<_>>().join("\n")
}

fn pretty(input: &Value) -> String {
    serde_json::to_string_pretty(input).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(cmd: &str) -> Value {
        json!({"command": cmd})
    }

    fn call<'a>(tool: &'a str, input: &'a Value, paths: Option<&'a [Target]>) -> Call<'a> {
        Call { tool, input, paths }
    }

    #[test]
    fn rules_parse_and_print_back() {
        for r in ["Bash", "Bash(npm test:*)", "Edit(src/**)", "mcp__github__create_issue", "apply_patch(src/*.rs)"] {
            assert_eq!(Rule::parse(r).unwrap().to_string(), r);
        }
        assert!(matches!(Rule::parse("Bash(npm"), Err(RuleError::Shape(_))));
        assert!(matches!(Rule::parse("Ba sh"), Err(RuleError::Tool(_))));
        assert!(matches!(Rule::parse("WebFetch(domain:x.com)"), Err(RuleError::NoPatternFor { .. })));
        assert!(matches!(Rule::parse("Edit(src/[)"), Err(RuleError::Glob { .. })));
        assert!(matches!(Rule::parse("Bash()"), Err(RuleError::Pattern { .. })));
    }

    #[test]
    fn a_prefix_rule_matches_only_a_single_simple_command() {
        let rule = Rule::parse("Bash(npm test:*)").unwrap();
        for ok in ["npm test", "npm test -- --watch=false", "npm  test x"] {
            assert!(rule.matches(&call("Bash", &bash(ok), None)), "{ok}");
        }
        for no in ["npm testing", "npm test; rm -rf /", "npm test && git push", "npm test $(rm x)", "npm test > out", "npm", "npx test"] {
            assert!(!rule.matches(&call("Bash", &bash(no), None)), "{no}");
        }
        let exact = Rule::parse("Bash(npm publish --tag next)").unwrap();
        assert!(exact.matches(&call("Bash", &bash(" npm publish --tag next "), None)));
        assert!(!exact.matches(&call("Bash", &bash("npm publish --tag next; rm x"), None)));
        assert!(!exact.matches(&call("Write", &bash("npm publish --tag next"), None)));
    }

    #[test]
    fn file_rules_match_every_normalized_file_and_never_outside() {
        let rule = Rule::parse("Edit(src/**)").unwrap();
        let input = json!({});
        let inside = [Target::Path("src/a/b.rs".into())];
        let mixed = [Target::Path("src/a.rs".into()), Target::Path("docs/x.md".into())];
        let outside = [Target::Outside("/etc/passwd".into())];
        let sneaky = [Target::Path("src/../../etc/passwd".into())];
        assert!(rule.matches(&call("Edit", &input, Some(&inside))));
        assert!(!rule.matches(&call("Edit", &input, Some(&mixed))));
        assert!(!rule.matches(&call("Edit", &input, Some(&outside))));
        assert!(!rule.matches(&call("Edit", &input, Some(&sneaky))));
        assert!(!rule.matches(&call("Edit", &input, None)));
    }

    #[test]
    fn the_covering_rule_is_the_narrowest() {
        let input = bash("npm publish --tag next");
        assert_eq!(Rule::covering(&call("Bash", &input, None)).to_string(), "Bash(npm publish --tag next)");
        let files = [Target::Path("src/a[1].rs".into())];
        let edit = Rule::covering(&call("Edit", &json!({}), Some(&files)));
        assert_eq!(edit.to_string(), "Edit(src/a[[]1[]].rs)");
        assert!(edit.matches(&call("Edit", &json!({}), Some(&files))));
        assert!(!edit.matches(&call("Edit", &json!({}), Some(&[Target::Path("src/a1.rs".into())]))));
        let outside = [Target::Outside("/x".into())];
        let none = Rule::covering(&call("Write", &json!({}), Some(&outside)));
        assert!(!none.matches(&call("Write", &json!({}), Some(&outside))));
        assert_eq!(Rule::covering(&call("mcp__x__y", &json!({}), None)).to_string(), "mcp__x__y");
    }

    #[test]
    fn deny_wins_then_ask_then_allow() {
        let input = bash("npm test");
        let c = call("Bash", &input, None);
        let r = |s: &str| Rule::parse(s).unwrap();
        let mut rules = Rules { allow: vec![r("Bash(npm test:*)")], ..Rules::default() };
        assert!(matches!(judge(&c, &rules, &[]), Judged::Allow { .. }));
        rules.ask.push(r("Bash"));
        assert_eq!(judge(&c, &rules, &[r("Bash")]), Judged::Ask);
        rules.deny.push(r("Bash(npm test)"));
        assert_eq!(judge(&c, &rules, &[]), Judged::Deny(r("Bash(npm test)")));
        assert_eq!(judge(&c, &Rules::default(), &[]), Judged::Ask);
        assert!(matches!(judge(&c, &Rules::default(), &[r("Bash(npm test)")]), Judged::Allow { from: "this session's rules", .. }));
    }

    #[test]
    fn typed_answers() {
        let allow = |g| Ok(PermissionAnswer::Allow { grade: g });
        assert_eq!(PermissionAnswer::parse("allow once"), allow(Grade::Once));
        assert_eq!(PermissionAnswer::parse("Allow for this session"), allow(Grade::Session));
        assert_eq!(PermissionAnswer::parse("session"), allow(Grade::Session));
        assert_eq!(PermissionAnswer::parse("ALWAYS"), allow(Grade::Always));
        assert_eq!(PermissionAnswer::parse("deny"), Ok(PermissionAnswer::Deny { reason: None }));
        assert_eq!(
            PermissionAnswer::parse("deny: use the staging tag"),
            Ok(PermissionAnswer::Deny { reason: Some("use the staging tag".into()) })
        );
        assert!(PermissionAnswer::parse("denylist").is_err());
        assert!(PermissionAnswer::parse("sure").is_err());
    }

    #[test]
    fn inputs_render_for_people_and_long_ones_say_so() {
        let (shown, whole) = render("Bash", &json!({"command": "rm -rf build", "description": "clean"}));
        assert_eq!((shown.as_str(), whole), ("$ rm -rf build\n# clean", true));
        let (shown, _) = render("Edit", &json!({"file_path": "a.rs", "old_string": "x\ny", "new_string": "z"}));
        assert_eq!(shown, "a.rs\n- x\n- y\n+ z");
        let big = "line\n".repeat(1000);
        let (shown, whole) = render("Write", &json!({"file_path": "a", "content": big}));
        assert!(!whole && shown.chars().count() <= SHOWN_CHARS && shown.ends_with('…'));
        let (shown, _) = render("Bash", &json!({"command": "echo \u{202e}x"}));
        assert!(shown.contains("⟦U+202E⟧"));
    }
}
