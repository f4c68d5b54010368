//! Rust types for the Java classes real payloads carry, shared by every codec.
//!
//! Each type names its Java class to serde (a newtype struct named like the class), so the
//! Jackson codecs and `Kryo5Codec` write it as Redisson's codecs write that class, and other
//! serde formats see a plain string or number.

mod number;

pub use number::{BigDecimal, BigInteger, NumberFormatError, BIG_DECIMAL, BIG_INTEGER};
