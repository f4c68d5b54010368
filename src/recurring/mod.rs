//! Recurring schedules: cron expressions and intervals that offer a value into a queue at every
//! occurrence, each occurrence exactly once however many processes fire them.
//!
//! A schedule lives beside its queue, in the queue's hash tag (so a Cluster keeps it in the
//! queue's slot): a hash per schedule, `delayq_schedule:{NAME}:ID` (definition, codec-encoded
//! value, revision, next and last occurrence), and a zset of every schedule by its next
//! occurrence, `delayq_schedules:{NAME}` (`+inf` while paused or ended). `docs/schedules.md`
//! lists the fields, so another language can read or write one.
//!
//! **Exactly once, no leader.** An occurrence's time is its id. Firing is one script
//! (`lua/schedule_fire.lua`) that offers an ordinary Redisson entry due at the occurrence's time
//! (Redisson's own offer: Java consumers and schedulers see nothing new) and advances the
//! schedule's next occurrence, only if the schedule still stands at the revision and occurrence
//! the firing process read. Two processes that read the same occurrence both call it; the
//! second finds the schedule moved on and offers nothing. No lease is needed for correctness.
//!
//! **Early and late.** A process fires an occurrence up to its `lead` before the occurrence's
//! time: the entry is due at the occurrence's time anyway, so nothing is delivered early, and the
//! transfer moves it on time to the millisecond. A process whose clock is ahead by `s` fires `s`
//! earlier, with the same result; one whose clock is behind fires late, unless another process
//! has fired it already (then its call is a no-op). An occurrence older than `missed_after`
//! when a process finds it is missed, and the schedule's [`Missed`] policy decides (one log line
//! per decision); a clock ahead may call an occurrence missed up to its error sooner, so keep
//! `missed_after` well above the clocks' error.
//!
//! **Hosting.** A [`SchedulerGroup`](crate::SchedulerGroup) fires the schedules of the queues it
//! transfers (see [`FiringConfig`]): one read of the registry of queues with schedules per
//! tick, one read by score per registered queue, then one script per due schedule, a bounded
//! number in flight. [`Schedules::fire_due`] is the same step for a program that hosts it itself,
//! or a test that gives the clock.
//!
//! **Building on it.** A view (a dashboard, `delayq schedule list`) reads [`Schedules::list`]:
//! each [`ScheduleInfo`] has the definition, `next_ms`, `last_ms` and `paused`. A measurement
//! or a metric reads the [`FireTally`] of each [`Schedules::fire_due`] (offered, lost races,
//! unreadable schedules); lateness is the firing instant minus the occurrences it offered. A
//! benchmark or a test drives [`Schedules::fire_due`] with the instant it chooses.
//! [`Schedule::occurrence_at_or_after`] computes occurrences without Redis.
//!
//! - `recur.rs`: [`Recurrence`] and the occurrence math (the daylight-saving rule);
//! - `spec.rs`: [`Schedule`], [`Missed`], [`ScheduleInfo`], their hash fields;
//! - `plan.rs`: what one firing offers; `fire.rs`: firing a queue's due schedules;
//! - `stored.rs`: reading a schedule's hash (from its name before issue 38 too);
//! - `registry.rs`: the registry of queues that have schedules.

mod fire;
mod plan;
mod recur;
pub(crate) mod registry;
mod spec;
mod stored;

pub use fire::{FireTally, FiringConfig};
pub use recur::{Recurrence, MIN_SCHEDULE_INTERVAL};
pub use spec::{Missed, Schedule, ScheduleInfo, ScheduleRow};

use crate::entry::OfferHandle;
use crate::metrics::FiringMetrics;
use crate::options::QueueOptions;
use crate::redis::ops::{offer, schedule_remove, schedule_set};
use crate::redis::script::QueueSpec;
use crate::time::{now_ms, Delay};
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::SortedSetsInterface;
use std::sync::Arc;
use std::time::Duration;

