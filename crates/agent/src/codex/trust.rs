//! Codex's hook trust: `plangate hook install codex --trust`, the installer's
//! warning and `plangate doctor`.
//!
//! Why this exists: Codex runs a non-managed hook (one from a `hooks.json`
//! or `[hooks]` tables, as opposed to one an administrator pushes) only once
//! the user has trusted it, and it says nothing about one it skips. Trusting
//! is a choice in the `/hooks` dialog of the interactive CLI, which a
//! headless `codex exec` never shows: without it a freshly installed gate is
//! silently not run and every mutation goes through. Codex 0.169.0 records
//! each trusted hook in the user's `config.toml` as
//!
//! ```toml
//! [hooks.state."/home/me/.codex/hooks.json:pre_tool_use:0:0"]
//! trusted_hash = "sha256:88167b2d…"
//! ```
//!
//! and runs the hook while the hash it computes for it now equals the
//! recorded one (`codex-rs/hooks/src/engine/discovery.rs`,
//! `append_matcher_groups` and `command_hook_hash`). plangate computes the
//! same key and hash, so it can write that entry itself (`--trust`) and tell
//! a hook that is trusted from one that is not without starting Codex
//! (`doctor`).
//!
//! **Key** ([`hook_key`]): `<source>:<event>:<group>:<handler>`. `<source>`
//! is the hooks file's path, the config folder's with symbolic links
//! resolved (`$CODEX_HOME` is canonicalized, a project's `.codex` is found
//! from Codex's working directory); `<event>` is the event in snake case
//! (`PreToolUse` → `pre_tool_use`); `<group>` and `<handler>` are the 0-based
//! positions of the matcher group in the event's array and of the handler in
//! the group, counting every group and handler in the file. So the key moves
//! when a group is inserted before plangate's, which is one reason the
//! installer puts plangate's groups first.
//!
//! **Hash** ([`hook_hash`]): `sha256:` and the lowercase hex SHA-256 of the
//! compact JSON, object keys sorted at every level, of the hook's normalized
//! identity `{"event_name": <event in snake case>, "matcher": …, "hooks":
//! [{"type": "command", "command": …, "timeout": …, "async": …,
//! "statusMessage": …}]}`: `matcher` only when the group has one and the
//! event uses matchers (`Stop` and `UserPromptSubmit` do not), `timeout` the
//! handler's or 600 and at least 1, `async` the handler's or `false`,
//! `statusMessage` only when set. (Codex builds that value as a TOML value
//! and hashes its JSON, which drops absent fields.) The hash is of the
//! content only, not of the file's path: the same hook in the user's and in a
//! project's file hashes alike but has two keys.
//!
//! **Where**: `$CODEX_HOME/config.toml` (`~/.codex/config.toml`), for both
//! scopes. Codex reads `hooks.state` only from the user's layer (and from
//! `-c` overrides), never from a project's `.codex/config.toml`, so a
//! repository cannot trust its own hooks (`config_rules.rs`,
//! `hook_states_from_stack`); an entry with `enabled = false` turns the hook
//! off whatever its hash.
//!
//! All of it was checked against the real Codex 0.169.0: `codex app-server`'s
//! `hooks/list` reports the same keys and hashes for the files plangate
//! writes, and the hooks turn `trusted` once these entries are in
//! `config.toml` (the vectors are in the tests below).

use super::install::codex_home;
use super::is_hook_command;
use crate::hooks_file::{self, InstallError};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use thiserror::Error;
use toml_edit::{DocumentMut, Item, Table};

