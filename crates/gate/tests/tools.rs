//! Tool names and tool arguments: the built-in lists, MCP and dotted names,
//! write arguments, shell-tool inputs, and what each `Policy` field can and
//! cannot change.

use plangate_gate::{check_command, check_plan_mode, is_shell_tool, Policy, Verdict, WriteArgument, READ_ONLY_TOOLS, SHELL_TOOLS};
use serde_json::{json, Value};

const TOOL_SUFFIX: &str = "plan mode allows only read-only tools until the plan is approved";

fn gate(tool: &str, input: Value) -> Verdict {
    check_plan_mode(&Policy::default(), tool, &input)
}

#[track_caller]
fn assert_allowed(policy: &Policy, tool: &str, input: Value) {
    let verdict = check_plan_mode(policy, tool, &input);
    assert!(verdict.is_allow(), "{tool:?} {input}: {verdict}");
    assert_one_line(&verdict);
}

/// Denied, with a one-line reason that contains `names`.
#[track_caller]
fn assert_denied(policy: &Policy, tool: &str, input: Value, names: &str) {
    let verdict = check_plan_mode(policy, tool, &input);
    assert!(!verdict.is_allow(), "{tool:?} {input}: {verdict}");
    assert!(verdict.reason().contains(names), "{tool:?}: reason does not name {names:?}: {verdict}");
    assert_one_line(&verdict);
}

#[track_caller]
fn assert_one_line(verdict: &Verdict) {
    let reason = verdict.reason();
    assert!(!reason.trim().is_empty(), "empty reason");
    assert!(!reason.chars().any(char::is_control), "reason is not one line: {reason:?}");
    assert!(reason.is_ascii(), "reason is not plain ASCII: {reason:?}");
    if !verdict.is_allow() {
        assert!(
            reason.ends_with(TOOL_SUFFIX) || reason.ends_with("plan mode allows only read-only commands until the plan is approved"),
            "reason does not say what plan mode allows: {reason:?}"
        );
    }
}

fn policy(f: impl FnOnce(&mut Policy)) -> Policy {
    let mut p = Policy::default();
    f(&mut p);
    p
}

#[test]
fn issue_read_only_tools_are_allowed() {
    let openclaw = [
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
    ];
    let claude = [
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
    ];
    for tool in openclaw.into_iter().chain(claude) {
        assert!(READ_ONLY_TOOLS.contains(&tool), "{tool} missing from READ_ONLY_TOOLS");
        assert_allowed(&Policy::default(), tool, json!({"path": "src/lib.rs"}));
        assert!(gate(tool, json!({})).reason().contains(tool));
    }
    for tool in READ_ONLY_TOOLS {
        assert_allowed(&Policy::default(), tool, json!({}));
    }
}

