//! `java.math.BigInteger` and `java.math.BigDecimal`, held exactly, and the exact conversions
//! between decimal text, Rust integers and floats that every codec uses for numbers.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// The Java class name of [`BigInteger`].
pub const BIG_INTEGER: &str = "java.math.BigInteger";
/// The Java class name of [`BigDecimal`].
pub const BIG_DECIMAL: &str = "java.math.BigDecimal";

/// A `java.math.BigInteger`: an integer of any size, held exactly.
///
/// ```
/// use delayq_codec::java::BigInteger;
///
/// let n: BigInteger = "-1234567890123456789012345678901234567890".parse().unwrap();
/// assert_eq!(n.to_string(), "-1234567890123456789012345678901234567890");
/// assert_eq!(n.to_i128(), None); // does not fit
/// assert_eq!(BigInteger::from(42i64).to_i128(), Some(42));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BigInteger {
    negative: bool,
    /// Decimal digits without leading zeros; `"0"` for zero (never negative).
    digits: String,
}

/// Text that is not a number of the expected form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a {1}")]
pub struct NumberFormatError(String, &'static str);

impl BigInteger {
    /// Zero.
    pub fn zero() -> Self {
        BigInteger {
            negative: false,
            digits: "0".to_owned(),
        }
    }

    fn from_parts(negative: bool, digits: &str) -> Self {
        let digits = digits.trim_start_matches('0');
        if digits.is_empty() {
            return BigInteger::zero();
        }
        BigInteger {
            negative,
            digits: digits.to_owned(),
        }
    }

    /// Whether the number is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// Whether the number is zero.
    pub fn is_zero(&self) -> bool {
        self.digits == "0"
    }

    /// The decimal digits of the magnitude, without sign or leading zeros.
    pub fn magnitude_digits(&self) -> &str {
        &self.digits
    }

    /// The value as an `i128`, when it fits.
    pub fn to_i128(&self) -> Option<i128> {
        let s = if self.negative {
            format!("-{}", self.digits)
        } else {
            self.digits.clone()
        };
        s.parse().ok()
    }

    /// The value as a `u128`, when it fits.
    pub fn to_u128(&self) -> Option<u128> {
        if self.negative {
            return None;
        }
        self.digits.parse().ok()
    }

    /// `BigInteger.toByteArray()`: the shortest two's-complement form, most significant byte
    /// first (what Kryo writes).
    pub fn to_be_bytes(&self) -> Vec<u8> {
        let mut mag = decimal_to_binary(&self.digits);
        if self.negative {
            // Two's complement: invert and add one.
            for b in mag.iter_mut() {
                *b = !*b;
            }
            for b in mag.iter_mut().rev() {
                let (v, carry) = b.overflowing_add(1);
                *b = v;
                if !carry {
                    break;
                }
            }
            if mag.first().is_none_or(|b| b & 0x80 == 0) {
                mag.insert(0, 0xff);
            }
            while mag.len() > 1 && mag[0] == 0xff && mag[1] & 0x80 != 0 {
                mag.remove(0);
            }
        } else if mag.first().is_none_or(|b| b & 0x80 != 0) {
            mag.insert(0, 0);
        }
        mag
    }

    /// `new BigInteger(bytes)`: two's complement, most significant byte first. Empty input is
    /// zero.
    pub fn from_be_bytes(bytes: &[u8]) -> Self {
        let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
        let mut mag = bytes.to_vec();
        if negative {
            for b in mag.iter_mut() {
                *b = !*b;
            }
            for b in mag.iter_mut().rev() {
                let (v, carry) = b.overflowing_add(1);
                *b = v;
                if !carry {
                    break;
                }
            }
        }
        BigInteger::from_parts(negative, &binary_to_decimal(&mag))
    }
}

/// Big-endian bytes of a decimal digit string (the magnitude), without leading zero bytes.
fn decimal_to_binary(digits: &str) -> Vec<u8> {
    // Little-endian base-2^32 limbs, multiplied by 10 and added to for each digit.
    let mut limbs: Vec<u32> = Vec::new();
    for d in digits.bytes() {
        let mut carry = u64::from(d.wrapping_sub(b'0'));
        for limb in limbs.iter_mut() {
            let v = u64::from(*limb) * 10 + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            limbs.push(carry as u32);
        }
    }
    let mut out: Vec<u8> = limbs.iter().rev().flat_map(|l| l.to_be_bytes()).collect();
    let zeros = out.iter().take_while(|&&b| b == 0).count();
    out.drain(..zeros);
    out
}

/// Decimal digits of a big-endian unsigned magnitude.
fn binary_to_decimal(bytes: &[u8]) -> String {
    // Divide by 10^9 repeatedly; each remainder is nine decimal digits.
    let mut num: Vec<u8> = bytes.to_vec();
    let mut chunks: Vec<u32> = Vec::new();
    while num.iter().any(|&b| b != 0) {
        let mut rem: u64 = 0;
        for b in num.iter_mut() {
            let v = (rem << 8) | u64::from(*b);
            *b = (v / 1_000_000_000) as u8;
            rem = v % 1_000_000_000;
        }
        chunks.push(rem as u32);
        let zeros = num.iter().take_while(|&&b| b == 0).count();
        num.drain(..zeros);
    }
    let mut s = String::new();
    for (i, c) in chunks.iter().rev().enumerate() {
        if i == 0 {
            s.push_str(&c.to_string());
        } else {
            s.push_str(&format!("{c:09}"));
        }
    }
    if s.is_empty() {
        s.push('0');
    }
    s
}

impl fmt::Display for BigInteger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        f.write_str(&self.digits)
    }
}

