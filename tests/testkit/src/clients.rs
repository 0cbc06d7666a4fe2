//! The pinned real agent clients: Claude Code and the Codex CLI, installed
//! by `.ci/install-clients` from the npm registry into
//! `$PLANGATE_CLIENTS_DIR` (default `$HOME/.cache/plangate-clients`).
//!
//! [`claude_code`] and [`codex`] find the native binaries the npm packages
//! carry, check that `--version` says the pinned version, and otherwise skip
//! the test loudly (or fail it under `PLANGATE_REQUIRE_ALL`, see
//! [`crate::skip`]):
//!
//! ```ignore
//! let Some(claude) = plangate_testkit::clients::claude_code() else { return };
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The Claude Code version the tests are written against
/// (`@anthropic-ai/claude-code`).
pub const CLAUDE_CODE_VERSION: &str = "2.1.328";
/// The Codex CLI version the tests are written against (`@openai/codex`).
pub const CODEX_VERSION: &str = "0.169.0";
/// Where the clients are installed; `$HOME/.cache/plangate-clients` when unset.
pub const CLIENTS_DIR_ENV: &str = "PLANGATE_CLIENTS_DIR";
/// What to do when a client is missing.
pub const INSTALL_HINT: &str = "run .ci/install-clients";

/// The native Claude Code binary inside the npm package.
pub const CLAUDE_CODE_BIN: &str = "node_modules/@anthropic-ai/claude-code-linux-x64/claude";
/// The native Codex binary inside the npm package.
pub const CODEX_BIN: &str = "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex";

/// A Claude Code binary of the pinned version.
#[derive(Debug, Clone)]
pub struct ClaudeCode {
    pub bin: PathBuf,
}

/// A Codex CLI binary of the pinned version.
#[derive(Debug, Clone)]
pub struct Codex {
    pub bin: PathBuf,
}

/// `$PLANGATE_CLIENTS_DIR`, else `$HOME/.cache/plangate-clients`.
pub fn clients_dir() -> PathBuf {
    match std::env::var_os(CLIENTS_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache/plangate-clients"),
    }
}

/// The pinned Claude Code, or `None` after saying loudly that the test is
/// skipped (a panic under `PLANGATE_REQUIRE_ALL`).
pub fn claude_code() -> Option<ClaudeCode> {
    crate::skip::require(&format!("Claude Code {CLAUDE_CODE_VERSION}"), INSTALL_HINT, find_claude_code())
}

/// The pinned Codex CLI, or `None` after saying loudly that the test is
/// skipped (a panic under `PLANGATE_REQUIRE_ALL`).
pub fn codex() -> Option<Codex> {
    crate::skip::require(&format!("Codex {CODEX_VERSION}"), INSTALL_HINT, find_codex())
}

/// The pinned Claude Code, or why it is not usable. Checked once per process.
pub fn find_claude_code() -> Result<ClaudeCode, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let bin = clients_dir().join(CLAUDE_CODE_BIN);
            // `2.1.328 (Claude Code)`
            check_version(&bin, |out| out.split_whitespace().next() == Some(CLAUDE_CODE_VERSION)).map(|()| bin)
        })
        .clone()
        .map(|bin| ClaudeCode { bin })
}

/// The pinned Codex CLI, or why it is not usable. Checked once per process.
pub fn find_codex() -> Result<Codex, String> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let bin = clients_dir().join(CODEX_BIN);
            // `codex-cli 0.169.0`
            check_version(&bin, |out| out.split_whitespace().nth(1) == Some(CODEX_VERSION)).map(|()| bin)
        })
        .clone()
        .map(|bin| Codex { bin })
}

/// Run `bin --version` (10 s at most) and check its first line.
fn check_version(bin: &Path, matches: impl Fn(&str) -> bool) -> Result<(), String> {
    if !bin.is_file() {
        return Err(format!("no {}", bin.display()));
    }
    let mut child = Command::new(bin)
        .arg("--version")
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{} --version: {e}", bin.display()))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} --version did not answer within 10 s", bin.display()));
            }
            Err(e) => return Err(format!("{} --version: {e}", bin.display())),
        }
    }
    let out = child.wait_with_output().map_err(|e| format!("{} --version: {e}", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("").trim();
    if matches(first) {
        Ok(())
    } else {
        Err(format!("{} --version says {first:?}", bin.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_says_where_it_was_looked_for() {
        let err = check_version(Path::new("/nonexistent/claude"), |_| true).unwrap_err();
        assert_eq!(err, "no /nonexistent/claude");
    }

    #[test]
    fn a_wrong_version_says_what_it_found() {
        // `/bin/echo --version` prints `--version`… or GNU's own version line.
        let err = check_version(Path::new("/bin/echo"), |_| false).unwrap_err();
        assert!(err.starts_with("/bin/echo --version says"), "{err}");
    }
}
