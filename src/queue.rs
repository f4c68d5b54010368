//! The producer side: `DelayedQueue`, Redisson's `RDelayedQueue`.

use crate::codec::{decode_value, encode_value, Codec};
use crate::consumer::Consumer;
use crate::entry::{unpack, EntryFormat};
use crate::keys::QueueKeys;
use crate::reliable::Clock;
use crate::scheduler::{
    now_ms, parse_score, transfer_once, Scheduler, SchedulerConfig, SchedulerHandle,
    TransferOutcome,
};
use crate::scripts;
use crate::{Error, Result};
use bytes::Bytes;
use fred::clients::Client;
use fred::interfaces::{ClientLike, KeysInterface, ListInterface, MemoryInterface};
use fred::prelude::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

/// Largest due time (epoch ms) a zset score holds exactly: 2^53 - 1.
const MAX_DUE_MS: i64 = (1 << 53) - 1;

/// Builds a [`DelayedQueue`].
#[derive(Debug)]
#[must_use]
pub struct DelayedQueueBuilder<C: Codec> {
    client: Client,
    name: String,
    codec: C,
    format: EntryFormat,
    transfer: bool,
    scheduler: SchedulerConfig,
    clock: Clock,
}

impl<C: Codec> DelayedQueueBuilder<C> {
    /// The entry packing to write: [`EntryFormat::Current`] (default) for Redisson 3.21.1 and
    /// later, [`EntryFormat::Legacy`] when older Java peers share the queue.
    pub fn entry_format(mut self, format: EntryFormat) -> Self {
        self.format = format;
        self
    }

    /// Whether this handle runs (or shares) the transfer scheduler of its client and queue, as
    /// every Java `RDelayedQueue` does. Default: true.
    pub fn transfer(mut self, enabled: bool) -> Self {
        self.transfer = enabled;
        self
    }

    /// Settings of the scheduler, used when this handle is the one that starts it.
    pub fn scheduler_config(mut self, config: SchedulerConfig) -> Self {
        self.scheduler = config;
        self
    }

    /// Whose clock stamps due times and decides what is due: [`Clock::Client`] (default, as
    /// Redisson) or [`Clock::Server`] (the Redis server's `TIME`; see [`Clock`] for the
    /// trade-off with Java peers). Also used by the scheduler this handle starts.
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Builds the queue, starting or joining the scheduler when transfer is on.
    ///
    /// # Errors
    ///
    /// An empty name, or the scheduler could not subscribe.
    pub async fn build(self) -> Result<DelayedQueue<C>> {
        if self.name.is_empty() {
            return Err(Error::InvalidConfig("queue name is empty".into()));
        }
        let keys = QueueKeys::new(self.name);
        let lease = if self.transfer {
            let config = self
                .scheduler
                .with_entry_format(self.format)
                .with_clock(self.clock);
            Some(SchedulerLease::acquire(&self.client, &keys, config).await?)
        } else {
            None
        };
        Ok(DelayedQueue {
            inner: Arc::new(Inner {
                client: self.client,
                keys,
                codec: Arc::new(self.codec),
                format: self.format,
                clock: self.clock,
                lease: Mutex::new(lease),
            }),
        })
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
/// queue.offer(&"order-42".to_string(), Duration::from_secs(900)).await?;
/// let consumer = queue.consumer().await?;
/// let due = consumer.take().await?; // in 15 minutes
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DelayedQueue<C: Codec> {
    inner: Arc<Inner<C>>,
}

impl<C: Codec> Clone for DelayedQueue<C> {
    fn clone(&self) -> Self {
        DelayedQueue {
            inner: self.inner.clone(),
        }
    }
}

#[derive(Debug)]
struct Inner<C> {
    client: Client,
    keys: QueueKeys,
    codec: Arc<C>,
    format: EntryFormat,
    clock: Clock,
    lease: Mutex<Option<SchedulerLease>>,
}

/// A pending value with its due time, in offer order.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Pending<V> {
    /// The decoded value, or the decode error (with its raw bytes).
    pub value: std::result::Result<V, Arc<Error>>,
    /// The encoded value bytes.
    pub raw: Bytes,
    /// Due time in epoch ms, or `None` for an order-list entry with no zset member.
    pub due_ms: Option<i64>,
}

/// A snapshot of a queue's counters (one atomic script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueStats {
    /// Entries in the order list (Java `size()`).
    pub pending: u64,
    /// Members of the timeout zset (normally equal to `pending`).
    pub scheduled: u64,
    /// Values on the target list, ready to take.
    pub ready: u64,
    /// Malformed entries in delayq's quarantine list.
    pub quarantined: u64,
    /// Due time of the earliest pending entry.
    pub next_due_ms: Option<i64>,
}

