//! Starting the configured chat adapters and plugging them into the core.
//!
//! Each adapter gets its own config section (deserialized by the adapter's
//! own type, so unknown keys fail at start with the adapter's message), the
//! hub as its inbound handler, the shutdown signal, and its role's
//! leadership (`Roles::leadership`: only the elected replica holds the
//! Telegram poll, the Slack socket or the Discord gateway; every replica
//! sends, edits and serves the HTTP endpoints). Its outbound half is
//! registered with the core; its HTTP routes (webhooks, signed interaction
//! endpoints) are merged into plangate's axum router.

use crate::core::Core;
use crate::hub::Hub;
use anyhow::{Context, Result};
use axum::Router;
use plangate_channel::{Adapter, InboundHandler, Shutdown};
use std::sync::Arc;
use tokio::task::JoinHandle;

/// Background transports to await on shutdown.
pub struct Running {
    pub tasks: Vec<JoinHandle<()>>,
}

impl Running {
    pub async fn stop(self) {
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

fn section<T: serde::de::DeserializeOwned>(value: &serde_json::Value, name: &str) -> Result<T> {
    serde_json::from_value(value.clone()).with_context(|| format!("invalid [{name}] section"))
}

/// Start every adapter whose section is configured.
pub async fn start_all(core: &Arc<Core>, hub: Arc<Hub>, shutdown: Shutdown, mut app: Router) -> Result<(Router, Running)> {
    let raw = core.settings.raw.clone();
    let mut adapters: Vec<(&'static str, Adapter)> = Vec::new();
    let handler: Arc<dyn InboundHandler> = hub.clone();
    if let Some(value) = &raw.telegram {
        let config: plangate_telegram::TelegramConfig = section(value, "telegram")?;
        let adapter = plangate_telegram::start(config, handler.clone(), shutdown.clone(), core.roles.leadership("telegram"))
            .await
            .context("cannot start the Telegram adapter")?;
        adapters.push(("telegram", adapter));
    }
    if let Some(value) = &raw.slack {
        let config: plangate_slack::SlackConfig = section(value, "slack")?;
        let allowed = config.allowed_teams();
        // The core's clock times the signed-request window too (one clock).
        let options = plangate_slack::StartOptions { clock: core.clock() };
        let adapter = plangate_slack::start_with(config, handler.clone(), shutdown.clone(), core.roles.leadership("slack"), options)
            .await
            .context("cannot start the Slack adapter")?;
        // The home workspace (configured, or learned from auth.test) and the
        // opted-in others, registered as soon as the adapter is up.
        for team in adapter.expected_team.iter().cloned().chain(allowed) {
            hub.expect_team("slack", team);
        }
        adapters.push(("slack", adapter));
    }
    if let Some(value) = &raw.discord {
        let config: plangate_discord::DiscordConfig = section(value, "discord")?;
        let adapter =
            plangate_discord::start_with_clock(config, handler.clone(), shutdown.clone(), core.roles.leadership("discord"), core.clock())
                .await
                .context("cannot start the Discord adapter")?;
        adapters.push(("discord", adapter));
    }
    let mut tasks = Vec::new();
    for (name, adapter) in adapters {
        tracing::info!(channel = name, "channel started");
        core.adapters.register(adapter.channel.clone());
        core.adapters.register_liveness(name, adapter.liveness.clone());
        if let Some(team) = adapter.expected_team {
            hub.expect_team(name, team);
        }
        if let Some(routes) = adapter.routes {
            app = app.merge(routes);
        }
        tasks.extend(adapter.task);
    }
    Ok((app, Running { tasks }))
}
