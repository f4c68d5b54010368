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
//!
//! Beside them, per-day counts for [`DAYS_KEPT`] (90) UTC days, written by the same flush in
//! the same round trip: one hash per queue and ten days
//! (`delayq_activity:{NAME}:day:FIRST_DAY`, fields `D:moved` … for the day `FIRST_DAY + D`),
//! expiring 90 days after its last day, so a queue holds at most ten of them and the oldest
//! day kept is read as long as it is within 90 days. Ten days a hash, measured the same way
//! (Redis 7.0, `MEMORY USAGE` summed over a queue's keys while it is busy every day, counts
//! of seven digits, the worst over a month of days): 8.7 KB, against 10.7 KB with thirty days
//! a hash (150 fields, still a listpack, but a bucket outlives the 90 days by up to 29) and
//! 16.7 KB with a hash per day.

use crate::error::Error;
use crate::keys::{activity_days_key, activity_key, QueueKeys};
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

/// Milliseconds in a day: daily counts are per UTC day since the epoch.
const DAY_MS: i64 = 24 * 60 * MINUTE_MS;

/// Days a daily bucket (one hash) holds.
pub(crate) const BUCKET_DAYS: i64 = 10;

/// Days of daily counts kept, and the most one read of them returns.
pub const DAYS_KEPT: usize = 90;

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

    /// The field of the event in the day `day` of its daily bucket.
    fn day_field(self, day: i64) -> String {
        format!("{}:{}", day.rem_euclid(BUCKET_DAYS), self.name())
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
}

/// One UTC day of a queue's activity, as every delayq process serving it counted it.
/// Serializes with its fields' names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct DayActivity {
    /// The day, an ISO 8601 date in UTC (`2026-12-03`).
    pub date: String,
    /// The day's start (midnight UTC), epoch ms.
    pub day_ms: i64,
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

impl DayActivity {
    /// Jobs failed: retried plus dead-lettered.
    pub fn failed(&self) -> u64 {
        self.retried + self.dead
    }
}

/// The counts of the five events (in [`Event::ALL`]'s order) a bucket's fields hold for one
/// minute or day, `field` naming an event's field; a missing field counts zero.
fn counts_in(
    fields: Option<&HashMap<String, String>>,
    field: impl Fn(Event) -> String,
) -> [u64; 5] {
    Event::ALL.map(|event| {
        fields
            .and_then(|f| f.get(&field(event))?.parse().ok())
            .unwrap_or(0)
    })
}

/// The minute of `ms`, epoch ms.
pub(crate) fn minute_of(ms: i64) -> i64 {
    ms.div_euclid(MINUTE_MS)
}

/// The first minute of the bucket holding `minute`.
fn bucket_of(minute: i64) -> i64 {
    minute - minute.rem_euclid(BUCKET_MINUTES)
}

/// The UTC day of the minute `minute`, days since the epoch.
fn day_of_minute(minute: i64) -> i64 {
    (minute * MINUTE_MS).div_euclid(DAY_MS)
}

/// The first day of the daily bucket holding `day`.
fn day_bucket_of(day: i64) -> i64 {
    day - day.rem_euclid(BUCKET_DAYS)
}

/// The ISO 8601 date of the UTC day `day` (days since the epoch).
fn iso_date(day: i64) -> String {
    jiff::Timestamp::from_millisecond(day * DAY_MS)
        .map(|t| t.to_zoned(jiff::tz::TimeZone::UTC).date().to_string())
        .unwrap_or_default()
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
/// one `PEXPIRE` from each process rather than one per flush: (queue, first minute) of the
/// minute buckets, (queue, first day) of the daily ones.
#[derive(Debug, Default)]
pub(crate) struct Expiring {
    minutes: HashSet<(String, i64)>,
    days: HashSet<(String, i64)>,
}

/// Writes the tally's counts: `HINCRBY` per count in its minute's bucket and per count in its
/// day's bucket (the minutes of a day added up), and a `PEXPIRE` for each bucket this process
/// has not set one on, in one pipelined round trip. The number of commands sent.
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
        .minutes
        .retain(|(_, bucket)| *bucket >= current - BUCKET_MINUTES);
    let current_days = day_bucket_of(day_of_minute(minute_of(now_ms)));
    expiring
        .days
        .retain(|(_, bucket)| *bucket >= current_days - BUCKET_DAYS);
    if counts.is_empty() {
        return Ok(0);
    }
    let pipeline = client.pipeline();
    let mut sent = 0;
    let mut new_buckets = HashSet::new();
    let mut days: HashMap<(&str, i64), [u64; 5]> = HashMap::new();
    for ((queue, minute), slot) in &counts {
        let day = days.entry((queue, day_of_minute(*minute))).or_default();
        day.iter_mut().zip(slot).for_each(|(sum, n)| *sum += n);
    }
    for ((queue, minute), slot) in &counts {
        let bucket = bucket_of(*minute);
        let id = (queue.clone(), bucket);
        // The bucket lives the history from its last minute's end.
        let ttl = (!expiring.minutes.contains(&id) && new_buckets.insert(id))
            .then(|| (bucket + BUCKET_MINUTES) * MINUTE_MS + history_ms - now_ms);
        let key = activity_key(queue, bucket);
        sent += add_counts(&pipeline, &key, slot, |e| e.field(*minute), ttl).await;
    }
    let mut new_day_buckets = HashSet::new();
    for ((queue, day), slot) in &days {
        let bucket = day_bucket_of(*day);
        let id = (queue.to_string(), bucket);
        // The bucket lives the days kept from its last day's end.
        let ttl = (!expiring.days.contains(&id) && new_day_buckets.insert(id))
            .then(|| (bucket + BUCKET_DAYS + DAYS_KEPT as i64) * DAY_MS - now_ms);
        let key = activity_days_key(queue, bucket);
        sent += add_counts(&pipeline, &key, slot, |e| e.day_field(*day), ttl).await;
    }
    let replies = pipeline.try_all::<fred::types::Value>().await;
    if let Some(Err(err)) = replies.into_iter().find(Result::is_err) {
        let lost: u64 = counts.values().flatten().sum();
        tracing::debug!(lost, "activity counts dropped");
        return Err(Error::from_redis("HINCRBY", "delayq_activity", err));
    }
    expiring.minutes.extend(new_buckets);
    expiring.days.extend(new_day_buckets);
    Ok(sent)
}

