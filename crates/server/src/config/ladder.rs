//! The escalation ladder's settings: `[[approvals.ladder]]` (levels),
//! `[schedules.<name>]` (who is on call) and `[people."<identity>"]`
//! (quiet hours, out of office), read and checked at load so a bad level
//! names its key and what to write, never at 3 a.m. when it fires.

use super::*;
use plangate_schedule::{Api, Away, QuietHours, Rota, Schedule, Source, Token};
use std::sync::Arc;

/// One `[[approvals.ladder]]` level as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LevelConfig {
    /// From the proposal: `"15m"`.
    pub after: String,
    /// Reach the level again this often until the plan is decided or the
    /// next level is reached; left out: once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<String>,
    /// `[destinations.*]` names that get the card.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<String>,
    /// Approver identities (`telegram:111`), reached by email.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// Email addresses reached as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emails: Vec<String>,
    /// `[schedules.*]` names: whoever is on call when the level fires.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedules: Vec<String>,
}

/// `[schedules.<name>]` as written: `kind` says which keys apply.
#[derive(Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// `"rota"`, `"ical"`, `"pagerduty"` or `"opsgenie"`.
    pub kind: String,
    /// rota: who is on call, in turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub people: Vec<String>,
    /// rota: the IANA zone of `start` and the hand-offs (default "UTC").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// rota: when the first person's turn starts, local time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// rota: "weekly" (default), "daily", or a duration ("12h").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hand_off: Option<String>,
    /// ical: the feed's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// pagerduty/opsgenie: the API's base URL (defaults: the public APIs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// pagerduty/opsgenie: the schedule's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<String>,
    /// pagerduty/opsgenie: a read-only API token; best set in
    /// `PLANGATE__SCHEDULES__<NAME>__TOKEN`. Never written back out.
    #[serde(default, skip_serializing)]
    pub token: Option<String>,
    /// A remote read's limit (default "5s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// How long a remote answer is reused (default "5m").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
    /// What the source calls a person → who to reach (an identity or an address).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, String>,
    /// Who is reached when the lookup fails (identities or addresses);
    /// empty: the approvers of the agent's own destinations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<String>,
}

impl std::fmt::Debug for ScheduleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleConfig")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

/// `[people."<identity>"]`: how one person is reached.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PersonConfig {
    /// Their address (else `[email].approvers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The IANA zone of `quiet_hours` and `away_*` (default "UTC").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// `"22:00-07:00"`: not reached personally then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_hours: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub away_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub away_until: Option<String>,
    /// Reached instead while away (an identity or an address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegate: Option<String>,
}

/// A checked level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    pub after_ms: u64,
    pub repeat_ms: Option<u64>,
    pub destinations: Vec<String>,
    pub approvers: Vec<String>,
    pub emails: Vec<String>,
    pub schedules: Vec<String>,
}

/// A checked `[people.*]` entry.
#[derive(Debug, Clone)]
pub struct Person {
    pub email: Option<String>,
    pub quiet: Option<QuietHours>,
    pub away: Option<Away>,
}

/// A checked schedule and who it falls back to.
#[derive(Debug, Clone)]
pub struct OnCall {
    pub schedule: Arc<Schedule>,
    /// Empty: the agent's own destinations' approvers.
    pub fallback: Vec<String>,
}

fn duration(key: &str, text: &str) -> Result<u64, ConfigError> {
    humantime::parse_duration(text)
        .map(|d| d.as_millis() as u64)
        .map_err(|e| invalid(key, format!("expected a duration like \"10m\" or \"24h\", got {text:?} ({e})")))
}

/// The levels of `approvals` (under `key`): its `ladder`, or its
/// `escalate_to` as a one-level ladder at the last nudge. `timeout_ms`:
/// levels must come before it.
pub(super) fn levels(
    approvals: &ApprovalsConfig,
    key: &str,
    nudges_ms: &[u64],
    timeout_ms: Option<u64>,
) -> Result<Vec<Level>, ConfigError> {
    if !approvals.escalate_to.is_empty() {
        if !approvals.ladder.is_empty() {
            return Err(invalid(
                format!("{key}.ladder"),
                "is set together with escalate_to; keep one: move the escalate_to destinations into a level's destinations",
            ));
        }
        let Some(last) = nudges_ms.last() else {
            return Err(invalid(format!("{key}.escalate_to"), "escalation follows the last nudge; configure at least one nudge"));
        };
        let destinations = approvals.escalate_to.clone();
        return Ok(vec![Level { after_ms: *last, repeat_ms: None, destinations, approvers: vec![], emails: vec![], schedules: vec![] }]);
    }
    let mut levels: Vec<Level> = Vec::new();
    for (i, l) in approvals.ladder.iter().enumerate() {
        let at = format!("{key}.ladder[{i}]");
        let after_ms = duration(&format!("{at}.after"), &l.after)?;
        if let Some(before) = levels.last().filter(|b| b.after_ms >= after_ms) {
            return Err(invalid(
                format!("{at}.after"),
                format!(
                    "{} does not come after the level before it ({}); order the levels by `after`, each later than the last",
                    l.after,
                    plangate_engine::ids::humanize_ms(before.after_ms as i64)
                ),
            ));
        }
        if let Some(timeout) = timeout_ms.filter(|t| after_ms >= *t) {
            return Err(invalid(
                format!("{at}.after"),
                format!(
                    "{} comes at or after the timeout ({}): the plan is timed out by then; make it earlier or the timeout later",
                    l.after,
                    plangate_engine::ids::humanize_ms(timeout as i64)
                ),
            ));
        }
        let repeat_ms = match &l.repeat {
            None => None,
            Some(r) => match duration(&format!("{at}.repeat"), r)? {
                0 => return Err(invalid(format!("{at}.repeat"), "must be longer than 0; leave it out to reach the level once")),
                ms => Some(ms),
            },
        };
        if l.destinations.is_empty() && l.approvers.is_empty() && l.emails.is_empty() && l.schedules.is_empty() {
            return Err(invalid(&at, "reaches nobody; give it destinations, approvers, emails or schedules"));
        }
        levels.push(Level {
            after_ms,
            repeat_ms,
            destinations: l.destinations.clone(),
            approvers: l.approvers.clone(),
            emails: l.emails.clone(),
            schedules: l.schedules.clone(),
        });
    }
    Ok(levels)
}

