//! plangate's reading of a Codex patch against the real Codex: every patch
//! of `tests/fixtures/apply_patch/` is applied by the pinned Codex CLI
//! (`codex --codex-run-as-apply-patch PATCH`, the entry point its
//! `apply_patch` tool runs) in a scratch tree, and every file it created,
//! changed, deleted or moved must be one that
//! `plangate_gate::paths::written_paths` names — or plangate must refuse
//! the patch (the scope check then denies it: fail closed). A file Codex
//! writes and plangate does not name is a write past an approved plan's
//! scope (issue 47: an indented `*** Add File:` header).
//!
//! Each fixture is one patch, byte for byte (`.gitattributes` keeps CRLF,
//! tabs and carriage returns). Before it is applied, every file named after
//! an `*** Update File: ` or `*** Delete File: ` marker anywhere in a line
//! exists with the lines `x` and `y`, so the hunks (`-x`, `+z`) find what
//! they change. Codex runs in `root/work`; the whole of `root` is compared
//! before and after, so a patch that climbs out with `..` is seen too.
//!
//! The table also says what Codex 0.169.0 does with each patch and whether
//! plangate reads it, so that a reader refusing everything, or a Codex that
//! reads patches differently, fails here. Skips loudly without the client
//! (`.ci/install-clients`), fails instead under `PLANGATE_REQUIRE_ALL`.

use super::kit::fixture_path;
use plangate_testkit::clients;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::process::{Command, Stdio};

/// One patch of the corpus: whether Codex applies it (exit 0) and whether
/// plangate reads it (`Ok`) rather than refusing it.
struct Case {
    name: &'static str,
    codex_applies: bool,
    plangate_reads: bool,
}

const fn case(name: &'static str, codex_applies: bool, plangate_reads: bool) -> Case {
    Case { name, codex_applies, plangate_reads }
}

const CORPUS: &[Case] = &[
    case("blank_then_second_end", true, true),
    // Codex drops tabs and carriage returns from a path: `src/.\r./top.txt`
    // is `top.txt`.
    case("cr_in_path", true, false),
    case("crlf", true, true),
    case("delete_existing", true, true),
    // No hunk: "No files were modified."
    case("empty", false, false),
    case("end_of_file_marker", true, true),
    // The patch is for another environment, whose files plangate cannot see.
    case("environment_id", true, false),
    case("header_in_add_content", true, true),
    case("header_in_update_lines", true, true),
    case("heredoc", true, true),
    case("heredoc_padded_markers", true, true),
    case("indented_add_header", true, true),
    // An indented `*** Move to:` is a context line, which the file lacks.
    case("indented_move", false, true),
    case("indented_update_header", true, true),
    case("leading_space_path", true, true),
    case("move", true, true),
    case("move_to_new_dir", true, true),
    case("nbsp_indented_header", true, true),
    case("padded_begin_end", true, true),
    case("parent_dir", true, true),
    case("plain_add", true, true),
    case("plain_update", true, true),
    case("rejected_move_after_add", false, false),
    case("rejected_no_end", false, false),
    case("several_files", true, true),
    // Space-indented after an update hunk: a context line, not a header.
    case("space_indented_header_in_update", false, true),
    case("tab_delete_header", true, true),
    case("tab_in_path", true, false),
    case("tab_indented_header_after_update", false, false),
    case("text_after_end", false, false),
    case("trailing_whitespace_paths", true, true),
    case("unicode_names", true, true),
    case("update_without_context_marker", true, true),
];

