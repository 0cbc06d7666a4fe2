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
//!
//! [`install`] merges both hook entries into `settings.json`.

pub mod hook;
pub mod install;

pub use hook::{answer, run, Answer, Event};

/// The command the installer writes and Claude Code runs.
pub const HOOK_COMMAND: &str = "plangate hook claude";
