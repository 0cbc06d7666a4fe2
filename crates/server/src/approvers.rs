//! Who may decide for which agent, and from where: built from the settings
//! (and, by [`crate::pairing`], the destinations paired from chats), asked
//! by every path a decision can come from.
//!
//! Before this index, the chat hub, the web page, the chat jobs and the
//! configuration each walked `agents.<id>.destinations`, the escalation
//! lists and `[destinations.*]` on their own, and a fix to one walk (the
//! escalation destinations, say) could miss another. Now there is one walk,
//! at load ([`ApproverIndex::build`]), and one question,
//! [`ApproverIndex::check`], whose answer depends on the [`Venue`].

use crate::config::{Config, Settings};
use plangate_channel::{Destination, Style};
use plangate_engine::authority::Approvers;
use plangate_engine::{Project, ProjectPatterns};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A destination a chat paired itself to (`/plan pair`), as
/// [`crate::pairing`] stores it: here, beside the index it joins, so the
/// index knows nothing of how pairing works.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairedDestination {
    pub name: String,
    pub agent: String,
    /// `telegram` | `slack` | `discord`
    pub channel: String,
    pub chat: String,
    /// Identities (`telegram:111`); never empty (the last one cannot leave).
    pub approvers: Vec<String>,
    /// Who sent the code (an identity).
    pub paired_by: String,
    /// When, in ms since the epoch.
    pub paired_at: i64,
}

/// One chat an agent's cards go to, with who may decide there.
#[derive(Debug, Clone)]
pub struct Place {
    pub destination: Destination,
    /// Identities (`telegram:111`) on this destination's approver list.
    pub approvers: BTreeSet<String>,
    /// An escalation destination (cards arrive there only when a plan waits too long).
    pub escalation: bool,
    /// Paired from a chat (`/plan pair`), not from the config file.
    pub paired: bool,
    /// Which projects' cards come here (`projects`; none: all).
    pub projects: ProjectPatterns,
}

impl Place {
    /// Whether cards of `project` come here.
    pub fn takes(&self, project: Option<&Project>) -> bool {
        self.projects.matches(project.map(|p| p.name.as_str()))
    }
}

/// Where a decision comes from, which says what "an approver" means.
#[derive(Debug, Clone, Copy)]
pub enum Venue<'a> {
    /// A chat: the person must be on the approver list of one of the
    /// agent's destinations that *is* this chat.
    Chat { channel: &'a str, chat: &'a str },
    /// The web page: on the approver list of any of the agent's
    /// destinations that takes the plan's project (a browser has no "this
    /// chat"). The page's buttons and inbox ask the same.
    Web,
    /// A one-use link of an email (`[email]`): the person the link was
    /// sent to, held to what the page asks of them (an approver of any of
    /// the agent's destinations that takes the plan's project).
    Email,
    /// A phone's notification (`[push]`): the person the push went to,
    /// signed in on the page, held to what the page asks of them.
    Push,
    /// The operator (HTTP API, CLI, the page's operator sign-in), who holds
    /// everything.
    Operator,
}

/// Why a person may not decide an agent's plans from a venue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAllowed {
    #[error("This chat does not receive {agent}'s plans, so they cannot be decided here.")]
    NotHere { agent: String },
    #[error("You are not an approver for this plan.")]
    NotApprover,
}

/// Per agent, the places its cards go to, its own destinations first.
#[derive(Debug, Clone, Default)]
pub struct ApproverIndex {
    by_agent: BTreeMap<String, Arc<[Place]>>,
}

impl ApproverIndex {
    /// The index of validated settings (their destinations and escalations).
    pub fn of(settings: &Settings) -> ApproverIndex {
        ApproverIndex::build(&settings.raw, &settings.escalations)
    }

