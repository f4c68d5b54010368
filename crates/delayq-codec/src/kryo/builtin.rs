//! Bodies of Kryo's serializers for `java.math`, `java.util.Date` and `java.time`, and of its
//! array serializers, as Kryo 5 (5.5 and 5.6, which write the same bytes) writes them.
//!
//! - `BigInteger`: length + 1 (`00` for null), then `toByteArray()` (two's complement, most
//!   significant byte first). `BigDecimal`: the unscaled value the same way, then the scale as
//!   a zigzag varint.
//! - `Date` and its subclasses (`java.sql.Timestamp` too: Kryo registers no serializer of its
//!   own for it): `getTime()` as an unsigned varlong.
//! - `Instant`: seconds as an unsigned varlong, nanos as a varint. `Duration`: seconds as 8
//!   bytes little-endian, nanos as a varint.
//! - `LocalDate`: year as a varint, month and day as one byte each. `LocalTime`: hour,
//!   minute, second, nanos, stopping at the last non-zero part, whose byte is written
//!   bit-inverted. `LocalDateTime` = date + time; `OffsetDateTime` adds the offset (`secs /
//!   900` in a byte, or `127` and the seconds as 4 bytes); `ZonedDateTime` adds the zone id as
//!   a string. `ZoneRegion`: the id as a string; `ZoneOffset`: the offset form.

use super::wire::{Reader, Writer};
use super::KryoError;
use crate::java::{
    BigDecimal, BigInteger, Date, JavaTime, LocalDate, LocalDateTime, LocalTime, OffsetDateTime,
    Timestamp, ZoneId, ZonedDateTime, DATE, DURATION, INSTANT, LOCAL_DATE, LOCAL_DATE_TIME,
    LOCAL_TIME, OFFSET_DATE_TIME, TIMESTAMP, ZONED_DATE_TIME, ZONE_OFFSET, ZONE_REGION,
};

/// The classes [`read_time`] reads.
pub(crate) fn is_time_class(class: &str) -> bool {
    matches!(
        class,
        DATE | TIMESTAMP
            | INSTANT
            | DURATION
            | LOCAL_DATE
            | LOCAL_TIME
            | LOCAL_DATE_TIME
            | OFFSET_DATE_TIME
            | ZONED_DATE_TIME
            | ZONE_OFFSET
            | ZONE_REGION
    )
}

fn malformed(at: usize, detail: impl Into<String>) -> KryoError {
    KryoError::Malformed {
        offset: at,
        detail: detail.into(),
    }
}

pub(crate) fn write_big_integer(w: &mut Writer, v: &BigInteger) -> Result<(), KryoError> {
    let bytes = v.to_be_bytes();
    w.varint(length_plus_one(bytes.len())?);
    w.bytes(&bytes);
    Ok(())
}

fn length_plus_one(n: usize) -> Result<u32, KryoError> {
    u32::try_from(n)
        .ok()
        .filter(|&n| n < i32::MAX as u32)
        .map(|n| n + 1)
        .ok_or_else(|| KryoError::Unsupported(format!("{n} bytes do not fit a Java array")))
}

/// `None` for Java's null.
pub(crate) fn read_big_integer(r: &mut Reader<'_>) -> Result<Option<BigInteger>, KryoError> {
    match r.varint("BigInteger length")? {
        0 => Ok(None),
        1 => Err(malformed(r.pos(), "a BigInteger with no bytes")),
        n => Ok(Some(BigInteger::from_be_bytes(
            r.take((n - 1) as usize, "BigInteger")?,
        ))),
    }
}

pub(crate) fn write_big_decimal(w: &mut Writer, v: &BigDecimal) -> Result<(), KryoError> {
    write_big_integer(w, v.unscaled())?;
    w.varint_zigzag(v.scale());
    Ok(())
}

pub(crate) fn read_big_decimal(r: &mut Reader<'_>) -> Result<Option<BigDecimal>, KryoError> {
    let Some(unscaled) = read_big_integer(r)? else {
        return Ok(None);
    };
    let scale = r.varint_zigzag("BigDecimal scale")?;
    Ok(Some(BigDecimal::new(unscaled, scale)))
}

fn write_date(w: &mut Writer, d: &LocalDate) {
    w.varint(d.year as u32);
    w.byte(d.month);
    w.byte(d.day);
}

fn write_time_of_day(w: &mut Writer, t: &LocalTime) {
    if t.nano == 0 {
        if t.second == 0 {
            if t.minute == 0 {
                w.byte(!t.hour);
            } else {
                w.byte(t.hour);
                w.byte(!t.minute);
            }
        } else {
            w.byte(t.hour);
            w.byte(t.minute);
            w.byte(!t.second);
        }
    } else {
        w.byte(t.hour);
        w.byte(t.minute);
        w.byte(t.second);
        w.varint(t.nano);
    }
}

fn write_offset(w: &mut Writer, seconds: i32) {
    if seconds % 900 == 0 {
        w.byte((seconds / 900) as i8 as u8);
    } else {
        w.byte(127);
        w.bytes(&seconds.to_le_bytes());
    }
}

