//! Tool names and tool inputs.
//!
//! Built-in names match exactly and case-sensitively: `Read` is Claude Code's
//! read tool, `read ` (trailing space) or `Reаd` (Cyrillic а) is an unknown
//! tool and denied. MCP (`mcp__server__tool`) and dotted (`server.tool`) names
//! are judged by their tool part, split into words at `_`, `-`, camelCase and
//! digit boundaries: the first word must be a read verb and no word may be a
//! write verb or a conjunction (`list_and_delete`, `getOrCreate`) or contain
//! a write stem (`get_itemorcreate`, `getORCREATE`).

use serde_json::Value;

use crate::text::{deny_tool, shown};
use crate::{check_command, Policy, Verdict};

/// Tools that run a shell command from `input.command` (or `input.cmd`).
pub const SHELL_TOOLS: &[&str] = &["exec", "bash", "Bash", "shell", "terminal"];

/// Tools that cannot change anything (besides the plan itself), by exact name.
pub const READ_ONLY_TOOLS: &[&str] = &[
    // OpenClaw and plangate's own MCP tools.
    "read",
    "web_search",
    "web_fetch",
    "memory_search",
    "memory_get",
    "sessions_list",
    "sessions_history",
    "update_plan",
    "exit_plan_mode",
    "enter_plan_mode",
    "ask_user_question",
    "plan_mode_status",
    "check_tool",
    "session_status",
    "grep",
    "search",
    "list",
    // plangate's own MCP server as Claude Code names it (`plangate mcp`,
    // registered as `plangate`): the plan tools must work in plan mode.
    "mcp__plangate__enter_plan_mode",
    "mcp__plangate__exit_plan_mode",
    "mcp__plangate__update_plan",
    "mcp__plangate__ask_user_question",
    "mcp__plangate__plan_mode_status",
    "mcp__plangate__check_tool",
    // Step namespaces: plangate's own state, like update_plan.
    "mcp__plangate__get_namespace",
    "mcp__plangate__update_namespace",
    // Claude Code. `Agent` (called `Task` by older versions) starts a
    // subagent whose own tool calls reach the same hook and are gated one by
    // one (but not in another directory or worktree: see
    // `BUILTIN_WRITE_ARGUMENTS`); `AskUserQuestion` asks the human, which
    // plan mode is for; `TodoWrite` only edits the agent's to-do list. `LS`,
    // `NotebookRead` and `Task` are older names, kept for older versions.
    "Read",
    "Glob",
    "Grep",
    "LS",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "ExitPlanMode",
    "NotebookRead",
    "Agent",
    "Task",
    "AskUserQuestion",
    // Claude Code 2.1.328 (each from the tool's own description in that
    // version, not its name). `ToolSearch` only loads the schemas of deferred
    // tools (`ExitPlanMode`, `EnterPlanMode`, `WebFetch`, MCP tools): a model
    // that follows the system prompt calls it before `ExitPlanMode`.
    // `EnterPlanMode` switches Claude Code into plan mode, which only
    // restricts. `ListAgents` lists the agents it can message, `CronList`
    // the scheduled prompts; `ReportFindings` hands review findings to the
    // host UI as data.
    "ToolSearch",
    "EnterPlanMode",
    "ListAgents",
    "CronList",
    "ReportFindings",
];

/// `(tool, argument)` pairs that always make a read-only tool a write:
/// OpenClaw's `session_status` given a `model` switches the session's model;
/// Claude Code's `Agent` (`Task`) given `isolation` creates a git worktree,
/// and given `cwd` runs the subagent in another directory, where a plain
/// `git diff` obeys that directory's git config (the shell `workdir` hole).
pub const BUILTIN_WRITE_ARGUMENTS: &[(&str, &str)] =
    &[("session_status", "model"), ("Agent", "isolation"), ("Agent", "cwd"), ("Task", "isolation"), ("Task", "cwd")];

