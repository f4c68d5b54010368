//! Java arrays under `JsonJacksonCodec`, against the text Redisson 3.52.0 and 4.7.0 wrote
//! (`tests/fixtures/jackson/redisson-<version>.hex`, from `gen/ArrayVectors.java`): in POJO
//! fields, in slots declared `Object` and at the root.
//!
//! What delayq writes for the values Java can read back is kept in
//! `tests/fixtures/jackson/delayq.hex`; `gen/gen.sh` has each Redisson version read that file and
//! compare every value with the one Java built. Set `DELAYQ_WRITE_FIXTURES=1` to rewrite it
//! after a deliberate change.
#![cfg(all(feature = "json", feature = "kryo"))]

use std::path::PathBuf;

use delayq_codec::kryo::byte_array;
use delayq_codec::{Codec, JsonJacksonCodec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

const VERSIONS: [&str; 2] = ["3.52.0", "4.7.0"];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jackson")
}

/// The `label text` pairs of a fixture file (each line is `label hex text`).
fn lines(file: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(dir().join(file))
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let label = parts.next().unwrap().to_owned();
            let hex = parts.next().unwrap();
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            (label, String::from_utf8(bytes).unwrap())
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[Z")]
struct Bools(Vec<bool>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[Ljava.lang.Long;")]
struct BoxedLongs(Vec<Option<i64>>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[B")]
struct Bytes(#[serde(with = "byte_array")] Vec<u8>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[D")]
struct Doubles(Vec<f64>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[I")]
struct Ints(Vec<i32>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[J")]
struct Longs(Vec<i64>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[[I")]
struct Nested(Vec<Ints>);

/// `Object[]` holding `Short`s: each element carries its class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[Ljava.lang.Object;")]
struct Objects(Vec<i16>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "[Ljava.lang.String;")]
struct Strings(Vec<Option<String>>);

/// `com.example.ArrayHolder` of `ArrayVectors.java`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename = "com.example.ArrayHolder")]
struct Holder {
    bools: Option<Bools>,
    #[serde(rename = "boxedLongs")]
    boxed_longs: Option<BoxedLongs>,
    bytes: Option<Bytes>,
    doubles: Option<Doubles>,
    ints: Option<Ints>,
    longs: Option<Longs>,
    nested: Option<Nested>,
    objects: Option<Objects>,
    strings: Option<Strings>,
}

fn full() -> Holder {
    Holder {
        bools: Some(Bools(vec![true, false])),
        boxed_longs: Some(BoxedLongs(vec![Some(7), None])),
        bytes: Some(Bytes(vec![1, 2, 3])),
        doubles: Some(Doubles(vec![1.5, 2.0])),
        ints: Some(Ints(vec![1, -2, 300])),
        longs: Some(Longs(vec![1, -2, 4_294_967_296])),
        nested: Some(Nested(vec![Ints(vec![1]), Ints(vec![2, 3])])),
        objects: Some(Objects(vec![3, -1])),
        strings: Some(Strings(vec![Some("a".into()), None, Some(String::new())])),
    }
}

fn empty() -> Holder {
    Holder {
        bools: Some(Bools(vec![])),
        boxed_longs: Some(BoxedLongs(vec![])),
        bytes: Some(Bytes(vec![])),
        doubles: Some(Doubles(vec![])),
        ints: Some(Ints(vec![])),
        longs: Some(Longs(vec![])),
        nested: Some(Nested(vec![])),
        objects: Some(Objects(vec![])),
        strings: Some(Strings(vec![])),
    }
}

/// Arrays in slots declared `Object`: the elements of a list at the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ListOfArrays(Ints, Strings, Longs, Bytes);

/// Encodes `value`, checks the text is Java's for `label` in every version, and that Java's
/// text decodes back to `value`; returns the text.
fn check<T>(label: &str, value: &T) -> String
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + Send + Sync + 'static,
{
    let codec = JsonJacksonCodec::<T>::new();
    let ours = String::from_utf8(codec.encode(value).unwrap()).unwrap();
    for version in VERSIONS {
        let java = lines(&format!("redisson-{version}.hex"))
            .into_iter()
            .find(|(l, _)| l == label)
            .unwrap_or_else(|| panic!("no {label} in {version}"))
            .1;
        assert_eq!(ours, java, "{version} {label}: delayq's text, then Java's");
        let back = codec.decode(java.as_bytes());
        assert_eq!(
            back.as_ref().ok(),
            Some(value),
            "{version} {label}: {back:?}"
        );
    }
    ours
}

/// Each kind of array field is written as Jackson writes it (a primitive or `String[]` array
/// without its class, `Long[]` and `Object[]` with it, `byte[]` as Base64), in a POJO, in
/// `Object` slots and at the root, and Java's text decodes to the same value.
#[test]
fn arrays_are_written_as_redisson_writes_them() {
    let readable = [
        ("holder-full", check("holder-full", &full())),
        ("holder-empty", check("holder-empty", &empty())),
        ("holder-null", check("holder-null", &Holder::default())),
        (
            "list-of-arrays",
            check(
                "list-of-arrays",
                &ListOfArrays(
                    Ints(vec![4]),
                    Strings(vec![Some("s".into())]),
                    Longs(vec![5]),
                    Bytes(vec![9]),
                ),
            ),
        ),
    ];
    // Java cannot read these root forms back itself (no type information at the root), but
    // delayq writes the same text.
    check("root-ints", &Ints(vec![1, 2]));
    check("root-strings", &Strings(vec![Some("a".into())]));
    check("root-bytes", &Bytes(vec![1, 2, 3]));

    let mut file = String::from(
        "# What delayq's JsonJacksonCodec writes for ArrayVectors.java's values (see \
         codec_jackson_arrays.rs).\n",
    );
    for (label, text) in readable {
        let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
        file.push_str(&format!("{label} {hex} {text}\n"));
    }
    let path = dir().join("delayq.hex");
    if std::env::var_os("DELAYQ_WRITE_FIXTURES").is_some() {
        std::fs::write(&path, &file).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == file,
        "{} is not what delayq writes now: rerun with DELAYQ_WRITE_FIXTURES=1, then have Java \
         check it with tests/fixtures/jackson/gen/gen.sh",
        path.display()
    );
}
