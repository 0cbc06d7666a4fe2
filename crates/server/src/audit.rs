//! The audit's signing key, its checkpoints and its export
//! (docs/SECURITY.md): the server's side of [`plangate_audit`].
//!
//! The key is 32 random bytes in `data_dir/audit-key` (0600), made at the
//! first start. Every `[audit] checkpoint_interval`, and once at shutdown,
//! the chain's head is signed; the checkpoint is entered in the chain (an
//! `audit_checkpoint` record, so removing it is removing a record) and
//! appended to `[audit] checkpoint_file`, the copy kept off the machine
//! that a cut tail is caught against.

use crate::core::Core;
use plangate_audit::export::Line;
use plangate_audit::{Checkpoint, SigningKey, CHECKPOINT_ACTION, GENESIS};
use plangate_engine::{AuditEvent, Timestamp};
use plangate_store::{AuditHash, Store, StoreError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use thiserror::Error;
use tokio::sync::{mpsc, watch};

/// The key's file under `data_dir`.
pub const KEY_FILE: &str = "audit-key";
/// The `action` of the record an export of the audit leaves.
pub const EXPORTED: &str = "audit_exported";
/// The `action` of the record a read of the audit (`GET /v1/audit`) leaves.
pub const READ: &str = "audit_read";

#[derive(Debug, Error)]
pub enum AuditError {
    #[error("the audit key {path}: {source}")]
    Key { path: String, source: std::io::Error },
    #[error("the audit key {0} is not 64 hex digits; restore it from a backup (a new key cannot sign for the old checkpoints)")]
    BadKey(String),
    #[error("the checkpoint file {path}: {source}")]
    CheckpointFile { path: String, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The key in `data_dir`, made (0600) when there is none.
pub fn load_or_create_key(data_dir: &Path) -> Result<SigningKey, AuditError> {
    let path = data_dir.join(KEY_FILE);
    match read_key(data_dir) {
        Err(AuditError::Key { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            let secret: [u8; 32] = rand::random();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let key_error = |source| AuditError::Key { path: path.display().to_string(), source };
            let mut file = options.open(&path).map_err(key_error)?;
            file.write_all(hex::encode(secret).as_bytes()).and_then(|()| file.sync_all()).map_err(key_error)?;
            tracing::info!(path = %path.display(), public_key = %public_hex(&SigningKey::from_bytes(&secret)), "made the audit key");
            Ok(SigningKey::from_bytes(&secret))
        }
        other => other,
    }
}

/// The key in `data_dir`; an error when there is none.
pub fn read_key(data_dir: &Path) -> Result<SigningKey, AuditError> {
    let path = data_dir.join(KEY_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| AuditError::Key { path: path.display().to_string(), source })?;
    let mut secret = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut secret).map_err(|_| AuditError::BadKey(path.display().to_string()))?;
    Ok(SigningKey::from_bytes(&secret))
}

/// The public key as `plangate audit key` prints it and `verify --key` takes it.
pub fn public_hex(key: &SigningKey) -> String {
    hex::encode(key.verifying_key().as_bytes())
}

/// Signs the chain's head and sends the checkpoint where it goes.
pub struct Checkpointer {
    key: SigningKey,
    file: Option<PathBuf>,
    /// The number of the last checkpoint record this process entered: a
    /// head still there has nothing new to sign.
    last_own: Mutex<Option<u64>>,
}

impl Checkpointer {
    pub fn new(key: SigningKey, file: Option<PathBuf>) -> Checkpointer {
        Checkpointer { key, file, last_own: Mutex::new(None) }
    }

    /// Sign the head now; `None` when the audit is empty or nothing was
    /// appended since this process's last checkpoint.
    pub async fn checkpoint(&self, core: &Core) -> Result<Option<Checkpoint>, AuditError> {
        let span = tracing::info_span!("audit_checkpoint");
        let _enter = span.enter();
        let Some((seq, hash)) = core.blocking(|s| s.audit_head()).await? else { return Ok(None) };
        if *self.last_own.lock().unwrap_or_else(|e| e.into_inner()) == Some(seq) {
            return Ok(None);
        }
        let checkpoint = Checkpoint::sign(&self.key, seq, hash, core.now().0);
        let event = system_event(core.now(), CHECKPOINT_ACTION, checkpoint.to_line());
        core.blocking(move |s| s.append_audit(&[event])).await?;
        let own = core.blocking(|s| s.audit_head()).await?.map(|h| h.0);
        *self.last_own.lock().unwrap_or_else(|e| e.into_inner()) = own;
        if let Some(path) = &self.file {
            append_line(path, &checkpoint.to_line())
                .map_err(|source| AuditError::CheckpointFile { path: path.display().to_string(), source })?;
        }
        tracing::info!(seq, hash = %hex::encode(hash), "audit checkpoint signed");
        Ok(Some(checkpoint))
    }

    /// Every `interval` until shutdown (the shutdown's own checkpoint is
    /// made by `serve` after the last transition).
    pub async fn run(self: Arc<Self>, core: Arc<Core>, interval: Duration, mut shutdown: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = shutdown.changed() => return,
            }
            if let Err(e) = self.checkpoint(&core).await {
                tracing::error!(error = %e, "the audit checkpoint failed; the next is tried at the next interval");
            }
        }
    }
}

/// An audit record of plangate's own (no agent, no session).
pub fn system_event(at: Timestamp, action: &str, detail: String) -> AuditEvent {
    AuditEvent {
        at,
        agent: "-".into(),
        session_id: "audit".into(),
        actor: "plangate".into(),
        action: action.into(),
        approval_id: None,
        version: None,
        detail,
    }
}

/// Append one line and make it durable: a checkpoint that a crash could
/// lose proves nothing.
fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    file.sync_data()
}

