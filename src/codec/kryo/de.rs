//! serde `Deserializer` over a decoded [`JavaValue`].

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use super::value::{handoff_put, JavaValue, JAVA_VALUE_TOKEN, UUID};
use super::KryoError;

/// Deserializes a Rust value from a [`JavaValue`].
pub(crate) struct FromJava(pub(crate) JavaValue);

impl<'de> IntoDeserializer<'de, KryoError> for FromJava {
    type Deserializer = FromJava;
    fn into_deserializer(self) -> FromJava {
        self
    }
}

fn visit_seq<'de, V: Visitor<'de>>(
    items: Vec<JavaValue>,
    visitor: V,
) -> Result<V::Value, KryoError> {
    let mut seq = SeqDeserializer::new(items.into_iter().map(FromJava));
    let v = visitor.visit_seq(&mut seq)?;
    seq.end()?;
    Ok(v)
}

fn visit_map<'de, V: Visitor<'de>, K: IntoDeserializer<'de, KryoError>>(
    entries: impl Iterator<Item = (K, JavaValue)>,
    visitor: V,
) -> Result<V::Value, KryoError> {
    let mut map = MapDeserializer::new(entries.map(|(k, v)| (k, FromJava(v))));
    let v = visitor.visit_map(&mut map)?;
    map.end()?;
    Ok(v)
}

impl<'de> de::Deserializer<'de> for FromJava {
    type Error = KryoError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::Null => visitor.visit_unit(),
            JavaValue::Bool(b) => visitor.visit_bool(b),
            JavaValue::Byte(b) => visitor.visit_i8(b),
            JavaValue::Short(s) => visitor.visit_i16(s),
            JavaValue::Char(c) => visitor.visit_char(c),
            JavaValue::Int(i) => visitor.visit_i32(i),
            JavaValue::Long(l) => visitor.visit_i64(l),
            JavaValue::Float(f) => visitor.visit_f32(f),
            JavaValue::Double(d) => visitor.visit_f64(d),
            JavaValue::String(s) => visitor.visit_string(s),
            JavaValue::Bytes(b) => visitor.visit_byte_buf(b),
            JavaValue::Uuid(u) => visitor.visit_u128(u),
            JavaValue::List { items, .. } | JavaValue::Set { items, .. } => {
                visit_seq(items, visitor)
            }
            JavaValue::Map { entries, .. } => {
                visit_map(entries.into_iter().map(|(k, v)| (FromJava(k), v)), visitor)
            }
            JavaValue::Object(o) => {
                visit_map(o.fields.into_iter().map(|f| (f.name, f.value)), visitor)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::Null => visitor.visit_none(),
            other => visitor.visit_some(FromJava(other)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        if name == JAVA_VALUE_TOKEN {
            handoff_put(self.0);
            return visitor.visit_unit();
        }
        if name == UUID {
            if let JavaValue::Uuid(u) = self.0 {
                return visitor.visit_newtype_struct(u.into_deserializer());
            }
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::Null => visitor.visit_unit(),
            JavaValue::Object(o) if o.fields.is_empty() => visitor.visit_unit(),
            other => Err(KryoError::Mismatch(format!(
                "expected {name}, found {}",
                other.java_type_name()
            ))),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, KryoError> {
        Err(KryoError::Mismatch(format!(
            "Rust enum {name} has no Kryo5Codec mapping"
        )))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit seq tuple tuple_struct map struct identifier
    }
}
