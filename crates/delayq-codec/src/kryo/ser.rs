//! serde `Serializer` that turns a Rust value into a [`JavaValue`], using the traced class
//! schemas for struct fields.

use serde::ser::{self, Impossible, Serialize};

use super::schema::Registry;
use super::value::{
    handoff_take, ClassSchema, JavaField, JavaObject, JavaValue, ARRAY_LIST, HASH_MAP,
    JAVA_VALUE_TOKEN, LIST_CLASSES, MAP_CLASSES, SET_CLASSES, UUID,
};
use super::KryoError;
use crate::java::{JavaTime, NumberFormatError, BIG_DECIMAL, BIG_INTEGER, OPTIONAL, TIME_CLASSES};

/// Serializes into a [`JavaValue`].
#[derive(Clone, Copy)]
pub(crate) struct ToJava<'a> {
    pub(crate) registry: &'a Registry,
    /// True directly inside a `java.util.UUID` newtype, where a `u128` is the UUID.
    uuid: bool,
}

impl<'a> ToJava<'a> {
    pub(crate) fn new(registry: &'a Registry) -> Self {
        ToJava {
            registry,
            uuid: false,
        }
    }

    fn plain(self) -> Self {
        ToJava {
            registry: self.registry,
            uuid: false,
        }
    }
}

fn no_java_type(what: &str) -> KryoError {
    KryoError::Unsupported(format!(
        "Rust {what} has no Java counterpart (use i8/i16/i32/i64; `codec::kryo::byte_array` for byte[])"
    ))
}

fn no_enums(name: &str, variant: &str) -> KryoError {
    KryoError::Unsupported(format!(
        "Rust enum {name}::{variant} has no Kryo5Codec mapping"
    ))
}

impl<'a> ser::Serializer for ToJava<'a> {
    type Ok = JavaValue;
    type Error = KryoError;
    type SerializeSeq = SeqBuilder<'a>;
    type SerializeTuple = SeqBuilder<'a>;
    type SerializeTupleStruct = SeqBuilder<'a>;
    type SerializeTupleVariant = Impossible<JavaValue, KryoError>;
    type SerializeMap = MapBuilder<'a>;
    type SerializeStruct = StructBuilder<'a>;
    type SerializeStructVariant = Impossible<JavaValue, KryoError>;

