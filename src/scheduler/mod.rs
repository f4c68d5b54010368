//! The transfer scheduler: moves due entries onto the target list, like Redisson's
//! `QueueTransferTask`, and coexists with Java schedulers on the same queue.
//!
//! One scheduler per queue listens on the queue's channel from its own connection. It transfers
//! once at start and after every (re)subscribe, because messages published while it was
//! disconnected are lost; it sleeps until the earliest due time it knows of (from the last
//! transfer's reply or a channel message); and it sweeps every
//! [`sweep_interval`](SchedulerConfig::with_sweep_interval) whatever happens, so a lost message,
//! timer or subscription never strands due entries. Several schedulers (Rust or Java) may run on
//! one queue: each transfer is one atomic script, so every entry moves exactly once.
//!
//! - `config.rs`: [`SchedulerConfig`] (batches, index, sweep, backoff).
//! - `task.rs`: the task's loop.
//! - `shared.rs`: one scheduler per (client, queue), shared by the queue handles that want one.

mod config;
pub(crate) mod shared;
mod task;

pub use config::SchedulerConfig;

use crate::entry::EntryFormat;
use crate::keys::QueueKeys;
use crate::redis::script::QueueSpec;
use crate::time::Clock;
use crate::Result;
use fred::clients::Client;
use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use task::TransferTask;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Counters of a running scheduler.
#[derive(Debug, Default)]
struct Counters {
    transfers: AtomicU64,
    moved: AtomicU64,
    quarantined: AtomicU64,
    errors: AtomicU64,
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
    /// use delayq::{Scheduler, SchedulerConfig};
    ///
    /// let handle = Scheduler::spawn(client, "orders", SchedulerConfig::default()).await?;
    /// // ... until the service stops:
    /// handle.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn spawn(
        client: Client,
        name: impl Into<String>,
        config: SchedulerConfig,
    ) -> Result<SchedulerHandle> {
        Scheduler::builder(client, name)
            .config(config)
            .spawn()
            .await
    }

    /// A scheduler with more settings: the queue's entry format and clock.
    pub fn builder(client: Client, name: impl Into<String>) -> SchedulerBuilder {
        SchedulerBuilder {
            client,
            name: name.into(),
            format: EntryFormat::default(),
            clock: Clock::default(),
            config: SchedulerConfig::default(),
        }
    }

    /// Starts a scheduler for `queue` (what [`SchedulerBuilder::spawn`] and the queue builder
    /// both end in).
    pub(crate) async fn spawn_for(
        client: Client,
        queue: QueueSpec,
        config: SchedulerConfig,
    ) -> Result<SchedulerHandle> {
        config.validate()?;
        let subscriber = client.clone_new();
        crate::redis::init_client(&subscriber).await?;
        // Receivers are taken before subscribing so that no message is missed.
        let messages = subscriber.message_rx();
        let reconnects = subscriber.reconnect_rx();
        if let Err(err) = subscriber.subscribe(queue.keys.channel()).await {
            let _ = subscriber.quit().await;
            return Err(err.into());
        }
        let token = CancellationToken::new();
        let counters = Arc::new(Counters::default());
        let keys = queue.keys.clone();
        let task = TransferTask::new(
            client,
            subscriber,
            queue,
            config,
            token.clone(),
            counters.clone(),
        );
        crate::redis::server::warn_if_evicting(&task.client, "transfer scheduler", keys.target())
            .await;
        let join = tokio::spawn(task.run(messages, reconnects));
        tracing::debug!(queue = keys.target(), "transfer scheduler started");
        Ok(SchedulerHandle {
            keys,
            token,
            join: Some(join),
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
    format: EntryFormat,
    clock: Clock,
    config: SchedulerConfig,
}

impl SchedulerBuilder {
    /// How to read an entry that fits both packings (see [`crate::entry`]): the queue's
    /// format. Default: [`EntryFormat::Current`].
    pub fn entry_format(mut self, format: EntryFormat) -> Self {
        self.format = format;
        self
    }

    /// Whose clock decides what is due (see [`Clock`]). Default: this process's.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Batches, index, sweep and backoff.
    pub fn config(mut self, config: SchedulerConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts the scheduler; it has subscribed and is running when this returns.
    ///
    /// # Errors
    ///
    /// An invalid config, or no pub/sub connection.
    pub async fn spawn(self) -> Result<SchedulerHandle> {
        let queue = QueueSpec {
            keys: QueueKeys::new(self.name),
            format: self.format,
            clock: self.clock,
        };
        Scheduler::spawn_for(self.client, queue, self.config).await
    }
}

/// Owns a running scheduler. Dropping it stops the scheduler (without waiting);
/// [`shutdown`](SchedulerHandle::shutdown) stops it and waits until it has.
#[derive(Debug)]
pub struct SchedulerHandle {
    keys: QueueKeys,
    token: CancellationToken,
    join: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
}

impl SchedulerHandle {
    /// The queue's name (its target list).
    pub fn name(&self) -> &str {
        self.keys.target()
    }

    /// Counters since the scheduler started.
    pub fn stats(&self) -> SchedulerStats {
        SchedulerStats {
            transfers: self.counters.transfers.load(Ordering::Relaxed),
            moved: self.counters.moved.load(Ordering::Relaxed),
            quarantined: self.counters.quarantined.load(Ordering::Relaxed),
            errors: self.counters.errors.load(Ordering::Relaxed),
        }
    }

    /// True once the scheduler's task has ended.
    pub fn is_finished(&self) -> bool {
        self.join.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the scheduler: a transfer in progress completes (scripts are atomic), then it
    /// unsubscribes and closes its pub/sub connection.
    ///
    /// # Cancel safety
    ///
    /// Dropping this future after it started still stops the scheduler (it is cancelled at
    /// once); only the wait for it to finish is cut short.
    pub async fn shutdown(mut self) {
        self.token.cancel();
        if let Some(join) = self.join.take() {
            if let Err(err) = join.await {
                tracing::warn!(queue = self.keys.target(), error = %err, "scheduler task failed");
            }
        }
    }
}

impl Drop for SchedulerHandle {
    fn drop(&mut self) {
        self.token.cancel();
    }
}
