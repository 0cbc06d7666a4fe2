//! The bodies of the chat jobs: post and edit cards on every destination,
//! nudge, escalate, ask and close questions. Card and document jobs take
//! the proposal as their transition wrote it ([`Written`]; loaded fresh when
//! resumed from the outbox); nudges and escalations load it fresh, since they
//! wait and must see a decision made meanwhile. Every job is safe to repeat
//! (the outbox runs it again after a crash).

use super::jobs::Written;
use super::Core;
use futures_util::future::join_all;
use plangate_channel::{Destination, Document};
use plangate_engine::card::{document_file_name, nudge_text};
use plangate_engine::{ApprovalId, DecisionStatus, Project, Proposal, State};
use std::sync::Arc;
use tracing::warn;

/// What a job that works on posted cards (a reminder, a card edit) came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum CardWork {
    /// Done wherever the cards are, or not needed any more.
    Done,
    /// A card is still being posted (by another replica): run it again.
    WaitsForItsCard,
}

impl Core {
    /// The destinations of an agent that take cards of `project` (its
    /// `projects` globs, [`plangate_engine::ProjectPatterns`]): configured,
    /// then paired.
    pub fn destinations(&self, agent: &str, project: Option<&Project>) -> Vec<Destination> {
        self.pairing.approvers().destinations(agent, project)
    }

    /// Who a plan of `agent` reaches, for its plan-mode brief.
    pub fn reach(&self, agent: &str) -> plangate_engine::brief::Reach {
        let index = self.pairing.approvers();
        let places: Vec<_> = index.places(agent).iter().filter(|p| !p.escalation).collect();
        let mut approvers: Vec<&String> = places.iter().flat_map(|p| p.approvers.iter()).collect();
        approvers.sort();
        approvers.dedup();
        plangate_engine::brief::Reach {
            destinations: places.iter().map(|p| format!("{} chat {}", p.destination.channel, p.destination.name)).collect(),
            approvers: approvers.len(),
            required: self.settings.approval_policy(agent).required,
        }
    }

    /// The escalation destinations of an agent that take cards of `project`.
    pub fn escalation_destinations(&self, agent: &str, project: Option<&Project>) -> Vec<Destination> {
        self.pairing.approvers().escalation_destinations(agent, project)
    }

    /// Approval `id` and its session: as the queuing transition wrote them
    /// when the job has that (see [`Written`]), else read from the store.
    pub(super) async fn proposal_and_state(&self, id: ApprovalId, written: Option<&Written>) -> Option<(Proposal, State)> {
        if let Some(found) = written.and_then(|w| w.proposal_and_state(id)) {
            return Some(found);
        }
        let p = self.blocking(move |s| s.proposal(&id)).await.ok()??;
        let state = self.load(&p.session).await.ok()?;
        Some((p, state))
    }

    /// Approval `id` alone, for the jobs that need no state (documents, receipts).
    pub(super) async fn proposal_of(&self, id: ApprovalId, written: Option<&Written>) -> Option<Proposal> {
        if let Some(p) = written.and_then(|w| w.proposal(id)) {
            return Some(p.clone());
        }
        self.blocking(move |s| s.proposal(&id)).await.ok()?
    }

    pub fn document_of(p: &Proposal) -> Document {
        Document { file_name: document_file_name(p), text: p.document() }
    }

