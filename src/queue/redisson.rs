//! The `RDelayedQueue` operations, each with Redisson's name and meaning.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::entry::unpack;
use crate::redis::ops::remove::RemoveMode;
use crate::redis::ops::{expire, poll, poll_last_offer_first};
use crate::time::Delay;
use crate::{Error, Result};
use bytes::Bytes;
use fred::interfaces::{KeysInterface, ListInterface, SortedSetsInterface};
use std::borrow::Borrow;
use std::time::Duration;

/// **Redisson's operations**: `RDelayedQueue`'s, each with its Java name and meaning.
impl<C: Codec> DelayedQueue<C> {
    /// Offers `value`, due after `delay`.
    ///
    /// Java: `RDelayedQueue#offer(e, delay, unit)`. The due time is this host's clock plus
    /// `delay` (truncated to milliseconds), or the Redis server's with
    /// [`Clock::Server`](crate::Clock::Server). When the value becomes the earliest pending one,
    /// its due time is published on the channel so every scheduler (Rust or Java) re-arms.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidDelay`] when the due time overflows (checked before any Redis call),
    /// [`Error::Encode`], or a Redis error (`WRONGTYPE` as [`Error::WrongType`]).
    pub async fn offer(&self, value: &C::Borrowed, delay: Duration) -> Result<()> {
        let entry = (Delay::checked(delay)?, self.encode(value)?);
        self.offer_encoded(vec![entry]).await
    }

    /// Offers several values: in one script call (one round trip, atomic) up to 1,000 values;
    /// more go in calls of 1,000, so that no one call holds Redis long (a failure part-way leaves
    /// the calls before it done).
    ///
    /// # Errors
    ///
    /// As [`offer`](Self::offer); nothing is written when any delay or value is refused.
    pub async fn offer_all(&self, items: &[(C::Value, Duration)]) -> Result<()> {
        let entries = items
            .iter()
            .map(|(value, delay)| Ok((Delay::checked(*delay)?, self.encode(value.borrow())?)))
            .collect::<Result<Vec<_>>>()?;
        self.offer_encoded(entries).await
    }

