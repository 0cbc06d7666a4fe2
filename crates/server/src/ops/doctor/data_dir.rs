//! `server.data_dir` as doctor resolved it: an absolute path, where its
//! value came from (the environment, the config file, the embedded
//! defaults) and what a relative one is relative to. A relative data dir is
//! resolved against the working directory, so doctor run elsewhere than
//! `plangate serve` names another directory: one that does not exist is
//! said plainly, as a warning, with where to run doctor instead.

use super::Check;
use crate::config::Settings;
use std::path::Path;

const ENV: &str = "PLANGATE__SERVER__DATA_DIR";

/// The data dir check of `settings`, loaded from `config` (or the embedded
/// defaults).
pub fn check(settings: &Settings, config: Option<&Path>) -> Check {
    let what = "server.data_dir";
    let dir = &settings.data_dir;
    let from_env = std::env::var(ENV).ok().filter(|v| !v.trim().is_empty());
    // As written: `Settings` keeps only the absolute path.
    let raw = from_env.clone().or_else(|| as_written(config)).unwrap_or_else(|| dir.display().to_string());
    let mut origin = match config {
        _ if from_env.is_some() => format!("{ENV} = {raw:?}"),
        Some(file) => format!("server.data_dir = {raw:?} in {}", file.display()),
        None => format!("server.data_dir = {raw:?} of the embedded defaults"),
    };
    let raw = Path::new(&raw);
    if raw.is_relative() {
        let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|e| format!("(unknown: {e})"));
        origin.push_str(&format!(", relative to the working directory {cwd}"));
    }
    let holds = if settings.raw.store.is_postgres() { "the plan documents" } else { "the sled store and the plan documents" };
    let shown = dir.display();
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Check::pass(what, format!("{shown} ({origin}) exists: {holds}")),
        Ok(_) => Check::fail(what, format!("{shown} ({origin}) is not a directory; set server.data_dir to a directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let instead = match config {
                None => "doctor without --config resolves the embedded defaults here: run doctor where `plangate serve` runs (its \
                         directory and environment), or pass --config with the server's file"
                    .to_string(),
                Some(_) if raw.is_relative() => "a relative data_dir is resolved against the working directory: run doctor where \
                                                 `plangate serve` runs, or make data_dir absolute"
                    .to_string(),
                Some(_) => "no plangate has run with this data_dir yet (`plangate serve` creates it)".to_string(),
            };
            Check::caution(what, format!("{shown} ({origin}) does not exist, so no server keeps its data there; {instead}"))
        }
        Err(e) => Check::fail(what, format!("{shown} ({origin}) cannot be read: {e}")),
    }
}

/// `server.data_dir` as `config` (or the embedded defaults) writes it.
fn as_written(config: Option<&Path>) -> Option<String> {
    let builder = config::Config::builder();
    let builder = match config {
        Some(file) => builder.add_source(config::File::from(file).format(config::FileFormat::Toml)),
        None => builder.add_source(config::File::from_str(crate::config::DEFAULT_TOML, config::FileFormat::Toml)),
    };
    builder.build().ok()?.get_string("server.data_dir").ok()
}
