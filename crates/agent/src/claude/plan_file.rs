//! Claude Code's plan file: the one file its plan mode lets the model write.
//!
//! Claude Code 2.1.328's `ExitPlanMode` takes no plan parameter. Its
//! plan-mode system prompt tells the model to write the plan with `Write`
//! to a `.md` file in the plans directory ("the only file you are allowed to
//! edit"), and `ExitPlanMode` then reaches the hook with `plan` and
//! `planFilePath` read from that file. A gate that denies that `Write`
//! makes a plan impossible to propose, so the hook recognises it here and
//! tells the server (`plan_file` on `POST /v1/gate`), which allows it while
//! planning ([`plangate_engine::gate_call`]).
//!
//! Only this is a plan file, checked on this machine (plangate cannot see
//! it):
//! * the tool is `Write`, `Edit` or `MultiEdit` and its `file_path` is
//!   absolute, has no `.` or `..` component, and ends in `.md`;
//! * its parent is the plans directory: `plansDirectory` from Claude Code's
//!   settings (managed, then the project's `.claude/settings.local.json` and
//!   `.claude/settings.json`, then the user's), resolved against the project
//!   root and only if it stays inside it — Claude Code's own rule, which
//!   falls back to the default otherwise — else `$CLAUDE_CONFIG_DIR/plans`
//!   or `~/.claude/plans`;
//! * the plans directory is a directory, not a link to one (or does not
//!   exist yet: in a new HOME the plan's `Write` creates it);
//! * the file, if it exists, is a regular file with one link (not a
//!   symlink, not a hard link to something else).
//!
//! Anything else is an ordinary write, judged by the gate as usual.

use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// The tools that write the plan file.
const PLAN_FILE_TOOLS: [&str; 3] = ["Write", "Edit", "MultiEdit"];

/// Where Claude Code's managed settings live on Linux.
const MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

/// The environment and project a hook runs in, for finding the plans
/// directory. Read from the process environment by [`Environment::current`];
/// tests build one by hand.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`.
    pub config_dir: Option<PathBuf>,
    /// The project root: `$CLAUDE_PROJECT_DIR`, else the hook input's `cwd`.
    pub project_dir: Option<PathBuf>,
    /// Managed settings file (`/etc/claude-code/managed-settings.json`).
    pub managed_settings: Option<PathBuf>,
}

impl Environment {
    /// The hook's environment, with `cwd` from the hook input as the project
    /// root when Claude Code did not set `CLAUDE_PROJECT_DIR`.
    pub fn current(cwd: Option<&str>) -> Environment {
        let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        Environment {
            home: non_empty("HOME"),
            config_dir: non_empty("CLAUDE_CONFIG_DIR"),
            project_dir: non_empty("CLAUDE_PROJECT_DIR").or_else(|| cwd.filter(|c| !c.is_empty()).map(PathBuf::from)),
            managed_settings: Some(PathBuf::from(MANAGED_SETTINGS)),
        }
    }

    /// Claude Code's user config directory: `$CLAUDE_CONFIG_DIR` or `~/.claude`.
    fn user_dir(&self) -> Option<PathBuf> {
        self.config_dir.clone().or_else(|| self.home.as_ref().map(|h| h.join(".claude")))
    }

    /// The plans directory Claude Code 2.1.328 uses (see the module docs).
    pub fn plans_dir(&self) -> Option<PathBuf> {
        let default = self.user_dir().map(|d| d.join("plans"));
        let Some(setting) = self.plans_directory_setting() else { return default };
        let Some(root) = self.project_dir.as_deref().filter(|r| r.is_absolute()) else { return default };
        let resolved = lexical_join(root, Path::new(&setting));
        match resolved {
            Some(dir) if dir.starts_with(root) && dir != root => match (dir.canonicalize(), root.canonicalize()) {
                // No link out of the project, as Claude Code checks.
                (Ok(real), Ok(real_root)) if real.starts_with(&real_root) => Some(dir),
                (Err(_), _) => Some(dir),
                _ => default,
            },
            _ => default,
        }
    }

    /// `plansDirectory` from the first settings file that sets it, in
    /// Claude Code's precedence.
    fn plans_directory_setting(&self) -> Option<String> {
        let mut files = Vec::new();
        files.extend(self.managed_settings.clone());
        if let Some(project) = &self.project_dir {
            files.push(project.join(".claude/settings.local.json"));
            files.push(project.join(".claude/settings.json"));
        }
        files.extend(self.user_dir().map(|d| d.join("settings.json")));
        files.iter().find_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            value.get("plansDirectory")?.as_str().map(str::trim).filter(|s| !s.is_empty() && !s.contains('\\')).map(str::to_string)
        })
    }
}

