//! A plan's scope: the paths it says it touches, held to once approved.
//!
//! A plan may carry `"scope": {"paths": ["src/api/**", "tests/**"]}`: globs
//! relative to the session's working directory (in markdown, a `## Scope`
//! section of one glob per line). The card shows it ("Touches: …"). While
//! the approved plan executes, a file tool (`Write`, `Edit`, `MultiEdit`,
//! `NotebookEdit`, Codex's `apply_patch`, the others
//! [`plangate_gate::paths`] knows) that writes outside it is denied, naming
//! the scope, and an amendment asks people to widen it; approved, the
//! scope grows by those paths ([`crate::amendment`]).
//!
//! Paths are judged normalized, relative to the working directory
//! ([`Target`]). Links can only be resolved on the agent's machine, so the
//! hooks resolve each path there and send the result with the gate call;
//! a path that arrives unnormalized (`..`, an absolute path, a `.`
//! component) or that nobody normalized is judged lexically here, and
//! whatever leaves the working directory, or cannot be told to stay in
//! it, is outside.
//!
//! Shell commands are not path-checked: the gate cannot tell what files a
//! command writes. A scope narrows what file tools may do; it is not a
//! sandbox.

use serde::{Deserialize, Serialize};

/// At most this many globs in a scope.
pub const MAX_GLOBS: usize = 50;
/// At most this many characters in one glob.
pub const MAX_GLOB_CHARS: usize = 300;

/// `"scope"` of a plan.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// Globs relative to the session's working directory: `*` stays within
    /// a directory, `**` crosses them, a trailing `/` means everything
    /// below.
    pub paths: Vec<String>,
}

/// Why a glob cannot be a scope.
fn glob_problem(glob: &str) -> Option<&'static str> {
    if glob.trim().is_empty() {
        return Some("it is empty");
    }
    if glob.chars().count() > MAX_GLOB_CHARS {
        return Some("it is too long");
    }
    if glob.starts_with('/') || glob.starts_with('~') || glob.contains('\\') {
        return Some("it must be relative to the working directory, with `/` between directories");
    }
    if glob.split('/').any(|c| c == "..") {
        return Some("`..` would leave the working directory");
    }
    if glob.chars().any(char::is_control) {
        return Some("it contains a control character");
    }
    if compile(glob).is_err() {
        return Some("it is not a valid glob");
    }
    None
}

/// Why a declared scope was refused: the glob (empty for the list as a
/// whole) and the reason. A plan refuses it as
/// [`PlanError::InvalidScope`](crate::plan::PlanError::InvalidScope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeError {
    pub glob: String,
    pub why: String,
}

/// Check a declared scope: at least one glob, each relative and valid.
pub fn validate(scope: &Scope) -> Result<(), ScopeError> {
    if scope.paths.is_empty() || scope.paths.len() > MAX_GLOBS {
        return Err(ScopeError {
            glob: String::new(),
            why: format!("a scope lists 1 to {MAX_GLOBS} globs, this one {}", scope.paths.len()),
        });
    }
    for glob in &scope.paths {
        if let Some(why) = glob_problem(glob) {
            return Err(ScopeError { glob: glob.clone(), why: why.to_string() });
        }
    }
    Ok(())
}

/// `glob` as globset reads it: a trailing `/` covers everything below.
fn compile(glob: &str) -> Result<globset::GlobMatcher, globset::Error> {
    let glob = glob.trim();
    let glob = match glob.strip_suffix('/') {
        Some(dir) => format!("{dir}/**"),
        None => glob.to_string(),
    };
    // A backslash is a character of a file name here, never an escape: a
    // scope widened by the file `docs/a\*` covers that file alone
    // ([`literal`]), not `docs/a` and anything after it.
    Ok(globset::GlobBuilder::new(&glob).literal_separator(true).backslash_escape(false).build()?.compile_matcher())
}

/// Whether the normalized relative `path` is within `globs`. A glob that
/// does not compile (never stored: plans are validated) matches nothing.
pub fn within(globs: &[String], path: &str) -> bool {
    globs.iter().filter_map(|g| compile(g).ok()).any(|m| m.is_match(path))
}

/// The glob that stands for exactly `path` (its metacharacters escaped):
/// what widening the scope by one file adds.
pub fn literal(path: &str) -> String {
    globset::escape(path)
}

/// One file a call writes, normalized: what the hooks send with a gate
/// call (`"paths"` on `POST /v1/gate`) and what the gate judges.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Inside the working directory: the path relative to it, no `.` or
    /// `..` component, links resolved.
    Path(String),
    /// Outside it (or not to be told): the path as the call wrote it.
    Outside(String),
}

impl Target {
    /// The path as shown in a denial.
    pub fn shown(&self) -> &str {
        match self {
            Target::Path(p) | Target::Outside(p) => p,
        }
    }
}

