//! A place per session (`threads = "per_session"`): which forum topic or
//! thread of a destination holds a session's cards, questions and nudges,
//! and which session a topic or thread is about (for `/plan` typed there).
//!
//! The adapters open topics and threads (a Telegram forum topic, a Slack
//! thread under the session's first card, a Discord thread started from
//! it) and say where each message went ([`Delivery::thread`]); this module
//! remembers it. The mapping lives in the store's cursors, both ways, next
//! to the deliveries: it survives restarts and every replica reads the same
//! one, and on a shared store the opening itself is claimed there, so two
//! replicas never open two for one session. When an adapter could not open
//! one (not a forum, no right), the
//! card went to the main chat: said once per destination (log, audit,
//! `/readyz`), and the cards go on arriving in the chat itself.

use crate::storage::Storage;
use plangate_channel::{Delivery, Destination, Threads};
use plangate_engine::{Proposal, SessionKey};
use plangate_store::Store;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::warn;

/// A claim to give back: the store, the claim's cursor, this claim's token.
type Claim = (Arc<dyn Store>, String, String);

/// What [`Core::claim_opening`] came to.
enum Claimed {
    /// This process opens the session's place, holding the claim (none
    /// when the store could not be asked).
    Mine(Option<Claim>),
    /// Another replica opened it meanwhile: the topic or thread.
    Opened(String),
}

/// One look at the store while claiming.
enum Look {
    Opened(String),
    Won,
    /// Another replica's claim (or none, when it was given back between
    /// the read and the swap).
    Held(Option<String>),
}

/// The cursor holding the thread of `key`'s session in destination `dest`.
fn thread_cursor(dest: &str, key: &SessionKey) -> String {
    format!("thread:{dest}:{}/{}", key.agent, key.session_id)
}

/// The cursor holding the session a thread of `channel` chat `chat` is about.
fn session_cursor(channel: &str, chat: &str, thread: &str) -> String {
    format!("thread-session:{channel}:{chat}:{thread}")
}

/// What a new topic or thread is called: the project and the plan's title,
/// within Telegram's 128 characters (Discord's adapter cuts it to 100).
fn thread_name(p: &Proposal) -> String {
    let who = match &p.project {
        Some(project) => project.name.clone(),
        None => p.session.to_string(),
    };
    let name = format!("{who} · {}", p.plan.title.trim());
    plangate_basics::text::cut_chars(&plangate_engine::text::reveal(&name).0, 128)
}

/// How many locks the opening of sessions' threads is spread over.
const OPENING_STRIPES: usize = 64;

/// The cursor a replica claims (compare-and-swap from absent) before it
/// opens the topic or thread of `key`'s session in destination `dest`.
fn opening_cursor(dest: &str, key: &SessionKey) -> String {
    format!("thread-opening:{dest}:{}/{}", key.agent, key.session_id)
}

/// How often a replica that lost the claim looks for the winner's topic.
const OPENING_POLL: Duration = Duration::from_millis(50);

/// How long a claim that does not change may keep the others waiting: its
/// replica died, or the platform does not answer it. Longer than a
/// platform call with its retries takes.
const OPENING_HOLD: Duration = Duration::from_secs(30);

/// The right to open a session's topic or thread, held from
/// [`SessionThreads::in_session_thread`] until the message that opens it is posted
/// and [`SessionThreads::remember_thread`] has run: the session's other messages (v2
/// proposed at once, a question) wait and then go into it instead of
/// opening one each. In one process a striped lock; on a shared store also
/// a claim in the store (`thread-opening:…`, taken by compare-and-swap),
/// so two replicas posting a session's first messages at once open one
/// topic: the loser waits for the winner's and posts into it. Dropping it
/// gives the claim back (the winner's topic is stored by then, or it could
/// not open one and the next may try).
#[derive(Default)]
pub(super) struct Opening {
    _guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    claim: Option<Claim>,
}

impl Drop for Opening {
    fn drop(&mut self) {
        let Some((store, cursor, token)) = self.claim.take() else { return };
        let release = move || {
            if let Err(e) = store.swap_cursor(&cursor, Some(&token), None) {
                warn!(cursor, error = %e, "a claim to open a topic/thread was not given back; others wait until it is stale");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(release)),
            Err(_) => release(),
        }
    }
}

/// The core's part for a place per session: the store the mapping is kept
/// in, the notes of destinations that could not have one, and the striped
/// locks held while a session's topic or thread is being opened.
pub struct SessionThreads {
    storage: Arc<Storage>,
    /// Per destination, why its cards go to the main chat although it wants
    /// a topic or thread per session.
    notes: Mutex<BTreeMap<String, String>>,
    opening: Vec<Arc<tokio::sync::Mutex<()>>>,
}

