//! Kryo5Codec and the Java types real payloads carry: `BigDecimal`, `BigInteger`,
//! enums, `Date`, `Timestamp`, `java.time`, arrays, `TreeMap`/`TreeSet`, the JDK's immutable
//! collections, `Optional`, records and a POJO nesting them, each against the bytes Redisson's
//! own Kryo5Codec wrote (`tests/fixtures/kryo/redisson-*.hex`, from `gen/KryoVectors.java`).
#![cfg(feature = "kryo")]

use std::collections::{BTreeMap, BTreeSet};

use delayq_codec::java::{
    BigDecimal, BigInteger, Date, Duration, Instant, JavaTime, LocalDate, LocalDateTime, LocalTime,
    OffsetDateTime, Optional, Timestamp, ZoneId, ZonedDateTime,
};
use delayq_codec::kryo::{JavaValue, Kryo5Codec, KryoError};
use delayq_codec::Codec;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The bytes every fixture version wrote for `label` (they agree; checked here too).
fn redisson(label: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kryo");
    let mut found: Option<String> = None;
    for v in ["3.19.1", "3.21.0", "3.52.0", "4.7.0"] {
        let text = std::fs::read_to_string(dir.join(format!("redisson-{v}.hex"))).unwrap();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(label).and_then(|r| r.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no fixture {label} for {v}"))
            .to_owned();
        if let Some(f) = &found {
            assert_eq!(f, &line, "{label}: Redisson {v} wrote other bytes");
        }
        found = Some(line);
    }
    let h = found.unwrap();
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

fn codec<T: DeserializeOwned>() -> Kryo5Codec<T> {
    Kryo5Codec::new().record("com.example.Point")
}

/// Encodes to exactly Redisson's bytes and decodes them back to the value.
fn check<T>(value: T, label: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + Send + Sync + 'static,
{
    let bytes = redisson(label);
    let c = codec::<T>();
    assert_eq!(
        c.encode(&value).unwrap(),
        bytes,
        "{label}: encode {value:?}"
    );
    assert_eq!(c.decode(&bytes).unwrap(), value, "{label}: decode");
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Color")]
pub(crate) enum Color {
    #[serde(rename = "RED")]
    Red,
    #[serde(rename = "GREEN")]
    Green,
    #[serde(rename = "BLUE")]
    Blue,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Op")]
pub(crate) enum Op {
    #[serde(rename = "ADD")]
    Add,
    #[serde(rename = "SUB")]
    Sub,
}

/// `record Point(int x, String label, List<String> tags)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Point")]
pub(crate) struct Point {
    x: i32,
    label: Option<String>,
    tags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Line")]
pub(crate) struct Line {
    qty: i32,
    note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[I")]
struct IntArray(Vec<i32>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.HashSet")]
struct HashSetOf(Vec<String>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.ImmutableCollections$List12")]
struct List12(Vec<String>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.TreeMap")]
struct TreeMapOf<V>(BTreeMap<String, V>);

/// The order-timeout payload, every field nullable as in Java.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename = "com.example.Event", rename_all = "camelCase")]
pub(crate) struct Event {
    order_id: Option<i64>,
    amount: Option<BigDecimal>,
    status: Option<Color>,
    created_at: Option<LocalDateTime>,
    expire_at: Option<Date>,
    items: Option<Vec<Line>>,
    tags: Option<HashSetOf>,
    at: Option<Instant>,
    note: Option<Optional<String>>,
    codes: Option<IntArray>,
    point: Option<Point>,
    frozen: Option<List12>,
    sorted: Option<TreeMapOf<i64>>,
    zone: Option<ZoneId>,
    big: Option<BigInteger>,
}

fn dec(s: &str) -> BigDecimal {
    s.parse().unwrap()
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
fn numbers() {
    check(dec("12.50"), "bigdecimal-12.50");
    check(dec("-0.000001"), "bigdecimal-neg-small");
    check(dec("1E+3"), "bigdecimal-1E+3");
    check(
        dec("123456789012345678901234567890.123456789"),
        "bigdecimal-big",
    );
    check(dec("0"), "bigdecimal-zero");
    check(dec("0.00"), "bigdecimal-0.00");
    let big: BigInteger = "-1234567890123456789012345678901234567890".parse().unwrap();
    check(big, "biginteger-big");
    check(BigInteger::from(128), "biginteger-128");
    // A Rust i128/u128 is a BigInteger too.
    check(128i128, "biginteger-128");
    check(128u128, "biginteger-128");
    let err = codec::<i128>()
        .decode(&redisson("biginteger-big"))
        .unwrap_err();
    assert!(matches!(err, KryoError::Mismatch(_)), "{err}");
}

#[test]
fn enums_by_ordinal() {
    check(Color::Green, "enum-green");
    // A constant with a body has its own class (`Op$2`); it decodes to its enum's variant.
    let op: Op = codec().decode(&redisson("enum-body")).unwrap();
    assert_eq!(op, Op::Sub);
    let any = codec::<JavaValue>()
        .register::<Op>()
        .decode(&redisson("enum-body"))
        .unwrap();
    assert_eq!(
        any,
        JavaValue::Enum {
            class: "com.example.Op$2".into(),
            ordinal: 1
        }
    );
    // Without the enum's schema the class cannot be read (Kryo writes no names).
    let err = codec::<JavaValue>()
        .decode(&redisson("enum-green"))
        .unwrap_err();
    assert!(err.to_string().contains("com.example.Color"), "{err}");
}

#[test]
fn dates_and_times() {
    check(
        Date {
            millis: 1_767_225_600_123,
        },
        "date",
    );
    check(Date { millis: -1 }, "date-neg");
    check(
        Timestamp {
            millis: 1_767_225_600_123,
        },
        "timestamp",
    );
    check(
        Instant {
            seconds: 1_767_225_600,
            nanos: 123_456_789,
        },
        "instant",
    );
    check(
        Instant {
            seconds: -1,
            nanos: 5,
        },
        "instant-neg",
    );
    check(ldt(2026, 1, 31, 0, 0, 0, 0).date, "localdate");
    check(ldt(-5, 12, 31, 0, 0, 0, 0).date, "localdate-bc");
    check(ldt(1, 1, 1, 12, 0, 0, 0).time, "localtime-h");
    check(ldt(1, 1, 1, 12, 30, 0, 0).time, "localtime-hm");
    check(ldt(1, 1, 1, 12, 30, 15, 0).time, "localtime-hms");
    check(ldt(1, 1, 1, 12, 30, 15, 500).time, "localtime-n");
    check(ldt(1, 1, 1, 0, 0, 0, 0).time, "localtime-midnight");
    check(ldt(2026, 1, 31, 23, 59, 58, 1_000_000), "localdatetime");
    check(
        OffsetDateTime {
            date_time: ldt(2026, 1, 31, 23, 59, 58, 0),
            offset_seconds: 7200,
        },
        "offsetdatetime",
    );
    check(
        OffsetDateTime {
            date_time: ldt(2026, 1, 31, 23, 59, 58, 7),
            offset_seconds: -3601,
        },
        "offsetdatetime-odd",
    );
    check(
        ZonedDateTime {
            date_time: ldt(2026, 7, 1, 8, 0, 0, 0),
            zone: ZoneId("Europe/Paris".into()),
        },
        "zoneddatetime",
    );
    check(
        ZonedDateTime {
            date_time: ldt(2026, 7, 1, 8, 0, 0, 0),
            zone: ZoneId("Z".into()),
        },
        "zoneddatetime-utc",
    );
    check(
        Duration {
            seconds: 3600,
            nanos: 5,
        },
        "duration",
    );
    check(
        Duration {
            seconds: -2,
            nanos: 500_000_000,
        },
        "duration-neg",
    );
    check(ZoneId("Europe/Paris".into()), "zoneid");
    check(ZoneId("-05:00".into()), "zoneoffset");
}

#[test]
fn arrays() {
    check(IntArray(vec![1, -2, 300]), "int-array");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[J")]
    struct Longs(Vec<i64>);
    check(Longs(vec![1, -2, i64::MIN]), "long-array");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[D")]
    struct Doubles(Vec<f64>);
    check(Doubles(vec![1.5, -0.0]), "double-array");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[Z")]
    struct Bools(Vec<bool>);
    check(Bools(vec![true, false]), "boolean-array");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[C")]
    struct Chars(Vec<char>);
    check(Chars(vec!['a', 'é']), "char-array");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[Ljava.lang.String;")]
    struct Strings(Vec<Option<String>>);
    check(
        Strings(vec![Some("a".into()), None, Some(String::new())]),
        "string-array",
    );
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[Ljava.lang.Object;")]
    struct Objects(Vec<JavaValue>);
    check(
        Objects(vec!["a".into(), JavaValue::Long(1), JavaValue::Null]),
        "object-array",
    );
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[Ljava.lang.Long;")]
    struct Longs2(Vec<Option<i64>>);
    check(Longs2(vec![Some(7), None]), "long-box-array");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[Lcom.example.Line;")]
    struct Lines(Vec<Option<Line>>);
    check(
        Lines(vec![Some(Line { qty: 0, note: None }), None]),
        "line-array",
    );
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[[I")]
    struct Grid(Vec<Option<IntArray>>);
    check(Grid(vec![Some(IntArray(vec![1])), None]), "int-array-2d");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[Lcom.example.Color;")]
    struct Colors(Vec<Option<Color>>);
    check(Colors(vec![Some(Color::Blue), None]), "color-array");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "[Ljava.time.Instant;")]
    struct Instants(Vec<Option<Instant>>);
    check(
        Instants(vec![
            Some(Instant {
                seconds: 5,
                nanos: 0,
            }),
            None,
        ]),
        "instant-array",
    );
}

#[test]
fn sorted_and_jdk_collections() {
    check(
        TreeMapOf(BTreeMap::from([
            ("a".to_owned(), JavaValue::from("x")),
            ("b".to_owned(), JavaValue::Long(1)),
        ])),
        "treemap",
    );
    check(TreeMapOf::<i64>(BTreeMap::new()), "treemap-empty");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.TreeSet")]
    struct TreeSetOf(BTreeSet<String>);
    check(
        TreeSetOf(BTreeSet::from(["a".into(), "b".into()])),
        "treeset",
    );
    check(List12(vec!["a".into(), "b".into()]), "list-of-2");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.ImmutableCollections$ListN")]
    struct ListN(Vec<String>);
    check(ListN(vec!["a".into(), "b".into(), "c".into()]), "list-of-3");
    check(ListN(vec![]), "list-of-0");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.ImmutableCollections$List12")]
    struct Mixed(Vec<JavaValue>);
    check(Mixed(vec!["a".into(), JavaValue::Long(1)]), "list-of-mixed");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.ImmutableCollections$Set12")]
    struct Set12(Vec<String>);
    check(Set12(vec!["a".into()]), "set-of-1");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.ImmutableCollections$Map1")]
    struct Map1(BTreeMap<String, String>);
    check(Map1(BTreeMap::from([("k".into(), "v".into())])), "map-of-1");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.Collections$EmptyList")]
    struct Empty(Vec<String>);
    check(Empty(vec![]), "empty-list");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.Collections$SingletonMap")]
    struct One(BTreeMap<String, i64>);
    check(One(BTreeMap::from([("k".into(), 1)])), "singleton-map");
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename = "java.util.Arrays$ArrayList")]
    struct AsList(Vec<String>);
    check(AsList(vec!["a".into(), "b".into()]), "arrays-aslist");
    // The immutable collections hold no null: Java could not read it back.
    let err = codec::<Mixed>()
        .encode(&Mixed(vec![JavaValue::Null]))
        .unwrap_err();
    assert!(err.to_string().contains("cannot hold null"), "{err}");
}

#[test]
fn optionals_and_records() {
    check(Optional(Some("x".to_owned())), "optional");
    check(Optional::<String>(None), "optional-empty");
    check(
        Point {
            x: 3,
            label: Some("p".into()),
            tags: vec!["t".into()],
        },
        "record",
    );
    // Without `record`, the same struct is a POJO and writes other bytes.
    let pojo = Kryo5Codec::<Point>::new()
        .encode(&Point {
            x: 3,
            label: Some("p".into()),
            tags: vec!["t".into()],
        })
        .unwrap();
    assert_ne!(pojo, redisson("record"));
}

pub(crate) fn event() -> Event {
    Event {
        order_id: Some(17),
        amount: Some(dec("99.90")),
        status: Some(Color::Blue),
        created_at: Some(ldt(2026, 1, 1, 12, 0, 0, 0)),
        expire_at: Some(Date {
            millis: 1_767_225_600_123,
        }),
        items: Some(vec![Line {
            qty: 2,
            note: Some("n".into()),
        }]),
        tags: Some(HashSetOf(vec!["x".into()])),
        at: Some(Instant {
            seconds: 5,
            nanos: 0,
        }),
        note: Some(Optional(Some("n".into()))),
        codes: Some(IntArray(vec![1])),
        point: Some(Point {
            x: 1,
            label: Some("q".into()),
            tags: vec![],
        }),
        frozen: Some(List12(vec!["f".into()])),
        sorted: Some(TreeMapOf(BTreeMap::from([("k".into(), 2)]))),
        zone: Some(ZoneId("UTC".into())),
        big: Some("12345678901234567890123".parse().unwrap()),
    }
}

#[test]
fn a_pojo_nesting_all_of_them() {
    check(event(), "event");
    check(Event::default(), "event-empty");
    // Dynamically, with the classes registered, the same bytes round-trip.
    let any = codec::<JavaValue>().register::<Event>();
    let v = any.decode(&redisson("event")).unwrap();
    assert_eq!(any.encode(&v).unwrap(), redisson("event"));
    let JavaValue::Object(o) = &v else {
        panic!("{v:?}")
    };
    assert_eq!(
        o.get("createdAt"),
        Some(&JavaValue::Time(JavaTime::LocalDateTime(ldt(
            2026, 1, 1, 12, 0, 0, 0
        ))))
    );
}

/// What stays unsupported fails naming the Java class.
#[test]
fn unsupported_classes_are_named() {
    // Collections.unmodifiableList, as Redisson 3.52/4.7 write it (Java serialization inside).
    let mut bytes = vec![0x01, 0x00];
    bytes.extend_from_slice(b"java.util.Collections$UnmodifiableRandomAccessLis");
    bytes.push(b't' | 0x80);
    bytes.extend_from_slice(&[0xac, 0xed, 0x00, 0x05]);
    let err = codec::<JavaValue>().decode(&bytes).unwrap_err();
    assert!(
        err.to_string()
            .contains("java.util.Collections$UnmodifiableRandomAccessList"),
        "{err}"
    );
    // A sorted collection with a comparator.
    let mut tree = vec![0x01, 0x00];
    tree.extend_from_slice(b"java.util.TreeSe");
    tree.push(b't' | 0x80);
    tree.extend_from_slice(&[0x82, 0x01, 0x01]);
    tree.extend_from_slice(b"com.example.ByLengt");
    tree.push(b'h' | 0x80);
    let err = codec::<JavaValue>().decode(&tree).unwrap_err();
    assert!(err.to_string().contains("com.example.ByLength"), "{err}");
}