/// Queues on `pipeline` an `HINCRBY` of `key` for each count of `slot` above zero (the field
/// `field_of` names for its event) and, with `ttl_ms`, a `PEXPIRE`: the number of commands.
async fn add_counts(
    pipeline: &fred::clients::Pipeline<Client>,
    key: &str,
    slot: &[u64; 5],
    field_of: impl Fn(Event) -> String,
    ttl_ms: Option<i64>,
) -> usize {
    let mut sent = 0;
    for (event, n) in Event::ALL.into_iter().zip(slot).filter(|(_, n)| **n > 0) {
        let _: std::result::Result<(), _> = pipeline.hincrby(key, field_of(event), *n as i64).await;
        sent += 1;
    }
    if let Some(ttl) = ttl_ms {
        let _: std::result::Result<(), _> = pipeline.pexpire(key, ttl.max(1), None).await;
        sent += 1;
    }
    sent
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
    let fields = read_buckets(client, &buckets, |bucket| keys.activity(bucket)).await?;
    let activity = (first..=current).map(|minute| {
        let [moved, taken, acked, retried, dead] =
            counts_in(fields.get(&bucket_of(minute)), |e| e.field(minute));
        MinuteActivity {
            minute_ms: minute * MINUTE_MS,
            moved,
            taken,
            acked,
            retried,
            dead,
        }
    });
    Ok(activity.collect())
}

/// The last `days` UTC days of the queue `keys` (today last; at most [`DAYS_KEPT`]), a day
/// nobody counted anything in as zeros; one pipelined round trip of at most ten `HGETALL`.
pub(crate) async fn read_days(
    client: &Client,
    keys: &QueueKeys,
    days: usize,
    now_ms: i64,
) -> Result<Vec<DayActivity>> {
    let today = day_of_minute(minute_of(now_ms));
    let first = today - days.min(DAYS_KEPT) as i64 + 1;
    if first > today {
        return Ok(Vec::new());
    }
    let buckets: Vec<i64> = (day_bucket_of(first)..=today)
        .step_by(BUCKET_DAYS as usize)
        .collect();
    let fields = read_buckets(client, &buckets, |bucket| keys.activity_days(bucket)).await?;
    let activity = (first..=today).map(|day| {
        let [moved, taken, acked, retried, dead] =
            counts_in(fields.get(&day_bucket_of(day)), |e| e.day_field(day));
        DayActivity {
            date: iso_date(day),
            day_ms: day * DAY_MS,
            moved,
            taken,
            acked,
            retried,
            dead,
        }
    });
    Ok(activity.collect())
}

/// The fields of each bucket hash (`key_of(bucket)`), read in one pipelined round trip of
/// `HGETALL`s: the minute buckets and the day buckets alike.
async fn read_buckets(
    client: &Client,
    buckets: &[i64],
    key_of: impl Fn(i64) -> String,
) -> Result<HashMap<i64, HashMap<String, String>>> {
    let pipeline = client.pipeline();
    for bucket in buckets {
        let _: std::result::Result<(), _> = pipeline.hgetall(key_of(*bucket)).await;
    }
    let replies = pipeline.try_all::<HashMap<String, String>>().await;
    let mut fields = HashMap::new();
    for (bucket, reply) in buckets.iter().zip(replies) {
        let reply = reply.map_err(|e| Error::from_redis("HGETALL", &key_of(*bucket), e))?;
        fields.insert(*bucket, reply);
    }
    Ok(fields)
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
    fn days_split_at_utc_midnight_and_buckets_at_ten() {
        // 2025-12-03T23:59 and 2025-12-04T00:00 UTC, in minutes since the epoch.
        let (last, next) = (29_413_439, 29_413_440);
        assert_eq!((day_of_minute(last), day_of_minute(next)), (20_425, 20_426));
        assert_eq!(
            (iso_date(20_425), iso_date(20_426)),
            ("2025-12-03".to_owned(), "2025-12-04".to_owned())
        );
        assert_eq!(iso_date(0), "1970-01-01");
        assert_eq!(
            (day_bucket_of(20_429), day_bucket_of(20_430)),
            (20_420, 20_430)
        );
        assert_eq!(Event::Dead.day_field(20_426), "6:dead");
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
