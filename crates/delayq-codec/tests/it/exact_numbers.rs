//! A number decodes exactly or not at all: JSON and MessagePack numbers never pass through an
//! `f64` on the way to an integer, and an integer or decimal that the target type cannot hold
//! is an error naming it, never a nearby number.
#![cfg(feature = "msgpack")]

use delayq_codec::{Codec, JsonJacksonCodec, MsgPackJacksonCodec, TypedJsonJacksonCodec};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

fn json<T>(text: &str) -> Result<T, String>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    JsonJacksonCodec::<T>::new()
        .decode(text.as_bytes())
        .map_err(|e| e.to_string())
}

fn typed<T>(text: &str) -> Result<T, String>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    TypedJsonJacksonCodec::<T>::new()
        .decode(text.as_bytes())
        .map_err(|e| e.to_string())
}

fn refused<T: Debug>(result: Result<T, String>, number: &str) {
    match result {
        Ok(v) => panic!("{number} decoded as {v:?}: a different number, not an error"),
        Err(e) => assert!(
            e.contains(number) || e.contains("out of range") || e.contains("invalid value"),
            "the error should say what does not fit: {e}"
        ),
    }
}

/// Java's BigInteger wrapper: Redisson's JsonJacksonCodec writes `["java.math.BigInteger", n]`.
#[test]
fn big_integers_decode_exactly_into_128_bit_integers() {
    let fits = "123456789012345678901234567890123456789";
    let v: i128 = json(&format!(r#"["java.math.BigInteger",{fits}]"#)).unwrap();
    assert_eq!(v.to_string(), fits);
    let v: i128 = typed(&format!("-{fits}")).unwrap();
    assert_eq!(v.to_string(), format!("-{fits}"));
    let v: u128 = typed(&u128::MAX.to_string()).unwrap();
    assert_eq!(v, u128::MAX);
    let v: i128 = typed(&i128::MIN.to_string()).unwrap();
    assert_eq!(v, i128::MIN);
    // 2^64 + 1 is not representable as an f64: it must not become 2^64.
    let v: i128 = typed("18446744073709551617").unwrap();
    assert_eq!(v, (1i128 << 64) + 1);
}

#[test]
fn integers_too_big_for_the_target_are_errors() {
    let big = "1234567890123456789012345678901234567890";
    refused(
        json::<i128>(&format!(r#"["java.math.BigInteger",{big}]"#)),
        big,
    );
    refused(typed::<u128>(big), big);
    refused(typed::<i64>("9223372036854775808"), "9223372036854775808");
    refused(typed::<u64>("-1"), "-1");
    refused(typed::<u128>(&format!("{}0", u128::MAX)), "0");
}

#[test]
fn integers_go_into_floats_only_when_the_float_holds_them() {
    assert_eq!(
        typed::<f64>("9007199254740992").unwrap(),
        9_007_199_254_740_992.0
    );
    refused(typed::<f64>("9007199254740993"), "9007199254740993");
    refused(typed::<f32>("16777217"), "16777217");
    assert_eq!(typed::<f64>("100000000000000000000000").unwrap(), 1e23);
}

#[test]
fn decimals_are_never_rounded() {
    // What Java's Double.toString wrote reads back as that double.
    assert_eq!(typed::<f64>("0.1").unwrap(), 0.1);
    assert_eq!(typed::<f64>("1.0E-5").unwrap(), 1e-5);
    assert_eq!(typed::<f64>("12.50").unwrap(), 12.5);
    assert_eq!(typed::<f32>("0.1").unwrap(), 0.1f32);
    // A BigDecimal with more digits than a double holds.
    let d = "0.10000000000000000001";
    refused(json::<f64>(&format!(r#"["java.math.BigDecimal",{d}]"#)), d);
    let d = "123456789012345678901234567890.123456789";
    refused(json::<f64>(&format!(r#"["java.math.BigDecimal",{d}]"#)), d);
    refused(typed::<f32>("0.1000000001"), "0.1000000001");
}

#[test]
fn decimals_go_into_integers_only_when_whole() {
    assert_eq!(typed::<i64>("5.0").unwrap(), 5);
    assert_eq!(typed::<i64>("1E+3").unwrap(), 1000);
    assert_eq!(
        typed::<i128>("1.0E20").unwrap(),
        100_000_000_000_000_000_000
    );
    refused(typed::<i64>("1.5"), "1.5");
    // A double would round this to 1e20 exactly, which is whole.
    refused(
        typed::<i128>("100000000000000000000.5"),
        "100000000000000000000.5",
    );
    let v: i128 = typed("1.0000000000000000001E20").unwrap();
    assert_eq!(v, 100_000_000_000_000_000_010);
}

#[test]
fn msgpack_integers_go_into_floats_only_when_the_float_holds_them() {
    let codec = MsgPackJacksonCodec::<f64>::new();
    // uint64 2^64 - 1 and 2^53 + 1.
    let max = [0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    assert!(codec.decode(&max).is_err(), "2^64-1 has no f64");
    let odd = [0xcf, 0, 0x20, 0, 0, 0, 0, 0, 1];
    assert!(codec.decode(&odd).is_err(), "2^53+1 has no f64");
    let even = [0xcf, 0, 0x20, 0, 0, 0, 0, 0, 0];
    assert_eq!(codec.decode(&even).unwrap(), 9_007_199_254_740_992.0);
    // A float64 into an integer: only whole values, exactly.
    let int = MsgPackJacksonCodec::<i64>::new();
    assert_eq!(
        int.decode(&[0xcb, 0x40, 0x45, 0, 0, 0, 0, 0, 0]).unwrap(),
        42
    );
    assert!(int.decode(&[0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]).is_err());
}

#[test]
fn generic_values_keep_big_numbers_exact_or_refuse_them() {
    let v: serde_json::Value = typed("12345678901234567890").unwrap();
    assert_eq!(v, serde_json::json!(12_345_678_901_234_567_890u64));
    let v: serde_json::Value = typed("1.5").unwrap();
    assert_eq!(v, serde_json::json!(1.5));
    assert!(typed::<serde_json::Value>("0.10000000000000000001").is_err());
}
