//! The transfer scheduler: moves due entries onto the target list, like Redisson's
//! `QueueTransferTask`, and coexists with Java schedulers on the same queue.
//!
//! A scheduler group transfers any number of queues from one task and one pub/sub connection.
//! It transfers each queue once when it is added and after every (re)subscribe, because messages
//! published while it was disconnected are lost; it wakes at the earliest due time it knows of
//! (from the last transfer's reply, a channel message or the sweep) with a timer precise to well
//! under a millisecond; and a safety sweep looks at every queue's head in turn, within a budget
//! of queues per second, so a lost message, timer or subscription never strands due entries.
//! Several schedulers (Rust or Java) may run on one queue: each transfer is one atomic script,
//! so every entry moves exactly once. [`Scheduler::spawn`] is a group of one.
//!
//! - `config.rs`: [`GroupConfig`] (sweep, concurrency) and [`TransferConfig`] (each queue's
//!   batches, index, call time, backoff).
//! - `group.rs`: [`SchedulerGroup`]; `state.rs`: what its handles and task share, the requests
//!   they send it and what its jobs return.
//! - `task.rs`: the group's loop, the one `impl` of its state; it applies what `discovery.rs`
//!   ([`Discovery`], its scans) and `sweep.rs` (the safety sweep) find and return;
//!   `queue_state.rs`: one queue's state and drain; `timer.rs`: the precise timer.
//! - `tally.rs`: each transfer call recorded once, into the counters, the metrics and the
//!   console's activity.
//! - `firing.rs`: the group's task firing the recurring schedules of its queues.
//! - `shared.rs`: one group per client, shared by the queue handles that want a scheduler.

mod config;
mod discovery;
mod firing;
mod group;
mod queue_state;
pub(crate) mod shared;
mod state;
mod sweep;
mod tally;
mod task;
mod timer;

pub use config::{GroupConfig, TransferConfig};
pub use discovery::Discovery;
pub use group::SchedulerGroup;

use crate::options::QueueOptions;
use crate::redis::script::QueueSpec;
use crate::Result;
use fred::clients::Client;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// Counters of one queue's transfers.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    transfers: AtomicU64,
    moved: AtomicU64,
    quarantined: AtomicU64,
    errors: AtomicU64,
    /// When a drain last succeeded (epoch ms; 0: never).
    last_ok_ms: AtomicI64,
}

impl Counters {
    fn snapshot(&self) -> SchedulerStats {
        SchedulerStats {
            transfers: self.transfers.load(Ordering::Relaxed),
            moved: self.moved.load(Ordering::Relaxed),
            quarantined: self.quarantined.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            last_transfer_ms: Some(self.last_ok_ms.load(Ordering::Relaxed)).filter(|&ms| ms > 0),
        }
    }
}

/// A snapshot of a scheduler's counters since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SchedulerStats {
    /// Transfer script calls that succeeded.
    pub transfers: u64,
    /// Values moved to the target list.
    pub moved: u64,
    /// Malformed entries quarantined.
    pub quarantined: u64,
    /// Failed transfers or subscriptions.
    pub errors: u64,
    /// When a transfer last succeeded (epoch ms, this process's clock), moving values or not;
    /// for several queues the latest.
    pub last_transfer_ms: Option<i64>,
}

impl SchedulerStats {
    fn plus(self, other: &SchedulerStats) -> SchedulerStats {
        SchedulerStats {
            transfers: self.transfers + other.transfers,
            moved: self.moved + other.moved,
            quarantined: self.quarantined + other.quarantined,
            errors: self.errors + other.errors,
            last_transfer_ms: self.last_transfer_ms.max(other.last_transfer_ms),
        }
    }
}

/// Starts transfer schedulers.
#[derive(Debug)]
pub struct Scheduler;

