//! JSON text the way Jackson's `UTF8JsonGenerator` writes it (parsing is in `json_parse.rs`).

use super::num::{java_double, java_float};
use super::tree::Node;
use base64::Engine as _;

/// Writes `node` as compact JSON.
pub(crate) fn write(node: &Node, out: &mut Vec<u8>) {
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(true) => out.extend_from_slice(b"true"),
        Node::Bool(false) => out.extend_from_slice(b"false"),
        Node::Int(v) => out.extend_from_slice(v.to_string().as_bytes()),
        Node::Number(text) => out.extend_from_slice(text.as_bytes()),
        Node::F64(v) => number(out, v.is_finite(), &java_double(*v)),
        Node::F32(v) => number(out, v.is_finite(), &java_float(*v)),
        Node::Str(s) => string(out, s),
        Node::Bytes(b) => {
            out.push(b'"');
            out.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(b)
                    .as_bytes(),
            );
            out.push(b'"');
        }
        Node::Seq(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, out);
            }
            out.push(b']');
        }
        Node::Map(entries) => object(out, None, entries),
        Node::Typed(class, inner) => match &**inner {
            Node::Map(entries) => object(out, Some(class), entries),
            other => {
                out.push(b'[');
                string(out, class);
                out.push(b',');
                write(other, out);
                out.push(b']');
            }
        },
    }
}

/// Non-finite numbers are quoted (`"NaN"`), as Jackson's default `WRITE_NAN_AS_STRINGS` does.
fn number(out: &mut Vec<u8>, finite: bool, text: &str) {
    if finite {
        out.extend_from_slice(text.as_bytes());
    } else {
        string(out, text);
    }
}

fn object(out: &mut Vec<u8>, class: Option<&str>, entries: &[(String, Node)]) {
    out.push(b'{');
    let mut first = true;
    if let Some(class) = class {
        out.extend_from_slice(b"\"@class\":");
        string(out, class);
        first = false;
    }
    for (key, value) in entries {
        if !first {
            out.push(b',');
        }
        first = false;
        string(out, key);
        out.push(b':');
        write(value, out);
    }
    out.push(b'}');
}

/// A JSON string with Jackson's escaping: `"` and `\` escaped, control characters as
/// `\b \t \n \f \r` or `\u00XX` (upper-case hex), everything else (including `/`, DEL and
/// non-ASCII) written raw as UTF-8.
fn string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0A => b'n',
            0x0C => b'f',
            0x0D => b'r',
            0x00..=0x1F => 0,
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        start = i + 1;
        out.push(b'\\');
        if short != 0 {
            out.push(short);
        } else {
            out.extend_from_slice(b"u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xF)]);
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

pub(crate) use super::json_parse::parse;

#[cfg(test)]
mod tests {
    use super::*;

    fn text(node: &Node) -> String {
        let mut out = Vec::new();
        write(node, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escaping_like_jackson() {
        let s = Node::Str("a\"b\\c/d\u{1}\u{1f}\u{7f}\n\t\r\u{8}\u{c}é😀".into());
        assert_eq!(
            text(&s),
            "\"a\\\"b\\\\c/d\\u0001\\u001F\u{7f}\\n\\t\\r\\b\\fé😀\""
        );
    }

    #[test]
    fn typed_forms() {
        let long = Node::Typed("java.lang.Long".into(), Box::new(Node::Int(42)));
        assert_eq!(text(&long), r#"["java.lang.Long",42]"#);
        let map = Node::Typed(
            "java.util.HashMap".into(),
            Box::new(Node::Map(vec![("k".into(), Node::Str("v".into()))])),
        );
        assert_eq!(text(&map), r#"{"@class":"java.util.HashMap","k":"v"}"#);
        assert_eq!(parse(text(&map).as_bytes(), true).unwrap(), map);
        assert_eq!(text(&Node::F64(f64::NAN)), "\"NaN\"");
        assert_eq!(text(&Node::F32(0.1)), "0.1");
    }

    #[test]
    fn parse_rejects_garbage_and_trailing_data() {
        for bad in [&b""[..], b"{", b"[1,]", b"1 2", b"\"\xff\"", b"nul"] {
            assert!(parse(bad, true).is_err(), "{bad:?}");
        }
        assert_eq!(parse(b" 7 \n", true).unwrap(), Node::Int(7));
    }
}