/// How the gate classifies every tool name of the harnesses it serves, so a
/// rename upstream shows up here and not as a silently denied (or allowed)
/// tool.
///
/// Claude Code: the tool table of <https://code.claude.com/docs/en/tools-reference>
/// (Claude Code 2.1.x; checked on 2026-12-01 against the page as then
/// published, with `Agent` in place of `Task` and `AskUserQuestion` listed),
/// plus names older versions used (`Task`, `LS`, `NotebookRead`,
/// `MultiEdit`, `KillShell`, `BashOutput`). Codex (CLI 0.124+, checked the
/// same day): its function tools (`shell`, `apply_patch`, `update_plan`,
/// `exec_command`, `write_stdin`, `view_image`, `web_search`) and the names
/// its PreToolUse hook reports (`Bash`, `apply_patch`, `spawn_agent`,
/// `mcp__<server>__<tool>`; `codex-rs/core/src/tools/hook_names.rs`, checked
/// again for Codex 0.133).
/// Everything not listed as read or shell is denied, most of it as an
/// unknown tool.
#[test]
fn harness_tool_names_the_gate_knows() {
    #[derive(Debug, PartialEq)]
    enum Kind {
        /// Allowed in plan mode.
        Read,
        /// A shell tool: allowed only for a read-only command.
        Shell,
        /// Denied in plan mode (writes, runs something, or is not known to
        /// be read-only).
        Deny,
    }
    use Kind::*;
    let claude_code = [
        ("Agent", Read),
        ("Artifact", Deny),
        ("AskUserQuestion", Read),
        ("Bash", Shell),
        ("CronCreate", Deny),
        ("CronDelete", Deny),
        ("CronList", Read),
        ("Edit", Deny),
        ("EnterPlanMode", Read),
        ("EnterWorktree", Deny),
        ("ExitPlanMode", Read),
        ("ExitWorktree", Deny),
        ("Glob", Read),
        ("Grep", Read),
        ("ListMcpResourcesTool", Deny),
        ("LSP", Deny),
        ("Monitor", Deny),
        ("NotebookEdit", Deny),
        ("PowerShell", Deny),
        ("Read", Read),
        ("ReadMcpResourceTool", Deny),
        ("SendMessage", Deny),
        ("Skill", Deny),
        ("TaskCreate", Deny),
        ("TaskGet", Deny),
        ("TaskList", Deny),
        ("TaskOutput", Deny),
        ("TaskStop", Deny),
        ("TaskUpdate", Deny),
        ("TeamCreate", Deny),
        ("TeamDelete", Deny),
        ("TodoWrite", Read),
        ("ToolSearch", Read),
        ("WebFetch", Read),
        ("WebSearch", Read),
        ("Write", Deny),
        // Claude Code 2.1.328, seen in its tools list (docs/AGENTS.md).
        ("ListAgents", Read),
        ("ReportFindings", Read),
        ("ScheduleWakeup", Deny),
        ("Workflow", Deny),
        ("DeferredToolPlaceholder", Deny),
        // Older names.
        ("Task", Read),
        ("LS", Read),
        ("NotebookRead", Read),
        ("MultiEdit", Deny),
        ("KillShell", Deny),
        ("BashOutput", Deny),
    ];
    let codex = [
        ("shell", Shell),
        ("Bash", Shell),
        ("apply_patch", Deny),
        ("update_plan", Read),
        ("exec_command", Deny),
        ("write_stdin", Deny),
        ("view_image", Deny),
        ("web_search", Read),
        ("spawn_agent", Deny),
    ];
    for (tool, kind) in claude_code.into_iter().chain(codex) {
        let known = if is_shell_tool(tool) {
            Shell
        } else if READ_ONLY_TOOLS.contains(&tool) {
            Read
        } else {
            Deny
        };
        assert_eq!(known, kind, "{tool}");
        let input = if kind == Shell { json!({"command": "ls"}) } else { json!({}) };
        assert_eq!(gate(tool, input).is_allow(), kind != Deny, "{tool}");
    }
}

/// A subagent in another directory or a new worktree is not a read.
#[test]
fn agent_in_another_directory_or_worktree_is_denied() {
    for tool in ["Agent", "Task"] {
        assert_allowed(&Policy::default(), tool, json!({"description": "d", "prompt": "p", "subagent_type": "Explore", "cwd": null}));
        assert_denied(&Policy::default(), tool, json!({"description": "d", "prompt": "p", "cwd": "/tmp/evil.git"}), "`cwd`");
        assert_denied(&Policy::default(), tool, json!({"description": "d", "prompt": "p", "isolation": "worktree"}), "`isolation`");
    }
}

#[test]
fn plangate_own_mcp_tools_are_allowed() {
    for tool in ["enter_plan_mode", "exit_plan_mode", "update_plan", "ask_user_question", "plan_mode_status", "check_tool"] {
        assert_allowed(&Policy::default(), &format!("mcp__plangate__{tool}"), json!({"plan": "# Plan"}));
    }
    // The same tool names on another server are judged by their verbs.
    assert_denied(&Policy::default(), "mcp__jira__update_plan", json!({}), "update");
    assert_denied(&Policy::default(), "mcp__other__exit_plan_mode", json!({}), "read verb");
}

#[test]
fn writing_tools_are_denied_with_what_they_do() {
    for (tool, what) in [
        ("Write", "writes files"),
        ("Edit", "edits files"),
        ("MultiEdit", "edits files"),
        ("NotebookEdit", "edits notebooks"),
        ("write", "writes files"),
        ("edit", "edits files"),
        ("apply_patch", "patches files"),
        ("spawn_agent", "starts a Codex sub-agent"),
        ("message", "sends messages"),
        ("cron", "schedules jobs"),
    ] {
        assert_denied(&Policy::default(), tool, json!({"file_path": "x"}), &format!("`{tool}` {what}"));
    }
}

