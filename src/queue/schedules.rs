//! The schedules door: [`schedules`](DelayedQueue::schedules), and the calls of
//! [`Schedules`] on a queue, values through the queue's codec.

use super::DelayedQueue;
use crate::codec::Codec;
use crate::entry::OfferHandle;
use crate::recurring::{
    FireTally, FiringConfig, Schedule, ScheduleInfo, ScheduleRow, ScheduleStore, Schedules,
};
use crate::Result;
use std::borrow::Borrow;

/// **Door: recurring schedules** (see [`Schedules`]).
impl<C: Codec> DelayedQueue<C> {
    /// The queue's recurring schedules (cron expressions and intervals that offer a value at
    /// every occurrence, exactly once): see [`Schedules`] and `docs/schedules.md`.
    pub fn schedules(&self) -> Schedules<'_, DelayedQueue<C>> {
        Schedules::of(self)
    }
}

impl<C: Codec> Schedules<'_, DelayedQueue<C>> {
    fn store(self) -> ScheduleStore {
        ScheduleStore::of(self.queue.client().clone(), self.queue.spec().clone())
    }

    /// The stored schedule with its value decoded.
    fn decoded(self, info: ScheduleInfo) -> Result<ScheduleInfo<C::Value>> {
        let value = self.queue.decode(info.schedule.value.clone().into())?;
        Ok(info.with_value(value))
    }

    /// Creates or replaces the schedule `schedule.id`, its value encoded with the queue's codec.
    /// Its next occurrence is the first at or after its start (in the past: the occurrences
    /// since are missed ones, for its policy), or after now without a start; a replaced
    /// schedule never fires again an occurrence it fired.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchedule`](crate::Error::InvalidSchedule) for a bad expression, zone,
    /// interval, id or range; [`Error::Encode`](crate::Error::Encode); or a Redis error.
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
    /// A Redis error, a hash that is not a schedule, or its value does not decode.
    pub async fn get(self, id: &str) -> Result<Option<ScheduleInfo<C::Value>>> {
        let info = self.store().get(id).await?;
        info.map(|info| self.decoded(info)).transpose()
    }

    /// Every schedule of the queue, by next occurrence (paused and ended ones last).
    ///
    /// # Errors
    ///
    /// A Redis error, a hash that is not a schedule, or a value that does not decode (a queue
    /// of [`ByteArrayCodec`](crate::codec::ByteArrayCodec) reads any value).
    pub async fn list(self) -> Result<Vec<ScheduleInfo<C::Value>>> {
        let found = self.store().list().await?;
        found.into_iter().map(|info| self.decoded(info)).collect()
    }

    /// Every schedule of the queue, by next occurrence (paused and ended ones last), each
    /// readable or not: unlike [`list`](Self::list), a schedule whose hash cannot be read, or
    /// whose value does not decode, is a row of its own with the reason, and the others are
    /// listed all the same.
    ///
    /// # Errors
    ///
    /// The zset of schedules could not be read, or Redis failed.
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

    /// Pauses the schedule `id`: nothing fires until [`resume`](Self::resume).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`](crate::Error::NoSuchSchedule) when there is none.
    pub async fn pause(self, id: &str) -> Result<ScheduleInfo<C::Value>> {
        let info = self.store().pause(id).await?;
        self.decoded(info)
    }

    /// Resumes the schedule `id`: its next occurrence is the first after now (and after the
    /// last one fired); those of the pause are neither late nor missed.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`](crate::Error::NoSuchSchedule) when there is none.
    pub async fn resume(self, id: &str) -> Result<ScheduleInfo<C::Value>> {
        let info = self.store().resume(id).await?;
        self.decoded(info)
    }

    /// Offers the schedule's value now, once, apart from its occurrences (which go on as they
    /// were); returns the entry's handle.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`](crate::Error::NoSuchSchedule) when there is none.
    pub async fn trigger(self, id: &str) -> Result<OfferHandle> {
        self.store().trigger(id).await
    }

    /// Fires the queue's schedules due at `now_ms` (by `config`'s lead and missed-after), as a
    /// scheduler group does every tick: for a program that hosts firing itself, or a test that
    /// gives the clock. Safe beside any number of other firing processes, and with any
    /// `now_ms`: an entry is due at its occurrence's time whenever it is offered.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn fire_due(self, now_ms: i64, config: &FiringConfig) -> Result<FireTally> {
        self.store().fire_due(now_ms, config).await
    }
}
