//! `plangate`: the server and its command-line clients.
//!
//! Only the start: the hooks' fast path (`hook claude|codex` answer one
//! event without building the command line), then the command line parsed
//! and each subcommand handed to its function under
//! [`plangate_server::cli`].

use anyhow::Result;
use clap::Parser;
use plangate_agent::hook_process::{self, answer_and_exit, Harness};
use plangate_server::cli::args::{token_hint, Args, Cmd, ConfigCmd, HookCmd, HookInstallCmd, LadderCmd, NamespaceCmd};
use plangate_server::cli::{self, Client};
use std::time::Duration;

/// Threads tokio may run blocking work on (store calls, plan document
/// writes), instead of its default of 512. Every store call and every chat
/// job's disk work goes through this pool; a burst of proposals queues up
/// to 4,096 chat jobs at once (each writes its plan document with two
/// fsyncs and records its card), and with 512 allowed the pool grew to
/// ~220 threads, each with its own stack pages and its share of glibc's
/// malloc arenas: most of the RSS above the heap with 10,000 pending
/// approvals (docs/PERFORMANCE.md §5). 64 is still wider than the work can
/// use at once: sled's group commit makes one flush serve every waiting
/// commit, and PostgreSQL's pool has 16 connections by default (a larger
/// `pool_size` than 64 would wait here instead of in the pool). Work beyond
/// it waits in tokio's queue as a closure, not as a thread.
const MAX_BLOCKING_THREADS: usize = 64;

fn main() {
    hook_process::tokens_from_the_server_environment();
    // `hook claude` / `hook codex` alone, as the installers write them: no
    // clap command tree to build (docs/PERFORMANCE.md §21).
    if let Some(harness) = hook_from_argv(std::env::args_os().skip(1)) {
        answer_and_exit(harness)
    }
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { cli::EXIT_USAGE } else { 0 };
            let _ = e.print();
            if e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
                if let Some(hint) = token_hint(&e.to_string()) {
                    eprintln!("{hint}");
                }
            }
            std::process::exit(code);
        }
    };
    match args.command {
        Cmd::Hook(HookCmd::Claude) => answer_and_exit(Harness::Claude),
        Cmd::Hook(HookCmd::Codex) => answer_and_exit(Harness::Codex),
        _ => {}
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(MAX_BLOCKING_THREADS).build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("plangate: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(run(args)).unwrap_or_else(|e| {
        eprintln!("plangate: {e:#}");
        1
    });
    std::process::exit(code);
}

/// The hook that exactly these arguments (after the program) name: `hook
/// claude` or `hook codex`, what `plangate hook install` writes when no
/// `plangate-hook` sits beside this binary. Anything else (`--help`, a typo)
/// goes through clap as before.
fn hook_from_argv(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<Harness> {
    if args.next()?.to_str()? != "hook" {
        return None;
    }
    let hook = Harness::from_name(args.next()?.to_str()?)?;
    args.next().is_none().then_some(hook)
}

/// Every subcommand but the hooks' fast path: its function under `cli`.
async fn run(args: Args) -> Result<i32> {
    match args.command {
        Cmd::Serve { config, log_format } => cli::serve::serve(config, &log_format).await,
        Cmd::Config(ConfigCmd::Check { config }) => cli::check::config_check(config).await,
        Cmd::Propose { file, session, title, wait, timeout, json, print_id, codex, token, remote } => {
            let timeout = Duration::from_secs(timeout);
            let url = remote.url;
            cli::propose_command(cli::ProposeArgs { file, session, title, wait, timeout, json, print_id, codex, token, url }).await
        }
        Cmd::Wait { session, timeout, json, approval, accept_decided, exec, token, remote } => {
            let timeout = timeout.map(Duration::from_secs);
            let url = remote.url;
            cli::wait::wait_command(cli::wait::WaitArgs { session, timeout, json, approval, accept_decided, exec, token, url }).await
        }
        Cmd::Status { session, token, remote } => cli::status(&remote.url, token, &session).await,
        Cmd::Decide { approval_id, action, feedback, note, except, actor, operator_token, remote } => {
            let url = remote.url;
            cli::decide(cli::DecideArgs { approval_id, action, feedback, note, except, actor, operator_token, url }).await
        }
        Cmd::List { status, limit, operator_token, remote } => {
            let client = Client::new(&remote.url, Some(operator_token))?;
            cli::list(&client, &status, limit).await
        }
        Cmd::Audit(args) => cli::audit::audit(args).await,
        Cmd::Pair(args) => cli::pair::pair(args).await,
        Cmd::Destinations(args) => cli::pair::destinations(args).await,
        Cmd::Policy(cmd) => cli::policy::run(cmd).await,
        Cmd::Namespace(NamespaceCmd::Show { name, token, remote }) => {
            let client = Client::new(&remote.url, Some(token))?;
            cli::namespace_show(&client, &name).await
        }
        Cmd::Namespace(NamespaceCmd::Update { name, file, session, token, remote }) => {
            let client = Client::new(&remote.url, Some(token))?;
            cli::namespace_update(&client, &name, &session, &file).await
        }
        Cmd::Backup { to, operator_token, remote } => cli::ops::backup(&remote.url, &operator_token, &to).await,
        Cmd::Ladder(LadderCmd::Show { approval_id, operator_token, remote }) => {
            cli::ops::ladder_show(&remote.url, operator_token, &approval_id).await
        }
        Cmd::Prune { dry_run, operator_token, remote } => cli::ops::prune(&remote.url, operator_token, dry_run).await,
        Cmd::Restore { file, data_dir } => cli::ops::restore(&file, &data_dir),
        Cmd::Migrate { from, to, schema } => cli::ops::migrate(from, to, schema).await,
        Cmd::Doctor { config, url } => plangate_server::ops::doctor::command(config.as_deref(), url).await,
        Cmd::Completions { shell } => Ok(cli::args::completions(&shell)),
        Cmd::Hook(HookCmd::Claude) => Ok(hook_process::answer(Harness::Claude).await?),
        Cmd::Hook(HookCmd::Codex) => Ok(hook_process::answer(Harness::Codex).await?),
        Cmd::Hook(HookCmd::Install(HookInstallCmd::Claude { scope, dry_run, wait })) => cli::hook::install_claude(&scope, dry_run, wait),
        Cmd::Hook(HookCmd::Install(HookInstallCmd::Codex { scope, dry_run, wait, trust })) => {
            cli::hook::install_codex(&scope, dry_run, wait, trust)
        }
        Cmd::Mcp { channel } => cli::hook::mcp(channel).await,
    }
}

#[cfg(test)]
mod tests {
    fn hook(args: &[&str]) -> Option<&'static str> {
        super::hook_from_argv(args.iter().map(std::ffi::OsString::from)).map(|h| h.name())
    }

    #[test]
    fn only_the_installed_hook_commands_skip_clap() {
        assert_eq!(hook(&["hook", "claude"]), Some("claude"));
        assert_eq!(hook(&["hook", "codex"]), Some("codex"));
        for other in [&["hook", "claude", "--help"][..], &["hook"], &["hook", "install", "claude"], &["hook", "gemini"], &["serve"], &[]] {
            assert_eq!(hook(other), None, "{other:?}");
        }
    }
}
