//! Running plangate for real: what an operator uses besides the API.
//!
//! * [`explain`]: what `plangate config check` says it resolved.
//! * [`backup`]: `plangate backup` and `plangate restore`.
//! * [`retention`]: background pruning and `plangate prune`.
//! * [`doctor`]: a configuration checked against the live platform APIs.
//! * [`list_destinations`]: the running server's destinations, for
//!   `plangate destinations`, `config check` and `doctor`.
pub mod backup;
pub mod doctor;
pub mod explain;
pub mod retention;

use plangate_agent::{AgentError, Client};
use serde_json::Value;

/// `GET /v1/operator/destinations` with `client`'s operator token: every
/// destination of the server, configured and paired (what
/// `plangate destinations`, `config check` and `doctor` show).
pub async fn list_destinations(client: &Client) -> Result<Value, AgentError> {
    client.ok(reqwest::Method::GET, "/v1/operator/destinations", None).await
}
