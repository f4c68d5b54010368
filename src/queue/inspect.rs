//! The queue's doors for operators: [`inspect`](DelayedQueue::inspect) and
//! [`admin`](DelayedQueue::admin), and the reads of the queue's own keys behind the first
//! (pending values, counters, the quarantine, memory, activity, processes, the pause flag).

use super::{Admin, DelayedQueue};
use crate::codec::Codec;
use crate::entry::unpack;
use crate::inspect::{DayActivity, Inspect, MinuteActivity, Pending, ProcessInfo, QueueStats};
use crate::observe;
use crate::redis::ops::{pending, stats};
use crate::time::now_ms;
use crate::transfer::SchedulerGroup;
use crate::{Error, Result};
use bytes::Bytes;
use fred::interfaces::{KeysInterface, MemoryInterface};
use std::sync::{Arc, PoisonError};

/// **Doors for operators**: each feature beyond offering and taking is reached through one
/// method of the queue that names it and returns a handle borrowing the queue; these two carry
/// an operator's reads and writes.
impl<C: Codec> DelayedQueue<C> {
    /// The operator's reads of this queue (counters, pending values, previews, activity,
    /// processes, the server check, dead letters, quarantine): see [`Inspect`].
    pub fn inspect(&self) -> Inspect<'_, DelayedQueue<C>> {
        Inspect::of(self)
    }

    /// The operator's writes to this queue (pause, resume, one-off transfers, reaping, giving
    /// back, dead-letter replays and purges): see [`Admin`].
    pub fn admin(&self) -> Admin<'_, DelayedQueue<C>> {
        Admin::of(self)
    }
}

