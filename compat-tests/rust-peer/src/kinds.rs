//! Neutral JSON values <-> the Rust values of each delayq codec.
//!
//! Neutral forms (the Java harness writes the same ones):
//!
//! | kind | JSON |
//! |---|---|
//! | string | `{"kind":"string","v":"abc"}` |
//! | long | `{"kind":"long","v":42}` |
//! | bytes | `{"kind":"bytes","hex":"010203"}` |
//!
//! Codec names accepted by `open`: `string`, `long`, `bytes`, and `raw`. `raw` is delayq's
//! `ByteArrayCodec` carrying bytes that another (Java) codec produced: it exercises the queue
//! protocol for codecs delayq does not implement yet, without claiming the codec itself works.

use crate::{open_with, OpenOpts, Ops, Peer};
use delayq::codec::{ByteArrayCodec, Codec, LongCodec, StringCodec};
use serde_json::{json, Value};
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
pub(crate) const CODECS: &[&str] = &["string", "long", "bytes", "raw"];

/// Opens a queue with the codec named in `opts`.
pub(crate) async fn open(peer: &Peer, opts: &OpenOpts<'_>) -> Result<Arc<dyn Ops>, String> {
    let c = &peer.client;
    match opts.codec {
        "string" => open_with(c, StringKind, opts).await,
        "long" => open_with(c, LongKind, opts).await,
        "bytes" | "raw" => open_with(c, BytesKind, opts).await,
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
