//! MessagePack the way msgpack-jackson's `MessagePackGenerator` writes it, and reading it back.
//!
//! Writing follows msgpack-java's `MessagePacker`: integers in the smallest format (positive
//! values use the unsigned formats), `double` as float64, `float` as float32, strings as
//! fixstr/str8/str16/str32 by UTF-8 length, `byte[]` as bin8/16/32, containers with the smallest
//! header. Type information uses the same shapes as JSON: a map whose first key is `@class`, or a
//! two-element array `[class, value]`.

use super::tree::{lift_class, Node};
use super::JacksonError;
use crate::java::BigDecimal;

/// Nesting deeper than this is rejected when reading (a guard against stack exhaustion).
const MAX_DEPTH: usize = 128;

/// Writes `node` as MessagePack.
pub(crate) fn write(node: &Node, out: &mut Vec<u8>) -> Result<(), JacksonError> {
    match node {
        Node::Null => out.push(0xc0),
        Node::Bool(false) => out.push(0xc2),
        Node::Bool(true) => out.push(0xc3),
        Node::Int(v) => int(out, *v)?,
        Node::Number(text) => big_number(out, text)?,
        Node::F32(v) => {
            out.push(0xca);
            out.extend_from_slice(&v.to_be_bytes());
        }
        Node::F64(v) => {
            out.push(0xcb);
            out.extend_from_slice(&v.to_be_bytes());
        }
        Node::Str(s) => string(out, s)?,
        Node::Bytes(b) => {
            header(out, b.len(), None, [0xc4, 0xc5, 0xc6])?;
            out.extend_from_slice(b);
        }
        Node::Seq(items) => {
            header(out, items.len(), Some((0x90, 16)), [0, 0xdc, 0xdd])?;
            for item in items {
                write(item, out)?;
            }
        }
        Node::Map(entries) => object(out, None, entries)?,
        Node::Typed(class, inner) => match &**inner {
            Node::Map(entries) => object(out, Some(class), entries)?,
            other => {
                out.push(0x92);
                string(out, class)?;
                write(other, out)?;
            }
        },
    }
    Ok(())
}

fn object(
    out: &mut Vec<u8>,
    class: Option<&str>,
    entries: &[(String, Node)],
) -> Result<(), JacksonError> {
    let len = entries.len() + usize::from(class.is_some());
    header(out, len, Some((0x80, 16)), [0, 0xde, 0xdf])?;
    if let Some(class) = class {
        string(out, "@class")?;
        string(out, class)?;
    }
    for (key, value) in entries {
        string(out, key)?;
        write(value, out)?;
    }
    Ok(())
}