/// Well-known writing tools, for a clearer reason than "unknown tool".
const WRITE_TOOLS: &[(&str, &str)] = &[
    ("Write", "writes files"),
    ("Edit", "edits files"),
    ("MultiEdit", "edits files"),
    ("NotebookEdit", "edits notebooks"),
    ("write", "writes files"),
    ("edit", "edits files"),
    ("apply_patch", "patches files"),
    ("process", "controls running processes"),
    ("message", "sends messages"),
    ("cron", "schedules jobs"),
    ("gateway", "changes the gateway"),
    // Claude Code tools that write or run something.
    ("PowerShell", "runs PowerShell commands, which the gate does not check"),
    ("Monitor", "runs a command in the background"),
    ("EnterWorktree", "creates a git worktree"),
    ("ExitWorktree", "can remove a git worktree"),
    ("SendMessage", "sends messages to other agents or sessions"),
    ("TeamCreate", "starts other agents"),
    ("TeamDelete", "stops other agents"),
    ("TaskStop", "stops a background task"),
    ("CronCreate", "schedules prompts"),
    ("CronDelete", "deletes scheduled prompts"),
    ("Skill", "runs a skill, which can run commands the gate does not see"),
    // Claude Code 2.1.328, from each tool's description in that version.
    ("ScheduleWakeup", "schedules this session to wake up and run a prompt later"),
    ("Workflow", "runs a JavaScript workflow that orchestrates subagents, which the gate does not see"),
    ("RunWorkflow", "runs a JavaScript workflow that orchestrates subagents, which the gate does not see"),
    ("RemoteTrigger", "manages scheduled remote agents"),
    ("DeferredToolPlaceholder", "is a placeholder that Claude Code says is never to be called"),
    // Codex. `spawn_agent` is what its PreToolUse hook reports for a new
    // sub-agent (`codex-rs/core/src/tools/hook_names.rs`).
    ("write_stdin", "writes to a running process"),
    ("spawn_agent", "starts a Codex sub-agent"),
];

/// Shell-tool input fields that do not change what the command does.
/// Anything else (OpenClaw's `env`, `elevated`, `host`, `pty`; Claude Code's
/// `dangerouslyDisableSandbox`) could, so it is refused unless null or false.
const SHELL_INPUT_FIELDS: &[&str] = &["command", "cmd", "description", "timeout", "run_in_background", "background", "yieldMs"];

/// Shell-tool input fields naming the directory the command runs in. They
/// act like `git -C`, which the gate refuses: the gate cannot see that
/// directory's git config (a committed bare repository's `diff.external`,
/// `core.pager`, `core.fsmonitor` run programs on a plain `git diff`), so a
/// directory is refused rather than resolved. Null or empty is fine.
const SHELL_DIRECTORY_FIELDS: &[&str] = &["workdir", "cwd"];

/// Shell-tool input fields that give the command a terminal: on a terminal
/// `git log` and `git diff` start a pager, which can run commands. Null or
/// false is fine.
const SHELL_TERMINAL_FIELDS: &[&str] = &["pty", "tty"];

/// First words of a read-only MCP or dotted tool.
const READ_VERBS: &[&str] = &["read", "search", "list", "get", "view", "find"];

/// Words that make a tool name a write wherever they appear.
const WRITE_VERBS: &[&str] = &[
    "write",
    "edit",
    "delete",
    "create",
    "update",
    "remove",
    "set",
    "put",
    "post",
    "send",
    "exec",
    "execute",
    "run",
    "move",
    "patch",
    "insert",
    "upsert",
    "append",
    "add",
    "drop",
    "truncate",
    "purge",
    "destroy",
    "kill",
    "terminate",
    "restart",
    "reboot",
    "shutdown",
    "deploy",
    "publish",
    "push",
    "apply",
    "approve",
    "reject",
    "cancel",
    "reset",
    "rename",
    "copy",
    "upload",
    "install",
    "uninstall",
    "save",
    "modify",
    "mutate",
    "alter",
    "overwrite",
    "replace",
    "erase",
    "wipe",
    "clear",
    "flush",
    "revoke",
    "grant",
    "invite",
    "submit",
    "trigger",
    "invoke",
    "fork",
    "clone",
    "revert",
    "rollback",
    "restore",
    "toggle",
    "enable",
    "disable",
    "assign",
    "mark",
    "unlock",
    "merge",
    "lock",
    "lease",
    "acquire",
    "renew",
    "rebase",
    "squash",
    "dismiss",
    "reopen",
    "subscribe",
    "unsubscribe",
    "unfollow",
    "unstar",
    "unpin",
    "unarchive",
    "unmute",
    "unban",
    "enqueue",
    "dequeue",
    "spawn",
    "rerun",
];

/// Words that join two actions in one name (`list_and_delete`).
const CONJUNCTIONS: &[&str] = &["and", "or", "then", "plus"];

/// Write stems refused *inside* a word too, for names whose parts are not
/// separated (`get_itemorcreate`, `getORCREATE`, `list_deleted`). Only stems
/// that practically never occur in a read-only name; the cost of a false
/// match is one `allow_tools` entry.
const WRITE_STEMS: &[&str] = &["delet", "creat", "updat", "remov", "writ", "upsert", "insert", "destroy", "execut", "overwrit", "truncat"];

