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

/// How single quotes end: POSIX shells at the next `'`; fish reads `\'` and
/// `\\` inside them as escapes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quoting {
    Posix,
    Fish,
}

impl Quoting {
    fn escapes(self) -> Escapes {
        match self {
            Quoting::Posix => Escapes::None,
            Quoting::Fish => Escapes::Fish,
        }
    }
}

/// One word of a simple command, quotes removed.
#[derive(Debug, Default, Clone)]
struct Word {
    text: String,
    /// Byte offsets in `text` of unquoted `*` `?` `[` `]` (globs) and `{`
    /// `,` `}` (brace expansion), in order.
    marks: Vec<usize>,
    /// Some part was quoted or escaped (an empty `''` is still a word).
    quoted: bool,
    /// Holds an expansion whose value is unknown.
    dynamic: bool,
    /// Holds an unquoted expansion: may become several words, or none.
    splits: bool,
    /// Has an unquoted `*`, `?` or `[`.
    glob: bool,
    /// Has an unquoted `{`.
    braces: bool,
}

impl Word {
    fn started(&self) -> bool {
        self.quoted || self.dynamic || !self.text.is_empty()
    }

    fn syntax(&mut self, c: char) {
        self.marks.push(self.text.len());
        self.text.push(c);
        self.glob |= matches!(c, '*' | '?' | '[');
        self.braces |= c == '{';
    }

    fn expansion(&mut self, splits: bool) {
        self.dynamic = true;
        self.splits |= splits;
    }

    /// A word whose value is unknown and may be several words.
    fn unknown() -> Word {
        Word { quoted: true, dynamic: true, splits: true, ..Word::default() }
    }

    /// The word as a glob pattern from byte `from`.
    fn pattern(&self, from: usize) -> Vec<Pat> {
        let bytes = self.text.as_bytes();
        let is_mark = |at: usize| self.marks.binary_search(&at).is_ok();
        let mut out = Vec::new();
        let mut skip_to = 0;
        for (at, c) in self.text.char_indices().filter(|(at, _)| *at >= from) {
            if at < skip_to {
                continue;
            }
            if !is_mark(at) {
                out.push(Pat::Lit(c));
                continue;
            }
            match c {
                '*' => out.push(Pat::Star),
                '?' => out.push(Pat::Any),
                '[' => match self.marks.iter().find(|&&m| m > at + 1 && bytes.get(m) == Some(&b']')) {
                    // A bracket class: any one character (wider than the
                    // class, which only widens the match).
                    Some(&close) => {
                        out.push(Pat::Any);
                        skip_to = close + 1;
                    }
                    None => out.push(Pat::Lit('[')),
                },
                _ => out.push(Pat::Lit(c)),
            }
        }
        out
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pat {
    Lit(char),
    Any,
    Star,
}

/// Whether `pat` matches the whole of `text` (`*` and `?` only).
fn glob_match(pat: &[Pat], text: &str) -> bool {
    let t: Vec<char> = text.chars().collect();
    let (mut p, mut s) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while s < t.len() {
        match pat.get(p) {
            Some(Pat::Star) => {
                star = Some((p, s));
                p += 1;
            }
            Some(Pat::Any) => {
                p += 1;
                s += 1;
            }
            Some(Pat::Lit(c)) if *c == t[s] => {
                p += 1;
                s += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    p = sp + 1;
                    s = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    pat.get(p..).unwrap_or(&[]).iter().all(|x| *x == Pat::Star)
}

/// A program word as names are compared with it: its basename (also
/// without zsh's `=` and a stray `{` in front), or the glob it is.
enum Name<'w> {
    Literal { base: &'w str, trimmed: &'w str },
    Pattern(Vec<Pat>),
}

impl<'w> Name<'w> {
    fn of(w: &'w Word) -> Self {
        let from = w.text.rfind('/').map_or(0, |k| k + 1);
        if w.glob {
            let mut pat = w.pattern(from);
            let lead = pat.iter().take_while(|p| matches!(p, Pat::Lit('=' | '{'))).count();
            pat.drain(..lead);
            return Name::Pattern(pat);
        }
        let base = &w.text[from..];
        Name::Literal { base, trimmed: base.trim_start_matches(['=', '{']) }
    }
}

/// A quote open inside the word being read.
enum Quote {
    Double,
    /// `${…}`, with the braces opened inside it and whether it stands in
    /// double quotes.
    Param {
        braces: usize,
        dq: bool,
    },
}

/// What closes a list of commands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Input,
    Paren,
    Backtick,
}

/// What the next word is after a redirection operator.
#[derive(Clone, Copy)]
enum Target {
    File,
    Heredoc { strip_tabs: bool },
}

/// A list of commands being read: the top level, or the inside of `$(…)`,
/// a backtick pair or `<(…)`.
struct Commands {
    end: End,
    words: Vec<Word>,
    cur: Word,
    /// Quotes open in `cur` (a `$(` inside one opens a new `Commands`).
    quotes: Vec<(usize, Quote)>,
    /// Subshell parentheses open in this list.
    parens: usize,
    /// `case` … `esac` open in this list: a `)` is a pattern's end.
    cases: usize,
    target: Option<Target>,
}

impl Commands {
    fn new(end: End) -> Self {
        Commands { end, words: Vec::new(), cur: Word::default(), quotes: Vec::new(), parens: 0, cases: 0, target: None }
    }

    /// End the current word. True when it was `{` or `}` standing alone,
    /// which ends the simple command.
    fn end_word(&mut self, heredocs: &mut VecDeque<(String, bool)>) -> bool {
        let word = std::mem::take(&mut self.cur);
        if !word.started() {
            return false;
        }
        match self.target.take() {
            Some(Target::File) => return false,
            Some(Target::Heredoc { strip_tabs }) => {
                heredocs.push_back((word.text, strip_tabs));
                return false;
            }
            None => {}
        }
        if !word.quoted && !word.dynamic && matches!(word.text.as_str(), "{" | "}") {
            return true;
        }
        if self.words.is_empty() {
            match word.text.as_str() {
                "case" => self.cases += 1,
                "esac" => self.cases = self.cases.saturating_sub(1),
                _ => {}
            }
        }
        self.words.push(word);
        false
    }
}

/// What a `$` started.
enum Step {
    /// Go on reading at this byte.
    To(usize),
    /// A command substitution opens; go on reading its commands here.
    Subst(usize),
    /// A quote never closes: what follows its opening (from this byte) is
    /// read as commands too.
    Tail(usize),
}

fn char_at(src: &str, i: usize) -> (char, usize) {
    src.get(i..).and_then(|s| s.chars().next()).map_or(('\u{FFFD}', 1), |c| (c, c.len_utf8()))
}

/// What a backslash means inside single quotes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    /// Nothing (POSIX `'…'`).
    None,
    /// `\'` and `\\` (fish's `'…'`).
    Fish,
    /// bash's `$'…'`: `\n`, `\x67`, `\147`, `\u0067`, `\cX`, ….
    AnsiC,
}

/// Read a single-quoted string from byte `start` (after the quote) into
/// `word`.
fn single_quoted(src: &str, start: usize, word: &mut Word, escapes: Escapes) -> Step {
    word.quoted = true;
    let b = src.as_bytes();
    let mut i = start;
    while i < b.len() {
        if b[i] == b'\'' {
            return Step::To(i + 1);
        }
        let escape = match escapes {
            _ if b[i] != b'\\' => None,
            Escapes::None => None,
            Escapes::Fish => matches!(b.get(i + 1), Some(b'\'' | b'\\')).then(|| (Some(b[i + 1] as char), i + 2)),
            Escapes::AnsiC => ansi_escape(b, i),
        };
        match escape {
            Some((c, next)) => {
                word.text.extend(c);
                i = next;
            }
            None => {
                let (c, len) = char_at(src, i);
                word.text.push(c);
                i += len;
            }
        }
    }
    Step::Tail(start)
}

/// The ANSI-C escape at byte `i` (a backslash): the character it stands
/// for (none for a code point that is not one) and where it ends; `None`
/// when the backslash is literal.
fn ansi_escape(b: &[u8], i: usize) -> Option<(Option<char>, usize)> {
    let simple = match *b.get(i + 1)? {
        b'a' => '\x07',
        b'b' => '\x08',
        b'e' | b'E' => '\x1b',
        b'f' => '\x0c',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'v' => '\x0b',
        c @ (b'\\' | b'\'' | b'"' | b'?') => c as char,
        b'c' => {
            let c = *b.get(i + 2).filter(|c| c.is_ascii())?;
            return Some((char::from_u32(u32::from(c & 0x1f)), i + 3));
        }
        kind => {
            let (value, end) = match kind {
                b'x' => digits(b, i + 2, 2, 16),
                b'u' => digits(b, i + 2, 4, 16),
                b'U' => digits(b, i + 2, 8, 16),
                b'0'..=b'7' => digits(b, i + 1, 3, 8),
                _ => return None,
            };
            return (end > i + 2 || kind.is_ascii_digit()).then(|| (char::from_u32(value), end));
        }
    };
    Some((Some(simple), i + 2))
}

/// Up to `max` digits of `radix` from byte `i`: the value and where they end.
fn digits(b: &[u8], i: usize, max: usize, radix: u32) -> (u32, usize) {
    let mut value = 0u32;
    let mut end = i;
    while end < b.len() && end - i < max {
        let Some(d) = (b[end] as char).to_digit(radix) else { break };
        value = value.saturating_mul(radix).saturating_add(d);
        end += 1;
    }
    (value, end)
}

/// Read what a `$` at byte `i` starts into `word`.
fn dollar(src: &str, i: usize, word: &mut Word, quotes: &mut Vec<(usize, Quote)>, in_dq: bool) -> Step {
    let b = src.as_bytes();
    match b.get(i + 1).copied() {
        Some(b'\'') if !in_dq => single_quoted(src, i + 2, word, Escapes::AnsiC),
        Some(b'"') if !in_dq => {
            word.quoted = true;
            quotes.push((i + 1, Quote::Double));
            Step::To(i + 2)
        }
        Some(b'(') => {
            word.expansion(!in_dq);
            word.text.push_str("$(");
            Step::Subst(i + 2)
        }
        Some(b'{') => {
            word.expansion(!in_dq);
            word.text.push_str("${");
            quotes.push((i + 1, Quote::Param { braces: 0, dq: in_dq }));
            Step::To(i + 2)
        }
        Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
            let len = b[i + 1..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
            word.expansion(!in_dq);
            word.text.push_str(&src[i..i + 1 + len]);
            Step::To(i + 1 + len)
        }
        Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
            word.expansion(!in_dq || c == b'@');
            word.text.push('$');
            word.text.push(c as char);
            Step::To(i + 2)
        }
        _ => {
            word.text.push('$');
            Step::To(i + 1)
        }
    }
}

/// The rule being matched and the work left.
struct Reader<'r> {
    /// Basename of the rule's program.
    program: &'r str,
    /// The rule's words after the program.
    rest: &'r [&'r str],
    budget: usize,
    /// Speculative readings under way (see [`Reader::aside`]).
    asides: usize,
}

