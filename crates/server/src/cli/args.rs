//! The command line: every subcommand and its flags (clap), the tokens a
//! terminal that runs the server already holds, and the hint for a missing
//! one. `main.rs` parses it (after the hook's fast path) and hands each
//! subcommand to its function under [`crate::cli`].

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "plangate", version, about = "A human between an AI agent's plan and its first mutation.")]
pub struct Args {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(clap::Args)]
pub struct Remote {
    /// Base URL of a running plangate.
    #[arg(long, env = "PLANGATE_URL", default_value = "http://127.0.0.1:8787", global = true)]
    pub url: String,
}

#[derive(Subcommand)]
pub enum Cmd {
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
    Audit(crate::cli::audit::AuditArgs),
    /// A one-time code that makes a chat a destination: send `/plan pair CODE` there (valid 10 minutes).
    Pair(crate::cli::pair::PairArgs),
    /// The destinations (config file and paired); `destinations remove NAME` removes a paired one.
    Destinations(crate::cli::pair::DestinationsArgs),
    /// Step lists shared across sessions, and between agents `[namespaces.<name>]` names together.
    #[command(subcommand)]
    Namespace(NamespaceCmd),
    /// The operator's routing policy: `show` it merged, `test` a candidate against the recorded audit, `suggest` rules.
    #[command(subcommand)]
    Policy(crate::cli::policy::PolicyCmd),
    /// The escalation ladder: `ladder show APPROVAL` prints who is reached when.
    #[command(subcommand)]
    Ladder(LadderCmd),
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
pub enum LadderCmd {
    /// Per level of the approval's ladder: when it is (or was) reached, and who is reached then
    /// (destinations, people, whoever the schedules say is on call; quiet hours and delegates applied).
    Show {
        approval_id: String,
        #[arg(long, env = "PLANGATE_OPERATOR_TOKEN", hide_env_values = true)]
        operator_token: String,
        #[command(flatten)]
        remote: Remote,
    },
}

#[derive(Subcommand)]
pub enum NamespaceCmd {
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
pub enum HookCmd {
    /// Answer one Claude Code hook event (JSON on stdin, answer on stdout; exits 0, or 2 to block if it cannot answer).
    Claude,
    /// Answer one Codex hook event: PreToolUse / PermissionRequest (the gate), Stop (a <proposed_plan> becomes a proposal).
    Codex,
    /// Install a hook into a harness's settings.
    #[command(subcommand)]
    Install(HookInstallCmd),
}

#[derive(Subcommand)]
pub enum HookInstallCmd {
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
pub enum ConfigCmd {
    /// Validate and print the effective configuration, secrets masked.
    Check {
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// What to set when a token is missing: the variable, not only the flag.
pub fn token_hint(error: &str) -> Option<&'static str> {
    if error.contains("--operator-token") {
        Some("plangate: set PLANGATE_OPERATOR_TOKEN to the operator token the server runs with (or export PLANGATE__SERVER__OPERATOR_TOKEN, as for `plangate serve`), or pass --operator-token")
    } else if error.contains("--token") {
        Some("plangate: set PLANGATE_TOKEN to the agent's token from the server's config (or export PLANGATE__AGENTS__<ID>__TOKEN, as for `plangate serve`), or pass --token")
    } else {
        None
    }
}

/// `plangate completions SHELL`: the completion script of this command line.
pub fn completions(shell: &str) -> i32 {
    use clap::CommandFactory;
    let shell = match shell {
        "zsh" => clap_complete::Shell::Zsh,
        "fish" => clap_complete::Shell::Fish,
        _ => clap_complete::Shell::Bash,
    };
    clap_complete::generate(shell, &mut Args::command(), "plangate", &mut std::io::stdout());
    0
}
