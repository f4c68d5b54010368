//! A JSON form of [`JavaValue`], for people and scripts (the `delayq` command line's
//! `--codec kryo`). Every value has exactly one form, and the form says the Java class, so a
//! value read, printed and read again encodes to the same bytes.
//!
//! | Java | JSON |
//! |---|---|
//! | `null` | `null` |
//! | `String` | `"text"` |
//! | `Long` | `42` (a JSON integer) |
//! | `Double` | `1.5` (a JSON number with a fraction or exponent) |
//! | `Boolean` | `true` |
//! | `Integer`, `Short`, `Byte`, `Float`, `Character` | `{"int": 42}`, `{"short": 1}`, `{"byte": 1}`, `{"float": 1.5}`, `{"char": "c"}` |
//! | `byte[]` | `{"bytes": "<base64>"}` |
//! | `UUID` | `{"uuid": "00112233-4455-6677-8899-aabbccddeeff"}` |
//! | `BigInteger`, `BigDecimal` | `{"bigInteger": "123…"}`, `{"bigDecimal": "12.50"}` |
//! | `Date`, `Timestamp` | `{"date": millis}`, `{"timestamp": millis}` |
//! | `Instant`, `Duration` | `{"instant": [seconds, nanos]}`, `{"duration": [seconds, nanos]}` |
//! | `LocalDate`, `LocalTime`, `LocalDateTime` | `{"localDate": [y, m, d]}`, `{"localTime": [h, m, s, nanos]}`, `{"localDateTime": [y, m, d, h, m, s, nanos]}` |
//! | `OffsetDateTime` | `{"offsetDateTime": [y, m, d, h, m, s, nanos, offsetSeconds]}` |
//! | `ZonedDateTime`, `ZoneId` | `{"zonedDateTime": [y, m, d, h, m, s, nanos, "Europe/Paris"]}`, `{"zoneId": "Europe/Paris"}` |
//! | enum constant | `{"enum": "com.example.Color", "ordinal": 2}` |
//! | `Optional` | `{"optional": value}` (`null` inside for empty) |
//! | lists, sets | `{"list": [..]}`, `{"set": [..]}`, with `"class"` for other classes than `ArrayList` / `HashSet` |
//! | maps | `{"map": [[key, value], ..]}`, with `"class"` for other classes than `HashMap` |
//! | arrays | `{"array": [..], "class": "[I"}` (items in this same form: `{"int": 1}` for `int[]`) |
//! | POJO, record | `{"object": "com.example.Order", "fields": [{"name": "id", "type": "long", "value": 1}, ..]}` (`"record": true` for a record) |
//!
//! Field types: `boolean` … `double` (primitives), `Boolean` … `Double` (wrappers), `String`,
//! `byte[]`, `UUID`, `Object` (any non-final type), `{"generic": [types]}` (a non-final type
//! with type arguments, such as `List<String>`), `{"final": "java.time.Instant"}`.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::value::{
    JavaField, JavaObject, JavaType, JavaValue, Primitive, ARRAY_LIST, HASH_MAP, HASH_SET,
};
use super::KryoError;
use crate::java::JavaTime;

fn bad(what: impl Into<String>) -> KryoError {
    KryoError::Custom(format!("JSON form of a Java value: {}", what.into()))
}

const TIME_TAGS: &[(&str, &str)] = &[
    ("date", crate::java::DATE),
    ("timestamp", crate::java::TIMESTAMP),
    ("instant", crate::java::INSTANT),
    ("duration", crate::java::DURATION),
    ("localDate", crate::java::LOCAL_DATE),
    ("localTime", crate::java::LOCAL_TIME),
    ("localDateTime", crate::java::LOCAL_DATE_TIME),
    ("offsetDateTime", crate::java::OFFSET_DATE_TIME),
    ("zonedDateTime", crate::java::ZONED_DATE_TIME),
    ("zoneId", crate::java::ZONE_ID),
];

