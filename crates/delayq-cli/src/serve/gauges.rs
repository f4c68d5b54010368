//! The queues' gauges: read in the background at a bounded rate of Redis commands, a slice of
//! the queues at a time in rotation, and rendered from the last values on each scrape (a
//! scrape never waits on Redis). A queue that leaves the list stays read while its last read
//! found values in it (ready, in flight, dead, quarantined, pending) or failed, so that a queue
//! a transfer no longer moves for keeps the gauges its alerts read; it loses its series once a
//! read finds it empty. A queue whose read fails is `delayq_unreadable` 1 (the others 0) and
//! keeps its last values. A queue with flow-control limits also gets what they hold (slots,
//! values held back) and its cap, read with the library's `limit_usage` (one script call) and
//! its limits' hash after its counts. `gauges/text.rs` renders them as Prometheus text.

mod text;

use delayq::codec::ByteArrayCodec;
use delayq::fred::clients::{Client, Pipeline};
use delayq::fred::interfaces::{
    KeysInterface, ListInterface, MemoryInterface, SortedSetsInterface,
};
use delayq::fred::prelude::Value;
use delayq::{DelayedQueue, QueueKeys};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a slice of the queues is read.
const EVERY: Duration = Duration::from_secs(2);
/// The counting commands of one queue's read (see [`queue_read`]); a `MEMORY USAGE` of each of
/// its keys follows them when its memory is measured.
const COUNTS: usize = 9;
/// Keys sampled per `MEMORY USAGE` (Redis's default): the command is O(samples), whatever the
/// key's size.
const MEMORY_SAMPLES: u32 = 5;
/// A queue's memory is measured on every this many passes over all the queues (and on the
/// first, so a fresh process has figures), its last figure kept between: the `MEMORY USAGE`s
/// outnumber the counts and memory changes slowly, while the counts drive alerts and the
/// dashboard's order, so the budget goes to them.
const MEMORY_EVERY: u64 = 4;

/// Whether the queue at `position` of the sorted names has its memory measured in `pass`: all
/// on the first pass, then one in [`MEMORY_EVERY`] each pass, in turn, so every slice costs
/// about the same.
fn measures_memory(pass: u64, position: usize) -> bool {
    pass == 0 || (pass + position as u64).is_multiple_of(MEMORY_EVERY)
}

/// Redis commands one queue's read takes (see [`queue_read`]), with or without its `memory`.
fn commands_per_queue(memory: bool) -> usize {
    COUNTS
        + if memory {
            QueueKeys::new("").stored().len()
        } else {
            0
        }
}

/// Queues one slice reads in `pass` within `budget` commands a second: what a queue takes on
/// average, counted over [`MEMORY_EVERY`] queues (every one measured on the first pass).
fn queues_per_slice(budget: u32, pass: u64) -> usize {
    let measured = if pass == 0 { MEMORY_EVERY } else { 1 };
    let commands = (MEMORY_EVERY - measured) * commands_per_queue(false) as u64
        + measured * commands_per_queue(true) as u64;
    (u64::from(budget) * EVERY.as_secs() * MEMORY_EVERY / commands).max(1) as usize
}

/// Queues read in one pipeline.
const PIPELINE_QUEUES: usize = 100;

/// One queue's last read.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    pending: u64,
    ready: u64,
    quarantined: u64,
    in_flight: u64,
    inflight_overdue: u64,
    dead: u64,
    paused: bool,
    /// Due time of the earliest pending entry when it is due (one not due is not read: the
    /// entry, which may hold a value of many MiB, would be copied into the reply).
    overdue_since_ms: Option<i64>,
    /// Since when the target list has been seen holding values, never empty in between.
    ready_since_ms: Option<i64>,
    /// When it was read, epoch ms.
    read_ms: i64,
    /// Bytes Redis uses for the queue's keys (those it could measure) when last measured.
    memory: Option<u64>,
    /// The queue has flow-control limits stored.
    limited: bool,
    /// What its limits hold (read only when it has limits).
    limit_use: Option<LimitUse>,
}

/// What a queue's limits hold, and its cap.
#[derive(Debug, Clone, Copy, Default)]
struct LimitUse {
    slots_held: u64,
    values_held: u64,
    /// The concurrency cap, if the limits have one (and could be read).
    concurrency: Option<u32>,
}

impl Reading {
    /// The read found values in the queue: pending, ready, in flight, dead or quarantined.
    fn holds_values(&self) -> bool {
        self.pending + self.ready + self.in_flight + self.dead + self.quarantined > 0
    }
}

/// The last reading of every queue, shared by the reader, `/metrics` and the dashboard's order.
#[derive(Default)]
pub(crate) struct Readings(Mutex<Held>);

