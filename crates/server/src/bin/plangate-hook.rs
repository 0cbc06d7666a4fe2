//! `plangate-hook claude|codex`: the hook-only binary. The same answer, on
//! stdout, stderr and in the exit code, as `plangate hook claude|codex`
//! (both run [`plangate_agent::hook_process`]), from a binary that links
//! only the agent side: a fraction of `plangate`'s relocations to apply at
//! every start, once per tool call (docs/PERFORMANCE.md §21, §21b).
//!
//! It fails closed like the hook itself: any other argument is a block
//! (exit 2 with the reason on stderr, which both harnesses obey), never a
//! usage error that a harness would take for a non-blocking one.

use plangate_agent::hook_process::{self, Harness};

fn main() {
    hook_process::tokens_from_the_server_environment();
    let mut args = std::env::args_os().skip(1);
    let harness = match (args.next(), args.next()) {
        (Some(name), None) => name.to_str().and_then(Harness::from_name),
        _ => None,
    };
    match harness {
        Some(harness) => hook_process::answer_and_exit(harness),
        None => {
            eprintln!("plangate-hook: usage: plangate-hook claude|codex (the hook of one harness), so this call is blocked");
            std::process::exit(2);
        }
    }
}