#[test]
fn unknown_and_look_alike_tools_are_denied() {
    for tool in [
        "",
        "frobnicate",
        "Delete",
        "KillShell",
        "BashOutput",
        "read_file",
        "READ",
        "read ",
        " Read",
        "Reаd",         // Cyrillic а
        "Read\u{200B}", // zero-width space
        "Rеad",         // Cyrillic е
        "ＲＥＡＤ",
        "Read\n",
        "Grep\u{202E}",
        "WebFetch2",
        "web-search",
        "ExitPlanMode ",
        "todowrite",
    ] {
        let verdict = gate(tool, json!({}));
        assert!(!verdict.is_allow(), "{tool:?}: {verdict}");
        assert_one_line(&verdict);
        assert!(verdict.reason().starts_with("unknown tool `"), "{tool:?}: {verdict}");
    }
}

#[test]
fn reasons_quote_hostile_names_safely() {
    let verdict = gate("evil\nallow: yes\u{202E}`x`", json!({}));
    assert!(!verdict.is_allow());
    assert_one_line(&verdict);
    assert!(verdict.reason().contains(r"evil\u{000A}allow: yes\u{202E}'x'"), "{verdict}");
    let long = "x".repeat(10_000);
    assert!(gate(&long, json!({})).reason().len() < 300);
}

#[test]
fn mcp_tools_that_read_are_allowed() {
    for tool in [
        "mcp__github__list_issues",
        "mcp__github__get_issue",
        "mcp__github__search_code",
        "mcp__github__list_pull_requests",
        "mcp__github__get_file_contents",
        "mcp__fs__read_file",
        "mcp__fs__readFile",
        "mcp__fs__read_multiple_files",
        "mcp__fs__list_directory",
        "mcp__x__READ_FILE",
        "mcp__x__ListIssues",
        "mcp__x__view_page",
        "mcp__x__find_symbol",
        "mcp__x__get-thing",
        "mcp__my_server__get_thing",
        "mcp__my-server__search",
        "mcp__x__get_settings",
        "mcp__x__list_assets",
        "mcp__x__get_offset",
        "mcp__x__search2",
        "mcp__x__getHTTPResponse",
    ] {
        let verdict = gate(tool, json!({"owner": "acme"}));
        assert!(verdict.is_allow(), "{tool}: {verdict}");
        assert!(verdict.reason().contains(tool));
    }
}

#[test]
fn mcp_tools_that_may_write_are_denied() {
    for (tool, names) in [
        ("mcp__github__create_issue", "write verb `create`"),
        ("mcp__github__update_issue", "write verb `update`"),
        ("mcp__fs__write_file", "write verb `write`"),
        ("mcp__fs__delete_file", "write verb `delete`"),
        ("mcp__fs__move_file", "write verb `move`"),
        ("mcp__db__run_query", "write verb `run`"),
        ("mcp__db__exec", "write verb `exec`"),
        ("mcp__slack__send_message", "write verb `send`"),
        ("mcp__http__post", "write verb `post`"),
        ("mcp__kv__set", "write verb `set`"),
        ("mcp__kv__put_item", "write verb `put`"),
        ("mcp__fs__remove", "write verb `remove`"),
        ("mcp__fs__edit_file", "write verb `edit`"),
        ("mcp__git__get_merge_branch", "write verb `merge`"),
        ("mcp__gitlab__list_merge", "write verb `merge`"),
        ("mcp__fs__read_lock_file", "write verb `lock`"),
        ("mcp__fs__getLock", "write verb `lock`"),
        ("mcp__locks__get_lease", "write verb `lease`"),
        ("locks.get_lease", "write verb `lease`"),
        ("mcp__locks__get_and_acquire", "`and`"),
        ("mcp__locks__find_acquire_slot", "write verb `acquire`"),
        ("mcp__todo__view_mark_done", "write verb `mark`"),
        ("mcp__x__get_renew_token", "write verb `renew`"),
        ("mcp__q__read_dequeue", "write verb `dequeue`"),
        // A read verb first does not excuse a write verb later.
        ("mcp__x__list_and_delete", "`and`"),
        ("mcp__x__get_or_create", "`or`"),
        ("mcp__x__getOrCreate", "`or`"),
        ("mcp__x__GetOrCreate", "`or`"),
        ("mcp__x__get-or-create", "`or`"),
        ("mcp__x__readThenWrite", "`then`"),
        ("mcp__x__read_write", "write verb `write`"),
        ("mcp__x__searchAndReplace", "`and`"),
        ("mcp__x__search_replace", "write verb `replace`"),
        ("mcp__x__list2delete", "write verb `delete`"),
        ("mcp__x__getItemsSet", "write verb `set`"),
        ("mcp__x__LIST_DELETE", "write verb `delete`"),
        ("mcp__x__list_Delete", "write verb `delete`"),
        // Unseparated names: stems inside a word.
        ("mcp__x__getORCREATE", "`creat`"),
        ("mcp__x__get_itemorcreate", "`creat`"),
        ("mcp__x__list_deleted", "`delet`"),
        ("mcp__x__readwrite", "`writ`"),
        ("mcp__x__getorcreate", "`creat`"),
        // No read verb first.
        ("mcp__x__query", "does not start with a read verb"),
        ("mcp__x__fetch_page", "does not start with a read verb"),
        ("mcp__x__listissues", "does not start with a read verb"),
        ("mcp__x__issues_list", "does not start with a read verb"),
        ("mcp__x__exit_plan_mode", "does not start with a read verb"),
    ] {
        assert_denied(&Policy::default(), tool, json!({}), names);
        assert!(gate(tool, json!({})).reason().contains(tool), "{tool}");
    }
}

