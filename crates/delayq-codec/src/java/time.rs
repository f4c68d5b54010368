//! `java.util.Date`, `java.sql.Timestamp` and the `java.time` types, as plain fields.
//!
//! To serde each type is a newtype struct named like its Java class around a tuple of
//! integers (and, for zones, the zone id), e.g. `java.time.Instant` around
//! `[seconds, nanos]`. The codecs recognise the class name and write what Kryo's and Jackson's
//! serializers write for that class; other serde formats see the tuple.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeTuple, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// `java.util.Date`: milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date {
    /// `Date.getTime()`.
    pub millis: i64,
}

/// `java.sql.Timestamp`. Kryo (through its `Date` serializer) and Jackson both carry only
/// `getTime()`, the milliseconds; nanoseconds below the millisecond do not travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp {
    /// `Timestamp.getTime()`.
    pub millis: i64,
}

/// `java.time.Instant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Instant {
    /// `getEpochSecond()`.
    pub seconds: i64,
    /// `getNano()`, 0 to 999,999,999.
    pub nanos: u32,
}

/// `java.time.Duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Duration {
    /// `getSeconds()` (negative for negative durations).
    pub seconds: i64,
    /// `getNano()`, 0 to 999,999,999, added to the seconds.
    pub nanos: u32,
}

/// `java.time.LocalDate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalDate {
    /// The proleptic year.
    pub year: i32,
    /// 1 to 12.
    pub month: u8,
    /// 1 to 31.
    pub day: u8,
}

/// `java.time.LocalTime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalTime {
    /// 0 to 23.
    pub hour: u8,
    /// 0 to 59.
    pub minute: u8,
    /// 0 to 59.
    pub second: u8,
    /// 0 to 999,999,999.
    pub nano: u32,
}

/// `java.time.LocalDateTime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalDateTime {
    /// The date.
    pub date: LocalDate,
    /// The time of day.
    pub time: LocalTime,
}

/// `java.time.OffsetDateTime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OffsetDateTime {
    /// The local date and time.
    pub date_time: LocalDateTime,
    /// The offset from UTC in seconds (-18:00 to +18:00).
    pub offset_seconds: i32,
}

/// `java.time.ZoneId`: a region (`Europe/Paris`, class `java.time.ZoneRegion`) or an offset
/// (`Z`, `+02:00`, class `java.time.ZoneOffset`), by its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZoneId(pub String);

/// `java.time.ZonedDateTime`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ZonedDateTime {
    /// The local date and time.
    pub date_time: LocalDateTime,
    /// The zone.
    pub zone: ZoneId,
}

/// Any of the date and time values, for dynamic use ([`JavaValue`](crate::kryo::JavaValue)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JavaTime {
    /// `java.util.Date`.
    Date(Date),
    /// `java.sql.Timestamp`.
    Timestamp(Timestamp),
    /// `java.time.Instant`.
    Instant(Instant),
    /// `java.time.Duration`.
    Duration(Duration),
    /// `java.time.LocalDate`.
    LocalDate(LocalDate),
    /// `java.time.LocalTime`.
    LocalTime(LocalTime),
    /// `java.time.LocalDateTime`.
    LocalDateTime(LocalDateTime),
    /// `java.time.OffsetDateTime`.
    OffsetDateTime(OffsetDateTime),
    /// `java.time.ZonedDateTime`.
    ZonedDateTime(ZonedDateTime),
    /// `java.time.ZoneId` (a `ZoneRegion` or a `ZoneOffset`).
    ZoneId(ZoneId),
}

