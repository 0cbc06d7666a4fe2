//! `plangate hook install claude`: merge plangate's hook entries into Claude
//! Code's `settings.json`.
//!
//! One matcher group per entry of [`ENTRIES`], each with one command handler
//! naming the absolute path of the running binary (so `PATH` does not
//! matter). The gate's two,
//! `{"type": "command", "command": "'/abs/plangate' hook claude || exit 2", "timeout": <wait + 10>}`
//! ([`super::hook_command`]: every failure of the command is a block):
//! `PreToolUse` with matcher `*` (every tool goes through the gate) and
//! `PermissionRequest` with matcher `*` (every dialog Claude Code would
//! show: `ExitPlanMode`'s plan dialog is answered by the human's decision,
//! any other tool's is relayed as a permission request). The others run
//! `'/abs/plangate' hook claude` ([`super::observe_command`]: they gate
//! nothing, so a failure is never a block) with a 10 s timeout:
//! `PostToolUse` and `PostToolUseFailure` of the subagent tool
//! (`Agent|Task`), `SubagentStart` and `SubagentStop` (subagent runs),
//! `SessionStart` with matcher `resume|compact` (hydration), and
//! `UserPromptSubmit` (an untaken decision); and `Stop` (the approved plan's
//! open steps, or a plan still awaiting people, whose decision it waits
//! for), with the gate's timeout and [`STOP_STATUS`]. Every other key and every other
//! hook is kept. Re-running is idempotent: plangate's handlers (also the bare
//! `plangate hook claude` of older versions, and those of a binary since
//! moved) are taken out of whatever group they are in and put back as those
//! groups, first in their event (Claude Code 2.0.x dropped a hook's
//! `updatedInput` unless that hook ran first, anthropics/claude-code#15897;
//! the hook's session id for plangate's MCP tools travels that way), and an
//! unchanged file is not rewritten. A changed file is first copied to
//! `<file>.bak-<UTC timestamp>`, then replaced atomically.
//!
//! Scopes: `local` (`.claude/settings.local.json`, personal and not
//! committed: the choice for a personal install, since the command names this
//! machine's binary), `project` (`.claude/settings.json`, shared with everyone
//! who clones the project; [`Installed::warning`] says so) and `user`.
//!
//! Keys are written in sorted order (the file is re-serialized).

use super::hook::{Event, DEFAULT_WAIT, MAX_WAIT_SECS, QUICK_TIMEOUT_SECS, TIMEOUT_MARGIN_SECS};
use super::{hook_command, is_hook_command, observe_command};
use crate::hooks_file::{self, Group};
pub use crate::hooks_file::{current_binary, InstallError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Which settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `<project>/.claude/settings.local.json`: this project, only for you
    /// (Claude Code's "local" scope, not committed).
    Local,
    /// `<project>/.claude/settings.json`, shared with the team.
    Project,
    /// `$CLAUDE_CONFIG_DIR/settings.json` or `~/.claude/settings.json`.
    User,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Local, Scope::Project, Scope::User];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Local => "local",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = InstallError;
    fn from_str(s: &str) -> Result<Scope, InstallError> {
        match s {
            "local" => Ok(Scope::Local),
            "project" => Ok(Scope::Project),
            "user" => Ok(Scope::User),
            other => Err(InstallError::Usage(format!("--scope must be local, project or user, got {other:?}"))),
        }
    }
}

/// One matcher group the installer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub event: Event,
    /// `None` for events whose matcher Claude Code ignores.
    pub matcher: Option<&'static str>,
}

/// Every group, in the order they are written (event names and matchers
/// checked against Claude Code 2.1.240's hooks reference). The subagent
/// tool is `Agent`, called `Task` before 2.1.63 ([`super::hook::SUBAGENT_TOOLS`]).
pub const ENTRIES: [Entry; 9] = [
    Entry { event: Event::PreToolUse, matcher: Some("*") },
    Entry { event: Event::PermissionRequest, matcher: Some("*") },
    Entry { event: Event::PostToolUse, matcher: Some(SUBAGENT_MATCHER) },
    Entry { event: Event::PostToolUseFailure, matcher: Some(SUBAGENT_MATCHER) },
    Entry { event: Event::SubagentStart, matcher: None },
    Entry { event: Event::SubagentStop, matcher: None },
    Entry { event: Event::SessionStart, matcher: Some("resume|compact") },
    Entry { event: Event::UserPromptSubmit, matcher: None },
    Entry { event: Event::Stop, matcher: None },
];

