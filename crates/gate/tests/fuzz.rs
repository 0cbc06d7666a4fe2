//! Property tests: mutate allowed commands with operators, quotes, escapes and
//! Unicode at random positions, and feed the gate arbitrary strings and JSON.
//!
//! The oracle is deliberately independent of the gate's lexer and simpler
//! than it: a three-state quote tracker that calls any shell-syntax character
//! outside quotes (and any expanding character inside double quotes) an
//! operator. It is conservative — it flags things a shell would not run — so
//! "the oracle flags it" must always imply "the gate denies it".

use plangate_gate::{check_command, check_plan_mode, is_shell_tool, Policy, READ_ONLY_TOOLS};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Commands the gate allows; the starting points for mutation.
const BASES: &[&str] = &[
    "ls -la",
    "ls src/*.rs",
    "cat Cargo.toml",
    "head -n 50 f",
    "tail -n 20 log.txt",
    "wc -l f",
    r#"grep -rn "fn main" ."#,
    "rg -n foo src/",
    "rg -l --type rust unsafe",
    "find . -name '*.rs'",
    "find src -type f -newer Cargo.toml",
    "sed -n 1,40p file",
    "sed -n '$p' Cargo.lock",
    "git status --short",
    "git log --oneline -20",
    "git diff HEAD~1 -- src/",
    "git show HEAD:README.md",
    "git branch --list 'feat/*'",
    "git rev-parse --show-toplevel",
    "git ls-files '*.rs'",
    "git blame -L 10,20 src/lib.rs",
    "sort -u -k 2 names.txt",
    "echo 'hello world'",
    "date +%Y-%m-%d",
    "tree -L 2 src",
    "du -sh target",
    "printenv PATH",
    "uname -a",
    "/usr/bin/git --no-pager log -5",
];

/// What gets inserted: shell operators, quotes, escapes, expansions and
/// Unicode look-alikes, plus harmless characters so that mutants are not all
/// trivially broken.
const INSERTS: &[&str] = &[
    ";", "|", "&", "&&", "||", "|&", "$(", ")", "(", "`", ">", ">>", ">|", "<", "<<", "<<<", "<(", ">(", "\n", "\r", "\\\n", "\\", "\\'",
    "$'", "$\"", "$IFS", "${IFS}", "$x", "$0", "${x@P}", "'", "\"", "''", "\"\"", "{a,b}", "{", "}", "[a]", "*", "?", "~root", "~+", "#",
    "!", "^", "=", "%", "\u{FF1B}", "\u{FF5C}", "\u{FF06}", "\u{FF1E}", "\u{A0}", "\u{2009}", "\u{3000}", "\u{200B}", "\u{200D}",
    "\u{2060}", "\u{FEFF}", "\u{202E}", "\u{2066}", "\u{2028}", "\u{85}", "\u{0}", "\u{1B}", "\u{7F}", "é", " ", "\t", "-", "x", "--",
];

/// Characters that may never reach an allowed command, quoted or not:
/// invisible, bidi, line-breaking, control.
const NEVER: &[char] = &[
    '\u{0}', '\u{1B}', '\u{7F}', '\u{85}', '\u{A0}', '\u{2009}', '\u{3000}', '\u{200B}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{202E}',
    '\u{2066}', '\u{2028}', '\n', '\r',
];

/// The independent oracle: does `s` contain an operator, expansion or escape
/// the shell would act on, an unterminated quote, or non-ASCII text outside
/// quotes?
fn has_unquoted_operator(s: &str) -> bool {
    #[derive(PartialEq)]
    enum Q {
        Out,
        Single,
        Double,
    }
    let mut q = Q::Out;
    for c in s.chars() {
        match q {
            Q::Out => match c {
                '\'' => q = Q::Single,
                '"' => q = Q::Double,
                ';' | '|' | '&' | '<' | '>' | '(' | ')' | '$' | '`' | '\\' | '{' | '}' | '[' | ']' | '!' | '#' => return true,
                ' ' | '\t' => {}
                c if !c.is_ascii() || c.is_ascii_control() => return true,
                _ => {}
            },
            Q::Single => match c {
                '\'' => q = Q::Out,
                '\n' | '\r' => return true,
                _ => {}
            },
            Q::Double => match c {
                '"' => q = Q::Out,
                '$' | '`' | '\\' | '!' | '\n' | '\r' => return true,
                _ => {}
            },
        }
    }
    q != Q::Out
}

