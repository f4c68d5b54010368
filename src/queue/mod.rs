//! The producer side: [`DelayedQueue`], Redisson's `RDelayedQueue`, and the doors to its
//! features.
//!
//! A service offers and takes through the queue's own methods; every feature beyond that is
//! reached through one method that names it and returns a handle borrowing the queue:
//! [`inspect`](DelayedQueue::inspect) (an operator's reads), [`admin`](DelayedQueue::admin) (an
//! operator's writes), [`dedup`](DelayedQueue::dedup), [`limits`](DelayedQueue::limits),
//! [`schedules`](DelayedQueue::schedules); [`with_durability`](DelayedQueue::with_durability)
//! is the queue itself with a setting changed. Each door type is generic over the queue kind
//! (`Inspect<'_, Q>`), so a [`ShardedQueue`] can return the same types.
//!
//! - `mod.rs`: the queue, its builder and accessors, [`consumer`](DelayedQueue::consumer) and
//!   [`destroy`](DelayedQueue::destroy); `builder.rs`: the builder core both kinds of queue
//!   share.
//! - `redisson.rs`: the `RDelayedQueue` operations (`offer` … `clear_expire`).
//! - `extras.rs`: delayq's own producer operations (`reschedule`, `offer_unique`, handles) and
//!   the queue's own lists.
//! - `inspect.rs`: the doors [`inspect`](DelayedQueue::inspect) and
//!   [`admin`](DelayedQueue::admin), and the reads of the queue's own keys; `admin.rs`:
//!   [`Admin`] and its writes (pause, resume, one-off transfers, the quarantine);
//!   `check.rs`: [`Inspect::check`](crate::inspect::Inspect::check); `preview.rs`:
//!   [`Inspect::previews`](crate::inspect::Inspect::previews).
//! - `dedup.rs`: [`dedup`](DelayedQueue::dedup), offers deduplicated by a business key within
//!   a window; `schedules.rs`: [`schedules`](DelayedQueue::schedules), typed by the codec.
//! - `encoded.rs`: the operations on values already encoded, which the public ones above and
//!   the sharded queue's call, so that each is written once and a value encoded once.
//! - `durable.rs`: [`with_durability`](DelayedQueue::with_durability) and the one way a write
//!   waits for its confirmations ([`Durability`](crate::Durability)).
//! - `pause.rs`: a sharded queue's pause flags.
//! - `sharded/`: [`ShardedQueue`], one logical queue over N ordinary queues (shards).
//!
//! More `impl DelayedQueue` blocks live with what they build on: reliable consumption and dead
//! letters in [`reliable`](crate::reliable), the limits door in [`limit`](crate::limit), and
//! [`worker`](DelayedQueue::worker) in [`worker`](crate::worker).

mod admin;
mod builder;
mod check;
mod dedup;
mod durable;
mod encoded;
mod extras;
mod inspect;
mod pause;
mod preview;
mod redisson;
mod schedules;
mod sharded;

pub use admin::{Admin, Transferred};
pub use dedup::{Dedup, DedupMode, DedupOutcome, Deduplicated, MAX_DEDUP_KEY_LEN};
pub use sharded::{
    shard_of, ParseShardedHandleError, ShardedConsumer, ShardedHandle, ShardedQueue,
    ShardedQueueBuilder, MAX_SHARDS,
};

use crate::codec::{decode_value, Codec};
use crate::consumer::Consumer;
use crate::durable::{Durability, DurableWrites};
use crate::keys::QueueKeys;
use crate::options::QueueOptions;
use crate::redis::ops::transfer::PassCost;
use crate::redis::script::QueueSpec;
use crate::transfer::shared::SchedulerLease;
use crate::{Error, Result};
use builder::{core_setters, BuildCore};
use bytes::Bytes;
use fred::clients::Client;
use std::sync::{Arc, Mutex, PoisonError};

/// Builds a [`DelayedQueue`]; made by [`DelayedQueue::builder`].
#[derive(Debug)]
#[must_use]
pub struct DelayedQueueBuilder<C: Codec> {
    core: BuildCore<C>,
}