/// The matcher of the subagent tool's events: every name in [`super::hook::SUBAGENT_TOOLS`].
const SUBAGENT_MATCHER: &str = "Agent|Task";

/// The two commands the entries run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commands {
    /// The gate's events: `… hook claude || exit 2`.
    pub gate: String,
    /// Every other event: `… hook claude`.
    pub observe: String,
}

impl Commands {
    /// The commands for the binary at `exe` (absolute).
    pub fn for_binary(exe: &Path) -> Result<Commands, String> {
        Ok(Commands { gate: hook_command(exe)?, observe: observe_command(exe)? })
    }
}

/// What [`install`] did.
#[derive(Debug, Clone)]
pub struct Installed {
    pub scope: Scope,
    pub path: PathBuf,
    /// The command written into the handlers.
    pub command: String,
    /// The settings as written (or, for a dry run, as they would be).
    pub settings: Value,
    /// False when the file already had exactly these entries.
    pub changed: bool,
    pub backup: Option<PathBuf>,
    pub dry_run: bool,
    /// Other settings files (of other scopes) that also hold plangate hooks:
    /// Claude Code runs all of them.
    pub also_in: Vec<PathBuf>,
}

impl Installed {
    /// What to tell the user besides "installed": the shared project file
    /// names this machine's binary for everyone who clones the project.
    pub fn warning(&self) -> Option<String> {
        (self.scope == Scope::Project).then(|| {
            format!(
                "warning: {} is shared with everyone who clones this project, and the hook command names this machine's \
                 binary ({}); wherever that path does not exist the hook blocks every tool call. For a personal install \
                 use --scope local (.claude/settings.local.json, not committed).",
                self.path.display(),
                self.command
            )
        })
    }
}

/// The hook timeout Claude Code is told for a given decision wait.
pub fn timeout_for(wait_secs: u64) -> u64 {
    wait_secs + TIMEOUT_MARGIN_SECS
}

/// The settings file of `scope`; `project_dir` is the project's root.
pub fn settings_path(scope: Scope, project_dir: &Path) -> Result<PathBuf, InstallError> {
    match scope {
        Scope::Local => Ok(project_dir.join(".claude").join("settings.local.json")),
        Scope::Project => Ok(project_dir.join(".claude").join("settings.json")),
        Scope::User => hooks_file::env_dir("CLAUDE_CONFIG_DIR")
            .or_else(|| hooks_file::env_dir("HOME").map(|h| h.join(".claude")))
            .map(|d| d.join("settings.json"))
            .ok_or_else(|| InstallError::Usage("neither CLAUDE_CONFIG_DIR nor HOME is set: cannot find the user settings".to_string())),
    }
}

fn handler(command: &str, timeout: u64) -> Value {
    json!({"type": "command", "command": command, "timeout": timeout})
}

/// What Claude Code's spinner says while the gate's hook runs (its
/// `statusMessage`, in 2.1.328's hook schema): a call is checked in
/// milliseconds, but `ExitPlanMode` and a relayed permission dialog wait
/// for people, and the terminal should say for whom, not only "running
/// PreToolUse hook · 13s".
pub const GATE_STATUS: &str = "plangate: waiting for your approvers to tap in the chat (plans and permission requests)";

/// The spinner's words while the `Stop` hook holds Claude for a plan that
/// awaits people (see `await_decision_at_stop` in the hook): a decision
/// made now still reaches it; Esc stops waiting.
pub const STOP_STATUS: &str =
    "plangate: your plan waits for your approvers in the chat; a tap now still reaches Claude (Esc stops waiting)";

fn gate_handler(command: &str, timeout: u64) -> Value {
    let mut h = handler(command, timeout);
    h["statusMessage"] = json!(GATE_STATUS);
    h
}

fn is_ours(handler: &Value) -> bool {
    hooks_file::runs(handler, is_hook_command)
}

/// `settings` with plangate's hook groups ([`ENTRIES`]) merged in, running
/// `commands`, the gate's with `timeout`; see the module docs.
pub fn merge(settings: Value, commands: &Commands, timeout: u64) -> Result<Value, String> {
    let groups: Vec<Group> = ENTRIES
        .iter()
        .map(|entry| Group {
            event: entry.event.name(),
            matcher: entry.matcher,
            handler: match (entry.event.gates(), entry.event) {
                (true, _) => gate_handler(&commands.gate, timeout),
                // Gates nothing (no `|| exit 2`), but may wait as long as the gate.
                (false, Event::Stop) => {
                    let mut h = handler(&commands.observe, timeout);
                    h["statusMessage"] = json!(STOP_STATUS);
                    h
                }
                (false, _) => handler(&commands.observe, QUICK_TIMEOUT_SECS),
            },
        })
        .collect();
    hooks_file::merge(settings, &groups, is_ours)
}

