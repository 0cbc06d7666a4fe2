//! Reason texts and character classes shared by the lexer and the tool checks.
//!
//! Reasons quote attacker-chosen text (tool names, command words) back to the
//! agent and into logs and chat cards, so [`shown`] makes that text one short,
//! visible, ASCII line: a newline or a bidi override in a tool name must not
//! forge a second line or reorder the reason.

use std::fmt::Write as _;

/// Appended to every command denial: what the agent can do about it.
pub(crate) const COMMAND_SUFFIX: &str = "plan mode allows only read-only commands until the plan is approved";

/// Appended to every tool denial.
pub(crate) const TOOL_SUFFIX: &str = "plan mode allows only read-only tools until the plan is approved";

/// Longest quoted fragment in a reason, in characters.
const MAX_SHOWN: usize = 60;

/// `why; <command suffix>`.
pub(crate) fn deny_command(why: &str) -> String {
    format!("{why}; {COMMAND_SUFFIX}")
}

/// `why; <tool suffix>`.
pub(crate) fn deny_tool(why: &str) -> String {
    format!("{why}; {TOOL_SUFFIX}")
}

/// `s` made safe to put between backticks in a one-line reason: printable
/// ASCII kept (backticks become `'`), everything else shown as `\u{…}`,
/// truncated after [`MAX_SHOWN`] characters.
pub(crate) fn shown(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_SHOWN + 8));
    for (n, c) in s.chars().enumerate() {
        if n == MAX_SHOWN {
            out.push_str("...");
            break;
        }
        match c {
            '`' => out.push('\''),
            ' '..='~' => out.push(c),
            _ => {
                let _ = write!(out, "\\u{{{:04X}}}", c as u32);
            }
        }
    }
    out
}

/// `U+XXXX` for a reason.
pub(crate) fn codepoint(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

/// Characters that change how text reads without being visible themselves:
/// zero-width and joiner characters, bidi embeddings, overrides and isolates,
/// fillers, tag characters, variation selectors, and every Unicode space or
/// line break other than the ASCII space and tab. Refused even inside quotes,
/// because the human reviewing the command would read something else than
/// what runs.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}'                      // soft hyphen
        | '\u{034F}'                    // combining grapheme joiner
        | '\u{061C}'                    // arabic letter mark
        | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // hangul fillers
        | '\u{17B4}' | '\u{17B5}'       // khmer inherent vowels
        | '\u{180B}'..='\u{180F}'       // mongolian selectors and separator
        | '\u{200B}'..='\u{200F}'       // zero-width, LRM/RLM
        | '\u{2028}'..='\u{202E}'       // line/paragraph separators, bidi embeddings/overrides
        | '\u{2060}'..='\u{206F}'       // word joiner, invisible operators, isolates
        | '\u{FE00}'..='\u{FE0F}'       // variation selectors
        | '\u{FEFF}'                    // BOM / zero-width no-break space
        | '\u{FFF9}'..='\u{FFFB}'       // interlinear annotations
        | '\u{1BCA0}'..='\u{1BCA3}'     // shorthand format controls
        | '\u{1D173}'..='\u{1D17A}'     // musical format controls
        | '\u{E0000}'..='\u{E0FFF}'     // tags, variation selectors supplement
    ) || (c.is_control() && c != '\t')
        || (c.is_whitespace() && c != ' ' && c != '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_is_one_visible_line() {
        assert_eq!(shown("a\nb`c"), "a\\u{000A}b'c");
        assert_eq!(shown("\u{202E}x"), "\\u{202E}x");
        let long = "x".repeat(100);
        assert_eq!(shown(&long).len(), MAX_SHOWN + 3);
    }

    #[test]
    fn invisible_covers_spaces_and_bidi() {
        for c in ['\u{00A0}', '\u{3000}', '\u{200B}', '\u{202E}', '\u{2066}', '\u{FEFF}', '\r', '\u{0085}'] {
            assert!(is_invisible(c), "{c:?}");
        }
        for c in ['a', 'é', '中', ' ', '\t', '；'] {
            assert!(!is_invisible(c), "{c:?}");
        }
    }
}