    fn encode_all<'a>(
        &self,
        values: impl IntoIterator<Item = &'a C::Borrowed>,
    ) -> Result<Vec<Vec<u8>>>
    where
        C::Borrowed: 'a,
    {
        values.into_iter().map(|v| self.encode(v)).collect()
    }

    /// Removes the first pending entry equal to `value` (comparing encoded bytes).
    ///
    /// Java: `RDelayedQueue#remove(o)`, with the same result. Finds values offered by Java when
    /// the codec's bytes are canonical. Instead of reading the order list, the entry is found in
    /// delayq's value index (`delayq_values:{NAME}`) and leaves the list by a scan from the end
    /// nearer to it. No call holds Redis long whatever the index's state: while the index does
    /// not cover the whole list, each call indexes a share of it (3 ms of Redis time) and the
    /// lookup is sent again until it does, so the caller waits in short steps and what it waited
    /// for stays indexed (the first lookup on a long queue never indexed waits for the whole
    /// build; see `docs/performance.md`). The queue's scheduler brings an index that fell behind
    /// up to date ahead of lookups.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    pub async fn remove(&self, value: &C::Borrowed) -> Result<bool> {
        let value = self.encode(value)?;
        self.remove_encoded(RemoveMode::First, vec![value]).await
    }

    /// Removes every pending entry equal to one of `values`; true if any was removed.
    ///
    /// Java: `RDelayedQueue#removeAll(c)`, through the value index like
    /// [`remove`](Self::remove). Atomic while it fits in one bounded call (up to 1,000 values
    /// whose removals scan up to about 300,000 list elements); more goes in further calls.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    pub async fn remove_all(&self, values: &[C::Value]) -> Result<bool> {
        if values.is_empty() {
            return Ok(false);
        }
        let values = self.encode_all(values.iter().map(Borrow::borrow))?;
        self.remove_encoded(RemoveMode::All, values).await
    }

    /// Removes every pending entry not equal to one of `values`; true if any was removed.
    ///
    /// Java: `RDelayedQueue#retainAll(c)`. Unlike Java, the removed entries also leave the
    /// timeout zset.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    pub async fn retain_all(&self, values: &[C::Value]) -> Result<bool> {
        let values = self.encode_all(values.iter().map(Borrow::borrow))?;
        self.remove_encoded(RemoveMode::Retain, values).await
    }

    /// True if a pending entry equals `value`.
    ///
    /// Java: `RDelayedQueue#contains(o)`, looked up in the value index (see
    /// [`remove`](Self::remove)).
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    pub async fn contains(&self, value: &C::Borrowed) -> Result<bool> {
        let value = self.encode(value)?;
        Ok(self.contains_encoded(vec![value]).await?.0 == 1)
    }

    /// True if every one of `values` is pending (true for none).
    ///
    /// Java: `RDelayedQueue#containsAll(c)`, looked up in the value index, 1,000 values to a
    /// call.
    ///
    /// # Errors
    ///
    /// [`Error::Encode`] or a Redis error.
    pub async fn contains_all(&self, values: &[C::Value]) -> Result<bool> {
        if values.is_empty() {
            return Ok(true);
        }
        let values = self.encode_all(values.iter().map(Borrow::borrow))?;
        let (found, distinct) = self.contains_encoded(values).await?;
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
        let key = self.keys().order();
        self.client()
            .llen(key)
            .await
            .map_err(|e| Error::from_redis("LLEN", key, e))
    }

    /// True when nothing is pending.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.size().await? == 0)
    }

    /// The value of a raw order-list entry.
    fn value_of_entry(&self, raw: Bytes) -> Result<C::Value> {
        match unpack(&raw, self.options().format) {
            Ok(entry) => {
                let value = raw.slice_ref(entry.value);
                self.decode(value)
            }
            Err(source) => Err(Error::MalformedEntry {
                key: self.keys().order().to_owned(),
                entry: raw,
                source,
            }),
        }
    }

    /// The first pending value in offer order (not due order), left in place.
    ///
    /// Java: `RDelayedQueue#peek()`.
    ///
    /// # Errors
    ///
    /// [`Error::MalformedEntry`], [`Error::Decode`] or a Redis error.
    pub async fn peek(&self) -> Result<Option<C::Value>> {
        let key = self.keys().order();
        let raw: Option<Bytes> = self
            .client()
            .lindex(key, 0)
            .await
            .map_err(|e| Error::from_redis("LINDEX", key, e))?;
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
        let key = self.keys().order();
        let raws: Vec<Bytes> = self
            .client()
            .lrange(key, 0, -1)
            .await
            .map_err(|e| Error::from_redis("LRANGE", key, e))?;
        raws.into_iter()
            .map(|raw| self.value_of_entry(raw))
            .collect()
    }

    /// Takes the first pending value in offer order, **whatever its due time**: a value taken
    /// here is never transferred. This is Redisson's meaning of `poll()` on the delayed queue;
    /// to take values that are due, use [`consumer`](Self::consumer) (or a reliable consumer).
    ///
    /// Java: `RDelayedQueue#poll()`. A malformed head entry is quarantined and the next taken.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] (the raw value inside: it has left Redis) or a Redis error.
    pub async fn poll(&self) -> Result<Option<C::Value>> {
        let mut values = poll::run(self.client(), self.spec(), 1).await?;
        values.pop().map(|raw| self.decode(raw)).transpose()
    }

    /// Takes up to `limit` pending values in offer order, **whatever their due times** (see
    /// [`poll`](Self::poll)).
    ///
    /// Java: `RDelayedQueue#poll(limit)`.
    ///
    /// # Errors
    ///
    /// [`Error::Decode`] for the first value that does not decode (all values have left Redis;
    /// use [`poll_many_raw`](Self::poll_many_raw) to keep undecodable ones), or a Redis error.
    pub async fn poll_many(&self, limit: usize) -> Result<Vec<C::Value>> {
        self.poll_many_raw(limit).await?.into_iter().collect()
    }

    /// Like [`poll_many`](Self::poll_many), with each value's decode result apart.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn poll_many_raw(&self, limit: usize) -> Result<Vec<Result<C::Value>>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let raws = poll::run(self.client(), self.spec(), limit).await?;
        Ok(raws.into_iter().map(|raw| self.decode(raw)).collect())
    }

    /// Takes the last pending value (offer order), whatever its due time, and pushes it onto
    /// the head of the list `destination`, returning it.
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
        let raw = poll_last_offer_first::run(self.client(), self.spec(), destination).await?;
        raw.map(|raw| self.decode(raw)).transpose()
    }

    /// Deletes every pending entry (the order list and the timeout zset, delayq's indexes of
    /// them and the dedup keys' mappings to them; the target list stays). True if anything was
    /// deleted.
    ///
    /// Java: `RDelayedQueue#clear()`. To delete delayq's own keys too (dead letters, values in
    /// flight, quarantine, counters, limits), use [`delete`](Self::delete).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn clear(&self) -> Result<bool> {
        let keys = self.keys();
        let mut all: Vec<String> = [keys.timeout(), keys.order(), keys.index(), keys.values()]
            .map(str::to_owned)
            .into();
        let dedup = format!("{}:", keys.dedup_prefix());
        let items = self.item_keys().await?;
        all.extend(items.into_iter().filter(|key| key.starts_with(&dedup)));
        let deleted: u64 = self
            .client()
            .del(all)
            .await
            .map_err(|e| Error::from_redis("DEL", self.name(), e))?;
        Ok(deleted > 0)
    }

    /// The queue's keys one per business or limit key (dedup mappings, one limit key's slots
    /// and values held back): one `SCAN` of the keys named `delayq_*:{NAME}:*`, on the node of
    /// the queue's slot, keeping the names with no `:` after `PREFIX:{NAME}:` (a queue named
    /// `{NAME}:…` has the others). It reads the whole keyspace of that node, a page at a time.
    async fn item_keys(&self) -> Result<Vec<String>> {
        use futures::TryStreamExt;
        let keys = self.keys();
        let glob = keys.item_glob();
        let found: Vec<fred::types::Key> = self
            .client()
            .scan_buffered(glob.as_str(), Some(1_000), None)
            .try_collect()
            .await
            .map_err(|e| Error::from_redis("SCAN", &glob, e))?;
        Ok(found
            .iter()
            .filter_map(|key| key.as_str())
            .filter(|key| keys.is_item(key))
            .map(str::to_owned)
            .collect())
    }

    /// Deletes the queue: its pending entries and every key of delayq's own for it (values in
    /// flight and on claim lists, dead letters, quarantine, attempt counters, the position and
    /// value indexes, the record of settled deliveries, the pause flag, the limits and what
    /// enforcing them keeps, values held back by them included, the dedup keys' mappings); the
    /// target list stays, as in Java, and so do its recurring schedules (see
    /// [`Schedules`](crate::Schedules)). True if anything was deleted.
    ///
    /// Java: `RDelayedQueue#delete()` (which knows only the zset and the order list).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn delete(&self) -> Result<bool> {
        let mut all: Vec<String> = self.keys().owned().map(str::to_owned).collect();
        all.extend(self.claim_lists().await?);
        all.extend(self.keys().limit_queue_keys());
        all.extend(self.item_keys().await?);
        let deleted: u64 = self
            .client()
            .del(all)
            .await
            .map_err(|e| Error::from_redis("DEL", self.name(), e))?;
        Ok(deleted > 0)
    }

    /// The claim lists the claim leases name; only this queue's: a foreign member never names a
    /// key delayq touches.
    async fn claim_lists(&self) -> Result<Vec<String>> {
        let keys = self.keys();
        let claims: Vec<String> = self
            .client()
            .zrange(keys.claims(), 0, -1, None, false, None, false)
            .await
            .map_err(|e| Error::from_redis("ZRANGE", keys.claims(), e))?;
        Ok(claims.into_iter().filter(|c| keys.is_claim(c)).collect())
    }

    /// Sets a time to live on the queue's keys (the pending entries' and every key of delayq's
    /// own, claim lists, limits and dedup mappings included; the target list stays without one,
    /// as in Java, and its recurring schedules too; the record of settled deliveries and each
    /// dedup mapping keep their own life, of a minute and of the key's window, when that is
    /// shorter). True if any of the pending entries' keys exists.
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
        self.expire_with(expire::Ttl::Millis(ms)).await
    }

    /// Sets or clears the time to live of the keys `expire.lua` declares, then of the claim
    /// lists (which a script cannot declare without knowing their names).
    async fn expire_with(&self, ttl: expire::Ttl) -> Result<bool> {
        let mut others = self.claim_lists().await?;
        others.extend(self.keys().limit_queue_keys());
        let dedup = format!("{}:", self.keys().dedup_prefix());
        let (mappings, items): (Vec<String>, Vec<String>) = self
            .item_keys()
            .await?
            .into_iter()
            .partition(|key| key.starts_with(&dedup));
        others.extend(items);
        let changed = expire::run(self.client(), self.spec(), ttl).await? > 0;
        for key in others {
            let (command, reply): (_, std::result::Result<i64, _>) = match ttl {
                expire::Ttl::Millis(ms) => ("PEXPIRE", self.client().pexpire(&key, ms, None).await),
                expire::Ttl::Persist => ("PERSIST", self.client().persist(&key).await),
            };
            reply.map_err(|e| Error::from_redis(command, &key, e))?;
        }
        // A mapping lives for its window: a shorter time to live only, and none removed.
        if let expire::Ttl::Millis(ms) = ttl {
            for key in mappings {
                let left: i64 = self
                    .client()
                    .pttl(&key)
                    .await
                    .map_err(|e| Error::from_redis("PTTL", &key, e))?;
                if left == -1 || left > ms {
                    let _: i64 = self
                        .client()
                        .pexpire(&key, ms, None)
                        .await
                        .map_err(|e| Error::from_redis("PEXPIRE", &key, e))?;
                }
            }
        }
        Ok(changed)
    }

    /// Removes the time to live from the queue's keys (the record of settled deliveries keeps
    /// its own). True if one was removed from the pending entries' keys.
    ///
    /// Java: `RDelayedQueue#clearExpire()`.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn clear_expire(&self) -> Result<bool> {
        self.expire_with(expire::Ttl::Persist).await
    }
}
