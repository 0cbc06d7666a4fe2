//! `git`: the read-only subcommands, their flags, and the global options
//! that could make a read run a program or write.

use super::*;

/// `git log|show|diff|blame`: diff options that write files or run programs
/// named in git config.
pub(super) const GIT_DIFF: Flags = Flags {
    short_value: b"nSGLUMCBlO",
    short_deny: &[(b'o', "writes output files")],
    long_deny: &[
        ("output", "writes the output to a file"),
        ("output-directory", "writes patch files"),
        ("ext-diff", "runs the external diff program from git config"),
        ("textconv", "runs text-conversion programs from git config"),
        ("show-signature", "runs gpg"),
        ("help", GIT_HELP),
    ],
    long_exact_ok: &["text"],
};

pub(super) const GIT_HELP: &str = "opens the manual through man, a pager or a browser (help.format); use `-h` for the usage";

/// `git status|rev-parse|ls-files`: no write-capable options known; the
/// `GIT_DIFF` ones are refused anyway, should a future git accept them here.
pub(super) const GIT_PLAIN: Flags = Flags {
    short_value: b"",
    short_deny: &[],
    long_deny: &[
        ("output", "writes the output to a file"),
        ("ext-diff", "runs the external diff program from git config"),
        ("textconv", "runs text-conversion programs from git config"),
        ("help", GIT_HELP),
    ],
    long_exact_ok: &[],
};

pub(super) const GIT_SUBCOMMANDS: &str =
    "status, log, diff, show, branch --list, rev-parse, ls-files, blame, grep, remote -v, tag --list, describe, shortlog";

/// `git grep`: `-O`/`--open-files-in-pager` runs a pager (any program, with
/// a value: `-Ovim`), `--textconv` runs text-conversion programs from git
/// config. `-O` takes an optional value in its own word, so it is not a
/// value letter: the scan goes on and finds it in `-nO`.
pub(super) const GIT_GREP: Flags = Flags {
    short_value: b"efABCm",
    short_deny: &[(b'O', "opens the matching files in a pager or editor, which can run commands (--open-files-in-pager)")],
    long_deny: &[
        ("open-files-in-pager", "opens the matching files in a pager or editor, which can run commands"),
        ("textconv", "runs text-conversion programs from git config"),
        ("ext-grep", "runs an external grep"),
        ("help", GIT_HELP),
    ],
    long_exact_ok: &[],
};

/// `git describe`: `--dirty` and `--broken` refresh the index (a write).
pub(super) const GIT_DESCRIBE: Flags = Flags {
    short_value: b"",
    short_deny: &[],
    long_deny: &[
        ("dirty", "refreshes the index, which writes .git/index"),
        ("broken", "refreshes the index, which writes .git/index"),
        ("help", GIT_HELP),
    ],
    long_exact_ok: &[],
};

/// `git shortlog`: log options, so the diff options that write or run
/// programs are refused as for `git log`; every short letter is scanned (no
/// value letters), so `-so x` shows its `-o`.
pub(super) const GIT_SHORTLOG: Flags = Flags { short_value: b"", ..GIT_DIFF };

/// `git [--no-pager|-P|--no-optional-locks|...] SUBCOMMAND ARGS`. Returns the
/// label for the allow reason (`git log`).
pub(super) fn check_git(args: &[&str], glob: Option<&str>) -> Result<String, String> {
    let mut i = 0;
    while let Some(&a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        match a {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-replace-objects" => {}
            _ => return Err(git_global_reason(a)),
        }
        i += 1;
    }
    let Some(&sub) = args.get(i) else {
        return Err(format!("`git` needs a read-only subcommand ({GIT_SUBCOMMANDS})"));
    };
    let rest = &args[i + 1..];
    match sub {
        "log" | "show" | "diff" | "blame" => {
            flags(&format!("git {sub}"), &GIT_DIFF, rest)?;
            // `%G?`, `%GS`, ... in a pretty format run gpg, like --show-signature.
            if sub != "diff" && sub != "blame" && rest.iter().any(|a| a.contains("%G")) {
                return Err(format!("`git {sub}` with a `%G` format placeholder runs gpg"));
            }
        }
        "status" | "rev-parse" | "ls-files" => flags(&format!("git {sub}"), &GIT_PLAIN, rest)?,
        "grep" => flags("git grep", &GIT_GREP, rest)?,
        "describe" => flags("git describe", &GIT_DESCRIBE, rest)?,
        "shortlog" => {
            flags("git shortlog", &GIT_SHORTLOG, rest)?;
            if rest.iter().any(|a| a.contains("%G")) {
                return Err("`git shortlog` with a `%G` format placeholder runs gpg".to_string());
            }
        }
        "remote" => check_git_remote(rest)?,
        "tag" => match glob {
            Some(glob) => return Err(positional_glob("git tag", glob)),
            None => check_git_tag(rest)?,
        },
        "branch" => match glob {
            Some(glob) => return Err(positional_glob("git branch", glob)),
            None => check_git_branch(rest)?,
        },
        _ => return Err(format!("`git {}` is not a read-only git subcommand (allowed: {GIT_SUBCOMMANDS})", shown(sub))),
    }
    Ok(format!("git {sub}"))
}

