//! `/plan pair CODE` and `/plan approvers …` in a chat: the chat side of
//! [`crate::pairing`]. What a person typed is only ever matched against a
//! code or read as an identity of this chat's platform, never as anything
//! else.

use super::Hub;
use crate::pairing::PairError;
use plangate_channel::{Inbound, Reply};
use plangate_engine::grammar::ApproversChange;

impl Hub {
    /// `/plan pair CODE`.
    pub(super) async fn pair(&self, ev: &Inbound, code: &str) -> Reply {
        let who = Self::who(ev);
        match self.core.pairing.claim_code(ev.channel, &ev.chat, &who, code).await {
            Ok(d) => {
                let how = match ev.channel {
                    "telegram" => "/plan approvers add as a reply to their message",
                    _ => "/plan approvers add @person",
                };
                Reply::Announce(format!(
                    "Paired: this chat is destination {} of agent {}. Its plans arrive here as cards with buttons, \
                     and {} ({who}) approves them. Add approvers with {how}; /plan approvers lists them.",
                    d.name,
                    d.agent,
                    Self::actor(ev).label()
                ))
            }
            Err(e) => Reply::Text(e.to_string()),
        }
    }

    /// `/plan approvers [add|remove …]`.
    pub(super) async fn approvers(&self, ev: &Inbound, change: ApproversChange) -> Reply {
        let (add, remove) = match change {
            ApproversChange::List => return Reply::Text(self.approvers_text(ev)),
            ApproversChange::Add(people) => (people, Vec::new()),
            ApproversChange::Remove(people) => (Vec::new(), people),
        };
        let named = if add.is_empty() { &remove } else { &add };
        if named.is_empty() {
            return Reply::Text(match ev.channel {
                "telegram" => "Say who: send /plan approvers add (or remove) as a reply to that person's message.".to_string(),
                _ => "Say who: /plan approvers add @person (a mention, so the platform links the name).".to_string(),
            });
        }
        let resolve = |people: &[String]| people.iter().map(|p| identity_of(ev.channel, p)).collect::<Result<Vec<_>, _>>();
        let (add, remove) = match (resolve(&add), resolve(&remove)) {
            (Ok(add), Ok(remove)) => (add, remove),
            (Err(why), _) | (_, Err(why)) => return Reply::Text(why),
        };
        let who = Self::who(ev);
        match self.core.pairing.change_approvers(ev.channel, &ev.chat, &who, &add, &remove).await {
            Ok(changed) => Reply::Announce(
                changed
                    .iter()
                    .map(|d| {
                        let what =
                            if add.is_empty() { format!("Removed {}", remove.join(", ")) } else { format!("Added {}", add.join(", ")) };
                        format!(
                            "{what} (by {}): approvers of {} ({}) are now {}.",
                            Self::actor(ev).label(),
                            d.name,
                            d.agent,
                            d.approvers.join(", ")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Err(e @ PairError::Store(_)) => Reply::Text(format!("Nothing changed: {e}")),
            Err(e) => Reply::Text(e.to_string()),
        }
    }

    /// Every destination that is this chat, with its approvers.
    fn approvers_text(&self, ev: &Inbound) -> String {
        let index = self.core.pairing.approvers();
        let mut lines = Vec::new();
        for agent in index.agents_in(ev.channel, &ev.chat) {
            for place in index.places_in(&agent, ev.channel, &ev.chat) {
                let source = if place.paired { "paired" } else { "config file" };
                let approvers = place.approvers.iter().map(|a| self.named(a)).collect::<Vec<_>>().join(", ");
                let approvers = if approvers.is_empty() { "none (only the operator decides)".to_string() } else { approvers };
                lines.push(format!("{} (agent {agent}, {source}): {approvers}", place.destination.name));
            }
        }
        if lines.is_empty() {
            return "No agent sends its plans to this chat: run `plangate pair <platform>` on the server and send `/plan pair CODE` here."
                .to_string();
        }
        format!("Approvers of this chat:\n{}", lines.join("\n"))
    }
}

/// The identity (`slack:U123`) a person was named by in a chat of
/// `channel`: a mention of that platform (`<@U123>`, `<@U123|bob>`,
/// `<@!123>`), an identity of it (`telegram:111`), or — on Telegram, where
/// the adapter adds the replied-to person as an identity — nothing else.
pub(super) fn identity_of(channel: &str, typed: &str) -> Result<String, String> {
    let id = if let Some(inner) = typed.strip_prefix("<@").and_then(|t| t.strip_suffix('>')) {
        let inner = inner.strip_prefix('!').unwrap_or(inner);
        inner.split('|').next().unwrap_or_default().to_string()
    } else if let Some(id) = typed.strip_prefix(&format!("{channel}:")) {
        id.to_string()
    } else if typed.starts_with('@') && channel == "telegram" {
        return Err(format!("{typed}: a Telegram @name carries no id; send /plan approvers add as a reply to that person's message."));
    } else {
        return Err(format!("{typed:?} is not a person here: mention them (@name, so {channel} links it) or give their {channel}:<id>."));
    };
    let valid = match channel {
        "telegram" | "discord" => !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()),
        _ => (2..=32).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()),
    };
    if valid {
        Ok(format!("{channel}:{id}"))
    } else {
        Err(format!("{typed:?} is not a {channel} user id."))
    }
}

#[cfg(test)]
mod tests {
    use super::identity_of;

    #[test]
    fn mentions_and_identities_of_this_platform_only() {
        assert_eq!(identity_of("slack", "<@U0123ABC>"), Ok("slack:U0123ABC".into()));
        assert_eq!(identity_of("slack", "<@U0123ABC|bob>"), Ok("slack:U0123ABC".into()));
        assert_eq!(identity_of("discord", "<@!123456>"), Ok("discord:123456".into()));
        assert_eq!(identity_of("discord", "<@123456>"), Ok("discord:123456".into()));
        assert_eq!(identity_of("telegram", "telegram:111"), Ok("telegram:111".into()));
        assert!(identity_of("telegram", "slack:U1").is_err(), "another platform's identity");
        assert!(identity_of("telegram", "@bob").unwrap_err().contains("reply"));
        assert!(identity_of("slack", "<@u1; drop>").is_err());
        assert!(identity_of("discord", "<@abc>").is_err());
        assert!(identity_of("slack", "bob").is_err());
    }
}
