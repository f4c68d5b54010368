//! A dynamic Java value, Java declared types, and class schemas.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{self, Serializer};
use serde::{Deserialize, Serialize};

/// `java.util.ArrayList`.
pub const ARRAY_LIST: &str = "java.util.ArrayList";
/// `java.util.LinkedList`.
pub const LINKED_LIST: &str = "java.util.LinkedList";
/// `java.util.HashSet`.
pub const HASH_SET: &str = "java.util.HashSet";
/// `java.util.LinkedHashSet`.
pub const LINKED_HASH_SET: &str = "java.util.LinkedHashSet";
/// `java.util.HashMap`.
pub const HASH_MAP: &str = "java.util.HashMap";
/// `java.util.LinkedHashMap`.
pub const LINKED_HASH_MAP: &str = "java.util.LinkedHashMap";
/// `java.util.UUID`.
pub const UUID: &str = "java.util.UUID";
/// The Java name of `byte[]`.
pub const BYTE_ARRAY: &str = "[B";

/// Java lists and queues written by Kryo's `CollectionSerializer` that this codec reads and
/// writes (besides the sets in [`SET_CLASSES`]).
pub const LIST_CLASSES: &[&str] = &[
    ARRAY_LIST,
    LINKED_LIST,
    "java.util.ArrayDeque",
    "java.util.Vector",
    "java.util.concurrent.CopyOnWriteArrayList",
    "java.util.concurrent.ConcurrentLinkedQueue",
    "java.util.concurrent.ConcurrentLinkedDeque",
];

/// Java sets written by Kryo's `CollectionSerializer` that this codec reads and writes.
pub const SET_CLASSES: &[&str] = &[
    HASH_SET,
    LINKED_HASH_SET,
    "java.util.concurrent.CopyOnWriteArraySet",
];

/// Java maps written by Kryo's `MapSerializer` that this codec reads and writes.
pub const MAP_CLASSES: &[&str] = &[
    HASH_MAP,
    LINKED_HASH_MAP,
    "java.util.concurrent.ConcurrentHashMap",
    "java.util.Hashtable",
];

/// The name serde sees for a [`JavaValue`]: the codec's serializer and deserializer treat it as
/// a slot declared `Object`.
pub(crate) const JAVA_VALUE_TOKEN: &str = "$delayq::kryo::JavaValue";

/// A Java primitive type (and, boxed, its wrapper class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Primitive {
    /// `boolean` / `Boolean`: one byte, `00` or `01`.
    Boolean,
    /// `byte` / `Byte`: one byte.
    Byte,
    /// `short` / `Short`: 2 bytes little-endian.
    Short,
    /// `char` / `Character`: one UTF-16 unit, 2 bytes little-endian.
    Char,
    /// `int` / `Integer`: zigzag varint.
    Int,
    /// `long` / `Long`: zigzag varlong.
    Long,
    /// `float` / `Float`: 4 bytes little-endian IEEE 754.
    Float,
    /// `double` / `Double`: 8 bytes little-endian IEEE 754.
    Double,
}

impl Primitive {
    /// Kryo's built-in registration id (as written on the wire, i.e. id + 2).
    pub(crate) fn wire_id(self) -> u32 {
        match self {
            Primitive::Int => 2,
            Primitive::Float => 4,
            Primitive::Boolean => 5,
            Primitive::Byte => 6,
            Primitive::Char => 7,
            Primitive::Short => 8,
            Primitive::Long => 9,
            Primitive::Double => 10,
        }
    }

    pub(crate) fn from_wire_id(id: u32) -> Option<Primitive> {
        Some(match id {
            2 => Primitive::Int,
            4 => Primitive::Float,
            5 => Primitive::Boolean,
            6 => Primitive::Byte,
            7 => Primitive::Char,
            8 => Primitive::Short,
            9 => Primitive::Long,
            10 => Primitive::Double,
            _ => return None,
        })
    }