#[derive(Debug, Error)]
pub enum TrustError {
    #[error("neither CODEX_HOME nor HOME is set: cannot find Codex's config.toml")]
    NoHome,
    #[error("{path} is not valid TOML ({source}); fix it or move it away, nothing was changed")]
    InvalidToml { path: PathBuf, source: Box<toml_edit::TomlError> },
    #[error("{path}: {problem}; nothing was changed")]
    Shape { path: PathBuf, problem: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// One of plangate's handlers in a hooks file, as Codex identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexHook {
    /// The event as the file names it (`PreToolUse`).
    pub event: String,
    /// The `hooks.state` key.
    pub key: String,
    /// What `trusted_hash` must be for Codex to run it.
    pub hash: String,
}

/// Whether Codex runs a hook, by its `hooks.state` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    Trusted,
    /// No `trusted_hash` recorded: never reviewed.
    Untrusted,
    /// A `trusted_hash` of something else: the hook changed since it was
    /// trusted (a moved binary, another `--wait`), and Codex asks again.
    Modified {
        recorded: String,
    },
    /// `enabled = false`: off, trusted or not.
    Disabled,
}

impl Trust {
    /// What a user reads after the event's name.
    pub fn describe(&self) -> &'static str {
        match self {
            Trust::Trusted => "trusted",
            Trust::Untrusted => "not trusted",
            Trust::Modified { .. } => "changed since it was trusted (binary moved or --wait changed)",
            Trust::Disabled => "disabled (enabled = false)",
        }
    }
}

/// plangate's hooks in one hooks file and whether Codex runs them.
#[derive(Debug, Clone)]
pub struct Review {
    pub hooks_path: PathBuf,
    /// The `config.toml` the trust is recorded in.
    pub config: PathBuf,
    pub hooks: Vec<(CodexHook, Trust)>,
}

impl Review {
    /// Whether Codex runs every one of plangate's hooks in the file.
    pub fn all_trusted(&self) -> bool {
        self.hooks.iter().all(|(_, t)| *t == Trust::Trusted)
    }

    /// `PreToolUse not trusted, Stop disabled (enabled = false)`.
    pub fn problems(&self) -> String {
        let problems: Vec<String> =
            self.hooks.iter().filter(|(_, t)| *t != Trust::Trusted).map(|(h, t)| format!("{} {}", h.event, t.describe())).collect();
        problems.join(", ")
    }
}

/// What [`trust`] did.
#[derive(Debug, Clone)]
pub struct Trusted {
    pub config: PathBuf,
    pub hooks: Vec<CodexHook>,
    /// False when `config.toml` already trusted exactly these.
    pub changed: bool,
    pub backup: Option<PathBuf>,
    pub dry_run: bool,
    /// The hooks that stay off anyway (`enabled = false`), which `--trust`
    /// leaves to the user.
    pub disabled: Vec<CodexHook>,
}

impl Trusted {
    /// The state [`trust`] leaves: every hook trusted but the disabled ones.
    pub fn review(&self, hooks_path: &Path) -> Review {
        let hooks =
            self.hooks.iter().map(|h| (h.clone(), if self.disabled.contains(h) { Trust::Disabled } else { Trust::Trusted })).collect();
        Review { hooks_path: hooks_path.to_path_buf(), config: self.config.clone(), hooks }
    }
}

/// Codex's `config.toml`: `$CODEX_HOME/config.toml`, else
/// `~/.codex/config.toml`.
pub fn config_path() -> Result<PathBuf, TrustError> {
    codex_home().map(|home| home.join("config.toml")).map_err(|_| TrustError::NoHome)
}

/// `PreToolUse` → `pre_tool_use` (Codex's `hook_event_key_label`, which
/// spells every event this way).
pub fn event_label(event: &str) -> String {
    let mut out = String::with_capacity(event.len() + 4);
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The `hooks.state` key of the `handler`-th handler of the `group`-th
/// matcher group of `event` in the hooks file `source` (see the module docs).
pub fn hook_key(source: &str, event: &str, group: usize, handler: usize) -> String {
    format!("{source}:{}:{group}:{handler}", event_label(event))
}

/// The path Codex names a hooks file by: its folder with symbolic links
/// resolved (as far as it exists, for a dry run), then the file name.
pub fn key_source(hooks_path: &Path) -> String {
    let folder = hooks_path.parent().map(canonical).unwrap_or_default();
    let name = hooks_path.file_name().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("hooks.json"));
    folder.join(name).display().to_string()
}

fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if parent != path => canonical(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// The hash Codex records for trusting a command `handler` of a group with
/// `matcher` under `event` (see the module docs); `None` for a handler Codex
/// would not run as a command (another `type`, no command, a timeout that is
/// not a number).
pub fn hook_hash(event: &str, matcher: Option<&str>, handler: &Value) -> Option<String> {
    if handler.get("type").and_then(Value::as_str) != Some("command") {
        return None;
    }
    let command = handler.get("command")?.as_str()?;
    let timeout = match handler.get("timeout") {
        None | Some(Value::Null) => 600,
        Some(t) => t.as_u64()?.max(1),
    };
    let mut normalized = json!({
        "type": "command",
        "command": command,
        "timeout": timeout,
        "async": handler.get("async").and_then(Value::as_bool).unwrap_or(false),
    });
    if let Some(status) = handler.get("statusMessage").and_then(Value::as_str) {
        normalized["statusMessage"] = json!(status);
    }
    let label = event_label(event);
    let mut identity = json!({"event_name": label, "hooks": [normalized]});
    if let Some(matcher) = matcher.filter(|_| !matches!(label.as_str(), "stop" | "user_prompt_submit")) {
        identity["matcher"] = json!(matcher);
    }
    let bytes = serde_json::to_vec(&sorted(identity)).ok()?;
    Some(format!("sha256:{}", hex::encode(Sha256::digest(bytes))))
}

/// `value` with every object's keys in order, whatever `serde_json`'s map is.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<_, _>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// plangate's handlers in the hooks file `hooks` (its JSON) read from
/// `hooks_path`, with their keys and hashes, event by event.
pub fn plangate_hooks(hooks_path: &Path, hooks: &Value) -> Vec<CodexHook> {
    let source = key_source(hooks_path);
    let Some(events) = hooks.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            for (h, handler) in group.get("hooks").and_then(Value::as_array).into_iter().flatten().enumerate() {
                if !hooks_file::runs(handler, is_hook_command) {
                    continue;
                }
                if let Some(hash) = hook_hash(event, matcher, handler) {
                    found.push(CodexHook { event: event.clone(), key: hook_key(&source, event, g, h), hash });
                }
            }
        }
    }
    found
}

/// One `hooks.state` entry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct State {
    enabled: Option<bool>,
    trusted_hash: Option<String>,
}

fn parse(path: &Path, text: &str) -> Result<DocumentMut, TrustError> {
    text.parse::<DocumentMut>().map_err(|e| TrustError::InvalidToml { path: path.to_path_buf(), source: Box::new(e) })
}

/// The `hooks.state` entries of a `config.toml`, keys trimmed as Codex
/// trims them; a malformed entry is skipped, as Codex skips it.
fn states(doc: &DocumentMut) -> HashMap<String, State> {
    let Some(state) = doc.get("hooks").and_then(|h| h.get("state")).and_then(Item::as_table_like) else {
        return HashMap::new();
    };
    state
        .iter()
        .filter_map(|(key, item)| {
            let entry = item.as_table_like()?;
            let enabled = match entry.get("enabled") {
                None => None,
                Some(v) => Some(v.as_bool()?),
            };
            let trusted_hash = match entry.get("trusted_hash") {
                None => None,
                Some(v) => Some(v.as_str()?.to_string()),
            };
            Some((key.trim().to_string(), State { enabled, trusted_hash }))
        })
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

fn trust_of(hook: &CodexHook, state: Option<&State>) -> Trust {
    match state {
        Some(State { enabled: Some(false), .. }) => Trust::Disabled,
        Some(State { trusted_hash: Some(h), .. }) if *h == hook.hash => Trust::Trusted,
        Some(State { trusted_hash: Some(h), .. }) => Trust::Modified { recorded: h.clone() },
        _ => Trust::Untrusted,
    }
}

/// The text of `path`, `None` when there is no file.
fn read(path: &Path) -> Result<Option<String>, TrustError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TrustError::Io { path: path.to_path_buf(), source }),
    }
}

