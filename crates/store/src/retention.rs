//! Retention: decided approvals and the audit do not grow forever.
//!
//! [`SledStore::prune`] removes, in one small batch per call, decided
//! approvals decided before a cutoff (with their card deliveries, recorded
//! document path and plan document) and audit records older than another.
//! What is never pruned: a pending approval, any timer, and the latest
//! proposal of a session (its status would change meaning). A dry run
//! counts what would go and removes nothing.

use crate::sled_store::SledStore;
use crate::StoreError;
use plangate_engine::{ApprovalId, AuditEvent, DecisionStatus, Proposal, Session, Timestamp};
use std::collections::HashSet;
use std::path::Path;

/// What to prune.
#[derive(Debug, Clone, Copy)]
pub struct PrunePolicy {
    /// Decided approvals decided before this.
    pub decided_before: Option<Timestamp>,
    /// Audit records from before this.
    pub audit_before: Option<Timestamp>,
    /// At most this many approvals and this many audit records per call.
    pub batch: usize,
    pub dry_run: bool,
}

/// What one call pruned (or, on a dry run, would prune: every match, not
/// one batch).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PruneReport {
    pub approvals: u64,
    pub deliveries: u64,
    pub documents: u64,
    pub audit: u64,
    /// More remains beyond this batch: call again.
    pub more: bool,
}

impl SledStore {
    /// Prune one batch by `policy`; plan documents are looked for under `data_dir`.
    pub fn prune(&self, data_dir: &Path, policy: &PrunePolicy) -> Result<PruneReport, StoreError> {
        let limit = if policy.dry_run { usize::MAX } else { policy.batch.max(1) };
        let mut report = PruneReport::default();
        let t = self.raw_trees()?;
        if let Some(cutoff) = policy.decided_before {
            // A session's latest proposal stays, whatever its age.
            let mut latest: HashSet<ApprovalId> = HashSet::new();
            for v in t.sessions.iter().values() {
                let session: Session = serde_json::from_slice(&v?).map_err(|source| StoreError::Corrupt { what: "session", source })?;
                latest.extend(session.latest_approval);
            }
            let mut doomed: Vec<Proposal> = Vec::new();
            for v in t.proposals.iter().values() {
                let p: Proposal = serde_json::from_slice(&v?).map_err(|source| StoreError::Corrupt { what: "proposal", source })?;
                let old = p.decided_at.is_some_and(|at| at < cutoff);
                if p.status != DecisionStatus::Pending && old && !latest.contains(&p.approval_id) {
                    if doomed.len() == limit {
                        report.more = true;
                        break;
                    }
                    doomed.push(p);
                }
            }
            for p in doomed {
                let id = p.approval_id;
                let deliveries: Vec<_> = t.deliveries.scan_prefix(id.0).keys().collect::<Result<_, _>>()?;
                report.deliveries += deliveries.len() as u64;
                let recorded = t.documents.get(id.0)?.map(|v| String::from_utf8_lossy(&v).into_owned());
                let short = id.to_string();
                let document = recorded
                    .map(std::path::PathBuf::from)
                    .unwrap_or_else(|| crate::plan_document_path(data_dir, &p.session.agent, &p.plan.title, p.created_at, &short[..8]));
                let has_document = document.starts_with(data_dir.join("plans")) && document.exists();
                report.documents += u64::from(has_document);
                report.approvals += 1;
                if policy.dry_run {
                    continue;
                }
                for key in deliveries {
                    t.deliveries.remove(key)?;
                }
                t.documents.remove(id.0)?;
                t.proposals.remove(id.0)?;
                t.by_status.remove(crate::sled_store::status_key(p.status, p.created_at, &id))?;
                if has_document {
                    if let Err(e) = std::fs::remove_file(&document) {
                        tracing::warn!(path = %document.display(), error = %e, "pruned plan document not removed");
                    }
                }
            }
        }
        if let Some(cutoff) = policy.audit_before {
            // Audit keys grow with time: the oldest come first. The newest
            // record stays whatever its age: it is the chain's head, which
            // the next record links to (after a restart too).
            let mut doomed = Vec::new();
            let newest = t.audit.last()?.map(|(key, _)| key);
            for entry in t.audit.iter() {
                let (key, v) = entry?;
                if Some(&key) == newest.as_ref() {
                    break;
                }
                let event: AuditEvent = serde_json::from_slice(&v).map_err(|source| StoreError::Corrupt { what: "audit", source })?;
                if event.at >= cutoff {
                    break;
                }
                if doomed.len() == limit {
                    report.more = true;
                    break;
                }
                doomed.push(key);
            }
            report.audit = doomed.len() as u64;
            if !policy.dry_run {
                for key in doomed {
                    t.audit.remove(key)?;
                }
            }
        }
        if !policy.dry_run && (report.approvals > 0 || report.audit > 0) {
            self.flushed(&t, ())?;
        }
        Ok(report)
    }
}
