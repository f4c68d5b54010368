//! [`ShardedQueue`]: one logical queue spread over N ordinary Redisson queues (its shards), so
//! that it can grow across the masters of a Redis Cluster.
//!
//! Shard `i` of the queue `NAME` is the Redisson queue `NAME:{i}`. Since that name holds braces,
//! Redisson's `prefixName` does not wrap it again: its keys are `NAME:{i}`,
//! `redisson_delay_queue_timeout:NAME:{i}`, `redisson_delay_queue:NAME:{i}` and so on, all
//! hashed on the tag `i`, so every key of a shard is in one slot and the shards spread over the
//! masters. A value's shard is the JDK's `CRC32` of its encoded bytes modulo N ([`shard_of`]).

mod consumer;
mod hash;

pub use consumer::ShardedConsumer;
pub use hash::{shard_of, ParseShardedHandleError, ShardedHandle};

use super::DelayedQueue;
use crate::codec::{encode_value, Codec};
use crate::options::QueueOptions;
use crate::redis::ops::stats::QueueStats;
use crate::scheduler::{GroupConfig, SchedulerGroup, TransferConfig};
use crate::{Error, Result};
use fred::clients::Client;
use futures::future::try_join_all;
use std::borrow::Borrow;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// Builds a [`ShardedQueue`]; made by [`ShardedQueue::builder`].
#[derive(Debug)]
#[must_use]
pub struct ShardedQueueBuilder<C: Codec> {
    client: Client,
    name: String,
    shards: usize,
    previous: Option<usize>,
    codec: Arc<C>,
    options: QueueOptions,
    transfer: bool,
    transfer_config: TransferConfig,
    group_config: Option<GroupConfig>,
}

impl<C: Codec> ShardedQueueBuilder<C> {
    /// The entry format and clock of every shard (see [`QueueOptions`]).
    pub fn options(mut self, options: QueueOptions) -> Self {
        self.options = options;
        self
    }

    /// Whether the shards are transferred by this process: every shard joins the client's
    /// shared [`SchedulerGroup`] (one pub/sub connection for all of them). Default: true.
    pub fn transfer(mut self, enabled: bool) -> Self {
        self.transfer = enabled;
        self
    }

    /// Every shard's transfer settings (see
    /// [`DelayedQueueBuilder::transfer_config`](super::DelayedQueueBuilder::transfer_config)).
    pub fn transfer_config(mut self, config: TransferConfig) -> Self {
        self.transfer_config = config;
        self
    }

    /// The client's scheduler group's settings, if this queue starts it (see
    /// [`DelayedQueueBuilder::group_config`](super::DelayedQueueBuilder::group_config)).
    pub fn group_config(mut self, config: GroupConfig) -> Self {
        self.group_config = Some(config);
        self
    }

    /// While changing the number of shards: the layout had `shards` shards before. New offers
    /// go to the new layout; lookups by value ([`remove`](ShardedQueue::remove),
    /// [`contains`](ShardedQueue::contains), [`reschedule`](ShardedQueue::reschedule),
    /// [`offer_unique`](ShardedQueue::offer_unique)) also look in a value's old shard; the
    /// queue's schedulers, consumers and workers cover the shards of both layouts until
    /// [`drained`](ShardedQueue::drained) says the old one is empty (see "Changing the number
    /// of shards" in the README).
    pub fn previous_shards(mut self, shards: usize) -> Self {
        self.previous = Some(shards);
        self
    }

