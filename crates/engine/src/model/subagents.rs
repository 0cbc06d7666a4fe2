//! An open subagent run as the session holds it, and how sessions stored
//! before runs had times read: plain values. The rules are in
//! [`crate::subagents`].

use crate::ids::Timestamp;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// One open run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentRun {
    pub opened_at: Timestamp,
    /// When the run was last opened or heard of (a heartbeat).
    pub seen_at: Timestamp,
    /// When its expiry timer is due; `None` while expiry is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

/// Open runs by run id. Sessions stored before runs had times kept a plain
/// list of ids: those runs read as opened (and last seen) at time zero, and
/// get an expiry timer at their next heartbeat.
pub fn deserialize_runs<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, SubagentRun>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Runs(BTreeMap<String, SubagentRun>),
        Ids(Vec<String>),
    }
    Ok(match Stored::deserialize(deserializer)? {
        Stored::Runs(runs) => runs,
        Stored::Ids(ids) => {
            let legacy = SubagentRun { opened_at: Timestamp(0), seen_at: Timestamp(0), expires_at: None };
            ids.into_iter().map(|id| (id, legacy.clone())).collect()
        }
    })
}
