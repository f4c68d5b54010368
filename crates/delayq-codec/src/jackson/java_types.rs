//! The Java classes of `codec::java` in Jackson's forms: numbers for `BigInteger` and
//! `BigDecimal` (plain, as Redisson's `WRITE_BIGDECIMAL_AS_PLAIN` asks), milliseconds for
//! `Date` and `Timestamp`, and `JavaTimeModule`'s default forms for `java.time` (timestamps:
//! decimal seconds with nine fraction digits for `Instant`, `OffsetDateTime`,
//! `ZonedDateTime` and `Duration`; arrays for `LocalDate` `[y,m,d]`, `LocalTime` `[h,m(,s(,n))]`
//! and `LocalDateTime`; the id for `ZoneId`).
//!
//! Redisson's codecs register no `JavaTimeModule`: without it Jackson refuses `java.time`
//! values, so a Java peer needs `new JsonJacksonCodec(new ObjectMapper().registerModule(new
//! JavaTimeModule()))` (or the same `ObjectMapper` over a `MessagePackFactory`).

use super::tree::Node;
use super::JacksonError;
use crate::java::{
    BigDecimal, BigInteger, JavaTime, LocalDateTime, ZoneId, BIG_DECIMAL, BIG_INTEGER, DATE,
    DURATION, INSTANT, LOCAL_DATE, LOCAL_DATE_TIME, LOCAL_TIME, OFFSET_DATE_TIME, TIMESTAMP,
    TIME_CLASSES, ZONED_DATE_TIME, ZONE_ID,
};

/// How the class reacts to Jackson's default typing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Typing {
    /// A non-final class: typed in every slot (`BigDecimal`, `Date`).
    NonFinal,
    /// A final class: typed only in `Object` slots.
    Final,
    /// `ZoneId`: typed as `java.time.ZoneId`, except at the root.
    ZoneId,
}

/// Whether `name` is one of the classes handled here.
pub(crate) fn is_java_type(name: &str) -> bool {
    name == BIG_INTEGER || name == BIG_DECIMAL || TIME_CLASSES.contains(&name)
}

fn msg(text: String) -> JacksonError {
    JacksonError::Message(text)
}

/// The Jackson node of a value of `name`, from the node serde gave for its parts.
pub(crate) fn to_jackson(name: &str, inner: Node) -> Result<(Node, Typing), JacksonError> {
    if name == BIG_INTEGER || name == BIG_DECIMAL {
        let Node::Str(text) = inner else {
            return Err(msg(format!("{name} must wrap its text")));
        };
        let plain = if name == BIG_DECIMAL {
            let d: BigDecimal = text.parse().map_err(|e| msg(format!("{e}")))?;
            d.to_plain_string()
        } else {
            let n: BigInteger = text.parse().map_err(|e| msg(format!("{e}")))?;
            n.to_string()
        };
        return Ok((Node::Number(plain), Typing::NonFinal));
    }
    let (numbers, text) = parts_of(inner)?;
    let t = JavaTime::from_parts(name, &numbers, text.as_deref()).map_err(msg)?;
    let ints = |v: &[i64]| Node::Seq(v.iter().map(|&n| Node::Int(n.into())).collect());
    Ok(match t {
        JavaTime::Date(d) => (Node::Int(d.millis.into()), Typing::NonFinal),
        JavaTime::Timestamp(d) => (Node::Int(d.millis.into()), Typing::NonFinal),
        JavaTime::Instant(i) => (seconds(i.seconds, i.nanos), Typing::Final),
        JavaTime::Duration(d) => (seconds(d.seconds, d.nanos), Typing::Final),
        JavaTime::LocalDate(_) => (ints(&numbers), Typing::Final),
        JavaTime::LocalTime(_) => (ints(&trim_time(&numbers, 0)), Typing::Final),
        JavaTime::LocalDateTime(_) => (ints(&trim_time(&numbers, 3)), Typing::Final),
        JavaTime::OffsetDateTime(o) => {
            let secs = o.date_time.to_epoch_second_utc() - i64::from(o.offset_seconds);
            (seconds(secs, o.date_time.time.nano), Typing::Final)
        }
        JavaTime::ZonedDateTime(z) => {
            let offset = z.zone.offset_seconds().ok_or_else(|| {
                msg(format!(
                    "ZonedDateTime in zone {} cannot be written: JavaTimeModule writes the \
                     instant, and delayq has no time-zone database (use an offset zone such as \
                     \"Z\" or \"+02:00\", or an Instant)",
                    z.zone.0
                ))
            })?;
            let secs = z.date_time.to_epoch_second_utc() - i64::from(offset);
            (seconds(secs, z.date_time.time.nano), Typing::Final)
        }
        JavaTime::ZoneId(z) => (Node::Str(z.0), Typing::ZoneId),
    })
}

/// The serde parts of a time value: its integers and zone id.
fn parts_of(inner: Node) -> Result<(Vec<i64>, Option<String>), JacksonError> {
    let Node::Seq(items) = inner else {
        return Err(msg("a date or time value must wrap a tuple".into()));
    };
    let mut numbers = Vec::with_capacity(items.len());
    let mut text = None;
    for item in items {
        match item {
            Node::Int(n) => numbers.push(i64::try_from(n).map_err(|_| msg(format!("{n}")))?),
            Node::Str(s) => text = Some(s),
            other => return Err(msg(format!("unexpected {other:?} in a date or time value"))),
        }
    }
    Ok((numbers, text))
}

