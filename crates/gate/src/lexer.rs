//! The strict tokenizer: a command string to words, or the reason it is not
//! provably a single simple command.
//!
//! It does not try to understand shell syntax; it accepts a subset so small
//! that bash, zsh and dash read it identically, and refuses the rest with a
//! reason naming the first offending character. See the crate documentation
//! for the grammar. Every refusal is a `String` phrase; the caller appends what
//! plan mode allows.

use std::borrow::Cow;

use crate::text::{codepoint, is_invisible};

/// Longest command the gate will look at. Real read-only commands are far
/// shorter; the bound keeps the work per call small whatever the agent sends.
pub(crate) const MAX_COMMAND_BYTES: usize = 32 * 1024;

/// One shell word after quote removal.
#[derive(Debug)]
pub(crate) struct Word<'a> {
    /// The word as the command will receive it (quotes removed). Borrowed
    /// from the command when the word is a single piece.
    pub text: Cow<'a, str>,
    /// Some piece of the word was quoted.
    pub quoted: bool,
    /// The word has an unquoted `*`, `?` or (zsh) `^` and may be
    /// glob-expanded.
    pub glob: bool,
}

/// Split `src` into words, or say why it is not a plain simple command.
pub(crate) fn split(src: &str) -> Result<Vec<Word<'_>>, String> {
    if src.len() > MAX_COMMAND_BYTES {
        return Err(format!("the command is longer than {MAX_COMMAND_BYTES} bytes"));
    }
    let b = src.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if matches!(b[i], b' ' | b'\t') {
            i += 1;
            continue;
        }
        let mut text = Pieces::new(src);
        let mut quoted = false;
        // An unquoted `*` or `?`, or zsh's `dir/^x`: a glob like `dir/*`.
        let mut star = false;
        // An unquoted `^` inside the word. zsh with EXTENDED_GLOB (a common
        // setting) reads it as a glob operator wherever it stands, "anything
        // but": `-^x` matches a file named `-delete`, and `refnam^q` both
        // `refname` and `refnamx`. Every expansion still starts with the
        // literal text before the `^`, so the word is treated like a `*`
        // glob: refused when it starts with `-`, or in a command checked by
        // position, allowed otherwise (`git log HEAD^`).
        let mut caret = false;
        // An unquoted `~` inside the word: zsh's extended-glob exclusion,
        // harmless alone (`HEAD~1`) but refused next to a glob.
        let mut tilde = false;
        while i < b.len() && !matches!(b[i], b' ' | b'\t') {
            match b[i] {
                q @ (b'\'' | b'"') => {
                    let start = i + 1;
                    let Some(len) = b[start..].iter().position(|&c| c == q) else {
                        return Err(if q == b'\'' {
                            "an unterminated single quote".to_string()
                        } else {
                            "an unterminated double quote".to_string()
                        });
                    };
                    let end = start + len;
                    check_quoted(&src[start..end], q == b'"')?;
                    text.push(start, end);
                    quoted = true;
                    i = end + 1;
                }
                _ => {
                    let start = i;
                    while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'\'' | b'"') {
                        // Nothing literal before this character in the word
                        // (an empty `''` counts as something, conservatively
                        // not: `''*` is still a bare glob).
                        let at_start = i == start && text.is_empty();
                        match b[i] {
                            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/' | b':' | b',' | b'+' | b'@' | b'%' => {}
                            b'=' if at_start => {
                                return Err("a word starting with `=` (zsh expands it to a program path); quote it".to_string())
                            }
                            b'=' => {}
                            b'^' if at_start => {
                                return Err("a word starting with `^` (history substitution, or a zsh glob); quote it".to_string())
                            }
                            b'^' => {
                                caret = true;
                                // `dir/^x` is "every file in dir but x", as
                                // open as `dir/*`.
                                if i > start && b[i - 1] == b'/' {
                                    star = true;
                                }
                            }
                            b'~' => {
                                let expands = at_start || (i > start && matches!(b[i - 1], b'=' | b':'));
                                if expands {
                                    if !matches!(b.get(i + 1), None | Some(b'/' | b':' | b' ' | b'\t')) {
                                        let end = b[i..].iter().position(|c| matches!(c, b' ' | b'\t' | b'/')).map_or(b.len(), |n| i + n);
                                        return Err(format!(
                                            "`{}` expands to another user's home directory (or the directory stack); write the path out",
                                            crate::text::shown(&src[i..end])
                                        ));
                                    }
                                } else {
                                    tilde = true;
                                }
                            }
                            b'*' | b'?' => {
                                if at_start {
                                    return Err(
                                        "an unquoted glob at the start of a word can match a file named like an option (`--pre=sh`, `-delete`); write `./*` or quote the pattern"
                                            .to_string(),
                                    );
                                }
                                star = true;
                            }
                            _ => return Err(unquoted_reason(src, i)),
                        }
                        i += 1;
                    }
                    text.push(start, i);
                }
            }
        }
        let text = text.finish();
        let glob = star || caret;
        if glob && text.starts_with('-') {
            return Err(if star {
                format!("the glob `{}` starts with `-` and can expand to an option; quote it", crate::text::shown(&text))
            } else {
                format!(
                    "the glob `{}` starts with `-` and can expand to an option (zsh reads an unquoted `^` as a glob: `-^x` matches a file named `-delete`); quote it",
                    crate::text::shown(&text)
                )
            });
        }
        if star && (caret || tilde) {
            return Err(format!("the glob `{}` also has `~` or `^` (zsh glob operators); quote it", crate::text::shown(&text)));
        }
        words.push(Word { text, quoted, glob });
    }
    Ok(words)
}

