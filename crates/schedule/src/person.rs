//! A person's own rules for being reached: quiet hours in their time zone
//! and an out-of-office window with a delegate.

use crate::rota::zone;
use crate::ScheduleError;
use jiff::civil::{DateTime, Time};
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// Quiet hours: a daily local window (`"22:00-07:00"` crosses midnight).
#[derive(Debug, Clone)]
pub struct QuietHours {
    from: Time,
    to: Time,
    zone: TimeZone,
    zone_name: String,
}

impl QuietHours {
    /// `window` as `"HH:MM-HH:MM"`, in `time_zone` (an IANA name).
    pub fn new(window: &str, time_zone: &str) -> Result<QuietHours, ScheduleError> {
        let bad = || ScheduleError::Config(format!("quiet_hours {window:?} is not a local window like \"22:00-07:00\""));
        let (from, to) = window.split_once('-').ok_or_else(bad)?;
        let from: Time = from.trim().parse().map_err(|_| bad())?;
        let to: Time = to.trim().parse().map_err(|_| bad())?;
        if from == to {
            return Err(bad());
        }
        Ok(QuietHours { from, to, zone: zone(time_zone)?, zone_name: time_zone.to_string() })
    }

    /// Whether `at_ms` falls in the window.
    pub fn covers(&self, at_ms: i64) -> bool {
        let Ok(at) = Timestamp::from_millisecond(at_ms) else { return false };
        let local = at.to_zoned(self.zone.clone()).time();
        if self.from < self.to {
            self.from <= local && local < self.to
        } else {
            local >= self.from || local < self.to
        }
    }

    /// `22:00-07:00 Europe/Berlin`, for the audit and `ladder show`.
    pub fn describe(&self) -> String {
        format!("{}-{} {}", self.from.strftime("%H:%M"), self.to.strftime("%H:%M"), self.zone_name)
    }
}

/// Away from `from` to `until` (local times in the person's zone), with
/// whoever is reached instead.
#[derive(Debug, Clone)]
pub struct Away {
    from_ms: i64,
    until_ms: i64,
    pub delegate: Option<String>,
}

impl Away {
    /// `from` and `until` as local dates or date-times (`"2026-12-20"`,
    /// `"2026-12-20T18:00"`) in `time_zone`; a date alone means its start
    /// for `from` and its end for `until`.
    pub fn new(from: &str, until: &str, time_zone: &str, delegate: Option<String>) -> Result<Away, ScheduleError> {
        let tz = zone(time_zone)?;
        let at = |text: &str, end: bool| -> Result<i64, ScheduleError> {
            let bad = |e: String| {
                ScheduleError::Config(format!("{text:?} is not a local date like \"2026-12-20\" or \"2026-12-20T18:00\" ({e})"))
            };
            let civil: DateTime = match text.parse::<jiff::civil::Date>() {
                Ok(d) if end => d.tomorrow().map_err(|e| bad(e.to_string()))?.to_datetime(Time::midnight()),
                Ok(d) => d.to_datetime(Time::midnight()),
                Err(_) => text.parse().map_err(|e: jiff::Error| bad(e.to_string()))?,
            };
            Ok(civil.to_zoned(tz.clone()).map_err(|e| bad(e.to_string()))?.timestamp().as_millisecond())
        };
        let (from_ms, until_ms) = (at(from, false)?, at(until, true)?);
        if until_ms <= from_ms {
            return Err(ScheduleError::Config(format!("away_until {until:?} is not after away_from {from:?}")));
        }
        Ok(Away { from_ms, until_ms, delegate })
    }

    pub fn covers(&self, at_ms: i64) -> bool {
        self.from_ms <= at_ms && at_ms < self.until_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn quiet_hours_cross_midnight_in_the_persons_zone() {
        let q = QuietHours::new("22:00-07:00", "America/New_York").unwrap();
        assert!(q.covers(ms("2026-12-07T03:30:00Z")), "22:30 in New York");
        assert!(q.covers(ms("2026-12-07T11:59:00Z")), "06:59");
        assert!(!q.covers(ms("2026-12-07T12:00:00Z")), "07:00");
        let day = QuietHours::new("12:00-13:00", "UTC").unwrap();
        assert!(day.covers(ms("2026-12-07T12:30:00Z")) && !day.covers(ms("2026-12-07T13:00:00Z")));
        assert!(QuietHours::new("late", "UTC").is_err());
    }

    #[test]
    fn away_covers_whole_local_days() {
        let a = Away::new("2026-12-20", "2026-12-21", "Europe/Berlin", Some("bob".into())).unwrap();
        assert!(!a.covers(ms("2026-12-19T22:59:00Z")));
        assert!(a.covers(ms("2026-12-19T23:00:00Z")));
        assert!(a.covers(ms("2026-12-21T22:59:00Z")));
        assert!(!a.covers(ms("2026-12-21T23:00:00Z")));
        assert!(Away::new("2026-12-21", "2026-12-20", "UTC", None).is_err());
    }
}