/// Bits of a position reached in a simple command.
const REACHED: u8 = 1;
/// The command runs under `xargs`: words from standard input may follow.
const XARGS: u8 = 2;
/// `xargs -I`/`-i`/`-J`: any word may be replaced by one from standard input.
const REPLACED: u8 = 4;

impl Reader<'_> {
    /// Take `n` units of work; false when the budget is spent (every caller
    /// then answers "may run").
    fn spend(&mut self, n: usize) -> bool {
        match self.budget.checked_sub(n) {
            Some(left) => {
                self.budget = left;
                true
            }
            None => {
                self.budget = 0;
                false
            }
        }
    }

    /// Read `src` as code a shell runs.
    fn code(&mut self, src: &str, q: Quoting, depth: usize) -> bool {
        depth > MAX_DEPTH || self.read(src, q, depth, true)
    }

    /// Read `src` as commands in case a shell runs it (a comment, a
    /// here-document line, an unterminated quote's text). Such a reading
    /// only widens the match, so one inside another is read only twice
    /// deep, and none past the depth limit.
    fn aside(&mut self, src: &str, q: Quoting, depth: usize, comments: bool) -> bool {
        if depth >= MAX_DEPTH || self.asides >= MAX_ASIDES {
            return false;
        }
        self.asides += 1;
        let runs = self.read(src, q, depth + 1, comments);
        self.asides -= 1;
        runs
    }

    fn read(&mut self, src: &str, q: Quoting, depth: usize, comments: bool) -> bool {
        let b = src.as_bytes();
        let mut stack = vec![Commands::new(End::Input)];
        let mut heredocs: VecDeque<(String, bool)> = VecDeque::new();
        let mut i = 0;
        while i < b.len() {
            if !self.spend(1) {
                return true;
            }
            let Some(top) = stack.last_mut() else { break };
            let c = b[i];
            if let Some((_, quote)) = top.quotes.last_mut() {
                // Inside a quote: only the closing character, escapes and
                // expansions mean anything.
                let in_dq = match quote {
                    Quote::Double => true,
                    Quote::Param { dq, .. } => *dq,
                };
                let step = match (quote, c) {
                    (Quote::Double, b'"') => {
                        top.quotes.pop();
                        Step::To(i + 1)
                    }
                    (Quote::Param { braces: 0, .. }, b'}') => {
                        top.cur.text.push('}');
                        top.quotes.pop();
                        Step::To(i + 1)
                    }
                    (Quote::Param { braces, .. }, b'}') => {
                        *braces -= 1;
                        top.cur.text.push('}');
                        Step::To(i + 1)
                    }
                    (Quote::Param { braces, .. }, b'{') => {
                        *braces += 1;
                        top.cur.text.push('{');
                        Step::To(i + 1)
                    }
                    (Quote::Param { dq: false, .. }, b'\'') => single_quoted(src, i + 1, &mut top.cur, q.escapes()),
                    (Quote::Param { .. }, b'"') => {
                        top.quotes.push((i, Quote::Double));
                        Step::To(i + 1)
                    }
                    (Quote::Param { .. }, b'@') => {
                        top.cur.splits = true;
                        top.cur.text.push('@');
                        Step::To(i + 1)
                    }
                    (quote, b'\\') => match b.get(i + 1) {
                        Some(b'\n') => Step::To(i + 2),
                        Some(&e) if matches!(quote, Quote::Param { .. }) || matches!(e, b'$' | b'`' | b'"' | b'\\') => {
                            let (ch, len) = char_at(src, i + 1);
                            top.cur.text.push(ch);
                            Step::To(i + 1 + len)
                        }
                        _ => {
                            top.cur.text.push('\\');
                            Step::To(i + 1)
                        }
                    },
                    (_, b'$') => dollar(src, i, &mut top.cur, &mut top.quotes, in_dq),
                    (_, b'`') => {
                        top.cur.expansion(false);
                        stack.push(Commands::new(End::Backtick));
                        Step::To(i + 1)
                    }
                    _ => {
                        let (ch, len) = char_at(src, i);
                        top.cur.text.push(ch);
                        Step::To(i + len)
                    }
                };
                match self.follow(step, &mut stack, src, q, depth, comments) {
                    Some(next) => i = next,
                    None => return true,
                }
                continue;
            }
            match c {
                b' ' | b'\t' => {
                    if top.end_word(&mut heredocs) && self.finish(top, depth) {
                        return true;
                    }
                    i += 1;
                }
                b'\n' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 1;
                    // Here-document bodies follow the line: each body line is
                    // read on its own (a quote in one cannot hide the next).
                    while let Some((delimiter, strip_tabs)) = heredocs.pop_front() {
                        while i < b.len() {
                            let end = src[i..].find('\n').map_or(b.len(), |k| i + k);
                            let line = &src[i..end];
                            i = (end + 1).min(b.len());
                            let bare = if strip_tabs { line.trim_start_matches('\t') } else { line };
                            if bare == delimiter {
                                break;
                            }
                            if self.aside(line, q, depth, true) {
                                return true;
                            }
                        }
                    }
                }
                b';' | b'|' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 1;
                }
                b'&' if b.get(i + 1) == Some(&b'>') => {
                    if top.end_word(&mut heredocs) && self.finish(top, depth) {
                        return true;
                    }
                    top.target = Some(Target::File);
                    i += if b.get(i + 2) == Some(&b'>') { 3 } else { 2 };
                }
                b'&' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 1;
                }
                b'(' if top.cur.started() && b.get(i + 1) == Some(&b')') => {
                    // `name()`: a function definition; its body follows.
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    i += 2;
                }
                b'(' if top.cur.started() => {
                    // zsh's `=(…)`, bash's `@(…)`: commands or patterns whose
                    // value is unknown.
                    top.cur.expansion(true);
                    stack.push(Commands::new(End::Paren));
                    i += 1;
                }
                b'(' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    top.parens += 1;
                    i += 1;
                }
                b')' => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    if top.parens > 0 {
                        top.parens -= 1;
                    } else if top.cases == 0 && top.end == End::Paren {
                        stack.pop();
                    }
                    i += 1;
                }
                b'`' if top.end == End::Backtick => {
                    if self.end_command(top, &mut heredocs, depth) {
                        return true;
                    }
                    stack.pop();
                    i += 1;
                }
                b'`' => {
                    top.cur.expansion(true);
                    stack.push(Commands::new(End::Backtick));
                    i += 1;
                }
                b'<' | b'>' if b.get(i + 1) == Some(&b'(') => {
                    // Process substitution: a file name, and commands.
                    top.cur.expansion(false);
                    stack.push(Commands::new(End::Paren));
                    i += 2;
                }
                b'<' | b'>' => {
                    let fd =
                        !top.cur.quoted && !top.cur.dynamic && !top.cur.text.is_empty() && top.cur.text.bytes().all(|d| d.is_ascii_digit());
                    if fd {
                        top.cur = Word::default();
                    } else if top.end_word(&mut heredocs) && self.finish(top, depth) {
                        return true;
                    }
                    let rest = &b[i..];
                    let (len, target) = if rest.starts_with(b"<<<") {
                        (3, Target::File)
                    } else if rest.starts_with(b"<<-") {
                        (3, Target::Heredoc { strip_tabs: true })
                    } else if rest.starts_with(b"<<") {
                        (2, Target::Heredoc { strip_tabs: false })
                    } else if rest.len() > 1 && matches!(rest[1], b'&' | b'>' | b'|') || rest.starts_with(b"<>") {
                        (2, Target::File)
                    } else {
                        (1, Target::File)
                    };
                    top.target = Some(target);
                    i += len;
                }
                b'\'' => {
                    let step = single_quoted(src, i + 1, &mut top.cur, q.escapes());
                    match self.follow(step, &mut stack, src, q, depth, comments) {
                        Some(next) => i = next,
                        None => return true,
                    }
                }
                b'"' => {
                    top.cur.quoted = true;
                    top.quotes.push((i, Quote::Double));
                    i += 1;
                }
                b'\\' => match b.get(i + 1) {
                    Some(b'\n') => i += 2,
                    Some(b'`') if top.end == End::Backtick => {
                        // A backtick nested in backticks: more commands.
                        if self.end_command(top, &mut heredocs, depth) {
                            return true;
                        }
                        i += 2;
                    }
                    Some(_) => {
                        let (ch, len) = char_at(src, i + 1);
                        top.cur.text.push(ch);
                        top.cur.quoted = true;
                        i += 1 + len;
                    }
                    None => {
                        top.cur.text.push('\\');
                        i += 1;
                    }
                },
                b'$' => {
                    let step = dollar(src, i, &mut top.cur, &mut top.quotes, false);
                    match self.follow(step, &mut stack, src, q, depth, comments) {
                        Some(next) => i = next,
                        None => return true,
                    }
                }
                b'#' if comments && !top.cur.started() => {
                    // A comment, for shells that read one here. Read its
                    // text as commands too (without comments), for the
                    // shells that do not.
                    let end = src[i..].find('\n').map_or(b.len(), |k| i + k);
                    if self.aside(&src[i + 1..end], q, depth, false) {
                        return true;
                    }
                    i = end;
                }
                b'*' | b'?' | b'[' | b']' | b'{' | b'}' | b',' => {
                    top.cur.syntax(c as char);
                    i += 1;
                }
                _ => {
                    let (ch, len) = char_at(src, i);
                    top.cur.text.push(ch);
                    i += len;
                }
            }
        }
        // The end: a quote left open is read from its opening as commands
        // too; then every list still open ends.
        let open_quote = stack.iter().find_map(|c| c.quotes.first().map(|(at, _)| *at));
        if let Some(at) = open_quote {
            if self.aside(src.get(at + 1..).unwrap_or(""), q, depth, comments) {
                return true;
            }
        }
        while let Some(mut top) = stack.pop() {
            if self.end_command(&mut top, &mut heredocs, depth) {
                return true;
            }
        }
        false
    }

    /// Where reading goes on after `step` (in the list a `$(` opens);
    /// `None` when an open quote's text may run the rule's command.
    fn follow(&mut self, step: Step, stack: &mut Vec<Commands>, src: &str, q: Quoting, depth: usize, comments: bool) -> Option<usize> {
        match step {
            Step::To(next) => Some(next),
            Step::Subst(next) => {
                stack.push(Commands::new(End::Paren));
                Some(next)
            }
            Step::Tail(start) => (!self.aside(src.get(start..).unwrap_or(""), q, depth, comments)).then_some(src.len()),
        }
    }

    /// End the current word and the simple command.
    fn end_command(&mut self, top: &mut Commands, heredocs: &mut VecDeque<(String, bool)>, depth: usize) -> bool {
        top.end_word(heredocs);
        self.finish(top, depth)
    }

    /// Judge the simple command read so far and start the next.
    fn finish(&mut self, top: &mut Commands, depth: usize) -> bool {
        top.target = None;
        let words = std::mem::take(&mut top.words);
        !words.is_empty() && self.command(&words, depth)
    }

    /// Whether the simple command `words` may run the rule's command.
    fn command(&mut self, words: &[Word], depth: usize) -> bool {
        if !self.spend(words.len()) {
            return true;
        }
        let expanded;
        let words = if words.iter().any(|w| w.braces) {
            match self.expand_braces(words) {
                Some(w) => {
                    expanded = w;
                    &expanded[..]
                }
                None => return true,
            }
        } else {
            words
        };
        let n = words.len();
        let mut reach = vec![0u8; n + 1];
        reach[0] = REACHED;
        let mut exec_read = false;
        for p in 0..n {
            let via = reach[p];
            if via == 0 {
                continue;
            }
            if !self.spend(1) {
                return true;
            }
            let w = &words[p];
            if w.dynamic || via & REPLACED != 0 {
                return true;
            }
            let name = Name::of(w);
            let program = self.program;
            if self.named(&name, program) && self.args(words, p + 1, via) {
                return true;
            }
            // What else the word can be: then the program comes later.
            let mut next: Vec<(usize, u8)> = Vec::new();
            if is_assignment(&w.text) || KEYWORDS.contains(&w.text.as_str()) {
                next.push((p + 1, via));
            }
            for spec in WRAPPERS {
                if !spec.names.iter().any(|n| self.named(&name, n)) {
                    continue;
                }
                let mut starts = Vec::new();
                let mut flags = via;
                if spec.stdin_words {
                    flags |= XARGS;
                }
                if self.wrapper(spec, words, p, depth, &mut starts, &mut flags) {
                    return true;
                }
                next.extend(starts.into_iter().map(|s| (s, flags)));
            }
            let fish = self.named(&name, "fish");
            if SHELLS.iter().any(|n| self.named(&name, n)) && self.shell(words, p, fish, depth) {
                return true;
            }
            if self.named(&name, "eval") && self.joined(words, p + 1, Quoting::Posix, depth) {
                return true;
            }
            if self.named(&name, "alias") || self.named(&name, "trap") {
                // `alias g='git push'`, `trap 'git push' EXIT`: code in a
                // string, read whether or not it is used.
                let trap = self.named(&name, "trap");
                let args = words.get(p + 1..).unwrap_or(&[]);
                let code = args.iter().filter(|a| !a.text.starts_with('-'));
                let code: Vec<&str> = if trap {
                    code.take(1).map(|a| if a.dynamic { "$_" } else { a.text.as_str() }).collect()
                } else {
                    code.filter_map(|a| a.text.split_once('=').map(|(_, v)| if a.dynamic { "$_" } else { v })).collect()
                };
                for c in code {
                    if c == "$_" || self.code(c, Quoting::Posix, depth + 1) {
                        return true;
                    }
                }
            }
            if (self.named(&name, "source") || self.named(&name, ".")) && words.get(p + 1).is_some_and(|f| f.dynamic || is_stdin(&f.text)) {
                return true;
            }
            if !exec_read && self.named(&name, "find") {
                exec_read = true;
                for (k, arg) in words.iter().enumerate().skip(p + 1) {
                    if matches!(arg.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                        next.push((k + 1, via));
                    }
                }
            }
            for (s, flags) in next {
                if let Some(r) = reach.get_mut(s) {
                    *r |= flags | REACHED;
                }
            }
        }
        false
    }

    /// Whether a program word read as `word` names `name`.
    fn named(&mut self, word: &Name, name: &str) -> bool {
        match word {
            Name::Literal { base, trimmed } => *base == name || *trimmed == name,
            Name::Pattern(pat) => !self.spend(pat.len() * (name.len() + 1)) || glob_match(pat, name),
        }
    }

    /// Whether `w` may be `target`, the rule's word at subcommand level
    /// `level` (0: the word right after the program's global options).
    fn word_is(&mut self, w: &Word, target: &str, program: Option<&Program>, level: usize) -> bool {
        if w.dynamic {
            return true;
        }
        if w.glob {
            let pat = w.pattern(0);
            return !self.spend(pat.len() * (target.len() + 1)) || glob_match(&pat, target);
        }
        if w.text == target {
            return true;
        }
        let Some(program) = program.filter(|_| level == 0) else { return false };
        let canon =
            |word: &str| program.aliases.iter().find(|(alias, _)| *alias == word).map_or(word.to_string(), |(_, c)| (*c).to_string());
        let (word, target) = (canon(&w.text), canon(target));
        word == target || (program.abbreviates && !word.is_empty() && !word.starts_with('-') && target.starts_with(&word))
    }

    /// Whether the rule's subcommand words follow from word `start` on.
    fn args(&mut self, words: &[Word], start: usize, via: u8) -> bool {
        let rest = self.rest;
        if rest.is_empty() {
            return true;
        }
        let program = PROGRAMS.iter().find(|p| p.names.contains(&self.program));
        let n = words.len();
        // Which rule words have been matched at positions i, i+1, i+2: bit j
        // is "rest[..j] matched".
        let mut window = [1u64, 0, 0];
        let mut i = start;
        while window.iter().any(|w| *w != 0) {
            let mut set = window[0];
            window = [window[1], window[2], 0];
            if set != 0 {
                if i >= n {
                    // Out of words: `xargs` may add more.
                    return via & XARGS != 0;
                }
                if !self.spend(1) {
                    return true;
                }
                let w = &words[i];
                if w.splits || via & REPLACED != 0 {
                    return true;
                }
                while set != 0 {
                    let j = set.trailing_zeros() as usize;
                    set &= set - 1;
                    if self.word_is(w, rest[j], program, j) {
                        if j + 1 == rest.len() {
                            return true;
                        }
                        window[0] |= 1 << (j + 1);
                    }
                    let global = program.filter(|_| j == 0);
                    if j == 0 && global.is_some_and(|p| p.alias_options) && defines_alias(words, i) {
                        return true;
                    }
                    match skip(w, global, i == start) {
                        Skip::Not => {}
                        Skip::One => window[0] |= 1 << j,
                        Skip::Two => window[1] |= 1 << j,
                        Skip::Both => {
                            window[0] |= 1 << j;
                            window[1] |= 1 << j;
                        }
                    }
                }
            }
            i += 1;
        }
        false
    }

    /// Where the command may start after the wrapper at `p`; true when a
    /// command line the wrapper runs (`su -c`, `ssh host …`) may run the
    /// rule's command.
    fn wrapper(&mut self, spec: &Wrapper, words: &[Word], p: usize, depth: usize, starts: &mut Vec<usize>, flags: &mut u8) -> bool {
        let mut firsts = Vec::new();
        if self.options(spec, words, p + 1, depth, &mut firsts, flags) {
            return true;
        }
        if spec.operands > 0 {
            let mut after = Vec::new();
            for f in firsts {
                if f + spec.operands < words.len() && self.options(spec, words, f + spec.operands, depth, &mut after, flags) {
                    return true;
                }
            }
            firsts = after;
        }
        if spec.joins {
            for f in firsts {
                if f < words.len() && self.joined(words, f, Quoting::Posix, depth) {
                    return true;
                }
            }
        } else {
            starts.extend(firsts);
        }
        false
    }

    /// The wrapper's options from word `start`: pushes every word where
    /// they may end to `out`.
    fn options(&mut self, spec: &Wrapper, words: &[Word], start: usize, depth: usize, out: &mut Vec<usize>, flags: &mut u8) -> bool {
        let n = words.len();
        // Bit k: position i + k may be reached.
        let mut window: u8 = 1;
        let mut i = start;
        while window != 0 {
            if window & 1 != 0 {
                if i >= n || !self.spend(1) {
                    return i < n;
                }
                let w = &words[i];
                let t = w.text.as_str();
                if w.dynamic {
                    out.push(i);
                    window |= 0b110;
                } else if t == "--" {
                    out.push(i + 1);
                } else if t.len() > 1 && t.starts_with('-') {
                    if spec.stdin_words && (t.starts_with("-I") || t.starts_with("-i") || t.starts_with("-J") || t.starts_with("--replace"))
                    {
                        *flags |= REPLACED;
                    }
                    let (mask, code) = option_shape(spec, t);
                    window |= mask;
                    if let Some(value) = code {
                        let (first, rest_from) = match value {
                            Some(v) => (v.to_string(), i + 1),
                            None => match words.get(i + 1) {
                                Some(v) if v.dynamic => return true,
                                Some(v) => (v.text.clone(), i + 2),
                                None => (String::new(), i + 1),
                            },
                        };
                        if self.code_line(&first, words.get(rest_from..).unwrap_or(&[]), depth) {
                            return true;
                        }
                    }
                } else {
                    out.push(i);
                }
            }
            window >>= 1;
            i += 1;
        }
        false
    }

    /// Read `first` followed by `rest`'s words as one command line.
    fn code_line(&mut self, first: &str, rest: &[Word], depth: usize) -> bool {
        if rest.iter().any(|w| w.dynamic) {
            return true;
        }
        let len = first.len() + rest.iter().map(|w| w.text.len() + 1).sum::<usize>();
        if !self.spend(len) {
            return true;
        }
        let mut line = String::with_capacity(len);
        line.push_str(first);
        for w in rest {
            line.push(' ');
            line.push_str(&w.text);
        }
        self.code(&line, Quoting::Posix, depth + 1)
    }

    /// Read `words[from..]` joined as a command line (`eval`, `ssh`).
    fn joined(&mut self, words: &[Word], from: usize, q: Quoting, depth: usize) -> bool {
        let rest = words.get(from..).unwrap_or(&[]);
        match rest.split_first() {
            None => false,
            Some((first, _)) if first.dynamic => true,
            Some((first, rest)) if q == Quoting::Posix => self.code_line(&first.text, rest, depth),
            Some((first, _)) => self.code(&first.text, q, depth + 1),
        }
    }

    /// A shell at word `p`: its `-c` string is code; without one, and
    /// without a script file, it runs what standard input holds.
    fn shell(&mut self, words: &[Word], p: usize, fish: bool, depth: usize) -> bool {
        let mut i = p + 1;
        let mut command = false;
        let mut stdin = false;
        while let Some(w) = words.get(i) {
            let t = w.text.as_str();
            if w.dynamic {
                return true;
            }
            if t == "--" || t == "-" {
                i += 1;
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                if let Some(code) = long.strip_prefix("command=") {
                    return self.code(code, if fish { Quoting::Fish } else { Quoting::Posix }, depth + 1);
                }
                command |= long == "command";
                i += if matches!(long, "rcfile" | "init-file" | "init-command") { 2 } else { 1 };
                continue;
            }
            if t.len() > 1 && (t.starts_with('-') || t.starts_with('+')) {
                let letters = &t[1..];
                command |= t.starts_with('-') && letters.contains('c');
                stdin |= t.starts_with('-') && letters.contains('s');
                i += if letters.ends_with(['o', 'O']) || (fish && letters.ends_with('C')) { 2 } else { 1 };
                continue;
            }
            break;
        }
        if command {
            return match words.get(i) {
                None => false,
                Some(w) if w.dynamic => true,
                Some(w) => self.code(&w.text, if fish { Quoting::Fish } else { Quoting::Posix }, depth + 1),
            };
        }
        match words.get(i) {
            None => true,
            Some(_) if stdin => true,
            Some(script) => script.dynamic || is_stdin(&script.text),
        }
    }

    /// Brace-expand every word (`{a,b}`, `{1..3}`); `None` when the budget
    /// is spent.
    fn expand_braces(&mut self, words: &[Word]) -> Option<Vec<Word>> {
        let mut out = Vec::with_capacity(words.len());
        for w in words {
            if !w.braces {
                out.push(w.clone());
                continue;
            }
            if w.text.len() > MAX_BRACE_WORD {
                out.push(Word::unknown());
                continue;
            }
            let mut work = vec![pieces(w)];
            let mut made = 0;
            while let Some(item) = work.pop() {
                if !self.spend(4 * item.len() + 1) {
                    return None;
                }
                match brace_group(&item) {
                    None => {
                        out.push(from_pieces(&item, w));
                        made += 1;
                    }
                    Some((open, close, alternatives)) => {
                        if made + work.len() + alternatives.len() > MAX_EXPANSION {
                            // Too many to list: the rest is unknown.
                            out.push(Word::unknown());
                            work.clear();
                            break;
                        }
                        for alt in alternatives.into_iter().rev() {
                            let mut next = Vec::with_capacity(item.len());
                            next.extend_from_slice(&item[..open]);
                            next.extend(alt);
                            next.extend_from_slice(&item[close + 1..]);
                            work.push(next);
                        }
                    }
                }
            }
        }
        Some(out)
    }
}

