//! Redisson's `Kryo5Codec` (the default codec since Redisson 3.19.0), byte for byte.
//!
//! Redisson's settings: Kryo 5, references off, registration not required (classes are
//! written by name), variable-length ints, and a fresh class-name table for every Redis value.
//! The bytes written here are the bytes Java writes, so values offered from Rust can be
//! `remove`d from Java and the other way round.
//!
//! # Two ways in
//!
//! - **Typed**, through serde: `Kryo5Codec<T>` for any `T: Serialize + DeserializeOwned`.
//! - **Dynamic**: `Kryo5Codec<JavaValue>` reads any value of the supported classes into a
//!   [`JavaValue`] and writes one back.
//!
//! ```
//! use delayq_codec::Codec;
//! use delayq_codec::kryo::Kryo5Codec;
//! use serde::{Deserialize, Serialize};
//!
//! // Java: `package com.example; public class Order { long id; String sku; }`
//! #[derive(Debug, PartialEq, Serialize, Deserialize)]
//! #[serde(rename = "com.example.Order")]
//! struct Order {
//!     id: i64,
//!     sku: String,
//! }
//!
//! let codec = Kryo5Codec::<Order>::new();
//! let bytes = codec.encode(&Order { id: 1, sku: "x".into() }).unwrap();
//! assert_eq!(&bytes[..2], [0x01, 0x00]); // a class written by name, name id 0
//! assert_eq!(&bytes[bytes.len() - 3..], [0x02, 0x82, 0x78]); // id = 1, sku = "x"
//! assert_eq!(codec.decode(&bytes).unwrap(), Order { id: 1, sku: "x".into() });
//! ```
//!
//! # How Rust types map to Java
//!
//! Kryo writes no field names or tags, and what it writes for a field depends on the field's
//! *declared* Java type. The codec finds each Rust field's Java type by tracing the type's
//! `Deserialize` impl once (see [`JavaType`]):
//!
//! | Rust (field of a struct) | Java field | Kryo bytes |
//! |---|---|---|
//! | `i64`, `i32`, `i16`, `i8` | `long`, `int`, `short`, `byte` | zigzag varlong / varint, 2 bytes LE, 1 byte |
//! | `f64`, `f32`, `bool`, `char` | `double`, `float`, `boolean`, `char` | 8 / 4 bytes LE, 1 byte, 2 bytes LE (BMP only) |
//! | `Option<i64>` (… every primitive) | `Long` (… wrapper) | `00` null, or `01` + body |
//! | `String`, `Option<String>` | `String` | the string, `80` for null |
//! | `Vec<u8>` with `#[serde(with = "delayq_codec::kryo::byte_array")]`, or [`JavaBytes`] | `byte[]` | length+1 then bytes, `00` for null |
//! | [`JavaUuid`] | `UUID` | `00` null, or `01` + two longs LE |
//! | `Vec<T>` (any serde sequence) | `List<T'>` | class (`java.util.ArrayList`) + collection |
//! | `HashMap<K, V>`, `BTreeMap`, … | `Map<K', V'>` | class (`java.util.HashMap`) + map |
//! | a struct with `#[serde(rename = "com.x.Y")]` | a field of the non-final class `com.x.Y` | class + fields |
//! | [`JavaValue`] | `Object` | class + body |
//! | `i128`, `u128`, [`java::BigInteger`](crate::java::BigInteger) | `BigInteger` | class + length + two's-complement bytes |
//! | [`java::BigDecimal`](crate::java::BigDecimal) | `BigDecimal` | class + unscaled value + scale |
//! | a Rust enum of unit variants renamed to the Java enum class | that enum | its ordinal + 1 (`00` for null) |
//! | [`java::Date`](crate::java::Date), `Timestamp`, `Instant`, `Duration`, `LocalDate`, `LocalTime`, `LocalDateTime`, `OffsetDateTime`, `ZonedDateTime`, `ZoneId` | the same-named Java class | Kryo's `DateSerializer` / `TimeSerializers` bytes |
//! | [`java::Optional<T>`](crate::java::Optional) | `Optional<T>` | `01` marker, then the value with its class |
//! | a newtype renamed to an array class (`"[I"`, `"[Ljava.lang.String;"`, `"[Lcom.x.Item;"`) | that array | length + 1, then the elements (without their class when the element class is final) |
//! | a newtype renamed to `java.util.TreeMap`/`TreeSet`, `java.util.ImmutableCollections$List12`/`$ListN`/`$Set12`/`$SetN`/`$Map1`/`$MapN`, `java.util.Collections$EmptyList`/`$SingletonList`/…, `java.util.Arrays$ArrayList` | that class | Kryo's serializer for it (a null comparator after the size for the sorted ones; no nulls in the immutable ones) |
//! | a struct named in [`Kryo5Codec::record`] | a Java record | components sorted by name, without type arguments |
//!
//! At the root, and for elements and map entries, `T'` is the wrapper type (`Long` for `i64`).
//! Type arguments matter as they do in Kryo: a `List<String>` field writes its elements without
//! a class, a `List<Object>` (`Vec<JavaValue>`) field writes each element's class.
//!
//! - A struct is a POJO: `#[serde(rename = "<Class.getName()>")]` gives its Java class; the Rust
//!   struct must declare **every** non-static, non-transient Java field (superclass fields
//!   included), under the Java name (`#[serde(rename)]` works). Order does not matter: fields
//!   are written sorted by name, as Kryo does. Java POJO classes are assumed non-final.
//! - A newtype struct renamed to a Java collection or map class picks that class:
//!   `#[serde(rename = "java.util.LinkedList")] struct Queue(Vec<String>);` (see
//!   [`LIST_CLASSES`], [`SET_CLASSES`], [`MAP_CLASSES`]).
//! - Sequences default to `java.util.ArrayList`, maps to `java.util.HashMap` (a Rust `HashSet`
//!   is a sequence too, so wrap it to get a `java.util.HashSet`).
//!
//! # Map and set order
//!
//! Kryo writes a `HashMap`/`HashSet` in its iteration order, which follows the keys' Java
//! hash codes. The codec writes entries in the order it is given (a decoded `JavaValue` keeps
//! Java's order, so it re-encodes to the same bytes). For values built in Rust, turn on
//! [`Kryo5Codec::java_hash_order`]: `java.util.HashMap`/`java.util.HashSet` entries are then
//! written in the order a `new HashMap<>()` filled in the given order iterates, when every key
//! is a String, boxed primitive, UUID or null (otherwise, or with more than 8 keys in one
//! bucket, the given order is kept). This was checked against Java: every one of 2000 random
//! `HashMap<String, Long>` encodings equals what a `new HashMap<>()` filled with the same
//! entries writes. A map Java built with another capacity iterates differently, and no encoder
//! can know that; in particular a `HashMap` or `HashSet` that Java itself got from Kryo (read
//! off a queue) is sized for its element count (`size / 0.75 + 1`) and may iterate differently
//! from a freshly filled one. Use `BTreeMap` or an ordered map in Rust: a Rust `HashMap`
//! iterates in random order. Sets and maps must not hold duplicates (Java would drop them and
//! its bytes would differ).
//!
//! # Decoding is strict
//!
//! A typed request takes only the matching Java type: a Java `Integer` does not decode into an
//! `i64`, a `byte[]` not into a `String`, a `com.x.Sub` not into the struct for `com.x.Base`
//! ([`KryoError::Mismatch`]). So a decoded value always re-encodes to the same bytes.
//!
//! # Not supported, and the error you get
//!
//! | input | error |
//! |---|---|
//! | a POJO class with no schema (decoding `JavaValue`, or a class the Rust type does not reach) | [`KryoError::UnknownClass`]: "its fields cannot be read without a schema"; register it with [`Kryo5Codec::register`] or [`Kryo5Codec::with_class`] |
//! | `Collections.unmodifiable*`/`synchronized*`/`checked*` (Redisson 3.36+ writes them with Java serialization inside Kryo), `EnumMap`, `EnumSet`, `PriorityQueue`, `java.sql.Date`/`Time`, `Calendar`, `Locale`, other classes with their own Kryo serializers | [`KryoError::UnknownClass`] naming the class |
//! | an enum (decoding into `JavaValue`) whose constants are not registered ([`ClassSchema::enumeration`], or a Rust enum through [`Kryo5Codec::register`]) | [`KryoError::UnknownClass`] |
//! | a `TreeMap`/`TreeSet` with a comparator | [`KryoError::Unsupported`] naming the comparator's class |
//! | registered class ids other than Kryo's built-ins (Redisson's `allowedClasses` mode) | [`KryoError::UnregisteredClassId`] |
//! | references on (`useReferences = true`) | the bytes are misread and end in a [`KryoError::Malformed`] or similar error, never silently |
//! | Rust enums with data, or without a Java class name; unsigned integers below 128 bits | [`KryoError::Schema`] / [`KryoError::Unsupported`] |
//! | a `char` outside the BMP, a Java `char`/`String` with a lone surrogate | [`KryoError::Unsupported`] / [`KryoError::Malformed`] |
//! | a null in `ArrayDeque`, `ConcurrentLinkedQueue/Deque`, `ConcurrentHashMap`, `Hashtable` (Java cannot read it); a collection class not in the lists above | [`KryoError::Unsupported`] |
//! | truncated or trailing bytes, bad markers, nesting deeper than 128 | [`KryoError::UnexpectedEnd`], [`KryoError::TrailingBytes`], [`KryoError::Malformed`], [`KryoError::TooDeep`] |
//!
//! Decoding never panics on any input.