/// The recurring schedules of one queue: set, read, pause, resume, trigger and remove them,
/// with values of the queue's codec. Made by `queue.schedules()` (e.g.
/// [`DelayedQueue::schedules`](crate::DelayedQueue::schedules)); borrows the queue. Firing them
/// is the scheduler group's (or [`fire_due`](Self::fire_due)'s).
///
/// # Examples
///
/// ```no_run
/// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
/// use delayq::{Missed, Recurrence, Schedule};
///
/// let schedules = queue.schedules();
/// let nightly = Recurrence::cron("30 2 * * *", "Europe/Berlin")?;
/// schedules
///     .set(Schedule::new("nightly", nightly, "build-report").missed(Missed::Latest))
///     .await?;
/// schedules.pause("nightly").await?;
/// schedules.resume("nightly").await?;
/// for info in schedules.list().await? {
///     println!("{} ({}) next at {:?}", info.schedule.id, info.schedule.value, info.next_ms);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Schedules<'a, Q> {
    pub(crate) queue: &'a Q,
}

impl<Q> Clone for Schedules<'_, Q> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Q> Copy for Schedules<'_, Q> {}

impl<'a, Q> Schedules<'a, Q> {
    /// The schedules of `queue`.
    pub(crate) fn of(queue: &'a Q) -> Self {
        Schedules { queue }
    }
}

/// The schedules of one queue as stored, values as bytes: what [`Schedules`] and the firing task
/// call.
#[derive(Debug, Clone)]
pub(crate) struct ScheduleStore {
    client: Client,
    queue: QueueSpec,
}

/// Attempts of a read-modify-write (pause, resume, set) before giving up on a schedule that
/// keeps changing under it.
const WRITE_ATTEMPTS: usize = 20;

impl ScheduleStore {
    /// The schedules of the queue `name`, whose entries are written in `options`' format.
    pub(crate) fn new(client: Client, name: impl Into<String>, options: QueueOptions) -> Self {
        Self::of(client, QueueSpec::new(name, options))
    }

    /// The schedules of the queue `queue`.
    pub(crate) fn of(client: Client, queue: QueueSpec) -> Self {
        ScheduleStore { client, queue }
    }

    /// Creates or replaces the schedule `schedule.id`. Its next occurrence is the first at or
    /// after its start (in the past: the occurrences since are missed ones, for its policy), or
    /// after now without a start; a replaced schedule never fires again an occurrence it fired.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchedule`] for a bad expression, zone, interval, id or range.
    pub(crate) async fn set(&self, mut schedule: Schedule) -> Result<ScheduleInfo> {
        schedule.validate()?;
        if let (Recurrence::Every(every), None) = (&schedule.recurrence, schedule.start_ms) {
            schedule.start_ms = Some(crate::time::due_time(now_ms(), *every)?);
        }
        let from = schedule.start_ms.unwrap_or_else(now_ms);
        registry::register(&self.client, &self.queue).await?;
        let info = self
            .write(&schedule.id.clone(), move |old| {
                let after_last = old.and_then(|o| o.last_ms).map(|ms| ms + 1);
                let next = schedule.occurrence_at_or_after(from.max(after_last.unwrap_or(from)))?;
                Ok((schedule.clone(), next))
            })
            .await?;
        registry::register(&self.client, &self.queue).await?;
        Ok(info)
    }

    /// The schedule `id`, or `None`.
    pub(crate) async fn get(&self, id: &str) -> Result<Option<ScheduleInfo>> {
        stored::read(&self.client, &self.queue, id).await
    }