    /// The wrapper class name, which Kryo maps to the same registration.
    pub(crate) fn from_wrapper_name(name: &str) -> Option<Primitive> {
        Some(match name {
            "java.lang.Integer" | "int" => Primitive::Int,
            "java.lang.Float" | "float" => Primitive::Float,
            "java.lang.Boolean" | "boolean" => Primitive::Boolean,
            "java.lang.Byte" | "byte" => Primitive::Byte,
            "java.lang.Character" | "char" => Primitive::Char,
            "java.lang.Short" | "short" => Primitive::Short,
            "java.lang.Long" | "long" => Primitive::Long,
            "java.lang.Double" | "double" => Primitive::Double,
            _ => return None,
        })
    }

    /// The Java keyword.
    pub fn java_name(self) -> &'static str {
        match self {
            Primitive::Boolean => "boolean",
            Primitive::Byte => "byte",
            Primitive::Short => "short",
            Primitive::Char => "char",
            Primitive::Int => "int",
            Primitive::Long => "long",
            Primitive::Float => "float",
            Primitive::Double => "double",
        }
    }
}

/// The *declared* Java type of a slot (a field, a collection's element type argument, a map's
/// key or value type argument, or the root, which is always [`JavaType::object`]).
///
/// Kryo's bytes depend on the declared type, not only on the value: a `long` field is a bare
/// varlong, a `Long` field adds a null marker, an `Object` field adds the class, and a
/// `List<String>` field writes its elements without their class while a `List<Object>` field
/// writes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JavaType {
    /// A primitive field (`long id`): the body only, never null.
    Primitive(Primitive),
    /// A wrapper type (`Long id`), final: `00` for null, or `01` and the body.
    Boxed(Primitive),
    /// `String`, final: the string with its own null form (`80`).
    String,
    /// `byte[]`, final: length + 1 (`00` for null) then the bytes.
    ByteArray,
    /// `java.util.UUID`, final: `00` for null, or `01` and two little-endian longs.
    Uuid,
    /// Any non-final declared type (`Object`, `List<E>`, `Map<K, V>`, a non-final POJO class):
    /// the value's class is written first (`00` for null). `type_args` are the declared type
    /// arguments, which decide how a collection's elements or a map's keys and values are
    /// written (Kryo's generics).
    NonFinal {
        /// `[E]` for a collection, `[K, V]` for a map, empty for `Object` or a raw type.
        type_args: Vec<JavaType>,
    },
}

impl JavaType {
    /// `Object` (or any non-final type without type arguments).
    pub fn object() -> JavaType {
        JavaType::NonFinal {
            type_args: Vec::new(),
        }
    }

    /// `List<E>` (also `Set<E>`, `Collection<E>`).
    pub fn list_of(element: JavaType) -> JavaType {
        JavaType::NonFinal {
            type_args: vec![element],
        }
    }

    /// `Map<K, V>`.
    pub fn map_of(key: JavaType, value: JavaType) -> JavaType {
        JavaType::NonFinal {
            type_args: vec![key, value],
        }
    }

    /// True when Kryo treats the declared type as final: no class is written for the slot.
    pub(crate) fn is_final(&self) -> bool {
        !matches!(self, JavaType::NonFinal { .. })
    }
}

/// The schema of a Java class written by Kryo's `FieldSerializer`: its name and its fields
/// (every non-static, non-transient field of the class and its superclasses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSchema {
    /// `Class.getName()`, e.g. `com.example.Order` or `com.example.Outer$Inner`.
    pub class: String,
    /// Field names and declared types, in Kryo's order (sorted by name).
    pub fields: Vec<(String, JavaType)>,
}

impl ClassSchema {
    /// A schema; the fields are sorted into Kryo's order (Java `String.compareTo` on the names).
    pub fn new(
        class: impl Into<String>,
        fields: impl IntoIterator<Item = (String, JavaType)>,
    ) -> Self {
        let mut fields: Vec<(String, JavaType)> = fields.into_iter().collect();
        sort_fields(&mut fields, |f| &f.0);
        ClassSchema {
            class: class.into(),
            fields,
        }
    }
}

/// Sorts by name the way Kryo's `CachedFields` does: `String.compareTo`, i.e. by UTF-16 units.
/// The sort is stable, like Java's object sort.
pub(crate) fn sort_fields<T>(fields: &mut [T], name: impl Fn(&T) -> &str) {
    fields.sort_by(|a, b| name(a).encode_utf16().cmp(name(b).encode_utf16()));
}

