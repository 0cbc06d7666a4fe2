//! `plangate hook install codex`: merge plangate's hooks into a Codex
//! `hooks.json`.
//!
//! Why `hooks.json` and not `[hooks]` tables in `config.toml`: Codex loads
//! hooks from either, next to each active config layer
//! (`~/.codex/hooks.json`, `<repo>/.codex/hooks.json`; Codex docs,
//! "Advanced configuration", "Hooks"), in the same event structure. A
//! separate JSON file is one plangate can rewrite without touching the
//! user's settings, comments and formatting in `config.toml` (which would
//! need a format-preserving TOML editor), and it is the shape the Claude
//! Code installer already merges ([`crate::hooks_file`]). Codex warns when
//! one layer has both; [`Installed::notes`] says so when `config.toml` next
//! to the file has inline hooks.
//!
//! Three matcher groups, first in their event:
//!
//! * `PreToolUse` and `PermissionRequest`, matcher `*` (every tool), running
//!   `'/abs/plangate' hook codex || exit 2` ([`super::hook_command`]: the
//!   absolute path of the running binary, and any failure to run it is a
//!   block, which Codex reads from exit 2 with the shell's message on
//!   stderr);
//! * `Stop` (Codex ignores matchers there), running the same binary
//!   *without* `|| exit 2`, with a `statusMessage`: exit 2 on `Stop` means
//!   "keep going with stderr as the prompt", so a binary that cannot run
//!   would keep Codex running in a loop; failing there lets Codex stop,
//!   which changes nothing (its next tool call is still gated).
//!
//! Each handler has `"timeout": wait + 10` seconds. Everything else in the
//! file is kept; re-running is idempotent, replaces the handlers of an older
//! or moved binary, and backs the previous file up before changing it (see
//! [`crate::hooks_file`]).
//!
//! Scopes: `project` (`<project>/.codex/hooks.json`: Codex loads it only
//! when the project is trusted) and `user` (`$CODEX_HOME/hooks.json`, by
//! default `~/.codex/hooks.json`). Codex runs a non-managed hook only after
//! the user has reviewed and trusted it (`/hooks` in the Codex CLI), and
//! asks again when its command changes; until then nothing is gated, which
//! [`Installed::notes`] says loudly unless the user's `config.toml` already
//! trusts these hooks. `--trust` records them as trusted itself
//! ([`super::trust`]).

use super::hook::{DEFAULT_WAIT, MAX_WAIT_SECS, TIMEOUT_MARGIN_SECS};
use super::trust::{self, Review};
use super::{hook_command, is_hook_command};
use crate::hooks_file::{self, Group, InstallError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What Codex shows while the `Stop` hook runs (it may wait for a human).
pub const STOP_STATUS: &str = "plangate: checking for a plan decision";

/// Which hooks file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `<project>/.codex/hooks.json`.
    Project,
    /// `$CODEX_HOME/hooks.json`, by default `~/.codex/hooks.json`.
    User,
}

impl Scope {
    pub const ALL: [Scope; 2] = [Scope::Project, Scope::User];
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

/// What [`install`] did.
#[derive(Debug, Clone)]
pub struct Installed {
    pub scope: Scope,
    pub path: PathBuf,
    /// The command of the `PreToolUse` and `PermissionRequest` handlers.
    pub gate_command: String,
    /// The command of the `Stop` handler.
    pub stop_command: String,
    /// The file as written (or, for a dry run, as it would be).
    pub hooks: Value,
    /// False when the file already had exactly these entries.
    pub changed: bool,
    pub backup: Option<PathBuf>,
    pub dry_run: bool,
    /// The other scope's file, when it also holds plangate hooks: Codex runs both.
    pub also_in: Vec<PathBuf>,
    /// `config.toml` next to the file, when it has inline `[hooks]` tables.
    pub inline_toml: Option<PathBuf>,
    /// Whether Codex runs the hooks as written, by the user's `config.toml`
    /// (the error when that cannot be told).
    pub trust: Result<Review, String>,
}

impl Installed {
    /// What to tell the user besides "installed".
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for other in &self.also_in {
            notes.push(format!(
                "note: {} also has plangate hooks; Codex runs both, so remove them from the file you do not want",
                other.display()
            ));
        }
        if let Some(toml) = &self.inline_toml {
            notes.push(format!(
                "note: {} also defines hooks inline ([hooks] tables); Codex loads both and warns, so keep one of the two",
                toml.display()
            ));
        }
        if self.scope == Scope::Project {
            notes.push(
                "note: Codex loads a project's .codex/hooks.json only when the project is trusted, and the command names this \
                 machine's binary, so wherever that path does not exist the gate blocks every tool call; for a personal install \
                 use --scope user"
                    .to_string(),
            );
        }
        match &self.trust {
            Ok(review) if review.all_trusted() => {}
            Ok(review) => notes.push(format!(
                "WARNING: Codex runs a hook only once you trust it, and it does not trust these yet ({}), so NOTHING IS GATED: \
                 re-run with --trust to record them as trusted in {}, or review them in Codex's /hooks dialog",
                review.problems(),
                review.config.display()
            )),
            Err(e) => notes.push(format!(
                "WARNING: Codex runs a hook only once you trust it, and whether it trusts these cannot be told ({e}), so \
                 nothing may be gated: re-run with --trust, or review them in Codex's /hooks dialog"
            )),
        }
        notes
    }
}

