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
//! Rules use the harnesses' `Tool(pattern)` form in configuration, but a
//! rule is a typed value ([`Rule`]: a tool and a [`Match`]), stored as
//! such, never a string read again later: a grant means exactly what the
//! card showed, whatever characters the command holds (newlines, a
//! literal `:*`, 10,000 characters), and a record the engine wrote always
//! reads back. What a pattern means depends on the tool, and is
//! deliberately narrower than a shell's idea of "starts with":
//!
//! | written | [`Match`] | matches (allow) |
//! |---|---|---|
//! | `Tool` | [`Match::Any`] | every call of the tool |
//! | `Bash(npm test:*)` | [`Match::Prefix`] | a *single simple command* (the gate's strict tokenizer: no `;`, `&&`, `\|`, `$(…)`, redirection) whose words start with `npm test`; POSIX shells only |
//! | `Bash(npm test)`, `Bash("sh:*")` | [`Match::Exact`] | exactly that command (a JSON string in quotes when it ends in `:*`, starts with `"`, has whitespace at an end or a control character) |
//! | `Edit(src/**)` | [`Match::Glob`] | every file the call writes matches the glob, the files as the hook normalized them (relative to the working directory) |
//! | `Edit("docs/a.md", "docs/b,.env")` | [`Match::Files`] | the call writes only those files, compared as literal paths (no glob meta) |
//! | (not writable) | [`Match::Input`] | another tool, called with exactly that input (the SHA-256 of its canonical JSON) |
//! | (not writable) | [`Match::Never`] | nothing: an old record whose meaning cannot be told |
//!
//! Shell tools are the gate's [`plangate_gate::reading::COMMAND_TOOLS`]
//! (`Bash`, `PowerShell`, Codex's `exec_command` and `shell`, OpenClaw's
//! `exec`, …); file tools are [`plangate_gate::paths`]'s.
//!
//! The rule a grade creates ([`Rule::covering`]) is the narrowest that
//! covers the call: the exact command, the exact files, or the exact input
//! — never a whole tool whose input a rule cannot read.
//!
//! `deny` and `ask` rules read a call *wider* than `allow` rules do
//! ([`Rule::restricts`]): a prefix matches wherever the command may run
//! that program and subcommand, after wrappers and the program's global
//! options (`sudo git -c x=y --no-pager push`, `npm --tag next publish`,
//! `/bin/rm`, `true && git push`: [`plangate_gate::rules`]); a file rule
//! matches when *any* file the call writes matches, or when the files
//! cannot be told. Matching too much is the safe side there.
//!
//! Precedence, as in the harnesses: a matching `deny` rule (configuration)
//! wins, then `ask` (configuration: always a prompt), then `allow`
//! (configuration, stored "always" rules, this session's rules).

use crate::ids::{QuestionId, Timestamp};
use crate::scope::{self, Target};
use plangate_gate::reading;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;
use thiserror::Error;

/// The longest pattern a rule written in configuration holds.
pub const MAX_PATTERN_CHARS: usize = 4000;
/// The longest tool input a prompt keeps (the whole of it is what an
/// approver may read as a document).
pub const MAX_INPUT_BYTES: usize = 256 * 1024;
/// How much of the rendered input a card shows before it says the rest
/// is attached.
pub const SHOWN_CHARS: usize = 1500;
/// How much of a rule a card or a list shows before it is cut (the whole
/// rule is in the attached input).
pub const SHOWN_RULE_CHARS: usize = 300;
/// How long after the agent's hook was last heard waiting (a long-poll on
/// the request, or the request itself) a person's answer still counts. A
/// hook withdrawn by its harness (the dialog answered at the terminal
/// first) stops polling, and a tap after that must not "allow" what
/// nobody waits for: it expires the request instead.
pub const HEARD_GRACE_MS: u64 = 30_000;
/// The answers as buttons, in order: [`PermissionAnswer::from_option`].
pub const OPTIONS: [&str; 4] = ["Allow once", "Allow for this session", "Always allow", "Deny"];

/// A permission rule: which tool, and which of its calls.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "StoredForm", into = "TypedForm")]
pub struct Rule {
    tool: String,
    what: Match,
}

