//! Every map class Kryo5Codec handles, at the root and in POJO fields declared
//! `Map<String,Long>`, `Map<Long,String>`, `Map<String,Object>` and `Object`, against the bytes
//! Redisson 3.52.0 and 4.7.0 wrote (`tests/fixtures/kryo/maps/redisson-<version>.hex`, from
//! `gen/MapVectors.java`).
//!
//! What delayq writes for the same values is kept in `tests/fixtures/kryo/maps/delayq.hex`;
//! `gen/gen.sh` has each Redisson version read that file back and compare every value with the
//! one Java built. Set `DELAYQ_WRITE_FIXTURES=1` to rewrite the file after a deliberate change.
#![cfg(feature = "kryo")]

use std::collections::BTreeMap;
use std::path::PathBuf;

use delayq_codec::kryo::{
    ClassSchema, JavaField, JavaObject, JavaType, JavaValue, Kryo5Codec, KryoError, Primitive,
};
use delayq_codec::Codec;
use serde::{Deserialize, Serialize};

const HOLDER: &str = "com.example.MapHolder";
const VERSIONS: [&str; 2] = ["3.52.0", "4.7.0"];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kryo/maps")
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `label hex` lines of a fixture file.
fn lines(file: &str) -> Vec<(String, Vec<u8>)> {
    std::fs::read_to_string(dir().join(file))
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (label, h) = l.split_once(' ').unwrap();
            (label.to_owned(), hex(h))
        })
        .collect()
}

fn long() -> JavaType {
    JavaType::Boxed(Primitive::Long)
}

/// The declared fields of `MapHolder`.
fn holder_fields() -> [(String, JavaType); 4] {
    [
        ("any".into(), JavaType::object()),
        (
            "longString".into(),
            JavaType::map_of(long(), JavaType::String),
        ),
        (
            "stringLong".into(),
            JavaType::map_of(JavaType::String, long()),
        ),
        (
            "stringObject".into(),
            JavaType::map_of(JavaType::String, JavaType::object()),
        ),
    ]
}

fn codec() -> Kryo5Codec<JavaValue> {
    Kryo5Codec::<JavaValue>::new().with_class(ClassSchema::new(HOLDER, holder_fields()))
}

fn holder(values: [JavaValue; 4]) -> JavaValue {
    let fields = holder_fields()
        .into_iter()
        .zip(values)
        .map(|((name, ty), value)| JavaField::new(name, ty, value));
    JavaValue::Object(JavaObject::new(HOLDER, fields))
}

/// The Java class of a fixture's map kind with `size` entries.
fn class_of(kind: &str, size: usize) -> &'static str {
    match (kind, size) {
        ("hashmap", _) => "java.util.HashMap",
        ("linkedhashmap", _) => "java.util.LinkedHashMap",
        ("treemap", _) => "java.util.TreeMap",
        ("concurrenthashmap", _) => "java.util.concurrent.ConcurrentHashMap",
        ("hashtable", _) => "java.util.Hashtable",
        ("concurrentskiplistmap", _) => "java.util.concurrent.ConcurrentSkipListMap",
        ("map-of", 1) => "java.util.ImmutableCollections$Map1",
        ("map-of", _) => "java.util.ImmutableCollections$MapN",
        ("collections", 0) => "java.util.Collections$EmptyMap",
        ("collections", _) => "java.util.Collections$SingletonMap",
        _ => panic!("no map kind {kind}"),
    }
}

fn map(class: &str, entries: Vec<(JavaValue, JavaValue)>) -> JavaValue {
    JavaValue::Map {
        class: class.into(),
        entries,
    }
}

/// The entries `MapVectors.java` puts in a map of each declared type, by size.
fn contents(size: usize) -> [Vec<(JavaValue, JavaValue)>; 3] {
    let string_long = [("a", 1), ("b", -2), ("c", 300)];
    let long_string = [(1, "a"), (-2, "b"), (300, "c")];
    let string_object = [
        ("a", JavaValue::Long(1)),
        ("b", "x".into()),
        ("c", JavaValue::Bool(true)),
    ];
    let string_object: Vec<_> = match size {
        1 => vec![("a".into(), "x".into())],
        _ => string_object
            .into_iter()
            .take(size)
            .map(|(k, v)| (k.into(), v))
            .collect(),
    };
    [
        string_long
            .into_iter()
            .take(size)
            .map(|(k, v)| (k.into(), JavaValue::Long(v)))
            .collect(),
        long_string
            .into_iter()
            .take(size)
            .map(|(k, v)| (JavaValue::Long(k), v.into()))
            .collect(),
        string_object,
    ]
}

