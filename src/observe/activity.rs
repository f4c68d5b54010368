//! Per-minute activity counts of a queue, kept in Redis: one small hash per queue and ten
//! minutes (`delayq_activity:{NAME}:FIRST_MINUTE`, fields `M:moved`, `M:taken`, `M:acked`,
//! `M:retried`, `M:dead` for the minute `FIRST_MINUTE + M`), expiring after the history kept.
//! Each process adds its counts up in memory and writes them with `HINCRBY` in one pipelined
//! round trip per flush, so every process's counts add up in the same hash and Redis drops old
//! buckets by itself.
//!
//! Ten minutes a hash, because it is the cheapest layout measured (Redis 7.0, two hours of a
//! queue busy every minute): a hash per minute costs 26.6 KB (the key and its expiry weigh more
//! than five counts), one hash per queue 43.9 KB (300 fields leave the compact listpack
//! encoding) and a trim of its own, a hash per ten minutes 9.5 KB (50 fields stay a listpack).

use crate::error::Error;
use crate::keys::{activity_key, QueueKeys};
use crate::Result;
use fred::clients::Client;
use fred::interfaces::{HashesInterface, KeysInterface};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

/// Milliseconds in a minute: counts are per whole minute since the epoch.
const MINUTE_MS: i64 = 60_000;

/// Minutes a bucket (one hash) holds.
pub(crate) const BUCKET_MINUTES: i64 = 10;

/// The most minutes one read returns (a day).
pub(crate) const MAX_MINUTES: usize = 24 * 60;

/// What happened to a value, as counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Moved by a scheduler from pending to the target list.
    Moved,
    /// Taken by a worker.
    Taken,
    /// Acknowledged after its job succeeded.
    Acked,
    /// Failed and planned again.
    Retried,
    /// Failed for good: a dead letter.
    Dead,
}

impl Event {
    const ALL: [Event; 5] = [
        Event::Moved,
        Event::Taken,
        Event::Acked,
        Event::Retried,
        Event::Dead,
    ];

    /// The field of the event in the minute `minute` of its bucket.
    fn field(self, minute: i64) -> String {
        format!("{}:{}", minute.rem_euclid(BUCKET_MINUTES), self.name())
    }

    fn name(self) -> &'static str {
        match self {
            Event::Moved => "moved",
            Event::Taken => "taken",
            Event::Acked => "acked",
            Event::Retried => "retried",
            Event::Dead => "dead",
        }
    }
}

/// One minute of a queue's activity, as every delayq process serving it counted it.
/// Serializes with its fields' names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct MinuteActivity {
    /// The minute's start, epoch ms.
    pub minute_ms: i64,
    /// Values moved by schedulers from pending to the target list.
    pub moved: u64,
    /// Values taken by workers.
    pub taken: u64,
    /// Jobs acknowledged.
    pub acked: u64,
    /// Jobs failed and planned again.
    pub retried: u64,
    /// Jobs failed for good (dead letters).
    pub dead: u64,
}

impl MinuteActivity {
    /// Jobs failed: retried plus dead-lettered.
    pub fn failed(&self) -> u64 {
        self.retried + self.dead
    }

    fn set(&mut self, event: Event, count: u64) {
        let slot = match event {
            Event::Moved => &mut self.moved,
            Event::Taken => &mut self.taken,
            Event::Acked => &mut self.acked,
            Event::Retried => &mut self.retried,
            Event::Dead => &mut self.dead,
        };
        *slot = count;
    }
}

/// The minute of `ms`, epoch ms.
pub(crate) fn minute_of(ms: i64) -> i64 {
    ms.div_euclid(MINUTE_MS)
}

/// The first minute of the bucket holding `minute`.
fn bucket_of(minute: i64) -> i64 {
    minute - minute.rem_euclid(BUCKET_MINUTES)
}

/// Counts added up in the process since the last flush: queue → minute → count per event
/// (by queue first, so that counting allocates only for a queue's first event of a flush).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    counts: Mutex<HashMap<String, HashMap<i64, [u64; 5]>>>,
}

impl Tally {
    pub(crate) fn add(&self, queue: &str, minute: i64, event: Event, n: u64) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let index = Event::ALL.iter().position(|e| *e == event).unwrap_or(0);
        let minutes = match counts.get_mut(queue) {
            Some(minutes) => minutes,
            None => counts.entry(queue.to_owned()).or_default(),
        };
        minutes.entry(minute).or_default()[index] += n;
    }

    /// The counts so far, by (queue, minute), leaving none.
    fn take(&self) -> HashMap<(String, i64), [u64; 5]> {
        let counts =
            std::mem::take(&mut *self.counts.lock().unwrap_or_else(PoisonError::into_inner));
        counts
            .into_iter()
            .flat_map(|(queue, minutes)| {
                minutes
                    .into_iter()
                    .map(move |(minute, slot)| ((queue.clone(), minute), slot))
            })
            .collect()
    }
}