/// `LocalTime`'s array: `[h, m]`, `[h, m, s]` or `[h, m, s, n]` (the parts after `from`).
fn trim_time(numbers: &[i64], from: usize) -> Vec<i64> {
    let (second, nano) = (numbers[from + 2], numbers[from + 3]);
    let keep = if nano != 0 {
        4
    } else if second != 0 {
        3
    } else {
        2
    };
    numbers[..from + keep].to_vec()
}

/// Jackson's `DecimalUtils.toBigDecimal(seconds, nanos)`, written plain with nine fraction
/// digits: `1767225600.123000000`, `-0.999999995`.
fn seconds(secs: i64, nanos: u32) -> Node {
    let total = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    let d = BigDecimal::new(BigInteger::from(total), 9);
    Node::Number(d.to_plain_string())
}

/// The serde parts (a `Seq` of integers and the zone id) of a `name` value read from Jackson's
/// form.
pub(crate) fn from_jackson(name: &str, node: Node) -> Result<Node, JacksonError> {
    if name == BIG_INTEGER || name == BIG_DECIMAL {
        let text = match node {
            Node::Int(i) => i.to_string(),
            Node::Number(t) | Node::Str(t) => t,
            Node::F64(f) => decimal_of_f64(f)?,
            Node::F32(f) => decimal_of_f64(f64::from(f))?,
            other => return Err(unexpected(name, &other)),
        };
        return Ok(Node::Str(text));
    }
    let t = time_from_jackson(name, node)?;
    let (numbers, text) = t.parts();
    let mut items: Vec<Node> = numbers.into_iter().map(|n| Node::Int(n.into())).collect();
    items.extend(text.map(|t| Node::Str(t.to_owned())));
    Ok(Node::Seq(items))
}

fn decimal_of_f64(f: f64) -> Result<String, JacksonError> {
    BigDecimal::from_f64(f)
        .map(|d| d.to_string())
        .ok_or_else(|| msg(format!("{f} is not a decimal number")))
}

fn unexpected(name: &str, node: &Node) -> JacksonError {
    msg(format!("expected a {name}, found {node:?}"))
}

fn time_from_jackson(name: &str, node: Node) -> Result<JavaTime, JacksonError> {
    let build = |n: &[i64], text: Option<&str>| JavaTime::from_parts(name, n, text).map_err(msg);
    match name {
        DATE | TIMESTAMP => build(&[whole(&node, name)?], None),
        INSTANT | DURATION => {
            let (secs, nanos) = split_seconds(&node, name)?;
            build(&[secs, i64::from(nanos)], None)
        }
        OFFSET_DATE_TIME | ZONED_DATE_TIME => {
            let (secs, nanos) = split_seconds(&node, name)?;
            let dt = LocalDateTime::from_epoch_second_utc(secs, nanos)
                .ok_or_else(|| msg(format!("{secs} s is out of range for {name}")))?;
            let t = JavaTime::LocalDateTime(dt);
            let mut n = t.parts().0;
            if name == OFFSET_DATE_TIME {
                n.push(0);
                build(&n, None)
            } else {
                build(&n, Some("Z"))
            }
        }
        LOCAL_DATE | LOCAL_TIME | LOCAL_DATE_TIME => {
            let Node::Seq(items) = node else {
                return Err(unexpected(name, &node));
            };
            let mut n = items
                .iter()
                .map(|i| whole(i, name))
                .collect::<Result<Vec<_>, _>>()?;
            let full = match name {
                LOCAL_DATE => 3,
                LOCAL_TIME => 4,
                _ => 7,
            };
            if n.len() > full || (name != LOCAL_DATE && n.len() < full - 2) {
                return Err(unexpected(name, &Node::Seq(items)));
            }
            n.resize(full, 0);
            build(&n, None)
        }
        _ => match node {
            Node::Str(id) => build(&[], Some(ZoneId(id).0.as_str())),
            other => Err(unexpected(ZONE_ID, &other)),
        },
    }
}

fn whole(node: &Node, name: &str) -> Result<i64, JacksonError> {
    match node {
        Node::Int(i) => i64::try_from(*i).map_err(|_| msg(format!("{i} is out of range"))),
        _ => Err(unexpected(name, node)),
    }
}

/// Decimal seconds (`1767225600.123456789`, or a whole number, or a float from MessagePack)
/// split into whole seconds (rounded down) and nanoseconds, exactly.
fn split_seconds(node: &Node, name: &str) -> Result<(i64, u32), JacksonError> {
    let d: BigDecimal = match node {
        Node::Int(i) => BigDecimal::from(BigInteger::from(*i)),
        Node::Number(t) => t.parse().map_err(|e| msg(format!("{e}")))?,
        Node::F64(f) => decimal_of_f64(*f)?
            .parse()
            .map_err(|e| msg(format!("{e}")))?,
        other => return Err(unexpected(name, other)),
    };
    let nanos_total = BigDecimal::new(d.unscaled().clone(), d.scale() - 9)
        .to_big_integer_exact()
        .and_then(|n| n.to_i128())
        .ok_or_else(|| {
            msg(format!(
                "{d} s is not a whole number of nanoseconds for {name}"
            ))
        })?;
    let secs = i64::try_from(nanos_total.div_euclid(1_000_000_000))
        .map_err(|_| msg(format!("{d} s is out of range for {name}")))?;
    Ok((secs, nanos_total.rem_euclid(1_000_000_000) as u32))
}