    pub(super) async fn post_cards(self: &Arc<Self>, id: ApprovalId, written: Option<&Written>) {
        let Some((p, state)) = self.proposal_and_state(id, written).await else { return };
        let mut destinations = self.destinations(&p.session.agent, p.project.as_ref());
        let pid = Some((id, p.version));
        // Resumed after a crash: the cards already out stay, the rest go.
        let posted = self.blocking(move |s| s.deliveries(&id)).await.unwrap_or_default();
        if !posted.is_empty() {
            destinations.retain(|d| !posted.iter().any(|delivered| delivered.destination == d.name));
            if destinations.is_empty() {
                return;
            }
        }
        if destinations.is_empty() {
            // Destinations the agent has, whose `projects` all leave this card out.
            let routed_away = self.pairing.approvers().places(&p.session.agent).iter().any(|place| !place.escalation);
            let detail = match &p.project {
                _ if !routed_away => "no destinations configured for this agent: the card was recorded here only".to_string(),
                Some(project) => format!("no destination of this agent takes project {}: the card was recorded here only", project.name),
                None => "the agent named no project, and every destination of this agent takes only some projects: the card was recorded here only".to_string(),
            };
            self.audit(&p.session, "plangate", "card_recorded", pid, detail).await;
            return;
        }
        let view = self.card_of(&p, &state, self.now());
        let document = Self::document_of(&p);
        // The cards of the plan an amendment amends, to thread it under.
        let parents = match p.amends.as_ref().and_then(|a| a.of_approval).filter(|parent| *parent != id) {
            Some(parent) => self.blocking(move |s| s.deliveries(&parent)).await.unwrap_or_default(),
            None => Vec::new(),
        };
        // Side by side: each platform has its own limiter, so a slow one must
        // not pace the others.
        let (p, view, document, parents) = (&p, &view, &document, &parents);
        join_all(destinations.into_iter().map(|dest| async move {
            let (dest, _opening) = self.threads.in_session_thread(dest, p).await;
            let Some(channel) = self.adapters.channel(&dest.channel) else {
                let detail = format!("{}: channel {} is not running", dest.name, dest.channel);
                self.audit(&p.session, "plangate", "card_not_delivered", pid, detail).await;
                return;
            };
            // An amendment goes under its plan's card in the same chat.
            let parent = parents.iter().find(|parent| parent.destination == dest.name);
            let posted = match parent {
                Some(parent) => channel.post_card_under(parent, &dest, view, document).await,
                None => channel.post_card(&dest, view, document).await,
            };
            match posted {
                Ok(delivery) => {
                    self.threads.remember_thread(&dest, &p.session, &delivery).await;
                    let detail = format!("{} {} message {}", dest.name, delivery.chat, delivery.message_id);
                    if let Err(e) = self.blocking(move |s| s.add_delivery(&id, &delivery)).await {
                        warn!(error = %e, "delivery not recorded; this card will not be updated");
                    }
                    self.audit(&p.session, "plangate", "card_posted", pid, detail).await;
                }
                Err(e) => {
                    warn!(destination = %dest.name, error = %e, "card not delivered");
                    self.audit(&p.session, "plangate", "card_not_delivered", pid, format!("{}: {e}", dest.name)).await;
                }
            }
        }))
        .await;
    }

    /// Edit every posted card of approval `id` to show what it came to. On
    /// replicas a decision can land here while the replica that committed
    /// the plan still posts its card (from what the plan was then: pending,
    /// with its buttons): an edit that finds a destination of the plan
    /// without its card waits for it as a reminder does (see
    /// [`Core::nudge`]), so the card does not stay "pending" after the
    /// decision.
    pub(super) async fn update_cards(&self, id: ApprovalId, written: Option<&Written>) -> CardWork {
        let Some((p, state)) = self.proposal_and_state(id, written).await else { return CardWork::Done };
        let Ok(deliveries) = self.blocking(move |s| s.deliveries(&id)).await else { return CardWork::Done };
        if self.storage.store.shared() && self.card_missing(&p, &deliveries) {
            tracing::debug!(approval = %id, "card edit waits for a card still being posted");
            return CardWork::WaitsForItsCard;
        }
        let view = self.card_of(&p, &state, self.now());
        let (p, view) = (&p, &view);
        join_all(deliveries.into_iter().map(|delivery| async move {
            let Some(channel) = self.adapters.channel(&delivery.channel) else { return };
            if let Err(e) = channel.update_card(&delivery, view).await {
                warn!(chat = %delivery.chat, error = %e, "card not updated");
                self.audit(&p.session, "plangate", "card_not_updated", Some((id, p.version)), format!("{}: {e}", delivery.destination))
                    .await;
            }
        }))
        .await;
        CardWork::Done
    }

