//! Redisson's Jackson codecs: [`JsonJacksonCodec`], [`TypedJsonJacksonCodec`] and
//! [`MsgPackJacksonCodec`] (feature `msgpack`).
//!
//! The encoding rules (how Rust types map to Java classes, where type information goes, number
//! and text formats, how decoding strips type information) are in `mapping.md` next to this
//! file, rendered on [`JsonJacksonCodec`]'s page. Files: `ser.rs` (serde → token tree with type
//! information), `json.rs` / `msgpack.rs` (writers and parsers), `de.rs` (token tree → serde),
//! `num.rs` (`Double.toString`), `java_map.rs` ([`JavaHashMap`]), `tree.rs` (the token tree).

mod de;
mod java_array;
mod java_map;
mod java_types;
mod json;
mod json_parse;
mod key_ser;
#[cfg(feature = "msgpack")]
mod msgpack;
mod num;
mod ser;
mod tree;

pub use self::java_map::JavaHashMap;

use super::Codec;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::marker::PhantomData;

/// Why a Jackson codec could not encode or decode a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JacksonError {
    /// A struct, enum or enum variant needs a Java class name for the type information, but its
    /// serde name is not one.
    #[error(
        "`{rust_name}` has no Java class name to write as type information: add \
         #[serde(rename = \"<fully.qualified.JavaClass>\")] to it"
    )]
    MissingClassName {
        /// The serde name that was found instead.
        rust_name: &'static str,
    },

    /// A map key Jackson cannot write as a field name.
    #[error("map keys must be strings, numbers, booleans, chars or unit enum variants, not {0}")]
    UnsupportedKey(&'static str),

    /// An integer outside MessagePack's 64-bit range.
    #[cfg(feature = "msgpack")]
    #[cfg_attr(docsrs, doc(cfg(feature = "msgpack")))]
    #[error("integer {0} does not fit MessagePack's 64-bit integers")]
    IntegerTooLarge(i128),

    /// The bytes are not one well-formed JSON value.
    #[error("invalid JSON: {0}")]
    Json(#[source] serde_json::Error),

    /// The bytes are not one well-formed MessagePack value (or use extension types).
    #[cfg(feature = "msgpack")]
    #[cfg_attr(docsrs, doc(cfg(feature = "msgpack")))]
    #[error("invalid MessagePack at byte {offset}: {reason}")]
    MsgPack {
        /// Where the problem is.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },

    /// A string read as a Java `byte[]` is not Base64.
    #[error("invalid Base64 for a byte array: {0}")]
    Base64(#[source] base64::DecodeError),

    /// The value does not fit the Rust type (serde's message, such as "invalid type: string
    /// \"x\", expected i64"), or serde reported another problem.
    #[error("{0}")]
    Message(String),
}

impl serde::ser::Error for JacksonError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        JacksonError::Message(msg.to_string())
    }
}

impl serde::de::Error for JacksonError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        JacksonError::Message(msg.to_string())
    }
}

fn to_node<T: Serialize + ?Sized>(value: &T, typed: bool) -> Result<tree::Node, JacksonError> {
    value.serialize(ser::Ser::root(typed))
}

fn from_node<T: DeserializeOwned>(node: tree::Node, typed: bool) -> Result<T, JacksonError> {
    T::deserialize(de::NodeDe::new(node, typed))
}

macro_rules! codec_boilerplate {
    ($name:ident) => {
        impl<T> $name<T> {
            /// Creates the codec.
            pub const fn new() -> Self {
                $name {
                    _value: PhantomData,
                }
            }
        }

        impl<T> Default for $name<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<T> Copy for $name<T> {}

        impl<T> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("value", &std::any::type_name::<T>())
                    .finish()
            }
        }
    };
}

