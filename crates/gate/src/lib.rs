//! The mutation gate: which tool calls an agent may make while its plan is
//! waiting for a human.
//!
//! # Threat model
//!
//! The harness (Claude Code's PreToolUse hook, OpenClaw, an MCP client) asks
//! plangate before every tool call. While a session is in plan mode — pending
//! approval included — this crate answers. The agent on the other side may be
//! confused, over-eager, or steered by text it read (a README, an issue, a web
//! page), so every input here is treated as adversarial: tool names, tool
//! arguments and shell command strings are arbitrary strings written to get a
//! write through. A gate that lets one write through is worse than none,
//! because people stop watching.
//!
//! Hence **default deny**. Only calls this crate can *prove* read-only are
//! allowed: tools on a fixed read-only list, MCP and dotted tools whose names
//! read as a pure read (`mcp__github__list_issues`), and shell commands that
//! are a single simple command from a per-command, per-flag whitelist. Anything
//! unknown, ambiguous or merely unusual is denied with a one-line reason the
//! agent can act on (rephrase, wait for approval, or ask the operator to extend
//! the policy). A false deny costs the agent one retry; a false allow costs the
//! user their files.
//!
//! # Why a strict tokenizer and not a shell parser
//!
//! Every public bypass of an agent's command allowlist (CVE-2025-54795,
//! CVE-2025-58764, CVE-2025-66032, CVE-2025-64755, CVE-2026-24887, …) came
//! from a *parser differential*: the validator understood the string one way
//! and the shell another (quoting, `$IFS`, a flag it did not know, an operator
//! hidden in an escape). A fuller shell parser only moves that boundary. This
//! crate instead accepts a grammar so small that sh, dash, bash, zsh and fish
//! all read it the same way, and refuses everything outside it:
//!
//! ```text
//! command  := blank* word (blank+ word)* blank*        blank := ' ' | '\t'
//! word     := piece+
//! piece    := plain | '\'' single* '\'' | '"' double* '"'
//! plain    := [A-Za-z0-9] | one of - _ . / : , + @ % = ~ ^ * ?   (ASCII only;
//!             with position rules for = ~ ^ * ?, see below)
//! single   := any char except ' , newline, control, invisible/bidi
//!             (and not ending in \ : fish reads \' as an escaped quote)
//! double   := single minus $ ` \ !
//! ```
//!
//! So there are no operators (`; | & && || > >> < << <( $( )` backtick),
//! no expansions (`$X`, `${X}`, `$'…'`, `~user`, `{a,b}`, `[…]`, `!`), no
//! backslashes outside single quotes, no newlines or carriage returns, no
//! non-ASCII outside quotes (fullwidth `；`, non-breaking spaces, zero-width
//! characters) and no invisible or bidi characters anywhere. Globs `*` and `?`
//! are allowed unquoted only after a literal first character that is not `-`
//! (`src/*.rs`, `./*.md`): a glob that could match a file named `--pre=sh`
//! or `-delete` would hand the command an option the gate never saw. zsh with
//! `EXTENDED_GLOB` reads an unquoted `^` anywhere in a word as a glob
//! ("anything but"), so such a word is a glob too: `HEAD^` is fine where a
//! glob is, `-^x` (a file named `-delete`) is not; and a `*`/`?` glob next to
//! zsh's `~`/`^` operators, or `dir/^x`, is refused. Commands checked by
//! position (`date`, `hostname`, `git branch`) take no globs at all: one that
//! expands to several words, or to none, would move a value into an operand
//! (`git branch --sort x*` or `--sort refnam^q` creating a branch).
//!
//! The first word must be a plain command name (or `/bin/`, `/usr/bin/`,
//! `/usr/local/bin/` plus a name); then a per-command checker decides on the
//! arguments: `find` without `-delete`/`-exec`/…, `git` only with read-only
//! subcommands and no option that runs a program, `sed` only as `sed -n 'M,Np'`,
//! `sort` without `-o`, long options matched with GNU abbreviation semantics
//! (`--outp` is `--output`). Every word starting with `-` is checked as an
//! option wherever it stands (after operands, after `--`, where it may be
//! another option's value): GNU tools reorder options, and a wrong guess about
//! which word is a value would hide one. See [`check_command`] and
//! `docs/GATE.md`.
//!
//! # What is out of scope
//!
//! The gate judges the call, not the machine: programs named in existing
//! configuration (`.git/config`'s `core.fsmonitor`, `core.pager`,
//! `diff.external`; shell aliases and functions; a writable directory early in
//! `PATH`) run when a read-only command runs, and reads can leak secrets.
//! Plan mode keeps the agent from setting such things up while it plans; see
//! `docs/GATE.md` for the full list.
//!
//! **Architecture invariant:** pure functions of `(policy, tool, input)`: no
//! I/O, no clock, no global state, no panics on any input, no regex. A call
//! takes about a microsecond, so the server can ask on every tool call.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod classes;
mod commands;
mod lexer;
pub mod paths;
pub mod reading;
pub mod risk;
pub mod rules;
pub mod text;
mod tools;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use tools::{is_shell_tool, BUILTIN_WRITE_ARGUMENTS, READ_ONLY_TOOLS, SHELL_TOOLS};