mod builtin;
mod de;
mod hash_order;
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub mod json_form;
mod read;
mod schema;
mod ser;
mod value;
mod wire;
mod write;

use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Codec;
use schema::Registry;

pub use value::{
    ClassKind, ClassSchema, JavaField, JavaObject, JavaType, JavaValue, Primitive, ARRAY_LIST,
    BYTE_ARRAY, HASH_MAP, HASH_SET, LINKED_HASH_MAP, LINKED_HASH_SET, LINKED_LIST, LIST12,
    LIST_CLASSES, LIST_N, MAP1, MAP_CLASSES, MAP_N, SET12, SET_CLASSES, SET_N, TREE_MAP, TREE_SET,
    UUID,
};

/// Deepest nesting of collections, maps and objects the codec reads or writes.
pub(crate) const MAX_DEPTH: usize = 128;

/// What went wrong encoding or decoding Kryo bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KryoError {
    /// The bytes ended in the middle of a value.
    #[error("unexpected end of input at byte {offset} while reading {what}")]
    UnexpectedEnd {
        /// Where the read started or stopped.
        offset: usize,
        /// What was being read.
        what: &'static str,
    },

    /// The bytes are not something Kryo writes.
    #[error("malformed Kryo data at byte {offset}: {detail}")]
    Malformed {
        /// Where.
        offset: usize,
        /// What is wrong.
        detail: String,
    },

    /// A class written by name that the codec cannot read.
    #[error(
        "unsupported class {class} at byte {offset}: its fields cannot be read without a schema \
         (register the Rust type with Kryo5Codec::register or a ClassSchema with \
         Kryo5Codec::with_class)"
    )]
    UnknownClass {
        /// The Java class name.
        class: String,
        /// Where its class id starts.
        offset: usize,
    },

    /// A class id that is neither a name nor one of Kryo's built-in registrations.
    #[error(
        "unregistered class id {id} at byte {offset}: only Kryo's built-in registrations are \
         known (Redisson's allowedClasses mode is not supported)"
    )]
    UnregisteredClassId {
        /// The registration id (the wire value minus 2).
        id: u32,
        /// Where.
        offset: usize,
    },

    /// The value ended before the bytes did.
    #[error("{count} bytes left over after the value (at byte {offset})")]
    TrailingBytes {
        /// Where the value ended.
        offset: usize,
        /// How many bytes are left.
        count: usize,
    },

    /// Collections, maps and objects nest deeper than the codec allows.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),

    /// The value cannot be written as Kryo would write it.
    #[error("cannot encode: {0}")]
    Unsupported(String),

    /// A value does not fit the Java type declared for it.
    #[error("type mismatch: {0}")]
    Mismatch(String),

    /// The Rust type cannot be mapped to Java classes.
    #[error("Rust type not usable with Kryo5Codec: {0}")]
    Schema(String),

    /// A message from a serde impl.
    #[error("{0}")]
    Custom(String),
}

