//! The Jackson codecs and the Java types of `codec::java`, against the text and bytes
//! Redisson's codecs wrote for them (Redisson 4.7.0 and 3.21.0 wrote the same; the
//! `java.time` forms are those of Jackson's `JavaTimeModule`, which the Java side must add).
#![cfg(feature = "msgpack")]

use delayq_codec::java::{
    BigDecimal, BigInteger, Date, Duration, Instant, LocalDate, LocalDateTime, LocalTime,
    OffsetDateTime, Timestamp, ZoneId, ZonedDateTime,
};
use delayq_codec::{Codec, JsonJacksonCodec, MsgPackJacksonCodec, TypedJsonJacksonCodec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;

fn json<T>(value: &T, text: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug + Send + Sync + 'static,
{
    let codec = JsonJacksonCodec::<T>::new();
    assert_eq!(
        String::from_utf8(codec.encode(value).unwrap()).unwrap(),
        text
    );
    assert_eq!(&codec.decode(text.as_bytes()).unwrap(), value, "{text}");
}

fn typed<T>(value: &T, text: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug + Send + Sync + 'static,
{
    let codec = TypedJsonJacksonCodec::<T>::new();
    assert_eq!(
        String::from_utf8(codec.encode(value).unwrap()).unwrap(),
        text
    );
    assert_eq!(&codec.decode(text.as_bytes()).unwrap(), value, "{text}");
}

fn dec(s: &str) -> BigDecimal {
    s.parse().unwrap()
}

#[test]
fn big_numbers_exactly() {
    json(&dec("12.50"), r#"["java.math.BigDecimal",12.50]"#);
    json(&dec("-0.000001"), r#"["java.math.BigDecimal",-0.000001]"#);
    json(
        &dec("123456789012345678901234567890.123456789"),
        r#"["java.math.BigDecimal",123456789012345678901234567890.123456789]"#,
    );
    json(&dec("0.00"), r#"["java.math.BigDecimal",0.00]"#);
    let big: BigInteger = "1234567890123456789012345678901234567890".parse().unwrap();
    json(
        &big,
        r#"["java.math.BigInteger",1234567890123456789012345678901234567890]"#,
    );
    json(&BigInteger::from(-5), r#"["java.math.BigInteger",-5]"#);
    typed(&dec("12.50"), "12.50");
    typed(&big, "1234567890123456789012345678901234567890");
    // Java writes BigDecimal 1E+3 plainly; it reads back as 1000 (scale 0), in Java too.
    let codec = JsonJacksonCodec::<BigDecimal>::new();
    let bytes = codec.encode(&dec("1E+3")).unwrap();
    assert_eq!(bytes, br#"["java.math.BigDecimal",1000]"#);
    assert_eq!(codec.decode(&bytes).unwrap(), dec("1000"));
}

#[test]
fn msgpack_numbers_as_msgpack_jackson_writes_them() {
    let codec = MsgPackJacksonCodec::<BigDecimal>::new();
    let class = "b46a6176612e6d6174682e426967446563696d616c";
    let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    // 12.50 becomes the double 12.5 (and reads back as 12.5, as in Java).
    let bytes = codec.encode(&dec("12.50")).unwrap();
    assert_eq!(hex(bytes.clone()), format!("92{class}cb4029000000000000"));
    assert_eq!(codec.decode(&bytes).unwrap(), dec("12.5"));
    assert_eq!(
        hex(codec.encode(&dec("1E+3")).unwrap()),
        format!("92{class}cd03e8")
    );
    assert_eq!(
        hex(codec.encode(&dec("0.00")).unwrap()),
        format!("92{class}00")
    );
    // No double is this number: msgpack-jackson refuses it too.
    assert!(codec
        .encode(&dec("123456789012345678901234567890.123456789"))
        .is_err());
    let big: BigInteger = "1234567890123456789012345678901234567890".parse().unwrap();
    assert!(MsgPackJacksonCodec::<BigInteger>::new()
        .encode(&big)
        .is_err());
}

#[test]
fn dates() {
    let d = Date {
        millis: 1_767_225_600_123,
    };
    json(&d, r#"["java.util.Date",1767225600123]"#);
    typed(&d, "1767225600123");
    let t = Timestamp {
        millis: 1_767_225_600_123,
    };
    json(&t, r#"["java.sql.Timestamp",1767225600123]"#);
}

fn ldt(y: i32, mo: u8, d: u8, h: u8, mi: u8, s: u8, n: u32) -> LocalDateTime {
    LocalDateTime {
        date: LocalDate {
            year: y,
            month: mo,
            day: d,
        },
        time: LocalTime {
            hour: h,
            minute: mi,
            second: s,
            nano: n,
        },
    }
}

#[test]
fn java_time_as_java_time_module_writes_it() {
    typed(
        &Instant {
            seconds: 1_767_225_600,
            nanos: 123_456_789,
        },
        "1767225600.123456789",
    );
    typed(
        &Instant {
            seconds: -1,
            nanos: 5,
        },
        "-0.999999995",
    );
    typed(&ldt(2026, 1, 31, 0, 0, 0, 0).date, "[2026,1,31]");
    typed(&ldt(1, 1, 1, 12, 0, 0, 0).time, "[12,0]");
    typed(&ldt(1, 1, 1, 12, 30, 15, 0).time, "[12,30,15]");
    typed(&ldt(1, 1, 1, 12, 30, 15, 500).time, "[12,30,15,500]");
    typed(
        &ldt(2026, 1, 31, 23, 59, 58, 1_000_000),
        "[2026,1,31,23,59,58,1000000]",
    );
    typed(
        &Duration {
            seconds: 3600,
            nanos: 5,
        },
        "3600.000000005",
    );
    typed(
        &Duration {
            seconds: -2,
            nanos: 500_000_000,
        },
        "-1.500000000",
    );
    typed(&ZoneId("-05:00".into()), "\"-05:00\"");
    // OffsetDateTime and ZonedDateTime travel as the instant: they read back in UTC, as in Java.
    let odt = OffsetDateTime {
        date_time: ldt(2026, 1, 31, 23, 59, 58, 0),
        offset_seconds: 7200,
    };
    let codec = TypedJsonJacksonCodec::<OffsetDateTime>::new();
    assert_eq!(codec.encode(&odt).unwrap(), b"1769896798.000000000");
    let back = codec.decode(b"1769896798.000000000").unwrap();
    assert_eq!(back.date_time, ldt(2026, 1, 31, 21, 59, 58, 0));
    assert_eq!(back.offset_seconds, 0);
    // A region zone needs a time-zone database to find the instant: refused, not guessed.
    let zdt = ZonedDateTime {
        date_time: ldt(2026, 7, 1, 8, 0, 0, 0),
        zone: ZoneId("Europe/Paris".into()),
    };
    let err = TypedJsonJacksonCodec::<ZonedDateTime>::new()
        .encode(&zdt)
        .unwrap_err();
    assert!(err.to_string().contains("Europe/Paris"), "{err}");
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Color {
    #[serde(rename = "BLUE")]
    Blue,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "p.Probe2$Ev")]
struct Ev {
    #[serde(rename = "orderId")]
    order_id: Option<i64>,
    amount: BigDecimal,
    big: BigInteger,
    status: Color,
    #[serde(rename = "createdAt")]
    created_at: LocalDateTime,
    day: LocalDate,
    time: LocalTime,
    at: Instant,
    ttl: Duration,
    zone: ZoneId,
    #[serde(rename = "expireAt")]
    expire_at: Date,
    tstamp: Timestamp,
}

/// A POJO's fields, as Redisson 4.7.0's JsonJacksonCodec with `JavaTimeModule` wrote them
/// (the probe `p.Probe2$Ev`, trimmed to these fields).
#[test]
fn pojo_fields_with_java_time_module() {
    let ev = Ev {
        order_id: Some(17),
        amount: dec("99.90"),
        big: "123456789012345678901234567890".parse().unwrap(),
        status: Color::Blue,
        created_at: ldt(2026, 1, 1, 12, 0, 0, 0),
        day: ldt(2026, 2, 3, 0, 0, 0, 0).date,
        time: ldt(1, 1, 1, 4, 5, 6, 7).time,
        at: Instant {
            seconds: 1_767_225_600,
            nanos: 123_000_000,
        },
        ttl: Duration {
            seconds: 90,
            nanos: 500,
        },
        zone: ZoneId("Europe/Paris".into()),
        expire_at: Date {
            millis: 1_767_225_600_123,
        },
        tstamp: Timestamp {
            millis: 1_767_225_600_123,
        },
    };
    json(
        &ev,
        concat!(
            r#"{"@class":"p.Probe2$Ev","amount":["java.math.BigDecimal",99.90],"#,
            r#""at":1767225600.123000000,"big":["java.math.BigInteger",123456789012345678901234567890],"#,
            r#""createdAt":[2026,1,1,12,0],"day":[2026,2,3],"expireAt":["java.util.Date",1767225600123],"#,
            r#""orderId":["java.lang.Long",17],"status":"BLUE","time":[4,5,6,7],"#,
            r#""tstamp":["java.sql.Timestamp",1767225600123],"ttl":90.000000500,"#,
            r#""zone":["java.time.ZoneId","Europe/Paris"]}"#
        ),
    );
}
