//! What the reader knows of programs: shell keywords, shells, wrappers and the global options of common programs.

use super::*;

/// Words at command position that are syntax, not the program.
pub(super) const KEYWORDS: &[&str] = &[
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "do",
    "done",
    "while",
    "until",
    "for",
    "select",
    "case",
    "esac",
    "function",
    "coproc",
    "!",
    "-",
    "noglob",
    "nocorrect",
];

/// Shells whose `-c` string is code.
pub(super) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish"];

/// A program that runs the rest of its words as a command.
pub(super) struct Wrapper {
    pub(super) names: &'static [&'static str],
    /// Short options that take a value.
    pub(super) short: &'static str,
    /// Long options (without `--`) that take the next word as value.
    pub(super) long: &'static [&'static str],
    /// Options whose value is a command line (`su -c`, `env -S`).
    pub(super) code: &'static [&'static str],
    /// Words between the options and the command (`chroot DIR`).
    pub(super) operands: usize,
    /// The command's words are joined into a command line a shell reads
    /// (`ssh host …`, `watch …`).
    pub(super) joins: bool,
    /// Words from standard input may follow the command's (`xargs`).
    pub(super) stdin_words: bool,
}

pub(super) const fn wrapper(names: &'static [&'static str], short: &'static str, long: &'static [&'static str]) -> Wrapper {
    Wrapper { names, short, long, code: &[], operands: 0, joins: false, stdin_words: false }
}

pub(super) const WRAPPERS: &[Wrapper] = &[
    wrapper(
        &["sudo"],
        "CDghpRrTtUu",
        &["chdir", "close-from", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"],
    ),
    wrapper(&["doas"], "uC", &[]),
    Wrapper { code: &["-S", "--split-string"], ..wrapper(&["env"], "uCS", &["unset", "chdir", "split-string"]) },
    wrapper(
        &[
            "command",
            "builtin",
            "nohup",
            "setsid",
            "unbuffer",
            "fakeroot",
            "dbus-run-session",
            "tini",
            "dumb-init",
            "valgrind",
            "busybox",
            "toybox",
        ],
        "",
        &[],
    ),
    wrapper(&["exec"], "a", &[]),
    wrapper(&["nice"], "n", &["adjustment"]),
    wrapper(&["time"], "fo", &["format", "output"]),
    Wrapper { operands: 1, ..wrapper(&["timeout"], "sk", &["signal", "kill-after"]) },
    Wrapper {
        stdin_words: true,
        ..wrapper(&["xargs"], "adEILnPs", &["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"])
    },
    wrapper(&["stdbuf"], "ioe", &["input", "output", "error"]),
    wrapper(&["ionice"], "cnpPu", &["class", "classdata", "pid", "pgid", "uid"]),
    Wrapper { operands: 1, ..wrapper(&["chroot"], "", &["userspec", "groups"]) },
    Wrapper { operands: 1, code: &["-c", "--command"], ..wrapper(&["flock"], "wE", &["timeout", "conflict-exit-code"]) },
    Wrapper { joins: true, ..wrapper(&["watch"], "n", &["interval"]) },
    wrapper(&["strace"], "abeEIoOpPsSuUX", &[]),
    wrapper(&["caffeinate"], "tw", &[]),
    wrapper(&["pkexec"], "", &["user"]),
    Wrapper {
        operands: 1,
        code: &["-c", "--command", "--session-command"],
        ..wrapper(&["su", "runuser"], "cgGsuw", &["command", "session-command", "group", "supp-group", "shell", "user"])
    },
    Wrapper { code: &["-c", "--command"], ..wrapper(&["script"], "cEIOBTm", &["command"]) },
    Wrapper { operands: 1, ..wrapper(&["gosu", "su-exec"], "", &[]) },
    wrapper(&["unshare"], "", &[]),
    wrapper(&["nsenter"], "tSG", &["target"]),
    Wrapper { operands: 1, ..wrapper(&["chrt", "taskset"], "", &[]) },
    wrapper(&["numactl"], "CNmipP", &[]),
    wrapper(&["torsocks"], "upaP", &[]),
    wrapper(&["proxychains", "proxychains4"], "f", &[]),
    wrapper(&["xvfb-run"], "efnps", &[]),
    wrapper(&["systemd-run"], "pEuMH", &["property", "setenv", "unit", "machine", "host"]),
    Wrapper { operands: 2, ..wrapper(&["direnv"], "", &[]) },
    Wrapper { operands: 1, joins: true, ..wrapper(&["ssh"], "BbcDEeFIiJLlmOopQRSWw", &[]) },
];

/// How a wrapper's option word `t` moves on (bit 1: to the next word, bit
/// 2: past its value), and the value when it is a command line
/// (`Some(None)`: the next word).
pub(super) fn option_shape<'t>(spec: &Wrapper, t: &'t str) -> (u8, Option<Option<&'t str>>) {
    if let Some(long) = t.strip_prefix("--") {
        return match long.split_once('=') {
            Some((name, value)) => (0b10, spec.code.iter().any(|c| c.strip_prefix("--") == Some(name)).then_some(Some(value))),
            None if spec.code.contains(&t) => (0b100, Some(None)),
            None if spec.long.contains(&long) => (0b100, None),
            None => (0b110, None),
        };
    }
    for (k, ch) in t.char_indices().skip(1) {
        let code = spec.code.iter().any(|c| c.strip_prefix('-').is_some_and(|c| c.len() == ch.len_utf8() && c.starts_with(ch)));
        if code || spec.short.contains(ch) {
            let attached = &t[k + ch.len_utf8()..];
            let value = if attached.is_empty() { None } else { Some(attached) };
            return (if attached.is_empty() { 0b100 } else { 0b10 }, code.then_some(value));
        }
    }
    (0b110, None)
}