/// One field of a [`JavaObject`]: its name, declared type and value.
#[derive(Debug, Clone, PartialEq)]
pub struct JavaField {
    /// The Java field name.
    pub name: String,
    /// The declared type, which decides the bytes.
    pub ty: JavaType,
    /// The value (must fit `ty`: e.g. a [`JavaType::Primitive`] field cannot be null).
    pub value: JavaValue,
}

impl JavaField {
    /// A field.
    pub fn new(name: impl Into<String>, ty: JavaType, value: JavaValue) -> Self {
        JavaField {
            name: name.into(),
            ty,
            value,
        }
    }
}

/// An instance of a POJO class written by Kryo's `FieldSerializer`.
#[derive(Debug, Clone, PartialEq)]
pub struct JavaObject {
    /// `Class.getName()`.
    pub class: String,
    /// Every field, in Kryo's order (sorted by name). [`JavaObject::new`] sorts them.
    pub fields: Vec<JavaField>,
}

impl JavaObject {
    /// An object; the fields are sorted into Kryo's order.
    pub fn new(class: impl Into<String>, fields: impl IntoIterator<Item = JavaField>) -> Self {
        let mut fields: Vec<JavaField> = fields.into_iter().collect();
        sort_fields(&mut fields, |f| &f.name);
        JavaObject {
            class: class.into(),
            fields,
        }
    }

    /// The value of the field called `name`.
    pub fn get(&self, name: &str) -> Option<&JavaValue> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| &f.value)
    }
}

/// A Java value as Kryo5Codec reads and writes it, without a Rust type.
///
/// | variant | Java |
/// |---|---|
/// | `Null` | `null` |
/// | `Bool`, `Byte`, `Short`, `Char`, `Int`, `Long`, `Float`, `Double` | the wrapper classes |
/// | `String` | `java.lang.String` |
/// | `Bytes` | `byte[]` |
/// | `Uuid` | `java.util.UUID` (most significant bits first, as `UUID.toString()` reads) |
/// | `List` | `ArrayList`, `LinkedList`, … ([`LIST_CLASSES`]) |
/// | `Set` | `HashSet`, `LinkedHashSet`, … ([`SET_CLASSES`]) |
/// | `Map` | `HashMap`, `LinkedHashMap`, … ([`MAP_CLASSES`]) |
/// | `Object` | a POJO whose [`ClassSchema`] is known |
///
/// As a field of a serde struct, a `JavaValue` is a field declared `Object`. Its serde impls
/// only work with this codec; other serde formats get an error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum JavaValue {
    /// `null`.
    Null,
    /// `java.lang.Boolean`.
    Bool(bool),
    /// `java.lang.Byte`.
    Byte(i8),
    /// `java.lang.Short`.
    Short(i16),
    /// `java.lang.Character`. Java chars that are lone surrogates cannot be held and fail to
    /// decode.
    Char(char),
    /// `java.lang.Integer`.
    Int(i32),
    /// `java.lang.Long`.
    Long(i64),
    /// `java.lang.Float`.
    Float(f32),
    /// `java.lang.Double`.
    Double(f64),
    /// `java.lang.String`.
    String(String),
    /// `byte[]`.
    Bytes(Vec<u8>),
    /// `java.util.UUID`, as the 128-bit number its text form shows.
    Uuid(u128),
    /// A list or queue; `class` is one of [`LIST_CLASSES`].
    List {
        /// The Java class.
        class: String,
        /// The elements in order.
        items: Vec<JavaValue>,
    },
    /// A set; `class` is one of [`SET_CLASSES`].
    Set {
        /// The Java class.
        class: String,
        /// The elements in iteration order (which is what Kryo writes).
        items: Vec<JavaValue>,
    },
    /// A map; `class` is one of [`MAP_CLASSES`].
    Map {
        /// The Java class.
        class: String,
        /// The entries in iteration order (which is what Kryo writes).
        entries: Vec<(JavaValue, JavaValue)>,
    },
    /// A POJO.
    Object(JavaObject),
}

