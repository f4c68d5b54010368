//! Command-line values: text in, bytes on Redis, text out; `detect.rs`: `--codec auto`.

mod detect;

use delayq::codec::kryo::{JavaValue, Kryo5Codec};
use delayq::codec::{Codec, LongCodec};
use std::fmt;

/// Which Redisson codec's bytes the command line reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CodecName {
    /// StringCodec: the text as UTF-8.
    String,
    /// LongCodec: a decimal integer.
    Long,
    /// ByteArrayCodec: hex on the command line.
    Bytes,
    /// JsonJacksonCodec: JSON text; `--java-class` adds `@class` to an object.
    Json,
    /// TypedJsonJacksonCodec: plain JSON text.
    TypedJson,
    /// MsgPackJacksonCodec: JSON text on the command line, MessagePack on Redis.
    Msgpack,
    /// Kryo5Codec (Redisson's default codec): the JSON form of a Java value on the command line
    /// (`"text"` for a String, `42` for a Long, `{"bigDecimal":"12.50"}`, `{"list":[..]}`, …;
    /// see delayq's `codec::kryo::json_form`). POJOs need their fields' types spelled out.
    Kryo,
    /// Reads only: each value's codec told from its bytes (Kryo5, Jackson JSON, MessagePack, a
    /// Long, UTF-8 text, else hex), shown with the Java class the bytes name as
    /// `[CODEC CLASS] VALUE`. Writing needs a named codec (`--codec` or `--codec-for`).
    #[value(alias = "detect")]
    Auto,
}

/// A value decoded for display: its text, the codec that read it (the one chosen, or the one
/// `auto` recognised; `hex` when none did) and the Java class its bytes name, if they name one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub(crate) codec: &'static str,
    pub(crate) class: Option<String>,
    pub(crate) text: String,
}

impl Decoded {
    /// The text `--codec auto` prints: `[CODEC CLASS] VALUE` (`[CODEC] VALUE` with no class).
    fn labelled(&self) -> String {
        match &self.class {
            Some(class) => format!("[{} {class}] {}", self.codec, self.text),
            None => format!("[{}] {}", self.codec, self.text),
        }
    }
}

/// A codec whose values are command-line text.
#[derive(Debug, Clone)]
pub(crate) struct TextCodec {
    name: CodecName,
    java_class: Option<String>,
}

/// A value that does not fit the chosen codec.
#[derive(Debug)]
pub(crate) struct TextCodecError(String);

impl fmt::Display for TextCodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TextCodecError {}

fn fail(message: impl Into<String>) -> TextCodecError {
    TextCodecError(message.into())
}

impl TextCodec {
    pub(crate) fn new(name: CodecName, java_class: Option<String>) -> Result<Self, String> {
        if java_class.is_some() && !Self::takes_java_class(name) {
            return Err("--java-class goes with --codec json or msgpack".into());
        }
        Ok(TextCodec { name, java_class })
    }

    /// Parses JSON text and, with `--java-class`, types an object the way JsonJacksonCodec
    /// does: `@class` first, then the properties sorted by name.
    fn typed_json(&self, text: &str) -> Result<serde_json::Value, TextCodecError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| fail(format!("not JSON: {e}")))?;
        let Some(class) = &self.java_class else {
            return Ok(value);
        };
        let serde_json::Value::Object(fields) = value else {
            return Err(fail("--java-class needs a JSON object value"));
        };
        let mut sorted: Vec<(String, serde_json::Value)> =
            fields.into_iter().filter(|(k, _)| k != "@class").collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut typed = serde_json::Map::new();
        typed.insert("@class".into(), class.clone().into());
        typed.extend(sorted);
        Ok(serde_json::Value::Object(typed))
    }
}

fn decode_hex(text: &str) -> Result<Vec<u8>, TextCodecError> {
    let text = text.trim_start_matches("0x");
    if !text.len().is_multiple_of(2) {
        return Err(fail("hex needs an even number of digits"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&text[i..i + 2], 16)
                .map_err(|_| fail(format!("not hex: {:?}", &text[i..i + 2])))
        })
        .collect()
}