impl fmt::Debug for BigInteger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BigInteger({self})")
    }
}

impl FromStr for BigInteger {
    type Err = NumberFormatError;

    /// Decimal digits with an optional `-` or `+` sign, as `new BigInteger(String)` takes them.
    fn from_str(s: &str) -> Result<Self, NumberFormatError> {
        let bad = || NumberFormatError(s.to_owned(), "decimal integer");
        let (negative, digits) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        Ok(BigInteger::from_parts(negative, digits))
    }
}

macro_rules! big_integer_from {
    ($($t:ty),*) => {$(
        impl From<$t> for BigInteger {
            fn from(v: $t) -> Self {
                v.to_string().parse().unwrap_or_else(|_| BigInteger::zero())
            }
        }
    )*};
}

big_integer_from!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128);

/// A `java.math.BigDecimal`: `unscaled × 10^-scale`, held exactly, scale included (Java's
/// `12.50` and `12.5` are different values, as `BigDecimal.equals` says).
///
/// ```
/// use delayq_codec::java::BigDecimal;
///
/// let d: BigDecimal = "12.50".parse().unwrap();
/// assert_eq!((d.unscaled().to_string().as_str(), d.scale()), ("1250", 2));
/// assert_eq!(d.to_string(), "12.50");
/// let e: BigDecimal = "1E+3".parse().unwrap();
/// assert_eq!((e.scale(), e.to_string(), e.to_plain_string()), (-3, "1E+3".to_owned(), "1000".to_owned()));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BigDecimal {
    unscaled: BigInteger,
    scale: i32,
}

impl BigDecimal {
    /// `new BigDecimal(unscaled, scale)`.
    pub fn new(unscaled: BigInteger, scale: i32) -> Self {
        BigDecimal { unscaled, scale }
    }

    /// The unscaled value.
    pub fn unscaled(&self) -> &BigInteger {
        &self.unscaled
    }

    /// The scale: digits after the decimal point (negative: zeros before it).
    pub fn scale(&self) -> i32 {
        self.scale
    }