/// Which calls of its tool a [`Rule`] covers (the module docs' table).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// Every call.
    Any,
    /// A shell command, exactly.
    Exact(String),
    /// A single simple command starting with these words.
    Prefix(Vec<String>),
    /// A file tool writing only these files (normalized, relative, literal).
    Files(Vec<String>),
    /// A file tool whose every file matches this glob.
    Glob(String),
    /// Another tool, with exactly this input: the hex SHA-256 of its
    /// canonical JSON (keys sorted, no whitespace).
    Input(String),
    /// Nothing (why, for a person).
    Never(String),
}

/// How a rule is stored: typed.
#[derive(Serialize, Deserialize)]
struct TypedForm {
    tool: String,
    #[serde(rename = "match")]
    what: Match,
}

/// How a rule is read: typed, or a string an older plangate stored.
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredForm {
    Typed(TypedForm),
    Text(String),
}

impl From<Rule> for TypedForm {
    fn from(r: Rule) -> TypedForm {
        TypedForm { tool: r.tool, what: r.what }
    }
}

impl From<StoredForm> for Rule {
    fn from(form: StoredForm) -> Rule {
        match form {
            StoredForm::Typed(t) => Rule { tool: t.tool, what: t.what },
            StoredForm::Text(text) => Rule::from_old_record(&text),
        }
    }
}

/// Why a rule does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RuleError {
    #[error("a rule is `Tool` or `Tool(pattern)`, e.g. `Bash(npm test:*)` or `Edit(src/**)`; got {0:?}")]
    Shape(String),
    #[error("the tool name {0:?} is not a tool name (letters, digits, `_`, `-`, `.`, `:`; at most 100)")]
    Tool(String),
    #[error("the pattern of {tool} is empty or longer than {MAX_PATTERN_CHARS} characters, or holds a control character (write a command with newlines as a JSON string in quotes: `Bash(\"a\\nb\")`)")]
    Pattern { tool: String },
    #[error("{tool} takes no pattern: patterns are for shell commands (`Bash(npm test:*)`) and file tools (`Edit(src/**)`); write `{tool}` for every call")]
    NoPatternFor { tool: String },
    #[error("the glob {glob:?} of {tool} does not parse: {why}")]
    Glob { tool: String, glob: String, why: String },
    #[error("the quoted pattern of {tool} is not a JSON string (or, for a file tool, a comma-separated list of them): {why}")]
    Quoted { tool: String, why: String },
    #[error("`{tool}({pattern})` has no words before `:*`: a prefix rule names at least the program")]
    EmptyPrefix { tool: String, pattern: String },
}

fn is_shell(tool: &str) -> bool {
    reading::is_command_tool(tool)
}

fn is_file(tool: &str) -> bool {
    plangate_gate::paths::is_file_tool(tool)
}

