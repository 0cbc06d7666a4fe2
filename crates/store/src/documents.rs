//! Plan documents on disk: `<data_dir>/plans/<agent>/plan-YYYY-MM-DD-<slug>-<id>.md`.
//!
//! The name is a function of the proposal (agent, date, title, the first
//! eight hex digits of its approval id), so the path is known when the
//! proposal commits and the file itself is written afterwards, off the
//! request path, by a queued job that is safe to repeat.
//!
//! Agent ids and titles are agent-controlled text that ends up in a path, so
//! both are reduced to a safe slug and the final path is checked to lie under
//! the plans directory. Files are created 0600 (plans can be sensitive),
//! with `O_EXCL` (an existing document is never clobbered) and written in
//! place, not through a temp file linked into place: the prefix check of
//! [`write_document_unsynced`] already recognizes a write cut short, and on
//! ext4 a temp file created and unlinked per plan made every later file
//! creation scan past the recently deleted inodes (a third of the whole
//! service's CPU samples at 64 sessions, docs/PERFORMANCE.md §16). A reader that
//! opens a document while its job writes it may see it short, as it may
//! find it missing before the job ran: the path is announced when the
//! proposal commits.
//!
//! The `_unsynced` writers leave the fsyncs to the caller ([`sync_files`]):
//! the core's chat jobs write without them and have them done for a whole
//! batch of jobs before their outbox entries are removed, so a document is
//! durable before the record that would re-write it is gone, and dozens of
//! jobs share one pass instead of paying two fsyncs each on the chat
//! workers (docs/PERFORMANCE.md §10). A crash before that pass may leave a
//! document cut short; the job runs again on the next start and
//! [`write_document_unsynced`] completes it.

use plangate_engine::card::slug;
use plangate_engine::Timestamp;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum DocumentError {
    #[error("cannot write plan document under {dir}: {source}")]
    Io { dir: String, source: std::io::Error },
    #[error("a different plan document already exists at {0}; it was left as it is")]
    Exists(String),
    #[error("refusing to write outside the plans directory: {0}")]
    OutsideDataDir(String),
}

fn io(dir: &Path) -> impl FnOnce(std::io::Error) -> DocumentError + '_ {
    move |source| DocumentError::Io { dir: dir.display().to_string(), source }
}

/// Where the plan document of a proposal lives: pure, no I/O.
pub fn plan_document_path(data_dir: &Path, agent: &str, title: &str, created_at: Timestamp, id_prefix: &str) -> PathBuf {
    let date = &created_at.rfc3339()[..10];
    data_dir.join("plans").join(slug(agent)).join(format!("plan-{date}-{}-{}.md", slug(title), slug(id_prefix)))
}

/// Write `text` as the plan document at [`plan_document_path`] and return the
/// path, without fsync: the caller makes the path durable with [`sync_files`]
/// before it forgets how to write it again. Writing the same text again is
/// a no-op (a job repeated after a crash); a different file already there
/// is never overwritten. Besides the same text, a file that already starts with `text` is ours
/// (receipts appended since) and is left alone; a file that is a strict
/// beginning of `text` (empty, say) is this write cut short by a crash
/// before its sync, and is completed in place.
pub fn write_document_unsynced(
    data_dir: &Path,
    agent: &str,
    title: &str,
    created_at: Timestamp,
    id_prefix: &str,
    text: &str,
) -> Result<PathBuf, DocumentError> {
    let target = plan_document_path(data_dir, agent, title, created_at, id_prefix);
    let plans = data_dir.join("plans");
    let dir = plans.join(slug(agent));
    create_private_dir(&dir).map_err(io(&dir))?;
    let canonical_plans = plans.canonicalize().map_err(io(&plans))?;
    let canonical_dir = dir.canonicalize().map_err(io(&dir))?;
    if !canonical_dir.starts_with(&canonical_plans) {
        return Err(DocumentError::OutsideDataDir(canonical_dir.display().to_string()));
    }
    let path = canonical_dir.join(target.file_name().unwrap_or_default());
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    // Twice at most: a file that appears between the look and the create
    // (another writer of the same job) is looked at again.
    for _ in 0..2 {
        if let Ok(meta) = fs::symlink_metadata(&path) {
            // Only a plain file is ever read or completed: never through a
            // link, to wherever it points.
            if !meta.is_file() {
                return Err(DocumentError::Exists(path.display().to_string()));
            }
            let existing = fs::read(&path).map_err(io(&dir))?;
            if existing.starts_with(text.as_bytes()) {
                return Ok(path);
            }
            let Some(rest) = text.as_bytes().strip_prefix(existing.as_slice()) else {
                return Err(DocumentError::Exists(path.display().to_string()));
            };
            let mut file = fs::OpenOptions::new().append(true).open(&path).map_err(io(&dir))?;
            file.write_all(rest).map_err(io(&dir))?;
            return Ok(path);
        }
        match options.open(&path) {
            Ok(mut file) => {
                file.write_all(text.as_bytes()).map_err(io(&dir))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&dir)(e)),
        }
    }
    Err(DocumentError::Exists(path.display().to_string()))
}

