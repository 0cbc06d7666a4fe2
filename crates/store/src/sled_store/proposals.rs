//! Proposals ([`Proposals`]): read by id, by prefix, and through the
//! `proposals_by_status` index (pages, counts, the latest), whose entry
//! moves in the same commit as its proposal's status; and the pending
//! count, kept in `meta` by the commits that change it.

use super::keys::{id_of_status_key, pending_share_of, status_key, status_prefix, PENDING_SHARE_PREFIX, STATUSES};
use super::{decode, SledStore, Trees};
use crate::{PagePosition, Proposals, StoreError};
use plangate_engine::{ApprovalId, DecisionStatus, Proposal};

/// The `meta` key of the pending count a clean shutdown left for the next
/// start before schema 5 kept the count itself; the upgrade removes it.
pub(super) const PENDING_AT_CLOSE: &str = "pending_at_close";

impl Trees {
    /// The pending count: the sum of every stripe's share (schema 5). Exact
    /// at a commit boundary; while commits run, each share is read at its
    /// own moment (the server's gauge counts again when it changed meanwhile).
    pub(super) fn pending_count(&self) -> Result<u64, StoreError> {
        let mut sum = 0i64;
        for entry in self.meta.scan_prefix(PENDING_SHARE_PREFIX) {
            let (key, value) = entry?;
            sum += pending_share_of(&value).ok_or_else(|| {
                StoreError::Unavailable(format!(
                    "meta key {} is {} bytes, not 8; the store is damaged: restore a backup",
                    String::from_utf8_lossy(&key),
                    value.len()
                ))
            })?;
        }
        u64::try_from(sum).map_err(|_| {
            StoreError::Unavailable(format!("the pending count's shares add up to {sum}; the store is damaged: restore a backup"))
        })
    }

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

    /// Pending: the shares the commits keep (no scan: at a million pending a
    /// scan of the index pulled ≈150 MB through sled's cache, which the
    /// process kept). Any other status: counted in the index, no proposal
    /// record read.
    fn count_proposals(&self, status: DecisionStatus) -> Result<u64, StoreError> {
        let t = self.trees()?;
        if status == DecisionStatus::Pending {
            return t.pending_count();
        }
        let mut count = 0;
        for key in t.by_status.scan_prefix(status_prefix(status)).keys() {
            key?;
            count += 1;
        }
        Ok(count)
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
