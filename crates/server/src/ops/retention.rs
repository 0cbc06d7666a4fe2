//! Retention in the background: every `[retention] interval`, prune decided
//! approvals and old audit in batches of `[retention] batch`, yielding
//! between batches so commits and requests go on meanwhile. `plangate prune
//! [--dry-run]` runs the same through `POST /v1/operator/prune`.

use crate::core::Core;
use plangate_store::{PrunePolicy, PruneReport, StoreError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The policy of the configuration at `core.now()`; `None` when retention is off.
pub fn policy(core: &Core, dry_run: bool) -> Option<PrunePolicy> {
    let retention = &core.settings.raw.retention;
    let (decided, audit, _) = retention.parsed().ok()?;
    if decided.is_none() && audit.is_none() {
        return None;
    }
    let now = core.now();
    let before = |age: Duration| plangate_engine::Timestamp(now.0 - age.as_millis() as i64);
    Some(PrunePolicy { decided_before: decided.map(before), audit_before: audit.map(before), batch: retention.batch, dry_run })
}

/// Prune until nothing is left (or report, on a dry run), batch by batch.
pub async fn prune_all(core: &Arc<Core>, dry_run: bool) -> Result<PruneReport, StoreError> {
    let Some(policy) = policy(core, dry_run) else { return Ok(PruneReport::default()) };
    let mut total = PruneReport::default();
    loop {
        let data_dir = core.settings.data_dir.clone();
        let report = core.blocking(move |s| s.prune(&data_dir, &policy)).await?;
        total.approvals += report.approvals;
        total.deliveries += report.deliveries;
        total.documents += report.documents;
        total.audit += report.audit;
        if dry_run {
            return Ok(total);
        }
        if !report.more {
            let links = prune_email_links(core).await?;
            if links > 0 {
                tracing::info!(links, "pruned the email links of pruned approvals");
            }
            let notes = prune_push_notes(core).await?;
            if notes > 0 {
                tracing::info!(notes, "pruned the expired notes of pushes");
            }
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

/// Remove the email links (`email.link.*` records, crates/email) whose
/// approval is gone: dead since their plan was decided, they go with it.
async fn prune_email_links(core: &Arc<Core>) -> Result<u64, StoreError> {
    if core.settings.raw.email.is_none() {
        return Ok(0);
    }
    core.blocking(|s| {
        let mut removed = 0;
        for (key, record) in s.cursors_with_prefix(plangate_email::token::KEY_PREFIX)? {
            let gone = match plangate_email::Link::from_record(&record) {
                Some(link) => s.proposal(&link.approval_id)?.is_none(),
                None => true,
            };
            if gone && s.swap_cursor(&key, Some(&record), None)? {
                removed += 1;
            }
        }
        Ok(removed)
    })
    .await
}

/// Remove the notes of pushes (`push.note.*` records, crates/push) past
/// their expiry: they open nothing any more.
async fn prune_push_notes(core: &Arc<Core>) -> Result<u64, StoreError> {
    if core.settings.raw.push.is_none() {
        return Ok(0);
    }
    let now = core.now().0;
    core.blocking(move |s| {
        let mut removed = 0;
        for (key, record) in s.cursors_with_prefix(plangate_push::note::KEY_PREFIX)? {
            let gone = plangate_push::Note::from_record(&record).is_none_or(|note| note.expires_at <= now);
            if gone && s.swap_cursor(&key, Some(&record), None)? {
                removed += 1;
            }
        }
        Ok(removed)
    })
    .await
}

/// The background task: prune every interval until shutdown.
pub async fn run(core: Arc<Core>, mut shutdown: watch::Receiver<bool>) {
    let Ok((_, _, interval)) = core.settings.raw.retention.parsed() else { return };
    if policy(&core, true).is_none() {
        return;
    }
    loop {
        match prune_all(&core, false).await {
            Ok(r) if r.approvals > 0 || r.audit > 0 => {
                tracing::info!(approvals = r.approvals, deliveries = r.deliveries, documents = r.documents, audit = r.audit, "pruned")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "pruning failed; retried at the next interval"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
    }
}
