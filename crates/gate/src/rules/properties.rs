//! Property tests of [`super`] (rules.rs).

use super::may_run;
use proptest::prelude::*;

/// A word the strict tokenizer accepts, sometimes quoted.
fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9_.-]{0,6}",
        "-[a-zA-Z]{1,3}",
        "--[a-z]{1,6}(=[a-z0-9]{1,3})?",
        "[a-z]{1,4}=[a-z0-9]{0,3}",
        "'[a-z ;|&$()]{0,6}'",
        "\"[a-z ;|&]{0,6}\"",
        "/usr/bin/[a-z]{1,5}",
    ]
}

fn program() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("git".to_string()),
        Just("npm".to_string()),
        Just("rm".to_string()),
        Just("cargo".to_string()),
        Just("docker".to_string()),
        Just("kubectl".to_string()),
        "[a-z][a-z0-9_]{0,6}",
    ]
}

/// What a command may be wrapped in and still run the same simple
/// command.
fn framing() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        Just((String::new(), String::new())),
        Just(("true && ".to_string(), String::new())),
        Just(("echo x; ".to_string(), " | cat".to_string())),
        Just(("(".to_string(), ")".to_string())),
        Just(("$(".to_string(), ")".to_string())),
        Just(("if true; then ".to_string(), "; fi".to_string())),
        Just(("bash -c '".to_string(), "'".to_string())),
        Just(("sudo -u root ".to_string(), String::new())),
        Just(("X=1 ".to_string(), " 2>&1".to_string())),
        Just(("env -i A=1 nice -n 3 ".to_string(), String::new())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Never narrower than the strict reading: when the tokenizer reads
    /// the command as words starting with the rule's, it matches.
    #[test]
    fn never_narrower_than_simple_words(words in prop::collection::vec(word(), 1..7), cut in 1usize..7) {
        let command = words.join(" ");
        if let Some(read) = crate::simple_words(&command) {
            let prefix: Vec<&str> = read.iter().take(cut.min(read.len())).map(String::as_str).collect();
            prop_assert!(may_run(&command, &prefix), "{command:?} {prefix:?}");
        }
    }

    /// Arbitrary text: same property, and no panic.
    #[test]
    fn never_narrower_on_any_text(command in "[ -~\\n\\té]{0,40}", cut in 1usize..4) {
        if let Some(read) = crate::simple_words(&command) {
            let prefix: Vec<&str> = read.iter().take(cut.min(read.len())).map(String::as_str).collect();
            prop_assert!(may_run(&command, &prefix));
        }
        let _ = may_run(&command, &["git", "push"]);
    }

    /// Arbitrary text after a program: whatever matches keeps matching
    /// behind `true && `, `sudo ` and `env A=1 `.
    #[test]
    fn wrapping_any_text_keeps_a_match(
        prog in program(),
        sub in prop::collection::vec("[a-z]{1,4}", 0..2),
        tail in "[ -~\\n\\té]{0,30}",
    ) {
        let mut prefix: Vec<&str> = vec![prog.as_str()];
        prefix.extend(sub.iter().map(String::as_str));
        for command in [format!("{prog} {tail}"), format!("{tail}\n{prog} {}", sub.join(" ")), tail.clone()] {
            if !may_run(&command, &prefix) {
                continue;
            }
            for wrap in ["true && ", "sudo ", "env A=1 "] {
                let wrapped = format!("{wrap}{command}");
                prop_assert!(may_run(&wrapped, &prefix), "{wrapped:?} {prefix:?}");
            }
        }
    }

    /// A match stays a match behind `true && `, `sudo ` and `env A=1 `,
    /// and inside the usual framings.
    #[test]
    fn wrapping_keeps_a_match(
        prog in program(),
        sub in prop::collection::vec("[a-z][a-z0-9]{0,5}", 0..3),
        options in prop::collection::vec(prop_oneof![Just("--no-pager"), Just("-c a=b"), Just("--tag next"), Just("--verbose")], 0..3),
        args in prop::collection::vec(word(), 0..3),
        (before, after) in framing(),
    ) {
        let mut prefix: Vec<&str> = vec![prog.as_str()];
        prefix.extend(sub.iter().map(String::as_str));
        let inner: Vec<&str> = std::iter::once(prog.as_str())
            .chain(options.iter().copied())
            .chain(sub.iter().map(String::as_str))
            .chain(args.iter().map(String::as_str))
            .collect();
        let inner = inner.join(" ");
        prop_assert!(may_run(&inner, &prefix), "{inner:?} {prefix:?}");
        // Inside `bash -c '…'` a single quote would end the string.
        let framed = format!("{before}{}{after}", if before.ends_with('\'') { inner.replace('\'', "") } else { inner.clone() });
        prop_assert!(may_run(&framed, &prefix), "{framed:?} {prefix:?}");
        for wrap in ["true && ", "sudo ", "env A=1 "] {
            let wrapped = format!("{wrap}{framed}");
            prop_assert!(may_run(&wrapped, &prefix), "{wrapped:?} {prefix:?}");
        }
    }
}
