//! Whether a command may run a given program and subcommand: the reading
//! behind permission rules that *deny* or *ask*.
//!
//! A rule `Bash(git push:*)` means "a command whose words start with `git
//! push`". An *allow* rule stays strict: it holds only for a single simple
//! command in the tokenizer's grammar ([`crate::simple_words`]), so `npm
//! test; rm -rf /` is never "a command that starts with `npm test`". A
//! *deny* or *ask* rule must hold the other way round: it has to catch the
//! command however it is written, because matching too much only asks a
//! person (or refuses) where it need not, while matching too little lets the
//! push through. [`may_run`] is that reading. It errs toward `true`.
//!
//! # How a command is read
//!
//! * **Compound commands.** The text is split loosely into simple commands,
//!   the way a shell would, without refusing anything: at `;` `&` `|`
//!   newlines, `(` `)`, `{` `}` as words, backticks, `$(`, `<(` and `>(`
//!   (whose insides are commands of their own, read as well), and shell
//!   keywords at command position (`if then else elif fi do done while
//!   until for case esac select function coproc !`) are passed over.
//!   Redirections and their targets (`2>&1`, `>out`, `<<EOF`) are dropped;
//!   here-document bodies and `#` comments are read as commands too (a shell
//!   without comments would run them; an unquoted here-document expands
//!   `$(…)`). An unterminated quote's text is read as commands as well.
//! * **Quotes** are removed as a shell removes them: `'a'`, `"a"`, `\x`,
//!   `$'\x67'` (ANSI-C escapes decoded), `$"a"`, and line continuations; so
//!   `"git" push`, `g\it push` and `$'\x67it' push` are `git push`. A second
//!   reading with fish's single quotes (where `\'` does not close) is made
//!   when the text has `\'`.
//! * **Expansions** (`$X`, `${…}`, `$(…)`, backticks, `<(…)`) have unknown
//!   values: a word holding one is *any* word, and an unquoted one may be
//!   any number of words. A program word with an expansion (`$(echo git)
//!   push`, `$GIT push`) may therefore run anything, and a shell or `eval`
//!   given code with an expansion in it may too. Brace expansion is done
//!   (`{git,push}` is `git push`; `{a..c}` sequences too, up to 256 words),
//!   and an unquoted glob (`*`, `?`, `[…]`) is matched as a pattern against
//!   the rule's word (`/usr/bin/gi? pu*`).
//! * **Wrappers.** In each simple command, variable assignments (`X=1`) are
//!   passed over, then wrappers that run the rest of their words, with their
//!   own options and the values those take: `sudo` (`-u user`, …), `doas`,
//!   `env` (options, `-u NAME`, `-C DIR`, assignments; `-S` read as a
//!   command), `command`, `builtin`, `exec` (`-a NAME`), `nice` (`-n N`),
//!   `nohup`, `time` (`-p`, `-f FMT`, `-o FILE`), `timeout` (options and the
//!   duration), `xargs` (options; the words it reads from standard input may
//!   complete the command, and with `-I`/`-i`/`-J` any word may be replaced),
//!   `stdbuf`, `ionice`, `chroot DIR`, `setsid`, `flock FILE` (and `-c`),
//!   `watch`, `strace`, `unbuffer`, `caffeinate`, `pkexec`, `su`/`runuser`
//!   (`-c` read as a command), `script -c`, `gosu`/`su-exec USER`,
//!   `fakeroot`, `unshare`, `nsenter`, `chrt PRIO`, `taskset MASK`,
//!   `numactl`, `torsocks`, `proxychains`, `dbus-run-session`, `xvfb-run`,
//!   `tini`, `dumb-init`, `valgrind`, `systemd-run`, `direnv exec DIR`,
//!   `busybox`, `toybox`, zsh's `noglob`/`nocorrect`, `ssh HOST` (the rest is
//!   a command line run remotely) and `find … -exec`/`-execdir`/`-ok`. Every
//!   word a wrapper could leave as the program is tried, so a wrapper option
//!   this module does not know costs a wider match, never a miss.
//! * **Shells and `eval`.** `sh`, `bash`, `zsh`, `dash`, `ksh`, `mksh`,
//!   `ash`, `yash`, `posh`, `rbash` and `fish` with `-c` (also in a cluster:
//!   `-lc`, `-ec`; `--command`) have their command string read as commands,
//!   as have `eval`'s words, `trap`'s action and `alias`'s values, to a
//!   depth of 8 (deeper code counts as a match). A shell with no `-c` and no script file (or `-s`, or reading
//!   `/dev/stdin`, or a process substitution) reads its commands from
//!   standard input, which may hold anything: that is a match, as is
//!   `source`/`.` of standard input or of a process substitution.
//! * **The program** is the word left: its basename (`/usr/bin/git` is `git`,
//!   zsh's `=git` too) is compared, case-sensitively, with the basename of
//!   the rule's first word.
//!
//! # Subcommand words
//!
//! The rule's other words must follow as the command's *subcommand words*:
//! the words skipped before each may only be options or their values. A
//! word that is neither ends the search, so `git log --grep push` is not
//! `git push` (`log` is the subcommand). Which options take a value is known
//! for the global options (those before the first subcommand) of:
//!
//! * `git` (`-c`, `-C`, `--git-dir`, `--work-tree`, `--namespace`,
//!   `--super-prefix`, `--config-env`, `--attr-source`, `--list-cmds` take
//!   one; `-p`, `-P`, `--paginate`, `--no-pager`, `--bare`,
//!   `--no-replace-objects`, `--*-pathspecs`, `--no-optional-locks`,
//!   `--no-lazy-fetch`, `--no-advice` do not). An alias defined on the
//!   command line (`git -c alias.p=push p`, `--config-env=alias.…`) makes
//!   any subcommand a match.
//! * `cargo` (`+toolchain`; `--config`, `-C`, `-Z`, `--color`,
//!   `--manifest-path`, `--explain` take one) with its built-in aliases
//!   (`b`, `c`, `d`, `n`, `r`, `t`, `rm`).
//! * `docker`/`podman` (`-H`, `--host`, `-c`, `--context`, `--config`, `-l`,
//!   `--log-level`, the `--tls*` files), `kubectl`/`oc` (`-n`,
//!   `--namespace`, `--context`, `--kubeconfig`, `--cluster`, `--user`,
//!   `-s`, `--server`, `--token`, `--as`, …), `helm` (`-n`, `--namespace`,
//!   `--kube-context`, `--kubeconfig`, …), `terraform`/`tofu` (`-chdir=`),
//!   `aws` (`--profile`, `--region`, `--output`, `--endpoint-url`, …) and
//!   `gcloud` (`--project`, `--account`, `--configuration`, …).
//! * `npm`, `pnpm`, `yarn`, `npx`, `bun`: npm reads options anywhere and
//!   `--key value` with any value, so every option may or may not take the
//!   next word (`npm --tag next publish` is `npm publish`); npm's and pnpm's
//!   command aliases (`npm i`, `npm rm`, `npm t`, …) are the commands they
//!   stand for, and for npm a word that starts its command (`npm pub`, which
//!   some npm versions accept) counts as it.
//!
//! For any other program, and after the first subcommand, a word starting
//! with `-` is an option, and one without `=` may or may not take the next
//! word as its value: both readings are tried.
//!
//! # What it does not understand
//!
//! Aliases and functions defined outside the command, git and cargo aliases
//! in configuration files or the environment (`GIT_CONFIG_*`), scripts run
//! from files (`bash deploy.sh`, `make`, `npm run`), interpreters' code
//! (`python -c`, `node -e`, `perl -e`), programs that run commands from their
//! own options (`git rebase --exec`, `ssh -o ProxyCommand=`), bash's extended
//! globs and zsh's glob alternation in a program word, case-insensitive file
//! systems (`GIT push` on macOS), and shells other than the POSIX family and
//! fish (PowerShell, `cmd.exe`). Commands longer than 1 MiB, and commands
//! whose reading would take more than a bounded amount of work, count as a
//! match.
//!
//! **Invariant:** pure, no regex, no panics, work bounded by a budget linear
//! in the command's length.