/// Whether `text` is a tool name a rule written by a person may name.
fn is_tool_name(text: &str) -> bool {
    !text.is_empty() && text.len() <= 100 && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

impl Rule {
    /// Parse `Tool` or `Tool(pattern)` as written in configuration (the
    /// module docs' table).
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let (tool, pattern) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else { return Err(RuleError::Shape(text.to_string())) };
                (&text[..open], Some(inner.trim()))
            }
        };
        if !is_tool_name(tool) {
            return Err(RuleError::Tool(tool.to_string()));
        }
        let tool = tool.to_string();
        let Some(p) = pattern else { return Ok(Rule { tool, what: Match::Any }) };
        if p.is_empty() || p.chars().count() > MAX_PATTERN_CHARS || p.chars().any(|c| c.is_control()) {
            return Err(RuleError::Pattern { tool });
        }
        if !is_shell(&tool) && !is_file(&tool) {
            return Err(RuleError::NoPatternFor { tool });
        }
        if p.starts_with('"') {
            let quoted: Vec<String> =
                serde_json::from_str(&format!("[{p}]")).map_err(|e| RuleError::Quoted { tool: tool.clone(), why: e.to_string() })?;
            let what = match quoted.as_slice() {
                [one] if is_shell(&tool) && !one.is_empty() => Match::Exact(one.clone()),
                _ if is_shell(&tool) => {
                    return Err(RuleError::Quoted { tool, why: "a shell rule quotes one non-empty command".to_string() })
                }
                files if !files.is_empty() && files.iter().all(|f| scope::is_normalized(f)) => Match::Files(sorted(files.to_vec())),
                _ => {
                    return Err(RuleError::Quoted {
                        tool,
                        why: "each file is a path relative to the working directory, without `.` or `..`".to_string(),
                    })
                }
            };
            return Ok(Rule { tool, what });
        }
        if is_shell(&tool) {
            return Ok(match p.strip_suffix(":*") {
                Some(prefix) => {
                    let words: Vec<String> = prefix.split_whitespace().map(str::to_string).collect();
                    if words.is_empty() {
                        return Err(RuleError::EmptyPrefix { tool, pattern: p.to_string() });
                    }
                    Rule { tool, what: Match::Prefix(words) }
                }
                None => Rule { tool, what: Match::Exact(p.to_string()) },
            });
        }
        if let Err(e) = globset::GlobBuilder::new(p).literal_separator(true).backslash_escape(false).build() {
            return Err(RuleError::Glob { tool, glob: p.to_string(), why: e.kind().to_string() });
        }
        Ok(Rule { tool, what: Match::Glob(p.to_string()) })
    }

    /// A rule stored as a string by plangate before rules were typed. Every
    /// such record was made by [`Rule::covering`] (an answer's grant), so
    /// it is read as that made it: a shell pattern is the exact command
    /// (even one ending in `:*`, which the old reader wrongly took for a
    /// prefix), a file pattern the one escaped file it stood for. A
    /// several-file pattern (`{a,b}`) cannot be told apart from a file
    /// name holding a comma, so it matches nothing: the next such call
    /// asks again. Never fails: a record the engine wrote always reads.
    fn from_old_record(text: &str) -> Rule {
        let (tool, pattern) = match (text.find('('), text.strip_suffix(')')) {
            (Some(open), Some(body)) if open < body.len() => (&text[..open], Some(&body[open + 1..])),
            _ => (text, None),
        };
        let tool = tool.to_string();
        let what = match pattern {
            None => Match::Any,
            Some(p) if is_shell(&tool) => Match::Exact(p.to_string()),
            Some(p) if is_file(&tool) => match unescape_glob(p) {
                Some(path) if scope::is_normalized(&path) => Match::Files(vec![path]),
                _ => Match::Never(format!("an older record's pattern {p:?}, which cannot be read as exact files")),
            },
            Some(p) => Match::Never(format!("an older record's pattern {p:?}")),
        };
        Rule { tool, what }
    }

    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Which calls of the tool it covers.
    pub fn what(&self) -> &Match {
        &self.what
    }

    /// The narrowest rule that covers `call`: the exact command, the exact
    /// files, or the exact input. What "for this session" and "always"
    /// grant.
    pub fn covering(call: &Call<'_>) -> Rule {
        let tool = call.tool.to_string();
        let what = if is_shell(call.tool) {
            match call.command() {
                Some(command) => Match::Exact(command.trim().to_string()),
                None => Match::Input(input_digest(call.input)),
            }
        } else if is_file(call.tool) {
            match call.files() {
                // A call whose files are not all known inside the project
                // gets a rule no call matches, rather than one for every file.
                Some(files) if !files.is_empty() => Match::Files(sorted(files.into_iter().map(str::to_string).collect())),
                _ => Match::Never("the call's files were not all inside the project".to_string()),
            }
        } else {
            Match::Input(input_digest(call.input))
        };
        Rule { tool, what }
    }

    /// Whether this rule lets `call` run without asking (an `allow` rule, a
    /// stored or a session grant): the strict reading.
    pub fn allows(&self, call: &Call<'_>) -> bool {
        if self.tool != call.tool {
            return false;
        }
        match &self.what {
            Match::Any => true,
            Match::Exact(exact) => call.command().is_some_and(|c| c.trim() == exact),
            Match::Prefix(prefix) => {
                if !reading::is_posix_shell(call.tool) {
                    return false;
                }
                let Some(words) = call.command().and_then(|c| plangate_gate::simple_words(&c)) else { return false };
                words.len() >= prefix.len() && words.iter().zip(prefix).all(|(w, p)| w == p)
            }
            Match::Files(files) => call.files().is_some_and(|mine| !mine.is_empty() && mine.iter().all(|f| files.iter().any(|g| g == f))),
            Match::Glob(glob) => {
                call.files().is_some_and(|mine| !mine.is_empty() && mine.iter().all(|f| scope::within(std::slice::from_ref(glob), f)))
            }
            Match::Input(digest) => (!is_shell(call.tool) || call.command().is_none()) && input_digest(call.input) == *digest,
            Match::Never(_) => false,
        }
    }

    /// Whether this `deny` or `ask` rule catches `call`: the wide reading
    /// (module docs), where an unreadable call is caught.
    pub fn restricts(&self, call: &Call<'_>) -> bool {
        if self.tool != call.tool {
            return false;
        }
        match &self.what {
            Match::Any => true,
            Match::Exact(exact) => match call.command() {
                Some(c) => c.contains(exact.as_str()) || words_of(&c) == words_of(exact),
                None => true,
            },
            Match::Prefix(prefix) => match call.command() {
                Some(c) => plangate_gate::rules::may_run(&c, &prefix.iter().map(String::as_str).collect::<Vec<_>>()),
                None => true,
            },
            Match::Files(files) => match call.files() {
                Some(mine) if !mine.is_empty() => mine.iter().any(|f| files.iter().any(|g| g == f)),
                _ => true,
            },
            Match::Glob(glob) => match call.files() {
                Some(mine) if !mine.is_empty() => mine.iter().any(|f| scope::within(std::slice::from_ref(glob), f)),
                _ => true,
            },
            Match::Input(digest) => input_digest(call.input) == *digest,
            Match::Never(_) => false,
        }
    }

    /// Roughly how many bytes the rule takes in a record.
    pub fn size(&self) -> usize {
        let what = match &self.what {
            Match::Any => 0,
            Match::Exact(s) | Match::Glob(s) | Match::Input(s) | Match::Never(s) => s.len(),
            Match::Prefix(v) | Match::Files(v) => v.iter().map(|s| s.len() + 3).sum(),
        };
        self.tool.len() + what + 24
    }

    /// The rule for a person, in a sentence ("exactly the command above").
    pub fn described(&self) -> String {
        let tool = plangate_gate::text::shown(&self.tool);
        match &self.what {
            Match::Any => format!("every `{tool}` call"),
            Match::Exact(_) => format!("`{tool}` with exactly this command, nothing more"),
            Match::Prefix(words) => format!("`{tool}` running `{}` (a single command starting with those words)", words.join(" ")),
            Match::Files(files) => {
                let shown: Vec<String> = files.iter().map(|f| format!("`{}`", plangate_gate::text::shown(f))).collect();
                format!("`{tool}` writing only {}", shown.join(", "))
            }
            Match::Glob(glob) => format!("`{tool}` writing only files matching `{glob}`"),
            Match::Input(_) => format!("`{tool}` with exactly this input, nothing more"),
            Match::Never(why) => format!("nothing ({why})"),
        }
    }

    /// The rule as written ([`fmt::Display`]), cut for a card or a list at
    /// [`SHOWN_RULE_CHARS`], hidden characters revealed.
    pub fn shown(&self) -> String {
        let (text, _) = crate::text::reveal(&self.to_string());
        plangate_basics::text::cut_chars(&text, SHOWN_RULE_CHARS)
    }
}

