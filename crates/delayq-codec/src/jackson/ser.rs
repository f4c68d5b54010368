//! serde `Serializer` that builds a [`Node`] tree with Jackson's type information decided.
//!
//! The rules are written down in `mapping.md`; this file implements them.

use super::java_array::{self, Elements};
use super::java_types::{self, Typing};
use super::key_ser::KeySer;
use super::tree::{is_java_class_name, java_string_cmp, Node};
use super::JacksonError;
use serde::ser::{self, Serialize};

const ARRAY_LIST: &str = "java.util.ArrayList";
const HASH_MAP: &str = "java.util.HashMap";

/// What the Java side declared for the slot a value is written into. This decides whether
/// Jackson's NON_FINAL default typing adds type information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The root value: Jackson looks at the runtime class.
    Root,
    /// A slot declared `Object`: elements and values of root-level collections and maps.
    Object,
    /// A POJO field of the Rust field's own type (`i64` is a primitive `long`).
    Field,
    /// A POJO field of boxed type (`Option<i64>` is a `Long`).
    Boxed,
    /// An element or value of a collection or map that sits in a POJO field (`List<Long>`,
    /// `Map<String, Float>`): the declared type argument.
    Generic,
}

/// How a scalar Java type reacts to type information.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// String, Boolean, Integer, finite Double: Jackson never writes type info for them.
    Natural,
    /// `java.lang.Long`: Redisson's typer always types it, except in a primitive `long` field.
    Long,
    /// Other final scalars (Short, Byte, Float, Character, non-finite Double, byte[], enums):
    /// typed only in a slot declared `Object`.
    Final,
    /// `java.math.BigInteger` is not final: typed everywhere.
    NonFinal,
}

/// The serializer. `Copy`, so each nested value gets its own slot cheaply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ser {
    /// Whether to write type information at all (false for TypedJsonJacksonCodec).
    typed: bool,
    slot: Slot,
    /// A Java class forced by an enclosing newtype struct (`#[serde(rename = "java.util.LinkedList")]`).
    class: Option<&'static str>,
    /// `class` is an array class that Redisson's typer leaves untyped in this slot.
    bare: bool,
}

impl Ser {
    /// The serializer for a root value.
    pub(crate) fn root(typed: bool) -> Self {
        Ser {
            typed,
            slot: Slot::Root,
            class: None,
            bare: false,
        }
    }

    /// The serializer for elements of a collection or values of a map in this slot.
    fn element(self) -> Self {
        if let Some(class) = self.class.filter(|c| java_array::is_array(c)) {
            return self.array_element(class);
        }
        let slot = match self.slot {
            Slot::Root | Slot::Object => Slot::Object,
            Slot::Field | Slot::Boxed | Slot::Generic => Slot::Generic,
        };
        Ser {
            slot,
            class: None,
            bare: false,
            ..self
        }
    }

    /// The serializer for a value of the Java array class `class` in this slot.
    fn array(self, class: &'static str) -> Self {
        Ser {
            class: Some(class),
            bare: self.slot != Slot::Object && !java_array::typed_in_field(class),
            ..self
        }
    }

    /// The serializer for the elements of an array of class `class`: declared as its element
    /// type.
    fn array_element(self, class: &'static str) -> Self {
        let elements = java_array::elements(class);
        let slot = match elements {
            Elements::Primitive => Slot::Field,
            Elements::Object => Slot::Object,
            Elements::Array(_) | Elements::Declared => Slot::Generic,
        };
        let plain = Ser {
            slot,
            class: None,
            bare: false,
            ..self
        };
        match elements {
            Elements::Array(inner) => plain.array(inner),
            _ => plain,
        }
    }

    /// The serializer for POJO fields.
    fn field(self) -> Self {
        Ser {
            slot: Slot::Field,
            class: None,
            bare: false,
            ..self
        }
    }

