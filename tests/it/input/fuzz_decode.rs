//! Bad input without Redis: entry decoding and every codec decoder on random bytes, on mutated
//! valid entries and encodings, and on hand-made "bombs" (huge declared lengths, deep nesting). Each must give an `Ok` or an error with a message: never a panic,
//! never a huge allocation, never a hang.
//!
//! A large property test rather than `cargo fuzz` (which needs a nightly toolchain): 4,096
//! cases per property by default; set `DELAYQ_FUZZ_CASES` for a longer run, e.g.
//! `DELAYQ_FUZZ_CASES=200000 cargo test --release --all-features --test it -- fuzz_decode::`.

use delayq::codec::kryo::JavaValue;
use delayq::codec::{
    ByteArrayCodec, Codec, JsonJacksonCodec, Kryo5Codec, LongCodec, MsgPackJacksonCodec,
    StringCodec, TypedJsonJacksonCodec,
};
use delayq::entry::{self, EntryFormat};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::{Duration, Instant};

fn cases() -> u32 {
    std::env::var("DELAYQ_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096)
}

/// An error must say something.
fn clear<T, E: Display>(what: &str, bytes: &[u8], result: Result<T, E>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            let text = e.to_string();
            assert!(
                !text.trim().is_empty(),
                "{what}: an error without a message for {bytes:02x?}"
            );
            None
        }
    }
}

/// Runs every decoder on `bytes`, checking what can be checked about the answer; returns how
/// many decoders accepted the bytes.
fn decode_all(bytes: &[u8]) -> usize {
    let started = Instant::now();
    let mut accepted = 0;
    // ByteArrayCodec takes anything, unchanged.
    assert_eq!(ByteArrayCodec.decode(bytes).unwrap(), bytes);
    if let Some(s) = clear("StringCodec", bytes, StringCodec.decode(bytes)) {
        assert_eq!(s.as_bytes(), bytes);
        accepted += 1;
    }
    if let Some(n) = clear("LongCodec", bytes, LongCodec.decode(bytes)) {
        // Re-encoding a decoded number gives a number that decodes to the same value.
        assert_eq!(LongCodec.decode(&LongCodec.encode(&n).unwrap()).unwrap(), n);
        accepted += 1;
    }
    let json = JsonJacksonCodec::<serde_json::Value>::new();
    accepted += usize::from(clear("JsonJackson", bytes, json.decode(bytes)).is_some());
    let typed = TypedJsonJacksonCodec::<serde_json::Value>::new();
    accepted += usize::from(clear("TypedJsonJackson", bytes, typed.decode(bytes)).is_some());
    let typed_map = TypedJsonJacksonCodec::<BTreeMap<String, i64>>::new();
    accepted += usize::from(clear("TypedJson<map>", bytes, typed_map.decode(bytes)).is_some());
    let msgpack = MsgPackJacksonCodec::<serde_json::Value>::new();
    accepted += usize::from(clear("MsgPackJackson", bytes, msgpack.decode(bytes)).is_some());
    let msgpack_list = MsgPackJacksonCodec::<Vec<String>>::new();
    accepted += usize::from(clear("MsgPack<list>", bytes, msgpack_list.decode(bytes)).is_some());
    let kryo = Kryo5Codec::<JavaValue>::new();
    if let Some(v) = clear("Kryo5<JavaValue>", bytes, kryo.decode(bytes)) {
        // What decodes re-encodes, and the re-encoding is stable (compared as bytes: a NaN
        // is not equal to itself).
        let again = kryo.encode(&v).unwrap();
        assert_eq!(kryo.encode(&kryo.decode(&again).unwrap()).unwrap(), again);
        accepted += 1;
    }
    let kryo_string = Kryo5Codec::<String>::new();
    accepted += usize::from(clear("Kryo5<String>", bytes, kryo_string.decode(bytes)).is_some());
    let kryo_map = Kryo5Codec::<BTreeMap<String, Vec<i64>>>::new();
    accepted += usize::from(clear("Kryo5<map>", bytes, kryo_map.decode(bytes)).is_some());
    // A hang or a huge allocation shows up as a slow case: a case takes microseconds, so 10 s
    // leaves room for any busy machine and a debug build.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "decoding {} bytes took {:?}",
        bytes.len(),
        started.elapsed()
    );
    accepted
}

