//! The operator's maintenance subcommands: `backup` and `prune` ask a
//! running server, `restore` and `migrate` work on a stopped one's files.

use crate::cli::Client;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// `plangate backup --to FILE`: a consistent snapshot of a running server.
pub async fn backup(url: &str, operator_token: &str, to: &Path) -> Result<i32> {
    let stats = crate::ops::backup::download(url, operator_token, to).await?;
    eprintln!("backup written to {} ({stats})", to.display());
    Ok(0)
}

/// `plangate prune [--dry-run]`: apply `[retention]` now.
pub async fn prune(url: &str, operator_token: String, dry_run: bool) -> Result<i32> {
    let client = Client::new(url, Some(operator_token))?;
    let r = client.ok(reqwest::Method::POST, &format!("/v1/operator/prune?dry_run={dry_run}"), None).await?;
    let verb = if dry_run { "would prune" } else { "pruned" };
    println!(
        "{verb}: {} decided approvals ({} card deliveries, {} plan documents), {} audit records",
        r["approvals"], r["deliveries"], r["documents"], r["audit"]
    );
    Ok(0)
}

/// `plangate ladder show APPROVAL`: who the approval's escalation ladder
/// reaches when (the server reads the schedules).
pub async fn ladder_show(url: &str, operator_token: String, approval: &str) -> Result<i32> {
    let client = Client::new(url, Some(operator_token))?;
    let r = client.ok(reqwest::Method::GET, &format!("/v1/operator/approvals/{approval}/ladder"), None).await?;
    print!("{}", r["text"].as_str().unwrap_or_default());
    Ok(0)
}

/// `plangate restore FILE --data-dir DIR`: a backup into a new or empty data dir.
pub fn restore(file: &Path, data_dir: &Path) -> Result<i32> {
    let stats = crate::ops::backup::restore(file, data_dir)?;
    eprintln!("restored {} into {} ({stats}); start plangate with server.data_dir = {:?}", file.display(), data_dir.display(), data_dir);
    Ok(0)
}

/// `plangate migrate`: copy a stopped sled data dir into PostgreSQL.
pub async fn migrate(from: PathBuf, to: String, schema: String) -> Result<i32> {
    if !crate::config::is_valid_schema_name(&schema) {
        eprintln!(
            "plangate migrate: --schema {schema:?} is not a schema name plangate takes (lowercase letters, digits and _, \
             starting with a letter or _, not pg_)"
        );
        return Ok(crate::cli::EXIT_USAGE);
    }
    let mut options = plangate_store::PgOptions::new(to);
    options.schema = schema;
    let target = format!("{} (schema {})", crate::config::mask_url_password(&options.url), options.schema);
    eprintln!("migrating {} into {target} …", from.display());
    let plans = from.join("plans");
    let migrated = tokio::task::spawn_blocking(move || plangate_store::migrate::sled_to_postgres(&from, &options))
        .await
        .context("the migration task failed")?;
    match migrated {
        Ok(report) => {
            println!("{report}");
            println!(
                "plan documents: not copied; they stay files under {} (give the replicas that directory, or a shared volume, if people open them)",
                plans.display()
            );
            eprintln!("done: set [store] backend = \"postgres\" with this URL and schema, and start the replicas");
            Ok(0)
        }
        Err(e) => {
            eprintln!("plangate migrate: {e}");
            Ok(1)
        }
    }
}
