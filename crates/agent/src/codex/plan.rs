//! Codex's plan: the `<proposed_plan>…</proposed_plan>` block that ends a
//! plan-mode turn.
//!
//! The rules follow Codex's own parser: each tag stands on a line of its own
//! (surrounding whitespace allowed; a line with any other text is ordinary
//! text, so prose that *mentions* the tag does not open a block), tags inside
//! fenced code blocks are text, and when a message holds several blocks the
//! last one is the plan. Text outside the block is not part of the plan.
//! CRLF and lone CR line ends are read as LF, and the plan comes back with LF.
//!
//! What is a fenced code block is CommonMark's answer, from the same parser
//! the engine reads plan markdown with ([`plangate_engine::markdown`]), so a
//! fence means the same thing here and there.
//!
//! Anything ambiguous is an error rather than a guess: a block that is never
//! closed (a truncated message), a block opened inside another, an empty one.

use plangate_engine::markdown::fenced_lines;
use thiserror::Error;

pub const OPEN_TAG: &str = "<proposed_plan>";
pub const CLOSE_TAG: &str = "</proposed_plan>";

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodexError {
    #[error(
        "no <proposed_plan> block found: Codex ends a plan-mode turn with <proposed_plan> and </proposed_plan>, each on a line of its own"
    )]
    NoBlock,
    #[error("the <proposed_plan> block opened on line {line} is never closed with </proposed_plan> (is the message cut off?)")]
    Unterminated { line: usize },
    #[error(
        "<proposed_plan> on line {line} opens a block inside the one opened on line {outer}; close the first block before opening another"
    )]
    Nested { line: usize, outer: usize },
    #[error("the <proposed_plan> block on lines {start}–{end} is empty")]
    Empty { start: usize, end: usize },
}

/// The plan of a Codex message: the body of its last `<proposed_plan>` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexPlan {
    /// The block's text between the tag lines, LF line ends, trimmed of
    /// leading and trailing blank lines.
    pub markdown: String,
    /// 1-based line numbers of the opening and closing tags.
    pub open_line: usize,
    pub close_line: usize,
}