    fn scalar(self, java: &'static str, rule: Rule, node: Node) -> Result<Node, JacksonError> {
        if !self.typed {
            return Ok(node);
        }
        if let Some(class) = self.class {
            if self.bare {
                return Ok(node);
            }
            return Ok(Node::Typed(class.to_owned(), Box::new(node)));
        }
        let wrap = match rule {
            Rule::Natural => false,
            Rule::Long => self.slot != Slot::Field,
            Rule::Final => self.slot == Slot::Object,
            Rule::NonFinal => true,
        };
        if !wrap {
            return Ok(node);
        }
        if !is_java_class_name(java) {
            return Err(JacksonError::MissingClassName { rust_name: java });
        }
        Ok(Node::Typed(java.to_owned(), Box::new(node)))
    }

    fn int(self, v: i128) -> Result<Node, JacksonError> {
        if i64::try_from(v).is_ok() {
            self.scalar("java.lang.Long", Rule::Long, Node::Int(v))
        } else {
            self.scalar("java.math.BigInteger", Rule::NonFinal, Node::Int(v))
        }
    }

    /// Wraps a finished container (`Seq` or `Map`) with its class when typing.
    fn container(self, default: &'static str, node: Node) -> Node {
        if self.typed {
            Node::Typed(self.class.unwrap_or(default).to_owned(), Box::new(node))
        } else {
            node
        }
    }

    /// A value of one of `codec::java`'s classes (`BigDecimal`, `Date`, `java.time`, …).
    fn java_type<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Node, JacksonError> {
        let parts = value.serialize(Ser {
            typed: false,
            slot: Slot::Field,
            class: None,
            bare: false,
        })?;
        let (node, typing) = java_types::to_jackson(name, parts)?;
        if !self.typed {
            return Ok(node);
        }
        let (class, wrap) = match typing {
            Typing::NonFinal => (name, true),
            Typing::Final => (name, self.slot == Slot::Object),
            Typing::ZoneId => (crate::java::ZONE_ID, self.slot != Slot::Root),
        };
        Ok(if wrap {
            Node::Typed(class.to_owned(), Box::new(node))
        } else {
            node
        })
    }

    /// The Java class of a POJO-like value named `name` by serde.
    fn pojo_class(self, name: &'static str) -> Result<Option<&'static str>, JacksonError> {
        if !self.typed {
            return Ok(None);
        }
        if let Some(class) = self.class {
            return Ok(Some(class));
        }
        if is_java_class_name(name) {
            Ok(Some(name))
        } else {
            Err(JacksonError::MissingClassName { rust_name: name })
        }
    }
}

impl ser::Serializer for Ser {
    type Ok = Node;
    type Error = JacksonError;
    type SerializeSeq = SeqSer;
    type SerializeTuple = SeqSer;
    type SerializeTupleStruct = SeqSer;
    type SerializeTupleVariant = SeqSer;
    type SerializeMap = MapSer;
    type SerializeStruct = StructSer;
    type SerializeStructVariant = StructSer;

    fn serialize_bool(self, v: bool) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Boolean", Rule::Natural, Node::Bool(v))
    }

