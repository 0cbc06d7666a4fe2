//! The read-only command list, per command *and its flags*.
//!
//! A first-word whitelist is not enough: `find -delete`, `sort -o`, `rg
//! --pre`, `git diff --output`, `sed 1e` and `date -s` all start with a
//! "read-only" word. Each command here therefore has a checker for its
//! arguments. Two shapes:
//!
//! * a **deny list** of write-capable flags ([`Flags`]) for commands whose
//!   remaining flags only change what is printed (`rg`, `sort`, `tail`, …);
//! * an **allow list** of exact arguments where the safe surface is small or a
//!   plain operand is itself a write (`hostname NAME`, `date MMDDhhmm`, `git
//!   branch NAME`, `sed`).
//!
//! Option parsing follows GNU getopt conservatively, so that every way the
//! real tool could read a forbidden option is refused:
//!
//! * every word starting with `-` is checked as an option wherever it appears,
//!   even after `--` or where it might be another option's value (we never
//!   trust our idea of which word is a value: a wrong guess would hide an
//!   option; checking too much only refuses a rare harmless command);
//! * short options are scanned through clusters (`-uo`, `-o/tmp/x`), stopping
//!   only after a letter known to take the rest of the word as its value (a
//!   letter missing from that list makes the scan stricter, never looser);
//! * a long option `--X` or `--X=v` is refused when `X` is a prefix of a
//!   forbidden name (getopt accepts any unambiguous abbreviation: `--outp` is
//!   `--output`), unless `X` is itself another option's exact name.

use crate::lexer::Word;
use crate::text::{deny_command, shown};
use crate::{Policy, Verdict};

mod git;

use git::*;