/// Extract the plan; see the module docs for the rules.
pub fn extract_proposed_plan(text: &str) -> Result<CodexPlan, CodexError> {
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut last: Option<CodexPlan> = None;
    // (line of the open tag, body lines so far)
    let mut open: Option<(usize, Vec<&str>)> = None;
    for (i, (line, fenced)) in normalized.split('\n').zip(fenced_lines(&normalized)).enumerate() {
        let number = i + 1;
        // Inside a fenced code block a tag is text.
        let tag = if fenced { "" } else { line.trim() };
        match (&mut open, tag) {
            (None, OPEN_TAG) => open = Some((number, Vec::new())),
            (Some((outer, _)), OPEN_TAG) => return Err(CodexError::Nested { line: number, outer: *outer }),
            (Some((start, body)), CLOSE_TAG) => {
                let markdown = body.join("\n").trim_matches('\n').trim_end().to_string();
                if markdown.trim().is_empty() {
                    return Err(CodexError::Empty { start: *start, end: number });
                }
                last = Some(CodexPlan { markdown, open_line: *start, close_line: number });
                open = None;
            }
            (Some((_, body)), _) => body.push(line),
            (None, _) => {}
        }
    }
    if let Some((line, _)) = open {
        return Err(CodexError::Unterminated { line });
    }
    last.ok_or(CodexError::NoBlock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<String, CodexError> {
        extract_proposed_plan(text).map(|p| p.markdown)
    }

    #[test]
    fn the_block_without_the_text_around_it() {
        let text = "I looked around.\n\n<proposed_plan>\n# Add retries\n\n1. Wrap the client\n</proposed_plan>\n\nTell me if that works.";
        assert_eq!(plan(text), Ok("# Add retries\n\n1. Wrap the client".to_string()));
        let p = extract_proposed_plan(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.open_line, p.close_line), (3, 7));
    }

    #[test]
    fn the_last_of_several_blocks() {
        let text = "<proposed_plan>\n# v1\n</proposed_plan>\nrevised:\n<proposed_plan>\n# v2\n</proposed_plan>\n";
        assert_eq!(plan(text), Ok("# v2".to_string()));
    }

    #[test]
    fn crlf_and_lone_cr_read_as_lf() {
        assert_eq!(plan("intro\r\n<proposed_plan>\r\n# T\r\n\r\n1. a\r\n</proposed_plan>\r\n"), Ok("# T\n\n1. a".to_string()));
        assert_eq!(plan("<proposed_plan>\r# T\r</proposed_plan>"), Ok("# T".to_string()));
    }

    #[test]
    fn indented_tags_count_but_inline_mentions_do_not() {
        assert_eq!(plan("  <proposed_plan>  \n# T\n\t</proposed_plan>"), Ok("# T".to_string()));
        let prose = "I will put the plan in a <proposed_plan> block.\n<proposed_plan>\n# Real\n</proposed_plan>";
        assert_eq!(plan(prose), Ok("# Real".to_string()));
        assert_eq!(plan("see <proposed_plan># T</proposed_plan> inline"), Err(CodexError::NoBlock));
    }

    /// Tags inside fenced code blocks are text. What a fence is, is
    /// CommonMark's answer: one inside a list item hides a tag too, an
    /// indented code line of backticks opens nothing, a shorter or different
    /// fence line does not close one, and an unclosed one runs to the end.
    #[test]
    fn tags_inside_code_fences_are_text() {
        let cases: &[(&str, Result<&str, CodexError>)] = &[
            ("Format:\n```\n<proposed_plan>\n# Example\n</proposed_plan>\n```\n<proposed_plan>\n# Mine\n</proposed_plan>", Ok("# Mine")),
            (
                "<proposed_plan>\n# T\n~~~md\n</proposed_plan>\n~~~\n1. a\n</proposed_plan>",
                Ok("# T\n~~~md\n</proposed_plan>\n~~~\n1. a"),
            ),
            (
                "- an example:\n\n  ```\n  <proposed_plan>\n  # Example\n  </proposed_plan>\n  ```\n\n<proposed_plan>\n# Mine\n</proposed_plan>",
                Ok("# Mine"),
            ),
            ("How fences look:\n\n    ```\n\n<proposed_plan>\n# Real\n</proposed_plan>", Ok("# Real")),
            (
                "````\n<proposed_plan>\n```\n~~~~\n</proposed_plan>\n````\n<proposed_plan>\n# After\n</proposed_plan>",
                Ok("# After"),
            ),
            ("<proposed_plan>\n# T\n```sh\n</proposed_plan>", Err(CodexError::Unterminated { line: 1 })),
        ];
        for (text, expected) in cases {
            assert_eq!(plan(text), expected.clone().map(str::to_string), "{text:?}");
        }
    }

    #[test]
    fn ambiguity_is_an_error() {
        assert_eq!(plan("no plan here"), Err(CodexError::NoBlock));
        assert_eq!(plan(""), Err(CodexError::NoBlock));
        assert_eq!(plan("x\n<proposed_plan>\n# cut off"), Err(CodexError::Unterminated { line: 2 }));
        assert_eq!(plan("<proposed_plan>\n# v1\n</proposed_plan>\n<proposed_plan>\n# v2 cut"), Err(CodexError::Unterminated { line: 4 }));
        assert_eq!(plan("<proposed_plan>\na\n<proposed_plan>\nb\n</proposed_plan>"), Err(CodexError::Nested { line: 3, outer: 1 }));
        assert_eq!(plan("<proposed_plan>\n \n</proposed_plan>"), Err(CodexError::Empty { start: 1, end: 3 }));
        assert_eq!(plan("</proposed_plan>\n"), Err(CodexError::NoBlock));
    }
}
