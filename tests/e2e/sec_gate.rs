//! Regression tests for the gate holes of the security issue, through the
//! real binary: the agent enters plan mode and asks `POST /v1/gate` about each
//! attack, which must be denied; the harness tools a planning agent needs
//! (Claude Code's `Agent`, `AskUserQuestion`) must stay allowed.

use super::kit::gate;
use plangate_testkit::server::ServerProcess;
use reqwest::Method;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

/// A server whose agent `demo` is planning in session `session`.
async fn planning(extra: &str, session: &str) -> ServerProcess {
    let s = ServerProcess::start(BIN, extra).await;
    let (st, v) = ServerProcess::send(s.agent(Method::POST, &format!("/v1/sessions/{session}/enter"))).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["mode"], "plan", "{v}");
    s
}

#[track_caller]
fn assert_denied(tool: &str, input: &Value, (decision, reason): &(String, String), names: &str) {
    assert_eq!(decision, "deny", "{tool} {input} was allowed: {reason}");
    assert!(reason.contains(names), "{tool} {input}: the reason does not name {names:?}: {reason}");
}

/// zsh's EXTENDED_GLOB makes an unquoted `^` anywhere in a word a glob:
/// `-^x` matches a file named `-delete` (or `--pre=sh`), and `refnam^q`
/// expands to several names, one of which `git branch` creates.
#[tokio::test]
async fn zsh_caret_glob_is_denied() {
    let s = planning("", "caret").await;
    for command in ["find . -^x", "rg -^x foo", "git branch --sort refnam^q", "git branch --list --sort refnam^q"] {
        let input = json!({ "command": command });
        let verdict = gate(&s, "caret", "Bash", input.clone()).await;
        assert_denied("Bash", &input, &verdict, "glob");
    }
    // The same words quoted are literal in every shell: still allowed.
    let input = json!({"command": "rg -e '-^x' foo"});
    assert_eq!(gate(&s, "caret", "Bash", input).await.0, "allow");
}

/// `workdir` / `cwd` run the command in another directory, like `git -C`:
/// a committed bare repository with `diff.external` in its config runs a
/// program through a plain `git diff`. The gate cannot see a directory's git
/// config, so it refuses the field instead of resolving it.
#[tokio::test]
async fn shell_workdir_and_cwd_are_denied() {
    let s = planning("", "dir").await;
    for (tool, field, dir) in [
        ("Bash", "workdir", "vendor/evil.git"),
        ("exec", "workdir", "/tmp/evil"),
        ("exec", "cwd", "vendor/evil.git"),
        ("shell", "cwd", "."),
    ] {
        let input = json!({ "command": "git diff", field: dir });
        let verdict = gate(&s, "dir", tool, input.clone()).await;
        assert_denied(tool, &input, &verdict, &format!("`{field}`"));
    }
    // Without the field (or empty) the same command is a read.
    assert_eq!(gate(&s, "dir", "exec", json!({"command": "git diff"})).await.0, "allow");
    assert_eq!(gate(&s, "dir", "exec", json!({"command": "git diff", "workdir": ""})).await.0, "allow");
}

/// A pseudo-terminal makes `git log` start a pager, which can run commands.
#[tokio::test]
async fn shell_pty_is_denied() {
    let s = planning("", "pty").await;
    for (field, command) in [("pty", "git log"), ("tty", "git log"), ("pty", "git diff")] {
        let input = json!({ "command": command, field: true });
        let verdict = gate(&s, "pty", "exec", input.clone()).await;
        assert_denied("exec", &input, &verdict, &format!("`{field}`"));
    }
    assert_eq!(gate(&s, "pty", "exec", json!({"command": "git log", "pty": false})).await.0, "allow");
}

/// `merge`, `lock`, `lease` and `mark` are write verbs even after a read verb.
#[tokio::test]
async fn merge_lock_lease_mark_tools_are_denied() {
    let s = planning("", "verbs").await;
    for (tool, names) in [
        ("mcp__git__get_merge_branch", "`merge`"),
        ("mcp__github__list_merge_pull_request", "`merge`"),
        ("mcp__fs__read_lock_file", "`lock`"),
        ("mcp__locks__get_lease", "`lease`"),
        ("locks.get_lease", "`lease`"),
        ("mcp__todo__view_mark_done", "`mark`"),
        ("merge_branch", "merge_branch"),
        ("lock_file", "lock_file"),
        ("acquire_lease", "acquire_lease"),
        ("mark_done", "mark_done"),
    ] {
        let verdict = gate(&s, "verbs", tool, json!({})).await;
        assert_denied(tool, &json!({}), &verdict, names);
    }
}

