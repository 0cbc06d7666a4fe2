//! A place per session (`threads = "per_session"`): which forum topic or
//! thread of a destination holds a session's cards, questions and nudges,
//! and which session a topic or thread is about (for `/plan` typed there).
//!
//! The adapters open topics and threads (a Telegram forum topic, a Slack
//! thread under the session's first card, a Discord thread started from
//! it) and say where each message went ([`Delivery::thread`]); this module
//! remembers it. The mapping lives in the store's cursors, both ways, next
//! to the deliveries: it survives restarts and every replica reads the same
//! one. When an adapter could not open one (not a forum, no right), the
//! card went to the main chat: said once per destination (log, audit,
//! `/readyz`), and the cards go on arriving in the chat itself.

use super::Core;
use plangate_channel::{Delivery, Destination, Threads};
use plangate_engine::{Proposal, SessionKey};
use tracing::warn;

/// The cursor holding the thread of `key`'s session in destination `dest`.
fn thread_cursor(dest: &str, key: &SessionKey) -> String {
    format!("thread:{dest}:{}/{}", key.agent, key.session_id)
}

/// The cursor holding the session a thread of `channel` chat `chat` is about.
fn session_cursor(channel: &str, chat: &str, thread: &str) -> String {
    format!("thread-session:{channel}:{chat}:{thread}")
}

/// What a new topic or thread is called: the project and the plan's title,
/// within Telegram's 128 characters.
fn thread_name(p: &Proposal) -> String {
    let who = match &p.project {
        Some(project) => project.name.clone(),
        None => p.session.to_string(),
    };
    let name = format!("{who} · {}", p.plan.title.trim());
    let (name, _) = plangate_engine::text::reveal(&name);
    if name.chars().count() <= 128 {
        name
    } else {
        format!("{}…", name.chars().take(127).collect::<String>())
    }
}

/// How many locks the opening of sessions' threads is spread over.
pub(super) const OPENING_STRIPES: usize = 64;

/// Held while a session's first message opens its topic or thread, so the
/// session's other messages (v2 proposed at once, a question) wait and
/// then go into it instead of opening one each. In one process: replicas
/// racing on the same session's very first card may still open two.
pub(super) type Opening = Option<tokio::sync::OwnedMutexGuard<()>>;

impl Core {
    /// `dest` as the adapter needs it for `p`'s session: its topic or
    /// thread when it has one already, and the name of a new one. Keep the
    /// [`Opening`] until [`Core::remember_thread`] has run.
    pub(super) async fn in_session_thread(&self, mut dest: Destination, p: &Proposal) -> (Destination, Opening) {
        if dest.threads != Threads::PerSession {
            return (dest, None);
        }
        let cursor = thread_cursor(&dest.name, &p.session);
        let stripe = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            cursor.hash(&mut h);
            (h.finish() as usize) % OPENING_STRIPES
        };
        let opening = self.thread_opening[stripe].clone().lock_owned().await;
        dest.thread = self.blocking(move |s| s.cursor(&cursor)).await.ok().flatten();
        dest.thread_name = thread_name(p);
        // A session that has its place lets the others by at once.
        let opening = dest.thread.is_none().then_some(opening);
        (dest, opening)
    }

    /// Remember where a session's message went under `threads =
    /// "per_session"`: a new (or recreated) topic or thread is stored both
    /// ways; a message that went to the main chat is the fallback, said once.
    pub(super) async fn remember_thread(&self, dest: &Destination, key: &SessionKey, delivery: &Delivery) {
        if dest.threads != Threads::PerSession {
            return;
        }
        match &delivery.thread {
            Some(thread) if dest.thread.as_ref() != Some(thread) => {
                let (forward, back) = (thread_cursor(&dest.name, key), session_cursor(&dest.channel, &dest.chat, thread));
                let (thread, session) = (thread.clone(), key.to_string());
                let stored = self
                    .blocking(move |s| {
                        s.set_cursor(&back, &session)?;
                        s.set_cursor(&forward, &thread)
                    })
                    .await;
                if let Err(e) = stored {
                    warn!(destination = %dest.name, error = %e, "the session's topic/thread was not recorded; its next card opens another");
                }
            }
            Some(_) => {}
            None => self.thread_fallback(dest, key).await,
        }
    }

    /// The card went to the main chat although the destination wants a
    /// place per session: once per destination and process, a warning in
    /// the log, the audit and `/readyz`.
    async fn thread_fallback(&self, dest: &Destination, key: &SessionKey) {
        let note = format!(
            "destination {}: threads = \"per_session\" but {} would not open a topic or thread in chat {} (not a forum, or the bot lacks the right); cards go to the main chat",
            dest.name, dest.channel, dest.chat
        );
        let first = self.thread_notes.lock().unwrap_or_else(|e| e.into_inner()).insert(dest.name.clone(), note.clone()).is_none();
        if first {
            warn!(destination = %dest.name, "{note}");
            self.audit(key, "plangate", "thread_fallback", None, note).await;
        }
    }

    /// Per destination, why its cards go to the main chat although it wants
    /// a place per session (for `/readyz`; readiness is not affected).
    pub fn thread_notes(&self) -> Vec<(String, String)> {
        self.thread_notes.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The session a topic or thread of this chat is about, when it is one
    /// plangate opened for a session.
    pub async fn session_in_thread(&self, channel: &str, chat: &str, thread: &str) -> Option<SessionKey> {
        let cursor = session_cursor(channel, chat, thread);
        let key = self.blocking(move |s| s.cursor(&cursor)).await.ok().flatten()?;
        let (agent, session) = key.split_once('/')?;
        Some(SessionKey::new(agent, session))
    }

    /// The session's topic or thread in destination `dest`, when it has one.
    pub async fn thread_of(&self, dest: &str, key: &SessionKey) -> Option<String> {
        let cursor = thread_cursor(dest, key);
        self.blocking(move |s| s.cursor(&cursor)).await.ok().flatten()
    }
}
