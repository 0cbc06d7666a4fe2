//! The outbox side of the chat jobs (see the parent module's doc on
//! spilling): the start-up resume, the refill of spilled work a page at a
//! time, claims of a dead replica's entries, and the reaper that removes
//! done entries in batches.

use super::*;

impl Core {
    /// Re-queue the chat work committed but not done before the last stop
    /// (a crash between a decision's commit and its card edits, say). Call
    /// once at start, after the channels are registered. Queues as much as
    /// the backlog takes (a page at a time, in `seq` order); the rest is
    /// refilled as the backlog drains, like work spilled while running, so
    /// 100,000 leftovers are never in memory at once. Returns how many jobs
    /// were queued now (unreadable entries are logged and dropped). On a
    /// store shared by replicas, only the entries nobody holds are taken
    /// (leased to this process); see [`Core::claim_outbox`] for the rest.
    pub async fn resume_outbox(self: &Arc<Self>) -> Result<usize, StoreError> {
        {
            let mut spill = super::super::lock(&self.chat.spill);
            spill.spilling = true;
            spill.cursor = None;
            spill.refilling = true;
        }
        let resumed = self.refill_pages().await;
        let caught_up = matches!(resumed, Ok((_, true)));
        if !caught_up {
            // The rest as the backlog drains (or once the store answers).
            let core = self.clone();
            tokio::spawn(async move { core.refill().instrument(info_span!("outbox_refill")).await });
        }
        let (count, _) = resumed?;
        if count > 0 {
            let more = if caught_up { "" } else { "; more waits in the outbox until the chat backlog drains" };
            tracing::info!(count, "resumed chat work left over from the last run{more}");
        }
        Ok(count)
    }

    /// Claim up to `limit` outbox entries nobody holds (on replicas: those of
    /// a replica that died, its lease ran out) and queue those not already
    /// queued in this process; no more than the chat backlog has room for,
    /// and none while this process's own work waits in the outbox (they stay
    /// free in the store and are claimed at a later call). Returns how many
    /// jobs were queued.
    pub async fn claim_outbox(self: &Arc<Self>, limit: usize) -> Result<usize, StoreError> {
        let room = self.chat.limit.load(Ordering::Relaxed).saturating_sub(self.chat.backlog());
        let limit = limit.min(room);
        if limit == 0 || self.chat.spilling() {
            return Ok(0);
        }
        let entries = self.blocking(move |s| s.claim_outbox(limit)).await?;
        let mut count = 0;
        let mut unreadable = Vec::new();
        for entry in entries {
            // Registered as queued before it is, so a concurrent claim
            // cannot queue it twice.
            if !super::super::lock(&self.chat.queued_outbox).insert(entry.seq) {
                continue;
            }
            match self.queue_entry(entry.seq, &entry.work) {
                Ok(()) => count += 1,
                Err(e) => unreadable.push((entry.seq, e)),
            }
        }
        self.drop_unreadable(unreadable).await;
        Ok(count)
    }

    /// Queue an outbox entry read back from the store (resumed, refilled or
    /// claimed): it has no [`Written`], its jobs load what they show.
    fn queue_entry(self: &Arc<Self>, seq: u64, work: &[u8]) -> Result<(), serde_json::Error> {
        match serde_json::from_slice::<(ApprovalId, Job)>(work)? {
            (_, Job::Webhook(hook)) => self.enqueue_webhook(*hook, Some(seq)),
            (id, job) => self.queue(id, job, Some(seq), None),
        }
        Ok(())
    }

    async fn drop_unreadable(self: &Arc<Self>, unreadable: Vec<(u64, serde_json::Error)>) {
        for (seq, e) in unreadable {
            warn!(seq, error = %e, "unreadable outbox entry dropped");
            let _ = self.outbox_done(seq).await;
        }
    }

    /// Queue the work waiting in the outbox, a page at a time in `seq`
    /// order, until the backlog is full again or the outbox has none left
    /// for this process (then spilling ends). Returns how many jobs were
    /// queued and whether it caught up.
    async fn refill_pages(self: &Arc<Self>) -> Result<(usize, bool), StoreError> {
        let mut total = 0;
        loop {
            let room = self.chat.limit.load(Ordering::Relaxed).saturating_sub(self.chat.backlog());
            if room == 0 {
                return Ok((total, false));
            }
            let page = room.min(REFILL_PAGE);
            let after = {
                let mut spill = super::super::lock(&self.chat.spill);
                spill.reading = true;
                spill.late = None;
                spill.cursor
            };
            let read = self.blocking(move |s| s.claim_outbox_page(after, page)).await;
            let mut unreadable = Vec::new();
            let caught_up = {
                let mut spill = super::super::lock(&self.chat.spill);
                spill.reading = false;
                let late = spill.late.take();
                let entries = read?;
                let full = entries.len() >= page;
                let mut last = after;
                let mut queued = 0;
                for entry in entries {
                    // From the first entry spilled during the read on, the
                    // next read decides (it may not have seen that one).
                    if late.is_some_and(|first| entry.seq >= first) {
                        break;
                    }
                    last = Some(entry.seq);
                    // Queued here already, or committed and about to be
                    // (its `enqueue` queues it: it is at or before the cursor).
                    if !super::super::lock(&self.chat.queued_outbox).insert(entry.seq) {
                        continue;
                    }
                    match self.queue_entry(entry.seq, &entry.work) {
                        Ok(()) => queued += 1,
                        Err(e) => unreadable.push((entry.seq, e)),
                    }
                }
                spill.cursor = last;
                spill.refilled += queued as u64;
                total += queued;
                let caught_up = !full && late.is_none();
                if caught_up {
                    spill.spilling = false;
                    spill.refilling = false;
                    let (spilled, refilled) = (std::mem::take(&mut spill.spilled), std::mem::take(&mut spill.refilled));
                    tracing::info!(spilled, refilled, "the chat backlog caught up with the outbox: chat work is queued directly again");
                }
                caught_up
            };
            self.drop_unreadable(unreadable).await;
            if caught_up {
                // `drain` waits for the end of spilling too.
                self.chat.backlog.progress.send_modify(|n| *n = n.wrapping_add(1));
                return Ok((total, true));
            }
        }
    }

