//! The agent hooks installed on this machine, without starting a harness.
//!
//! Claude Code ([`claude`]): each settings file that holds plangate's
//! handlers (local, project, user scope) has the gate (`PreToolUse` on every
//! tool), and every handler names a binary that exists. A gate whose binary
//! is gone blocks every tool call (it fails closed), and a file with only
//! the observing handlers gates nothing; neither is visible until a session
//! runs.
//!
//! Codex ([`codex`]): installed but not trusted in Codex's `config.toml`,
//! the hooks gate nothing, and Codex does not say so; and, as for Claude
//! Code, the binary they name must exist.

use super::Check;
use plangate_agent::hook_command::{executable, program_of};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every plangate handler in a hooks file: `(event, matcher, command)`.
fn ours(hooks: &Value, is_ours: fn(&str) -> bool) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for (event, groups) in hooks["hooks"].as_object().into_iter().flatten() {
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group["matcher"].as_str().unwrap_or_default().to_string();
            for handler in group["hooks"].as_array().into_iter().flatten() {
                if let Some(command) = handler["command"].as_str().filter(|c| is_ours(c)) {
                    found.push((event.clone(), matcher.clone(), command.to_string()));
                }
            }
        }
    }
    found
}

/// Each hooks file of `scopes` that exists and reads as JSON, once (two
/// scopes may name one file, e.g. a project in the home directory).
fn files<S: Copy, E>(scopes: &[S], path_of: impl Fn(S) -> Result<PathBuf, E>) -> Vec<(S, PathBuf, Value)> {
    let mut files: Vec<(S, PathBuf, Value)> = Vec::new();
    for &scope in scopes {
        let Ok(path) = path_of(scope) else { continue };
        if files.iter().any(|(_, seen, _)| *seen == path) {
            continue;
        }
        if let Some(value) = plangate_agent::hooks_file::peek(&path) {
            files.push((scope, path, value));
        }
    }
    files
}

/// Where `program` is: an absolute path to an executable file, or a bare
/// word found on `PATH` (what the harness's shell would run).
fn locate(program: &str) -> Result<PathBuf, String> {
    let path = Path::new(program);
    let found = if path.is_absolute() {
        Some(path.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|dirs| std::env::split_paths(&dirs).map(|d| d.join(program)).find(|p| p.is_file()))
    };
    match found {
        None => Err(format!("runs `{program}`, which is not on this PATH")),
        Some(p) if !p.is_file() => Err(format!("runs {}, which does not exist", p.display())),
        Some(p) if !executable(&p) => Err(format!("runs {}, which is not executable", p.display())),
        Some(p) => Ok(p),
    }
}

/// One failing check per binary the handlers name that cannot run; the
/// binaries that can, for the passing line.
fn binaries(what: &str, found: &[(String, String, String)], harness: &str, fix: &str, checks: &mut Vec<Check>) -> Vec<String> {
    let mut programs: Vec<String> = found.iter().filter_map(|(_, _, command)| program_of(command, harness)).collect();
    programs.sort();
    programs.dedup();
    let mut good = Vec::new();
    for program in programs {
        match locate(&program) {
            Ok(path) => good.push(path.display().to_string()),
            Err(e) => checks.push(Check::fail(
                what,
                format!("{e}: the gate fails closed, so every tool call is blocked; {fix} with the plangate binary you mean to keep"),
            )),
        }
    }
    good
}

/// Claude Code's settings files with plangate hooks in them, one check per
/// problem (or one passing line per file).
pub(super) fn claude(project_dir: &Path) -> Vec<Check> {
    use plangate_agent::claude::{install, is_hook_command, HARNESS};
    let mut checks = Vec::new();
    for (scope, path, settings) in files(&install::Scope::ALL, |scope| install::settings_path(scope, project_dir)) {
        let found = ours(&settings, is_hook_command);
        if found.is_empty() {
            continue;
        }
        let what = format!("claude hooks {}", path.display());
        let fix = format!("run `plangate hook install claude --scope {}` in {}", scope.name(), project_dir.display());
        let failed = checks.len();
        let gate = found.iter().any(|(event, matcher, _)| event == "PreToolUse" && matches!(matcher.as_str(), "*" | ""));
        if !gate {
            checks.push(Check::fail(&what, format!("no PreToolUse gate on every tool, so Claude Code's tool calls are not gated; {fix}")));
        }
        let good = binaries(&what, &found, HARNESS, &fix, &mut checks);
        if checks.len() == failed {
            checks
                .push(Check::pass(what, format!("{} plangate handlers, the gate on every tool, running {}", found.len(), good.join(", "))));
        }
    }
    checks
}

/// plangate's Codex hooks, one check per hooks file that has them (this
/// project's `.codex/hooks.json`, the user's `$CODEX_HOME/hooks.json`):
/// whether Codex runs them, i.e. whether the user's `config.toml` trusts
/// each one at its current hash. Codex skips an untrusted hook without a
/// word, so an installed gate that is not trusted gates nothing; a hash
/// that changed (the binary moved, another `--wait`) is the same. Computed
/// from the two files ([`plangate_agent::codex::trust`]), without starting
/// Codex. Then, as for Claude Code, whether the binary they name exists.
pub(super) fn codex(project_dir: &Path) -> Vec<Check> {
    use plangate_agent::codex::{install, is_hook_command, trust, HARNESS};
    let mut checks = Vec::new();
    for (scope, path, hooks) in files(&install::Scope::ALL, |scope| install::hooks_path(scope, project_dir)) {
        if trust::plangate_hooks(&path, &hooks).is_empty() {
            continue;
        }
        let what = format!("codex hooks {}", path.display());
        let (flag, from) = match scope {
            install::Scope::Project => ("", format!(" in {}", project_dir.display())),
            install::Scope::User => (" --scope user", String::new()),
        };
        let fix = format!("run `plangate hook install codex{flag} --trust`{from}");
        checks.push(match trust::review(&path, &hooks) {
            Ok(review) if review.all_trusted() => {
                Check::pass(&what, format!("Codex runs them: {} trusted in {}", review.hooks.len(), review.config.display()))
            }
            Ok(review) => Check::fail(
                &what,
                format!(
                    "{} in {}; Codex skips such hooks without a word, so nothing is gated: {fix}, or review them in Codex's /hooks dialog",
                    review.problems(),
                    review.config.display()
                ),
            ),
            Err(e) => Check::fail(&what, format!("cannot tell whether Codex trusts them: {e}")),
        });
        binaries(&what, &ours(&hooks, is_hook_command), HARNESS, &fix, &mut checks);
    }
    checks
}
