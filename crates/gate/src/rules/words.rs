//! Words as a shell reads them: quoting, globs, and the program name a word may be.

use super::*;

/// How single quotes end: POSIX shells at the next `'`; fish reads `\'` and
/// `\\` inside them as escapes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Quoting {
    Posix,
    Fish,
}

impl Quoting {
    pub(super) fn escapes(self) -> Escapes {
        match self {
            Quoting::Posix => Escapes::None,
            Quoting::Fish => Escapes::Fish,
        }
    }
}

/// One word of a simple command, quotes removed.
#[derive(Debug, Default, Clone)]
pub(super) struct Word {
    pub(super) text: String,
    /// Byte offsets in `text` of unquoted `*` `?` `[` `]` (globs) and `{`
    /// `,` `}` (brace expansion), in order.
    pub(super) marks: Vec<usize>,
    /// Some part was quoted or escaped (an empty `''` is still a word).
    pub(super) quoted: bool,
    /// Holds an expansion whose value is unknown.
    pub(super) dynamic: bool,
    /// Holds an unquoted expansion: may become several words, or none.
    pub(super) splits: bool,
    /// Has an unquoted `*`, `?` or `[`.
    pub(super) glob: bool,
    /// Has an unquoted `{`.
    pub(super) braces: bool,
}

impl Word {
    pub(super) fn started(&self) -> bool {
        self.quoted || self.dynamic || !self.text.is_empty()
    }

    pub(super) fn syntax(&mut self, c: char) {
        self.marks.push(self.text.len());
        self.text.push(c);
        self.glob |= matches!(c, '*' | '?' | '[');
        self.braces |= c == '{';
    }

    pub(super) fn expansion(&mut self, splits: bool) {
        self.dynamic = true;
        self.splits |= splits;
    }

    /// A word whose value is unknown and may be several words.
    pub(super) fn unknown() -> Word {
        Word { quoted: true, dynamic: true, splits: true, ..Word::default() }
    }

    /// The word as a glob pattern from byte `from`.
    pub(super) fn pattern(&self, from: usize) -> Vec<Pat> {
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
pub(super) enum Pat {
    Lit(char),
    Any,
    Star,
}

/// Whether `pat` matches the whole of `text` (`*` and `?` only).
pub(super) fn glob_match(pat: &[Pat], text: &str) -> bool {
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
pub(super) enum Name<'w> {
    Literal { base: &'w str, trimmed: &'w str },
    Pattern(Vec<Pat>),
}

impl<'w> Name<'w> {
    pub(super) fn of(w: &'w Word) -> Self {
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