/// The engine's view of `levels`: when.
pub(super) fn rungs(levels: &[Level]) -> Vec<plangate_engine::Rung> {
    levels.iter().map(|l| plangate_engine::Rung { after_ms: l.after_ms, repeat_ms: l.repeat_ms }).collect()
}

/// An identity as approver lists write them (`telegram:111`) or an address.
fn check_person(key: String, who: &str, problem: &mut impl FnMut(ConfigError)) {
    let identity = who.split_once(':').is_some_and(|(ch, id)| THREADED_CHANNELS.contains(&ch) && !id.is_empty());
    if !identity && plangate_email::check_address(who).is_err() {
        problem(invalid(key, format!("{who:?} is neither an approver identity like \"telegram:111\" nor an email address")));
    }
}

/// Check `levels` of agent `agent` (under `key`) against the rest of `raw`.
pub(super) fn check_levels(
    raw: &Config,
    agent: &str,
    key: &str,
    approvals: &ApprovalsConfig,
    levels: &[Level],
    problem: &mut impl FnMut(ConfigError),
) {
    // An agent without destinations has its cards recorded only: nothing to check.
    let has_destinations = raw.agents.get(agent).is_some_and(|a| !a.destinations.is_empty());
    let falls_back = !has_destinations
        || raw
            .agents
            .get(agent)
            .into_iter()
            .flat_map(|a| a.destinations.iter())
            .filter_map(|d| raw.destinations.get(d))
            .any(|d| !d.approvers.is_empty());
    for (i, l) in levels.iter().enumerate() {
        let at = if approvals.escalate_to.is_empty() { format!("{key}.ladder[{i}]") } else { format!("{key}.escalate_to") };
        for d in &l.destinations {
            if !raw.destinations.contains_key(d) {
                problem(invalid(
                    format!("{at}.destinations"),
                    format!("names {d:?}, which is not a [destinations.{d}] section; add the section or remove the name"),
                ));
            }
        }
        for a in &l.approvers {
            if !a.split_once(':').is_some_and(|(ch, id)| THREADED_CHANNELS.contains(&ch) && !id.is_empty()) {
                problem(invalid(format!("{at}.approvers"), format!("expected an identity like \"telegram:111\", got {a:?}")));
            }
        }
        for e in &l.emails {
            if let Err(why) = plangate_email::check_address(e) {
                problem(invalid(format!("{at}.emails"), format!("{e:?} is not an email address ({why})")));
            }
        }
        for s in &l.schedules {
            match raw.schedules.get(s) {
                None => problem(invalid(format!("{at}.schedules"), format!("names {s:?}, which is not a [schedules.{s}] section; add the section or remove the name"))),
                Some(c) if c.fallback.is_empty() && !falls_back => problem(invalid(
                    format!("schedules.{s}.fallback"),
                    format!("is empty and agent {agent:?} has no approvers on its own destinations to fall back to when the lookup fails; list who to reach then"),
                )),
                Some(_) => {}
            }
        }
    }
}

