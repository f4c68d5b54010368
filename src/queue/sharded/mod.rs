//! [`ShardedQueue`]: one logical queue spread over N ordinary Redisson queues (its shards), so
//! that it can grow across the masters of a Redis Cluster.
//!
//! Shard `i` of the queue `NAME` is the Redisson queue `NAME:{i}`. Since that name holds braces,
//! Redisson's `prefixName` does not wrap it again: its keys are `NAME:{i}`,
//! `redisson_delay_queue_timeout:NAME:{i}`, `redisson_delay_queue:NAME:{i}` and so on, all
//! hashed on the tag `i`, so every key of a shard is in one slot and the shards spread over the
//! masters. A value's shard is the JDK's `CRC32` of its encoded bytes modulo N ([`shard_of`]).
//!
//! - `mod.rs`: the builder, the queue, and what visits every shard (`size` … `destroy`).
//! - `values.rs`: the operations on one value or entry, each sent to one shard.
//! - `doors.rs`: the features reached through the logical queue: durable writes, schedules
//!   and limits (dedup is in `values.rs`, with the other offers).
//! - `hash.rs`: [`shard_of`] and [`ShardedHandle`].
//! - `consumer.rs`: [`ShardedConsumer`].
//! - `count.rs`: the shard count recorded in Redis, which every handle checks, and
//!   [`MAX_SHARDS`].

mod consumer;
mod count;
mod doors;
mod hash;
mod values;

pub use consumer::ShardedConsumer;
pub use count::MAX_SHARDS;
pub use hash::{shard_of, ParseShardedHandleError, ShardedHandle};

use super::builder::{core_setters, BuildCore};
use super::DelayedQueue;
use crate::codec::Codec;
use crate::durable::{Durability, DurableWrites};
use crate::inspect::QueueStats;
use crate::transfer::{SchedulerGroup, TransferConfig};
use crate::{Error, Result};
use fred::clients::Client;
use futures::future::try_join_all;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// Builds a [`ShardedQueue`]; made by [`ShardedQueue::builder`].
#[derive(Debug)]
#[must_use]
pub struct ShardedQueueBuilder<C: Codec> {
    /// The settings of every shard, the logical queue's name for its own.
    core: BuildCore<C>,
    shards: usize,
    previous: Option<usize>,
}

impl<C: Codec> ShardedQueueBuilder<C> {
    core_setters!();

    /// What every shard's writes wait for (see
    /// [`DelayedQueueBuilder::durability`](super::DelayedQueueBuilder::durability)): each write
    /// is confirmed on the master of its shard. Default: [`Durability::none`].
    pub fn durability(mut self, durability: Durability) -> Self {
        self.core.durability = durability;
        self
    }

    /// While changing the number of shards: the layout had `shards` shards before. New offers
    /// go to the new layout; lookups by value ([`remove`](ShardedQueue::remove),
    /// [`contains`](ShardedQueue::contains), [`reschedule`](ShardedQueue::reschedule),
    /// [`offer_unique`](ShardedQueue::offer_unique)) also look in a value's old shard; the
    /// queue's schedulers, consumers and workers cover the shards of both layouts until
    /// [`drained`](ShardedQueue::drained) says the old one is empty, and records the new count
    /// (see "Changing the number of shards" in docs/sharding.md).
    /// Default: none, no change of shard count in progress.
    pub fn previous_shards(mut self, shards: usize) -> Self {
        self.previous = Some(shards);
        self
    }