/// What an option costs in words.
pub(super) enum Skip {
    /// Not an option: it is a subcommand word or ends the search.
    Not,
    One,
    /// An option and its value.
    Two,
    /// Either: an option this module does not know.
    Both,
}

/// A program whose global options are known.
pub(super) struct Program {
    pub(super) names: &'static [&'static str],
    /// Global options that take the next word as their value.
    pub(super) values: &'static [&'static str],
    /// Global options that take none.
    pub(super) flags: &'static [&'static str],
    /// `+toolchain` may come first (cargo).
    pub(super) plus_first: bool,
    /// Subcommand aliases: (alias, command).
    pub(super) aliases: &'static [(&'static str, &'static str)],
    /// A word that starts a subcommand's name stands for it (npm's abbrev).
    pub(super) abbreviates: bool,
    /// `-c alias.x=…` defines a subcommand (git).
    pub(super) alias_options: bool,
}

pub(super) const fn program(names: &'static [&'static str], values: &'static [&'static str], flags: &'static [&'static str]) -> Program {
    Program { names, values, flags, plus_first: false, aliases: &[], abbreviates: false, alias_options: false }
}

pub(super) const NPM_ALIASES: &[(&str, &str)] = &[
    ("add", "install"),
    ("i", "install"),
    ("in", "install"),
    ("ins", "install"),
    ("inst", "install"),
    ("insta", "install"),
    ("instal", "install"),
    ("isnt", "install"),
    ("isnta", "install"),
    ("isntal", "install"),
    ("isntall", "install"),
    ("unlink", "uninstall"),
    ("remove", "uninstall"),
    ("rm", "uninstall"),
    ("r", "uninstall"),
    ("un", "uninstall"),
    ("up", "update"),
    ("upgrade", "update"),
    ("udpate", "update"),
    ("run", "run-script"),
    ("rum", "run-script"),
    ("urn", "run-script"),
    ("t", "test"),
    ("tst", "test"),
    ("x", "exec"),
    ("clean-install", "ci"),
    ("ic", "ci"),
    ("install-clean", "ci"),
    ("isntall-clean", "ci"),
    ("it", "install-test"),
    ("cit", "install-ci-test"),
    ("ln", "link"),
    ("list", "ls"),
    ("create", "init"),
    ("c", "config"),
    ("rb", "rebuild"),
    ("ddp", "dedupe"),
    ("info", "view"),
    ("show", "view"),
    ("v", "view"),
];

