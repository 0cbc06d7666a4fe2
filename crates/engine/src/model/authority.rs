//! The values of who may open the gate that the state holds: the approver
//! lists an [`ApprovalPolicy`](crate::model::ApprovalPolicy) carries and a
//! person's pending request to release a session. The check itself is
//! [`crate::authority`].

use crate::ids::Timestamp;
use crate::model::Actor;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Who, besides the operator, may open the gate of an agent's sessions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Approvers {
    /// The caller checked the person itself. Only for tests and tools that
    /// drive the engine directly; the server always passes [`Approvers::Listed`].
    #[default]
    Unchecked,
    /// The identities (`telegram:111`) on the approver lists of the agent's
    /// destinations, its escalation ones included. Empty: nobody but the
    /// operator (an unknown agent).
    Listed(Arc<BTreeSet<String>>),
}

impl Approvers {
    pub fn listed<I: IntoIterator<Item = S>, S: Into<String>>(ids: I) -> Approvers {
        Approvers::Listed(Arc::new(ids.into_iter().map(Into::into).collect()))
    }

    pub(crate) fn admits(&self, actor: &Actor) -> bool {
        match (self, actor) {
            (_, Actor::Operator { .. }) => true,
            (Approvers::Unchecked, Actor::Human { .. }) => true,
            (Approvers::Listed(ids), Actor::Human { id, .. }) => ids.contains(id),
            (_, Actor::Agent | Actor::Scheduler) => false,
        }
    }
}

/// One person's request to release a session, waiting for the quorum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseRequest {
    /// Who, as an identity: what makes requests distinct.
    pub approver: String,
    /// How receipts show them.
    pub by: String,
    pub at: Timestamp,
    /// The session version it was made at: a new proposal starts over.
    pub version: u32,
}