/// Java: `org.redisson.codec.JsonJacksonCodec`: JSON with Jackson's `@class` type information.
///
/// How Rust types map to Java classes is described below, after the example.
///
/// ```
/// use delayq_codec::{Codec, JsonJacksonCodec};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, PartialEq, Serialize, Deserialize)]
/// #[serde(rename = "com.example.Order")]
/// struct Order {
///     sku: String,
///     id: i64,
/// }
///
/// let codec = JsonJacksonCodec::<Order>::new();
/// let order = Order { sku: "x".into(), id: 1 };
/// let bytes = codec.encode(&order).unwrap();
/// assert_eq!(bytes, br#"{"@class":"com.example.Order","id":1,"sku":"x"}"#);
/// assert_eq!(codec.decode(&bytes).unwrap(), order);
///
/// assert_eq!(JsonJacksonCodec::<i64>::new().encode(&42).unwrap(), br#"["java.lang.Long",42]"#);
/// ```
///
#[doc = include_str!("mapping.md")]
pub struct JsonJacksonCodec<T> {
    _value: PhantomData<fn() -> T>,
}

codec_boilerplate!(JsonJacksonCodec);

impl<T> Codec for JsonJacksonCodec<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Value = T;
    type Borrowed = T;
    type Error = JacksonError;

    fn name(&self) -> &'static str {
        "json-jackson"
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, JacksonError> {
        let node = to_node(value, true)?;
        let mut out = Vec::new();
        json::write(&node, &mut out);
        Ok(out)
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, JacksonError> {
        from_node(json::parse(bytes, true)?, true)
    }
}

/// Java: `org.redisson.codec.TypedJsonJacksonCodec`: plain JSON, no type information, with
/// the same settings as [`JsonJacksonCodec`] otherwise (NON_NULL, sorted properties, Jackson's
/// number and string formatting; see its documentation for the rules).
///
/// ```
/// use delayq_codec::{Codec, TypedJsonJacksonCodec};
/// use std::collections::BTreeMap;
///
/// let codec = TypedJsonJacksonCodec::<BTreeMap<String, i64>>::new();
/// let map = BTreeMap::from([("k".to_string(), 42)]);
/// assert_eq!(codec.encode(&map).unwrap(), br#"{"k":42}"#);
/// assert_eq!(codec.decode(br#"{"k":42}"#).unwrap(), map);
/// ```
pub struct TypedJsonJacksonCodec<T> {
    _value: PhantomData<fn() -> T>,
}

codec_boilerplate!(TypedJsonJacksonCodec);

impl<T> Codec for TypedJsonJacksonCodec<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Value = T;
    type Borrowed = T;
    type Error = JacksonError;

    fn name(&self) -> &'static str {
        "typed-json-jackson"
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, JacksonError> {
        let node = to_node(value, false)?;
        let mut out = Vec::new();
        json::write(&node, &mut out);
        Ok(out)
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, JacksonError> {
        from_node(json::parse(bytes, false)?, false)
    }
}

/// Java: `org.redisson.codec.MsgPackJacksonCodec`: the typing of [`JsonJacksonCodec`] on a
/// MessagePack token stream (msgpack-jackson). The rules, including the MessagePack formats, are
/// in [`JsonJacksonCodec`]'s documentation.
///
/// ```
/// use delayq_codec::{Codec, MsgPackJacksonCodec};
///
/// let codec = MsgPackJacksonCodec::<String>::new();
/// assert_eq!(codec.encode(&"hello".to_string()).unwrap(), b"\xa5hello");
/// assert_eq!(codec.decode(b"\xa5hello").unwrap(), "hello");
/// ```
#[cfg(feature = "msgpack")]
#[cfg_attr(docsrs, doc(cfg(feature = "msgpack")))]
pub struct MsgPackJacksonCodec<T> {
    _value: PhantomData<fn() -> T>,
}

#[cfg(feature = "msgpack")]
codec_boilerplate!(MsgPackJacksonCodec);

#[cfg(feature = "msgpack")]
impl<T> Codec for MsgPackJacksonCodec<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Value = T;
    type Borrowed = T;
    type Error = JacksonError;

    fn name(&self) -> &'static str {
        "msgpack-jackson"
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, JacksonError> {
        let node = to_node(value, true)?;
        let mut out = Vec::new();
        msgpack::write(&node, &mut out)?;
        Ok(out)
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, JacksonError> {
        from_node(msgpack::parse(bytes, true)?, true)
    }
}
