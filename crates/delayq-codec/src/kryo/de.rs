//! serde `Deserializer` over a decoded [`JavaValue`].

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use super::value::{handoff_put, JavaValue, JAVA_VALUE_TOKEN, UUID};
use super::KryoError;
use crate::java::{JavaTime, BIG_DECIMAL, BIG_INTEGER, OPTIONAL, TIME_CLASSES, ZONE_ID};

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

/// Typed requests take only the exactly matching Java type: a Java `Integer` is not silently
/// widened into an `i64`, nor a `byte[]` read as a `String`, so decoding never changes a value
/// and re-encoding gives the same bytes.
macro_rules! strict {
    ($($method:ident: $variant:ident($v:ident) => $visit:ident($arg:expr), $java:literal;)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
            match self.0 {
                JavaValue::$variant($v) => visitor.$visit($arg),
                other => Err(unexpected(&other, $java)),
            }
        })*
    };
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
            JavaValue::BigInteger(n) => visitor.visit_string(n.to_string()),
            JavaValue::BigDecimal(d) => visitor.visit_string(d.to_string()),
            JavaValue::Time(t) => visit_seq(time_parts(&t), visitor),
            JavaValue::Enum { ordinal, .. } => visitor.visit_u32(ordinal),
            JavaValue::Array { items, .. } => visit_seq(items, visitor),
            JavaValue::Optional(None) => visitor.visit_unit(),
            JavaValue::Optional(Some(v)) => FromJava(*v).deserialize_any(visitor),
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
        match (name, self.0) {
            (BIG_INTEGER, JavaValue::BigInteger(n)) => {
                visitor.visit_newtype_struct(n.to_string().into_deserializer())
            }
            (BIG_DECIMAL, JavaValue::BigDecimal(d)) => {
                visitor.visit_newtype_struct(d.to_string().into_deserializer())
            }
            (OPTIONAL, JavaValue::Optional(v)) => {
                visitor.visit_newtype_struct(FromJava(v.map_or(JavaValue::Null, |v| *v)))
            }
            (_, JavaValue::Time(t)) if time_class_matches(name, &t) => {
                visitor.visit_newtype_struct(FromJava(JavaValue::array_list(time_parts(&t))))
            }
            (_, JavaValue::Array { class, items }) if class == name => {
                visitor.visit_newtype_struct(FromJava(JavaValue::array_list(items)))
            }
            (BIG_INTEGER | BIG_DECIMAL | OPTIONAL, other) => Err(unexpected(&other, name)),
            (_, other) if TIME_CLASSES.contains(&name) || name.starts_with('[') => {
                Err(unexpected(&other, name))
            }
            (_, other) => visitor.visit_newtype_struct(FromJava(other)),
        }
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

    /// A Java enum constant, by ordinal (the variant index); the Java class must be the enum's
    /// serde name (or a constant's own class, `Name$1`, inside it).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::Enum { class, ordinal }
                if (class == name
                    || class.strip_prefix(name).is_some_and(|r| r.starts_with('$')))
                    && (ordinal as usize) < variants.len() =>
            {
                visitor.visit_enum(ordinal.into_deserializer())
            }
            other => Err(unexpected(&other, name)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        visitor.visit_unit()
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        match self.0 {
            // The serde name is the Java class: a value of another class (a subclass, say)
            // would lose fields silently, so it is refused.
            JavaValue::Object(o) if o.class == name => {
                visit_map(o.fields.into_iter().map(|f| (f.name, f.value)), visitor)
            }
            other => Err(unexpected(&other, name)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::List { items, .. } | JavaValue::Set { items, .. } => {
                visit_seq(items, visitor)
            }
            other => Err(unexpected(&other, "a collection")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::Map { entries, .. } => {
                visit_map(entries.into_iter().map(|(k, v)| (FromJava(k), v)), visitor)
            }
            other => Err(unexpected(&other, "a map")),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::Null => visitor.visit_unit(),
            other => Err(unexpected(&other, "null")),
        }
    }

    strict! {
        deserialize_bool: Bool(v) => visit_bool(v), "java.lang.Boolean";
        deserialize_i8: Byte(v) => visit_i8(v), "java.lang.Byte";
        deserialize_i16: Short(v) => visit_i16(v), "java.lang.Short";
        deserialize_i32: Int(v) => visit_i32(v), "java.lang.Integer";
        deserialize_i64: Long(v) => visit_i64(v), "java.lang.Long";
        deserialize_f32: Float(v) => visit_f32(v), "java.lang.Float";
        deserialize_f64: Double(v) => visit_f64(v), "java.lang.Double";
        deserialize_char: Char(v) => visit_char(v), "java.lang.Character";
        deserialize_str: String(v) => visit_string(v), "java.lang.String";
        deserialize_string: String(v) => visit_string(v), "java.lang.String";
        deserialize_bytes: Bytes(v) => visit_byte_buf(v), "byte[]";
        deserialize_byte_buf: Bytes(v) => visit_byte_buf(v), "byte[]";
    }

    /// A `java.util.UUID` (inside `JavaUuid`) or a `java.math.BigInteger` that fits.
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::Uuid(v) => visitor.visit_u128(v),
            JavaValue::BigInteger(n) => match n.to_u128() {
                Some(v) => visitor.visit_u128(v),
                None => Err(KryoError::Mismatch(format!(
                    "BigInteger {n} does not fit a u128"
                ))),
            },
            other => Err(unexpected(&other, "java.math.BigInteger")),
        }
    }

    /// A `java.math.BigInteger` that fits.
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        match self.0 {
            JavaValue::BigInteger(n) => match n.to_i128() {
                Some(v) => visitor.visit_i128(v),
                None => Err(KryoError::Mismatch(format!(
                    "BigInteger {n} does not fit an i128"
                ))),
            },
            other => Err(unexpected(&other, "java.math.BigInteger")),
        }
    }

    forward_to_deserialize_any! {
        u8 u16 u32 u64 identifier
    }
}

/// A date or time value's serde parts: its numbers as `Long`s, then the zone id.
fn time_parts(t: &JavaTime) -> Vec<JavaValue> {
    let (numbers, text) = t.parts();
    let mut items: Vec<JavaValue> = numbers.into_iter().map(JavaValue::Long).collect();
    if let Some(text) = text {
        items.push(JavaValue::String(text.to_owned()));
    }
    items
}

/// Whether a time value may be read as the serde type named `name` (a `ZoneId` is a
/// `ZoneRegion` or `ZoneOffset` on the wire).
fn time_class_matches(name: &str, t: &JavaTime) -> bool {
    name == t.java_class() || (name == ZONE_ID && matches!(t, JavaTime::ZoneId(_)))
}

fn unexpected(found: &JavaValue, expected: &str) -> KryoError {
    KryoError::Mismatch(format!(
        "expected {expected}, found {}",
        found.java_type_name()
    ))
}
