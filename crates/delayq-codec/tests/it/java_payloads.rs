//! The Rust side of compat-tests' Java payloads (`compat-tests/src/test/java/com/example/`):
//! `OrderEvent` (every codec) and `Payload` (Kryo5Codec), with `of(i)` building the same i-th
//! value the Java side builds. Shared by the compat peer (`#[path]`) and the golden-fixture
//! tests, so both check the same values.
#![allow(dead_code)]

use delayq_codec::java::{
    BigDecimal, BigInteger, Date, Duration, Instant, LocalDate, LocalDateTime, LocalTime,
    OffsetDateTime, Optional, Timestamp, ZoneId, ZonedDateTime,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `com.example.OrderStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.OrderStatus")]
pub enum OrderStatus {
    #[serde(rename = "NEW")]
    New,
    #[serde(rename = "PAID")]
    Paid,
    #[serde(rename = "EXPIRED")]
    Expired,
}

impl OrderStatus {
    fn of(i: i64) -> Self {
        [OrderStatus::New, OrderStatus::Paid, OrderStatus::Expired][i.rem_euclid(3) as usize]
    }
}

/// `com.example.Item { String sku; int qty; }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Item")]
pub struct Item {
    pub sku: Option<String>,
    pub qty: i32,
}

/// A `java.util.HashSet<String>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.HashSet")]
pub struct HashSetOf(pub Vec<String>);

/// `com.example.OrderEvent`: an order-timeout payload as a Java service would send it (an id,
/// an amount, a status enum, times, collections).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.OrderEvent", rename_all = "camelCase")]
pub struct OrderEvent {
    pub order_id: Option<i64>,
    pub amount: Option<BigDecimal>,
    pub status: Option<OrderStatus>,
    pub created_at: Option<LocalDateTime>,
    pub expire_at: Option<Date>,
    pub items: Option<Vec<Item>>,
    pub tags: Option<HashSetOf>,
}

fn date_time(y: i32, mo: u8, d: u8, h: u8, mi: u8) -> LocalDateTime {
    LocalDateTime {
        date: LocalDate {
            year: y,
            month: mo,
            day: d,
        },
        time: LocalTime {
            hour: h,
            minute: mi,
            second: 0,
            nano: 0,
        },
    }
}

fn plus_seconds(t: LocalDateTime, secs: i64) -> LocalDateTime {
    LocalDateTime::from_epoch_second_utc(t.to_epoch_second_utc() + secs, t.time.nano)
        .expect("in range")
}

impl OrderEvent {
    /// `OrderEvent.of(i)` in Java.
    pub fn of(i: i64) -> Self {
        OrderEvent {
            order_id: Some(1000 + i),
            amount: Some(BigDecimal::new(BigInteger::from(i * 100 + 25), 2)),
            status: Some(OrderStatus::of(i)),
            created_at: Some(plus_seconds(date_time(2026, 1, 1, 12, 0), i * 60)),
            expire_at: Some(Date {
                millis: 1_767_225_600_123 + i,
            }),
            items: Some(vec![Item {
                sku: Some(format!("sku-{i}")),
                qty: i as i32 + 1,
            }]),
            tags: Some(HashSetOf(vec![format!("t{i}")])),
        }
    }

    /// The i this value was made from, if it is `of(i)`.
    pub fn index(&self) -> Option<i64> {
        let i = self.order_id? - 1000;
        (*self == OrderEvent::of(i)).then_some(i)
    }
}

/// `com.example.Point`, a Java record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Point")]
pub struct Point {
    pub x: i32,
    pub label: Option<String>,
    pub tags: Vec<String>,
}

/// `int[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[I")]
pub struct IntArray(pub Vec<i32>);

/// `String[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[Ljava.lang.String;")]
pub struct StringArray(pub Vec<Option<String>>);

/// A `java.util.TreeMap<String, Long>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.TreeMap")]
pub struct TreeMapOf(pub BTreeMap<String, i64>);

/// `List.of(x)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.ImmutableCollections$List12")]
pub struct List12(pub Vec<String>);

/// `com.example.Payload`: one field of each Java type Kryo5Codec carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Payload")]
pub struct Payload {
    pub big: Option<BigInteger>,
    pub at: Option<Instant>,
    pub odt: Option<OffsetDateTime>,
    pub zdt: Option<ZonedDateTime>,
    pub ttl: Option<Duration>,
    pub zone: Option<ZoneId>,
    pub day: Option<LocalDate>,
    pub time: Option<LocalTime>,
    pub stamp: Option<Timestamp>,
    pub codes: Option<IntArray>,
    pub names: Option<StringArray>,
    pub sorted: Option<TreeMapOf>,
    pub frozen: Option<List12>,
    pub note: Option<Optional<String>>,
    pub point: Option<Point>,
    pub status: Option<OrderStatus>,
}

/// The Java record classes `Kryo5Codec::record` must know for [`Payload`].
pub const RECORDS: &[&str] = &["com.example.Point"];

impl Payload {
    /// `Payload.of(i)` in Java.
    pub fn of(i: i64) -> Self {
        let base: i128 = 123_456_789_012_345_678_901_234_567_890;
        let mut odt = date_time(2026, 1, 1, 0, 0);
        odt.time.second = i.rem_euclid(60) as u8;
        odt.time.nano = i as u32;
        Payload {
            big: Some(BigInteger::from(base + i128::from(i))),
            at: Some(Instant {
                seconds: 1_767_225_600 + i,
                nanos: i as u32,
            }),
            odt: Some(OffsetDateTime {
                date_time: odt,
                offset_seconds: 7200,
            }),
            zdt: Some(ZonedDateTime {
                date_time: plus_seconds(date_time(2026, 7, 1, 8, 0), i),
                zone: ZoneId("Europe/Paris".into()),
            }),
            ttl: Some(Duration {
                seconds: i,
                nanos: 5,
            }),
            zone: Some(ZoneId("Europe/Paris".into())),
            day: LocalDate::from_epoch_day(date_time(2026, 1, 1, 0, 0).date.to_epoch_day() + i),
            time: Some(LocalTime {
                hour: 12,
                minute: i.rem_euclid(60) as u8,
                second: 0,
                nano: 0,
            }),
            stamp: Some(Timestamp {
                millis: 1_767_225_600_123 + i,
            }),
            codes: Some(IntArray(vec![i as i32, -(i as i32)])),
            names: Some(StringArray(vec![Some(format!("n{i}")), None])),
            sorted: Some(TreeMapOf(BTreeMap::from([
                ("a".to_owned(), i),
                ("b".to_owned(), -i),
            ]))),
            frozen: Some(List12(vec![format!("f{i}")])),
            note: Some(Optional((i % 2 == 0).then(|| format!("n{i}")))),
            point: Some(Point {
                x: i as i32,
                label: Some(format!("p{i}")),
                tags: vec!["t".into()],
            }),
            status: Some(OrderStatus::of(i)),
        }
    }

    /// The i this value was made from, if it is `of(i)`.
    pub fn index(&self) -> Option<i64> {
        let i = self.ttl?.seconds;
        (*self == Payload::of(i)).then_some(i)
    }
}
