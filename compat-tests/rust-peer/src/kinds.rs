//! Neutral JSON values <-> the Rust values of each delayq codec.
//!
//! Neutral forms (the Java harness writes the same ones):
//!
//! | kind | JSON |
//! |---|---|
//! | string | `{"kind":"string","v":"abc"}` |
//! | long | `{"kind":"long","v":42}` |
//! | bytes | `{"kind":"bytes","hex":"010203"}` |
//! | map | `{"kind":"map","v":{"a":"x","b":"y"}}` (Java `HashMap<String, String>`) |
//! | list | `{"kind":"list","v":["a","b"]}` (Java `ArrayList<String>`) |
//! | order | `{"kind":"order","id":1,"sku":"x"}` (Java `com.example.Order`) |
//! | decimal | `{"kind":"decimal","v":"3.25"}` (Java `BigDecimal`, its `toString()`) |
//! | event | `{"kind":"event","i":1}`: `com.example.OrderEvent.of(1)`, built on both sides |
//! | payload | `{"kind":"payload","i":1}`: `com.example.Payload.of(1)` (kryo5 only) |
//!
//! Codec names accepted by `open` (`queue.rs`): `string`, `long`, `bytes`, `json`, `typed_json`, `msgpack`
//! (the last three with `kind` = string, long, map, list or order) and `kryo5` (the same kinds
//! plus bytes, a Java `byte[]`). Every one is delayq's own codec: the suite has no fallback that
//! carries another codec's bytes, so a codec missing here fails its cells.
//!
//! Kryo maps go through [`KryoMap`], which keeps its entries in the order it is given: the peer
//! hands `Kryo5Codec` a map's entries sorted by key (as a Rust `BTreeMap` iterates) and the
//! codec's `java_hash_order` option must write them in Java `HashMap` order, or the bytes on
//! Redis differ from Java's.

use crate::java_payloads::{OrderEvent, Payload, RECORDS};
use delayq::codec::java::BigDecimal;
use delayq::codec::kryo::JavaBytes;
use delayq::codec::{ByteArrayCodec, Codec, JavaHashMap, Kryo5Codec, LongCodec, StringCodec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::marker::PhantomData;

/// How one codec's values map to and from neutral JSON.
pub(crate) trait Kind: Send + Sync + 'static {
    /// The delayq codec.
    type C: Codec;
    /// A fresh codec instance.
    fn codec(&self) -> Self::C;
    /// Neutral JSON to a Rust value.
    fn parse(&self, v: &Value) -> Result<<Self::C as Codec>::Value, String>;
    /// A Rust value to neutral JSON.
    fn show(&self, v: &<Self::C as Codec>::Value) -> Result<Value, String>;
}

fn expect_kind(v: &Value, kind: &str) -> Result<(), String> {
    match v.get("kind").and_then(Value::as_str) {
        Some(k) if k == kind => Ok(()),
        _ => Err(format!("expected a {kind} value, got {v}")),
    }
}

/// `string` values through `StringCodec`.
pub(crate) struct StringKind;

impl Kind for StringKind {
    type C = StringCodec;
    fn codec(&self) -> StringCodec {
        StringCodec
    }
    fn parse(&self, v: &Value) -> Result<String, String> {
        expect_kind(v, "string")?;
        v.get("v")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("bad string value {v}"))
    }
    fn show(&self, v: &String) -> Result<Value, String> {
        Ok(json!({ "kind": "string", "v": v }))
    }
}

/// `long` values through `LongCodec`.
pub(crate) struct LongKind;

impl Kind for LongKind {
    type C = LongCodec;
    fn codec(&self) -> LongCodec {
        LongCodec
    }
    fn parse(&self, v: &Value) -> Result<i64, String> {
        expect_kind(v, "long")?;
        v.get("v")
            .and_then(Value::as_i64)
            .ok_or_else(|| format!("bad long value {v}"))
    }
    fn show(&self, v: &i64) -> Result<Value, String> {
        Ok(json!({ "kind": "long", "v": v }))
    }
}

/// `bytes` values through `ByteArrayCodec`.
pub(crate) struct BytesKind;

impl Kind for BytesKind {
    type C = ByteArrayCodec;
    fn codec(&self) -> ByteArrayCodec {
        ByteArrayCodec
    }
    fn parse(&self, v: &Value) -> Result<Vec<u8>, String> {
        expect_kind(v, "bytes")?;
        let h = v
            .get("hex")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("bad bytes value {v}"))?;
        hex::decode(h)
    }
    fn show(&self, v: &Vec<u8>) -> Result<Value, String> {
        Ok(json!({ "kind": "bytes", "hex": hex::encode(v) }))
    }
}

/// The codecs `open` accepts (the `caps` command reports them).
pub(crate) const CODECS: &[&str] = &[
    "string",
    "long",
    "bytes",
    "json",
    "typed_json",
    "msgpack",
    "kryo5",
];

