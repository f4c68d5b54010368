//! The features a [`ShardedQueue`] reaches through the same doors as a queue, each a thin layer
//! over the shards' own mechanism: durable writes ([`with_durability`](ShardedQueue::with_durability),
//! confirmed on the master of each shard written), recurring schedules
//! ([`schedules`](ShardedQueue::schedules), each living in the shard its id picks) and
//! deduplicated offers ([`dedup`](ShardedQueue::dedup), in the shard its key picks).

use super::{shard_of, Inner, ShardedHandle, ShardedQueue};
use crate::codec::Codec;
use crate::durable::Durability;
use crate::queue::{Dedup, DedupOutcome, Deduplicated};
use crate::recurring::{
    FireTally, FiringConfig, Schedule, ScheduleInfo, ScheduleRow, ScheduleStore, Schedules,
};
use crate::time::Delay;
use crate::{Error, Result};
use futures::future::try_join_all;
use std::borrow::Borrow;
use std::sync::Arc;
use std::time::Duration;

impl<C: Codec> ShardedQueue<C> {
    /// This queue with writes that wait for `durability` (a cheap clone sharing everything
    /// else); see [`DelayedQueue::with_durability`](crate::DelayedQueue::with_durability). Each
    /// write is confirmed on the master of the shard it went to: an
    /// [`offer_all`](Self::offer_all) spanning shards on several masters of a Cluster waits on
    /// each of them (one `WAIT` per master for the writes gathered meanwhile), and returns
    /// [`Error::NotConfirmed`] when any of them did not confirm (the shards whose call went
    /// through keep their values, as for any error of `offer_all`).
    pub fn with_durability(&self, durability: Durability) -> ShardedQueue<C> {
        let inner = &self.inner;
        ShardedQueue {
            inner: Arc::new(Inner {
                name: inner.name.clone(),
                layout: inner.layout,
                previous: inner.previous,
                shards: inner
                    .shards
                    .iter()
                    .map(|shard| shard.with_durability(durability))
                    .collect(),
                codec: inner.codec.clone(),
                logical: inner.logical.clone(),
            }),
        }
    }

    /// What this handle's writes wait for.
    pub fn durability(&self) -> Durability {
        self.inner.shards[0].durability()
    }

    /// The recurring schedules of the sharded queue, values through its codec: the same
    /// operations as a queue's (see [`Schedules`]), each schedule living in the shard its id
    /// picks (see [`Schedules::shard_for`]).
    pub fn schedules(&self) -> Schedules<'_, ShardedQueue<C>> {
        Schedules::of(self)
    }

    /// Offers deduplicated by `dedup`'s business key within its window (throttled or
    /// debounced), in the shard the key picks: see [`Deduplicated::offer`] and
    /// `docs/dedup.md`.
    pub fn dedup(&self, dedup: Dedup) -> Deduplicated<'_, ShardedQueue<C>> {
        Deduplicated::of(self, dedup)
    }

    /// The schedules of every shard, as stored.
    pub(crate) fn schedule_store(&self) -> ShardedScheduleStore {
        let inner = &self.inner;
        ShardedScheduleStore {
            name: inner.name.clone(),
            layout: inner.layout,
            previous: inner.previous,
            shards: inner
                .shards
                .iter()
                .map(|shard| ScheduleStore::of(shard.client().clone(), shard.spec().clone()))
                .collect(),
        }
    }
}