/// The flush's memory of the buckets it has given their time to live, so that a bucket gets
/// one `PEXPIRE` from each process rather than one per flush.
#[derive(Debug, Default)]
pub(crate) struct Expiring(HashSet<(String, i64)>);

/// Writes the tally's counts: `HINCRBY` per count and a `PEXPIRE` for each bucket this
/// process has not set one on, in one pipelined round trip. The number of commands sent.
/// Counts of a failed flush are dropped (a resend could count twice) and logged.
pub(crate) async fn flush(
    client: &Client,
    tally: &Tally,
    expiring: &mut Expiring,
    history_ms: i64,
    now_ms: i64,
) -> Result<usize> {
    let counts = tally.take();
    // Buckets before the last are written no more; a late flush of one sets its TTL again.
    let current = bucket_of(minute_of(now_ms));
    expiring
        .0
        .retain(|(_, bucket)| *bucket >= current - BUCKET_MINUTES);
    if counts.is_empty() {
        return Ok(0);
    }
    let pipeline = client.pipeline();
    let mut sent = 0;
    let mut new_buckets = HashSet::new();
    for ((queue, minute), slot) in &counts {
        let bucket = bucket_of(*minute);
        let key = activity_key(queue, bucket);
        for (event, n) in Event::ALL.into_iter().zip(slot).filter(|(_, n)| **n > 0) {
            let _: std::result::Result<(), _> = pipeline
                .hincrby(&key, event.field(*minute), *n as i64)
                .await;
            sent += 1;
        }
        let id = (queue.clone(), bucket);
        if !expiring.0.contains(&id) && new_buckets.insert(id) {
            // The bucket lives the history from its last minute's end.
            let ttl = (bucket + BUCKET_MINUTES) * MINUTE_MS + history_ms - now_ms;
            let _: std::result::Result<(), _> = pipeline.pexpire(&key, ttl.max(1), None).await;
            sent += 1;
        }
    }
    let replies = pipeline.try_all::<fred::types::Value>().await;
    if let Some(Err(err)) = replies.into_iter().find(Result::is_err) {
        let lost: u64 = counts.values().flatten().sum();
        tracing::debug!(lost, "activity counts dropped");
        return Err(Error::from_redis("HINCRBY", "delayq_activity", err));
    }
    expiring.0.extend(new_buckets);
    Ok(sent)
}

/// The last `minutes` minutes of the queue `keys` (the current one last; at most
/// [`MAX_MINUTES`]), a minute nobody counted anything in as zeros; one pipelined round trip.
pub(crate) async fn read(
    client: &Client,
    keys: &QueueKeys,
    minutes: usize,
    now_ms: i64,
) -> Result<Vec<MinuteActivity>> {
    let current = minute_of(now_ms);
    let first = current - minutes.min(MAX_MINUTES) as i64 + 1;
    let buckets: Vec<i64> = (bucket_of(first)..=current)
        .step_by(BUCKET_MINUTES as usize)
        .collect();
    let pipeline = client.pipeline();
    for bucket in &buckets {
        let _: std::result::Result<(), _> = pipeline.hgetall(keys.activity(*bucket)).await;
    }
    let replies = pipeline.try_all::<HashMap<String, String>>().await;
    let mut fields = HashMap::new();
    for (bucket, reply) in buckets.iter().zip(replies) {
        let reply = reply.map_err(|e| Error::from_redis("HGETALL", &keys.activity(*bucket), e))?;
        fields.insert(*bucket, reply);
    }
    let activity = (first..=current).map(|minute| {
        let mut activity = MinuteActivity {
            minute_ms: minute * MINUTE_MS,
            ..MinuteActivity::default()
        };
        let bucket = fields.get(&bucket_of(minute));
        for event in Event::ALL {
            let count = bucket.and_then(|f| f.get(&event.field(minute))?.parse().ok());
            activity.set(event, count.unwrap_or(0));
        }
        activity
    });
    Ok(activity.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_split_at_whole_minutes_and_buckets_at_ten() {
        assert_eq!(minute_of(59_999), 0);
        assert_eq!(minute_of(60_000), 1);
        assert_eq!(minute_of(-1), -1);
        assert_eq!(
            (bucket_of(29_673_009), bucket_of(29_673_010)),
            (29_673_000, 29_673_010)
        );
        assert_eq!(Event::Retried.field(29_673_007), "7:retried");
    }

    #[test]
    fn the_tally_adds_up_per_queue_and_minute() {
        let tally = Tally::default();
        tally.add("a", 1, Event::Taken, 2);
        tally.add("a", 1, Event::Taken, 3);
        tally.add("a", 2, Event::Dead, 1);
        let counts = tally.take();
        assert_eq!(counts[&("a".to_owned(), 1)], [0, 5, 0, 0, 0]);
        assert_eq!(counts[&("a".to_owned(), 2)], [0, 0, 0, 0, 1]);
        assert!(tally.take().is_empty());
    }

    #[test]
    fn failed_is_retried_and_dead() {
        let activity = MinuteActivity {
            retried: 2,
            dead: 1,
            ..MinuteActivity::default()
        };
        assert_eq!(activity.failed(), 3);
    }
}
