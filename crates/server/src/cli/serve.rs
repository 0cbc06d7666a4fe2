//! `plangate serve`: open the store, start the core, the channels, the
//! web page, the scheduler and the replicas' work, serve the API until a
//! signal, then stop in order (long-polls answered, transitions committed,
//! chat work drained or left in the outbox, the audit head signed).

use crate::config::Settings;
use crate::core::Core;
use crate::hub::Hub;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// The target of this module's events: the binary's, as when `serve` was
/// in `main.rs`, so `RUST_LOG` directives and log readers see what they
/// saw before.
const TARGET: &str = "plangate";

/// `plangate serve`: logs on stderr in `log_format`, then the server until a
/// shutdown signal; 0 once it stopped cleanly.
pub async fn serve(config: Option<PathBuf>, log_format: &str) -> Result<i32> {
    init_logs(log_format);
    run(config).await.map(|()| 0)
}

async fn run(config: Option<PathBuf>) -> Result<()> {
    let settings = Arc::new(Settings::load(config.as_deref())?);
    tracing::info!(target: TARGET, data_dir = %settings.data_dir.display(), "data_dir (absolute; a relative one is resolved against the current directory)");
    std::fs::create_dir_all(&settings.data_dir).with_context(|| format!("cannot create data_dir {}", settings.data_dir.display()))?;
    // Opening blocks (sled replays files; the PostgreSQL store waits on
    // its client) and must not run on an async worker.
    let opening = settings.clone();
    let (store, info) = tokio::task::spawn_blocking(move || -> Result<_> {
        crate::storage::store_from_settings(&opening).with_context(|| format!("cannot open the {} store", opening.raw.store.backend.trim()))
    })
    .await
    .context("the task opening the store failed")??;
    tracing::info!(
        target: TARGET,
        backend = info.backend,
        location = %info.location,
        replica = info.replica_id.as_deref().unwrap_or("-"),
        shared = store.shared(),
        "store opened"
    );
    // The system clock; a debug build's test clock only when a test asks
    // (`crate::clock::TEST_CLOCK_ENV`).
    let serve_clock = crate::clock::for_serve().map_err(anyhow::Error::msg)?;
    let core = Core::with_clock(settings.clone(), store, serve_clock.clock.clone());
    core.storage.set_info(info);
    // Counted after start, not before it: PostgreSQL counts its index
    // (sled keeps the count, a share per session stripe, and sums them).
    tokio::spawn(count_pending(core.clone()));
    core.pairing.refresh().await.context("cannot read the paired destinations from the store")?;
    let checkpointer = Arc::new(crate::audit::Checkpointer::new(
        crate::audit::load_or_create_key(&settings.data_dir)?,
        settings.raw.audit.checkpoint_file.clone(),
    ));
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    // Before anything can park a waiter: other replicas' commits wake them.
    let replicas = crate::replicas::start(crate::replicas::Replicas::of(&core), shutdown_rx.clone()).await?;
    let hub = Arc::new(Hub::new(core.clone()));
    let mut app = crate::http::router(core.clone());
    #[cfg(debug_assertions)]
    if let Some(turned) = serve_clock.turned {
        app = crate::http::with_test_clock(app, core.clone(), turned);
    }
    if let Some(web) = crate::web::start(&core).context("cannot start the web page")? {
        if core.settings.raw.push.is_some() {
            crate::push::start(&core).context("cannot read or create the VAPID key of [push]")?;
            app = crate::http::with_push(app, core.clone(), web.clone());
        }
        app = crate::http::with_web(app, web);
    }
    if core.mailer.is_some() {
        app = crate::http::with_email(app, core.clone());
    }
    let (app, channels) = crate::channels::start_all(&core, hub, shutdown_rx.clone(), app).await?;
    core.resume_outbox().await.context("cannot read the outbox of chat work left from the last run")?;
    let scheduler = tokio::spawn(crate::scheduler::run(core.clone(), shutdown_rx.clone()));
    let retention = tokio::spawn(crate::ops::retention::run(core.clone(), shutdown_rx.clone()));
    let interval = settings.raw.audit.interval()?;
    let checkpoints = tokio::spawn(checkpointer.clone().run(core.clone(), interval, shutdown_rx.clone()));

    let listener = tokio::net::TcpListener::bind(settings.bind).await.with_context(|| format!("cannot listen on {}", settings.bind))?;
    let addr = listener.local_addr()?;
    println!("plangate listening on http://{addr}");
    tracing::info!(target: TARGET, %addr, data_dir = %settings.data_dir.display(), "serving");
    let stopping = core.clone();
    let graceful = async move {
        shutdown_signal().await;
        tracing::info!(target: TARGET, waiting = stopping.waiters.parked(), "shutting down: waiting long-polls are answered 503 shutting_down");
        stopping.waiters.begin_shutdown();
    };
    // With each connection's peer address: failed authentications are
    // limited per client address (`throttle`).
    axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>()).with_graceful_shutdown(graceful).await?;
    tracing::info!(target: TARGET, "shutting down: in-flight transitions have committed");
    let _ = shutdown_tx.send(true);
    let _ = scheduler.await;
    let _ = retention.await;
    let _ = checkpoints.await;
    for task in replicas {
        let _ = task.await;
    }
    channels.stop().await;
    if let Err(left) = core.chat.drain(std::time::Duration::from_secs(10)).await {
        tracing::warn!(target: TARGET, %left, "stopping with chat work queued: it stays in the outbox and is resumed at the next start");
    }
    // After the last transition: the head this process leaves, signed.
    if let Err(e) = checkpointer.checkpoint(&core).await {
        tracing::error!(target: TARGET, error = %e, "the audit checkpoint at shutdown failed");
    }
    core.blocking(|s| s.flush()).await?;
    Ok(())
}

/// Set the pending gauge from the store, counting again while transitions
/// change it under the count (three tries; then the gauge keeps what the
/// transitions since start added, and says so).
async fn count_pending(core: Arc<Core>) {
    for _ in 0..3 {
        let before = core.metrics.pending_changes();
        let counted = core.blocking(|s| s.count_proposals(plangate_engine::DecisionStatus::Pending)).await;
        match counted {
            Ok(n) if core.metrics.settle_pending(i64::try_from(n).unwrap_or(i64::MAX), before) => return,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(target: TARGET, error = %e, "could not count the pending approvals; the pending_approvals gauge counts from zero");
                return;
            }
        }
    }
    tracing::warn!(target: TARGET, "the pending approvals kept changing while counted; the pending_approvals gauge counts from zero");
}

/// Logs on stderr, filtered by `RUST_LOG` (default `info`). Secrets are
/// never logged: config values are not traced, channel secrets are
/// `secrecy` strings, and request spans carry the method and path only.
fn init_logs(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if format == "json" {
        logs.json().with_current_span(true).with_span_list(true).init();
    } else {
        logs.init();
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
