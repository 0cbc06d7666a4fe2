//! `plangate`: the server and its command-line clients.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use plangate_server::cli::{self, Client};
use plangate_server::config::Settings;
use plangate_server::core::Core;
use plangate_server::hub::Hub;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "plangate", version, about = "A human between an AI agent's plan and its first mutation.")]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(clap::Args)]
struct Remote {
    /// Base URL of a running plangate.
    #[arg(long, env = "PLANGATE_URL", default_value = "http://127.0.0.1:8787", global = true)]
    url: String,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the server (HTTP API, scheduler, chat channels).
    Serve {
        /// A config file; without it the embedded config/default.toml is used.
        #[arg(long)]
        config: Option<PathBuf>,
        /// `text` (for people) or `json` (one JSON object per line, with the
        /// fields of the enclosing spans: request, transition, inbound, job).
        #[arg(long, env = "PLANGATE_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
        log_format: String,
    },
    /// Validate configuration.
    #[command(subcommand)]
    Config(ConfigCmd),
    /// Propose a plan (markdown, JSON Plan, or `--codex` transcript; `-` for stdin).
    Propose {
        file: String,
        #[arg(long, default_value = "cli")]
        session: String,
        #[arg(long)]
        title: Option<String>,
        /// Wait for the decision; exit 0 approved/edited, 3 revised, 4 timed out/cancelled.
        #[arg(long)]
        wait: bool,
        /// How long `--wait` waits, in seconds.
        #[arg(long, default_value_t = 3600)]
        timeout: u64,
        /// Print the Decision as JSON.
        #[arg(long)]
        json: bool,
        /// Print only the approval id on stdout, for `plangate wait --approval ID`
        /// (ID=$(plangate propose plan.md --session S --print-id)).
        #[arg(long, conflicts_with = "json")]
        print_id: bool,
        /// Extract the last <proposed_plan> block of a Codex message.
        #[arg(long)]
        codex: bool,
        #[arg(long, env = "PLANGATE_TOKEN", hide_env_values = true)]
        token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Wait for a session's decision, then optionally run a program with it
    /// (exit 0 approved/edited, 3 revised, 4 timed out/cancelled/still pending, 5 the program failed).
    Wait {
        #[arg(long)]
        session: String,
        /// Give up after this many seconds (exit 4); without it, wait until the plan is decided.
        #[arg(long)]
        timeout: Option<u64>,
        /// Print the Decision as JSON.
        #[arg(long)]
        json: bool,
        /// Act only on this approval (the id `plangate propose --print-id` printed): if the
        /// session's latest proposal is another one (a newer version superseded it), exit 4
        /// and run nothing.
        #[arg(long, value_name = "ID")]
        approval: Option<String>,
        /// Without --approval, also act on a decision made before `wait` started (by default
        /// that is refused with exit 4: it may be the decision of an older plan).
        #[arg(long)]
        accept_decided: bool,
        /// Run PROGRAM [ARGS]... once the decision is in, without a shell: the decision is in its
        /// environment (PLANGATE_DECISION_STATUS, PLANGATE_APPROVAL_ID, PLANGATE_VERSION,
        /// PLANGATE_FEEDBACK, PLANGATE_INJECTION, …) and, as the Decision JSON, on its stdin.
        /// Everything after --exec belongs to the program, so put it last.
        #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM [ARGS]")]
        exec: Vec<String>,
        #[arg(long, env = "PLANGATE_TOKEN", hide_env_values = true)]
        token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Show a session's status.
    Status {
        #[arg(long, default_value = "cli")]
        session: String,
        #[arg(long, env = "PLANGATE_TOKEN", hide_env_values = true)]
        token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Decide an approval as an operator.
    Decide {
        approval_id: String,
        /// `cancel` halts the session (read-only); `release` lets the agent work
        /// without an approved plan (audited as a release).
        #[arg(value_parser = ["approve", "revise", "cancel", "release"])]
        action: String,
        #[arg(long)]
        feedback: Option<String>,
        /// With `approve`: a note for the agent (it reads it with the decision).
        #[arg(long)]
        note: Option<String>,
        /// With `approve`: step numbers to leave out of the approval, e.g. `3,5`.
        #[arg(long, value_delimiter = ',')]
        except: Vec<usize>,
        /// Who is deciding (recorded as operator:<actor>).
        #[arg(long, env = "USER", default_value = "cli")]
        actor: String,
        #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
        operator_token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// List approvals (pending by default), oldest first, every page.
    List {
        #[arg(long, default_value = "pending")]
        status: String,
        /// Stop after this many (default: all, fetched a page at a time).
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
        operator_token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Show the audit trail; `audit export`, `audit verify FILE` (offline), `audit key`.
    Audit(plangate_server::cli::audit::AuditArgs),
    /// A one-time code that makes a chat a destination: send `/plan pair CODE` there (valid 10 minutes).
    Pair(plangate_server::cli::pair::PairArgs),
    /// The destinations (config file and paired); `destinations remove NAME` removes a paired one.
    Destinations(plangate_server::cli::pair::DestinationsArgs),
    /// Step lists shared across sessions, and between agents `[namespaces.<name>]` names together.
    #[command(subcommand)]
    Namespace(NamespaceCmd),
    /// The operator's routing policy: `show` it merged, `test` a candidate against the recorded audit, `suggest` rules.
    #[command(subcommand)]
    Policy(plangate_server::cli::policy::PolicyCmd),
    /// Write a consistent snapshot of a running server (store and plan documents) to FILE.
    Backup {
        /// Where to write it (written beside as FILE.partial, then renamed).
        #[arg(long)]
        to: PathBuf,
        #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
        operator_token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Prune decided approvals and old audit by [retention] now; --dry-run reports what would go.
    Prune {
        #[arg(long)]
        dry_run: bool,
        #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
        operator_token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Restore a backup into a new or empty data dir (the server must not be running on it).
    Restore {
        file: PathBuf,
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// Copy a stopped sled data dir into a PostgreSQL schema, for replicas. Prints what was copied.
    /// Exit 0 copied; 1 refused or failed (e.g. a plangate still running on the data dir, PostgreSQL
    /// unreachable); 2 bad arguments.
    Migrate {
        /// The sled data dir (`server.data_dir`); no plangate may be running on it.
        #[arg(long, value_name = "DATA_DIR")]
        from: PathBuf,
        /// The PostgreSQL URL, e.g. postgres://plangate@db:5432/plangate.
        #[arg(long, value_name = "POSTGRES_URL", env = "PLANGATE_MIGRATE_TO", hide_env_values = true)]
        to: String,
        /// The schema to create the tables in (`store.postgres_schema`).
        #[arg(long, default_value = "plangate")]
        schema: String,
    },
    /// Check a setup: the data dir, the running server (ready, PLANGATE_TOKEN accepted, destinations and approvers),
    /// the chat platforms (tokens, chats, approvers), the hooks (exit 1 when any check fails).
    Doctor {
        #[arg(long)]
        config: Option<PathBuf>,
        /// The running server (default: http://<server.bind>, http://127.0.0.1:8787 with the embedded defaults).
        #[arg(long, env = "PLANGATE_URL")]
        url: Option<String>,
    },
    /// Print a shell completion script: `plangate completions bash > /etc/bash_completion.d/plangate`.
    Completions {
        #[arg(value_parser = ["bash", "zsh", "fish"])]
        shell: String,
    },
    /// Harness hooks: `hook claude` / `hook codex` answer one Claude Code / Codex hook event.
    #[command(subcommand)]
    Hook(HookCmd),
    /// An MCP server on stdio (PLANGATE_URL, PLANGATE_TOKEN, PLANGATE_SESSION; inside Claude Code the hook supplies the session).
    Mcp {
        /// Run as a Claude Code channel instead (no tools): push decisions into the session whenever they are made and
        /// answer ExitPlanMode's permission dialog. Load it only with `claude --dangerously-load-development-channels`
        /// (docs/AGENTS.md).
        #[arg(long, env = "PLANGATE_CHANNEL")]
        channel: bool,
    },
}

#[derive(Subcommand)]
enum NamespaceCmd {
    /// Print a namespace's steps as JSON (with who last touched each step, and when).
    Show {
        name: String,
        #[arg(long, env = "PLANGATE_TOKEN", hide_env_values = true)]
        token: String,
        #[command(flatten)]
        remote: Remote,
    },
    /// Merge steps into a namespace by step text (a known step changes only in the fields given):
    /// a JSON array of steps, or {"steps": [...]}, from FILE or `-` (stdin).
    Update {
        name: String,
        file: String,
        /// The session recorded as the steps' author.
        #[arg(long, default_value = "cli")]
        session: String,
        #[arg(long, env = "PLANGATE_TOKEN", hide_env_values = true)]
        token: String,
        #[command(flatten)]
        remote: Remote,
    },
}

#[derive(Subcommand)]
enum HookCmd {
    /// Answer one Claude Code hook event (JSON on stdin, answer on stdout; exits 0, or 2 to block if it cannot answer).
    Claude,
    /// Answer one Codex hook event: PreToolUse / PermissionRequest (the gate), Stop (a <proposed_plan> becomes a proposal).
    Codex,
    /// Install a hook into a harness's settings.
    #[command(subcommand)]
    Install(HookInstallCmd),
}

#[derive(Subcommand)]
enum HookInstallCmd {
    /// Merge the plangate hooks into Claude Code's settings.json.
    Claude {
        /// `local` (./.claude/settings.local.json, only for you: the choice for a personal install),
        /// `project` (./.claude/settings.json, shared through the repository) or `user` (~/.claude/settings.json).
        #[arg(long, default_value = "project", value_parser = ["local", "project", "user"])]
        scope: String,
        /// Print the resulting settings instead of writing them.
        #[arg(long)]
        dry_run: bool,
        /// Seconds ExitPlanMode waits for a decision, 0–590 (the hook timeout is this plus 10, at most
        /// Claude Code's 600 s for command hooks).
        #[arg(long, env = "PLANGATE_HOOK_WAIT", default_value_t = plangate_agent::claude::install::default_wait_secs())]
        wait: u64,
    },
    /// Merge the plangate hooks into a Codex hooks.json (PreToolUse, PermissionRequest, Stop).
    Codex {
        /// `project` (./.codex/hooks.json, loaded when Codex trusts the project) or `user` ($CODEX_HOME/hooks.json, ~/.codex/hooks.json).
        #[arg(long, default_value = "project", value_parser = ["project", "user"])]
        scope: String,
        /// Print the resulting hooks.json instead of writing it.
        #[arg(long)]
        dry_run: bool,
        /// Seconds a Stop with a plan waits for a decision (the hook timeout is this plus 10).
        #[arg(long, env = "PLANGATE_HOOK_WAIT", default_value_t = plangate_agent::codex::install::default_wait_secs())]
        wait: u64,
        /// Also record the hooks as trusted in $CODEX_HOME/config.toml (what Codex's /hooks dialog does): Codex runs no
        /// hook it has not been told to trust, so without this nothing is gated until you trust them there.
        #[arg(long)]
        trust: bool,
    },
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Validate and print the effective configuration, secrets masked.
    Check {
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

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

/// The tokens set once: a terminal that exported the server's own
/// variables (`PLANGATE__SERVER__OPERATOR_TOKEN`, one agent's
/// `PLANGATE__AGENTS__<ID>__TOKEN`, as the README's real setup does) needs
/// no second name for them. An explicit `PLANGATE_OPERATOR_TOKEN` /
/// `PLANGATE_TOKEN` or flag always wins; with several agents' tokens in
/// the environment none is guessed.
fn tokens_from_the_server_environment() {
    let unset = |name: &str| std::env::var(name).map_or(true, |v| v.trim().is_empty());
    if unset("PLANGATE_OPERATOR_TOKEN") {
        if let Ok(token) = std::env::var("PLANGATE__SERVER__OPERATOR_TOKEN").map(|t| t.trim().to_string()) {
            if !token.is_empty() {
                std::env::set_var("PLANGATE_OPERATOR_TOKEN", token);
            }
        }
    }
    if unset("PLANGATE_TOKEN") {
        let agents: Vec<String> = std::env::vars()
            .filter(|(k, v)| {
                k.starts_with("PLANGATE__AGENTS__") && k.ends_with("__TOKEN") && k.matches("__").count() == 3 && !v.trim().is_empty()
            })
            .map(|(_, v)| v.trim().to_string())
            .collect();
        if let [token] = agents.as_slice() {
            std::env::set_var("PLANGATE_TOKEN", token);
        }
    }
}

/// What to set when a token is missing: the variable, not only the flag.
fn token_hint(error: &str) -> Option<&'static str> {
    if error.contains("--operator-token") {
        Some("plangate: set PLANGATE_OPERATOR_TOKEN to the operator token the server runs with (or export PLANGATE__SERVER__OPERATOR_TOKEN, as for `plangate serve`), or pass --operator-token")
    } else if error.contains("--token") {
        Some("plangate: set PLANGATE_TOKEN to the agent's token from the server's config (or export PLANGATE__AGENTS__<ID>__TOKEN, as for `plangate serve`), or pass --token")
    } else {
        None
    }
}

fn main() {
    tokens_from_the_server_environment();
    // `hook claude` / `hook codex` alone, as the installers write them: no
    // clap command tree to build (docs/PERFORMANCE.md §21).
    if let Some(hook) = Hook::from_argv(std::env::args_os().skip(1)) {
        answer_hook(hook)
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
        Cmd::Hook(HookCmd::Claude) => answer_hook(Hook::Claude),
        Cmd::Hook(HookCmd::Codex) => answer_hook(Hook::Codex),
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

/// A harness hook: one event in, one answer out, once per tool call.
#[derive(Clone, Copy)]
enum Hook {
    Claude,
    Codex,
}

impl Hook {
    /// The hook that exactly these arguments (after the program) name:
    /// `hook claude` or `hook codex`, what `plangate hook install` writes.
    /// Anything else (`--help`, a typo) goes through clap as before.
    fn from_argv(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<Hook> {
        let hook = match (args.next()?.to_str()?, args.next()?.to_str()?) {
            ("hook", "claude") => Hook::Claude,
            ("hook", "codex") => Hook::Codex,
            _ => return None,
        };
        args.next().is_none().then_some(hook)
    }
}

/// Answer one hook event and exit. Claude Code and Codex start the hook
/// for every tool call, so its start-up is on every call's path: a runtime
/// on this thread alone, not the server's pool of workers, which one
/// request never uses (docs/PERFORMANCE.md §21). The hooks never fail
/// open: a panic, or a runtime that cannot start, blocks the call (exit 2),
/// not 101.
fn answer_hook(hook: Hook) -> ! {
    match hook {
        Hook::Claude => plangate_agent::claude::hook::fail_closed_on_panic(),
        Hook::Codex => plangate_agent::codex::hook::fail_closed_on_panic(),
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            let reason = format!("plangate: cannot start the hook ({e}), so this call is blocked");
            match hook {
                Hook::Claude => plangate_agent::claude::hook::block_and_exit(&reason),
                Hook::Codex => plangate_agent::codex::hook::block_and_exit(&reason),
            }
        }
    };
    let code = runtime.block_on(hook_answer(hook)).unwrap_or_else(|e| {
        eprintln!("plangate: {e:#}");
        1
    });
    std::process::exit(code);
}

/// What `hook claude` / `hook codex` print, and the exit code.
async fn hook_answer(hook: Hook) -> Result<i32> {
    match hook {
        Hook::Claude => {
            print!("{}", plangate_agent::claude::run().await);
            Ok(0)
        }
        Hook::Codex => {
            let out = plangate_agent::codex::hook::run().await;
            print!("{}", out.stdout);
            eprint!("{}", out.stderr);
            std::io::Write::flush(&mut std::io::stdout())?;
            Ok(out.code)
        }
    }
}

async fn run(args: Args) -> Result<i32> {
    match args.command {
        Cmd::Serve { config, log_format } => {
            init_logs(&log_format);
            serve(config).await.map(|()| 0)
        }
        Cmd::Config(ConfigCmd::Check { config }) => {
            let settings = match Settings::load(config.as_deref()) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("plangate: {e}");
                    return Ok(1);
                }
            };
            println!("{}", serde_json::to_string_pretty(&settings.masked())?);
            let source = config.map(|c| c.display().to_string()).unwrap_or_else(|| "the embedded config/default.toml".into());
            eprint!("{}", plangate_server::ops::explain::explain(&settings, &source));
            // Reported, not judged: the file is valid even while the database is down.
            if let Some(check) = plangate_server::ops::doctor::store(&settings).await {
                eprintln!("store reachable: {check}");
            }
            eprint!("{}", plangate_server::cli::pair::paired_for_config_check(&settings).await);
            eprintln!("configuration is valid");
            Ok(0)
        }
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
        Cmd::Status { session, token, remote } => {
            let client = Client::new(&remote.url, Some(token))?;
            let status = client.ok(reqwest::Method::GET, &format!("/v1/sessions/{session}"), None).await?;
            println!("{}", serde_json::to_string_pretty(&status)?);
            Ok(0)
        }
        Cmd::Decide { approval_id, action, feedback, note, except, actor, operator_token, remote } => {
            let client = Client::new(&remote.url, Some(operator_token))?;
            let mut body = json!({"action": action, "feedback": feedback, "actor": actor});
            if note.is_some() || !except.is_empty() {
                body["note"] = json!(note);
                body["except"] = json!(except);
            }
            let decision = client.ok(reqwest::Method::POST, &format!("/v1/approvals/{approval_id}/decision"), Some(body)).await?;
            cli::print_decision(&decision, false);
            Ok(0)
        }
        Cmd::List { status, limit, operator_token, remote } => {
            let client = Client::new(&remote.url, Some(operator_token))?;
            cli::list(&client, &status, limit).await
        }
        Cmd::Audit(args) => plangate_server::cli::audit::audit(args).await,
        Cmd::Pair(args) => plangate_server::cli::pair::pair(args).await,
        Cmd::Destinations(args) => plangate_server::cli::pair::destinations(args).await,
        Cmd::Policy(cmd) => plangate_server::cli::policy::run(cmd).await,
        Cmd::Namespace(NamespaceCmd::Show { name, token, remote }) => {
            let client = Client::new(&remote.url, Some(token))?;
            cli::namespace_show(&client, &name).await
        }
        Cmd::Namespace(NamespaceCmd::Update { name, file, session, token, remote }) => {
            let client = Client::new(&remote.url, Some(token))?;
            cli::namespace_update(&client, &name, &session, &file).await
        }
        Cmd::Backup { to, operator_token, remote } => {
            let stats = plangate_server::ops::backup::download(&remote.url, &operator_token, &to).await?;
            eprintln!("backup written to {} ({stats})", to.display());
            Ok(0)
        }
        Cmd::Prune { dry_run, operator_token, remote } => {
            let client = Client::new(&remote.url, Some(operator_token))?;
            let r = client.ok(reqwest::Method::POST, &format!("/v1/operator/prune?dry_run={dry_run}"), None).await?;
            let verb = if dry_run { "would prune" } else { "pruned" };
            println!(
                "{verb}: {} decided approvals ({} card deliveries, {} plan documents), {} audit records",
                r["approvals"], r["deliveries"], r["documents"], r["audit"]
            );
            Ok(0)
        }
        Cmd::Restore { file, data_dir } => {
            let stats = plangate_server::ops::backup::restore(&file, &data_dir)?;
            eprintln!(
                "restored {} into {} ({stats}); start plangate with server.data_dir = {:?}",
                file.display(),
                data_dir.display(),
                data_dir
            );
            Ok(0)
        }
        Cmd::Migrate { from, to, schema } => migrate(from, to, schema).await,
        Cmd::Doctor { config, url } => plangate_server::ops::doctor::command(config.as_deref(), url).await,
        Cmd::Completions { shell } => {
            use clap::CommandFactory;
            let shell = match shell.as_str() {
                "zsh" => clap_complete::Shell::Zsh,
                "fish" => clap_complete::Shell::Fish,
                _ => clap_complete::Shell::Bash,
            };
            clap_complete::generate(shell, &mut Args::command(), "plangate", &mut std::io::stdout());
            Ok(0)
        }
        Cmd::Hook(HookCmd::Claude) => hook_answer(Hook::Claude).await,
        Cmd::Hook(HookCmd::Install(HookInstallCmd::Claude { scope, dry_run, wait })) => {
            let scope = scope.parse()?;
            let exe = plangate_agent::claude::install::current_binary()?;
            let installed = plangate_agent::claude::install::install(scope, &std::env::current_dir()?, &exe, wait, dry_run)?;
            if let Some(warning) = installed.warning() {
                eprintln!("{warning}");
            }
            for other in &installed.also_in {
                eprintln!(
                    "note: {} also has plangate hooks; Claude Code runs both, so remove them from the file you do not want",
                    other.display()
                );
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
                eprintln!(
                    "Optional: plangate's own MCP tools (plans and questions without plan mode), for this project, only for you:\n  {add}"
                );
            }
            eprintln!(
                "Optional: a decision made after Claude stopped waiting reaches it with your next prompt; to have it arrive \
                 at once then too (a Claude Code channel; needs a claude.ai login), start Claude Code with:\n  {}",
                servers.launch
            );
            Ok(0)
        }
        Cmd::Hook(HookCmd::Codex) => hook_answer(Hook::Codex).await,
        Cmd::Hook(HookCmd::Install(HookInstallCmd::Codex { scope, dry_run, wait, trust })) => {
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
        Cmd::Mcp { channel } => {
            match if channel { plangate_agent::claude::channel::serve_stdio().await } else { plangate_agent::mcp::serve_stdio().await } {
                Ok(()) => Ok(0),
                Err(e) => {
                    eprintln!("plangate mcp: {e}");
                    Ok(1)
                }
            }
        }
    }
}

/// Set the pending gauge from the store, counting again while transitions
/// change it under the count (three tries; then the gauge keeps what the
/// transitions since start added, and says so).
async fn count_pending(core: Arc<Core>) {
    for _ in 0..3 {
        let before = core.metrics.pending_changes();
        let counted = core.blocking(|s| s.count_proposals(plangate_engine::DecisionStatus::Pending)).await;
        match counted {
            Ok(n) if core.metrics.settle_pending(i64::try_from(n).unwrap_or(i64::MAX), before) => return,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "could not count the pending approvals; the pending_approvals gauge counts from zero");
                return;
            }
        }
    }
    tracing::warn!("the pending approvals kept changing while counted; the pending_approvals gauge counts from zero");
}

/// Logs on stderr, filtered by `RUST_LOG` (default `info`). Secrets are
/// never logged: config values are not traced, channel secrets are
/// `secrecy` strings, and request spans carry the method and path only.
fn init_logs(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if format == "json" {
        logs.json().with_current_span(true).with_span_list(true).init();
    } else {
        logs.init();
    }
}

async fn serve(config: Option<PathBuf>) -> Result<()> {
    let settings = Arc::new(Settings::load(config.as_deref())?);
    tracing::info!(data_dir = %settings.data_dir.display(), "data_dir (absolute; a relative one is resolved against the current directory)");
    std::fs::create_dir_all(&settings.data_dir).with_context(|| format!("cannot create data_dir {}", settings.data_dir.display()))?;
    // Opening blocks (sled replays files; the PostgreSQL store waits on
    // its client) and must not run on an async worker.
    let opening = settings.clone();
    let (store, info) = tokio::task::spawn_blocking(move || -> Result<_> {
        plangate_server::storage::store_from_settings(&opening)
            .with_context(|| format!("cannot open the {} store", opening.raw.store.backend.trim()))
    })
    .await
    .context("the task opening the store failed")??;
    tracing::info!(
        backend = info.backend,
        location = %info.location,
        replica = info.replica_id.as_deref().unwrap_or("-"),
        shared = store.shared(),
        "store opened"
    );
    // The system clock; a debug build's test clock only when a test asks
    // (`plangate_server::clock::TEST_CLOCK_ENV`).
    let serve_clock = plangate_server::clock::for_serve().map_err(anyhow::Error::msg)?;
    let pending_at_close = store.pending_at_last_close();
    let core = Core::with_clock(settings.clone(), store, serve_clock.clock.clone());
    core.set_store_info(info);
    match pending_at_close {
        // Nothing has run yet: no transition changed the count.
        Some(pending) if core.metrics.settle_pending(i64::try_from(pending).unwrap_or(i64::MAX), 0) => {
            tracing::info!(pending, "pending approvals as the last clean shutdown left them (not counted again)");
        }
        // Counted after start, not before it: on sled that reads the
        // whole status index (≈1 s and 60–120 MB through sled's cache
        // at a million pending).
        _ => {
            tokio::spawn(count_pending(core.clone()));
        }
    }
    core.refresh_pairings().await.context("cannot read the paired destinations from the store")?;
    let checkpointer = Arc::new(plangate_server::audit::Checkpointer::new(
        plangate_server::audit::load_or_create_key(&settings.data_dir)?,
        settings.raw.audit.checkpoint_file.clone(),
    ));
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    // Before anything can park a waiter: other replicas' commits wake them.
    let replicas = plangate_server::replicas::start(&core, shutdown_rx.clone()).await?;
    let hub = Arc::new(Hub::new(core.clone()));
    let mut app = plangate_server::http::router(core.clone());
    #[cfg(debug_assertions)]
    if let Some(turned) = serve_clock.turned {
        app = plangate_server::http::with_test_clock(app, core.clone(), turned);
    }
    if let Some(web) = plangate_server::web::start(&core).context("cannot start the web page")? {
        app = plangate_server::http::with_web(app, web);
    }
    let (app, channels) = plangate_server::channels::start_all(&core, hub, shutdown_rx.clone(), app).await?;
    core.resume_outbox().await.context("cannot read the outbox of chat work left from the last run")?;
    let scheduler = tokio::spawn(plangate_server::scheduler::run(core.clone(), shutdown_rx.clone()));
    let retention = tokio::spawn(plangate_server::ops::retention::run(core.clone(), shutdown_rx.clone()));
    let interval = settings.raw.audit.interval()?;
    let checkpoints = tokio::spawn(checkpointer.clone().run(core.clone(), interval, shutdown_rx.clone()));

    let listener = tokio::net::TcpListener::bind(settings.bind).await.with_context(|| format!("cannot listen on {}", settings.bind))?;
    let addr = listener.local_addr()?;
    println!("plangate listening on http://{addr}");
    tracing::info!(%addr, data_dir = %settings.data_dir.display(), "serving");
    let stopping = core.clone();
    let graceful = async move {
        shutdown_signal().await;
        tracing::info!(waiting = stopping.parked_waiters(), "shutting down: waiting long-polls are answered 503 shutting_down");
        stopping.begin_shutdown();
    };
    // With each connection's peer address: failed authentications are
    // limited per client address (`throttle`).
    axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>()).with_graceful_shutdown(graceful).await?;
    tracing::info!("shutting down: in-flight transitions have committed");
    let _ = shutdown_tx.send(true);
    let _ = scheduler.await;
    let _ = retention.await;
    let _ = checkpoints.await;
    for task in replicas {
        let _ = task.await;
    }
    channels.stop().await;
    if let Err(left) = core.drain(std::time::Duration::from_secs(10)).await {
        tracing::warn!(%left, "stopping with chat work queued: it stays in the outbox and is resumed at the next start");
    }
    // After the last transition: the head this process leaves, signed.
    if let Err(e) = checkpointer.checkpoint(&core).await {
        tracing::error!(error = %e, "the audit checkpoint at shutdown failed");
    }
    // After the last transition: the next start takes the gauge from here.
    if let Some(pending) = core.metrics.settled_pending() {
        if let Err(e) = core.blocking(move |s| s.note_pending_at_close(pending)).await {
            tracing::warn!(error = %e, "could not leave the pending count for the next start; it will count them");
        }
    }
    core.blocking(|s| s.flush()).await?;
    Ok(())
}

/// `plangate migrate`: copy a stopped sled data dir into PostgreSQL.
async fn migrate(from: PathBuf, to: String, schema: String) -> Result<i32> {
    if !plangate_server::config::is_valid_schema_name(&schema) {
        eprintln!(
            "plangate migrate: --schema {schema:?} is not a schema name plangate takes (lowercase letters, digits and _, \
             starting with a letter or _, not pg_)"
        );
        return Ok(cli::EXIT_USAGE);
    }
    let mut options = plangate_store::PgOptions::new(to);
    options.schema = schema;
    let target = format!("{} (schema {})", plangate_server::config::mask_url_password(&options.url), options.schema);
    eprintln!("migrating {} into {target} …", from.display());
    let plans = from.join("plans");
    let migrated = tokio::task::spawn_blocking(move || plangate_store::migrate::sled_to_postgres(&from, &options))
        .await
        .context("the migration task failed")?;
    match migrated {
        Ok(report) => {
            println!("{report}");
            println!(
                "plan documents: not copied; they stay files under {} (give the replicas that directory, or a shared volume, if people open them)",
                plans.display()
            );
            eprintln!("done: set [store] backend = \"postgres\" with this URL and schema, and start the replicas");
            Ok(0)
        }
        Err(e) => {
            eprintln!("plangate migrate: {e}");
            Ok(1)
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::Hook;

    fn hook(args: &[&str]) -> Option<&'static str> {
        Hook::from_argv(args.iter().map(std::ffi::OsString::from)).map(|h| match h {
            Hook::Claude => "claude",
            Hook::Codex => "codex",
        })
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
