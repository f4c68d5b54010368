//! A dynamic Java value, Java declared types, and class schemas.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{self, Serializer};
use serde::{Deserialize, Serialize};

use crate::java::{BigDecimal, BigInteger, JavaTime, BIG_DECIMAL, BIG_INTEGER, OPTIONAL};

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

/// `java.util.TreeSet` (natural ordering).
pub const TREE_SET: &str = "java.util.TreeSet";
/// `java.util.TreeMap` (natural ordering).
pub const TREE_MAP: &str = "java.util.TreeMap";
/// `List.of(a, b)` (one or two elements).
pub const LIST12: &str = "java.util.ImmutableCollections$List12";
/// `List.of()`, `List.of(a, b, c, …)`, `List.copyOf`.
pub const LIST_N: &str = "java.util.ImmutableCollections$ListN";
/// `Set.of(a)`, `Set.of(a, b)`.
pub const SET12: &str = "java.util.ImmutableCollections$Set12";
/// `Set.of()`, `Set.of(a, b, c, …)`.
pub const SET_N: &str = "java.util.ImmutableCollections$SetN";
/// `Map.of(k, v)`.
pub const MAP1: &str = "java.util.ImmutableCollections$Map1";
/// `Map.of()`, `Map.of(k1, v1, k2, v2, …)`.
pub const MAP_N: &str = "java.util.ImmutableCollections$MapN";

/// Java lists and queues this codec reads and writes (besides the sets in [`SET_CLASSES`]):
/// Kryo's `CollectionSerializer` classes, `Arrays.asList`, the JDK's immutable lists
/// (`List.of`; no nulls), and `Collections.emptyList()` / `singletonList(x)`.
pub const LIST_CLASSES: &[&str] = &[
    ARRAY_LIST,
    LINKED_LIST,
    "java.util.ArrayDeque",
    "java.util.Vector",
    "java.util.concurrent.CopyOnWriteArrayList",
    "java.util.concurrent.ConcurrentLinkedQueue",
    "java.util.concurrent.ConcurrentLinkedDeque",
    "java.util.Arrays$ArrayList",
    LIST12,
    LIST_N,
    "java.util.Collections$EmptyList",
    "java.util.Collections$SingletonList",
];

/// Java sets this codec reads and writes: Kryo's `CollectionSerializer` classes, `TreeSet`
/// (natural ordering only), `Set.of` (no nulls), `Collections.emptySet()` / `singleton(x)`.
pub const SET_CLASSES: &[&str] = &[
    HASH_SET,
    LINKED_HASH_SET,
    "java.util.concurrent.CopyOnWriteArraySet",
    TREE_SET,
    SET12,
    SET_N,
    "java.util.Collections$EmptySet",
    "java.util.Collections$SingletonSet",
];

/// Java maps this codec reads and writes: Kryo's `MapSerializer` classes, `TreeMap` and
/// `ConcurrentSkipListMap` (natural ordering only), `Map.of` (no nulls),
/// `Collections.emptyMap()` / `singletonMap(k, v)`.
pub const MAP_CLASSES: &[&str] = &[
    HASH_MAP,
    LINKED_HASH_MAP,
    "java.util.concurrent.ConcurrentHashMap",
    "java.util.Hashtable",
    TREE_MAP,
    "java.util.concurrent.ConcurrentSkipListMap",
    MAP1,
    MAP_N,
    "java.util.Collections$EmptyMap",
    "java.util.Collections$SingletonMap",
];

/// How Kryo's serializer for a collection or map class lays it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `CollectionSerializer` / `MapSerializer`.
    Plain,
    /// `TreeSet`/`TreeMap`: a comparator (here always null, `00`) after the size.
    Sorted,
    /// The JDK's immutable collections: no has-null byte, no nulls at all.
    Immutable,
    /// `Collections.empty*()`: no body.
    Empty,
    /// `Collections.singleton*()`: the element (or key and value) with its class.
    Singleton,
}

impl Layout {
    /// Kryo's `elementsCanBeNull` / `keysCanBeNull` / `valuesCanBeNull` for the class's
    /// serializer. When off, an element, key or value whose class the declared type arguments
    /// fix is written without the `00`/`01` null marker.
    pub(crate) fn can_hold_null(self) -> bool {
        self != Layout::Immutable
    }
}