/// Whether `path` is a normalized relative path: not empty, not absolute,
/// no empty, `.` or `..` component. Anything else claimed as
/// [`Target::Path`] is not trusted.
pub fn is_normalized(path: &str) -> bool {
    !path.is_empty() && !path.contains('\0') && path.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Normalize `raw` by its text alone: against `cwd` (absolute) when it is
/// known, else only a relative path can stay inside. No disk is read, so
/// links are not followed: the hooks do that on the agent's machine.
pub fn lexical(raw: &str, cwd: Option<&str>) -> Target {
    let outside = || Target::Outside(raw.to_string());
    let mut parts: Vec<&str> = Vec::new();
    let absolute = raw.starts_with('/');
    let base: Vec<&str> = match (absolute, cwd) {
        (false, _) => Vec::new(),
        (true, Some(cwd)) if cwd.starts_with('/') => match normalize_components(cwd, Vec::new()) {
            Some(b) => b,
            None => return outside(),
        },
        (true, _) => return outside(),
    };
    if !absolute {
        parts = normalize_components(raw, parts).unwrap_or_default();
        return if parts.is_empty() || !is_normalized(&parts.join("/")) { outside() } else { Target::Path(parts.join("/")) };
    }
    let Some(full) = normalize_components(raw, Vec::new()) else { return outside() };
    match full.strip_prefix(base.as_slice()) {
        Some(rest) if !rest.is_empty() => Target::Path(rest.join("/")),
        _ => outside(),
    }
}

/// `path`'s components after `start`, `.` and empty ones dropped and `..`
/// taking one back; `None` when a `..` would leave the start.
fn normalize_components<'a>(path: &'a str, mut parts: Vec<&'a str>) -> Option<Vec<&'a str>> {
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts)
}

/// What a scope check found wrong with a call's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfScope {
    /// Files inside the working directory but outside the scope: what an
    /// amendment may ask to widen it by.
    pub widen: Vec<String>,
    /// Files outside the working directory: never in any scope.
    pub outside: Vec<String>,
}

/// Hold `targets` (a file tool's files, normalized) to `globs`.
pub fn check(globs: &[String], targets: &[Target]) -> Result<(), OutOfScope> {
    let mut found = OutOfScope { widen: Vec::new(), outside: Vec::new() };
    for target in targets {
        match target {
            Target::Path(p) if !is_normalized(p) => found.outside.push(p.clone()),
            Target::Path(p) if within(globs, p) => {}
            Target::Path(p) => found.widen.push(p.clone()),
            Target::Outside(p) => found.outside.push(p.clone()),
        }
    }
    if targets.is_empty() {
        found.outside.push("(no file named)".to_string());
    }
    if found.widen.is_empty() && found.outside.is_empty() {
        Ok(())
    } else {
        Err(found)
    }
}

/// The `## Scope` section of a markdown plan: one glob a line (list
/// markers and backticks dropped). `None` when there is no such section.
pub fn from_markdown_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Option<Scope> {
    let mut in_scope = false;
    let mut found = false;
    let mut paths = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix('#') {
            in_scope = heading.trim_start_matches('#').trim().eq_ignore_ascii_case("scope");
            found |= in_scope;
            continue;
        }
        if !in_scope || trimmed.is_empty() {
            continue;
        }
        let glob = trimmed.trim_start_matches(['-', '*', '+']).trim().trim_matches('`').trim();
        if !glob.is_empty() {
            paths.push(glob.to_string());
        }
    }
    found.then_some(Scope { paths })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_by_directory() {
        let globs = vec!["src/api/**".to_string(), "tests/*.rs".to_string(), "docs/".to_string()];
        assert!(within(&globs, "src/api/v1/users.rs"));
        assert!(within(&globs, "tests/a.rs"));
        assert!(!within(&globs, "tests/deep/a.rs"));
        assert!(within(&globs, "docs/x/y.md"));
        assert!(!within(&globs, "src/payments/charge.rs"));
        assert!(within(&[literal("a[1].rs")], "a[1].rs"));
        assert!(!within(&[literal("a[1].rs")], "a1.rs"));
        for odd in ["docs/a\\*", "docs/{a,b}", "docs/a\\", "x?y", "[!a]", "a,.env"] {
            assert!(within(&[literal(odd)], odd), "{odd}");
            assert!(!within(&[literal(odd)], "docs/aXYZ") && !within(&[literal(odd)], ".env"), "{odd}");
        }
    }

    #[test]
    fn paths_are_normalized_or_outside() {
        let p = |s: &str| Target::Path(s.to_string());
        let o = |s: &str| Target::Outside(s.to_string());
        assert_eq!(lexical("src/./api/../api/x.rs", None), p("src/api/x.rs"));
        assert_eq!(lexical("../secrets", None), o("../secrets"));
        assert_eq!(lexical("src/../../x", None), o("src/../../x"));
        assert_eq!(lexical("/work/p/src/x.rs", Some("/work/p")), p("src/x.rs"));
        assert_eq!(lexical("/work/p/../q/x.rs", Some("/work/p")), o("/work/p/../q/x.rs"));
        assert_eq!(lexical("/work/pq/x.rs", Some("/work/p")), o("/work/pq/x.rs"));
        assert_eq!(lexical("/etc/passwd", None), o("/etc/passwd"));
        assert!(is_normalized("src/a.rs") && !is_normalized("src/../a.rs") && !is_normalized("/a") && !is_normalized("./a"));
    }

    #[test]
    fn scopes_are_relative_globs() {
        assert!(validate(&Scope { paths: vec!["src/**".into()] }).is_ok());
        for bad in ["/etc/**", "../x", "src/../../x", "", "a[", "~/x"] {
            assert!(validate(&Scope { paths: vec![bad.into()] }).is_err(), "{bad}");
        }
        assert!(validate(&Scope { paths: vec![] }).is_err());
    }

    #[test]
    fn a_markdown_scope_section() {
        let md = "# T\n## Steps\n1. a\n## Scope\n- `src/api/**`\ntests/**\n\n## Risks\n- x\n";
        assert_eq!(from_markdown_lines(md.lines()), Some(Scope { paths: vec!["src/api/**".into(), "tests/**".into()] }));
        assert_eq!(from_markdown_lines("# T\n1. a\n".lines()), None);
    }
}