    /// The refill task: whenever the backlog has drained to half its limit,
    /// fill it again from the outbox, until the outbox has caught up.
    pub(super) async fn refill(self: Arc<Self>) {
        let mut progress = self.chat.progress();
        loop {
            while !self.chat.backlog_halved() {
                // The sender lives in the core this task holds.
                let _ = progress.changed().await;
            }
            match self.refill_pages().await {
                Ok((_, true)) => return,
                Ok((_, false)) => {}
                Err(e) => {
                    warn!(error = %e, "cannot read the chat work waiting in the outbox; retrying");
                    tokio::time::sleep(REFILL_RETRY).await;
                }
            }
        }
    }

    /// An outbox entry's work is done: remove it from the store (not
    /// flushed: at least once), then from the entries queued here. Waits
    /// for the batch it joins (see [`Core::outbox_done_later`]).
    pub(in crate::core) async fn outbox_done(self: &Arc<Self>, seq: u64) -> Result<(), StoreError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.reap(seq, Reaped::Tell(tx), Vec::new());
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(StoreError::Unavailable(why)),
            Err(_) => Err(StoreError::Unavailable("the outbox remover stopped".to_string())),
        }
    }

    /// A chat job's outbox entry is done: it joins the next batch of
    /// removals and the worker goes on without waiting. The job's place in
    /// the backlog (`ticket`) is given up once the entry is gone, so
    /// [`ChatWork::drain`](super::ChatWork::drain) still means "done and removed". One statement
    /// removes every entry done within [`REAP_LINGER`] of the first: on
    /// PostgreSQL a transaction for many jobs instead of one each. A crash
    /// before the batch runs repeats those jobs (at least once, as before).
    /// `unsynced`: files the job wrote without fsync (plan document,
    /// receipt); the batch makes them durable before its entries go, so a
    /// crash can cost a file only while the job that rewrites it is still
    /// in the outbox.
    pub(super) fn outbox_done_later(self: &Arc<Self>, seq: u64, ticket: Ticket, unsynced: Vec<PathBuf>) {
        self.reap(seq, Reaped::Release(ticket), unsynced);
    }

    fn reap(self: &Arc<Self>, seq: u64, then: Reaped, unsynced: Vec<PathBuf>) {
        let mut done = super::super::lock(&self.chat.done_outbox);
        done.pending.push((seq, then));
        done.unsynced.extend(unsynced);
        if !done.reaping {
            done.reaping = true;
            let core = self.clone();
            tokio::spawn(async move { core.reaper().await });
        }
    }

    /// Removes done outbox entries in batches until none are left.
    async fn reaper(self: Arc<Self>) {
        loop {
            tokio::time::sleep(REAP_LINGER).await;
            let (batch, unsynced) = {
                let mut done = super::super::lock(&self.chat.done_outbox);
                if done.pending.is_empty() {
                    done.reaping = false;
                    return;
                }
                (std::mem::take(&mut done.pending), std::mem::take(&mut done.unsynced))
            };
            let seqs: Vec<u64> = batch.iter().map(|(seq, _)| *seq).collect();
            let removing = seqs.clone();
            let removed = match sync_files(unsynced).await {
                Ok(()) => self.blocking(move |s| s.remove_outbox_many(&removing)).await,
                Err(e) => Err(StoreError::Unavailable(format!("the files of these jobs could not be made durable: {e}"))),
            };
            if let Err(e) = &removed {
                warn!(entries = seqs.len(), error = %e, "outbox entries not removed; their jobs will run again after a restart");
            }
            {
                let mut queued = super::super::lock(&self.chat.queued_outbox);
                seqs.iter().for_each(|seq| {
                    queued.remove(seq);
                });
            }
            for (_, then) in batch {
                match then {
                    Reaped::Tell(tx) => drop(tx.send(removed.as_ref().map(|_| ()).map_err(ToString::to_string))),
                    Reaped::Release(ticket) => drop(ticket),
                }
            }
        }
    }
}
