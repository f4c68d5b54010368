//! Rust types for the Java classes real payloads carry, shared by every codec.
//!
//! Each type names its Java class to serde (a newtype struct named like the class), so the
//! Jackson codecs and `Kryo5Codec` write it as Redisson's codecs write that class, and other
//! serde formats see a plain string, number or tuple.
//!
//! | Java | Rust |
//! |---|---|
//! | `java.math.BigInteger` | [`BigInteger`] (also `i128`/`u128` with the Jackson codecs) |
//! | `java.math.BigDecimal` | [`BigDecimal`] |
//! | `java.util.Date`, `java.sql.Timestamp` | [`Date`], [`Timestamp`] |
//! | `java.time.Instant`, `Duration`, `LocalDate`, `LocalTime`, `LocalDateTime`, `OffsetDateTime`, `ZonedDateTime`, `ZoneId` | the types of the same names |
//! | `java.util.Optional<T>` | [`Optional<T>`] |
//! | `int[]`, `long[]`, … | a newtype struct renamed to the array's class name, e.g. `#[serde(rename = "[I")] struct Codes(Vec<i32>);` |

mod number;
mod time;

pub use number::{BigDecimal, BigInteger, NumberFormatError, BIG_DECIMAL, BIG_INTEGER};
pub use time::{
    Date, Duration, Instant, JavaTime, LocalDate, LocalDateTime, LocalTime, OffsetDateTime,
    Timestamp, ZoneId, ZonedDateTime, DATE, DURATION, INSTANT, LOCAL_DATE, LOCAL_DATE_TIME,
    LOCAL_TIME, OFFSET_DATE_TIME, TIMESTAMP, TIME_CLASSES, ZONED_DATE_TIME, ZONE_ID, ZONE_OFFSET,
    ZONE_REGION,
};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `java.util.Optional`.
pub const OPTIONAL: &str = "java.util.Optional";

/// A `java.util.Optional<T>` (a Rust `Option<T>` field is a nullable field instead; an
/// `Optional` is an object that may be empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Optional<T>(pub Option<T>);

impl<T: Serialize> Serialize for Optional<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(OPTIONAL, &self.0)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Optional<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = Optional<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a java.util.Optional")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                Option::<T>::deserialize(d).map(Optional)
            }
        }
        d.deserialize_newtype_struct(OPTIONAL, V(std::marker::PhantomData))
    }
}
