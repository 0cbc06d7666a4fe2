//! Markdown as CommonMark reads it, for what plangate takes out of an
//! agent's text: a plan's title, summary and steps, and (in `plangate-agent`)
//! a Codex `<proposed_plan>` block.
//!
//! Reading line by line gets code wrong: a `# comment` in a shell block is
//! not a heading, `1. x` in a code block is not a step, and a tag in an
//! example is not the plan. So the structure comes from a CommonMark parser
//! (pulldown-cmark: pure, no I/O), and only these two functions expose it.
//! Texts are kept as the agent wrote them (inline markup included), each
//! line trimmed and the lines joined with spaces.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// A block at the top level of a document (not inside a quote or a list
/// item), with its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// `level` 1–6; ATX (`## x`) and setext (`x` over `---`) alike.
    Heading {
        level: usize,
        text: String,
    },
    Paragraph(String),
    /// An item of a top-level list. `text` is its own text, up to the first
    /// block inside it (a nested list, a code block…), which is detail.
    Item {
        ordered: bool,
        text: String,
    },
    /// Anything else: code, quote, table, HTML, rule.
    Other,
}

fn options() -> Options {
    Options::ENABLE_TABLES
}

/// The top-level blocks of `markdown`, in order. Items of a top-level list
/// come one by one; nothing inside a code block is ever a heading or an item.
pub fn blocks(markdown: &str) -> Vec<Block> {
    /// The block whose text is being collected.
    struct Open {
        /// How many containers were open when it started.
        depth: usize,
        kind: Kind,
        /// Source range of its inline content so far.
        span: Option<(usize, usize)>,
        /// Its text is complete (an item's first paragraph ended, or a nested
        /// block started); the block itself may go on.
        done: bool,
    }
    enum Kind {
        Heading(usize),
        Paragraph,
        Item(bool),
    }

    let mut out = Vec::new();
    // Open block containers; `Some(ordered)` for lists.
    let mut containers: Vec<Option<bool>> = Vec::new();
    let mut open: Option<Open> = None;
    for (event, range) in Parser::new_ext(markdown, options()).into_offset_iter() {
        match event {
            Event::Start(tag) if is_block(&tag) => {
                let depth = containers.len();
                let top_list = match containers.as_slice() {
                    [Some(ordered)] => Some(*ordered),
                    _ => None,
                };
                match (&tag, open.as_mut()) {
                    (Tag::Heading { level, .. }, _) if depth == 0 => {
                        open = Some(Open { depth, kind: Kind::Heading(*level as usize), span: None, done: false })
                    }
                    (Tag::Paragraph, _) if depth == 0 => open = Some(Open { depth, kind: Kind::Paragraph, span: None, done: false }),
                    (Tag::Item, _) if top_list.is_some() => {
                        open = Some(Open { depth, kind: Kind::Item(top_list.unwrap_or(false)), span: None, done: false })
                    }
                    // A loose item's text is its first paragraph.
                    (Tag::Paragraph, Some(o)) if depth == o.depth + 1 && o.span.is_none() && !o.done => {}
                    // Anything else inside an item ends the item's own text.
                    (_, Some(o)) if depth > o.depth => o.done = true,
                    (Tag::List(_), _) => {}
                    _ if depth == 0 => out.push(Block::Other),
                    _ => {}
                }
                containers.push(match tag {
                    Tag::List(start) => Some(start.is_some()),
                    _ => None,
                });
            }
            Event::End(end) if is_block_end(&end) => {
                containers.pop();
                let depth = containers.len();
                if let Some(o) = open.as_mut() {
                    if depth == o.depth + 1 && end == TagEnd::Paragraph {
                        o.done = true;
                    }
                }
                if let Some(o) = open.take_if(|o| o.depth == depth) {
                    let text = o.span.map(|(start, end)| one_line(&markdown[start..end])).unwrap_or_default();
                    out.push(match o.kind {
                        Kind::Heading(level) => Block::Heading { level, text },
                        Kind::Paragraph => Block::Paragraph(text),
                        Kind::Item(ordered) => Block::Item { ordered, text },
                    });
                }
            }
            Event::Rule => match open.as_mut() {
                Some(o) => o.done = true,
                None if containers.is_empty() => out.push(Block::Other),
                None => {}
            },
            _ => {
                // Inline content (text, code spans, emphasis, links, breaks).
                if let Some(o) = open.as_mut().filter(|o| !o.done) {
                    o.span = Some(match o.span {
                        Some((start, end)) => (start.min(range.start), end.max(range.end)),
                        None => (range.start, range.end),
                    });
                }
            }
        }
    }
    out
}

