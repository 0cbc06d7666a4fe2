//! A harness's JSON hooks file — Claude Code's `settings.json`, Codex's
//! `hooks.json` — and the installers' shared rules for changing it.
//!
//! Both harnesses use one shape: `{"hooks": {"<Event>": [{"matcher": …,
//! "hooks": [{"type": "command", "command": …, "timeout": …}]}]}}`. An
//! installer [`merge`]s its matcher groups in: plangate's handlers are taken
//! out of whatever group they are in and put back as the installer's groups,
//! first in their event; a group that held only plangate's handler goes, one
//! the user shares keeps the user's handlers; every other key and hook is
//! kept. [`write`] keeps the previous file as `<file>.bak-<UTC timestamp>`
//! and replaces the file atomically; an unchanged file is not rewritten.
//! Keys come out in sorted order (the file is re-serialized).

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use thiserror::Error;

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

/// One matcher group an installer owns.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub event: &'a str,
    /// `None` for events that take no matcher (Codex's `Stop`).
    pub matcher: Option<&'a str>,
    /// The group's single handler.
    pub handler: Value,
}

/// `settings` with `groups` merged in; `is_ours` recognises plangate's
/// handlers (also those of older versions and of a binary since moved).
pub fn merge(mut settings: Value, groups: &[Group], is_ours: impl Fn(&Value) -> bool) -> Result<Value, String> {
    let root = settings.as_object_mut().ok_or("the file is not a JSON object")?;
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks.as_object_mut().ok_or("`hooks` is not an object")?;
    for group in groups {
        let event = group.event;
        let existing = hooks.entry(event).or_insert_with(|| json!([]));
        let existing = existing.as_array_mut().ok_or_else(|| format!("`hooks.{event}` is not an array"))?;
        let mut kept = Vec::with_capacity(existing.len() + 1);
        for mut theirs in existing.drain(..) {
            let Some(handlers) = theirs.get_mut("hooks").and_then(Value::as_array_mut) else {
                kept.push(theirs);
                continue;
            };
            let before = handlers.len();
            handlers.retain(|h| !is_ours(h));
            // A group that held only our handler goes; one the user shares keeps theirs.
            if !(handlers.is_empty() && before > 0) {
                kept.push(theirs);
            }
        }
        let mut ours = Map::new();
        if let Some(matcher) = group.matcher {
            ours.insert("matcher".to_string(), json!(matcher));
        }
        ours.insert("hooks".to_string(), json!([group.handler]));
        kept.insert(0, Value::Object(ours));
        *existing = kept;
    }
    Ok(settings)
}

/// Whether `settings` holds a handler `is_ours` recognises, in any event.
pub fn has_ours(settings: &Value, is_ours: impl Fn(&Value) -> bool) -> bool {
    let Some(hooks) = settings.get("hooks").and_then(Value::as_object) else {
        return false;
    };
    hooks
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .any(is_ours)
}

/// Whether the handler runs a command `is_command` recognises.
pub fn runs(handler: &Value, is_command: impl Fn(&str) -> bool) -> bool {
    handler.get("command").and_then(Value::as_str).is_some_and(is_command)
}

/// The file's text and JSON value; `None` when there is no file. An empty
/// file reads as `{}`.
pub fn read(path: &Path) -> Result<Option<(String, Value)>, InstallError> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Some((text, json!({})))),
        Ok(text) => {
            let value = serde_json::from_str(&text).map_err(|source| InstallError::InvalidJson { path: path.to_path_buf(), source })?;
            Ok(Some((text, value)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Io { path: path.to_path_buf(), source }),
    }
}

/// The value of the file at `path`, when it is a JSON file at all (for
/// "plangate is also installed there" notes: anything unreadable is no).
pub fn peek(path: &Path) -> Option<Value> {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok())
}

/// Write `value` (pretty, with a final newline) to `path`: the directory is
/// created, the `previous` text (when there was a file) is kept as a backup
/// first, and the file is replaced atomically. Returns the backup's path.
pub fn write(path: &Path, previous: Option<&str>, value: &Value) -> Result<Option<PathBuf>, InstallError> {
    let mut out = serde_json::to_string_pretty(value).unwrap_or_default();
    out.push('\n');
    write_text(path, previous, &out)
}