/// `base` with `inserts` placed at the given character positions.
fn mutate(base: &str, inserts: &[(usize, usize)]) -> String {
    let mut s: Vec<char> = base.chars().collect();
    for &(pos, which) in inserts {
        let at = pos % (s.len() + 1);
        let ins: Vec<char> = INSERTS[which % INSERTS.len()].chars().collect();
        s.splice(at..at, ins);
    }
    s.into_iter().collect()
}

/// One clean line, ending in what plan mode allows when denied.
fn reason_is_one_line(verdict: &plangate_gate::Verdict) -> bool {
    let r = verdict.reason();
    !r.trim().is_empty() && !r.chars().any(char::is_control) && r.is_ascii()
}

/// Write-capable options per program, each to be inserted as its own word.
const DANGEROUS: &[(&[&str], &[&str])] = &[
    (
        &["find . -name '*.rs'", "find src -type f", "find . -maxdepth 2 -print"],
        &["-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls", "'-delete'", "-ex''ec"],
    ),
    (
        &["rg -n foo src/", "rg -l --type rust unsafe", "rg -e foo"],
        &["--pre=sh", "--pre", "--pr", "--pre-glob=x", "--hostname-bin=id", "-z", "-iz", "--search-zip", "'--pre=sh'", "--search"],
    ),
    (
        &["sort -u f", "sort -k 2 names.txt", "sort -t, -n data.csv"],
        &["-o", "-ox", "-uo", "--output=x", "--o", "--outp", "--compress-program=sh", "--compress", "--files0-from=x", "-T", "-Tx"],
    ),
    (
        &["git log --oneline -20", "git diff HEAD~1 -- src/", "git show --stat HEAD", "git blame src/lib.rs"],
        &["--output=x", "--outp", "--ext-diff", "--ext", "--textconv", "--textc", "--show-signature", "--help", "'--output'=x"],
    ),
    (&["git status --short", "git rev-parse HEAD", "git ls-files -m"], &["--output=x", "--ext-diff", "--textconv", "--help"]),
    (
        &["git branch", "git branch -a", "git branch -vv", "git branch --show-current"],
        &[
            "-D",
            "-d",
            "-m",
            "-M",
            "-c",
            "-C",
            "-f",
            "-u",
            "--delete",
            "--move",
            "--copy",
            "--force",
            "--set-upstream-to=x",
            "--unset-upstream",
            "--edit-description",
            "--track",
            "--create-reflog",
            "newbranch",
        ],
    ),
    (&["tail -n 5 f", "tail -c 100 f"], &["-f", "-F", "--follow", "-5f", "+5f", "-qf"]),
    (
        &["sed -n 1,40p file", "sed -n '$p' f", "sed -n -e 5p f"],
        &["-i", "-i.bak", "--in-place=.b", "-e w", "-e 1e", "--expression=w x", "-f"],
    ),
    (&["tree -L 2 src", "tree -a -I target"], &["-o", "-ox", "-Lo", "-R", "--output=x"]),
    (&["file Cargo.toml", "file -b src/main.rs"], &["-C", "-bC", "-z", "-Z", "--compile", "--uncompress"]),
];