/// Whether Codex runs plangate's hooks in `hooks` (the hooks file at
/// `hooks_path`), by the user's `config.toml`. Reads, never writes.
pub fn review(hooks_path: &Path, hooks: &Value) -> Result<Review, TrustError> {
    let config = config_path()?;
    let text = read(&config)?.unwrap_or_default();
    let states = states(&parse(&config, &text)?);
    let hooks = plangate_hooks(hooks_path, hooks).into_iter().map(|h| (h.clone(), trust_of(&h, states.get(&h.key)))).collect();
    Ok(Review { hooks_path: hooks_path.to_path_buf(), config, hooks })
}

/// `doc` with `[hooks.state."<key>"] trusted_hash = "<hash>"` for each of
/// `hooks`; every other entry, key, comment and blank line is kept, and so
/// is an entry's `enabled`.
fn record(doc: &mut DocumentMut, path: &Path, hooks: &[CodexHook]) -> Result<(), TrustError> {
    let shape = |problem: &str| TrustError::Shape { path: path.to_path_buf(), problem: problem.to_string() };
    // `[hooks]` and `[hooks.state]` are implicit: only the entries get headers.
    let implicit = || {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    };
    let state = doc
        .entry("hooks")
        .or_insert_with(implicit)
        .as_table_like_mut()
        .ok_or_else(|| shape("`hooks` is not a table"))?
        .entry("state")
        .or_insert_with(implicit)
        .as_table_like_mut()
        .ok_or_else(|| shape("`hooks.state` is not a table"))?;
    for hook in hooks {
        let entry = state
            .entry(&hook.key)
            .or_insert_with(|| Item::Table(Table::new()))
            .as_table_like_mut()
            .ok_or_else(|| shape(&format!("`hooks.state.\"{}\"` is not a table", hook.key)))?;
        if entry.get("trusted_hash").and_then(Item::as_str) != Some(hook.hash.as_str()) {
            entry.insert("trusted_hash", toml_edit::value(hook.hash.as_str()));
        }
    }
    Ok(())
}