/// Decide a tokenized command.
pub(crate) fn check(policy: &Policy, words: &[Word<'_>]) -> Verdict {
    match decide(policy, words) {
        Ok(reason) => Verdict::Allow(reason),
        Err(why) => Verdict::Deny(deny_command(&why)),
    }
}

fn decide(policy: &Policy, words: &[Word<'_>]) -> Result<String, String> {
    let Some(first) = words.first() else {
        return Err("the command is empty".to_string());
    };
    let raw: &str = &first.text;
    if first.quoted {
        return Err(format!("the command name `{}` is quoted; write it plainly", shown(raw)));
    }
    if first.glob {
        return Err(format!("the command name `{}` is a glob", shown(raw)));
    }
    if raw.contains('=') {
        return Err(format!(
            "`{}` sets an environment variable for the command (`NAME=value cmd`), which can change what it runs; drop the assignment",
            shown(raw)
        ));
    }
    let name = resolve(raw)?;
    let args: Vec<&str> = words[1..].iter().map(|w| &*w.text).collect();
    if let Some(why) = never_allowed(name) {
        return Err(format!("`{name}` {why}"));
    }
    // Commands whose checker reads operands by position (`date -d VALUE`,
    // `git branch --sort VALUE NAME`): a glob that expands to several words
    // would shift the positions the checker saw, and turn a value into an
    // operand that writes (`git branch --sort x*` with files `xa xb` creates
    // branch `xb`).
    let glob = words[1..].iter().find(|w| w.glob).map(|w| &*w.text);
    if let Some(glob) = glob.filter(|_| matches!(name, "date" | "hostname")) {
        return Err(positional_glob(name, glob));
    }
    let checked = match name {
        // No write-capable flags known: any arguments the grammar accepted.
        "ls" | "cat" | "pwd" | "grep" | "head" | "wc" | "stat" | "du" | "df" | "echo" | "printenv" | "whoami" | "uname" | "which"
        | "basename" | "dirname" | "realpath" | "true" => Ok(None),
        // Reads JSON and prints it: no option writes a file or runs a
        // program (`--rawfile`, `-f`, `-L` only read); redirections are the
        // grammar's business.
        "jq" => Ok(None),
        "npm" => check_npm(&args).map(Some),
        "rg" => flags("rg", &RG, &args).map(|()| None),
        "sort" => flags("sort", &SORT, &args).map(|()| None),
        "tail" => check_tail(&args).map(|()| None),
        "file" => flags("file", &FILE, &args).map(|()| None),
        "tree" => flags("tree", &TREE, &args).map(|()| None),
        "find" => check_find(&args).map(|()| None),
        "sed" => check_sed(&args).map(|()| None),
        "date" => check_date(&args).map(|()| None),
        "hostname" => check_hostname(&args).map(|()| None),
        "git" => check_git(&args, glob).map(Some),
        _ => {
            if policy.allow_commands.iter().any(|c| c == name) {
                return Ok(format!("command `{name}` is allowed by this agent's policy (allow_commands)"));
            }
            if let Some(why) = known_writer(name) {
                return Err(format!("`{name}` {why}"));
            }
            return Err(format!("`{}` is not on the read-only command list (add it to allow_commands if it cannot write)", shown(name)));
        }
    };
    match checked? {
        Some(label) => Ok(format!("read-only command `{label}`")),
        None => Ok(format!("read-only command `{name}`")),
    }
}

/// The command name a first word runs: a bare name, or a bare name under one
/// of the standard binary directories. Anything else may be a look-alike
/// program planted by the agent or the repository.
fn resolve(raw: &str) -> Result<&str, String> {
    if raw.starts_with('/') {
        for dir in ["/bin/", "/usr/bin/", "/usr/local/bin/"] {
            if let Some(base) = raw.strip_prefix(dir) {
                if !base.is_empty() && !base.contains('/') {
                    return Ok(base);
                }
            }
        }
        return Err(format!("`{}` runs a program by a path outside /bin, /usr/bin and /usr/local/bin", shown(raw)));
    }
    if raw.contains('/') {
        return Err(format!("`{}` runs a program by relative path, which may not be the system command; use the bare name", shown(raw)));
    }
    if raw.starts_with('-') || raw.is_empty() {
        return Err(format!("`{}` is not a command name", shown(raw)));
    }
    Ok(raw)
}

/// Commands that run other code given as arguments: allowing any of them
/// would allow everything, so not even `allow_commands` can add them.
///
/// A versioned name counts as its base (`python3.12` is `python`, `bash5` is
/// `bash`): an operator's `allow_commands` entry names a program, and a
/// versioned copy of a runner is still a runner.
fn never_allowed(name: &str) -> Option<&'static str> {
    runner(name).or_else(|| {
        let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '_'));
        (base.len() < name.len() && !base.is_empty()).then(|| runner(base)).flatten()
    })
}

