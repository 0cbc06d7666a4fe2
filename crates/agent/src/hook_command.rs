//! The shell command a harness runs for a plangate hook:
//! `'/abs/path/plangate-hook' <harness> [|| exit 2]` when the hook-only
//! binary sits beside `plangate`, else `'/abs/path/plangate' hook <harness>
//! [|| exit 2]`.
//!
//! Claude Code and Codex both run a `command` hook through a shell and block
//! the call only on a JSON deny (exit 0) or on exit code 2; any other exit
//! code — 127 for a binary that is not there, 126 when it cannot run, 101
//! for a panic, 1, a kill by a signal — is a "non-blocking error" and the
//! tool runs. So the binary is named by its absolute path, shell-quoted (a
//! `PATH` without plangate changes nothing), and `|| exit 2` turns any
//! failure to run it into a block; the shell's own message ("not found",
//! "Killed") goes to stderr, which both harnesses show the model as the
//! reason (Codex ignores an exit 2 with an empty stderr, so that message
//! matters).
//!
//! Which binary: the harness starts the hook once per tool call, and
//! `plangate-hook` starts in a fraction of `plangate`'s time (it links only
//! the agent side: few relocations to apply, docs/PERFORMANCE.md §21b), with
//! the same answers (both run [`crate::hook_process`]). So the installers
//! write it whenever an executable `plangate-hook` is in the directory of
//! the running `plangate` (as `cargo install` and the release archives put
//! it); a `plangate` copied alone keeps `plangate hook <harness>`. Both
//! forms are recognised as ours, so re-installing replaces either.

use std::path::{Path, PathBuf};

/// Turns every failure of the command into a block.
pub const FAIL_CLOSED: &str = " || exit 2";

/// The hook-only binary's file name (`plangate-hook <harness>`).
pub const HOOK_BIN: &str = "plangate-hook";

/// The main binary's file name (`plangate hook <harness>`).
const MAIN_BIN: &str = "plangate";

/// The hook-only binary beside the `plangate` at `plangate`, if it is
/// there and executable.
pub fn hook_bin_beside(plangate: &Path) -> Option<PathBuf> {
    let bin = plangate.with_file_name(HOOK_BIN);
    (bin.is_file() && executable(&bin)).then_some(bin)
}

/// Whether `path` may be run (on Unix: any execute bit); what
/// `plangate doctor` checks too.
#[cfg(unix)]
pub fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

/// Whether `path` may be run: always, off Unix.
#[cfg(not(unix))]
pub fn executable(_: &Path) -> bool {
    true
}

/// The command for `harness` (`claude`, `codex`) of the `plangate` binary
/// at `exe` (absolute, UTF-8): the hook-only binary beside it when there is
/// one ([`hook_bin_beside`]), else `exe` itself; failing closed or not.
pub fn command_for(exe: &Path, harness: &str, fail_closed: bool) -> Result<String, String> {
    let (program, args) = match hook_bin_beside(exe) {
        Some(bin) => (bin, format!(" {harness}")),
        None => (exe.to_path_buf(), format!(" hook {harness}")),
    };
    let text = program.to_str().ok_or_else(|| format!("the path of this binary ({}) is not UTF-8", program.display()))?;
    if !program.is_absolute() {
        return Err(format!("the path of this binary ({text}) is not absolute"));
    }
    let tail = if fail_closed { FAIL_CLOSED } else { "" };
    Ok(format!("{}{args}{tail}", shell_quote(text)))
}

/// Whether `command` is `<binary named plangate> hook <harness>` or
/// `<binary named plangate-hook> <harness>`, with or without
/// [`FAIL_CLOSED`], the binary named by a quoted path or a bare word
/// (`plangate hook codex`).
pub fn is_command_for(command: &str, harness: &str) -> bool {
    parse(command, harness).is_some_and(|(path, name)| Path::new(&path).file_stem().is_some_and(|n| n == name))
}

/// The program `command` runs when it is `<program> hook <harness>` or
/// `<program> <harness>`, with or without [`FAIL_CLOSED`], the program a
/// quoted path or a bare word: what `plangate doctor` checks exists.
pub fn program_of(command: &str, harness: &str) -> Option<String> {
    parse(command, harness).map(|(program, _)| program)
}