#[test]
fn malformed_mcp_names_are_denied() {
    for tool in [
        "mcp__",
        "mcp____read",
        "mcp__x__",
        "mcp__x",
        "mcp__x__read__write",
        "mcp__x___read",
        "mcp__x__read_",
        "mcp___x__read",
        "mcp__x__read file",
        "mcp__x__read.file",
        "mcp__x__rеad",
        "mcp__x__read\u{200B}",
        "mcp__x__read\n",
    ] {
        assert_denied(&Policy::default(), tool, json!({}), "well-formed");
    }
    // Other spellings of the prefix are not MCP names at all.
    for tool in ["MCP__x__read", "mcp_x_read", "mcp-x-read"] {
        assert_denied(&Policy::default(), tool, json!({}), "unknown tool");
    }
}

#[test]
fn dotted_tools() {
    for tool in ["github.list_issues", "fs.read", "fs.readFile", "kb.search", "docs.get", "x.view", "code.find_references"] {
        assert_allowed(&Policy::default(), tool, json!({}));
    }
    for (tool, names) in [
        ("fs.write", "write verb `write`"),
        ("fs.edit", "write verb `edit`"),
        ("fs.delete", "write verb `delete`"),
        ("x.Write", "write verb `write`"),
        ("fs.read_and_write", "`and`"),
        ("x.readOrDelete", "`or`"),
        ("cron.add", "write verb `add`"),
        ("x.status", "does not start with a read verb"),
        ("a.b.c", "well-formed"),
        (".read", "well-formed"),
        ("x.", "well-formed"),
        ("x..read", "well-formed"),
        ("x.read ", "well-formed"),
        ("x y.read", "well-formed"),
        ("fs.rеad", "well-formed"),
    ] {
        assert_denied(&Policy::default(), tool, json!({}), names);
    }
}

#[test]
fn write_arguments_make_a_read_a_write() {
    assert_allowed(&Policy::default(), "session_status", json!({}));
    assert_allowed(&Policy::default(), "session_status", json!({"session": "main"}));
    assert_allowed(&Policy::default(), "session_status", json!({"model": null}));
    assert_denied(&Policy::default(), "session_status", json!({"model": "opus"}), "`model`");
    assert_denied(&Policy::default(), "session_status", json!({"model": ""}), "`model`");
    assert_denied(&Policy::default(), "session_status", json!({"model": false}), "`model`");

    let p = policy(|p| {
        p.write_arguments = vec![
            WriteArgument { tool: "memory_get".into(), argument: "store".into() },
            WriteArgument { tool: "mcp__github__get_issue".into(), argument: "state".into() },
            WriteArgument { tool: "frobnicate".into(), argument: "commit".into() },
        ];
        p.allow_tools = vec!["frobnicate".into()];
    });
    assert_allowed(&p, "memory_get", json!({"key": "x"}));
    assert_denied(&p, "memory_get", json!({"key": "x", "store": "y"}), "`store`");
    assert_allowed(&p, "mcp__github__get_issue", json!({"number": 1}));
    assert_denied(&p, "mcp__github__get_issue", json!({"number": 1, "state": "closed"}), "`state`");
    // allow_tools does not excuse a write argument.
    assert_allowed(&p, "frobnicate", json!({}));
    assert_denied(&p, "frobnicate", json!({"commit": true}), "`commit`");
    // Names match exactly: another tool's argument of the same name is fine.
    assert_allowed(&p, "memory_search", json!({"store": "y"}));
    // The built-in pair stays on with a policy that adds others.
    assert_denied(&p, "session_status", json!({"model": "x"}), "`model`");
}

