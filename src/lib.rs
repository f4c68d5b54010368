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
//! - [`reliable`]: beyond Redisson: [`ReliableConsumer`] (acknowledged takes), dead letters,
//!   reschedule, quarantine tools, the server [`Clock`].
//! - [`retry`]: [`RetryPolicy`]; [`worker`]: `queue.worker(n, handler)` ([`WorkerBuilder`]).

pub mod codec;
mod connect;
mod consumer;
pub mod entry;
mod error;
mod keys;
mod queue;
pub mod reliable;
pub mod retry;
mod scheduler;
mod scripts;
pub mod worker;

pub use connect::connect;
pub use consumer::Consumer;
pub use entry::EntryFormat;
pub use error::{BoxError, Error, Result};
pub use keys::QueueKeys;
pub use queue::{DelayedQueue, DelayedQueueBuilder, Pending, QueueStats};
pub use reliable::{
    Clock, DeadLetter, Delivery, ReapOutcome, Receipt, ReliableConfig, ReliableConsumer,
    ReliableStats,
};
pub use retry::{Backoff, RetryPolicy};
pub use scheduler::{Scheduler, SchedulerConfig, SchedulerHandle, SchedulerStats, TransferOutcome};
pub use worker::{Job, JobError, WorkerBuilder, WorkerHandle, WorkerStats};

/// The types most programs need.
pub mod prelude {
    pub use crate::codec::Codec;
    pub use crate::{
        Clock, Consumer, DelayedQueue, EntryFormat, Error, Job, JobError, ReliableConsumer, Result,
        RetryPolicy, Scheduler, SchedulerConfig,
    };
}