#[derive(Default)]
struct Held {
    readings: BTreeMap<String, Reading>,
    /// The queues whose last read failed (a wrong-typed key, say), and when: they keep their
    /// last values for `/metrics`.
    failing: BTreeMap<String, i64>,
}

/// One queue as the background read last saw it: what the dashboard sorts and filters every
/// queue by without reading each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) pending: u64,
    pub(crate) ready: u64,
    pub(crate) in_flight: u64,
    pub(crate) dead: u64,
    pub(crate) quarantined: u64,
    pub(crate) paused: bool,
    /// Due time of the earliest pending entry if it was due when read.
    pub(crate) overdue_since_ms: Option<i64>,
    /// Since when its list has been seen holding values, never empty in between.
    pub(crate) ready_since_ms: Option<i64>,
    /// The last read failed.
    pub(crate) failing: bool,
    /// When it was read, epoch ms.
    pub(crate) read_ms: i64,
}

/// The periodic read behind the gauges, stopped with the server that runs it.
pub(crate) struct Gauges {
    pub(crate) client: Client,
    /// The queues to read, asked before each slice.
    pub(crate) names: Box<dyn Fn() -> Vec<String> + Send + Sync>,
    /// Redis commands a second the reads may take.
    pub(crate) budget: u32,
}

impl Gauges {
    /// Reads slices of the queues into `readings` every 2 s, the queue after the last one
    /// read first, until `stop`.
    pub(crate) async fn run(self, readings: Arc<Readings>, stop: CancellationToken) {
        let mut rotation = Rotation::default();
        let mut limited = LimitReads::default();
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            let mut names = (self.names)();
            names.extend(readings.holding());
            names.sort_unstable();
            names.dedup();
            readings.retain(&names);
            limited.retain(&names);
            let slice = rotation.next_slice(&names, self.budget);
            for chunk in slice.chunks(PIPELINE_QUEUES) {
                let read = tokio::select! {
                    _ = stop.cancelled() => return,
                    read = read_chunk(&self.client, chunk) => read,
                };
                let read = tokio::select! {
                    _ = stop.cancelled() => return,
                    read = limited.read(&self.client, chunk, read) => read,
                };
                readings.update(chunk, read, delayq::time::now_ms());
            }
        }
    }
}

/// Where the reads are in their turn over the queues.
#[derive(Default)]
struct Rotation {
    /// The last queue read.
    last: Option<String>,
    /// Passes over all the queues completed.
    pass: u64,
}

impl Rotation {
    /// The next slice of the sorted `names` within `budget` commands a second, from the one
    /// after the last read, wrapping around: each name with whether its memory is measured.
    fn next_slice(&mut self, names: &[String], budget: u32) -> Vec<(String, bool)> {
        let len = names.len().max(1);
        let count = queues_per_slice(budget, self.pass).min(names.len());
        let start = self.last.as_deref().map_or(0, |last| {
            names.partition_point(|n| n.as_str() <= last) % len
        });
        let slice: Vec<_> = (start..start + count)
            .map(|at| {
                let measure = measures_memory(self.pass + (at / len) as u64, at % len);
                (names[at % len].clone(), measure)
            })
            .collect();
        self.pass += ((start + count) / len) as u64;
        if let Some((name, _)) = slice.last() {
            self.last = Some(name.clone());
        }
        slice
    }
}

/// The handles the limits of queues are read with, made once per queue (a handle is cheap,
/// but making one says again what its name means).
#[derive(Default)]
struct LimitReads(HashMap<String, DelayedQueue<ByteArrayCodec>>);

impl LimitReads {
    /// Forgets the queues not in the sorted `names`.
    fn retain(&mut self, names: &[String]) {
        self.0.retain(|name, _| names.binary_search(name).is_ok());
    }

    /// `reads` of `queues` with, for each queue that has limits, what they hold and its cap
    /// (left out when that read fails: the counts stand).
    async fn read(
        &mut self,
        client: &Client,
        queues: &[(String, bool)],
        mut reads: Vec<Option<Reading>>,
    ) -> Vec<Option<Reading>> {
        for ((name, _), read) in queues.iter().zip(reads.iter_mut()) {
            let Some(read) = read.as_mut().filter(|r| r.limited) else {
                continue;
            };
            if !self.0.contains_key(name) {
                let builder = DelayedQueue::builder(client.clone(), name.as_str(), ByteArrayCodec);
                let Ok(queue) = builder.transfer(false).build().await else {
                    continue;
                };
                self.0.insert(name.clone(), queue);
            }
            let limits = self.0[name].limits();
            if let Ok(usage) = limits.usage().await {
                let concurrency = match limits.get().await {
                    Ok(stored) => stored.and_then(|limits| limits.concurrency()),
                    Err(_) => None,
                };
                read.limit_use = Some(LimitUse {
                    slots_held: usage.slots_held,
                    values_held: usage.values_held,
                    concurrency,
                });
            }
        }
        reads
    }
}