/// `bytes` as lower-case hex, two digits a byte: how the CLI and the dashboard show bytes that
/// are no text.
pub(crate) fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Codec for TextCodec {
    type Value = String;
    type Borrowed = str;
    type Error = TextCodecError;

    fn name(&self) -> &'static str {
        match self.name {
            CodecName::String => "string",
            CodecName::Long => "long",
            CodecName::Bytes => "bytes",
            CodecName::Json => "json",
            CodecName::TypedJson => "typed-json",
            CodecName::Msgpack => "msgpack",
            CodecName::Kryo => "kryo",
            CodecName::Auto => "auto",
        }
    }

    fn encode(&self, text: &str) -> Result<Vec<u8>, TextCodecError> {
        match self.name {
            CodecName::Auto => Err(fail(AUTO_WRITES)),
            CodecName::String => Ok(text.as_bytes().to_vec()),
            CodecName::Long => {
                let n: i64 = text
                    .parse()
                    .map_err(|_| fail(format!("not a Java long: {text:?}")))?;
                LongCodec.encode(&n).map_err(|e| fail(e.to_string()))
            }
            CodecName::Bytes => decode_hex(text),
            CodecName::Json | CodecName::TypedJson => {
                let value = self.typed_json(text)?;
                serde_json::to_vec(&value).map_err(|e| fail(e.to_string()))
            }
            CodecName::Msgpack => {
                let value = self.typed_json(text)?;
                rmp_serde::to_vec(&value).map_err(|e| fail(e.to_string()))
            }
            CodecName::Kryo => {
                let json: serde_json::Value =
                    serde_json::from_str(text).map_err(|e| fail(format!("not JSON: {e}")))?;
                let value = JavaValue::from_json(&json).map_err(|e| fail(e.to_string()))?;
                kryo_codec()
                    .encode_java(&value)
                    .map_err(|e| fail(e.to_string()))
            }
        }
    }

    fn decode(&self, bytes: &[u8]) -> Result<String, TextCodecError> {
        let decoded = self.describe(bytes)?;
        Ok(match self.name {
            CodecName::Auto => decoded.labelled(),
            _ => decoded.text,
        })
    }
}

/// Why `--codec auto` writes nothing.
pub(crate) const AUTO_WRITES: &str = "--codec auto only reads (it tells a value's codec from its \
     bytes, and a new value has none yet): name the queue's codec with --codec or --codec-for \
     to write";

impl TextCodec {
    /// A value's text with the codec that read it and the Java class its bytes name.
    pub(crate) fn describe(&self, bytes: &[u8]) -> Result<Decoded, TextCodecError> {
        let utf8 = || String::from_utf8(bytes.to_vec()).map_err(|e| fail(e.to_string()));
        let (text, class) = match self.name {
            CodecName::Auto => return Ok(detect::detect(bytes)),
            CodecName::String => (utf8()?, None),
            CodecName::Json | CodecName::TypedJson => {
                let text = utf8()?;
                let class = jackson_class(&text);
                (text, class)
            }
            CodecName::Long => {
                let n = LongCodec.decode(bytes).map_err(|e| fail(e.to_string()))?;
                (n.to_string(), None)
            }
            CodecName::Bytes => (encode_hex(bytes), None),
            CodecName::Msgpack => {
                let value = msgpack_value(bytes)?;
                let class = value["@class"].as_str().map(str::to_owned);
                (value.to_string(), class)
            }
            CodecName::Kryo => {
                let value = kryo_codec()
                    .decode_java(bytes)
                    .map_err(|e| fail(e.to_string()))?;
                let class = (value != JavaValue::Null).then(|| value.java_type_name());
                (value.to_json().to_string(), class)
            }
        };
        Ok(Decoded {
            codec: self.name(),
            class,
            text,
        })
    }
}

/// How JsonJacksonCodec starts an object it types: `@class` is its first property.
const CLASS_FIRST: &str = r#"{"@class":""#;

/// The class JsonJacksonCodec wrote as a JSON object's first property, `@class`.
fn jackson_class(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix(CLASS_FIRST)?;
    rest.split_once('"').map(|(class, _)| class.to_owned())
}

/// One whole MessagePack value (bytes after it are an error: they are no value of this codec).
fn msgpack_value(bytes: &[u8]) -> Result<serde_json::Value, TextCodecError> {
    let mut rest = bytes;
    let value: serde_json::Value =
        rmp_serde::from_read(&mut rest).map_err(|e| fail(format!("not MessagePack: {e}")))?;
    if !rest.is_empty() {
        return Err(fail(format!(
            "not MessagePack: {} bytes after the value",
            rest.len()
        )));
    }
    Ok(value)
}

/// The Kryo codec of the command line: dynamic values, maps and sets in Java's `HashMap`
/// order (as a `new HashMap<>()` filled in the given order iterates).
fn kryo_codec() -> Kryo5Codec<JavaValue> {
    Kryo5Codec::new().java_hash_order(true)
}

impl TextCodec {
    /// The command-line text of a value read from a file or stdin: hex for --codec bytes (the
    /// file holds the raw bytes), the UTF-8 text otherwise.
    pub(crate) fn text_of_input(&self, bytes: Vec<u8>) -> Result<String, TextCodecError> {
        if self.name == CodecName::Bytes {
            return Ok(encode_hex(&bytes));
        }
        String::from_utf8(bytes).map_err(|_| fail("the value is not UTF-8 text"))
    }

    /// A value as a file holds it, the inverse of [`text_of_input`](Self::text_of_input): the
    /// raw bytes (`raw`, as taken) for --codec bytes, the text otherwise.
    pub(crate) fn file_bytes<'a>(&self, text: &'a str, raw: &'a [u8]) -> &'a [u8] {
        if self.name == CodecName::Bytes {
            raw
        } else {
            text.as_bytes()
        }
    }

