//! A schedule's definition ([`Schedule`]), what is known of it in Redis ([`ScheduleInfo`]), and
//! their hash fields (`delayq_schedule:{NAME}:ID`, documented in `docs/schedules.md`).

use super::recur::{Compiled, Recurrence};
use crate::{Error, Result};
use fred::prelude::Value;
use std::collections::HashMap;
use std::time::Duration;

/// What a firing process does with the occurrences it finds missed: older than the group's
/// `missed_after` (while no process fired the schedule). Occurrences not that old are late,
/// not missed, and always fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Missed {
    /// None of them fires (the default).
    #[default]
    Skip,
    /// The latest of them fires, once.
    Latest,
    /// Each of them fires, the latest `cap` of them at most.
    All {
        /// The most missed occurrences fired at once.
        cap: u32,
    },
}

impl Missed {
    /// The text form: `skip`, `latest`, `all` (a cap of 100) or `all:CAP`.
    ///
    /// ```
    /// use delayq::Missed;
    ///
    /// assert_eq!(Missed::parse("all:5").unwrap(), Missed::All { cap: 5 });
    /// assert_eq!(Missed::parse("all").unwrap().to_string(), "all:100");
    /// assert!(Missed::parse("sometimes").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Missed> {
        match text.split_once(':') {
            None if text == "skip" => Ok(Missed::Skip),
            None if text == "latest" => Ok(Missed::Latest),
            None if text == "all" => Ok(Missed::All { cap: 100 }),
            Some(("all", cap)) => match cap.parse::<u32>() {
                Ok(cap) if cap > 0 => Ok(Missed::All { cap }),
                _ => Err(Error::InvalidSchedule(format!(
                    "missed policy {text:?}: the cap is a whole number from 1"
                ))),
            },
            _ => Err(Error::InvalidSchedule(format!(
                "missed policy {text:?} (skip, latest, all or all:CAP)"
            ))),
        }
    }
}

impl std::fmt::Display for Missed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missed::Skip => f.write_str("skip"),
            Missed::Latest => f.write_str("latest"),
            Missed::All { cap } => write!(f, "all:{cap}"),
        }
    }
}

/// A recurring schedule: each occurrence offers `value` as an ordinary entry due at the
/// occurrence's time. `V` is the value's type: the queue codec's values through
/// `queue.schedules()` (encoded once, when the schedule is set), bytes as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Schedule<V = Vec<u8>> {
    /// The id, unique in its queue.
    pub id: String,
    /// When it recurs.
    pub recurrence: Recurrence,
    /// The value each occurrence offers.
    pub value: V,
    /// No occurrence before this (epoch ms). An interval counts from here; without it, from
    /// when the schedule is set, its first occurrence one interval later.
    pub start_ms: Option<i64>,
    /// No occurrence after this (epoch ms).
    pub end_ms: Option<i64>,
    /// What to do with missed occurrences.
    pub missed: Missed,
    /// While paused nothing fires; occurrences of the pause are neither late nor missed on
    /// resuming (the next occurrence is the first after the resume).
    pub paused: bool,
}

impl<V> Schedule<V> {
    /// A schedule `id` of `recurrence` offering `value`; no start or end, [`Missed::Skip`].
    pub fn new(id: impl Into<String>, recurrence: Recurrence, value: impl Into<V>) -> Self {
        Schedule {
            id: id.into(),
            recurrence,
            value: value.into(),
            start_ms: None,
            end_ms: None,
            missed: Missed::Skip,
            paused: false,
        }
    }

    /// Sets the first instant an occurrence may have (see [`Schedule::start_ms`]).
    /// Default: none (an interval counts from when the schedule is set).
    #[must_use]
    pub fn start_ms(mut self, start_ms: i64) -> Self {
        self.start_ms = Some(start_ms);
        self
    }

    /// Sets the last instant an occurrence may have.
    /// Default: none, no end.
    #[must_use]
    pub fn end_ms(mut self, end_ms: i64) -> Self {
        self.end_ms = Some(end_ms);
        self
    }

    /// Sets the missed-occurrence policy.
    /// Default: [`Missed::Skip`].
    #[must_use]
    pub fn missed(mut self, missed: Missed) -> Self {
        self.missed = missed;
        self
    }

