//! `plangate hook install claude`: merge plangate's hook entries into Claude
//! Code's `settings.json`.
//!
//! Two matcher groups, each with one command handler
//! `{"type": "command", "command": "plangate hook claude", "timeout": <wait + 10>}`:
//! `PreToolUse` with matcher `*` (every tool goes through the gate) and
//! `PermissionRequest` with matcher `ExitPlanMode` (the plan dialog is
//! answered by the human in chat). Every other key and every other hook is
//! kept. Re-running is idempotent: plangate's handlers are taken out of
//! whatever group they are in and put back as those two groups, and an
//! unchanged file is not rewritten. A changed file is first copied to
//! `settings.json.bak-<UTC timestamp>`, then replaced atomically.
//!
//! Keys are written in sorted order (the file is re-serialized).

use super::hook::{DEFAULT_WAIT, MAX_WAIT_SECS, TIMEOUT_MARGIN_SECS};
use super::HOOK_COMMAND;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Which `settings.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `<project>/.claude/settings.json`, shared with the team.
    Project,
    /// `$CLAUDE_CONFIG_DIR/settings.json` or `~/.claude/settings.json`.
    User,
}

impl std::str::FromStr for Scope {
    type Err = InstallError;
    fn from_str(s: &str) -> Result<Scope, InstallError> {
        match s {
            "project" => Ok(Scope::Project),
            "user" => Ok(Scope::User),
            other => Err(InstallError::Usage(format!("--scope must be project or user, got {other:?}"))),
        }
    }
}

#[derive(Debug, Error)]
pub enum InstallError {
    #[error("{0}")]
    Usage(String),
    #[error("{path} is not valid JSON ({source}); fix it or move it away, nothing was changed")]
    InvalidJson { path: PathBuf, source: serde_json::Error },
    #[error("{path}: {problem}; nothing was changed")]
    Shape { path: PathBuf, problem: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// What [`install`] did.
#[derive(Debug, Clone)]
pub struct Installed {
    pub path: PathBuf,
    /// The settings as written (or, for a dry run, as they would be).
    pub settings: Value,
    /// False when the file already had exactly these entries.
    pub changed: bool,
    pub backup: Option<PathBuf>,
    pub dry_run: bool,
}

/// The hook timeout Claude Code is told for a given decision wait.
pub fn timeout_for(wait_secs: u64) -> u64 {
    wait_secs + TIMEOUT_MARGIN_SECS
}

/// The settings file of `scope`; `project_dir` is the project's root.
pub fn settings_path(scope: Scope, project_dir: &Path) -> Result<PathBuf, InstallError> {
    match scope {
        Scope::Project => Ok(project_dir.join(".claude").join("settings.json")),
        Scope::User => {
            let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
            non_empty("CLAUDE_CONFIG_DIR")
                .or_else(|| non_empty("HOME").map(|h| h.join(".claude")))
                .map(|d| d.join("settings.json"))
                .ok_or_else(|| InstallError::Usage("neither CLAUDE_CONFIG_DIR nor HOME is set: cannot find the user settings".to_string()))
        }
    }
}

fn handler(timeout: u64) -> Value {
    json!({"type": "command", "command": HOOK_COMMAND, "timeout": timeout})
}

fn is_ours(handler: &Value) -> bool {
    handler.get("command").and_then(Value::as_str).is_some_and(|c| c.trim() == HOOK_COMMAND)
}

/// `settings` with plangate's two hook groups merged in; see the module docs.
pub fn merge(mut settings: Value, timeout: u64) -> Result<Value, String> {
    let root = settings.as_object_mut().ok_or("the file is not a JSON object")?;
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks.as_object_mut().ok_or("`hooks` is not an object")?;
    for (event, matcher) in [("PreToolUse", "*"), ("PermissionRequest", "ExitPlanMode")] {
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
        let groups = groups.as_array_mut().ok_or_else(|| format!("`hooks.{event}` is not an array"))?;
        let mut kept = Vec::with_capacity(groups.len() + 1);
        for mut group in groups.drain(..) {
            let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                kept.push(group);
                continue;
            };
            let before = handlers.len();
            handlers.retain(|h| !is_ours(h));
            // A group that held only our handler goes; one the user shares keeps theirs.
            if !(handlers.is_empty() && before > 0) {
                kept.push(group);
            }
        }
        let mut ours = Map::new();
        ours.insert("matcher".to_string(), json!(matcher));
        ours.insert("hooks".to_string(), json!([handler(timeout)]));
        kept.push(Value::Object(ours));
        *groups = kept;
    }
    Ok(settings)
}

/// Merge the hook into the settings file of `scope` (see the module docs).
pub fn install(scope: Scope, project_dir: &Path, wait_secs: u64, dry_run: bool) -> Result<Installed, InstallError> {
    if wait_secs > MAX_WAIT_SECS {
        return Err(InstallError::Usage(format!("--wait must be at most {MAX_WAIT_SECS} seconds, got {wait_secs}")));
    }
    let path = settings_path(scope, project_dir)?;
    let io = |source| InstallError::Io { path: path.clone(), source };
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Some((text, json!({}))),
        Ok(text) => {
            let value = serde_json::from_str(&text).map_err(|source| InstallError::InvalidJson { path: path.clone(), source })?;
            Some((text, value))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    let before = existing.as_ref().map(|(_, v)| v.clone()).unwrap_or_else(|| json!({}));
    let after = merge(before.clone(), timeout_for(wait_secs)).map_err(|problem| InstallError::Shape { path: path.clone(), problem })?;
    let changed = existing.is_none() || before != after;
    let mut installed = Installed { path: path.clone(), settings: after, changed, backup: None, dry_run };
    if dry_run || !changed {
        return Ok(installed);
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir).map_err(io)?;
    if let Some((text, _)) = &existing {
        let backup = backup_path(&path);
        std::fs::write(&backup, text).map_err(|source| InstallError::Io { path: backup.clone(), source })?;
        installed.backup = Some(backup);
    }
    let mut out = serde_json::to_string_pretty(&installed.settings).unwrap_or_default();
    out.push('\n');
    let tmp = dir.join(format!(".settings.json.plangate-{}", std::process::id()));
    std::fs::write(&tmp, out).map_err(|source| InstallError::Io { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    Ok(installed)
}

/// `settings.json.bak-20260401T120000Z`, with `-2`, `-3`… if taken.
fn backup_path(path: &Path) -> PathBuf {
    let stamp: String =
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string().chars().filter(|c| *c != '-' && *c != ':').collect();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "settings.json".to_string());
    let first = path.with_file_name(format!("{name}.bak-{stamp}"));
    if !first.exists() {
        return first;
    }
    (2..).map(|n| path.with_file_name(format!("{name}.bak-{stamp}-{n}"))).find(|p| !p.exists()).unwrap_or(first)
}

/// The default wait, for `--wait`'s default.
pub fn default_wait_secs() -> u64 {
    DEFAULT_WAIT.as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(v: Value) -> Value {
        merge(v, 60).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn adds_both_groups_and_keeps_everything_else() {
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
        assert_eq!(after["hooks"]["PreToolUse"][0], before["hooks"]["PreToolUse"][0]);
        assert_eq!(
            after["hooks"]["PreToolUse"][1],
            json!({"matcher": "*", "hooks": [{"type": "command", "command": "plangate hook claude", "timeout": 60}]})
        );
        assert_eq!(
            after["hooks"]["PermissionRequest"],
            json!([{"matcher": "ExitPlanMode", "hooks": [{"type": "command", "command": "plangate hook claude", "timeout": 60}]}])
        );
    }

    #[test]
    fn idempotent_and_updates_a_changed_timeout() {
        let once = merged(json!({}));
        assert_eq!(merged(once.clone()), once);
        let longer = merge(once.clone(), 130).unwrap_or_default();
        assert_eq!(longer["hooks"]["PreToolUse"].as_array().map(Vec::len), Some(1));
        assert_eq!(longer["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"], 130);
    }

    #[test]
    fn a_shared_group_keeps_the_users_handler() {
        let shared = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "plangate hook claude", "timeout": 5}, {"type": "command", "command": "audit.sh"}]}]}});
        let after = merged(shared);
        let groups = after["hooks"]["PreToolUse"].as_array().cloned().unwrap_or_default();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0]["hooks"], json!([{"type": "command", "command": "audit.sh"}]));
        assert_eq!(merged(after.clone()), after);
    }

    #[test]
    fn wrong_shapes_are_refused() {
        assert!(merge(json!([]), 60).is_err());
        assert!(merge(json!({"hooks": []}), 60).is_err());
        assert!(merge(json!({"hooks": {"PreToolUse": {}}}), 60).is_err());
    }
}