/// [`write`] for a file kept as text (Codex's `config.toml`, edited in
/// place so its comments survive). The backup and the new file get the old
/// file's permissions: a `config.toml` readable only by its owner may hold
/// secrets, and neither copy should be more readable than the original.
pub fn write_text(path: &Path, previous: Option<&str>, text: &str) -> Result<Option<PathBuf>, InstallError> {
    let io = |source| InstallError::Io { path: path.to_path_buf(), source };
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir).map_err(io)?;
    let permissions = std::fs::metadata(path).ok().map(|m| m.permissions());
    // Each copy is created empty and given its permissions before the text goes in.
    let create = |file: &Path, contents: &str| -> Result<(), InstallError> {
        let io = |source| InstallError::Io { path: file.to_path_buf(), source };
        let mut out = std::fs::File::create(file).map_err(io)?;
        if let Some(p) = &permissions {
            std::fs::set_permissions(file, p.clone()).map_err(io)?;
        }
        std::io::Write::write_all(&mut out, contents.as_bytes()).map_err(io)
    };
    let backup = match previous {
        Some(old) => {
            let backup = backup_path(path);
            create(&backup, old)?;
            Some(backup)
        }
        None => None,
    };
    let tmp = dir.join(format!(".{}.plangate-{}", file_name(path), std::process::id()));
    create(&tmp, text)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(backup)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "hooks.json".to_string())
}

/// `settings.json.bak-20260401T120000Z`, with `-2`, `-3`… if taken.
fn backup_path(path: &Path) -> PathBuf {
    let stamp: String =
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string().chars().filter(|c| *c != '-' && *c != ':').collect();
    let name = file_name(path);
    let first = path.with_file_name(format!("{name}.bak-{stamp}"));
    if !first.exists() {
        return first;
    }
    (2..).map(|n| path.with_file_name(format!("{name}.bak-{stamp}-{n}"))).find(|p| !p.exists()).unwrap_or(first)
}

/// The running binary, as an installed command names it: absolute, with
/// symbolic links resolved.
pub fn current_binary() -> Result<PathBuf, InstallError> {
    let exe = std::env::current_exe().map_err(|e| InstallError::Usage(format!("cannot find the path of this binary: {e}")))?;
    exe.canonicalize().map_err(|source| InstallError::Io { path: exe, source })
}

/// `$VAR` when set and not empty, as a path.
pub fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_without_a_matcher_and_backups_that_do_not_clobber() -> Result<(), Box<dyn std::error::Error>> {
        let is_ours = |h: &Value| runs(h, |c| c == "ours");
        let stop = Group { event: "Stop", matcher: None, handler: json!({"type": "command", "command": "ours"}) };
        let merged = merge(json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "theirs"}]}]}}), &[stop], is_ours)?;
        assert_eq!(merged["hooks"]["Stop"][0], json!({"hooks": [{"type": "command", "command": "ours"}]}));
        assert_eq!(merged["hooks"]["Stop"][1]["hooks"][0]["command"], "theirs");
        assert!(has_ours(&merged, is_ours));

        let dir = tempfile::tempdir()?;
        let path = dir.path().join("nested/hooks.json");
        assert!(read(&path)?.is_none());
        assert_eq!(write(&path, None, &merged)?, None);
        let first = write(&path, Some("one"), &merged)?.ok_or("no backup")?;
        let second = write(&path, Some("two"), &merged)?.ok_or("no backup")?;
        assert_ne!(first, second);
        assert_eq!((std::fs::read_to_string(&first)?, std::fs::read_to_string(&second)?), ("one".to_string(), "two".to_string()));
        assert_eq!(read(&path)?.map(|(_, v)| v), Some(merged));
        std::fs::write(&path, "{ nope")?;
        assert!(matches!(read(&path), Err(InstallError::InvalidJson { .. })));
        Ok(())
    }
}