/// Reads each queue of `queues` (its memory too where marked) in one pipeline; a queue whose
/// read failed is `None`.
async fn read_chunk(client: &Client, queues: &[(String, bool)]) -> Vec<Option<Reading>> {
    let pipeline = client.pipeline();
    let now = delayq::time::now_ms();
    for (name, memory) in queues {
        queue_read(&pipeline, &QueueKeys::new(name.as_str()), now, *memory).await;
    }
    let mut replies = pipeline.try_all::<Value>().await.into_iter();
    queues
        .iter()
        .map(|&(_, memory)| {
            let replies = replies.by_ref().take(commands_per_queue(memory)).collect();
            reading(replies, memory)
        })
        .collect()
}

/// Queues one queue's commands: every one O(1) or O(log n), then, with `memory`, a sampled
/// `MEMORY USAGE` of each of its keys.
async fn queue_read(pipeline: &Pipeline<Client>, keys: &QueueKeys, now_ms: i64, memory: bool) {
    // Queuing only fails for a command that cannot be encoded; its reply then says so.
    let _: Result<(), _> = pipeline.llen(keys.order()).await;
    let _: Result<(), _> = pipeline.llen(keys.target()).await;
    let _: Result<(), _> = pipeline.llen(keys.quarantine()).await;
    let _: Result<(), _> = pipeline.llen(keys.dead()).await;
    let _: Result<(), _> = pipeline.zcard(keys.inflight()).await;
    let _: Result<(), _> = pipeline
        .zcount(keys.inflight(), f64::NEG_INFINITY, now_ms as f64)
        .await;
    let _: Result<(), _> = pipeline.exists(keys.paused()).await;
    let _: Result<(), _> = pipeline.exists(keys.limits()).await;
    let _: Result<(), _> = pipeline
        .zrangebyscore(keys.timeout(), "-inf", now_ms as f64, true, Some((0, 1)))
        .await;
    if memory {
        for key in keys.stored() {
            let _: Result<(), _> = pipeline.memory_usage(key, Some(MEMORY_SAMPLES)).await;
        }
    }
}

/// A queue's reading from the replies of [`queue_read`], in its order (`memory`: it measured
/// the memory).
fn reading(
    mut replies: Vec<Result<Value, delayq::fred::error::Error>>,
    memory: bool,
) -> Option<Reading> {
    // A key Redis would not measure (`MEMORY` refused by an ACL) adds nothing; the counts stand.
    let measured = replies
        .split_off(COUNTS.min(replies.len()))
        .into_iter()
        .filter_map(|reply| reply.ok()?.as_u64())
        .sum();
    let memory = memory.then_some(measured);
    let replies: Vec<Value> = replies.into_iter().collect::<Result<_, _>>().ok()?;
    let [pending, ready, quarantined, dead, in_flight, overdue, paused, limited, head] =
        <[Value; COUNTS]>::try_from(replies).ok()?;
    let count = |v: Value| v.as_u64();
    let overdue_since_ms = match head {
        Value::Array(pair) => pair.get(1).and_then(Value::as_f64).map(|s| s as i64),
        _ => None,
    };
    Some(Reading {
        pending: count(pending)?,
        ready: count(ready)?,
        quarantined: count(quarantined)?,
        dead: count(dead)?,
        in_flight: count(in_flight)?,
        inflight_overdue: count(overdue)?,
        paused: count(paused)? > 0,
        overdue_since_ms,
        ready_since_ms: None,
        read_ms: 0,
        memory,
        limited: count(limited)? > 0,
        limit_use: None,
    })
}

impl Readings {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets the queues not in the sorted `names`.
    fn retain(&self, names: &[String]) {
        let mut held = self.lock();
        held.readings
            .retain(|name, _| names.binary_search(name).is_ok());
        held.failing
            .retain(|name, _| names.binary_search(name).is_ok());
    }

    /// The queues whose last read found values in them or failed: read on whether or not
    /// the process still lists them.
    fn holding(&self) -> Vec<String> {
        let held = self.lock();
        let holding = held.readings.iter().filter(|(_, r)| r.holds_values());
        let names = holding.map(|(name, _)| name.clone());
        names.chain(held.failing.keys().cloned()).collect()
    }

    /// Since when the queue `name`'s list has been seen holding values, never empty in between
    /// (none: seen empty, or not read yet).
    pub(crate) fn ready_since_ms(&self, name: &str) -> Option<i64> {
        self.lock().readings.get(name)?.ready_since_ms
    }