#[test]
fn allow_tools_adds_exact_names_only() {
    let p = policy(|p| p.allow_tools = vec!["frobnicate".into(), "Bash".into(), "exec".into()]);
    assert_allowed(&p, "frobnicate", json!({}));
    assert_denied(&p, "Frobnicate", json!({}), "unknown tool");
    assert_denied(&p, "frobnicate ", json!({}), "unknown tool");
    // Shell tools stay checked command by command.
    assert_allowed(&p, "Bash", json!({"command": "ls"}));
    assert_denied(&p, "Bash", json!({"command": "rm -rf x"}), "`rm`");
    assert_denied(&p, "exec", json!({"command": "ls; rm x"}), "`;`");
}

#[test]
fn deny_tools_wins_over_everything() {
    let p = policy(|p| {
        p.deny_tools = vec!["Read".into(), "Bash".into(), "mcp__github__list_issues".into(), "frobnicate".into()];
        p.allow_tools = vec!["frobnicate".into()];
        p.allow_commands = vec!["ls".into()];
    });
    for tool in ["Read", "mcp__github__list_issues", "frobnicate"] {
        assert_denied(&p, tool, json!({}), "deny_tools");
    }
    assert_denied(&p, "Bash", json!({"command": "ls"}), "deny_tools");
    assert_allowed(&p, "bash", json!({"command": "ls"}));
    assert_allowed(&p, "Grep", json!({"pattern": "x"}));
}

#[test]
fn allow_commands_never_reenables_operators() {
    let p = policy(|p| p.allow_commands = vec!["make".into(), "jq".into(), "cargo".into()]);
    assert_allowed(&p, "Bash", json!({"command": "make test"}));
    assert_allowed(&p, "Bash", json!({"command": "jq -r '.name' package.json"}));
    assert_allowed(&p, "Bash", json!({"command": "cargo tree --depth 1"}));
    for (command, names) in [
        ("make; rm -rf x", "`;`"),
        ("make && rm -rf x", "`&&`"),
        ("make | sh", "`|`"),
        ("jq . f > out", "`>`"),
        ("make $(rm x)", "`$(...)`"),
        ("make `rm x`", "backtick"),
        ("FOO=1 make", "`FOO=1`"),
        ("/tmp/make", "`/tmp/make`"),
        ("./make", "`./make`"),
        ("make\nrm x", "newline"),
        ("'make'", "quoted"),
        ("make\u{FF1B}rm x", "U+FF1B"),
        ("env make", "`env`"),
        ("rm -rf x", "`rm`"),
        ("cargo build <(x)", "`<(...)`"),
    ] {
        assert_denied(&p, "Bash", json!({ "command": command }), names);
    }
}

#[test]
fn allow_commands_cannot_add_runners_or_loosen_listed_commands() {
    let p = policy(|p| {
        p.allow_commands =
            ["bash", "sh", "env", "xargs", "eval", "awk", "python3", "less", "sudo", "if", "sed", "git", "find", "rg", "sort"]
                .map(String::from)
                .to_vec()
    });
    for (command, names) in [
        ("bash -c ls", "`bash`"),
        ("sh x.sh", "`sh`"),
        ("env ls", "`env`"),
        ("xargs ls", "`xargs`"),
        ("eval ls", "`eval`"),
        ("awk 1 f", "`awk`"),
        ("python3 x.py", "`python3`"),
        ("less f", "`less`"),
        ("sudo ls", "`sudo`"),
        ("if true", "`if`"),
        ("sed -i s/a/b/ f", "`sed -i`"),
        ("git push", "`git push`"),
        ("find . -delete", "`find -delete`"),
        ("rg --pre=sh x", "`rg --pre`"),
        ("sort -o x f", "`sort -o`"),
    ] {
        assert_denied(&p, "Bash", json!({ "command": command }), names);
        assert!(!check_command(&p, command).is_allow(), "{command}");
    }
}