impl<C: Codec> DelayedQueueBuilder<C> {
    /// What this queue's writes wait for before they are reported done (offers, replays of dead
    /// letters, and the dead letters its reliable consumers and workers write): replicas
    /// (`WAIT`), the append-only file (`WAITAOF`). Calls that should wait otherwise can use
    /// [`DelayedQueue::with_durability`]. With a durability set, [`build`](Self::build) opens
    /// the connection durable writes go on, and fails when the server cannot give it (an AOF
    /// wait on a server without `WAITAOF`). Default: [`Durability::none`], plain writes.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.core.durability = durability;
        self
    }

    core_setters!();

    /// Builds the queue, starting or joining the scheduler when transfer is on.
    ///
    /// # Errors
    ///
    /// An empty name, an invalid scheduler config, or the scheduler could not subscribe; with a
    /// [`durability`](Self::durability), no connection for durable writes or a server that
    /// cannot give it.
    pub async fn build(self) -> Result<DelayedQueue<C>> {
        let core = self.core;
        if core.name.is_empty() {
            return Err(Error::InvalidConfig("queue name is empty".into()));
        }
        let spec = QueueSpec::new(core.name, core.options);
        if let Some(alias) = spec.keys.alias() {
            tracing::warn!(
                queue = spec.keys.target(),
                shares_keys_with = alias,
                "this queue's delayed entries live in the same keys as those of the queue named \
                 {alias:?} (Redisson's naming rule); values offered to either may be moved to \
                 either target list"
            );
        }
        let lease = if core.transfer {
            let (group, transfer) = (core.group_config, core.transfer_config);
            Some(SchedulerLease::acquire(&core.client, &spec, group, transfer).await?)
        } else {
            None
        };
        let queue = DelayedQueue {
            inner: Arc::new(Inner {
                durable: core
                    .durable
                    .unwrap_or_else(|| DurableWrites::new(core.client.clone())),
                client: core.client,
                spec,
                codec: core.codec,
                lease: Mutex::new(lease),
                pass_cost: PassCost::default(),
                bulk_limit: tokio::sync::OnceCell::new(),
            }),
            durability: core.durability,
        };
        if !queue.durability.is_none() {
            queue.writer().await?;
        }
        Ok(queue)
    }
}

/// A delayed queue: values offered with a delay land on the target list when due.
///
/// Java: `RDelayedQueue` from `redisson.getDelayedQueue(destinationQueue)`. The keys, entry
/// packing and channel messages are Redisson's own, so Java and Rust peers share a queue.
/// Cheap to clone; clones share one scheduler lease.
///
/// # Examples
///
/// ```no_run
/// # async fn ex() -> Result<(), delayq::Error> {
/// use delayq::codec::StringCodec;
/// use delayq::DelayedQueue;
/// use std::time::Duration;
///
/// let client = delayq::connect("redis://127.0.0.1:6379").await?;
/// let queue = DelayedQueue::builder(client, "orders", StringCodec).build().await?;
/// queue.offer("order-42", Duration::from_secs(900)).await?;
/// let consumer = queue.consumer().await?;
/// let due = consumer.take().await?; // in 15 minutes
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DelayedQueue<C: Codec> {
    inner: Arc<Inner<C>>,
    /// What this handle's writes wait for (clones by `with_durability` differ only in it).
    durability: Durability,
}

impl<C: Codec> Clone for DelayedQueue<C> {
    fn clone(&self) -> Self {
        DelayedQueue {
            inner: self.inner.clone(),
            durability: self.durability,
        }
    }
}

#[derive(Debug)]
struct Inner<C> {
    client: Client,
    spec: QueueSpec,
    codec: Arc<C>,
    lease: Mutex<Option<SchedulerLease>>,
    /// What the order-list pass costs, as this handle's transfers measured it.
    pass_cost: PassCost,
    /// The server's `proto-max-bulk-len`, read when a value first needs it.
    bulk_limit: tokio::sync::OnceCell<u64>,
    /// Durable writes' connection, opened by the first write that needs it.
    durable: DurableWrites,
}

