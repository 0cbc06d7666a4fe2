//! `plangate doctor`'s run: every check printed as it is made, in the order
//! a setup depends on them — where the data is, the store, the running
//! server (its readiness, the agent token, its destinations and their
//! approvers), the chat platforms (the configured destinations and the
//! server's, paired ones included), `server.public_url`, the agent hooks.
//! Exit 1 when any check fails (a warning does not), 0 otherwise.

use super::{data_dir, hooks, public_url, run, server, store, Check};
use crate::config::Settings;
use std::path::Path;

/// Print `checks` and keep them for the exit code.
fn show(all: &mut Vec<Check>, checks: impl IntoIterator<Item = Check>) {
    for check in checks {
        println!("{check}");
        all.push(check);
    }
}

/// `plangate doctor [--config FILE] [--url URL]`: the exit code.
pub async fn command(config: Option<&Path>, url: Option<String>) -> anyhow::Result<i32> {
    let settings = Settings::load(config)?;
    let mut all = Vec::new();
    show(&mut all, [data_dir::check(&settings, config)]);
    show(&mut all, store(&settings).await);

    let target = server::Target::of(&settings, config, url);
    let running = server::check(&settings, config, &target).await;
    show(&mut all, running.checks);

    // The server's destinations that the config doctor loaded does not
    // have (paired ones, or all of them without --config) are checked
    // against their platform like configured ones, when doctor has that
    // platform's section.
    let mut with_server = settings.clone();
    let mut unchecked = Vec::new();
    for (name, destination) in running.destinations {
        if with_server.raw.destinations.contains_key(&name) {
            continue;
        }
        let section = match destination.channel.as_str() {
            "telegram" => &with_server.raw.telegram,
            "slack" => &with_server.raw.slack,
            "discord" => &with_server.raw.discord,
            _ => &None,
        };
        if section.is_none() {
            unchecked.push(Check::caution(
                format!("destinations.{name}.chat"),
                format!(
                    "not checked against {0}: doctor has no [{0}] section; export its PLANGATE__{1}__… variables as for \
                     `plangate serve`, or pass --config with the server's file",
                    destination.channel,
                    destination.channel.to_ascii_uppercase()
                ),
            ));
        }
        with_server.raw.destinations.insert(name, destination);
    }
    let platforms = run(&with_server).await;
    if platforms.is_empty() && unchecked.is_empty() {
        println!("no chat channel is configured: nothing to check against a platform");
    }
    show(&mut all, platforms);
    show(&mut all, unchecked);

    show(&mut all, public_url(&settings).await);
    show(&mut all, hooks(&std::env::current_dir()?));
    Ok(if all.iter().all(|c| c.ok) { 0 } else { 1 })
}