/// The hook timeout Codex is told for a given decision wait.
pub fn timeout_for(wait_secs: u64) -> u64 {
    wait_secs + TIMEOUT_MARGIN_SECS
}

/// The default wait, for `--wait`'s default.
pub fn default_wait_secs() -> u64 {
    DEFAULT_WAIT.as_secs()
}

/// Codex's config directory: `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Result<PathBuf, InstallError> {
    hooks_file::env_dir("CODEX_HOME")
        .or_else(|| hooks_file::env_dir("HOME").map(|h| h.join(".codex")))
        .ok_or_else(|| InstallError::Usage("neither CODEX_HOME nor HOME is set: cannot find Codex's config directory".to_string()))
}

/// The hooks file of `scope`; `project_dir` is the project's root.
pub fn hooks_path(scope: Scope, project_dir: &Path) -> Result<PathBuf, InstallError> {
    match scope {
        Scope::Project => Ok(project_dir.join(".codex").join("hooks.json")),
        Scope::User => Ok(codex_home()?.join("hooks.json")),
    }
}

fn is_ours(handler: &Value) -> bool {
    hooks_file::runs(handler, is_hook_command)
}

/// `hooks` with plangate's three groups merged in; see the module docs.
pub fn merge(hooks: Value, gate_command: &str, stop_command: &str, timeout: u64) -> Result<Value, String> {
    let gate = json!({"type": "command", "command": gate_command, "timeout": timeout});
    let stop = json!({"type": "command", "command": stop_command, "timeout": timeout, "statusMessage": STOP_STATUS});
    let groups = [
        Group { event: "PreToolUse", matcher: Some("*"), handler: gate.clone() },
        Group { event: "PermissionRequest", matcher: Some("*"), handler: gate },
        Group { event: "Stop", matcher: None, handler: stop },
    ];
    hooks_file::merge(hooks, &groups, is_ours)
}

/// Whether `config.toml` has an inline hooks table (`[hooks…]` or
/// `[[hooks.…]]` on a line of its own): a line scan, not a TOML parse, only
/// for a note. `[hooks.state.…]` is Codex's record of trusted hooks
/// ([`super::trust`]), not hooks.
fn has_inline_hooks(config_toml: &str) -> bool {
    config_toml
        .lines()
        .map(str::trim_start)
        .any(|l| (l.starts_with("[hooks") || l.starts_with("[[hooks")) && !l.starts_with("[hooks.state"))
}