/// The value Java built for a fixture label (`root-<kind>-<size>`, `holder-<kind>-<size>`, or
/// one of the holders with nulls); `None` for the kinds Redisson writes with Java serialization.
fn expected(label: &str) -> Option<JavaValue> {
    let long = |n| JavaValue::Long(n);
    let s = |t: &str| JavaValue::from(t);
    let with_nulls = |class: &str| {
        holder([
            map(class, vec![(s("a"), JavaValue::Null)]),
            map(
                class,
                vec![(JavaValue::Null, s("x")), (long(5), JavaValue::Null)],
            ),
            map(
                class,
                vec![(s("a"), JavaValue::Null), (JavaValue::Null, long(2))],
            ),
            map(class, vec![(s("n"), JavaValue::Null)]),
        ])
    };
    match label {
        "holder-hashmap-nulls" => return Some(with_nulls("java.util.HashMap")),
        "holder-linkedhashmap-nulls" => return Some(with_nulls("java.util.LinkedHashMap")),
        "holder-treemap-nulls" => {
            let tree = "java.util.TreeMap";
            return Some(holder([
                JavaValue::Null,
                map(tree, vec![(long(1), JavaValue::Null)]),
                map(tree, vec![(s("a"), JavaValue::Null)]),
                JavaValue::Null,
            ]));
        }
        "holder-all-null" => {
            return Some(holder([
                JavaValue::Null,
                JavaValue::Null,
                JavaValue::Null,
                JavaValue::Null,
            ]))
        }
        _ => {}
    }
    let (place, rest) = label.split_once('-').unwrap();
    let (kind, size) = rest.rsplit_once('-').unwrap();
    if kind == "unmodifiable" {
        return None;
    }
    let size: usize = size.parse().unwrap();
    let class = class_of(kind, size);
    let [mut string_long, mut long_string, mut string_object] = contents(size);
    if kind.contains("tree") || kind.contains("skiplist") {
        // Sorted maps iterate in their keys' natural order.
        for entries in [&mut string_long, &mut long_string, &mut string_object] {
            entries.sort_by_key(|(k, _)| match k {
                JavaValue::Long(n) => (*n, String::new()),
                other => (0, format!("{other:?}")),
            });
        }
    }
    let root = map(class, string_long.clone());
    Some(match place {
        "root" => root,
        _ => holder([
            root,
            map(class, long_string),
            map(class, string_long),
            map(class, string_object),
        ]),
    })
}

/// `v` with every map's entries sorted, to compare maps whose iteration order Java chose.
fn canonical(v: JavaValue) -> JavaValue {
    match v {
        JavaValue::Map { class, entries } => {
            let mut entries: Vec<_> = entries
                .into_iter()
                .map(|(k, v)| (canonical(k), canonical(v)))
                .collect();
            entries.sort_by_key(|e| format!("{e:?}"));
            JavaValue::Map { class, entries }
        }
        JavaValue::Object(mut o) => {
            for f in &mut o.fields {
                f.value = canonical(std::mem::replace(&mut f.value, JavaValue::Null));
            }
            JavaValue::Object(o)
        }
        other => other,
    }
}

/// Each Redisson version's bytes decode to the value Java built, and the decoded value (which
/// keeps Java's entry order) encodes to the same bytes.
#[test]
fn redisson_maps_decode_and_reencode_byte_exact() {
    let codec = codec();
    let mut seen = 0;
    for version in VERSIONS {
        for (label, bytes) in lines(&format!("redisson-{version}.hex")) {
            let decoded = codec.decode(&bytes);
            let Some(want) = expected(&label) else {
                let err = decoded.expect_err(&label);
                assert!(
                    matches!(&err, KryoError::UnknownClass { class, .. }
                        if class == "java.util.Collections$UnmodifiableMap"),
                    "{version} {label}: {err}"
                );
                continue;
            };
            let got = decoded.unwrap_or_else(|e| panic!("{version} {label}: {e}"));
            assert_eq!(canonical(got.clone()), canonical(want), "{version} {label}");
            let again = codec.encode(&got).unwrap();
            assert_eq!(to_hex(&again), to_hex(&bytes), "{version} {label}");
            seen += 1;
        }
    }
    assert!(seen > 80, "only {seen} fixtures");
}

