//! The shell command a harness runs for a plangate hook:
//! `'/abs/path/plangate' hook <harness> [|| exit 2]`.
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

use std::path::Path;

/// Turns every failure of the command into a block.
pub const FAIL_CLOSED: &str = " || exit 2";

/// The command for the binary at `exe` (absolute, UTF-8) with `args` (with
/// its leading space, e.g. `" hook claude"`), failing closed or not.
pub fn command_for(exe: &Path, args: &str, fail_closed: bool) -> Result<String, String> {
    let text = exe.to_str().ok_or_else(|| format!("the path of this binary ({}) is not UTF-8", exe.display()))?;
    if !exe.is_absolute() {
        return Err(format!("the path of this binary ({text}) is not absolute"));
    }
    let tail = if fail_closed { FAIL_CLOSED } else { "" };
    Ok(format!("{}{args}{tail}", shell_quote(text)))
}

/// Whether `command` is `<quoted path to a binary named plangate><args>`,
/// with or without [`FAIL_CLOSED`], the binary named by a quoted path or a
/// bare word (`plangate hook codex`).
pub fn is_command_for(command: &str, args: &str) -> bool {
    program_of(command, args).is_some_and(|path| Path::new(&path).file_stem().is_some_and(|n| n == "plangate"))
}

/// The program `command` runs when it is `<program><args>` with or without
/// [`FAIL_CLOSED`], the program a quoted path or a bare word: what
/// `plangate doctor` checks exists.
pub fn program_of(command: &str, args: &str) -> Option<String> {
    let c = command.trim();
    let c = c.strip_suffix(FAIL_CLOSED).unwrap_or(c);
    shell_unquote(c.strip_suffix(args)?.trim())
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
        let closed = command_for(exe, " hook codex", true).unwrap_or_default();
        assert_eq!(closed, r"'/opt/my tools/it'\''s/plangate' hook codex || exit 2");
        let open = command_for(exe, " hook codex", false).unwrap_or_default();
        assert_eq!(open, r"'/opt/my tools/it'\''s/plangate' hook codex");
        for ours in [closed.as_str(), open.as_str(), "plangate hook codex", "/usr/bin/plangate hook codex || exit 2"] {
            assert!(is_command_for(ours, " hook codex"), "{ours}");
            assert!(!is_command_for(ours, " hook claude"), "{ours}");
        }
        assert!(!is_command_for("'/usr/bin/other' hook codex", " hook codex"));
        assert!(!is_command_for("'/a/plangate' hook codex; rm -rf /", " hook codex"));
        assert!(command_for(Path::new("plangate"), " hook codex", true).is_err());
    }
}
