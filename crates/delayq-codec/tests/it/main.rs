//! The codec crate's tests: one test crate (one link step), no Redis needed. Round trips and
//! property tests per codec, Java types, exact numbers, and golden bytes captured from the real
//! Redisson (`tests/fixtures/`).
//!
//! Run them with `cargo test -p delayq-codec --all-features`.

mod java_payloads;

mod codec_jackson;
mod codec_jackson_arrays;
mod codec_jackson_java;
mod codec_kryo;
mod codec_kryo_java;
mod codec_kryo_maps;
mod exact_numbers;
mod golden_fixtures;
