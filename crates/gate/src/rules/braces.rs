//! Brace expansion: `{a,b}` and `{1..3}`, bounded.

use super::*;

/// A character of a word for brace expansion: a literal, or unquoted
/// syntax.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    Lit(char),
    Mark(char),
}

pub(super) fn pieces(w: &Word) -> Vec<Piece> {
    w.text.char_indices().map(|(at, c)| if w.marks.binary_search(&at).is_ok() { Piece::Mark(c) } else { Piece::Lit(c) }).collect()
}

/// Back to a word like `template`; glob marks stay, braces become literal.
pub(super) fn from_pieces(ps: &[Piece], template: &Word) -> Word {
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
pub(super) fn brace_group(ps: &[Piece]) -> Option<(usize, usize, Vec<Vec<Piece>>)> {
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
pub(super) fn sequence(ps: &[Piece]) -> Option<Vec<String>> {
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