    /// Checks what parsing cannot: an id, a start and end an entry's due time can hold, an end
    /// not before the start, an interval not under [`MIN_SCHEDULE_INTERVAL`](super::recur::MIN_SCHEDULE_INTERVAL),
    /// a recurrence that compiles and has an occurrence from its start (or now, without one)
    /// to its end: `0 0 30 2 *` never fires, and is refused rather than stored as ended.
    pub(crate) fn validate(&self) -> Result<()> {
        self.validate_definition()?;
        self.recurrence.check_interval()?;
        for (what, ms) in [("start", self.start_ms), ("end", self.end_ms)] {
            if ms.is_some_and(|ms| !(0..=crate::time::MAX_DUE_MS).contains(&ms)) {
                return Err(Error::InvalidSchedule(format!(
                    "schedule {:?}: its {what} {} ms is not from 0 to {} ms (the latest due time \
                     an entry can have)",
                    self.id,
                    ms.unwrap_or_default(),
                    crate::time::MAX_DUE_MS
                )));
            }
        }
        let from = self.start_ms.unwrap_or_else(crate::time::now_ms);
        if self.occurrence_at_or_after(from)?.is_none() {
            let until = self
                .end_ms
                .map_or(String::new(), |end| format!(" up to its end ({end} ms)"));
            return Err(Error::InvalidSchedule(format!(
                "schedule {:?} never fires: it has no occurrence from {from} ms{until}",
                self.id
            )));
        }
        Ok(())
    }

    /// The checks of [`validate`](Self::validate) that need no clock or occurrence.
    fn validate_definition(&self) -> Result<()> {
        if self.id.is_empty() || self.id.contains(['{', '}']) {
            return Err(Error::InvalidSchedule(format!(
                "schedule id {:?}: not empty, no braces",
                self.id
            )));
        }
        if let (Some(start), Some(end)) = (self.start_ms, self.end_ms) {
            if end < start {
                return Err(Error::InvalidSchedule(format!(
                    "schedule {:?} ends ({end}) before it starts ({start})",
                    self.id
                )));
            }
        }
        self.compiled().map(drop)
    }

    /// The recurrence compiled (an interval counts from the start, 0 when unset).
    pub(crate) fn compiled(&self) -> Result<Compiled> {
        Compiled::new(&self.recurrence, self.start_ms.unwrap_or(0))
    }

    /// The first occurrence at or after `ms` within the start and end.
    pub fn occurrence_at_or_after(&self, ms: i64) -> Result<Option<i64>> {
        let compiled = self.compiled()?;
        Ok(self.within(compiled.at_or_after(ms.max(self.start_ms.unwrap_or(i64::MIN)))))
    }

    /// `occurrence`, or `None` past the end.
    pub(crate) fn within(&self, occurrence: Option<i64>) -> Option<i64> {
        occurrence.filter(|ms| self.end_ms.is_none_or(|end| *ms <= end))
    }

    /// The same schedule offering `value`, and the value it offered.
    pub(crate) fn swap_value<W>(self, value: W) -> (Schedule<W>, V) {
        let Schedule {
            id,
            recurrence,
            value: old,
            start_ms,
            end_ms,
            missed,
            paused,
        } = self;
        let schedule = Schedule {
            id,
            recurrence,
            value,
            start_ms,
            end_ms,
            missed,
            paused,
        };
        (schedule, old)
    }

    /// The same schedule offering `value`.
    pub(crate) fn with_value<W>(self, value: W) -> Schedule<W> {
        Schedule {
            id: self.id,
            recurrence: self.recurrence,
            value,
            start_ms: self.start_ms,
            end_ms: self.end_ms,
            missed: self.missed,
            paused: self.paused,
        }
    }
}

impl Schedule<Vec<u8>> {
    /// The hash fields of the definition.
    pub(crate) fn fields(&self) -> Vec<(&'static str, Value)> {
        let mut fields: Vec<(&'static str, Value)> = match &self.recurrence {
            Recurrence::Cron { expr, zone } => {
                vec![
                    ("cron", expr.as_str().into()),
                    ("zone", zone.as_str().into()),
                ]
            }
            Recurrence::Every(every) => {
                vec![("every_ms", (every.as_millis() as i64).to_string().into())]
            }
        };
        fields.push(("value", Value::Bytes(self.value.clone().into())));
        fields.push(("missed", self.missed.to_string().into()));
        fields.push(("paused", if self.paused { "1" } else { "0" }.into()));
        if let Some(start) = self.start_ms {
            fields.push(("start_ms", start.to_string().into()));
        }
        if let Some(end) = self.end_ms {
            fields.push(("end_ms", end.to_string().into()));
        }
        fields
    }
}

/// A schedule as stored: its definition, revision, next and last occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleInfo<V = Vec<u8>> {
    /// The definition.
    pub schedule: Schedule<V>,
    /// Bumped by every change of the definition (set, pause, resume).
    pub rev: u64,
    /// The next occurrence to fire (epoch ms); `None` once the schedule has ended.
    pub next_ms: Option<i64>,
    /// The last occurrence fired (epoch ms).
    pub last_ms: Option<i64>,
}

