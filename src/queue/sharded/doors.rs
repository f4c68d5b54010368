//! The features a [`ShardedQueue`] reaches through its logical queue, each a thin layer over
//! the shards' own mechanism: durable writes ([`with_durability`](ShardedQueue::with_durability),
//! confirmed on the master of each shard written) and recurring schedules
//! ([`schedules`](ShardedQueue::schedules), each living in the shard its id picks).

use super::{shard_of, Inner, ShardedQueue};
use crate::codec::Codec;
use crate::durable::Durability;
use crate::entry::OfferHandle;
use crate::recurring::{FireTally, FiringConfig, Schedule, ScheduleInfo, Schedules};
use crate::{Error, Result};
use futures::future::try_join_all;
use std::sync::Arc;

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

    /// The recurring schedules of the logical queue (see [`ShardedSchedules`]).
    pub fn schedules(&self) -> ShardedSchedules {
        let options = self.inner.shards[0].options();
        let client = self.inner.shards[0].client();
        ShardedSchedules {
            name: self.inner.name.clone(),
            layout: self.inner.layout,
            previous: self.inner.previous,
            shards: self
                .inner
                .shards
                .iter()
                .map(|shard| Schedules::new(client.clone(), shard.name(), options))
                .collect(),
        }
    }
}

/// The recurring schedules of a [`ShardedQueue`]: the same operations as [`Schedules`], by
/// schedule id.
///
/// A schedule lives in the shard its **id** picks (the JDK's `CRC32` of the id's UTF-8 bytes
/// modulo the number of shards, [`shard_of`]): its hash and its place in the schedules zset are
/// that shard's (`delayq_schedule:NAME:{i}:ID`, `delayq_schedules:NAME:{i}`), in the shard's
/// slot, so firing an occurrence stays one script that offers the entry into that shard and
/// moves the schedule on, exactly once however many processes fire (see
/// [`crate::recurring`]). Every occurrence of a schedule goes to its shard; the shard's queue
/// is in the registry of queues with schedules, so every process transferring the shards fires
/// them. Spread schedules over the shards by giving them different ids.
///
/// While the number of shards changes, a schedule stays in the shard it was written in: a
/// look-up by id tries the id's shard, then its shard in the layout before, and `set` writes
/// where the schedule is. [`ShardedQueue::drained`] is false while a schedule lives outside
/// its id's shard of the new layout: remove it and set it again.
#[derive(Debug, Clone)]
pub struct ShardedSchedules {
    name: String,
    layout: usize,
    previous: Option<usize>,
    /// Shard `i`'s schedules at index `i`.
    shards: Vec<Schedules>,
}

impl ShardedSchedules {
    /// The logical queue's name.
    pub fn queue(&self) -> &str {
        &self.name
    }

    /// The shard a schedule of id `id` is written to under the current layout.
    pub fn shard_for(&self, id: &str) -> usize {
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

    /// The shard holding `id`, or [`Error::NoSuchSchedule`] naming the logical queue.
    async fn existing(&self, id: &str) -> Result<&Schedules> {
        match self.holder(id).await? {
            Some(shard) => Ok(&self.shards[shard]),
            None => Err(Error::NoSuchSchedule {
                queue: self.name.clone(),
                id: id.to_owned(),
            }),
        }
    }

    /// Creates or replaces the schedule `schedule.id` in its shard; see [`Schedules::set`].
    ///
    /// # Errors
    ///
    /// As [`Schedules::set`].
    pub async fn set(&self, schedule: Schedule) -> Result<ScheduleInfo> {
        let shard = match self.holder(&schedule.id).await? {
            Some(shard) => shard,
            None => self.shard_for(&schedule.id),
        };
        self.shards[shard].set(schedule).await
    }

    /// The schedule `id`, or `None`; see [`Schedules::get`].
    ///
    /// # Errors
    ///
    /// A Redis error, or an unreadable schedule.
    pub async fn get(&self, id: &str) -> Result<Option<ScheduleInfo>> {
        for shard in self.lookup(id) {
            if let Some(info) = self.shards[shard].get(id).await? {
                return Ok(Some(info));
            }
        }
        Ok(None)
    }

    /// Every schedule of every shard, by next occurrence (paused and ended ones last).
    ///
    /// # Errors
    ///
    /// As [`Schedules::list`].
    pub async fn list(&self) -> Result<Vec<ScheduleInfo>> {
        Ok(self
            .list_by_shard()
            .await?
            .into_iter()
            .map(|(_, info)| info)
            .collect())
    }

    /// Every schedule of every shard, each readable or not (see [`Schedules::rows`]): readable
    /// ones by next occurrence, unreadable ones last.
    ///
    /// # Errors
    ///
    /// As [`Schedules::rows`].
    pub async fn rows(&self) -> Result<Vec<crate::recurring::ScheduleRow>> {
        let all = try_join_all(self.shards.iter().map(Schedules::rows)).await?;
        let mut rows: Vec<_> = all.into_iter().flatten().collect();
        rows.sort_by_key(|row| match &row.info {
            Ok(info) => (0, info.next_ms.unwrap_or(i64::MAX)),
            Err(_) => (1, 0),
        });
        Ok(rows)
    }

    /// Every schedule with the shard it lives in, by next occurrence.
    pub(crate) async fn list_by_shard(&self) -> Result<Vec<(usize, ScheduleInfo)>> {
        let all = try_join_all(self.shards.iter().map(Schedules::list)).await?;
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

    /// Removes the schedule `id`; see [`Schedules::remove`].
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn remove(&self, id: &str) -> Result<bool> {
        match self.holder(id).await? {
            Some(shard) => self.shards[shard].remove(id).await,
            None => Ok(false),
        }
    }

    /// Pauses the schedule `id`; see [`Schedules::pause`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub async fn pause(&self, id: &str) -> Result<ScheduleInfo> {
        self.existing(id).await?.pause(id).await
    }

    /// Resumes the schedule `id`; see [`Schedules::resume`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub async fn resume(&self, id: &str) -> Result<ScheduleInfo> {
        self.existing(id).await?.resume(id).await
    }

    /// Offers the schedule's value now, once, into its shard; returns the entry's handle and
    /// the shard. See [`Schedules::trigger`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub async fn trigger(&self, id: &str) -> Result<(usize, OfferHandle)> {
        match self.holder(id).await? {
            Some(shard) => Ok((shard, self.shards[shard].trigger(id).await?)),
            None => Err(Error::NoSuchSchedule {
                queue: self.name.clone(),
                id: id.to_owned(),
            }),
        }
    }

    /// Fires every shard's schedules due at `now_ms`, as the scheduler group does; the
    /// shards' tallies added up. See [`Schedules::fire_due`].
    ///
    /// # Errors
    ///
    /// As [`Schedules::fire_due`].
    pub async fn fire_due(&self, now_ms: i64, config: &FiringConfig) -> Result<FireTally> {
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
