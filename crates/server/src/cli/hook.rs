//! `plangate hook install claude|codex`, which write a harness's settings
//! so that it asks plangate, and `plangate mcp`. (`hook claude|codex`, the
//! hooks themselves, are answered by `main.rs` before any of this, through
//! `plangate_agent::hook_process`, as `plangate-hook claude|codex` is: see
//! its fast path. The installers name `plangate-hook` when it sits beside
//! this binary: `plangate_agent::hook_command`.)

use anyhow::Result;

/// `plangate hook install claude`: the hooks into Claude Code's settings,
/// the MCP servers beside them, and what else to set.
pub fn install_claude(scope: &str, dry_run: bool, wait: u64) -> Result<i32> {
    let scope = scope.parse()?;
    let exe = plangate_agent::claude::install::current_binary()?;
    let installed = plangate_agent::claude::install::install(scope, &std::env::current_dir()?, &exe, wait, dry_run)?;
    if let Some(warning) = installed.warning() {
        eprintln!("{warning}");
    }
    for other in &installed.also_in {
        eprintln!("note: {} also has plangate hooks; Claude Code runs both, so remove them from the file you do not want", other.display());
    }
    let path = installed.path.display();
    if installed.dry_run {
        println!("{}", serde_json::to_string_pretty(&installed.settings)?);
        eprintln!("dry run: {path} was not changed");
    } else if !installed.changed {
        eprintln!("{path} already has the plangate hooks; nothing to do");
    } else {
        let backup = installed.backup.map(|b| format!(" (previous file kept as {})", b.display())).unwrap_or_default();
        eprintln!("installed the plangate hooks in {path}{backup}");
    }
    let servers = plangate_agent::claude::mcp_servers::register(scope, &std::env::current_dir()?, &exe, dry_run)?;
    for written in servers.tools.iter().chain([&servers.channel]) {
        let file = written.path.display();
        if dry_run {
            eprintln!("dry run: {file} was not changed; it would be:\n{}", serde_json::to_string_pretty(&written.config)?);
        } else if written.changed {
            let backup = written.backup.as_ref().map(|b| format!(" (previous file kept as {})", b.display())).unwrap_or_default();
            eprintln!("registered the plangate MCP server in {file}{backup}");
        } else {
            eprintln!("{file} already registers the plangate MCP server; nothing to do");
        }
    }
    if scope == plangate_agent::claude::install::Scope::Local {
        use plangate_agent::claude::gitignore::{keep_out_of_git, Ignored};
        let files = [installed.path.clone(), servers.channel.path.clone()];
        if let Ignored::Added { gitignore, entries } = keep_out_of_git(&std::env::current_dir()?, &files, dry_run)? {
            let verb = if dry_run { "dry run: would add" } else { "added" };
            eprintln!("{verb} {} to {} (they name this machine's plangate binary)", entries.join(", "), gitignore.display());
        }
    }
    eprintln!(
        "Claude Code needs the agent's token in its environment: PLANGATE_TOKEN, or the one PLANGATE__AGENTS__<ID>__TOKEN \
         the server runs with (and PLANGATE_URL unless it is the default). Nothing else is needed: plan in Claude Code's \
         plan mode and the plan reaches your approvers."
    );
    if let Some(add) = &servers.add_tools {
        eprintln!("Optional: plangate's own MCP tools (plans and questions without plan mode), for this project, only for you:\n  {add}");
    }
    eprintln!(
        "Optional: a decision made after Claude stopped waiting reaches it with your next prompt; to have it arrive \
         at once then too (a Claude Code channel; needs a claude.ai login), start Claude Code with:\n  {}",
        servers.launch
    );
    Ok(0)
}

/// `plangate hook install codex`: the hooks into a Codex hooks.json, and
/// with `trust` into its config.toml as trusted.
pub fn install_codex(scope: &str, dry_run: bool, wait: u64, trust: bool) -> Result<i32> {
    let scope = scope.parse()?;
    let exe = plangate_agent::hooks_file::current_binary()?;
    let mut installed = plangate_agent::codex::install::install(scope, &std::env::current_dir()?, &exe, wait, dry_run)?;
    let path = installed.path.display();
    if installed.dry_run {
        println!("{}", serde_json::to_string_pretty(&installed.hooks)?);
        eprintln!("dry run: {path} was not changed");
    } else if !installed.changed {
        eprintln!("{path} already has the plangate hooks; nothing to do");
    } else {
        let backup = installed.backup.as_ref().map(|b| format!(" (previous file kept as {})", b.display())).unwrap_or_default();
        eprintln!("installed the plangate hooks in {path}{backup}");
    }
    if trust {
        let done = plangate_agent::codex::trust::trust(&installed.path, &installed.hooks, installed.dry_run)?;
        let config = done.config.display();
        let verb = if done.dry_run { "would trust" } else { "trusted" };
        for hook in &done.hooks {
            eprintln!("{verb} {}: [hooks.state.{:?}] trusted_hash = {:?} in {config}", hook.event, hook.key, hook.hash);
        }
        if done.dry_run {
            eprintln!("dry run: {config} was not changed");
        } else if !done.changed {
            eprintln!("{config} already trusts them; nothing to do");
        } else if let Some(b) = &done.backup {
            eprintln!("previous {config} kept as {}", b.display());
        }
        for hook in &done.disabled {
            eprintln!(
                "note: {config} turns the {} hook off (enabled = false under [hooks.state.{:?}]); Codex skips it until you \
                 remove that line or enable it in /hooks",
                hook.event, hook.key
            );
        }
        installed.trust = Ok(done.review(&installed.path));
    }
    for note in installed.notes() {
        eprintln!("{note}");
    }
    Ok(0)
}

/// `plangate mcp [--channel]`: the MCP server (or the Claude Code channel)
/// on stdio until its client leaves.
pub async fn mcp(channel: bool) -> Result<i32> {
    match if channel { plangate_agent::claude::channel::serve_stdio().await } else { plangate_agent::mcp::serve_stdio().await } {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("plangate mcp: {e}");
            Ok(1)
        }
    }
}
