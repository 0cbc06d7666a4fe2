//! Permission requests in chat: the graded buttons, `/plan allow`,
//! `/plan deny`, and the rules (`/plan rules`, `/plan rules remove N`).
//!
//! Who may answer is the same as who may decide a plan from this chat
//! (the destination's approvers, checked by the core and audited), plus
//! the engine's separation of duties (the requester may deny, not allow).

use super::{Hub, Refused};
use plangate_channel::{Inbound, Reply};
use plangate_engine::grammar::Target;
use plangate_engine::permission::{PermissionAnswer, StoredRule};
use plangate_engine::{Command, Question, Session, SessionKey};

/// How long before a typed answer without an id a request must have been
/// asked (its card posted) for the answer to land on it.
pub(super) const UNNAMED_ANSWER_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// `#id · agent/session · Tool`, for a reply that lists requests.
fn request_line(q: &Question) -> String {
    format!("#{} · {} · {}", q.question_id.short(), q.session, q.permission.as_ref().map(|p| p.tool.as_str()).unwrap_or("?"))
}

/// The command that answers `q` as `answer` does, naming it.
fn usage_for(q: &Question, answer: &PermissionAnswer) -> String {
    use plangate_engine::permission::Grade;
    let id = q.question_id.short();
    match answer {
        PermissionAnswer::Allow { grade: Grade::Once } => format!("/plan allow #{id} once"),
        PermissionAnswer::Allow { grade: Grade::Session } => format!("/plan allow #{id} session"),
        PermissionAnswer::Allow { grade: Grade::Always } => format!("/plan allow #{id} always"),
        PermissionAnswer::Deny { .. } => format!("/plan deny #{id} [reason]"),
    }
}

impl Hub {
    /// Answer permission request `q` (a button, or a reply with a reason).
    pub(super) async fn answer_permission(&self, ev: &Inbound, q: &Question, answer: PermissionAnswer) -> Result<String, Refused> {
        let tool = q.permission.as_ref().map(|p| p.tool.clone()).unwrap_or_default();
        let said = answer.said();
        let command = Command::AnswerPermission { question_id: Some(q.question_id), answer };
        let done = self.session_execute(ev, &q.session, command).await?;
        let expired = done.transition.answered.as_ref().and_then(|a| a.permission.as_ref()).and_then(|p| p.outcome.as_ref());
        if let Some(plangate_engine::permission::PermissionOutcome::Expired { why }) = expired {
            return Ok(format!("{tool}: nothing was allowed or denied: {why}."));
        }
        // Under a quorum a wider grant may only have been counted.
        let still_waiting = done.transition.state.session.pending_permission.as_ref().is_some_and(|p| p.question_id == q.question_id);
        if still_waiting {
            let counted = done.transition.audit.last().map(|a| a.detail.clone()).unwrap_or_default();
            return Ok(format!("Not granted yet: {counted}. Another approver must agree (or allow it once)."));
        }
        Ok(format!("{tool}: {said}."))
    }

    /// `/plan allow …` and `/plan deny …`: the request a card names
    /// (`#id`, its short id), the waiting request of the session named, or
    /// the one waiting in this chat's sessions.
    ///
    /// A typed answer is not bound to a card as a button is, so without an
    /// id it answers the one waiting request only when that is the newest
    /// card its sender could have read: not when, within
    /// [`UNNAMED_ANSWER_AFTER`] of the message, another request of these
    /// sessions stopped waiting (answered, expired, replaced) just before
    /// it came — the sender may have been reading that one, and a typed
    /// "allow" must not land on its successor. Then the reply names the
    /// request to answer.
    pub(super) async fn permission_command(&self, ev: &Inbound, target: Option<&Target>, answer: PermissionAnswer) -> Reply {
        if let Some(why) = self.not_a_destination(ev) {
            return Reply::Text(why);
        }
        let agents = self.chat_agents(ev);
        let sessions: Vec<Session> = match target {
            Some(Target::Session(key)) if !agents.contains(&key.agent) => {
                return Reply::Text(format!("Agent {} does not send its requests to this chat.", key.agent))
            }
            Some(Target::Session(key)) => match self.core.load(key).await {
                Ok(state) => vec![state.session],
                Err(e) => return Reply::Text(format!("That session could not be read ({e}); try again.")),
            },
            Some(Target::Approval(_)) | None => {
                let sessions = self.core.blocking(|s| s.sessions()).await.unwrap_or_default();
                sessions.into_iter().filter(|s| agents.contains(&s.key.agent)).collect()
            }
        };
        // When a request last stopped waiting in these sessions: a card
        // the sender may have read instead of the one waiting now.
        let settled = sessions.iter().filter_map(|s| s.permission_settled_at).max();
        let waiting: Vec<Question> = sessions.into_iter().filter_map(|s| s.pending_permission).collect();
        let named = match target {
            Some(Target::Approval(prefix)) => {
                let found: Vec<&Question> = waiting.iter().filter(|q| q.question_id.to_string().starts_with(prefix.as_str())).collect();
                match found.as_slice() {
                    [q] => Some(*q),
                    [] => {
                        return Reply::Text(format!(
                            "No permission request #{prefix} is waiting here: it was answered, replaced by a newer one, or the agent stopped waiting."
                        ))
                    }
                    _ => return Reply::Text(format!("#{prefix} names several requests; use more characters of the id.")),
                }
            }
            _ => None,
        };
        let q = match (named, waiting.as_slice()) {
            (Some(q), _) => q,
            (None, []) => return Reply::Text("No permission request is waiting here.".to_string()),
            (None, [q]) => {
                let within = UNNAMED_ANSWER_AFTER.as_millis() as i64;
                let fresh = self.core.now().0.saturating_sub(q.asked_at.0) < within;
                let followed_another = settled.is_some_and(|at| q.asked_at.0.saturating_sub(at.0) < within);
                if fresh && followed_another {
                    return Reply::Text(format!(
                        "A new permission request arrived just now ({}), so this answer may be meant for an earlier one. Name the request: {}",
                        request_line(q),
                        usage_for(q, &answer)
                    ));
                }
                q
            }
            (None, many) => {
                return Reply::Text(format!(
                    "Several permission requests are waiting; name one:\n{}",
                    many.iter().map(|q| format!("{} — {}", request_line(q), usage_for(q, &answer))).collect::<Vec<_>>().join("\n")
                ))
            }
        };
        match self.answer_permission(ev, q, answer).await {
            Ok(said) => Reply::Text(said),
            Err(why) => why.text(),
        }
    }