    /// Walk the configuration once. `escalations` is the validated
    /// `escalate_to` list of each agent (its own, or the global one).
    pub fn build(raw: &Config, escalations: &BTreeMap<String, Vec<String>>) -> ApproverIndex {
        let place = |name: &String, escalation: bool| {
            let d = raw.destinations.get(name)?;
            Some(Place {
                destination: Destination {
                    name: name.clone(),
                    channel: d.channel.clone(),
                    chat: d.chat.clone(),
                    style: d.style,
                    threads: d.threads,
                    thread: None,
                    thread_name: String::new(),
                },
                approvers: d.approvers.iter().cloned().collect(),
                escalation,
                paired: false,
                // Checked when the settings were read; a bad glob never gets here.
                projects: ProjectPatterns::new(&d.projects).unwrap_or_default(),
            })
        };
        let by_agent = raw
            .agents
            .iter()
            .map(|(id, agent)| {
                let own = agent.destinations.iter().filter_map(|name| place(name, false));
                let escalated = escalations.get(id).into_iter().flatten().filter_map(|name| place(name, true));
                (id.clone(), own.chain(escalated).collect::<Arc<[Place]>>())
            })
            .collect();
        ApproverIndex { by_agent }
    }

    /// This index with the destinations paired from chats: each one of its
    /// agent's own destinations (buttons), after the configured ones. One
    /// whose name `in_config` knows is left out (the config file wins), and
    /// so is one whose agent is no longer configured.
    pub fn with_paired(&self, paired: &[PairedDestination], in_config: impl Fn(&str) -> bool) -> ApproverIndex {
        let mut by_agent = self.by_agent.clone();
        for d in paired.iter().filter(|d| !in_config(&d.name)) {
            let Some(places) = by_agent.get_mut(&d.agent) else { continue };
            let place = Place {
                destination: Destination {
                    name: d.name.clone(),
                    channel: d.channel.clone(),
                    chat: d.chat.clone(),
                    style: Style::Buttons,
                    ..Destination::default()
                },
                approvers: d.approvers.iter().cloned().collect(),
                escalation: false,
                paired: true,
                // A paired chat takes every project's cards.
                projects: ProjectPatterns::default(),
            };
            // Own destinations first, escalation ones last.
            let mut list: Vec<Place> = places.iter().filter(|p| !p.escalation).cloned().collect();
            list.push(place);
            list.extend(places.iter().filter(|p| p.escalation).cloned());
            *places = list.into();
        }
        ApproverIndex { by_agent }
    }

    /// Who may open the gate of `agent`'s sessions: everyone on the
    /// approver list of one of its places (none for an unknown agent).
    pub fn approver_list(&self, agent: &str) -> Approvers {
        Approvers::listed(self.places(agent).iter().flat_map(|p| p.approvers.iter().cloned()))
    }

    /// Every place of `agent` (none for an unknown agent).
    pub fn places(&self, agent: &str) -> &[Place] {
        self.by_agent.get(agent).map(|p| &p[..]).unwrap_or_default()
    }

    /// The agent's own destinations that take cards of `project`, where
    /// its cards are posted.
    pub fn destinations(&self, agent: &str, project: Option<&Project>) -> Vec<Destination> {
        self.places(agent).iter().filter(|p| !p.escalation && p.takes(project)).map(|p| p.destination.clone()).collect()
    }

    /// The agent's escalation destinations that take cards of `project`.
    pub fn escalation_destinations(&self, agent: &str, project: Option<&Project>) -> Vec<Destination> {
        self.places(agent).iter().filter(|p| p.escalation && p.takes(project)).map(|p| p.destination.clone()).collect()
    }

