//! Reason texts and character classes shared by the lexer and the tool checks,
//! and [`is_hidden_char`]: plangate's one list of hidden characters, which the
//! engine's plan cards reveal and the gate refuses.
//!
//! Reasons quote attacker-chosen text (tool names, command words) back to the
//! agent and into logs and chat cards, so `shown` makes that text one short,
//! visible, ASCII line: a newline or a bidi override in a tool name must not
//! forge a second line or reorder the reason.

use std::fmt::Write as _;

/// Appended to every command denial: what the agent can do about it.
pub(crate) const COMMAND_SUFFIX: &str = "plan mode allows only read-only commands until the plan is approved";

/// Appended to every tool denial.
pub(crate) const TOOL_SUFFIX: &str = "plan mode allows only read-only tools until the plan is approved";

/// Longest quoted fragment in a reason, in characters.
const MAX_SHOWN: usize = 60;

/// `reason` without the plan-mode advice the gate appends, for a caller that
/// knows the session is not in plan mode and gives its own advice.
pub fn without_plan_mode_advice(reason: &str) -> &str {
    [COMMAND_SUFFIX, TOOL_SUFFIX].iter().find_map(|suffix| reason.strip_suffix(suffix).and_then(|r| r.strip_suffix("; "))).unwrap_or(reason)
}

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
pub fn shown(s: &str) -> String {
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

/// Whether `c` changes how text reads without being visible itself: format
/// characters (zero-width spaces and joiners, soft hyphen, word joiner,
/// invisible operators, BOM, interlinear annotations, shorthand, musical and
/// Egyptian format controls, Arabic and Syriac marks), bidi embeddings,
/// overrides, isolates and marks, fillers that render blank (Hangul fillers,
/// Khmer inherent vowels, braille blank), variation selectors and Mongolian
/// selectors, tag characters, the line and paragraph separators U+2028/2029,
/// and control characters other than newline and tab.
///
/// The one list plangate uses for hidden text: plan cards reveal these
/// characters as `⟦U+XXXX⟧` (`plangate_engine::text::reveal`) and the gate
/// refuses them anywhere in a command, quotes included, because the human
/// reviewing the text would read something other than what is there.
/// Some ranges include unassigned code points (U+2065, most of
/// U+E0000–E0FFF), so a format character assigned there later is covered.
pub fn is_hidden_char(c: char) -> bool {
    // Nearly every character an agent or a person writes is ASCII: one
    // comparison instead of the ranges below (2.8 % of a decision's
    // instructions went here, docs/PERFORMANCE.md §23).
    if c.is_ascii() {
        return c.is_ascii_control() && c != '\n' && c != '\t';
    }
    matches!(c,
        '\u{00AD}'                      // soft hyphen
        | '\u{034F}'                    // combining grapheme joiner
        | '\u{0600}'..='\u{0605}'       // arabic number signs (prepended format)
        | '\u{061C}'                    // arabic letter mark
        | '\u{06DD}'                    // arabic end of ayah
        | '\u{070F}'                    // syriac abbreviation mark
        | '\u{0890}' | '\u{0891}'       // arabic pound/piastre marks above
        | '\u{08E2}'                    // arabic disputed end of ayah
        | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // hangul fillers
        | '\u{17B4}' | '\u{17B5}'       // khmer inherent vowels
        | '\u{180B}'..='\u{180F}'       // mongolian variation selectors, vowel separator
        | '\u{200B}'..='\u{200F}'       // zero-width space/joiners, LRM/RLM
        | '\u{2028}'..='\u{202E}'       // line/paragraph separators, bidi embeddings/overrides
        | '\u{2060}'..='\u{206F}'       // word joiner, invisible operators, U+2065, isolates, deprecated
        | '\u{2800}'                    // braille pattern blank
        | '\u{FE00}'..='\u{FE0F}'       // variation selectors
        | '\u{FEFF}'                    // BOM / zero-width no-break space
        | '\u{FFF9}'..='\u{FFFB}'       // interlinear annotations
        | '\u{110BD}' | '\u{110CD}'     // kaithi number signs
        | '\u{13430}'..='\u{1343F}'     // egyptian hieroglyph format controls
        | '\u{1BCA0}'..='\u{1BCA3}'     // shorthand format controls
        | '\u{1D173}'..='\u{1D17A}'     // musical format controls
        | '\u{E0000}'..='\u{E0FFF}'     // tags, variation selectors supplement
    ) || (c.is_control() && c != '\n' && c != '\t')
}

/// What the gate refuses even inside quotes: every [hidden character](is_hidden_char),
/// newlines, and Unicode spaces other than the ASCII space and tab. Those
/// spaces are visible, so cards show them as they are, but in a command they
/// are look-alikes of the word separator they are not.
pub(crate) fn is_invisible(c: char) -> bool {
    is_hidden_char(c) || c == '\n' || (c.is_whitespace() && c != ' ' && c != '\t')
}

/// Every hidden range the security issue names (both ends, and a middle
/// point where the range is wide), plus the other invisible and format
/// characters: hidden for cards, and refused by the gate even inside
/// single quotes. One table for every consumer's tests (this crate's, and
/// the engine's `reveal` on cards), so they cannot drift apart.
pub const NAMED_HIDDEN_RANGES: &[(char, char, &str)] = &[
    ('\u{2028}', '\u{2029}', "line and paragraph separators"),
    ('\u{FE00}', '\u{FE0F}', "variation selectors"),
    ('\u{2065}', '\u{2065}', "unassigned, in the invisible-operator block"),
    ('\u{180B}', '\u{180E}', "mongolian selectors and vowel separator"),
    ('\u{E0000}', '\u{E007F}', "tag characters"),
    ('\u{00AD}', '\u{00AD}', "soft hyphen"),
    ('\u{034F}', '\u{034F}', "combining grapheme joiner"),
    ('\u{061C}', '\u{061C}', "arabic letter mark"),
    ('\u{115F}', '\u{1160}', "hangul choseong/jungseong fillers"),
    ('\u{3164}', '\u{3164}', "hangul filler"),
    ('\u{FFA0}', '\u{FFA0}', "halfwidth hangul filler"),
    ('\u{FFF9}', '\u{FFFB}', "interlinear annotations"),
    ('\u{1D173}', '\u{1D17A}', "musical format controls"),
    ('\u{200B}', '\u{200F}', "zero-width characters, LRM/RLM"),
    ('\u{202A}', '\u{202E}', "bidi embeddings and overrides"),
    ('\u{2060}', '\u{206F}', "word joiner, invisible operators, isolates"),
    ('\u{FEFF}', '\u{FEFF}', "BOM"),
    ('\u{17B4}', '\u{17B5}', "khmer inherent vowels"),
    ('\u{1BCA0}', '\u{1BCA3}', "shorthand format controls"),
    ('\u{E0100}', '\u{E01EF}', "variation selectors supplement"),
    ('\u{2800}', '\u{2800}', "braille pattern blank"),
    ('\u{0600}', '\u{0605}', "arabic number signs"),
    ('\u{13430}', '\u{1343F}', "egyptian hieroglyph format controls"),
    ('\u{0000}', '\u{0008}', "C0 controls"),
    ('\u{007F}', '\u{009F}', "DEL and C1 controls"),
];

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

    fn points(lo: char, hi: char) -> Vec<char> {
        let mid = char::from_u32((lo as u32 + hi as u32) / 2).unwrap_or(lo);
        vec![lo, mid, hi]
    }

    #[test]
    fn ascii_is_hidden_only_as_a_control_other_than_newline_and_tab() {
        for c in (0u8..=0x7F).map(char::from) {
            assert_eq!(is_hidden_char(c), c.is_control() && c != '\n' && c != '\t', "{}", codepoint(c));
        }
    }

    #[test]
    fn hidden_table_for_cards_and_gate() {
        let policy = crate::Policy::default();
        for &(lo, hi, what) in NAMED_HIDDEN_RANGES {
            for c in points(lo, hi) {
                assert!(is_hidden_char(c), "{what}: {} is not hidden", codepoint(c));
                assert!(is_invisible(c), "{what}: {} passes the gate's quote check", codepoint(c));
                let command = format!("echo 'a{c}b'");
                let verdict = crate::check_command(&policy, &command);
                assert!(!verdict.is_allow(), "{what}: {command:?} allowed");
                assert!(verdict.reason().contains(&codepoint(c)), "{what}: {verdict}");
            }
        }
        // Visible text stays visible; newline and tab are layout, not hidden.
        for c in ['a', 'é', '中', 'ß', '😀', ' ', '\t', '\n', '\u{00A0}', '\u{3000}', '；'] {
            assert!(!is_hidden_char(c), "{} is hidden", codepoint(c));
        }
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