    /// Builds the shards (starting or joining the client's scheduler group when transfer is on).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for an empty name, a name with braces (it would give every shard
    /// the same hash tag), a shard count (or count before) outside `1..=`[`MAX_SHARDS`], or a
    /// count that disagrees with the one recorded in Redis ([`shard_count_key`](
    /// crate::names::shard_count_key); with [`previous_shards`](Self::previous_shards), either count
    /// may be recorded); or as [`DelayedQueueBuilder::build`](super::DelayedQueueBuilder::build).
    pub async fn build(self) -> Result<ShardedQueue<C>> {
        let core = self.core;
        if core.name.is_empty() || core.name.contains(['{', '}']) {
            return Err(Error::InvalidConfig(format!(
                "a sharded queue's name must be non-empty and without braces: {:?}",
                core.name
            )));
        }
        count::check_range(self.shards, "a sharded queue's number of shards")?;
        if let Some(previous) = self.previous {
            count::check_range(previous, "the number of shards before (previous_shards)")?;
        }
        count::agree(&core.client, &core.name, self.shards, self.previous).await?;
        let live = self.shards.max(self.previous.unwrap_or(0));
        // One confirmer for every shard: its connection reaches each master, and it waits on
        // the master of each write's shard.
        let mut core = core;
        core.durable = Some(DurableWrites::new(core.client.clone()));
        let mut shards = Vec::with_capacity(live);
        for i in 0..live {
            let name = ShardedQueue::<C>::shard_name(&core.name, i);
            let shard = DelayedQueue::builder_from(core.named(name)).build().await?;
            shards.push(shard);
        }
        // The logical name's own keys hold what belongs to the queue as a whole (its limits):
        // a queue handle with no scheduler, whose target list and entries stay unused.
        let mut logical = core.named(core.name.clone());
        logical.transfer = false;
        let logical = DelayedQueue::builder_from(logical).build().await?;
        Ok(ShardedQueue {
            inner: Arc::new(Inner {
                logical,
                layout: self.shards,
                previous: self.previous.filter(|&p| p != self.shards),
                shards,
                codec: core.codec,
                name: core.name,
            }),
        })
    }
}

/// One logical delayed queue over N Redisson queues (shards), for a queue that outgrows one
/// Redis master: shard `i` is the queue `NAME:{i}`, with its own hash tag, so the shards spread
/// over a Cluster's masters. Each shard is an ordinary [`DelayedQueue`], which Java reaches as
/// `redisson.getDelayedQueue(redisson.getBlockingQueue(NAME + ":{" + i + "}"))`.
///
/// A value goes to shard [`shard_of`]`(encoded bytes, N)`. All shards of one client share its
/// scheduler group (one pub/sub connection). Order across shards is by due time only as far as
/// each shard's transfer is. Cheap to clone.
///
/// # Which of [`DelayedQueue`]'s operations it has
///
/// | operations | act on |
/// |---|---|
/// | [`offer`](Self::offer), [`offer_all`](Self::offer_all), [`offer_with_handle`](Self::offer_with_handle), [`offer_unique`](Self::offer_unique), [`remove`](Self::remove), [`contains`](Self::contains), [`reschedule`](Self::reschedule) | the value's shard (and, while the number of shards changes, its shard in the layout before); the value is encoded once and the shard runs the queue's own code on the bytes |
/// | [`cancel`](Self::cancel), [`reschedule_by_id`](Self::reschedule_by_id) | the shard a [`ShardedHandle`] names |
/// | [`size`](Self::size), [`is_empty`](Self::is_empty), [`read_all`](Self::read_all), [`clear`](Self::clear), [`stats`](Self::stats) | every shard, added up |
/// | [`consumer`](Self::consumer), [`worker`](Self::worker) | every shard's target list, in turn |
/// | [`destroy`](Self::destroy) | every shard's scheduler share |
/// | [`with_durability`](Self::with_durability) | each write confirmed on its shard's master |
/// | [`dedup`](Self::dedup) | the shard of the dedup key |
/// | [`schedules`](Self::schedules) | each schedule in the shard of its id |
/// | [`limits`](Self::limits) | the logical name's keys: a cap and a rate of the whole queue, reserved by its workers before each take |
///
/// It has none of the others, for these reasons:
/// - `peek`, `poll`, `poll_many`, `poll_many_raw`, `poll_last_and_offer_first_to` and
///   `pending` go by offer order, and each shard has its own order list: there is no offer
///   order across shards to follow.
/// - `remove_all`, `retain_all` and `contains_all` answer for a set of values at once, in one
///   atomic call while the set is small; over shards on different masters that would be one
///   call per shard, none atomic with the others. Group the values by
///   [`shard_for`](Self::shard_for) and call each shard's method through
///   [`shards`](Self::shards).
/// - `reliable_consumer`, the dead letters, the quarantine, `check`, `expire`, `clear_expire`,
///   `delete`, `size_in_memory` and `transfer_due` concern one queue's own keys: call them on
///   each shard, through [`shards`](Self::shards) (the [`worker`](Self::worker) does so for
///   reliable delivery).
///
/// # Examples
///
/// ```no_run
/// # async fn ex(client: delayq::fred::clients::Client) -> Result<(), delayq::Error> {
/// use delayq::codec::StringCodec;
/// use delayq::ShardedQueue;
/// use std::time::Duration;
///
/// let queue = ShardedQueue::new(client, "orders", 12, StringCodec).await?;
/// let handle = queue.offer_with_handle("order-42", Duration::from_secs(900)).await?;
/// assert!(queue.contains("order-42").await?);
/// assert!(queue.cancel(&handle).await?);
/// let consumer = queue.consumer();
/// let due: Option<String> = consumer.poll(Duration::from_secs(1)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ShardedQueue<C: Codec> {
    inner: Arc<Inner<C>>,
}

