//! Backups: a consistent snapshot of a live store, and its restore into an
//! empty data dir.
//!
//! sled allows one process per database, so the running server takes the
//! snapshot itself: [`SledStore::snapshot`] holds every commit at its
//! boundary (commits take the snapshot lock shared, the snapshot takes it
//! exclusively), so the snapshot holds each transition whole or not at all,
//! and every commit acknowledged before it started. The plan documents
//! under `<data_dir>/plans` go along.
//!
//! The format (`plangate-backup v1`): the magic line, then records, each a
//! tag byte and length-prefixed fields (u32 little-endian + bytes):
//! `I id` (u64) is sled's id generator, `T name` starts a tree, `K key value` is one entry of it, `F path bytes`
//! is a plan document (path relative to the data dir), and `E count` (u64)
//! ends the file with the number of records before it, so a truncated file
//! is refused rather than restored in part.

use crate::sled_store::SledStore;
use crate::StoreError;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

const MAGIC: &[u8] = b"plangate-backup v1\n";

/// What a snapshot or a restore carried.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BackupStats {
    pub trees: u64,
    pub entries: u64,
    pub documents: u64,
}

fn io(what: &str, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

fn field(out: &mut dyn Write, bytes: &[u8]) -> Result<(), StoreError> {
    out.write_all(&(bytes.len() as u32).to_le_bytes()).and_then(|()| out.write_all(bytes)).map_err(|e| io("writing the backup", e))
}

fn read_field(input: &mut dyn Read) -> Result<Vec<u8>, StoreError> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len).map_err(|e| io("the backup is truncated", e))?;
    let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
    input.read_exact(&mut bytes).map_err(|e| io("the backup is truncated", e))?;
    Ok(bytes)
}

/// Every file under `dir`, relative to `root`.
fn files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(rel.to_path_buf());
        }
    }
    Ok(())
}

impl SledStore {
    /// Write a consistent snapshot of the database and the plan documents
    /// of `data_dir` to `out`, holding commits at their boundary meanwhile.
    pub fn snapshot(&self, data_dir: &Path, out: &mut dyn Write) -> Result<BackupStats, StoreError> {
        let _paused = self.pause_commits();
        let t = self.raw_trees()?;
        let mut stats = BackupStats::default();
        out.write_all(MAGIC).map_err(|e| io("writing the backup", e))?;
        // sled's id generator (audit keys, outbox sequence numbers) lives
        // outside the trees: the restore moves its own past this value.
        let next_id = t.db.generate_id()?;
        out.write_all(b"I").and_then(|()| out.write_all(&next_id.to_le_bytes())).map_err(|e| io("writing the backup", e))?;
        let mut records = 1u64;
        for name in t.db.tree_names() {
            // The redo tree is empty at a commit boundary; sled's own default tree is unused.
            if name.as_ref() == b"redo" || name.as_ref() == b"__sled__default" {
                continue;
            }
            let tree = t.db.open_tree(&name)?;
            out.write_all(b"T").map_err(|e| io("writing the backup", e))?;
            field(out, &name)?;
            records += 1;
            stats.trees += 1;
            for entry in tree.iter() {
                let (k, v) = entry?;
                out.write_all(b"K").map_err(|e| io("writing the backup", e))?;
                field(out, &k)?;
                field(out, &v)?;
                records += 1;
                stats.entries += 1;
            }
        }
        let mut docs = Vec::new();
        files(data_dir, &data_dir.join("plans"), &mut docs).map_err(|e| io("reading the plan documents", e))?;
        for rel in docs {
            if rel.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".tmp-")) {
                continue; // a write in progress, not a document
            }
            // Documents are written by chat jobs, outside the commit lock,
            // through a temporary file renamed into place: one listed a
            // moment ago may be gone (renamed, or pruned). Skip it; the
            // document it became is listed under its own name or is rewritten
            // by its outbox job after a restore.
            let bytes = match std::fs::read(data_dir.join(&rel)) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io("reading a plan document", e)),
            };
            out.write_all(b"F").map_err(|e| io("writing the backup", e))?;
            field(out, rel.to_string_lossy().as_bytes())?;
            field(out, &bytes)?;
            records += 1;
            stats.documents += 1;
        }
        out.write_all(b"E").and_then(|()| out.write_all(&records.to_le_bytes())).map_err(|e| io("writing the backup", e))?;
        out.flush().map_err(|e| io("writing the backup", e))?;
        Ok(stats)
    }

    /// Restore a snapshot into `data_dir`, which must not exist or be
    /// empty: a restore never mixes with other data. The database is
    /// flushed before this returns.
    pub fn restore(data_dir: &Path, input: &mut dyn Read) -> Result<BackupStats, StoreError> {
        if data_dir.exists() && std::fs::read_dir(data_dir).map_err(|e| io("reading the data dir", e))?.next().is_some() {
            return Err(StoreError::Unavailable(format!(
                "{} is not empty; restore into a new or empty directory and point server.data_dir at it",
                data_dir.display()
            )));
        }
        let mut magic = vec![0u8; MAGIC.len()];
        input.read_exact(&mut magic).map_err(|e| io("not a plangate backup", e))?;
        if magic != MAGIC {
            return Err(StoreError::Unavailable("not a plangate backup (the first line is not `plangate-backup v1`)".into()));
        }
        std::fs::create_dir_all(data_dir).map_err(|e| io("creating the data dir", e))?;
        let db = sled::Config::new().path(data_dir.join("db")).open()?;
        let mut stats = BackupStats::default();
        let mut tree: Option<sled::Tree> = None;
        let mut records = 0u64;
        loop {
            let mut tag = [0u8; 1];
            input.read_exact(&mut tag).map_err(|e| io("the backup is truncated (no end record)", e))?;
            match &tag {
                b"T" => {
                    tree = Some(db.open_tree(read_field(input)?)?);
                    stats.trees += 1;
                }
                b"K" => {
                    let (k, v) = (read_field(input)?, read_field(input)?);
                    let t = tree.as_ref().ok_or_else(|| StoreError::Unavailable("the backup has an entry before any tree".into()))?;
                    t.insert(k, v)?;
                    stats.entries += 1;
                }
                b"F" => {
                    let rel = PathBuf::from(String::from_utf8_lossy(&read_field(input)?).into_owned());
                    let bytes = read_field(input)?;
                    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
                        return Err(StoreError::Unavailable(format!(
                            "the backup names a document outside the data dir: {}",
                            rel.display()
                        )));
                    }
                    let path = data_dir.join(&rel);
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| io("creating the plans dir", e))?;
                    }
                    std::fs::write(&path, bytes).map_err(|e| io("writing a plan document", e))?;
                    stats.documents += 1;
                }
                b"I" => {
                    let mut id = [0u8; 8];
                    input.read_exact(&mut id).map_err(|e| io("the backup is truncated", e))?;
                    let next_id = u64::from_le_bytes(id);
                    while db.generate_id()? < next_id {}
                }
                b"E" => {
                    let mut count = [0u8; 8];
                    input.read_exact(&mut count).map_err(|e| io("the backup is truncated", e))?;
                    if u64::from_le_bytes(count) != records {
                        return Err(StoreError::Unavailable("the backup's record count does not match; it is damaged".into()));
                    }
                    break;
                }
                other => return Err(StoreError::Unavailable(format!("the backup is damaged (record tag {other:?})"))),
            }
            records += 1;
        }
        db.flush()?;
        Ok(stats)
    }
}
