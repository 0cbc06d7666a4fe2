//! Which files a file tool writes (`plangate_gate::paths`), the input any
//! text: a Codex `apply_patch` body, and a `write` call whose `file_path`
//! and `path` are the two halves of the input (split at the first NUL, or
//! in the middle).
//!
//! Beyond "no panic": every path returned is non-empty (an empty path
//! would fall outside every scope check's idea of a file).
#![no_main]

use libfuzzer_sys::fuzz_target;
use plangate_gate::paths::written_paths;
use serde_json::json;

fn check(tool: &str, input: &serde_json::Value) {
    if let Some(Ok(paths)) = written_paths(tool, input) {
        assert!(!paths.is_empty(), "{tool} with {input} writes Ok(no path)");
        for path in &paths {
            assert!(!path.is_empty(), "{tool} with {input} returned an empty path among {paths:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    check("apply_patch", &json!({ "command": text }));
    let (a, b) = match text.split_once('\0') {
        Some(halves) => halves,
        None => text.split_at(text.char_indices().nth(text.chars().count() / 2).map_or(text.len(), |(i, _)| i)),
    };
    check("write", &json!({ "file_path": a, "path": b }));
    check("write", &json!({ "path": b }));
});
