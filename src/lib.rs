#![doc = include_str!("../README.md")]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![cfg_attr(not(test), forbid(clippy::panic, clippy::print_stdout))]
#![cfg_attr(docsrs, feature(doc_cfg))]

//! # Layout
//!
//! - [`keys`](QueueKeys): Redisson's key and channel names.
//! - [`entry`]: the `Bc0Lc0` / `dLc0` packing of pending entries.
//! - [`codec`]: Redisson's codecs, byte for byte.
//! - `scripts` + `lua/`: one Lua script per operation, run by EVALSHA with a NOSCRIPT fallback.
//! - [`DelayedQueue`]: the producer side (`RDelayedQueue`).
//! - [`Scheduler`]: the transfer task (`QueueTransferTask`).
//! - [`Consumer`]: the target list (`RBlockingQueue`).

pub mod codec;
mod connect;
mod consumer;
pub mod entry;
mod error;
mod keys;
mod queue;
mod scheduler;
mod scripts;

pub use connect::connect;
pub use consumer::Consumer;
pub use entry::EntryFormat;
pub use error::{BoxError, Error, Result};
pub use keys::QueueKeys;
pub use queue::{DelayedQueue, DelayedQueueBuilder, Pending, QueueStats};
pub use scheduler::{Scheduler, SchedulerConfig, SchedulerHandle, SchedulerStats, TransferOutcome};

/// The types most programs need.
pub mod prelude {
    pub use crate::codec::Codec;
    pub use crate::{
        Consumer, DelayedQueue, EntryFormat, Error, Result, Scheduler, SchedulerConfig,
    };
}