    fn serialize_bool(self, v: bool) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Byte(v))
    }
    fn serialize_i16(self, v: i16) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Short(v))
    }
    fn serialize_i32(self, v: i32) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Int(v))
    }
    fn serialize_i64(self, v: i64) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Long(v))
    }
    fn serialize_u8(self, _: u8) -> Result<JavaValue, KryoError> {
        Err(no_java_type("u8"))
    }
    fn serialize_u16(self, _: u16) -> Result<JavaValue, KryoError> {
        Err(no_java_type("u16"))
    }
    fn serialize_u32(self, _: u32) -> Result<JavaValue, KryoError> {
        Err(no_java_type("u32"))
    }
    fn serialize_u64(self, _: u64) -> Result<JavaValue, KryoError> {
        Err(no_java_type("u64"))
    }
    /// An `i128` is a `java.math.BigInteger`.
    fn serialize_i128(self, v: i128) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::BigInteger(v.into()))
    }
    /// A `u128` is a `java.math.BigInteger` (the bits of a UUID inside `JavaUuid`).
    fn serialize_u128(self, v: u128) -> Result<JavaValue, KryoError> {
        if self.uuid {
            Ok(JavaValue::Uuid(v))
        } else {
            Ok(JavaValue::BigInteger(v.into()))
        }
    }
    fn serialize_f32(self, v: f32) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Float(v))
    }
    fn serialize_f64(self, v: f64) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Double(v))
    }
    fn serialize_char(self, v: char) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Char(v))
    }
    fn serialize_str(self, v: &str) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Bytes(v.to_vec()))
    }
    fn serialize_none(self) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Null)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<JavaValue, KryoError> {
        value.serialize(self.plain())
    }
    fn serialize_unit(self) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Null)
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<JavaValue, KryoError> {
        let schema = schema_of(self.registry, name)?;
        StructBuilder::new(self.plain(), schema).finish()
    }
    /// A Java enum constant: the serde enum name is the Java class, the variant index is the
    /// ordinal.
    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Enum {
            class: name.to_owned(),
            ordinal: index,
        })
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<JavaValue, KryoError> {
        if name == JAVA_VALUE_TOKEN {
            return handoff_take().ok_or_else(|| {
                KryoError::Unsupported("a JavaValue hand-off went missing".to_owned())
            });
        }
        if name == UUID {
            return value.serialize(ToJava {
                registry: self.registry,
                uuid: true,
            });
        }
        let inner = value.serialize(self.plain())?;
        if let Some(v) = java_class_value(name, &inner)? {
            return Ok(v);
        }
        let is_list = LIST_CLASSES.contains(&name);
        let is_set = SET_CLASSES.contains(&name);
        let is_map = MAP_CLASSES.contains(&name);
        if !(is_list || is_set || is_map) {
            return Ok(inner);
        }
        match inner {
            JavaValue::Null => Ok(JavaValue::Null),
            JavaValue::List { items, .. } | JavaValue::Set { items, .. } if is_list => {
                Ok(JavaValue::List {
                    class: name.to_owned(),
                    items,
                })
            }
            JavaValue::List { items, .. } | JavaValue::Set { items, .. } if is_set => {
                Ok(JavaValue::Set {
                    class: name.to_owned(),
                    items,
                })
            }
            JavaValue::Map { entries, .. } if is_map => Ok(JavaValue::Map {
                class: name.to_owned(),
                entries,
            }),
            other => Err(KryoError::Unsupported(format!(
                "newtype {name} must wrap a {}, found {}",
                if is_map { "map" } else { "sequence" },
                other.java_type_name()
            ))),
        }
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<JavaValue, KryoError> {
        Err(no_enums(name, variant))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<SeqBuilder<'a>, KryoError> {
        Ok(SeqBuilder {
            ser: self.plain(),
            items: Vec::with_capacity(len.unwrap_or(0).min(4096)),
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<SeqBuilder<'a>, KryoError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<SeqBuilder<'a>, KryoError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, KryoError> {
        Err(no_enums(name, variant))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<MapBuilder<'a>, KryoError> {
        Ok(MapBuilder {
            ser: self.plain(),
            entries: Vec::with_capacity(len.unwrap_or(0).min(4096)),
            key: None,
        })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<StructBuilder<'a>, KryoError> {
        let schema = schema_of(self.registry, name)?;
        Ok(StructBuilder::new(self.plain(), schema))
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, KryoError> {
        Err(no_enums(name, variant))
    }
}

/// The value of a newtype named like one of the Java classes of `codec::java` (or an array
/// class), built from what it wraps; `None` for other names.
fn java_class_value(name: &str, inner: &JavaValue) -> Result<Option<JavaValue>, KryoError> {
    let bad = |e: String| KryoError::Unsupported(format!("{name}: {e}"));
    Ok(Some(match (name, inner) {
        (BIG_INTEGER, JavaValue::String(s)) => JavaValue::BigInteger(
            s.parse()
                .map_err(|e: NumberFormatError| bad(e.to_string()))?,
        ),
        (BIG_DECIMAL, JavaValue::String(s)) => JavaValue::BigDecimal(
            s.parse()
                .map_err(|e: NumberFormatError| bad(e.to_string()))?,
        ),
        (OPTIONAL, JavaValue::Null) => JavaValue::Optional(None),
        (OPTIONAL, v) => JavaValue::Optional(Some(Box::new(v.clone()))),
        (_, JavaValue::List { items, .. }) if TIME_CLASSES.contains(&name) => {
            let mut numbers = Vec::with_capacity(items.len());
            let mut text = None;
            for item in items {
                match item {
                    JavaValue::Long(n) => numbers.push(*n),
                    JavaValue::String(s) => text = Some(s.as_str()),
                    other => return Err(bad(format!("unexpected {}", other.java_type_name()))),
                }
            }
            JavaValue::Time(JavaTime::from_parts(name, &numbers, text).map_err(bad)?)
        }
        (_, JavaValue::List { items, .. }) if name.starts_with('[') => JavaValue::Array {
            class: name.to_owned(),
            items: items.clone(),
        },
        (BIG_INTEGER | BIG_DECIMAL, _) => {
            return Err(bad(format!("unexpected {}", inner.java_type_name())))
        }
        _ if TIME_CLASSES.contains(&name) => {
            return Err(bad(format!("unexpected {}", inner.java_type_name())))
        }
        _ => return Ok(None),
    }))
}

fn schema_of<'a>(registry: &'a Registry, name: &str) -> Result<&'a ClassSchema, KryoError> {
    registry.get(name).ok_or_else(|| {
        KryoError::Unsupported(format!(
            "struct {name} has no class schema: it is not reachable from the codec's type; \
             register it with Kryo5Codec::register"
        ))
    })
}

pub(crate) struct SeqBuilder<'a> {
    ser: ToJava<'a>,
    items: Vec<JavaValue>,
}

impl<'a> SeqBuilder<'a> {
    fn push<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), KryoError> {
        self.items.push(value.serialize(self.ser)?);
        Ok(())
    }

    fn finish(self) -> JavaValue {
        JavaValue::List {
            class: ARRAY_LIST.to_owned(),
            items: self.items,
        }
    }
}

