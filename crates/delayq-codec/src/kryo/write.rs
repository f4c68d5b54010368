//! Writes a [`JavaValue`] as Kryo's `writeClassAndObject` would.

use std::collections::HashMap;

use super::builtin;
use super::hash_order::{hash_map_order, java_hash_code};
use super::value::{
    layout, sort_fields, JavaField, JavaObject, JavaType, JavaValue, Layout, Primitive, BYTE_ARRAY,
    HASH_MAP, HASH_SET, LIST_CLASSES, MAP_CLASSES, SET_CLASSES, TREE_MAP, UUID,
};
use super::wire::Writer;
use super::{KryoError, MAX_DEPTH};

/// The class Kryo resolves for a non-null value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RuntimeClass<'v> {
    /// A wrapper class, registered by Kryo with a fixed id.
    Prim(Primitive),
    /// `java.lang.String`, registered with id 1.
    String,
    /// `byte[]`.
    ByteArray,
    /// `java.util.UUID`.
    Uuid,
    /// A collection class (ArrayList, HashSet, …).
    Collection(&'v str),
    /// A map class.
    Map(&'v str),
    /// A POJO or record class.
    Pojo(&'v str),
    /// A class with one of Kryo's own serializers (`BigDecimal`, dates, enums, arrays,
    /// `Optional`); `nulls` says whether that serializer writes null itself.
    Builtin { name: &'v str, nulls: bool },
}

impl<'v> RuntimeClass<'v> {
    /// Whether Kryo's serializer for the class writes nulls itself (so no `00`/`01` marker goes
    /// before it where the value may be null).
    pub(crate) fn accepts_null(&self) -> bool {
        match self {
            RuntimeClass::String
            | RuntimeClass::ByteArray
            | RuntimeClass::Collection(_)
            | RuntimeClass::Map(_) => true,
            RuntimeClass::Builtin { nulls, .. } => *nulls,
            _ => false,
        }
    }

    fn name(&self) -> &'v str {
        match self {
            RuntimeClass::Prim(p) => p.wrapper_name(),
            RuntimeClass::String => "java.lang.String",
            RuntimeClass::ByteArray => BYTE_ARRAY,
            RuntimeClass::Uuid => UUID,
            RuntimeClass::Collection(n)
            | RuntimeClass::Map(n)
            | RuntimeClass::Pojo(n)
            | RuntimeClass::Builtin { name: n, .. } => n,
        }
    }
}

fn runtime_class(v: &JavaValue) -> Option<RuntimeClass<'_>> {
    let builtin = |name, nulls| RuntimeClass::Builtin { name, nulls };
    Some(match v {
        JavaValue::Null => return None,
        JavaValue::Bool(_) => RuntimeClass::Prim(Primitive::Boolean),
        JavaValue::Byte(_) => RuntimeClass::Prim(Primitive::Byte),
        JavaValue::Short(_) => RuntimeClass::Prim(Primitive::Short),
        JavaValue::Char(_) => RuntimeClass::Prim(Primitive::Char),
        JavaValue::Int(_) => RuntimeClass::Prim(Primitive::Int),
        JavaValue::Long(_) => RuntimeClass::Prim(Primitive::Long),
        JavaValue::Float(_) => RuntimeClass::Prim(Primitive::Float),
        JavaValue::Double(_) => RuntimeClass::Prim(Primitive::Double),
        JavaValue::String(_) => RuntimeClass::String,
        JavaValue::Bytes(_) => RuntimeClass::ByteArray,
        JavaValue::Uuid(_) => RuntimeClass::Uuid,
        JavaValue::List { class, .. } | JavaValue::Set { class, .. } => {
            RuntimeClass::Collection(class)
        }
        JavaValue::Map { class, .. } => RuntimeClass::Map(class),
        JavaValue::Object(o) => RuntimeClass::Pojo(&o.class),
        JavaValue::BigInteger(_) => builtin(crate::java::BIG_INTEGER, true),
        JavaValue::BigDecimal(_) => builtin(crate::java::BIG_DECIMAL, true),
        JavaValue::Time(t) => builtin(t.java_class(), false),
        JavaValue::Enum { class, .. } | JavaValue::Array { class, .. } => builtin(class, true),
        JavaValue::Optional(_) => builtin(crate::java::OPTIONAL, false),
    })
}

/// Classes that throw on null elements, keys or values (a `TreeMap` on null keys only): Java
/// could not read such bytes back.
const NO_NULLS: &[&str] = &[
    "java.util.ArrayDeque",
    "java.util.concurrent.ConcurrentLinkedQueue",
    "java.util.concurrent.ConcurrentLinkedDeque",
    "java.util.concurrent.ConcurrentHashMap",
    "java.util.Hashtable",
    "java.util.TreeSet",
    "java.util.TreeMap",
    "java.util.concurrent.ConcurrentSkipListMap",
];

fn check_collection<'x>(
    class: &str,
    allowed: &[&str],
    len: usize,
    mut values: impl Iterator<Item = &'x JavaValue>,
) -> Result<(), KryoError> {
    if !allowed.contains(&class) {
        return Err(KryoError::Unsupported(format!(
            "{class} is not one of the supported classes here ({})",
            allowed.join(", ")
        )));
    }
    let lay = layout(class);
    let no_nulls = NO_NULLS.contains(&class) || !lay.can_hold_null();
    if no_nulls && values.any(|v| matches!(v, JavaValue::Null)) {
        return Err(KryoError::Unsupported(format!(
            "{class} cannot hold null (Java would fail to read it)"
        )));
    }
    let fixed = match lay {
        Layout::Empty => Some(0),
        Layout::Singleton => Some(1),
        _ => None,
    };
    if let Some(n) = fixed.filter(|n| *n != len) {
        return Err(KryoError::Unsupported(format!(
            "{class} holds exactly {n} element(s), not {len}"
        )));
    }
    Ok(())
}