    /// Every schedule of the queue, by next occurrence (paused and ended ones last).
    pub(crate) async fn list(&self) -> Result<Vec<ScheduleInfo>> {
        let key = self.queue.keys.schedules();
        let ids: Vec<String> = self
            .client
            .zrange(key, 0, -1, None, false, None, false)
            .await
            .map_err(|e| Error::from_redis("ZRANGE", key, e))?;
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            found.extend(self.get(&id).await?);
        }
        Ok(found)
    }

    /// Removes the schedule `id` (entries it offered stay); false when there was none.
    pub(crate) async fn remove(&self, id: &str) -> Result<bool> {
        // A hash still under its name before issue 38 goes too.
        stored::adopt(&self.client, &self.queue, id).await?;
        let existed = schedule_remove::run(&self.client, &self.queue, id).await?;
        registry::unregister_if_empty(&self.client, &self.queue).await?;
        Ok(existed)
    }

    /// Pauses the schedule `id`: nothing fires until [`resume`](Self::resume).
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub(crate) async fn pause(&self, id: &str) -> Result<ScheduleInfo> {
        self.change(id, |info| {
            let mut schedule = info.schedule.clone();
            schedule.paused = true;
            Ok((schedule, info.next_ms))
        })
        .await
    }

    /// Resumes the schedule `id`: its next occurrence is the first after now (and after the
    /// last one fired); those of the pause are neither late nor missed.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub(crate) async fn resume(&self, id: &str) -> Result<ScheduleInfo> {
        let now = now_ms();
        self.change(id, move |info| {
            let mut schedule = info.schedule.clone();
            schedule.paused = false;
            let after_last = info.last_ms.map_or(now, |ms| now.max(ms + 1));
            let next = schedule.occurrence_at_or_after(after_last)?;
            Ok((schedule, next))
        })
        .await
    }

    /// Offers the schedule's value now, once, apart from its occurrences (which go on as they
    /// were); returns the entry's handle.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchSchedule`] when there is none.
    pub(crate) async fn trigger(&self, id: &str) -> Result<OfferHandle> {
        let info = self.get(id).await?.ok_or_else(|| self.no_such(id))?;
        let delay = Delay::checked(Duration::ZERO)?;
        offer::run_with_handle(&self.client, &self.queue, delay, info.schedule.value).await
    }

    /// Fires the queue's schedules due at `now_ms` (by `config`'s lead and missed-after), as a
    /// scheduler group does every tick. Safe beside any number of other firing processes, and
    /// with any `now_ms`: an entry is due at its occurrence's time whenever it is offered.
    pub(crate) async fn fire_due(&self, now_ms: i64, config: &FiringConfig) -> Result<FireTally> {
        fire::fire_due(&self.client, &self.queue, now_ms, config, None).await
    }

    /// [`fire_due`](Self::fire_due) recorded with the queue's `metrics`, which the caller holds
    /// for as long as the queue has schedules (a scheduler group does), so that their series
    /// stay between firings.
    pub(crate) async fn fire_due_recorded(
        &self,
        now_ms: i64,
        config: &FiringConfig,
        metrics: &Arc<FiringMetrics>,
    ) -> Result<FireTally> {
        fire::fire_due(&self.client, &self.queue, now_ms, config, Some(metrics)).await
    }

    fn no_such(&self, id: &str) -> Error {
        Error::NoSuchSchedule {
            queue: self.queue.keys.target().to_owned(),
            id: id.to_owned(),
        }
    }

    /// Changes the existing schedule `id` with `edit` (definition → new one and its next
    /// occurrence).
    async fn change(
        &self,
        id: &str,
        edit: impl Fn(&ScheduleInfo) -> Result<(Schedule, Option<i64>)>,
    ) -> Result<ScheduleInfo> {
        self.write(id, |old| match old {
            Some(info) => edit(info),
            None => Err(self.no_such(id)),
        })
        .await
    }

    /// Writes the schedule `id` as `edit` makes it from what is stored, compare-and-set on the
    /// revision read (a firing in between moves the last occurrence, so it is read again).
    async fn write(
        &self,
        id: &str,
        edit: impl Fn(Option<&ScheduleInfo>) -> Result<(Schedule, Option<i64>)>,
    ) -> Result<ScheduleInfo> {
        for _ in 0..WRITE_ATTEMPTS {
            let old = self.get(id).await?;
            let (schedule, next_ms) = edit(old.as_ref())?;
            // A schedule not there yet has no revision to compare: the script writes it anyway.
            let expected = old.as_ref().map(|o| o.rev);
            let fields = schedule.fields();
            let written =
                schedule_set::run(&self.client, &self.queue, id, expected, next_ms, fields).await?;
            if let Some(rev) = written {
                return Ok(ScheduleInfo {
                    schedule,
                    rev,
                    next_ms,
                    last_ms: old.and_then(|o| o.last_ms),
                });
            }
        }
        Err(Error::InvalidSchedule(format!(
            "schedule {id:?} kept changing while being written ({WRITE_ATTEMPTS} attempts)"
        )))
    }
}
