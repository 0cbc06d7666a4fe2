//! Codes: made for the operator, taken once by a chat; and the approver
//! lists a paired chat keeps itself.
//!
//! A code is 8 characters of a 32-letter alphabet without look-alikes
//! (40 bits), shown `ABCD-EFGH`. What a guesser faces: a code lives 10
//! minutes, at most [`MAX_WAITING_CODES`] wait at once, every attempt takes
//! a cell of its chat's and its sender's budget ([`RATE_BURST`] at once,
//! one more every [`RATE_REFILL`]), and every answer to a wrong code is the
//! same sentence ([`PairError::BadCode`]) whether the code never existed,
//! expired, was used or belongs to another platform. The stored hashes are
//! compared with the presented one in constant time, all of them, every
//! time. The budget is per process (in memory, like the API's); a
//! platform's inbound events reach one replica (the leader), webhooks any.

use super::*;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use plangate_engine::Timestamp;
use sha2::{Digest, Sha256};
use std::num::NonZeroU32;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The code alphabet: no 0/O, 1/I.
const ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 8;
/// Pairing attempts a chat (and a person) may make at once.
pub const RATE_BURST: NonZeroU32 = NonZeroU32::new(5).expect("five is not zero");
/// One more attempt after this, once the burst is spent.
pub const RATE_REFILL: Duration = Duration::from_secs(60);

/// A waiting code, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WaitingCode {
    /// Hex SHA-256 of the normalized code.
    hash: String,
    platform: String,
    agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    created_by: String,
    /// ms since the epoch.
    expires_at: i64,
}

/// Pairing attempts per chat and per person (keys `chat:…`, `user:…`).
pub(super) struct Attempts(DefaultKeyedRateLimiter<String>);

impl Default for Attempts {
    fn default() -> Attempts {
        let quota = Quota::with_period(RATE_REFILL).expect("a period that is not zero").allow_burst(RATE_BURST);
        Attempts(RateLimiter::keyed(quota))
    }
}

impl Attempts {
    /// Take a cell from both budgets; `false` when either is spent.
    fn allow(&self, chat: String, user: String) -> bool {
        // Both are charged, so a person cannot spread over chats nor a
        // chat over people.
        let chat_ok = self.0.check_key(&chat).is_ok();
        let user_ok = self.0.check_key(&user).is_ok();
        chat_ok && user_ok
    }
}

/// A code as typed (`abcd-efgh`, `ABCD EFGH`) in its stored form, or
/// `None` when it cannot be a code.
pub fn normalize_code(typed: &str) -> Option<String> {
    let code: String = typed.chars().filter(|c| !matches!(c, '-' | ' ')).map(|c| c.to_ascii_uppercase()).collect();
    (code.len() == CODE_LEN && code.bytes().all(|b| ALPHABET.contains(&b))).then_some(code)
}

fn hash(code: &str) -> [u8; 32] {
    Sha256::digest(code.as_bytes()).into()
}

fn fresh_code() -> String {
    let bytes: [u8; CODE_LEN] = rand::random();
    let code: String = bytes.iter().map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char).collect();
    format!("{}-{}", &code[..4], &code[4..])
}

