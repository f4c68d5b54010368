#![doc = include_str!("../README.md")]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![doc(test(attr(deny(warnings), allow(dead_code, unused_variables))))]
#![cfg_attr(not(test), forbid(clippy::panic, clippy::print_stdout))]
#![cfg_attr(docsrs, feature(doc_cfg))]

//! # Layout
//!
//! Each module uses only the modules listed before it (`python3 scripts/check_layout.py`
//! checks that, and prints the order it finds):
//!
//! - [`entry`]: the `Bc0Lc0` / `dLc0` packing of pending entries.
//! - [`error`](Error): the error type, and the one place Redis's replies are classified.
//! - [`keys`](QueueKeys): Redisson's key and channel names, and delayq's own.
//! - [`time`]: the current epoch ms, [`Clock`], due-time ranges.
//! - [`QueueOptions`] (`options.rs`): a queue's entry format and clock, shared by every handle.
//! - [`retry`]: [`RetryPolicy`] and [`Backoff`](retry::Backoff) (also behind delayq's own retry
//!   loops).
//! - [`codec`]: Redisson's codecs, byte for byte.
//! - `redis/`: a client's first connection bounded, Sentinel's master switches, `script.rs`
//!   (the one way a Lua script is called) and `ops/`, one file per script under `lua/` (its keys,
//!   arguments and reply).
//! - `connection/`: [`connect`], [`client_builder`] and [`ConnectOptions`] (`options.rs`;
//!   [`TlsOptions`] and the rustls connector in `tls/`).
//! - `process.rs`: who this process is (host name, and the one id its registry records and
//!   delivery ids carry).
//! - `observe/`: what workers and scheduler groups keep in Redis about themselves (each queue's
//!   per-minute and per-day activity, the registry of live processes), one `Observer` task per
//!   process.
//! - [`inspect`]: the operator's view of a queue ([`Inspect`](inspect::Inspect), from
//!   `queue.inspect()`) and the types of its reads.
//! - [`metrics`]: every metric delayq records (feature `metrics`), with its name and labels.
//! - `telemetry.rs`: the spans of messages and their OpenTelemetry messaging fields.
//! - `recurring/`: recurring schedules (cron expressions, intervals), each occurrence offered
//!   exactly once however many processes fire them.
//! - [`Durability`] (`durable/`): durable writes' own connection, and the task that confirms
//!   them with one `WAIT`/`WAITAOF` for every writer waiting.
//! - [`Consumer`] (`consumer.rs`): the target list, at most once (`RBlockingQueue`).
//! - [`Scheduler`] (`transfer/`): the transfer task (Redisson's `QueueTransferTask`).
//! - [`DelayedQueue`] (`queue/`): the producer side (`RDelayedQueue`) and the doors to its
//!   features ([`admin`], [`dedup`], schedules): `redisson.rs` holds Redisson's operations,
//!   `extras.rs` delayq's own, `encoded.rs` the operations on encoded values that both kinds of
//!   queue call; `sharded/`: [`ShardedQueue`], one logical queue over
//!   N shards `NAME:{i}` (the JDK's CRC32 of a value's bytes picks its shard).
//! - [`limit`]: limits across processes ([`Limits`](limit::Limits), the door
//!   [`StoredLimits`](limit::StoredLimits)), stored per queue and enforced by the worker.
//! - [`reliable`]: beyond Redisson: [`ReliableConsumer`] (acknowledged takes), dead letters.
//! - [`worker`]: `queue.worker(n, handler)` ([`WorkerBuilder`]), also over every shard of a
//!   [`ShardedQueue`] (`sharded.rs`).
//!
//! The `delayq` command is a crate of its own (`crates/delayq-cli`), and so are the codecs
//! (`crates/delayq-codec`, re-exported as [`codec`]); the scripts' conventions are in
//! `lua/README.md`.

pub mod codec;
mod connection;
mod consumer;
mod durable;
pub mod entry;
mod error;
pub mod inspect;
mod keys;
pub mod limit;
pub mod metrics;
mod observe;
mod options;
mod process;
mod queue;
mod recurring;
mod redis;
pub mod reliable;
pub mod retry;
mod telemetry;
pub mod time;
mod transfer;
pub mod worker;

