//! The Jackson codecs against the exact bytes in `codecs.md` §3.3–3.5, plus round trips,
//! decoding of every typed form, clear errors, and never panicking on bad input.
#![cfg(feature = "msgpack")]

use delayq_codec::{
    Codec, JacksonError, JavaHashMap, JsonJacksonCodec, MsgPackJacksonCodec, TypedJsonJacksonCodec,
};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::json;
use std::collections::BTreeMap;

/// `com.example.Order { long id = 1; String sku = "x"; }`; fields declared out of order on
/// purpose, Jackson sorts them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Order")]
struct Order {
    sku: String,
    id: i64,
}

fn order() -> Order {
    Order {
        sku: "x".into(),
        id: 1,
    }
}

/// A Java `byte[]`: serializes through `serialize_bytes` (what `serde_bytes` does).
#[derive(Debug, Clone, PartialEq)]
struct ByteArray(Vec<u8>);

impl Serialize for ByteArray {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for ByteArray {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ByteArray;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<ByteArray, E> {
                Ok(ByteArray(v.to_vec()))
            }
        }
        d.deserialize_byte_buf(V)
    }
}

fn json<T>(value: &T) -> String
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    String::from_utf8(JsonJacksonCodec::<T>::new().encode(value).unwrap()).unwrap()
}

fn typed_json<T>(value: &T) -> String
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    String::from_utf8(TypedJsonJacksonCodec::<T>::new().encode(value).unwrap()).unwrap()
}

fn msgpack_hex<T>(value: &T) -> String
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    hex(&MsgPackJacksonCodec::<T>::new().encode(value).unwrap())
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn unhex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn kv() -> BTreeMap<String, String> {
    BTreeMap::from([("k".to_string(), "v".to_string())])
}

// §3.1 / §3.3: JsonJacksonCodec.

