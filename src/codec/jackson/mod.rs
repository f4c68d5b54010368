//! Redisson's Jackson codecs: [`JsonJacksonCodec`], [`TypedJsonJacksonCodec`] and
//! [`MsgPackJacksonCodec`] (feature `msgpack`).
//!
//! Java peers compare encoded bytes (`remove(value)`, `contains(value)`), so these codecs write
//! the *canonical* bytes Jackson writes for an equal Java value. This page is the full list of
//! rules; when a compatibility test against Redisson finds a difference, look here first.
//!
//! # Mapping Rust types to Java
//!
//! Redisson configures Jackson with NON_NULL inclusion, field visibility, properties sorted
//! alphabetically, and (JsonJackson and MsgPack only) `NON_FINAL` default typing with
//! `JsonTypeInfo.Id.CLASS`: every value whose declared Java type is not final carries its class
//! name, plus a Redisson special case that types `java.lang.Long` even though it is final.
//!
//! | Rust | Java | JSON (JsonJacksonCodec, at the root) |
//! |---|---|---|
//! | `String`, `&str` | `String` | `"hello"` |
//! | `bool` | `Boolean` | `true` |
//! | `i32`, `u16`, `u8` | `Integer` | `42` |
//! | `i64`, `u32`, `u64` | `Long` | `["java.lang.Long",42]` |
//! | `i64`/`u64`/`i128` beyond `Long` | `BigInteger` | `["java.math.BigInteger",18446744073709551615]` |
//! | `i16` / `i8` | `Short` / `Byte` | `7` |
//! | `f64` | `Double` | `1.5` (`"NaN"`, `"Infinity"` when not finite) |
//! | `f32` | `Float` | `1.5` |
//! | `char` | `Character` | `"c"` |
//! | bytes (`serialize_bytes`, e.g. `serde_bytes::ByteBuf`) | `byte[]` | `"AQID"` (Base64) |
//! | `Vec<T>`, slices, tuples, sets | `java.util.ArrayList` | `["java.util.ArrayList",["a"]]` |
//! | maps | `java.util.HashMap` | `{"@class":"java.util.HashMap","k":"v"}` |
//! | struct with `#[serde(rename = "com.example.Order")]` | that class | `{"@class":"com.example.Order","id":1,"sku":"x"}` |
//! | unit enum variant | an enum constant | `"RED"` |
//! | `None`, `()` | `null` | `null` |
//!
//! A plain `Vec<u8>` is a sequence of numbers to serde; use `serde_bytes` (or any type calling
//! `serialize_bytes`) for a Java `byte[]`. Note that Jackson writes `byte[]` without type
//! information, so a Java consumer reading into `Object` gets the *String* `"AQID"`.
//!
//! ## Where type information goes
//!
//! Whether a value is typed depends on the Java *slot* it is written into, as in Jackson:
//!
//! - **Root**: Jackson uses the runtime class. `Long`, collections, maps and POJOs are typed;
//!   final scalars (`Integer`, `Short`, `Float`, `Character`, `byte[]`, enums, ...) are not.
//! - **`Object` slots**: elements and values of a collection or map written at the root (their
//!   Java type argument is erased to `Object`). Everything except the "natural" JSON types
//!   (`String`, `Boolean`, `Integer`, finite `Double`) is typed, so an `i16` element becomes
//!   `["java.lang.Short",7]`, an `f32` `["java.lang.Float",1.5]`, bytes `["[B","AQID"]` and a unit
//!   enum variant `["com.example.Color","RED"]` (the enum needs a Java class name then).
//! - **POJO fields**: the Rust field's type is the declared Java type. An `i64` field is a
//!   primitive `long` (`"id":1`); an `Option<i64>` field is a boxed `Long`
//!   (`"id":["java.lang.Long",1]`, left out when `None`). Other scalars are final and untyped;
//!   collections, maps and nested POJOs are typed.
//! - **Inside a collection or map held by a field** (Java `List<Long>`, `Map<String, Float>`):
//!   the declared type argument. `Long` is typed, other scalars are not; collections, maps and
//!   POJOs are typed.
//!
//! Objects carry their type as a leading `"@class"` property; everything else (collections,
//! scalars) as a two-element wrapper array `["class", value]`.
//!
//! ## Java class names
//!
//! - A struct (a POJO) names its Java class with serde's container rename:
//!   `#[serde(rename = "com.example.Order")]`. JsonJackson and MsgPack refuse a struct whose name
//!   is not a dotted Java class name ([`JacksonError::MissingClassName`]); TypedJson does not need
//!   one. POJOs are assumed to be non-final classes (a final class gets no `@class` from
//!   Jackson, and Redisson cannot decode it back to `Object` anyway).
//! - A newtype struct whose name is a Java class name sets the class of what it wraps:
//!   `#[serde(rename = "java.util.LinkedHashMap")] struct Linked(BTreeMap<String, i64>)` writes
//!   `{"@class":"java.util.LinkedHashMap",...}`, `#[serde(rename = "java.util.LinkedList")]
//!   struct L(Vec<String>)` writes `["java.util.LinkedList",[...]]`, and
//!   `#[serde(rename = "java.util.UUID")] struct Uuid(String)` writes `["java.util.UUID","..."]`
//!   (Redisson 4.2.0+ types UUIDs that way). Such a newtype is typed in every slot.
//!   Other newtype structs are transparent.
//! - A tuple struct with a Java class name is a collection of that class.
//! - Enum variants carrying data are polymorphic subclasses: rename each variant to its Java
//!   class (`#[serde(rename = "com.example.Circle")] Circle { r: f64 }`). A struct variant is a
//!   POJO of that class, a newtype variant sets the class of its content. When decoding, the
//!   `@class` (or wrapper class) picks the variant. In TypedJson, data variants use serde's
//!   external tagging (`{"Circle":{...}}`), which Java cannot produce.
//!
//! ## POJOs and maps
//!
//! - POJO properties are sorted like Java's `String.compareTo` (UTF-16 code units) after serde
//!   renames (`#[serde(rename_all = "camelCase")]` gives Java field names). Properties whose value
//!   is `null` (`None`) are left out (NON_NULL). `#[serde(flatten)]` turns a struct into a map for
//!   serde, so it is written as a `java.util.HashMap`; avoid it.
//! - Map entries keep the Rust map's iteration order (Jackson does not sort map entries). Entries
//!   whose value is `null` are left out (Redisson's NON_NULL also applies to map contents).
//!   Map keys are plain field names: strings as is, numbers in decimal, `bool`, `char`, unit
//!   variants by name.
//! - **Byte equality with a Java `HashMap`** needs the entries in the order Java iterates them,
//!   which depends on `String.hashCode` and the table size. `std::collections::HashMap`'s random
//!   order never matches; `BTreeMap` matches only by chance. Wrap string-keyed maps in
//!   [`JavaHashMap`] to get Java's order.
//!
//! ## Numbers and text
//!
//! - JSON doubles are written like `Double.toString` (`1.5`, `100.0`, `1.0E20`, `1.0E-5`), floats
//!   like `Float.toString`: shortest round-trip digits, JDK 19+ layout. Before JDK 19, Java
//!   sometimes printed a longer, non-shortest form (e.g. `2.0E-3` was `0.0020`); a Java peer on an
//!   older JDK can then differ in the last digits. Non-finite values are the strings `"NaN"`,
//!   `"Infinity"`, `"-Infinity"`.
//! - JSON text is compact UTF-8. Strings escape `"` and `\`, control characters as `\b \t \n \f
//!   \r` or `\u00XX` (upper-case hex); `/`, DEL and non-ASCII are written raw.
//! - MessagePack: integers in the smallest format (non-negative values use the unsigned
//!   formats), `f64` as float64, `f32` as float32, strings fixstr/str8/str16/str32, bytes as
//!   bin8/16/32. Integers beyond 64 bits cannot be written ([`JacksonError::IntegerTooLarge`]).
//!
//! # Decoding
//!
//! The bytes are parsed (exactly one value; trailing data is an error) into a token tree, and the
//! Rust type reads from it:
//!
//! - `@class` properties are removed from objects; with JsonJackson/MsgPack, wrapper arrays
//!   `["class", value]` (the class being a syntactically valid Java class name such as
//!   `java.lang.Long`, `com.example.Outer$Inner`, `[B`) are unwrapped where the Rust type wants a
//!   scalar, a sequence (when the value is an array) or a map. So `42`, `["java.lang.Long",42]`
//!   and `["java.lang.Integer",42]` all decode as an `i64`, and a genuine two-element array
//!   like `["a.b","c"]` still decodes as a `Vec<String>`.
//! - Decoding into `serde_json::Value` (or anything using `deserialize_any`) strips all type
//!   information, which suits unknown classes.
//! - Integers fit any Rust integer type they are in range for; integral floats are accepted for
//!   integers and integers for floats. `"NaN"`/`"Infinity"`/`"-Infinity"` decode as floats.
//!   Bytes decode from MessagePack `bin` or a Base64 string. Unknown properties are ignored
//!   unless the struct says `#[serde(deny_unknown_fields)]`.
//! - TypedJsonJacksonCodec does not unwrap anything: it reads plain JSON.
//! - Bad input is an error ([`JacksonError`]), never a panic. Nesting deeper than 128 levels is
//!   rejected.

mod de;
mod java_map;
mod json;
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
/// See the [module docs](self) for how Rust types map to Java classes.
///
/// ```
/// use delayq::codec::{Codec, JsonJacksonCodec};
/// use serde::Serialize;
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
pub struct JsonJacksonCodec<T> {
    _value: PhantomData<fn() -> T>,
}

codec_boilerplate!(JsonJacksonCodec);

impl<T> Codec for JsonJacksonCodec<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Value = T;
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
/// number and string formatting).
///
/// ```
/// use delayq::codec::{Codec, TypedJsonJacksonCodec};
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
/// MessagePack token stream (msgpack-jackson).
///
/// ```
/// use delayq::codec::{Codec, MsgPackJacksonCodec};
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