/// Programs and builtins that run another command, or evaluate an array
/// subscript (which runs `$(...)`), stay denied whatever the operator adds.
#[test]
fn allow_commands_cannot_add_command_runners() {
    let cases = [
        "prlimit --nofile=1 rm -rf x",
        "setarch x86_64 rm -rf x",
        "linux32 rm -rf x",
        "linux64 rm -rf x",
        "i386 rm -rf x",
        "x86_64 rm -rf x",
        "aarch64 rm -rf x",
        "uname26 rm -rf x",
        "sg wheel -c id",
        "newgrp wheel",
        "unbuffer rm -rf x",
        "numactl -C 0 rm -rf x",
        "faketime 2020-01-01 rm -rf x",
        "noglob rm -rf x",
        "nocorrect rm -rf x",
        "emulate sh -c id",
        "compgen -C id x",
        "compgen -F f x",
        "complete -C id x",
        "mapfile -C id -c 1 a",
        "readarray -C id -c 1 a",
        "hash -p /bin/sh ls",
        "bind -x '\"a\":id'",
        "printf -v 'a[$(id)]' x",
        "test -v 'a[$(id)]'",
        "declare 'a[$(id)]=1'",
        "typeset 'a[$(id)]=1'",
        "local 'a[$(id)]=1'",
        "export 'a[$(id)]=1'",
        "readonly 'a[$(id)]=1'",
        "unset 'a[$(id)]'",
        "read 'a[$(id)]'",
        "let 'a[$(id)]'",
        "getopts a 'a[$(id)]'",
        "wait -p 'a[$(id)]'",
        "chroot / rm -rf x",
        "taskset 1 rm -rf x",
        "ionice -c3 rm -rf x",
        "chrt 1 rm -rf x",
        "flock x rm -rf x",
        "setsid rm -rf x",
        "stdbuf -o0 rm -rf x",
        "timeout 5 rm -rf x",
        "nohup rm -rf x",
        "xargs rm",
        "parallel rm ::: x",
        "watch rm -rf x",
        "script -c id",
        "strace rm -rf x",
        "ltrace rm -rf x",
        "gdb -ex run rm",
        "valgrind rm -rf x",
        "firejail rm -rf x",
        "bwrap rm -rf x",
        "unshare rm -rf x",
        "nsenter rm -rf x",
        "runuser -u x rm",
        "su -c id",
        "sudo rm -rf x",
        "doas rm -rf x",
        "env rm -rf x",
        "setpriv rm -rf x",
        "systemd-run rm -rf x",
        "cpulimit -l 5 rm",
        "eatmydata rm -rf x",
        "torsocks curl x",
        "entr rm",
        "tmux new rm",
        "at now",
        "fd -x rm",
        "bat --paging=always --pager=id x",
        "python3.12 -c 'import os'",
        "perl5.36 -e 1",
        "bash5 -c id",
        "lua5.4 -e 1",
        "node18 -e 1",
        "sqlite3 x '.shell id'",
        "m4 x",
        "dc -e '!id'",
        "print -v 'a[$(id)]' x",
    ];
    let names: Vec<String> = cases.iter().map(|c| c.split(' ').next().unwrap_or(c).to_string()).collect();
    let p = policy(|p| p.allow_commands = names.clone());
    for (command, name) in cases.iter().zip(&names) {
        assert_denied(&p, "Bash", json!({ "command": command }), &format!("`{name}`"));
    }
    // The policy is in force: an ordinary added command runs.
    let p = policy(|p| p.allow_commands = [names.clone(), vec!["jq".into()]].concat());
    assert_allowed(&p, "Bash", json!({"command": "jq -r .name package.json"}));
}

#[test]
fn shell_tools_read_command_or_cmd() {
    assert_eq!(SHELL_TOOLS, ["exec", "bash", "Bash", "shell", "terminal"]);
    for tool in SHELL_TOOLS {
        assert!(is_shell_tool(tool));
        assert_allowed(&Policy::default(), tool, json!({"command": "ls -la"}));
        assert_allowed(&Policy::default(), tool, json!({"cmd": "ls -la"}));
        assert_allowed(&Policy::default(), tool, json!({"command": "ls", "cmd": "ls"}));
        assert_denied(&Policy::default(), tool, json!({"command": "rm x"}), "`rm`");
        assert_denied(&Policy::default(), tool, json!({"cmd": "rm x"}), "`rm`");
    }
    assert!(!is_shell_tool("BASH"));
    assert_denied(&Policy::default(), "BASH", json!({"command": "ls"}), "unknown tool");
}

