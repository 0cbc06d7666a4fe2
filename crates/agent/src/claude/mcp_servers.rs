//! `plangate hook install claude` also registers plangate's two MCP servers
//! with Claude Code:
//!
//! * `plangate` — the tools (`plangate mcp`), where Claude Code keeps MCP
//!   servers of the scope: `--scope project` → `<project>/.mcp.json` (shared,
//!   like `.claude/settings.json`); `--scope user` → `~/.claude.json`
//!   (`$CLAUDE_CONFIG_DIR/.claude.json`), its top-level `mcpServers`;
//!   `--scope local` keeps MCP servers inside `~/.claude.json`'s per-project
//!   entries, which Claude Code owns, so the installer prints the
//!   `claude mcp add --scope local …` line instead of editing that file.
//! * `plangate-channel` — the channel (`plangate mcp --channel`), in a file of
//!   its own, `plangate-channel.mcp.json` beside the settings file, loaded
//!   only by the command line [`Registered::launch`] prints. A channel that
//!   Claude Code did not load *as a channel* has its events dropped, and the
//!   channel marks what it pushes as delivered: registered in `.mcp.json` it
//!   would run in every session and swallow decisions in those started
//!   without `--dangerously-load-development-channels`.
//!
//! Every other key and server is kept; an unchanged file is not rewritten; a
//! changed one is backed up and replaced atomically (as the hook entries are).
//! No token is written: `PLANGATE_TOKEN` (and `PLANGATE_URL`) come from Claude
//! Code's environment, as for the hook, so nothing secret lands in a file that
//! may be committed.

use super::install::Scope;
use super::shell_quote;
use crate::hooks_file::{self, InstallError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The tools server's name: the hook recognises `mcp__plangate__*`.
pub const TOOLS_SERVER: &str = "plangate";
/// The channel server's name, as `server:plangate-channel` names it.
pub const CHANNEL_SERVER: &str = "plangate-channel";
/// The channel's own MCP config file, beside the settings file.
pub const CHANNEL_FILE: &str = "plangate-channel.mcp.json";

/// One MCP config file written (or, for a dry run, as it would be).
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub config: Value,
    pub changed: bool,
    pub backup: Option<PathBuf>,
}

/// What [`register`] did.
#[derive(Debug, Clone)]
pub struct Registered {
    /// The tools server's file; `None` for `--scope local` (see [`Registered::add_tools`]).
    pub tools: Option<Written>,
    pub channel: Written,
    /// For `--scope local`: the `claude mcp add` line that registers the tools.
    pub add_tools: Option<String>,
    /// The command line that starts Claude Code with the channel.
    pub launch: String,
}

fn server(exe: &Path, args: &[&str]) -> Value {
    json!({"type": "stdio", "command": exe.to_string_lossy(), "args": args})
}

/// `config` with `mcpServers.<name>` set to `entry`, everything else kept.
pub fn merge(mut config: Value, name: &str, entry: Value) -> Result<Value, String> {
    let Some(object) = config.as_object_mut() else { return Err("the file is not a JSON object".into()) };
    let servers = object.entry("mcpServers").or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else { return Err("`mcpServers` is not a JSON object".into()) };
    servers.insert(name.to_string(), entry);
    Ok(config)
}

/// Claude Code's own directory (`$CLAUDE_CONFIG_DIR`, else `~/.claude`).
fn claude_dir() -> Result<PathBuf, InstallError> {
    hooks_file::env_dir("CLAUDE_CONFIG_DIR")
        .or_else(|| hooks_file::env_dir("HOME").map(|h| h.join(".claude")))
        .ok_or_else(|| InstallError::Usage("neither CLAUDE_CONFIG_DIR nor HOME is set: cannot find Claude Code's directory".to_string()))
}

/// Where the tools server goes for `scope` (`None`: printed, not written).
pub fn tools_path(scope: Scope, project_dir: &Path) -> Result<Option<PathBuf>, InstallError> {
    match scope {
        Scope::Local => Ok(None),
        Scope::Project => Ok(Some(project_dir.join(".mcp.json"))),
        Scope::User => match hooks_file::env_dir("CLAUDE_CONFIG_DIR") {
            Some(dir) => Ok(Some(dir.join(".claude.json"))),
            None => hooks_file::env_dir("HOME")
                .map(|h| Some(h.join(".claude.json")))
                .ok_or_else(|| InstallError::Usage("neither CLAUDE_CONFIG_DIR nor HOME is set: cannot find ~/.claude.json".to_string())),
        },
    }
}

