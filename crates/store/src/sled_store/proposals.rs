//! Proposals ([`Proposals`]): read by id, by prefix, and through the
//! `proposals_by_status` index (pages, counts, the latest), whose entry
//! moves in the same commit as its proposal's status; and the pending
//! count a clean shutdown leaves in `meta` for the next open.

use super::keys::{id_of_status_key, status_key, status_prefix, STATUSES};
use super::{decode, SledStore, Trees};
use crate::{PagePosition, Proposals, StoreError};
use plangate_engine::{ApprovalId, DecisionStatus, Proposal};

/// The `meta` key of the pending count a clean shutdown leaves for the
/// next start ([`Proposals::note_pending_at_close`]).
pub(super) const PENDING_AT_CLOSE: &str = "pending_at_close";

/// Take the pending count a clean shutdown left out of `meta`, removed and
/// flushed before anything else can write: whatever opens the database
/// next (a start, `plangate backup`, a migration) consumes the note, so no
/// later start can read a count from before writes it did not see. The
/// note carries the audit's last key at that shutdown; a count whose key is
/// no longer the last is dropped, because every transition that changes
/// the pending count appends to the audit, so an audit that grew since
/// means a writer that does not know the note (an older plangate, a
/// transition finishing after the note) changed what was counted.
pub(super) fn take_pending_note(t: &Trees) -> Result<Option<u64>, StoreError> {
    let Some(note) = t.meta.remove(PENDING_AT_CLOSE)? else {
        return Ok(None);
    };
    t.db.flush()?;
    let Some((count, audit_then)) = note.split_first_chunk::<8>() else {
        return Ok(None);
    };
    let audit_now = t.audit.last()?.map(|(key, _)| key);
    if audit_now.as_deref().unwrap_or(&[]) != audit_then {
        tracing::info!("the pending count left by the last shutdown is stale (the audit grew since): counting again");
        return Ok(None);
    }
    Ok(Some(u64::from_be_bytes(*count)))
}

impl Trees {
    /// Up to `limit` proposals with `status` after `after`, in listing
    /// order, from the index. An entry whose record is gone or says another
    /// status (a commit between its two writes) is skipped.
    fn visit_status(
        &self,
        status: DecisionStatus,
        after: Option<PagePosition>,
        limit: usize,
        visit: &mut dyn FnMut(Proposal),
    ) -> Result<(), StoreError> {
        use std::ops::Bound;
        let prefix = status_prefix(status);
        let start = match after {
            Some(a) => Bound::Excluded(status_key(status, a.created_at, &a.approval_id)),
            None => Bound::Included(prefix.clone()),
        };
        let mut taken = 0;
        for key in self.by_status.range::<Vec<u8>, _>((start, Bound::Unbounded)).keys() {
            let key = key?;
            if taken >= limit || !key.starts_with(&prefix) {
                break;
            }
            let Some(id) = id_of_status_key(&key) else { continue };
            let Some(bytes) = self.proposals.get(id.0)? else { continue };
            let p: Proposal = decode(&bytes, "proposal")?;
            if p.status == status {
                visit(p);
                taken += 1;
            }
        }
        Ok(())
    }

    /// Up to `limit` proposals with `status`, the latest proposed first.
    fn latest_of_status(&self, status: DecisionStatus, limit: usize) -> Result<Vec<Proposal>, StoreError> {
        let mut out = Vec::new();
        for key in self.by_status.scan_prefix(status_prefix(status)).keys().rev() {
            if out.len() >= limit {
                break;
            }
            let key = key?;
            let Some(id) = id_of_status_key(&key) else { continue };
            let Some(bytes) = self.proposals.get(id.0)? else { continue };
            let p: Proposal = decode(&bytes, "proposal")?;
            if p.status == status {
                out.push(p);
            }
        }
        Ok(out)
    }
}

impl Proposals for SledStore {
    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        let t = self.trees()?;
        t.proposals.get(id.0)?.map(|v| decode(&v, "proposal")).transpose()
    }

    fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError> {
        let t = self.trees()?;
        // Only hex (ASCII) can match; slicing below needs char boundaries.
        if !hex_prefix.is_ascii() {
            return Ok(Vec::new());
        }
        // Whole bytes narrow the scan; an odd last nibble is filtered after.
        let whole = &hex_prefix[..hex_prefix.len() - hex_prefix.len() % 2];
        let Ok(bytes) = hex::decode(whole) else { return Ok(Vec::new()) };
        let all: Vec<Proposal> = Self::list(&t.proposals, &bytes, "proposal")?;
        Ok(all.into_iter().filter(|p| p.approval_id.to_string().starts_with(hex_prefix)).collect())
    }

    fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        let t = self.trees()?;
        if let Some(status) = status {
            let mut all = Vec::new();
            t.visit_status(status, None, usize::MAX, &mut |p| all.push(p))?;
            return Ok(all);
        }
        let mut all: Vec<Proposal> = Self::list(&t.proposals, &[], "proposal")?;
        all.sort_by_key(|p| p.created_at);
        Ok(all)
    }

    fn visit_proposals(&self, status: Option<DecisionStatus>, visit: &mut dyn FnMut(&Proposal)) -> Result<(), StoreError> {
        let t = self.trees()?;
        if let Some(status) = status {
            return t.visit_status(status, None, usize::MAX, &mut |p| visit(&p));
        }
        for value in t.proposals.iter().values() {
            visit(&decode(&value?, "proposal")?);
        }
        Ok(())
    }

    /// Counted in the index: no proposal record is read.
    fn count_proposals(&self, status: DecisionStatus) -> Result<u64, StoreError> {
        let t = self.trees()?;
        let mut count = 0;
        for key in t.by_status.scan_prefix(status_prefix(status)).keys() {
            key?;
            count += 1;
        }
        Ok(count)
    }

    fn pending_at_last_close(&self) -> Option<u64> {
        self.pending_at_close.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Flushed here: the caller's next step is the process's end.
    fn note_pending_at_close(&self, pending: u64) -> Result<(), StoreError> {
        let t = self.trees()?;
        let mut note = pending.to_be_bytes().to_vec();
        if let Some((last, _)) = t.audit.last()? {
            note.extend_from_slice(&last);
        }
        t.meta.insert(PENDING_AT_CLOSE, note)?;
        t.db.flush()?;
        Ok(())
    }

    /// From the index: a page of one status reads `limit` records; a page
    /// of every status reads at most `limit` of each and merges them.
    fn proposals_page(
        &self,
        status: Option<DecisionStatus>,
        after: Option<PagePosition>,
        limit: usize,
    ) -> Result<Vec<Proposal>, StoreError> {
        let t = self.trees()?;
        let mut page = Vec::new();
        let one;
        let statuses = match status {
            Some(s) => {
                one = [s];
                &one[..]
            }
            None => &STATUSES[..],
        };
        for status in statuses {
            t.visit_status(*status, after, limit, &mut |p| page.push(p))?;
        }
        page.sort_by_key(PagePosition::of);
        page.truncate(limit);
        Ok(page)
    }

    fn latest_proposals(&self, status: DecisionStatus, limit: usize) -> Result<Vec<Proposal>, StoreError> {
        self.trees()?.latest_of_status(status, limit)
    }
}