#[test]
fn json_jackson_spec_table() {
    assert_eq!(json(&"hello".to_string()), r#""hello""#);
    assert_eq!(json(&42i64), r#"["java.lang.Long",42]"#);
    assert_eq!(json(&42i32), "42");
    assert_eq!(json(&ByteArray(vec![1, 2, 3])), r#""AQID""#);
    assert_eq!(json(&kv()), r#"{"@class":"java.util.HashMap","k":"v"}"#);
    assert_eq!(
        json(&vec!["a".to_string()]),
        r#"["java.util.ArrayList",["a"]]"#
    );
    assert_eq!(
        json(&order()),
        r#"{"@class":"com.example.Order","id":1,"sku":"x"}"#
    );
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Boxed")]
struct BoxedId {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    id: Option<i64>,
    note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.LinkedHashMap")]
struct Linked(BTreeMap<String, i64>);

#[test]
fn json_jackson_spec_examples() {
    // A `Long id` field is typed; a null field is left out.
    let boxed = BoxedId {
        id: Some(1),
        note: None,
    };
    assert_eq!(
        json(&boxed),
        r#"{"@class":"com.example.Boxed","id":["java.lang.Long",1]}"#
    );
    // List<Object>["a", 1L].
    assert_eq!(
        json(&json!(["a", 1])),
        r#"["java.util.ArrayList",["a",["java.lang.Long",1]]]"#
    );
    // LinkedHashMap{k=1L}.
    let linked = Linked(BTreeMap::from([("k".to_string(), 1)]));
    assert_eq!(
        json(&linked),
        r#"{"@class":"java.util.LinkedHashMap","k":["java.lang.Long",1]}"#
    );
    // A null list element.
    assert_eq!(
        json(&vec![None::<String>]),
        r#"["java.util.ArrayList",[null]]"#
    );
    assert_eq!(json(&1.5f64), "1.5");
    assert_eq!(json(&true), "true");
}

// §3.4: TypedJsonJacksonCodec.

#[test]
fn typed_json_spec_table() {
    assert_eq!(typed_json(&"hello".to_string()), r#""hello""#);
    assert_eq!(typed_json(&42i64), "42");
    assert_eq!(typed_json(&42i32), "42");
    assert_eq!(typed_json(&ByteArray(vec![1, 2, 3])), r#""AQID""#);
    assert_eq!(typed_json(&kv()), r#"{"k":"v"}"#);
    assert_eq!(typed_json(&vec!["a".to_string()]), r#"["a"]"#);
    assert_eq!(typed_json(&order()), r#"{"id":1,"sku":"x"}"#);
}

#[test]
fn typed_json_needs_no_class_names_and_decodes_plain_json() {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Plain {
        zeta: u8,
        alpha: Vec<i64>,
        skip: Option<bool>,
    }
    let codec = TypedJsonJacksonCodec::<Plain>::new();
    let v = Plain {
        zeta: 1,
        alpha: vec![2, 3],
        skip: None,
    };
    let bytes = codec.encode(&v).unwrap();
    assert_eq!(bytes, br#"{"alpha":[2,3],"zeta":1}"#);
    assert_eq!(codec.decode(&bytes).unwrap(), v);
    // No unwrapping in TypedJson: a two-string array stays a list.
    let list = TypedJsonJacksonCodec::<Vec<String>>::new();
    assert_eq!(
        list.decode(br#"["java.lang.Long","x"]"#).unwrap(),
        ["java.lang.Long", "x"]
    );
}

// §3.5: MsgPackJacksonCodec.

#[test]
fn msgpack_spec_table() {
    assert_eq!(msgpack_hex(&"hello".to_string()), "a5 68 65 6c 6c 6f");
    assert_eq!(
        msgpack_hex(&42i64),
        "92 ae 6a 61 76 61 2e 6c 61 6e 67 2e 4c 6f 6e 67 2a"
    );
    assert_eq!(msgpack_hex(&42i32), "2a");
    assert_eq!(msgpack_hex(&ByteArray(vec![1, 2, 3])), "c4 03 01 02 03");
    assert_eq!(
        msgpack_hex(&kv()),
        "82 a6 40 63 6c 61 73 73 b1 6a 61 76 61 2e 75 74 69 6c 2e 48 61 73 68 4d 61 70 a1 6b a1 76"
    );
    assert_eq!(
        msgpack_hex(&vec!["a".to_string()]),
        "92 b3 6a 61 76 61 2e 75 74 69 6c 2e 41 72 72 61 79 4c 69 73 74 91 a1 61"
    );
    assert_eq!(
        msgpack_hex(&order()),
        "83 a6 40 63 6c 61 73 73 b1 63 6f 6d 2e 65 78 61 6d 70 6c 65 2e 4f 72 64 65 72 a2 69 64 01 a3 73 6b 75 a1 78"
    );
}

#[test]
fn msgpack_decodes_spec_bytes() {
    let codec = MsgPackJacksonCodec::<Order>::new();
    let bytes = unhex("83 a6 40 63 6c 61 73 73 b1 63 6f 6d 2e 65 78 61 6d 70 6c 65 2e 4f 72 64 65 72 a2 69 64 01 a3 73 6b 75 a1 78");
    assert_eq!(codec.decode(&bytes).unwrap(), order());
    let long = unhex("92 ae 6a 61 76 61 2e 6c 61 6e 67 2e 4c 6f 6e 67 2a");
    assert_eq!(MsgPackJacksonCodec::<i64>::new().decode(&long).unwrap(), 42);
    assert_eq!(
        MsgPackJacksonCodec::<ByteArray>::new()
            .decode(&unhex("c4 03 01 02 03"))
            .unwrap(),
        ByteArray(vec![1, 2, 3])
    );
    let map = unhex(
        "82 a6 40 63 6c 61 73 73 b1 6a 61 76 61 2e 75 74 69 6c 2e 48 61 73 68 4d 61 70 a1 6b a1 76",
    );
    assert_eq!(
        MsgPackJacksonCodec::<BTreeMap<String, String>>::new()
            .decode(&map)
            .unwrap(),
        kv()
    );
    assert_eq!(
        MsgPackJacksonCodec::<serde_json::Value>::new()
            .decode(&map)
            .unwrap(),
        json!({"k": "v"})
    );
}

// Decoding every typed form (§3.3 "How JsonJacksonCodec decodes").

#[test]
fn json_jackson_decodes_typed_forms() {
    let codec = JsonJacksonCodec::<Order>::new();
    assert_eq!(
        codec
            .decode(br#"{"@class":"com.example.Order","id":1,"sku":"x"}"#)
            .unwrap(),
        order()
    );
    // `@class` anywhere, unknown properties ignored, a boxed Long for a long field.
    assert_eq!(
        codec
            .decode(br#"{"sku":"x","extra":[1,2],"@class":"com.example.Order","id":["java.lang.Long",1]}"#)
            .unwrap(),
        order()
    );

    let long = JsonJacksonCodec::<i64>::new();
    assert_eq!(long.decode(br#"["java.lang.Long",42]"#).unwrap(), 42);
    assert_eq!(long.decode(b"42").unwrap(), 42); // an Integer that fits
    assert_eq!(long.decode(br#"["java.lang.Integer",42]"#).unwrap(), 42);
    assert_eq!(
        JsonJacksonCodec::<u64>::new()
            .decode(br#"["java.math.BigInteger",18446744073709551615]"#)
            .unwrap(),
        u64::MAX
    );

    let list = JsonJacksonCodec::<Vec<String>>::new();
    assert_eq!(
        list.decode(br#"["java.util.ArrayList",["a"]]"#).unwrap(),
        ["a"]
    );
    assert_eq!(
        list.decode(br#"["java.util.Arrays$ArrayList",["a.b","c"]]"#)
            .unwrap(),
        ["a.b", "c"]
    );
    // An untyped String[] whose first element looks like a class name stays an array.
    assert_eq!(list.decode(br#"["a.b","c"]"#).unwrap(), ["a.b", "c"]);

    let map = JsonJacksonCodec::<BTreeMap<String, i64>>::new();
    assert_eq!(
        map.decode(br#"{"@class":"java.util.LinkedHashMap","k":["java.lang.Long",1]}"#)
            .unwrap(),
        BTreeMap::from([("k".to_string(), 1)])
    );
    let int_keys = JsonJacksonCodec::<BTreeMap<i64, String>>::new();
    let m = BTreeMap::from([(7, "v".to_string())]);
    let bytes = int_keys.encode(&m).unwrap();
    assert_eq!(bytes, br#"{"@class":"java.util.HashMap","7":"v"}"#);
    assert_eq!(int_keys.decode(&bytes).unwrap(), m);

    let bytes = JsonJacksonCodec::<ByteArray>::new();
    assert_eq!(
        bytes.decode(br#""AQID""#).unwrap(),
        ByteArray(vec![1, 2, 3])
    );
    assert_eq!(
        bytes.decode(br#"["[B","AQID"]"#).unwrap(),
        ByteArray(vec![1, 2, 3])
    );
    assert!(JsonJacksonCodec::<f64>::new()
        .decode(br#""NaN""#)
        .unwrap()
        .is_nan());
    assert_eq!(JsonJacksonCodec::<f64>::new().decode(b"3").unwrap(), 3.0);
    assert_eq!(
        JsonJacksonCodec::<Option<String>>::new()
            .decode(b"null")
            .unwrap(),
        None
    );
}

#[test]
fn json_jackson_decodes_into_generic_values() {
    let value = JsonJacksonCodec::<serde_json::Value>::new();
    assert_eq!(
        value
            .decode(br#"{"@class":"com.example.Unknown","id":["java.lang.Long",1],"tags":["java.util.ArrayList",["a",["java.lang.Long",2]]],"m":{"@class":"java.util.HashMap","k":null}}"#)
            .unwrap(),
        json!({"id": 1, "tags": ["a", 2], "m": {"k": null}})
    );
    assert_eq!(
        value.decode(br#"["java.util.UUID","abc"]"#).unwrap(),
        json!("abc")
    );
    assert_eq!(value.decode(b"1.5").unwrap(), json!(1.5));
}

// Slots: where type information goes.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Slots")]
#[serde(rename_all = "camelCase")]
struct Slots {
    small: i16,
    ratio: f32,
    letter: char,
    scores: Vec<f32>,
    ids: Vec<i64>,
    boxed_short: Option<i16>,
    nested: Option<Box<Slots>>,
    by_name: BTreeMap<String, Order>,
}

#[test]
fn type_info_depends_on_the_slot() {
    let slots = Slots {
        small: 7,
        ratio: 0.5,
        letter: 'c',
        scores: vec![1.5],
        ids: vec![3],
        boxed_short: Some(2),
        nested: None,
        by_name: BTreeMap::from([("o".to_string(), order())]),
    };
    let text = json(&slots);
    assert_eq!(
        text,
        concat!(
            r#"{"@class":"com.example.Slots","boxedShort":2,"#,
            r#""byName":{"@class":"java.util.HashMap","o":{"@class":"com.example.Order","id":1,"sku":"x"}},"#,
            r#""ids":["java.util.ArrayList",[["java.lang.Long",3]]],"letter":"c","ratio":0.5,"#,
            r#""scores":["java.util.ArrayList",[1.5]],"small":7}"#
        )
    );
    assert_eq!(
        JsonJacksonCodec::<Slots>::new()
            .decode(text.as_bytes())
            .unwrap(),
        slots
    );

    // At the root the runtime class decides: final scalars are untyped.
    assert_eq!(json(&7i16), "7");
    assert_eq!(json(&0.5f32), "0.5");
    assert_eq!(json(&'c'), r#""c""#);
    // In Object slots (elements of a root collection) they are typed.
    assert_eq!(
        json(&vec![7i16]),
        r#"["java.util.ArrayList",[["java.lang.Short",7]]]"#
    );
    assert_eq!(
        json(&vec![0.5f32]),
        r#"["java.util.ArrayList",[["java.lang.Float",0.5]]]"#
    );
    assert_eq!(
        json(&vec![ByteArray(vec![1])]),
        r#"["java.util.ArrayList",[["[B","AQ=="]]]"#
    );
    assert_eq!(
        json(&vec![f64::NAN, 2.0]),
        r#"["java.util.ArrayList",[["java.lang.Double","NaN"],2.0]]"#
    );
    assert_eq!(
        JsonJacksonCodec::<Vec<f64>>::new()
            .decode(br#"["java.util.ArrayList",[["java.lang.Double","-Infinity"],2.0]]"#)
            .unwrap(),
        [f64::NEG_INFINITY, 2.0]
    );
    assert_eq!(
        json(&u64::MAX),
        r#"["java.math.BigInteger",18446744073709551615]"#
    );
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Color")]
enum Color {
    #[serde(rename = "RED")]
    Red,
    #[serde(rename = "GREEN")]
    Green,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Shape {
    #[serde(rename = "com.example.Circle")]
    Circle { r: f64 },
    #[serde(rename = "com.example.Square")]
    Square { side: f64, color: Color },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.UUID")]
struct Uuid(String);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "java.util.LinkedList")]
struct LinkedList(Vec<String>);

#[test]
fn enums_and_class_newtypes() {
    assert_eq!(json(&Color::Red), r#""RED""#);
    assert_eq!(
        json(&vec![Color::Red, Color::Green]),
        r#"["java.util.ArrayList",[["com.example.Color","RED"],["com.example.Color","GREEN"]]]"#
    );
    let shapes = vec![
        Shape::Circle { r: 1.0 },
        Shape::Square {
            side: 2.0,
            color: Color::Green,
        },
    ];
    let text = json(&shapes);
    assert_eq!(
        text,
        concat!(
            r#"["java.util.ArrayList",[{"@class":"com.example.Circle","r":1.0},"#,
            r#"{"@class":"com.example.Square","color":"GREEN","side":2.0}]]"#
        )
    );
    assert_eq!(
        JsonJacksonCodec::<Vec<Shape>>::new()
            .decode(text.as_bytes())
            .unwrap(),
        shapes
    );
    assert_eq!(
        JsonJacksonCodec::<Vec<Color>>::new()
            .decode(br#"["java.util.ArrayList",[["com.example.Color","RED"],"GREEN"]]"#)
            .unwrap(),
        [Color::Red, Color::Green]
    );

    let uuid = Uuid("0f8fad5b-d9cb-469f-a165-70867728950e".into());
    assert_eq!(
        json(&uuid),
        r#"["java.util.UUID","0f8fad5b-d9cb-469f-a165-70867728950e"]"#
    );
    assert_eq!(
        typed_json(&uuid),
        r#""0f8fad5b-d9cb-469f-a165-70867728950e""#
    );
    assert_eq!(
        JsonJacksonCodec::<Uuid>::new()
            .decode(json(&uuid).as_bytes())
            .unwrap(),
        uuid
    );
    let list = LinkedList(vec!["a".into()]);
    assert_eq!(json(&list), r#"["java.util.LinkedList",["a"]]"#);
    assert_eq!(
        msgpack_hex(&list),
        hex(&[
            &[0x92, 0xb4][..],
            b"java.util.LinkedList",
            &[0x91, 0xa1, b'a'][..]
        ]
        .concat())
    );
}

#[test]
fn java_hash_map_order_in_codecs() {
    let map: JavaHashMap<String> = [("k", "v".to_string())].into_iter().collect();
    assert_eq!(json(&map), r#"{"@class":"java.util.HashMap","k":"v"}"#);
    // Java: new HashMap<>() then put("b"), put("a"), put("Aa"), put("BB") iterates bucket 0
    // ("Aa" and "BB" both hash to 2112, kept in insertion order), then "a" (97), then "b" (98).
    let map: JavaHashMap<i32> = [("b", 1), ("a", 2), ("Aa", 3), ("BB", 4)]
        .into_iter()
        .collect();
    assert_eq!(typed_json(&map), r#"{"Aa":3,"BB":4,"a":2,"b":1}"#);
    let back = JsonJacksonCodec::<JavaHashMap<i32>>::new()
        .decode(json(&map).as_bytes())
        .unwrap();
    assert_eq!(back.get("BB"), Some(&4));
    assert_eq!(json(&back), json(&map));
}

// Numbers and text.

#[test]
fn number_and_string_formatting() {
    assert_eq!(json(&1.0e20f64), "1.0E20");
    assert_eq!(json(&1.0e-5f64), "1.0E-5");
    assert_eq!(json(&100.0f64), "100.0");
    assert_eq!(json(&-0.0f64), "-0.0");
    assert_eq!(json(&f64::INFINITY), r#""Infinity""#);
    assert_eq!(json(&1.0e10f32), "1.0E10");
    assert_eq!(
        json(&"tab\tquote\" slash/ é \u{1}".to_string()),
        "\"tab\\tquote\\\" slash/ é \\u0001\""
    );
    assert_eq!(msgpack_hex(&1.5f64), "cb 3f f8 00 00 00 00 00 00");
    assert_eq!(msgpack_hex(&1.5f32), "ca 3f c0 00 00");
    assert_eq!(msgpack_hex(&-1i32), "ff");
    assert_eq!(msgpack_hex(&200i32), "cc c8");
    assert_eq!(
        msgpack_hex(&-200i64),
        "92 ae 6a 61 76 61 2e 6c 61 6e 67 2e 4c 6f 6e 67 d1 ff 38"
    );
}

// Errors.

#[test]
fn clear_errors() {
    #[derive(Debug, Serialize, Deserialize)]
    struct NoJavaName {
        id: i64,
    }
    let err = JsonJacksonCodec::<NoJavaName>::new()
        .encode(&NoJavaName { id: 1 })
        .unwrap_err();
    assert!(matches!(
        err,
        JacksonError::MissingClassName {
            rust_name: "NoJavaName"
        }
    ));
    assert!(err.to_string().contains("#[serde(rename"), "{err}");
    assert!(MsgPackJacksonCodec::<NoJavaName>::new()
        .encode(&NoJavaName { id: 1 })
        .is_err());
    assert_eq!(
        TypedJsonJacksonCodec::<NoJavaName>::new()
            .encode(&NoJavaName { id: 1 })
            .unwrap(),
        br#"{"id":1}"#
    );

    let err = JsonJacksonCodec::<Order>::new()
        .decode(br#""hello""#)
        .unwrap_err();
    assert!(err.to_string().contains("invalid type"), "{err}");
    let err = JsonJacksonCodec::<i32>::new()
        .decode(br#"["java.lang.Long",4294967296]"#)
        .unwrap_err();
    assert!(err.to_string().contains("4294967296"), "{err}");
    let err = JsonJacksonCodec::<Order>::new()
        .decode(br#"{"@class":"com.example.Order","id":1}"#)
        .unwrap_err();
    assert!(err.to_string().contains("missing field `sku`"), "{err}");
    let err = JsonJacksonCodec::<String>::new().decode(b"{").unwrap_err();
    assert!(matches!(err, JacksonError::Json(_)), "{err}");
    assert!(std::error::Error::source(&err).is_some());
    let err = JsonJacksonCodec::<ByteArray>::new()
        .decode(br#""not base64!""#)
        .unwrap_err();
    assert!(matches!(err, JacksonError::Base64(_)), "{err}");
    let err = MsgPackJacksonCodec::<String>::new()
        .decode(&[0xa5, b'h'])
        .unwrap_err();
    assert!(err.to_string().contains("unexpected end"), "{err}");
    let err = MsgPackJacksonCodec::<i128>::new()
        .encode(&(i128::from(u64::MAX) + 1))
        .unwrap_err();
    assert!(matches!(err, JacksonError::IntegerTooLarge(_)), "{err}");
    let err = JsonJacksonCodec::<BTreeMap<Vec<u8>, i32>>::new()
        .encode(&BTreeMap::from([(vec![1u8], 1)]))
        .unwrap_err();
    assert!(matches!(err, JacksonError::UnsupportedKey(_)), "{err}");
}

// Properties.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Nested")]
struct Nested {
    name: String,
    count: i32,
    total: i64,
    maybe: Option<i64>,
    tags: Vec<String>,
    children: Vec<Nested>,
    scores: BTreeMap<String, f64>,
}

fn nested() -> impl Strategy<Value = Nested> {
    let leaf = (
        any::<String>(),
        any::<i32>(),
        any::<i64>(),
        any::<Option<i64>>(),
        prop::collection::vec(any::<String>(), 0..3),
        prop::collection::btree_map(any::<String>(), -1.0e300f64..1.0e300, 0..3),
    )
        .prop_map(|(name, count, total, maybe, tags, scores)| Nested {
            name,
            count,
            total,
            maybe,
            tags,
            children: Vec::new(),
            scores,
        });
    leaf.prop_recursive(3, 12, 3, |inner| {
        (inner.clone(), prop::collection::vec(inner, 0..3)).prop_map(|(mut n, children)| {
            n.children = children;
            n
        })
    })
}

fn round_trip<C: Codec>(codec: &C, v: &C::Value) -> C::Value {
    use std::borrow::Borrow;
    let bytes = codec.encode(v.borrow()).unwrap();
    let back = codec.decode(&bytes).unwrap();
    // Canonical: encoding the decoded value gives the same bytes.
    assert_eq!(codec.encode(back.borrow()).unwrap(), bytes);
    back
}

proptest! {
    #[test]
    fn strings_round_trip(s in any::<String>()) {
        prop_assert_eq!(round_trip(&JsonJacksonCodec::<String>::new(), &s), s.clone());
        prop_assert_eq!(round_trip(&TypedJsonJacksonCodec::<String>::new(), &s), s.clone());
        prop_assert_eq!(round_trip(&MsgPackJacksonCodec::<String>::new(), &s), s.clone());
        // The JSON is standard JSON that other parsers read the same way.
        let text = JsonJacksonCodec::<String>::new().encode(&s).unwrap();
        prop_assert_eq!(serde_json::from_slice::<String>(&text).unwrap(), s);
    }

    #[test]
    fn ints_round_trip(a in any::<i64>(), b in any::<i32>(), c in any::<u64>()) {
        prop_assert_eq!(round_trip(&JsonJacksonCodec::<i64>::new(), &a), a);
        prop_assert_eq!(round_trip(&MsgPackJacksonCodec::<i64>::new(), &a), a);
        prop_assert_eq!(round_trip(&TypedJsonJacksonCodec::<i64>::new(), &a), a);
        prop_assert_eq!(round_trip(&JsonJacksonCodec::<i32>::new(), &b), b);
        prop_assert_eq!(round_trip(&MsgPackJacksonCodec::<i32>::new(), &b), b);
        prop_assert_eq!(round_trip(&JsonJacksonCodec::<u64>::new(), &c), c);
        prop_assert_eq!(round_trip(&MsgPackJacksonCodec::<u64>::new(), &c), c);
    }

    #[test]
    fn doubles_round_trip(bits in any::<u64>(), fbits in any::<u32>()) {
        let d = f64::from_bits(bits);
        let f = f32::from_bits(fbits);
        for codec_out in [
            round_trip(&JsonJacksonCodec::<f64>::new(), &d),
            round_trip(&MsgPackJacksonCodec::<f64>::new(), &d),
            round_trip(&TypedJsonJacksonCodec::<f64>::new(), &d),
        ] {
            prop_assert!(codec_out.to_bits() == d.to_bits() || (d.is_nan() && codec_out.is_nan()));
        }
        let back = round_trip(&JsonJacksonCodec::<f32>::new(), &f);
        prop_assert!(back.to_bits() == f.to_bits() || (f.is_nan() && back.is_nan()));
    }

    #[test]
    fn nested_structs_round_trip(n in nested()) {
        prop_assert_eq!(&round_trip(&JsonJacksonCodec::<Nested>::new(), &n), &n);
        prop_assert_eq!(&round_trip(&TypedJsonJacksonCodec::<Nested>::new(), &n), &n);
        prop_assert_eq!(&round_trip(&MsgPackJacksonCodec::<Nested>::new(), &n), &n);
    }

    #[test]
    fn decoding_random_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = JsonJacksonCodec::<serde_json::Value>::new().decode(&bytes);
        let _ = JsonJacksonCodec::<Nested>::new().decode(&bytes);
        let _ = TypedJsonJacksonCodec::<serde_json::Value>::new().decode(&bytes);
        let _ = MsgPackJacksonCodec::<serde_json::Value>::new().decode(&bytes);
        let _ = MsgPackJacksonCodec::<Nested>::new().decode(&bytes);
        let _ = MsgPackJacksonCodec::<Vec<Shape>>::new().decode(&bytes);
    }

    #[test]
    fn decoding_mutated_valid_bytes_never_panics(
        n in nested(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        for mut bytes in [
            JsonJacksonCodec::<Nested>::new().encode(&n).unwrap(),
            MsgPackJacksonCodec::<Nested>::new().encode(&n).unwrap(),
        ] {
            for (i, b) in &flips {
                let i = i.index(bytes.len());
                bytes[i] = *b;
            }
            let _ = JsonJacksonCodec::<Nested>::new().decode(&bytes);
            let _ = JsonJacksonCodec::<serde_json::Value>::new().decode(&bytes);
            let _ = MsgPackJacksonCodec::<Nested>::new().decode(&bytes);
            let _ = MsgPackJacksonCodec::<serde_json::Value>::new().decode(&bytes);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep_json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(JsonJacksonCodec::<serde_json::Value>::new()
        .decode(deep_json.as_bytes())
        .is_err());
    let deep_msgpack = vec![0x91u8; 100_000];
    assert!(MsgPackJacksonCodec::<serde_json::Value>::new()
        .decode(&deep_msgpack)
        .is_err());
}

#[test]
fn codecs_are_named_and_debuggable() {
    assert_eq!(JsonJacksonCodec::<Order>::new().name(), "json-jackson");
    assert_eq!(
        TypedJsonJacksonCodec::<Order>::default().name(),
        "typed-json-jackson"
    );
    assert_eq!(
        MsgPackJacksonCodec::<Order>::new().name(),
        "msgpack-jackson"
    );
    fn clone_default_debug<T: Clone + Default + std::fmt::Debug>() -> String {
        format!("{:?}", T::default().clone())
    }
    assert!(clone_default_debug::<JsonJacksonCodec<Order>>().contains("Order"));
    assert!(clone_default_debug::<MsgPackJacksonCodec<Vec<Order>>>().contains("Vec"));
}
