//! Finds the Java declared types of a Rust type by tracing its `Deserialize` impl.
//!
//! serde's `Serialize` side shows values, not types: a `None` field does not say whether it is
//! an `Option<String>` (Kryo writes `80`) or an `Option<i64>` (Kryo writes `00`). The
//! `Deserialize` side does say: it asks for `deserialize_option`, then `deserialize_string`. So
//! the codec runs the type's `Deserialize` once against a tracer that answers every request with
//! a sample value and notes what was asked, giving a [`ClassSchema`] for every struct reachable
//! from the type.
//!
//! Recursive types (`struct Node { next: Option<Box<Node>> }`) are cut: once a struct is being
//! traced inside itself, options are answered with `None` and sequences and maps with nothing;
//! the outer trace has already seen those fields' types.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};

use super::de::FromJava;
use super::value::{
    handoff_put, ClassKind, ClassSchema, JavaType, JavaValue, Primitive, JAVA_VALUE_TOKEN, UUID,
};
use super::{builtin, write, KryoError};
use crate::java::{
    JavaTime, BIG_DECIMAL, BIG_INTEGER, DATE, OPTIONAL, TIMESTAMP, TIME_CLASSES, ZONE_ID,
    ZONE_OFFSET, ZONE_REGION,
};

/// A valid value of a date or time class, for tracing its `Deserialize`.
fn time_sample(class: &str) -> Result<JavaValue, KryoError> {
    let date_time = [1970, 1, 1, 0, 0, 0, 0];
    let numbers: &[i64] = match class {
        "java.time.Instant" | "java.time.Duration" => &[0, 0],
        "java.time.LocalDate" => &date_time[..3],
        "java.time.LocalTime" => &date_time[3..],
        "java.time.LocalDateTime" | "java.time.ZonedDateTime" => &date_time,
        "java.time.OffsetDateTime" => &[1970, 1, 1, 0, 0, 0, 0, 0],
        ZONE_ID | ZONE_REGION | ZONE_OFFSET => &[],
        _ => &[0],
    };
    let t = JavaTime::from_parts(class, numbers, Some("Z")).map_err(KryoError::Schema)?;
    let (numbers, text) = t.parts();
    let mut items: Vec<JavaValue> = numbers.into_iter().map(JavaValue::Long).collect();
    items.extend(text.map(|t| JavaValue::String(t.to_owned())));
    Ok(JavaValue::array_list(items))
}

/// Class schemas by Java class name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry {
    classes: HashMap<String, ClassSchema>,
    /// Classes to trace as records (Kryo5Codec::record).
    records: HashSet<String>,
}

impl Registry {
    /// Traces the struct named `class` as a Java record.
    pub(crate) fn mark_record(&mut self, class: &str) {
        self.records.insert(class.to_owned());
    }

    pub(crate) fn get(&self, class: &str) -> Option<&ClassSchema> {
        self.classes.get(class)
    }

    /// Adds a schema; the same class twice must have the same fields.
    pub(crate) fn add(&mut self, schema: ClassSchema) -> Result<(), KryoError> {
        match self.classes.get(&schema.class) {
            Some(existing) if *existing != schema => Err(KryoError::Schema(format!(
                "class {} is declared twice with different fields ({:?} and {:?})",
                schema.class,
                field_names(existing),
                field_names(&schema)
            ))),
            Some(_) => Ok(()),
            None => {
                self.classes.insert(schema.class.clone(), schema);
                Ok(())
            }
        }
    }
}

fn field_names(s: &ClassSchema) -> Vec<&str> {
    s.fields.iter().map(|(n, _)| n.as_str()).collect()
}

/// Traces `T` and adds every struct it reaches to `registry`.
pub(crate) fn trace<T: DeserializeOwned>(registry: &mut Registry) -> Result<(), KryoError> {
    let state = RefCell::new(TraceState {
        registry: std::mem::take(registry),
        stack: Vec::new(),
    });
    let out = Cell::new(None);
    let result = T::deserialize(Tracer {
        state: &state,
        out: &out,
        boxed: false,
    });
    // The hand-off slot may hold a sample left by a JavaValue; clear it.
    super::value::handoff_take();
    *registry = state.into_inner().registry;
    result.map(|_| ()).map_err(|e| match e {
        KryoError::Schema(_) => e,
        other => KryoError::Schema(format!(
            "tracing the Rust type's Deserialize impl failed: {other}"
        )),
    })
}

struct TraceState {
    registry: Registry,
    /// The structs being traced, outermost first.
    stack: Vec<&'static str>,
}

impl TraceState {
    /// True once some struct is being traced inside itself.
    fn recursing(&self) -> bool {
        self.stack
            .iter()
            .enumerate()
            .any(|(i, a)| self.stack.iter().skip(i + 1).any(|b| a == b))
    }
}

#[derive(Clone, Copy)]
struct Tracer<'a> {
    state: &'a RefCell<TraceState>,
    /// Where this call reports the declared type it found.
    out: &'a Cell<Option<JavaType>>,
    /// True inside an `Option` or as a type argument, where Java has only wrapper types.
    boxed: bool,
}

