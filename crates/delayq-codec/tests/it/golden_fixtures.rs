//! Golden bytes captured from the real Redisson, checked without Java.
//!
//! `compat-tests/` (its `GoldenFixturesTest`) writes, for every Redisson version it runs,
//! `tests/fixtures/redisson/<version>/<Codec>.hex` (value id, tab, the bytes Redisson's codec
//! wrote). The codecs must write exactly those bytes and read them back to the same value. (The
//! `entries.hex` beside them, entries Redisson's own offer script packed on Redis, are delayq's:
//! its `tests/it/input/entry_fixtures.rs` unpacks them.)
//!
//! The Jackson and Kryo5 fixtures are checked for every value id (`string:hello`, `string:utf8`,
//! `long:42`, `bytes:010203`, `map:kv`, `map:ab`, `order:1x` = `com.example.Order{id: 1, sku:
//! "x"}`, `list:a`, `list:ab`; see the Java side for the exact Java values).

use delayq_codec::{ByteArrayCodec, Codec, LongCodec, StringCodec};
use std::borrow::Borrow;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisson")
}

/// Every captured Redisson version, oldest name first.
fn version_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no fixtures under {:?}", fixtures_root());
    dirs
}

fn hex(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd hex {text:?}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// The tab-separated lines of a fixture file, comments skipped.
fn lines(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read fixture {path:?}: {e}"));
    let rows: Vec<Vec<String>> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect();
    assert!(!rows.is_empty(), "empty fixture {path:?}");
    rows
}

/// Checks every value of one codec's fixture file in every version.
fn check_codec<C>(codec: C, file: &str, value_of: impl Fn(&str) -> C::Value)
where
    C: Codec,
    C::Value: PartialEq + Debug,
{
    let mut checked = 0;
    for dir in version_dirs() {
        for row in lines(&dir.join(file)) {
            let (id, bytes) = (&row[0], hex(&row[1]));
            let value = value_of(id);
            let encoded = codec.encode(value.borrow()).unwrap();
            assert_eq!(
                encoded, bytes,
                "{dir:?} {file} {id}: delayq writes other bytes than Redisson"
            );
            assert_eq!(codec.decode(&bytes).unwrap(), value, "{dir:?} {file} {id}");
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn string_codec_matches_redisson() {
    check_codec(StringCodec, "StringCodec.hex", |id| {
        match id {
            "string:hello" => "hello",
            "string:utf8" => "héllo € 😀",
            "string:empty" => "",
            other => panic!("unknown fixture id {other}"),
        }
        .to_owned()
    });
}

#[test]
fn long_codec_matches_redisson() {
    check_codec(LongCodec, "LongCodec.hex", |id| match id {
        "long:42" => 42,
        "long:-1" => -1,
        "long:max" => i64::MAX,
        "long:min" => i64::MIN,
        other => panic!("unknown fixture id {other}"),
    });
}

#[test]
fn byte_array_codec_matches_redisson() {
    check_codec(ByteArrayCodec, "ByteArrayCodec.hex", |id| match id {
        "bytes:010203" => vec![1, 2, 3],
        "bytes:empty" => vec![],
        other => panic!("unknown fixture id {other}"),
    });
}

/// Encodes `value` to exactly `bytes`, and decodes `bytes` to a value that encodes the same.
#[cfg(feature = "json")]
fn check_one<C: Codec>(codec: C, value: C::Value, bytes: &[u8], what: &str) {
    assert_eq!(
        codec.encode(value.borrow()).unwrap(),
        bytes,
        "{what}: delayq writes other bytes than Redisson"
    );
    let back = codec.decode(bytes).unwrap();
    assert_eq!(
        codec.encode(back.borrow()).unwrap(),
        bytes,
        "{what}: decode/encode"
    );
}

#[cfg(feature = "json")]
use crate::java_payloads::{OrderEvent, Payload, RECORDS};
#[cfg(feature = "json")]
use delayq_codec::java::BigDecimal;

/// `com.example.Payload.of(i)` through Kryo5Codec (with its record classes) in every version.
#[cfg(all(feature = "json", feature = "kryo"))]
#[test]
fn kryo5_payloads_match_redisson() {
    use delayq_codec::Kryo5Codec;
    let codec = RECORDS
        .iter()
        .fold(Kryo5Codec::<Payload>::new(), |c, r| c.record(*r));
    let mut checked = 0;
    for dir in version_dirs() {
        for row in lines(&dir.join("Kryo5Codec.hex")) {
            let i: i64 = match row[0].strip_prefix("payload:") {
                Some(i) => i.parse().unwrap(),
                None => continue,
            };
            let bytes = hex(&row[1]);
            assert_eq!(
                codec.encode(&Payload::of(i)).unwrap(),
                bytes,
                "{dir:?} payload:{i}"
            );
            assert_eq!(
                codec.decode(&bytes).unwrap(),
                Payload::of(i),
                "{dir:?} payload:{i}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "no payload fixtures");
}

#[cfg(feature = "json")]
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename = "com.example.Order")]
struct Order {
    id: i64,
    sku: String,
}

/// A Java `byte[]` for the Jackson codecs: serialized as bytes (Base64 text in JSON, `bin` in
/// MessagePack), read back from either.
#[cfg(feature = "json")]
#[derive(Debug, PartialEq)]
struct JBytes(Vec<u8>);

#[cfg(feature = "json")]
impl serde::Serialize for JBytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

#[cfg(feature = "json")]
impl<'de> serde::Deserialize<'de> for JBytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JBytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<JBytes, E> {
                Ok(JBytes(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<JBytes, E> {
                Ok(JBytes(v))
            }
        }
        d.deserialize_byte_buf(V)
    }
}

#[cfg(feature = "json")]
macro_rules! check_serde_file {
    ($codec:ident, $file:expr, $bytes:ty, $make_bytes:expr) => {{
        use delayq_codec::{$codec, JavaHashMap};
        let mut checked = 0;
        for dir in version_dirs() {
            for row in lines(&dir.join($file)) {
                let (id, bytes) = (row[0].as_str(), hex(&row[1]));
                let what = format!("{dir:?} {} {id}", $file);
                let map = |pairs: &[(&str, &str)]| {
                    let mut m = JavaHashMap::new();
                    for (k, v) in pairs {
                        m.insert(*k, v.to_string());
                    }
                    m
                };
                match id {
                    "string:hello" => {
                        check_one($codec::<String>::new(), "hello".into(), &bytes, &what)
                    }
                    "string:utf8" => {
                        check_one($codec::<String>::new(), "héllo".into(), &bytes, &what)
                    }
                    "long:42" => check_one($codec::<i64>::new(), 42, &bytes, &what),
                    "map:kv" => check_one(
                        $codec::<JavaHashMap<String>>::new(),
                        map(&[("k", "v")]),
                        &bytes,
                        &what,
                    ),
                    "map:ab" => check_one(
                        $codec::<JavaHashMap<String>>::new(),
                        map(&[("a", "x"), ("b", "y")]),
                        &bytes,
                        &what,
                    ),
                    "order:1x" => check_one(
                        $codec::<Order>::new(),
                        Order {
                            id: 1,
                            sku: "x".into(),
                        },
                        &bytes,
                        &what,
                    ),
                    "list:a" => check_one(
                        $codec::<Vec<String>>::new(),
                        vec!["a".into()],
                        &bytes,
                        &what,
                    ),
                    "list:ab" => check_one(
                        $codec::<Vec<String>>::new(),
                        vec!["a".into(), "b".into()],
                        &bytes,
                        &what,
                    ),
                    "bytes:010203" => check_one(
                        $codec::<$bytes>::new(),
                        $make_bytes(vec![1, 2, 3]),
                        &bytes,
                        &what,
                    ),
                    "decimal:3.25" => check_one(
                        $codec::<BigDecimal>::new(),
                        "3.25".parse().unwrap(),
                        &bytes,
                        &what,
                    ),
                    "decimal:big" => check_one(
                        $codec::<BigDecimal>::new(),
                        "-123456789012345678901234567890.123456789".parse().unwrap(),
                        &bytes,
                        &what,
                    ),
                    "event:1" => check_one(
                        $codec::<OrderEvent>::new(),
                        OrderEvent::of(1),
                        &bytes,
                        &what,
                    ),
                    // Kryo only, with its records: kryo5_payloads_match_redisson.
                    "payload:1" | "payload:2" => continue,
                    other => panic!("unknown fixture id {other}"),
                }
                checked += 1;
            }
        }
        assert!(checked > 0);
    }};
}

#[cfg(feature = "json")]
#[test]
fn json_jackson_codec_matches_redisson() {
    check_serde_file!(JsonJacksonCodec, "JsonJacksonCodec.hex", JBytes, JBytes);
}

#[cfg(feature = "json")]
#[test]
fn typed_json_jackson_codec_matches_redisson() {
    check_serde_file!(
        TypedJsonJacksonCodec,
        "TypedJsonJacksonCodec.hex",
        JBytes,
        JBytes
    );
}

#[cfg(feature = "msgpack")]
#[test]
fn msgpack_jackson_codec_matches_redisson() {
    check_serde_file!(
        MsgPackJacksonCodec,
        "MsgPackJacksonCodec.hex",
        JBytes,
        JBytes
    );
}

#[cfg(all(feature = "json", feature = "kryo"))]
#[test]
fn kryo5_codec_matches_redisson() {
    use delayq_codec::kryo::JavaBytes;
    check_serde_file!(Kryo5Codec, "Kryo5Codec.hex", JavaBytes, JavaBytes);
}

/// Kryo5 fixtures once more with plain Rust types: maps as `BTreeMap` written through
/// `java_hash_order`, and every decoded value equal to the value it came from.
#[cfg(all(feature = "json", feature = "kryo"))]
#[test]
fn kryo5_fixtures_decode_to_equal_rust_values() {
    use delayq_codec::kryo::JavaBytes;
    use delayq_codec::Kryo5Codec;
    use std::collections::BTreeMap;

    fn same<T>(value: T, bytes: &[u8], what: &str)
    where
        T: serde::Serialize
            + serde::de::DeserializeOwned
            + PartialEq
            + Debug
            + Send
            + Sync
            + 'static,
    {
        let codec = Kryo5Codec::<T>::new().java_hash_order(true);
        assert_eq!(codec.encode(&value).unwrap(), bytes, "{what}: encode");
        assert_eq!(codec.decode(bytes).unwrap(), value, "{what}: decode");
    }
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let mut checked = 0;
    for dir in version_dirs() {
        for row in lines(&dir.join("Kryo5Codec.hex")) {
            let (id, bytes) = (row[0].as_str(), hex(&row[1]));
            let what = format!("{dir:?} Kryo5Codec.hex {id}");
            match id {
                "string:hello" => same("hello".to_owned(), &bytes, &what),
                "string:utf8" => same("h\u{e9}llo".to_owned(), &bytes, &what),
                "long:42" => same(42i64, &bytes, &what),
                "bytes:010203" => same(JavaBytes(vec![1, 2, 3]), &bytes, &what),
                "map:kv" => same(map(&[("k", "v")]), &bytes, &what),
                "map:ab" => same(map(&[("a", "x"), ("b", "y")]), &bytes, &what),
                "order:1x" => same(
                    Order {
                        id: 1,
                        sku: "x".into(),
                    },
                    &bytes,
                    &what,
                ),
                "list:a" => same(vec!["a".to_owned()], &bytes, &what),
                "list:ab" => same(vec!["a".to_owned(), "b".to_owned()], &bytes, &what),
                "decimal:3.25" => same(BigDecimal::new(325.into(), 2), &bytes, &what),
                "decimal:big" => same(
                    "-123456789012345678901234567890.123456789"
                        .parse::<BigDecimal>()
                        .unwrap(),
                    &bytes,
                    &what,
                ),
                "event:1" => same(OrderEvent::of(1), &bytes, &what),
                // With its record classes: kryo5_payloads_match_redisson.
                id if id.starts_with("payload:") => continue,
                other => panic!("unknown fixture id {other}"),
            }
            checked += 1;
        }
    }
    assert!(checked >= 27, "only {checked} Kryo fixtures");
}
