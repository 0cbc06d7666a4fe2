//! A rota written in the config: people on call in turn, handing off
//! every week (or day, or fixed period) at the start's local time.

use crate::ScheduleError;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp, ToSpan, Unit, Zoned};

/// How often the rota hands off to the next person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandOff {
    /// Every `n` calendar days at the start's local time of day (a weekly
    /// rota is 7): a hand-off at 09:00 stays at 09:00 across DST.
    Days(i64),
    /// Every fixed duration (shifts of "12h"), counted in real time.
    Every(SignedDuration),
}

impl HandOff {
    /// `"weekly"`, `"daily"`, or a duration (`"12h"`, `"3d"`): whole days
    /// are calendar days.
    pub fn parse(text: &str) -> Result<HandOff, ScheduleError> {
        let bad =
            || ScheduleError::Config(format!("hand_off {text:?} is neither \"weekly\", \"daily\" nor a duration like \"12h\" or \"3d\""));
        match text.trim() {
            "weekly" => Ok(HandOff::Days(7)),
            "daily" => Ok(HandOff::Days(1)),
            t => {
                let span: Span = t.parse().map_err(|_| bad())?;
                let whole_days = span.get_days() != 0 || span.get_weeks() != 0;
                let time = span.get_hours() != 0 || span.get_minutes() != 0 || span.get_seconds() != 0;
                if span.get_years() != 0 || span.get_months() != 0 || span.is_negative() || span.is_zero() {
                    return Err(bad());
                }
                if whole_days && !time {
                    Ok(HandOff::Days(i64::from(span.get_weeks()) * 7 + i64::from(span.get_days())))
                } else {
                    let d: SignedDuration = span.to_duration(jiff::SpanRelativeTo::days_are_24_hours()).map_err(|_| bad())?;
                    if d.as_secs() < 60 {
                        return Err(bad());
                    }
                    Ok(HandOff::Every(d))
                }
            }
        }
    }
}

/// A rota: `people` in turn from `start` (local time in `zone`).
#[derive(Debug, Clone)]
pub struct Rota {
    people: Vec<String>,
    start: Zoned,
    hand_off: HandOff,
}

impl Rota {
    /// A rota of `people` (at least one), the first on call from `start`
    /// (`"2026-12-07T09:00"`, local time in `time_zone`, an IANA name).
    pub fn new(people: Vec<String>, time_zone: &str, start: &str, hand_off: &str) -> Result<Rota, ScheduleError> {
        if people.is_empty() {
            return Err(ScheduleError::Config("people is empty; name who is on call in turn".into()));
        }
        let zone = zone(time_zone)?;
        let civil: DateTime = start
            .parse()
            .map_err(|e| ScheduleError::Config(format!("start {start:?} is not a local date and time like \"2026-12-07T09:00\" ({e})")))?;
        let start = civil.to_zoned(zone).map_err(|e| ScheduleError::Config(format!("start {start:?}: {e}")))?;
        Ok(Rota { people, start, hand_off: HandOff::parse(hand_off)? })
    }

    /// Who is on call at `at_ms` (ms since the epoch), and until when.
    /// Before the start the rota counts backwards, so someone always is.
    pub fn on_call(&self, at_ms: i64) -> (String, i64) {
        let at = Timestamp::from_millisecond(at_ms).unwrap_or(Timestamp::UNIX_EPOCH).to_zoned(self.start.time_zone().clone());
        let (shift, next) = match self.hand_off {
            HandOff::Days(days) => {
                let elapsed = self.start.until((Unit::Day, &at)).map(|s| i64::from(s.get_days())).unwrap_or(0);
                let mut shift = elapsed.div_euclid(days);
                // `until` truncates toward zero; before the start, floor.
                if self.shift_start_days(shift, days) > at {
                    shift -= 1;
                }
                (shift, self.shift_start_days(shift + 1, days))
            }
            HandOff::Every(every) => {
                let elapsed = at.timestamp().duration_since(self.start.timestamp());
                let shift = i64::try_from(elapsed.as_millis().div_euclid(every.as_millis())).unwrap_or(0);
                let next =
                    self.start.timestamp().checked_add(every * i32::try_from(shift + 1).unwrap_or(i32::MAX)).unwrap_or(Timestamp::MAX);
                (shift, next.to_zoned(self.start.time_zone().clone()))
            }
        };
        let len = self.people.len() as i64;
        let who = self.people[usize::try_from(shift.rem_euclid(len)).unwrap_or(0)].clone();
        (who, next.timestamp().as_millisecond())
    }

    fn shift_start_days(&self, shift: i64, days: i64) -> Zoned {
        self.start.checked_add((shift * days).days()).unwrap_or_else(|_| self.start.clone())
    }
}

/// An IANA time zone from the bundled database.
pub fn zone(name: &str) -> Result<TimeZone, ScheduleError> {
    TimeZone::get(name).map_err(|_| {
        ScheduleError::Config(format!("time_zone {name:?} is not an IANA time zone; write one like \"Europe/Berlin\" or \"UTC\""))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn a_weekly_rota_hands_off_at_local_time_across_dst() {
        let rota = Rota::new(vec!["a".into(), "b".into(), "c".into()], "Europe/Berlin", "2026-03-23T09:00", "weekly").unwrap();
        assert_eq!(rota.on_call(ms("2026-03-23T08:00:00Z")).0, "a"); // 09:00 CET
        assert_eq!(rota.on_call(ms("2026-03-30T06:59:00Z")).0, "a"); // 08:59 CEST
        let (who, until) = rota.on_call(ms("2026-03-30T07:00:00Z")); // 09:00 CEST
        assert_eq!(who, "b");
        assert_eq!(until, ms("2026-04-06T07:00:00Z"));
        assert_eq!(rota.on_call(ms("2026-04-13T07:00:00Z")).0, "a", "wraps round");
        assert_eq!(rota.on_call(ms("2026-03-23T07:59:00Z")).0, "c", "before the start, counted backwards");
    }

    #[test]
    fn a_period_rota_counts_real_time() {
        let rota = Rota::new(vec!["a".into(), "b".into()], "UTC", "2026-12-07T00:00", "12h").unwrap();
        assert_eq!(rota.on_call(ms("2026-12-07T11:59:00Z")).0, "a");
        assert_eq!(rota.on_call(ms("2026-12-07T12:00:00Z")), ("b".to_string(), ms("2026-12-08T00:00:00Z")));
    }

    #[test]
    fn bad_rotas_say_what_to_write() {
        let e = Rota::new(vec!["a".into()], "Mars/Olympus", "2026-12-07T09:00", "weekly").unwrap_err().to_string();
        assert!(e.contains("\"Europe/Berlin\""), "{e}");
        let e = Rota::new(vec!["a".into()], "UTC", "monday", "weekly").unwrap_err().to_string();
        assert!(e.contains("2026-12-07T09:00"), "{e}");
        let e = Rota::new(vec!["a".into()], "UTC", "2026-12-07T09:00", "fortnightly").unwrap_err().to_string();
        assert!(e.contains("\"weekly\""), "{e}");
        assert!(Rota::new(vec![], "UTC", "2026-12-07T09:00", "weekly").is_err());
    }
}
