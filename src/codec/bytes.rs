//! Redisson's `ByteArrayCodec`.

use super::Codec;
use std::convert::Infallible;

/// Java: `org.redisson.client.codec.ByteArrayCodec`: the `byte[]` as it is.
///
/// ```
/// use delayq::codec::{ByteArrayCodec, Codec};
///
/// assert_eq!(ByteArrayCodec.encode(&vec![1, 2, 3]).unwrap(), [1, 2, 3]);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteArrayCodec;

impl Codec for ByteArrayCodec {
    type Value = Vec<u8>;
    type Error = Infallible;

    fn name(&self) -> &'static str {
        "bytes"
    }

    fn encode(&self, value: &Vec<u8>) -> Result<Vec<u8>, Infallible> {
        Ok(value.clone())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, Infallible> {
        Ok(bytes.to_vec())
    }
}
