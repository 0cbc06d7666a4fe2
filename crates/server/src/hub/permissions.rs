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
use plangate_engine::{Command, Question, SessionKey};

impl Hub {
    /// Answer permission request `q` (a button, or a reply with a reason).
    pub(super) async fn answer_permission(&self, ev: &Inbound, q: &Question, answer: PermissionAnswer) -> Result<String, Refused> {
        let tool = q.permission.as_ref().map(|p| p.tool.clone()).unwrap_or_default();
        let said = answer.said();
        let command = Command::AnswerPermission { question_id: Some(q.question_id), answer };
        self.session_execute(ev, &q.session, command).await?;
        Ok(format!("{tool}: {said}."))
    }

    /// `/plan allow …` and `/plan deny …`: the waiting request of the
    /// session named, or of the one session in this chat that has one.
    pub(super) async fn permission_command(&self, ev: &Inbound, target: Option<&Target>, answer: PermissionAnswer) -> Reply {
        if let Some(why) = self.not_a_destination(ev) {
            return Reply::Text(why);
        }
        let agents = self.chat_agents(ev);
        let waiting: Vec<Question> = match target {
            Some(Target::Session(key)) if !agents.contains(&key.agent) => {
                return Reply::Text(format!("Agent {} does not send its requests to this chat.", key.agent))
            }
            Some(Target::Session(key)) => match self.core.load(key).await {
                Ok(state) => state.session.pending_permission.into_iter().collect(),
                Err(e) => return Reply::Text(format!("That session could not be read ({e}); try again.")),
            },
            Some(Target::Approval(_)) => return Reply::Text("Name the session (agent/session), not a plan #id.".to_string()),
            None => {
                let sessions = self.core.blocking(|s| s.sessions()).await.unwrap_or_default();
                sessions.into_iter().filter(|s| agents.contains(&s.key.agent)).filter_map(|s| s.pending_permission).collect()
            }
        };
        match waiting.as_slice() {
            [] => Reply::Text("No permission request is waiting here.".to_string()),
            [q] => match self.answer_permission(ev, q, answer).await {
                Ok(said) => Reply::Text(said),
                Err(why) => why.text(),
            },
            many => Reply::Text(format!(
                "Several permission requests are waiting; add the session:\n{}",
                many.iter()
                    .map(|q| format!("{} · {}", q.session, q.permission.as_ref().map(|p| p.tool.as_str()).unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join("\n")
            )),
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
                    let list: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
                    out.push(format!("{agent} · {kind} (configuration): {}", list.join(", ")));
                }
            }
        }
        for (n, r) in stored.iter().enumerate() {
            out.push(format!("{}. {} · always allow {} — by {}, {}", n + 1, r.agent, r.rule, r.created_by, r.created_at.rfc3339()));
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
                let detail = format!("{} removed the always-allow rule {} of {}", Self::who(ev), rule.rule, rule.agent);
                self.core.audit(&key, &Self::who(ev), "rule_removed", None, detail).await;
                Reply::Text(format!("Removed: {} · {}. Its calls ask again.", rule.agent, rule.rule))
            }
            Ok(false) => Reply::Text("That rule was already removed.".to_string()),
            Err(e) => Reply::Text(format!("The rule could not be removed ({e}); try again.")),
        }
    }
}
