//! `plangate config check`: the effective configuration, secrets masked,
//! explained, with the store's reachability and the paired destinations.

use crate::config::Settings;
use anyhow::Result;
use std::path::PathBuf;

/// Validate and print the configuration; 1 when it does not load.
pub async fn config_check(config: Option<PathBuf>) -> Result<i32> {
    let settings = match Settings::load(config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plangate: {e}");
            return Ok(1);
        }
    };
    println!("{}", serde_json::to_string_pretty(&settings.masked())?);
    let source = config.map(|c| c.display().to_string()).unwrap_or_else(|| "the embedded config/default.toml".into());
    eprint!("{}", crate::ops::explain::explain(&settings, &source));
    // Reported, not judged: the file is valid even while the database is down.
    if let Some(check) = crate::ops::doctor::store(&settings).await {
        eprintln!("store reachable: {check}");
    }
    eprint!("{}", crate::cli::pair::paired_for_config_check(&settings).await);
    eprintln!("configuration is valid");
    Ok(0)
}
