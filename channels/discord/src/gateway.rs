//! The gateway transport: serenity's `Client` with an `interaction_create` handler.

use crate::inbound::Inbox;
use crate::rest::Rest;
use crate::DiscordError;
use plangate_channel::Shutdown;
use serenity::all::{Context, EventHandler, GatewayIntents, Interaction, Ready};
use serenity::client::ClientBuilder;
use std::sync::Arc;

struct Handler {
    inbox: Arc<Inbox>,
    rest: Arc<Rest>,
    liveness: plangate_channel::Liveness,
}

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        tracing::info!(user = %ready.user.name, guilds = ready.guilds.len(), "discord gateway ready");
        self.liveness.ok();
    }

    async fn resume(&self, _ctx: Context, _event: serenity::all::ResumedEvent) {
        self.liveness.ok();
    }

    /// The shard's connection stage: anything but connected is not ready.
    async fn shard_stage_update(&self, _ctx: Context, event: serenity::all::ShardStageUpdateEvent) {
        if event.new == serenity::all::ConnectionStage::Connected {
            self.liveness.ok();
        } else {
            self.liveness.down(format!("gateway {}", event.new));
        }
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        let (id, token) = (interaction.id(), interaction.token().to_string());
        let outcome = self.inbox.process(interaction).await;
        if let Some(initial) = outcome.initial {
            if let Err(e) = self.rest.interaction_callback(id, &token, &initial).await {
                tracing::warn!(interaction = %id, error = %e, "discord: could not answer the interaction");
                return;
            }
        }
        if let Some(sent) = outcome.sent {
            let _ = sent.send(());
        }
    }
}

async fn wait_for(mut shutdown: Shutdown) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        if shutdown.changed().await.is_err() {
            // The sender is gone: nobody can ask us to stop any more, so run on.
            std::future::pending::<()>().await;
        }
    }
}

/// Build the client (it asks `GET /api/v10/gateway` for the websocket URL)
/// and run it until `shutdown`.
pub(crate) async fn spawn(
    rest: Arc<Rest>,
    inbox: Arc<Inbox>,
    shutdown: Shutdown,
    liveness: plangate_channel::Liveness,
) -> Result<tokio::task::JoinHandle<()>, DiscordError> {
    let http = rest.serenity_http();
    let builder = ClientBuilder::new_with_http(http, GatewayIntents::empty()).event_handler(Handler { inbox, rest, liveness });
    let mut client = builder.await.map_err(|e| DiscordError::Gateway(e.to_string()))?;
    let shards = client.shard_manager.clone();
    Ok(tokio::spawn(async move {
        tokio::select! {
            result = client.start() => {
                if let Err(e) = result {
                    tracing::error!(error = %e, "discord gateway stopped");
                }
            }
            () = wait_for(shutdown) => {
                tracing::info!("discord gateway shutting down");
                shards.shutdown_all().await;
            }
        }
    }))
}
