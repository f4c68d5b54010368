//! Redisson's `StringCodec` (UTF-8).

use super::Codec;

/// Java: `org.redisson.client.codec.StringCodec` with its default UTF-8 charset.
///
/// The value's UTF-8 bytes, no framing.
///
/// ```
/// use delayq_codec::{Codec, StringCodec};
///
/// assert_eq!(StringCodec.encode("héllo").unwrap(), "héllo".as_bytes());
/// assert!(StringCodec.decode(&[0xff]).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct StringCodec;

/// The bytes are not valid UTF-8.
#[derive(Debug, thiserror::Error)]
#[error("not valid UTF-8: {0}")]
pub struct StringCodecError(#[from] std::str::Utf8Error);

impl Codec for StringCodec {
    type Value = String;
    type Borrowed = str;
    type Error = StringCodecError;

    fn name(&self) -> &'static str {
        "string"
    }

    fn encode(&self, value: &str) -> Result<Vec<u8>, StringCodecError> {
        Ok(value.as_bytes().to_vec())
    }

    fn decode(&self, bytes: &[u8]) -> Result<String, StringCodecError> {
        Ok(std::str::from_utf8(bytes)?.to_owned())
    }
}
