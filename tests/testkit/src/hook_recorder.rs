//! A command hook that only records: each run writes its stdin (the event's
//! JSON) to a file of its own, named after the time and the event, and
//! answers nothing (exit 0, no output), so the client goes on as if there
//! were no hook. For capturing exactly what a client sends each hook event.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The Claude Code hook events with a tool matcher.
pub const CLAUDE_TOOL_EVENTS: &[&str] = &["PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure", "PermissionDenied"];
/// Every Claude Code hook event the recorder registers by default.
pub const CLAUDE_EVENTS: &[&str] = &[
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionDenied",
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "Notification",
    "PreCompact",
];
/// The Codex hook events the recorder registers by default.
pub const CODEX_EVENTS: &[&str] = &["PreToolUse", "PermissionRequest", "PostToolUse", "SessionStart", "UserPromptSubmit", "Stop"];

/// One recorded hook run.
#[derive(Debug, Clone)]
pub struct HookEvent {
    /// The event it was registered for.
    pub event: String,
    /// Its stdin, parsed (`Value::String` when it was not JSON).
    pub input: Value,
    /// Its stdin exactly as the client wrote it (key order included).
    pub raw: String,
    pub file: PathBuf,
}

/// A directory with the recording script and what it recorded.
pub struct HookRecorder {
    dir: tempfile::TempDir,
}

impl Default for HookRecorder {
    fn default() -> Self {
        HookRecorder::new()
    }
}

impl HookRecorder {
    pub fn new() -> HookRecorder {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("events")).expect("events dir");
        let script = dir.path().join("record-hook.sh");
        let body = format!(
            "#!/bin/sh\n# Record the hook input; answer nothing.\nf=\"{}/$(date +%s%N)-$$-$1.json\"\ncat > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"\nexit 0\n",
            dir.path().join("events").display()
        );
        std::fs::write(&script, body).expect("write hook script");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod hook script");
        HookRecorder { dir }
    }

    /// The command a hook entry for `event` runs.
    pub fn command(&self, event: &str) -> String {
        format!("{} {event}", self.dir.path().join("record-hook.sh").display())
    }

    /// The `hooks` table (Claude Code settings and Codex `hooks.json` share
    /// its shape) recording `events`: tool events with matcher `*`.
    pub fn hooks(&self, events: &[&str]) -> Value {
        let mut table = serde_json::Map::new();
        for event in events {
            let mut entry = json!({"hooks": [{"type": "command", "command": self.command(event)}]});
            if CLAUDE_TOOL_EVENTS.contains(event) {
                entry["matcher"] = json!("*");
            }
            table.insert(event.to_string(), json!([entry]));
        }
        json!({"hooks": table})
    }

    /// Claude Code settings recording every event of [`CLAUDE_EVENTS`].
    pub fn claude_settings(&self) -> Value {
        self.hooks(CLAUDE_EVENTS)
    }

    /// A Codex `hooks.json` recording every event of [`CODEX_EVENTS`].
    pub fn codex_hooks(&self) -> Value {
        self.hooks(CODEX_EVENTS)
    }

    /// The directory the events are written to.
    pub fn events_dir(&self) -> PathBuf {
        self.dir.path().join("events")
    }

    /// Every recorded run, in the order they started writing.
    pub fn events(&self) -> Vec<HookEvent> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.events_dir())
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "json")).collect())
            .unwrap_or_default();
        files.sort();
        files.into_iter().map(|file| read_event(&file)).collect()
    }

    /// The recorded runs of `event`.
    pub fn of(&self, event: &str) -> Vec<HookEvent> {
        self.events().into_iter().filter(|e| e.event == event).collect()
    }
}

fn read_event(file: &Path) -> HookEvent {
    let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let event = name.splitn(3, '-').nth(2).unwrap_or("").to_string();
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let input = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()));
    HookEvent { event, input, raw: text, file: file.to_path_buf() }
}