/// **Building and the handle**: the builder, the name, keys and options, a consumer of the
/// target list, and [`destroy`](Self::destroy).
impl<C: Codec> DelayedQueue<C> {
    /// Starts building a queue on `client` for the destination list `name`.
    pub fn builder(client: Client, name: impl Into<String>, codec: C) -> DelayedQueueBuilder<C> {
        Self::builder_from(BuildCore::new(client, name.into(), Arc::new(codec)))
    }

    /// A builder of the queue `core` describes (a shard of a [`ShardedQueue`] shares its codec
    /// and settings).
    pub(crate) fn builder_from(core: BuildCore<C>) -> DelayedQueueBuilder<C> {
        DelayedQueueBuilder { core }
    }

    /// A queue with the defaults: current entry format, this process's clock, transfer
    /// scheduler on.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueueBuilder::build`].
    pub async fn new(client: Client, name: impl Into<String>, codec: C) -> Result<Self> {
        Self::builder(client, name, codec).build().await
    }

    /// The queue's name: its destination (target) list.
    pub fn name(&self) -> &str {
        self.inner.spec.keys.target()
    }

    /// The queue's Redis keys.
    pub fn keys(&self) -> &QueueKeys {
        &self.inner.spec.keys
    }

    /// The codec values go through.
    pub(crate) fn codec(&self) -> &C {
        &self.inner.codec
    }

    /// The entry format and clock this queue goes by.
    pub fn options(&self) -> QueueOptions {
        self.inner.spec.options
    }

    /// The fred client commands go through.
    pub(crate) fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Keys, format and clock, as every script call takes them.
    pub(crate) fn spec(&self) -> &QueueSpec {
        &self.inner.spec
    }

    /// The order-list pass cost this handle's transfers measured (for the next transfer).
    pub(crate) fn pass_cost(&self) -> &PassCost {
        &self.inner.pass_cost
    }

    /// The server's `proto-max-bulk-len`, read once (see [`check_sizes`](Self::check_sizes)).
    pub(crate) async fn bulk_limit(&self) -> Result<u64> {
        let client = &self.inner.client;
        self.inner
            .bulk_limit
            .get_or_try_init(|| crate::redis::server::bulk_limit(client))
            .await
            .copied()
    }

    /// The codec, shared (for consumers).
    pub(crate) fn shared_codec(&self) -> Arc<C> {
        self.inner.codec.clone()
    }

    pub(crate) fn decode(&self, raw: Bytes) -> Result<C::Value> {
        decode_value(&*self.inner.codec, raw)
    }

    /// A consumer of the target list on its own connection: `BLPOP`, as Redisson's consumers
    /// take, so a value is gone from Redis once taken (**at most once**: a crash before the
    /// work is done loses it). For values that must not be lost, use
    /// [`reliable_consumer`](Self::reliable_consumer) (acknowledged, at least once) or
    /// [`worker`](Self::worker).
    ///
    /// # Errors
    ///
    /// No connection for the consumer.
    pub async fn consumer(&self) -> Result<Consumer<C>> {
        Consumer::with_shared_codec(&self.inner.client, self.name(), self.shared_codec()).await
    }

    /// Names of queues as this handle's scheduler group moves values of them; `None` when the
    /// handle runs no scheduler. The key is the same for every handle of one group.
    pub(crate) fn moved_rx(&self) -> Option<(usize, tokio::sync::broadcast::Receiver<Arc<str>>)> {
        let lease = self
            .inner
            .lease
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        lease.as_ref().map(SchedulerLease::moved_rx)
    }

    /// Drops this handle's share of the transfer scheduler, stopping it (and waiting for it)
    /// when no other handle of the same client and queue uses it.
    ///
    /// Java: `RDelayedQueue#destroy()`.
    ///
    /// # Errors
    ///
    /// None today; kept fallible for parity with Java.
    pub async fn destroy(&self) -> Result<()> {
        let lease = self
            .inner
            .lease
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(lease) = lease {
            lease.release().await;
        }
        Ok(())
    }
}
