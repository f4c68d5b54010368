//! serde `Serializer` for map keys, which Jackson writes as JSON field names.

use super::JacksonError;
use serde::ser::{self, Serialize};

/// Map keys: Jackson writes them as field names (`toString()` of the key).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeySer;

fn bad_key(what: &'static str) -> JacksonError {
    JacksonError::UnsupportedKey(what)
}

impl ser::Serializer for KeySer {
    type Ok = String;
    type Error = JacksonError;
    type SerializeSeq = ser::Impossible<String, JacksonError>;
    type SerializeTuple = ser::Impossible<String, JacksonError>;
    type SerializeTupleStruct = ser::Impossible<String, JacksonError>;
    type SerializeTupleVariant = ser::Impossible<String, JacksonError>;
    type SerializeMap = ser::Impossible<String, JacksonError>;
    type SerializeStruct = ser::Impossible<String, JacksonError>;
    type SerializeStructVariant = ser::Impossible<String, JacksonError>;

    fn serialize_bool(self, v: bool) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<String, JacksonError> {
        Ok(super::num::java_float(v))
    }
    fn serialize_f64(self, v: f64) -> Result<String, JacksonError> {
        Ok(super::num::java_double(v))
    }
    fn serialize_char(self, v: char) -> Result<String, JacksonError> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String, JacksonError> {
        Ok(v.to_owned())
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<String, JacksonError> {
        Err(bad_key("bytes"))
    }
    fn serialize_none(self) -> Result<String, JacksonError> {
        Err(bad_key("null"))
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<String, JacksonError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, JacksonError> {
        Err(bad_key("unit"))
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<String, JacksonError> {
        Err(bad_key("a unit struct"))
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String, JacksonError> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String, JacksonError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String, JacksonError> {
        Err(bad_key("an enum variant with data"))
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, JacksonError> {
        Err(bad_key("a sequence"))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, JacksonError> {
        Err(bad_key("a tuple"))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, JacksonError> {
        Err(bad_key("a tuple struct"))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, JacksonError> {
        Err(bad_key("an enum variant with data"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, JacksonError> {
        Err(bad_key("a map"))
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, JacksonError> {
        Err(bad_key("a struct"))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, JacksonError> {
        Err(bad_key("an enum variant with data"))
    }
}