impl<'a, C: Codec> Inspect<'a, DelayedQueue<C>> {
    /// The codec the queue's values go through, to decode what the raw reads return
    /// ([`previews`](Self::previews), [`quarantined`](Self::quarantined)).
    pub fn codec(self) -> &'a C {
        self.queue.codec()
    }

    /// What this handle's writes wait for (see
    /// [`with_durability`](DelayedQueue::with_durability)).
    pub fn durability(self) -> crate::Durability {
        self.queue.durability()
    }

    /// Counters of the queue, read atomically.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn stats(self) -> Result<QueueStats> {
        let counts = stats::run(self.queue.client(), self.queue.spec()).await?;
        Ok(counts.into())
    }

    /// The first `limit` pending values in offer order with their due times (all with
    /// `limit == 0`). Values that do not unpack or decode are reported, not skipped.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn pending(self, limit: usize) -> Result<Vec<Pending<C::Value>>> {
        let entries = pending::run(self.queue.client(), self.queue.spec(), limit).await?;
        Ok(entries
            .into_iter()
            .map(|(entry, due_ms)| self.pending_value(entry, due_ms))
            .collect())
    }

    fn pending_value(&self, entry: Bytes, due_ms: Option<i64>) -> Pending<C::Value> {
        let queue = self.queue;
        match unpack(&entry, queue.options().format) {
            Ok(unpacked) => {
                let raw = entry.slice_ref(unpacked.value);
                Pending {
                    value: queue.decode(raw.clone()).map_err(Arc::new),
                    raw,
                    due_ms,
                }
            }
            Err(source) => Pending {
                value: Err(Arc::new(Error::MalformedEntry {
                    key: queue.keys().order().to_owned(),
                    entry: entry.clone(),
                    source,
                })),
                raw: entry,
                due_ms,
            },
        }
    }

    /// The first `limit` quarantined entries (all for 0): malformed members the transfer or poll
    /// scripts took out of the queue, raw.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn quarantined(self, limit: usize) -> Result<Vec<Bytes>> {
        let queue = self.queue;
        queue.own_list(queue.keys().quarantine(), limit).await
    }

    /// Whether the queue is paused: its transfers and its workers' takes (see [`Admin::pause`]).
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn is_paused(self) -> Result<bool> {
        let key = self.queue.keys().paused();
        let exists: u64 = self
            .queue
            .client()
            .exists(key)
            .await
            .map_err(|e| Error::from_redis("EXISTS", key, e))?;
        Ok(exists > 0)
    }

    /// Bytes Redis uses for the pending entries' keys (`MEMORY USAGE` of both, with Redis's
    /// default sampling, as Redisson asks: on big queues an estimate, equal to Java's figure).
    ///
    /// Java: `RDelayedQueue#sizeInMemory()`.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn size_in_memory(self) -> Result<u64> {
        let keys = self.queue.keys();
        let mut total = 0;
        for key in [keys.timeout(), keys.order()] {
            let used: Option<u64> = self
                .queue
                .client()
                .memory_usage(key, None)
                .await
                .map_err(|e| Error::from_redis("MEMORY USAGE", key, e))?;
            total += used.unwrap_or(0);
        }
        Ok(total)
    }

    /// The queue's activity in each of the last `minutes` minutes (at most a day), oldest
    /// first, the current minute last: values moved by schedulers, taken by workers, jobs
    /// acked, retried and dead-lettered, as every delayq process serving the queue counted them
    /// (see [`ObserveConfig`](crate::ObserveConfig)). A process writes its counts every few
    /// seconds, so the current minute trails by that much. One pipelined round trip.
    ///
    /// # Errors
    ///
    /// A Redis error, or a bucket key holding another type.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
    /// let hour = queue.inspect().activity(60).await?;
    /// let failed: u64 = hour.iter().map(|minute| minute.failed()).sum();
    /// # Ok(()) }
    /// ```
    pub async fn activity(self, minutes: usize) -> Result<Vec<MinuteActivity>> {
        observe::read_activity(self.queue.client(), self.queue.keys(), minutes, now_ms()).await
    }

    /// The queue's activity in each of the last `days` UTC days (at most
    /// [`DAYS_KEPT`](crate::inspect::DAYS_KEPT), 90), oldest first, today last, each with its
    /// ISO 8601 date: the same counts as [`activity`](Self::activity), added up per day. A day
    /// nobody counted anything in reads as zeros. One pipelined round trip.
    ///
    /// # Errors
    ///
    /// A Redis error, or a bucket key holding another type.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
    /// for day in queue.inspect().days(90).await? {
    ///     println!("{}: {} acked, {} failed", day.date, day.acked, day.failed());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn days(self, days: usize) -> Result<Vec<DayActivity>> {
        observe::read_activity_days(self.queue.client(), self.queue.keys(), days, now_ms()).await
    }

    /// The live delayq workers and schedulers serving this queue, by kind then id: those
    /// serving it by name, and schedulers whose discovery globs take it (see
    /// [`ObserveConfig`](crate::ObserveConfig)). One pipelined round trip.
    ///
    /// # Errors
    ///
    /// A Redis error, or the registry key holding another type.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
    /// for process in queue.inspect().processes().await? {
    ///     println!("{} {} on {} (pid {})", process.kind, process.id, process.host, process.pid);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn processes(self) -> Result<Vec<ProcessInfo>> {
        observe::list_processes(self.queue.client(), self.queue.name(), now_ms()).await
    }

    /// The scheduler group this handle's transfers run in (`None` with `transfer(false)`), to
    /// read its health ([`SchedulerGroup::is_subscribed`]) and counters. A clone held keeps the
    /// group running after [`destroy`](DelayedQueue::destroy): drop it first.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn ex(client: fred::clients::Client) -> Result<(), delayq::Error> {
    /// let queue = delayq::DelayedQueue::new(client, "orders", delayq::codec::StringCodec).await?;
    /// if let Some(group) = queue.inspect().scheduler_group() {
    ///     println!("subscribed: {}", group.is_subscribed());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn scheduler_group(self) -> Option<SchedulerGroup> {
        let lease = self
            .queue
            .inner
            .lease
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        lease.as_ref().map(|lease| lease.group().clone())
    }
}