/// `java.util.Date`.
pub const DATE: &str = "java.util.Date";
/// `java.sql.Timestamp`.
pub const TIMESTAMP: &str = "java.sql.Timestamp";
/// `java.time.Instant`.
pub const INSTANT: &str = "java.time.Instant";
/// `java.time.Duration`.
pub const DURATION: &str = "java.time.Duration";
/// `java.time.LocalDate`.
pub const LOCAL_DATE: &str = "java.time.LocalDate";
/// `java.time.LocalTime`.
pub const LOCAL_TIME: &str = "java.time.LocalTime";
/// `java.time.LocalDateTime`.
pub const LOCAL_DATE_TIME: &str = "java.time.LocalDateTime";
/// `java.time.OffsetDateTime`.
pub const OFFSET_DATE_TIME: &str = "java.time.OffsetDateTime";
/// `java.time.ZonedDateTime`.
pub const ZONED_DATE_TIME: &str = "java.time.ZonedDateTime";
/// `java.time.ZoneId` (the declared type; values are `ZoneRegion` or `ZoneOffset`).
pub const ZONE_ID: &str = "java.time.ZoneId";
/// `java.time.ZoneRegion`: the class of a region zone such as `Europe/Paris`.
pub const ZONE_REGION: &str = "java.time.ZoneRegion";
/// `java.time.ZoneOffset`: the class of an offset zone such as `+02:00`.
pub const ZONE_OFFSET: &str = "java.time.ZoneOffset";

/// Every class name a [`JavaTime`] can have on the wire or to serde.
pub const TIME_CLASSES: &[&str] = &[
    DATE,
    TIMESTAMP,
    INSTANT,
    DURATION,
    LOCAL_DATE,
    LOCAL_TIME,
    LOCAL_DATE_TIME,
    OFFSET_DATE_TIME,
    ZONED_DATE_TIME,
    ZONE_ID,
    ZONE_REGION,
    ZONE_OFFSET,
];

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what} is out of range"))
    }
}

impl LocalDate {
    fn check(&self) -> Result<(), String> {
        check((1..=12).contains(&self.month), "month")?;
        check(
            self.day >= 1 && self.day <= days_in_month(self.year, self.month),
            "day of month",
        )
    }

    /// Days since 1970-01-01.
    pub fn to_epoch_day(&self) -> i64 {
        days_from_civil(i64::from(self.year), self.month, self.day)
    }

    /// The date `days` after 1970-01-01.
    pub fn from_epoch_day(days: i64) -> Option<LocalDate> {
        let (y, m, d) = civil_from_days(days);
        Some(LocalDate {
            year: i32::try_from(y).ok()?,
            month: m,
            day: d,
        })
    }
}

impl LocalTime {
    fn check(&self) -> Result<(), String> {
        check(self.hour < 24, "hour")?;
        check(self.minute < 60, "minute")?;
        check(self.second < 60, "second")?;
        check(self.nano < 1_000_000_000, "nanosecond")
    }

    /// Seconds since midnight.
    pub fn second_of_day(&self) -> i64 {
        i64::from(self.hour) * 3600 + i64::from(self.minute) * 60 + i64::from(self.second)
    }
}

impl ZoneId {
    /// Whether this is an offset (`Z`, `+02:00`), written by Java as a `ZoneOffset`.
    pub fn is_offset(&self) -> bool {
        self.0 == "Z" || self.0.starts_with(['+', '-'])
    }

    /// The offset in seconds of an offset zone (`None` for a region).
    pub fn offset_seconds(&self) -> Option<i32> {
        if self.0 == "Z" {
            return Some(0);
        }
        parse_offset(&self.0)
    }

    /// The id of the offset zone `seconds` from UTC, as Java prints it (`Z`, `+02:00`,
    /// `+01:00:01`).
    pub fn from_offset_seconds(seconds: i32) -> ZoneId {
        if seconds == 0 {
            return ZoneId("Z".to_owned());
        }
        let sign = if seconds < 0 { '-' } else { '+' };
        let a = seconds.unsigned_abs();
        let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
        if s == 0 {
            ZoneId(format!("{sign}{h:02}:{m:02}"))
        } else {
            ZoneId(format!("{sign}{h:02}:{m:02}:{s:02}"))
        }
    }