impl<'a> Tracer<'a> {
    fn with<R>(&self, f: impl FnOnce(&mut TraceState) -> R) -> Result<R, KryoError> {
        self.state
            .try_borrow_mut()
            .map(|mut s| f(&mut s))
            .map_err(|_| KryoError::Schema("re-entrant trace".into()))
    }

    fn child(&self, out: &'a Cell<Option<JavaType>>, boxed: bool) -> Tracer<'a> {
        Tracer {
            state: self.state,
            out,
            boxed,
        }
    }

    fn prim(&self, p: Primitive) {
        self.out.set(Some(if self.boxed {
            JavaType::Boxed(p)
        } else {
            JavaType::Primitive(p)
        }));
    }

    fn unsupported(what: &str) -> KryoError {
        KryoError::Schema(format!(
            "Rust {what} has no Java counterpart in Kryo5Codec (Java has no unsigned or 128-bit \
             integers: use i8/i16/i32/i64, and `codec::kryo::byte_array` for byte[])"
        ))
    }
}

macro_rules! unsupported_ints {
    ($($method:ident => $name:literal),*) => {
        $(fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, KryoError> {
            Err(Tracer::unsupported($name))
        })*
    };
}

impl<'de, 'a> de::Deserializer<'de> for Tracer<'a> {
    type Error = KryoError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        // A self-describing type (e.g. serde_json::Value): nothing to learn, declare Object.
        self.out.set(Some(JavaType::object()));
        visitor.visit_unit()
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Boolean);
        visitor.visit_bool(false)
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Byte);
        visitor.visit_i8(0)
    }

    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Short);
        visitor.visit_i16(0)
    }

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Int);
        visitor.visit_i32(0)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Long);
        visitor.visit_i64(0)
    }

    unsupported_ints!(
        deserialize_u8 => "u8",
        deserialize_u16 => "u16",
        deserialize_u32 => "u32",
        deserialize_u64 => "u64"
    );

    /// An `i128` is a `java.math.BigInteger` (a non-final class).
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.out.set(Some(JavaType::object()));
        visitor.visit_i128(0)
    }

    /// A `u128` is a `java.math.BigInteger` (a non-final class).
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.out.set(Some(JavaType::object()));
        visitor.visit_u128(0)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Float);
        visitor.visit_f32(0.0)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Double);
        visitor.visit_f64(0.0)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.prim(Primitive::Char);
        visitor.visit_char('a')
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.out.set(Some(JavaType::String));
        visitor.visit_str("")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.out.set(Some(JavaType::ByteArray));
        visitor.visit_bytes(&[])
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        if self.with(|s| s.recursing())? {
            self.out.set(Some(JavaType::object()));
            return visitor.visit_none();
        }
        let inner = Cell::new(None);
        let value = visitor.visit_some(self.child(&inner, true))?;
        self.out
            .set(Some(inner.take().unwrap_or_else(JavaType::object)));
        Ok(value)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.out.set(Some(JavaType::object()));
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        self.out.set(Some(JavaType::object()));
        if !self.with(|s| s.recursing())? {
            self.with(|s| s.registry.add(ClassSchema::new(name, [])))??;
        }
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        if name == JAVA_VALUE_TOKEN {
            self.out.set(Some(JavaType::object()));
            handoff_put(JavaValue::Null);
            return visitor.visit_unit();
        }
        if name == UUID {
            self.out.set(Some(JavaType::Uuid));
            return visitor.visit_newtype_struct(0u128.into_deserializer());
        }
        if name == BIG_INTEGER || name == BIG_DECIMAL {
            // Non-final classes: the class goes on the wire.
            self.out.set(Some(JavaType::object()));
            return visitor.visit_newtype_struct("0".into_deserializer());
        }
        if TIME_CLASSES.contains(&name) {
            let sample = time_sample(name)?;
            let declared = match name {
                DATE | TIMESTAMP | ZONE_ID | ZONE_REGION | ZONE_OFFSET => JavaType::object(),
                _ => JavaType::Final(name.to_owned()),
            };
            self.out.set(Some(declared));
            return visitor.visit_newtype_struct(FromJava(sample));
        }
        if name == OPTIONAL {
            self.out.set(Some(JavaType::Final(name.to_owned())));
            let scratch = Cell::new(None);
            return visitor.visit_newtype_struct(self.child(&scratch, true));
        }
        if name.starts_with('[') {
            let scratch = Cell::new(None);
            let value = visitor.visit_newtype_struct(self.child(&scratch, false))?;
            let element = write::array_element(name).unwrap_or("");
            let registered_final = self.with(|s| {
                matches!(
                    s.registry.get(element).map(|c| &c.kind),
                    Some(ClassKind::Enum(_) | ClassKind::Record)
                )
            })?;
            let is_final = builtin::primitive_array_code(name).is_some()
                || registered_final
                || write::element_is_final(element, None);
            self.out.set(Some(if is_final {
                JavaType::Final(name.to_owned())
            } else {
                JavaType::object()
            }));
            return Ok(value);
        }
        // Collection class names and plain newtypes are transparent.
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        let element = Cell::new(None);
        let cut = self.with(|s| s.recursing())?;
        let value = visitor.visit_seq(TraceSeq {
            tracer: self.child(&element, true),
            left: usize::from(!cut),
        })?;
        self.out.set(Some(JavaType::list_of(
            element.take().unwrap_or_else(JavaType::object),
        )));
        Ok(value)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        // A tuple becomes an ArrayList of mixed elements: List<Object>.
        let scratch = Cell::new(None);
        let value = visitor.visit_seq(TraceSeq {
            tracer: self.child(&scratch, true),
            left: len,
        })?;
        self.out.set(Some(JavaType::list_of(JavaType::object())));
        Ok(value)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        let key = Cell::new(None);
        let val = Cell::new(None);
        let cut = self.with(|s| s.recursing())?;
        let value = visitor.visit_map(TraceMap {
            key: self.child(&key, true),
            value: self.child(&val, true),
            left: !cut,
        })?;
        self.out.set(Some(JavaType::map_of(
            key.take().unwrap_or_else(JavaType::object),
            val.take().unwrap_or_else(JavaType::object),
        )));
        Ok(value)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        let (record, is_record) = self.with(|s| {
            let record = !s.recursing() && !s.stack.contains(&name);
            s.stack.push(name);
            (record, s.registry.records.contains(name))
        })?;
        let found = RefCell::new(Vec::with_capacity(fields.len()));
        let result = visitor.visit_map(TraceStruct {
            tracer: self,
            fields,
            next: 0,
            found: &found,
        });
        self.with(|s| s.stack.pop())?;
        let value = result?;
        if is_record {
            // Records are final: no class on the wire, a null marker instead.
            self.out.set(Some(JavaType::Final(name.to_owned())));
        } else {
            self.out.set(Some(JavaType::object()));
        }
        if record {
            let fields = found.into_inner();
            let schema = if is_record {
                ClassSchema::record(name, fields)
            } else {
                ClassSchema::new(name, fields)
            };
            self.with(|s| s.registry.add(schema))??;
        }
        Ok(value)
    }

    /// A Java enum: the serde name is the class, the variants are the constants in
    /// declaration order (only unit variants can be written).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, KryoError> {
        if !name.contains('.') {
            return Err(KryoError::Schema(format!(
                "Rust enum {name} needs its Java enum's class name: add \
                 #[serde(rename = \"<fully.qualified.JavaEnum>\")]"
            )));
        }
        self.out.set(Some(JavaType::Final(name.to_owned())));
        self.with(|s| {
            s.registry
                .add(ClassSchema::enumeration(name, variants.iter().copied()))
        })??;
        visitor
            .visit_enum(de::value::U32Deserializer::<KryoError>::new(0))
            .map_err(|e| {
                KryoError::Schema(format!(
                    "Rust enum {name} must have unit variants only (a Java enum's constants): {e}"
                ))
            })
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, KryoError> {
        visitor.visit_unit()
    }
}