/// Where the channel's config file goes for `scope`.
pub fn channel_path(scope: Scope, project_dir: &Path) -> Result<PathBuf, InstallError> {
    match scope {
        Scope::Local | Scope::Project => Ok(project_dir.join(".claude").join(CHANNEL_FILE)),
        Scope::User => Ok(claude_dir()?.join(CHANNEL_FILE)),
    }
}

fn write_server(path: &Path, name: &str, entry: Value, dry_run: bool) -> Result<Written, InstallError> {
    let existing = hooks_file::read(path)?;
    let before = existing.as_ref().map(|(_, v)| v.clone()).unwrap_or_else(|| json!({}));
    let after = merge(before.clone(), name, entry).map_err(|problem| InstallError::Shape { path: path.to_path_buf(), problem })?;
    let changed = existing.is_none() || before != after;
    let mut written = Written { path: path.to_path_buf(), config: after, changed, backup: None };
    if changed && !dry_run {
        written.backup = hooks_file::write(path, existing.as_ref().map(|(text, _)| text.as_str()), &written.config)?;
    }
    Ok(written)
}

/// Register both servers for `scope`, running the binary at `exe` (see the
/// module docs).
pub fn register(scope: Scope, project_dir: &Path, exe: &Path, dry_run: bool) -> Result<Registered, InstallError> {
    if !exe.is_absolute() {
        return Err(InstallError::Usage(format!("the path of this binary ({}) is not absolute", exe.display())));
    }
    let tools = match tools_path(scope, project_dir)? {
        Some(path) => Some(write_server(&path, TOOLS_SERVER, server(exe, &["mcp"]), dry_run)?),
        None => None,
    };
    let add_tools = tools
        .is_none()
        .then(|| format!("claude mcp add {TOOLS_SERVER} --scope {} -- {} mcp", scope.name(), shell_quote(&exe.to_string_lossy())));
    let channel_file = channel_path(scope, project_dir)?;
    let channel = write_server(&channel_file, CHANNEL_SERVER, server(exe, &["mcp", "--channel"]), dry_run)?;
    let launch = format!(
        "claude --mcp-config {} --dangerously-load-development-channels server:{CHANNEL_SERVER}",
        shell_quote(&channel_file.to_string_lossy())
    );
    Ok(Registered { tools, channel, add_tools, launch })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_servers_are_registered_once_and_other_servers_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let exe = Path::new("/opt/bin/plangate");
        std::fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers": {"github": {"command": "gh-mcp"}}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        let r = register(Scope::Project, dir.path(), exe, false).unwrap_or_else(|e| panic!("{e}"));
        let tools = r.tools.clone().unwrap_or_else(|| panic!("project scope writes .mcp.json"));
        assert_eq!(tools.config["mcpServers"]["github"], json!({"command": "gh-mcp"}));
        assert_eq!(tools.config["mcpServers"]["plangate"], json!({"type": "stdio", "command": "/opt/bin/plangate", "args": ["mcp"]}));
        assert!(tools.backup.is_some());
        assert_eq!(r.channel.path, dir.path().join(".claude/plangate-channel.mcp.json"));
        assert_eq!(
            r.channel.config,
            json!({"mcpServers": {"plangate-channel": {"type": "stdio", "command": "/opt/bin/plangate", "args": ["mcp", "--channel"]}}})
        );
        assert_eq!(
            r.launch,
            format!(
                "claude --mcp-config '{}' --dangerously-load-development-channels server:plangate-channel",
                dir.path().join(".claude/plangate-channel.mcp.json").display()
            )
        );
        let again = register(Scope::Project, dir.path(), exe, false).unwrap_or_else(|e| panic!("{e}"));
        assert!(!again.channel.changed && !again.tools.is_some_and(|t| t.changed));
        // No secret is written anywhere.
        let text = std::fs::read_to_string(dir.path().join(".mcp.json")).unwrap_or_default();
        assert!(!text.contains("TOKEN"), "{text}");
    }

    #[test]
    fn local_scope_prints_the_claude_mcp_add_line_instead_of_editing_claudes_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let r = register(Scope::Local, dir.path(), Path::new("/opt/my bin/plangate"), true).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.tools.is_none());
        assert_eq!(r.add_tools.as_deref(), Some("claude mcp add plangate --scope local -- '/opt/my bin/plangate' mcp"));
        assert!(!dir.path().join(".claude").exists(), "a dry run writes nothing");
        assert!(merge(json!({"mcpServers": []}), "plangate", json!({})).is_err());
    }
}
