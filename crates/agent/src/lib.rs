//! The agent side of plangate: everything that runs next to an AI agent and
//! talks to a running `plangate serve` over its HTTP API (API.md).
//!
//! Read this crate when you wire a harness to plangate. It owns no state and
//! decides nothing: the server decides, and every integration here is a thin
//! client that turns the harness's own protocol into API calls and the API's
//! answers back into what that harness expects.
//!
//! * [`client`]: a typed client of the agent endpoints, returning the engine's
//!   own view types ([`plangate_engine::view::StatusView`],
//!   [`plangate_engine::view::DecisionView`]).
//! * [`proposal`]: [`submit`] a plan: enter plan mode if needed, propose, and
//!   recognise a re-sent plan that was already decided (the server is
//!   idempotent only while a proposal is pending), then wait for the human.
//! * [`claude`]: `plangate hook claude`, Claude Code's hook (the mutation
//!   gate on `PreToolUse` / `PermissionRequest`, `ExitPlanMode` turned into a
//!   proposal, subagent runs, hydration after a compaction, decisions on the
//!   next prompt), and `plangate hook install claude`, which merges the hook
//!   into Claude Code's `settings.json`.
//! * [`mcp`]: `plangate mcp`, an MCP server over stdio (rmcp) exposing plan
//!   mode as tools whose input schemas are derived from the engine's types.
//! * [`codex`]: the `<proposed_plan>` block of a Codex plan-mode message;
//!   `plangate hook codex`, Codex's `PreToolUse` / `PermissionRequest` /
//!   `Stop` hook (the mutation gate, and a `<proposed_plan>` turned into a
//!   proposal whose decision keeps Codex going), and `plangate hook install
//!   codex`, which merges it into a Codex `hooks.json`.
//! * [`hooks_file`], [`hook_command`]: what both installers share (merging a
//!   JSON hooks file with a backup; the fail-closed shell command);
//!   [`hook_input`]: reading an event from stdin within a budget and a cap.
//! * [`hook_process`]: one hook event as a whole process (a current-thread
//!   runtime, fail closed on a panic), what `plangate hook claude|codex` and
//!   the hook-only binary `plangate-hook claude|codex` both run.
//! * [`scope_paths`]: the files a file tool writes, resolved on this
//!   machine (links, `..`, absolute paths) for the approved plan's scope.
//! * [`session`]: session ids in the API's charset.
//!
//! **Architecture invariant:** this crate never fails open. Whatever goes
//! wrong on a gate or approval path — the server is down, an answer is late,
//! the input is malformed — the answer an integration gives its harness is a
//! refusal with a reason, never a silent allow. (Events that gate nothing —
//! the next prompt, a stopping subagent — are never blocked instead.)

pub mod claude;
pub mod client;
pub mod codex;
pub mod hook_command;
pub mod hook_input;
pub mod hook_process;
pub mod hooks_file;
pub mod mcp;
pub mod permission;
mod plain_http;
pub mod project;
pub mod proposal;
pub mod scope_paths;
pub mod session;

pub use client::{AgentError, Client};
pub use proposal::{submit, FileRecall, MemoryRecall, NoRecall, ProposalBody, Recall, Submitted};