impl<C: Codec> Clone for ShardedQueue<C> {
    fn clone(&self) -> Self {
        ShardedQueue {
            inner: self.inner.clone(),
        }
    }
}

#[derive(Debug)]
struct Inner<C: Codec> {
    name: String,
    /// Shards of the layout new offers go to.
    layout: usize,
    /// Shards of the layout before, while changing it (never equal to `layout`).
    previous: Option<usize>,
    /// `max(layout, previous)` queues: shard `i` at index `i`.
    shards: Vec<DelayedQueue<C>>,
    /// The logical name's queue handle (no scheduler): its keys hold the sharded queue's limits.
    logical: DelayedQueue<C>,
    codec: Arc<C>,
}

impl<C: Codec> ShardedQueue<C> {
    /// Starts building a queue of `shards` shards named after `name`.
    pub fn builder(
        client: Client,
        name: impl Into<String>,
        shards: usize,
        codec: C,
    ) -> ShardedQueueBuilder<C> {
        ShardedQueueBuilder {
            core: BuildCore::new(client, name.into(), Arc::new(codec)),
            shards,
            previous: None,
        }
    }

    /// A queue of `shards` shards with the defaults (as [`DelayedQueue::new`]).
    ///
    /// # Errors
    ///
    /// As [`ShardedQueueBuilder::build`].
    pub async fn new(
        client: Client,
        name: impl Into<String>,
        shards: usize,
        codec: C,
    ) -> Result<Self> {
        Self::builder(client, name, shards, codec).build().await
    }

    /// The Redisson queue name of shard `shard` of `name`: `NAME:{SHARD}`.
    ///
    /// ```
    /// # use delayq::{codec::StringCodec, QueueKeys, ShardedQueue};
    /// let shard = ShardedQueue::<StringCodec>::shard_name("orders", 3);
    /// assert_eq!(shard, "orders:{3}");
    /// assert_eq!(QueueKeys::new(shard).timeout(), "redisson_delay_queue_timeout:orders:{3}");
    /// ```
    pub fn shard_name(name: &str, shard: usize) -> String {
        crate::keys::shard_name(name, shard)
    }

    /// The logical queue's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The number of shards new offers are spread over.
    pub fn shard_count(&self) -> usize {
        self.inner.layout
    }

    /// Every shard this handle serves, shard `i` at index `i`: the layout's, and while the
    /// number of shards changes, those of the layout before.
    pub fn shards(&self) -> &[DelayedQueue<C>] {
        &self.inner.shards
    }

    /// The codec values go through.
    pub fn codec(&self) -> &C {
        &self.inner.codec
    }

    /// The handle of the logical name `NAME` (no scheduler, no entries): its keys
    /// (`delayq_limits:{NAME}` and the other limit keys) hold what belongs to the queue as a
    /// whole.
    pub(crate) fn logical(&self) -> &DelayedQueue<C> {
        &self.inner.logical
    }