/// Entry decoding with both preferences: an accepted entry packs back to the same bytes, and
/// its value goes through every decoder.
fn unpack_all(raw: &[u8]) {
    for prefer in [EntryFormat::Current, EntryFormat::Legacy] {
        if let Some(e) = clear("entry::unpack", raw, entry::unpack(raw, prefer)) {
            let again = match e.format {
                EntryFormat::Legacy => {
                    let id: [u8; 8] = e.id.try_into().expect("a legacy id is 8 bytes");
                    entry::pack_legacy(f64::from_le_bytes(id), e.value)
                }
                _ => entry::pack(e.id, e.value),
            };
            assert_eq!(again, raw, "{prefer:?} reading does not pack back");
            decode_all(e.value);
        }
    }
}

/// Valid encodings of assorted values in every codec, to mutate.
fn valid_encodings(s: &str, n: i64) -> Vec<Vec<u8>> {
    let map =
        serde_json::json!({"id": n, "sku": s, "tags": [s, n], "nested": {"a": [1, 2.5, null]}});
    let kryo = Kryo5Codec::<JavaValue>::new();
    vec![
        StringCodec.encode(s).unwrap(),
        LongCodec.encode(&n).unwrap(),
        JsonJacksonCodec::<serde_json::Value>::new()
            .encode(&map)
            .unwrap(),
        TypedJsonJacksonCodec::<serde_json::Value>::new()
            .encode(&map)
            .unwrap(),
        MsgPackJacksonCodec::<serde_json::Value>::new()
            .encode(&map)
            .unwrap(),
        kryo.encode(&JavaValue::String(s.to_string())).unwrap(),
        kryo.encode(&JavaValue::Long(n)).unwrap(),
        Kryo5Codec::<BTreeMap<String, Vec<i64>>>::new()
            .encode(&BTreeMap::from([(s.to_string(), vec![n, -n, 0])]))
            .unwrap(),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    /// XOR a byte.
    Flip(prop::sample::Index, u8),
    /// Cut the bytes at a point.
    Truncate(prop::sample::Index),
    /// Insert a byte.
    Insert(prop::sample::Index, u8),
    /// Overwrite 8 bytes at a point with a little-endian number (a length field, often).
    Word(prop::sample::Index, u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let word = prop_oneof![
        Just(u64::MAX),
        Just(u64::MAX / 2),
        Just(u32::MAX as u64),
        Just(1u64 << 53),
        0u64..1024,
        any::<u64>(),
    ];
    prop_oneof![
        (any::<prop::sample::Index>(), 1u8..).prop_map(|(i, b)| Mutation::Flip(i, b)),
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<prop::sample::Index>(), word).prop_map(|(i, w)| Mutation::Word(i, w)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Flip(i, b) if !bytes.is_empty() => {
            let at = i.index(bytes.len());
            bytes[at] ^= b;
        }
        Mutation::Truncate(i) => {
            let at = i.index(bytes.len() + 1);
            bytes.truncate(at);
        }
        Mutation::Insert(i, b) => {
            let at = i.index(bytes.len() + 1);
            bytes.insert(at, *b);
        }
        Mutation::Word(i, w) if bytes.len() >= 8 => {
            let at = i.index(bytes.len() - 7);
            bytes[at..at + 8].copy_from_slice(&w.to_le_bytes());
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Random bytes, as entries and as values.
    #[test]
    fn random_bytes(raw in prop::collection::vec(any::<u8>(), 0..300)) {
        unpack_all(&raw);
        decode_all(&raw);
    }

    /// Entries made like Redisson makes them (current and legacy packing) around valid codec
    /// bytes, then damaged: every reading either fails with a message or packs back exactly.
    #[test]
    fn damaged_entries(
        id in any::<[u8; 8]>(),
        random in any::<f64>(),
        s in "\\PC{0,40}",
        n in any::<i64>(),
        which in any::<prop::sample::Index>(),
        legacy in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 0..4),
    ) {
        let encodings = valid_encodings(&s, n);
        let value = &encodings[which.index(encodings.len())];
        // Undamaged, the entry reads back exactly.
        let mut raw = if legacy {
            entry::pack_legacy(random, value)
        } else {
            entry::pack(&id, value)
        };
        let e = entry::unpack(&raw, if legacy { EntryFormat::Legacy } else { EntryFormat::Current })
            .unwrap();
        prop_assert_eq!(e.value, value.as_slice());
        prop_assert!(decode_all(e.value) >= 1, "a valid encoding nobody decodes: {:02x?}", value);
        for m in &mutations {
            apply(&mut raw, m);
        }
        unpack_all(&raw);
    }

    /// Valid codec bytes, damaged, through every decoder.
    #[test]
    fn damaged_values(
        s in "\\PC{0,40}",
        n in any::<i64>(),
        mutations in prop::collection::vec(mutation(), 1..5),
    ) {
        for mut bytes in valid_encodings(&s, n) {
            for m in &mutations {
                apply(&mut bytes, m);
            }
            decode_all(&bytes);
        }
    }
}

/// Declared lengths far beyond the bytes present, and deep nesting: errors, fast, with no
/// allocation of the declared size.
#[test]
fn length_and_depth_bombs_are_errors() {
    let mut bombs: Vec<Vec<u8>> = vec![
        // msgpack: array32 / map32 / str32 / bin32 declaring 4 G elements or bytes.
        vec![0xdd, 0xff, 0xff, 0xff, 0xff, 0x01],
        vec![0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, b'a', 0x01],
        vec![0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],
        vec![0xc6, 0xff, 0xff, 0xff, 0xff, 0x00],
        // msgpack: 100,000 nested one-element arrays.
        vec![0x91; 100_000],
        // JSON: 100,000 nested arrays / objects, a huge number, an unterminated string.
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
        "{\"a\":".repeat(50_000).into_bytes(),
        "9".repeat(100_000).into_bytes(),
        format!("\"{}", "x".repeat(100_000)).into_bytes(),
        // LongCodec: a number past i64.
        b"99999999999999999999999".to_vec(),
        b"-".to_vec(),
    ];
    // Kryo: ArrayList / HashMap / byte[] / String class ids followed by varints of 2^35-1.
    for class_id in 0u8..=40 {
        bombs.push(vec![class_id, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x01]);
        bombs.push(vec![class_id, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    }
    // Kryo: 100,000 nested lists (ArrayList class id 10 in Redisson's registration is a
    // guess; every id from 0 to 40 is tried above, this one adds depth).
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        deep.extend_from_slice(&[10, 1, 1]);
    }
    bombs.push(deep);
    for bytes in &bombs {
        decode_all(bytes);
        // As an entry value whose length field claims far more than is there.
        let mut raw = entry::pack(&[1; 8], bytes);
        raw[9..17].copy_from_slice(&u64::MAX.to_le_bytes());
        unpack_all(&raw);
    }
}

/// Entry length fields near and past the limits of u64 and usize.
#[test]
fn entry_length_fields_at_the_limits() {
    for len in [
        u64::MAX,
        u64::MAX - 16,
        u64::MAX - 17,
        usize::MAX as u64,
        1 << 63,
        3,
        4,
    ] {
        let mut raw = entry::pack(&[9; 8], b"abc");
        raw[9..17].copy_from_slice(&len.to_le_bytes());
        for prefer in [EntryFormat::Current, EntryFormat::Legacy] {
            let got = entry::unpack(&raw, prefer);
            if len == 3 {
                assert_eq!(got.unwrap().value, b"abc");
            } else {
                assert!(got.is_err(), "length {len} accepted: {got:?}");
            }
        }
        // The id length byte at its extremes.
        for id_len in [0u8, 7, 9, 255] {
            let mut raw = raw.clone();
            raw[0] = id_len;
            unpack_all(&raw);
        }
    }
}