/// Merge the hooks, running the binary at `exe`, into the hooks file of
/// `scope` (see the module docs).
pub fn install(scope: Scope, project_dir: &Path, exe: &Path, wait_secs: u64, dry_run: bool) -> Result<Installed, InstallError> {
    if wait_secs > MAX_WAIT_SECS {
        return Err(InstallError::Usage(format!("--wait must be at most {MAX_WAIT_SECS} seconds, got {wait_secs}")));
    }
    let usage = |e: String| InstallError::Usage(format!("cannot install the hook: {e}"));
    let gate_command = hook_command(exe, true).map_err(usage)?;
    let stop_command = hook_command(exe, false).map_err(usage)?;
    let path = hooks_path(scope, project_dir)?;
    let existing = hooks_file::read(&path)?;
    let before = existing.as_ref().map(|(_, v)| v.clone()).unwrap_or_else(|| json!({}));
    let after = merge(before.clone(), &gate_command, &stop_command, timeout_for(wait_secs))
        .map_err(|problem| InstallError::Shape { path: path.clone(), problem })?;
    let changed = existing.is_none() || before != after;
    let also_in = Scope::ALL
        .into_iter()
        .filter(|s| *s != scope)
        .filter_map(|s| hooks_path(s, project_dir).ok())
        .filter(|p| *p != path)
        .filter(|p| hooks_file::peek(p).is_some_and(|v| hooks_file::has_ours(&v, is_ours)))
        .collect();
    let toml = path.with_file_name("config.toml");
    let inline_toml = std::fs::read_to_string(&toml).ok().filter(|t| has_inline_hooks(t)).map(|_| toml);
    let trust = trust::review(&path, &after).map_err(|e| e.to_string());
    let mut installed =
        Installed { scope, path, gate_command, stop_command, hooks: after, changed, backup: None, dry_run, also_in, inline_toml, trust };
    if dry_run || !changed {
        return Ok(installed);
    }
    installed.backup = hooks_file::write(&installed.path, existing.as_ref().map(|(text, _)| text.as_str()), &installed.hooks)?;
    Ok(installed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GATE: &str = "'/opt/bin/plangate' hook codex || exit 2";
    const STOP: &str = "'/opt/bin/plangate' hook codex";

    fn merged(v: Value) -> Value {
        merge(v, GATE, STOP, 600).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn three_groups_first_and_everything_else_kept() {
        let before = json!({"hooks": {
            "PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "audit.sh", "timeout": 5}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "hello.sh"}]}]}});
        let after = merged(before.clone());
        let gate = json!({"type": "command", "command": GATE, "timeout": 600});
        assert_eq!(after["hooks"]["PreToolUse"], json!([{"matcher": "*", "hooks": [gate]}, before["hooks"]["PreToolUse"][0]]));
        assert_eq!(after["hooks"]["PermissionRequest"], json!([{"matcher": "*", "hooks": [gate]}]));
        assert_eq!(
            after["hooks"]["Stop"],
            json!([{"hooks": [{"type": "command", "command": STOP, "timeout": 600, "statusMessage": STOP_STATUS}]}])
        );
        assert_eq!(after["hooks"]["SessionStart"], before["hooks"]["SessionStart"]);
        assert_eq!(merged(after.clone()), after, "idempotent");
        // A moved binary's or a hand-written bare entry is replaced, not kept beside ours.
        let moved = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "plangate hook codex"}]}],
            "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "'/old/plangate' hook codex || exit 2"}]}]}});
        let again = merged(moved);
        assert_eq!(again["hooks"]["Stop"].as_array().map(Vec::len), Some(1));
        assert_eq!(again["hooks"]["PreToolUse"].as_array().map(Vec::len), Some(1));
        assert!(merge(json!({"hooks": {"Stop": {}}}), GATE, STOP, 600).is_err());
    }

    #[test]
    fn scopes_notes_and_inline_toml() {
        let project = Path::new("/p");
        assert_eq!(hooks_path(Scope::Project, project).ok(), Some(PathBuf::from("/p/.codex/hooks.json")));
        assert!("local".parse::<Scope>().is_err());
        assert!(has_inline_hooks("model = \"o3\"\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n"));
        assert!(has_inline_hooks("[hooks]\n"));
        assert!(!has_inline_hooks("# [hooks] in a comment\nhooks_note = 1\n"));
        assert!(!has_inline_hooks("[hooks.state.\"/h/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:0\"\n"));

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join(".codex")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join(".codex/config.toml"), "[[hooks.Stop]]\n").unwrap_or_else(|e| panic!("{e}"));
        let exe = Path::new("/opt/bin/plangate");
        let done = install(Scope::Project, dir.path(), exe, 590, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((done.gate_command.as_str(), done.stop_command.as_str()), (GATE, STOP));
        let notes = done.notes().join("\n");
        assert!(notes.contains("/hooks") && notes.contains("config.toml") && notes.contains("--scope user"), "{notes}");
        let again = install(Scope::Project, dir.path(), exe, 590, false).unwrap_or_else(|e| panic!("{e}"));
        assert!(!again.changed && again.backup.is_none());
        assert!(install(Scope::Project, dir.path(), exe, MAX_WAIT_SECS + 1, true).is_err());
    }
}
