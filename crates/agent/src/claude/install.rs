//! `plangate hook install claude`: merge plangate's hook entries into Claude
//! Code's `settings.json`.
//!
//! Two matcher groups, each with one command handler
//! `{"type": "command", "command": "'/abs/plangate' hook claude || exit 2", "timeout": <wait + 10>}`
//! (see [`super::hook_command`]: the absolute path of the running binary, so
//! `PATH` does not matter, and every failure of the command is a block):
//! `PreToolUse` with matcher `*` (every tool goes through the gate) and
//! `PermissionRequest` with matcher `ExitPlanMode` (the plan dialog is
//! answered by the human in chat). Every other key and every other hook is
//! kept. Re-running is idempotent: plangate's handlers (also the bare
//! `plangate hook claude` of older versions, and those of a binary since
//! moved) are taken out of whatever group they are in and put back as those
//! two groups, first in their event (Claude Code 2.0.x dropped a hook's
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

use super::hook::{DEFAULT_WAIT, MAX_WAIT_SECS, TIMEOUT_MARGIN_SECS};
use super::{hook_command, is_hook_command};
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

fn is_ours(handler: &Value) -> bool {
    hooks_file::runs(handler, is_hook_command)
}

/// `settings` with plangate's two hook groups merged in, running `command`;
/// see the module docs.
pub fn merge(settings: Value, command: &str, timeout: u64) -> Result<Value, String> {
    let groups = [("PreToolUse", "*"), ("PermissionRequest", "ExitPlanMode")].map(|(event, matcher)| Group {
        event,
        matcher: Some(matcher),
        handler: handler(command, timeout),
    });
    hooks_file::merge(settings, &groups, is_ours)
}

/// Merge the hook, running the binary at `exe`, into the settings file of
/// `scope` (see the module docs).
pub fn install(scope: Scope, project_dir: &Path, exe: &Path, wait_secs: u64, dry_run: bool) -> Result<Installed, InstallError> {
    if wait_secs > MAX_WAIT_SECS {
        return Err(InstallError::Usage(format!("--wait must be at most {MAX_WAIT_SECS} seconds, got {wait_secs}")));
    }
    let command = hook_command(exe).map_err(|e| InstallError::Usage(format!("cannot install the hook: {e}")))?;
    let path = settings_path(scope, project_dir)?;
    let existing = hooks_file::read(&path)?;
    let before = existing.as_ref().map(|(_, v)| v.clone()).unwrap_or_else(|| json!({}));
    let after =
        merge(before.clone(), &command, timeout_for(wait_secs)).map_err(|problem| InstallError::Shape { path: path.clone(), problem })?;
    let changed = existing.is_none() || before != after;
    let also_in = Scope::ALL
        .into_iter()
        .filter(|s| *s != scope)
        .filter_map(|s| settings_path(s, project_dir).ok())
        .filter(|p| *p != path)
        .filter(|p| hooks_file::peek(p).is_some_and(|v| hooks_file::has_ours(&v, is_ours)))
        .collect();
    let mut installed = Installed { scope, path: path.clone(), command, settings: after, changed, backup: None, dry_run, also_in };
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

    fn merged(v: Value) -> Value {
        merge(v, CMD, 60).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn adds_both_groups_first_and_keeps_everything_else() {
        let before = json!({
            "model": "opus",
            "permissions": {"allow": ["Bash(ls:*)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
                      "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}
        });
        let after = merged(before.clone());
        assert_eq!(after["model"], "opus");
        assert_eq!(after["permissions"], before["permissions"]);
        assert_eq!(after["hooks"]["Stop"], before["hooks"]["Stop"]);
        assert_eq!(after["hooks"]["PreToolUse"][1], before["hooks"]["PreToolUse"][0]);
        assert_eq!(after["hooks"]["PreToolUse"][0], json!({"matcher": "*", "hooks": [{"type": "command", "command": CMD, "timeout": 60}]}));
        assert_eq!(
            after["hooks"]["PermissionRequest"],
            json!([{"matcher": "ExitPlanMode", "hooks": [{"type": "command", "command": CMD, "timeout": 60}]}])
        );
    }

    #[test]
    fn idempotent_and_updates_a_changed_timeout() {
        let once = merged(json!({}));
        assert_eq!(merged(once.clone()), once);
        let longer = merge(once.clone(), CMD, 130).unwrap_or_default();
        assert_eq!(longer["hooks"]["PreToolUse"].as_array().map(Vec::len), Some(1));
        assert_eq!(longer["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 130);
    }

    #[test]
    fn a_legacy_or_moved_binary_is_replaced_and_a_shared_group_keeps_the_users_handler() {
        let shared = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "plangate hook claude", "timeout": 5}, {"type": "command", "command": "audit.sh"}]},
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "'/old/place/plangate' hook claude || exit 2"}]}]}});
        let after = merged(shared);
        let groups = after["hooks"]["PreToolUse"].as_array().cloned().unwrap_or_default();
        assert_eq!(groups.len(), 2, "{after}");
        assert_eq!(groups[0]["hooks"][0]["command"], CMD);
        assert_eq!(groups[1]["hooks"], json!([{"type": "command", "command": "audit.sh"}]));
        assert_eq!(merged(after.clone()), after);
    }

    #[test]
    fn wrong_shapes_are_refused() {
        assert!(merge(json!([]), CMD, 60).is_err());
        assert!(merge(json!({"hooks": []}), CMD, 60).is_err());
        assert!(merge(json!({"hooks": {"PreToolUse": {}}}), CMD, 60).is_err());
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