/// Record plangate's hooks in `hooks` (the hooks file at `hooks_path`) as
/// trusted in the user's `config.toml`, the way Codex's `/hooks` dialog
/// does: the file is edited in place (comments and layout kept), backed up
/// first, and not rewritten when it already trusts them. A dry run changes
/// nothing and says what it would do.
pub fn trust(hooks_path: &Path, hooks: &Value, dry_run: bool) -> Result<Trusted, TrustError> {
    let config = config_path()?;
    let previous = read(&config)?;
    let mut doc = parse(&config, previous.as_deref().unwrap_or_default())?;
    let found = plangate_hooks(hooks_path, hooks);
    record(&mut doc, &config, &found)?;
    let states = states(&doc);
    let disabled = found.iter().filter(|h| trust_of(h, states.get(&h.key)) == Trust::Disabled).cloned().collect();
    let text = doc.to_string();
    let changed = previous.as_deref() != Some(text.as_str());
    let mut done = Trusted { config, hooks: found, changed, backup: None, dry_run, disabled };
    if changed && !dry_run {
        done.backup = hooks_file::write_text(&done.config, previous.as_deref(), &text).map_err(|e| match e {
            InstallError::Io { path, source } => TrustError::Io { path, source },
            other => TrustError::Shape { path: done.config.clone(), problem: other.to_string() },
        })?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GATE: &str = "'/opt/bin/plangate' hook codex || exit 2";
    const STOP: &str = "'/opt/bin/plangate' hook codex";
    const STATUS: &str = "plangate: checking for a plan decision";

    /// What `plangate hook install codex --scope user` writes for
    /// `/opt/bin/plangate` with the default wait.
    fn installed() -> Value {
        json!({"hooks": {
            "PermissionRequest": [{"hooks": [{"command": GATE, "timeout": 600, "type": "command"}], "matcher": "*"}],
            "PreToolUse": [{"hooks": [{"command": GATE, "timeout": 600, "type": "command"}], "matcher": "*"}],
            "Stop": [{"hooks": [{"command": STOP, "statusMessage": STATUS, "timeout": 600, "type": "command"}]}]}})
    }

    /// Keys and hashes reported by Codex 0.169.0 itself (`codex app-server`,
    /// `hooks/list`, `currentHash`) for that file at
    /// `/tmp/cxt/home/.codex/hooks.json`; with these `trusted_hash` entries
    /// in `config.toml` it reported the three `trusted`.
    #[test]
    fn keys_and_hashes_are_the_ones_codex_0_169_reports() {
        let found = plangate_hooks(Path::new("/tmp/cxt/home/.codex/hooks.json"), &installed());
        let found: Vec<(&str, &str)> = found.iter().map(|h| (h.key.as_str(), h.hash.as_str())).collect();
        assert_eq!(
            found,
            [
                (
                    "/tmp/cxt/home/.codex/hooks.json:permission_request:0:0",
                    "sha256:c6dbbfc0cf369234a809efdfb67b0a00620c6a7488b6a7609a38511bb3d37294"
                ),
                (
                    "/tmp/cxt/home/.codex/hooks.json:pre_tool_use:0:0",
                    "sha256:88167b2d2f9a0d2d9b85efef5483323b9382d301b54d1eff2e1dec2a392385bc"
                ),
                ("/tmp/cxt/home/.codex/hooks.json:stop:0:0", "sha256:88450502cfe2839c4a986314fa98bb351f951cc08e8e05b8960f83ccbf15af13"),
            ]
        );
    }

    /// The normalization rules, each against a hash Codex 0.169.0 reported
    /// (`hooks/list`) for a handler in `/tmp/cxt/vec/home/.codex/hooks.json`.
    #[test]
    fn normalization_matches_codex_0_169() {
        let hash = |event: &str, matcher: Option<&str>, handler: Value| hook_hash(event, matcher, &handler).unwrap_or_default();
        // pre_tool_use:0:0, another wait.
        assert_eq!(
            hash("PreToolUse", Some("*"), json!({"type": "command", "command": GATE, "timeout": 130})),
            "sha256:1e3000277653095cafd85fcf00efee3216b1205f3f2d5555a182a403ed4de420"
        );
        // pre_tool_use:1:0 and 1:1: a user's group; no timeout means 600.
        assert_eq!(
            hash("PreToolUse", Some("^Bash$"), json!({"type": "command", "command": "audit.sh", "timeout": 5})),
            "sha256:e425d8029c76f93608f1b2e5503292ae40fa658a29bf4efd52b916706d745236"
        );
        assert_eq!(
            hash("PreToolUse", Some("^Bash$"), json!({"type": "command", "command": "audit2.sh"})),
            "sha256:b04442e314f75fd81f8a286a5448392f43f465d5f2edf3b7f2cbf0a9f158fc85"
        );
        // session_start:0:0: `async`, quotes and non-ASCII in the command.
        assert_eq!(
            hash("SessionStart", Some("startup"), json!({"type": "command", "command": "notify-send \"codex\" é", "async": true})),
            "sha256:e9a0ea9a37c75909192129bdf5a9acb351a4f5ba179c21a41f732d92caa8c9d5"
        );
        // stop:0:0: Stop ignores its matcher; a timeout of 0 counts as 1.
        assert_eq!(
            hash("Stop", Some("ignored"), json!({"type": "command", "command": STOP, "timeout": 0, "statusMessage": STATUS})),
            "sha256:2d39e9a99ecf2860b3290c5854ac69a61aedebbcacfaba9e568d0c0563cf34fc"
        );
        assert_eq!(hook_hash("Stop", None, &json!({"type": "prompt", "command": STOP})), None);
        assert_eq!(hook_key("/h/hooks.json", "PreToolUse", 1, 1), "/h/hooks.json:pre_tool_use:1:1");
        assert_eq!(event_label("UserPromptSubmit"), "user_prompt_submit");
    }

    /// Positions count every group and handler, the user's too.
    #[test]
    fn keys_count_the_users_groups_and_handlers() {
        let hooks = json!({"hooks": {"PreToolUse": [
            {"matcher": "^Bash$", "hooks": [{"type": "command", "command": "audit.sh"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "x.sh"}, {"type": "command", "command": GATE}]}]}});
        let found = plangate_hooks(Path::new("/nowhere/hooks.json"), &hooks);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].key, "/nowhere/hooks.json:pre_tool_use:1:1");
    }

    #[cfg(unix)]
    #[test]
    fn the_folder_is_named_with_links_resolved() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let real = dir.path().canonicalize()?.join("real");
        std::fs::create_dir_all(&real)?;
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link)?;
        assert_eq!(key_source(&link.join("hooks.json")), real.join("hooks.json").display().to_string());
        // Not there yet (a dry run): the part that exists is resolved.
        assert_eq!(key_source(&link.join("new/hooks.json")), real.join("new/hooks.json").display().to_string());
        Ok(())
    }

    #[test]
    fn recording_keeps_comments_and_other_entries() -> Result<(), Box<dyn std::error::Error>> {
        let path = Path::new("/c/config.toml");
        let found = plangate_hooks(Path::new("/tmp/cxt/home/.codex/hooks.json"), &installed());
        let stop = &found[2];
        let before = format!(
            "# my settings\nmodel = \"o3\" # the model\n\n[projects.\"/src/app\"]\ntrust_level = \"trusted\"\n\n\
             [hooks.state.\"{}\"]\nenabled = false\ntrusted_hash = \"sha256:old\"\n\n[hooks.state.\"/other:stop:0:0\"]\ntrusted_hash = \"x\"\n",
            stop.key
        );
        let mut doc = parse(path, &before)?;
        let old = states(&doc);
        assert_eq!(trust_of(stop, old.get(&stop.key)), Trust::Disabled);
        assert_eq!(trust_of(&found[0], old.get(&found[0].key)), Trust::Untrusted);
        record(&mut doc, path, &found)?;
        let after = doc.to_string();
        assert!(after.starts_with("# my settings\nmodel = \"o3\" # the model\n\n[projects.\"/src/app\"]\n"), "{after}");
        assert!(after.contains("[hooks.state.\"/other:stop:0:0\"]\ntrusted_hash = \"x\"\n"), "{after}");
        assert!(!after.contains("[hooks]") && !after.contains("[hooks.state]\n"), "{after}");
        for hook in &found {
            assert!(after.contains(&format!("[hooks.state.\"{}\"]", hook.key)), "{after}");
        }
        let new = states(&parse(path, &after)?);
        assert_eq!(new[&stop.key], State { enabled: Some(false), trusted_hash: Some(stop.hash.clone()) });
        assert!(found[..2].iter().all(|h| trust_of(h, new.get(&h.key)) == Trust::Trusted));
        let mut again = parse(path, &after)?;
        record(&mut again, path, &found)?;
        assert_eq!(again.to_string(), after, "idempotent");

        let modified = State { enabled: None, trusted_hash: Some("sha256:old".into()) };
        assert_eq!(trust_of(stop, Some(&modified)), Trust::Modified { recorded: "sha256:old".into() });
        assert!(matches!(record(&mut parse(path, "hooks = 1\n")?, path, &found), Err(TrustError::Shape { .. })));
        assert!(matches!(parse(path, "[hooks\n"), Err(TrustError::InvalidToml { .. })));
        Ok(())
    }
}
