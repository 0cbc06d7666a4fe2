//! The sled implementation of [`Store`].
//!
//! Layout (one database under `<data_dir>/db`):
//!
//! | tree | key | value |
//! |---|---|---|
//! | `meta` | `schema_version`, `cursor:<name>` | text |
//! | `sessions` | `agent \0 session_id` | JSON [`Session`] |
//! | `proposals` | 16-byte approval id | JSON [`Proposal`] |
//! | `questions` | 16-byte question id | JSON [`Question`] |
//! | `timers` | due (8 bytes, order-preserving) ‖ approval id ‖ kind | JSON [`Timer`] |
//! | `deliveries` | approval id ‖ `\0` ‖ destination ‖ `\0` ‖ chat | JSON [`Delivery`] |
//! | `question_deliveries` | question id ‖ `\0` ‖ destination | JSON [`Delivery`] |
//! | `audit` | u64 big-endian, monotonic | JSON [`AuditEvent`] |
//! | `idempotency` | event key | time handled (ms) |
//! | `documents` | approval id | document path |
//! | `namespaces` | name | JSON [`Namespace`] |

use crate::{AuditQuery, Commit, Store, StoreError};
use plangate_channel::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::{
    ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, TimerKind, Timestamp,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;
use std::path::Path;

/// Bumped whenever the on-disk layout changes incompatibly.
pub const SCHEMA_VERSION: &str = "1";

pub struct SledStore {
    db: sled::Db,
    meta: sled::Tree,
    sessions: sled::Tree,
    proposals: sled::Tree,
    questions: sled::Tree,
    timers: sled::Tree,
    deliveries: sled::Tree,
    question_deliveries: sled::Tree,
    audit: sled::Tree,
    idempotency: sled::Tree,
    documents: sled::Tree,
    namespaces: sled::Tree,
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing our own plain structs to JSON cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

fn decode<T: DeserializeOwned>(bytes: &[u8], what: &'static str) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|source| StoreError::Corrupt { what, source })
}

fn session_key(key: &SessionKey) -> Vec<u8> {
    let mut k = key.agent.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(key.session_id.as_bytes());
    k
}

/// Timers sort by due time: flip the sign bit so negative times sort first.
pub(crate) fn timer_key(timer: &Timer) -> Vec<u8> {
    let mut k = ((timer.due.0 as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(&timer.approval_id.0);
    match timer.kind {
        TimerKind::Nudge(n) => k.extend_from_slice(&[0, n]),
        TimerKind::Timeout => k.extend_from_slice(&[1, 0]),
    }
    k
}

fn due_prefix(until: Timestamp) -> Vec<u8> {
    ((until.0 as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

fn delivery_key(id: &ApprovalId, d: &Delivery) -> Vec<u8> {
    let mut k = id.0.to_vec();
    k.push(0);
    k.extend_from_slice(d.destination.as_bytes());
    k.push(0);
    k.extend_from_slice(d.chat.as_bytes());
    k
}

impl SledStore {
    /// Open (or create) the database under `data_dir/db`, checking its schema version.
    pub fn open(data_dir: &Path) -> Result<SledStore, StoreError> {
        let path = data_dir.join("db");
        let db = sled::Config::new().path(&path).mode(sled::Mode::HighThroughput).open()?;
        let meta = db.open_tree("meta")?;
        match meta.get("schema_version")? {
            None => {
                meta.insert("schema_version", SCHEMA_VERSION)?;
                db.flush()?;
            }
            Some(v) if v.as_ref() == SCHEMA_VERSION.as_bytes() => {}
            Some(v) => {
                return Err(StoreError::SchemaMismatch {
                    path: path.display().to_string(),
                    found: String::from_utf8_lossy(&v).into_owned(),
                    expected: SCHEMA_VERSION.to_string(),
                })
            }
        }
        Ok(SledStore {
            sessions: db.open_tree("sessions")?,
            proposals: db.open_tree("proposals")?,
            questions: db.open_tree("questions")?,
            timers: db.open_tree("timers")?,
            deliveries: db.open_tree("deliveries")?,
            question_deliveries: db.open_tree("question_deliveries")?,
            audit: db.open_tree("audit")?,
            idempotency: db.open_tree("idempotency")?,
            documents: db.open_tree("documents")?,
            namespaces: db.open_tree("namespaces")?,
            meta,
            db,
        })
    }

    fn list<T: DeserializeOwned>(tree: &sled::Tree, prefix: &[u8], what: &'static str) -> Result<Vec<T>, StoreError> {
        tree.scan_prefix(prefix).values().map(|v| decode(&v?, what)).collect()
    }

    fn flushed<T>(&self, value: T) -> Result<T, StoreError> {
        self.db.flush()?;
        Ok(value)
    }
}

impl Store for SledStore {
    fn load(&self, key: &SessionKey) -> Result<State, StoreError> {
        let Some(bytes) = self.sessions.get(session_key(key))? else {
            return Ok(State::new(key.clone()));
        };
        let session: Session = decode(&bytes, "session")?;
        let latest = match &session.latest_approval {
            Some(id) => self.proposal(id)?,
            None => None,
        };
        Ok(State { session, latest })
    }

    fn proposal(&self, id: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        self.proposals.get(id.0)?.map(|v| decode(&v, "proposal")).transpose()
    }

    fn proposals_by_prefix(&self, hex_prefix: &str) -> Result<Vec<Proposal>, StoreError> {
        // Whole bytes narrow the scan; an odd last nibble is filtered after.
        let whole = &hex_prefix[..hex_prefix.len() - hex_prefix.len() % 2];
        let Ok(bytes) = hex::decode(whole) else { return Ok(Vec::new()) };
        let all: Vec<Proposal> = Self::list(&self.proposals, &bytes, "proposal")?;
        Ok(all.into_iter().filter(|p| p.approval_id.to_string().starts_with(hex_prefix)).collect())
    }

    fn proposals(&self, status: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        let mut all: Vec<Proposal> = Self::list(&self.proposals, &[], "proposal")?;
        all.retain(|p| status.is_none_or(|s| p.status == s));
        all.sort_by_key(|p| p.created_at);
        Ok(all)
    }

    fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        Self::list(&self.sessions, &[], "session")
    }

    fn question(&self, id: &ApprovalId) -> Result<Option<Question>, StoreError> {
        self.questions.get(id.0)?.map(|v| decode(&v, "question")).transpose()
    }

    fn commit(&self, commit: Commit) -> Result<(), StoreError> {
        let trees = (&self.sessions, &self.proposals, &self.questions, &self.timers, &self.audit, &self.idempotency);
        let result = trees.transaction(|(sessions, proposals, questions, timers, audit, idempotency)| {
            if let Some(id) = &commit.new_proposal {
                if proposals.get(id.0)?.is_some() {
                    return Err(ConflictableTransactionError::Abort(StoreError::DuplicateId(*id)));
                }
            }
            if let Some(session) = &commit.session {
                sessions.insert(session_key(&session.key), encode(session))?;
            }
            for p in &commit.proposals {
                proposals.insert(&p.approval_id.0, encode(p))?;
            }
            for q in &commit.questions {
                questions.insert(&q.question_id.0, encode(q))?;
            }
            for t in &commit.timers_remove {
                timers.remove(timer_key(t))?;
            }
            for t in &commit.timers_add {
                timers.insert(timer_key(t), encode(t))?;
            }
            for event in &commit.audit {
                let id = audit.generate_id()?;
                audit.insert(&id.to_be_bytes(), encode(event))?;
            }
            for key in &commit.idempotency {
                idempotency.insert(key.as_bytes(), &[1u8])?;
            }
            Ok(())
        });
        match result {
            Ok(()) => self.flushed(()),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(StoreError::Sled(e)),
        }
    }

    fn next_timer(&self) -> Result<Option<Timer>, StoreError> {
        self.timers.first()?.map(|(_, v)| decode(&v, "timer")).transpose()
    }

    fn due_timers(&self, now: Timestamp) -> Result<Vec<Timer>, StoreError> {
        let end = due_prefix(now.plus_ms(1));
        self.timers.range(..end).values().map(|v| decode(&v?, "timer")).collect()
    }

    fn timers(&self) -> Result<Vec<Timer>, StoreError> {
        Self::list(&self.timers, &[], "timer")
    }

    fn remove_timer(&self, timer: &Timer) -> Result<(), StoreError> {
        self.timers.remove(timer_key(timer))?;
        self.flushed(())
    }

    fn deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        Self::list(&self.deliveries, &id.0, "delivery")
    }

    fn add_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        self.deliveries.insert(delivery_key(id, delivery), encode(delivery))?;
        self.flushed(())
    }

    fn question_deliveries(&self, id: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        Self::list(&self.question_deliveries, &id.0, "delivery")
    }

    fn add_question_delivery(&self, id: &ApprovalId, delivery: &Delivery) -> Result<(), StoreError> {
        self.question_deliveries.insert(delivery_key(id, delivery), encode(delivery))?;
        self.flushed(())
    }

    fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        for event in events {
            let id = self.db.generate_id()?;
            self.audit.insert(id.to_be_bytes(), encode(event))?;
        }
        self.flushed(())
    }

    fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        let mut out = Vec::new();
        for value in self.audit.iter().values().rev() {
            let event: AuditEvent = decode(&value?, "audit")?;
            let keep = query.agent.as_ref().is_none_or(|a| *a == event.agent)
                && query.session_id.as_ref().is_none_or(|s| *s == event.session_id)
                && query.approval_id.is_none_or(|id| Some(id) == event.approval_id);
            if keep {
                out.push(event);
                if query.limit > 0 && out.len() >= query.limit {
                    break;
                }
            }
        }
        out.reverse();
        Ok(out)
    }

    fn seen(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self.idempotency.contains_key(key.as_bytes())?)
    }

    fn mark_seen(&self, key: &str) -> Result<(), StoreError> {
        self.idempotency.insert(key.as_bytes(), &[1u8])?;
        self.flushed(())
    }

    fn record_once(&self, key: &str) -> Result<bool, StoreError> {
        let fresh = self.idempotency.compare_and_swap(key.as_bytes(), None as Option<&[u8]>, Some(&[1u8][..]))?.is_ok();
        self.flushed(fresh)
    }

    fn cursor(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.meta.get(format!("cursor:{key}"))?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_cursor(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.meta.insert(format!("cursor:{key}"), value.as_bytes())?;
        self.flushed(())
    }

    fn document_path(&self, id: &ApprovalId) -> Result<Option<String>, StoreError> {
        Ok(self.documents.get(id.0)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    fn set_document_path(&self, id: &ApprovalId, path: &str) -> Result<(), StoreError> {
        self.documents.insert(id.0, path.as_bytes())?;
        self.flushed(())
    }

    fn namespace(&self, name: &str) -> Result<Namespace, StoreError> {
        Ok(self.namespaces.get(name)?.map(|v| decode(&v, "namespace")).transpose()?.unwrap_or_default())
    }

    fn set_namespace(&self, name: &str, ns: &Namespace) -> Result<(), StoreError> {
        self.namespaces.insert(name, encode(ns))?;
        self.flushed(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }
}
