//! Codex: its `<proposed_plan>` block ([`plan`]), the `plangate hook codex`
//! command hook ([`hook`]), its installer ([`install`]) and the trust Codex
//! needs before it runs the hook at all ([`trust`]).
//!
//! Codex (CLI 0.124+, hooks on by default) runs a command hook once per
//! event, with the event as JSON on stdin, and reads the answer from stdout
//! and the exit code. plangate answers three events:
//!
//! * `PreToolUse` of every tool (shell commands, reported as `Bash`;
//!   `apply_patch`; MCP tools `mcp__<server>__<tool>`): the mutation gate.
//! * `PermissionRequest` (Codex is about to ask the user to approve a
//!   command): the same gate, so a denied call is not even offered.
//! * `Stop` (the turn ended): a final message with a `<proposed_plan>` block
//!   becomes a proposal; the hook waits for the human and, once they decide,
//!   keeps Codex going with the decision as its next prompt. A decision that
//!   came after the wait reaches Codex at its next `Stop`.

pub mod hook;
pub mod install;
mod plan;
pub mod trust;

pub use plan::{extract_proposed_plan, CodexError, CodexPlan, CLOSE_TAG, OPEN_TAG};

use std::path::Path;

/// The harness's name in the installed command (`plangate-hook codex`,
/// `plangate hook codex`).
pub const HARNESS: &str = "codex";

/// The command the installer writes for the `plangate` binary at `exe`
/// (absolute): `'/abs/plangate-hook' codex || exit 2` when the hook-only
/// binary sits beside it, else `'/abs/plangate' hook codex || exit 2`
/// ([`crate::hook_command::command_for`]), for the gate's events, without
/// the `|| exit 2` for `Stop` (see [`install`]). Codex, like Claude Code,
/// treats every exit code but 0 and 2 as a non-blocking error, and exit 2
/// as a block only when stderr carries a reason
/// (`codex-rs/hooks/src/events/pre_tool_use.rs`, `parse_completed`); see
/// [`crate::hook_command`].
pub fn hook_command(exe: &Path, fail_closed: bool) -> Result<String, String> {
    crate::hook_command::command_for(exe, HARNESS, fail_closed)
}

/// Whether `command` runs `plangate hook codex` or `plangate-hook codex`
/// (quoted path or bare word, with or without `|| exit 2`).
pub fn is_hook_command(command: &str) -> bool {
    crate::hook_command::is_command_for(command, HARNESS)
}
