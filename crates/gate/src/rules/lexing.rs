//! Reading quotes, escapes and `$` forms inside a word.

use super::*;

/// A quote open inside the word being read.
pub(super) enum Quote {
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
pub(super) enum End {
    Input,
    Paren,
    Backtick,
}

/// What the next word is after a redirection operator.
#[derive(Clone, Copy)]
pub(super) enum Target {
    File,
    Heredoc { strip_tabs: bool },
}

/// A list of commands being read: the top level, or the inside of `$(…)`,
/// a backtick pair or `<(…)`.
pub(super) struct Commands {
    pub(super) end: End,
    pub(super) words: Vec<Word>,
    pub(super) cur: Word,
    /// Quotes open in `cur` (a `$(` inside one opens a new `Commands`).
    pub(super) quotes: Vec<(usize, Quote)>,
    /// Subshell parentheses open in this list.
    pub(super) parens: usize,
    /// `case` … `esac` open in this list: a `)` is a pattern's end.
    pub(super) cases: usize,
    pub(super) target: Option<Target>,
}

impl Commands {
    pub(super) fn new(end: End) -> Self {
        Commands { end, words: Vec::new(), cur: Word::default(), quotes: Vec::new(), parens: 0, cases: 0, target: None }
    }

    /// End the current word. True when it was `{` or `}` standing alone,
    /// which ends the simple command.
    pub(super) fn end_word(&mut self, heredocs: &mut VecDeque<(String, bool)>) -> bool {
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
pub(super) enum Step {
    /// Go on reading at this byte.
    To(usize),
    /// A command substitution opens; go on reading its commands here.
    Subst(usize),
    /// A quote never closes: what follows its opening (from this byte) is
    /// read as commands too.
    Tail(usize),
}

pub(super) fn char_at(src: &str, i: usize) -> (char, usize) {
    src.get(i..).and_then(|s| s.chars().next()).map_or(('\u{FFFD}', 1), |c| (c, c.len_utf8()))
}

/// What a backslash means inside single quotes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Escapes {
    /// Nothing (POSIX `'…'`).
    None,
    /// `\'` and `\\` (fish's `'…'`).
    Fish,
    /// bash's `$'…'`: `\n`, `\x67`, `\147`, `\u0067`, `\cX`, ….
    AnsiC,
}

/// Read a single-quoted string from byte `start` (after the quote) into
/// `word`.
pub(super) fn single_quoted(src: &str, start: usize, word: &mut Word, escapes: Escapes) -> Step {
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
pub(super) fn ansi_escape(b: &[u8], i: usize) -> Option<(Option<char>, usize)> {
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
pub(super) fn digits(b: &[u8], i: usize, max: usize, radix: u32) -> (u32, usize) {
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
pub(super) fn dollar(src: &str, i: usize, word: &mut Word, quotes: &mut Vec<(usize, Quote)>, in_dq: bool) -> Step {
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