fn string(out: &mut Vec<u8>, s: &str) -> Result<(), JacksonError> {
    header(out, s.len(), Some((0xa0, 32)), [0xd9, 0xda, 0xdb])?;
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// A length header: the fix form `(marker, limit)` when given and `len < limit` (16 entries for
/// maps/arrays, 32 bytes for strings), else the 8/16/32-bit form (`wide[0]` = 0 means there is
/// no 8-bit form, as for arrays and maps).
fn header(
    out: &mut Vec<u8>,
    len: usize,
    fix: Option<(u8, usize)>,
    wide: [u8; 3],
) -> Result<(), JacksonError> {
    if let Some((marker, limit)) = fix {
        if len < limit {
            // `limit` is at most 32, so `len` fits the marker's low bits.
            out.push(marker | len as u8);
            return Ok(());
        }
    }
    if wide[0] != 0 && len <= 0xff {
        out.push(wide[0]);
        out.push(len as u8);
    } else if len <= 0xffff {
        out.push(wide[1]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        let len = u32::try_from(len).map_err(|_| {
            JacksonError::Message(format!("{len} entries or bytes do not fit MessagePack"))
        })?;
        out.push(wide[2]);
        out.extend_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

/// msgpack-jackson's `BigInteger` and `BigDecimal` rules: a whole number as an integer when it
/// fits 64 bits, any other decimal as a float64 when that double's shortest form is the same
/// number (`12.50` becomes `12.5`, as in Java), anything else an error (Java's encoder throws
/// there too).
fn big_number(out: &mut Vec<u8>, text: &str) -> Result<(), JacksonError> {
    let decimal: BigDecimal = text
        .parse()
        .map_err(|e: crate::java::NumberFormatError| JacksonError::Message(e.to_string()))?;
    if let Some(whole) = decimal.to_big_integer_exact() {
        if let Some(v) = whole
            .to_i128()
            .filter(|v| *v >= i128::from(i64::MIN) && *v <= i128::from(u64::MAX))
        {
            return int(out, v);
        }
        if !text.contains(['.', 'e', 'E']) {
            return Err(JacksonError::Message(format!(
                "MessagePack cannot hold the integer {text} (64 bits at most, as in msgpack-jackson)"
            )));
        }
    }
    match decimal.to_f64_exact() {
        Some(v) => {
            out.push(0xcb);
            out.extend_from_slice(&v.to_be_bytes());
            Ok(())
        }
        None => Err(JacksonError::Message(format!(
            "MessagePack cannot hold the decimal {text}: it is not whole and no double is that number \
             (msgpack-jackson refuses it too)"
        ))),
    }
}

/// msgpack-java's `packLong`: negative fixint / int8..int64 for negatives, positive fixint /
/// uint8..uint64 otherwise.
fn int(out: &mut Vec<u8>, v: i128) -> Result<(), JacksonError> {
    if v < 0 {
        if v >= -32 {
            out.push(v as i8 as u8);
        } else if v >= i128::from(i8::MIN) {
            out.push(0xd0);
            out.push(v as i8 as u8);
        } else if v >= i128::from(i16::MIN) {
            out.push(0xd1);
            out.extend_from_slice(&(v as i16).to_be_bytes());
        } else if v >= i128::from(i32::MIN) {
            out.push(0xd2);
            out.extend_from_slice(&(v as i32).to_be_bytes());
        } else if v >= i128::from(i64::MIN) {
            out.push(0xd3);
            out.extend_from_slice(&(v as i64).to_be_bytes());
        } else {
            return Err(JacksonError::IntegerTooLarge(v));
        }
    } else if v < 128 {
        out.push(v as u8);
    } else if v <= 0xff {
        out.push(0xcc);
        out.push(v as u8);
    } else if v <= 0xffff {
        out.push(0xcd);
        out.extend_from_slice(&(v as u16).to_be_bytes());
    } else if v <= 0xffff_ffff {
        out.push(0xce);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else if v <= i128::from(u64::MAX) {
        out.push(0xcf);
        out.extend_from_slice(&(v as u64).to_be_bytes());
    } else {
        return Err(JacksonError::IntegerTooLarge(v));
    }
    Ok(())
}

/// Parses exactly one MessagePack value. With `typed`, maps with a string `@class` entry become
/// [`Node::Typed`].
pub(crate) fn parse(bytes: &[u8], typed: bool) -> Result<Node, JacksonError> {
    let mut r = Reader {
        buf: bytes,
        pos: 0,
        typed,
    };
    let node = r.node(0)?;
    if r.pos != bytes.len() {
        return Err(r.err("trailing bytes after the value"));
    }
    Ok(node)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    typed: bool,
}

impl Reader<'_> {
    fn err(&self, reason: &'static str) -> JacksonError {
        JacksonError::MsgPack {
            offset: self.pos,
            reason,
        }
    }

    fn take(&mut self, n: usize) -> Result<&[u8], JacksonError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| self.err("unexpected end of data"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], JacksonError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn len(&mut self, width: usize) -> Result<usize, JacksonError> {
        Ok(match width {
            1 => usize::from(self.array::<1>()?[0]),
            2 => usize::from(u16::from_be_bytes(self.array()?)),
            _ => u32::from_be_bytes(self.array()?) as usize,
        })
    }

    fn node(&mut self, depth: usize) -> Result<Node, JacksonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        let marker = self.array::<1>()?[0];
        Ok(match marker {
            0x00..=0x7f => Node::Int(marker.into()),
            0x80..=0x8f => self.map(usize::from(marker & 0x0f), depth)?,
            0x90..=0x9f => self.seq(usize::from(marker & 0x0f), depth)?,
            0xa0..=0xbf => self.str(usize::from(marker & 0x1f))?,
            0xc0 => Node::Null,
            0xc2 => Node::Bool(false),
            0xc3 => Node::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len(1 << (marker - 0xc4))?;
                Node::Bytes(self.take(n)?.to_vec())
            }
            0xca => Node::F32(f32::from_be_bytes(self.array()?)),
            0xcb => Node::F64(f64::from_be_bytes(self.array()?)),
            0xcc => Node::Int(u8::from_be_bytes(self.array()?).into()),
            0xcd => Node::Int(u16::from_be_bytes(self.array()?).into()),
            0xce => Node::Int(u32::from_be_bytes(self.array()?).into()),
            0xcf => Node::Int(u64::from_be_bytes(self.array()?).into()),
            0xd0 => Node::Int(i8::from_be_bytes(self.array()?).into()),
            0xd1 => Node::Int(i16::from_be_bytes(self.array()?).into()),
            0xd2 => Node::Int(i32::from_be_bytes(self.array()?).into()),
            0xd3 => Node::Int(i64::from_be_bytes(self.array()?).into()),
            0xd9..=0xdb => {
                let n = self.len(1 << (marker - 0xd9))?;
                self.str(n)?
            }
            0xdc | 0xdd => {
                let n = self.len(if marker == 0xdc { 2 } else { 4 })?;
                self.seq(n, depth)?
            }
            0xde | 0xdf => {
                let n = self.len(if marker == 0xde { 2 } else { 4 })?;
                self.map(n, depth)?
            }
            0xe0..=0xff => Node::Int(i128::from(marker as i8)),
            0xc7..=0xc9 | 0xd4..=0xd8 => {
                self.pos -= 1;
                return Err(self.err("MessagePack extension types are not supported"));
            }
            0xc1 => {
                self.pos -= 1;
                return Err(self.err("0xc1 is not a valid MessagePack marker"));
            }
        })
    }

    fn str(&mut self, n: usize) -> Result<Node, JacksonError> {
        let start = self.pos;
        let bytes = self.take(n)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Node::Str(s.to_owned())),
            Err(_) => {
                self.pos = start;
                Err(self.err("string is not valid UTF-8"))
            }
        }
    }

    fn seq(&mut self, n: usize, depth: usize) -> Result<Node, JacksonError> {
        // Every element takes at least one byte: never trust a length beyond the data.
        let mut items = Vec::with_capacity(n.min(self.buf.len() - self.pos));
        for _ in 0..n {
            items.push(self.node(depth + 1)?);
        }
        Ok(Node::Seq(items))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Node, JacksonError> {
        let mut entries = Vec::with_capacity(n.min((self.buf.len() - self.pos) / 2));
        for _ in 0..n {
            let at = self.pos;
            let key = match self.node(depth + 1)? {
                Node::Str(s) => s,
                Node::Int(i) => i.to_string(),
                _ => {
                    self.pos = at;
                    return Err(self.err("map key is not a string"));
                }
            };
            let value = self.node(depth + 1)?;
            entries.push((key, value));
        }
        Ok(if self.typed {
            lift_class(entries)
        } else {
            Node::Map(entries)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(node: &Node) -> Vec<u8> {
        let mut out = Vec::new();
        write(node, &mut out).unwrap();
        out
    }

    #[test]
    fn smallest_integer_formats() {
        let cases: &[(i128, &[u8])] = &[
            (0, &[0x00]),
            (127, &[0x7f]),
            (128, &[0xcc, 0x80]),
            (255, &[0xcc, 0xff]),
            (256, &[0xcd, 0x01, 0x00]),
            (65536, &[0xce, 0, 1, 0, 0]),
            (1 << 32, &[0xcf, 0, 0, 0, 1, 0, 0, 0, 0]),
            (-1, &[0xff]),
            (-32, &[0xe0]),
            (-33, &[0xd0, 0xdf]),
            (-129, &[0xd1, 0xff, 0x7f]),
            (-32769, &[0xd2, 0xff, 0xff, 0x7f, 0xff]),
            (i64::MIN as i128, &[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0]),
        ];
        for (v, want) in cases {
            assert_eq!(bytes(&Node::Int(*v)), *want, "{v}");
            assert_eq!(parse(want, true).unwrap(), Node::Int(*v));
        }
        let mut out = Vec::new();
        assert!(matches!(
            write(&Node::Int(i128::from(u64::MAX) + 1), &mut out),
            Err(JacksonError::IntegerTooLarge(_))
        ));
    }

    #[test]
    fn string_and_container_headers() {
        assert_eq!(bytes(&Node::Str("a".repeat(31)))[0], 0xbf);
        assert_eq!(bytes(&Node::Str("a".repeat(32)))[..2], [0xd9, 32]);
        assert_eq!(bytes(&Node::Str("a".repeat(256)))[..3], [0xda, 1, 0]);
        assert_eq!(
            bytes(&Node::Str("a".repeat(65536)))[..5],
            [0xdb, 0, 1, 0, 0]
        );
        assert_eq!(bytes(&Node::Bytes(vec![0; 256]))[..3], [0xc5, 1, 0]);
        assert_eq!(bytes(&Node::Seq(vec![Node::Null; 15]))[0], 0x9f);
        assert_eq!(bytes(&Node::Seq(vec![Node::Null; 16]))[..3], [0xdc, 0, 16]);
        let map = Node::Map((0..16).map(|i| (i.to_string(), Node::Null)).collect());
        assert_eq!(bytes(&map)[..3], [0xde, 0, 16]);
        for node in [
            Node::Str("a".repeat(70000)),
            Node::Seq(vec![Node::Bool(true); 70000]),
            map,
        ] {
            assert_eq!(parse(&bytes(&node), false).unwrap(), node);
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        for bad in [
            &[][..],
            &[0xc1],
            &[0xd4, 0, 0],
            &[0xa2, b'a'],
            &[0xa1, 0xff],
            &[0xdd, 0xff, 0xff, 0xff, 0xff],
            &[0x81, 0x90, 0x01],
            &[0x01, 0x02],
        ] {
            assert!(parse(bad, true).is_err(), "{bad:x?}");
        }
        let deep = vec![0x91; MAX_DEPTH + 2];
        assert!(parse(&deep, true).is_err());
    }
}
