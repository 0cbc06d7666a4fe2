//! The escalation ladder's job: reach level `n` of a waiting plan
//! (`Effect::Escalate`, fired by the engine's `TimerKind::Level` timers),
//! and the answer to `plangate ladder show` (who is reached when).
//!
//! A level reaches its `destinations` (the card posted there the first
//! time, a reminder under it on each `repeat`) and people: its named
//! `approvers`, its `emails`, whoever its `schedules` say is on call, and
//! the approvers of its destinations; each by email (`[email]`), with
//! decision links for an approver `[email].approvers` knows. A person away
//! (`[people.*] away_*`) is replaced by their delegate; one in quiet hours
//! is skipped at that level (audited). A schedule whose lookup fails
//! (timeout, error status, garbage, nobody on call) is replaced by its
//! `fallback`, else by the approvers of the agent's own destinations,
//! audited `schedule_fallback`: never by nobody.
//!
//! The engine decided *that* the level fires, once (the level is on the
//! proposal, committed with its timer's removal); this job may run again
//! after a crash, so each card post and email is recorded (deliveries,
//! `seen` keys per level and round) and never made twice.

use super::Core;
use crate::config::ladder::Level;
use crate::ops::explain::span;
use plangate_email::{Action, Reason};
use plangate_engine::card::document_file_name;
use plangate_engine::{ApprovalId, DecisionStatus, Proposal, TimerKind};
use std::fmt::Write;
use std::sync::OnceLock;
use tracing::warn;

/// Attempts of one level's emails before the unreached are left.
const MAX_ATTEMPTS: u8 = 5;

/// The one client schedules are read with.
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(plangate_schedule::client)
}

/// Who a level reaches at a moment, and why not the others.
#[derive(Debug, Default)]
pub(crate) struct Reached {
    /// People to mail: (who, address). `who` is an identity or the address.
    pub people: Vec<(String, Option<String>)>,
    /// One line each: away (and who instead), quiet hours, no address.
    pub notes: Vec<String>,
    /// Schedules that failed: (name, why, who instead).
    pub fallbacks: Vec<(String, String, Vec<String>)>,
}

impl Core {
    /// The approvers of `agent`'s own destinations: the static approvers a
    /// failing schedule falls back to.
    fn static_approvers(&self, agent: &str) -> Vec<String> {
        let index = self.pairing.approvers();
        let mut all: Vec<String> = index.places(agent).iter().filter(|p| !p.escalation).flat_map(|p| p.approvers.iter().cloned()).collect();
        all.sort();
        all.dedup();
        all
    }