/// The checked `[schedules.*]`.
pub(super) fn schedules(raw: &Config, problem: &mut impl FnMut(ConfigError)) -> BTreeMap<String, OnCall> {
    let mut out = BTreeMap::new();
    for (name, c) in &raw.schedules {
        let key = format!("schedules.{name}");
        let mut ms = |k: &str, default: u64| match c_duration(c, k).map(|t| duration(&format!("{key}.{k}"), t)).transpose() {
            Ok(Some(0)) => {
                problem(invalid(format!("{key}.{k}"), "must be longer than 0"));
                default
            }
            Ok(t) => t.unwrap_or(default),
            Err(e) => {
                problem(e);
                default
            }
        };
        let (timeout, cache) = (ms("timeout", 5_000), ms("cache", 300_000));
        let mut bad = |k: &str, why: String| problem(invalid(format!("{key}.{k}"), why));
        let need = |v: &Option<String>, k: &str, what: &str, bad: &mut dyn FnMut(&str, String)| -> Option<String> {
            match v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                Some(v) => Some(v.to_string()),
                None => {
                    bad(k, format!("is missing; a {} schedule needs {what}", c.kind));
                    None
                }
            }
        };
        let http = |url: &str, k: &str, bad: &mut dyn FnMut(&str, String)| {
            if !(url.starts_with("https://")
                || url.starts_with("http://127.0.0.1")
                || url.starts_with("http://localhost")
                || url.starts_with("http://[::1]"))
            {
                bad(k, format!("{url:?} must be an https:// URL (plain http only on loopback)"));
            }
        };
        let source = match c.kind.as_str() {
            "rota" => {
                let start = need(&c.start, "start", "the first turn's local start, like \"2026-12-07T09:00\"", &mut bad);
                let zone = c.time_zone.clone().unwrap_or_else(|| "UTC".into());
                let hand_off = c.hand_off.clone().unwrap_or_else(|| "weekly".into());
                start.and_then(|start| match Rota::new(c.people.clone(), &zone, &start, &hand_off) {
                    Ok(r) => Some(Source::Rota(r)),
                    Err(e) => {
                        // Each rota error starts with the key it is about.
                        let text = e.to_string();
                        let k = ["time_zone", "start", "hand_off", "people"].into_iter().find(|k| text.starts_with(k)).unwrap_or("kind");
                        bad(k, text);
                        None
                    }
                })
            }
            "ical" => need(&c.url, "url", "the feed's https:// address", &mut bad).map(|url| {
                http(&url, "url", &mut bad);
                Source::Ical { url }
            }),
            "pagerduty" | "opsgenie" => {
                let default = if c.kind == "pagerduty" { "https://api.pagerduty.com" } else { "https://api.opsgenie.com" };
                let api_url = c.api_url.clone().unwrap_or_else(|| default.into());
                http(&api_url, "api_url", &mut bad);
                let id = need(&c.schedule_id, "schedule_id", "the schedule's id", &mut bad);
                let token = need(
                    &c.token,
                    "token",
                    &format!("a read-only API token (set PLANGATE__SCHEDULES__{}__TOKEN)", name.to_uppercase()),
                    &mut bad,
                );
                match (id, token) {
                    (Some(schedule), Some(token)) => {
                        let api = Api { api_url, schedule, token: Token(token) };
                        Some(if c.kind == "pagerduty" { Source::PagerDuty(api) } else { Source::Opsgenie(api) })
                    }
                    _ => None,
                }
            }
            other => {
                bad("kind", format!("{other:?} is not a schedule kind; write \"rota\", \"ical\", \"pagerduty\" or \"opsgenie\""));
                None
            }
        };
        for (i, f) in c.fallback.iter().enumerate() {
            check_person(format!("{key}.fallback[{i}]"), f, problem);
        }
        if let Some(source) = source {
            let schedule = Schedule::new(source, c.aliases.clone(), Duration::from_millis(timeout), Duration::from_millis(cache));
            out.insert(name.clone(), OnCall { schedule: Arc::new(schedule), fallback: c.fallback.clone() });
        }
    }
    out
}

fn c_duration<'a>(c: &'a ScheduleConfig, k: &str) -> Option<&'a str> {
    match k {
        "timeout" => c.timeout.as_deref(),
        _ => c.cache.as_deref(),
    }
}

/// The checked `[people.*]`.
pub(super) fn people(raw: &Config, problem: &mut impl FnMut(ConfigError)) -> BTreeMap<String, Person> {
    let mut out = BTreeMap::new();
    for (who, c) in &raw.people {
        let key = format!("people.{who:?}");
        check_person(key.clone(), who, problem);
        let zone = c.time_zone.clone().unwrap_or_else(|| "UTC".into());
        let quiet = c.quiet_hours.as_deref().and_then(|q| match QuietHours::new(q, &zone) {
            Ok(q) => Some(q),
            Err(e) => {
                problem(invalid(format!("{key}.quiet_hours"), e.to_string()));
                None
            }
        });
        let away = match (&c.away_from, &c.away_until) {
            (None, None) => None,
            (Some(from), Some(until)) => match Away::new(from, until, &zone, c.delegate.clone()) {
                Ok(a) => Some(a),
                Err(e) => {
                    problem(invalid(format!("{key}.away_until"), e.to_string()));
                    None
                }
            },
            _ => {
                problem(invalid(format!("{key}.away_from"), "set both away_from and away_until (local dates like \"2026-12-20\")"));
                None
            }
        };
        if let Some(d) = &c.delegate {
            check_person(format!("{key}.delegate"), d, problem);
        }
        if let Some(e) = &c.email {
            if let Err(why) = plangate_email::check_address(e) {
                problem(invalid(format!("{key}.email"), format!("{e:?} is not an email address ({why})")));
            }
        }
        out.insert(who.clone(), Person { email: c.email.clone(), quiet, away });
    }
    out
}