/// Whether word `i` (an option of git's) defines an alias: `-c alias.x=…`,
/// `--config-env alias.x=…` (any subcommand may then be the rule's).
fn defines_alias(words: &[Word], i: usize) -> bool {
    let is_alias = |w: &Word| w.dynamic || w.text.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("alias."));
    match words[i].text.as_str() {
        "-c" | "--config-env" => words.get(i + 1).is_some_and(is_alias),
        t => t.strip_prefix("--config-env=").is_some_and(|v| v.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("alias."))),
    }
}

/// `NAME=value`, `NAME+=value`, `NAME[i]=value`.
fn is_assignment(text: &str) -> bool {
    let Some(eq) = text.find('=') else { return false };
    let name = text[..eq].trim_end_matches('+');
    let name = name.split('[').next().unwrap_or(name);
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_stdin(path: &str) -> bool {
    matches!(path, "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "-")
}

/// Words at command position that are syntax, not the program.
const KEYWORDS: &[&str] = &[
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
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish"];

/// A program that runs the rest of its words as a command.
struct Wrapper {
    names: &'static [&'static str],
    /// Short options that take a value.
    short: &'static str,
    /// Long options (without `--`) that take the next word as value.
    long: &'static [&'static str],
    /// Options whose value is a command line (`su -c`, `env -S`).
    code: &'static [&'static str],
    /// Words between the options and the command (`chroot DIR`).
    operands: usize,
    /// The command's words are joined into a command line a shell reads
    /// (`ssh host …`, `watch …`).
    joins: bool,
    /// Words from standard input may follow the command's (`xargs`).
    stdin_words: bool,
}

