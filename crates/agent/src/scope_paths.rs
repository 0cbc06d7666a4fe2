//! The files a file tool writes, resolved on the agent's machine for the
//! approved plan's scope (`paths` on `POST /v1/gate`).
//!
//! A scope is a set of globs relative to the session's working directory
//! ([`plangate_engine::scope`]). plangate cannot see the agent's disk, so
//! only the hook can tell that `src/api/link` is a symlink to
//! `/etc/passwd`, or that `/home/dev/shop/src/x.rs` is inside the project.
//! It resolves each path here, one component at a time against the real
//! disk (`..` after a link goes up from where the link points, as the
//! kernel does), and sends either the path relative to the working
//! directory or "outside". The server trusts only a normalized relative
//! path and judges anything else as outside.
//!
//! As with the plan file ([`crate::claude::plan_file`]), an agent that
//! bypasses the hook bypasses the gate altogether; what this defends
//! against is a model that writes through a path that looks in scope.

use plangate_engine::scope::Target;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// Links followed along one path before it counts as outside (a loop).
const MAX_LINKS: usize = 40;

/// The files `tool` writes with `input`, resolved against `cwd`: `None`
/// when it is not a file tool, its files cannot be told, or the working
/// directory is unknown (the server then judges the paths as written,
/// which keeps only plain relative ones inside).
pub fn targets(tool: &str, input: &Value, cwd: Option<&str>) -> Option<Vec<Target>> {
    let paths = plangate_gate::paths::written_paths(tool, input)?.ok()?;
    let cwd = Path::new(cwd.filter(|c| !c.is_empty())?);
    Some(paths.iter().map(|p| resolve(cwd, p)).collect())
}

/// `raw` (relative to `cwd`, or absolute) as a path relative to `cwd` with
/// every link on the way resolved, or [`Target::Outside`].
pub fn resolve(cwd: &Path, raw: &str) -> Target {
    let outside = || Target::Outside(raw.to_string());
    let Ok(root) = cwd.canonicalize() else { return outside() };
    if !cwd.is_absolute() {
        return outside();
    }
    let Some(real) = walk(&root, Path::new(raw)) else { return outside() };
    match real.strip_prefix(&root) {
        Ok(rel) if !rel.as_os_str().is_empty() => match rel.to_str() {
            Some(rel) if plangate_engine::scope::is_normalized(rel) => Target::Path(rel.to_string()),
            _ => outside(),
        },
        _ => outside(),
    }
}

/// Follow `path` from `root` (its own root for an absolute path) one
/// component at a time, resolving each link that exists on disk. Past the
/// first component that does not exist, nothing can be a link yet, so the
/// rest is joined as written (`..` still goes up).
fn walk(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut real = if path.is_absolute() { PathBuf::from("/") } else { root.to_path_buf() };
    let mut links = 0;
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Prefix(_) => return None,
            Component::ParentDir => {
                real.pop();
            }
            Component::Normal(name) => {
                real.push(name);
                if std::fs::symlink_metadata(&real).is_ok_and(|m| m.file_type().is_symlink()) {
                    links += 1;
                    if links > MAX_LINKS {
                        return None;
                    }
                    // Everything up to here exists: the kernel's answer.
                    real = real.canonicalize().ok().or_else(|| dangling(&real))?;
                }
            }
        }
    }
    Some(real)
}

/// Where a link that points nowhere (yet) would write: its target, resolved
/// from the link's directory. Writing through it creates that file.
fn dangling(link: &Path) -> Option<PathBuf> {
    let target = std::fs::read_link(link).ok()?;
    let dir = link.parent()?.canonicalize().ok()?;
    let joined = if target.is_absolute() { target } else { dir.join(target) };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_dots_and_absolute_paths_are_resolved_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("shop");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(root.join("src/api")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("src/api/out")).unwrap();
        std::os::unix::fs::symlink(root.join("src/api"), root.join("api")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("nothing-yet"), root.join("src/api/dangling")).unwrap();
        let p = |s: &str| Target::Path(s.to_string());
        let o = |s: &str| Target::Outside(s.to_string());
        assert_eq!(resolve(&root, "src/api/new.rs"), p("src/api/new.rs"));
        assert_eq!(resolve(&root, "./src/../src/api/x.rs"), p("src/api/x.rs"));
        assert_eq!(resolve(&root, "api/x.rs"), p("src/api/x.rs"));
        assert_eq!(resolve(&root, &root.join("src/api/x.rs").display().to_string()), p("src/api/x.rs"));
        assert_eq!(resolve(&root, "src/api/out/x.rs"), o("src/api/out/x.rs"));
        assert_eq!(resolve(&root, "src/api/dangling"), o("src/api/dangling"));
        assert_eq!(resolve(&root, "../elsewhere/x"), o("../elsewhere/x"));
        assert_eq!(resolve(&root, "/etc/passwd"), o("/etc/passwd"));
        assert_eq!(resolve(&root, "."), o("."));
    }
}