pub(super) const PROGRAMS: &[Program] = &[
    Program {
        alias_options: true,
        ..program(
            &["git"],
            &["-c", "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source", "--list-cmds"],
            &[
                "-p",
                "--paginate",
                "-P",
                "--no-pager",
                "--bare",
                "--no-replace-objects",
                "--literal-pathspecs",
                "--glob-pathspecs",
                "--noglob-pathspecs",
                "--icase-pathspecs",
                "--no-optional-locks",
                "--no-lazy-fetch",
                "--no-advice",
            ],
        )
    },
    Program {
        plus_first: true,
        aliases: &[("b", "build"), ("c", "check"), ("d", "doc"), ("n", "new"), ("r", "run"), ("t", "test"), ("rm", "remove")],
        ..program(
            &["cargo"],
            &["--config", "-C", "-Z", "--color", "--manifest-path", "--explain"],
            &["-v", "-vv", "--verbose", "-q", "--quiet", "--frozen", "--locked", "--offline", "-V", "--version", "--list", "-h", "--help"],
        )
    },
    program(
        &["docker", "podman"],
        &[
            "-H",
            "--host",
            "-c",
            "--context",
            "--config",
            "-l",
            "--log-level",
            "--tlscacert",
            "--tlscert",
            "--tlskey",
            "--url",
            "--connection",
        ],
        &["-D", "--debug", "--tls", "--tlsverify", "-v", "--version"],
    ),
    program(
        &["kubectl", "oc"],
        &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "--cluster",
            "--user",
            "-s",
            "--server",
            "--token",
            "--as",
            "--as-group",
            "--as-uid",
            "--certificate-authority",
            "--client-certificate",
            "--client-key",
            "--request-timeout",
            "-v",
            "--v",
            "--vmodule",
            "--cache-dir",
            "--tls-server-name",
            "--profile",
            "--profile-output",
            "--username",
            "--password",
        ],
        &["--insecure-skip-tls-verify", "--match-server-version", "--warnings-as-errors", "--disable-compression", "-h", "--help"],
    ),
    program(
        &["helm"],
        &[
            "-n",
            "--namespace",
            "--kube-context",
            "--kubeconfig",
            "--kube-apiserver",
            "--kube-as-user",
            "--kube-as-group",
            "--kube-ca-file",
            "--kube-token",
            "--kube-tls-server-name",
            "--registry-config",
            "--repository-cache",
            "--repository-config",
            "--burst-limit",
            "--qps",
        ],
        &["--debug", "--kube-insecure-skip-tls-verify", "-h", "--help"],
    ),
    program(&["terraform", "tofu"], &[], &["-help", "-version", "-v", "-h", "--help", "--version"]),
    program(
        &["aws"],
        &[
            "--profile",
            "--region",
            "--output",
            "--endpoint-url",
            "--query",
            "--cli-read-timeout",
            "--cli-connect-timeout",
            "--ca-bundle",
            "--color",
            "--cli-binary-format",
        ],
        &[
            "--debug",
            "--no-verify-ssl",
            "--no-paginate",
            "--no-sign-request",
            "--no-cli-pager",
            "--cli-auto-prompt",
            "--no-cli-auto-prompt",
            "--version",
        ],
    ),
    program(
        &["gcloud"],
        &[
            "--project",
            "--account",
            "--configuration",
            "--verbosity",
            "--format",
            "--flatten",
            "--impersonate-service-account",
            "--billing-project",
            "--access-token-file",
            "--trace-token",
        ],
        &["--quiet", "-q", "--log-http", "--user-output-enabled", "--no-user-output-enabled", "-h", "--help"],
    ),
    // npm reads `--key value` for any key: every option may take the next
    // word, as for a program not listed here.
    Program { aliases: NPM_ALIASES, abbreviates: true, ..program(&["npm"], &[], &[]) },
    Program {
        aliases: &[
            ("i", "install"),
            ("rm", "remove"),
            ("uninstall", "remove"),
            ("un", "remove"),
            ("up", "update"),
            ("upgrade", "update"),
            ("run-script", "run"),
            ("t", "test"),
        ],
        ..program(&["pnpm"], &[], &[])
    },
];

/// How option word `w` moves the search for a subcommand on. `program` is
/// the program whose global options are known (None: any other program, or
/// past the first subcommand); `first`: the word right after the program.
pub(super) fn skip(w: &Word, program: Option<&Program>, first: bool) -> Skip {
    if w.dynamic {
        return Skip::Both;
    }
    let t = w.text.as_str();
    if w.glob {
        // A glob may expand to an option (a file named `--no-pager`).
        return match w.pattern(0).first() {
            Some(Pat::Lit('-') | Pat::Star | Pat::Any) => Skip::Both,
            _ => Skip::Not,
        };
    }
    if first && t.starts_with('+') && program.is_some_and(|p| p.plus_first) {
        return Skip::One;
    }
    if t.len() < 2 || !t.starts_with('-') {
        return Skip::Not;
    }
    if t.contains('=') {
        return Skip::One;
    }
    let Some(program) = program else { return Skip::Both };
    if program.values.contains(&t) {
        Skip::Two
    } else if program.flags.contains(&t) {
        Skip::One
    } else if !t.starts_with("--") && t.get(..2).is_some_and(|short| program.values.contains(&short)) {
        // A short option with its value attached (`-C/dir`).
        Skip::One
    } else {
        Skip::Both
    }
}
