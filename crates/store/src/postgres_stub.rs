//! TEMPORARY stand-in for the PostgreSQL store (branch `pg`), so the server
//! (branch `srv`) compiles against its announced API. Drop this file and its
//! two lines in lib.rs when merging the real `PgStore`.
//!
//! `PgStore::open` always fails, so no `PgStore` value ever exists: every
//! `Store` method matches on an uninhabited field.

use crate::{OutboxEntry, Store, StoreError};
use plangate_delivery::Delivery;
use plangate_engine::namespace::Namespace;
use plangate_engine::{ApprovalId, AuditEvent, DecisionStatus, Proposal, Question, Session, SessionKey, State, Timer, Timestamp};
use std::time::Duration;

/// How to reach the PostgreSQL store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    pub url: String,
    pub schema: String,
    pub pool_size: u32,
    pub lease: Duration,
}

impl PgOptions {
    pub fn new(url: impl Into<String>) -> PgOptions {
        PgOptions { url: url.into(), schema: "plangate".into(), pool_size: 16, lease: Duration::from_secs(10) }
    }
}

enum Never {}

/// Stand-in: cannot be opened.
pub struct PgStore {
    never: Never,
}

impl PgStore {
    pub fn open(options: &PgOptions) -> Result<PgStore, StoreError> {
        Err(StoreError::Postgres(format!(
            "this build has no PostgreSQL store (stub); cannot open schema {} at the configured URL",
            options.schema
        )))
    }

    pub fn replica_id(&self) -> &str {
        match self.never {}
    }
}

impl Store for PgStore {
    fn load(&self, _: &SessionKey) -> Result<State, StoreError> {
        match self.never {}
    }
    fn proposal(&self, _: &ApprovalId) -> Result<Option<Proposal>, StoreError> {
        match self.never {}
    }
    fn proposals_by_prefix(&self, _: &str) -> Result<Vec<Proposal>, StoreError> {
        match self.never {}
    }
    fn proposals(&self, _: Option<DecisionStatus>) -> Result<Vec<Proposal>, StoreError> {
        match self.never {}
    }
    fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        match self.never {}
    }
    fn question(&self, _: &ApprovalId) -> Result<Option<Question>, StoreError> {
        match self.never {}
    }
    fn commit(&self, _: crate::Commit) -> Result<(), StoreError> {
        match self.never {}
    }
    fn next_timer(&self) -> Result<Option<Timer>, StoreError> {
        match self.never {}
    }
    fn due_timers_page(&self, _: Timestamp, _: Option<&Timer>, _: usize) -> Result<Vec<Timer>, StoreError> {
        match self.never {}
    }
    fn timers(&self) -> Result<Vec<Timer>, StoreError> {
        match self.never {}
    }
    fn remove_timer(&self, _: &Timer) -> Result<(), StoreError> {
        match self.never {}
    }
    fn generate_seq(&self) -> Result<u64, StoreError> {
        match self.never {}
    }
    fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        match self.never {}
    }
    fn remove_outbox(&self, _: u64) -> Result<(), StoreError> {
        match self.never {}
    }
    fn deliveries(&self, _: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        match self.never {}
    }
    fn add_delivery(&self, _: &ApprovalId, _: &Delivery) -> Result<(), StoreError> {
        match self.never {}
    }
    fn question_deliveries(&self, _: &ApprovalId) -> Result<Vec<Delivery>, StoreError> {
        match self.never {}
    }
    fn add_question_delivery(&self, _: &ApprovalId, _: &Delivery) -> Result<(), StoreError> {
        match self.never {}
    }
    fn append_audit(&self, _: &[AuditEvent]) -> Result<(), StoreError> {
        match self.never {}
    }
    fn audit(&self, _: &crate::AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
        match self.never {}
    }
    fn seen(&self, _: &str) -> Result<bool, StoreError> {
        match self.never {}
    }
    fn mark_seen(&self, _: &str) -> Result<(), StoreError> {
        match self.never {}
    }
    fn record_once(&self, _: &str) -> Result<bool, StoreError> {
        match self.never {}
    }
    fn cursor(&self, _: &str) -> Result<Option<String>, StoreError> {
        match self.never {}
    }
    fn set_cursor(&self, _: &str, _: &str) -> Result<(), StoreError> {
        match self.never {}
    }
    fn document_path(&self, _: &ApprovalId) -> Result<Option<String>, StoreError> {
        match self.never {}
    }
    fn set_document_path(&self, _: &ApprovalId, _: &str) -> Result<(), StoreError> {
        match self.never {}
    }
    fn namespace(&self, _: &str) -> Result<Namespace, StoreError> {
        match self.never {}
    }
    fn set_namespace(&self, _: &str, _: &Namespace) -> Result<(), StoreError> {
        match self.never {}
    }
    fn flush(&self) -> Result<(), StoreError> {
        match self.never {}
    }
}

/// `plangate migrate`: stand-in for the real module.
pub mod migrate {
    use super::PgOptions;
    use crate::StoreError;
    use std::path::Path;

    /// What a migration copied.
    #[derive(Debug, Default, Clone)]
    pub struct MigrateReport {
        pub records: u64,
    }

    impl std::fmt::Display for MigrateReport {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{} records copied", self.records)
        }
    }

    pub fn sled_to_postgres(from_data_dir: &Path, to: &PgOptions) -> Result<MigrateReport, StoreError> {
        Err(StoreError::Postgres(format!(
            "this build has no PostgreSQL store (stub); cannot migrate {} to schema {}",
            from_data_dir.display(),
            to.schema
        )))
    }
}