#[test]
fn codex_writes_no_file_plangate_does_not_name() {
    let Some(codex) = clients::codex() else { return };
    let mut failures = Vec::new();
    for case in CORPUS {
        let path = fixture_path("apply_patch", &format!("{}.patch", case.name));
        let patch = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let root = tempfile::tempdir().expect("scratch dir");
        let work = root.path().join("work");
        std::fs::create_dir(&work).expect("work dir");
        for existing in files_it_changes(&patch) {
            let file = work.join(existing);
            std::fs::create_dir_all(file.parent().expect("a parent")).expect("parent dirs");
            std::fs::write(&file, "x\ny\n").expect("an existing file");
        }
        let before = tree(root.path());
        let home = tempfile::tempdir().expect("home");
        let out = Command::new(&codex.bin)
            .arg("--codex-run-as-apply-patch")
            .arg(&patch)
            .current_dir(&work)
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .expect("run codex");
        let touched = changed(&before, &tree(root.path()));
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let said = said.trim().replace('\n', " | ");
        if out.status.success() != case.codex_applies {
            failures.push(format!(
                "{}: Codex exited {} (the corpus says it {}): {said}",
                case.name,
                out.status,
                applies(case.codex_applies)
            ));
        }
        match plangate_gate::paths::written_paths("apply_patch", &json!({ "command": patch })) {
            Some(Ok(paths)) => {
                let named: Vec<Option<String>> = paths.iter().map(|p| under_root(p)).collect();
                for file in &touched {
                    if !named.iter().any(|n| n.as_deref() == Some(file.as_str())) {
                        failures.push(format!("{}: Codex wrote {file:?}, plangate named only {paths:?} ({said})", case.name));
                    }
                }
                if !case.plangate_reads {
                    failures.push(format!("{}: plangate read {paths:?}, the corpus says it refuses the patch", case.name));
                }
            }
            Some(Err(why)) if case.plangate_reads => failures.push(format!("{}: plangate refused the patch: {why}", case.name)),
            Some(Err(_)) => {}
            None => failures.push(format!("{}: plangate does not know `apply_patch` as a file tool", case.name)),
        }
    }
    assert!(failures.is_empty(), "{} of {} patches:\n{}", failures.len(), CORPUS.len(), failures.join("\n"));
}

#[test]
fn every_patch_of_the_corpus_is_in_the_table() {
    let dir = fixture_path("apply_patch", "");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/apply_patch")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".patch").map(str::to_string))
        .collect();
    on_disk.sort();
    let listed: Vec<String> = CORPUS.iter().map(|c| c.name.to_string()).collect();
    assert_eq!(on_disk, listed, "tests/fixtures/apply_patch/*.patch and CORPUS (in name order)");
}

fn applies(yes: bool) -> &'static str {
    if yes {
        "applies it"
    } else {
        "refuses it"
    }
}

/// The files a patch updates or deletes, found loosely (a marker anywhere
/// in a line, the path to the end of the line without trailing blanks), so
/// that they exist before Codex runs; independent of the reader under test.
fn files_it_changes(patch: &str) -> Vec<&str> {
    patch
        .split('\n')
        .filter_map(|line| {
            ["*** Update File: ", "*** Delete File: "].iter().find_map(|m| line.find(m).map(|at| line[at + m.len()..].trim_end()))
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// Every file below `root`, by its path relative to `root` (`/`-separated),
/// with its bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read a scratch dir") {
            let entry = entry.expect("an entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
            if entry.file_type().expect("a file type").is_dir() {
                walk(&entry.path(), &rel, out);
            } else {
                out.insert(rel, std::fs::read(entry.path()).expect("read a scratch file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, "", &mut out);
    out
}

/// The files created, changed or deleted between two trees.
fn changed(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut files: Vec<String> = before.keys().chain(after.keys()).filter(|k| before.get(*k) != after.get(*k)).cloned().collect();
    files.sort();
    files.dedup();
    files
}

/// A path of the patch (relative to `root/work`) relative to `root`,
/// `.` and `..` resolved lexically (the scratch tree has no links); `None`
/// for an absolute path or one that climbs out of `root`.
fn under_root(path: &str) -> Option<String> {
    let mut parts = vec!["work".to_string()];
    for component in Path::new(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(name) => parts.push(name.to_str()?.to_string()),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}