fn runner(name: &str) -> Option<&'static str> {
    Some(match name {
        "env" | "timeout" | "nohup" | "nice" | "stdbuf" | "setsid" | "xargs" | "sudo" | "sudoedit" | "doas" | "su" | "ksu" | "runuser"
        | "pkexec" | "sg" | "newgrp" | "command" | "builtin" | "exec" | "eval" | "source" | "." | "time" | "watch" | "chroot"
        | "fakechroot" | "schroot" | "unshare" | "nsenter" | "flock" | "lckdo" | "setlock" | "ionice" | "chrt" | "taskset"
        | "prlimit" | "cpulimit" | "numactl" | "faketime" | "nocache" | "eatmydata" | "unbuffer" | "strace" | "ltrace" | "valgrind"
        | "perf" | "catchsegv" | "parallel" | "script" | "expect" | "fakeroot" | "caffeinate" | "coproc" | "trap" | "alias"
        | "function" | "run0" | "systemd-run" | "systemd-inhibit" | "systemd-nspawn" | "machinectl" | "setpriv" | "capsh"
        | "firejail" | "bwrap" | "proot" | "nsjail" | "minijail0" | "sandbox-exec" | "cgexec" | "chpst" | "softlimit" | "envdir"
        | "setuidgid" | "daemonize" | "start-stop-daemon" | "logsave" | "chronic" | "ifne" | "pee" | "vipe" | "torsocks"
        | "torify" | "proxychains" | "proxychains4" | "tsocks" | "dbus-run-session" | "dbus-launch" | "xvfb-run" | "ssh-agent"
        | "sshpass" | "socat" | "nix-shell" | "direnv" | "entr" | "watchexec" | "hyperfine" | "rlwrap" | "winpty" | "tmux"
        | "screen" | "dtach" | "abduco" | "nq" | "tsp" | "at" | "batch" | "run-parts" | "mpirun" | "mpiexec" | "srun"
        | "flatpak-spawn" | "npx" | "pnpx" | "bunx" | "uvx" | "pipx" | "fc" | "r" | "enable" | "gdb" | "lldb"
        // `setarch` and its per-architecture names.
        | "setarch" | "linux32" | "linux64" | "uname26" | "i386" | "i486" | "i586" | "i686" | "x86_64" | "ia64" | "ppc" | "ppc32"
        | "ppc64" | "ppc64le" | "s390" | "s390x" | "sparc" | "sparc32" | "sparc32bash" | "sparc64" | "mips" | "mips32" | "mips64"
        | "parisc" | "parisc32" | "parisc64" | "arm" | "armv7l" | "armv8l" | "aarch64"
        // zsh precommand modifiers and builtins that run code.
        | "noglob" | "nocorrect" | "emulate" | "sched" | "zpty" | "zmodload" | "autoload" | "zle" => {
            "runs another command the gate cannot see (a wrapper)"
        }
        // Builtins that run a command (`compgen -C`, `mapfile -C`, `bind -x`,
        // `hash -p` rebinding a name) or evaluate an array subscript, which
        // runs `$(...)` inside it: `printf -v 'a[$(id)]'`, `test -v`,
        // `read`, `declare`, `unset`, `let`, ...
        "compgen" | "complete" | "compopt" | "mapfile" | "readarray" | "hash" | "bind" | "printf" | "print" | "test" | "[" | "[["
        | "declare" | "typeset" | "local" | "export" | "readonly" | "unset" | "read" | "let" | "getopts" | "wait" | "vared" => {
            "is a shell builtin that can run code (a command option, or an array subscript like `a[$(cmd)]` that the shell evaluates)"
        }
        // Shell keywords: never a simple command, and `allow_commands = ["if"]`
        // must not open a compound one.
        "if" | "then" | "else" | "elif" | "fi" | "for" | "while" | "until" | "do" | "done" | "case" | "esac" | "select" | "in"
        | "repeat" | "foreach" | "end" | "not" | "and" | "or" | "begin" | "always" | "]]" => {
            "is a shell keyword that starts or joins compound commands"
        }
        "sh" | "bash" | "rbash" | "zsh" | "dash" | "ash" | "ksh" | "mksh" | "oksh" | "loksh" | "yash" | "posh" | "fish" | "csh"
        | "tcsh" | "xonsh" | "elvish" | "nu" | "busybox" | "toybox" | "pwsh" | "powershell" => "runs a shell, which can do anything",
        "python" | "python2" | "python3" | "pypy" | "pypy3" | "node" | "nodejs" | "deno" | "bun" | "perl" | "ruby" | "php" | "lua"
        | "luajit" | "awk" | "gawk" | "mawk" | "nawk" | "tclsh" | "wish" | "osascript" | "Rscript" | "R" | "julia" | "java"
        | "jshell" | "jrunscript" | "jjs" | "groovy" | "scala" | "kotlin" | "guile" | "racket" | "sbcl" | "clisp" | "ocaml"
        | "ghci" | "runghc" | "runhaskell" | "elixir" | "iex" | "erl" | "escript" | "m4" | "dc" | "sqlite3" => {
            "runs arbitrary code (e.g. `awk 'BEGIN{system(...)}'`)"
        }
        "less" | "more" | "most" | "pg" | "pager" | "sensible-pager" | "man" | "vi" | "vim" | "view" | "vimdiff" | "rvim" | "gvim"
        | "nvim" | "nvi" | "nano" | "emacs" | "emacsclient" | "ed" | "ex" | "pico" | "micro" | "mcedit" | "joe" | "jed" | "kak"
        | "hx" | "editor" | "sensible-editor" | "tig" | "w3m" | "lynx" | "links" | "elinks" | "xdg-open" | "open"
        | "sensible-browser" | "www-browser" | "x-www-browser" | "run-mailcap" => "is interactive and can run commands or write files",
        "bat" | "batcat" => "starts a pager, which can run commands (`--pager`)",
        "fd" | "fdfind" => "runs a command for every file it finds (`-x`, `--exec`)",
        _ => return None,
    })
}