/// The suite's POJO; Java: `com.example.Order { long id; String sku; }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.Order")]
pub(crate) struct Order {
    id: i64,
    sku: String,
}

/// A Rust value type with a neutral JSON form.
pub(crate) trait Neutral: Sized + Send + Sync + 'static {
    fn parse(v: &Value) -> Result<Self, String>;
    fn show(&self) -> Value;
}

impl Neutral for String {
    fn parse(v: &Value) -> Result<Self, String> {
        StringKind.parse(v)
    }
    fn show(&self) -> Value {
        json!({ "kind": "string", "v": self })
    }
}

impl Neutral for i64 {
    fn parse(v: &Value) -> Result<Self, String> {
        LongKind.parse(v)
    }
    fn show(&self) -> Value {
        json!({ "kind": "long", "v": self })
    }
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array()?
        .iter()
        .map(|s| s.as_str().map(str::to_owned))
        .collect()
}

impl Neutral for Vec<String> {
    fn parse(v: &Value) -> Result<Self, String> {
        expect_kind(v, "list")?;
        strings(v.get("v")).ok_or_else(|| format!("bad list value {v}"))
    }
    fn show(&self) -> Value {
        json!({ "kind": "list", "v": self })
    }
}

impl Neutral for JavaHashMap<String> {
    fn parse(v: &Value) -> Result<Self, String> {
        expect_kind(v, "map")?;
        let obj = v
            .get("v")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("bad map value {v}"))?;
        let mut m = JavaHashMap::new();
        for (k, val) in obj {
            let s = val
                .as_str()
                .ok_or_else(|| format!("map value {val} is not a string"))?;
            m.insert(k.as_str(), s.to_owned());
        }
        Ok(m)
    }
    fn show(&self) -> Value {
        // Java's side writes its HashMap in HashMap order; so does this.
        let mut obj = serde_json::Map::new();
        for (k, v) in self.iter_java_order() {
            obj.insert(k.to_owned(), json!(v));
        }
        json!({ "kind": "map", "v": obj })
    }
}

impl Neutral for JavaBytes {
    fn parse(v: &Value) -> Result<Self, String> {
        BytesKind.parse(v).map(JavaBytes)
    }
    fn show(&self) -> Value {
        json!({ "kind": "bytes", "hex": hex::encode(&self.0) })
    }
}

impl Neutral for Order {
    fn parse(v: &Value) -> Result<Self, String> {
        expect_kind(v, "order")?;
        match (
            v.get("id").and_then(Value::as_i64),
            v.get("sku").and_then(Value::as_str),
        ) {
            (Some(id), Some(sku)) => Ok(Order {
                id,
                sku: sku.to_owned(),
            }),
            _ => Err(format!("bad order value {v}")),
        }
    }
    fn show(&self) -> Value {
        json!({ "kind": "order", "id": self.id, "sku": self.sku })
    }
}

/// Any serde codec `C` (the Jackson codecs) over a [`Neutral`] value type.
pub(crate) struct SerdeKind<C>(pub(crate) PhantomData<fn() -> C>);

impl<C> Kind for SerdeKind<C>
where
    C: Codec + Default,
    C::Value: Neutral,
{
    type C = C;
    fn codec(&self) -> C {
        C::default()
    }
    fn parse(&self, v: &Value) -> Result<C::Value, String> {
        <C::Value as Neutral>::parse(v)
    }
    fn show(&self, v: &C::Value) -> Result<Value, String> {
        Ok(v.show())
    }
}

impl Neutral for BigDecimal {
    fn parse(v: &Value) -> Result<Self, String> {
        expect_kind(v, "decimal")?;
        v.get("v")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("bad decimal value {v}"))?
            .parse()
            .map_err(|e| format!("{e}"))
    }
    fn show(&self) -> Value {
        json!({ "kind": "decimal", "v": self.to_string() })
    }
}

fn index_of(v: &Value, kind: &str) -> Result<i64, String> {
    expect_kind(v, kind)?;
    v.get("i")
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("bad {kind} value {v}"))
}

/// `OrderEvent.of(i)` on both sides: the neutral form is `{"kind":"event","i":i}`, and a value
/// read back shows its `i` only when it equals `of(i)` exactly.
impl Neutral for OrderEvent {
    fn parse(v: &Value) -> Result<Self, String> {
        index_of(v, "event").map(OrderEvent::of)
    }
    fn show(&self) -> Value {
        match self.index() {
            Some(i) => json!({ "kind": "event", "i": i }),
            None => json!({ "kind": "event", "mismatch": format!("{self:?}") }),
        }
    }
}

/// `Payload.of(i)` on both sides, as for [`OrderEvent`].
impl Neutral for Payload {
    fn parse(v: &Value) -> Result<Self, String> {
        index_of(v, "payload").map(Payload::of)
    }
    fn show(&self) -> Value {
        match self.index() {
            Some(i) => json!({ "kind": "payload", "i": i }),
            None => json!({ "kind": "payload", "mismatch": format!("{self:?}") }),
        }
    }
}