/// The inside of a quoted piece: printable text only. Double quotes still
/// expand `$`, backticks and `\`, and `!` in interactive shells, so those are
/// refused there; single quotes are literal in POSIX shells, but fish reads
/// `\'` inside them as an escaped quote, so a backslash right before the
/// closing quote is refused (fish would keep the quote open and run what we
/// took for the next quoted word).
fn check_quoted(s: &str, double: bool) -> Result<(), String> {
    if !double && s.ends_with('\\') {
        return Err(
            "a backslash right before a closing single quote (`\\'`): fish reads it as an escaped quote and keeps the string open; drop the backslash or use double quotes"
                .to_string(),
        );
    }
    for c in s.chars() {
        match c {
            '\n' => return Err("a newline (even inside quotes, it reads as a second line)".to_string()),
            '\r' => return Err("a carriage return (it hides text on a terminal)".to_string()),
            '$' if double => return Err("`$` inside double quotes expands a variable or runs a command; use single quotes".to_string()),
            '`' if double => return Err("a backtick inside double quotes runs a command; use single quotes".to_string()),
            '\\' if double => {
                return Err("a backslash inside double quotes (e.g. `\\\"`) can end the quote early; use single quotes".to_string())
            }
            '!' if double => {
                return Err("`!` inside double quotes is history expansion in interactive shells; use single quotes".to_string())
            }
            _ if is_invisible(c) => return Err(format!("the invisible, control or bidi character {} inside quotes", codepoint(c))),
            _ => {}
        }
    }
    Ok(())
}

/// Why the unquoted character at byte `i` of `src` is refused.
fn unquoted_reason(src: &str, i: usize) -> String {
    let b = src.as_bytes();
    let next = b.get(i + 1).copied();
    let s: &str = match b[i] {
        b';' => "`;` starts a second command",
        b'&' if next == Some(b'&') => "`&&` runs a second command",
        b'&' => "`&` runs the command in the background or redirects",
        b'|' if next == Some(b'|') => "`||` runs a second command",
        b'|' => "`|` pipes the output into another command",
        b'>' => "`>` redirects output into a file (a write)",
        b'<' if next == Some(b'(') => "`<(...)` process substitution runs another command",
        b'<' if next == Some(b'<') => "`<<` here-document or here-string",
        b'<' => "`<` redirects input from a file",
        b'(' | b')' => "`(` `)` run a subshell or another command",
        b'$' if next == Some(b'(') => "`$(...)` runs another command",
        b'$' if next == Some(b'\'') => "`$'...'` escape strings can hide any character",
        b'$' if next == Some(b'{') => "`${...}` expands a variable",
        b'$' => "`$` expands a variable (such as `$IFS`) or a special parameter",
        b'`' => "a backtick runs another command",
        b'\\' => "a backslash escape (outside single quotes) hides what the shell will see; use single quotes",
        b'{' | b'}' => "`{` `}` brace expansion or a command group; quote braces",
        b'[' | b']' => "`[` `]` a glob character class; quote it",
        b'!' => "`!` history expansion or negation; quote it (or use `-not` with find)",
        b'#' => "`#` starts a comment that hides the rest of the line; quote it",
        b'\n' => "a newline starts a second command",
        b'\r' => "a carriage return (shells read it differently; it hides text on a terminal)",
        _ => {
            let c = src[i..].chars().next().unwrap_or('\u{FFFD}');
            return if c.is_ascii() {
                format!("the control character {} outside quotes", codepoint(c))
            } else {
                format!("the non-ASCII character {} outside quotes (look-alike operators and spaces are refused); quote it", codepoint(c))
            };
        }
    };
    s.to_string()
}

