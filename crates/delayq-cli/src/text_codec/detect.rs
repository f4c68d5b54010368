//! `--codec auto`: which of Redisson's codecs wrote a value, told from its bytes, read with that
//! codec's own decoder.

use super::{encode_hex, CodecName, Decoded, TextCodec};

/// The codecs tried, in this order: each one's bytes are refused by those before it, so the
/// first that reads the whole value is the one that wrote it. JSON and MessagePack go first
/// because they are cheap to rule out by their first byte; Kryo before the text codecs, as a
/// Kryo `Long` (`09 54` is 42) is valid UTF-8 but never text anyone wrote, while text is no
/// Kryo value (its first byte would be an unregistered class id).
const TRIED: [CodecName; 5] = [
    CodecName::Json,
    CodecName::Msgpack,
    CodecName::Kryo,
    CodecName::Long,
    CodecName::String,
];

/// The label of bytes no codec recognised, shown as hex.
const HEX: &str = "hex";

/// `bytes` read by the first codec of [`TRIED`] that recognises them, or as hex.
pub(super) fn detect(bytes: &[u8]) -> Decoded {
    TRIED
        .into_iter()
        .filter(|&name| plausible(name, bytes))
        .find_map(|name| {
            let codec = TextCodec {
                name,
                java_class: None,
            };
            codec.describe(bytes).ok()
        })
        .unwrap_or_else(|| Decoded {
            codec: HEX,
            class: None,
            text: encode_hex(bytes),
        })
}

/// Whether `bytes` can be a value of the codec `name` at all, before decoding them with it:
/// JSON is an object or array that parses (JsonJacksonCodec writes objects, with `@class`
/// first); MessagePack starts with a map or an array; text has no control characters but
/// line breaks and tabs.
fn plausible(name: CodecName, bytes: &[u8]) -> bool {
    match name {
        CodecName::Json => {
            let start = bytes.iter().find(|b| !b.is_ascii_whitespace());
            matches!(start, Some(b'{' | b'['))
                && serde_json::from_slice::<serde_json::Value>(bytes).is_ok()
        }
        CodecName::Msgpack => matches!(bytes.first(), Some(0x80..=0x9f | 0xdc..=0xdf)),
        CodecName::String => std::str::from_utf8(bytes).is_ok_and(|text| {
            !text
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        }),
        _ => true,
    }
}

/// The codec of a label [`detect`] gave.
pub(super) fn codec_named(label: &str) -> CodecName {
    TRIED
        .into_iter()
        .find(|&name| {
            let codec = TextCodec {
                name,
                java_class: None,
            };
            delayq::codec::Codec::name(&codec) == label
        })
        .unwrap_or(CodecName::Bytes)
}

/// The codec, class and value of a text `--codec auto` printed (`[CODEC CLASS] VALUE`).
pub(super) fn unlabel(text: &str) -> Option<(&str, Option<&str>, &str)> {
    let (label, value) = text.strip_prefix('[')?.split_once("] ")?;
    Some(match label.split_once(' ') {
        Some((codec, class)) => (codec, Some(class), value),
        None => (label, None, value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use delayq::codec::Codec;

    fn auto() -> TextCodec {
        TextCodec::new(CodecName::Auto, None).unwrap()
    }

    fn encoded(name: CodecName, text: &str) -> Vec<u8> {
        TextCodec::new(name, None).unwrap().encode(text).unwrap()
    }

    #[test]
    fn each_codec_is_told_from_its_bytes() {
        let kryo_string = encoded(CodecName::Kryo, r#""hello""#);
        let kryo_long = encoded(CodecName::Kryo, "42");
        let cases: [(&[u8], &str, Option<&str>, &str); 7] = [
            (&kryo_string, "kryo", Some("java.lang.String"), r#""hello""#),
            (&kryo_long, "kryo", Some("java.lang.Long"), "42"),
            (
                br#"{"@class":"com.example.Order","id":1}"#,
                "json",
                Some("com.example.Order"),
                r#"{"@class":"com.example.Order","id":1}"#,
            ),
            (
                &[0x81, 0xa6, b'@', b'c', b'l', b'a', b's', b's', 0xa1, b'X'],
                "msgpack",
                Some("X"),
                r#"{"@class":"X"}"#,
            ),
            (b"42", "long", None, "42"),
            (b"order-17 \xc3\xa9", "string", None, "order-17 é"),
            (&[0xff, 0x00, 0x01], "hex", None, "ff0001"),
        ];
        for (bytes, codec, class, text) in cases {
            let decoded = auto().describe(bytes).unwrap();
            let expected = Decoded {
                codec,
                class: class.map(str::to_owned),
                text: text.to_owned(),
            };
            assert_eq!(decoded, expected, "{bytes:02x?}");
        }
    }

    #[test]
    fn auto_labels_values_and_refuses_writes() {
        let bytes = encoded(CodecName::Kryo, r#""hello""#);
        let text = auto().decode(&bytes).unwrap();
        assert_eq!(text, r#"[kryo java.lang.String] "hello""#);
        let fields = auto().json_fields(&text);
        let expected = vec![
            ("value", serde_json::json!("hello")),
            ("codec", "kryo".into()),
            ("class", "java.lang.String".into()),
        ];
        assert_eq!(fields, expected);
        let hex = auto().json_fields("[hex] ff00");
        assert_eq!(hex[0], ("value_base64", "/wA=".into()));
        assert!(auto().encode("x").is_err());
    }

    #[test]
    fn msgpack_with_bytes_after_the_value_is_not_msgpack() {
        let codec = TextCodec::new(CodecName::Msgpack, None).unwrap();
        assert!(codec.decode(&[0x80]).is_ok());
        assert!(codec.decode(&[0x80, 0x00]).is_err());
    }
}