impl<C: Codec> DelayedQueue<C> {
    /// Starts building a queue on `client` for the destination list `name`.
    pub fn builder(client: Client, name: impl Into<String>, codec: C) -> DelayedQueueBuilder<C> {
        DelayedQueueBuilder {
            client,
            name: name.into(),
            codec,
            format: EntryFormat::Current,
            transfer: true,
            scheduler: SchedulerConfig::default(),
            clock: Clock::Client,
        }
    }

    /// A queue with the defaults: current entry format, transfer scheduler on.
    ///
    /// # Errors
    ///
    /// As [`DelayedQueueBuilder::build`].
    pub async fn new(client: Client, name: impl Into<String>, codec: C) -> Result<Self> {
        Self::builder(client, name, codec).build().await
    }

    /// The destination (target list) name.
    pub fn name(&self) -> &str {
        self.inner.keys.target()
    }

    /// The queue's Redis keys.
    pub fn keys(&self) -> &QueueKeys {
        &self.inner.keys
    }

    /// The codec.
    pub fn codec(&self) -> &C {
        &self.inner.codec
    }

    /// The entry packing this queue writes.
    pub fn entry_format(&self) -> EntryFormat {
        self.inner.format
    }

    /// The fred client commands go through.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Whose clock stamps due times (see [`Clock`]).
    pub fn clock(&self) -> Clock {
        self.inner.clock
    }

    /// The codec, shared (for consumers).
    pub(crate) fn shared_codec(&self) -> Arc<C> {
        self.inner.codec.clone()
    }

    fn redis_error(&self, err: fred::error::Error) -> Error {
        Error::from_redis(self.name(), err)
    }

    /// Runs one of the queue's scripts on `keys`, mapping errors to the queue.
    async fn run_script<R: fred::prelude::FromValue>(
        &self,
        script: &'static scripts::LuaScript,
        keys: &[&str],
        args: Vec<Value>,
    ) -> Result<R> {
        script
            .call(&self.inner.client, self.name(), keys, args)
            .await
    }

    fn decode(&self, raw: Bytes) -> Result<C::Value> {
        decode_value(&*self.inner.codec, raw)
    }