/// Values built in Rust encode to Java's bytes wherever Java's entry order is fixed (insertion
/// or sorted order, at most one entry, or a `HashMap` with Java's hash order); where it is not
/// (`Hashtable`, `ConcurrentHashMap`, `Map.of` with several entries) the bytes decode to the
/// same value. Java reads all of them back: `delayq.hex` holds them, and `gen.sh` checks it.
#[test]
fn rust_built_maps_encode_as_redisson_writes() {
    let codec = codec().java_hash_order(true);
    let java: BTreeMap<String, Vec<u8>> = lines("redisson-4.7.0.hex").into_iter().collect();
    let mut file = String::from(
        "# What delayq's Kryo5Codec writes for MapVectors.java's values (see codec_kryo_maps.rs).\n",
    );
    for (label, java_bytes) in &java {
        let Some(value) = expected(label) else {
            continue;
        };
        let ours = codec.encode(&value).unwrap();
        let order_is_javas = !["hashtable-3", "concurrenthashmap-3", "map-of-3"]
            .iter()
            .any(|k| label.ends_with(k));
        if order_is_javas {
            assert_eq!(to_hex(&ours), to_hex(java_bytes), "{label}");
        } else {
            let back = codec.decode(&ours).unwrap();
            assert_eq!(canonical(back), canonical(value), "{label}");
        }
        file.push_str(&format!("{label} {}\n", to_hex(&ours)));
    }
    let path = dir().join("delayq.hex");
    if std::env::var_os("DELAYQ_WRITE_FIXTURES").is_some() {
        std::fs::write(&path, &file).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == file,
        "{} is not what delayq writes now: rerun with DELAYQ_WRITE_FIXTURES=1, then have Java \
         check it with tests/fixtures/kryo/gen/gen.sh",
        path.display()
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.ImmutableCollections$Map1")]
struct Map1<K: Ord, V>(BTreeMap<K, V>);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.ImmutableCollections$MapN")]
struct MapN<K: Ord, V>(BTreeMap<K, V>);

/// `MapHolder` as a Rust struct, with `Map.of` maps in its typed fields.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.MapHolder")]
struct Holder<L, S, O> {
    any: JavaValue,
    #[serde(rename = "longString")]
    long_string: L,
    #[serde(rename = "stringLong")]
    string_long: S,
    #[serde(rename = "stringObject")]
    string_object: O,
}

fn java_bytes(label: &str) -> Vec<u8> {
    lines("redisson-4.7.0.hex")
        .into_iter()
        .find(|(l, _)| l == label)
        .unwrap()
        .1
}

/// Typed structs read Java's `Map.of` fields, and write them as Java does: no null marker
/// before a key or value whose class the field's type arguments fix.
#[test]
fn typed_map_of_fields_match_redisson() {
    type Many = Holder<MapN<i64, String>, MapN<String, i64>, MapN<String, JavaValue>>;
    let codec = Kryo5Codec::<Many>::new();
    let bytes = java_bytes("holder-map-of-3");
    let got = codec.decode(&bytes).unwrap();
    let want = Holder {
        any: expected("root-map-of-3").unwrap(),
        long_string: MapN(BTreeMap::from([
            (1, "a".into()),
            (-2, "b".into()),
            (300, "c".into()),
        ])),
        string_long: MapN(BTreeMap::from([
            ("a".into(), 1),
            ("b".into(), -2),
            ("c".into(), 300),
        ])),
        string_object: MapN(BTreeMap::from([
            ("a".into(), JavaValue::Long(1)),
            ("b".into(), "x".into()),
            ("c".into(), JavaValue::Bool(true)),
        ])),
    };
    assert_eq!(canonical_holder(got), canonical_holder(want));

    type One = Holder<Map1<i64, String>, Map1<String, i64>, Map1<String, JavaValue>>;
    let one = Kryo5Codec::<One>::new();
    let bytes = java_bytes("holder-map-of-1");
    let value = one.decode(&bytes).unwrap();
    assert_eq!(value.long_string, Map1(BTreeMap::from([(1, "a".into())])));
    assert_eq!(one.encode(&value).unwrap(), bytes);
}

fn canonical_holder<L, S, O>(mut h: Holder<L, S, O>) -> Holder<L, S, O> {
    h.any = canonical(h.any);
    h
}