#[test]
fn malformed_shell_inputs_are_denied() {
    for (input, names) in [
        (json!({}), "without a `command` string"),
        (json!(null), "without an input object"),
        (json!("ls"), "without an input object"),
        (json!(["ls"]), "without an input object"),
        (json!({"command": null}), "not a string"),
        (json!({"command": 1}), "not a string"),
        (json!({"command": ["bash", "-lc", "ls"]}), "not a string"),
        (json!({"command": {"cmd": "ls"}}), "not a string"),
        (json!({"cmd": true}), "not a string"),
        (json!({"command": "ls", "cmd": "rm -rf x"}), "differ"),
        (json!({"command": "ls", "cmd": 1}), "differ"),
        (json!({"Command": "rm -rf x"}), "without a `command` string"),
    ] {
        assert_denied(&Policy::default(), "Bash", input, names);
    }
}

#[test]
fn shell_input_fields_that_change_the_command_are_denied() {
    let ok = json!({
        "command": "ls", "description": "list", "timeout": 1000, "workdir": "",
        "cwd": null, "run_in_background": false, "yieldMs": 10, "pty": false, "tty": null,
    });
    assert_allowed(&Policy::default(), "exec", ok);
    // A directory acts like `git -C` (its git config runs programs), a
    // terminal starts a pager.
    for (field, value, names) in [
        ("workdir", json!("src"), "another directory"),
        ("workdir", json!("/tmp/evil.git"), "another directory"),
        ("cwd", json!("."), "another directory"),
        ("cwd", json!(["x"]), "another directory"),
        ("workdir", json!(false), "another directory"),
        ("pty", json!(true), "pager"),
        ("tty", json!(true), "pager"),
        ("pty", json!(1), "pager"),
        ("pty", json!("yes"), "pager"),
    ] {
        for tool in ["exec", "Bash", "shell"] {
            let mut input = json!({"command": "git diff"});
            input[field] = value.clone();
            assert_denied(&Policy::default(), tool, input, &format!("`{field}`"));
            let mut input = json!({"command": "git log"});
            input[field] = value.clone();
            assert_denied(&Policy::default(), tool, input, names);
        }
    }
    assert_allowed(&Policy::default(), "Bash", json!({"command": "ls", "dangerouslyDisableSandbox": false, "env": null}));
    for (field, value) in [
        ("dangerouslyDisableSandbox", json!(true)),
        ("env", json!({"PAGER": "sh -c id"})),
        ("elevated", json!(true)),
        ("host", json!("prod")),
        ("security", json!("full")),
        ("Command", json!("rm -rf x")),
        ("stdin", json!("rm -rf x")),
    ] {
        let mut input = json!({"command": "ls"});
        input[field] = value;
        assert_denied(&Policy::default(), "exec", input, &format!("`{field}`"));
    }
}

#[test]
fn policy_deserializes_from_config_shape() {
    let p: Policy = serde_json::from_value(json!({
        "allow_tools": ["frobnicate"],
        "deny_tools": ["WebFetch"],
        "allow_commands": ["make"],
        "write_arguments": [{"tool": "memory_get", "argument": "store"}],
    }))
    .expect("policy");
    assert_eq!(p.allow_tools, ["frobnicate"]);
    assert_eq!(p.write_arguments, [WriteArgument { tool: "memory_get".into(), argument: "store".into() }]);
    // Every field is optional; the empty policy is the default one.
    let empty: Policy = serde_json::from_value(json!({})).expect("empty");
    assert_eq!(empty, Policy::default());
    // A typo is an error, not a silently ignored (and so missing) rule.
    assert!(serde_json::from_value::<Policy>(json!({"deny_tool": ["Read"]})).is_err());
    assert!(serde_json::from_value::<Policy>(json!({"write_arguments": [{"tool": "x"}]})).is_err());
    assert!(serde_json::from_value::<Policy>(json!({"write_arguments": [{"tool": "x", "argument": "y", "z": 1}]})).is_err());
}

#[test]
fn verdict_helpers() {
    let allow = gate("Read", json!({}));
    assert!(allow.is_allow());
    assert_eq!(allow.to_string(), format!("allow: {}", allow.reason()));
    let deny = gate("Write", json!({}));
    assert_eq!(deny.to_string(), format!("deny: {}", deny.reason()));
    assert!(matches!(deny, Verdict::Deny(_)));
}