impl Pairing {
    /// Make a code for `platform` (`plangate pair`): the agent (the only one
    /// configured when not given) and the destination's name are checked
    /// now, so a typo is the operator's error, not the chat's. `configured`:
    /// whether the server runs that platform's adapter.
    pub async fn create_code(
        &self,
        platform: &str,
        configured: bool,
        agent: Option<&str>,
        name: Option<&str>,
        ttl_secs: Option<u64>,
        actor: &str,
    ) -> Result<IssuedCode, PairError> {
        if !PLATFORMS.contains(&platform) {
            return Err(PairError::Invalid(format!("unknown platform {platform:?}: use telegram, slack or discord")));
        }
        if !configured {
            return Err(PairError::Invalid(format!(
                "{platform} is not configured on this server: add its [{platform}] section (the bot's token) and restart"
            )));
        }
        let agents = &self.settings.raw.agents;
        let agent = match agent {
            Some(a) if agents.contains_key(a) => a.to_string(),
            Some(a) => {
                let known = agents.keys().cloned().collect::<Vec<_>>().join(", ");
                return Err(PairError::Invalid(format!("no agent is named {a:?}; the configured agents are: {known}")));
            }
            None if agents.len() == 1 => agents.keys().next().cloned().unwrap_or_default(),
            None => {
                let known = agents.keys().cloned().collect::<Vec<_>>().join(", ");
                return Err(PairError::Invalid(format!("say which agent the chat is for (--agent): {known}")));
            }
        };
        if let Some(name) = name {
            validate_name(name)?;
            self.name_free(name).await?;
        }
        let ttl = ttl_secs.unwrap_or(CODE_TTL_SECS);
        if !(1..=CODE_TTL_SECS).contains(&ttl) {
            return Err(PairError::Invalid(format!("a code lives 1 to {CODE_TTL_SECS} seconds, not {ttl}")));
        }
        let now = self.storage.now();
        let waiting = self.waiting_codes(now).await?;
        if waiting.len() >= MAX_WAITING_CODES {
            return Err(PairError::Refused(format!(
                "{MAX_WAITING_CODES} codes are waiting already; use one or let them expire (10 minutes) first"
            )));
        }
        let code = fresh_code();
        let normalized = normalize_code(&code).unwrap_or_default();
        let expires_at = Timestamp(now.0 + (ttl as i64) * 1000);
        let record = WaitingCode {
            hash: hex::encode(hash(&normalized)),
            platform: platform.to_string(),
            agent: agent.clone(),
            name: name.map(str::to_string),
            created_by: format!("operator:{actor}"),
            expires_at: expires_at.0,
        };
        let key = format!("{CODE_PREFIX}{}", hex::encode(rand::random::<[u8; 16]>()));
        let value = serde_json::to_string(&record).map_err(|e| PairError::Store(e.to_string()))?;
        if !self.storage.blocking(move |s| s.swap_cursor(&key, None, Some(&value))).await? {
            return Err(PairError::Store("a fresh code's key was taken; ask again".into()));
        }
        let detail = format!(
            "pairing code made for {platform}{}, valid until {}",
            name.map(|n| format!(", destination {n}")).unwrap_or_default(),
            expires_at.rfc3339()
        );
        self.storage.audit(&audit_key(&agent), &record.created_by, "pairing_code", None, detail).await;
        Ok(IssuedCode {
            code,
            platform: platform.to_string(),
            agent,
            name: name.map(str::to_string),
            expires_at: expires_at.rfc3339(),
            expires_in: ttl,
        })
    }

    /// Whether `name` is free: not in the config file, not paired.
    async fn name_free(&self, name: &str) -> Result<(), PairError> {
        if self.settings.raw.destinations.contains_key(name) {
            return Err(PairError::Invalid(format!("destination {name} exists in the config file; pick another --name")));
        }
        let key = format!("{DESTINATION_PREFIX}{name}");
        if self.storage.blocking(move |s| s.cursor(&key)).await?.is_some() {
            return Err(PairError::Invalid(format!(
                "a paired destination is named {name} already; pick another --name or remove it (`plangate destinations remove {name}`)"
            )));
        }
        Ok(())
    }

    /// The codes not expired yet, with their keys and stored text; expired
    /// ones are removed on the way.
    async fn waiting_codes(&self, now: Timestamp) -> Result<Vec<(String, String, WaitingCode)>, StoreError> {
        let records = self.storage.blocking(|s| s.cursors_with_prefix(CODE_PREFIX)).await?;
        let mut waiting = Vec::new();
        for (key, value) in records {
            match serde_json::from_str::<WaitingCode>(&value) {
                Ok(code) if code.expires_at > now.0 => waiting.push((key, value, code)),
                _ => {
                    let _ = self.storage.blocking(move |s| s.swap_cursor(&key, Some(&value), None)).await;
                }
            }
        }
        Ok(waiting)
    }

