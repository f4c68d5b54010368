//! serde `Deserializer` over a parsed [`Node`] tree.
//!
//! Type information is removed lazily, guided by what the Rust type asks for: a wrapper array
//! `["java.lang.Long", 42]` is unwrapped when a scalar is wanted, `["java.util.ArrayList", [..]]`
//! when a sequence is wanted, and `@class` (already lifted by the parser) is dropped from
//! objects. This avoids mistaking a genuine two-element array such as `String[]{"a.b", "c"}` for
//! a wrapper when the Rust side expects a sequence of strings.

use super::java_types;
use super::tree::{is_java_class_name, Node};
use super::JacksonError;
use crate::java::BigDecimal;
use base64::Engine as _;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

/// Reads a Rust value out of a node.
#[derive(Debug)]
pub(crate) struct NodeDe {
    node: Node,
    /// Whether the bytes carry Jackson type information (JsonJackson / MsgPackJackson).
    typed: bool,
}

impl NodeDe {
    pub(crate) fn new(node: Node, typed: bool) -> Self {
        NodeDe { node, typed }
    }

    /// The value under any type information, for a scalar target.
    fn scalar(self) -> Node {
        let mut node = self.node;
        loop {
            node = match node {
                Node::Typed(_, inner) => *inner,
                Node::Seq(items) if self.typed && is_wrapper(&items) => second(items),
                other => return other,
            };
        }
    }

    /// The value under any type information, for a sequence target.
    fn seq(self) -> Node {
        let mut node = self.node;
        loop {
            node = match node {
                Node::Typed(_, inner) => *inner,
                Node::Seq(items)
                    if self.typed
                        && is_wrapper(&items)
                        && matches!(items[1], Node::Seq(_) | Node::Bytes(_) | Node::Typed(..)) =>
                {
                    second(items)
                }
                other => return other,
            };
        }
    }

    /// The value under any type information, for a map or struct target.
    fn map(self) -> Node {
        let mut node = self.node;
        loop {
            node = match node {
                Node::Typed(_, inner) => *inner,
                Node::Seq(items)
                    if self.typed
                        && is_wrapper(&items)
                        && matches!(items[1], Node::Map(_) | Node::Typed(..)) =>
                {
                    second(items)
                }
                other => return other,
            };
        }
    }

    fn int<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.scalar() {
            Node::Int(v) => visit_int(v, visitor),
            Node::Number(text) => visit_int_text(&text, visitor),
            // Jackson accepts whole floats for integer targets; a float is always exact.
            Node::F64(f) => visit_whole_float(f, visitor),
            Node::F32(f) => visit_whole_float(f64::from(f), visitor),
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn float<'de, V: Visitor<'de>>(
        self,
        visitor: V,
        single: bool,
    ) -> Result<V::Value, JacksonError> {
        let v = match self.scalar() {
            Node::F64(f) => f,
            Node::F32(f) if single => return visitor.visit_f32(f),
            Node::F32(f) => f64::from(f),
            Node::Int(i) => return visit_int_as_float(i, visitor, single),
            Node::Number(text) => return visit_text_as_float(&text, visitor, single),
            // Jackson writes non-finite numbers as strings.
            Node::Str(s) => match s.as_str() {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                _ => return Err(de::Error::invalid_type(Node::Str(s).unexpected(), &visitor)),
            },
            other => return Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        };
        if !single {
            return visitor.visit_f64(v);
        }
        let narrow = v as f32;
        if v.is_nan() || f64::from(narrow) == v {
            visitor.visit_f32(narrow)
        } else {
            Err(no_exact_float(&super::num::java_double(v), "f32"))
        }
    }
}

/// Refuses a number the float type cannot hold without rounding.
fn no_exact_float(text: &str, ty: &str) -> JacksonError {
    JacksonError::Message(format!(
        "number {text} has no exact {ty} (it would be rounded); decode it into \
         delayq::codec::java::BigDecimal"
    ))
}

/// A whole number given as text (a big integer, or a decimal such as `1E+3` or `5.0`).
fn visit_int_text<'de, V: Visitor<'de>>(text: &str, visitor: V) -> Result<V::Value, JacksonError> {
    let decimal: BigDecimal = text
        .parse()
        .map_err(|e: crate::java::NumberFormatError| JacksonError::Message(e.to_string()))?;
    let Some(whole) = decimal.to_big_integer_exact() else {
        return Err(JacksonError::Message(format!(
            "number {text} is not a whole number"
        )));
    };
    if let Some(v) = whole.to_i128() {
        visit_int(v, visitor)
    } else if let Some(v) = whole.to_u128() {
        visitor.visit_u128(v)
    } else {
        Err(JacksonError::Message(format!(
            "integer {text} does not fit a 128-bit integer; decode it into \
             delayq::codec::java::BigInteger"
        )))
    }
}

/// A float read into an integer type: only whole values (which a float holds exactly).
fn visit_whole_float<'de, V: Visitor<'de>>(f: f64, visitor: V) -> Result<V::Value, JacksonError> {
    const TWO_127: f64 = 1.7014118346046923e38;
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(JacksonError::Message(format!(
            "number {} is not a whole number",
            super::num::java_double(f)
        )));
    }
    if f.abs() < TWO_127 {
        visit_int(f as i128, visitor)
    } else if f > 0.0 && f < 2.0 * TWO_127 {
        visitor.visit_u128(f as u128)
    } else {
        Err(JacksonError::Message(format!(
            "integer {} does not fit a 128-bit integer",
            super::num::java_double(f)
        )))
    }
}