pub(super) fn git_global_reason(a: &str) -> String {
    // `--git-dir=x` and `-cname=value` / `-C/tmp`: the option is the part
    // before `=`, or the first letter of a short one.
    let name = if a.starts_with("--") { a.split('=').next().unwrap_or(a) } else { a.get(..2).unwrap_or(a) };
    let why = match name {
        "-c" | "--config-env" => "sets git config, which can name programs to run (core.pager, diff.external, ...)",
        "-C" => "runs git in another directory",
        "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--bare" => "points git at another repository",
        "--exec-path" => "changes where git finds its programs",
        "-p" | "--paginate" => "starts a pager, which can run commands",
        _ => "is not on the read-only list (allowed: --no-pager, -P, --no-optional-locks, --*-pathspecs, --no-replace-objects)",
    };
    format!("`git {}` {why}", shown(name))
}

/// `git remote` only lists: bare, or with `-v`/`--verbose`. Every
/// subcommand (`add`, `set-url`, `remove`, `update`, `prune`, even `show`,
/// which talks to the remote through programs git config can name) is
/// refused.
pub(super) fn check_git_remote(args: &[&str]) -> Result<(), String> {
    for &a in args {
        match a {
            "-v" | "--verbose" => {}
            _ if a.starts_with('-') => return Err(format!("`git remote {}` is not a listing option (only -v)", shown(a))),
            _ => {
                return Err(format!(
                    "`git remote {}` is not a listing (add, set-url, remove, rename, update, prune change remotes or fetch); use `git remote -v`",
                    shown(a)
                ))
            }
        }
    }
    Ok(())
}

/// `git tag` only lists: bare, or with `-l`/`--list` (then operands are
/// patterns). `git tag NAME` creates a tag and `-a/-s/-d/-f/-v/-m/...`
/// create, delete or verify (gpg) tags, so the options are an allow list.
pub(super) fn check_git_tag(args: &[&str]) -> Result<(), String> {
    let mut list = false;
    let mut patterns: Option<&str> = None;
    let mut i = 0;
    while let Some(&a) = args.get(i) {
        i += 1;
        match a {
            "-l" | "--list" => list = true,
            "-n" | "-i" | "--ignore-case" | "--no-color" | "--color" | "--no-column" | "--column" | "--omit-empty" => {}
            // Value in the next word (or optional, for `--contains` and
            // friends, when last): a value that looks like an option is refused.
            "--sort" | "--format" | "--points-at" | "--contains" | "--no-contains" | "--merged" | "--no-merged" => {
                if let Some(&v) = args.get(i) {
                    if v.starts_with('-') {
                        return Err(format!("`git tag {a} {}`: write the value as `{a}=VALUE`", shown(v)));
                    }
                    i += 1;
                }
            }
            _ if [
                "--color=",
                "--column=",
                "--sort=",
                "--format=",
                "--contains=",
                "--no-contains=",
                "--merged=",
                "--no-merged=",
                "--points-at=",
            ]
            .iter()
            .any(|p| a.starts_with(p)) => {}
            // `-n3`: how many annotation lines to print.
            _ if a.len() > 2 && a.starts_with("-n") && a[2..].bytes().all(|c| c.is_ascii_digit()) => {}
            _ if a.starts_with('-') => {
                return Err(format!(
                    "`git tag {}` is not a listing option (-a, -s, -d, -f, -m, -v and friends create, delete or verify tags)",
                    shown(a)
                ))
            }
            _ => {
                patterns.get_or_insert(a);
            }
        }
    }
    match patterns {
        Some(p) if !list => Err(format!("`git tag {}` creates a tag; use `git tag --list PATTERN` to list", shown(p))),
        _ => Ok(()),
    }
}

/// `git branch` only lists: with no operands, or operands as `--list`
/// patterns. `git branch NAME` creates a branch and `-d/-m/-c/-u/...` change
/// branches, so the options are an allow list.
pub(super) fn check_git_branch(args: &[&str]) -> Result<(), String> {
    let mut list = false;
    let mut patterns: Option<&str> = None;
    let mut i = 0;
    while let Some(&a) = args.get(i) {
        i += 1;
        match a {
            "--list" => list = true,
            "--all" | "--remotes" | "--verbose" | "--ignore-case" | "--show-current" | "--no-color" | "--color" | "--no-column"
            | "--column" | "--no-abbrev" | "--omit-empty" => {}
            // Value in the next word; with `--contains` and friends the value
            // is optional when last, and git takes the next word whatever it
            // is, so a value that looks like an option is refused.
            "--sort" | "--format" | "--points-at" | "--contains" | "--no-contains" | "--merged" | "--no-merged" => {
                if let Some(&v) = args.get(i) {
                    if v.starts_with('-') {
                        return Err(format!("`git branch {a} {}`: write the value as `{a}=VALUE`", shown(v)));
                    }
                    i += 1;
                }
            }
            _ if [
                "--color=",
                "--column=",
                "--abbrev=",
                "--sort=",
                "--format=",
                "--contains=",
                "--no-contains=",
                "--merged=",
                "--no-merged=",
                "--points-at=",
            ]
            .iter()
            .any(|p| a.starts_with(p)) => {}
            // `-l` is `--list` since git 2.23 but was `--create-reflog`
            // before, so only the long `--list` makes operands patterns.
            _ if a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].bytes().all(|c| b"arvli".contains(&c)) => {}
            _ if a.starts_with('-') => {
                return Err(format!("`git branch {}` is not a listing option (-d, -m, -c, -f, -u and friends change branches)", shown(a)))
            }
            _ => {
                patterns.get_or_insert(a);
            }
        }
    }
    match patterns {
        Some(p) if !list => Err(format!("`git branch {}` creates a branch; use `git branch --list PATTERN` to list", shown(p))),
        _ => Ok(()),
    }
}