/// Per-agent policy, deserialized from config `[agents.<id>.gate]`.
///
/// The built-in rules are always on; these fields only extend or restrict
/// them, so `Policy::default()` is the safe policy and a typo in a config file
/// cannot switch the gate off.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Extra tool names allowed in plan mode (exact, case-sensitive names).
    /// Shell tools are not affected: their commands are always checked.
    pub allow_tools: Vec<String>,
    /// Tool names always denied, even if they would otherwise be read-only.
    /// Wins over everything else, shell tools included.
    pub deny_tools: Vec<String>,
    /// Extra shell commands allowed (first word, e.g. `"tree"`, `"jq"`). An
    /// added command is trusted with *all* its flags, but still only as a
    /// single simple command: no operator, redirection or expansion is ever
    /// re-enabled, and commands that run other programs (wrappers, shells,
    /// interpreters) cannot be added.
    pub allow_commands: Vec<String>,
    /// Arguments that make an otherwise read-only tool a write, e.g.
    /// `{tool = "session_status", argument = "model"}`. Added to
    /// [`BUILTIN_WRITE_ARGUMENTS`].
    pub write_arguments: Vec<WriteArgument>,
}

/// A tool argument whose presence turns a read into a write.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WriteArgument {
    /// Exact tool name.
    pub tool: String,
    /// Top-level key of the tool's input object; present with any non-null
    /// value means the call writes.
    pub argument: String,
}

/// The gate's answer.
///
/// The string is a one-line reason the agent can act on: what was refused and
/// why, or why it was allowed. It never contains control characters, so it
/// can go straight into a hook response or a log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The call may run.
    Allow(String),
    /// The call must not run.
    Deny(String),
}

impl Verdict {
    /// Whether the call may run.
    pub fn is_allow(&self) -> bool {
        matches!(self, Verdict::Allow(_))
    }

    /// The one-line reason.
    pub fn reason(&self) -> &str {
        match self {
            Verdict::Allow(r) | Verdict::Deny(r) => r,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Allow(r) => write!(f, "allow: {r}"),
            Verdict::Deny(r) => write!(f, "deny: {r}"),
        }
    }
}

/// Decide a tool call made while the session is in PLAN mode (pending
/// approval included). The caller handles normal mode, where everything is
/// allowed.
///
/// Order: `deny_tools`; shell tools (`exec`, `bash`, `Bash`, `shell`,
/// `terminal`) via [`check_command`] on `input.command` / `input.cmd`;
/// `allow_tools`; the built-in read-only tools; MCP (`mcp__server__tool`) and
/// dotted (`server.tool`) tools whose tool part starts with a read verb and
/// contains no write verb; everything else is denied. An allowed tool whose
/// input carries a write argument (see [`Policy::write_arguments`]) is denied.
pub fn check_plan_mode(policy: &Policy, tool: &str, input: &Value) -> Verdict {
    tools::check(policy, tool, input)
}

/// The shell-command part of the gate: is `command` provably a single
/// read-only simple command?
///
/// Allowed: one command from the read-only list (`ls`, `cat`, `pwd`, `grep`,
/// `rg`, `find`, `head`, `tail`, `wc`, `file`, `stat`, `du`, `df`, `echo`,
/// `printenv`, `whoami`, `hostname`, `uname`, `which`, `sort`, `tree`,
/// `basename`, `dirname`, `realpath`, `date`, `true`, `sed -n`, and `git
/// status|log|diff|show|branch --list|rev-parse|ls-files|blame`) without its
/// write-capable flags, or a command from [`Policy::allow_commands`], written
/// in the grammar described in the crate documentation. Everything else is
/// denied.
pub fn check_command(policy: &Policy, command: &str) -> Verdict {
    match lexer::split(command) {
        Ok(words) => commands::check(policy, &words),
        Err(why) => Verdict::Deny(text::deny_command(&why)),
    }
}

/// The words of `command` when it is provably a single simple command (the
/// tokenizer's grammar: no operators, substitutions, redirections, or
/// unquoted globs), quotes removed; `None` otherwise. What a permission
/// rule's `prefix:*` compares word by word, so `npm test; rm -rf /` is
/// never "a command that starts with `npm test`".
pub fn simple_words(command: &str) -> Option<Vec<String>> {
    let words = lexer::split(command).ok()?;
    if words.is_empty() || words.iter().any(|w| w.glob) {
        return None;
    }
    Some(words.into_iter().map(|w| w.text.into_owned()).collect())
}
