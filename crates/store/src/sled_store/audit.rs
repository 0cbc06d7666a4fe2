//! The audit ([`AuditLog`]): records sealed into the chain under its one
//! mutex, in the order of their keys, so they are numbered and linked
//! without gaps or forks; queried newest first, and read back in pages.

use super::{decode, SledStore, Trees};
use crate::chained;
use crate::{AuditLog, AuditQuery, StoreError};
use plangate_audit::Chain;
use plangate_engine::{AuditEvent, Timestamp};
use std::sync::MutexGuard;

/// Audit records read per hold of the database by [`AuditLog::visit_audit_chain`].
const AUDIT_PAGE: usize = 1000;

/// The chain whose head is the audit's last record.
pub(super) fn head_of(t: &Trees) -> Result<Chain, StoreError> {
    match t.audit.last()? {
        Some((_, value)) => {
            let record = chained::unseal(&value)?;
            Ok(Chain::after(record.seq, record.hash))
        }
        None => Ok(Chain::genesis()),
    }
}

impl Trees {
    /// The key of the first audit entry recorded at or after `since`, by
    /// bisecting the keys: they are ids drawn in commit order, and entries
    /// are written in time order (a step back of the wall clock aside, which
    /// the margin callers leave covers). About 64 point reads, whatever the
    /// audit's length.
    fn first_audit_at(&self, since: Timestamp) -> Result<Option<u64>, StoreError> {
        let id = |key: &[u8]| key.try_into().map(u64::from_be_bytes).unwrap_or(u64::MAX);
        let (Some((first, _)), Some((last, _))) = (self.audit.first()?, self.audit.last()?) else { return Ok(None) };
        let (mut lo, mut hi) = (id(&first), id(&last).saturating_add(1));
        let mut found = None;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let Some(entry) = self.audit.range(mid.to_be_bytes()..hi.to_be_bytes()).next() else {
                hi = mid;
                continue;
            };
            let (key, value) = entry?;
            let event: AuditEvent = decode(&value, "audit")?;
            if event.at < since {
                lo = id(&key).saturating_add(1);
            } else {
                // Nothing lies between `mid` and this key: the answer is
                // this key or one before `mid`.
                found = Some(id(&key));
                hi = mid;
            }
        }
        Ok(found)
    }
}

impl SledStore {
    /// The audit chain's head, locked: loaded from the last record the
    /// first time. Hold it while sealing and writing audit records.
    pub(super) fn chain_head(&self, t: &Trees) -> Result<MutexGuard<'_, Option<Chain>>, StoreError> {
        let mut head = self.chain.lock().unwrap_or_else(|e| e.into_inner());
        if head.is_none() {
            *head = Some(head_of(t)?);
        }
        Ok(head)
    }
}

impl AuditLog for SledStore {
    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        let t = self.trees()?;
        let mut head = self.chain_head(&t)?;
        for event in events {
            let mut chain = head.unwrap_or_default();
            let id = t.db.generate_id()?;
            t.audit.insert(id.to_be_bytes(), chained::unsealed(event).seal(&mut chain).2)?;
            *head = Some(chain);
        }
        drop(head);
        self.flushed_small(t, ())
    }

    fn audit_head(&self) -> Result<Option<(u64, crate::AuditHash)>, StoreError> {
        let t = self.trees()?;
        let head = self.chain_head(&t)?;
        Ok(head.and_then(|chain| chain.head()))
    }

    fn visit_audit_chain(&self, since: Option<Timestamp>, visit: &mut dyn FnMut(crate::AuditRecord) -> bool) -> Result<(), StoreError> {
        let mut from = {
            let t = self.trees()?;
            match since {
                Some(since) => match t.first_audit_at(since)? {
                    Some(start) => start,
                    None => return Ok(()),
                },
                None => 0,
            }
        };
        loop {
            // One page per hold of the database: a checkpoint (which
            // closes it) waits for a page, not for the whole export.
            let t = self.trees()?;
            let mut last = None;
            for entry in t.audit.range(from.to_be_bytes()..).take(AUDIT_PAGE) {
                let (key, value) = entry?;
                last = Some(u64::from_be_bytes(
                    key.as_ref().try_into().map_err(|_| StoreError::AuditChain("an audit key that is not 8 bytes".into()))?,
                ));
                if !visit(chained::unseal(&value)?) {
                    return Ok(());
                }
            }
            match last.and_then(|k| k.checked_add(1)) {
                Some(next) => from = next,
                None => return Ok(()),
            }
        }
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        let t = self.trees()?;
        let mut out = Vec::new();
        let entries = match query.since {
            Some(since) => match t.first_audit_at(since)? {
                Some(start) => t.audit.range(start.to_be_bytes()..),
                None => return Ok(out),
            },
            None => t.audit.iter(),
        };
        // An approval's entries hold its id as the store wrote it (`"<hex>"`):
        // an entry without those bytes is not decoded at all (a JSON decode
        // costs ten times the search). One that has them is decoded and
        // filtered exactly, as every entry is without the filter.
        let needle = query.approval_id.map(|id| format!("\"{id}\""));
        let finder = needle.as_deref().map(|n| memchr::memmem::Finder::new(n.as_bytes()));
        for value in entries.values().rev() {
            let value = value?;
            if finder.as_ref().is_some_and(|f| f.find(&value).is_none()) {
                continue;
            }
            let event: AuditEvent = decode(&value, "audit")?;
            let keep = query.agent.as_ref().is_none_or(|a| *a == event.agent)
                && query.session_id.as_ref().is_none_or(|s| *s == event.session_id)
                && query.approval_id.is_none_or(|id| Some(id) == event.approval_id)
                && query.since.is_none_or(|since| event.at >= since);
            if keep {
                out.push(event);
                if query.limit > 0 && out.len() >= query.limit {
                    break;
                }
            }
        }
        out.reverse();
        Ok(out)
    }
}