/// Merge the hook, running the binary at `exe`, into the settings file of
/// `scope` (see the module docs).
pub fn install(scope: Scope, project_dir: &Path, exe: &Path, wait_secs: u64, dry_run: bool) -> Result<Installed, InstallError> {
    if wait_secs > MAX_WAIT_SECS {
        return Err(InstallError::Usage(format!("--wait must be at most {MAX_WAIT_SECS} seconds, got {wait_secs}")));
    }
    let commands = Commands::for_binary(exe).map_err(|e| InstallError::Usage(format!("cannot install the hook: {e}")))?;
    let path = settings_path(scope, project_dir)?;
    let existing = hooks_file::read(&path)?;
    let before = existing.as_ref().map(|(_, v)| v.clone()).unwrap_or_else(|| json!({}));
    let after =
        merge(before.clone(), &commands, timeout_for(wait_secs)).map_err(|problem| InstallError::Shape { path: path.clone(), problem })?;
    let changed = existing.is_none() || before != after;
    let also_in = Scope::ALL
        .into_iter()
        .filter(|s| *s != scope)
        .filter_map(|s| settings_path(s, project_dir).ok())
        .filter(|p| *p != path)
        .filter(|p| hooks_file::peek(p).is_some_and(|v| hooks_file::has_ours(&v, is_ours)))
        .collect();
    let mut installed =
        Installed { scope, path: path.clone(), command: commands.gate, settings: after, changed, backup: None, dry_run, also_in };
    if dry_run || !changed {
        return Ok(installed);
    }
    installed.backup = hooks_file::write(&path, existing.as_ref().map(|(text, _)| text.as_str()), &installed.settings)?;
    Ok(installed)
}