    /// The Java class of the value: `java.time.ZoneOffset` or `java.time.ZoneRegion`.
    pub fn java_class(&self) -> &'static str {
        if self.is_offset() {
            ZONE_OFFSET
        } else {
            ZONE_REGION
        }
    }
}

/// `+hh`, `+hh:mm`, `+hh:mm:ss` (and the forms without colons) to seconds.
fn parse_offset(text: &str) -> Option<i32> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let parts: Vec<&str> = if rest.contains(':') {
        rest.split(':').collect()
    } else {
        rest.as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap_or("x"))
            .collect()
    };
    let mut secs = 0i32;
    for (i, p) in parts.iter().enumerate() {
        let v: i32 = p.parse().ok()?;
        secs += v * [3600, 60, 1].get(i)?;
    }
    (secs <= 18 * 3600).then_some(sign * secs)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        2 if is_leap(i64::from(year)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u8, d: u8) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u8, u8) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl LocalDateTime {
    /// Seconds since the epoch, reading this local time as UTC.
    pub fn to_epoch_second_utc(&self) -> i64 {
        self.date.to_epoch_day() * 86_400 + self.time.second_of_day()
    }

    /// The UTC date and time of an epoch second and nanosecond.
    pub fn from_epoch_second_utc(seconds: i64, nano: u32) -> Option<LocalDateTime> {
        let days = seconds.div_euclid(86_400);
        let secs = seconds.rem_euclid(86_400);
        Some(LocalDateTime {
            date: LocalDate::from_epoch_day(days)?,
            time: LocalTime {
                hour: (secs / 3600) as u8,
                minute: (secs / 60 % 60) as u8,
                second: (secs % 60) as u8,
                nano,
            },
        })
    }
}

