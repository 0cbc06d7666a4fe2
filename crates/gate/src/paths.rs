//! Which files a file tool call writes, as the harness wrote them.
//!
//! A plan may declare the paths it touches (its scope); once it is
//! approved, the gate holds every file tool to it. This module knows the
//! file tools of each harness and where their input names the files:
//!
//! | tool | files |
//! |---|---|
//! | `Write`, `Edit`, `MultiEdit` (Claude Code) | `file_path` |
//! | `write`, `edit` (OpenClaw) | `file_path` and `path`: when both are there they must name the same file |
//! | `NotebookEdit` (Claude Code) | `notebook_path` |
//! | `apply_patch` (Codex; the patch in `command`, `input` or `patch`, the same text in each that is there) | every file the patch adds, updates, deletes or moves to, read as Codex reads it ([`read_patch`]) |
//!
//! The paths come back exactly as written: relative to the agent's working
//! directory, absolute, or with `..`. Normalizing them is the caller's job
//! (the hook resolves links on the agent's machine; the server never trusts
//! a path it cannot normalize).
//!
//! # Reading a patch as Codex does
//!
//! The rule is one-sided: plangate must never say a patch writes fewer
//! files than Codex would write with it. A reader that is stricter than
//! Codex's misses what Codex applies (an indented `*** Add File:` header
//! that Codex trims and plangate did not: issue 47), so [`read_patch`]
//! follows Codex's own parser line by line, and when it cannot be sure it
//! reads a patch as Codex does — a patch Codex refuses, a path Codex
//! rewrites — it returns an error, which a scope check denies (fail
//! closed).
//!
//! It follows `codex-rs/apply-patch` (`parser.rs`, the envelope, and
//! `streaming_parser.rs`, the lines) of Codex CLI 0.169.0, the client
//! plangate's tests pin. The upstream repository was too large to fetch
//! whole here, so the rules come from the published copies of those two
//! files around that release, and every one of them was checked against
//! the 0.169.0 binary itself: `tests/e2e/patch_differential.rs` applies a
//! corpus of patches (`tests/fixtures/apply_patch/`) with the real
//! `codex --codex-run-as-apply-patch` and fails when Codex writes a file
//! this reader does not name. No Codex code is copied here.
//!
//! What Codex 0.169.0 does, and so this reader:
//!
//! - The patch is trimmed as a whole, then split into lines (`\n`, with a
//!   `\r` before it dropped: CRLF works; a lone `\r` does not end a line).
//! - Its first line, trimmed, is `*** Begin Patch` and its last, trimmed,
//!   `*** End Patch`. Otherwise it may be wrapped in a heredoc: a first line
//!   that is exactly `<<EOF`, `<<'EOF'` or `<<"EOF"`, a last line ending in
//!   `EOF`, at least four lines, and inside them the same envelope.
//! - Outside an update hunk a line is trimmed (any Unicode whitespace, both
//!   ends) before it is matched: a header `*** Add File: `, `*** Delete
//!   File: ` or `*** Update File: ` (the space after the colon belongs to
//!   the marker; the path is the rest, so it keeps any further leading
//!   blanks and loses its trailing ones), or `*** End Patch`. An add hunk's
//!   lines start with `+` (content: a `+*** Add File: x` line is text, not
//!   a header); a delete hunk has none.
//! - Before the first hunk, `*** Environment ID:` sends the patch to
//!   another environment: plangate cannot see that machine's files, so it
//!   refuses such a patch.
//! - Inside an update hunk a line is matched with only its end trimmed: a
//!   header or `*** End Patch` must start at the beginning of the line (an
//!   indented one is a context line if it starts with a space, else an
//!   error). `*** Move to: ` counts only before the hunk's first change
//!   line, once; `@@` or `@@ context` opens a change (not twice in a row
//!   without lines between), `*** End of File` closes one, and the lines of
//!   a change start with ` `, `+` or `-` (or are empty). Anything else is an
//!   error, and an update hunk without a change line is one too.
//! - After `*** End Patch` only blank lines may follow.
//! - A patch with no hunk writes nothing ("No files were modified.").
//! - Codex drops tabs and carriage returns from a path before it writes
//!   (`src/.\r./x` writes `x`), so a path with any control character is
//!   refused rather than guessed at.

