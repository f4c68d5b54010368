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
//!
//! Codec names accepted by `open`: `string`, `long`, `bytes`, `json`, `typed_json`, `msgpack`
//! (the last three with `kind` = string, long, map, list or order), `kryo5` (the same kinds plus
//! bytes), and `raw`. `raw` is delayq's
//! `ByteArrayCodec` carrying bytes that another (Java) codec produced: it exercises the queue
//! protocol for codecs delayq does not implement yet, without claiming the codec itself works.

use crate::{open_with, OpenOpts, Ops, Peer};
use delayq::codec::kryo::JavaBytes;
use delayq::codec::{
    ByteArrayCodec, Codec, JavaHashMap, JsonJacksonCodec, Kryo5Codec, LongCodec,
    MsgPackJacksonCodec, StringCodec, TypedJsonJacksonCodec,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::marker::PhantomData;
use std::sync::Arc;

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

/// `bytes` values through `ByteArrayCodec` (also used for `raw`).
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
    "raw",
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
pub(crate) struct SerdeKind<C>(PhantomData<fn() -> C>);

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

/// Opens a queue with a serde codec family (`$codec<T>`) for the kind named in `opts`.
macro_rules! open_serde {
    ($client:expr, $opts:expr, $codec:ident) => {
        match $opts.kind {
            "string" => open_with($client, SerdeKind::<$codec<String>>(PhantomData), $opts).await,
            "long" => open_with($client, SerdeKind::<$codec<i64>>(PhantomData), $opts).await,
            "map" => {
                open_with(
                    $client,
                    SerdeKind::<$codec<JavaHashMap<String>>>(PhantomData),
                    $opts,
                )
                .await
            }
            "list" => {
                open_with(
                    $client,
                    SerdeKind::<$codec<Vec<String>>>(PhantomData),
                    $opts,
                )
                .await
            }
            "order" => open_with($client, SerdeKind::<$codec<Order>>(PhantomData), $opts).await,
            other => Err(format!(
                "kind {other:?} is not supported with {}",
                $opts.codec
            )),
        }
    };
}

/// Opens a queue with the codec named in `opts`.
pub(crate) async fn open(peer: &Peer, opts: &OpenOpts<'_>) -> Result<Arc<dyn Ops>, String> {
    let c = &peer.client;
    match opts.codec {
        "string" => open_with(c, StringKind, opts).await,
        "long" => open_with(c, LongKind, opts).await,
        "bytes" | "raw" => open_with(c, BytesKind, opts).await,
        "json" => open_serde!(c, opts, JsonJacksonCodec),
        "typed_json" => open_serde!(c, opts, TypedJsonJacksonCodec),
        "msgpack" => open_serde!(c, opts, MsgPackJacksonCodec),
        // Java `byte[]` is a root value only Kryo can carry typed among the serde codecs here.
        "kryo5" if opts.kind == "bytes" => {
            open_with(c, SerdeKind::<Kryo5Codec<JavaBytes>>(PhantomData), opts).await
        }
        "kryo5" => open_serde!(c, opts, Kryo5Codec),
        other => Err(format!(
            "codec {other:?} (kind {:?}) is not supported by this peer",
            opts.kind
        )),
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
