//! What a valid configuration resolves to, in words: the absolute data dir,
//! the store, the channels, and per agent its destinations and the nudges, timeout and
//! escalation it really gets (and whether each came from `[approvals]` or
//! from its own section). `plangate config check` prints it, so an operator
//! sees the effect of inheritance and relative paths before the first start.

use crate::config::Settings;
use std::fmt::Write;

/// Which cards a destination takes and where in the chat they go.
fn routing(d: &crate::config::DestinationConfig) -> String {
    let projects = if d.projects.is_empty() {
        "every project".to_string()
    } else {
        format!("projects matching {} (a card that names no project does not go there)", d.projects.join(", "))
    };
    let threads = match d.threads {
        plangate_channel::Threads::Off => "in the chat itself",
        plangate_channel::Threads::PerSession => match d.channel.as_str() {
            "telegram" => "a forum topic per session",
            _ => "a thread per session (under the session's first card)",
        },
    };
    format!("{projects}; {threads}")
}

/// An offset as the config writes it (`10m`), for `config check` and `ladder show`.
pub(crate) fn span(ms: u64) -> String {
    humantime::format_duration(std::time::Duration::from_millis(ms)).to_string()
}

/// The explanation, one fact per line.
pub fn explain(settings: &Settings, source: &str) -> String {
    let raw = &settings.raw;
    let mut out = String::new();
    let _ = writeln!(out, "config: {source}");
    let _ = writeln!(out, "bind: {}", settings.bind);
    let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| "?".into());
    let _ =
        writeln!(out, "data_dir: {} (a relative data_dir is resolved against the current directory, {cwd})", settings.data_dir.display());
    let store = &raw.store;
    if store.is_postgres() {
        let url = crate::config::mask_url_password(store.postgres_url.as_deref().unwrap_or_default());
        let _ = writeln!(
            out,
            "store: postgres at {url}, schema {}, {} connections, lease {} s (replicas may share it; each replica's data_dir keeps its plan documents and web secret)",
            store.postgres_schema, store.pool_size, store.lease_seconds
        );
    } else {
        let _ = writeln!(out, "store: sled under data_dir (one process)");
    }
    let channels: Vec<&str> = [("telegram", raw.telegram.is_some()), ("slack", raw.slack.is_some()), ("discord", raw.discord.is_some())]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect();
    let _ = writeln!(
        out,
        "channels: {}",
        if channels.is_empty() { "none (cards are recorded in the audit, not posted)".to_string() } else { channels.join(", ") }
    );
    for (id, agent) in &raw.agents {
        let own = agent.approvals.as_ref();
        let effective = own.map(|o| o.over(&raw.approvals)).unwrap_or_else(|| raw.approvals.clone());
        let from = |set: bool| if set { "its own [agents.".to_string() + id + ".approvals]" } else { "[approvals]".to_string() };
        let nudges = if effective.nudges.is_empty() { "none".to_string() } else { effective.nudges.join(", ") };
        let escalate = if effective.escalate_to.is_empty() { "none".to_string() } else { effective.escalate_to.join(", ") };
        let destinations = if agent.destinations.is_empty() { "none".to_string() } else { agent.destinations.join(", ") };
        let _ = writeln!(out, "agent {id}: destinations {destinations}");
        for name in &agent.destinations {
            if let Some(d) = raw.destinations.get(name) {
                let _ = writeln!(out, "  cards to {name}: {}", routing(d));
            }
        }
        let _ = writeln!(out, "  nudges {nudges} (from {})", from(own.is_some_and(|o| o.nudges.is_some())));
        let _ = writeln!(out, "  timeout {} (from {})", effective.timeout, from(own.is_some_and(|o| o.timeout.is_some())));
        let _ = writeln!(out, "  escalate_to {escalate} (from {})", from(own.is_some_and(|o| o.escalate_to.is_some())));
        for (i, level) in settings.ladders.get(id).into_iter().flatten().enumerate() {
            let mut targets: Vec<String> = level.destinations.iter().map(|d| format!("destination {d}")).collect();
            targets.extend(level.approvers.iter().map(|a| format!("approver {a}")));
            targets.extend(level.emails.iter().map(|e| format!("email {e}")));
            targets.extend(level.schedules.iter().map(|s| format!("schedule {s}")));
            let every = level.repeat_ms.map(|r| format!(", again every {}", span(r))).unwrap_or_default();
            let _ = writeln!(
                out,
                "  ladder level {} at +{}{every}: {} (from {})",
                i + 1,
                span(level.after_ms),
                targets.join(", "),
                from(own.is_some_and(|o| o.ladder.is_some() || o.escalate_to.is_some()))
            );
        }
    }
    out
}
