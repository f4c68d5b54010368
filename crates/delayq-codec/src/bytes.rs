//! Redisson's `ByteArrayCodec`.

use super::Codec;
use std::convert::Infallible;

/// Java: `org.redisson.client.codec.ByteArrayCodec`: the `byte[]` as it is.
///
/// ```
/// use delayq_codec::{ByteArrayCodec, Codec};
///
/// assert_eq!(ByteArrayCodec.encode(&[1, 2, 3]).unwrap(), [1, 2, 3]);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteArrayCodec;

impl Codec for ByteArrayCodec {
    type Value = Vec<u8>;
    type Borrowed = [u8];
    type Error = Infallible;

    fn name(&self) -> &'static str {
        "bytes"
    }

    fn encode(&self, value: &[u8]) -> Result<Vec<u8>, Infallible> {
        Ok(value.to_vec())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, Infallible> {
        Ok(bytes.to_vec())
    }
}