    /// `BigDecimal.toPlainString()`: no exponent (what Jackson writes, with Redisson's
    /// `WRITE_BIGDECIMAL_AS_PLAIN`).
    pub fn to_plain_string(&self) -> String {
        let sign = if self.unscaled.negative { "-" } else { "" };
        let digits = &self.unscaled.digits;
        if self.scale <= 0 {
            let zeros = if self.unscaled.is_zero() {
                0
            } else {
                self.scale.unsigned_abs() as usize
            };
            return format!("{sign}{digits}{}", "0".repeat(zeros));
        }
        let scale = self.scale as usize;
        if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            format!("{sign}{int}.{frac}")
        } else {
            format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
        }
    }

    /// `BigDecimal.valueOf(double)`: the decimal `Double.toString` prints (shortest digits
    /// that read back as `v`). `None` for NaN and infinities, which Java cannot hold either.
    pub fn from_f64(v: f64) -> Option<Self> {
        if !v.is_finite() {
            return None;
        }
        Some(shortest_decimal(&format!("{v:e}")))
    }

    /// The value as an `f64` when the `f64`'s shortest decimal form is this same number (so
    /// nothing is rounded away: `12.50` gives `12.5`, `0.1` gives `0.1`, but
    /// `0.10000000000000000001` gives `None`).
    pub fn to_f64_exact(&self) -> Option<f64> {
        let v: f64 = self.to_string().parse().ok()?;
        (v.is_finite() && BigDecimal::from_f64(v)?.numerically_eq(self)).then_some(v)
    }

    /// As [`BigDecimal::to_f64_exact`], for an `f32`.
    pub fn to_f32_exact(&self) -> Option<f32> {
        let v: f32 = self.to_string().parse().ok()?;
        if !v.is_finite() {
            return None;
        }
        let shortest = shortest_decimal(&format!("{v:e}"));
        shortest.numerically_eq(self).then_some(v)
    }

    /// The value as an integer when it is whole (any scale).
    pub fn to_big_integer_exact(&self) -> Option<BigInteger> {
        let (negative, digits, exp) = self.normalized();
        if exp < 0 {
            return None;
        }
        let zeros = usize::try_from(exp).ok().filter(|&z| z <= 100_000)?;
        Some(BigInteger::from_parts(
            negative,
            &format!("{digits}{}", "0".repeat(zeros)),
        ))
    }

    /// (negative, significant digits without trailing zeros, exponent): the value is
    /// `digits × 10^exponent`. Zero is `(false, "0", 0)`.
    fn normalized(&self) -> (bool, &str, i64) {
        if self.unscaled.is_zero() {
            return (false, "0", 0);
        }
        let digits = self.unscaled.digits.trim_end_matches('0');
        let stripped = (self.unscaled.digits.len() - digits.len()) as i64;
        (
            self.unscaled.negative,
            digits,
            stripped - i64::from(self.scale),
        )
    }

    /// Numeric equality, ignoring the scale (Java's `compareTo == 0`).
    pub fn numerically_eq(&self, other: &BigDecimal) -> bool {
        self.normalized() == other.normalized()
    }

    /// Numeric order, ignoring the scale (Java's `compareTo`).
    pub fn numeric_cmp(&self, other: &BigDecimal) -> Ordering {
        let (an, ad, ae) = self.normalized();
        let (bn, bd, be) = other.normalized();
        let a_zero = ad == "0";
        let b_zero = bd == "0";
        let sign = |neg: bool, zero: bool| {
            if zero {
                0
            } else if neg {
                -1
            } else {
                1
            }
        };
        let (sa, sb) = (sign(an, a_zero), sign(bn, b_zero));
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        // Same sign, both non-zero: compare magnitudes by their leading digit's position.
        let mag = {
            let (pa, pb) = (ad.len() as i64 + ae, bd.len() as i64 + be);
            pa.cmp(&pb).then_with(|| {
                let width = ad.len().max(bd.len());
                format!("{ad:0<width$}").cmp(&format!("{bd:0<width$}"))
            })
        };
        if sa < 0 {
            mag.reverse()
        } else {
            mag
        }
    }
}

