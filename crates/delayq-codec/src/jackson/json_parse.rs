//! Parsing JSON text into a [`Node`], keeping every number exactly as written.
//!
//! A general-purpose JSON parser reads numbers into an `f64` when they do not fit 64 bits,
//! which rounds `["java.math.BigInteger",1234567890123456789012345678901234567890]` and every
//! `BigDecimal` with more than 17 digits. This one keeps integers that fit an `i128` as
//! [`Node::Int`] and every other number as its literal text ([`Node::Number`]); the
//! deserializer converts that text exactly or refuses it.

use super::tree::{lift_class, Node};
use super::JacksonError;

/// Nesting deeper than this is rejected (a guard against stack exhaustion).
const MAX_DEPTH: usize = 128;

/// Parses one JSON document (surrounding whitespace allowed, nothing else after it). With
/// `typed`, objects carrying a string `@class` property become [`Node::Typed`].
pub(crate) fn parse(bytes: &[u8], typed: bool) -> Result<Node, JacksonError> {
    let mut p = Parser {
        b: bytes,
        pos: 0,
        typed,
    };
    p.ws();
    let node = p.value(0)?;
    p.ws();
    if p.pos != bytes.len() {
        return Err(p.err("trailing characters after the JSON value"));
    }
    Ok(node)
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    typed: bool,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> JacksonError {
        JacksonError::Json(serde::de::Error::custom(format!(
            "{what} at byte {}",
            self.pos
        )))
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), JacksonError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected `{}`", c as char)))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, JacksonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Node::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Node::Bool(true)),
            Some(b'f') => self.literal("false", Node::Bool(false)),
            Some(b'n') => self.literal("null", Node::Null),
            Some(_) => Err(self.err("expected a JSON value")),
            None => Err(self.err("unexpected end of JSON")),
        }
    }

    fn literal(&mut self, word: &str, node: Node) -> Result<Node, JacksonError> {
        if self.b[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(node)
        } else {
            Err(self.err("expected a JSON value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node, JacksonError> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.ws();
                if self.peek() != Some(b'"') {
                    return Err(self.err("expected a property name"));
                }
                let key = self.string()?;
                self.ws();
                self.expect(b':')?;
                self.ws();
                let value = self.value(depth + 1)?;
                entries.push((key, value));
                self.ws();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.err("expected `,` or `}`")),
                }
            }
        }
        Ok(if self.typed {
            lift_class(entries)
        } else {
            Node::Map(entries)
        })
    }

    fn array(&mut self, depth: usize) -> Result<Node, JacksonError> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Node::Seq(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Node::Seq(items));
                }
                _ => return Err(self.err("expected `,` or `]`")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, JacksonError> {
        let digits = self
            .b
            .get(self.pos..self.pos + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u16::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.err("bad \\u escape"))?;
        self.pos += 4;
        Ok(digits)
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), JacksonError> {
        let c = self.peek().ok_or_else(|| self.err("unfinished escape"))?;
        self.pos += 1;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                let code = if (0xd800..0xdc00).contains(&first) {
                    if !self.b[self.pos..].starts_with(b"\\u") {
                        return Err(self.err("lone UTF-16 surrogate in a string"));
                    }
                    self.pos += 2;
                    let second = self.hex4()?;
                    if !(0xdc00..0xe000).contains(&second) {
                        return Err(self.err("lone UTF-16 surrogate in a string"));
                    }
                    0x10000 + ((u32::from(first) - 0xd800) << 10) + (u32::from(second) - 0xdc00)
                } else {
                    u32::from(first)
                };
                char::from_u32(code).ok_or_else(|| self.err("lone UTF-16 surrogate in a string"))?
            }
            _ => return Err(self.err("bad escape")),
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }

    fn string(&mut self) -> Result<String, JacksonError> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = self.peek().ok_or_else(|| self.err("unfinished string"))?;
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => self.escape(&mut out)?,
                0x00..=0x1f => return Err(self.err("control character in a string")),
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("string is not valid UTF-8"))
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Result<Node, JacksonError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let int_len = self.digits();
        if int_len == 0 || (int_len > 1 && self.b[int_start] == b'0') {
            return Err(self.err("bad number"));
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            integral = false;
            if self.digits() == 0 {
                return Err(self.err("bad number"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            integral = false;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("bad number"));
            }
        }
        // The slice holds only ASCII digits and signs.
        let text = String::from_utf8_lossy(&self.b[start..self.pos]).into_owned();
        if integral {
            if let Ok(v) = text.parse::<i128>() {
                return Ok(Node::Int(v));
            }
        }
        Ok(Node::Number(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_text() {
        assert_eq!(parse(b"42", false).unwrap(), Node::Int(42));
        assert_eq!(parse(b"-0", false).unwrap(), Node::Int(0));
        let big = "1234567890123456789012345678901234567890";
        assert_eq!(
            parse(big.as_bytes(), false).unwrap(),
            Node::Number(big.into())
        );
        assert_eq!(
            parse(b"12.50", false).unwrap(),
            Node::Number("12.50".into())
        );
        assert_eq!(parse(b"1E+3", false).unwrap(), Node::Number("1E+3".into()));
        for bad in [
            &b"01"[..],
            b"1.",
            b"-",
            b".5",
            b"1e",
            b"+1",
            b"1.e3",
            b"0x1",
        ] {
            assert!(parse(bad, false).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn strings_and_structure() {
        let node = parse(
            br#" {"a":["x\u00e9\ud83d\ude00\n",true,null],"b":{}} "#,
            false,
        )
        .unwrap();
        assert_eq!(
            node,
            Node::Map(vec![
                (
                    "a".into(),
                    Node::Seq(vec![
                        Node::Str("xé😀\n".into()),
                        Node::Bool(true),
                        Node::Null
                    ])
                ),
                ("b".into(), Node::Map(vec![]))
            ])
        );
        for bad in [
            &br#""\ud83d""#[..],
            b"\"a\x01\"",
            b"{\"a\" 1}",
            b"[1 2]",
            b"{1:2}",
            b"tru",
            b"[",
        ] {
            assert!(parse(bad, false).is_err(), "{bad:?}");
        }
    }
}