/// An integer read into a float type: only when the float's shortest decimal is that integer.
fn visit_int_as_float<'de, V: Visitor<'de>>(
    i: i128,
    visitor: V,
    single: bool,
) -> Result<V::Value, JacksonError> {
    visit_text_as_float(&i.to_string(), visitor, single)
}

/// The exact float of a number's text, if the float's shortest decimal is that number.
fn exact_float(text: &str, single: bool) -> Option<f64> {
    let decimal: BigDecimal = text.parse().ok()?;
    if decimal.unscaled().is_zero() {
        // Keep Java's -0.0.
        return text.parse().ok();
    }
    if single {
        decimal.to_f32_exact().map(f64::from)
    } else {
        decimal.to_f64_exact()
    }
}

fn visit_text_as_float<'de, V: Visitor<'de>>(
    text: &str,
    visitor: V,
    single: bool,
) -> Result<V::Value, JacksonError> {
    match exact_float(text, single) {
        Some(v) if single => visitor.visit_f32(v as f32),
        Some(v) => visitor.visit_f64(v),
        None => Err(no_exact_float(text, if single { "f32" } else { "f64" })),
    }
}

/// A number node for `deserialize_any`: the Rust primitive that holds it exactly, or an error.
fn visit_any_number<'de, V: Visitor<'de>>(
    text: &str,
    visitor: V,
) -> Result<V::Value, JacksonError> {
    if !text.contains(['.', 'e', 'E']) {
        return visit_int_text(text, visitor);
    }
    visit_text_as_float(text, visitor, false)
}

/// `[class, value]` where `class` looks like a Java class name.
fn is_wrapper(items: &[Node]) -> bool {
    matches!(items, [Node::Str(c), _] if is_java_class_name(c))
}

/// The second item of a two-item vector (callers checked the length).
fn second(items: Vec<Node>) -> Node {
    items.into_iter().nth(1).unwrap_or(Node::Null)
}

fn visit_int<'de, V: Visitor<'de>>(v: i128, visitor: V) -> Result<V::Value, JacksonError> {
    if let Ok(v) = i64::try_from(v) {
        visitor.visit_i64(v)
    } else if let Ok(v) = u64::try_from(v) {
        visitor.visit_u64(v)
    } else {
        visitor.visit_i128(v)
    }
}

pub(crate) fn base64_decode(s: &str) -> Result<Vec<u8>, JacksonError> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    LENIENT.decode(s).map_err(JacksonError::Base64)
}