/// Files in a stable order, without repeats.
fn sorted(mut files: Vec<String>) -> Vec<String> {
    files.sort();
    files.dedup();
    files
}

fn words_of(command: &str) -> Vec<&str> {
    command.split_whitespace().collect()
}

/// The hex SHA-256 of `input`'s canonical JSON (serde_json's maps keep
/// their keys sorted).
fn input_digest(input: &Value) -> String {
    hex::encode(Sha256::digest(serde_json::to_vec(input).unwrap_or_default()))
}

/// The literal path an older plangate's `globset::escape` made a glob of
/// (each metacharacter `c` written `[c]`); `None` when the glob holds
/// anything else that is not literal.
fn unescape_glob(glob: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                let inner = chars.next()?;
                if chars.next()? != ']' || !"*?[]{}".contains(inner) {
                    return None;
                }
                out.push(inner);
            }
            '*' | '?' | ']' | '{' | '}' | '\\' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

impl fmt::Display for Rule {
    /// The configuration form: [`Rule::parse`] reads back what this writes
    /// for every rule that form can express.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tool = &self.tool;
        let json = |s: &str| json_quoted(s);
        match &self.what {
            Match::Any => f.write_str(tool),
            Match::Exact(c) => {
                let plain = !c.is_empty()
                    && c.trim() == c
                    && !c.ends_with(":*")
                    && !c.starts_with('"')
                    && !c.chars().any(char::is_control)
                    && c.chars().count() <= MAX_PATTERN_CHARS;
                if plain {
                    write!(f, "{tool}({c})")
                } else {
                    write!(f, "{tool}({})", json(c))
                }
            }
            Match::Prefix(words) => write!(f, "{tool}({}:*)", words.join(" ")),
            // `,` alone between files: what is written back is never longer
            // than what was parsed, so it stays within the pattern limit.
            Match::Files(files) => write!(f, "{tool}({})", files.iter().map(|p| json(p)).collect::<Vec<_>>().join(",")),
            Match::Glob(g) => write!(f, "{tool}({g})"),
            Match::Input(digest) => write!(f, "{tool}(input sha256:{})", &digest[..digest.len().min(12)]),
            Match::Never(_) => write!(f, "{tool}(matches nothing)"),
        }
    }
}