/// The layout of a collection or map class (one of the class lists).
pub(crate) fn layout(class: &str) -> Layout {
    match class {
        TREE_SET | TREE_MAP | "java.util.concurrent.ConcurrentSkipListMap" => Layout::Sorted,
        LIST12 | LIST_N | SET12 | SET_N | MAP1 | MAP_N => Layout::Immutable,
        _ if class.starts_with("java.util.Collections$Empty") => Layout::Empty,
        _ if class.starts_with("java.util.Collections$Singleton") => Layout::Singleton,
        _ => Layout::Plain,
    }
}

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

    /// The wrapper class name (`java.lang.Long` for `long`).
    pub fn wrapper_name(self) -> &'static str {
        match self {
            Primitive::Boolean => "java.lang.Boolean",
            Primitive::Byte => "java.lang.Byte",
            Primitive::Short => "java.lang.Short",
            Primitive::Char => "java.lang.Character",
            Primitive::Int => "java.lang.Integer",
            Primitive::Long => "java.lang.Long",
            Primitive::Float => "java.lang.Float",
            Primitive::Double => "java.lang.Double",
        }
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
    /// Another final class, by name: a final `java.time` type (`Instant`, `LocalDate`, …),
    /// `java.util.Optional`, an enum, a record, or an array of a final element type (`[I`,
    /// `[Ljava.lang.String;`). No class is written; enums and arrays write their own null,
    /// the others a `00`/`01` marker.
    Final(String),
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
    /// A POJO, a record or an enum.
    pub kind: ClassKind,
}

/// What kind of class a [`ClassSchema`] describes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClassKind {
    /// A class written by Kryo's `FieldSerializer` (fields sorted by name, declared type
    /// arguments used).
    Pojo,
    /// A Java record, written by Kryo's `RecordSerializer`: components sorted by name, and no
    /// type arguments (a `List<String>` component writes each element's class).
    Record,
    /// An enum, written by Kryo's `EnumSerializer` as its ordinal; the constants in
    /// declaration order.
    Enum(Vec<String>),
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
            kind: ClassKind::Pojo,
        }
    }

    /// A record's schema (its components, sorted into Kryo's order).
    pub fn record(
        class: impl Into<String>,
        fields: impl IntoIterator<Item = (String, JavaType)>,
    ) -> Self {
        ClassSchema {
            kind: ClassKind::Record,
            ..ClassSchema::new(class, fields)
        }
    }

    /// An enum's schema: its constants in declaration order (the ordinal is the index).
    pub fn enumeration(
        class: impl Into<String>,
        constants: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        ClassSchema {
            class: class.into(),
            fields: Vec::new(),
            kind: ClassKind::Enum(constants.into_iter().map(Into::into).collect()),
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
    /// A record (written by Kryo's `RecordSerializer`) rather than a POJO.
    pub record: bool,
}

impl JavaObject {
    /// An object; the fields are sorted into Kryo's order.
    pub fn new(class: impl Into<String>, fields: impl IntoIterator<Item = JavaField>) -> Self {
        let mut fields: Vec<JavaField> = fields.into_iter().collect();
        sort_fields(&mut fields, |f| &f.name);
        JavaObject {
            class: class.into(),
            fields,
            record: false,
        }
    }

    /// A record instance; the components are sorted into Kryo's order.
    pub fn record(class: impl Into<String>, fields: impl IntoIterator<Item = JavaField>) -> Self {
        JavaObject {
            record: true,
            ..JavaObject::new(class, fields)
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
/// | `Object` | a POJO or record whose [`ClassSchema`] is known |
/// | `BigInteger`, `BigDecimal` | `java.math.BigInteger`, `java.math.BigDecimal` |
/// | `Time` | `java.util.Date`, `java.sql.Timestamp`, `java.time.*` ([`JavaTime`]) |
/// | `Enum` | an enum constant (by ordinal, as Kryo writes it) |
/// | `Array` | arrays other than `byte[]` (`int[]`, `String[]`, `Object[]`, …) |
/// | `Optional` | `java.util.Optional` |
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
    /// A POJO or a record.
    Object(JavaObject),
    /// `java.math.BigInteger`.
    BigInteger(BigInteger),
    /// `java.math.BigDecimal`.
    BigDecimal(BigDecimal),
    /// `java.util.Date`, `java.sql.Timestamp` or a `java.time` value.
    Time(JavaTime),
    /// An enum constant: Kryo writes only the ordinal (a [`ClassSchema::enumeration`] names
    /// it).
    Enum {
        /// The enum class (for a constant with a body, Java writes its own class, `Enum$1`).
        class: String,
        /// The constant's ordinal.
        ordinal: u32,
    },
    /// An array other than `byte[]` ([`JavaValue::Bytes`]): `class` is its `Class.getName()`
    /// (`[I`, `[Ljava.lang.String;`, `[Lcom.example.Item;`, `[[I`) and the items are the
    /// wrapper variants for primitive arrays (`Int` for `int[]`).
    Array {
        /// The array class.
        class: String,
        /// The elements.
        items: Vec<JavaValue>,
    },
    /// `java.util.Optional`: `None` is `Optional.empty()`.
    Optional(Option<Box<JavaValue>>),
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
            JavaValue::BigInteger(_) => BIG_INTEGER.into(),
            JavaValue::BigDecimal(_) => BIG_DECIMAL.into(),
            JavaValue::Time(t) => t.java_class().into(),
            JavaValue::Enum { class, .. } | JavaValue::Array { class, .. } => class.clone(),
            JavaValue::Optional(_) => OPTIONAL.into(),
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
