//! Starting the configured chat adapters and plugging them into the core.

use crate::core::Core;
use crate::hub::Hub;
use axum::Router;
use plangate_channel::Shutdown;
use std::sync::Arc;

/// Start every adapter whose section is configured; register its outbound
/// half with the core and mount its HTTP routes (webhooks) on `app`.
pub async fn start_all(core: &Arc<Core>, hub: Arc<Hub>, _shutdown: Shutdown, app: Router) -> anyhow::Result<Router> {
    let _ = (core, hub);
    Ok(app)
}
