//! Which project the agent works in, sent with every proposal as
//! `"project": {"name", "branch", "host"}` so a card says
//! "billing-api · feat/retries · dev-laptop" and can be routed by project.
//!
//! Read from the working directory's git metadata as plain files — never by
//! running `git`: a hook runs while the gate is shut, on every proposal, and
//! must neither spawn programs the gate would deny nor wait on a slow or
//! hostile repository. What it reads, each file capped at [`MAX_FILE_BYTES`]:
//! the nearest `.git` up from the directory (a directory, or the file a
//! worktree or submodule has, `gitdir: …`), its `HEAD` (a branch, or a
//! detached commit), `commondir` (a worktree's main repository) and the
//! repository's `config` (the `origin` remote's URL gives the name a
//! checkout goes by whatever its directory is called). Anything missing or
//! odd makes the part absent, never an error: a project is a label.

use plangate_engine::Project;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes read of any one git file (`HEAD`, `config`, …).
pub const MAX_FILE_BYTES: u64 = 64 * 1024;
/// How many directories up from the working directory a `.git` is looked for.
const MAX_DEPTH: usize = 64;

/// The project at `dir`: the repository's name and branch when `dir` is in a
/// git working tree, else the directory's own name; the host name either way.
/// `None` only when neither gives a name (the root directory, say).
pub fn detect(dir: &Path) -> Option<Project> {
    let host = host();
    let (name, branch) = match find_git(dir) {
        Some(repo) => (repo.name(), repo.branch()),
        None => (dir_name(dir), None),
    };
    usable(Project { name: name?, branch, host })
}

/// What the server will accept of `project`: a branch or host it would
/// refuse (a control character in a hand-edited `HEAD`, an overlong name)
/// is left out rather than costing the proposal.
fn usable(project: Project) -> Option<Project> {
    let Project { name, branch, host } = project;
    [
        Project { name: name.clone(), branch: branch.clone(), host: host.clone() },
        Project { name: name.clone(), branch, host: None },
        Project { name: name.clone(), branch: None, host },
        Project { name, branch: None, host: None },
    ]
    .into_iter()
    .find_map(|p| p.validate().ok())
}

/// The machine's host name, without a domain, or `None` when the system does not say.
pub fn host() -> Option<String> {
    let name = whoami::hostname().ok()?;
    let short = name.split('.').next().unwrap_or_default().trim();
    (!short.is_empty()).then(|| short.to_string())
}

/// A working tree's git metadata.
struct Repo {
    /// The working tree's top directory.
    top: PathBuf,
    /// Where this checkout's `HEAD` is (`.git`, or `.git/worktrees/<name>`).
    git_dir: PathBuf,
    /// Where the repository's shared files are (`config`): the main `.git`.
    common_dir: PathBuf,
}

fn find_git(dir: &Path) -> Option<Repo> {
    let mut here = Some(dir);
    for _ in 0..MAX_DEPTH {
        let top = here?;
        let dot_git = top.join(".git");
        if dot_git.is_dir() {
            return Some(Repo { top: top.to_path_buf(), common_dir: dot_git.clone(), git_dir: dot_git });
        }
        if dot_git.is_file() {
            // A worktree or a submodule: `gitdir: <path>`, relative to the top.
            let text = read_small(&dot_git)?;
            let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
            let git_dir = top.join(target);
            let common_dir = match read_small(&git_dir.join("commondir")) {
                Some(common) => git_dir.join(common.trim()),
                None => git_dir.clone(),
            };
            return Some(Repo { top: top.to_path_buf(), git_dir, common_dir });
        }
        here = top.parent();
    }
    None
}

impl Repo {
    /// The `origin` remote's repository name, else the main working tree's
    /// directory (the common dir's parent when it is a `.git`), else this
    /// working tree's.
    fn name(&self) -> Option<String> {
        if let Some(url) = read_small(&self.common_dir.join("config")).and_then(|c| origin_url(&c)) {
            if let Some(name) = name_of_url(&url) {
                return Some(name);
            }
        }
        let common = normalize(&self.common_dir);
        match common.file_name().and_then(|n| n.to_str()) {
            Some(".git") => common.parent().and_then(dir_name),
            Some(bare) if !bare.is_empty() => Some(bare.strip_suffix(".git").unwrap_or(bare).to_string()),
            _ => dir_name(&self.top),
        }
    }