use serde_json::Value;

/// The file tools whose target is a field of their input, and the fields
/// that may name it (every one present must name the same file).
const PATH_FIELDS: &[(&str, &[&str])] = &[
    ("Write", &["file_path"]),
    ("Edit", &["file_path"]),
    ("MultiEdit", &["file_path"]),
    ("NotebookEdit", &["notebook_path"]),
    ("write", &["file_path", "path"]),
    ("edit", &["file_path", "path"]),
];

/// The tools that apply a patch, and the input fields that may carry it.
const PATCH_TOOLS: &[&str] = &["apply_patch"];
const PATCH_FIELDS: &[&str] = &["command", "input", "patch"];

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File: ";
const DELETE_FILE: &str = "*** Delete File: ";
const UPDATE_FILE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";
const ENVIRONMENT_ID: &str = "*** Environment ID:";
const HEREDOC_OPENERS: &[&str] = &["<<EOF", "<<'EOF'", "<<\"EOF\""];

/// Why the files of a file tool call cannot be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathsError {
    /// The input does not name a file where the tool takes one.
    Missing(&'static str),
    /// A patch that names no file.
    EmptyPatch,
    /// Two fields of the input name different files (OpenClaw's `write`
    /// with `file_path` inside the scope and `path` outside).
    Disagree {
        /// The first field present.
        field: &'static str,
        /// The file it names.
        value: String,
        /// A later field naming another file.
        other_field: &'static str,
        /// That other file.
        other: String,
    },
    /// A patch Codex would refuse, or one plangate cannot read the way
    /// Codex does.
    Patch {
        /// The line at fault, from 1, in the text as sent.
        line: usize,
        /// What is wrong with it, for the agent.
        problem: &'static str,
    },
}

impl std::fmt::Display for PathsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::text::shown;
        match self {
            PathsError::Missing(field) => write!(f, "the call names no file (`{field}` missing or not a string)"),
            PathsError::EmptyPatch => write!(f, "the patch names no file (no `*** Add/Update/Delete File:` line)"),
            PathsError::Disagree { field, value, other_field, other } => write!(
                f,
                "the call names two different files (`{field}`: {}, `{other_field}`: {}); send one of the fields, or the same path in both",
                shown(value),
                shown(other)
            ),
            PathsError::Patch { line, problem } => write!(
                f,
                "line {line} of the patch: {problem}. plangate reads a patch as Codex does and refuses one it cannot read that way: fix the patch and send it again"
            ),
        }
    }
}

impl std::error::Error for PathsError {}

/// What a patch does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchChange {
    /// `*** Add File:` (creates it, or overwrites it).
    Add,
    /// `*** Delete File:`.
    Delete,
    /// `*** Update File:` (and, when it moves, removes it).
    Update,
    /// `*** Move to:` after an update: where the updated file goes.
    MoveTo,
}

/// One file a patch writes, with its path as the patch names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// What the patch does to it.
    pub change: PatchChange,
    /// The path as the patch names it (relative, absolute, with `..`).
    pub path: String,
}

/// Whether `tool` is a file tool this module knows.
pub fn is_file_tool(tool: &str) -> bool {
    PATH_FIELDS.iter().any(|(t, _)| *t == tool) || PATCH_TOOLS.contains(&tool)
}

/// The files `tool` writes with `input`: `None` for a tool that is not a
/// file tool, `Some(Err)` for a file tool whose files cannot be told (a
/// scope check must then deny).
pub fn written_paths(tool: &str, input: &Value) -> Option<Result<Vec<String>, PathsError>> {
    if let Some((_, fields)) = PATH_FIELDS.iter().find(|(t, _)| *t == tool) {
        return Some(one_text(input, fields).map(|p| vec![p.to_string()]));
    }
    if PATCH_TOOLS.contains(&tool) {
        let files = patch_text(input).and_then(read_patch);
        return Some(files.map(|files| files.into_iter().map(|f| f.path).collect()));
    }
    None
}