    /// The number of pending entries over all shards.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn size(&self) -> Result<u64> {
        let sizes = try_join_all(self.inner.shards.iter().map(DelayedQueue::size)).await?;
        Ok(sizes.into_iter().sum())
    }

    /// True when nothing is pending in any shard.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.size().await? == 0)
    }

    /// Every pending value, shard after shard (each in offer order).
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::read_all`].
    pub async fn read_all(&self) -> Result<Vec<C::Value>> {
        let all = try_join_all(self.inner.shards.iter().map(DelayedQueue::read_all)).await?;
        Ok(all.into_iter().flatten().collect())
    }

    /// Deletes every pending entry of every shard; true if anything was deleted.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn clear(&self) -> Result<bool> {
        let cleared = try_join_all(self.inner.shards.iter().map(DelayedQueue::clear)).await?;
        Ok(cleared.into_iter().any(|c| c))
    }

    /// Every shard's counters, shard `i` at index `i`.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn shard_stats(&self) -> Result<Vec<QueueStats>> {
        try_join_all(
            self.inner
                .shards
                .iter()
                .map(|shard| shard.inspect().stats()),
        )
        .await
    }

    /// The counters of all shards added up (`next_due_ms`: the earliest).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn stats(&self) -> Result<QueueStats> {
        let all = self.shard_stats().await?;
        Ok(all.iter().fold(
            QueueStats {
                pending: 0,
                scheduled: 0,
                ready: 0,
                quarantined: 0,
                next_due_ms: None,
            },
            |sum, s| QueueStats {
                pending: sum.pending + s.pending,
                scheduled: sum.scheduled + s.scheduled,
                ready: sum.ready + s.ready,
                quarantined: sum.quarantined + s.quarantined,
                next_due_ms: match (sum.next_due_ms, s.next_due_ms) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
            },
        ))
    }

    /// Pending entries not in the shard the current layout gives their value: those offered
    /// under the layout before. Reads every shard's pending entries (an operator's check
    /// while changing the number of shards, not for a hot path).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn misplaced(&self) -> Result<u64> {
        let mut count = 0;
        for (i, shard) in self.inner.shards.iter().enumerate() {
            let pending = shard.inspect().pending(0).await?;
            count += pending
                .iter()
                .filter(|p| shard_of(&p.raw, self.inner.layout) != i)
                .count() as u64;
        }
        Ok(count)
    }

    /// True when the layout before has drained: no entry is pending outside its value's shard
    /// ([`misplaced`](Self::misplaced)), no schedule lives outside its id's shard (see
    /// [`schedules`](Self::schedules)) and the target lists of shards beyond the layout are
    /// empty. Then the new count is recorded in Redis: from now on handles are built with it
    /// and without [`previous_shards`](ShardedQueueBuilder::previous_shards), and handles with
    /// only the old count are refused.
    ///
    /// # Errors
    ///
    /// A Redis error, or [`Error::InvalidConfig`] when the recorded count is neither of this
    /// handle's.
    pub async fn drained(&self) -> Result<bool> {
        if self.misplaced().await? > 0 || self.schedule_store().misplaced().await? > 0 {
            return Ok(false);
        }
        for shard in &self.inner.shards[self.inner.layout..] {
            if shard.inspect().stats().await?.ready > 0 {
                return Ok(false);
            }
        }
        if let Some(previous) = self.inner.previous {
            let client = self.inner.shards[0].client();
            count::record_layout(client, &self.inner.name, self.inner.layout, previous).await?;
        }
        Ok(true)
    }

    /// Adds every shard to `group`, for a process that only transfers (shards built with
    /// [`transfer(false)`](ShardedQueueBuilder::transfer)): one pub/sub connection and one timer
    /// for all of them.
    ///
    /// # Errors
    ///
    /// As [`SchedulerGroup::add_with`].
    pub async fn add_to(&self, group: &SchedulerGroup, config: TransferConfig) -> Result<()> {
        for shard in &self.inner.shards {
            group
                .add_with(shard.name(), shard.options(), config)
                .await?;
        }
        Ok(())
    }

    /// A consumer of every shard's target list, at most once (see [`ShardedConsumer`]).
    pub fn consumer(&self) -> ShardedConsumer<C> {
        ShardedConsumer {
            queue: self.clone(),
            next: AtomicUsize::new(0),
        }
    }

    /// Drops this handle's share of the shards' schedulers; see [`DelayedQueue::destroy`].
    ///
    /// # Errors
    ///
    /// None today.
    pub async fn destroy(&self) -> Result<()> {
        for shard in &self.inner.shards {
            shard.destroy().await?;
        }
        Ok(())
    }
}