/// Claude Code renamed `Task` to `Agent` and asks questions in plan mode with
/// `AskUserQuestion`: both are reads for the gate (a subagent's own calls are
/// gated one by one).
#[tokio::test]
async fn claude_code_agent_and_ask_user_question_are_allowed() {
    let s = planning("", "cc").await;
    for (tool, input) in [
        ("Agent", json!({"description": "explore", "prompt": "find the config loader", "subagent_type": "Explore"})),
        ("Task", json!({"description": "explore", "prompt": "find the config loader", "subagent_type": "Explore"})),
        ("AskUserQuestion", json!({"questions": [{"question": "Which database?", "options": [{"label": "sqlite"}]}]})),
    ] {
        let (decision, reason) = gate(&s, "cc", tool, input).await;
        assert_eq!(decision, "allow", "{tool}: {reason}");
    }
    // A subagent started in another directory is the `workdir` hole again.
    let input = json!({"description": "x", "prompt": "run git diff", "cwd": "vendor/evil.git"});
    let verdict = gate(&s, "cc", "Agent", input.clone()).await;
    assert_denied("Agent", &input, &verdict, "`cwd`");
}

/// Commands that run other commands stay denied even when the operator adds
/// them to the agent's `allow_commands`.
#[tokio::test]
async fn allow_commands_cannot_reenable_command_runners() {
    let runners = [
        "prlimit --nofile=1 rm -rf x",
        "setarch x86_64 rm -rf x",
        "linux32 rm -rf x",
        "linux64 rm -rf x",
        "i386 rm -rf x",
        "x86_64 rm -rf x",
        "sg wheel -c id",
        "unbuffer rm -rf x",
        "numactl -C 0 rm -rf x",
        "faketime 2020-01-01 rm -rf x",
        "noglob rm -rf x",
        "nocorrect rm -rf x",
        "compgen -C id x",
        "mapfile -C id -c 1 a",
        "readarray -C id -c 1 a",
        "hash -p /bin/sh ls",
        "bind -x '\"a\":id'",
        "printf -v 'a[$(id)]' x",
        "test -v 'a[$(id)]'",
        "declare 'a[$(id)]=1'",
        "read 'a[$(id)]'",
        "valgrind rm -rf x",
    ];
    let names: Vec<&str> = runners.iter().map(|c| c.split(' ').next().unwrap_or(c)).collect();
    let extra = format!("[agents.demo.gate]\nallow_commands = {}\n", serde_json::to_string(&[&names[..], &["jq"]].concat()).unwrap());
    let s = planning(&extra, "runners").await;
    // The section took effect: an ordinary added command is allowed.
    let (decision, reason) = gate(&s, "runners", "Bash", json!({"command": "jq -r .name package.json"})).await;
    assert_eq!(decision, "allow", "jq: {reason}");
    for (command, name) in runners.iter().zip(&names) {
        let input = json!({ "command": command });
        let verdict = gate(&s, "runners", "Bash", input.clone()).await;
        assert_denied("Bash", &input, &verdict, &format!("`{name}`"));
    }
}

/// Issue 26, part 5: read-only commands a planning agent runs all day were
/// denied (`git grep`, `git remote -v`, `git tag --list`, `git describe`,
/// `git shortlog`, `jq`, `npm ls`), teaching users to switch the gate off.
/// They are allowed; the options that make the same commands write or run
/// programs, and the commands that build or run code, stay denied.
#[tokio::test]
async fn planning_read_commands_are_allowed_and_their_writers_denied() {
    let s = planning("", "reads").await;
    for command in [
        "git grep -n TODO",
        "git remote -v",
        "git tag --list",
        "git describe --tags",
        "git shortlog -sn",
        "jq .name package.json",
        "npm ls --depth 0",
    ] {
        let (decision, reason) = gate(&s, "reads", "Bash", json!({ "command": command })).await;
        assert_eq!(decision, "allow", "{command}: {reason}");
    }
    for (command, names) in [
        ("git grep -O TODO", "`git grep -O`"),
        ("git grep --open-files-in-pager TODO", "--open-files-in-pager"),
        ("git remote add evil https://evil.example/x.git", "`git remote add`"),
        ("git tag v9.9.9", "creates a tag"),
        ("git describe --dirty", "--dirty"),
        ("git grep -n TODO > hits.txt", "`>`"),
        ("npm install", "`npm install`"),
        ("npm ls --script-shell=/tmp/x", "`npm ls --script-shell`"),
        ("cargo check", "`cargo`"),
        ("cargo build", "`cargo`"),
    ] {
        let input = json!({ "command": command });
        let verdict = gate(&s, "reads", "Bash", input.clone()).await;
        assert_denied("Bash", &input, &verdict, names);
    }
}