/// **Door: recurring schedules**, of a sharded queue.
///
/// A schedule lives in the shard its **id** picks (the JDK's `CRC32` of the id's UTF-8 bytes
/// modulo the number of shards, [`shard_of`]): its hash and its place in the schedules zset are
/// that shard's (`delayq_schedule:NAME:{i}:ID`, `delayq_schedules:NAME:{i}`), in the shard's
/// slot, so firing an occurrence stays one script that offers the entry into that shard and
/// moves the schedule on, exactly once however many processes fire (see
/// `docs/schedules.md`). The shard's queue is in the registry of queues with schedules, so
/// every process transferring the shards fires them. Spread schedules over the shards by
/// giving them different ids.
///
/// While the number of shards changes, a schedule stays in the shard it was written in: a
/// look-up by id tries the id's shard, then its shard in the layout before, and `set` writes
/// where the schedule is. [`ShardedQueue::drained`] is false while a schedule lives outside
/// its id's shard of the new layout: remove it and set it again.
impl<C: Codec> Schedules<'_, ShardedQueue<C>> {
    fn store(self) -> ShardedScheduleStore {
        self.queue.schedule_store()
    }

    fn decoded(self, info: ScheduleInfo) -> Result<ScheduleInfo<C::Value>> {
        let value = self.queue.inner.shards[0].decode(info.schedule.value.clone().into())?;
        Ok(info.with_value(value))
    }

    /// The shard a schedule of id `id` is written to under the current layout.
    pub fn shard_for(self, id: &str) -> usize {
        shard_of(id.as_bytes(), self.queue.inner.layout)
    }

    /// Creates or replaces the schedule `schedule.id` in its shard, its value encoded with the
    /// queue's codec; see [`Schedules::set`] of a queue.
    ///
    /// # Errors
    ///
    /// As a queue's.
    pub async fn set(self, schedule: Schedule<C::Value>) -> Result<ScheduleInfo<C::Value>> {
        let encoded = self.queue.encode(schedule.value.borrow())?;
        let (stored, value) = schedule.swap_value(encoded);
        let info = self.store().set(stored).await?;
        Ok(info.with_value(value))
    }

    /// The schedule `id`, or `None`.
    ///
    /// # Errors
    ///
    /// A Redis error, an unreadable schedule, or a value that does not decode.
    pub async fn get(self, id: &str) -> Result<Option<ScheduleInfo<C::Value>>> {
        let info = self.store().get(id).await?;
        info.map(|info| self.decoded(info)).transpose()
    }

    /// Every schedule of every shard, by next occurrence (paused and ended ones last).
    ///
    /// # Errors
    ///
    /// As a queue's.
    pub async fn list(self) -> Result<Vec<ScheduleInfo<C::Value>>> {
        let found = self.store().list_by_shard().await?;
        found
            .into_iter()
            .map(|(_, info)| self.decoded(info))
            .collect()
    }

    /// Every schedule of every shard, each readable or not (see a queue's `rows`): readable
    /// ones by next occurrence, unreadable ones last.
    ///
    /// # Errors
    ///
    /// A shard's zset of schedules could not be read, or Redis failed.
    pub async fn rows(self) -> Result<Vec<ScheduleRow<C::Value>>> {
        let rows = self.store().rows().await?;
        Ok(rows
            .into_iter()
            .map(|row| ScheduleRow {
                info: row.info.and_then(|info| self.decoded(info)),
                id: row.id,
            })
            .collect())
    }

    /// Removes the schedule `id` (entries it offered stay); false when there was none.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn remove(self, id: &str) -> Result<bool> {
        self.store().remove(id).await
    }

    /// Pauses the schedule `id`.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub async fn pause(self, id: &str) -> Result<ScheduleInfo<C::Value>> {
        let store = self.store();
        let info = store.existing(id).await?.pause(id).await?;
        self.decoded(info)
    }

    /// Resumes the schedule `id`.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub async fn resume(self, id: &str) -> Result<ScheduleInfo<C::Value>> {
        let store = self.store();
        let info = store.existing(id).await?.resume(id).await?;
        self.decoded(info)
    }

    /// Offers the schedule's value now, once, into its shard; returns the entry's handle.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub async fn trigger(self, id: &str) -> Result<ShardedHandle> {
        self.store().trigger(id).await
    }

    /// Fires every shard's schedules due at `now_ms`, as the scheduler group does; the
    /// shards' tallies added up.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn fire_due(self, now_ms: i64, config: &FiringConfig) -> Result<FireTally> {
        self.store().fire_due(now_ms, config).await
    }
}

/// The schedules of every shard of a sharded queue as stored, values as bytes.
#[derive(Debug, Clone)]
pub(crate) struct ShardedScheduleStore {
    name: String,
    layout: usize,
    previous: Option<usize>,
    /// Shard `i`'s schedules at index `i`.
    shards: Vec<ScheduleStore>,
}

impl ShardedScheduleStore {
    fn shard_for(&self, id: &str) -> usize {
        shard_of(id.as_bytes(), self.layout)
    }

    /// The shards to look for the schedule `id` in: its shard, then its shard in the layout
    /// before when that is another one.
    fn lookup(&self, id: &str) -> Vec<usize> {
        let home = self.shard_for(id);
        let mut shards = vec![home];
        if let Some(old) = self.previous.map(|p| shard_of(id.as_bytes(), p)) {
            if old != home {
                shards.push(old);
            }
        }
        shards
    }

    /// The shard holding the schedule `id`, if any.
    async fn holder(&self, id: &str) -> Result<Option<usize>> {
        for shard in self.lookup(id) {
            if self.shards[shard].get(id).await?.is_some() {
                return Ok(Some(shard));
            }
        }
        Ok(None)
    }

    /// The store of the shard holding `id`, or [`Error::NoSuchSchedule`] naming the logical
    /// queue.
    async fn existing(&self, id: &str) -> Result<&ScheduleStore> {
        match self.holder(id).await? {
            Some(shard) => Ok(&self.shards[shard]),
            None => Err(self.no_such(id)),
        }
    }

    fn no_such(&self, id: &str) -> Error {
        Error::NoSuchSchedule {
            queue: self.name.clone(),
            id: id.to_owned(),
        }
    }