    /// A value's text as a JSON record's field: `value`, a JSON string for --codec string, a
    /// number for long, the JSON itself for the JSON codecs and kryo; or `value_base64`, the raw
    /// bytes of --codec bytes.
    pub(crate) fn json_field(&self, text: &str) -> (&'static str, serde_json::Value) {
        let parsed = || serde_json::from_str(text).unwrap_or_else(|_| text.into());
        let json = match self.name {
            CodecName::String => text.into(),
            CodecName::Long => text.parse::<i64>().map_or_else(|_| text.into(), Into::into),
            CodecName::Bytes => match decode_hex(text) {
                Ok(bytes) => return ("value_base64", base64_of(&bytes).into()),
                Err(_) => text.into(),
            },
            CodecName::Json | CodecName::TypedJson | CodecName::Msgpack | CodecName::Kryo => {
                parsed()
            }
            CodecName::Auto => text.into(),
        };
        ("value", json)
    }

    /// The fields of a value's JSON record: [`json_field`](Self::json_field), and for
    /// `--codec auto` the value in the form of the codec it recognised, that codec in `codec`
    /// and the Java class in `class`.
    pub(crate) fn json_fields(&self, text: &str) -> Vec<(&'static str, serde_json::Value)> {
        if self.name == CodecName::Auto {
            if let Some((codec, class, value)) = detect::unlabel(text) {
                let read_as = TextCodec {
                    name: detect::codec_named(codec),
                    java_class: None,
                };
                let mut fields = vec![read_as.json_field(value), ("codec", codec.into())];
                fields.extend(class.map(|class| ("class", class.into())));
                return fields;
            }
        }
        vec![self.json_field(text)]
    }

    /// A value's text as [`describe`](Self::describe) gave it, with the codec `read_by` that
    /// read it, as a JSON record's field ([`json_field`](Self::json_field)): for `--codec auto`,
    /// in the form of the codec it recognised.
    pub(crate) fn json_field_read_by(
        &self,
        read_by: &str,
        text: &str,
    ) -> (&'static str, serde_json::Value) {
        match self.name {
            CodecName::Auto => TextCodec {
                name: detect::codec_named(read_by),
                java_class: None,
            }
            .json_field(text),
            _ => self.json_field(text),
        }
    }

    /// Whether this is `--codec auto`, which writes nothing.
    pub(crate) fn reads_only(&self) -> bool {
        self.name == CodecName::Auto
    }

    /// Whether `--java-class` goes with the codec `name`: the JSON object codecs.
    pub(crate) fn takes_java_class(name: CodecName) -> bool {
        matches!(name, CodecName::Json | CodecName::Msgpack)
    }
}

/// Raw bytes in a JSON record (standard base64, padded).
pub(crate) fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_with_java_class_is_typed_and_sorted() {
        let codec = TextCodec::new(CodecName::Json, Some("com.example.Order".into())).unwrap();
        let bytes = codec.encode(r#"{"sku":"x","id":1}"#).unwrap();
        assert_eq!(bytes, br#"{"@class":"com.example.Order","id":1,"sku":"x"}"#);
    }

    #[test]
    fn msgpack_matches_jackson_bytes_for_a_typed_map() {
        let codec = TextCodec::new(CodecName::Msgpack, Some("java.util.HashMap".into())).unwrap();
        let bytes = codec.encode(r#"{"k":"v"}"#).unwrap();
        let expected = "82a640636c617373b16a6176612e7574696c2e486173684d6170a16ba176";
        assert_eq!(encode_hex(&bytes), expected);
        assert_eq!(
            codec.decode(&bytes).unwrap(),
            r#"{"@class":"java.util.HashMap","k":"v"}"#
        );
    }

    #[test]
    fn kryo_values_in_their_json_form() {
        let codec = TextCodec::new(CodecName::Kryo, None).unwrap();
        // Redisson's Kryo5Codec bytes for "hello" and 42L (codecs.md §3.1).
        assert_eq!(
            codec.encode(r#""hello""#).unwrap(),
            [0x03, 0x68, 0x65, 0x6c, 0x6c, 0xef]
        );
        assert_eq!(codec.encode("42").unwrap(), [0x09, 0x54]);
        let text = r#"{"bigDecimal":"12.50"}"#;
        let bytes = codec.encode(text).unwrap();
        assert_eq!(codec.decode(&bytes).unwrap(), text);
        assert!(codec.encode("[1]").is_err());
        let json = codec.json_field(text);
        assert_eq!(json, ("value", serde_json::json!({"bigDecimal": "12.50"})));
    }

    #[test]
    fn hex_and_long() {
        let bytes = TextCodec::new(CodecName::Bytes, None).unwrap();
        assert_eq!(bytes.encode("0a0B").unwrap(), [10, 11]);
        assert!(bytes.encode("abc").is_err());
        let long = TextCodec::new(CodecName::Long, None).unwrap();
        assert!(long.encode("1.5").is_err());
        assert!(TextCodec::new(CodecName::String, Some("x".into())).is_err());
    }
}