/// Encodes `value` as the root of a Redis value (declared type `Object`).
pub(crate) fn encode(value: &JavaValue, java_hash_order: bool) -> Result<Vec<u8>, KryoError> {
    let mut e = Emitter {
        w: Writer::default(),
        names: HashMap::new(),
        java_hash_order,
        depth: 0,
    };
    e.class_and_object(value, &[])?;
    Ok(e.w.buf)
}

struct Emitter<'v> {
    w: Writer,
    /// Class names already written in this value, with their name ids.
    names: HashMap<&'v str, u32>,
    java_hash_order: bool,
    depth: usize,
}

fn mismatch(ty: &JavaType, v: &JavaValue) -> KryoError {
    KryoError::Mismatch(format!(
        "a slot declared {} cannot hold {}",
        describe(ty),
        v.java_type_name()
    ))
}

fn describe(ty: &JavaType) -> String {
    match ty {
        JavaType::Primitive(p) => p.java_name().to_owned(),
        JavaType::Boxed(p) => format!("boxed {}", p.java_name()),
        JavaType::String => "String".to_owned(),
        JavaType::ByteArray => "byte[]".to_owned(),
        JavaType::Uuid => "UUID".to_owned(),
        JavaType::Final(class) => class.clone(),
        JavaType::NonFinal { type_args } if type_args.is_empty() => "Object".to_owned(),
        JavaType::NonFinal { type_args } => format!(
            "a generic type <{}>",
            type_args
                .iter()
                .map(describe)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Whether an array's element class is final for Kryo (so elements go without their class).
/// Classes not known to be final are taken as non-final, like a POJO class.
pub(crate) fn element_is_final(element: &str, sample: Option<&JavaValue>) -> bool {
    element.starts_with('[')
        || element == "java.lang.String"
        || element == UUID
        || Primitive::from_wrapper_name(element).is_some()
        || (builtin::is_time_class(element)
            && !matches!(element, crate::java::DATE | crate::java::TIMESTAMP))
        || element == crate::java::OPTIONAL
        || matches!(sample, Some(JavaValue::Enum { .. }))
        || matches!(sample, Some(JavaValue::Object(o)) if o.record)
}

/// The element class of an object array class: `[Lx.Y;` → `x.Y`, `[[I` → `[I`.
pub(crate) fn array_element(class: &str) -> Option<&str> {
    let rest = class.strip_prefix('[')?;
    if rest.starts_with('[') {
        return Some(rest);
    }
    rest.strip_prefix('L')?.strip_suffix(';')
}

impl<'v> Emitter<'v> {
    fn enter(&mut self) -> Result<(), KryoError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(KryoError::TooDeep(MAX_DEPTH));
        }
        Ok(())
    }

    fn count(n: usize) -> Result<u32, KryoError> {
        u32::try_from(n)
            .ok()
            .filter(|&n| n < i32::MAX as u32)
            .map(|n| n + 1)
            .ok_or_else(|| KryoError::Unsupported(format!("{n} elements do not fit a Java int")))
    }

    /// `Kryo.writeClass`.
    fn class(&mut self, class: &RuntimeClass<'v>) {
        match class {
            RuntimeClass::Prim(p) => return self.w.varint(p.wire_id()),
            RuntimeClass::String => return self.w.varint(3),
            _ => {}
        }
        let name = class.name();
        self.w.byte(1);
        if let Some(&id) = self.names.get(name) {
            self.w.varint(id);
            return;
        }
        let id = self.names.len() as u32;
        self.names.insert(name, id);
        self.w.varint(id);
        if name.is_ascii() {
            self.w.ascii(name);
        } else {
            self.w.string(Some(name));
        }
    }

    /// `Kryo.writeClassAndObject`, with the declared type arguments of the slot.
    fn class_and_object(
        &mut self,
        v: &'v JavaValue,
        args: &'v [JavaType],
    ) -> Result<(), KryoError> {
        match runtime_class(v) {
            None => {
                self.w.byte(0);
                Ok(())
            }
            Some(class) => {
                self.class(&class);
                self.body(v, args)
            }
        }
    }

    /// A slot with a declared type, as `FieldSerializer` writes a field (nulls allowed except in
    /// primitives).
    fn declared(&mut self, v: &'v JavaValue, ty: &'v JavaType) -> Result<(), KryoError> {
        match ty {
            JavaType::Primitive(p) => self.prim_body(*p, v).map_err(|_| mismatch(ty, v)),
            JavaType::NonFinal { type_args } => self.class_and_object(v, type_args),
            _ => self.final_value(v, ty, true),
        }
    }

    /// A value of a final declared type: `writeObjectOrNull` when `nullable`, else `writeObject`.
    fn final_value(
        &mut self,
        v: &'v JavaValue,
        ty: &'v JavaType,
        nullable: bool,
    ) -> Result<(), KryoError> {
        match (ty, v) {
            (JavaType::String, JavaValue::Null) => self.w.string(None),
            (JavaType::String, JavaValue::String(s)) => self.w.string(Some(s)),
            (JavaType::ByteArray, JavaValue::Null) => self.w.byte(0),
            (JavaType::ByteArray, JavaValue::Bytes(b)) => self.byte_array(b)?,
            (
                JavaType::Boxed(_) | JavaType::Primitive(_) | JavaType::Uuid | JavaType::Final(_),
                JavaValue::Null,
            ) if nullable => self.w.byte(0),
            (JavaType::Boxed(p) | JavaType::Primitive(p), _) => {
                if nullable {
                    self.w.byte(1);
                }
                self.prim_body(*p, v).map_err(|_| mismatch(ty, v))?;
            }
            (JavaType::Uuid, JavaValue::Uuid(u)) => {
                if nullable {
                    self.w.byte(1);
                }
                self.uuid(*u);
            }
            (JavaType::Final(class), _) => self.final_class(v, class, nullable)?,
            _ => return Err(mismatch(ty, v)),
        }
        Ok(())
    }

    /// A non-null value of a declared final class other than String, byte[], UUID and the
    /// wrappers.
    fn final_class(
        &mut self,
        v: &'v JavaValue,
        class: &str,
        nullable: bool,
    ) -> Result<(), KryoError> {
        let runtime = runtime_class(v).ok_or_else(|| {
            KryoError::Mismatch(format!("a non-null {class} slot cannot hold null"))
        })?;
        if runtime.name() != class {
            return Err(KryoError::Mismatch(format!(
                "a slot declared {class} (a final class) cannot hold {}",
                v.java_type_name()
            )));
        }
        if nullable && !runtime.accepts_null() {
            self.w.byte(1);
        }
        self.body(v, &[])
    }

    fn prim_body(&mut self, p: Primitive, v: &JavaValue) -> Result<(), KryoError> {
        match (p, v) {
            (Primitive::Boolean, JavaValue::Bool(b)) => self.w.byte(u8::from(*b)),
            (Primitive::Byte, JavaValue::Byte(b)) => self.w.byte(*b as u8),
            (Primitive::Short, JavaValue::Short(s)) => self.w.short(*s),
            (Primitive::Char, JavaValue::Char(c)) => {
                let unit = u16::try_from(u32::from(*c)).map_err(|_| {
                    KryoError::Unsupported(format!(
                        "char {c:?} (U+{:04X}) is outside the BMP and does not fit a Java char",
                        u32::from(*c)
                    ))
                })?;
                self.w.char_unit(unit);
            }
            (Primitive::Int, JavaValue::Int(i)) => self.w.varint_zigzag(*i),
            (Primitive::Long, JavaValue::Long(l)) => self.w.varlong_zigzag(*l),
            (Primitive::Float, JavaValue::Float(f)) => self.w.float(*f),
            (Primitive::Double, JavaValue::Double(d)) => self.w.double(*d),
            _ => {
                return Err(KryoError::Mismatch(format!(
                    "{} expected, found {}",
                    p.java_name(),
                    v.java_type_name()
                )))
            }
        }
        Ok(())
    }

    fn byte_array(&mut self, b: &[u8]) -> Result<(), KryoError> {
        self.w.varint(Self::count(b.len())?);
        self.w.bytes(b);
        Ok(())
    }

    fn uuid(&mut self, u: u128) {
        self.w.long_fixed((u >> 64) as u64 as i64);
        self.w.long_fixed(u as u64 as i64);
    }

    /// The serializer body of a non-null value.
    fn body(&mut self, v: &'v JavaValue, args: &'v [JavaType]) -> Result<(), KryoError> {
        match v {
            JavaValue::Null => self.w.byte(0),
            JavaValue::Bool(_) => self.prim_body(Primitive::Boolean, v)?,
            JavaValue::Byte(_) => self.prim_body(Primitive::Byte, v)?,
            JavaValue::Short(_) => self.prim_body(Primitive::Short, v)?,
            JavaValue::Char(_) => self.prim_body(Primitive::Char, v)?,
            JavaValue::Int(_) => self.prim_body(Primitive::Int, v)?,
            JavaValue::Long(_) => self.prim_body(Primitive::Long, v)?,
            JavaValue::Float(_) => self.prim_body(Primitive::Float, v)?,
            JavaValue::Double(_) => self.prim_body(Primitive::Double, v)?,
            JavaValue::String(s) => self.w.string(Some(s)),
            JavaValue::Bytes(b) => self.byte_array(b)?,
            JavaValue::Uuid(u) => self.uuid(*u),
            JavaValue::BigInteger(n) => builtin::write_big_integer(&mut self.w, n)?,
            JavaValue::BigDecimal(d) => builtin::write_big_decimal(&mut self.w, d)?,
            JavaValue::Time(t) => builtin::write_time(&mut self.w, t)?,
            JavaValue::Enum { ordinal, .. } => self.w.varint(ordinal.saturating_add(1)),
            JavaValue::Optional(inner) => match inner {
                Some(inner) => self.nested(|e| e.class_and_object(inner, &[]))?,
                None => self.w.byte(0),
            },
            JavaValue::Array { class, items } => self.nested(|e| e.array(class, items))?,
            JavaValue::List { class, items } | JavaValue::Set { class, items } => {
                let allowed = if matches!(v, JavaValue::List { .. }) {
                    LIST_CLASSES
                } else {
                    SET_CLASSES
                };
                check_collection(class, allowed, items.len(), items.iter())?;
                let hashed = class == HASH_SET;
                self.nested(|e| e.collection(class, items, hashed, args))?;
            }
            JavaValue::Map { class, entries } => {
                // A TreeMap orders its keys only: its values may be null.
                let values_checked = class != TREE_MAP;
                let values = entries
                    .iter()
                    .flat_map(|(k, v)| [Some(k), values_checked.then_some(v)])
                    .flatten();
                check_collection(class, MAP_CLASSES, entries.len(), values)?;
                let hashed = class == HASH_MAP;
                self.nested(|e| e.map(class, entries, hashed, args))?;
            }
            JavaValue::Object(o) => self.nested(|e| e.object(o))?,
        }
        Ok(())
    }

    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<(), KryoError>,
    ) -> Result<(), KryoError> {
        self.enter()?;
        f(self)?;
        self.depth -= 1;
        Ok(())
    }

    /// Kryo's array serializers: primitive arrays packed, `String[]` as strings, other arrays
    /// element by element (without the class when the element class is final).
    fn array(&mut self, class: &'v str, items: &'v [JavaValue]) -> Result<(), KryoError> {
        self.w.varint(Self::count(items.len())?);
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
            for v in items {
                self.prim_body(p, v)
                    .map_err(|e| KryoError::Mismatch(format!("{class}: {e}")))?;
            }
            return Ok(());
        }
        let element = array_element(class).ok_or_else(|| {
            KryoError::Unsupported(format!("{class} is not a Java array class name"))
        })?;
        if element == "java.lang.String" {
            for v in items {
                match v {
                    JavaValue::Null => self.w.string(None),
                    JavaValue::String(s) => self.w.string(Some(s)),
                    other => return Err(mismatch(&JavaType::String, other)),
                }
            }
            return Ok(());
        }
        let sample = items.iter().find(|v| !matches!(v, JavaValue::Null));
        if !element_is_final(element, sample) {
            for v in items {
                self.class_and_object(v, &[])?;
            }
            return Ok(());
        }
        for v in items {
            match runtime_class(v) {
                None => self.w.byte(0),
                Some(rc) if rc.name() != element => {
                    return Err(KryoError::Mismatch(format!(
                        "{class} cannot hold {}",
                        v.java_type_name()
                    )))
                }
                Some(rc) => {
                    if !rc.accepts_null() {
                        self.w.byte(1);
                    }
                    self.body(v, &[])?;
                }
            }
        }
        Ok(())
    }

    /// `CollectionSerializer.write` (and the JDK collections' variants of it).
    fn collection(
        &mut self,
        class: &str,
        items: &'v [JavaValue],
        hashed: bool,
        args: &'v [JavaType],
    ) -> Result<(), KryoError> {
        let lay = layout(class);
        match lay {
            Layout::Empty => return Ok(()),
            Layout::Singleton => return self.class_and_object(&items[0], &[]),
            _ => {}
        }
        if items.is_empty() {
            self.w.byte(1);
            self.header(lay);
            return Ok(());
        }
        let len = Self::count(items.len())?;
        let order = self.order(items.iter().map(Some), hashed);
        let items: Vec<&'v JavaValue> = order.iter().filter_map(|&i| items.get(i)).collect();
        let has_null = items.iter().any(|v| matches!(v, JavaValue::Null));
        // Kryo's generics: a final element type argument fixes the element serializer.
        let element = match args {
            [e] => Some(e),
            _ => None,
        };
        if let Some(e) = element.filter(|e| e.is_final()) {
            if !lay.can_hold_null() {
                self.w.varint(len);
            } else {
                self.w.varint_flag(has_null, len);
            }
            self.header(lay);
            for v in items {
                self.final_value(v, e, has_null)?;
            }
            return Ok(());
        }
        let element_args: &'v [JavaType] = match element {
            Some(JavaType::NonFinal { type_args }) => type_args,
            _ => &[],
        };
        self.mixed_or_same(lay, len, &items, has_null, element_args)
    }

    /// The collection body when no type argument fixes the element serializer.
    fn mixed_or_same(
        &mut self,
        lay: Layout,
        len: u32,
        items: &[&'v JavaValue],
        has_null: bool,
        element_args: &'v [JavaType],
    ) -> Result<(), KryoError> {
        let mut classes = items.iter().filter_map(|v| runtime_class(v));
        let first = classes.next();
        let same = match &first {
            None => true,
            Some(f) => classes.all(|c| c == *f),
        };
        if !same {
            self.w.varint_flag(false, len);
            self.header(lay);
            for v in items {
                self.class_and_object(v, element_args)?;
            }
            return Ok(());
        }
        self.w.varint_flag(true, len);
        self.header(lay);
        let Some(class) = first else {
            // Every element is null.
            self.w.byte(0);
            return Ok(());
        };
        self.class(&class);
        if lay.can_hold_null() {
            self.w.byte(u8::from(has_null));
        }
        let accepts_null = class.accepts_null();
        for v in items {
            if matches!(v, JavaValue::Null) {
                // The serializer's own null (String: 80; byte[], collections, maps: 00), or
                // the 00 marker of writeObjectOrNull.
                let null = if class == RuntimeClass::String {
                    0x80
                } else {
                    0
                };
                self.w.byte(if accepts_null { null } else { 0 });
                continue;
            }
            if has_null && !accepts_null {
                self.w.byte(1);
            }
            self.body(v, element_args)?;
        }
        Ok(())
    }

    /// `writeHeader`: the comparator of a sorted collection (natural ordering: null).
    fn header(&mut self, lay: Layout) {
        if lay == Layout::Sorted {
            self.w.byte(0);
        }
    }

    /// `MapSerializer.write` (and the JDK maps' variants of it).
    fn map(
        &mut self,
        class: &str,
        entries: &'v [(JavaValue, JavaValue)],
        hashed: bool,
        args: &'v [JavaType],
    ) -> Result<(), KryoError> {
        let lay = layout(class);
        match lay {
            Layout::Empty => return Ok(()),
            Layout::Singleton => {
                let (k, v) = &entries[0];
                self.class_and_object(k, &[])?;
                return self.class_and_object(v, &[]);
            }
            _ => {}
        }
        if entries.is_empty() {
            self.w.byte(1);
            self.header(lay);
            return Ok(());
        }
        self.w.varint(Self::count(entries.len())?);
        self.header(lay);
        let order = self.order(entries.iter().map(|(k, _)| Some(k)), hashed);
        let (key_ty, value_ty) = match args {
            [k, v] => (Some(k), Some(v)),
            _ => (None, None),
        };
        let nullable = lay.can_hold_null();
        for i in order {
            let Some((k, v)) = entries.get(i) else {
                continue;
            };
            self.map_slot(k, key_ty, nullable)?;
            self.map_slot(v, value_ty, nullable)?;
        }
        Ok(())
    }

    /// A key or value; `nullable` is the map serializer's keys/valuesCanBeNull.
    fn map_slot(
        &mut self,
        v: &'v JavaValue,
        ty: Option<&'v JavaType>,
        nullable: bool,
    ) -> Result<(), KryoError> {
        match ty {
            Some(t) if t.is_final() => self.final_value(v, t, nullable),
            Some(JavaType::NonFinal { type_args }) => self.class_and_object(v, type_args),
            _ => self.class_and_object(v, &[]),
        }
    }

    /// `FieldSerializer.write` (every field in name order), or `RecordSerializer.write`
    /// (every component in name order, without type arguments).
    fn object(&mut self, o: &'v JavaObject) -> Result<(), KryoError> {
        let mut fields: Vec<&'v JavaField> = o.fields.iter().collect();
        sort_fields(&mut fields, |f| &f.name);
        for f in fields {
            let result = match (&f.ty, o.record) {
                (JavaType::NonFinal { .. }, true) => self.class_and_object(&f.value, &[]),
                _ => self.declared(&f.value, &f.ty),
            };
            result.map_err(|e| match e {
                KryoError::Mismatch(m) => {
                    KryoError::Mismatch(format!("field {} of {}: {m}", f.name, o.class))
                }
                other => other,
            })?;
        }
        Ok(())
    }

    /// The order Kryo will write: given order, or java.util.HashMap's iteration order when
    /// asked for and every key's Java hashCode is known.
    fn order<'x>(
        &self,
        keys: impl ExactSizeIterator<Item = Option<&'x JavaValue>>,
        hashed: bool,
    ) -> Vec<usize> {
        let n = keys.len();
        let given: Vec<usize> = (0..n).collect();
        if !(hashed && self.java_hash_order) {
            return given;
        }
        let hashes: Option<Vec<i32>> = keys.map(|k| k.and_then(java_hash_code)).collect();
        let Some(hashes) = hashes else {
            return given;
        };
        hash_map_order(&hashes).unwrap_or(given)
    }
}