    fn prefer_flag(&self) -> &'static str {
        self.inner.format.lua_flag()
    }

    /// Offers `value`, due after `delay`.
    ///
    /// Java: `RDelayedQueue#offer(e, delay, unit)`. The due time is this host's clock plus
    /// `delay` (truncated to milliseconds), or the Redis server's with [`Clock::Server`]. When the value becomes the earliest pending one, its
    /// due time is published on the channel so every scheduler (Rust or Java) re-arms.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] when the due time overflows (checked before any Redis call),
    /// [`Error::Encode`], or a Redis error (`WRONGTYPE` as [`Error::WrongType`]).
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name(), delay_ms = delay.as_millis() as u64))]
    pub async fn offer(&self, value: &C::Value, delay: Duration) -> Result<()> {
        self.offer_entries(std::iter::once((value, delay))).await
    }

    /// Offers several values in one script call (one round trip, atomic).
    ///
    /// # Errors
    ///
    /// As [`offer`](Self::offer); nothing is written when any delay or value is refused.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name(), count = items.len()))]
    pub async fn offer_all(&self, items: &[(C::Value, Duration)]) -> Result<()> {
        self.offer_entries(items.iter().map(|(v, d)| (v, *d))).await
    }

    async fn offer_entries<'a>(
        &self,
        items: impl Iterator<Item = (&'a C::Value, Duration)>,
    ) -> Result<()>
    where
        C::Value: 'a,
    {
        let now = now_ms();
        let server_clock = self.inner.clock == Clock::Server;
        let flag = match (self.inner.format, server_clock) {
            (_, false) => self.prefer_flag(),
            (EntryFormat::Legacy, true) => "1s",
            (_, true) => "0s",
        };
        let mut args: Vec<Value> = vec![flag.into()];
        for (value, delay) in items {
            let due = due_time(now, delay)?;
            // With the server's clock the script adds the delay to TIME; the check above still
            // refuses delays that overflow a score.
            let due = if server_clock { due - now } else { due };
            let encoded = encode_value(&*self.inner.codec, value)?;
            args.push(due.into());
            args.push(match self.inner.format {
                EntryFormat::Current => {
                    Value::Bytes(Bytes::copy_from_slice(&rand::random::<[u8; 8]>()))
                }
                // Redisson before 3.21.1 sent a random long that Lua turned into a double.
                EntryFormat::Legacy => rand::random::<i64>().to_string().into(),
            });
            args.push(Value::Bytes(encoded.into()));
        }
        if args.len() == 1 {
            return Ok(());
        }
        let keys = &self.inner.keys;
        let _: Value = self
            .run_script(
                &scripts::OFFER,
                &[keys.target(), keys.timeout(), keys.order(), keys.channel()],
                args,
            )
            .await?;
        Ok(())
    }

    async fn remove_script(&self, mode: &str, values: &[C::Value]) -> Result<u64> {
        let mut args: Vec<Value> = vec![mode.into(), self.prefer_flag().into()];
        for value in values {
            args.push(Value::Bytes(
                encode_value(&*self.inner.codec, value)?.into(),
            ));
        }
        let keys = &self.inner.keys;
        self.run_script(
            &scripts::REMOVE,
            &[keys.timeout(), keys.order(), keys.index()],
            args,
        )
        .await
    }

    /// Removes the first pending entry equal to `value` (comparing encoded bytes).
    ///
    /// Java: `RDelayedQueue#remove(o)`. Finds values offered by Java when the codec's bytes are
    /// canonical.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name()))]
    pub async fn remove(&self, value: &C::Value) -> Result<bool> {
        Ok(self
            .remove_script("first", std::slice::from_ref(value))
            .await?
            > 0)
    }

    /// Removes every pending entry equal to one of `values`; true if any was removed.
    ///
    /// Java: `RDelayedQueue#removeAll(c)`.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name()))]
    pub async fn remove_all(&self, values: &[C::Value]) -> Result<bool> {
        if values.is_empty() {
            return Ok(false);
        }
        Ok(self.remove_script("all", values).await? > 0)
    }

    /// Removes every pending entry not equal to one of `values`; true if any was removed.
    ///
    /// Java: `RDelayedQueue#retainAll(c)`. Unlike Java, the removed entries also leave the
    /// timeout zset.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name()))]
    pub async fn retain_all(&self, values: &[C::Value]) -> Result<bool> {
        Ok(self.remove_script("retain", values).await? > 0)
    }

    async fn count_contained(&self, values: &[C::Value]) -> Result<(u64, u64)> {
        let mut encoded: Vec<Vec<u8>> = values
            .iter()
            .map(|v| encode_value(&*self.inner.codec, v))
            .collect::<Result<_>>()?;
        encoded.sort();
        encoded.dedup();
        let distinct = encoded.len() as u64;
        let mut args: Vec<Value> = vec![self.prefer_flag().into()];
        args.extend(encoded.into_iter().map(|e| Value::Bytes(e.into())));
        let found: u64 = self
            .run_script(&scripts::CONTAINS, &[self.inner.keys.order()], args)
            .await?;
        Ok((found, distinct))
    }

    /// True if a pending entry equals `value`.
    ///
    /// Java: `RDelayedQueue#contains(o)`.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name()))]
    pub async fn contains(&self, value: &C::Value) -> Result<bool> {
        Ok(self.count_contained(std::slice::from_ref(value)).await?.0 == 1)
    }

    /// True if every one of `values` is pending (true for none).
    ///
    /// Java: `RDelayedQueue#containsAll(c)`.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.name()))]
    pub async fn contains_all(&self, values: &[C::Value]) -> Result<bool> {
        if values.is_empty() {
            return Ok(true);
        }
        let (found, distinct) = self.count_contained(values).await?;
        Ok(found == distinct)
    }

    /// The number of pending entries (the order list's length).
    ///
    /// Java: `RDelayedQueue#size()`.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn size(&self) -> Result<u64> {
        self.inner
            .client
            .llen(self.inner.keys.order())
            .await
            .map_err(|e| self.redis_error(e))
    }

    /// True when nothing is pending.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.size().await? == 0)
    }

    fn value_of_entry(&self, raw: Bytes) -> Result<C::Value> {
        let value = match unpack(&raw, self.inner.format) {
            Ok(entry) => raw.slice_ref(entry.value),
            Err(err) => {
                return Err(Error::MalformedEntry {
                    key: self.inner.keys.order().to_owned(),
                    entry: raw,
                    reason: entry_reason(err),
                })
            }
        };
        self.decode(value)
    }

    /// The first pending value in offer order (not due order), left in place.
    ///
    /// Java: `RDelayedQueue#peek()`.
    ///
    /// # Errors
    ///
    /// [`Error::MalformedEntry`], [`Error::Decode`] or a Redis error.
    pub async fn peek(&self) -> Result<Option<C::Value>> {
        let raw: Option<Bytes> = self
            .inner
            .client
            .lindex(self.inner.keys.order(), 0)
            .await
            .map_err(|e| self.redis_error(e))?;
        raw.map(|raw| self.value_of_entry(raw)).transpose()
    }

    /// Every pending value in offer order.
    ///
    /// Java: `RDelayedQueue#readAll()`.
    ///
    /// # Errors
    ///
    /// [`Error::MalformedEntry`], [`Error::Decode`] or a Redis error.
    pub async fn read_all(&self) -> Result<Vec<C::Value>> {
        let raws: Vec<Bytes> = self
            .inner
            .client
            .lrange(self.inner.keys.order(), 0, -1)
            .await
            .map_err(|e| self.redis_error(e))?;
        raws.into_iter()
            .map(|raw| self.value_of_entry(raw))
            .collect()
    }

    /// Takes the first pending value in offer order, whatever its due time.
    ///
    /// Java: `RDelayedQueue#poll()`. A malformed head entry is quarantined and the next taken.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] (the raw value inside: it has left Redis) or a Redis error.
    pub async fn poll(&self) -> Result<Option<C::Value>> {
        let mut values = self.poll_raw(1).await?;
        values.pop().map(|raw| self.decode(raw)).transpose()
    }

    /// Takes up to `limit` pending values in offer order, whatever their due times.
    ///
    /// Java: `RDelayedQueue#poll(limit)`.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] for the first value that does not decode (all values have left Redis;
    /// use [`poll_many_raw`](Self::poll_many_raw) to keep undecodable ones), or a Redis error.
    pub async fn poll_many(&self, limit: usize) -> Result<Vec<C::Value>> {
        self.poll_raw(limit)
            .await?
            .into_iter()
            .map(|raw| self.decode(raw))
            .collect()
    }

    /// Like [`poll_many`](Self::poll_many), with each value's decode result apart.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn poll_many_raw(&self, limit: usize) -> Result<Vec<Result<C::Value>>> {
        Ok(self
            .poll_raw(limit)
            .await?
            .into_iter()
            .map(|raw| self.decode(raw))
            .collect())
    }

    async fn poll_raw(&self, limit: usize) -> Result<Vec<Bytes>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let keys = &self.inner.keys;
        let reply: Value = self
            .run_script(
                &scripts::POLL,
                &[
                    keys.timeout(),
                    keys.order(),
                    keys.quarantine(),
                    keys.index(),
                ],
                vec![(limit as i64).into(), self.prefer_flag().into()],
            )
            .await?;
        bytes_list(reply, "poll.lua")
    }

    /// Takes the last pending value (offer order) and pushes it onto the head of the list
    /// `destination`, returning it.
    ///
    /// Java: `RDelayedQueue#pollLastAndOfferFirstTo(queueName)`. In a cluster, `destination`
    /// must share the queue's hash slot.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] (the value was moved anyway) or a Redis error.
    pub async fn poll_last_and_offer_first_to(
        &self,
        destination: &str,
    ) -> Result<Option<C::Value>> {
        let keys = &self.inner.keys;
        let raw: Option<Bytes> = self
            .run_script(
                &scripts::POLL_LAST_OFFER_FIRST,
                &[
                    keys.timeout(),
                    keys.order(),
                    destination,
                    keys.quarantine(),
                    keys.index(),
                ],
                vec![self.prefer_flag().into()],
            )
            .await?;
        raw.map(|raw| self.decode(raw)).transpose()
    }

    /// Deletes every pending entry (the order list and the timeout zset; the target list
    /// stays). True if anything was deleted.
    ///
    /// Java: `RDelayedQueue#clear()` / `delete()`.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn clear(&self) -> Result<bool> {
        let keys = &self.inner.keys;
        let deleted: u64 = self
            .inner
            .client
            .del(vec![keys.timeout(), keys.order(), keys.index()])
            .await
            .map_err(|e| self.redis_error(e))?;
        Ok(deleted > 0)
    }

    /// Sets a time to live on the pending entries' keys. True if any key exists.
    ///
    /// Java: `RDelayedQueue#expire(duration)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero TTL, or a Redis error.
    pub async fn expire(&self, ttl: Duration) -> Result<bool> {
        let ms = i64::try_from(ttl.as_millis())
            .ok()
            .filter(|ms| *ms > 0)
            .ok_or_else(|| {
                Error::InvalidConfig(format!("expire needs a positive TTL, not {ttl:?}"))
            })?;
        self.expire_script(ms.into()).await
    }

    /// Removes the time to live. True if one was removed.
    ///
    /// Java: `RDelayedQueue#clearExpire()`.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn clear_expire(&self) -> Result<bool> {
        self.expire_script("persist".into()).await
    }

    async fn expire_script(&self, arg: Value) -> Result<bool> {
        let keys = &self.inner.keys;
        let changed: u64 = self
            .run_script(&scripts::EXPIRE, &[keys.timeout(), keys.order()], vec![arg])
            .await?;
        Ok(changed > 0)
    }

    /// Bytes Redis uses for the pending entries' keys (`MEMORY USAGE` of both).
    ///
    /// Java: `RDelayedQueue#sizeInMemory()`.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn size_in_memory(&self) -> Result<u64> {
        let mut total = 0;
        for key in [self.inner.keys.timeout(), self.inner.keys.order()] {
            let used: Option<u64> = self
                .inner
                .client
                .memory_usage(key, Some(0))
                .await
                .map_err(|e| self.redis_error(e))?;
            total += used.unwrap_or(0);
        }
        Ok(total)
    }

    /// The first `limit` pending values in offer order with their due times (all with
    /// `limit == 0`). Values that do not unpack or decode are reported, not skipped.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn pending(&self, limit: usize) -> Result<Vec<Pending<C::Value>>> {
        let keys = &self.inner.keys;
        let reply: Value = self
            .run_script(
                &scripts::PENDING,
                &[keys.timeout(), keys.order()],
                vec![(limit as i64).into()],
            )
            .await?;
        let Value::Array(items) = reply else {
            return Err(Error::UnexpectedReply {
                context: "pending.lua",
                detail: format!("{reply:?}"),
            });
        };
        let mut out = Vec::with_capacity(items.len() / 2);
        let mut items = items.into_iter();
        while let (Some(entry), Some(score)) = (items.next(), items.next()) {
            let raw_entry = entry
                .as_bytes()
                .map(Bytes::copy_from_slice)
                .unwrap_or_default();
            let due_ms = parse_score(&score).map_err(|detail| Error::UnexpectedReply {
                context: "pending.lua",
                detail,
            })?;
            let (raw, value) = match unpack(&raw_entry, self.inner.format) {
                Ok(entry) => {
                    let raw = raw_entry.slice_ref(entry.value);
                    (raw.clone(), self.decode(raw).map_err(Arc::new))
                }
                Err(err) => (
                    raw_entry.clone(),
                    Err(Arc::new(Error::MalformedEntry {
                        key: keys.order().to_owned(),
                        entry: raw_entry,
                        reason: entry_reason(err),
                    })),
                ),
            };
            out.push(Pending { value, raw, due_ms });
        }
        Ok(out)
    }

    /// Counters of the queue, read atomically.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn stats(&self) -> Result<QueueStats> {
        let keys = &self.inner.keys;
        let reply: Value = self
            .run_script(
                &scripts::STATS,
                &[
                    keys.target(),
                    keys.timeout(),
                    keys.order(),
                    keys.quarantine(),
                ],
                vec![],
            )
            .await?;
        let bad = |detail: String| Error::UnexpectedReply {
            context: "stats.lua",
            detail,
        };
        let Value::Array(items) = reply else {
            return Err(bad(format!("{reply:?}")));
        };
        let [pending, scheduled, ready, quarantined, head] =
            <[Value; 5]>::try_from(items).map_err(|i| bad(format!("{} items", i.len())))?;
        let count = |v: Value| v.as_u64().ok_or_else(|| bad(format!("{v:?}")));
        Ok(QueueStats {
            pending: count(pending)?,
            scheduled: count(scheduled)?,
            ready: count(ready)?,
            quarantined: count(quarantined)?,
            next_due_ms: parse_score(&head).map_err(bad)?,
        })
    }

    /// Runs one transfer now, as a scheduler would, moving at most `batch_size` due entries.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn transfer_due(&self, batch_size: usize) -> Result<TransferOutcome> {
        let config = SchedulerConfig::default()
            .with_entry_format(self.inner.format)
            .with_batch_size(batch_size.max(1));
        self.transfer_due_with(&config).await
    }

    /// Runs one transfer now with a scheduler's settings (`batch_size`, position index, entry
    /// format, clock); for tools and benchmarks that drive transfers themselves.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn transfer_due_with(&self, config: &SchedulerConfig) -> Result<TransferOutcome> {
        transfer_once(
            &self.inner.client,
            &self.inner.keys,
            now_ms(),
            config.batch_size.max(1),
            config,
        )
        .await
    }

    /// A consumer of the target list on its own connection.
    ///
    /// # Errors
    ///
    /// No connection for the consumer.
    pub async fn consumer(&self) -> Result<Consumer<C>> {
        Consumer::with_shared_codec(
            &self.inner.client,
            self.inner.keys.target(),
            self.inner.codec.clone(),
        )
        .await
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
        let lease = self.inner.lease.lock().ok().and_then(|mut l| l.take());
        if let Some(lease) = lease {
            lease.release().await;
        }
        Ok(())
    }
}