/// Bytes of JSONL sent per chunk of an export.
const CHUNK: usize = 64 * 1024;

/// Write the export of the chain up to `head` (from the first record at or
/// after `since`) to `out`, on a blocking thread: header, records, end. A
/// failure of the store ends the stream with an error and no end line, so
/// what the client received does not verify (closed, never a short export
/// that looks whole).
pub fn export(store: &dyn Store, since: Option<Timestamp>, head: Option<(u64, AuditHash)>, out: mpsc::Sender<std::io::Result<Vec<u8>>>) {
    let (head_seq, head_hash) = head.unwrap_or((0, GENESIS));
    let mut buf = String::new();
    let (mut first, mut last, mut records) = (None, None, 0u64);
    let visited = store.visit_audit_chain(since, &mut |record| {
        if record.seq > head_seq {
            return false;
        }
        if first.is_none() {
            first = Some(record.seq);
            push_line(&mut buf, &Line::Header { first_seq: record.seq });
        }
        (last, records) = (Some((record.seq, record.hash)), records + 1);
        push_line(&mut buf, &Line::Record(record));
        buf.len() < CHUNK || out.blocking_send(Ok(std::mem::take(&mut buf).into_bytes())).is_ok()
    });
    if let Err(e) = visited {
        tracing::error!(error = %e, "the audit export failed part way; the client gets no end line");
        let _ = out.blocking_send(Ok(buf.into_bytes()));
        let _ = out.blocking_send(Err(std::io::Error::other(e.to_string())));
        return;
    }
    if first.is_none() {
        push_line(&mut buf, &Line::Header { first_seq: head_seq + 1 });
    }
    let (last_seq, hash) = last.unwrap_or((head_seq, head_hash));
    push_line(&mut buf, &Line::End { last_seq, hash, records });
    let _ = out.blocking_send(Ok(buf.into_bytes()));
}

fn push_line(buf: &mut String, line: &Line) {
    buf.push_str(&line.to_line());
    buf.push('\n');
}
