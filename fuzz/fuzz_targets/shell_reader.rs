//! The gate's shell reader: the strict tokenizer behind `check_command`,
//! `simple_words` (what a permission rule's `prefix:*` compares) and the
//! risk line of a permission card, fed any UTF-8 text as a `Bash` command.
//!
//! Beyond "no panic": a command the gate allows is a single simple
//! command, so `simple_words` has its words, unless one is an unquoted glob
//! (`ls src/*`: the gate allows it, and `simple_words` refuses it by design,
//! so no `prefix:*` rule covers what a glob expands to); a verdict's reason
//! never holds a control character (it goes straight into a hook response
//! or a log line); a command with words may run under a `prefix:*` rule of
//! its first word (`rules::may_run`, the reading of deny and ask rules).
#![no_main]

use libfuzzer_sys::fuzz_target;
use plangate_gate::{check_command, risk, rules, simple_words, Policy};
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Ok(command) = std::str::from_utf8(data) else { return };
    let verdict = check_command(&Policy::default(), command);
    let words = simple_words(command);
    if verdict.is_allow() && words.is_none() {
        assert!(
            command.contains(['*', '?', '^']),
            "the gate allows {command:?} ({verdict}) but simple_words finds no single simple command in it, and it has no glob"
        );
    }
    if let Some(first) = words.as_deref().and_then(<[String]>::first) {
        assert!(
            rules::may_run(command, &[first.as_str()]),
            "simple_words reads {command:?} as {words:?}, yet a `{first}:*` rule may not run it"
        );
    }
    assert!(
        !verdict.reason().chars().any(char::is_control),
        "the verdict on {command:?} has a control character in its reason: {:?}",
        verdict.reason()
    );
    let _ = risk::risks("Bash", &json!({ "command": command }));
});
