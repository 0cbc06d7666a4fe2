//! What the Claude Code and Codex runners share: a child in its own process
//! group that is killed (with everything it started) when dropped, its
//! stdout read as JSON lines and its stderr kept, and an environment clean
//! of the machine's own agent settings.

use serde_json::Value;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// A random number (no RNG crate needed for names and ids).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default());
    h.write_u32(std::process::id());
    h.finish()
}

/// One line the child printed on stdout: JSON when it parses, else a string.
pub(crate) fn parse_line(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_string()))
}

/// Variables of the machine's own Claude Code / Codex / Anthropic / OpenAI
/// setup, which must not leak into a test run.
pub(crate) fn scrub_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if ["ANTHROPIC_", "CLAUDE_", "CLAUDECODE", "OPENAI_", "CODEX_", "MCP_"].iter().any(|p| key.starts_with(p)) {
            cmd.env_remove(key.as_ref());
        }
    }
}

/// Whether this process runs as root (Claude Code refuses
/// `bypassPermissions` as root unless `IS_SANDBOX=1`).
pub(crate) fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A spawned client. Dropping it kills its whole process group.
pub(crate) struct Proc {
    child: Child,
    /// The process group (the leader's pid), kept after the leader is reaped.
    group: Option<u32>,
    pub stdin: Option<ChildStdin>,
    /// Every stdout line so far.
    pub lines: Arc<Mutex<Vec<Value>>>,
    /// Each stdout line as it comes; closed at EOF.
    pub rx: mpsc::UnboundedReceiver<Value>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Proc {
    /// Spawn `cmd` in a process group of its own with stdout and stderr
    /// piped (stdin piped when `with_stdin`, else null).
    pub fn spawn(mut cmd: Command, with_stdin: bool) -> Proc {
        cmd.stdin(if with_stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let what = format!("{:?}", cmd.as_std().get_program());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
        let group = child.id();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::unbounded_channel();
        let out_lines = lines.clone();
        let out = tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if line.trim().is_empty() {
                    continue;
                }
                let value = parse_line(&line);
                out_lines.lock().unwrap_or_else(|e| e.into_inner()).push(value.clone());
                let _ = tx.send(value);
            }
        });
        let err_text = stderr.clone();
        let err = tokio::spawn(async move {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr_pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                err_text.lock().unwrap_or_else(|e| e.into_inner()).push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Proc { child, group, stdin, lines, rx, stderr, readers: vec![out, err] }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn lines(&self) -> Vec<Value> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Wait for the exit and for stdout and stderr to be read to their end.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        for reader in self.readers.drain(..) {
            // The group may hold the pipes open after the leader exits.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), reader).await;
        }
        Ok(status)
    }

    /// Kill the process group now.
    pub fn kill(&mut self) {
        if let Some(group) = self.group {
            let _ = std::process::Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).stderr(Stdio::null()).status();
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
        for reader in &self.readers {
            reader.abort();
        }
    }
}