/// A BigDecimal from Rust's `{:e}` text of a float (`-1.25e20`, `5e-324`).
fn shortest_decimal(sci: &str) -> BigDecimal {
    // `{:e}` is `[-]d[.ddd]e[-]x`: Java's `new BigDecimal(Double.toString(v))` has the same
    // digits; its scale follows Double.toString's layout, which keeps at least one fraction
    // digit.
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    // value = digits × 10^(exp - (len - 1))
    let mut scale = (digits.len() as i64 - 1) - exp;
    let mut digits = digits;
    // Double.toString prints plain numbers in [1e-3, 1e7) with at least one fraction digit
    // ("100.0", "1.5"), and others as d.dddE±x with at least one fraction digit ("1.0E-5").
    let plain = (-3..7).contains(&exp);
    let min_scale = if plain { 1 } else { 1 - exp };
    if scale < min_scale {
        digits.push_str(&"0".repeat((min_scale - scale) as usize));
        scale = min_scale;
    }
    BigDecimal::new(
        BigInteger::from_parts(negative, &digits),
        i32::try_from(scale).unwrap_or(i32::MAX),
    )
}

impl fmt::Display for BigDecimal {
    /// `BigDecimal.toString()`: plain when the scale is non-negative and the adjusted exponent
    /// is at least -6, scientific (`1E+3`, `1.5E-7`) otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = &self.unscaled.digits;
        let adjusted = -i64::from(self.scale) + (digits.len() as i64 - 1);
        if self.scale >= 0 && adjusted >= -6 {
            return f.write_str(&self.to_plain_string());
        }
        let sign = if self.unscaled.negative { "-" } else { "" };
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let exp_sign = if adjusted >= 0 { "+" } else { "" };
        write!(f, "{sign}{first}{dot}{rest}E{exp_sign}{adjusted}")
    }
}

impl fmt::Debug for BigDecimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BigDecimal({self})")
    }
}

impl FromStr for BigDecimal {
    type Err = NumberFormatError;

    /// `new BigDecimal(String)`: `[sign] digits [. digits] [e|E [sign] digits]`. The scale is
    /// the number of fraction digits minus the exponent (`"12.50"` has scale 2, `"1E+3"` -3).
    fn from_str(s: &str) -> Result<Self, NumberFormatError> {
        let bad = || NumberFormatError(s.to_owned(), "decimal number");
        let (mantissa, exp) = match s.find(['e', 'E']) {
            Some(i) => (&s[..i], Some(&s[i + 1..])),
            None => (s, None),
        };
        let exp: i64 = match exp {
            Some(e) => {
                let digits = e.trim_start_matches(['+', '-']);
                if digits.is_empty()
                    || e.len() - digits.len() > 1
                    || !digits.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(bad());
                }
                e.trim_start_matches('+').parse().map_err(|_| bad())?
            }
            None => 0,
        };
        let (negative, body) = match mantissa.as_bytes().first() {
            Some(b'-') => (true, &mantissa[1..]),
            Some(b'+') => (false, &mantissa[1..]),
            _ => (false, mantissa),
        };
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
            return Err(bad());
        }
        let scale = frac.len() as i64 - exp;
        let scale = i32::try_from(scale).map_err(|_| bad())?;
        Ok(BigDecimal::new(
            BigInteger::from_parts(negative, &format!("{int}{frac}")),
            scale,
        ))
    }
}

impl From<BigInteger> for BigDecimal {
    fn from(v: BigInteger) -> Self {
        BigDecimal::new(v, 0)
    }
}

/// Reads a number's text from whatever the format holds: text, an integer, or (for a
/// decimal) a float, which becomes the decimal `BigDecimal.valueOf(double)` gives.
struct NumberText(&'static str);

impl<'de> Visitor<'de> for NumberText {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {}", self.0)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        BigDecimal::from_f64(v)
            .map(|d| d.to_string())
            .ok_or_else(|| E::custom(format!("{v} is not a {}", self.0)))
    }
}

impl Serialize for BigInteger {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(BIG_INTEGER, &self.to_string())
    }
}

impl<'de> Deserialize<'de> for BigInteger {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = d.deserialize_newtype_struct(BIG_INTEGER, NumberText(BIG_INTEGER))?;
        text.parse().map_err(de::Error::custom)
    }
}

impl Serialize for BigDecimal {
    /// The text of `BigDecimal.toString()`, which keeps the scale.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(BIG_DECIMAL, &self.to_string())
    }
}

