//! The small records kept beside the sessions and written outside a
//! commit: event keys, cursors, namespaces (written at a revision),
//! permission rules and document paths. Each write is durable when it
//! returns (a flush shared with the commits) and counted for the next
//! checkpoint.

use super::keys::agent_prefix;
use super::{decode, encode, SledStore, Trees};
use crate::{Committed, Cursors, Documents, EventKeys, Namespaces, PermissionRules, Preempted, StoreError};
use plangate_engine::namespace::Namespace;
use plangate_engine::permission::StoredRule;
use plangate_engine::ApprovalId;

/// A namespace as the `namespaces` tree keeps it: the engine's JSON with a
/// `revision` beside `steps` (readers that do not know it ignore it; a
/// record written before it existed counts as revision 1).
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredNamespace {
    #[serde(flatten)]
    namespace: Namespace,
    #[serde(default = "first_revision")]
    revision: u64,
}

fn first_revision() -> u64 {
    1
}

impl SledStore {
    /// Write an idempotency key unless it is there; `true` when it was not.
    fn record_fresh(t: &Trees, key: &str) -> Result<bool, StoreError> {
        Ok(t.idempotency.compare_and_swap(key.as_bytes(), None as Option<&[u8]>, Some(&[1u8][..]))?.is_ok())
    }
}

impl EventKeys for SledStore {
    fn seen(&self, key: &str) -> Result<bool, StoreError> {
        let t = self.trees()?;
        Ok(t.idempotency.contains_key(key.as_bytes())?)
    }

    fn mark_seen(&self, key: &str) -> Result<(), StoreError> {
        let t = self.trees()?;
        // The hub marks every event it handled, also one whose transition
        // already wrote (and flushed) the key in its commit: a key already
        // here costs no second flush. Only a key new here is flushed.
        if Self::record_fresh(&t, key)? {
            self.flushed_small(t, ())?;
        }
        Ok(())
    }

    fn record_once(&self, key: &str) -> Result<bool, StoreError> {
        let t = self.trees()?;
        let fresh = Self::record_fresh(&t, key)?;
        self.flushed_small(t, fresh)
    }
}

impl Cursors for SledStore {
    fn cursor(&self, key: &str) -> Result<Option<String>, StoreError> {
        let t = self.trees()?;
        Ok(t.meta.get(format!("cursor:{key}"))?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.meta.insert(format!("cursor:{key}"), value.as_bytes())?;
        self.flushed_small(t, ())
    }

    fn cursors_with_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, StoreError> {
        let t = self.trees()?;
        t.meta
            .scan_prefix(format!("cursor:{prefix}"))
            .map(|entry| {
                let (k, v) = entry?;
                let key = String::from_utf8_lossy(&k["cursor:".len()..]).into_owned();
                Ok((key, String::from_utf8_lossy(&v).into_owned()))
            })
            .collect()
    }

    fn swap_cursor(&self, key: &str, expected: Option<&str>, value: Option<&str>) -> Result<bool, StoreError> {
        let t = self.trees()?;
        let swapped = t.meta.compare_and_swap(format!("cursor:{key}"), expected.map(str::as_bytes), value.map(str::as_bytes))?;
        self.flushed_small(t, swapped.is_ok())
    }
}

impl Namespaces for SledStore {
    fn namespace_revision(&self, name: &str) -> Result<(Namespace, u64), StoreError> {
        let t = self.trees()?;
        match t.namespaces.get(name)? {
            None => Ok((Namespace::default(), 0)),
            Some(bytes) => {
                let stored: StoredNamespace = decode(&bytes, "namespace")?;
                Ok((stored.namespace, stored.revision))
            }
        }
    }

    /// Compare-and-swap on the stored bytes: the write lands only if the
    /// record is still the one whose revision was checked.
    fn set_namespace(&self, name: &str, ns: &Namespace, expected_revision: u64) -> Result<Committed, StoreError> {
        let t = self.trees()?;
        let current = t.namespaces.get(name)?;
        let revision = match &current {
            None => 0,
            Some(bytes) => decode::<StoredNamespace>(bytes, "namespace")?.revision,
        };
        if revision != expected_revision {
            return Ok(Committed::Preempted(Preempted::Conflict));
        }
        let next = encode(&StoredNamespace { namespace: ns.clone(), revision: revision + 1 });
        if t.namespaces.compare_and_swap(name, current, Some(next))?.is_err() {
            return Ok(Committed::Preempted(Preempted::Conflict));
        }
        self.flushed_small(t, Committed::Written(()))
    }
}

impl PermissionRules for SledStore {
    fn permission_rules(&self, agent: &str) -> Result<Vec<StoredRule>, StoreError> {
        let t = self.trees()?;
        Self::list(&t.rules, &agent_prefix(agent), "permission rule")
    }

    fn remove_permission_rule(&self, agent: &str, id: &str) -> Result<bool, StoreError> {
        let _snapshot = self.snapshot_lock.read().unwrap_or_else(|e| e.into_inner());
        let t = self.trees()?;
        for entry in t.rules.scan_prefix(agent_prefix(agent)) {
            let (key, value) = entry?;
            let rule: StoredRule = decode(&value, "permission rule")?;
            if rule.id == id {
                t.rules.remove(key)?;
                return self.flushed_small(t, true);
            }
        }
        Ok(false)
    }
}

impl Documents for SledStore {
    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError> {
        let t = self.trees()?;
        Ok(t.documents.get(id.0)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError> {
        let t = self.trees()?;
        t.documents.insert(id.0, path.as_bytes())?;
        self.flushed_small(t, ())
    }
}