/// The default wait, for `--wait`'s default.
pub fn default_wait_secs() -> u64 {
    DEFAULT_WAIT.as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "'/opt/bin/plangate' hook claude || exit 2";
    const OBSERVE: &str = "'/opt/bin/plangate' hook claude";

    fn commands() -> Commands {
        Commands { gate: CMD.into(), observe: OBSERVE.into() }
    }

    fn merged(v: Value) -> Value {
        merge(v, &commands(), 60).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn adds_every_group_first_and_keeps_everything_else() {
        let before = json!({
            "model": "opus",
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
                      "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}],
                      "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "motd"}]}]}
        });
        let after = merged(before.clone());
        assert_eq!(after["model"], "opus");
        assert_eq!(after["permissions"], before["permissions"]);
        assert_eq!(after["hooks"]["Stop"][1], before["hooks"]["Stop"][0]);
        assert_eq!(after["hooks"]["PreToolUse"][1], before["hooks"]["PreToolUse"][0]);
        assert_eq!(after["hooks"]["SessionStart"][1], before["hooks"]["SessionStart"][0]);
        let gate = json!([{"type": "command", "command": CMD, "timeout": 60, "statusMessage": GATE_STATUS}]);
        let observe = json!([{"type": "command", "command": OBSERVE, "timeout": 10}]);
        assert_eq!(after["hooks"]["PreToolUse"][0], json!({"matcher": "*", "hooks": gate}));
        assert_eq!(after["hooks"]["PermissionRequest"], json!([{"matcher": "*", "hooks": gate}]));
        for event in ["PostToolUse", "PostToolUseFailure"] {
            assert_eq!(after["hooks"][event], json!([{"matcher": "Agent|Task", "hooks": observe}]), "{event}");
        }
        for event in ["SubagentStart", "SubagentStop", "UserPromptSubmit"] {
            assert_eq!(after["hooks"][event], json!([{"hooks": observe}]), "{event}");
        }
        assert_eq!(after["hooks"]["SessionStart"][0], json!({"matcher": "resume|compact", "hooks": observe}));
    }

    #[test]
    fn idempotent_and_updates_a_changed_timeout() {
        let once = merged(json!({}));
        assert_eq!(merged(once.clone()), once);
        let longer = merge(once.clone(), &commands(), 130).unwrap_or_default();
        assert_eq!(longer["hooks"]["PreToolUse"].as_array().map(Vec::len), Some(1));
        assert_eq!(longer["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 130);
        assert_eq!(longer["hooks"]["SessionStart"][0]["hooks"][0]["timeout"], 10, "only the gate waits");
    }

    #[test]
    fn a_legacy_or_moved_binary_is_replaced_and_a_shared_group_keeps_the_users_handler() {
        let shared = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "plangate hook claude", "timeout": 5}, {"type": "command", "command": "audit.sh"}]},
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "'/old/place/plangate' hook claude || exit 2"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "'/old/place/plangate' hook claude"}]}]}});
        let after = merged(shared);
        let groups = after["hooks"]["PreToolUse"].as_array().cloned().unwrap_or_default();
        assert_eq!(groups.len(), 2, "{after}");
        assert_eq!(groups[0]["hooks"][0]["command"], CMD);
        assert_eq!(groups[1]["hooks"], json!([{"type": "command", "command": "audit.sh"}]));
        assert_eq!(after["hooks"]["UserPromptSubmit"].as_array().map(Vec::len), Some(1));
        assert_eq!(merged(after.clone()), after);
    }

    #[test]
    fn wrong_shapes_are_refused() {
        assert!(merge(json!([]), &commands(), 60).is_err());
        assert!(merge(json!({"hooks": []}), &commands(), 60).is_err());
        assert!(merge(json!({"hooks": {"PreToolUse": {}}}), &commands(), 60).is_err());
        assert!(merge(json!({"hooks": {"SessionStart": "x"}}), &commands(), 60).is_err());
    }

    /// docs/AGENTS.md shows the installed entries verbatim; this keeps it so.
    #[test]
    fn docs_agents_md_shows_exactly_what_is_installed() {
        let doc = include_str!("../../../../docs/AGENTS.md");
        let marker = "with this block):\n\n```json\n";
        let start = doc.find(marker).map(|i| i + marker.len()).unwrap_or_else(|| panic!("no installed JSON in docs/AGENTS.md"));
        let end = doc[start..].find("\n```").map(|i| start + i).unwrap_or_else(|| panic!("unterminated JSON block"));
        let shown: Value = serde_json::from_str(&doc[start..end]).unwrap_or_else(|e| panic!("docs/AGENTS.md: {e}"));
        let commands = Commands::for_binary(Path::new("/home/me/.cargo/bin/plangate")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(shown, merge(json!({}), &commands, timeout_for(default_wait_secs())).unwrap_or_default());
    }

    #[test]
    fn the_subagent_matcher_names_every_subagent_tool() {
        assert_eq!(SUBAGENT_MATCHER, super::super::hook::SUBAGENT_TOOLS.join("|"));
    }

    #[test]
    fn the_longest_wait_stays_within_claude_codes_hook_timeout() {
        assert_eq!(timeout_for(MAX_WAIT_SECS), 600);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let exe = Path::new("/opt/bin/plangate");
        assert!(install(Scope::Local, dir.path(), exe, MAX_WAIT_SECS, true).is_ok());
        let err = install(Scope::Local, dir.path(), exe, MAX_WAIT_SECS + 1, true).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("at most 590"), "{err}");
    }

    #[test]
    fn scopes_and_the_shared_file_warning() {
        let project = Path::new("/p");
        assert_eq!(settings_path(Scope::Local, project).ok(), Some(PathBuf::from("/p/.claude/settings.local.json")));
        assert_eq!(settings_path(Scope::Project, project).ok(), Some(PathBuf::from("/p/.claude/settings.json")));
        assert_eq!("local".parse::<Scope>().ok(), Some(Scope::Local));
        assert!("team".parse::<Scope>().is_err());

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let exe = Path::new("/opt/bin/plangate");
        let local = install(Scope::Local, dir.path(), exe, 50, false).unwrap_or_else(|e| panic!("{e}"));
        assert!(local.warning().is_none());
        assert_eq!(local.command, CMD);
        assert!(dir.path().join(".claude/settings.local.json").exists());
        let shared = install(Scope::Project, dir.path(), exe, 50, true).unwrap_or_else(|e| panic!("{e}"));
        let warning = shared.warning().unwrap_or_default();
        assert!(warning.contains("--scope local") && warning.contains("/opt/bin/plangate"), "{warning}");
        assert_eq!(shared.also_in, vec![dir.path().join(".claude/settings.local.json")]);
        assert!(install(Scope::Local, dir.path(), Path::new("relative/plangate"), 50, false).is_err());
    }
}