use std::collections::VecDeque;

mod braces;
mod lexing;
mod programs;
mod reader;
mod words;

use braces::*;
use lexing::*;
use programs::*;
use reader::*;
use words::*;

/// Longest command read; a longer one counts as a match.
const MAX_BYTES: usize = 1 << 20;
/// How deep code inside code (`bash -c "eval '…'"`) is followed.
const MAX_DEPTH: usize = 8;
/// Speculative readings (comments, here-document lines, open quotes) read
/// inside one another.
const MAX_ASIDES: usize = 2;
/// Words of a rule compared after the program (the rest is not needed to
/// match, which only widens it).
const MAX_RULE_WORDS: usize = 63;
/// Longest word brace-expanded; a longer one with braces is unknown.
const MAX_BRACE_WORD: usize = 4096;
/// Words one brace expansion may produce before the rest counts as unknown.
const MAX_EXPANSION: usize = 256;

/// Whether `command` may run a command whose program and subcommand words
/// are `prefix` (e.g. `["git", "push"]`), reading it the way the program
/// reads its own global options. Errs toward true: it is the reading for
/// deny and ask rules, never for allow rules (see the module docs).
///
/// An empty `prefix` matches every command.
pub fn may_run(command: &str, prefix: &[&str]) -> bool {
    let Some(first) = prefix.first() else { return true };
    if command.len() > MAX_BYTES {
        return true;
    }
    let rest = &prefix[1..prefix.len().min(MAX_RULE_WORDS + 1)];
    let mut reader = Reader { program: basename(first), rest, budget: 16 * command.len() + (1 << 16), asides: 0 };
    reader.code(command, Quoting::Posix, 0) || (command.contains("\\'") && reader.code(command, Quoting::Fish, 0))
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod properties;
