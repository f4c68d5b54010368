//! Redisson's codecs, byte for byte: the [`delayq-codec`](https://docs.rs/delayq-codec) crate,
//! re-exported. Its crate docs hold the table of Redisson codecs and the Java types each one
//! carries.

pub use delayq_codec::*;

/// Encodes through `codec`, mapping the codec's error into [`crate::Error::Encode`].
pub(crate) fn encode_value<C: Codec>(codec: &C, value: &C::Borrowed) -> crate::Result<Vec<u8>> {
    codec.encode(value).map_err(|e| crate::Error::Encode {
        codec: codec.name(),
        source: Box::new(e),
    })
}

/// Decodes through `codec`, mapping the codec's error into [`crate::Error::Decode`] (raw bytes kept).
pub(crate) fn decode_value<C: Codec>(codec: &C, raw: ::bytes::Bytes) -> crate::Result<C::Value> {
    codec.decode(&raw).map_err(|e| crate::Error::Decode {
        codec: codec.name(),
        raw,
        source: Box::new(e),
    })
}