impl serde::ser::Error for KryoError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        KryoError::Custom(msg.to_string())
    }
}

impl serde::de::Error for KryoError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        KryoError::Custom(msg.to_string())
    }
}

type Tracer = fn(&mut Registry) -> Result<(), KryoError>;

/// Java: `org.redisson.codec.Kryo5Codec` with its default settings.
///
/// `T` is the Rust value type: any `Serialize + DeserializeOwned` type that maps to Java as the
/// [module docs](self) describe, or [`JavaValue`] for dynamic values.
///
/// ```
/// use delayq_codec::Codec;
/// use delayq_codec::kryo::{JavaValue, Kryo5Codec};
///
/// let strings = Kryo5Codec::<String>::new();
/// assert_eq!(strings.encode(&"hello".to_owned()).unwrap(), [0x03, 0x68, 0x65, 0x6c, 0x6c, 0xef]);
///
/// let any = Kryo5Codec::<JavaValue>::new();
/// assert_eq!(any.decode(&[0x09, 0x54]).unwrap(), JavaValue::Long(42));
/// ```
pub struct Kryo5Codec<T> {
    java_hash_order: bool,
    extra: Vec<Tracer>,
    classes: Vec<ClassSchema>,
    records: Vec<String>,
    registry: OnceLock<Result<Registry, String>>,
    _value: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Kryo5Codec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kryo5Codec")
            .field("value", &std::any::type_name::<T>())
            .field("java_hash_order", &self.java_hash_order)
            .field("registered", &(self.extra.len() + self.classes.len()))
            .finish()
    }
}