    /// The stored rules of this chat's agents, in the order `/plan rules`
    /// numbers them.
    async fn stored_rules(&self, ev: &Inbound) -> Result<Vec<StoredRule>, Refused> {
        let mut all = Vec::new();
        for agent in self.chat_agents(ev) {
            let rules = self.core.blocking(move |s| s.permission_rules(&agent)).await.map_err(|e| Refused::Say(e.to_string()))?;
            all.extend(rules);
        }
        Ok(all)
    }

    /// `/plan rules`: what answers this chat's agents' requests without
    /// asking — the configuration's (change them there) and the stored
    /// "always" answers, numbered for `/plan rules remove N`.
    pub(super) async fn rules(&self, ev: &Inbound) -> Reply {
        if let Some(why) = self.not_a_destination(ev) {
            return Reply::Text(why);
        }
        let stored = match self.stored_rules(ev).await {
            Ok(s) => s,
            Err(why) => return why.text(),
        };
        let mut out = Vec::new();
        for agent in self.chat_agents(ev) {
            let Some(config) = self.core.settings.raw.agents.get(&agent).map(|a| &a.permissions) else { continue };
            for (kind, rules) in [("deny", &config.deny), ("ask", &config.ask), ("allow", &config.allow)] {
                if !rules.is_empty() {
                    let list: Vec<String> = rules.iter().map(|r| r.shown()).collect();
                    out.push(format!("{agent} · {kind} (configuration): {}", list.join(", ")));
                }
            }
        }
        for (n, r) in stored.iter().enumerate() {
            out.push(format!("{}. {} · always allow {} — by {}, {}", n + 1, r.agent, r.rule.shown(), r.created_by, r.created_at.rfc3339()));
        }
        if out.is_empty() {
            return Reply::Text("No permission rules: every request the agents' harnesses ask about comes here.".to_string());
        }
        if !stored.is_empty() {
            out.push("Remove one with /plan rules remove N.".to_string());
        }
        Reply::Text(out.join("\n"))
    }

    /// `/plan rules remove N`: an approver of that rule's agent removes it;
    /// audited.
    pub(super) async fn remove_rule(&self, ev: &Inbound, n: usize) -> Reply {
        if let Some(why) = self.not_a_destination(ev) {
            return Reply::Text(why);
        }
        let stored = match self.stored_rules(ev).await {
            Ok(s) => s,
            Err(why) => return why.text(),
        };
        let Some(rule) = stored.get(n - 1).cloned() else {
            return Reply::Text(format!("There is no rule {n}; /plan rules lists {}.", stored.len()));
        };
        let key = SessionKey::new(rule.agent.clone(), "-");
        if let Err(why) = self.authorize(ev, &key, None).await {
            return why.text();
        }
        let (agent, id) = (rule.agent.clone(), rule.id.clone());
        match self.core.blocking(move |s| s.remove_permission_rule(&agent, &id)).await {
            Ok(true) => {
                let detail = format!("{} removed the always-allow rule {} of {}", Self::who(ev), rule.rule.shown(), rule.agent);
                self.core.audit(&key, &Self::who(ev), "rule_removed", None, detail).await;
                Reply::Text(format!("Removed: {} · {}. Its calls ask again.", rule.agent, rule.rule.shown()))
            }
            Ok(false) => Reply::Text("That rule was already removed.".to_string()),
            Err(e) => Reply::Text(format!("The rule could not be removed ({e}); try again.")),
        }
    }
}
