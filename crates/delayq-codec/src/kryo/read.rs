//! Reads Kryo bytes into a [`JavaValue`], as Kryo's `readClassAndObject` would.

use std::collections::HashMap;

use super::schema::Registry;
use super::value::{
    layout, ClassKind, ClassSchema, JavaField, JavaObject, JavaType, JavaValue, Layout, Primitive,
    BYTE_ARRAY, LIST_CLASSES, MAP_CLASSES, SET_CLASSES, UUID,
};
use super::wire::Reader;
use super::{builtin, write, KryoError, MAX_DEPTH};
use crate::java::{BIG_DECIMAL, BIG_INTEGER, OPTIONAL};

/// How many collection elements and map entries one value may hold beyond its byte length.
/// Most elements take at least one byte, but some take none (the nulls of an "all null"
/// collection, POJOs without fields), so a forged count could otherwise make a few bytes
/// allocate gigabytes.
const MAX_FREE_ELEMENTS: usize = 1 << 18;

/// The declared type of a final class by name.
fn final_type(name: &str) -> JavaType {
    match Primitive::from_wrapper_name(name) {
        Some(p) if name.contains('.') => JavaType::Boxed(p),
        _ if name == UUID => JavaType::Uuid,
        _ => JavaType::Final(name.to_owned()),
    }
}

/// A class as read from the wire.
#[derive(Debug, Clone, PartialEq)]
enum Class {
    Prim(Primitive),
    String,
    Named(String),
}

/// Decodes one whole value; bytes left over are an error.
pub(crate) fn decode(bytes: &[u8], registry: &Registry) -> Result<JavaValue, KryoError> {
    let mut d = Decoder {
        r: Reader::new(bytes),
        names: HashMap::new(),
        registry,
        depth: 0,
        elements_left: bytes.len().saturating_add(MAX_FREE_ELEMENTS),
    };
    let v = d.class_and_object(&[])?;
    if d.r.remaining() > 0 {
        return Err(KryoError::TrailingBytes {
            offset: d.r.pos(),
            count: d.r.remaining(),
        });
    }
    Ok(v)
}

struct Decoder<'a, 'r> {
    r: Reader<'a>,
    /// Class names by name id, as introduced earlier in this value.
    names: HashMap<u32, String>,
    registry: &'r Registry,
    depth: usize,
    /// Elements and entries this value may still hold (see [`MAX_FREE_ELEMENTS`]).
    elements_left: usize,
}