impl<T> Clone for Kryo5Codec<T> {
    fn clone(&self) -> Self {
        Kryo5Codec {
            java_hash_order: self.java_hash_order,
            extra: self.extra.clone(),
            classes: self.classes.clone(),
            records: self.records.clone(),
            registry: self.registry.clone(),
            _value: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> Default for Kryo5Codec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: DeserializeOwned> Kryo5Codec<T> {
    /// The codec for `T`. The type's class schemas are traced on first use; a type that cannot
    /// be mapped makes every encode and decode fail with [`KryoError::Schema`].
    pub fn new() -> Self {
        Kryo5Codec {
            java_hash_order: false,
            extra: Vec::new(),
            classes: Vec::new(),
            records: Vec::new(),
            registry: OnceLock::new(),
            _value: PhantomData,
        }
    }

    /// Also knows the classes of `U` (for POJOs inside `Object` slots, e.g. in a
    /// `Kryo5Codec<JavaValue>`).
    #[must_use]
    pub fn register<U: DeserializeOwned>(mut self) -> Self {
        self.extra.push(schema::trace::<U>);
        self.registry = OnceLock::new();
        self
    }

    /// Also knows `schema` (for Java classes without a Rust type).
    #[must_use]
    pub fn with_class(mut self, schema: ClassSchema) -> Self {
        self.classes.push(schema);
        self.registry = OnceLock::new();
        self
    }

    /// Treats the struct whose serde name is `class` as a Java record: Kryo writes records with
    /// its `RecordSerializer` (components sorted by name, no type arguments, and a record is
    /// final, so a record-typed field carries no class).
    #[must_use]
    pub fn record(mut self, class: impl Into<String>) -> Self {
        self.records.push(class.into());
        self.registry = OnceLock::new();
        self
    }

    /// Write `java.util.HashMap` and `java.util.HashSet` entries in the order Java's
    /// `HashMap` iterates them (see the [module docs](self#map-and-set-order)). Off by default.
    #[must_use]
    pub fn java_hash_order(mut self, on: bool) -> Self {
        self.java_hash_order = on;
        self
    }

    fn registry(&self) -> Result<&Registry, KryoError> {
        self.registry
            .get_or_init(|| {
                let mut reg = Registry::default();
                for class in &self.records {
                    reg.mark_record(class);
                }
                schema::trace::<T>(&mut reg).map_err(|e| e.to_string())?;
                for trace in &self.extra {
                    trace(&mut reg).map_err(|e| e.to_string())?;
                }
                for class in &self.classes {
                    reg.add(class.clone()).map_err(|e| e.to_string())?;
                }
                Ok(reg)
            })
            .as_ref()
            .map_err(|e| KryoError::Schema(e.clone()))
    }

    /// Encodes a [`JavaValue`] as this codec would (its own settings, no serde).
    pub fn encode_java(&self, value: &JavaValue) -> Result<Vec<u8>, KryoError> {
        write::encode(value, self.java_hash_order)
    }

    /// Decodes into a [`JavaValue`] with this codec's known classes.
    pub fn decode_java(&self, bytes: &[u8]) -> Result<JavaValue, KryoError> {
        read::decode(bytes, self.registry()?)
    }
}

impl<T> Codec for Kryo5Codec<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Value = T;
    type Borrowed = T;
    type Error = KryoError;

    fn name(&self) -> &'static str {
        "kryo5"
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>, KryoError> {
        let java = value.serialize(ser::ToJava::new(self.registry()?))?;
        write::encode(&java, self.java_hash_order)
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, KryoError> {
        let java = read::decode(bytes, self.registry()?)?;
        T::deserialize(de::FromJava(java))
    }
}

/// A `java.util.UUID`, as the 128-bit number its text form shows (most significant bits first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JavaUuid(pub u128);

impl Serialize for JavaUuid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_newtype_struct(UUID, &self.0)
    }
}

impl<'de> Deserialize<'de> for JavaUuid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = JavaUuid;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a java.util.UUID")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<JavaUuid, D::Error> {
                u128::deserialize(d).map(JavaUuid)
            }
        }
        deserializer.deserialize_newtype_struct(UUID, V)
    }
}

/// A Java `byte[]` (a `Vec<u8>` serialized as bytes, not as a list of numbers).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct JavaBytes(pub Vec<u8>);

impl Serialize for JavaBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        byte_array::serialize(&self.0, serializer)
    }
}

impl<'de> Deserialize<'de> for JavaBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        byte_array::deserialize(deserializer).map(JavaBytes)
    }
}

/// `#[serde(with = "delayq_codec::kryo::byte_array")]` on a `Vec<u8>` field makes it a Java
/// `byte[]` field (without it a `Vec<u8>` is a list of numbers, which Java cannot have).
pub mod byte_array {
    use std::fmt;

    use serde::de::{SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    /// Serializes the bytes with `serialize_bytes`.
    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(bytes)
    }

    /// Deserializes bytes (or a sequence of numbers, for other formats).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte array")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_byte_buf(V)
    }
}
