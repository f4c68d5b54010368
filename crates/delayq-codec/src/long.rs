//! Redisson's `LongCodec`.

use super::Codec;

/// Java: `org.redisson.client.codec.LongCodec`.
///
/// Encodes like `Long.toString()` (decimal ASCII) and decodes like `Long.valueOf`: an optional
/// sign and decimal digits, nothing else.
///
/// ```
/// use delayq_codec::{Codec, LongCodec};
///
/// assert_eq!(LongCodec.encode(&-42).unwrap(), b"-42");
/// assert_eq!(LongCodec.decode(b"+7").unwrap(), 7);
/// assert!(LongCodec.decode(b"7.0").is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct LongCodec;

/// The bytes are not a decimal Java long.
#[derive(Debug, thiserror::Error)]
#[error("not a decimal Java long: {text:?}")]
pub struct LongCodecError {
    /// The text (lossily decoded) that failed to parse.
    pub text: String,
}

impl Codec for LongCodec {
    type Value = i64;
    type Borrowed = i64;
    type Error = LongCodecError;

    fn name(&self) -> &'static str {
        "long"
    }

    fn encode(&self, value: &i64) -> Result<Vec<u8>, LongCodecError> {
        Ok(value.to_string().into_bytes())
    }

    fn decode(&self, bytes: &[u8]) -> Result<i64, LongCodecError> {
        let fail = || LongCodecError {
            text: String::from_utf8_lossy(bytes).into_owned(),
        };
        // Long.valueOf accepts an optional sign then ASCII digits only; Rust's parse agrees on
        // that grammar for ASCII input, so check the bytes are ASCII first.
        if !bytes.is_ascii() {
            return Err(fail());
        }
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_long_grammar() {
        assert_eq!(LongCodec.decode(b"9223372036854775807").unwrap(), i64::MAX);
        assert_eq!(LongCodec.decode(b"-9223372036854775808").unwrap(), i64::MIN);
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"0x10",
            b"--1",
        ] {
            assert!(LongCodec.decode(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            LongCodec.encode(&i64::MIN).unwrap(),
            b"-9223372036854775808"
        );
    }
}