impl<'a, 'r> Decoder<'a, 'r> {
    fn enter(&mut self) -> Result<(), KryoError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(KryoError::TooDeep(MAX_DEPTH));
        }
        Ok(())
    }

    fn malformed(&self, offset: usize, detail: impl Into<String>) -> KryoError {
        KryoError::Malformed {
            offset,
            detail: detail.into(),
        }
    }

    /// A collection or map element count (already minus one), checked against the budget.
    fn element_count(&mut self, n: u32, at: usize) -> Result<usize, KryoError> {
        let n = n as usize;
        self.elements_left = self.elements_left.checked_sub(n).ok_or_else(|| {
            self.malformed(
                at,
                format!(
                    "a collection claims {n} elements, more than {} bytes of input can hold",
                    self.r.remaining()
                ),
            )
        })?;
        Ok(n)
    }

    /// `Kryo.readClass`: `None` for null.
    fn class(&mut self) -> Result<Option<Class>, KryoError> {
        let at = self.r.pos();
        let id = self.r.varint("class id")?;
        match id {
            0 => Ok(None),
            1 => {
                let name_id = self.r.varint("class name id")?;
                let name = match self.names.get(&name_id) {
                    Some(n) => n.clone(),
                    None => {
                        let name_at = self.r.pos();
                        let name = self
                            .r
                            .string("class name")?
                            .ok_or_else(|| self.malformed(name_at, "null class name"))?;
                        self.names.insert(name_id, name.clone());
                        name
                    }
                };
                Ok(Some(if name == "java.lang.String" {
                    Class::String
                } else if let Some(p) = Primitive::from_wrapper_name(&name) {
                    Class::Prim(p)
                } else {
                    Class::Named(name)
                }))
            }
            3 => Ok(Some(Class::String)),
            other => match Primitive::from_wire_id(other) {
                Some(p) => Ok(Some(Class::Prim(p))),
                None => Err(KryoError::UnregisteredClassId {
                    id: other - 2,
                    offset: at,
                }),
            },
        }
    }

    /// `Kryo.readClassAndObject` with the slot's declared type arguments.
    fn class_and_object(&mut self, args: &[JavaType]) -> Result<JavaValue, KryoError> {
        let at = self.r.pos();
        match self.class()? {
            None => Ok(JavaValue::Null),
            Some(class) => self.body(&class, args, at),
        }
    }

    /// A slot with a declared type (a field).
    fn declared(&mut self, ty: &JavaType) -> Result<JavaValue, KryoError> {
        match ty {
            JavaType::Primitive(p) => self.prim_body(*p),
            JavaType::NonFinal { type_args } => self.class_and_object(type_args),
            _ => self.final_value(ty, true),
        }
    }

    fn marker(&mut self) -> Result<bool, KryoError> {
        let at = self.r.pos();
        match self.r.byte("null marker")? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.malformed(at, format!("null marker must be 00 or 01, found {b:02x}"))),
        }
    }

    fn final_value(&mut self, ty: &JavaType, nullable: bool) -> Result<JavaValue, KryoError> {
        match ty {
            JavaType::String => Ok(self
                .r
                .string("string")?
                .map_or(JavaValue::Null, JavaValue::String)),
            JavaType::ByteArray => self.byte_array(),
            JavaType::Boxed(p) | JavaType::Primitive(p) => {
                if nullable && !self.marker()? {
                    return Ok(JavaValue::Null);
                }
                self.prim_body(*p)
            }
            JavaType::Uuid => {
                if nullable && !self.marker()? {
                    return Ok(JavaValue::Null);
                }
                self.uuid()
            }
            JavaType::Final(class) => {
                let at = self.r.pos();
                if nullable && !self.accepts_null(class) && !self.marker()? {
                    return Ok(JavaValue::Null);
                }
                self.body(&Class::Named(class.clone()), &[], at)
            }
            JavaType::NonFinal { type_args } => self.class_and_object(type_args),
        }
    }

    /// Whether Kryo's serializer for the named class writes null itself.
    fn accepts_null(&self, name: &str) -> bool {
        name.starts_with('[')
            || name == BIG_INTEGER
            || name == BIG_DECIMAL
            || LIST_CLASSES.contains(&name)
            || SET_CLASSES.contains(&name)
            || MAP_CLASSES.contains(&name)
            || self.enum_constants(name).is_some()
    }

    fn class_accepts_null(&self, class: &Class) -> bool {
        match class {
            Class::Prim(_) => false,
            Class::String => true,
            Class::Named(n) => self.accepts_null(n),
        }
    }

    /// The constants of an enum class known to the registry; a constant with a body has a
    /// class of its own (`Color$1`), which maps to its enum.
    fn enum_constants(&self, name: &str) -> Option<&'r [String]> {
        let registry = self.registry;
        let lookup = |n: &str| match registry.get(n).map(|s| &s.kind) {
            Some(ClassKind::Enum(constants)) => Some(constants.as_slice()),
            _ => None,
        };
        lookup(name).or_else(|| {
            let (base, suffix) = name.rsplit_once('$')?;
            suffix
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| lookup(base))?
        })
    }

    fn prim_body(&mut self, p: Primitive) -> Result<JavaValue, KryoError> {
        Ok(match p {
            Primitive::Boolean => JavaValue::Bool(self.r.boolean("boolean")?),
            Primitive::Byte => JavaValue::Byte(self.r.byte("byte")? as i8),
            Primitive::Short => JavaValue::Short(self.r.short()?),
            Primitive::Char => {
                let at = self.r.pos();
                let unit = self.r.char_unit()?;
                let c = char::from_u32(u32::from(unit)).ok_or_else(|| {
                    self.malformed(
                        at,
                        format!("char {unit:#06x} is a lone UTF-16 surrogate, which a Rust char cannot hold"),
                    )
                })?;
                JavaValue::Char(c)
            }
            Primitive::Int => JavaValue::Int(self.r.varint_zigzag("int")?),
            Primitive::Long => JavaValue::Long(self.r.varlong_zigzag("long")?),
            Primitive::Float => JavaValue::Float(self.r.float()?),
            Primitive::Double => JavaValue::Double(self.r.double()?),
        })
    }

    fn byte_array(&mut self) -> Result<JavaValue, KryoError> {
        match self.r.varint("byte[] length")? {
            0 => Ok(JavaValue::Null),
            n => Ok(JavaValue::Bytes(
                self.r.take((n - 1) as usize, "byte[]")?.to_vec(),
            )),
        }
    }

    fn uuid(&mut self) -> Result<JavaValue, KryoError> {
        let most = self.r.long_fixed("UUID")? as u64;
        let least = self.r.long_fixed("UUID")? as u64;
        Ok(JavaValue::Uuid(
            (u128::from(most) << 64) | u128::from(least),
        ))
    }

    /// The serializer body for `class`.
    fn body(
        &mut self,
        class: &Class,
        args: &[JavaType],
        at: usize,
    ) -> Result<JavaValue, KryoError> {
        let name = match class {
            Class::Prim(p) => return self.prim_body(*p),
            Class::String => {
                return Ok(self
                    .r
                    .string("string")?
                    .map_or(JavaValue::Null, JavaValue::String))
            }
            Class::Named(n) => n.as_str(),
        };
        match name {
            BYTE_ARRAY => return self.byte_array(),
            UUID => return self.uuid(),
            BIG_INTEGER => {
                return Ok(builtin::read_big_integer(&mut self.r)?
                    .map_or(JavaValue::Null, JavaValue::BigInteger))
            }
            BIG_DECIMAL => {
                return Ok(builtin::read_big_decimal(&mut self.r)?
                    .map_or(JavaValue::Null, JavaValue::BigDecimal))
            }
            _ if builtin::is_time_class(name) => {
                return Ok(JavaValue::Time(builtin::read_time(&mut self.r, name)?))
            }
            _ => {}
        }
        if let Some(constants) = self.enum_constants(name) {
            return self.enum_constant(name, constants.len());
        }
        self.enter()?;
        let v = self.nested_body(name, args, at)?;
        self.depth -= 1;
        Ok(v)
    }

    fn enum_constant(&mut self, name: &str, count: usize) -> Result<JavaValue, KryoError> {
        let at = self.r.pos();
        match self.r.varint("enum ordinal")? {
            0 => Ok(JavaValue::Null),
            n if (n as usize) <= count => Ok(JavaValue::Enum {
                class: name.to_owned(),
                ordinal: n - 1,
            }),
            n => Err(self.malformed(
                at,
                format!(
                    "ordinal {} of enum {name}, which has {count} constants",
                    n - 1
                ),
            )),
        }
    }

    /// Bodies that hold other values: optionals, arrays, collections, maps, objects.
    fn nested_body(
        &mut self,
        name: &str,
        args: &[JavaType],
        at: usize,
    ) -> Result<JavaValue, KryoError> {
        if name == OPTIONAL {
            return Ok(match self.class_and_object(&[])? {
                JavaValue::Null => JavaValue::Optional(None),
                v => JavaValue::Optional(Some(Box::new(v))),
            });
        }
        if name.starts_with('[') {
            return self.array(name);
        }
        let v = if LIST_CLASSES.contains(&name) {
            self.collection(name, args)?.map(|items| JavaValue::List {
                class: name.to_owned(),
                items,
            })
        } else if SET_CLASSES.contains(&name) {
            self.collection(name, args)?.map(|items| JavaValue::Set {
                class: name.to_owned(),
                items,
            })
        } else if MAP_CLASSES.contains(&name) {
            self.map(name, args)?.map(|entries| JavaValue::Map {
                class: name.to_owned(),
                entries,
            })
        } else if let Some(schema) = self.registry.get(name) {
            Some(self.object(schema)?)
        } else {
            return Err(KryoError::UnknownClass {
                class: name.to_owned(),
                offset: at,
            });
        };
        Ok(v.unwrap_or(JavaValue::Null))
    }

    fn object(&mut self, schema: &ClassSchema) -> Result<JavaValue, KryoError> {
        let record = schema.kind == ClassKind::Record;
        let mut fields = Vec::with_capacity(schema.fields.len());
        for (field, ty) in &schema.fields {
            let value = match ty {
                // A record's components carry no type arguments.
                JavaType::NonFinal { .. } if record => self.class_and_object(&[])?,
                _ => self.declared(ty)?,
            };
            fields.push(JavaField {
                name: field.clone(),
                ty: ty.clone(),
                value,
            });
        }
        Ok(JavaValue::Object(JavaObject {
            class: schema.class.clone(),
            fields,
            record,
        }))
    }

    /// Kryo's array serializers (see `write.rs`).
    fn array(&mut self, class: &str) -> Result<JavaValue, KryoError> {
        let at = self.r.pos();
        let len = self.r.varint("array length")?;
        if len == 0 {
            return Ok(JavaValue::Null);
        }
        let n = self.element_count(len - 1, at)?;
        let mut items = Vec::with_capacity(n.min(self.r.remaining()));
        if let Some(code) = builtin::primitive_array_code(class) {
            let p = match code {
                b'Z' => Primitive::Boolean,
                b'C' => Primitive::Char,
                b'S' => Primitive::Short,
                b'I' => Primitive::Int,
                b'J' => Primitive::Long,
                b'F' => Primitive::Float,
                _ => Primitive::Double,
            };
            for _ in 0..n {
                items.push(self.prim_body(p)?);
            }
        } else {
            let element = write::array_element(class)
                .ok_or_else(|| self.malformed(at, format!("{class} is not an array class")))?
                .to_owned();
            let registry_final = matches!(
                self.registry.get(&element).map(|s| &s.kind),
                Some(ClassKind::Record | ClassKind::Enum(_))
            );
            let is_final = registry_final || write::element_is_final(&element, None);
            for _ in 0..n {
                let item = if element == "java.lang.String" {
                    self.r
                        .string("string")?
                        .map_or(JavaValue::Null, JavaValue::String)
                } else if is_final {
                    self.final_value(&final_type(&element), true)?
                } else {
                    self.class_and_object(&[])?
                };
                items.push(item);
            }
        }
        Ok(JavaValue::Array {
            class: class.to_owned(),
            items,
        })
    }

    /// `writeHeader` of a sorted collection: its comparator, which must be null (natural
    /// ordering).
    fn header(&mut self, lay: Layout) -> Result<(), KryoError> {
        if lay != Layout::Sorted {
            return Ok(());
        }
        let at = self.r.pos();
        match self.class_and_object(&[])? {
            JavaValue::Null => Ok(()),
            other => Err(KryoError::Unsupported(format!(
                "a sorted collection with a comparator ({}) at byte {at}: only natural ordering \
                 is supported",
                other.java_type_name()
            ))),
        }
    }

    /// `CollectionSerializer.read` (and the JDK collections' variants); `None` for null.
    fn collection(
        &mut self,
        class: &str,
        args: &[JavaType],
    ) -> Result<Option<Vec<JavaValue>>, KryoError> {
        let lay = layout(class);
        match lay {
            Layout::Empty => return Ok(Some(Vec::new())),
            Layout::Singleton => return Ok(Some(vec![self.class_and_object(&[])?])),
            _ => {}
        }
        let element = match args {
            [e] => Some(e),
            _ => None,
        };
        let final_element = element.filter(|e| e.is_final());
        let at = self.r.pos();
        let (flag, len) = if final_element.is_some() && !lay.can_hold_null() {
            (false, self.r.varint("collection size")?)
        } else {
            self.r.varint_flag("collection size")?
        };
        if len == 0 {
            return Ok(None);
        }
        let n = self.element_count(len - 1, at)?;
        self.header(lay)?;
        let mut items = Vec::with_capacity(n.min(self.r.remaining()));
        if let Some(e) = final_element {
            // The element serializer is fixed by the type argument; the flag says "has nulls".
            for _ in 0..n {
                items.push(self.final_value(e, flag)?);
            }
            return Ok(Some(items));
        }
        if n == 0 {
            return Ok(Some(items));
        }
        let element_args: &[JavaType] = match element {
            Some(JavaType::NonFinal { type_args }) => type_args,
            _ => &[],
        };
        if !flag {
            for _ in 0..n {
                items.push(self.class_and_object(element_args)?);
            }
            return Ok(Some(items));
        }
        let class_at = self.r.pos();
        let Some(class) = self.class()? else {
            items.resize(n, JavaValue::Null);
            return Ok(Some(items));
        };
        let can_be_null = lay.can_hold_null() && self.r.boolean("collection has-null flag")?;
        let accepts_null = self.class_accepts_null(&class);
        for _ in 0..n {
            if can_be_null && !accepts_null && !self.marker()? {
                items.push(JavaValue::Null);
                continue;
            }
            items.push(self.body(&class, element_args, class_at)?);
        }
        Ok(Some(items))
    }

    /// `MapSerializer.read` (and the JDK maps' variants); `None` for a null map.
    #[allow(clippy::type_complexity)]
    fn map(
        &mut self,
        class: &str,
        args: &[JavaType],
    ) -> Result<Option<Vec<(JavaValue, JavaValue)>>, KryoError> {
        let lay = layout(class);
        match lay {
            Layout::Empty => return Ok(Some(Vec::new())),
            Layout::Singleton => {
                let k = self.class_and_object(&[])?;
                let v = self.class_and_object(&[])?;
                return Ok(Some(vec![(k, v)]));
            }
            _ => {}
        }
        let at = self.r.pos();
        let len = self.r.varint("map size")?;
        if len == 0 {
            return Ok(None);
        }
        let n = self.element_count(len - 1, at)?;
        self.header(lay)?;
        let (key_ty, value_ty) = match args {
            [k, v] => (Some(k), Some(v)),
            _ => (None, None),
        };
        let nullable = lay.can_hold_null();
        let mut entries = Vec::with_capacity(n.min(self.r.remaining()));
        for _ in 0..n {
            let k = self.map_slot(key_ty, nullable)?;
            let v = self.map_slot(value_ty, nullable)?;
            entries.push((k, v));
        }
        Ok(Some(entries))
    }

    /// A key or value; `nullable` is the map serializer's keys/valuesCanBeNull.
    fn map_slot(&mut self, ty: Option<&JavaType>, nullable: bool) -> Result<JavaValue, KryoError> {
        match ty {
            Some(t) if t.is_final() => self.final_value(t, nullable),
            Some(JavaType::NonFinal { type_args }) => self.class_and_object(type_args),
            _ => self.class_and_object(&[]),
        }
    }
}
