//! An iCalendar feed read as an on-call calendar: each event is a shift,
//! its `SUMMARY` (or first `ATTENDEE`'s address) the person on call.
//!
//! A small reader of RFC 5545 rather than a general parser: lines unfolded,
//! `VEVENT`s with `DTSTART`/`DTEND` as UTC (`…Z`), with `TZID=` (the
//! bundled IANA database) or as dates. Recurrence (`RRULE`) is not
//! expanded: an event that repeats counts for its first occurrence only,
//! which a calendar exported for on-call (one event per shift, as PagerDuty
//! and Opsgenie export theirs) does not need. Anything that is not a
//! calendar is refused ([`ScheduleError::Garbage`]): the caller falls back.

use crate::rota::zone;
use crate::ScheduleError;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;

/// One shift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shift {
    pub start_ms: i64,
    pub end_ms: i64,
    pub who: String,
}

/// A `VEVENT` being read.
#[derive(Default)]
struct Open {
    start: Option<i64>,
    end: Option<i64>,
    summary: Option<String>,
    attendee: Option<String>,
}

/// Longest feed read (bytes): a calendar larger than this is refused.
pub const MAX_FEED: usize = 4 << 20;

/// The shifts of a feed.
pub fn parse(text: &str) -> Result<Vec<Shift>, ScheduleError> {
    let garbage = |why: &str| ScheduleError::Garbage(why.to_string());
    let mut lines: Vec<String> = Vec::new();
    for raw in text.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        match raw.strip_prefix(' ').or_else(|| raw.strip_prefix('\t')) {
            Some(rest) if !lines.is_empty() => lines.last_mut().unwrap_or(&mut String::new()).push_str(rest),
            _ => lines.push(raw.to_string()),
        }
    }
    if lines.iter().find(|l| !l.trim().is_empty()).map(|l| l.trim()) != Some("BEGIN:VCALENDAR") {
        return Err(garbage("not an iCalendar feed (no BEGIN:VCALENDAR)"));
    }
    let mut shifts = Vec::new();
    let mut event: Option<Open> = None;
    for line in &lines {
        let Some((name_params, value)) = line.split_once(':') else { continue };
        let mut parts = name_params.split(';');
        let name = parts.next().unwrap_or("").to_ascii_uppercase();
        let params: Vec<&str> = parts.collect();
        match (name.as_str(), &mut event) {
            ("BEGIN", None) if value.trim() == "VEVENT" => event = Some(Open::default()),
            ("END", Some(_)) if value.trim() == "VEVENT" => {
                let Some(Open { start, end, summary, attendee }) = event.take() else { continue };
                let start = start.ok_or_else(|| garbage("an event without DTSTART"))?;
                let end = end.unwrap_or(start);
                let who = summary.or(attendee).ok_or_else(|| garbage("an event names nobody (no SUMMARY or ATTENDEE)"))?;
                shifts.push(Shift { start_ms: start, end_ms: end, who });
            }
            ("DTSTART", Some(e)) => e.start = Some(instant(value, &params)?),
            ("DTEND", Some(e)) => e.end = Some(instant(value, &params)?),
            ("SUMMARY", Some(e)) => e.summary = Some(unescape(value.trim())),
            ("ATTENDEE", Some(e)) if e.attendee.is_none() => {
                let v = value.trim();
                e.attendee = Some(v.strip_prefix("mailto:").or_else(|| v.strip_prefix("MAILTO:")).unwrap_or(v).to_string());
            }
            _ => {}
        }
    }
    if event.is_some() {
        return Err(garbage("an event is not closed (no END:VEVENT)"));
    }
    Ok(shifts)
}

/// Who is on call at `at_ms` among `shifts` (every shift covering it, in order).
pub fn on_call(shifts: &[Shift], at_ms: i64) -> Vec<String> {
    let mut who: Vec<String> = shifts.iter().filter(|s| s.start_ms <= at_ms && at_ms < s.end_ms).map(|s| s.who.clone()).collect();
    who.dedup();
    who
}

fn unescape(text: &str) -> String {
    text.replace("\\,", ",").replace("\\;", ";").replace("\\n", " ").replace("\\N", " ").replace("\\\\", "\\")
}

/// A `DTSTART`/`DTEND` value in ms since the epoch.
fn instant(value: &str, params: &[&str]) -> Result<i64, ScheduleError> {
    let bad = || ScheduleError::Garbage(format!("a date {value:?} that is not an iCalendar date or date-time"));
    let value = value.trim();
    let tz = match params.iter().find_map(|p| p.strip_prefix("TZID=")) {
        Some(name) => zone(name.trim_matches('"')).map_err(|_| ScheduleError::Garbage(format!("an unknown TZID {name:?}")))?,
        None => TimeZone::UTC,
    };
    let civil = if value.len() == 8 {
        let d = Date::strptime("%Y%m%d", value).map_err(|_| bad())?;
        d.to_datetime(Time::midnight())
    } else {
        let v = value.strip_suffix('Z').unwrap_or(value);
        DateTime::strptime("%Y%m%dT%H%M%S", v).map_err(|_| bad())?
    };
    let tz = if value.ends_with('Z') { TimeZone::UTC } else { tz };
    Ok(civil.to_zoned(tz).map_err(|_| bad())?.timestamp().as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    const FEED: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nDTSTART:20261207T000000Z\r\nDTEND:20261208T000000Z\r\nSUMMARY:telegram:\r\n 111\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nDTSTART;TZID=Europe/Berlin:20261208T010000\r\nDTEND;TZID=Europe/Berlin:20261209T010000\r\nATTENDEE;CN=Bob:mailto:bob@example.com\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    #[test]
    fn shifts_are_read_with_folding_and_zones() {
        let shifts = parse(FEED).unwrap();
        assert_eq!(on_call(&shifts, ms("2026-12-07T12:00:00Z")), vec!["telegram:111"]);
        assert_eq!(on_call(&shifts, ms("2026-12-08T00:30:00Z")), vec!["bob@example.com"], "01:30 in Berlin");
        assert!(on_call(&shifts, ms("2026-12-10T00:00:00Z")).is_empty());
    }

    #[test]
    fn garbage_is_refused() {
        for text in [
            "",
            "<html>oops</html>",
            "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:yesterday\nEND:VEVENT\nEND:VCALENDAR",
            "BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:x\n",
        ] {
            assert!(matches!(parse(text), Err(ScheduleError::Garbage(_))), "{text:?}");
        }
    }
}