fn uuid_text(u: u128) -> String {
    let h = format!("{u:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn type_json(ty: &JavaType) -> Value {
    match ty {
        JavaType::Primitive(p) => json!(p.java_name()),
        JavaType::Boxed(p) => json!(p.wrapper_name().trim_start_matches("java.lang.")),
        JavaType::String => json!("String"),
        JavaType::ByteArray => json!("byte[]"),
        JavaType::Uuid => json!("UUID"),
        JavaType::Final(c) => json!({ "final": c }),
        JavaType::NonFinal { type_args } if type_args.is_empty() => json!("Object"),
        JavaType::NonFinal { type_args } => {
            json!({ "generic": type_args.iter().map(type_json).collect::<Vec<_>>() })
        }
    }
}

fn type_from(j: &Value) -> Result<JavaType, KryoError> {
    if let Some(s) = j.as_str() {
        let prims = [
            Primitive::Boolean,
            Primitive::Byte,
            Primitive::Short,
            Primitive::Char,
            Primitive::Int,
            Primitive::Long,
            Primitive::Float,
            Primitive::Double,
        ];
        for p in prims {
            if s == p.java_name() {
                return Ok(JavaType::Primitive(p));
            }
            if s == p.wrapper_name().trim_start_matches("java.lang.") {
                return Ok(JavaType::Boxed(p));
            }
        }
        return match s {
            "String" => Ok(JavaType::String),
            "byte[]" => Ok(JavaType::ByteArray),
            "UUID" => Ok(JavaType::Uuid),
            "Object" => Ok(JavaType::object()),
            other => Err(bad(format!("unknown field type {other:?}"))),
        };
    }
    if let Some(c) = j.get("final").and_then(Value::as_str) {
        return Ok(JavaType::Final(c.to_owned()));
    }
    if let Some(args) = j.get("generic").and_then(Value::as_array) {
        let type_args = args.iter().map(type_from).collect::<Result<_, _>>()?;
        return Ok(JavaType::NonFinal { type_args });
    }
    Err(bad(format!("unknown field type {j}")))
}

fn with_class(mut m: Map<String, Value>, class: &str, default: &str) -> Value {
    if class != default {
        m.insert("class".into(), json!(class));
    }
    Value::Object(m)
}

impl JavaValue {
    /// This value's JSON form (see the [module docs](self)).
    pub fn to_json(&self) -> Value {
        let tagged = |k: &str, v: Value| json!({ k: v });
        match self {
            JavaValue::Null => Value::Null,
            JavaValue::Bool(b) => json!(b),
            JavaValue::Long(l) => json!(l),
            JavaValue::Double(d) if d.is_finite() && d.fract() != 0.0 => json!(d),
            JavaValue::Double(d) => tagged("double", json!(d.to_string())),
            JavaValue::String(s) => json!(s),
            JavaValue::Int(i) => tagged("int", json!(i)),
            JavaValue::Short(i) => tagged("short", json!(i)),
            JavaValue::Byte(i) => tagged("byte", json!(i)),
            JavaValue::Float(f) => tagged("float", json!(f.to_string())),
            JavaValue::Char(c) => tagged("char", json!(c.to_string())),
            JavaValue::Bytes(b) => tagged(
                "bytes",
                json!(base64::engine::general_purpose::STANDARD.encode(b)),
            ),
            JavaValue::Uuid(u) => tagged("uuid", json!(uuid_text(*u))),
            JavaValue::BigInteger(n) => tagged("bigInteger", json!(n.to_string())),
            JavaValue::BigDecimal(d) => tagged("bigDecimal", json!(d.to_string())),
            JavaValue::Time(t) => time_json(t),
            JavaValue::Enum { class, ordinal } => json!({ "enum": class, "ordinal": ordinal }),
            JavaValue::Optional(v) => {
                tagged("optional", v.as_ref().map_or(Value::Null, |v| v.to_json()))
            }
            JavaValue::List { class, items } => {
                let m = Map::from_iter([("list".into(), items_json(items))]);
                with_class(m, class, ARRAY_LIST)
            }
            JavaValue::Set { class, items } => {
                let m = Map::from_iter([("set".into(), items_json(items))]);
                with_class(m, class, HASH_SET)
            }
            JavaValue::Map { class, entries } => {
                let pairs: Vec<Value> = entries
                    .iter()
                    .map(|(k, v)| json!([k.to_json(), v.to_json()]))
                    .collect();
                with_class(
                    Map::from_iter([("map".into(), json!(pairs))]),
                    class,
                    HASH_MAP,
                )
            }
            JavaValue::Array { class, items } => {
                json!({ "array": items_json(items), "class": class })
            }
            JavaValue::Object(o) => object_json(o),
        }
    }

    /// Reads a value's JSON form (see the [module docs](self)).
    pub fn from_json(j: &Value) -> Result<JavaValue, KryoError> {
        match j {
            Value::Null => Ok(JavaValue::Null),
            Value::Bool(b) => Ok(JavaValue::Bool(*b)),
            Value::String(s) => Ok(JavaValue::String(s.clone())),
            Value::Number(n) => match n.as_i64() {
                Some(l) if !n.to_string().contains(['.', 'e', 'E']) => Ok(JavaValue::Long(l)),
                _ => n
                    .as_f64()
                    .map(JavaValue::Double)
                    .ok_or_else(|| bad(format!("{n} is not a Java long or double"))),
            },
            Value::Array(_) => Err(bad(
                "a JSON array has no Java class: write {\"list\": [..]} or {\"array\": [..], \"class\": ..}",
            )),
            Value::Object(m) => tagged_from(m),
        }
    }
}

fn items_json(items: &[JavaValue]) -> Value {
    Value::Array(items.iter().map(JavaValue::to_json).collect())
}

fn time_json(t: &JavaTime) -> Value {
    let class = match t {
        JavaTime::ZoneId(_) => crate::java::ZONE_ID,
        other => other.java_class(),
    };
    let tag = TIME_TAGS
        .iter()
        .find(|(_, c)| *c == class)
        .map_or("time", |(t, _)| t);
    let (numbers, text) = t.parts();
    if let (JavaTime::ZoneId(_), Some(text)) = (t, text) {
        return json!({ tag: text });
    }
    let mut parts: Vec<Value> = numbers.into_iter().map(|n| json!(n)).collect();
    parts.extend(text.map(|t| json!(t)));
    if let (JavaTime::Date(_) | JavaTime::Timestamp(_), [one]) = (t, parts.as_slice()) {
        return json!({ tag: one });
    }
    json!({ tag: parts })
}

fn object_json(o: &JavaObject) -> Value {
    let fields: Vec<Value> = o
        .fields
        .iter()
        .map(|f| json!({ "name": f.name, "type": type_json(&f.ty), "value": f.value.to_json() }))
        .collect();
    let mut m = Map::from_iter([
        ("object".to_owned(), json!(o.class)),
        ("fields".to_owned(), json!(fields)),
    ]);
    if o.record {
        m.insert("record".into(), json!(true));
    }
    Value::Object(m)
}

fn items_from(j: &Value) -> Result<Vec<JavaValue>, KryoError> {
    j.as_array()
        .ok_or_else(|| bad(format!("{j} is not a JSON array")))?
        .iter()
        .map(JavaValue::from_json)
        .collect()
}

fn class_or(m: &Map<String, Value>, default: &str) -> String {
    m.get("class")
        .and_then(Value::as_str)
        .unwrap_or(default)
        .to_owned()
}

fn number_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn tagged_from(m: &Map<String, Value>) -> Result<JavaValue, KryoError> {
    let int = |v: &Value| {
        v.as_i64()
            .ok_or_else(|| bad(format!("{v} is not an integer")))
    };
    let text = |v: &Value| number_text(v).ok_or_else(|| bad(format!("{v} is not a number")));
    let Some((key, v)) = m.iter().find(|(k, _)| {
        k.as_str() != "class"
            && k.as_str() != "ordinal"
            && k.as_str() != "fields"
            && k.as_str() != "record"
    }) else {
        return Err(bad("an empty object"));
    };
    let narrow = |what: &str| bad(format!("{v} does not fit a Java {what}"));
    Ok(match key.as_str() {
        "int" => JavaValue::Int(i32::try_from(int(v)?).map_err(|_| narrow("int"))?),
        "short" => JavaValue::Short(i16::try_from(int(v)?).map_err(|_| narrow("short"))?),
        "byte" => JavaValue::Byte(i8::try_from(int(v)?).map_err(|_| narrow("byte"))?),
        "long" => JavaValue::Long(int(v)?),
        "float" => JavaValue::Float(text(v)?.parse().map_err(|_| narrow("float"))?),
        "double" => JavaValue::Double(text(v)?.parse().map_err(|_| narrow("double"))?),
        "char" => {
            let s = v.as_str().unwrap_or_default();
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => JavaValue::Char(c),
                _ => return Err(narrow("char")),
            }
        }
        "bytes" => JavaValue::Bytes(
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or_default())
                .map_err(|e| bad(format!("bytes: {e}")))?,
        ),
        "uuid" => {
            let hex: String = v.as_str().unwrap_or_default().replace('-', "");
            let u = u128::from_str_radix(&hex, 16)
                .ok()
                .filter(|_| hex.len() == 32)
                .ok_or_else(|| narrow("UUID"))?;
            JavaValue::Uuid(u)
        }
        "bigInteger" => JavaValue::BigInteger(text(v)?.parse().map_err(|e| bad(format!("{e}")))?),
        "bigDecimal" => JavaValue::BigDecimal(text(v)?.parse().map_err(|e| bad(format!("{e}")))?),
        "enum" => JavaValue::Enum {
            class: v.as_str().ok_or_else(|| narrow("enum class"))?.to_owned(),
            ordinal: m
                .get("ordinal")
                .and_then(Value::as_u64)
                .and_then(|o| u32::try_from(o).ok())
                .ok_or_else(|| bad("an enum needs an \"ordinal\""))?,
        },
        "optional" => match v {
            Value::Null => JavaValue::Optional(None),
            other => JavaValue::Optional(Some(Box::new(JavaValue::from_json(other)?))),
        },
        "list" => JavaValue::List {
            class: class_or(m, ARRAY_LIST),
            items: items_from(v)?,
        },
        "set" => JavaValue::Set {
            class: class_or(m, HASH_SET),
            items: items_from(v)?,
        },
        "array" => JavaValue::Array {
            class: m
                .get("class")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("an array needs its \"class\" (such as \"[I\")"))?
                .to_owned(),
            items: items_from(v)?,
        },
        "map" => map_from(m, v)?,
        "object" => object_from(m, v)?,
        other => time_from(other, v)?,
    })
}

