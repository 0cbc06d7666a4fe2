//! Which files a file tool call writes, as the harness wrote them.
//!
//! A plan may declare the paths it touches (its scope); once it is
//! approved, the gate holds every file tool to it. This module knows the
//! file tools of each harness and where their input names the files:
//!
//! | tool | files |
//! |---|---|
//! | `Write`, `Edit`, `MultiEdit` (Claude Code), `write`, `edit` (OpenClaw) | `file_path` (or `path`) |
//! | `NotebookEdit` (Claude Code) | `notebook_path` |
//! | `apply_patch` (Codex; the patch in `command`, `input` or `patch`) | every `*** Add File:`, `*** Update File:`, `*** Delete File:` and `*** Move to:` line |
//!
//! The paths come back exactly as written: relative to the agent's working
//! directory, absolute, or with `..`. Normalizing them is the caller's job
//! (the hook resolves links on the agent's machine; the server never trusts
//! a path it cannot normalize).

use serde_json::Value;

/// The file tools whose target is one field of their input, and the fields
/// that may name it (the first present wins).
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

/// The headers of a patch that name a file it writes.
const PATCH_HEADERS: &[&str] = &["*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"];

/// Why the files of a file tool call cannot be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathsError {
    /// The input does not name a file where the tool takes one.
    Missing(&'static str),
    /// A patch that names no file.
    EmptyPatch,
}

impl std::fmt::Display for PathsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathsError::Missing(field) => write!(f, "the call names no file (`{field}` missing or not a string)"),
            PathsError::EmptyPatch => write!(f, "the patch names no file (no `*** Add/Update/Delete File:` line)"),
        }
    }
}

impl std::error::Error for PathsError {}

/// Whether `tool` is a file tool this module knows.
pub fn is_file_tool(tool: &str) -> bool {
    PATH_FIELDS.iter().any(|(t, _)| *t == tool) || PATCH_TOOLS.contains(&tool)
}

/// The files `tool` writes with `input`: `None` for a tool that is not a
/// file tool, `Some(Err)` for a file tool whose files cannot be told (a
/// scope check must then deny).
pub fn written_paths(tool: &str, input: &Value) -> Option<Result<Vec<String>, PathsError>> {
    if let Some((_, fields)) = PATH_FIELDS.iter().find(|(t, _)| *t == tool) {
        let path = fields.iter().find_map(|f| input.get(*f).and_then(Value::as_str)).filter(|p| !p.is_empty());
        return Some(path.map(|p| vec![p.to_string()]).ok_or(PathsError::Missing(fields[0])));
    }
    if PATCH_TOOLS.contains(&tool) {
        let patch = PATCH_FIELDS.iter().find_map(|f| input.get(*f).and_then(Value::as_str)).unwrap_or_default();
        let paths: Vec<String> = patch
            .lines()
            .filter_map(|line| PATCH_HEADERS.iter().find_map(|h| line.strip_prefix(h)))
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect();
        return Some(if paths.is_empty() { Err(PathsError::EmptyPatch) } else { Ok(paths) });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_harness_names_its_files_its_own_way() {
        let one = |tool, input| written_paths(tool, &input).unwrap().unwrap();
        assert_eq!(one("Write", json!({"file_path": "/p/src/a.rs", "content": ""})), ["/p/src/a.rs"]);
        assert_eq!(one("NotebookEdit", json!({"notebook_path": "n.ipynb"})), ["n.ipynb"]);
        assert_eq!(one("edit", json!({"path": "b.rs"})), ["b.rs"]);
        let patch = "*** Begin Patch\n*** Add File: src/x.rs\n+a\n*** Update File: src/y.rs\n*** Move to: ../z.rs\n*** Delete File: w.rs\n*** End Patch\n";
        assert_eq!(one("apply_patch", json!({"command": patch})), ["src/x.rs", "src/y.rs", "../z.rs", "w.rs"]);
        assert_eq!(written_paths("Read", &json!({"file_path": "a"})), None);
        assert_eq!(written_paths("Write", &json!({"content": "x"})), Some(Err(PathsError::Missing("file_path"))));
        assert_eq!(written_paths("apply_patch", &json!({"command": "rm -rf /"})), Some(Err(PathsError::EmptyPatch)));
    }
}