/// Reasons for common commands that write, so the agent knows it is not a
/// matter of spelling. (They can still be added with `allow_commands`.)
fn known_writer(name: &str) -> Option<&'static str> {
    Some(match name {
        "rm" | "rmdir" | "shred" | "unlink" => "deletes files",
        "mv" | "cp" | "ln" | "touch" | "mkdir" | "chmod" | "chown" | "chgrp" | "dd" | "tee" | "truncate" | "install" | "patch" | "tar"
        | "zip" | "unzip" | "gzip" | "gunzip" => "changes files",
        "curl" | "wget" | "ssh" | "scp" | "rsync" | "nc" => "talks to the network and can write files",
        "kill" | "pkill" | "killall" => "stops processes",
        "history" => "writes or rewrites the shell history file (`-a`, `-w`, `-s`)",
        "cd" | "pushd" | "popd" => "changes the shell's directory; pass the path to the command instead",
        "set" | "shopt" | "umask" | "ulimit" => "changes the shell's state",
        _ => return None,
    })
}

/// A deny list of write-capable flags (see the module docs for the rules).
struct Flags {
    /// Short options that take the rest of their word (or the next word) as a
    /// value. Must be a subset of the truth: an extra letter here would hide
    /// the letters after it.
    short_value: &'static [u8],
    /// Forbidden short options and why.
    short_deny: &'static [(u8, &'static str)],
    /// Forbidden long options (full names) and why.
    long_deny: &'static [(&'static str, &'static str)],
    /// Real long options that are a prefix of a forbidden one but are an
    /// exact match themselves (`git diff --text` is not `--textconv`).
    long_exact_ok: &'static [&'static str],
}

const RUNS_PROGRAM: &str = "runs another program";

const RG: Flags = Flags {
    short_value: b"ABCdEefgjMmrtT",
    short_deny: &[(b'z', "runs decompression programs (--search-zip)")],
    long_deny: &[
        ("pre", "runs a program on every file searched"),
        ("pre-glob", "selects files for a `--pre` program"),
        ("hostname-bin", RUNS_PROGRAM),
        ("search-zip", "runs decompression programs"),
    ],
    long_exact_ok: &[],
};

const SORT: Flags = Flags {
    short_value: b"ktS",
    short_deny: &[(b'o', "writes its output to a file"), (b'T', "writes temporary files into the given directory")],
    long_deny: &[
        ("output", "writes its output to a file"),
        ("compress-program", "runs a program to compress temporary files"),
        ("temporary-directory", "writes temporary files into the given directory"),
        ("files0-from", "reads its file list from a file"),
    ],
    long_exact_ok: &[],
};

const FILE: Flags = Flags {
    short_value: b"efFmP",
    short_deny: &[
        (b'C', "compiles a magic file (writes it)"),
        (b'z', "runs decompression programs (like `rg -z`)"),
        (b'Z', "runs decompression programs (like `rg -z`)"),
    ],
    long_deny: &[
        ("compile", "compiles a magic file (writes it)"),
        ("uncompress", "runs decompression programs (like `rg -z`)"),
        ("uncompress-noreport", "runs decompression programs (like `rg -z`)"),
    ],
    long_exact_ok: &[],
};