fn map_from(m: &Map<String, Value>, v: &Value) -> Result<JavaValue, KryoError> {
    let pairs = v
        .as_array()
        .ok_or_else(|| bad("\"map\" takes an array of [key, value] pairs"))?;
    let mut entries = Vec::with_capacity(pairs.len());
    for p in pairs {
        match p.as_array().map(Vec::as_slice) {
            Some([k, v]) => entries.push((JavaValue::from_json(k)?, JavaValue::from_json(v)?)),
            _ => return Err(bad(format!("{p} is not a [key, value] pair"))),
        }
    }
    Ok(JavaValue::Map {
        class: class_or(m, HASH_MAP),
        entries,
    })
}

fn object_from(m: &Map<String, Value>, v: &Value) -> Result<JavaValue, KryoError> {
    let class = v
        .as_str()
        .ok_or_else(|| bad("\"object\" takes the class name"))?;
    let mut fields = Vec::new();
    for f in m
        .get("fields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("field {f} has no name")))?;
        let ty = type_from(f.get("type").unwrap_or(&Value::Null))?;
        let value = JavaValue::from_json(f.get("value").unwrap_or(&Value::Null))?;
        fields.push(JavaField::new(name, ty, value));
    }
    let record = m.get("record").and_then(Value::as_bool).unwrap_or(false);
    Ok(JavaValue::Object(if record {
        JavaObject::record(class, fields)
    } else {
        JavaObject::new(class, fields)
    }))
}