struct TraceSeq<'a> {
    tracer: Tracer<'a>,
    left: usize,
}

impl<'de, 'a> de::SeqAccess<'de> for TraceSeq<'a> {
    type Error = KryoError;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, KryoError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.tracer).map(Some)
    }
}

struct TraceMap<'a> {
    key: Tracer<'a>,
    value: Tracer<'a>,
    left: bool,
}

impl<'de, 'a> de::MapAccess<'de> for TraceMap<'a> {
    type Error = KryoError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, KryoError> {
        if !self.left {
            return Ok(None);
        }
        self.left = false;
        seed.deserialize(self.key).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, KryoError> {
        seed.deserialize(self.value)
    }
}

struct TraceStruct<'a, 'f> {
    tracer: Tracer<'a>,
    fields: &'static [&'static str],
    next: usize,
    found: &'f RefCell<Vec<(String, JavaType)>>,
}

impl<'de, 'a, 'f> de::MapAccess<'de> for TraceStruct<'a, 'f> {
    type Error = KryoError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, KryoError> {
        match self.fields.get(self.next) {
            None => Ok(None),
            Some(name) => seed
                .deserialize(de::value::BorrowedStrDeserializer::<KryoError>::new(name))
                .map(Some),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, KryoError> {
        let name = self.fields.get(self.next).copied().unwrap_or_default();
        self.next += 1;
        let out = Cell::new(None);
        let value = seed.deserialize(Tracer {
            state: self.tracer.state,
            out: &out,
            boxed: false,
        })?;
        let ty = out.take().unwrap_or_else(JavaType::object);
        self.found
            .try_borrow_mut()
            .map_err(|_| KryoError::Schema("re-entrant trace".into()))?
            .push((name.to_owned(), ty));
        Ok(value)
    }
}