    /// The checked-out branch, `detached@<7 hex>` for a detached HEAD.
    fn branch(&self) -> Option<String> {
        let head = read_small(&self.git_dir.join("HEAD"))?;
        let head = head.trim();
        if let Some(reference) = head.strip_prefix("ref:") {
            let reference = reference.trim();
            return Some(reference.strip_prefix("refs/heads/").unwrap_or(reference).to_string());
        }
        (head.len() >= 7 && head.chars().all(|c| c.is_ascii_hexdigit())).then(|| format!("detached@{}", &head[..7]))
    }
}

/// `[remote "origin"] url = …` of a git config.
fn origin_url(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            in_origin = line.replace(' ', "") == "[remote\"origin\"]";
            continue;
        }
        if in_origin {
            if let Some((key, value)) = line.split_once('=') {
                if key.trim() == "url" {
                    return Some(value.trim().trim_matches('"').to_string());
                }
            }
        }
    }
    None
}

/// `billing-api` of `git@github.com:acme/billing-api.git`,
/// `https://host/acme/billing-api`, `/srv/git/billing-api.git/`.
fn name_of_url(url: &str) -> Option<String> {
    let last = url.trim_end_matches('/').rsplit(['/', ':', '\\']).next()?;
    let name = last.strip_suffix(".git").unwrap_or(last);
    (!name.is_empty()).then(|| name.to_string())
}

fn dir_name(dir: &Path) -> Option<String> {
    normalize(dir).file_name()?.to_str().map(str::to_string).filter(|n| !n.is_empty())
}

/// `a/b/../c` → `a/c`, lexically (a `commondir` is `../..`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn read_small(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn repo(root: &Path, name: &str, head: &str, config: &str) -> PathBuf {
        let top = root.join(name);
        fs::create_dir_all(top.join(".git")).unwrap();
        fs::write(top.join(".git/HEAD"), head).unwrap();
        fs::write(top.join(".git/config"), config).unwrap();
        top
    }

    #[test]
    fn a_branch_of_a_checkout_named_after_its_origin() {
        let tmp = tempfile::tempdir().unwrap();
        let config = "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = x/other.git\n[remote \"origin\"]\n\turl = git@github.com:acme/billing-api.git\n";
        let top = repo(tmp.path(), "checkout", "ref: refs/heads/feat/retries\n", config);
        fs::create_dir_all(top.join("src/deep")).unwrap();
        let p = detect(&top.join("src/deep")).unwrap();
        assert_eq!((p.name.as_str(), p.branch.as_deref()), ("billing-api", Some("feat/retries")));
        assert_eq!(p.host, host());
    }

    #[test]
    fn a_detached_head_without_a_remote_is_named_after_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let top = repo(tmp.path(), "web", "0123456789abcdef0123456789abcdef01234567\n", "[core]\n");
        let p = detect(&top).unwrap();
        assert_eq!((p.name.as_str(), p.branch.as_deref()), ("web", Some("detached@0123456")));
        // A HEAD the server would refuse costs the label its branch, not the proposal.
        fs::write(top.join(".git/HEAD"), "ref: refs/heads/a\u{202E}b\n").unwrap();
        assert_eq!(detect(&top).unwrap().branch, None);
    }

    #[test]
    fn a_worktree_reads_its_own_head_and_the_main_repository_name() {
        let tmp = tempfile::tempdir().unwrap();
        let main = repo(tmp.path(), "main-repo", "ref: refs/heads/main\n", "[core]\n");
        let wt_git = main.join(".git/worktrees/wt");
        fs::create_dir_all(&wt_git).unwrap();
        fs::write(wt_git.join("HEAD"), "ref: refs/heads/threads\n").unwrap();
        fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("wt-threads");
        fs::create_dir_all(&wt).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        let p = detect(&wt).unwrap();
        assert_eq!((p.name.as_str(), p.branch.as_deref()), ("main-repo", Some("threads")));
    }

    #[test]
    fn outside_a_repository_the_directory_names_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("scratch");
        fs::create_dir_all(&dir).unwrap();
        let p = detect(&dir).unwrap();
        assert_eq!((p.name.as_str(), p.branch), ("scratch", None));
    }

    #[test]
    fn remote_urls_of_every_shape_give_the_repository_name() {
        for url in
            ["https://github.com/acme/billing-api", "ssh://git@host/acme/billing-api.git/", "/srv/git/billing-api.git", "host:billing-api"]
        {
            assert_eq!(name_of_url(url).as_deref(), Some("billing-api"), "{url}");
        }
        assert_eq!(name_of_url(""), None);
    }
}
