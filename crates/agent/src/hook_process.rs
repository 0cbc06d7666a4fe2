//! One hook event as a whole process: what `plangate hook claude|codex` and
//! the hook-only binary `plangate-hook claude|codex` both run, so the two
//! entry points share every line past their argument parsing.
//!
//! Claude Code and Codex start the hook for every tool call, so its
//! start-up is on every call's path: a runtime on this thread alone, not a
//! pool of workers, which one request never uses (docs/PERFORMANCE.md §21).
//!
//! **Invariant:** it never fails open. From before the runtime exists to the
//! process's exit, a panic, a runtime that cannot start or an answer that
//! cannot be written blocks the call in the harness's terms (exit 2 with the
//! reason, or the harness's JSON deny), never exit 101 or a silent allow.

/// The harness a hook process answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Harness {
    Claude,
    Codex,
}

impl Harness {
    /// `claude` or `codex`, as the hook commands name them.
    pub fn from_name(name: &str) -> Option<Harness> {
        match name {
            "claude" => Some(Harness::Claude),
            "codex" => Some(Harness::Codex),
            _ => None,
        }
    }

    /// The name the hook commands give it.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
        }
    }

    /// Block this call in the harness's terms, with `reason`, and exit.
    fn block_and_exit(self, reason: &str) -> ! {
        match self {
            Harness::Claude => crate::claude::hook::block_and_exit(reason),
            Harness::Codex => crate::codex::hook::block_and_exit(reason),
        }
    }
}

/// Answer one hook event of `harness` (stdin in, the answer on stdout and
/// stderr) and exit with its code. Fails closed on a panic and on a runtime
/// that cannot start.
pub fn answer_and_exit(harness: Harness) -> ! {
    match harness {
        Harness::Claude => crate::claude::hook::fail_closed_on_panic(),
        Harness::Codex => crate::codex::hook::fail_closed_on_panic(),
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => harness.block_and_exit(&format!("plangate: cannot start the hook ({e}), so this call is blocked")),
    };
    let code = runtime.block_on(answer(harness)).unwrap_or_else(|e| {
        eprintln!("plangate: {e}");
        1
    });
    std::process::exit(code);
}

/// Read one event of `harness` from stdin and print its answer: stdout,
/// stderr, and the exit code returned. Writing the answer to a closed stdout
/// panics (`print!`), which [`answer_and_exit`] turns into a block.
pub async fn answer(harness: Harness) -> std::io::Result<i32> {
    match harness {
        Harness::Claude => {
            print!("{}", crate::claude::run().await);
            Ok(0)
        }
        Harness::Codex => {
            let out = crate::codex::hook::run().await;
            print!("{}", out.stdout);
            eprint!("{}", out.stderr);
            std::io::Write::flush(&mut std::io::stdout())?;
            Ok(out.code)
        }
    }
}

/// The tokens set once: a terminal that exported the server's own
/// variables (`PLANGATE__SERVER__OPERATOR_TOKEN`, one agent's
/// `PLANGATE__AGENTS__<ID>__TOKEN`, as the README's real setup does) needs
/// no second name for them. An explicit `PLANGATE_OPERATOR_TOKEN` /
/// `PLANGATE_TOKEN` or flag always wins; with several agents' tokens in
/// the environment none is guessed. Called first by both `plangate` and
/// `plangate-hook`, so a hook reads the same environment through either.
pub fn tokens_from_the_server_environment() {
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

#[cfg(test)]
mod tests {
    use super::Harness;

    #[test]
    fn harness_names_round_trip_and_nothing_else_is_one() {
        for h in [Harness::Claude, Harness::Codex] {
            assert_eq!(Harness::from_name(h.name()), Some(h));
        }
        for other in ["", "Claude", "gemini", "hook", "claude "] {
            assert_eq!(Harness::from_name(other), None, "{other:?}");
        }
    }
}