const fn wrapper(names: &'static [&'static str], short: &'static str, long: &'static [&'static str]) -> Wrapper {
    Wrapper { names, short, long, code: &[], operands: 0, joins: false, stdin_words: false }
}

const WRAPPERS: &[Wrapper] = &[
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
fn option_shape<'t>(spec: &Wrapper, t: &'t str) -> (u8, Option<Option<&'t str>>) {
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
enum Skip {
    /// Not an option: it is a subcommand word or ends the search.
    Not,
    One,
    /// An option and its value.
    Two,
    /// Either: an option this module does not know.
    Both,
}

/// A program whose global options are known.
struct Program {
    names: &'static [&'static str],
    /// Global options that take the next word as their value.
    values: &'static [&'static str],
    /// Global options that take none.
    flags: &'static [&'static str],
    /// `+toolchain` may come first (cargo).
    plus_first: bool,
    /// Subcommand aliases: (alias, command).
    aliases: &'static [(&'static str, &'static str)],
    /// A word that starts a subcommand's name stands for it (npm's abbrev).
    abbreviates: bool,
    /// `-c alias.x=…` defines a subcommand (git).
    alias_options: bool,
}

const fn program(names: &'static [&'static str], values: &'static [&'static str], flags: &'static [&'static str]) -> Program {
    Program { names, values, flags, plus_first: false, aliases: &[], abbreviates: false, alias_options: false }
}