/// Global git options that run programs or change the repository; only
/// meaningful right after `git`.
const GIT_GLOBAL: &[&str] =
    &["-c", "-cx=y", "-c x=y", "-C", "-C /tmp", "--git-dir=x", "--work-tree=x", "--exec-path=x", "-p", "--paginate", "--config-env=x=y"];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<String>().prop_map(Value::String),
        prop::sample::select(BASES).prop_map(|s| json!(s)),
        (prop::sample::select(BASES), prop::collection::vec((any::<usize>(), any::<usize>()), 1..4))
            .prop_map(|(b, ins)| json!(mutate(b, &ins))),
    ];
    let key = prop_oneof![
        prop::sample::select(
            &[
                "command",
                "cmd",
                "model",
                "description",
                "env",
                "timeout",
                "dangerouslyDisableSandbox",
                "path",
                "workdir",
                "cwd",
                "pty",
                "tty",
                "isolation",
            ][..]
        )
        .prop_map(String::from),
        any::<String>(),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(
            &["exec", "bash", "Bash", "shell", "terminal", "Read", "Write", "session_status", "Edit", "Task", "Agent", "AskUserQuestion"][..]
        )
        .prop_map(String::from),
        "mcp__[a-z_-]{0,6}__[a-zA-Z_-]{0,14}",
        "[a-z]{0,5}\\.[a-zA-Z_]{0,10}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    /// Mutated allowed commands: no panic; anything the oracle flags, and
    /// anything with an invisible character, is denied.
    #[test]
    fn mutants_with_operators_are_denied(
        base in prop::sample::select(BASES),
        inserts in prop::collection::vec((any::<usize>(), any::<usize>()), 1..5),
    ) {
        let command = mutate(base, &inserts);
        let verdict = check_command(&Policy::default(), &command);
        prop_assert!(reason_is_one_line(&verdict), "{:?}: {}", command, verdict);
        if has_unquoted_operator(&command) || command.contains(NEVER) {
            prop_assert!(!verdict.is_allow(), "allowed {:?}: {}", command, verdict);
        }
    }

    /// A write-capable option inserted as a word anywhere after the command
    /// name is denied, however the rest of the command looks.
    #[test]
    fn dangerous_options_are_denied_anywhere(
        group in 0..DANGEROUS.len(),
        base in any::<prop::sample::Index>(),
        flag in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
    ) {
        let (bases, flags) = DANGEROUS[group];
        let base = base.get(bases);
        let flag = flag.get(flags);
        let mut words: Vec<&str> = base.split(' ').collect();
        let at = 1 + at.index(words.len());
        words.insert(at, flag);
        let command = words.join(" ");
        let verdict = check_command(&Policy::default(), &command);
        prop_assert!(!verdict.is_allow(), "allowed {:?}: {}", command, verdict);
        prop_assert!(reason_is_one_line(&verdict));
    }

    /// The same, for git's global options.
    #[test]
    fn git_global_options_are_denied(
        base in prop::sample::select(&["git log --oneline", "git status", "git diff --stat", "git show HEAD"][..]),
        opt in prop::sample::select(GIT_GLOBAL),
        no_pager in any::<bool>(),
    ) {
        let rest = base.strip_prefix("git ").unwrap_or(base);
        let command = if no_pager { format!("git --no-pager {opt} {rest}") } else { format!("git {opt} {rest}") };
        prop_assert!(!check_command(&Policy::default(), &command).is_allow(), "allowed {:?}", command);
    }

    /// Arbitrary strings, over all of Unicode and over a shell-heavy
    /// alphabet: no panic, one-line reason, and the oracle holds.
    #[test]
    fn arbitrary_strings(
        any_text in any::<String>(),
        shellish in prop::collection::vec(
            prop::sample::select(&[
                'l', 's', 'g', 'i', 't', ' ', '-', '\'', '"', '\\', ';', '|', '&', '$', '(', ')', '`', '>', '<', '*',
                '?', '~', '=', '\n', '\r', '\t', '#', '!', '{', '}', '\u{FF1B}', '\u{A0}', '\u{200B}', '.', '/',
            ][..]),
            0..60,
        ).prop_map(|cs| cs.into_iter().collect::<String>()),
    ) {
        for command in [any_text, shellish] {
            let verdict = check_command(&Policy::default(), &command);
            prop_assert!(reason_is_one_line(&verdict), "{:?}: {}", command, verdict);
            if has_unquoted_operator(&command) || command.contains(NEVER) {
                prop_assert!(!verdict.is_allow(), "allowed {:?}: {}", command, verdict);
            }
        }
    }

    /// Arbitrary tool names and JSON inputs: no panic, one-line reasons; a
    /// shell tool is allowed only for a command the command gate allows; an
    /// allowed tool is a listed, MCP or dotted one.
    #[test]
    fn arbitrary_tool_calls(tool in tool_name(), input in json_value()) {
        let policy = Policy::default();
        let verdict = check_plan_mode(&policy, &tool, &input);
        prop_assert!(reason_is_one_line(&verdict), "{:?}: {}", tool, verdict);
        if !verdict.is_allow() {
            return Ok(());
        }
        if is_shell_tool(&tool) {
            let command = input.get("command").or_else(|| input.get("cmd")).and_then(Value::as_str);
            prop_assert!(command.is_some(), "{:?} allowed without a command: {}", tool, input);
            prop_assert!(check_command(&policy, command.unwrap_or_default()).is_allow());
            // No other directory (its git config could run programs), no terminal (a pager).
            for dir in ["workdir", "cwd"] {
                prop_assert!(input.get(dir).is_none_or(|v| v.is_null() || v == ""), "{} allowed: {}", dir, input);
            }
            for tty in ["pty", "tty"] {
                prop_assert!(input.get(tty).is_none_or(|v| v.is_null() || v == false), "{} allowed: {}", tty, input);
            }
        } else {
            prop_assert!(
                READ_ONLY_TOOLS.contains(&tool.as_str()) || tool.starts_with("mcp__") || tool.contains('.'),
                "unexpected allowed tool {:?}", tool
            );
            prop_assert!(tool.is_ascii());
        }
        if tool == "session_status" {
            prop_assert!(input.get("model").is_none_or(Value::is_null), "model switch allowed: {}", input);
        }
        if tool == "Agent" || tool == "Task" {
            for arg in ["cwd", "isolation"] {
                prop_assert!(input.get(arg).is_none_or(Value::is_null), "subagent {} allowed: {}", arg, input);
            }
        }
    }
}

