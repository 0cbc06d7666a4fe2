//! Opening the database: sled's directory lock waited for, the schema
//! version checked (an older one upgraded, a newer one refused), a commit a
//! crash cut short finished (`redo`), and a reopen tried again after a
//! failed one. No operation runs on a database that is not wholly open.

use super::checkpoint::CHECKPOINT_AFTER_BYTES;
use super::upgrade::upgrade;
use super::{CheckpointState, CheckpointStats, Durability, Open, SledStore, Trees, CACHE_BYTES, SCHEMA_VERSION, SESSION_STRIPES};
use crate::group::FlushGroup;
use crate::StoreError;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};

/// How long [`SledStore::open_with`] waits for sled's directory lock.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn open_db(path: &Path) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match sled::Config::new().path(path).mode(sled::Mode::HighThroughput).cache_capacity(CACHE_BYTES).open() {
            Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return Ok(other?),
        }
    }
}

/// How long after a failed reopen the next operation tries again.
const REOPEN_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Open the trees of the database at `path`, check its schema version and
/// finish any commit a crash interrupted.
pub(super) fn open_trees(path: &Path) -> Result<Trees, StoreError> {
    let db = open_db(path)?;
    let meta = db.open_tree("meta")?;
    let found = meta.get("schema_version")?;
    match found.as_deref() {
        None => {
            meta.insert("schema_version", SCHEMA_VERSION)?;
            db.flush()?;
        }
        Some(v) if v == SCHEMA_VERSION.as_bytes() || v == b"1" || v == b"2" || v == b"3" || v == b"4" => {}
        Some(v) => {
            return Err(StoreError::SchemaMismatch {
                path: path.display().to_string(),
                found: String::from_utf8_lossy(v).into_owned(),
                expected: SCHEMA_VERSION.to_string(),
            })
        }
    }
    let trees = Trees {
        redo: db.open_tree("redo")?,
        sessions: db.open_tree("sessions")?,
        proposals: db.open_tree("proposals")?,
        by_status: db.open_tree("proposals_by_status")?,
        questions: db.open_tree("questions")?,
        timers: db.open_tree("timers")?,
        deliveries: db.open_tree("deliveries")?,
        question_deliveries: db.open_tree("question_deliveries")?,
        audit: db.open_tree("audit")?,
        idempotency: db.open_tree("idempotency")?,
        outbox: db.open_tree("outbox")?,
        documents: db.open_tree("documents")?,
        namespaces: db.open_tree("namespaces")?,
        rules: db.open_tree("rules")?,
        meta,
        db,
    };
    trees.replay()?;
    match found.as_deref() {
        Some(b"1") => upgrade(&trees, 1)?,
        Some(b"2") => upgrade(&trees, 2)?,
        Some(b"3") => upgrade(&trees, 3)?,
        Some(b"4") => upgrade(&trees, 4)?,
        _ => {}
    }
    Ok(trees)
}

impl SledStore {
    /// Open (or create) the database under `data_dir/db`, checking its
    /// schema version and finishing any commit a crash interrupted.
    pub fn open(data_dir: &Path) -> Result<SledStore, StoreError> {
        SledStore::open_with(data_dir, Durability::default())
    }

    /// [`open`](Self::open) with an explicit [`Durability`].
    ///
    /// sled locks its directory; the lock of a store just dropped (or of a
    /// process just killed) can outlive it by a few milliseconds while
    /// sled's flusher thread winds down, so a busy lock is retried for up to
    /// [`LOCK_WAIT`] before giving up.
    pub fn open_with(data_dir: &Path, durability: Durability) -> Result<SledStore, StoreError> {
        let path = data_dir.join("db");
        let trees = open_trees(&path)?;
        Ok(SledStore {
            path,
            open: RwLock::new(Some(trees)),
            snapshot_lock: RwLock::new(()),
            durability,
            group: Arc::new(FlushGroup::new(durability == Durability::Grouped)),
            stripes: (0..SESSION_STRIPES).map(|_| Mutex::new(())).collect(),
            written: AtomicU64::new(0),
            checkpoint_after: AtomicU64::new(CHECKPOINT_AFTER_BYTES),
            checkpointing: Mutex::new(CheckpointState {
                last_failure: None,
                last_end: std::time::Instant::now(),
                last_took: std::time::Duration::ZERO,
                stats: CheckpointStats::default(),
            }),
            chain: Mutex::new(None),
        })
    }

    /// The open database for one operation. After a failed reopen, tries
    /// again (at most once per [`REOPEN_RETRY`]); until one succeeds every
    /// operation fails: a store that cannot be read answers no question.
    pub(crate) fn trees(&self) -> Result<Open<'_>, StoreError> {
        let open = self.open.read().unwrap_or_else(|e| e.into_inner());
        if open.is_some() {
            return Ok(Open(open));
        }
        drop(open);
        self.reopen_after_failure()?;
        let open = self.open.read().unwrap_or_else(|e| e.into_inner());
        if open.is_some() {
            Ok(Open(open))
        } else {
            Err(StoreError::Unavailable("the sled database is closed: reopening it failed (see the log)".to_string()))
        }
    }

    fn reopen_after_failure(&self) -> Result<(), StoreError> {
        let mut state = self.checkpointing.lock().unwrap_or_else(|e| e.into_inner());
        if state.last_failure.is_some_and(|at| at.elapsed() < REOPEN_RETRY) {
            return Err(StoreError::Unavailable("the sled database is closed: reopening it failed (see the log)".to_string()));
        }
        let mut open = self.open.write().unwrap_or_else(|e| e.into_inner());
        if open.is_none() {
            match open_trees(&self.path) {
                Ok(trees) => {
                    *open = Some(trees);
                    state.last_failure = None;
                    tracing::info!(path = %self.path.display(), "the sled database is open again");
                }
                Err(e) => {
                    state.last_failure = Some(std::time::Instant::now());
                    tracing::error!(error = %e, path = %self.path.display(), "cannot reopen the sled database");
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Every tree, for copying the whole store elsewhere (`migrate`) and
    /// for the maintenance passes (`retention`, `backup`).
    pub(crate) fn raw_trees(&self) -> Result<Open<'_>, StoreError> {
        self.trees()
    }
}