    /// `/plan pair CODE` from `who` (an identity) in `channel` chat `chat`:
    /// the code is taken (once), the chat becomes a destination of the
    /// code's agent with `who` its approver, audited.
    pub async fn claim_code(&self, channel: &str, chat: &str, who: &str, typed: &str) -> Result<PairedDestination, PairError> {
        if !self.attempts.allow(format!("chat:{channel}:{chat}"), format!("user:{who}")) {
            tracing::warn!(channel, chat, user = who, "pairing attempts over the budget; refused");
            return Err(PairError::Limited);
        }
        let presented = hash(&normalize_code(typed).unwrap_or_default());
        let now = self.storage.now();
        let waiting = self.waiting_codes(now).await?;
        // Every stored hash is compared, in constant time, whatever matched.
        let mut found = None;
        for (i, (_, _, code)) in waiting.iter().enumerate() {
            let stored = hex::decode(&code.hash).unwrap_or_default();
            let equal: bool = stored.ct_eq(&presented).into();
            if equal && found.is_none() {
                found = Some(i);
            }
        }
        let refuse = |why: String| async move {
            let detail = format!("/plan pair refused in {channel} chat {chat}: {why}");
            self.storage.audit(&audit_key("-"), who, "pair_refused", None, detail).await;
            Err(PairError::BadCode)
        };
        let Some((key, value, code)) = found.map(|i| waiting[i].clone()) else {
            return refuse("no waiting code matches".into()).await;
        };
        if code.platform != channel {
            // Shown in the wrong place: used up, so a code seen there is worth nothing.
            let _ = self.storage.blocking(move |s| s.swap_cursor(&key, Some(&value), None)).await;
            return refuse(format!("the code was made for {}; it is used up", code.platform)).await;
        }
        if !self.settings.raw.agents.contains_key(&code.agent) {
            return Err(PairError::Refused(format!("agent {} is no longer configured; ask for a new code", code.agent)));
        }
        if let Some(place) = self.approvers().places_in(&code.agent, channel, chat).next() {
            return Err(PairError::Refused(format!(
                "This chat receives {}'s plans already (destination {}); the code was not used.",
                code.agent, place.destination.name
            )));
        }
        let (k, v) = (key.clone(), value.clone());
        if !self.storage.blocking(move |s| s.swap_cursor(&k, Some(&v), None)).await? {
            return refuse("the code was taken at the same moment by another chat".into()).await;
        }
        let record = self.store_new_destination(&code, channel, chat, who, now).await?;
        let detail = format!(
            "paired destination {}: {channel} chat {chat} receives {}'s plans, approver {who} (code by {})",
            record.name, record.agent, code.created_by
        );
        self.storage.audit(&audit_key(&record.agent), who, "destination_paired", None, detail).await;
        self.refresh_logged().await;
        Ok(record)
    }

    /// Write the destination under the code's name, or the first free of
    /// `<agent>-<platform>`, `<agent>-<platform>-2`, …
    async fn store_new_destination(
        &self,
        code: &WaitingCode,
        channel: &str,
        chat: &str,
        who: &str,
        now: Timestamp,
    ) -> Result<PairedDestination, PairError> {
        let base = format!("{}-{channel}", code.agent);
        for n in 1..=100 {
            let name = match (&code.name, n) {
                (Some(name), 1) => name.clone(),
                (Some(name), _) => {
                    return Err(PairError::Refused(format!("destination name {name} was taken meanwhile; ask for a new code")))
                }
                (None, 1) => base.clone(),
                (None, n) => format!("{base}-{n}"),
            };
            if self.settings.raw.destinations.contains_key(&name) {
                continue;
            }
            let record = PairedDestination {
                name: name.clone(),
                agent: code.agent.clone(),
                channel: channel.to_string(),
                chat: chat.to_string(),
                approvers: vec![who.to_string()],
                paired_by: who.to_string(),
                paired_at: now.0,
            };
            let value = serde_json::to_string(&record).map_err(|e| PairError::Store(e.to_string()))?;
            let key = format!("{DESTINATION_PREFIX}{name}");
            if self.storage.blocking(move |s| s.swap_cursor(&key, None, Some(&value))).await? {
                return Ok(record);
            }
        }
        Err(PairError::Refused(format!("no free destination name near {base}; ask for a code with --name")))
    }

