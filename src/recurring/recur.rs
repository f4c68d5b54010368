//! When a schedule recurs: a cron expression in an IANA zone, or a fixed interval, and the
//! occurrence math (next at or after an instant, latest before one).
//!
//! Cron expressions are croner's (5 fields, or 6 with seconds first; `L`, `W`, `#`, names,
//! `@daily`-style aliases), evaluated in the schedule's zone by jiff with its compiled-in zone
//! database. Daylight saving follows croner's rule (the Open Cron Pattern Specification, as
//! Vixie cron): a wall-clock time in a spring-forward gap fires once at the first valid time
//! after the gap when every time field of the expression is fixed (`30 2 * * *` fires at 03:00
//! on that day), and is skipped when the hour (or minute, second) field is a wildcard or step;
//! in a fall-back overlap a fixed-time expression fires once, at the first pass, and a
//! wildcard one fires on both passes (`0 * * * *` fires at 02:00 CEST and again at 02:00 CET:
//! every real hour). Intervals are real time: `start + k × every`, no zone involved.

use crate::{Error, Result};
use croner::Cron;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use std::time::Duration;

/// When a schedule recurs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recurrence {
    /// A cron expression evaluated in an IANA time zone (`UTC`, `Europe/Berlin`).
    Cron {
        /// The expression: 5 fields, or 6 with seconds first.
        expr: String,
        /// The IANA zone name.
        zone: String,
    },
    /// A fixed interval of real time, from the schedule's start.
    Every(Duration),
}

impl Recurrence {
    /// A cron expression in `zone`; refused with [`Error::InvalidSchedule`] when the expression
    /// does not parse or the zone is not in the IANA database.
    ///
    /// ```
    /// use delayq::Recurrence;
    ///
    /// assert!(Recurrence::cron("30 2 * * *", "Europe/Berlin").is_ok());
    /// assert!(Recurrence::cron("*/10 * * * * *", "UTC").is_ok()); // seconds field
    /// assert!(Recurrence::cron("61 * * * *", "UTC").is_err());
    /// assert!(Recurrence::cron("0 * * * *", "Mars/Olympus").is_err());
    /// ```
    pub fn cron(expr: impl Into<String>, zone: impl Into<String>) -> Result<Recurrence> {
        let recurrence = Recurrence::Cron {
            expr: expr.into(),
            zone: zone.into(),
        };
        Compiled::new(&recurrence, 0)?;
        Ok(recurrence)
    }

    /// A fixed interval; refused when shorter than [`MIN_SCHEDULE_INTERVAL`] (10 ms) or longer than a
    /// score holds.
    ///
    /// ```
    /// use delayq::Recurrence;
    /// use std::time::Duration;
    ///
    /// assert!(Recurrence::every(Duration::from_millis(10)).is_ok());
    /// assert!(Recurrence::every(Duration::from_millis(9)).is_err());
    /// ```
    pub fn every(every: Duration) -> Result<Recurrence> {
        let recurrence = Recurrence::Every(every);
        recurrence.check_interval()?;
        Compiled::new(&recurrence, 0)?;
        Ok(recurrence)
    }

    /// Refuses an interval under [`MIN_SCHEDULE_INTERVAL`] (a schedule's own check; a stored hash with
    /// a shorter one, written by another client, is still read and fired).
    pub(crate) fn check_interval(&self) -> Result<()> {
        match self {
            Recurrence::Every(every) if *every < MIN_SCHEDULE_INTERVAL => Err(invalid(format!(
                "interval {every:?}: at least {MIN_SCHEDULE_INTERVAL:?} (a schedule fires at most 1,000 \
                 occurrences a tick, so a shorter one could never catch up after a pause)"
            ))),
            _ => Ok(()),
        }
    }
}

/// The shortest interval a schedule may be set with: one firing call offers up to 1,000
/// occurrences, so with the default tick of 1 s a schedule that fell behind (an outage, a
/// stopped scheduler) catches up at ten times the rate its occurrences arise or more.
pub const MIN_SCHEDULE_INTERVAL: Duration = Duration::from_millis(10);

/// A recurrence ready to compute occurrences from.
#[derive(Debug, Clone)]
pub(crate) enum Compiled {
    Cron { cron: Box<Cron>, zone: TimeZone },
    Every { every_ms: i64, start_ms: i64 },
}

fn invalid(detail: impl std::fmt::Display) -> Error {
    Error::InvalidSchedule(detail.to_string())
}