/// The program of `command` and the binary name its form calls for:
/// `plangate` before ` hook <harness>`, `plangate-hook` before ` <harness>`.
fn parse(command: &str, harness: &str) -> Option<(String, &'static str)> {
    let c = command.trim();
    let c = c.strip_suffix(FAIL_CLOSED).unwrap_or(c);
    let rest = c.strip_suffix(harness)?;
    let (program, name) = match rest.strip_suffix(" hook ") {
        Some(program) => (program, MAIN_BIN),
        None => (rest.strip_suffix(' ')?, HOOK_BIN),
    };
    Some((shell_unquote(program.trim())?, name))
}

/// `text` as one POSIX shell word: in single quotes, each `'` as `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The inverse of [`shell_quote`] (and a bare word without quotes or spaces).
fn shell_unquote(word: &str) -> Option<String> {
    if !word.starts_with('\'') {
        let plain = !word.is_empty() && !word.contains(|c: char| c.is_whitespace() || "'\"\\$`;&|<>(){}*?[]#~".contains(c));
        return plain.then(|| word.to_string());
    }
    let mut out = String::new();
    let mut rest = word;
    loop {
        let inner = rest.strip_prefix('\'')?;
        let end = inner.find('\'')?;
        out.push_str(&inner[..end]);
        rest = &inner[end + 1..];
        if rest.is_empty() {
            return Some(out);
        }
        rest = rest.strip_prefix("\\'")?;
        out.push('\'');
        if rest.is_empty() {
            return Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_recognised_with_or_without_the_fail_closed_tail() {
        let exe = Path::new("/opt/my tools/it's/plangate");
        let closed = command_for(exe, "codex", true).unwrap_or_default();
        assert_eq!(closed, r"'/opt/my tools/it'\''s/plangate' hook codex || exit 2");
        let open = command_for(exe, "codex", false).unwrap_or_default();
        assert_eq!(open, r"'/opt/my tools/it'\''s/plangate' hook codex");
        for ours in [
            closed.as_str(),
            open.as_str(),
            "plangate hook codex",
            "/usr/bin/plangate hook codex || exit 2",
            "'/usr/bin/plangate-hook' codex || exit 2",
            "plangate-hook codex",
        ] {
            assert!(is_command_for(ours, "codex"), "{ours}");
            assert!(!is_command_for(ours, "claude"), "{ours}");
        }
        for theirs in [
            "'/usr/bin/other' hook codex",
            "'/a/plangate' hook codex; rm -rf /",
            "'/a/plangate' codex",
            "'/a/plangate-hook' hook codex",
            "'/a/plangate-hook'codex",
            "/a/plangatecodex",
        ] {
            assert!(!is_command_for(theirs, "codex"), "{theirs}");
        }
        assert_eq!(program_of("'/a b/plangate-hook' codex || exit 2", "codex").as_deref(), Some("/a b/plangate-hook"));
        assert!(command_for(Path::new("plangate"), "codex", true).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn the_hook_only_binary_beside_plangate_is_the_one_named() -> Result<(), Box<dyn std::error::Error>> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        let exe = dir.path().join("plangate");
        std::fs::write(&exe, "")?;
        let hook = dir.path().join(HOOK_BIN);
        std::fs::write(&hook, "")?;
        // Not executable: not run, so not named.
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o644))?;
        assert_eq!(hook_bin_beside(&exe), None);
        assert!(command_for(&exe, "claude", true)?.ends_with("/plangate' hook claude || exit 2"));
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))?;
        assert_eq!(hook_bin_beside(&exe), Some(hook.clone()));
        let closed = command_for(&exe, "claude", true)?;
        assert_eq!(closed, format!("{} claude || exit 2", shell_quote(hook.to_str().ok_or("UTF-8")?)));
        assert!(is_command_for(&closed, "claude") && !is_command_for(&closed, "codex"));
        assert_eq!(program_of(&closed, "claude"), hook.to_str().map(str::to_string));
        Ok(())
    }
}
