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
//! written to a temp file and linked into place without ever clobbering an
//! existing document.

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
/// path. Writing the same text again is a no-op (a job repeated after a
/// crash); a different file already there is never overwritten.
pub fn write_document(
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
    if let Ok(existing) = fs::read(&path) {
        return if existing == text.as_bytes() { Ok(path) } else { Err(DocumentError::Exists(path.display().to_string())) };
    }
    let temp = write_temp(&canonical_dir, text.as_bytes()).map_err(io(&dir))?;
    // hard_link fails if the target exists: an atomic no-clobber rename.
    let linked = fs::hard_link(&temp, &path);
    let _ = fs::remove_file(&temp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(DocumentError::Exists(path.display().to_string()));
        }
        Err(e) => return Err(io(&dir)(e)),
    }
    sync_dir(&canonical_dir);
    Ok(path)
}

/// Append a decision receipt to a document, atomically (temp + rename).
pub fn append_receipt(path: &Path, receipt: &str) -> Result<(), DocumentError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut text = fs::read_to_string(path).map_err(io(dir))?;
    let block = format!("\n---\n_{}_\n", receipt.replace(['\n', '\r'], " "));
    // Receipts name who decided what and when, so the same one twice is a
    // repeat (chat work resumed after a crash), not news.
    if text.contains(&block) {
        return Ok(());
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&block);
    let temp = write_temp(dir, text.as_bytes()).map_err(io(dir))?;
    fs::rename(&temp, path).map_err(io(dir))?;
    sync_dir(dir);
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

fn write_temp(dir: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let temp = dir.join(format!(".tmp-{}-{nanos}-{attempt}", std::process::id()));
        match options.open(&temp) {
            Ok(mut file) => {
                file.write_all(bytes)?;
                file.sync_all()?;
                return Ok(temp);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("could not create a temporary file"))
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_private_confined_idempotent_and_never_clobbers() {
        let tmp = tempfile::tempdir().unwrap();
        let t = Timestamp(1_764_460_800_000); // 2025-11-30
        let a = write_document(tmp.path(), "../../etc", "Add retries!", t, "abcdef01", "one").unwrap();
        assert!(a.ends_with("plans/etc/plan-2025-11-30-add-retries-abcdef01.md"), "{a:?}");
        assert_eq!(plan_document_path(&tmp.path().canonicalize().unwrap(), "../../etc", "Add retries!", t, "abcdef01"), a);
        assert_eq!(fs::read_to_string(&a).unwrap(), "one");
        // The same job again: nothing changes.
        assert_eq!(write_document(tmp.path(), "../../etc", "Add retries!", t, "abcdef01", "one").unwrap(), a);
        // Something else at that path is left alone.
        assert!(matches!(write_document(tmp.path(), "../../etc", "Add retries!", t, "abcdef01", "two"), Err(DocumentError::Exists(_))));
        assert_eq!(fs::read_to_string(&a).unwrap(), "one");
        // Another proposal with the same title on the same day: its own file.
        let b = write_document(tmp.path(), "../../etc", "Add retries!", t, "12345678", "two").unwrap();
        assert!(b.ends_with("plan-2025-11-30-add-retries-12345678.md"), "{b:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&a).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let weird = write_document(tmp.path(), "a\u{202E}/..\\b", "..", t, "../x", "x").unwrap();
        assert!(weird.starts_with(tmp.path().canonicalize().unwrap().join("plans")));
    }
}
