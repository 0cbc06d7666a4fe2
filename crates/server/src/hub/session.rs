//! `/plan` commands that act on a session (release, decide, restate) and
//! `/plan web`'s sign-in link: what the dispatcher in `hub.rs` calls.

use super::*;

impl Hub {
    /// `/plan web`: a personal sign-in link, sent privately. Anyone in a
    /// chat that receives plans may sign in; what they may decide there is
    /// the approver allowlists' business, checked on every decision.
    pub(super) fn web_sign_in(&self, ev: &Inbound) -> Reply {
        let Some(links) = self.core.web_links() else {
            return Reply::Text("The web page is off: set server.public_url in plangate's config to turn it on.".to_string());
        };
        if self.chat_agents(ev).is_empty() {
            return Reply::Text(format!("No agent sends its plans to this chat. {PAIR_HINT}"));
        }
        let who = plangate_web::Identity::Person { id: Self::who(ev), name: Self::actor(ev).label() };
        let url = links.sign_in_url(who);
        Reply::Private(format!(
            "Your personal sign-in link for plangate's web page (works once, within 10 minutes; do not share it):\n{url}"
        ))
    }

    pub(super) async fn session_command(&self, ev: &Inbound, key: &SessionKey, command: Command, ok: &str) -> Reply {
        match self.session_execute(ev, key, command).await {
            Ok(_) => Reply::Text(ok.to_string()),
            Err(why) => why.text(),
        }
    }

    /// Authorize and execute a command on a session; a refusal of who may
    /// act (here or by the engine's rules) is audited.
    pub(super) async fn session_execute(&self, ev: &Inbound, key: &SessionKey, command: Command) -> Result<crate::core::Executed, Refused> {
        self.authorize(ev, key, None).await?;
        match Box::pin(self.core.execute(key, Self::actor(ev), command, self.meta(ev))).await {
            Ok(done) => Ok(done),
            Err(e @ CoreError::Refused(Refusal::Forbidden(_) | Refusal::AlreadyApproved(_))) => {
                let why = e.to_person();
                self.refuse(ev, key, None, &why).await;
                Err(why.into())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `/plan off`: released, or — under a quorum — one more request on the
    /// way, said as the engine counted it.
    pub(super) async fn release(&self, ev: &Inbound, key: &SessionKey) -> Reply {
        match self.session_execute(ev, key, Command::Off).await {
            Ok(done) => match &done.transition.state.session.released_by {
                Some(by) => {
                    Reply::Text(format!("Released by {by}: no plan required. The agent may change things without an approved plan."))
                }
                None => {
                    let counted = done.transition.audit.last().map(|a| a.detail.clone()).unwrap_or_default();
                    Reply::Text(format!("Not released yet: {counted}."))
                }
            },
            Err(why) => why.text(),
        }
    }

    pub(super) async fn decide_command(
        &self,
        ev: &Inbound,
        target: Option<&Target>,
        decision: impl Fn(&Proposal) -> Result<Decision, String>,
    ) -> Reply {
        let (state, id) = match self.resolve(ev, target).await {
            Ok(found) => found,
            Err(why) => return why.text(),
        };
        let proposal = match id {
            Some(id) => self.proposal(id).await,
            None => state.latest.clone(),
        };
        let Some(p) = proposal else { return Reply::Text("This session has not proposed a plan yet.".to_string()) };
        match decision(&p) {
            Ok(decision) => self.decide(ev, p.approval_id, decision).await.into_text(),
            // Who may decide is still checked (and a refusal audited) first.
            Err(why) => match self.authorize(ev, &p.session, Some((p.approval_id, p.version))).await {
                Ok(()) => Reply::Text(why),
                Err(refused) => refused.text(),
            },
        }
    }

    pub(super) async fn restate(&self, ev: &Inbound, state: &State) -> Reply {
        let Some(p) = state.latest.clone() else { return Reply::Text("This session has not proposed a plan yet.".to_string()) };
        let Some(mut dest) =
            self.core.destinations(&p.session.agent, p.project.as_ref()).into_iter().find(|d| d.channel == ev.channel && d.chat == ev.chat)
        else {
            return Reply::Text("This chat is not a destination of that agent.".to_string());
        };
        // Into the session's topic or thread, when it has one.
        dest.thread = self.core.threads.thread_of(&dest.name, &p.session).await;
        let Some(channel) = self.core.adapters.channel(ev.channel) else { return Reply::Text("This channel is not running.".to_string()) };
        let view = self.core.card_of(&p, state, self.core.now());
        match channel.post_card(&dest, &view, &Core::document_of(&p)).await {
            Ok(delivery) => {
                let id = p.approval_id;
                let _ = self.core.blocking(move |s| s.add_delivery(&id, &delivery)).await;
                Reply::None
            }
            Err(e) => Reply::Text(format!("Could not post the card again: {e}")),
        }
    }
}
