//! Java's `Double.toString` / `Float.toString`, which Jackson uses for JSON numbers.
//!
//! Java (JDK 19 and later, JDK-4511638) picks the shortest decimal that rounds back to the value,
//! closest to it, except that a one-digit result is replaced by the closest decimal of at most two
//! digits (so `Double.MIN_VALUE` prints `4.9E-324`, not `5.0E-324`). The layout is plain
//! (`123.0`, `0.001`) for magnitudes in `[1e-3, 1e7)` and computerized scientific
//! (`1.0E7`, `1.0E-4`, `-1.25E20`) otherwise, always with at least one fraction digit.
//!
//! Rust's `{:e}` formatting gives the same shortest-closest digits, so only the layout and the
//! two-digit rule need work here.

use std::fmt::LowerExp;
use std::str::FromStr;

/// `Double.toString(v)`. Non-finite values give `NaN`, `Infinity`, `-Infinity`.
pub(crate) fn java_double(v: f64) -> String {
    java_format(
        v,
        v.is_nan(),
        v.is_infinite(),
        v == 0.0,
        v.is_sign_negative(),
    )
}

/// `Float.toString(v)`.
pub(crate) fn java_float(v: f32) -> String {
    java_format(
        v,
        v.is_nan(),
        v.is_infinite(),
        v == 0.0,
        v.is_sign_negative(),
    )
}

fn java_format<F>(v: F, nan: bool, inf: bool, zero: bool, neg: bool) -> String
where
    F: LowerExp + FromStr + PartialEq + Copy,
{
    if nan {
        return "NaN".to_owned();
    }
    let sign = if neg { "-" } else { "" };
    if inf {
        return format!("{sign}Infinity");
    }
    if zero {
        return format!("{sign}0.0");
    }
    let (mut digits, mut exp) = split_exp(&format!("{v:e}"));
    if digits.is_empty() {
        // Not reachable for finite non-zero values; keep Rust's text rather than panic.
        return format!("{v:e}");
    }
    if digits.len() == 1 {
        // Java's two-digit rule: the closest decimal with at most two digits that still rounds
        // back to `v` (Rust's `{:.1e}` rounds the exact binary value correctly).
        let two = format!("{v:.1e}");
        if two.parse::<F>().ok() == Some(v) {
            let (d, e) = split_exp(&two);
            let d = d.trim_end_matches('0').to_owned();
            if !d.is_empty() {
                digits = d;
                exp = e;
            }
        }
    }
    let mut out = String::with_capacity(digits.len() + 8);
    out.push_str(sign);
    // Value = 0.d1d2d3... × 10^(exp + 1), i.e. d1.d2d3... × 10^exp.
    if (-3..7).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() > int_len {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            } else {
                out.push_str(&digits);
                out.push_str(&"0".repeat(int_len - digits.len()));
                out.push_str(".0");
            }
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        if digits.len() > 1 {
            out.push_str(&digits[1..]);
        } else {
            out.push('0');
        }
        out.push('E');
        out.push_str(&exp.to_string());
    }
    out
}

/// Splits Rust's `{:e}` output of a finite, positive-or-negative value (`-1.25e20`) into its
/// significant digits without sign or dot (`125`) and the decimal exponent (`20`).
fn split_exp(s: &str) -> (String, i32) {
    let s = s.trim_start_matches('-');
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_like_java() {
        let cases: &[(f64, &str)] = &[
            (1.5, "1.5"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (100.0, "100.0"),
            (1234567.0, "1234567.0"),
            (1.0e7, "1.0E7"),
            (12345678.9, "1.23456789E7"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (1.0e-5, "1.0E-5"),
            (1.0e20, "1.0E20"),
            (-1.25e20, "-1.25E20"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (5e-324, "4.9E-324"),
            (1.0e23, "1.0E23"),
            (2.0e-3, "0.002"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (123.456, "123.456"),
            (9_999_999.0, "9999999.0"),
        ];
        for (v, want) in cases {
            assert_eq!(java_double(*v), *want, "{v:e}");
        }
    }

    #[test]
    fn floats_like_java() {
        let cases: &[(f32, &str)] = &[
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1.0e10, "1.0E10"),
            (f32::MAX, "3.4028235E38"),
            (f32::from_bits(1), "1.4E-45"),
            (3.0e-4, "3.0E-4"),
            (16_777_216.0, "1.6777216E7"),
        ];
        for (v, want) in cases {
            assert_eq!(java_float(*v), *want, "{v:e}");
        }
    }
}
