//! The reference to beat: the seed's `PlanStore`, rebuilt faithfully.
//!
//! One JSON file per plan (here: per session, holding the session, its latest
//! proposal and the transition's audit records). A transition takes an
//! `O_EXCL` lock file beside it (spinning while another holder has it), reads
//! the JSON, applies the same engine, writes a temp file, renames it over the
//! old one, and removes the lock. It is made durable the way plangate is
//! before a caller is answered: `fsync` of the temp file before the rename,
//! `fsync` of the directory after it.

use plangate_engine::{apply, Actor, Command, Ctx, Proposal, Session, SessionKey, State, Transition};
use serde_json::json;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct PlanStore {
    dir: PathBuf,
}

/// Removes the lock file when dropped.
struct LockFile(PathBuf);

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

impl PlanStore {
    pub fn open(dir: &Path) -> Result<PlanStore, String> {
        fs::create_dir_all(dir).map_err(io)?;
        Ok(PlanStore { dir: dir.to_path_buf() })
    }

    fn name(key: &SessionKey) -> String {
        format!("{}--{}", key.agent, key.session_id)
    }

    fn lock(&self, name: &str) -> Result<LockFile, String> {
        let path = self.dir.join(format!("{name}.lock"));
        loop {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => return Ok(LockFile(path)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => std::thread::sleep(Duration::from_micros(50)),
                Err(e) => return Err(io(e)),
            }
        }
    }

    /// The session and its latest proposal, as the last transition wrote them.
    pub fn load(&self, key: &SessionKey) -> Result<State, String> {
        let path = self.dir.join(format!("{}.json", Self::name(key)));
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(State::new(key.clone())),
            Err(e) => return Err(io(e)),
        };
        let mut record: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        let session: Session = serde_json::from_value(record["session"].take()).map_err(|e| e.to_string())?;
        let latest: Option<Proposal> = serde_json::from_value(record["latest"].take()).map_err(|e| e.to_string())?;
        Ok(State { session, latest })
    }

    /// Lock, read, apply, write temp + fsync, rename, fsync the directory, unlock.
    pub fn transition(&self, key: &SessionKey, actor: &Actor, command: Command, ctx: &Ctx) -> Result<Transition, String> {
        let name = Self::name(key);
        let _lock = self.lock(&name)?;
        let before = self.load(key)?;
        let t = apply(&before, actor, command, ctx).map_err(|e| e.to_string())?;
        if !t.changed {
            return Ok(t);
        }
        let record = json!({"session": t.state.session, "latest": t.state.latest, "audit": t.audit});
        let bytes = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
        let temp = self.dir.join(format!(".{name}.json.tmp"));
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&temp).map_err(io)?;
        file.write_all(&bytes).map_err(io)?;
        file.sync_all().map_err(io)?;
        fs::rename(&temp, self.dir.join(format!("{name}.json"))).map_err(io)?;
        File::open(&self.dir).and_then(|d| d.sync_all()).map_err(io)?;
        Ok(t)
    }
}
