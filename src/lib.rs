#![doc = "delayq: a Redisson-compatible delayed queue on Redis."]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![cfg_attr(not(test), forbid(clippy::panic, clippy::print_stdout))]

pub mod codec;
mod error;

pub use error::{BoxError, Error, Result};