/// For each line of `text` (split at `\n`): whether it belongs to a fenced
/// code block, its fence lines included. An unclosed fence runs to the end.
pub fn fenced_lines(text: &str) -> Vec<bool> {
    let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let line_of = |offset: usize| starts.partition_point(|start| *start <= offset).saturating_sub(1);
    let mut fenced = vec![false; starts.len()];
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        if let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = event {
            let last = line_of(range.end.saturating_sub(1).max(range.start));
            for line in fenced.iter_mut().take(last + 1).skip(line_of(range.start)) {
                *line = true;
            }
        }
    }
    fenced
}

/// Trimmed lines, blank ones dropped, joined with single spaces.
fn one_line(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

fn is_block(tag: &Tag) -> bool {
    !matches!(
        tag,
        Tag::Emphasis | Tag::Strong | Tag::Strikethrough | Tag::Superscript | Tag::Subscript | Tag::Link { .. } | Tag::Image { .. }
    )
}

fn is_block_end(end: &TagEnd) -> bool {
    !matches!(
        end,
        TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Superscript | TagEnd::Subscript | TagEnd::Link | TagEnd::Image
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(ordered: bool, text: &str) -> Block {
        Block::Item { ordered, text: text.into() }
    }

    fn heading(level: usize, text: &str) -> Block {
        Block::Heading { level, text: text.into() }
    }

    #[test]
    fn top_level_blocks_with_their_text() {
        let md = "# Add retries #\n\nMake the client\n  resilient.\n\n## Steps\n1. Read **the** `client`\n2. Add backoff\n   - detail\n   \
                  continued detail\n- [ ] Test it\n\n> 1. quoted\n\n---\n\nTitle\n=====\n";
        assert_eq!(
            blocks(md),
            vec![
                heading(1, "Add retries"),
                Block::Paragraph("Make the client resilient.".into()),
                heading(2, "Steps"),
                item(true, "Read **the** `client`"),
                item(true, "Add backoff"),
                item(false, "[ ] Test it"),
                Block::Other,
                Block::Other,
                heading(1, "Title"),
            ]
        );
    }

    #[test]
    fn loose_items_and_items_that_go_on_after_a_block() {
        let md = "1. first\n   line two\n\n   more about first\n\n2. second\n\n   ```\n   code\n   ```\n\n3. ```\n   only code\n   ```\n";
        assert_eq!(blocks(md), vec![item(true, "first line two"), item(true, "second"), item(true, "")]);
    }

    #[test]
    fn nothing_in_a_code_block_is_a_heading_or_an_item() {
        let md = "## Steps\n\n```sh\n# comment\n1. not a step\n```\n\n    # indented code\n\n1. real\n";
        assert_eq!(blocks(md), vec![heading(2, "Steps"), Block::Other, Block::Other, item(true, "real")]);
    }

    #[test]
    fn fenced_lines_cover_fences_in_any_container_but_not_indented_code() {
        let text = "a\n```\nin\n```\nb\n\n    ```\n    indented, not a fence\nc\n- ~~~\n  in item\n  ~~~\n````\nunclosed";
        let fenced: Vec<usize> = fenced_lines(text).iter().enumerate().filter(|(_, f)| **f).map(|(i, _)| i + 1).collect();
        assert_eq!(fenced, vec![2, 3, 4, 10, 11, 12, 13, 14]);
        assert_eq!(fenced_lines(""), vec![false]);
        assert_eq!(fenced_lines("x\n"), vec![false, false]);
    }
}