impl JavaTime {
    /// The Java class of the value (`java.time.ZoneRegion` or `java.time.ZoneOffset` for a
    /// zone, as Java's `getClass()` says).
    pub fn java_class(&self) -> &'static str {
        match self {
            JavaTime::Date(_) => DATE,
            JavaTime::Timestamp(_) => TIMESTAMP,
            JavaTime::Instant(_) => INSTANT,
            JavaTime::Duration(_) => DURATION,
            JavaTime::LocalDate(_) => LOCAL_DATE,
            JavaTime::LocalTime(_) => LOCAL_TIME,
            JavaTime::LocalDateTime(_) => LOCAL_DATE_TIME,
            JavaTime::OffsetDateTime(_) => OFFSET_DATE_TIME,
            JavaTime::ZonedDateTime(_) => ZONED_DATE_TIME,
            JavaTime::ZoneId(z) => z.java_class(),
        }
    }

    /// The integers (and zone id) the value shows serde.
    pub(crate) fn parts(&self) -> (Vec<i64>, Option<&str>) {
        let dt = |v: &LocalDateTime| {
            vec![
                i64::from(v.date.year),
                i64::from(v.date.month),
                i64::from(v.date.day),
                i64::from(v.time.hour),
                i64::from(v.time.minute),
                i64::from(v.time.second),
                i64::from(v.time.nano),
            ]
        };
        match self {
            JavaTime::Date(d) => (vec![d.millis], None),
            JavaTime::Timestamp(d) => (vec![d.millis], None),
            JavaTime::Instant(i) => (vec![i.seconds, i64::from(i.nanos)], None),
            JavaTime::Duration(d) => (vec![d.seconds, i64::from(d.nanos)], None),
            JavaTime::LocalDate(d) => (
                dt(&LocalDateTime {
                    date: *d,
                    time: MIDNIGHT,
                })[..3]
                    .to_vec(),
                None,
            ),
            JavaTime::LocalTime(t) => (
                dt(&LocalDateTime {
                    date: EPOCH,
                    time: *t,
                })[3..]
                    .to_vec(),
                None,
            ),
            JavaTime::LocalDateTime(v) => (dt(v), None),
            JavaTime::OffsetDateTime(o) => {
                let mut p = dt(&o.date_time);
                p.push(i64::from(o.offset_seconds));
                (p, None)
            }
            JavaTime::ZonedDateTime(z) => (dt(&z.date_time), Some(&z.zone.0)),
            JavaTime::ZoneId(z) => (Vec::new(), Some(&z.0)),
        }
    }

    /// Builds a value of `class` from its serde parts, checking every range.
    pub(crate) fn from_parts(
        class: &str,
        n: &[i64],
        text: Option<&str>,
    ) -> Result<JavaTime, String> {
        let want = |len: usize| {
            if n.len() == len {
                Ok(())
            } else {
                Err(format!("{class} takes {len} numbers, found {}", n.len()))
            }
        };
        let nanos = |v: i64| {
            u32::try_from(v)
                .ok()
                .filter(|v| *v < 1_000_000_000)
                .ok_or("nanoseconds out of range")
        };
        let v = match class {
            DATE | TIMESTAMP => {
                want(1)?;
                if class == DATE {
                    JavaTime::Date(Date { millis: n[0] })
                } else {
                    JavaTime::Timestamp(Timestamp { millis: n[0] })
                }
            }
            INSTANT | DURATION => {
                want(2)?;
                let (seconds, nanos) = (n[0], nanos(n[1])?);
                if class == INSTANT {
                    JavaTime::Instant(Instant { seconds, nanos })
                } else {
                    JavaTime::Duration(Duration { seconds, nanos })
                }
            }
            LOCAL_DATE => {
                want(3)?;
                JavaTime::LocalDate(local_date(n)?)
            }
            LOCAL_TIME => {
                want(4)?;
                JavaTime::LocalTime(local_time(n)?)
            }
            LOCAL_DATE_TIME => {
                want(7)?;
                JavaTime::LocalDateTime(local_date_time(n)?)
            }
            OFFSET_DATE_TIME => {
                want(8)?;
                let offset_seconds = i32::try_from(n[7])
                    .ok()
                    .filter(|s| s.abs() <= 18 * 3600)
                    .ok_or("offset out of range")?;
                JavaTime::OffsetDateTime(OffsetDateTime {
                    date_time: local_date_time(&n[..7])?,
                    offset_seconds,
                })
            }
            ZONED_DATE_TIME => {
                want(7)?;
                let zone = ZoneId(text.ok_or("a ZonedDateTime needs a zone id")?.to_owned());
                JavaTime::ZonedDateTime(ZonedDateTime {
                    date_time: local_date_time(n)?,
                    zone,
                })
            }
            ZONE_ID | ZONE_REGION | ZONE_OFFSET => {
                want(0)?;
                JavaTime::ZoneId(ZoneId(text.ok_or("a ZoneId needs its id")?.to_owned()))
            }
            other => return Err(format!("{other} is not a date or time class")),
        };
        Ok(v)
    }
}

const MIDNIGHT: LocalTime = LocalTime {
    hour: 0,
    minute: 0,
    second: 0,
    nano: 0,
};

const EPOCH: LocalDate = LocalDate {
    year: 1970,
    month: 1,
    day: 1,
};

fn local_date(n: &[i64]) -> Result<LocalDate, String> {
    let d = LocalDate {
        year: i32::try_from(n[0]).map_err(|_| "year out of range")?,
        month: u8::try_from(n[1]).map_err(|_| "month out of range")?,
        day: u8::try_from(n[2]).map_err(|_| "day out of range")?,
    };
    d.check()?;
    Ok(d)
}

fn local_time(n: &[i64]) -> Result<LocalTime, String> {
    let small = |v: i64, what: &str| u8::try_from(v).map_err(|_| format!("{what} out of range"));
    let t = LocalTime {
        hour: small(n[0], "hour")?,
        minute: small(n[1], "minute")?,
        second: small(n[2], "second")?,
        nano: u32::try_from(n[3]).map_err(|_| "nanosecond out of range")?,
    };
    t.check()?;
    Ok(t)
}