    /// The places of `agent` that are this chat.
    pub fn places_in<'a>(&'a self, agent: &str, channel: &'a str, chat: &'a str) -> impl Iterator<Item = &'a Place> {
        self.places(agent).iter().filter(move |p| p.destination.channel == channel && p.destination.chat == chat)
    }

    /// The agents whose cards go to this chat (their own or escalation
    /// destinations), whatever their project.
    pub fn agents_in(&self, channel: &str, chat: &str) -> Vec<String> {
        self.by_agent.keys().filter(|agent| self.places_in(agent, channel, chat).next().is_some()).cloned().collect()
    }

    /// Whether cards of `agent` about `project` go to this chat.
    pub fn receives(&self, agent: &str, project: Option<&Project>, channel: &str, chat: &str) -> bool {
        self.places_in(agent, channel, chat).any(|p| p.takes(project))
    }

    /// Whether `who` may decide `agent`'s plans about `project` from
    /// `venue`: a chat's people decide only the projects that chat takes,
    /// the page's the projects one of their chats takes.
    pub fn check(&self, agent: &str, project: Option<&Project>, who: &str, venue: Venue<'_>) -> Result<(), NotAllowed> {
        match venue {
            Venue::Operator => Ok(()),
            Venue::Web | Venue::Email | Venue::Push if self.places(agent).iter().any(|p| p.takes(project) && p.approvers.contains(who)) => {
                Ok(())
            }
            Venue::Web | Venue::Email | Venue::Push => Err(NotAllowed::NotApprover),
            Venue::Chat { channel, chat } => {
                let mut here = self.places_in(agent, channel, chat).filter(|p| p.takes(project)).peekable();
                if here.peek().is_none() {
                    return Err(NotAllowed::NotHere { agent: agent.to_string() });
                }
                if here.any(|p| p.approvers.contains(who)) {
                    Ok(())
                } else {
                    Err(NotAllowed::NotApprover)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::from_toml(
            "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"t\"\n\
             [agents.a]\ntoken = \"0123456789abcdef\"\ndestinations = [\"team\"]\n[agents.a.approvals]\nescalate_to = [\"leads\"]\n\
             [agents.b]\ntoken = \"fedcba9876543210\"\ndestinations = [\"team\"]\n\
             [destinations.team]\nchannel = \"telegram\"\nchat = \"1\"\napprovers = [\"telegram:1\"]\n\
             [destinations.leads]\nchannel = \"telegram\"\nchat = \"2\"\napprovers = [\"telegram:2\"]\n",
        )
        .expect("valid")
    }

    #[test]
    fn a_chat_decides_only_what_it_receives_and_only_by_its_own_approvers() {
        let index = ApproverIndex::of(&settings());
        let team = Venue::Chat { channel: "telegram", chat: "1" };
        let leads = Venue::Chat { channel: "telegram", chat: "2" };
        assert_eq!(index.check("a", None, "telegram:1", team), Ok(()));
        // An approver of another of the agent's chats is not one here.
        assert_eq!(index.check("a", None, "telegram:2", team), Err(NotAllowed::NotApprover));
        assert_eq!(index.check("a", None, "telegram:2", leads), Ok(()), "escalation destinations count");
        assert_eq!(index.check("b", None, "telegram:2", leads), Err(NotAllowed::NotHere { agent: "b".to_string() }));
        assert_eq!(
            index.check("a", None, "telegram:1", Venue::Chat { channel: "slack", chat: "1" }),
            Err(NotAllowed::NotHere { agent: "a".into() })
        );
    }

    #[test]
    fn the_web_asks_any_destination_and_the_operator_holds_everything() {
        let index = ApproverIndex::of(&settings());
        assert_eq!(index.check("a", None, "telegram:2", Venue::Web), Ok(()));
        assert_eq!(index.check("b", None, "telegram:2", Venue::Web), Err(NotAllowed::NotApprover));
        assert_eq!(index.check("unknown", None, "telegram:1", Venue::Web), Err(NotAllowed::NotApprover));
        assert_eq!(index.check("unknown", None, "anyone", Venue::Operator), Ok(()));
        assert_eq!(index.check("a", None, "telegram:2", Venue::Email), Ok(()), "email asks what the page asks");
        assert_eq!(index.check("b", None, "telegram:2", Venue::Email), Err(NotAllowed::NotApprover));
    }

    #[test]
    fn paired_destinations_join_unless_the_config_names_them() {
        let paired = |name: &str, agent: &str, chat: &str| PairedDestination {
            name: name.into(),
            agent: agent.into(),
            channel: "telegram".into(),
            chat: chat.into(),
            approvers: vec!["telegram:9".into()],
            paired_by: "telegram:9".into(),
            paired_at: 0,
        };
        let s = settings();
        let list = [paired("phone", "b", "9"), paired("team", "b", "8"), paired("gone", "nobody", "7")];
        let index = ApproverIndex::of(&s).with_paired(&list, |n| s.raw.destinations.contains_key(n));
        assert_eq!(index.destinations("b", None).iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["team", "phone"]);
        assert_eq!(index.destinations("b", None)[0].chat, "1", "the config's team wins over the paired one");
        assert_eq!(index.check("b", None, "telegram:9", Venue::Chat { channel: "telegram", chat: "9" }), Ok(()));
        assert_eq!(
            index.check("b", None, "telegram:9", Venue::Chat { channel: "telegram", chat: "8" }),
            Err(NotAllowed::NotHere { agent: "b".into() })
        );
        assert!(index.agents_in("telegram", "7").is_empty(), "an agent no longer configured gets nothing");
        assert_eq!(index.approver_list("b"), Approvers::listed(["telegram:1", "telegram:9"]));
        assert_eq!(ApproverIndex::of(&s).approver_list("b"), s.approval_policy("b").approvers, "without pairing: the config's list");
        // Escalation places stay last.
        let a = ApproverIndex::of(&s).with_paired(&[paired("p", "a", "5")], |_| false);
        assert_eq!(a.places("a").iter().map(|p| p.destination.name.as_str()).collect::<Vec<_>>(), ["team", "p", "leads"]);
    }

    #[test]
    fn destinations_and_chats_are_read_once() {
        let index = ApproverIndex::of(&settings());
        assert_eq!(index.destinations("a", None).iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["team"]);
        assert_eq!(index.escalation_destinations("a", None).iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["leads"]);
        assert_eq!(index.agents_in("telegram", "1"), ["a", "b"]);
        assert_eq!(index.agents_in("telegram", "2"), ["a"]);
        assert!(index.agents_in("telegram", "3").is_empty());
    }

    #[test]
    fn projects_route_cards_and_bound_who_decides_them() {
        let settings = Settings::from_toml(
            "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"t\"\n\
             [agents.a]\ntoken = \"0123456789abcdef\"\ndestinations = [\"billing\", \"web\", \"all\"]\n\
             [destinations.billing]\nchannel = \"telegram\"\nchat = \"1\"\napprovers = [\"telegram:1\"]\nprojects = [\"billing-*\"]\n\
             [destinations.web]\nchannel = \"telegram\"\nchat = \"2\"\napprovers = [\"telegram:2\"]\nprojects = [\"web\"]\n\
             [destinations.all]\nchannel = \"telegram\"\nchat = \"3\"\napprovers = [\"telegram:3\"]\n",
        )
        .expect("valid");
        let index = ApproverIndex::of(&settings);
        let project = |name: &str| Project { name: name.into(), branch: None, host: None };
        let names = |d: Vec<Destination>| d.into_iter().map(|d| d.name).collect::<Vec<_>>();
        assert_eq!(names(index.destinations("a", Some(&project("billing-api")))), ["billing", "all"]);
        assert_eq!(names(index.destinations("a", Some(&project("web")))), ["web", "all"]);
        assert_eq!(names(index.destinations("a", None)), ["all"], "a card that names no project goes where no pattern is");
        let billing = Venue::Chat { channel: "telegram", chat: "1" };
        let api = project("billing-api");
        assert_eq!(index.check("a", Some(&api), "telegram:1", billing), Ok(()));
        assert_eq!(index.check("a", Some(&project("web")), "telegram:1", billing), Err(NotAllowed::NotHere { agent: "a".into() }));
        assert_eq!(index.check("a", Some(&api), "telegram:2", Venue::Web), Err(NotAllowed::NotApprover));
        assert_eq!(index.check("a", Some(&api), "telegram:3", Venue::Web), Ok(()));
        assert!(index.receives("a", Some(&api), "telegram", "1") && !index.receives("a", None, "telegram", "1"));
    }
}