impl<'de> de::Deserializer<'de> for NodeDe {
    type Error = JacksonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        let typed = self.typed;
        let node = if typed { self.scalar() } else { self.node };
        match node {
            Node::Null => visitor.visit_unit(),
            Node::Bool(b) => visitor.visit_bool(b),
            Node::Int(v) => visit_int(v, visitor),
            Node::Number(text) => visit_any_number(&text, visitor),
            Node::F64(f) => visitor.visit_f64(f),
            Node::F32(f) => visitor.visit_f32(f),
            Node::Str(s) => visitor.visit_string(s),
            Node::Bytes(b) => visitor.visit_byte_buf(b),
            Node::Seq(items) => visitor.visit_seq(SeqAccess::new(items, typed)),
            Node::Map(entries) => visitor.visit_map(MapAccess::new(entries, typed)),
            Node::Typed(_, inner) => NodeDe::new(*inner, typed).deserialize_any(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.scalar() {
            Node::Bool(b) => visitor.visit_bool(b),
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.int(visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.float(visitor, true)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.float(visitor, false)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.scalar() {
            Node::Str(s) => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => visitor.visit_char(c),
                    _ => Err(de::Error::invalid_value(de::Unexpected::Str(&s), &visitor)),
                }
            }
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.scalar() {
            Node::Str(s) => visitor.visit_string(s),
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.scalar() {
            Node::Bytes(b) => visitor.visit_byte_buf(b),
            Node::Str(s) => visitor.visit_byte_buf(base64_decode(&s)?),
            Node::Seq(items) => visitor.visit_seq(SeqAccess::new(items, false)),
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.node {
            Node::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.scalar() {
            Node::Null => visitor.visit_unit(),
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        match self.map() {
            Node::Null => visitor.visit_unit(),
            Node::Map(entries) if entries.iter().all(|(k, _)| k == "@class") => {
                visitor.visit_unit()
            }
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        if java_types::is_java_type(name) {
            let parts = java_types::from_jackson(name, self.scalar())?;
            return visitor.visit_newtype_struct(NodeDe::new(parts, false));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        let typed = self.typed;
        match self.seq() {
            Node::Seq(items) => visitor.visit_seq(SeqAccess::new(items, typed)),
            Node::Bytes(b) => visitor.visit_seq(SeqAccess::new(
                b.into_iter().map(|x| Node::Int(x.into())).collect(),
                typed,
            )),
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        let typed = self.typed;
        match self.map() {
            Node::Map(entries) => visitor.visit_map(MapAccess::new(entries, typed)),
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        let typed = self.typed;
        let mut node = self.node;
        // Typed data variants: the class names the variant (`@class` or a wrapper array).
        if typed {
            node = loop {
                node = match node {
                    Node::Seq(items) if is_wrapper(&items) => {
                        let mut it = items.into_iter();
                        match (it.next(), it.next()) {
                            (Some(Node::Str(c)), Some(inner)) => Node::Typed(c, Box::new(inner)),
                            _ => return Err(JacksonError::Message("bad wrapper".to_owned())),
                        }
                    }
                    Node::Typed(class, inner) => {
                        if variants.contains(&class.as_str()) {
                            return visitor.visit_enum(EnumAccess {
                                variant: class,
                                content: Some(*inner),
                                typed,
                            });
                        }
                        // An enum constant in an `Object` slot: `["com.example.Color","RED"]`.
                        *inner
                    }
                    other => break other,
                };
            };
        }
        match node {
            Node::Str(variant) => visitor.visit_enum(EnumAccess {
                variant,
                content: None,
                typed,
            }),
            Node::Map(entries) if entries.len() == 1 => {
                let mut it = entries.into_iter();
                match it.next() {
                    Some((variant, content)) => visitor.visit_enum(EnumAccess {
                        variant,
                        content: Some(content),
                        typed,
                    }),
                    None => Err(JacksonError::Message("empty enum object".to_owned())),
                }
            }
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        visitor.visit_unit()
    }
}

/// Elements of an array.
struct SeqAccess {
    items: std::vec::IntoIter<Node>,
    typed: bool,
}

impl SeqAccess {
    fn new(items: Vec<Node>, typed: bool) -> Self {
        SeqAccess {
            items: items.into_iter(),
            typed,
        }
    }
}

impl<'de> de::SeqAccess<'de> for SeqAccess {
    type Error = JacksonError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, JacksonError> {
        match self.items.next() {
            Some(node) => seed.deserialize(NodeDe::new(node, self.typed)).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// Entries of an object; `@class` is skipped in typed mode.
struct MapAccess {
    entries: std::vec::IntoIter<(String, Node)>,
    value: Option<Node>,
    typed: bool,
}

impl MapAccess {
    fn new(entries: Vec<(String, Node)>, typed: bool) -> Self {
        MapAccess {
            entries: entries.into_iter(),
            value: None,
            typed,
        }
    }
}

impl<'de> de::MapAccess<'de> for MapAccess {
    type Error = JacksonError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, JacksonError> {
        for (key, value) in self.entries.by_ref() {
            if self.typed && key == "@class" {
                continue;
            }
            self.value = Some(value);
            return seed.deserialize(KeyDe(key)).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, JacksonError> {
        let value = self.value.take().ok_or_else(|| {
            JacksonError::Message("map value requested before its key".to_owned())
        })?;
        seed.deserialize(NodeDe::new(value, self.typed))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A map key (always a field name string) read as whatever the key type wants.
struct KeyDe(String);

impl KeyDe {
    fn parse<'de, T, V>(self, visitor: V) -> Result<V::Value, JacksonError>
    where
        T: std::str::FromStr,
        V: Visitor<'de>,
        T: Into<KeyNum>,
    {
        match self.0.parse::<T>() {
            Ok(v) => match v.into() {
                KeyNum::I(i) => visit_int(i, visitor),
                KeyNum::F(f) => visitor.visit_f64(f),
            },
            Err(_) => Err(de::Error::invalid_value(
                de::Unexpected::Str(&self.0),
                &visitor,
            )),
        }
    }
}

/// A number parsed from a map key.
enum KeyNum {
    I(i128),
    F(f64),
}

impl From<i128> for KeyNum {
    fn from(v: i128) -> Self {
        KeyNum::I(v)
    }
}

impl From<f64> for KeyNum {
    fn from(v: f64) -> Self {
        KeyNum::F(v)
    }
}

impl<'de> de::Deserializer<'de> for KeyDe {
    type Error = JacksonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        visitor.visit_string(self.0)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        match self.0.as_str() {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(de::Error::invalid_value(
                de::Unexpected::Str(&self.0),
                &visitor,
            )),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        self.parse::<i128, V>(visitor)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        visit_text_as_float(&self.0, visitor, true)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        visit_text_as_float(&self.0, visitor, false)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, JacksonError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// An enum: the variant name and, for data variants, its content.
struct EnumAccess {
    variant: String,
    content: Option<Node>,
    typed: bool,
}

impl<'de> de::EnumAccess<'de> for EnumAccess {
    type Error = JacksonError;
    type Variant = VariantAccess;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, VariantAccess), JacksonError> {
        let name = seed.deserialize(KeyDe(self.variant))?;
        Ok((
            name,
            VariantAccess {
                content: self.content,
                typed: self.typed,
            },
        ))
    }
}

struct VariantAccess {
    content: Option<Node>,
    typed: bool,
}

impl VariantAccess {
    fn content(self, what: &'static str) -> Result<NodeDe, JacksonError> {
        match self.content {
            Some(node) => Ok(NodeDe::new(node, self.typed)),
            None => Err(de::Error::invalid_type(de::Unexpected::UnitVariant, &what)),
        }
    }
}

impl<'de> de::VariantAccess<'de> for VariantAccess {
    type Error = JacksonError;

    fn unit_variant(self) -> Result<(), JacksonError> {
        match self.content {
            None | Some(Node::Null) => Ok(()),
            Some(Node::Map(m)) if m.is_empty() => Ok(()),
            Some(other) => Err(de::Error::invalid_type(other.unexpected(), &"unit variant")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, JacksonError> {
        seed.deserialize(self.content("newtype variant")?)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        de::Deserializer::deserialize_seq(self.content("tuple variant")?, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, JacksonError> {
        de::Deserializer::deserialize_map(self.content("struct variant")?, visitor)
    }
}