fn field_text(fields: &HashMap<String, Value>, name: &str) -> Option<String> {
    fields.get(name).and_then(|v| v.as_string())
}

fn field_ms(fields: &HashMap<String, Value>, name: &str, id: &str) -> Result<Option<i64>> {
    field_text(fields, name)
        .map(|text| {
            text.parse::<i64>().map_err(|_| {
                Error::InvalidSchedule(format!("schedule {id:?}: field {name} is {text:?}"))
            })
        })
        .transpose()
}

impl<V> ScheduleInfo<V> {
    /// The same schedule offering `value`.
    pub(crate) fn with_value<W>(self, value: W) -> ScheduleInfo<W> {
        ScheduleInfo {
            schedule: self.schedule.with_value(value),
            rev: self.rev,
            next_ms: self.next_ms,
            last_ms: self.last_ms,
        }
    }
}

impl ScheduleInfo {
    /// Reads the hash fields of the schedule `id` (`None` for an empty hash: no schedule).
    pub(crate) fn from_fields(id: &str, fields: HashMap<String, Value>) -> Result<Option<Self>> {
        if fields.is_empty() {
            return Ok(None);
        }
        let bad = |what: &str| Error::InvalidSchedule(format!("schedule {id:?}: {what}"));
        let recurrence = match (
            field_text(&fields, "cron"),
            field_ms(&fields, "every_ms", id)?,
        ) {
            (Some(expr), _) => Recurrence::Cron {
                expr,
                zone: field_text(&fields, "zone").unwrap_or_else(|| "UTC".to_owned()),
            },
            (None, Some(ms)) if ms > 0 => Recurrence::Every(Duration::from_millis(ms as u64)),
            _ => return Err(bad("neither cron nor every_ms")),
        };
        let value = match fields.get("value") {
            Some(Value::Bytes(bytes)) => bytes.to_vec(),
            Some(Value::String(text)) => text.as_bytes().to_vec(),
            _ => return Err(bad("no value")),
        };
        let missed = match field_text(&fields, "missed") {
            Some(text) => Missed::parse(&text)?,
            None => Missed::Skip,
        };
        let schedule = Schedule {
            id: id.to_owned(),
            recurrence,
            value,
            start_ms: field_ms(&fields, "start_ms", id)?,
            end_ms: field_ms(&fields, "end_ms", id)?,
            missed,
            paused: field_text(&fields, "paused").as_deref() == Some("1"),
        };
        // A cron expression or zone another writer got wrong: the schedule cannot be read,
        // rather than listed as one that has ended.
        schedule.compiled()?;
        Ok(Some(ScheduleInfo {
            schedule,
            rev: field_ms(&fields, "rev", id)?.unwrap_or(0) as u64,
            next_ms: field_ms(&fields, "next_ms", id)?,
            last_ms: field_ms(&fields, "last_ms", id)?,
        }))
    }
}

/// Whether `err`, met reading or firing the schedule whose hash is `hash`, is that schedule's
/// own (a field that does not parse, or the hash of another type), which stops it alone, not
/// its neighbours.
pub(super) fn own_error(err: &Error, hash: &str) -> bool {
    match err {
        Error::InvalidSchedule(_) => true,
        Error::WrongType { key, .. } => key == hash,
        _ => false,
    }
}

/// One schedule of a listing (`schedules().rows()`): what is stored, or why it cannot be read
/// (a hash another writer got wrong, a key of another type, or a value the queue's codec does
/// not decode).
#[derive(Debug)]
#[non_exhaustive]
pub struct ScheduleRow<V = Vec<u8>> {
    /// The schedule's id.
    pub id: String,
    /// What is stored, or why it cannot be read.
    pub info: Result<ScheduleInfo<V>>,
}

impl super::ScheduleStore {
    /// Every schedule of the queue, by next occurrence (paused and ended ones last), each
    /// readable or not: unlike [`list`](Self::list), a schedule whose hash cannot be read is a
    /// row of its own with the reason, and the others are listed all the same. An id whose
    /// hash is gone is left out.
    pub(crate) async fn rows(&self) -> Result<Vec<ScheduleRow>> {
        let key = self.queue.keys.schedules();
        let ids: Vec<String> = fred::interfaces::SortedSetsInterface::zrange(
            &self.client,
            key,
            0,
            -1,
            None,
            false,
            None,
            false,
        )
        .await
        .map_err(|e| Error::from_redis("ZRANGE", key, e))?;
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            let info = match self.get(&id).await {
                Ok(Some(info)) => Ok(info),
                Ok(None) => continue,
                Err(err) if own_error(&err, &self.queue.keys.schedule(&id)) => Err(err),
                Err(err) => return Err(err),
            };
            rows.push(ScheduleRow { id, info });
        }
        Ok(rows)
    }
}