/// `tree` reads an option's value from the *next* word even in the middle of
/// a cluster (`-Lo 2 out`), so no letter stops the scan.
const TREE: Flags = Flags {
    short_value: b"",
    short_deny: &[(b'o', "writes the listing to a file"), (b'R', "writes 00Tree.html files into every directory")],
    long_deny: &[("output", "writes the listing to a file")],
    long_exact_ok: &[],
};

const TAIL: Flags = Flags {
    short_value: b"ncs",
    short_deny: &[
        (b'f', "follows the file and never ends, which hangs the agent; use `tail -n N`"),
        (b'F', "follows the file and never ends, which hangs the agent; use `tail -n N`"),
    ],
    long_deny: &[("follow", "follows the file and never ends, which hangs the agent; use `tail -n N`")],
    long_exact_ok: &[],
};

fn flags(cmd: &str, spec: &Flags, args: &[&str]) -> Result<(), String> {
    for &arg in args {
        let Some(opt) = arg.strip_prefix('-') else { continue };
        if opt.is_empty() || opt == "-" {
            continue;
        }
        if let Some(long) = opt.strip_prefix('-') {
            let name = long.split('=').next().unwrap_or(long);
            if name.is_empty() || spec.long_exact_ok.contains(&name) {
                continue;
            }
            for &(forbidden, why) in spec.long_deny {
                if forbidden.starts_with(name) {
                    return Err(if name == forbidden {
                        format!("`{cmd} --{forbidden}` {why}")
                    } else {
                        format!("`{cmd} --{}` abbreviates `--{forbidden}`, which {why}", shown(name))
                    });
                }
            }
            continue;
        }
        for &c in opt.as_bytes() {
            if let Some(&(_, why)) = spec.short_deny.iter().find(|(d, _)| *d == c) {
                return Err(format!("`{cmd} -{}` {why}", c as char));
            }
            if spec.short_value.contains(&c) {
                break;
            }
        }
    }
    Ok(())
}

/// Why a glob is refused in a command whose checker reads words by position.
fn positional_glob(cmd: &str, glob: &str) -> String {
    format!(
        "the glob `{}` in a `{cmd}` command can expand to several words (or none) and shift which word is an option's value; write the names out",
        shown(glob)
    )
}

fn check_tail(args: &[&str]) -> Result<(), String> {
    flags("tail", &TAIL, args)?;
    // Obsolete `tail +5f`: a `+` count with `f` follows like `-f`.
    if args.iter().any(|a| a.starts_with('+') && a.contains(['f', 'F'])) {
        return Err("`tail +Nf` follows the file and never ends, which hangs the agent; use `tail -n N`".to_string());
    }
    Ok(())
}

/// `find` predicates are whole words and never abbreviated.
fn check_find(args: &[&str]) -> Result<(), String> {
    for &arg in args {
        let why = match arg {
            "-delete" => "deletes files",
            "-exec" | "-execdir" | "-ok" | "-okdir" => "runs another command for every file",
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => "writes its output to a file",
            _ => continue,
        };
        return Err(format!("`find {arg}` {why}"));
    }
    Ok(())
}

const SED_FORM: &str = "`sed` is allowed only as `sed -n 'Np'` or `sed -n 'M,Np'` (print lines; `$` for the last); other sed scripts and options can write files or run commands (`e`, `w`, `s///e`, `-i`)";

