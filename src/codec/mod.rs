//! Codecs: the bytes Redisson's codecs write for a value.
//!
//! A queue's values go through its [`Codec`] exactly as they would through the Java queue's
//! codec: the encoded bytes are what sits on the target list, and what `remove`/`contains`
//! compare. So an encoder must produce the *canonical* bytes Java writes for an equal value.
//!
//! | Redisson codec | delayq codec | Rust value |
//! |---|---|---|
//! | `StringCodec` | [`StringCodec`] | `String` |
//! | `LongCodec` | [`LongCodec`] | `i64` |
//! | `ByteArrayCodec` | [`ByteArrayCodec`] | `Vec<u8>` |
//! | `JsonJacksonCodec` | `JsonJacksonCodec<T>` (feature `json`) | any serde type |
//! | `TypedJsonJacksonCodec` | `TypedJsonJacksonCodec<T>` (feature `json`) | any serde type |
//! | `MsgPackJacksonCodec` | `MsgPackJacksonCodec<T>` (feature `msgpack`) | any serde type |
//! | `Kryo5Codec` | `Kryo5Codec<T>` (feature `kryo`) | see the module |

mod bytes;
#[cfg(feature = "json")]
mod jackson;
pub mod java;
#[cfg(feature = "kryo")]
#[cfg_attr(docsrs, doc(cfg(feature = "kryo")))]
pub mod kryo;
mod long;
mod string;

pub use self::bytes::ByteArrayCodec;
#[cfg(feature = "msgpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "msgpack")))]
pub use self::jackson::MsgPackJacksonCodec;
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub use self::jackson::{JacksonError, JavaHashMap, JsonJacksonCodec, TypedJsonJacksonCodec};
#[cfg(feature = "kryo")]
#[cfg_attr(docsrs, doc(cfg(feature = "kryo")))]
pub use self::kryo::{Kryo5Codec, KryoError};
pub use self::long::{LongCodec, LongCodecError};
pub use self::string::{StringCodec, StringCodecError};

/// Turns values into the bytes a Redisson codec writes, and back.
///
/// Implementations must be deterministic: equal values give equal bytes, so that
/// [`DelayedQueue::remove`](crate::DelayedQueue::remove) finds values offered by Java.
///
/// Values are encoded from their borrowed form ([`Borrowed`](Codec::Borrowed)): `str` for
/// [`StringCodec`], `[u8]` for [`ByteArrayCodec`], the value type itself for the others. So a
/// queue of `String` takes `&str` where it takes a value (`queue.offer("order-17", delay)`).
///
/// # Examples
///
/// ```
/// use delayq::codec::{Codec, LongCodec};
///
/// let codec = LongCodec;
/// assert_eq!(codec.encode(&42).unwrap(), b"42");
/// assert_eq!(codec.decode(b"-7").unwrap(), -7);
/// ```
pub trait Codec: Send + Sync + 'static {
    /// The Rust type of the values.
    type Value: Send + Sync + std::borrow::Borrow<Self::Borrowed>;
    /// What the codec encodes from: a borrowed form of [`Value`](Codec::Value) (`str` for
    /// `String`), or the value type itself.
    type Borrowed: ?Sized + Sync;
    /// The codec's own error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// A short name for messages, such as `"string"` or `"json-jackson"`.
    fn name(&self) -> &'static str;

    /// Encodes one value.
    fn encode(&self, value: &Self::Borrowed) -> Result<Vec<u8>, Self::Error>;

    /// Decodes one value.
    fn decode(&self, bytes: &[u8]) -> Result<Self::Value, Self::Error>;
}

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