    /// Every queue read so far as last seen: one copy of the map, no read of Redis.
    pub(crate) fn seen(&self) -> HashMap<String, Seen> {
        let held = self.lock();
        let mut seen: HashMap<String, Seen> = held
            .readings
            .iter()
            .map(|(name, r)| {
                let seen = Seen {
                    pending: r.pending,
                    ready: r.ready,
                    in_flight: r.in_flight,
                    dead: r.dead,
                    quarantined: r.quarantined,
                    paused: r.paused,
                    overdue_since_ms: r.overdue_since_ms,
                    ready_since_ms: r.ready_since_ms,
                    failing: false,
                    read_ms: r.read_ms,
                };
                (name.clone(), seen)
            })
            .collect();
        for (name, &failed_ms) in &held.failing {
            let entry = seen.entry(name.clone()).or_default();
            (entry.failing, entry.read_ms) = (true, failed_ms);
        }
        seen
    }

    /// Takes in the reads of `queues` made at `now_ms`; a failed read keeps the last values, a
    /// read that did not measure the memory its last figure.
    fn update(&self, queues: &[(String, bool)], reads: Vec<Option<Reading>>, now_ms: i64) {
        let mut held = self.lock();
        for ((name, _), read) in queues.iter().zip(reads) {
            let Some(mut read) = read else {
                held.failing.insert(name.clone(), now_ms);
                continue;
            };
            held.failing.remove(name);
            let last = held.readings.get(name);
            let since = last.and_then(|r| r.ready_since_ms);
            read.memory = read.memory.or(last.and_then(|r| r.memory));
            read.ready_since_ms = (read.ready > 0).then(|| since.unwrap_or(now_ms));
            read.read_ms = now_ms;
            held.readings.insert(name.clone(), read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the slice after `last` in pass 0 with `budget`.
    fn slice_after(names: &[String], last: Option<&str>, budget: u32) -> Vec<String> {
        let mut rotation = Rotation {
            last: last.map(String::from),
            pass: 0,
        };
        let slice = rotation.next_slice(names, budget);
        slice.into_iter().map(|(name, _)| name).collect()
    }

    #[test]
    fn slices_rotate_over_the_sorted_names() {
        let names: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        // 23 commands a second: two queues of 23 commands in each 2 s slice.
        assert_eq!(slice_after(&names, None, 23), ["a", "b"]);
        assert_eq!(slice_after(&names, Some("b"), 23), ["c", "d"]);
        assert_eq!(slice_after(&names, Some("d"), 23), ["e", "a"]);
        // The last one read left meanwhile: the next after where it was.
        assert_eq!(slice_after(&names, Some("bb"), 23), ["c", "d"]);
        assert_eq!(slice_after(&names, Some("e"), 1_000), names);
        assert!(slice_after(&[], Some("a"), 23).is_empty());
    }

    #[test]
    fn memory_is_measured_on_the_first_pass_then_on_every_fourth() {
        let keys = QueueKeys::new("").stored().len();
        assert_eq!(
            (commands_per_queue(false), commands_per_queue(true)),
            (9, 23)
        );
        // The first pass measures every queue, so it reads fewer of them a slice: 23 commands
        // each. Later ones average 9 + 14 / 4 = 12.5 commands a queue.
        assert_eq!(queues_per_slice(1_000, 0), 2_000 / 23);
        assert_eq!(queues_per_slice(1_000, 1), 160);
        assert_eq!(queues_per_slice(1_000, 7), 160);

        let names: Vec<String> = (0..1_000).map(|n| format!("q{n:04}")).collect();
        let mut rotation = Rotation::default();
        let mut measured: HashMap<String, Vec<u64>> = HashMap::new();
        while rotation.pass < 9 {
            let pass = rotation.pass;
            let slice = rotation.next_slice(&names, 1_000);
            let commands: usize = slice
                .iter()
                .map(|&(_, memory)| commands_per_queue(memory))
                .sum();
            // Within the 2,000 commands of a slice, give or take one queue's keys.
            assert!(commands <= 2_000 + keys, "pass {pass}: {commands} commands");
            let first = slice[0].0.clone();
            for (name, memory) in slice {
                // A name before the slice's first is past the wrap: in the next pass.
                let pass = pass + u64::from(name < first);
                if memory && pass < 9 {
                    measured.entry(name).or_default().push(pass);
                }
            }
        }
        for name in &names {
            let passes = &measured[name];
            // Measured on the first pass, then once in each four of the eight after it.
            assert_eq!(passes[0], 0, "{name}: {passes:?}");
            assert_eq!(passes.len(), 3, "{name}: {passes:?}");
            assert_eq!(passes[2] - passes[1], 4, "{name}: {passes:?}");
        }
    }
}
