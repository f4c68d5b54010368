//! Kryo's low-level encodings: variable-length ints, fixed-width little-endian numbers and the
//! two string forms.
//!
//! Everything here follows Kryo 5's `Output`/`Input` with variable-length encoding on (Redisson's
//! setting). Reading is as tolerant as Kryo's own `Input` (it accepts the same non-canonical
//! varints Kryo accepts); writing produces exactly the bytes Kryo writes.

use super::KryoError;

/// Appends Kryo encodings to a byte buffer.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    pub(crate) buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// `Output.writeVarInt(value, true)`: 7 bits a byte, least significant group first.
    pub(crate) fn varint(&mut self, value: u32) {
        let mut v = value;
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(low);
                return;
            }
            self.buf.push(low | 0x80);
        }
    }

    /// `Output.writeVarInt(value, false)`: zigzag, then as [`Writer::varint`].
    pub(crate) fn varint_zigzag(&mut self, value: i32) {
        self.varint(((value << 1) ^ (value >> 31)) as u32);
    }

    /// `Output.writeVarLong(value, true)`: like [`Writer::varint`], but the ninth byte holds the
    /// last 8 bits whole.
    pub(crate) fn varlong(&mut self, value: u64) {
        let mut v = value;
        for _ in 0..8 {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.buf.push(low);
                return;
            }
            self.buf.push(low | 0x80);
        }
        self.buf.push(v as u8);
    }

    /// `Output.writeVarLong(value, false)`.
    pub(crate) fn varlong_zigzag(&mut self, value: i64) {
        self.varlong(((value << 1) ^ (value >> 63)) as u64);
    }

    /// `Output.writeVarIntFlag(flag, value, true)`: bit 7 of the first byte is the flag, bit 6
    /// says more bytes follow, bits 0..6 hold the lowest 6 bits of the value.
    pub(crate) fn varint_flag(&mut self, flag: bool, value: u32) {
        let first = (value & 0x3f) as u8 | if flag { 0x80 } else { 0 };
        let rest = value >> 6;
        if rest == 0 {
            self.buf.push(first);
        } else {
            self.buf.push(first | 0x40);
            self.varint(rest);
        }
    }

    pub(crate) fn short(&mut self, v: i16) {
        self.bytes(&v.to_le_bytes());
    }

    pub(crate) fn char_unit(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }

    /// `Output.writeFloat`: `Float.floatToIntBits`, which writes every NaN as `0x7fc00000`.
    pub(crate) fn float(&mut self, v: f32) {
        let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
        self.bytes(&bits.to_le_bytes());
    }

    /// `Output.writeDouble`: `Double.doubleToLongBits`, which writes every NaN as
    /// `0x7ff8000000000000`.
    pub(crate) fn double(&mut self, v: f64) {
        let bits = if v.is_nan() {
            0x7ff8_0000_0000_0000
        } else {
            v.to_bits()
        };
        self.bytes(&bits.to_le_bytes());
    }

    /// `Output.writeLong(value)`: 8 bytes little-endian.
    pub(crate) fn long_fixed(&mut self, v: i64) {
        self.bytes(&v.to_le_bytes());
    }

    /// `Output.writeString`: `None` is `80`, `""` is `81`, 2 to 32 ASCII chars are written as
    /// ASCII with the last byte's bit 7 set, anything else as a flagged char count plus the UTF-16
    /// units in 1 to 3 bytes each.
    pub(crate) fn string(&mut self, value: Option<&str>) {
        let Some(s) = value else {
            self.byte(0x80);
            return;
        };
        if s.is_empty() {
            self.byte(0x81);
            return;
        }
        // For ASCII text the UTF-16 count equals the byte count.
        if s.is_ascii() && (2..=32).contains(&s.len()) {
            self.ascii_tail_marked(s.as_bytes());
            return;
        }
        let units = s.encode_utf16().count();
        // A Java String has at most i32::MAX chars; Rust strings that long are not realistic, and
        // the count is written as Java would wrap it.
        self.varint_flag(true, (units as u32).wrapping_add(1));
        for unit in s.encode_utf16() {
            self.utf16_unit(unit);
        }
    }

    /// `Output.writeAscii`, used for class names.
    pub(crate) fn ascii(&mut self, s: &str) {
        match s.len() {
            0 => self.byte(0x81),
            1 => {
                self.byte(0x82);
                self.bytes(s.as_bytes());
            }
            _ => self.ascii_tail_marked(s.as_bytes()),
        }
    }

    fn ascii_tail_marked(&mut self, b: &[u8]) {
        self.bytes(b);
        if let Some(last) = self.buf.last_mut() {
            *last |= 0x80;
        }
    }

    fn utf16_unit(&mut self, c: u16) {
        if c <= 0x7f {
            self.byte(c as u8);
        } else if c > 0x7ff {
            self.byte(0xe0 | ((c >> 12) & 0x0f) as u8);
            self.byte(0x80 | ((c >> 6) & 0x3f) as u8);
            self.byte(0x80 | (c & 0x3f) as u8);
        } else {
            self.byte(0xc0 | ((c >> 6) & 0x1f) as u8);
            self.byte(0x80 | (c & 0x3f) as u8);
        }
    }
}