const NPM_ALIASES: &[(&str, &str)] = &[
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

const PROGRAMS: &[Program] = &[
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
fn skip(w: &Word, program: Option<&Program>, first: bool) -> Skip {
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

/// A character of a word for brace expansion: a literal, or unquoted
/// syntax.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Piece {
    Lit(char),
    Mark(char),
}

fn pieces(w: &Word) -> Vec<Piece> {
    w.text.char_indices().map(|(at, c)| if w.marks.binary_search(&at).is_ok() { Piece::Mark(c) } else { Piece::Lit(c) }).collect()
}

/// Back to a word like `template`; glob marks stay, braces become literal.
fn from_pieces(ps: &[Piece], template: &Word) -> Word {
    let mut w = Word { quoted: template.quoted, dynamic: template.dynamic, splits: template.splits, ..Word::default() };
    for p in ps {
        match *p {
            Piece::Mark(c @ ('*' | '?' | '[' | ']')) => w.syntax(c),
            Piece::Lit(c) | Piece::Mark(c) => w.text.push(c),
        }
    }
    w
}

/// The first brace group bash would expand: its `{`, its `}` and its
/// alternatives. One pass: each `}` closes the innermost open `{`, and each
/// `,` belongs to the innermost open group.
fn brace_group(ps: &[Piece]) -> Option<(usize, usize, Vec<Vec<Piece>>)> {
    let mut open: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut best: Option<(usize, usize, Vec<usize>)> = None;
    for (k, p) in ps.iter().enumerate() {
        match p {
            Piece::Mark('{') => open.push((k, Vec::new())),
            Piece::Mark(',') => {
                if let Some((_, commas)) = open.last_mut() {
                    commas.push(k);
                }
            }
            Piece::Mark('}') => {
                let Some((start, commas)) = open.pop() else { continue };
                let valid = !commas.is_empty() || (k - start <= 64 && sequence(&ps[start + 1..k]).is_some());
                if valid && best.as_ref().is_none_or(|(b, _, _)| start < *b) {
                    best = Some((start, k, commas));
                }
            }
            _ => {}
        }
    }
    let (start, close, commas) = best?;
    if commas.is_empty() {
        let items = sequence(&ps[start + 1..close])?;
        return Some((start, close, items.into_iter().map(|s| s.chars().map(Piece::Lit).collect()).collect()));
    }
    let mut alternatives = Vec::with_capacity(commas.len() + 1);
    let mut from = start + 1;
    for k in commas.into_iter().chain(std::iter::once(close)) {
        alternatives.push(ps[from..k].to_vec());
        from = k + 1;
    }
    Some((start, close, alternatives))
}

/// `a..e`, `1..10`, `1..10..2`, `01..10`: the items, at most
/// [`MAX_EXPANSION`] + 1 of them (more means "too many").
fn sequence(ps: &[Piece]) -> Option<Vec<String>> {
    let text: String = ps
        .iter()
        .map(|p| match p {
            Piece::Lit(c) => Some(*c),
            Piece::Mark(_) => None,
        })
        .collect::<Option<String>>()?;
    let parts: Vec<&str> = text.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [a, b] => (*a, *b, None),
        [a, b, s] => (*a, *b, Some(*s)),
        _ => return None,
    };
    let step: i64 = match step {
        Some(s) => s.parse::<i64>().ok()?.checked_abs()?.max(1),
        None => 1,
    };
    let cap = MAX_EXPANSION + 1;
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let padded = |s: &str| {
            let digits = s.trim_start_matches('-');
            digits.len() > 1 && digits.starts_with('0')
        };
        let width = if padded(from) || padded(to) { from.len().max(to.len()) } else { 0 };
        let mut items = Vec::new();
        let mut x = a;
        while items.len() < cap {
            items.push(if width > 0 { format!("{x:0width$}") } else { x.to_string() });
            if x == b {
                break;
            }
            let next = if a <= b { x.checked_add(step) } else { x.checked_sub(step) };
            match next {
                Some(n) if (a <= b && n <= b) || (a > b && n >= b) => x = n,
                _ => break,
            }
        }
        return Some(items);
    }
    let (mut fc, mut tc) = (from.chars(), to.chars());
    let (Some(a), None, Some(b), None) = (fc.next(), fc.next(), tc.next(), tc.next()) else { return None };
    if !a.is_ascii_alphabetic() || !b.is_ascii_alphabetic() {
        return None;
    }
    let (a, b) = (a as i64, b as i64);
    let mut items = Vec::new();
    let mut x = a;
    while items.len() < cap {
        items.push(char::from_u32(x as u32).map(String::from).unwrap_or_default());
        if (a <= b && x + step > b) || (a > b && x - step < b) {
            break;
        }
        x = if a <= b { x + step } else { x - step };
    }
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIT_PUSH: &[&str] = &["git", "push"];

    #[track_caller]
    fn runs(command: &str, prefix: &[&str]) {
        assert!(may_run(command, prefix), "{command:?} should count as running {prefix:?}");
    }

    #[track_caller]
    fn not(command: &str, prefix: &[&str]) {
        assert!(!may_run(command, prefix), "{command:?} should not count as running {prefix:?}");
    }

    #[test]
    fn the_issue_47_examples_match() {
        for c in [
            "git push",
            "git --no-pager push",
            "git -c a=b push",
            "git -C dir push",
            "/usr/bin/git push",
            "sudo git push",
            "env X=1 git push",
            "true && git push",
            "cd x; git push",
            "$(echo git) push",
            "git -c x=y --no-pager push",
            "sudo -u root git push",
            "echo x; git push",
            "$(git push)",
            "bash -c 'git push'",
            "\"git\" push",
            r"g\it push",
        ] {
            runs(c, GIT_PUSH);
        }
        runs("npm --tag next publish", &["npm", "publish"]);
        runs("/bin/rm -rf x", &["rm"]);
    }

    #[test]
    fn a_word_that_is_no_option_ends_the_search() {
        for c in [
            "git log --grep push",
            "git status",
            "git -C push status",
            "git -c push status",
            "git commit -m 'git push'",
            "echo git push",
            "rg 'git push' .",
            "legit push",
            "gitk push",
            "git pushx",
            "git show push",
            "git 'log' push",
            "cat push",
        ] {
            not(c, GIT_PUSH);
        }
        not("npm test", &["npm", "publish"]);
        not("npm run publish", &["npm", "publish"]);
        not("ls -la", &["rm"]);
        not("echo rm -rf x", &["rm"]);
        not("", GIT_PUSH);
    }

    #[test]
    fn compound_commands_are_all_read() {
        for c in [
            "true || git push",
            "make | git push",
            "make & git push",
            "make\ngit push",
            "(git push)",
            "{ git push; }",
            "if true; then git push; fi",
            "while false; do git push; done",
            "until x; do :; done; git push",
            "for x in a; do git push; done",
            "case x in a) git push;; esac",
            "! git push",
            "echo `git push`",
            "echo \"$(git push)\"",
            "echo \"a $(echo \"b\" ; git push) c\"",
            "diff <(git push) x",
            "tee >(git push)",
            "x=$(git push)",
            "echo ${x:-$(git push)}",
            "f() { git push; }; f",
            "coproc git push",
            "time git push",
            "echo \"$(case x in a) git push;; esac)\"",
            "echo $((1 + $(git push)))",
            "echo `echo \\`git push\\``",
        ] {
            runs(c, GIT_PUSH);
        }
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        for c in [
            "'git' push",
            "g'i't p\"u\"sh",
            "$'git' push",
            "$'\\x67it' push",
            "$'\\147it' push",
            "$'\\u0067it' push",
            "$\"git\" push",
            "gi\\\nt push",
            "git \\\n push",
            "\\git \\push",
            "g\"\"it push",
        ] {
            runs(c, GIT_PUSH);
        }
    }

    #[test]
    fn redirections_and_their_targets_are_dropped() {
        for c in
            [">out git push", "2>/dev/null git push", "git push 2>&1", "<in git push", "&>log git push", "git 2>x push", ">>log git push"]
        {
            runs(c, GIT_PUSH);
        }
        not("echo > git push", GIT_PUSH);
    }

    #[test]
    fn here_documents_comments_and_open_quotes_are_read_too() {
        runs("cat <<EOF\ndon't\nEOF\ngit push", GIT_PUSH);
        runs("cat <<'EOF'\nx\nEOF\ngit push", GIT_PUSH);
        runs("cat <<-EOF\n\tx\n\tEOF\ngit push", GIT_PUSH);
        runs("cat <<EOF\n$(git push)\nEOF", GIT_PUSH);
        runs("echo x # don't\ngit push", GIT_PUSH);
        runs("echo x #; git push", GIT_PUSH);
        runs("echo 'unterminated; git push", GIT_PUSH);
        runs("echo \"unterminated; git push", GIT_PUSH);
        runs("bash <<EOF\ngit push\nEOF", GIT_PUSH);
    }

    #[test]
    fn fish_single_quotes_are_read_too() {
        // POSIX: `'a\'` is a word, then `x`, then a quote; fish: the quote
        // runs to the second `'`, and the push is a command.
        runs(r"echo 'a\' x ' ; git push ; '", GIT_PUSH);
    }

    #[test]
    fn wrappers_and_their_options_are_passed_over() {
        for c in [
            "sudo -E git push",
            "sudo -Eu root git push",
            "sudo --user=root git push",
            "sudo --user root git push",
            "sudo -- git push",
            "sudo X=1 git push",
            "doas -u root git push",
            "env -i PATH=/x git push",
            "env -u HOME git push",
            "env -C dir git push",
            "env -S 'git push'",
            "command git push",
            "command -p git push",
            "builtin exec git push",
            "exec -a name git push",
            "nice -n 5 git push",
            "nice -10 git push",
            "nohup git push",
            "time -p git push",
            "timeout 5 git push",
            "timeout -s KILL 5s git push",
            "timeout --signal=KILL 5s git push",
            "xargs -n1 git push",
            "echo push | xargs git",
            "echo push | xargs -I{} git {}",
            "stdbuf -oL git push",
            "ionice -c 3 git push",
            "ionice -c3 git push",
            "chroot /x git push",
            "setsid git push",
            "flock /tmp/l git push",
            "flock /tmp/l -c 'git push'",
            "watch 'git push'",
            "su -c 'git push' root",
            "su root -c 'git push'",
            "gosu root git push",
            "taskset -c 0 git push",
            "ssh host git push",
            "ssh -p 22 host 'git push'",
            "find . -exec git push \\;",
            "A=1 B=2 sudo env C=3 nice git push",
            "noglob git push",
        ] {
            runs(c, GIT_PUSH);
        }
        not("sudo -u git push", GIT_PUSH);
        not("timeout git push", GIT_PUSH);
    }

    #[test]
    fn shells_and_eval_read_their_code() {
        for c in [
            "sh -c 'git push'",
            "bash -lc 'git push'",
            "bash -e -c 'git push'",
            "bash -o pipefail -c 'git push'",
            "zsh -c \"cd x && git push\"",
            "fish -c 'git push'",
            "fish --command='git push'",
            "bash -c \"bash -c 'git push'\"",
            "eval git push",
            "eval 'git push'",
            "eval \"$X\"",
            "bash -c \"$CMD\"",
            "echo git push | sh",
            "curl x | bash -s",
            "bash /dev/stdin",
            "bash <(echo git push)",
            "source <(echo git push)",
            ". /dev/stdin",
        ] {
            runs(c, GIT_PUSH);
        }
        runs("alias g='git push'; g", GIT_PUSH);
        runs("trap 'git push' EXIT", GIT_PUSH);
        runs("trap \"$X\" EXIT", GIT_PUSH);
        not("alias ll='ls -l'", GIT_PUSH);
        not("trap - EXIT", GIT_PUSH);
        not("bash deploy.sh", GIT_PUSH);
        not("bash -c 'git status'", GIT_PUSH);
        not("eval echo hi", GIT_PUSH);
    }

    #[test]
    fn code_nested_past_the_depth_limit_counts_as_a_match() {
        let mut c = "git status".to_string();
        for _ in 0..12 {
            c = format!("eval {}", c.replace('\'', ""));
        }
        runs(&c, GIT_PUSH);
    }

    #[test]
    fn expansions_are_any_word() {
        for c in [
            "$GIT push",
            "${GIT} push",
            "\"$GIT\" push",
            "git $SUB",
            "git \"$SUB\"",
            "git $OPTS push",
            "/usr/bin/$X push",
            "`which git` push",
        ] {
            runs(c, GIT_PUSH);
        }
        runs("git${IFS}push", GIT_PUSH);
        not("echo $X", GIT_PUSH);
        not("git log $X", GIT_PUSH);
    }

    #[test]
    fn braces_and_globs_are_expanded_or_matched() {
        for c in [
            "{git,push}",
            "git {push,pull}",
            "{/usr/bin/git,push}",
            "git {p..p}ush",
            "/usr/bin/gi? push",
            "git pu*",
            "git p[u]sh",
            "=git push",
        ] {
            runs(c, GIT_PUSH);
        }
        not("git {pull,fetch}", GIT_PUSH);
        not("echo {1..1000}", GIT_PUSH);
        runs("rm{,}", &["rm"]);
    }

    #[test]
    fn git_global_options_and_aliases() {
        for c in [
            "git --git-dir .git push",
            "git --git-dir=.git push",
            "git --work-tree x --namespace y push",
            "git -p push",
            "git --bare push",
            "git --literal-pathspecs push",
            "git -P push",
            "git --no-optional-locks push",
            "git --exec-path=/x push",
            "git --frobnicate push",
            "git --frobnicate x push",
            "git -c alias.p=push p",
            "git -c Alias.P=push p origin",
            "git --config-env=alias.p=X p",
        ] {
            runs(c, GIT_PUSH);
        }
        not("git -c core.pager=cat log", GIT_PUSH);
        runs("git remote -v add x y", &["git", "remote", "add"]);
        not("git remote show add", &["git", "remote", "add"]);
    }

    #[test]
    fn other_programs_global_options() {
        runs("npm --tag next publish", &["npm", "publish"]);
        runs("npm --global publish", &["npm", "publish"]);
        runs("npm --registry=x publish", &["npm", "publish"]);
        runs("npm i lodash", &["npm", "install"]);
        runs("npm install lodash", &["npm", "i"]);
        runs("npm pub", &["npm", "publish"]);
        not("npm view publish", &["npm", "publish"]);
        runs("pnpm rm x", &["pnpm", "remove"]);
        runs("cargo +nightly publish", &["cargo", "publish"]);
        runs("cargo --config x=1 publish", &["cargo", "publish"]);
        runs("cargo -Z unstable publish", &["cargo", "publish"]);
        runs("cargo r", &["cargo", "run"]);
        not("cargo --color always build", &["cargo", "always"]);
        runs("docker -H tcp://x rm c", &["docker", "rm"]);
        runs("docker --context prod rm c", &["docker", "rm"]);
        not("docker -H rm ps", &["docker", "rm"]);
        runs("kubectl -n prod --context x delete pod y", &["kubectl", "delete"]);
        runs("kubectl --namespace=prod delete pod", &["kubectl", "delete"]);
        not("kubectl -n delete get pods", &["kubectl", "delete"]);
        runs("helm --kube-context x uninstall r", &["helm", "uninstall"]);
        runs("terraform -chdir=infra destroy", &["terraform", "destroy"]);
        runs("aws --profile prod --region eu s3 rm x", &["aws", "s3", "rm"]);
        not("aws --profile s3 ls", &["aws", "s3"]);
        runs("gcloud --project p compute instances delete x", &["gcloud", "compute", "instances", "delete"]);
        runs("make --jobs 4 deploy", &["make", "deploy"]);
    }

    #[test]
    fn a_single_word_rule_matches_the_program_anywhere_it_runs() {
        for c in ["/bin/rm -rf x", "rm", "sudo rm x", "xargs rm", "find . -name x -exec rm {} +", "busybox rm x", "echo x | rm"] {
            runs(c, &["rm"]);
        }
        not("echo rm", &["rm"]);
        not("rmdir x", &["rm"]);
        not("firm x", &["rm"]);
    }

    #[test]
    fn the_rule_program_is_compared_by_basename() {
        runs("./deploy.sh prod", &["./deploy.sh"]);
        runs("scripts/deploy.sh prod", &["./deploy.sh", "prod"]);
        runs("/usr/local/bin/git push", &["/usr/bin/git", "push"]);
        not("GIT push", GIT_PUSH);
    }

    #[test]
    fn the_empty_rule_matches_everything() {
        assert!(may_run("", &[]));
        assert!(may_run("ls", &[]));
    }

    #[test]
    fn long_and_hostile_inputs_end_quickly() {
        let started = std::time::Instant::now();
        let n = 256 * 1024;
        let inputs = [
            "a".repeat(n),
            "$(".repeat(n / 2),
            "\"$(".repeat(n / 3),
            "((((".repeat(n / 4),
            "{".repeat(n),
            "{a,b}".repeat(n / 5),
            "{a..a}".repeat(n / 6),
            "# ".repeat(n / 2),
            "'".repeat(n),
            "\\'".repeat(n / 2),
            "<<E ".repeat(n / 4),
            "eval ".repeat(n / 5),
            "sudo ".repeat(n / 5),
            "git ".repeat(n / 4),
            "s* ".repeat(n / 3),
            "x -- ".repeat(n / 5),
            "find -exec ".repeat(n / 10),
            "ssh ".repeat(n / 4),
            "bash -c ".repeat(n / 8),
            "git -x ".repeat(n / 7),
            "git *".repeat(n / 5) + "push",
            "é".repeat(n / 2),
            "$'\\".repeat(n / 3),
        ];
        for input in &inputs {
            let _ = may_run(input, GIT_PUSH);
            let _ = may_run(input, &["rm"]);
            let _ = may_run(input, &["git", "remote", "add"]);
        }
        assert!(may_run(&"x".repeat(MAX_BYTES + 1), GIT_PUSH), "past the limit counts as a match");
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
    }

    #[test]
    fn unicode_is_sliced_on_character_boundaries() {
        for c in ["gït push", "git püsh", "é$'\\xé'", "$'\\uD800'", "\"é", "'é", "echo é{é,é}é", "git p[é]sh", "é=1 git push", "${é}"]
        {
            let _ = may_run(c, GIT_PUSH);
        }
        runs("é=1; git push", GIT_PUSH);
    }

    #[test]
    fn brace_sequences() {
        let lit = |s: &str| s.chars().map(Piece::Lit).collect::<Vec<_>>();
        assert_eq!(sequence(&lit("1..3")), Some(vec!["1".into(), "2".into(), "3".into()]));
        assert_eq!(sequence(&lit("3..1")), Some(vec!["3".into(), "2".into(), "1".into()]));
        assert_eq!(sequence(&lit("01..03")), Some(vec!["01".into(), "02".into(), "03".into()]));
        assert_eq!(sequence(&lit("a..e..2")), Some(vec!["a".into(), "c".into(), "e".into()]));
        assert_eq!(sequence(&lit("a..b..c")), None);
        assert_eq!(sequence(&lit("ab..c")), None);
        assert_eq!(sequence(&lit("1..100000")).map(|v| v.len()), Some(MAX_EXPANSION + 1));
    }
}

#[cfg(test)]
mod properties {
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
}