/// `sed -n SCRIPT [FILE...]` or `sed -n -e SCRIPT [FILE...]`, SCRIPT being a
/// line print. Everything else sed can do includes running commands (`e`,
/// `s///e`) and writing files (`w`, `s///w`, `-i`), so the whole language is
/// out except this one statement.
fn check_sed(args: &[&str]) -> Result<(), String> {
    let mut it = args.iter();
    match it.next() {
        Some(&("-n" | "--quiet" | "--silent")) => {}
        Some(first) => return Err(format!("`sed {}` does not start with `-n`; {SED_FORM}", shown(first))),
        None => return Err(SED_FORM.to_string()),
    }
    let mut script = it.next();
    if script == Some(&"-e") {
        script = it.next();
    }
    let Some(&script) = script else {
        return Err(SED_FORM.to_string());
    };
    if !is_print_script(script) {
        return Err(format!("the sed script `{}` is not a line print; {SED_FORM}", shown(script)));
    }
    for &arg in it {
        if arg.starts_with('-') && arg != "-" {
            return Err(format!("`sed` option `{}` after the script is not accepted; {SED_FORM}", shown(arg)));
        }
    }
    Ok(())
}

/// `N p`, `M,N p`, `$p`, `M,$p` (no spaces).
fn is_print_script(s: &str) -> bool {
    fn address(s: &str) -> Option<&str> {
        if let Some(rest) = s.strip_prefix('$') {
            return Some(rest);
        }
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0).then(|| &s[digits..])
    }
    let Some(rest) = address(s) else { return false };
    let rest = match rest.strip_prefix(',') {
        Some(second) => match address(second) {
            Some(r) => r,
            None => return false,
        },
        None => rest,
    };
    rest == "p"
}

const DATE_FORM: &str = "`date` is allowed with `+FORMAT`, -u, -R, -I[FMT], -d/--date STRING, -r/--reference FILE, --utc, --iso-8601[=FMT], --rfc-3339=FMT, --rfc-email, --debug";

/// An allow list: every other `date` operand sets the clock (`date MMDDhhmm`,
/// `date -s`), and BSD `date` reads some options differently.
fn check_date(args: &[&str]) -> Result<(), String> {
    let mut formats = 0;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        i += 1;
        match a {
            "-u" | "--utc" | "--universal" | "-R" | "--rfc-email" | "--debug" | "-I" | "--iso-8601" => {}
            // These take the next word as their value, whatever it looks like.
            "-d" | "--date" | "-r" | "--reference" | "--rfc-3339" => {
                if i >= args.len() {
                    return Err(format!("`date {a}` needs a value; {DATE_FORM}"));
                }
                i += 1;
            }
            _ if a.starts_with('+') => {
                formats += 1;
                if formats > 1 {
                    return Err(format!("`date` takes one `+FORMAT`; {DATE_FORM}"));
                }
            }
            _ if ["--date=", "--reference=", "--iso-8601=", "--rfc-3339="].iter().any(|p| a.starts_with(p)) => {}
            // Attached values: `-d2024-01-01`, `-Iseconds`, `-rFILE`.
            _ if a.len() > 2 && (a.starts_with("-d") || a.starts_with("-I") || a.starts_with("-r")) => {}
            _ if a == "-s" || a.starts_with("--s") || (a.starts_with('-') && !a.starts_with("--") && a.contains('s')) => {
                return Err("`date -s/--set` sets the system clock".to_string())
            }
            _ if !a.starts_with('-') => {
                return Err(format!("`date {}` sets the system clock; only a `+FORMAT` operand is read-only", shown(a)))
            }
            _ => return Err(format!("`date {}` is not on the read-only list; {DATE_FORM}", shown(a))),
        }
    }
    Ok(())
}

/// `hostname NAME` and `hostname -F FILE` set the host name; only the
/// display flags are allowed.
fn check_hostname(args: &[&str]) -> Result<(), String> {
    for &a in args {
        match a {
            "-s" | "--short" | "-f" | "--fqdn" | "--long" | "-d" | "--domain" | "-i" | "--ip-address" | "-I" | "--all-ip-addresses"
            | "-A" | "--all-fqdns" | "-a" | "--alias" | "-h" | "--help" | "-V" | "--version" => {}
            _ if !a.starts_with('-') => return Err(format!("`hostname {}` sets the host name; run `hostname` alone to read it", shown(a))),
            _ => {
                return Err(format!(
                    "`hostname {}` is not a display option (allowed: -s -f -d -i -I -A -a); some set the host name",
                    shown(a)
                ))
            }
        }
    }
    Ok(())
}