impl<'a> ser::SerializeSeq for SeqBuilder<'a> {
    type Ok = JavaValue;
    type Error = KryoError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), KryoError> {
        self.push(value)
    }
    fn end(self) -> Result<JavaValue, KryoError> {
        Ok(self.finish())
    }
}

impl<'a> ser::SerializeTuple for SeqBuilder<'a> {
    type Ok = JavaValue;
    type Error = KryoError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), KryoError> {
        self.push(value)
    }
    fn end(self) -> Result<JavaValue, KryoError> {
        Ok(self.finish())
    }
}

impl<'a> ser::SerializeTupleStruct for SeqBuilder<'a> {
    type Ok = JavaValue;
    type Error = KryoError;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), KryoError> {
        self.push(value)
    }
    fn end(self) -> Result<JavaValue, KryoError> {
        Ok(self.finish())
    }
}

pub(crate) struct MapBuilder<'a> {
    ser: ToJava<'a>,
    entries: Vec<(JavaValue, JavaValue)>,
    key: Option<JavaValue>,
}

impl<'a> ser::SerializeMap for MapBuilder<'a> {
    type Ok = JavaValue;
    type Error = KryoError;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), KryoError> {
        self.key = Some(key.serialize(self.ser)?);
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), KryoError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| KryoError::Custom("map value without a key".to_owned()))?;
        self.entries.push((key, value.serialize(self.ser)?));
        Ok(())
    }

    fn end(self) -> Result<JavaValue, KryoError> {
        Ok(JavaValue::Map {
            class: HASH_MAP.to_owned(),
            entries: self.entries,
        })
    }
}

pub(crate) struct StructBuilder<'a> {
    ser: ToJava<'a>,
    schema: &'a ClassSchema,
    values: Vec<Option<JavaValue>>,
}

impl<'a> StructBuilder<'a> {
    fn new(ser: ToJava<'a>, schema: &'a ClassSchema) -> Self {
        StructBuilder {
            ser,
            schema,
            values: vec![None; schema.fields.len()],
        }
    }

    fn slot(&mut self, key: &str) -> Result<&mut Option<JavaValue>, KryoError> {
        let class = &self.schema.class;
        let index = self
            .schema
            .fields
            .iter()
            .position(|(n, _)| n == key)
            .ok_or_else(|| {
                KryoError::Unsupported(format!(
                    "field {key} of {class} was not seen when tracing the type's Deserialize impl"
                ))
            })?;
        self.values
            .get_mut(index)
            .ok_or_else(|| KryoError::Custom("field index out of range".to_owned()))
    }

    fn finish(self) -> Result<JavaValue, KryoError> {
        let mut fields = Vec::with_capacity(self.schema.fields.len());
        for ((name, ty), value) in self.schema.fields.iter().zip(self.values) {
            let value = match value {
                Some(v) => v,
                // A skipped field (`skip_serializing_if`) is null, which only a reference type
                // can hold.
                None if !matches!(ty, super::value::JavaType::Primitive(_)) => JavaValue::Null,
                None => {
                    return Err(KryoError::Unsupported(format!(
                    "field {name} of {} was not serialized, and a primitive field cannot be null",
                    self.schema.class
                )))
                }
            };
            fields.push(JavaField {
                name: name.clone(),
                ty: ty.clone(),
                value,
            });
        }
        Ok(JavaValue::Object(JavaObject {
            class: self.schema.class.clone(),
            fields,
            record: self.schema.kind == super::value::ClassKind::Record,
        }))
    }
}

impl<'a> ser::SerializeStruct for StructBuilder<'a> {
    type Ok = JavaValue;
    type Error = KryoError;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), KryoError> {
        let v = value.serialize(self.ser)?;
        *self.slot(key)? = Some(v);
        Ok(())
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), KryoError> {
        self.slot(key).map(|_| ())
    }

    fn end(self) -> Result<JavaValue, KryoError> {
        self.finish()
    }
}