/// The fred crate delayq is built on, for the types in delayq's signatures (`Client`,
/// `Config`, `Builder`).
pub use fred;
/// Stops a worker ([`WorkerBuilder::stop_on`]); tokio-util's.
pub use tokio_util::sync::CancellationToken;

pub use connection::{client_builder, connect, connect_with, ConnectOptions, TlsOptions};
pub use consumer::Consumer;
pub use durable::Durability;
pub use entry::{EntryFormat, OfferHandle};
pub use error::{BoxError, Error, Refusal, Result, TlsFailure};
pub use keys::QueueKeys;
pub use observe::ObserveConfig;
pub use options::QueueOptions;
pub use queue::{
    shard_of, DelayedQueue, DelayedQueueBuilder, ParseShardedHandleError, ShardedConsumer,
    ShardedHandle, ShardedQueue, ShardedQueueBuilder, MAX_SHARDS,
};
pub use recurring::{
    FireTally, FiringConfig, Missed, Recurrence, Schedule, ScheduleInfo, ScheduleRow, Schedules,
    MIN_SCHEDULE_INTERVAL,
};
pub use reliable::{Delivery, ReliableConfig, ReliableConsumer};
pub use retry::RetryPolicy;
pub use time::Clock;
pub use transfer::{
    Discovery, GroupConfig, Scheduler, SchedulerBuilder, SchedulerGroup, SchedulerHandle,
    SchedulerStats, TransferConfig,
};
pub use worker::{Job, JobError, WorkerBuilder, WorkerHandle};

/// What an operator writes to a queue: `queue.admin()` (pause, resume, one-off transfers,
/// reaping, dead-letter replays and purges); the reads are in [`inspect`].
pub mod admin {
    pub use crate::queue::{Admin, Transferred};
}

/// Offers deduplicated by a business key within a window: `queue.dedup(dedup).offer(..)` (see
/// `docs/dedup.md`).
pub mod dedup {
    pub use crate::queue::{Dedup, DedupMode, DedupOutcome, Deduplicated, MAX_DEDUP_KEY_LEN};
}

/// Queue names, key names and server URLs as tools show and match them (the `delayq` command
/// and its console use these).
pub mod names {
    pub use crate::connection::redact_url;
    pub use crate::keys::{glob_match, item_key, logical_queue, shard_count_key};
}

/// Not part of the API: hooks for delayq's own tests and benchmarks (the scripts as sent, with
/// their keys), which may change in any release.
#[doc(hidden)]
pub mod __internal {
    pub use crate::redis::ops::{script_key_types, script_keys, script_names, script_source};

    /// The next batch size of an adaptive transfer after one that took `taken` values in
    /// `took` (see `TransferConfig::with_adaptive_batch`).
    pub fn next_batch(
        config: &crate::TransferConfig,
        batch: usize,
        taken: u64,
        took: std::time::Duration,
    ) -> usize {
        config.next_batch(batch, taken, took)
    }
}

/// The types most programs need.
pub mod prelude {
    pub use crate::codec::Codec;
    pub use crate::{
        Clock, Consumer, DelayedQueue, EntryFormat, Error, Job, JobError, QueueOptions,
        ReliableConsumer, Result, RetryPolicy, Scheduler, TransferConfig,
    };
}

// The code samples of docs/*.md compile as doc-tests (`cargo test --doc`), like README's above.
#[cfg(doctest)]
#[doc = include_str!("../docs/compatibility.md")]
struct CompatibilityDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/reliable.md")]
struct ReliableDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/many-queues.md")]
struct ManyQueuesDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/schedules.md")]
struct SchedulesDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/sharding.md")]
struct ShardingDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/dedup.md")]
struct DedupDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/production.md")]
struct ProductionDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/durability.md")]
struct DurabilityDocs;
#[cfg(doctest)]
#[doc = include_str!("../docs/operations.md")]
struct OperationsDocs;