/// Reads Kryo encodings from a byte slice; every read is bounds-checked.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    fn eof(&self, what: &'static str) -> KryoError {
        KryoError::UnexpectedEnd {
            offset: self.pos,
            what,
        }
    }

    pub(crate) fn byte(&mut self, what: &'static str) -> Result<u8, KryoError> {
        let b = *self.data.get(self.pos).ok_or_else(|| self.eof(what))?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn peek(&self, what: &'static str) -> Result<u8, KryoError> {
        self.data
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.eof(what))
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], KryoError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.data.len())
            .ok_or_else(|| self.eof(what))?;
        let s = self.data.get(self.pos..end).ok_or_else(|| self.eof(what))?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], KryoError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    /// `Input.readVarInt(true)`, including its tolerance: at most 5 bytes, and bits beyond 32
    /// are dropped as Java's int arithmetic drops them.
    pub(crate) fn varint(&mut self, what: &'static str) -> Result<u32, KryoError> {
        let mut result: u32 = 0;
        for i in 0..5 {
            let b = self.byte(what)?;
            result |= u32::from(b & 0x7f).wrapping_shl(7 * i);
            if b & 0x80 == 0 {
                break;
            }
        }
        Ok(result)
    }

    /// `Input.readVarInt(false)`.
    pub(crate) fn varint_zigzag(&mut self, what: &'static str) -> Result<i32, KryoError> {
        let v = self.varint(what)?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    /// `Input.readVarLong(true)`: at most 9 bytes, the ninth taken whole.
    pub(crate) fn varlong(&mut self, what: &'static str) -> Result<u64, KryoError> {
        let mut result: u64 = 0;
        for i in 0..8 {
            let b = self.byte(what)?;
            result |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(result);
            }
        }
        let b = self.byte(what)?;
        Ok(result | (u64::from(b) << 56))
    }

    /// `Input.readVarLong(false)`.
    pub(crate) fn varlong_zigzag(&mut self, what: &'static str) -> Result<i64, KryoError> {
        let v = self.varlong(what)?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// `Input.readVarIntFlag()` then `readVarIntFlag(true)`: returns (flag, value).
    pub(crate) fn varint_flag(&mut self, what: &'static str) -> Result<(bool, u32), KryoError> {
        let b = self.byte(what)?;
        let flag = b & 0x80 != 0;
        let mut result = u32::from(b & 0x3f);
        if b & 0x40 != 0 {
            for i in 0..4 {
                let b = self.byte(what)?;
                result |= u32::from(b & 0x7f).wrapping_shl(6 + 7 * i);
                if b & 0x80 == 0 {
                    break;
                }
            }
        }
        Ok((flag, result))
    }

    /// A Java boolean as Kryo writes it; anything but `00`/`01` is an error (Kryo never writes
    /// it, and guessing would risk wrong data).
    pub(crate) fn boolean(&mut self, what: &'static str) -> Result<bool, KryoError> {
        let at = self.pos;
        match self.byte(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(KryoError::Malformed {
                offset: at,
                detail: format!("{what}: expected boolean 00 or 01, found {other:02x}"),
            }),
        }
    }

    pub(crate) fn short(&mut self) -> Result<i16, KryoError> {
        Ok(i16::from_le_bytes(self.array("short")?))
    }

    pub(crate) fn char_unit(&mut self) -> Result<u16, KryoError> {
        Ok(u16::from_le_bytes(self.array("char")?))
    }

    pub(crate) fn float(&mut self) -> Result<f32, KryoError> {
        Ok(f32::from_bits(u32::from_le_bytes(self.array("float")?)))
    }

    pub(crate) fn double(&mut self) -> Result<f64, KryoError> {
        Ok(f64::from_bits(u64::from_le_bytes(self.array("double")?)))
    }

    pub(crate) fn long_fixed(&mut self, what: &'static str) -> Result<i64, KryoError> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    /// `Input.readString()`: both forms. `None` is Java's null.
    pub(crate) fn string(&mut self, what: &'static str) -> Result<Option<String>, KryoError> {
        let start = self.pos;
        if self.peek(what)? & 0x80 == 0 {
            // ASCII form: up to and including the byte with bit 7 set.
            let rest = self.data.get(self.pos..).unwrap_or_default();
            let len = rest
                .iter()
                .position(|b| b & 0x80 != 0)
                .ok_or(KryoError::UnexpectedEnd {
                    offset: self.data.len(),
                    what,
                })?;
            let raw = self.take(len + 1, what)?;
            let s: String = raw.iter().map(|&b| char::from(b & 0x7f)).collect();
            return Ok(Some(s));
        }
        let (_, count) = self.varint_flag(what)?;
        match count {
            0 => return Ok(None),
            1 => return Ok(Some(String::new())),
            _ => {}
        }
        let chars = (count - 1) as usize;
        // Each char takes at least one byte: a count beyond the input is malformed, and checking
        // it first keeps a bogus count from allocating.
        if chars > self.remaining() {
            return Err(KryoError::UnexpectedEnd {
                offset: self.data.len(),
                what,
            });
        }
        let mut units = Vec::with_capacity(chars);
        for _ in 0..chars {
            let at = self.pos;
            let b = self.byte(what)?;
            let unit = match b >> 4 {
                0..=7 => u16::from(b),
                12 | 13 => {
                    let b2 = self.byte(what)?;
                    (u16::from(b & 0x1f) << 6) | u16::from(b2 & 0x3f)
                }
                14 => {
                    let b2 = self.byte(what)?;
                    let b3 = self.byte(what)?;
                    (u16::from(b & 0x0f) << 12) | (u16::from(b2 & 0x3f) << 6) | u16::from(b3 & 0x3f)
                }
                _ => {
                    return Err(KryoError::Malformed {
                        offset: at,
                        detail: format!("{what}: byte {b:02x} cannot start a char"),
                    })
                }
            };
            units.push(unit);
        }
        String::from_utf16(&units)
            .map(Some)
            .map_err(|_| KryoError::Malformed {
                offset: start,
                detail: format!(
                    "{what}: the string holds an unpaired UTF-16 surrogate, which a Rust String cannot hold"
                ),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::default();
        f(&mut w);
        w.buf
    }

    #[test]
    fn varlong_vectors_from_spec() {
        assert_eq!(w(|w| w.varlong_zigzag(42)), [0x54]);
        assert_eq!(w(|w| w.varlong_zigzag(300)), [0xd8, 0x04]);
        assert_eq!(w(|w| w.varlong_zigzag(-1)), [0x01]);
        assert_eq!(
            w(|w| w.varlong_zigzag(i64::MAX)),
            [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            w(|w| w.varlong_zigzag(1_767_225_600_123)),
            [0xf6, 0xa1, 0xd5, 0xed, 0xee, 0x66]
        );
    }

    #[test]
    fn ints_round_trip_at_edges() {
        for v in [0, 1, -1, 63, 64, 127, 128, 8191, 8192, i32::MAX, i32::MIN] {
            let b = w(|w| w.varint_zigzag(v));
            assert_eq!(Reader::new(&b).varint_zigzag("t").unwrap(), v);
            let b = w(|w| w.varint_flag(true, v as u32));
            assert_eq!(Reader::new(&b).varint_flag("t").unwrap(), (true, v as u32));
        }
        for v in [0, 1, -1, i64::MAX, i64::MIN, 1 << 56, -(1 << 55)] {
            let b = w(|w| w.varlong_zigzag(v));
            assert_eq!(Reader::new(&b).varlong_zigzag("t").unwrap(), v);
        }
    }

    #[test]
    fn string_forms() {
        assert_eq!(w(|w| w.string(None)), [0x80]);
        assert_eq!(w(|w| w.string(Some(""))), [0x81]);
        assert_eq!(w(|w| w.string(Some("x"))), [0x82, 0x78]);
        assert_eq!(
            w(|w| w.string(Some("hello"))),
            [0x68, 0x65, 0x6c, 0x6c, 0xef]
        );
        assert_eq!(
            w(|w| w.string(Some("héllo"))),
            [0x86, 0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f]
        );
        let forty = "a".repeat(40);
        let b = w(|w| w.string(Some(&forty)));
        assert_eq!(b[0], 0xa9);
        assert_eq!(&b[1..], forty.as_bytes());
        // A supplementary char is two UTF-16 units, each written as 3 bytes.
        let b = w(|w| w.string(Some("😀")));
        assert_eq!(b, [0x83, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]);
        assert_eq!(Reader::new(&b).string("t").unwrap().unwrap(), "😀");
    }
}
