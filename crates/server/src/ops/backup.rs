//! `plangate backup` and `plangate restore`: the client half of backups.
//! The running server takes the snapshot (`GET /v1/operator/backup`, see
//! `plangate_store`'s `backup` module: sled has one writer, the server);
//! the restore runs offline into a new or empty data dir.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// Download a snapshot from the server at `url` into `to`, atomically (a
/// partial file never takes the name of a backup). Returns a summary.
pub async fn download(url: &str, operator_token: &str, to: &Path) -> Result<String> {
    let http = reqwest::Client::builder().build()?;
    let resp = http
        .get(format!("{}/v1/operator/backup", url.trim_end_matches('/')))
        .bearer_auth(operator_token)
        .send()
        .await
        .with_context(|| format!("cannot reach plangate at {url}; is `plangate serve` running there?"))?;
    let status = resp.status();
    let bytes = resp.bytes().await.context("the backup download was cut off")?;
    if !status.is_success() {
        bail!("plangate refused the backup ({status}): {}", String::from_utf8_lossy(&bytes));
    }
    let partial = to.with_extension("partial");
    std::fs::write(&partial, &bytes).with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::File::open(&partial).and_then(|f| f.sync_all()).with_context(|| format!("cannot sync {}", partial.display()))?;
    std::fs::rename(&partial, to).with_context(|| format!("cannot rename {} to {}", partial.display(), to.display()))?;
    Ok(format!("{} bytes", bytes.len()))
}

/// Restore `file` into `data_dir` (new or empty).
pub fn restore(file: &Path, data_dir: &Path) -> Result<String> {
    let mut input = std::io::BufReader::new(std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?);
    let stats = plangate_store::SledStore::restore(data_dir, &mut input)?;
    Ok(format!("{} trees, {} records, {} plan documents", stats.trees, stats.entries, stats.documents))
}
