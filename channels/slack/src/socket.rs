//! Socket Mode: `apps.connections.open` with the app-level token, then a
//! websocket on which Slack delivers interactions and slash commands as
//! envelopes that we acknowledge with their `envelope_id`.
//!
//! slack-morphism runs the connection (reconnects, pings). Its callbacks are
//! plain function pointers, so the [`Dispatcher`] travels in the listener's
//! user state. The ack is sent when a callback returns, so callbacks only
//! translate and spawn (see [`Dispatcher`]); a `view_submission` that fails
//! validation is answered in the ack itself (`response_action: errors`).

use crate::inbound::{Ack, Dispatcher, Interaction, SlashCommand};
use crate::outbound::Api;
use plangate_channel::{Leadership, Shutdown};
use slack_morphism::prelude::*;
use std::sync::Arc;
use tokio::task::JoinHandle;

type Client = SlackClient<SlackClientHyperHttpsConnector>;

/// Returned by the command callback so slack-morphism sends a bare ack
/// (no payload): the answer comes later, ephemerally, from the handler task.
#[derive(Debug)]
struct AckedWithoutPayload;

impl std::fmt::Display for AckedWithoutPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("acknowledged without payload")
    }
}

impl std::error::Error for AckedWithoutPayload {}

/// Run Socket Mode on this replica while `leader` is true. Slack would
/// spread envelopes over every open connection of the app, so only one
/// replica connects; the others wait on the watch and report "follower".
/// Losing leadership closes the socket (the listener's clients are shut
/// down); winning it opens a new one. The task ends on `shutdown`.
pub(crate) fn spawn(
    api: Arc<Api>,
    dispatcher: Arc<Dispatcher>,
    app_token: &str,
    mut shutdown: Shutdown,
    mut leader: Leadership,
    liveness: plangate_channel::Liveness,
) -> JoinHandle<()> {
    let callbacks = SlackSocketModeListenerCallbacks::new()
        .with_command_events(on_command)
        .with_interaction_events(on_interaction)
        .with_hello_events(on_hello);
    let environment = Arc::new(
        SlackClientEventsListenerEnvironment::new(api.client.clone())
            .with_error_handler(on_error)
            .with_user_state(dispatcher)
            .with_user_state(liveness.clone()),
    );
    // One connection; slack-morphism reconnects it when it drops.
    let config = SlackClientSocketModeConfig::new().with_max_connections_count(1).with_reconnect_timeout_in_seconds(5);
    let listener = SlackClientSocketModeListener::new(&config, environment, callbacks);
    let token = SlackApiToken::new(SlackApiTokenValue::new(app_token.to_string())).with_token_type(SlackApiTokenType::App);
    tokio::spawn(async move {
        loop {
            if !*leader.borrow() {
                liveness.follower();
                tracing::info!("Slack Socket Mode: another replica holds the connection; waiting to be elected");
                tokio::select! {
                    () = stopped(&mut shutdown) => break,
                    () = plangate_channel::leading(&mut leader) => {}
                }
                liveness.leading();
            }
            if *shutdown.borrow() {
                break;
            }
            // Registers the connection (no network yet: `apps.connections.open`
            // and the websocket come with `start`); shutdown unregisters it,
            // so each term registers again.
            if let Err(e) = listener.listen_for(&token).await {
                liveness.down(format!("Socket Mode could not be set up: {e}"));
                tracing::error!(error = %e, "Slack Socket Mode could not be set up; trying again in {RETRY:?}");
                tokio::select! {
                    () = stopped(&mut shutdown) => break,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
            listener.start().await;
            tracing::info!("Slack Socket Mode started");
            let lost = tokio::select! {
                () = stopped(&mut shutdown) => false,
                () = plangate_channel::not_leading(&mut leader) => true,
            };
            listener.shutdown().await;
            if !lost {
                break;
            }
            tracing::info!("Slack Socket Mode: no longer the leader; socket closed");
        }
        tracing::info!("Slack Socket Mode stopped");
    })
}

/// How long to wait before registering the connection again after a failure.
const RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// Resolves when shutdown is requested; a dropped sender counts as one
/// (nobody could stop the task otherwise), as it always did here.
async fn stopped(shutdown: &mut Shutdown) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

async fn dispatcher_of(state: &SlackClientEventsUserState) -> Option<Arc<Dispatcher>> {
    state.read().await.get_user_state::<Arc<Dispatcher>>().cloned()
}

async fn on_interaction(
    event: SlackInteractionEvent,
    _client: Arc<Client>,
    state: SlackClientEventsUserState,
) -> UserCallbackResult<SlackInteractionResponse> {
    let Some(dispatcher) = dispatcher_of(&state).await else {
        return Ok(SlackInteractionResponse::Empty);
    };
    // Re-read through plangate's own minimal model, shared with HTTP mode.
    let payload = match serde_json::to_value(&event).and_then(serde_json::from_value::<Interaction>) {
        Ok(payload) => payload,
        Err(e) => {
            tracing::warn!(error = %e, "unreadable Socket Mode interaction; acknowledged and ignored");
            return Ok(SlackInteractionResponse::Empty);
        }
    };
    Ok(match dispatcher.interaction(payload) {
        Ack::Empty => SlackInteractionResponse::Empty,
        Ack::ViewErrors(errors) => SlackViewSubmissionResponse::Errors(SlackViewSubmissionErrorsResponse::new(errors)).into(),
    })
}

async fn on_command(
    event: SlackCommandEvent,
    _client: Arc<Client>,
    state: SlackClientEventsUserState,
) -> UserCallbackResult<SlackCommandEventResponse> {
    if let Some(dispatcher) = dispatcher_of(&state).await {
        match serde_json::to_value(&event).and_then(serde_json::from_value::<SlashCommand>) {
            Ok(command) => {
                dispatcher.command(command);
            }
            Err(e) => tracing::warn!(error = %e, "unreadable Socket Mode slash command; acknowledged and ignored"),
        }
    }
    Err(Box::new(AckedWithoutPayload))
}

/// Everything is acknowledged: an envelope we cannot use does not get better
/// by being redelivered.
/// Slack's `hello` on every (re)connection: Socket Mode is connected.
async fn on_hello<HelloEvent>(_event: HelloEvent, _client: Arc<Client>, state: SlackClientEventsUserState) {
    if let Some(liveness) = state.read().await.get_user_state::<plangate_channel::Liveness>() {
        liveness.ok();
    }
}

fn on_error(error: Box<dyn std::error::Error + Send + Sync>, _client: Arc<Client>, state: SlackClientEventsUserState) -> HttpStatusCode {
    if !error.is::<AckedWithoutPayload>() {
        tracing::warn!(error = %error, "Slack Socket Mode error");
        if let Ok(state) = state.try_read() {
            if let Some(liveness) = state.get_user_state::<plangate_channel::Liveness>() {
                liveness.down(error.to_string());
            }
        }
    }
    HttpStatusCode::OK
}
