//! Which Claude session a process started by Claude Code belongs to.
//!
//! Claude Code tells its hooks the `session_id` (in every event) but not
//! the MCP servers it spawns: a stdio server gets no session in its
//! environment (anthropics/claude-code#61752, checked against Claude Code
//! 2.1.132) and keeps running when the session changes under it (`/clear`,
//! `--resume`). Yet the plangate channel must follow exactly the session the
//! hook gates, also with several Claude sessions open in one project.
//!
//! What the hook and the server do share is their Claude Code process: the
//! server is its child, the hook its child or grandchild (Claude Code runs a
//! command hook through a shell, which may or may not `exec` it). So both
//! find "their Claude" the same way, [`ClaudeProcess::find`]: the nearest
//! ancestor that is not a shell. Every hook event records that process's
//! current session in a small file named after it ([`Bindings::record`]);
//! the channel reads it ([`Bindings::session`]) and re-reads it whenever it
//! wakes, so it moves with `/clear` and `--resume`. Two Claude processes are
//! two files; a file whose process has gone (or whose pid was reused, told by
//! the process start time) is ignored.
//!
//! The files live in `PLANGATE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/plangate`,
//! else `~/.cache/plangate/run`, in a directory only the user can open
//! (0700): whoever can write there can already run code as that user.
//! `PLANGATE_CLAUDE_PID` names the Claude process outright, for launchers
//! that put a non-shell wrapper between Claude Code and plangate, and for
//! tests.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Programs that only start other programs: skipped when looking for Claude.
const LAUNCHERS: [&str; 8] = ["sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "busybox"];

/// How far up the process tree to look: Claude, a shell, the hook.
const MAX_DEPTH: usize = 4;

/// A Claude Code process, told apart from a later process with the same
/// pid by its start time (where the platform gives one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeProcess {
    pub pid: u32,
    pub started: Option<String>,
}

impl ClaudeProcess {
    /// The Claude Code process this process runs under: `PLANGATE_CLAUDE_PID`,
    /// else the nearest ancestor that is not a shell. `None` when that
    /// cannot be told (no parent, or no way to read the process table).
    pub fn find() -> Option<ClaudeProcess> {
        if let Some(pid) = std::env::var("PLANGATE_CLAUDE_PID").ok().and_then(|v| v.trim().parse::<u32>().ok()) {
            return Some(ClaudeProcess { pid, started: started(pid) });
        }
        let mut pid = std::process::id();
        for _ in 0..MAX_DEPTH {
            let parent = parent_of(pid)?;
            if parent <= 1 {
                return None;
            }
            let name = name_of(parent).unwrap_or_default();
            if !LAUNCHERS.contains(&name.as_str()) {
                return Some(ClaudeProcess { pid: parent, started: started(parent) });
            }
            pid = parent;
        }
        None
    }

    /// Whether this process still runs (same pid, same start time).
    pub fn is_alive(&self) -> bool {
        match started(self.pid) {
            Some(now) => self.started.as_ref().is_none_or(|then| *then == now),
            None => self.started.is_none() && process_exists(self.pid),
        }
    }
}

/// The binding files of one user: see the module docs.
#[derive(Debug, Clone)]
pub struct Bindings {
    dir: PathBuf,
}

#[derive(serde::Serialize, serde::Deserialize, PartialEq)]
struct Record {
    pid: u32,
    started: Option<String>,
    session_id: String,
}