impl Scheduler {
    /// Starts a scheduler for the queue whose target list is `name`, reading entries in the
    /// current format first and deciding what is due by this process's clock; see
    /// [`builder`](Self::builder) for other settings.
    ///
    /// Commands go through `client`; the scheduler opens one more connection (a `clone_new` of
    /// `client`) for the channel. It has subscribed and is running when this returns.
    ///
    /// # Errors
    ///
    /// An invalid config, or no pub/sub connection.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(client: delayq::fred::clients::Client) -> Result<(), delayq::Error> {
    /// use delayq::{Scheduler, TransferConfig};
    ///
    /// let handle = Scheduler::spawn(client, "orders", TransferConfig::default()).await?;
    /// // ... until the service stops:
    /// handle.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn spawn(
        client: Client,
        name: impl Into<String>,
        config: TransferConfig,
    ) -> Result<SchedulerHandle> {
        Scheduler::builder(client, name)
            .transfer_config(config)
            .spawn()
            .await
    }

    /// A scheduler with more settings: the queue's [`QueueOptions`], the group's
    /// [`GroupConfig`].
    pub fn builder(client: Client, name: impl Into<String>) -> SchedulerBuilder {
        SchedulerBuilder {
            client,
            name: name.into(),
            options: QueueOptions::default(),
            group: GroupConfig::default(),
            transfer: TransferConfig::default(),
        }
    }

    /// Starts a group of one for `queue`.
    pub(crate) async fn spawn_for(
        client: Client,
        queue: QueueSpec,
        group: GroupConfig,
        transfer: TransferConfig,
    ) -> Result<SchedulerHandle> {
        transfer.validate()?;
        let group = SchedulerGroup::spawn(client, group).await?;
        let name = queue.keys.target().to_owned();
        let counters = match group.add_spec(queue, transfer).await {
            Ok(counters) => counters,
            Err(err) => {
                group.shutdown().await;
                return Err(err);
            }
        };
        tracing::debug!(queue = %name, "transfer scheduler started");
        Ok(SchedulerHandle {
            group,
            name,
            counters,
        })
    }
}

/// Builds a scheduler; made by [`Scheduler::builder`].
#[derive(Debug)]
#[must_use]
pub struct SchedulerBuilder {
    client: Client,
    name: String,
    options: QueueOptions,
    group: GroupConfig,
    transfer: TransferConfig,
}

impl SchedulerBuilder {
    /// The queue's entry format (how to read an entry that fits both packings) and whose clock
    /// decides what is due (see [`QueueOptions`]). Default: current entries, this process's
    /// clock.
    pub fn options(mut self, options: QueueOptions) -> Self {
        self.options = options;
        self
    }

    /// The queue's batches, index, call time and backoff.
    /// Default: [`TransferConfig::default`].
    pub fn transfer_config(mut self, config: TransferConfig) -> Self {
        self.transfer = config;
        self
    }

    /// The sweep and concurrency of the scheduler's group (a group of one).
    /// Default: [`GroupConfig::default`].
    pub fn group_config(mut self, config: GroupConfig) -> Self {
        self.group = config;
        self
    }

    /// Starts the scheduler; it has subscribed and is running when this returns.
    ///
    /// # Errors
    ///
    /// An invalid config, or no pub/sub connection.
    pub async fn spawn(self) -> Result<SchedulerHandle> {
        let queue = QueueSpec::new(self.name, self.options);
        Scheduler::spawn_for(self.client, queue, self.group, self.transfer).await
    }
}

/// Owns a running scheduler of one queue. Dropping it stops the scheduler (without waiting);
/// [`shutdown`](SchedulerHandle::shutdown) stops it and waits until it has.
#[derive(Debug)]
pub struct SchedulerHandle {
    group: SchedulerGroup,
    name: String,
    counters: Arc<Counters>,
}

impl SchedulerHandle {
    /// The queue's name (its target list).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Counters since the scheduler started.
    pub fn stats(&self) -> SchedulerStats {
        self.counters.snapshot()
    }

    /// True once the scheduler's task has ended.
    pub fn is_finished(&self) -> bool {
        self.group.is_finished()
    }

    /// Stops the scheduler: a transfer in progress completes (scripts are atomic), then it
    /// unsubscribes and closes its pub/sub connection.
    ///
    /// # Cancel safety
    ///
    /// Dropping this future after it started still stops the scheduler (it is cancelled at
    /// once); only the wait for it to finish is cut short.
    pub async fn shutdown(self) {
        self.group.shutdown().await;
    }
}
