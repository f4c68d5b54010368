//! Redisson's codecs, byte for byte: the bytes a Java service's codec writes for a value, and
//! back. The codec layer of [delayq](https://docs.rs/delayq), which re-exports this crate as
//! `delayq::codec`; usable on its own wherever Rust reads or writes values that Redisson wrote.
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

#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![doc(test(attr(deny(warnings), allow(dead_code, unused_variables))))]
#![cfg_attr(not(test), forbid(clippy::panic, clippy::print_stdout))]
#![cfg_attr(docsrs, feature(doc_cfg))]

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
/// delayq's `DelayedQueue::remove` finds values offered by Java.
///
/// Values are encoded from their borrowed form ([`Borrowed`](Codec::Borrowed)): `str` for
/// [`StringCodec`], `[u8]` for [`ByteArrayCodec`], the value type itself for the others. So a
/// queue of `String` takes `&str` where it takes a value (`queue.offer("order-17", delay)`).
///
/// # Examples
///
/// ```
/// use delayq_codec::{Codec, LongCodec};
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

/// The README's sample, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