/// The body of a date or time value.
pub(crate) fn write_time(w: &mut Writer, t: &JavaTime) -> Result<(), KryoError> {
    match t {
        JavaTime::Date(Date { millis }) | JavaTime::Timestamp(Timestamp { millis }) => {
            w.varlong(*millis as u64)
        }
        JavaTime::Instant(i) => {
            w.varlong(i.seconds as u64);
            w.varint(i.nanos);
        }
        JavaTime::Duration(d) => {
            w.long_fixed(d.seconds);
            w.varint(d.nanos);
        }
        JavaTime::LocalDate(d) => write_date(w, d),
        JavaTime::LocalTime(t) => write_time_of_day(w, t),
        JavaTime::LocalDateTime(v) => {
            write_date(w, &v.date);
            write_time_of_day(w, &v.time);
        }
        JavaTime::OffsetDateTime(o) => {
            write_date(w, &o.date_time.date);
            write_time_of_day(w, &o.date_time.time);
            write_offset(w, o.offset_seconds);
        }
        JavaTime::ZonedDateTime(z) => {
            write_date(w, &z.date_time.date);
            write_time_of_day(w, &z.date_time.time);
            w.string(Some(&z.zone.0));
        }
        JavaTime::ZoneId(z) => match z.offset_seconds() {
            Some(secs) => write_offset(w, secs),
            None => w.string(Some(&z.0)),
        },
    }
    Ok(())
}

fn read_date(r: &mut Reader<'_>) -> Result<LocalDate, KryoError> {
    let at = r.pos();
    let year = r.varint("LocalDate year")? as i32;
    let month = r.byte("LocalDate month")?;
    let day = r.byte("LocalDate day")?;
    checked(
        at,
        JavaTime::from_parts(
            LOCAL_DATE,
            &[i64::from(year), i64::from(month), i64::from(day)],
            None,
        ),
    )
    .and_then(|t| match t {
        JavaTime::LocalDate(d) => Ok(d),
        _ => Err(malformed(at, "not a date")),
    })
}

fn checked(at: usize, v: Result<JavaTime, String>) -> Result<JavaTime, KryoError> {
    v.map_err(|e| malformed(at, e))
}

fn read_time_of_day(r: &mut Reader<'_>) -> Result<LocalTime, KryoError> {
    let at = r.pos();
    let mut parts = [0i64; 4];
    for i in 0..3 {
        let b = r.byte("LocalTime")? as i8;
        if b < 0 {
            parts[i] = i64::from(!b);
            return time_of(at, parts);
        }
        parts[i] = i64::from(b);
    }
    parts[3] = i64::from(r.varint("LocalTime nanos")?);
    time_of(at, parts)
}

fn time_of(at: usize, parts: [i64; 4]) -> Result<LocalTime, KryoError> {
    match checked(at, JavaTime::from_parts(LOCAL_TIME, &parts, None))? {
        JavaTime::LocalTime(t) => Ok(t),
        _ => Err(malformed(at, "not a time")),
    }
}

fn read_offset(r: &mut Reader<'_>) -> Result<i32, KryoError> {
    let at = r.pos();
    let b = r.byte("ZoneOffset")? as i8;
    let secs = if b == 127 {
        i32::from_le_bytes(
            r.take(4, "ZoneOffset seconds")?
                .try_into()
                .map_err(|_| malformed(at, "offset"))?,
        )
    } else {
        i32::from(b) * 900
    };
    if secs.abs() > 18 * 3600 {
        return Err(malformed(at, format!("offset {secs} s is beyond ±18:00")));
    }
    Ok(secs)
}

fn zone_text(r: &mut Reader<'_>) -> Result<String, KryoError> {
    let at = r.pos();
    r.string("zone id")?
        .ok_or_else(|| malformed(at, "null zone id"))
}

/// The body of a date or time value of `class` (one of [`is_time_class`]).
pub(crate) fn read_time(r: &mut Reader<'_>, class: &str) -> Result<JavaTime, KryoError> {
    let at = r.pos();
    Ok(match class {
        DATE => JavaTime::Date(Date {
            millis: r.varlong("Date")? as i64,
        }),
        TIMESTAMP => JavaTime::Timestamp(Timestamp {
            millis: r.varlong("Timestamp")? as i64,
        }),
        INSTANT | DURATION => {
            let seconds = if class == INSTANT {
                r.varlong("Instant seconds")? as i64
            } else {
                r.long_fixed("Duration seconds")?
            };
            let nanos = r.varint("nanos")?;
            checked(
                at,
                JavaTime::from_parts(class, &[seconds, i64::from(nanos)], None),
            )?
        }
        LOCAL_DATE => JavaTime::LocalDate(read_date(r)?),
        LOCAL_TIME => JavaTime::LocalTime(read_time_of_day(r)?),
        _ => return read_zoned(r, class),
    })
}

fn read_zoned(r: &mut Reader<'_>, class: &str) -> Result<JavaTime, KryoError> {
    let at = r.pos();
    Ok(match class {
        ZONE_OFFSET => JavaTime::ZoneId(ZoneId::from_offset_seconds(read_offset(r)?)),
        ZONE_REGION => JavaTime::ZoneId(ZoneId(zone_text(r)?)),
        LOCAL_DATE_TIME | OFFSET_DATE_TIME | ZONED_DATE_TIME => {
            let date_time = LocalDateTime {
                date: read_date(r)?,
                time: read_time_of_day(r)?,
            };
            match class {
                LOCAL_DATE_TIME => JavaTime::LocalDateTime(date_time),
                OFFSET_DATE_TIME => JavaTime::OffsetDateTime(OffsetDateTime {
                    date_time,
                    offset_seconds: read_offset(r)?,
                }),
                _ => JavaTime::ZonedDateTime(ZonedDateTime {
                    date_time,
                    zone: ZoneId(zone_text(r)?),
                }),
            }
        }
        other => return Err(malformed(at, format!("{other} is not a time class"))),
    })
}

/// The element type of a primitive array class (`[I` → `I`), if it is one.
pub(crate) fn primitive_array_code(class: &str) -> Option<u8> {
    match class.as_bytes() {
        [b'[', c @ (b'Z' | b'C' | b'S' | b'I' | b'J' | b'F' | b'D')] => Some(*c),
        _ => None,
    }
}