    fn serialize_i8(self, v: i8) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Byte", Rule::Final, Node::Int(v.into()))
    }

    fn serialize_i16(self, v: i16) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Short", Rule::Final, Node::Int(v.into()))
    }

    fn serialize_i32(self, v: i32) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Integer", Rule::Natural, Node::Int(v.into()))
    }

    fn serialize_i64(self, v: i64) -> Result<Node, JacksonError> {
        self.int(v.into())
    }

    fn serialize_i128(self, v: i128) -> Result<Node, JacksonError> {
        self.int(v)
    }

    fn serialize_u8(self, v: u8) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Integer", Rule::Natural, Node::Int(v.into()))
    }

    fn serialize_u16(self, v: u16) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Integer", Rule::Natural, Node::Int(v.into()))
    }

    fn serialize_u32(self, v: u32) -> Result<Node, JacksonError> {
        self.int(v.into())
    }

    fn serialize_u64(self, v: u64) -> Result<Node, JacksonError> {
        self.int(v.into())
    }

    fn serialize_u128(self, v: u128) -> Result<Node, JacksonError> {
        match i128::try_from(v) {
            Ok(v) => self.int(v),
            Err(_) => Err(JacksonError::Message(format!(
                "integer {v} is too large (delayq handles integers up to 127 bits)"
            ))),
        }
    }

    fn serialize_f32(self, v: f32) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Float", Rule::Final, Node::F32(v))
    }

    fn serialize_f64(self, v: f64) -> Result<Node, JacksonError> {
        let rule = if v.is_finite() {
            Rule::Natural
        } else {
            Rule::Final
        };
        self.scalar("java.lang.Double", rule, Node::F64(v))
    }

    fn serialize_char(self, v: char) -> Result<Node, JacksonError> {
        self.scalar("java.lang.Character", Rule::Final, Node::Str(v.to_string()))
    }

    fn serialize_str(self, v: &str) -> Result<Node, JacksonError> {
        self.scalar("java.lang.String", Rule::Natural, Node::Str(v.to_owned()))
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<Node, JacksonError> {
        self.scalar("[B", Rule::Final, Node::Bytes(v.to_vec()))
    }

    fn serialize_none(self) -> Result<Node, JacksonError> {
        Ok(Node::Null)
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Node, JacksonError> {
        let slot = if self.slot == Slot::Field {
            Slot::Boxed
        } else {
            self.slot
        };
        value.serialize(Ser { slot, ..self })
    }

    fn serialize_unit(self) -> Result<Node, JacksonError> {
        Ok(Node::Null)
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<Node, JacksonError> {
        let class = self.pojo_class(name)?;
        Ok(pojo(class, Vec::new()))
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Node, JacksonError> {
        // A Java enum constant: written as its name; the enum class is final.
        self.scalar(name, Rule::Final, Node::Str(variant.to_owned()))
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Node, JacksonError> {
        if java_types::is_java_type(name) {
            return self.java_type(name, value);
        }
        if self.typed && java_array::is_array(name) && is_java_class_name(name) {
            value.serialize(self.array(name))
        } else if self.typed && is_java_class_name(name) {
            value.serialize(Ser {
                class: Some(name),
                bare: false,
                ..self
            })
        } else {
            value.serialize(self)
        }
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Node, JacksonError> {
        if !self.typed {
            let inner = value.serialize(self.element())?;
            return Ok(Node::Map(vec![(variant.to_owned(), inner)]));
        }
        if !is_java_class_name(variant) {
            return Err(JacksonError::MissingClassName { rust_name: variant });
        }
        value.serialize(Ser {
            class: Some(variant),
            ..self
        })
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<SeqSer, JacksonError> {
        Ok(SeqSer::new(self, ARRAY_LIST, None, len))
    }

    fn serialize_tuple(self, len: usize) -> Result<SeqSer, JacksonError> {
        Ok(SeqSer::new(self, ARRAY_LIST, None, Some(len)))
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<SeqSer, JacksonError> {
        let class = if is_java_class_name(name) {
            name
        } else {
            ARRAY_LIST
        };
        Ok(SeqSer::new(self, class, None, Some(len)))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqSer, JacksonError> {
        if self.typed && !is_java_class_name(variant) {
            return Err(JacksonError::MissingClassName { rust_name: variant });
        }
        Ok(SeqSer::new(self, variant, Some(variant), Some(len)))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<MapSer, JacksonError> {
        Ok(MapSer {
            ser: self,
            entries: Vec::with_capacity(len.unwrap_or(0).min(1024)),
            key: None,
        })
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<StructSer, JacksonError> {
        Ok(StructSer {
            ser: self,
            class: self.pojo_class(name)?,
            variant: None,
            fields: Vec::with_capacity(len.min(1024)),
        })
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<StructSer, JacksonError> {
        let class = if self.typed {
            if !is_java_class_name(variant) {
                return Err(JacksonError::MissingClassName { rust_name: variant });
            }
            Some(variant)
        } else {
            None
        };
        Ok(StructSer {
            ser: self,
            class,
            variant: (!self.typed).then_some(variant),
            fields: Vec::with_capacity(len.min(1024)),
        })
    }
}

/// A POJO: properties without null values, sorted like `String.compareTo`, then `@class`.
fn pojo(class: Option<&str>, mut fields: Vec<(String, Node)>) -> Node {
    fields.retain(|(_, v)| *v != Node::Null);
    fields.sort_by(|(a, _), (b, _)| java_string_cmp(a, b));
    let map = Node::Map(fields);
    match class {
        Some(c) => Node::Typed(c.to_owned(), Box::new(map)),
        None => map,
    }
}

/// Sequences, tuples and tuple structs/variants.
#[derive(Debug)]
pub(crate) struct SeqSer {
    ser: Ser,
    default_class: &'static str,
    /// For a tuple variant in plain mode: the externally tagged variant name.
    variant: Option<&'static str>,
    items: Vec<Node>,
}

impl SeqSer {
    fn new(
        ser: Ser,
        default_class: &'static str,
        variant: Option<&'static str>,
        len: Option<usize>,
    ) -> Self {
        SeqSer {
            ser,
            default_class,
            variant,
            items: Vec::with_capacity(len.unwrap_or(0).min(1024)),
        }
    }

    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), JacksonError> {
        self.items.push(value.serialize(self.ser.element())?);
        Ok(())
    }

    fn finish(self) -> Node {
        let seq = Node::Seq(self.items);
        if self.ser.typed && self.ser.bare {
            seq
        } else if self.ser.typed {
            let class = self.ser.class.unwrap_or(self.default_class);
            Node::Typed(class.to_owned(), Box::new(seq))
        } else if let Some(v) = self.variant {
            Node::Map(vec![(v.to_owned(), seq)])
        } else {
            seq
        }
    }
}

impl ser::SerializeSeq for SeqSer {
    type Ok = Node;
    type Error = JacksonError;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), JacksonError> {
        self.push(value)
    }

    fn end(self) -> Result<Node, JacksonError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTuple for SeqSer {
    type Ok = Node;
    type Error = JacksonError;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), JacksonError> {
        self.push(value)
    }

    fn end(self) -> Result<Node, JacksonError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleStruct for SeqSer {
    type Ok = Node;
    type Error = JacksonError;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), JacksonError> {
        self.push(value)
    }

    fn end(self) -> Result<Node, JacksonError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleVariant for SeqSer {
    type Ok = Node;
    type Error = JacksonError;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), JacksonError> {
        self.push(value)
    }

    fn end(self) -> Result<Node, JacksonError> {
        Ok(self.finish())
    }
}

/// Maps: keys become field names, null values are left out (NON_NULL content inclusion).
#[derive(Debug)]
pub(crate) struct MapSer {
    ser: Ser,
    entries: Vec<(String, Node)>,
    key: Option<String>,
}

impl ser::SerializeMap for MapSer {
    type Ok = Node;
    type Error = JacksonError;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), JacksonError> {
        self.key = Some(key.serialize(KeySer)?);
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), JacksonError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| JacksonError::Message("map value without a key".to_owned()))?;
        let node = value.serialize(self.ser.element())?;
        if node != Node::Null {
            self.entries.push((key, node));
        }
        Ok(())
    }

    fn end(self) -> Result<Node, JacksonError> {
        Ok(self.ser.container(HASH_MAP, Node::Map(self.entries)))
    }
}

/// POJOs (structs and struct variants).
#[derive(Debug)]
pub(crate) struct StructSer {
    ser: Ser,
    class: Option<&'static str>,
    /// For a struct variant in plain mode: the externally tagged variant name.
    variant: Option<&'static str>,
    fields: Vec<(String, Node)>,
}

impl StructSer {
    fn push<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), JacksonError> {
        let node = value.serialize(self.ser.field())?;
        self.fields.push((key.to_owned(), node));
        Ok(())
    }

    fn finish(self) -> Node {
        let node = pojo(self.class, self.fields);
        match self.variant {
            Some(v) => Node::Map(vec![(v.to_owned(), node)]),
            None => node,
        }
    }
}

impl ser::SerializeStruct for StructSer {
    type Ok = Node;
    type Error = JacksonError;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), JacksonError> {
        self.push(key, value)
    }

    fn end(self) -> Result<Node, JacksonError> {
        Ok(self.finish())
    }
}

impl ser::SerializeStructVariant for StructSer {
    type Ok = Node;
    type Error = JacksonError;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), JacksonError> {
        self.push(key, value)
    }

    fn end(self) -> Result<Node, JacksonError> {
        Ok(self.finish())
    }
}