fn local_date_time(n: &[i64]) -> Result<LocalDateTime, String> {
    Ok(LocalDateTime {
        date: local_date(&n[..3])?,
        time: local_time(&n[3..7])?,
    })
}

/// Serializes `parts` as a newtype struct named `class` around a tuple.
fn serialize_parts<S: Serializer>(
    class: &'static str,
    t: &JavaTime,
    s: S,
) -> Result<S::Ok, S::Error> {
    struct Parts<'a>(&'a [i64], Option<&'a str>);
    impl Serialize for Parts<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut tup = s.serialize_tuple(self.0.len() + usize::from(self.1.is_some()))?;
            for v in self.0 {
                tup.serialize_element(v)?;
            }
            if let Some(text) = self.1 {
                tup.serialize_element(text)?;
            }
            tup.end()
        }
    }
    let (numbers, text) = t.parts();
    s.serialize_newtype_struct(class, &Parts(&numbers, text))
}

/// Reads what [`serialize_parts`] wrote.
fn deserialize_parts<'de, D: Deserializer<'de>>(
    class: &'static str,
    len: usize,
    zone: bool,
    d: D,
) -> Result<JavaTime, D::Error> {
    struct Outer(&'static str, usize, bool);
    impl<'de> Visitor<'de> for Outer {
        type Value = JavaTime;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a {}", self.0)
        }
        fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<JavaTime, D::Error> {
            d.deserialize_tuple(self.1 + usize::from(self.2), self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JavaTime, A::Error> {
            let mut n = Vec::with_capacity(self.1);
            for i in 0..self.1 {
                n.push(
                    seq.next_element::<i64>()?
                        .ok_or_else(|| de::Error::invalid_length(i, &self))?,
                );
            }
            let text = if self.2 {
                Some(
                    seq.next_element::<String>()?
                        .ok_or_else(|| de::Error::invalid_length(self.1, &self))?,
                )
            } else {
                None
            };
            JavaTime::from_parts(self.0, &n, text.as_deref()).map_err(de::Error::custom)
        }
    }
    d.deserialize_newtype_struct(class, Outer(class, len, zone))
}

macro_rules! time_serde {
    ($($ty:ident => $class:ident, $len:expr, $zone:expr;)*) => {$(
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serialize_parts($class, &JavaTime::$ty(self.clone()), s)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                match deserialize_parts($class, $len, $zone, d)? {
                    JavaTime::$ty(v) => Ok(v),
                    other => Err(de::Error::custom(format!("expected {}, found {}", $class, other.java_class()))),
                }
            }
        }
    )*};
}

time_serde! {
    Date => DATE, 1, false;
    Timestamp => TIMESTAMP, 1, false;
    Instant => INSTANT, 2, false;
    Duration => DURATION, 2, false;
    LocalDate => LOCAL_DATE, 3, false;
    LocalTime => LOCAL_TIME, 4, false;
    LocalDateTime => LOCAL_DATE_TIME, 7, false;
    OffsetDateTime => OFFSET_DATE_TIME, 8, false;
    ZonedDateTime => ZONED_DATE_TIME, 7, true;
    ZoneId => ZONE_ID, 0, true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 1, 1), 20_454);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        for z in [-1_000_000, -1, 0, 1, 20_454, 3_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn offsets() {
        assert_eq!(ZoneId::from_offset_seconds(7200).0, "+02:00");
        assert_eq!(ZoneId::from_offset_seconds(-3601).0, "-01:00:01");
        assert_eq!(ZoneId("+02:00".into()).offset_seconds(), Some(7200));
        assert_eq!(ZoneId("Z".into()).offset_seconds(), Some(0));
        assert_eq!(ZoneId("Europe/Paris".into()).offset_seconds(), None);
        assert!(JavaTime::from_parts(LOCAL_DATE, &[2026, 2, 30], None).is_err());
        assert!(JavaTime::from_parts(LOCAL_DATE, &[2024, 2, 29], None).is_ok());
    }
}
