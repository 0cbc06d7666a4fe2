//! A local install (`--scope local`) writes files that name *this
//! machine's* `plangate` binary by its absolute path
//! (`.claude/settings.local.json`, `.claude/plangate-channel.mcp.json`):
//! committed, they would block every tool call on every other machine. So
//! when the project is in a git repository that does not ignore them yet,
//! the installer adds them to the project's `.gitignore`, the way a user
//! would by hand. Outside a repository, or without `git`, nothing is done:
//! `git check-ignore` is the one authority on what git ignores (global
//! excludes, nested `.gitignore` files, `info/exclude`), so plangate never
//! guesses.

use crate::hooks_file::InstallError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What [`keep_out_of_git`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    /// Not in a git repository, or no `git` to ask: nothing to do.
    NoRepository,
    /// Every file was ignored already.
    Already,
    /// These entries were added to (or, for a dry run, would be added to)
    /// `gitignore`.
    Added { gitignore: PathBuf, entries: Vec<String> },
}

/// The comment above the entries plangate adds, so a reader knows why.
const COMMENT: &str = "# plangate hook install --scope local: these name this machine's plangate binary";

/// Make git ignore `files` (inside `project_dir`) by appending them to
/// `project_dir/.gitignore`, anchored to it, unless git ignores them
/// already. Nothing is written on a dry run.
pub fn keep_out_of_git(project_dir: &Path, files: &[PathBuf], dry_run: bool) -> Result<Ignored, InstallError> {
    let mut entries = Vec::new();
    for file in files {
        let Ok(relative) = file.strip_prefix(project_dir) else { continue };
        match ignored_by_git(project_dir, relative) {
            None => return Ok(Ignored::NoRepository),
            Some(true) => {}
            Some(false) => entries.push(anchored(relative)),
        }
    }
    if entries.is_empty() {
        return Ok(Ignored::Already);
    }
    let gitignore = project_dir.join(".gitignore");
    if !dry_run {
        append(&gitignore, &entries)?;
    }
    Ok(Ignored::Added { gitignore, entries })
}

/// `Some(ignored)` from `git check-ignore`; `None` outside a repository
/// or when git cannot be run.
fn ignored_by_git(project_dir: &Path, relative: &Path) -> Option<bool> {
    let status = Command::new("git")
        .arg("-C")
        .arg(project_dir)
        .args(["check-ignore", "-q", "--"])
        .arg(relative)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    match status.code() {
        Some(0) => Some(true),
        Some(1) => Some(false),
        _ => None,
    }
}

/// `/.claude/settings.local.json`: anchored, so it matches only that file
/// beside the `.gitignore`, with `/` separators on every platform.
fn anchored(relative: &Path) -> String {
    let parts: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    format!("/{}", parts.join("/"))
}

fn append(gitignore: &Path, entries: &[String]) -> Result<(), InstallError> {
    let io = |source| InstallError::Io { path: gitignore.to_path_buf(), source };
    let existing = match std::fs::read_to_string(gitignore) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(e)),
    };
    let mut text = existing.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(COMMENT);
    text.push('\n');
    for entry in entries {
        text.push_str(entry);
        text.push('\n');
    }
    std::fs::write(gitignore, text).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> bool {
        Command::new("git").arg("-C").arg(dir).args(args).output().is_ok_and(|o| o.status.success())
    }

    #[test]
    fn entries_are_anchored_with_forward_slashes() {
        assert_eq!(anchored(Path::new(".claude/settings.local.json")), "/.claude/settings.local.json");
    }

    #[test]
    fn outside_a_repository_nothing_is_written() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join(".claude/settings.local.json");
        assert_eq!(keep_out_of_git(dir.path(), &[file], false).expect("ok"), Ignored::NoRepository);
        assert!(!dir.path().join(".gitignore").exists());
    }

    #[test]
    fn in_a_repository_the_files_are_added_once_after_what_was_there() {
        let dir = tempfile::tempdir().expect("dir");
        assert!(git(dir.path(), &["init", "-q"]), "git init (the tests need git)");
        std::fs::write(dir.path().join(".gitignore"), "target").expect("write");
        let files = [dir.path().join(".claude/settings.local.json"), dir.path().join(".claude/plangate-channel.mcp.json")];
        let dry = keep_out_of_git(dir.path(), &files, true).expect("dry run");
        assert!(matches!(&dry, Ignored::Added { entries, .. } if entries.len() == 2), "{dry:?}");
        assert_eq!(std::fs::read_to_string(dir.path().join(".gitignore")).expect("read"), "target");
        keep_out_of_git(dir.path(), &files, false).expect("added");
        let text = std::fs::read_to_string(dir.path().join(".gitignore")).expect("read");
        assert_eq!(text, format!("target\n{COMMENT}\n/.claude/settings.local.json\n/.claude/plangate-channel.mcp.json\n"));
        assert_eq!(keep_out_of_git(dir.path(), &files, false).expect("again"), Ignored::Already);
        assert_eq!(std::fs::read_to_string(dir.path().join(".gitignore")).expect("read"), text);
    }
}