    /// `/plan approvers add|remove` by `who` in this chat: every paired
    /// destination of this chat `who` approves for gets the change. Only
    /// an approver may change a list; the last approver cannot leave (the
    /// operator removes the destination instead). Audited per destination.
    pub async fn change_approvers(
        &self,
        channel: &str,
        chat: &str,
        who: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<PairedDestination>, PairError> {
        let here: Vec<PairedDestination> = self
            .paired_destinations()
            .await?
            .into_iter()
            .filter(|d| d.channel == channel && d.chat == chat && !self.settings.raw.destinations.contains_key(&d.name))
            .collect();
        if here.is_empty() {
            return Err(self.not_paired(channel, chat));
        }
        let mine: Vec<&PairedDestination> = here.iter().filter(|d| d.approvers.iter().any(|a| a == who)).collect();
        if mine.is_empty() {
            let detail = format!("{who} is not an approver of this {channel} chat ({chat}) and may not change its approvers");
            self.storage.audit(&audit_key(&here[0].agent), who, "refused", None, detail).await;
            return Err(PairError::Refused("Only an approver of this chat may change its approvers.".into()));
        }
        // Checked on every list before anything is written.
        for d in &mine {
            if d.approvers.iter().all(|a| remove.contains(a) && !add.contains(a)) {
                return Err(PairError::Refused(format!(
                    "That would leave destination {} without an approver; add another first, or the operator removes it (`plangate destinations remove {}`).",
                    d.name, d.name
                )));
            }
        }
        let mut changed = Vec::new();
        for d in mine {
            let record = self.edit_approvers(&d.name, add, remove).await?;
            let mut said = Vec::new();
            if !add.is_empty() {
                said.push(format!("added {}", add.join(", ")));
            }
            if !remove.is_empty() {
                said.push(format!("removed {}", remove.join(", ")));
            }
            let detail = format!("{} on destination {}; approvers now {}", said.join(", "), record.name, record.approvers.join(", "));
            self.storage.audit(&audit_key(&record.agent), who, "approvers_changed", None, detail).await;
            changed.push(record);
        }
        self.refresh_logged().await;
        Ok(changed)
    }

    /// Read, change and swap one destination's list until the swap holds.
    async fn edit_approvers(&self, name: &str, add: &[String], remove: &[String]) -> Result<PairedDestination, PairError> {
        let key = format!("{DESTINATION_PREFIX}{name}");
        loop {
            let read = key.clone();
            let value = self
                .storage
                .blocking(move |s| s.cursor(&read))
                .await?
                .ok_or_else(|| PairError::NotFound(format!("destination {name} was removed meanwhile")))?;
            let mut record: PairedDestination = serde_json::from_str(&value).map_err(|e| PairError::Store(e.to_string()))?;
            record.approvers.retain(|a| !remove.contains(a));
            for a in add {
                if !record.approvers.contains(a) {
                    record.approvers.push(a.clone());
                }
            }
            if record.approvers.is_empty() {
                return Err(PairError::Refused(format!("That would leave destination {name} without an approver.")));
            }
            let new = serde_json::to_string(&record).map_err(|e| PairError::Store(e.to_string()))?;
            let k = key.clone();
            if self.storage.blocking(move |s| s.swap_cursor(&k, Some(&value), Some(&new))).await? {
                return Ok(record);
            }
        }
    }

    /// Why `/plan approvers add|remove` cannot work in this chat.
    fn not_paired(&self, channel: &str, chat: &str) -> PairError {
        let index = self.approvers();
        let configured: Vec<String> = index
            .agents_in(channel, chat)
            .iter()
            .flat_map(|agent| index.places_in(agent, channel, chat).map(|p| p.destination.name.clone()).collect::<Vec<_>>())
            .collect();
        if configured.is_empty() {
            PairError::Refused(
                "This chat is not paired: run `plangate pair <platform>` on the server and send `/plan pair CODE` here.".into(),
            )
        } else {
            PairError::Refused(format!(
                "This chat's approvers are in plangate's config file (destination {}): change them there.",
                configured.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_typed_and_only_from_the_alphabet() {
        let code = fresh_code();
        assert_eq!(code.len(), 9);
        let normalized = normalize_code(&code).expect("a fresh code is a code");
        assert_eq!(normalize_code(&code.to_ascii_lowercase()), Some(normalized.clone()));
        assert_eq!(normalize_code(&code.replace('-', " ")), Some(normalized));
        assert_eq!(normalize_code("ABCD-EFG0"), None, "0 is not in the alphabet");
        assert_eq!(normalize_code("ABCD-EFGHJ"), None);
        assert_eq!(normalize_code(""), None);
    }

    #[test]
    fn a_chat_and_a_person_each_have_a_budget() {
        let attempts = Attempts::default();
        for _ in 0..RATE_BURST.get() {
            assert!(attempts.allow("chat:a".into(), "user:a".into()));
        }
        assert!(!attempts.allow("chat:a".into(), "user:b".into()), "the chat's budget is spent");
        assert!(!attempts.allow("chat:b".into(), "user:a".into()), "the person's budget is spent");
        assert!(attempts.allow("chat:c".into(), "user:c".into()));
    }
}