fn entry_reason(err: crate::entry::EntryError) -> &'static str {
    match err {
        crate::entry::EntryError::TooShort => "too short to be an entry",
        crate::entry::EntryError::LengthMismatch => "length fields do not match the entry's size",
    }
}

fn bytes_list(reply: Value, context: &'static str) -> Result<Vec<Bytes>> {
    match reply {
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::Bytes(b) => Ok(b),
                Value::String(s) => Ok(s.into_inner()),
                other => Err(Error::UnexpectedReply {
                    context,
                    detail: format!("{other:?}"),
                }),
            })
            .collect(),
        Value::Null => Ok(Vec::new()),
        other => Err(Error::UnexpectedReply {
            context,
            detail: format!("{other:?}"),
        }),
    }
}

/// Due time for `delay` from `now_ms`, refused when it leaves the exact range of a zset score.
pub(crate) fn due_time(now_ms: i64, delay: Duration) -> Result<i64> {
    i64::try_from(delay.as_millis())
        .ok()
        .and_then(|ms| now_ms.checked_add(ms))
        .filter(|due| *due <= MAX_DUE_MS)
        .ok_or_else(|| {
            Error::InvalidDelay(format!(
                "a delay of {delay:?} puts the due time past {MAX_DUE_MS} ms since the epoch"
            ))
        })
}

