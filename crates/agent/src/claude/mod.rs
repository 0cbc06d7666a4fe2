//! Claude Code: the `plangate hook claude` command hook and its installer.
//!
//! Claude Code runs the hook once per event, with the event as JSON on stdin,
//! and reads the answer from stdout (field names checked against Claude
//! Code's hooks reference, "PreToolUse decision control" and
//! "PermissionRequest decision control"):
//!
//! * `PreToolUse` of any tool: plangate's mutation gate (`POST /v1/gate`).
//!   A deny is `hookSpecificOutput.permissionDecision = "deny"` with
//!   `permissionDecisionReason`. An allow is *no output at all*: answering
//!   `"allow"` would skip the user's own permission prompt and rules.
//! * `ExitPlanMode` (through `PreToolUse`, or `PermissionRequest`, whose
//!   answer is `hookSpecificOutput.decision.behavior`): Claude's plan becomes
//!   a proposal and the hook waits for a human's decision; see [`hook`].
//! * Subagent runs from the subagent tool's `PreToolUse` / `PostToolUse` /
//!   `PostToolUseFailure` and `SubagentStart` / `SubagentStop`; the plan's
//!   open steps on `SessionStart` (after a compaction, on resume); an untaken
//!   decision on `UserPromptSubmit`. See [`hook`].
//!
//! [`install`] merges the hook entries into `settings.json`: the gate's two
//! with [`hook_command`] (fail closed), the others with [`observe_command`].

pub mod binding;
pub mod channel;
pub mod gitignore;
pub mod hook;
pub mod install;
pub mod mcp_servers;
pub mod plan_file;

pub use hook::{answer, run, Answer, Event};

use std::path::Path;

/// The command older installers wrote: it depends on `PATH`, and a `plangate`
/// that is not found exits 127, which Claude Code treats as a non-blocking
/// error, so the tool runs. Still recognised, so re-installing replaces it.
pub const LEGACY_HOOK_COMMAND: &str = "plangate hook claude";

/// The harness's name in the installed command (`plangate-hook claude`,
/// `plangate hook claude`).
pub const HARNESS: &str = "claude";

pub use crate::hook_command::shell_quote;

/// The command the installer writes for the `plangate` binary at `exe`
/// (absolute): `'/abs/plangate-hook' claude || exit 2` when the hook-only
/// binary sits beside it, else `'/abs/plangate' hook claude || exit 2`
/// ([`crate::hook_command::command_for`] says why).
///
/// Claude Code runs a `command` hook through a shell and blocks the tool
/// only on a JSON deny (exit 0) or on exit code 2; every other exit code —
/// 127 for a binary that is not there, 126 when it cannot run, 101 for a
/// panic, 1, a kill by a signal — is a "non-blocking error" and the tool
/// runs. (Claude Code hooks reference, code.claude.com/docs/en/hooks, "Exit
/// code output": "Exit code 2: Blocking error … Other exit codes:
/// Non-blocking error"; checked against Claude Code 2.1.x.) So the binary is
/// named by its absolute path, shell-quoted, and any non-zero exit becomes 2;
/// the shell's own message (e.g. "not found") goes to stderr, which Claude
/// Code shows Claude as the reason. See [`crate::hook_command`].
pub fn hook_command(exe: &Path) -> Result<String, String> {
    crate::hook_command::command_for(exe, HARNESS, true)
}

/// Whether `command` is a plangate hook command: the legacy bare one,
/// `<quoted path to a binary named plangate> hook claude [|| exit 2]`, or
/// `<quoted path to plangate-hook> claude [|| exit 2]`.
pub fn is_hook_command(command: &str) -> bool {
    command.trim() == LEGACY_HOOK_COMMAND || crate::hook_command::is_command_for(command, HARNESS)
}

/// The command of the events that gate nothing (subagent runs, hydration,
/// the next prompt): `'/abs/plangate-hook' claude` or `'/abs/plangate' hook
/// claude` (as [`hook_command`]), without `|| exit 2`. For
/// them a failure must never block: exit 2 on `UserPromptSubmit` erases the
/// user's prompt, on `SubagentStop` keeps the subagent running, and any
/// other code is a non-blocking error, which is what a failure there is.
pub fn observe_command(exe: &Path) -> Result<String, String> {
    crate::hook_command::command_for(exe, HARNESS, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_names_the_quoted_binary_and_fails_closed() {
        let cmd = hook_command(Path::new("/opt/my tools/it's/plangate")).unwrap_or_default();
        assert_eq!(cmd, r"'/opt/my tools/it'\''s/plangate' hook claude || exit 2");
        assert!(is_hook_command(&cmd));
        assert!(hook_command(Path::new("plangate")).is_err());
        let observe = observe_command(Path::new("/opt/bin/plangate")).unwrap_or_default();
        assert_eq!(observe, "'/opt/bin/plangate' hook claude");
        assert!(is_hook_command(&observe));
    }

    #[test]
    fn recognises_every_form_it_ever_wrote_and_nothing_else() {
        for ours in [
            "plangate hook claude",
            " plangate hook claude ",
            "'/usr/local/bin/plangate' hook claude || exit 2",
            "'/a/b/plangate' hook claude",
            "/usr/bin/plangate hook claude || exit 2",
            r"'/x/it'\''s/plangate' hook claude || exit 2",
            "'/usr/local/bin/plangate-hook' claude || exit 2",
            "'/a/b/plangate-hook' claude",
        ] {
            assert!(is_hook_command(ours), "{ours}");
        }
        for theirs in [
            "audit.sh",
            "'/usr/bin/other' hook claude || exit 2",
            "plangate hook codex",
            "'/a/plangate' hook claude; rm -rf /",
            "'/a/plangate hook claude",
            "$(evil)/plangate hook claude",
            "'/a/plangate-hook' codex || exit 2",
            "'/a/plangate' claude || exit 2",
        ] {
            assert!(!is_hook_command(theirs), "{theirs}");
        }
    }
}
