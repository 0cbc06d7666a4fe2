//! Who is on call, for the escalation ladder (`[schedules.<name>]`).
//!
//! * [`rota`]: people in turn, written in the config, handing off weekly,
//!   daily or every fixed period at a local time ([`rota::Rota`]).
//! * [`ical`]: an iCalendar feed read over HTTP, one event per shift.
//! * [`api`]: PagerDuty's `GET /oncalls` and Opsgenie's
//!   `GET /v2/schedules/<id>/on-calls`, read with a token.
//! * [`person`]: a person's quiet hours and out-of-office window.
//!
//! Every remote read has a timeout and is cached ([`Schedule::on_call`]);
//! a read that fails, answers an error status, returns something that is
//! not a schedule, or names nobody is a [`ScheduleError`], and the caller
//! (the server) falls back to its static approvers and audits why: a
//! lookup never leaves a level with nobody to reach.
//!
//! **Architecture invariant:** no decision and no store: this crate answers
//! "who" and "until when"; time is an argument (ms since the epoch), so the
//! server's test clock drives rotas and quiet hours alike. Tokens never
//! appear in a `Debug`, an error or a log line.

pub mod api;
pub mod ical;
pub mod person;
pub mod rota;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use api::Api;
pub use person::{Away, QuietHours};
pub use rota::Rota;

/// Why a schedule could not say who is on call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The schedule as configured cannot work (said at load, with the key).
    #[error("{0}")]
    Config(String),
    #[error("no answer within {}", humanize(*.0))]
    Timeout(Duration),
    #[error("answered HTTP {0}")]
    Status(u16),
    #[error("could not be read: {0}")]
    Transport(String),
    #[error("answered something that is not a schedule: {0}")]
    Garbage(String),
    #[error("names nobody on call now")]
    Nobody,
}

fn humanize(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// A secret (an API token): never shown by `Debug`.
#[derive(Clone)]
pub struct Token(pub String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Where a schedule's answer comes from.
#[derive(Debug, Clone)]
pub enum Source {
    Rota(Rota),
    /// An iCalendar feed at `url`.
    Ical {
        url: String,
    },
    /// PagerDuty's on-calls of a schedule.
    PagerDuty(api::Api),
    /// Opsgenie's on-calls of a schedule.
    Opsgenie(api::Api),
}

impl Source {
    /// `rota`, `ical`, `pagerduty`, `opsgenie`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Rota(_) => "rota",
            Source::Ical { .. } => "ical",
            Source::PagerDuty(_) => "pagerduty",
            Source::Opsgenie(_) => "opsgenie",
        }
    }
}

/// What a remote source answered, kept for the cache's lifetime.
#[derive(Debug, Clone)]
enum Answer {
    /// A feed's shifts (asked at any time while cached).
    Shifts(Vec<ical::Shift>),
    /// An API's "on call now".
    Now(Vec<String>),
}

/// One configured schedule.
#[derive(Debug)]
pub struct Schedule {
    pub source: Source,
    /// What the source calls a person (a summary, a PagerDuty email, an
    /// Opsgenie username) → the approver identity or email address to reach.
    pub people: BTreeMap<String, String>,
    /// How long a remote read may take.
    pub timeout: Duration,
    /// How long a remote answer is reused.
    pub cache: Duration,
    cached: Mutex<Option<(Instant, Answer)>>,
}

impl Schedule {
    pub fn new(source: Source, people: BTreeMap<String, String>, timeout: Duration, cache: Duration) -> Schedule {
        Schedule { source, people, timeout, cache, cached: Mutex::new(None) }
    }

    /// Who is on call at `at_ms`: identities (`telegram:111`) or email
    /// addresses, mapped through `people`; never empty on `Ok`. A remote
    /// source is read at most once per `cache` (a failure is not cached).
    /// PagerDuty and Opsgenie answer for now, whatever `at_ms` says.
    #[tracing::instrument(level = "debug", skip(self, client), fields(kind = self.source.kind()))]
    pub async fn on_call(&self, client: &reqwest::Client, at_ms: i64) -> Result<Vec<String>, ScheduleError> {
        let names = match &self.source {
            Source::Rota(rota) => vec![rota.on_call(at_ms).0],
            _ => match self.answer(client).await? {
                Answer::Shifts(shifts) => ical::on_call(&shifts, at_ms),
                Answer::Now(names) => names,
            },
        };
        let mut who: Vec<String> = names.into_iter().map(|n| self.people.get(&n).cloned().unwrap_or(n)).collect();
        who.retain(|w| !w.trim().is_empty());
        who.dedup();
        if who.is_empty() {
            return Err(ScheduleError::Nobody);
        }
        Ok(who)
    }

    async fn answer(&self, client: &reqwest::Client) -> Result<Answer, ScheduleError> {
        if let Some((at, answer)) = self.cached.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            if at.elapsed() < self.cache {
                return Ok(answer.clone());
            }
        }
        let answer = match &self.source {
            Source::Rota(_) => return Err(ScheduleError::Nobody),
            Source::Ical { url } => Answer::Shifts(ical::parse(&api::get_text(client, url, &[], self.timeout).await?)?),
            Source::PagerDuty(api) => Answer::Now(api::pagerduty(client, api, self.timeout).await?),
            Source::Opsgenie(api) => Answer::Now(api::opsgenie(client, api, self.timeout).await?),
        };
        *self.cached.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), answer.clone()));
        Ok(answer)
    }
}

/// The HTTP client schedules are read with: rustls, no redirects to
/// elsewhere than the configured host's scheme (none followed at all: a
/// feed that moved is a configuration to fix, not a hop to take with a token).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("plangate/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}