impl Bindings {
    /// The directory from the environment (module docs); not created yet.
    pub fn from_env() -> Option<Bindings> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dir = var("PLANGATE_RUNTIME_DIR")
            .or_else(|| var("XDG_RUNTIME_DIR").map(|d| d.join("plangate")))
            .or_else(|| var("HOME").map(|h| h.join(".cache").join("plangate").join("run")))?;
        Some(Bindings { dir })
    }

    pub fn at(dir: impl Into<PathBuf>) -> Bindings {
        Bindings { dir: dir.into() }
    }

    fn session_file(&self, claude: &ClaudeProcess) -> PathBuf {
        self.dir.join(format!("claude-{}.session.json", claude.pid))
    }

    fn channel_file(&self, claude: &ClaudeProcess) -> PathBuf {
        self.dir.join(format!("claude-{}.channel.json", claude.pid))
    }

    /// Record that `claude` is in `session_id` now (a no-op when it already
    /// says so: the hook calls this on every event).
    pub fn record(&self, claude: &ClaudeProcess, session_id: &str) -> std::io::Result<()> {
        let record = Record { pid: claude.pid, started: claude.started.clone(), session_id: session_id.to_string() };
        let path = self.session_file(claude);
        if read_record(&path).is_some_and(|r| r == record) {
            return Ok(());
        }
        write_private(&self.dir, &path, &serde_json::to_vec(&record).unwrap_or_default())
    }

    /// The session `claude` is in, as its hook last recorded it.
    pub fn session(&self, claude: &ClaudeProcess) -> Option<String> {
        read_record(&self.session_file(claude))
            .filter(|r| r.pid == claude.pid && r.started == claude.started)
            .map(|r| r.session_id)
            .filter(|s| crate::session::is_valid(s))
    }

    /// Announce a live channel for `claude` (this process) until the guard
    /// is dropped: the hook then leaves a pending plan's dialog open for the
    /// channel to answer instead of refusing it.
    pub fn announce_channel(&self, claude: &ClaudeProcess) -> std::io::Result<ChannelAnnouncement> {
        let me = std::process::id();
        let record = Record { pid: me, started: started(me), session_id: String::new() };
        let path = self.channel_file(claude);
        write_private(&self.dir, &path, &serde_json::to_vec(&record).unwrap_or_default())?;
        Ok(ChannelAnnouncement { path })
    }

    /// Whether a channel announced for `claude` still runs.
    pub fn channel_live(&self, claude: &ClaudeProcess) -> bool {
        read_record(&self.channel_file(claude)).is_some_and(|r| ClaudeProcess { pid: r.pid, started: r.started }.is_alive())
    }
}

/// Removes the channel's announcement when the channel stops.
#[derive(Debug)]
pub struct ChannelAnnouncement {
    path: PathBuf,
}

impl Drop for ChannelAnnouncement {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn read_record(path: &Path) -> Option<Record> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Write `bytes` to `path` whole (a temporary file renamed over it), in a
/// directory created 0700 and files 0600.
fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let tmp = dir.join(format!(".{}.{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("binding"), std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// `/proc/<pid>/stat`, split after the command name (which may hold spaces
/// and parentheses): the fields from `state` on.
#[cfg(target_os = "linux")]
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

#[cfg(target_os = "linux")]
fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

#[cfg(target_os = "linux")]
fn name_of(pid: u32) -> Option<String> {
    Some(std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_string())
}

/// Field 22 of `/proc/<pid>/stat`, the start time in clock ticks since boot.
#[cfg(target_os = "linux")]
fn started(pid: u32) -> Option<String> {
    stat_fields(pid)?.get(19).cloned()
}

#[cfg(target_os = "linux")]
fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Elsewhere (macOS, the BSDs) `ps` reads the process table.
#[cfg(not(target_os = "linux"))]
fn ps(pid: u32, field: &str) -> Option<String> {
    let out = std::process::Command::new("ps").args(["-o", field, "-p", &pid.to_string()]).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

#[cfg(not(target_os = "linux"))]
fn parent_of(pid: u32) -> Option<u32> {
    ps(pid, "ppid=")?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn name_of(pid: u32) -> Option<String> {
    let comm = ps(pid, "comm=")?;
    Some(comm.rsplit('/').next().unwrap_or(&comm).trim_start_matches('-').to_string())
}

#[cfg(not(target_os = "linux"))]
fn started(pid: u32) -> Option<String> {
    ps(pid, "lstart=")
}

#[cfg(not(target_os = "linux"))]
fn process_exists(pid: u32) -> bool {
    ps(pid, "pid=").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_read_back_only_for_the_same_process() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bindings = Bindings::at(dir.path().join("run"));
        let me = ClaudeProcess { pid: std::process::id(), started: started(std::process::id()) };
        assert_eq!(bindings.session(&me), None);
        bindings.record(&me, "claude-a").expect("record");
        assert_eq!(bindings.session(&me).as_deref(), Some("claude-a"));
        bindings.record(&me, "claude-b").expect("record");
        assert_eq!(bindings.session(&me).as_deref(), Some("claude-b"));
        // The same pid started at another time (a reused pid) is not bound.
        let reused = ClaudeProcess { pid: me.pid, started: Some("1".into()) };
        assert_eq!(bindings.session(&reused), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("run")).expect("dir").permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn a_channel_is_live_while_its_announcement_is_held() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bindings = Bindings::at(dir.path());
        let claude = ClaudeProcess { pid: 4_000_001, started: None };
        assert!(!bindings.channel_live(&claude));
        let held = bindings.announce_channel(&claude).expect("announce");
        assert!(bindings.channel_live(&claude));
        drop(held);
        assert!(!bindings.channel_live(&claude));
    }
}