    /// Who `level` of `agent`'s ladder reaches at `at_ms` (schedules read
    /// now; a rota or feed answers for `at_ms`).
    pub(crate) async fn reached(&self, agent: &str, level: &Level, at_ms: i64) -> Reached {
        let mut out = Reached::default();
        let mut wanted: Vec<String> = level.approvers.iter().chain(level.emails.iter()).cloned().collect();
        let index = self.pairing.approvers();
        for place in index.places(agent).iter().filter(|p| level.destinations.contains(&p.destination.name)) {
            wanted.extend(place.approvers.iter().cloned());
        }
        for name in &level.schedules {
            let Some(on_call) = self.settings.schedules.get(name) else { continue };
            match on_call.schedule.on_call(client(), at_ms).await {
                Ok(who) => wanted.extend(who),
                Err(e) => {
                    let instead = if on_call.fallback.is_empty() { self.static_approvers(agent) } else { on_call.fallback.clone() };
                    // Only an agent without destinations has nobody here
                    // (the config refuses a schedule without a fallback
                    // for an agent with destinations and no approvers).
                    let mut why = format!("{} schedule {e}", on_call.schedule.source.kind());
                    if instead.is_empty() {
                        why.push_str(" (agent has no approvers to fall back to: its cards are recorded only)");
                    }
                    out.fallbacks.push((name.clone(), why, instead.clone()));
                    wanted.extend(instead);
                }
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for who in wanted {
            let person = self.settings.people.get(&who);
            let who = match person.and_then(|p| p.away.as_ref()).filter(|a| a.covers(at_ms)) {
                Some(away) => match &away.delegate {
                    Some(d) => {
                        out.notes.push(format!("{who} is away: {d} instead"));
                        d.clone()
                    }
                    None => {
                        out.notes.push(format!("{who} is away (no delegate)"));
                        continue;
                    }
                },
                None => who,
            };
            if !seen.insert(who.clone()) {
                continue;
            }
            if let Some(quiet) = self.settings.people.get(&who).and_then(|p| p.quiet.as_ref()).filter(|q| q.covers(at_ms)) {
                out.notes.push(format!("{who} in quiet hours ({})", quiet.describe()));
                continue;
            }
            let address = if who.contains('@') && !who.contains(':') {
                Some(who.clone())
            } else {
                let own = self.settings.people.get(&who).and_then(|p| p.email.clone());
                own.or_else(|| self.settings.raw.email.as_ref().and_then(|e| e.approvers.get(&who).cloned()))
            };
            out.people.push((who, address));
        }
        out
    }

    /// Reach level `level` (1-based) of pending approval `id`, its
    /// `round`-th time. `Some(n)`: an email failed, run again as attempt `n`.
    #[tracing::instrument(level = "debug", skip(self), fields(approval = %id))]
    pub(super) async fn reach_level(&self, id: ApprovalId, level: u8, round: u16, attempts: u8) -> Option<u8> {
        let (p, state) = self.proposal_and_state(id, None).await?;
        if p.status != DecisionStatus::Pending || state.session.latest_approval != Some(id) {
            return None;
        }
        let pid = Some((id, p.version));
        let Some(config) = self.settings.ladders.get(&p.session.agent).and_then(|l| l.get(usize::from(level).saturating_sub(1))).cloned()
        else {
            let detail = format!("level {level} is no longer configured for agent {}: nobody new reached", p.session.agent);
            self.audit(&p.session, "plangate", "ladder_reached", pid, detail).await;
            return None;
        };
        let now = self.now();
        let reached = self.reached(&p.session.agent, &config, now.0).await;
        let marker = format!("ladder:{id}:{level}:{round}");
        let first_run = !self
            .blocking({
                let m = marker.clone();
                move |s| s.seen(&m)
            })
            .await
            .unwrap_or(false);
        if first_run {
            for (schedule, why, instead) in &reached.fallbacks {
                let detail = format!("level {level}: {schedule} {why}; reaching {} instead", instead.join(", "));
                self.audit(&p.session, "plangate", "schedule_fallback", pid, detail).await;
            }
        }
        let places = self.post_level(&p, &state, &config, level, round).await;
        let failed = self.mail_level(&p, &state, &reached, level, round, attempts).await;
        if first_run {
            let mut detail = format!("level {level}");
            if round > 0 {
                let _ = write!(detail, " (repeat {round})");
            }
            let mail = self.mailer.is_some();
            let people: Vec<String> = reached
                .people
                .iter()
                .map(|(who, address)| match (address, mail) {
                    (Some(_), true) => format!("{who} (email)"),
                    (Some(_), false) => format!("{who} (not mailed: [email] is off)"),
                    (None, _) => format!("{who} (no address)"),
                })
                .collect();
            let _ = write!(detail, ": {}", places.iter().chain(people.iter()).cloned().collect::<Vec<_>>().join(", "));
            if !reached.notes.is_empty() {
                let _ = write!(detail, "; {}", reached.notes.join("; "));
            }
            self.audit(&p.session, "plangate", "ladder_reached", pid, detail).await;
            let _ = self.blocking(move |s| s.mark_seen(&marker)).await;
        }
        (failed && attempts + 1 < MAX_ATTEMPTS).then_some(attempts + 1)
    }

    /// The level's destinations: the card the first time (recorded like
    /// any other, so decisions edit it), a reminder under it on a repeat.
    /// Returns the places reached, as `name (chat)`.
    async fn post_level(&self, p: &Proposal, state: &plangate_engine::State, level_cfg: &Level, level: u8, round: u16) -> Vec<String> {
        let id = p.approval_id;
        let index = self.pairing.approvers();
        let dests: Vec<_> = index
            .places(&p.session.agent)
            .iter()
            .filter(|pl| level_cfg.destinations.contains(&pl.destination.name) && pl.takes(p.project.as_ref()))
            .map(|pl| pl.destination.clone())
            .collect();
        let now = self.now();
        let waited = plangate_engine::ids::humanize_ms(now.0 - p.created_at.0);
        let mut view = self.card_of(p, state, now);
        view.context = format!("⚠ escalated: no decision after {waited} (level {level}) · {}", view.context);
        let document = Self::document_of(p);
        let posted = self.blocking(move |s| s.deliveries(&id)).await.unwrap_or_default();
        let mut reached = Vec::new();
        for dest in dests {
            let Some(channel) = self.adapters.channel(&dest.channel) else { continue };
            reached.push(format!("{} (chat)", dest.name));
            if round == 0 {
                if posted.iter().any(|d| d.destination == dest.name) {
                    continue; // resumed after a crash, or a destination of an earlier level
                }
                let (dest, _opening) = self.threads.in_session_thread(dest, p).await;
                match channel.post_card(&dest, &view, &document).await {
                    Ok(delivery) => {
                        self.threads.remember_thread(&dest, &p.session, &delivery).await;
                        let _ = self.blocking(move |s| s.add_delivery(&id, &delivery)).await;
                        self.audit(&p.session, "plangate", "card_escalated", Some((id, p.version)), dest.name.clone()).await;
                    }
                    Err(e) => warn!(destination = %dest.name, error = %e, "escalation not delivered"),
                }
            } else {
                let text = format!("⏰ Still waiting (level {level}, repeat {round}): no decision after {waited}.");
                for delivery in posted.iter().filter(|d| d.destination == dest.name) {
                    let key = format!("ladder:{id}:{level}:{round}:{}:{}", delivery.destination, delivery.chat);
                    let probe = key.clone();
                    if self.blocking(move |s| s.seen(&probe)).await.unwrap_or(false) {
                        continue;
                    }
                    match channel.send_nudge(delivery, &view, &text).await {
                        Ok(()) => {
                            let _ = self.blocking(move |s| s.mark_seen(&key)).await;
                        }
                        Err(e) => warn!(chat = %delivery.chat, error = %e, "ladder repeat not sent"),
                    }
                }
            }
        }
        reached
    }

    /// Mail the level's people: links for an approver `[email].approvers`
    /// knows and the agent's approver lists name, the card alone for anyone
    /// else (an on-call person who is no approver is told, and decides
    /// where they are an approver, or asks one). Whether a send failed.
    async fn mail_level(
        &self,
        p: &Proposal,
        state: &plangate_engine::State,
        reached: &Reached,
        level: u8,
        round: u16,
        attempts: u8,
    ) -> bool {
        let (Some(mailer), Some(config)) = (self.mailer.as_ref(), self.settings.raw.email.as_ref()) else { return false };
        let base = self.settings.email_public_url();
        let id = p.approval_id;
        let now = self.now();
        let card = self.card_of(p, state, now);
        let reason = Reason::Escalated(format!("{} (level {level})", plangate_engine::ids::humanize_ms(now.0 - p.created_at.0)));
        let document = (document_file_name(p), p.document());
        let pid = Some((id, p.version));
        let mut failed = false;
        for (who, address) in &reached.people {
            let Some(address) = address else { continue };
            let sent = format!("email:{id}:level{level}.{round}:{who}");
            let probe = sent.clone();
            if self.blocking(move |s| s.seen(&probe)).await.unwrap_or(false) {
                continue;
            }
            // Links only for who may decide by email (an approver the
            // link page would let decide); anyone else gets the card alone.
            let may_decide = config.approvers.contains_key(who)
                && self.pairing.approvers().check(&p.session.agent, p.project.as_ref(), who, crate::approvers::Venue::Email).is_ok();
            let links: Vec<(Action, String)> = match (may_decide, &base) {
                (true, Some(base)) => match self.mint_links(p, who).await {
                    Ok(links) => links.into_iter().map(|(a, t)| (a, format!("{base}/e/{}", t.encode()))).collect(),
                    Err(e) => {
                        warn!(approval = %id, error = %e, "email links not recorded; email not sent");
                        failed = true;
                        continue;
                    }
                },
                _ => Vec::new(),
            };
            let email = plangate_email::render(address, &card, &reason, &links, document.clone());
            match mailer.send(&email).await {
                Ok(()) => {
                    let _ = self.blocking(move |s| s.mark_seen(&sent)).await;
                    self.audit(&p.session, "plangate", "email_sent", pid, format!("escalation level {level} to {who}")).await;
                }
                Err(e) => {
                    let detail = format!("escalation level {level} to {who} (attempt {}): {e}", attempts + 1);
                    self.audit(&p.session, "plangate", "email_not_sent", pid, detail).await;
                    failed = true;
                }
            }
        }
        failed
    }

    /// `plangate ladder show <approval>`: per level, when it is (or was)
    /// reached and whom it reaches then, in lines for people.
    pub async fn ladder_show(&self, id: ApprovalId) -> Option<String> {
        let p = self.blocking(move |s| s.proposal(&id)).await.ok()??;
        let agent = p.session.agent.clone();
        let levels = self.settings.ladders.get(&agent).cloned().unwrap_or_default();
        let mut out = String::new();
        let _ =
            writeln!(out, "approval {id} v{} of agent {agent}: {} · proposed {} UTC", p.version, p.status.as_str(), p.created_at.clock());
        if let Some(claim) = p.claim.as_ref().filter(|c| c.holds(self.now())) {
            let _ = writeln!(out, "claimed by {} until {} UTC: levels due before then wait for it", claim.by, claim.until.clock());
        }
        if levels.is_empty() {
            let _ = writeln!(out, "no escalation ladder for agent {agent} ([approvals] ladder or escalate_to)");
            return Some(out);
        }
        for (i, level) in levels.iter().enumerate() {
            let n = u8::try_from(i + 1).unwrap_or(u8::MAX);
            let offset = p.created_at.plus_ms(level.after_ms);
            let pending = p.timers.iter().filter(|t| t.kind == TimerKind::Level(n) || (n == 1 && t.kind == TimerKind::Escalate)).min();
            let (when, state) = if n <= p.escalated {
                (offset, if n == p.escalated { "reached" } else { "reached, passed on" })
            } else if let Some(t) = pending {
                (t.due, if p.status == DecisionStatus::Pending { "due" } else { "not reached" })
            } else {
                (offset, if p.status == DecisionStatus::Pending { "due" } else { "not reached" })
            };
            let repeat = level.repeat_ms.map(|r| format!(", again every {}", span(r))).unwrap_or_default();
            let _ = writeln!(out, "level {n} at +{} ({} UTC), {state}{repeat}:", span(level.after_ms), when.clock());
            for d in &level.destinations {
                let _ = writeln!(out, "  destination {d}");
            }
            for s in &level.schedules {
                let kind = self.settings.schedules.get(s).map(|o| o.schedule.source.kind()).unwrap_or("?");
                let _ = writeln!(out, "  schedule {s} ({kind})");
            }
            let reached = self.reached(&agent, level, when.0).await;
            for (schedule, why, instead) in &reached.fallbacks {
                let _ = writeln!(out, "  ! {schedule}: {why}; falls back to {}", instead.join(", "));
            }
            for (who, address) in &reached.people {
                match address {
                    Some(a) if a != who => {
                        let _ = writeln!(out, "  person {who} by email to {a}");
                    }
                    Some(_) => {
                        let _ = writeln!(out, "  email {who}");
                    }
                    None => {
                        let _ = writeln!(out, "  person {who} (no email address: reached only in the destinations' chats)");
                    }
                }
            }
            for note in &reached.notes {
                let _ = writeln!(out, "  - {note}");
            }
        }
        Some(out)
    }
}