/// `base` joined with `rel` without touching the disk, refusing `..` that
/// climbs above `base`'s root; `.` components dropped.
fn lexical_join(base: &Path, rel: &Path) -> Option<PathBuf> {
    let mut out = if rel.is_absolute() { PathBuf::new() } else { base.to_path_buf() };
    for c in rel.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Whether `tool` with `input` writes only Claude Code's plan file.
pub fn is_plan_file_write(tool: &str, input: &Value, env: &Environment) -> bool {
    if !PLAN_FILE_TOOLS.contains(&tool) {
        return false;
    }
    let Some(path) = input.get("file_path").and_then(Value::as_str) else { return false };
    let Some(plans) = env.plans_dir() else { return false };
    is_file_in(Path::new(path), &plans)
}

/// `file` is a `.md` file directly inside `dir` (see the module docs).
fn is_file_in(file: &Path, dir: &Path) -> bool {
    let plain = file.is_absolute() && file.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain || file.extension().is_none_or(|e| e != "md") || file.parent() != Some(dir) {
        return false;
    }
    // The directory itself: a real directory, not a link to one; or not
    // there yet (a new HOME: `Write` creates it, as a real directory).
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_dir() => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
        _ => return false,
    }
    match std::fs::symlink_metadata(file) {
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        Ok(meta) => meta.file_type().is_file() && single_link(&meta),
    }
}

#[cfg(unix)]
fn single_link(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.nlink() == 1
}

#[cfg(not(unix))]
fn single_link(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Home {
        _dir: tempfile::TempDir,
        env: Environment,
        plans: PathBuf,
        project: PathBuf,
    }

    fn home() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical tempdir");
        let plans = root.join("home/.claude/plans");
        let project = root.join("project");
        std::fs::create_dir_all(&plans).expect("plans dir");
        std::fs::create_dir_all(project.join(".claude")).expect("project");
        let env =
            Environment { home: Some(root.join("home")), config_dir: None, project_dir: Some(project.clone()), managed_settings: None };
        Home { _dir: dir, env, plans, project }
    }

    fn write(path: &Path) -> Value {
        json!({"file_path": path.to_string_lossy(), "content": "# Plan"})
    }

    #[test]
    fn a_markdown_file_directly_in_the_plans_dir_is_the_plan_file() {
        let h = home();
        assert!(is_plan_file_write("Write", &write(&h.plans.join("brave-otter.md")), &h.env));
        assert!(is_plan_file_write("Edit", &write(&h.plans.join("brave-otter.md")), &h.env));
        for (tool, path) in [
            ("Bash", h.plans.join("a.md")),
            ("Write", h.plans.join("a.txt")),
            ("Write", h.plans.join("sub/a.md")),
            ("Write", h.plans.join("../settings.md")),
            ("Write", h.project.join("README.md")),
            ("Write", PathBuf::from("plans/a.md")),
        ] {
            assert!(!is_plan_file_write(tool, &write(&path), &h.env), "{tool} {path:?}");
        }
        assert!(!is_plan_file_write("Write", &json!({"content": "x"}), &h.env));
        // A new HOME has no plans directory yet: the plan's Write creates it.
        std::fs::remove_dir_all(&h.plans).expect("rm plans");
        assert!(is_plan_file_write("Write", &write(&h.plans.join("first.md")), &h.env));
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_the_plans_dir_are_not_the_plan_file() {
        let h = home();
        // The file is a link to the project's README.
        std::fs::write(h.project.join("README.md"), "readme").expect("readme");
        std::os::unix::fs::symlink(h.project.join("README.md"), h.plans.join("link.md")).expect("symlink");
        assert!(!is_plan_file_write("Write", &write(&h.plans.join("link.md")), &h.env));
        // A hard link to it.
        std::fs::hard_link(h.project.join("README.md"), h.plans.join("hard.md")).expect("hard link");
        assert!(!is_plan_file_write("Write", &write(&h.plans.join("hard.md")), &h.env));
        // The plans directory replaced by a link into the project.
        let plans = h.plans.clone();
        std::fs::remove_dir_all(&plans).expect("rm plans");
        std::os::unix::fs::symlink(&h.project, &plans).expect("symlink dir");
        assert!(!is_plan_file_write("Write", &write(&plans.join("README.md")), &h.env));
    }

    #[test]
    fn plans_directory_is_honoured_inside_the_project_only() {
        let h = home();
        std::fs::write(h.project.join(".claude/settings.json"), r#"{"plansDirectory": "docs/plans"}"#).expect("settings");
        let custom = h.project.join("docs/plans");
        std::fs::create_dir_all(&custom).expect("custom dir");
        assert_eq!(h.env.plans_dir(), Some(custom.clone()));
        assert!(is_plan_file_write("Write", &write(&custom.join("p.md")), &h.env));
        assert!(!is_plan_file_write("Write", &write(&h.plans.join("p.md")), &h.env));
        // The local file wins over the shared one.
        std::fs::write(h.project.join(".claude/settings.local.json"), r#"{"plansDirectory": "plans-local"}"#).expect("local");
        assert_eq!(h.env.plans_dir(), Some(h.project.join("plans-local")));
        // Outside the project: Claude Code falls back to the default, and so does the hook.
        std::fs::write(h.project.join(".claude/settings.local.json"), r#"{"plansDirectory": "../elsewhere"}"#).expect("local");
        assert_eq!(h.env.plans_dir(), Some(h.plans.clone()));
        std::fs::write(h.project.join(".claude/settings.local.json"), r#"{"plansDirectory": "/etc"}"#).expect("local");
        assert_eq!(h.env.plans_dir(), Some(h.plans.clone()));
    }
}