/// Shared schedulers: one per (client, queue), kept while any handle holds a lease.
type Registry = Mutex<HashMap<(String, String), Weak<SharedScheduler>>>;
static REGISTRY: LazyLock<Registry> = LazyLock::new(Default::default);

#[derive(Debug)]
struct SharedScheduler {
    handle: Mutex<Option<SchedulerHandle>>,
}

/// One handle's share of a scheduler.
#[derive(Debug)]
struct SchedulerLease(Arc<SharedScheduler>);

impl SchedulerLease {
    async fn acquire(client: &Client, keys: &QueueKeys, config: SchedulerConfig) -> Result<Self> {
        let id = (client.id().to_owned(), keys.target().to_owned());
        if let Some(shared) = lookup(&id) {
            return Ok(SchedulerLease(shared));
        }
        let handle = Scheduler::spawn(client.clone(), keys.target(), config).await?;
        let shared = Arc::new(SharedScheduler {
            handle: Mutex::new(Some(handle)),
        });
        let existing = {
            let mut registry = REGISTRY.lock().map_err(|_| Error::Closed)?;
            match registry.get(&id).and_then(Weak::upgrade) {
                Some(existing) => Some(existing),
                None => {
                    registry.retain(|_, weak| weak.strong_count() > 0);
                    registry.insert(id, Arc::downgrade(&shared));
                    None
                }
            }
        };
        match existing {
            // Another handle started one meanwhile: use it and stop ours.
            Some(existing) => {
                SchedulerLease(shared).release().await;
                Ok(SchedulerLease(existing))
            }
            None => Ok(SchedulerLease(shared)),
        }
    }

    /// Gives the lease back; the last one stops the scheduler and waits for it.
    async fn release(self) {
        if let Ok(shared) = Arc::try_unwrap(self.0) {
            let handle = shared.handle.lock().ok().and_then(|mut h| h.take());
            if let Some(handle) = handle {
                handle.shutdown().await;
            }
        }
    }
}

fn lookup(id: &(String, String)) -> Option<Arc<SharedScheduler>> {
    REGISTRY.lock().ok()?.get(id).and_then(Weak::upgrade)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_are_bounded() {
        assert_eq!(due_time(1_000, Duration::from_millis(1500)).unwrap(), 2_500);
        assert_eq!(due_time(1_000, Duration::from_micros(1999)).unwrap(), 1_001);
        assert!(matches!(
            due_time(1_000, Duration::from_secs(u64::MAX)),
            Err(Error::InvalidDelay(_))
        ));
        assert!(due_time(MAX_DUE_MS - 5, Duration::from_millis(5)).is_ok());
        assert!(due_time(MAX_DUE_MS - 5, Duration::from_millis(6)).is_err());
    }
}