/// Whether `tool` runs shell commands (and is checked with [`check_command`]).
pub fn is_shell_tool(tool: &str) -> bool {
    SHELL_TOOLS.contains(&tool)
}

pub(crate) fn check(policy: &Policy, tool: &str, input: &Value) -> Verdict {
    let name = shown(tool);
    if policy.deny_tools.iter().any(|t| t == tool) {
        return Verdict::Deny(deny_tool(&format!("tool `{name}` is denied by this agent's policy (deny_tools)")));
    }
    let allowed = if is_shell_tool(tool) {
        match check_shell(policy, input) {
            Ok(reason) => reason,
            Err(why) => return Verdict::Deny(why),
        }
    } else if policy.allow_tools.iter().any(|t| t == tool) {
        format!("tool `{name}` is allowed by this agent's policy (allow_tools)")
    } else if READ_ONLY_TOOLS.contains(&tool) {
        format!("read-only tool `{name}`")
    } else if let Some((_, why)) = WRITE_TOOLS.iter().find(|(t, _)| *t == tool) {
        return Verdict::Deny(deny_tool(&format!("`{name}` {why}")));
    } else {
        match namespaced(tool) {
            Some(Ok(kind)) => format!("read-only {kind} tool `{name}`"),
            Some(Err(why)) => return Verdict::Deny(deny_tool(&why)),
            None => {
                return Verdict::Deny(deny_tool(&format!("unknown tool `{name}` (add it to allow_tools if it cannot change anything)")))
            }
        }
    };
    if let Some(arg) = write_argument(policy, tool, input) {
        return Verdict::Deny(deny_tool(&format!(
            "`{name}` with the argument `{}` makes a change (write_arguments); call it without `{}` to read",
            shown(arg),
            shown(arg)
        )));
    }
    Verdict::Allow(allowed)
}

/// The command of a shell tool call, checked; `Err` is a complete reason.
fn check_shell(policy: &Policy, input: &Value) -> Result<String, String> {
    let Some(fields) = input.as_object() else {
        return Err(deny_tool("a shell tool call without an input object"));
    };
    let command = match (fields.get("command"), fields.get("cmd")) {
        (Some(Value::String(c)), None) | (None, Some(Value::String(c))) => c,
        (Some(Value::String(a)), Some(Value::String(b))) if a == b => a,
        (Some(_), Some(_)) => return Err(deny_tool("a shell call with both `command` and `cmd` that differ (the harness may run either)")),
        (None, None) => return Err(deny_tool("a shell call without a `command` string")),
        _ => return Err(deny_tool("a shell call whose `command` is not a string")),
    };
    for (key, value) in fields {
        if SHELL_INPUT_FIELDS.contains(&key.as_str()) {
            continue;
        }
        if SHELL_DIRECTORY_FIELDS.contains(&key.as_str()) {
            if matches!(value, Value::Null) || value.as_str() == Some("") {
                continue;
            }
            return Err(deny_tool(&format!(
                "the shell input field `{}` runs the command in another directory, like `git -C`: the gate cannot see that directory's git config (which can name programs that `git diff` or `git status` run); drop it and pass paths as arguments",
                shown(key)
            )));
        }
        if SHELL_TERMINAL_FIELDS.contains(&key.as_str()) {
            if matches!(value, Value::Null | Value::Bool(false)) {
                continue;
            }
            return Err(deny_tool(&format!(
                "the shell input field `{}` runs the command on a terminal, where `git log` and `git diff` start a pager that can run commands; drop it",
                shown(key)
            )));
        }
        if !matches!(value, Value::Null | Value::Bool(false)) {
            return Err(deny_tool(&format!(
                "the shell input field `{}` can change what the command does (environment, privileges, host, sandbox); drop it",
                shown(key)
            )));
        }
    }
    match check_command(policy, command) {
        Verdict::Allow(reason) => Ok(reason),
        Verdict::Deny(reason) => Err(reason),
    }
}

/// The first write argument present in `input` for `tool`.
fn write_argument<'p>(policy: &'p Policy, tool: &str, input: &Value) -> Option<&'p str> {
    let fields = input.as_object()?;
    let present = |arg: &str| fields.get(arg).is_some_and(|v| !v.is_null());
    BUILTIN_WRITE_ARGUMENTS
        .iter()
        .filter(|(t, _)| *t == tool)
        .map(|(_, a)| *a)
        .chain(policy.write_arguments.iter().filter(|w| w.tool == tool).map(|w| w.argument.as_str()))
        .find(|a| present(a))
}