fn time_from(tag: &str, v: &Value) -> Result<JavaValue, KryoError> {
    let (_, class) = TIME_TAGS
        .iter()
        .find(|(t, _)| *t == tag)
        .ok_or_else(|| bad(format!("unknown tag {tag:?}")))?;
    let mut numbers = Vec::new();
    let mut text = None;
    let items: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    for item in items {
        match item {
            Value::String(s) => text = Some(s.as_str()),
            other => numbers.push(
                other
                    .as_i64()
                    .ok_or_else(|| bad(format!("{other} is not an integer")))?,
            ),
        }
    }
    let t = JavaTime::from_parts(class, &numbers, text).map_err(bad)?;
    Ok(JavaValue::Time(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::java::{Instant, ZoneId};

    #[test]
    fn every_form_reads_back() {
        let values = vec![
            JavaValue::Null,
            JavaValue::Long(42),
            JavaValue::Int(-1),
            JavaValue::Double(2.0),
            JavaValue::Double(1.5),
            JavaValue::Float(0.1),
            JavaValue::Char('é'),
            JavaValue::Bytes(vec![0, 255]),
            JavaValue::Uuid(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff),
            JavaValue::BigDecimal("12.50".parse().unwrap()),
            JavaValue::Time(JavaTime::Instant(Instant {
                seconds: -1,
                nanos: 5,
            })),
            JavaValue::Time(JavaTime::ZoneId(ZoneId("Europe/Paris".into()))),
            JavaValue::Enum {
                class: "com.x.Color".into(),
                ordinal: 2,
            },
            JavaValue::Optional(None),
            JavaValue::Array {
                class: "[I".into(),
                items: vec![JavaValue::Int(1)],
            },
            JavaValue::Map {
                class: "java.util.TreeMap".into(),
                entries: vec![(JavaValue::Long(1), "a".into())],
            },
            JavaValue::Object(JavaObject::record(
                "com.x.P",
                [JavaField::new(
                    "tags",
                    JavaType::list_of(JavaType::String),
                    JavaValue::array_list(["t".into()]),
                )],
            )),
        ];
        for v in values {
            let j = v.to_json();
            assert_eq!(JavaValue::from_json(&j).unwrap(), v, "{j}");
        }
        assert_eq!(
            JavaValue::Uuid(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff).to_json(),
            json!({"uuid": "00112233-4455-6677-8899-aabbccddeeff"})
        );
        assert!(JavaValue::from_json(&json!([1])).is_err());
        assert!(JavaValue::from_json(&json!({"int": 3_000_000_000i64})).is_err());
    }
}