/// A Java `HashMap<String, String>` for `Kryo5Codec`: entries in the order given, serialized as
/// a map in that order and read back in the order of the bytes (Java's iteration order).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KryoMap(Vec<(String, String)>);

impl Serialize for KryoMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for KryoMap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = KryoMap;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of strings to strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<KryoMap, A::Error> {
                let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = a.next_entry::<String, String>()? {
                    out.push(entry);
                }
                Ok(KryoMap(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

impl Neutral for KryoMap {
    /// The entries sorted by key: Java's order must come from the codec, not from the JSON.
    fn parse(v: &Value) -> Result<Self, String> {
        expect_kind(v, "map")?;
        let obj = v
            .get("v")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("bad map value {v}"))?;
        let mut entries = Vec::with_capacity(obj.len());
        for (k, val) in obj {
            let s = val
                .as_str()
                .ok_or_else(|| format!("map value {val} is not a string"))?;
            entries.push((k.clone(), s.to_owned()));
        }
        entries.sort();
        Ok(KryoMap(entries))
    }
    /// In the order held: for a decoded map, the order Java wrote (its `HashMap` order).
    fn show(&self) -> Value {
        let mut obj = serde_json::Map::new();
        for (k, v) in &self.0 {
            obj.insert(k.clone(), json!(v));
        }
        json!({ "kind": "map", "v": obj })
    }
}

/// `Kryo5Codec<T>` with `java_hash_order` on, over a [`Neutral`] value type.
pub(crate) struct KryoKind<T>(pub(crate) PhantomData<fn() -> T>);

impl<T> Kind for KryoKind<T>
where
    T: Neutral + Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    type C = Kryo5Codec<T>;
    fn codec(&self) -> Kryo5Codec<T> {
        RECORDS
            .iter()
            .fold(Kryo5Codec::new().java_hash_order(true), |c, r| c.record(*r))
    }
    fn parse(&self, v: &Value) -> Result<T, String> {
        T::parse(v)
    }
    fn show(&self, v: &T) -> Result<Value, String> {
        Ok(v.show())
    }
}

/// Lower-case hex, written out by hand (no extra dependency).
pub(crate) mod hex {
    /// Bytes to lower-case hex.
    pub(crate) fn encode(bytes: &[u8]) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            s.push(DIGITS[(b >> 4) as usize] as char);
            s.push(DIGITS[(b & 0x0f) as usize] as char);
        }
        s
    }

    /// Hex (either case) to bytes.
    pub(crate) fn decode(text: &str) -> Result<Vec<u8>, String> {
        let digits = text.as_bytes();
        if digits.len() % 2 != 0 {
            return Err(format!("odd-length hex {text:?}"));
        }
        let nibble = |c: u8| -> Result<u8, String> {
            match c {
                b'0'..=b'9' => Ok(c - b'0'),
                b'a'..=b'f' => Ok(c - b'a' + 10),
                b'A'..=b'F' => Ok(c - b'A' + 10),
                _ => Err(format!("bad hex digit in {text:?}")),
            }
        };
        digits
            .chunks(2)
            .map(|p| Ok((nibble(p[0])? << 4) | nibble(p[1])?))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, &str)]) -> KryoMap {
        KryoMap(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    /// The suite's map keys `a`, `b`, `Z` iterate `a, b, Z` in a Java `HashMap` (buckets 1, 2,
    /// 10 of 16) but sort `Z, a, b`: the peer's sorted entries reach Java's bytes only through
    /// `java_hash_order`, and decoding keeps Java's order.
    #[test]
    fn kryo_map_gets_java_order_from_the_codec() {
        let neutral = json!({"kind": "map", "v": {"a": "x1", "b": "y1", "Z": "z1"}});
        let parsed = KryoMap::parse(&neutral).unwrap();
        assert_eq!(parsed, map(&[("Z", "z1"), ("a", "x1"), ("b", "y1")]));

        let java_order = map(&[("a", "x1"), ("b", "y1"), ("Z", "z1")]);
        let plain = Kryo5Codec::<KryoMap>::new();
        let java_bytes = plain.encode(&java_order).unwrap();
        assert_ne!(plain.encode(&parsed).unwrap(), java_bytes);

        let kind = KryoKind::<KryoMap>(PhantomData);
        let codec = kind.codec();
        assert_eq!(codec.encode(&parsed).unwrap(), java_bytes);
        let back = codec.decode(&java_bytes).unwrap();
        assert_eq!(back, java_order);
        assert_eq!(
            kind.show(&back).unwrap().to_string(),
            r#"{"kind":"map","v":{"a":"x1","b":"y1","Z":"z1"}}"#
        );
    }
}