    /// Remind every destination of a pending approval. Each send first takes
    /// a place in its platform's lane and only then loads, re-checks and
    /// renders: a storm of reminders waits as a few hundred bytes each, not
    /// as rendered messages, and a plan decided while its reminder waited is
    /// never nudged.
    ///
    /// On replicas, the card may still be on its way: posted by the replica
    /// that committed the plan, or, if that one died while posting it, by
    /// whichever takes its work over once its lease runs out, while this
    /// reminder fell due here. A reminder that finds a destination of the
    /// plan without its card then waits (asks to run again), for as long
    /// as a card post can be under way ([`Core::card_post_window`]); after
    /// that the post failed (audited `card_not_delivered`) and the reminder
    /// goes where cards are. One process needs no wait: a plan's card post
    /// runs before its reminders in the plan's own queue.
    pub(super) async fn nudge(&self, id: ApprovalId, number: u8) -> CardWork {
        let Ok(deliveries) = self.blocking(move |s| s.deliveries(&id)).await else { return CardWork::Done };
        if self.storage.store.shared() && self.card_on_its_way(id, &deliveries).await {
            tracing::debug!(approval = %id, number, "reminder waits for its card, still being posted");
            return CardWork::WaitsForItsCard;
        }
        join_all(deliveries.into_iter().map(|delivery| async move {
            let Some(channel) = self.adapters.channel(&delivery.channel) else { return };
            let _lane = self.chat.lane(&delivery.channel).await;
            let Some((p, state)) = self.proposal_and_state(id, None).await else { return };
            // Re-check: a decided, superseded or cancelled plan never gets a nudge.
            if p.status != DecisionStatus::Pending || state.session.latest_approval != Some(id) {
                return;
            }
            let key = format!("nudge:{id}:{number}:{}:{}", delivery.destination, delivery.chat);
            let probe = key.clone();
            if self.blocking(move |s| s.seen(&probe)).await.unwrap_or(false) {
                return; // sent before a restart: never twice
            }
            let now = self.now();
            let (view, text) = (self.card_of(&p, &state, now), nudge_text(&p, number, now));
            match channel.send_nudge(&delivery, &view, &text).await {
                Ok(()) => {
                    let _ = self.blocking(move |s| s.mark_seen(&key)).await;
                }
                Err(e) => warn!(chat = %delivery.chat, error = %e, "nudge not sent"),
            }
        }))
        .await;
        CardWork::Done
    }

    /// Whether a destination of pending approval `id` has no card among
    /// `deliveries` while its card post may still be under way.
    async fn card_on_its_way(&self, id: ApprovalId, deliveries: &[plangate_channel::Delivery]) -> bool {
        let Some((p, state)) = self.proposal_and_state(id, None).await else { return false };
        if p.status != DecisionStatus::Pending || state.session.latest_approval != Some(id) {
            return false;
        }
        self.card_missing(&p, deliveries)
    }

    /// Whether a destination that takes `p`'s cards has none among
    /// `deliveries` while its card post may still be under way
    /// ([`Core::card_post_window`] after the proposal).
    fn card_missing(&self, p: &Proposal, deliveries: &[plangate_channel::Delivery]) -> bool {
        if !self.within_card_post_window(p.created_at) {
            return false;
        }
        self.awaits_a_card(self.destinations(&p.session.agent, p.project.as_ref()), deliveries)
    }

    /// Whether one of `expected` has no card among `deliveries` although a
    /// card could be posted there: a destination whose channel does not
    /// run here (nor, configured alike, on the other replicas) gets none,
    /// and nothing waits for it.
    fn awaits_a_card(&self, expected: Vec<Destination>, deliveries: &[plangate_channel::Delivery]) -> bool {
        expected.iter().any(|dest| self.adapters.channel(&dest.channel).is_some() && !deliveries.iter().any(|d| d.destination == dest.name))
    }

    /// Whether a card of something created at `created` may still be on
    /// its way ([`Core::card_post_window`]).
    fn within_card_post_window(&self, created: plangate_engine::Timestamp) -> bool {
        let window = i64::try_from(self.card_post_window().as_millis()).unwrap_or(i64::MAX);
        self.now().0.saturating_sub(created.0) <= window
    }

    /// How long after a plan is proposed its card post may still be under
    /// way on a store shared by replicas: the committing replica's lease
    /// (should it die), a third of it until another claims its work, and
    /// room for the platform's pace.
    pub(super) fn card_post_window(&self) -> std::time::Duration {
        let lease = self.settings.raw.store.lease();
        lease + lease / 3 + std::time::Duration::from_secs(60)
    }