    /// Builds the shards (starting or joining the client's scheduler group when transfer is on).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for an empty name, a name with braces (it would give every shard
    /// the same hash tag), no shards; or as [`DelayedQueueBuilder::build`](
    /// super::DelayedQueueBuilder::build).
    pub async fn build(self) -> Result<ShardedQueue<C>> {
        if self.name.is_empty() || self.name.contains(['{', '}']) {
            return Err(Error::InvalidConfig(format!(
                "a sharded queue's name must be non-empty and without braces: {:?}",
                self.name
            )));
        }
        if self.shards == 0 || self.previous == Some(0) {
            return Err(Error::InvalidConfig(
                "a sharded queue needs at least one shard".into(),
            ));
        }
        let live = self.shards.max(self.previous.unwrap_or(0));
        let mut shards = Vec::with_capacity(live);
        for i in 0..live {
            let name = ShardedQueue::<C>::shard_name(&self.name, i);
            let mut shard =
                DelayedQueue::builder_shared(self.client.clone(), name, self.codec.clone())
                    .options(self.options)
                    .transfer(self.transfer)
                    .transfer_config(self.transfer_config);
            shard.group_config = self.group_config;
            let shard = shard.build().await?;
            shards.push(shard);
        }
        Ok(ShardedQueue {
            inner: Arc::new(Inner {
                name: self.name,
                layout: self.shards,
                previous: self.previous.filter(|&p| p != self.shards),
                shards,
                codec: self.codec,
            }),
        })
    }
}