impl JavaValue {
    /// A `java.util.ArrayList`.
    pub fn array_list(items: impl IntoIterator<Item = JavaValue>) -> JavaValue {
        JavaValue::List {
            class: ARRAY_LIST.to_owned(),
            items: items.into_iter().collect(),
        }
    }

    /// A `java.util.HashMap` with entries in the given order.
    pub fn hash_map(entries: impl IntoIterator<Item = (JavaValue, JavaValue)>) -> JavaValue {
        JavaValue::Map {
            class: HASH_MAP.to_owned(),
            entries: entries.into_iter().collect(),
        }
    }

    /// A short description of the value's Java type, for error messages.
    pub fn java_type_name(&self) -> String {
        match self {
            JavaValue::Null => "null".into(),
            JavaValue::Bool(_) => "java.lang.Boolean".into(),
            JavaValue::Byte(_) => "java.lang.Byte".into(),
            JavaValue::Short(_) => "java.lang.Short".into(),
            JavaValue::Char(_) => "java.lang.Character".into(),
            JavaValue::Int(_) => "java.lang.Integer".into(),
            JavaValue::Long(_) => "java.lang.Long".into(),
            JavaValue::Float(_) => "java.lang.Float".into(),
            JavaValue::Double(_) => "java.lang.Double".into(),
            JavaValue::String(_) => "java.lang.String".into(),
            JavaValue::Bytes(_) => "byte[]".into(),
            JavaValue::Uuid(_) => UUID.into(),
            JavaValue::List { class, .. } | JavaValue::Set { class, .. } => class.clone(),
            JavaValue::Map { class, .. } => class.clone(),
            JavaValue::Object(o) => o.class.clone(),
        }
    }
}

impl From<&str> for JavaValue {
    fn from(s: &str) -> Self {
        JavaValue::String(s.to_owned())
    }
}

impl From<String> for JavaValue {
    fn from(s: String) -> Self {
        JavaValue::String(s)
    }
}

impl From<i64> for JavaValue {
    fn from(v: i64) -> Self {
        JavaValue::Long(v)
    }
}

impl From<i32> for JavaValue {
    fn from(v: i32) -> Self {
        JavaValue::Int(v)
    }
}

impl From<bool> for JavaValue {
    fn from(v: bool) -> Self {
        JavaValue::Bool(v)
    }
}

impl From<f64> for JavaValue {
    fn from(v: f64) -> Self {
        JavaValue::Double(v)
    }
}

impl From<JavaObject> for JavaValue {
    fn from(o: JavaObject) -> Self {
        JavaValue::Object(o)
    }
}

// A JavaValue passes through serde by a hand-off: its Serialize impl leaves a copy of itself
// here and names the token; the codec's serializer sees the token and takes the copy. The
// deserializer does the reverse. The slot is per thread and only filled for the duration of one
// call, so nothing leaks between values.
thread_local! {
    static HANDOFF: Cell<Option<JavaValue>> = const { Cell::new(None) };
}

pub(crate) fn handoff_put(v: JavaValue) {
    HANDOFF.with(|h| h.set(Some(v)));
}

pub(crate) fn handoff_take() -> Option<JavaValue> {
    HANDOFF.with(|h| h.take())
}

struct OnlyKryo;

impl Serialize for OnlyKryo {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(ser::Error::custom(
            "a JavaValue can only be serialized by delayq's Kryo5Codec",
        ))
    }
}

impl Serialize for JavaValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        handoff_put(self.clone());
        let result = serializer.serialize_newtype_struct(JAVA_VALUE_TOKEN, &OnlyKryo);
        // Another format never takes the copy; drop it.
        handoff_take();
        result
    }
}

impl<'de> Deserialize<'de> for JavaValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JavaValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Java value from delayq's Kryo5Codec")
            }
            fn visit_unit<E: de::Error>(self) -> Result<JavaValue, E> {
                handoff_take().ok_or_else(|| {
                    E::custom("a JavaValue can only be deserialized by delayq's Kryo5Codec")
                })
            }
        }
        handoff_take();
        deserializer.deserialize_newtype_struct(JAVA_VALUE_TOKEN, V)
    }
}
