//! `/plan list` in a chat many agents share: the active sessions grouped by
//! project, the group waiting longest first and, in each group, the session
//! waiting longest first, each with how long it has waited and, under
//! `threads = "per_session"`, a link to its topic or thread.

use plangate_engine::ids::humanize_ms;
use plangate_engine::text::reveal;
use plangate_engine::{State, Timestamp};

/// The heading of sessions whose agent did not say where it runs.
pub(super) const NO_PROJECT: &str = "(no project)";

/// Since when a session waits: its latest proposal's time, else never
/// (sorted last).
fn waiting_since(state: &State) -> i64 {
    state.latest.as_ref().map_or(i64::MAX, |p| p.created_at.0)
}

fn project_name(state: &State) -> Option<&str> {
    state.latest.as_ref()?.project.as_ref().map(|p| p.name.as_str())
}

/// The grouped list. `line` is the one-line summary of a session (the same
/// line `/plan help` and an ambiguous target show); `link` its topic or
/// thread, when it has one.
pub(super) fn grouped(
    active: &[State],
    now: Timestamp,
    line: impl Fn(&State) -> String,
    link: impl Fn(&State) -> Option<String>,
) -> String {
    let mut sorted: Vec<&State> = active.iter().collect();
    sorted.sort_by_key(|s| waiting_since(s));
    // Groups in the order of their oldest session, which the sort put first.
    let mut groups: Vec<(Option<&str>, Vec<&State>)> = Vec::new();
    for state in sorted {
        let name = project_name(state);
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, members)) => members.push(state),
            None => groups.push((name, vec![state])),
        }
    }
    let mut out = Vec::new();
    for (name, members) in groups {
        out.push(format!("📁 {}", name.map_or_else(|| NO_PROJECT.to_string(), |n| reveal(n).0)));
        for state in members {
            let mut entry = format!("• {}", line(state));
            if let Some(p) = &state.latest {
                entry.push_str(&format!(" · waiting {}", humanize_ms(now.0.saturating_sub(p.created_at.0))));
                // The rest of the project: which branch and machine.
                if let Some(project) = &p.project {
                    let rest: Vec<&str> = [project.branch.as_deref(), project.host.as_deref()].into_iter().flatten().collect();
                    if !rest.is_empty() {
                        entry.push_str(&format!(" · {}", reveal(&rest.join(" · ")).0));
                    }
                }
            }
            if let Some(link) = link(state) {
                entry.push_str(&format!(" · {link}"));
            }
            out.push(entry);
        }
    }
    out.join("\n")
}

impl super::Hub {
    /// The session whose topic or thread this event came from, if any.
    pub(super) async fn thread_session(&self, ev: &plangate_channel::Inbound) -> Option<plangate_engine::SessionKey> {
        let thread = ev.thread.as_deref()?;
        self.core.threads.session_in_thread(ev.channel, &ev.chat, thread).await
    }

    /// Per session of `active`, a link to its topic or thread in this chat.
    pub(super) async fn thread_links(
        &self,
        ev: &plangate_channel::Inbound,
        active: &[State],
    ) -> std::collections::HashMap<plangate_engine::SessionKey, String> {
        let mut links = std::collections::HashMap::new();
        let Some(channel) = self.core.adapters.channel(ev.channel) else { return links };
        for state in active {
            let key = &state.session.key;
            let places: Vec<String> =
                self.core.pairing.approvers().places_in(&key.agent, ev.channel, &ev.chat).map(|p| p.destination.name.clone()).collect();
            for dest in places {
                if let Some(link) = self.core.threads.thread_of(&dest, key).await.and_then(|thread| channel.thread_link(&ev.chat, &thread))
                {
                    links.insert(key.clone(), link);
                    break;
                }
            }
        }
        links
    }
}