/// Every single insertion at every position of every base, exhaustively;
/// the proptest above covers several insertions at once.
#[test]
fn every_single_insertion() {
    let (mut flagged, mut still_allowed) = (0, 0);
    for base in BASES {
        for which in 0..INSERTS.len() {
            for pos in 0..=base.chars().count() {
                let command = mutate(base, &[(pos, which)]);
                let verdict = check_command(&Policy::default(), &command);
                assert!(reason_is_one_line(&verdict), "{command:?}: {verdict}");
                if has_unquoted_operator(&command) || command.contains(NEVER) {
                    flagged += 1;
                    assert!(!verdict.is_allow(), "allowed {command:?}: {verdict}");
                } else if verdict.is_allow() {
                    still_allowed += 1;
                }
            }
        }
    }
    // Not vacuous: most mutants carry an operator, and harmless ones
    // (a space, a letter, a quoted pair) stay allowed.
    assert!(flagged > 20_000, "{flagged}");
    assert!(still_allowed > 1_000, "{still_allowed}");
}

#[test]
fn the_oracle_is_sane() {
    for s in BASES {
        assert!(!has_unquoted_operator(s), "{s}");
        assert!(check_command(&Policy::default(), s).is_allow(), "base {s:?} is not allowed");
    }
    for s in ["ls; x", "a | b", "echo $(x)", "echo \"$x\"", "ls 'x", "ls \\x", "ls\u{FF1B}"] {
        assert!(has_unquoted_operator(s), "{s}");
    }
    assert!(!has_unquoted_operator("echo ';|&$' \"a'b\""));
    for (bases, _) in DANGEROUS {
        for b in *bases {
            assert!(check_command(&Policy::default(), b).is_allow(), "dangerous-option base {b:?} is not allowed");
        }
    }
}