/// Builds a word from its pieces, borrowing when there is only one.
struct Pieces<'a> {
    src: &'a str,
    first: Option<(usize, usize)>,
    owned: Option<String>,
}

impl<'a> Pieces<'a> {
    fn new(src: &'a str) -> Self {
        Pieces { src, first: None, owned: None }
    }

    fn push(&mut self, start: usize, end: usize) {
        let piece = &self.src[start..end];
        match (&mut self.owned, self.first) {
            (Some(s), _) => s.push_str(piece),
            (None, None) => self.first = Some((start, end)),
            (None, Some((s0, e0))) => {
                let mut s = String::with_capacity(e0 - s0 + piece.len() + 8);
                s.push_str(&self.src[s0..e0]);
                s.push_str(piece);
                self.owned = Some(s);
            }
        }
    }

    /// No text yet (an empty quoted piece does not count).
    fn is_empty(&self) -> bool {
        match (&self.owned, self.first) {
            (Some(s), _) => s.is_empty(),
            (None, Some((s, e))) => s == e,
            (None, None) => true,
        }
    }

    fn finish(self) -> Cow<'a, str> {
        match (self.owned, self.first) {
            (Some(s), _) => Cow::Owned(s),
            (None, Some((s, e))) => Cow::Borrowed(&self.src[s..e]),
            (None, None) => Cow::Borrowed(""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        split(s).expect(s).into_iter().map(|w| w.text.into_owned()).collect()
    }

    #[test]
    fn quotes_are_removed_and_pieces_joined() {
        assert_eq!(texts("grep -n 'fn main' src/"), ["grep", "-n", "fn main", "src/"]);
        assert_eq!(texts(r#"a'b'"c"d ''"#), ["abcd", ""]);
        assert_eq!(texts("  ls\t-la  "), ["ls", "-la"]);
        assert_eq!(texts(r"rg '\bfoo\b'"), ["rg", r"\bfoo\b"]);
    }

    #[test]
    fn globs_are_marked() {
        let w = split("ls src/*.rs '*.md'").expect("ok");
        assert!(w[1].glob);
        assert!(!w[2].glob);
        assert!(split("ls *.rs").is_err());
        assert!(split("ls ''*").is_err());
        assert!(split("ls '-'*").is_err());
    }

    #[test]
    fn tilde_rules() {
        assert!(split("ls ~ ~/x").is_ok());
        assert!(split("git diff HEAD~1").is_ok());
        assert!(split("ls ~root").is_err());
        assert!(split("ls --x=~root").is_err());
        assert!(split("ls --x=~/ok").is_ok());
        assert!(split("ls a~b*").is_err());
    }

    #[test]
    fn zsh_negation_after_slash_is_a_glob() {
        assert!(split("git log HEAD^ x^y").is_ok());
        assert!(split("rg -/^x").is_err());
        assert!(split("ls src/^x").is_err());
    }

    #[test]
    fn every_unquoted_caret_is_a_glob() {
        let w = split("git log HEAD^ HEAD~1^2 'x^y' a^b").expect("ok");
        assert_eq!(w.iter().map(|w| w.glob).collect::<Vec<_>>(), [false, false, true, true, false, true]);
        for bad in ["find . -^x", "rg -^x foo", "ls --^x", "ls -a^", "ls x^y*", "ls x*^y", "ls a~b^c*"] {
            assert!(split(bad).is_err(), "{bad}");
        }
        assert!(split("rg -e '-^x' foo").is_ok());
    }

    #[test]
    fn fish_escaped_quote_is_refused() {
        assert!(split(r"rg 'a\b'").is_ok());
        assert!(split(r"echo 'a\'").is_err());
        assert!(split(r"echo 'a\' '; rm -rf x; echo \'").is_err());
    }
}