    async fn set(&self, schedule: Schedule) -> Result<ScheduleInfo> {
        let shard = match self.holder(&schedule.id).await? {
            Some(shard) => shard,
            None => self.shard_for(&schedule.id),
        };
        self.shards[shard].set(schedule).await
    }

    async fn get(&self, id: &str) -> Result<Option<ScheduleInfo>> {
        for shard in self.lookup(id) {
            if let Some(info) = self.shards[shard].get(id).await? {
                return Ok(Some(info));
            }
        }
        Ok(None)
    }

    async fn rows(&self) -> Result<Vec<ScheduleRow>> {
        let all = try_join_all(self.shards.iter().map(ScheduleStore::rows)).await?;
        let mut rows: Vec<_> = all.into_iter().flatten().collect();
        rows.sort_by_key(|row| match &row.info {
            Ok(info) => (0, info.next_ms.unwrap_or(i64::MAX)),
            Err(_) => (1, 0),
        });
        Ok(rows)
    }

    /// Every schedule with the shard it lives in, by next occurrence.
    async fn list_by_shard(&self) -> Result<Vec<(usize, ScheduleInfo)>> {
        let all = try_join_all(self.shards.iter().map(ScheduleStore::list)).await?;
        let mut found: Vec<(usize, ScheduleInfo)> = all
            .into_iter()
            .enumerate()
            .flat_map(|(shard, infos)| infos.into_iter().map(move |info| (shard, info)))
            .collect();
        found.sort_by_key(|(_, info)| info.next_ms.unwrap_or(i64::MAX));
        Ok(found)
    }

    /// Schedules living outside their id's shard of the current layout (written under the
    /// layout before).
    pub(crate) async fn misplaced(&self) -> Result<u64> {
        let all = self.list_by_shard().await?;
        let away = all
            .iter()
            .filter(|(shard, info)| *shard != self.shard_for(&info.schedule.id));
        Ok(away.count() as u64)
    }

    async fn remove(&self, id: &str) -> Result<bool> {
        match self.holder(id).await? {
            Some(shard) => self.shards[shard].remove(id).await,
            None => Ok(false),
        }
    }

    async fn trigger(&self, id: &str) -> Result<ShardedHandle> {
        match self.holder(id).await? {
            Some(shard) => Ok(ShardedHandle::new(
                shard,
                self.shards[shard].trigger(id).await?,
            )),
            None => Err(self.no_such(id)),
        }
    }

    async fn fire_due(&self, now_ms: i64, config: &FiringConfig) -> Result<FireTally> {
        let calls = self.shards.iter().map(|s| s.fire_due(now_ms, config));
        let tallies = try_join_all(calls).await?;
        Ok(tallies
            .into_iter()
            .fold(FireTally::default(), |sum, t| FireTally {
                offered: sum.offered + t.offered,
                lost: sum.lost + t.lost,
                due: sum.due + t.due,
                invalid: sum.invalid + t.invalid,
            }))
    }
}

/// **Door: deduplicated offers**, of a sharded queue.
impl<C: Codec> Deduplicated<'_, ShardedQueue<C>> {
    /// The shard offers of this business key go to (the current layout's): the JDK's `CRC32`
    /// of the key's UTF-8 bytes modulo the number of shards ([`shard_of`]).
    pub fn shard(&self) -> usize {
        shard_of(self.dedup().key().as_bytes(), self.queue().inner.layout)
    }

    /// Offers `value`, due after `delay`, deduplicated by the business key, in the shard the
    /// **key** picks ([`shard`](Self::shard)): the key's mapping and the entry it names live in
    /// that shard's slot, so every offer of one key meets its mapping in one atomic script, and
    /// a throttle or a debounce behaves as on one queue (see [`Deduplicated::offer`] of a
    /// queue), whatever values the key's offers carry. Returns the outcome with the shard,
    /// which the entry's [`ShardedHandle`] names.
    ///
    /// The entry is in its key's shard, not its value's: cancel it by its handle;
    /// [`remove`](ShardedQueue::remove), [`contains`](ShardedQueue::contains) and
    /// [`reschedule`](ShardedQueue::reschedule) by value look in the value's shard only. While
    /// the number of shards changes, a key's offers go to its shard of the new layout: a
    /// mapping left in its old shard is not seen, so one offer of that key may go through
    /// beside the entry pending there.
    ///
    /// # Errors
    ///
    /// As a queue's.
    pub async fn offer(
        &self,
        value: &C::Borrowed,
        delay: Duration,
    ) -> Result<(usize, DedupOutcome)> {
        let delay = Delay::checked(delay)?;
        let queue = self.queue();
        let value = queue.encode(value)?;
        let index = self.shard();
        let shard = &queue.inner.shards[index];
        let outcome = shard
            .offer_dedup_encoded(delay, value, self.dedup())
            .await?;
        Ok((index, outcome))
    }
}