/// `npm ls` / `npm list` with an allow list of display options: npm takes
/// any `--<config key>=<value>` on its command line (`--script-shell`,
/// `--userconfig`, `--prefix`, ...), so a deny list could never be complete.
/// No global option before the subcommand; every other subcommand installs,
/// runs scripts or publishes.
fn check_npm(args: &[&str]) -> Result<String, String> {
    let Some(&sub) = args.first() else {
        return Err("`npm` needs a read-only subcommand (ls)".to_string());
    };
    if sub.starts_with('-') {
        let name = sub.split('=').next().unwrap_or(sub);
        return Err(format!("`npm {}` before the subcommand sets npm config, which can name programs to run", shown(name)));
    }
    if !matches!(sub, "ls" | "list") {
        return Err(format!("`npm {}` is not a read-only npm subcommand (allowed: ls); it can install, build or run scripts", shown(sub)));
    }
    let mut i = 1;
    while let Some(&a) = args.get(i) {
        i += 1;
        match a {
            "--all"
            | "-a"
            | "--json"
            | "--long"
            | "-l"
            | "--parseable"
            | "-p"
            | "--global"
            | "-g"
            | "--link"
            | "--unicode"
            | "--no-unicode"
            | "--workspaces"
            | "--include-workspace-root"
            | "--package-lock-only"
            | "--production"
            | "--dev" => {}
            "--depth" | "--omit" | "--include" | "--workspace" | "-w" => match args.get(i) {
                Some(&v) if !v.starts_with('-') => i += 1,
                _ => return Err(format!("`npm {sub} {a}` needs a value (e.g. `{a} 0`)")),
            },
            _ if ["--depth=", "--omit=", "--include=", "--workspace="].iter().any(|p| a.starts_with(p)) => {}
            _ if a.starts_with('-') => {
                let name = if a.starts_with("--") { a.split('=').next().unwrap_or(a) } else { a };
                return Err(format!(
                    "`npm {sub} {}` is not a display option of npm {sub}; npm reads any `--<key>` as config, which can name programs or files",
                    shown(name)
                ));
            }
            // Package names to show.
            _ => {}
        }
    }
    Ok(format!("npm {sub}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_scripts() {
        for ok in ["1p", "10,20p", "$p", "5,$p", "$,$p"] {
            assert!(is_print_script(ok), "{ok}");
        }
        for bad in ["p", "1", "1,p", ",1p", "1pp", "1 p", "1e", "1w x", "s/a/b/", "1,2p;3p", "1p\n", "1,2,3p"] {
            assert!(!is_print_script(bad), "{bad}");
        }
    }

    #[test]
    fn long_prefixes_follow_getopt() {
        assert!(flags("sort", &SORT, &["--o"]).is_err());
        assert!(flags("sort", &SORT, &["--outp=x"]).is_err());
        assert!(flags("sort", &SORT, &["--reverse"]).is_ok());
        assert!(flags("git diff", &GIT_DIFF, &["--text"]).is_ok());
        assert!(flags("git diff", &GIT_DIFF, &["--textc"]).is_err());
        assert!(flags("git diff", &GIT_DIFF, &["--output-indicator-new=x"]).is_ok());
    }

    #[test]
    fn short_clusters_stop_after_value_letters() {
        assert!(flags("sort", &SORT, &["-uo", "x"]).is_err());
        assert!(flags("sort", &SORT, &["-o/tmp/x"]).is_err());
        assert!(flags("sort", &SORT, &["-t-o"]).is_ok());
        assert!(flags("tree", &TREE, &["-Lo", "2", "x"]).is_err());
    }
}