/// The patch of a patch tool's `input` (`command`, `input` or `patch`;
/// the same text in every one of them that is there).
pub fn patch_text(input: &Value) -> Result<&str, PathsError> {
    one_text(input, PATCH_FIELDS)
}

/// The text `fields` of `input` hold: every field present (a `null` is
/// absent) must be a string, and they must all be the same one, since
/// which of them the tool reads is not ours to guess.
fn one_text<'a>(input: &'a Value, fields: &[&'static str]) -> Result<&'a str, PathsError> {
    let mut found: Option<(&'static str, &'a str)> = None;
    for &field in fields {
        let text = match input.get(field) {
            None | Some(Value::Null) => continue,
            Some(value) => value.as_str().ok_or(PathsError::Missing(field))?,
        };
        match found {
            None => found = Some((field, text)),
            Some((first, seen)) if seen != text => {
                return Err(PathsError::Disagree { field: first, value: seen.to_string(), other_field: field, other: text.to_string() })
            }
            Some(_) => {}
        }
    }
    found.map(|(_, text)| text).filter(|text| !text.is_empty()).ok_or(PathsError::Missing(fields[0]))
}

/// The files a Codex patch writes, in the order of the patch, read as
/// Codex 0.169.0 reads it (see the module docs); an error for a patch
/// Codex would refuse or plangate cannot read as Codex does.
pub fn read_patch(patch: &str) -> Result<Vec<PatchFile>, PathsError> {
    let text = patch.trim();
    // Line numbers count in the text as sent, before the leading blanks
    // went with the trim.
    let first_line = 1 + patch[..patch.len() - patch.trim_start().len()].matches('\n').count();
    let lines: Vec<&str> = text.lines().collect();
    let (envelope, skipped) = envelope(&lines).map_err(|(at, problem)| PathsError::Patch { line: first_line + at, problem })?;
    let number = |at: usize| first_line + skipped + at;
    let mut reader = Reader { mode: Mode::Hunks, files: Vec::new() };
    // The first line is `*** Begin Patch`, the last `*** End Patch`.
    let last = envelope.len() - 1;
    for (at, line) in envelope.iter().enumerate().take(last).skip(1) {
        // Codex splits the lines once more after joining them, dropping
        // one more `\r` before each `\n`.
        let line = line.strip_suffix('\r').unwrap_or(line);
        reader.line(line).map_err(|problem| PathsError::Patch { line: number(at), problem })?;
    }
    reader.close_update().map_err(|problem| PathsError::Patch { line: number(last), problem })?;
    if reader.files.is_empty() {
        return Err(PathsError::EmptyPatch);
    }
    Ok(reader.files)
}

/// The lines from `*** Begin Patch` to `*** End Patch`, and how many lines
/// came before them (1 inside a heredoc); or the index of the line at
/// fault and why.
fn envelope<'a>(lines: &'a [&'a str]) -> Result<(&'a [&'a str], usize), (usize, &'static str)> {
    if let Some(fault) = envelope_fault(lines) {
        if let [first, .., last] = lines {
            if HEREDOC_OPENERS.contains(first) && last.ends_with("EOF") && lines.len() >= 4 {
                let inner = &lines[1..lines.len() - 1];
                return match envelope_fault(inner) {
                    None => Ok((inner, 1)),
                    Some((at, problem)) => Err((at + 1, problem)),
                };
            }
        }
        return Err(fault);
    }
    Ok((lines, 0))
}

/// Why `lines` do not run from `*** Begin Patch` to `*** End Patch`.
fn envelope_fault(lines: &[&str]) -> Option<(usize, &'static str)> {
    let first = lines.first().map(|l| l.trim());
    if first != Some(BEGIN_PATCH) {
        return Some((0, "the patch does not start with `*** Begin Patch`"));
    }
    if lines.len() < 2 || lines.last().map(|l| l.trim()) != Some(END_PATCH) {
        return Some((lines.len().saturating_sub(1), "the patch does not end with `*** End Patch`"));
    }
    None
}

/// Where the reader is in a patch.
enum Mode {
    /// After `*** Begin Patch`, before the first hunk.
    Hunks,
    Add,
    Delete,
    Update(Update),
    /// After `*** End Patch`.
    Ended,
}

/// What an update hunk has had so far.
#[derive(Default)]
struct Update {
    moved: bool,
    /// Changes (`@@`, or lines before any) opened.
    changes: usize,
    /// The last change has no line yet.
    last_empty: bool,
    /// The last change ended with `*** End of File`.
    last_at_end: bool,
}

struct Reader {
    mode: Mode,
    files: Vec<PatchFile>,
}

impl Reader {
    /// One line between the envelope's, without its line ending.
    fn line(&mut self, line: &str) -> Result<(), &'static str> {
        let trimmed = line.trim();
        match self.mode {
            Mode::Hunks if trimmed.starts_with(ENVIRONMENT_ID) => {
                Err("`*** Environment ID:` sends the patch to another environment, whose files plangate cannot check; leave the line out")
            }
            Mode::Hunks | Mode::Delete => match self.header(trimmed)? {
                true => Ok(()),
                false => {
                    Err("a line that is not a file header (`*** Add File: `, `*** Update File: `, `*** Delete File: `) where one must be")
                }
            },
            Mode::Add => match self.header(trimmed)? || line.starts_with('+') {
                true => Ok(()),
                false => Err("a line of an added file that does not start with `+`"),
            },
            Mode::Update(_) => {
                let line_end_trimmed = line.trim_end();
                if self.header(line_end_trimmed)? {
                    return Ok(());
                }
                self.update_line(line, line_end_trimmed)
            }
            Mode::Ended if trimmed.is_empty() => Ok(()),
            Mode::Ended => Err("text after `*** End Patch`"),
        }
    }

    /// A file header or `*** End Patch` (`false` when `line` is neither).
    fn header(&mut self, line: &str) -> Result<bool, &'static str> {
        let (change, path) = if line == END_PATCH {
            self.close_update()?;
            self.mode = Mode::Ended;
            return Ok(true);
        } else if let Some(path) = line.strip_prefix(ADD_FILE) {
            (PatchChange::Add, path)
        } else if let Some(path) = line.strip_prefix(DELETE_FILE) {
            (PatchChange::Delete, path)
        } else if let Some(path) = line.strip_prefix(UPDATE_FILE) {
            (PatchChange::Update, path)
        } else {
            return Ok(false);
        };
        self.close_update()?;
        self.push(change, path)?;
        self.mode = match change {
            PatchChange::Add => Mode::Add,
            PatchChange::Delete => Mode::Delete,
            PatchChange::Update | PatchChange::MoveTo => Mode::Update(Update::default()),
        };
        Ok(true)
    }

    /// A line of an update hunk that is not a header: `line` as it is,
    /// `end_trimmed` without its trailing blanks.
    fn update_line(&mut self, line: &str, end_trimmed: &str) -> Result<(), &'static str> {
        const NOT_A_CHANGE: &str =
            "a line of an update that does not start with ` `, `+`, `-` or `@@` (a file header here must start the line)";
        let Mode::Update(update) = &mut self.mode else { return Ok(()) };
        let opens_change = end_trimmed == "@@" || end_trimmed.starts_with("@@ ");
        if update.last_at_end {
            if end_trimmed.is_empty() {
                return Ok(());
            }
            if !opens_change {
                return Err("a line after `*** End of File` that does not open a change with `@@`");
            }
        }
        if update.changes == 0 && !update.moved {
            if let Some(to) = end_trimmed.strip_prefix(MOVE_TO) {
                update.moved = true;
                return self.push(PatchChange::MoveTo, to);
            }
        }
        let last_empty = update.changes > 0 && update.last_empty;
        if opens_change {
            if last_empty {
                return Err("`@@` right after another `@@`, with no line of the change between");
            }
            update.changes += 1;
            update.last_empty = true;
            update.last_at_end = false;
            return Ok(());
        }
        if end_trimmed == END_OF_FILE {
            if last_empty {
                return Err("`*** End of File` closing a change that has no line");
            }
            update.last_at_end = update.changes > 0;
            return Ok(());
        }
        if line.is_empty() || line.starts_with([' ', '+', '-']) {
            update.changes = update.changes.max(1);
            update.last_empty = false;
            return Ok(());
        }
        Err(NOT_A_CHANGE)
    }

    /// The end of an update hunk (at the next header or the end of the
    /// patch): Codex refuses one without a change line.
    fn close_update(&self) -> Result<(), &'static str> {
        match &self.mode {
            Mode::Update(update) if update.changes == 0 => Err("an `*** Update File:` hunk without a change"),
            Mode::Update(update) if update.last_empty => Err("a change (`@@`) without a line"),
            _ => Ok(()),
        }
    }

    fn push(&mut self, change: PatchChange, path: &str) -> Result<(), &'static str> {
        if path.is_empty() {
            return Err("a file header without a path");
        }
        if path.chars().any(char::is_control) {
            return Err("a path with a tab, a carriage return or another control character, which Codex drops or keeps as it pleases; name the file without it");
        }
        self.files.push(PatchFile { change, path: path.to_string() });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn patch(text: &str) -> Result<Vec<String>, PathsError> {
        written_paths("apply_patch", &json!({ "command": text })).expect("a file tool")
    }

    fn refused(text: &str) -> bool {
        matches!(patch(text), Err(PathsError::Patch { .. }))
    }

    #[test]
    fn each_harness_names_its_files_its_own_way() {
        let one = |tool, input| written_paths(tool, &input).unwrap().unwrap();
        assert_eq!(one("Write", json!({"file_path": "/p/src/a.rs", "content": ""})), ["/p/src/a.rs"]);
        assert_eq!(one("NotebookEdit", json!({"notebook_path": "n.ipynb"})), ["n.ipynb"]);
        assert_eq!(one("edit", json!({"path": "b.rs"})), ["b.rs"]);
        let text = "*** Begin Patch\n*** Add File: src/x.rs\n+a\n*** Update File: src/y.rs\n*** Move to: ../z.rs\n@@\n-a\n+b\n*** Delete File: w.rs\n*** End Patch\n";
        assert_eq!(one("apply_patch", json!({"command": text})), ["src/x.rs", "src/y.rs", "../z.rs", "w.rs"]);
        assert_eq!(written_paths("Read", &json!({"file_path": "a"})), None);
        assert_eq!(written_paths("Write", &json!({"content": "x"})), Some(Err(PathsError::Missing("file_path"))));
        assert_eq!(patch("rm -rf /"), Err(PathsError::Patch { line: 1, problem: "the patch does not start with `*** Begin Patch`" }));
    }

    #[test]
    fn indented_and_tabbed_headers_are_headers() {
        let text = "*** Begin Patch\n*** Add File: src/ok.rs\n+ok\n  *** Add File: .github/workflows/evil.yml\n+on: push\n\t*** Delete File: Cargo.toml\n \t*** Update File: build.rs\n@@\n-a\n+b\n*** End Patch";
        assert_eq!(patch(text).unwrap(), ["src/ok.rs", ".github/workflows/evil.yml", "Cargo.toml", "build.rs"]);
        // Unicode whitespace is trimmed too (a no-break space).
        assert_eq!(patch("*** Begin Patch\n\u{a0}*** Add File: x.yml\n+a\n*** End Patch").unwrap(), ["x.yml"]);
        // So are the envelope's lines.
        assert_eq!(patch("  *** Begin Patch \n*** Add File: a\n+a\n\t*** End Patch\t\n").unwrap(), ["a"]);
    }

    #[test]
    fn in_an_update_hunk_a_header_starts_the_line() {
        // Indented by a space it is a context line of the update (Codex
        // then looks for it in the file), so it writes no file of its own.
        let spaced = "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n  *** Add File: b\n+z\n*** End Patch";
        assert_eq!(patch(spaced).unwrap(), ["a"]);
        // By a tab it is neither: Codex refuses the patch.
        assert!(refused("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n\t*** Add File: b\n+z\n*** End Patch"));
        // At the start of the line it is a header, with blanks after it.
        assert_eq!(patch("*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Add File: b \t\n+z\n*** End Patch").unwrap(), ["a", "b"]);
    }

    #[test]
    fn crlf_line_endings() {
        let text = "*** Begin Patch\r\n*** Add File: a.rs\r\n+a\r\n*** Update File: b.rs\r\n*** Move to: c.rs\r\n@@\r\n-x\r\n+y\r\n*** End Patch\r\n";
        assert_eq!(patch(text).unwrap(), ["a.rs", "b.rs", "c.rs"]);
        // A lone carriage return ends no line.
        assert!(refused("*** Begin Patch\r*** Add File: a\r+a\r*** End Patch"));
    }

    #[test]
    fn a_heredoc_wrapped_patch() {
        assert_eq!(patch("<<'EOF'\n*** Begin Patch\n*** Add File: a\n+a\n*** End Patch\nEOF\n").unwrap(), ["a"]);
        assert_eq!(patch("<<EOF\n  *** Begin Patch\n*** Delete File: b\n  *** End Patch  \n  EOF").unwrap(), ["b"]);
        assert_eq!(patch("<<\"EOF\"\n*** Begin Patch\n*** Delete File: b\n*** End Patch\nEOF").unwrap(), ["b"]);
        // Only those three openers, exactly, and the envelope inside.
        assert!(refused("<<'EOF' \n*** Begin Patch\n*** Add File: a\n+a\n*** End Patch\nEOF"));
        assert!(refused("<<PATCH\n*** Begin Patch\n*** Add File: a\n+a\n*** End Patch\nPATCH"));
        assert!(refused("<<EOF\n*** Add File: a\n+a\n*** End Patch\nEOF"));
    }

    #[test]
    fn move_to_only_right_after_an_update_header() {
        assert_eq!(patch("*** Begin Patch\n*** Update File: a\n*** Move to: b  \n@@\n-x\n+y\n*** End Patch").unwrap(), ["a", "b"]);
        // Indented, it is a context line, not a move.
        assert_eq!(patch("*** Begin Patch\n*** Update File: a\n  *** Move to: b\n@@\n-x\n+y\n*** End Patch").unwrap(), ["a"]);
        // After an add hunk, or a second time, Codex refuses it.
        assert!(refused("*** Begin Patch\n*** Add File: a\n+a\n*** Move to: b\n*** End Patch"));
        assert!(refused("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Move to: c\n@@\n-x\n*** End Patch"));
        assert!(refused("*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Move to: b\n*** End Patch"));
        let files = read_patch("*** Begin Patch\n*** Update File: a\n*** Move to: b\n-x\n+y\n*** End Patch").unwrap();
        assert_eq!(files.iter().map(|f| f.change).collect::<Vec<_>>(), [PatchChange::Update, PatchChange::MoveTo]);
    }

    #[test]
    fn paths_keep_their_leading_blanks_and_lose_their_trailing_ones() {
        assert_eq!(
            patch("*** Begin Patch\n*** Add File: a.rs   \n+a\n*** Add File:   b.rs\n+b\n*** End Patch").unwrap(),
            ["a.rs", "  b.rs"]
        );
        // Without the space after the colon it is no header.
        assert!(refused("*** Begin Patch\n*** Add File:a\n+a\n*** End Patch"));
        assert!(refused("*** Begin Patch\n*** Add File: \n+a\n*** End Patch"));
    }

    #[test]
    fn a_path_with_a_control_character_is_refused() {
        // Codex writes `src/.\r./top` as `src/../top`, outside `src`.
        for text in ["*** Add File: src/.\r./top\n+t", "*** Add File: src/\t../t\n+t", "*** Delete File: a\u{1b}b"] {
            assert!(refused(&format!("*** Begin Patch\n{text}\n*** End Patch")), "{text:?}");
        }
    }

    #[test]
    fn headers_inside_hunk_lines_are_content() {
        let text = "*** Begin Patch\n*** Add File: a\n+*** Add File: b\n*** Update File: c\n@@\n-x\n+*** Delete File: d\n *** Add File: e\n*** End Patch";
        assert_eq!(patch(text).unwrap(), ["a", "c"]);
    }

    #[test]
    fn end_of_file_and_what_follows_the_end() {
        let text = "*** Begin Patch\n*** Update File: a\n@@\n-y\n+w\n*** End of File\n\n@@ fn f\n-z\n*** End of File\n*** Add File: b\n+b\n*** End Patch";
        assert_eq!(patch(text).unwrap(), ["a", "b"]);
        assert!(refused("*** Begin Patch\n*** Update File: a\n@@\n-y\n*** End of File\n+w\n*** End Patch"));
        assert!(refused("*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch"));
        // Blank lines and a second end after the end; nothing else.
        assert_eq!(patch("*** Begin Patch\n*** Add File: a\n+a\n*** End Patch\n  \n*** End Patch").unwrap(), ["a"]);
        assert!(refused("*** Begin Patch\n*** Add File: a\n+a\n*** End Patch\n*** Add File: b\n+b\n*** End Patch"));
        assert!(refused("*** Begin Patch\n*** Add File: a\n+a\n"));
    }

    #[test]
    fn what_codex_refuses_in_update_hunks() {
        for text in [
            "*** Update File: a",
            "*** Update File: a\n@@",
            "*** Update File: a\n@@\n@@\n-x",
            "*** Update File: a\n@@\n-x\nno marker",
            "*** Update File: a\nno marker",
            "*** Update File: a\n*** Add File: b\n+b",
        ] {
            assert!(refused(&format!("*** Begin Patch\n{text}\n*** End Patch")), "{text:?}");
        }
        // Lines before any `@@` open a change, an empty line is one.
        assert_eq!(patch("*** Begin Patch\n*** Update File: a\n\n*** End Patch").unwrap(), ["a"]);
        assert_eq!(patch("*** Begin Patch\n*** Update File: a\n x\n-y\n+z\n@@ g\n-q\n*** End Patch").unwrap(), ["a"]);
    }

    #[test]
    fn an_empty_patch_and_an_environment() {
        assert_eq!(patch("*** Begin Patch\n*** End Patch"), Err(PathsError::EmptyPatch));
        assert_eq!(patch(""), Err(PathsError::Missing("command")));
        assert_eq!(patch("   \n"), Err(PathsError::Patch { line: 2, problem: "the patch does not start with `*** Begin Patch`" }));
        let error = patch("\n\n*** Begin Patch\n*** Environment ID: remote\n*** Add File: a\n+a\n*** End Patch").unwrap_err();
        assert!(matches!(error, PathsError::Patch { line: 4, .. }), "{error:?}");
        assert!(error.to_string().starts_with("line 4 of the patch: `*** Environment ID:`"), "{error}");
    }

    #[test]
    fn every_path_field_must_name_the_same_file() {
        let disagree = written_paths("write", &json!({"file_path": "src/a.rs", "path": ".github/x.yml"})).unwrap();
        assert_eq!(
            disagree,
            Err(PathsError::Disagree { field: "file_path", value: "src/a.rs".into(), other_field: "path", other: ".github/x.yml".into() })
        );
        assert!(disagree.unwrap_err().to_string().contains("`path`: .github/x.yml"));
        assert_eq!(written_paths("edit", &json!({"file_path": "a", "path": "a"})), Some(Ok(vec!["a".to_string()])));
        assert_eq!(written_paths("edit", &json!({"file_path": null, "path": "a"})), Some(Ok(vec!["a".to_string()])));
        assert_eq!(written_paths("edit", &json!({"file_path": 7, "path": "a"})), Some(Err(PathsError::Missing("file_path"))));
        assert!(matches!(written_paths("edit", &json!({"file_path": "", "path": "a"})), Some(Err(PathsError::Disagree { .. }))));
        // Claude Code's tools read their one field; a stray `path` is not theirs.
        assert_eq!(written_paths("Write", &json!({"file_path": "a", "path": "b"})), Some(Ok(vec!["a".to_string()])));
        // Patches too: two different patches in one call are refused.
        let two = json!({"command": "*** Begin Patch\n*** Delete File: a\n*** End Patch", "patch": "x"});
        assert!(matches!(written_paths("apply_patch", &two), Some(Err(PathsError::Disagree { .. }))));
    }

    /// Blanks Codex trims around a marker line: spaces, tabs, a no-break
    /// space, an ideographic space, a carriage return before the newline.
    fn blanks() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof![Just(' '), Just('\t'), Just('\u{a0}'), Just('\u{3000}')], 0..4)
            .prop_map(|chars| chars.into_iter().collect())
    }

    /// A hunk: an add (1), a delete (2) or an update, moved or not (0).
    fn hunk() -> impl Strategy<Value = (u8, String, Option<String>)> {
        let name = "[a-z]{1,6}(/[a-z.]{1,6}){0,2}";
        (0u8..3, name, proptest::option::of(name))
    }

    proptest! {
        /// Whatever blanks surround the marker lines, every file Codex
        /// reads a header for is named, or the patch is refused.
        #[test]
        fn blanks_around_markers_never_hide_a_file(
            hunks in proptest::collection::vec((hunk(), blanks(), blanks()), 1..6),
            around in proptest::collection::vec(blanks(), 4),
            crlf in any::<bool>(),
        ) {
            let mut lines = vec![format!("{}{BEGIN_PATCH}{}", around[0], around[1])];
            let mut expected = Vec::new();
            let mut after_update = false;
            for ((kind, path, to), before, after) in &hunks {
                let marker = [UPDATE_FILE, ADD_FILE, DELETE_FILE][usize::from(*kind)];
                lines.push(format!("{before}{marker}{path}{after}"));
                // In an update hunk a line with leading blanks is no header
                // (a context line, or an error): Codex writes no file for it.
                let header = !after_update || before.is_empty();
                if header {
                    expected.push(path.clone());
                }
                after_update = header && *kind == 0 || !header && after_update;
                match kind {
                    1 => lines.push("+content".to_string()),
                    2 => {}
                    _ if header => {
                        if let Some(to) = to {
                            lines.push(format!("{MOVE_TO}{to}{after}"));
                            expected.push(to.clone());
                        }
                        lines.extend(["@@".to_string(), "-old".to_string(), "+new".to_string()]);
                    }
                    _ => lines.push("+new".to_string()),
                }
            }
            lines.push(format!("{}{END_PATCH}{}", around[2], around[3]));
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            match patch(&text) {
                Ok(named) => {
                    for file in &expected {
                        prop_assert!(named.contains(file), "{file} not in {named:?} for {text:?}");
                    }
                }
                Err(PathsError::Patch { .. }) => {}
                Err(other) => prop_assert!(false, "{other:?} for {text:?}"),
            }
        }

        /// Without update hunks nothing is indented away: every file is
        /// named, exactly, whatever the blanks.
        #[test]
        fn adds_and_deletes_are_read_whatever_the_blanks(
            hunks in proptest::collection::vec((any::<bool>(), "[a-z]{1,8}", blanks(), blanks()), 1..6),
        ) {
            let mut text = String::from("*** Begin Patch\n");
            for (add, path, before, after) in &hunks {
                let marker = if *add { ADD_FILE } else { DELETE_FILE };
                text.push_str(&format!("{before}{marker}{path}{after}\n"));
                if *add {
                    text.push_str("+x\n");
                }
            }
            text.push_str("*** End Patch");
            let named = patch(&text).unwrap();
            prop_assert_eq!(named, hunks.iter().map(|h| h.1.clone()).collect::<Vec<_>>());
        }
    }
}