impl<'de> Deserialize<'de> for BigDecimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = d.deserialize_newtype_struct(BIG_DECIMAL, NumberText(BIG_DECIMAL))?;
        text.parse().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twos_complement_like_java() {
        // Values of new BigInteger(n).toByteArray() in Java.
        let cases: &[(&str, &[u8])] = &[
            ("0", &[0]),
            ("-5", &[0xfb]),
            ("128", &[0x00, 0x80]),
            ("-128", &[0x80]),
            ("-129", &[0xff, 0x7f]),
            ("255", &[0x00, 0xff]),
            ("9990", &[0x27, 0x06]),
            (
                "1234567890123456789012345678901234567890",
                &[
                    0x03, 0xa0, 0xc9, 0x20, 0x75, 0xc0, 0xdb, 0xf3, 0xb8, 0xac, 0xbc, 0x5f, 0x96,
                    0xce, 0x3f, 0x0a, 0xd2,
                ],
            ),
        ];
        for (text, bytes) in cases {
            let n: BigInteger = text.parse().unwrap();
            assert_eq!(n.to_be_bytes(), *bytes, "{text}");
            assert_eq!(BigInteger::from_be_bytes(bytes), n, "{text}");
        }
        for v in [i64::MIN, -1, 1, 127, -32768, i64::MAX] {
            let n = BigInteger::from(v);
            let bytes = n.to_be_bytes();
            assert_eq!(BigInteger::from_be_bytes(&bytes), n, "{v}");
            assert!(bytes.len() <= 8);
        }
    }

    #[test]
    fn decimal_text_like_java() {
        for (text, unscaled, scale, shown, plain) in [
            ("12.50", "1250", 2, "12.50", "12.50"),
            ("-0.000001", "-1", 6, "-0.000001", "-0.000001"),
            ("1E+3", "1", -3, "1E+3", "1000"),
            ("1.5e-7", "15", 8, "1.5E-7", "0.00000015"),
            ("0.00", "0", 2, "0.00", "0.00"),
            ("-0", "0", 0, "0", "0"),
            ("123.", "123", 0, "123", "123"),
            (".5", "5", 1, "0.5", "0.5"),
        ] {
            let d: BigDecimal = text.parse().unwrap();
            assert_eq!(d.unscaled().to_string(), unscaled, "{text}");
            assert_eq!(d.scale(), scale, "{text}");
            assert_eq!(d.to_string(), shown, "{text}");
            assert_eq!(d.to_plain_string(), plain, "{text}");
        }
        for bad in ["", "-", ".", "1e", "1e+-2", "a", "1.2.3", "--1", "1 "] {
            assert!(bad.parse::<BigDecimal>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn value_of_double_like_java() {
        // BigDecimal.valueOf(v).toString() in Java 19+.
        for (v, shown) in [
            (12.5, "12.5"),
            (0.1, "0.1"),
            (100.0, "100.0"),
            (1.0e-5, "0.000010"),
            (1.0e20, "1.0E+20"),
            (-1.5, "-1.5"),
            (0.0, "0.0"),
        ] {
            assert_eq!(BigDecimal::from_f64(v).unwrap().to_string(), shown, "{v}");
        }
    }

    #[test]
    fn exact_float_conversions() {
        let d = |s: &str| s.parse::<BigDecimal>().unwrap();
        assert_eq!(d("12.50").to_f64_exact(), Some(12.5));
        assert_eq!(d("1E+23").to_f64_exact(), Some(1e23));
        assert_eq!(d("0.10000000000000000001").to_f64_exact(), None);
        assert_eq!(d("9007199254740993").to_f64_exact(), None);
        assert_eq!(d("0.1").to_f32_exact(), Some(0.1f32));
        assert_eq!(d("16777217").to_f32_exact(), None);
        assert_eq!(
            d("1.0E20").to_big_integer_exact().unwrap().to_string(),
            "100000000000000000000"
        );
        assert_eq!(d("1.5").to_big_integer_exact(), None);
        assert!(d("1.50").numerically_eq(&d("1.5")));
        assert_eq!(d("-2").numeric_cmp(&d("-10")), Ordering::Greater);
        assert_eq!(d("0.09").numeric_cmp(&d("0.1")), Ordering::Less);
    }
}