    pub(super) async fn post_question(&self, id: ApprovalId) {
        let Ok(Some(q)) = self.blocking(move |s| s.question(&id)).await else { return };
        let posted = self.blocking(move |s| s.question_deliveries(&id)).await.unwrap_or_default();
        // Asked where the session's cards go (the project of its latest
        // plan), in the session's topic or thread.
        let latest = self.load(&q.session).await.ok().and_then(|state| state.latest);
        let project = latest.as_ref().and_then(|p| p.project.clone());
        for dest in self.destinations(&q.session.agent, project.as_ref()) {
            if posted.iter().any(|delivered| delivered.destination == dest.name) {
                continue; // resumed after a crash: already asked there
            }
            let Some(channel) = self.adapters.channel(&dest.channel) else { continue };
            let (dest, _opening) = match &latest {
                Some(p) => self.threads.in_session_thread(dest, p).await,
                None => (dest, super::threads::Opening::default()),
            };
            match channel.post_question(&dest, &q).await {
                Ok(delivery) => {
                    // Never approvable blind: a card that could not show the
                    // whole input says so, and the whole input follows it.
                    if let Some(ask) = q.permission.as_ref().filter(|a| !a.shown_whole) {
                        let tool: String =
                            ask.tool.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-')).take(60).collect();
                        let document =
                            Document { file_name: format!("{tool}-input-{}.json", &id.to_string()[..8]), text: ask.input.clone() };
                        if let Err(e) = channel.send_document(&delivery.chat, Some(&delivery.message_id), &document).await {
                            warn!(destination = %dest.name, error = %e, "the whole input of a permission request was not attached");
                        }
                    }
                    self.threads.remember_thread(&dest, &q.session, &delivery).await;
                    let _ = self.blocking(move |s| s.add_question_delivery(&id, &delivery)).await;
                }
                Err(e) => warn!(destination = %dest.name, error = %e, "question not delivered"),
            }
        }
    }

    /// Edit every posted card of question `id` to show its answer (or that
    /// it expired). Waits, like a card edit, for a question card another
    /// replica still posts ([`Core::update_cards`]).
    pub(super) async fn update_question(&self, id: ApprovalId) -> CardWork {
        let Ok(Some(q)) = self.blocking(move |s| s.question(&id)).await else { return CardWork::Done };
        let Ok(deliveries) = self.blocking(move |s| s.question_deliveries(&id)).await else { return CardWork::Done };
        if self.storage.store.shared() && self.within_card_post_window(q.asked_at) {
            // Asked where the session's cards go (the project of its latest plan).
            let latest = self.load(&q.session).await.ok().and_then(|state| state.latest);
            let expected = self.destinations(&q.session.agent, latest.as_ref().and_then(|p| p.project.as_ref()));
            if self.awaits_a_card(expected, &deliveries) {
                tracing::debug!(question = %id, "question card edit waits for a card still being posted");
                return CardWork::WaitsForItsCard;
            }
        }
        for delivery in deliveries {
            let Some(channel) = self.adapters.channel(&delivery.channel) else { continue };
            if let Err(e) = channel.update_question(&delivery, &q).await {
                warn!(chat = %delivery.chat, error = %e, "question not updated");
            }
        }
        CardWork::Done
    }

    /// Write the plan document where [`Core::plan_document_path`] said it
    /// would be. Safe to repeat: the same text again changes nothing.
    /// Written without its fsyncs: the returned path is made durable with
    /// the batch of jobs this one is done with, before its outbox entry is
    /// removed (see `jobs`).
    pub(super) async fn write_document(&self, id: ApprovalId, written: Option<&Written>) -> Option<std::path::PathBuf> {
        let p = self.proposal_of(id, written).await?;
        let data_dir = self.settings.data_dir.clone();
        let (agent, title, created, text) = (p.session.agent.clone(), p.plan.title.clone(), p.created_at, p.document());
        let prefix = id.to_string()[..8].to_string();
        let written = tokio::task::spawn_blocking(move || {
            plangate_store::write_document_unsynced(&data_dir, &agent, &title, created, &prefix, &text)
        })
        .await;
        match written {
            Ok(Ok(path)) => return Some(path),
            Ok(Err(e)) => {
                warn!(approval = %id, error = %e, "plan document not written");
                self.audit(&p.session, "plangate", "document_not_written", Some((id, p.version)), e.to_string()).await;
            }
            Err(e) => warn!(approval = %id, error = %e, "plan document task failed"),
        }
        None
    }
}
