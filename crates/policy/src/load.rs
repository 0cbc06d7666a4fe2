//! Reading the policy: the `[policy]` section of the server's config and
//! every `*.toml` file of the `policy.d/` directory beside the config file.
//! The only I/O of the crate.

use crate::{Policy, PolicyError, RuleSpec, Source};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The directory beside the config file whose `*.toml` files hold rules.
pub const POLICY_DIR: &str = "policy.d";

/// The config's `[policy]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
}

/// A file of `policy.d/`: `[[rules]]` entries, nothing else.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    rules: Vec<RuleSpec>,
}

impl Policy {
    /// The effective policy of a config file (`None`: the embedded
    /// defaults, which have no `policy.d/`): its section, then the files of
    /// `policy.d/` beside it in name order. A missing directory is no
    /// policy; an unreadable one, or a file that does not parse, is an
    /// error (a policy silently half read would widen what runs).
    pub fn load(section: &Section, config: Option<&Path>) -> Result<Policy, PolicyError> {
        let mut sources = vec![(Source::Config(config.map(Path::to_path_buf)), section.rules.clone())];
        if let Some(dir) = config.map(policy_dir) {
            sources.extend(read_dir(&dir)?);
        }
        let policy = Policy::compile(sources)?;
        tracing::debug!(rules = policy.rules().len(), "policy loaded");
        Ok(policy)
    }

    /// The rules of one policy file (`plangate policy test --config` of a
    /// lone `policy.d` file).
    pub fn read_file(path: &Path) -> Result<Vec<RuleSpec>, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read { path: path.to_path_buf(), source })?;
        let file: File = toml::from_str(&text).map_err(|e| PolicyError::Parse { path: path.to_path_buf(), message: e.to_string() })?;
        Ok(file.rules)
    }
}

/// `policy.d/` beside the config file.
pub fn policy_dir(config: &Path) -> PathBuf {
    config.parent().unwrap_or(Path::new(".")).join(POLICY_DIR)
}

fn read_dir(dir: &Path) -> Result<Vec<(Source, Vec<RuleSpec>)>, PolicyError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(PolicyError::Read { path: dir.to_path_buf(), source }),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|source| PolicyError::Read { path: dir.to_path_buf(), source })?.path();
        if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    files.into_iter().map(|path| Ok((Source::File(path.clone()), Policy::read_file(&path)?))).collect()
}

/// Rules as a `policy.d` file holds them, for `policy show` and `policy
/// suggest` to print what an operator can paste.
pub fn to_toml(rules: &[RuleSpec]) -> String {
    toml::to_string(&File { rules: rules.to_vec() }).unwrap_or_default()
}