/// `Some(Ok(kind))` for a read-only MCP or dotted tool, `Some(Err(reason))`
/// for one that is not, `None` when `tool` is neither form.
fn namespaced(tool: &str) -> Option<Result<&'static str, String>> {
    let name = shown(tool);
    if let Some(rest) = tool.strip_prefix("mcp__") {
        // Exactly one `__` after the prefix: with more, the server/tool split
        // is ambiguous (`mcp__x__read__write`) and some reading writes.
        let mut parts = rest.split("__");
        let (server, part, extra) = (parts.next(), parts.next(), parts.next());
        let ok =
            |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && !p.starts_with('_') && !p.ends_with('_') && p.bytes().all(is_name_byte));
        if extra.is_some() || !ok(server) || !ok(part) {
            return Some(Err(format!(
                "`{name}` is not a well-formed `mcp__<server>__<tool>` name (one `__` separator, no empty parts, letters/digits/`_`/`-` only)"
            )));
        }
        return Some(verb_check(part.unwrap_or_default(), &name).map(|()| "MCP"));
    }
    if tool.contains('.') {
        let mut parts = tool.split('.');
        let (server, part, extra) = (parts.next(), parts.next(), parts.next());
        let ok = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(is_name_byte));
        if extra.is_some() || !ok(server) || !ok(part) {
            return Some(Err(format!(
                "`{name}` is not a well-formed `server.tool` name (one dot, no empty parts, letters/digits/`_`/`-` only)"
            )));
        }
        return Some(verb_check(part.unwrap_or_default(), &name).map(|()| "namespaced"));
    }
    None
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The tool part reads as a pure read: first word a read verb, no write verb
/// or conjunction anywhere. Case-insensitive (`READ_FILE`, `deleteFile`).
fn verb_check(part: &str, name: &str) -> Result<(), String> {
    let words = words(part);
    let Some(first) = words.first() else {
        return Err(format!("`{name}` has an empty tool name"));
    };
    for w in &words {
        if let Some(v) = WRITE_VERBS.iter().find(|v| w.eq_ignore_ascii_case(v)) {
            return Err(format!("`{name}` contains the write verb `{v}`"));
        }
        if let Some(c) = CONJUNCTIONS.iter().find(|c| w.eq_ignore_ascii_case(c)) {
            return Err(format!("`{name}` combines actions (`{c}`), so it may not only read"));
        }
        let lower = w.to_ascii_lowercase();
        if let Some(v) = WRITE_STEMS.iter().find(|v| lower.contains(*v)) {
            return Err(format!("`{name}` contains `{v}`, part of a write verb, so it may not only read"));
        }
    }
    if !READ_VERBS.iter().any(|v| first.eq_ignore_ascii_case(v)) {
        return Err(format!("`{name}` does not start with a read verb (read, search, list, get, view, find)"));
    }
    Ok(())
}

/// Split an ASCII identifier into words at `_` and `-`, lower-to-upper case
/// changes (`getOrCreate`), the end of an acronym (`HTTPRequest`), and
/// letter/digit changes (`list2delete`).
fn words(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for i in 0..b.len() {
        let c = b[i];
        if c == b'_' || c == b'-' {
            if let Some(st) = start.take() {
                out.push(&s[st..i]);
            }
            continue;
        }
        match start {
            None => start = Some(i),
            Some(st) => {
                let p = b[i - 1];
                let boundary = (p.is_ascii_lowercase() && c.is_ascii_uppercase())
                    || (p.is_ascii_digit() != c.is_ascii_digit())
                    || (p.is_ascii_uppercase() && c.is_ascii_uppercase() && b.get(i + 1).is_some_and(u8::is_ascii_lowercase));
                if boundary {
                    out.push(&s[st..i]);
                    start = Some(i);
                }
            }
        }
    }
    if let Some(st) = start {
        out.push(&s[st..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_splitting() {
        assert_eq!(words("getOrCreate"), ["get", "Or", "Create"]);
        assert_eq!(words("list_and-delete"), ["list", "and", "delete"]);
        assert_eq!(words("HTTPRequestGet"), ["HTTP", "Request", "Get"]);
        assert_eq!(words("list2delete"), ["list", "2", "delete"]);
        assert_eq!(words("READ_FILE"), ["READ", "FILE"]);
        assert!(words("__").is_empty());
    }
}