/// `text` as a JSON string in which every control character is escaped:
/// serde_json leaves DEL and the C1 controls raw, which [`Rule::parse`]
/// refuses in a pattern (found by the `rule_parser` fuzz target).
fn json_quoted(text: &str) -> String {
    let json = serde_json::to_string(text).unwrap_or_default();
    json.chars().fold(String::with_capacity(json.len()), |mut out, c| {
        if c.is_control() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
        out
    })
}

/// Rules as configuration writes them (`deny = ["Bash(git push:*)"]`):
/// `#[serde(with = "plangate_engine::permission::written")]` on a
/// `Vec<Rule>` reads each with [`Rule::parse`] and writes it back with
/// [`fmt::Display`]. (A rule's own serde form is the typed record.)
pub mod written {
    use super::Rule;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(rules: &[Rule], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(rules.iter().map(Rule::to_string))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Rule>, D::Error> {
        let texts = Vec::<String>::deserialize(d)?;
        texts
            .iter()
            .enumerate()
            .map(|(n, t)| Rule::parse(t).map_err(|e| serde::de::Error::custom(format!("rule [{n}] {t:?}: {e}"))))
            .collect()
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
    /// A shell tool's command ([`plangate_gate::reading::command`]).
    fn command(&self) -> Option<String> {
        reading::command(self.tool, self.input)
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
    /// Under a quorum: the approvers who asked for a wider grant so far
    /// (one each); the grant is made when enough distinct ones did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wide_votes: Vec<WideVote>,
    /// Until when the agent's hook said it waits (the end of its latest
    /// long-poll; the request's own time before any). `None` in records
    /// made before this was kept: such a request is not judged by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_until: Option<Timestamp>,
    /// The distinct approvers the operator's policy asks for this call
    /// (`quorum = N`); 0 or 1: one person may allow it once.
    #[serde(default, skip_serializing_if = "is_one_or_none")]
    pub required: u32,
}

fn is_one_or_none(n: &u32) -> bool {
    *n <= 1
}

/// One approver's vote for a wider grant under a quorum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WideVote {
    /// The approver's identity (`telegram:111`).
    pub by: String,
    pub grade: Grade,
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
    /// The distinct approvers the operator's policy asks for this call
    /// (`quorum = N`, `plangate-policy`); 0 or 1: one.
    pub required: u32,
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
    if let Some(r) = rules.deny.iter().find(|r| r.restricts(call)) {
        return Judged::Deny(r.clone());
    }
    if rules.ask.iter().any(|r| r.restricts(call)) {
        return Judged::Ask;
    }
    if let Some(r) = rules.allow.iter().find(|r| r.allows(call)) {
        return Judged::Allow { rule: r.clone(), from: "the configuration" };
    }
    if let Some(r) = rules.stored.iter().find(|r| r.rule.allows(call)) {
        return Judged::Allow { rule: r.rule.clone(), from: "an always-allow rule" };
    }
    if let Some(r) = session.iter().find(|r| r.allows(call)) {
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
        let command = reading::command(tool, input).unwrap_or_else(|| pretty(input));
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
        "apply_patch" => plangate_gate::paths::patch_text(input).map(str::to_string).unwrap_or_else(|_| pretty(input)),
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
mod tests;