impl SessionThreads {
    pub fn new(storage: Arc<Storage>) -> SessionThreads {
        let opening = (0..OPENING_STRIPES).map(|_| Arc::new(tokio::sync::Mutex::new(()))).collect();
        SessionThreads { storage, notes: Mutex::new(BTreeMap::new()), opening }
    }

    /// `dest` as the adapter needs it for `p`'s session: its topic or
    /// thread when it has one already, and the name of a new one. Keep the
    /// [`Opening`] until [`SessionThreads::remember_thread`] has run.
    pub(super) async fn in_session_thread(&self, mut dest: Destination, p: &Proposal) -> (Destination, Opening) {
        if dest.threads != Threads::PerSession {
            return (dest, Opening::default());
        }
        let cursor = thread_cursor(&dest.name, &p.session);
        let stripe = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            cursor.hash(&mut h);
            (h.finish() as usize) % OPENING_STRIPES
        };
        let guard = self.opening[stripe].clone().lock_owned().await;
        dest.thread_name = thread_name(p);
        let read = cursor.clone();
        dest.thread = self.storage.blocking(move |s| s.cursor(&read)).await.ok().flatten();
        // A session that has its place lets the others by at once.
        if dest.thread.is_some() {
            return (dest, Opening::default());
        }
        let mut opening = Opening { _guard: Some(guard), claim: None };
        if self.storage.store.shared() && !self.notes.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&dest.name) {
            match self.claim_opening(&dest.name, &p.session, &cursor).await {
                Claimed::Mine(claim) => opening.claim = claim,
                Claimed::Opened(thread) => {
                    dest.thread = Some(thread);
                    return (dest, Opening::default());
                }
            }
        }
        (dest, opening)
    }

    /// Claim the opening of the session's place on a shared store, or wait
    /// until the replica that holds the claim has stored its topic (or
    /// given the claim back, or held it past [`OPENING_HOLD`]).
    async fn claim_opening(&self, dest: &str, key: &SessionKey, thread_cursor: &str) -> Claimed {
        let claim = opening_cursor(dest, key);
        let token = format!("{:016x}", rand::random::<u64>());
        // The claim last seen held, and since when (it must not change for
        // OPENING_HOLD before it is taken over).
        let (mut seen, mut since) = (None::<String>, tokio::time::Instant::now());
        loop {
            let (claim_key, forward, mine) = (claim.clone(), thread_cursor.to_string(), token.clone());
            let stale = seen.clone().filter(|_| since.elapsed() >= OPENING_HOLD);
            let look = self
                .storage
                .blocking(move |s| {
                    if let Some(thread) = s.cursor(&forward)? {
                        return Ok(Look::Opened(thread));
                    }
                    let held = s.cursor(&claim_key)?;
                    // Absent: take it. Held by the same token for too long: take it over.
                    let take = held.is_none() || held == stale;
                    if take && s.swap_cursor(&claim_key, held.as_deref(), Some(&mine))? {
                        return Ok(Look::Won);
                    }
                    Ok(Look::Held(held))
                })
                .await;
            match look {
                Ok(Look::Won) => return Claimed::Mine(Some((self.storage.store.clone(), claim, token))),
                Ok(Look::Opened(thread)) => return Claimed::Opened(thread),
                Ok(Look::Held(held)) if held != seen => (seen, since) = (held, tokio::time::Instant::now()),
                Ok(Look::Held(_)) => {}
                // The store cannot answer: open without a claim rather than not at all.
                Err(e) => {
                    warn!(destination = dest, error = %e, "could not claim the opening of a topic/thread; opening without");
                    return Claimed::Mine(None);
                }
            }
            tokio::time::sleep(OPENING_POLL).await;
        }
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
                    .storage
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
        let first = self.notes.lock().unwrap_or_else(|e| e.into_inner()).insert(dest.name.clone(), note.clone()).is_none();
        if first {
            warn!(destination = %dest.name, "{note}");
            self.storage.audit(key, "plangate", "thread_fallback", None, note).await;
        }
    }

    /// Per destination, why its cards go to the main chat although it wants
    /// a place per session (for `/readyz`; readiness is not affected).
    pub fn notes(&self) -> Vec<(String, String)> {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The session a topic or thread of this chat is about, when it is one
    /// plangate opened for a session.
    pub async fn session_in_thread(&self, channel: &str, chat: &str, thread: &str) -> Option<SessionKey> {
        let cursor = session_cursor(channel, chat, thread);
        let key = self.storage.blocking(move |s| s.cursor(&cursor)).await.ok().flatten()?;
        let (agent, session) = key.split_once('/')?;
        Some(SessionKey::new(agent, session))
    }

    /// The session's topic or thread in destination `dest`, when it has one.
    pub async fn thread_of(&self, dest: &str, key: &SessionKey) -> Option<String> {
        let cursor = thread_cursor(dest, key);
        self.storage.blocking(move |s| s.cursor(&cursor)).await.ok().flatten()
    }
}
