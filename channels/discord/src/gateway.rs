//! The gateway transport: serenity's `Client` with an `interaction_create` handler.

use crate::inbound::Inbox;
use crate::rest::Rest;
use crate::DiscordError;
use plangate_channel::{Leadership, Shutdown};
use serenity::all::{Context, EventHandler, GatewayIntents, Interaction, Ready};
use serenity::client::{Client, ClientBuilder};
use std::sync::Arc;
use std::time::Duration;

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

/// Resolves when shutdown is requested. The sender gone means nobody can
/// ask us to stop any more, so then it never resolves and the task runs on.
async fn stopped(shutdown: &mut Shutdown) {
    if shutdown.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// How long to wait before connecting again when the gateway client could
/// not be built or stopped on its own (a bad token, Discord unreachable).
const RETRY: Duration = Duration::from_secs(30);

/// The gateway client, which asks `GET /api/v10/gateway` for the websocket
/// URL (only the leader needs it, so it is built per leadership term).
pub(crate) async fn connect(rest: &Arc<Rest>, inbox: &Arc<Inbox>, liveness: &plangate_channel::Liveness) -> Result<Client, DiscordError> {
    let handler = Handler { inbox: inbox.clone(), rest: rest.clone(), liveness: liveness.clone() };
    let builder = ClientBuilder::new_with_http(rest.serenity_http(), GatewayIntents::empty()).event_handler(handler);
    builder.await.map_err(|e| DiscordError::Gateway(e.to_string()))
}

/// Run the gateway while `leader` is true, until `shutdown`. Discord
/// delivers each interaction to one session of the bot, so only one replica
/// keeps one; the others wait on the watch and report "follower". Losing
/// leadership shuts the shard down; winning it builds a new client and
/// identifies again. `first` is the client [`start`](crate::start) built
/// when this process led from the beginning (a bad setup then fails the
/// start, as it always did).
pub(crate) fn spawn(
    rest: Arc<Rest>,
    inbox: Arc<Inbox>,
    first: Option<Client>,
    mut shutdown: Shutdown,
    mut leader: Leadership,
    liveness: plangate_channel::Liveness,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ready = first;
        loop {
            if !*leader.borrow() {
                // A client built while leading is stale now; build afresh.
                ready = None;
                liveness.follower();
                tracing::info!("discord: another replica holds the gateway session; waiting to be elected");
                tokio::select! {
                    () = stopped(&mut shutdown) => break,
                    () = plangate_channel::leading(&mut leader) => {}
                }
                liveness.leading();
            }
            let mut client = match ready.take() {
                Some(client) => client,
                None => match connect(&rest, &inbox, &liveness).await {
                    Ok(client) => client,
                    Err(e) => {
                        tracing::error!(error = %e, "discord gateway: trying again in {RETRY:?}");
                        liveness.down(e.to_string());
                        tokio::select! {
                            () = stopped(&mut shutdown) => break,
                            () = plangate_channel::not_leading(&mut leader) => continue,
                            () = tokio::time::sleep(RETRY) => continue,
                        }
                    }
                },
            };
            let shards = client.shard_manager.clone();
            tokio::select! {
                result = client.start() => {
                    let why = match result {
                        Ok(()) => "the gateway client stopped".to_string(),
                        Err(e) => e.to_string(),
                    };
                    tracing::error!(error = %why, "discord gateway stopped; connecting again in {RETRY:?}");
                    liveness.down(why);
                    tokio::select! {
                        () = stopped(&mut shutdown) => break,
                        () = plangate_channel::not_leading(&mut leader) => {}
                        () = tokio::time::sleep(RETRY) => {}
                    }
                }
                () = stopped(&mut shutdown) => {
                    tracing::info!("discord gateway shutting down");
                    shards.shutdown_all().await;
                    break;
                }
                () = plangate_channel::not_leading(&mut leader) => {
                    tracing::info!("discord: no longer the leader; shutting the gateway session down");
                    shards.shutdown_all().await;
                }
            }
        }
    })
}