impl Compiled {
    /// `recurrence` compiled; intervals count from `start_ms`.
    pub(crate) fn new(recurrence: &Recurrence, start_ms: i64) -> Result<Compiled> {
        match recurrence {
            Recurrence::Cron { expr, zone } => {
                let cron: Cron = expr
                    .parse()
                    .map_err(|err| invalid(format!("cron expression {expr:?}: {err}")))?;
                let zone = TimeZone::get(zone)
                    .map_err(|_| invalid(format!("unknown time zone {zone:?} (IANA names)")))?;
                Ok(Compiled::Cron {
                    cron: Box::new(cron),
                    zone,
                })
            }
            Recurrence::Every(every) => {
                let every_ms = i64::try_from(every.as_millis())
                    .ok()
                    .filter(|ms| (1..=crate::time::MAX_DUE_MS).contains(ms))
                    .ok_or_else(|| invalid(format!("interval {every:?} (1 ms up to 2^53 ms)")))?;
                Ok(Compiled::Every { every_ms, start_ms })
            }
        }
    }

    fn zoned(zone: &TimeZone, ms: i64) -> Option<Zoned> {
        Some(Timestamp::from_millisecond(ms).ok()?.to_zoned(zone.clone()))
    }

    /// The first occurrence at or after `ms`.
    pub(crate) fn at_or_after(&self, ms: i64) -> Option<i64> {
        match self {
            Compiled::Cron { cron, zone } => {
                let second = ms.div_euclid(1000) * 1000;
                let from = Compiled::zoned(zone, second)?;
                let found = cron.find_next_occurrence(&from, second == ms).ok()?;
                Some(found.timestamp().as_millisecond())
            }
            Compiled::Every { every_ms, start_ms } => {
                let past = (ms - start_ms).max(0);
                let steps = past / every_ms + i64::from(past % every_ms != 0);
                start_ms.checked_add(steps.checked_mul(*every_ms)?)
            }
        }
    }

    /// The first occurrence after `ms`.
    pub(crate) fn after(&self, ms: i64) -> Option<i64> {
        self.at_or_after(ms.checked_add(1)?)
    }

    /// The latest occurrence before `ms` and at or after `floor_ms`.
    pub(crate) fn before(&self, ms: i64, floor_ms: i64) -> Option<i64> {
        let found = match self {
            Compiled::Cron { cron, zone } => {
                // Occurrences fall on whole seconds: the latest before `ms` is the latest at or
                // before the last whole second under it.
                let second = (ms - 1).div_euclid(1000) * 1000;
                let from = Compiled::zoned(zone, second)?;
                let found = cron.find_previous_occurrence(&from, true).ok()?;
                found.timestamp().as_millisecond()
            }
            Compiled::Every { every_ms, start_ms } => {
                if ms <= *start_ms {
                    return None;
                }
                start_ms + (ms - 1 - start_ms) / every_ms * every_ms
            }
        };
        (found >= floor_ms).then_some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn intervals_count_from_their_start() {
        let every = Compiled::new(&Recurrence::Every(Duration::from_secs(10)), 1_000).unwrap();
        assert_eq!(every.at_or_after(0), Some(1_000));
        assert_eq!(every.at_or_after(1_000), Some(1_000));
        assert_eq!(every.after(1_000), Some(11_000));
        assert_eq!(every.at_or_after(10_999), Some(11_000));
        assert_eq!(every.before(11_000, 0), Some(1_000));
        assert_eq!(every.before(11_001, 0), Some(11_000));
        assert_eq!(every.before(1_000, 0), None);
        assert_eq!(every.before(11_001, 11_500), None);
    }

    #[test]
    fn cron_with_and_without_seconds() {
        let minutes = Compiled::new(&Recurrence::cron("*/15 * * * *", "UTC").unwrap(), 0).unwrap();
        let t = ms("2026-01-01T10:07:30Z");
        assert_eq!(minutes.at_or_after(t), Some(ms("2026-01-01T10:15:00Z")));
        assert_eq!(minutes.before(t, 0), Some(ms("2026-01-01T10:00:00Z")));
        let on = ms("2026-01-01T10:15:00Z");
        assert_eq!(minutes.at_or_after(on), Some(on));
        assert_eq!(minutes.after(on), Some(ms("2026-01-01T10:30:00Z")));
        assert_eq!(minutes.before(on, 0), Some(ms("2026-01-01T10:00:00Z")));
        let seconds = Compiled::new(&Recurrence::cron("*/5 * * * * *", "UTC").unwrap(), 0).unwrap();
        assert_eq!(seconds.after(on + 1), Some(on + 5_000));
    }
}