/// Append a decision receipt to a document; the caller makes `path` durable
/// with [`sync_files`].
/// Appended in place, in one `write`: a crash before the sync can cost the
/// receipt (its job runs again and adds it) but never the document, which a
/// temp file renamed over it could without its own fsync.
pub fn append_receipt_unsynced(path: &Path, receipt: &str) -> Result<(), DocumentError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let text = fs::read_to_string(path).map_err(io(dir))?;
    let block = format!("\n---\n_{}_\n", receipt.replace(['\n', '\r'], " "));
    // Receipts name who decided what and when, so the same one twice is a
    // repeat (chat work resumed after a crash), not news.
    if text.contains(&block) {
        return Ok(());
    }
    let add = if text.ends_with('\n') { block } else { format!("\n{block}") };
    let mut file = fs::OpenOptions::new().append(true).open(path).map_err(io(dir))?;
    file.write_all(add.as_bytes()).map_err(io(dir))
}

/// Make files written by the `_unsynced` writers durable: each file's data,
/// then each directory that holds one (its entry), once per directory.
pub fn sync_files(paths: &[PathBuf]) -> std::io::Result<()> {
    let mut dirs: Vec<&Path> = Vec::new();
    for path in paths {
        fs::File::open(path)?.sync_all()?;
        if let Some(dir) = path.parent().filter(|d| !dirs.contains(d)) {
            dirs.push(dir);
        }
    }
    for dir in dirs {
        fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_private_confined_idempotent_and_never_clobbers() {
        let tmp = tempfile::tempdir().unwrap();
        let t = Timestamp(1_764_460_800_000); // 2025-11-30
        let write = |agent: &str, title: &str, prefix: &str, text: &str| {
            let path = write_document_unsynced(tmp.path(), agent, title, t, prefix, text)?;
            sync_files(std::slice::from_ref(&path)).unwrap();
            Ok::<_, DocumentError>(path)
        };
        let a = write("../../etc", "Add retries!", "abcdef01", "one").unwrap();
        assert!(a.ends_with("plans/etc/plan-2025-11-30-add-retries-abcdef01.md"), "{a:?}");
        assert_eq!(plan_document_path(&tmp.path().canonicalize().unwrap(), "../../etc", "Add retries!", t, "abcdef01"), a);
        assert_eq!(fs::read_to_string(&a).unwrap(), "one");
        // The same job again: nothing changes.
        assert_eq!(write("../../etc", "Add retries!", "abcdef01", "one").unwrap(), a);
        // Something else at that path is left alone.
        assert!(matches!(write("../../etc", "Add retries!", "abcdef01", "two"), Err(DocumentError::Exists(_))));
        assert_eq!(fs::read_to_string(&a).unwrap(), "one");
        // Another proposal with the same title on the same day: its own file.
        let b = write("../../etc", "Add retries!", "12345678", "two").unwrap();
        assert!(b.ends_with("plan-2025-11-30-add-retries-12345678.md"), "{b:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&a).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // Cut short by a crash before its sync (empty, or a beginning of the
        // text): completed; with receipts appended since: left alone.
        fs::write(&a, "").unwrap();
        assert_eq!(write_document_unsynced(tmp.path(), "../../etc", "Add retries!", t, "abcdef01", "one").unwrap(), a);
        assert_eq!(fs::read_to_string(&a).unwrap(), "one");
        fs::write(&a, "on").unwrap();
        write_document_unsynced(tmp.path(), "../../etc", "Add retries!", t, "abcdef01", "one").unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "one");
        append_receipt_unsynced(&a, "approved by ana").unwrap();
        sync_files(std::slice::from_ref(&a)).unwrap();
        write_document_unsynced(tmp.path(), "../../etc", "Add retries!", t, "abcdef01", "one").unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "one\n\n---\n_approved by ana_\n");
        // A receipt repeated (its job resumed after a crash) is not added twice.
        append_receipt_unsynced(&a, "approved by ana").unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "one\n\n---\n_approved by ana_\n");
        // A link where the document goes is refused, and what it points to
        // is neither read nor completed.
        #[cfg(unix)]
        {
            let elsewhere = tmp.path().join("elsewhere");
            fs::write(&elsewhere, "o").unwrap();
            let linked = plan_document_path(&tmp.path().canonicalize().unwrap(), "../../etc", "Linked", t, "abcdef01");
            std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
            let refused = write_document_unsynced(tmp.path(), "../../etc", "Linked", t, "abcdef01", "one");
            assert!(matches!(refused, Err(DocumentError::Exists(_))), "{refused:?}");
            assert_eq!(fs::read_to_string(&elsewhere).unwrap(), "o");
        }
        let weird = write("a\u{202E}/..\\b", "..", "../x", "x").unwrap();
        assert!(weird.starts_with(tmp.path().canonicalize().unwrap().join("plans")));
    }
}