/// One logical delayed queue over N Redisson queues (shards), for a queue that outgrows one
/// Redis master: shard `i` is the queue `NAME:{i}`, with its own hash tag, so the shards spread
/// over a Cluster's masters. Each shard is an ordinary [`DelayedQueue`], which Java reaches as
/// `redisson.getDelayedQueue(redisson.getBlockingQueue(NAME + ":{" + i + "}"))`.
///
/// A value goes to shard [`shard_of`]`(encoded bytes, N)`, so operations by value (`remove`,
/// `contains`, `reschedule`, `offer_unique`) touch one shard; a [`ShardedHandle`] carries its
/// shard; `size`, `read_all`, `clear` and `stats` visit every shard. All shards of one client
/// share its scheduler group (one pub/sub connection); [`worker`](Self::worker) serves them
/// all, in turn. Order across shards is by due time only as far as each shard's transfer is.
/// Cheap to clone.
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
            client,
            name: name.into(),
            shards,
            previous: None,
            codec: Arc::new(codec),
            options: QueueOptions::default(),
            transfer: true,
            transfer_config: TransferConfig::default(),
            group_config: None,
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
        format!("{name}:{{{shard}}}")
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

    fn encode(&self, value: &C::Borrowed) -> Result<Vec<u8>> {
        encode_value(&*self.inner.codec, value)
    }

    fn shard(&self, index: usize) -> Result<&DelayedQueue<C>> {
        self.inner.shards.get(index).ok_or_else(|| {
            Error::InvalidConfig(format!(
                "queue {} has no shard {index} (it has {})",
                self.name(),
                self.inner.shards.len()
            ))
        })
    }

    /// The shard `value` goes to (the current layout's).
    ///
    /// # Errors
    ///
    /// [`Error::Encode`].
    pub fn shard_for(&self, value: &C::Borrowed) -> Result<usize> {
        Ok(shard_of(&self.encode(value)?, self.inner.layout))
    }

    /// The shards to look for `value` in: its shard, then its shard in the layout before when
    /// that is another one.
    fn lookup_shards(&self, value: &C::Borrowed) -> Result<Vec<&DelayedQueue<C>>> {
        let encoded = self.encode(value)?;
        let mut shards = vec![&self.inner.shards[shard_of(&encoded, self.inner.layout)]];
        if let Some(previous) = self.inner.previous {
            let old = &self.inner.shards[shard_of(&encoded, previous)];
            if old.name() != shards[0].name() {
                shards.push(old);
            }
        }
        Ok(shards)
    }

    /// Offers `value`, due after `delay`, to its shard.
    ///
    /// Java: `RDelayedQueue#offer(e, delay, unit)` on the shard of the value.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer`].
    pub async fn offer(&self, value: &C::Borrowed, delay: Duration) -> Result<()> {
        self.shard(self.shard_for(value)?)?
            .offer(value, delay)
            .await
    }

    /// Offers several values, grouped by shard, the shards' calls at once.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer_all`]; shards whose call went through keep their values.
    pub async fn offer_all(&self, items: &[(C::Value, Duration)]) -> Result<()>
    where
        C::Value: Clone,
    {
        let mut groups: Vec<Vec<(C::Value, Duration)>> = vec![Vec::new(); self.inner.layout];
        for (value, delay) in items {
            groups[self.shard_for(value.borrow())?].push((value.clone(), *delay));
        }
        try_join_all(
            groups
                .iter()
                .enumerate()
                .filter(|(_, g)| !g.is_empty())
                .map(|(i, group)| self.inner.shards[i].offer_all(group)),
        )
        .await
        .map(drop)
    }

    /// Offers `value` to its shard and returns the entry's handle with the shard.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer_with_handle`].
    pub async fn offer_with_handle(
        &self,
        value: &C::Borrowed,
        delay: Duration,
    ) -> Result<ShardedHandle> {
        let shard = self.shard_for(value)?;
        let handle = self.shard(shard)?.offer_with_handle(value, delay).await?;
        Ok(ShardedHandle::new(shard, handle))
    }

    /// Removes the pending entry of `handle` from its shard; see [`DelayedQueue::cancel`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a shard this queue does not have, or a Redis error.
    pub async fn cancel(&self, handle: &ShardedHandle) -> Result<bool> {
        self.shard(handle.shard())?.cancel(handle.handle()).await
    }

    /// Gives the entry of `handle` the due time `delay` from now; see
    /// [`DelayedQueue::reschedule_by_id`].
    ///
    /// # Errors
    ///
    /// As [`cancel`](Self::cancel), or [`Error::InvalidDelay`].
    pub async fn reschedule_by_id(&self, handle: &ShardedHandle, delay: Duration) -> Result<bool> {
        let shard = self.shard(handle.shard())?;
        shard.reschedule_by_id(handle.handle(), delay).await
    }

    /// Removes the first pending entry equal to `value` from its shard.
    ///
    /// Java: `RDelayedQueue#remove(o)` on the value's shard.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::remove`].
    pub async fn remove(&self, value: &C::Borrowed) -> Result<bool> {
        for shard in self.lookup_shards(value)? {
            if shard.remove(value).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether a value equal to `value` is pending, in its shard.
    ///
    /// Java: `RDelayedQueue#contains(o)` on the value's shard.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::contains`].
    pub async fn contains(&self, value: &C::Borrowed) -> Result<bool> {
        for shard in self.lookup_shards(value)? {
            if shard.contains(value).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Gives every pending entry equal to `value` the due time `delay` from now; see
    /// [`DelayedQueue::reschedule`].
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::reschedule`].
    pub async fn reschedule(&self, value: &C::Borrowed, delay: Duration) -> Result<bool> {
        let mut any = false;
        for shard in self.lookup_shards(value)? {
            any |= shard.reschedule(value, delay).await?;
        }
        Ok(any)
    }

    /// Offers `value` unless an equal value is pending (then that entry gets the new due
    /// time); see [`DelayedQueue::offer_unique`]. While the number of shards changes, an equal
    /// value pending in its old shard is rescheduled there instead.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueue::offer_unique`].
    pub async fn offer_unique(&self, value: &C::Borrowed, delay: Duration) -> Result<bool> {
        let shards = self.lookup_shards(value)?;
        if let Some(old) = shards.get(1) {
            if old.reschedule(value, delay).await? {
                return Ok(true);
            }
        }
        shards[0].offer_unique(value, delay).await
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
        try_join_all(self.inner.shards.iter().map(DelayedQueue::stats)).await
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
            let pending = shard.pending(0).await?;
            count += pending
                .iter()
                .filter(|p| shard_of(&p.raw, self.inner.layout) != i)
                .count() as u64;
        }
        Ok(count)
    }

    /// True when the layout before has drained: no entry is pending outside its value's shard
    /// ([`misplaced`](Self::misplaced)) and the target lists of shards beyond the layout are
    /// empty. Then the queue can be built without
    /// [`previous_shards`](ShardedQueueBuilder::previous_shards).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn drained(&self) -> Result<bool> {
        if self.misplaced().await? > 0 {
            return Ok(false);
        }
        for shard in &self.inner.shards[self.inner.layout..] {
            if shard.stats().await?.ready > 0 {
                return Ok(false);
            }
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
