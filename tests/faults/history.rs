//! Histories of the partitions part: every offer, take and ack, with the time it was invoked,
//! the time it completed and its outcome, written by each process into its own file, and the
//! checker that merges them.
//!
//! A line is `KIND VALUE INVOKED_MS COMPLETED_MS OUTCOME HOST`, KIND being `offer`, `take` or
//! `ack` and OUTCOME `ok`, `fail` (certainly not done: an ack that found the lease gone) or `unk`
//! (an error or a timeout: it may or may not have happened; a durable offer that the master
//! took and no replica confirmed is `unk`, never `ok`). Values are `PREFIX-I-DUE` (DUE: the due
//! time, epoch ms) and unique.
//!
//! The orchestrator writes the faults to `faults.txt`, one line each: `KIND START_MS END_MS
//! HOSTS` (HOSTS: the comma-separated hosts cut off).

use super::{now_ms, AnyResult, Opts};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Durability, Error, ReliableConfig};
use rand::Rng;
use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One process's history file: a line per event, written and flushed at once, so a SIGKILL loses
/// at most the line being written.
#[derive(Clone)]
pub struct History {
    file: Arc<Mutex<File>>,
    host: String,
}

impl History {
    pub fn open(path: &str, host: &str) -> AnyResult<History> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(History {
            file: Arc::new(Mutex::new(file)),
            host: host.to_string(),
        })
    }

    pub fn record(&self, kind: &str, value: &str, invoked: i64, outcome: &str) {
        let line = format!(
            "{kind} {value} {invoked} {} {outcome} {}\n",
            now_ms(),
            self.host
        );
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = file.write_all(line.as_bytes());
    }
}

/// A flag raised when stdin closes: the orchestrator's way to stop a child gracefully.
fn stdin_closed() -> Arc<AtomicBool> {
    let closed = Arc::new(AtomicBool::new(false));
    let flag = closed.clone();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        flag.store(true, Ordering::SeqCst);
    });
    closed
}

/// Child `p-offer`: offers batches of `batch` values (delays 0..=`max-delay-ms`) every
/// `interval-ms` until stdin closes, one call at a time, each bounded by `timeout-ms`; with
/// `--durable N`, each call waits for N replicas (`all`: every replica, 1 s at most), and one they did not confirm
/// (`Error::NotConfirmed`: on the master, not confirmed) is `unk`.
pub async fn offer_main(opts: Opts) -> AnyResult<bool> {
    let prefix = opts.str("prefix")?;
    let history = History::open(&opts.str("history")?, &opts.str("host")?)?;
    let batch = opts.num("batch")?.max(1);
    let max_delay = opts.num("max-delay-ms")?;
    let interval = Duration::from_millis(opts.num("interval-ms")?);
    let timeout = Duration::from_millis(opts.num("timeout-ms")?);
    let client = delayq::connect(&opts.str("url")?).await?;
    let mut queue = DelayedQueue::builder(client.clone(), opts.str("queue")?, StringCodec)
        .transfer(false)
        .build()
        .await?;
    let durability = match opts.str("durable").as_deref() {
        Ok("all") => Some(Durability::every_replica()),
        Ok(_) => Some(Durability::replicas(opts.num("durable")? as u32)),
        Err(_) => None,
    };
    if let Some(durability) = durability {
        queue = queue.with_durability(durability.timeout(Duration::from_secs(1)));
    }
    let stop = stdin_closed();
    let mut not_confirmed = 0u64;
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let invoked = now_ms();
        let items: Vec<(String, Duration)> = (0..batch)
            .map(|k| {
                let delay = rand::rng().random_range(0..=max_delay);
                let due = invoked + delay as i64;
                (
                    format!("{prefix}-{}-{due}", i + k),
                    Duration::from_millis(delay),
                )
            })
            .collect();
        i += batch;
        let outcome = match tokio::time::timeout(timeout, queue.offer_all(&items)).await {
            Ok(Ok(())) => "ok",
            Ok(Err(Error::NotConfirmed { .. })) => {
                not_confirmed += 1;
                "unk"
            }
            Ok(Err(e)) => {
                eprintln!("{} offer {prefix}: {e}", now_ms());
                "unk"
            }
            Err(_) => {
                eprintln!("{} offer {prefix}: no reply within {timeout:?}", now_ms());
                "unk"
            }
        };
        for (value, _) in &items {
            history.record("offer", value, invoked, outcome);
        }
        tokio::time::sleep(interval).await;
    }
    eprintln!("offer {prefix}: {not_confirmed} calls not confirmed");
    Ok(true)
}

/// Child `p-work`: delayq's reliable consumer, `concurrency` takes at a time, `job-ms` of work
/// each, then the ack; runs until killed or stdin closes.
pub async fn work_main(opts: Opts) -> AnyResult<bool> {
    let history = History::open(&opts.str("history")?, &opts.str("host")?)?;
    let client = delayq::connect(&opts.str("url")?).await?;
    let queue = DelayedQueue::builder(client.clone(), opts.str("queue")?, StringCodec)
        .transfer(false)
        .build()
        .await?;
    let config = ReliableConfig::default()
        .with_visibility(Duration::from_millis(opts.num("visibility-ms")?))
        .with_wait_slice(Duration::from_millis(200))
        .with_reap_interval(Duration::from_millis(200));
    let consumer = Arc::new(queue.reliable_consumer_with(config).await?);
    let job = Duration::from_millis(opts.num("job-ms")?);
    for _ in 0..opts.num("concurrency")? {
        let consumer = consumer.clone();
        let history = history.clone();
        tokio::spawn(async move {
            loop {
                let invoked = now_ms();
                let delivery = match consumer.take().await {
                    Ok(d) => d,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let value = delivery.value().cloned().unwrap_or_default();
                history.record("take", &value, invoked, "ok");
                tokio::time::sleep(job).await;
                let invoked = now_ms();
                let outcome = match delivery.ack().await {
                    Ok(true) => "ok",
                    Ok(false) => "fail",
                    Err(_) => "unk",
                };
                history.record("ack", &value, invoked, outcome);
            }
        });
    }
    let stop = stdin_closed();
    while !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(true)
}

/// One recorded event.
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: String,
    pub value: String,
    pub invoked: i64,
    pub completed: i64,
    pub outcome: String,
    pub host: String,
}

/// A fault of the run: `hosts` were cut off from `start` until `end`.
#[derive(Clone, Debug)]
pub struct FaultSpan {
    pub kind: String,
    pub start: i64,
    pub end: i64,
    pub hosts: Vec<String>,
}

impl FaultSpan {
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {}\n",
            self.kind,
            self.start,
            self.end,
            self.hosts.join(",")
        )
    }
}

pub fn read_events(files: &[impl AsRef<Path>]) -> AnyResult<Vec<Event>> {
    let mut events = Vec::new();
    for file in files {
        for line in BufReader::new(File::open(file)?).lines() {
            let line = line?;
            let f: Vec<&str> = line.split_whitespace().collect();
            // A torn last line (the process was killed while writing it) is skipped.
            if f.len() != 6 {
                continue;
            }
            let (Ok(invoked), Ok(completed)) = (f[2].parse(), f[3].parse()) else {
                continue;
            };
            events.push(Event {
                kind: f[0].into(),
                value: f[1].into(),
                invoked,
                completed,
                outcome: f[4].into(),
                host: f[5].into(),
            });
        }
    }
    events.sort_by_key(|e| e.completed);
    Ok(events)
}

pub fn read_faults(path: &Path) -> AnyResult<Vec<FaultSpan>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(FaultSpan {
                kind: f.first()?.to_string(),
                start: f.get(1)?.parse().ok()?,
                end: f.get(2)?.parse().ok()?,
                hosts: f
                    .get(3)
                    .map(|h| h.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
            })
        })
        .collect())
}

/// The due time a value names.
fn due_of(value: &str) -> Option<i64> {
    value.rsplit('-').next()?.parse().ok()
}

/// The checker's verdicts, each a list of values with the fault kind they fall under.
#[derive(Default, Debug)]
pub struct Verdict {
    pub offered_ok: usize,
    pub offered_unk: usize,
    pub delivered: usize,
    /// Acknowledged offers never delivered and gone from Redis.
    pub lost: Vec<(String, String)>,
    /// Unknown offers delivered (they may or may not have been written: both are fine).
    pub unk_delivered: usize,
    /// A second delivery after an acknowledged one (not at-least-once redelivery).
    pub duplicated: Vec<(String, String)>,
    /// A second delivery after an acked one whose ack completed during a failover (the ack was
    /// written on the old master only).
    pub redelivered_after_lost_ack: Vec<(String, String)>,
    /// A second delivery after one that was never acked, or acked by a consumer cut off.
    pub redelivered: usize,
    pub early: Vec<(String, String)>,
    /// Values still in Redis after the drain, never delivered.
    pub stuck: Vec<(String, String)>,
}

/// The fault kind whose window (from 1 s before it began until `after_ms` after it ended)
/// holds `at`, or `none`; where windows overlap, the latest fault begun by then.
fn fault_at(faults: &[FaultSpan], at: i64, after_ms: i64) -> String {
    faults
        .iter()
        .filter(|f| at >= f.start - 1_000 && at <= f.end + after_ms)
        .max_by_key(|f| f.start)
        .map_or_else(|| "none".to_string(), |f| f.kind.clone())
}

/// Merges the histories. `left_in_redis`: the values still anywhere in the queue's keys at the
/// end. `failovers`: the fault kinds in which a replica was promoted.
pub fn check(events: &[Event], faults: &[FaultSpan], left_in_redis: &[String]) -> Verdict {
    let mut v = Verdict::default();
    let mut offers: HashMap<&str, &Event> = HashMap::new();
    let mut deliveries: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    let mut acks: HashMap<&str, Vec<&Event>> = HashMap::new();
    for e in events {
        match e.kind.as_str() {
            "offer" => {
                offers.insert(&e.value, e);
            }
            "take" => deliveries.entry(&e.value).or_default().push(e),
            "ack" => acks.entry(&e.value).or_default().push(e),
            _ => {}
        }
    }
    let left: std::collections::HashSet<&str> = left_in_redis.iter().map(String::as_str).collect();
    for (value, offer) in &offers {
        let ok = offer.outcome == "ok";
        if ok {
            v.offered_ok += 1;
        } else {
            v.offered_unk += 1;
        }
        let kind = fault_at(faults, offer.completed, 5_000);
        match deliveries.get(value) {
            None if left.contains(value) => v.stuck.push((value.to_string(), kind)),
            None if ok => v.lost.push((value.to_string(), kind)),
            None => {}
            Some(_) if !ok => v.unk_delivered += 1,
            Some(_) => {}
        }
    }
    for (value, takes) in &deliveries {
        v.delivered += 1;
        let acks = acks.get(value).map(Vec::as_slice).unwrap_or(&[]);
        for (i, take) in takes.iter().enumerate() {
            if due_of(value).is_some_and(|due| take.completed < due) {
                v.early
                    .push((value.to_string(), fault_at(faults, take.completed, 5_000)));
            }
            let Some(earlier) = takes[..i].last() else {
                continue;
            };
            // The ack of the earlier delivery: the first one it made after taking it.
            let ack = acks
                .iter()
                .find(|a| a.host == earlier.host && a.invoked >= earlier.completed);
            match ack {
                Some(a) if a.outcome == "ok" => {
                    let kind = fault_at(faults, a.completed, 0);
                    if kind == "none" || !fault_promotes(&kind) {
                        v.duplicated.push((value.to_string(), kind));
                    } else {
                        v.redelivered_after_lost_ack.push((value.to_string(), kind));
                    }
                }
                _ => v.redelivered += 1,
            }
        }
    }
    v
}

/// Fault kinds during which the sentinels may promote a replica that lacks writes the old master
/// acknowledged: those are dropped when it rejoins as a replica. A planned failover is not one
/// of them (the old master's writes are paused until every replica has them).
pub fn fault_promotes(kind: &str) -> bool {
    matches!(
        kind,
        "isolation" | "consumer-cut" | "flapping" | "forced-failover"
    )
}

/// Tokens that look like values in raw Redis output (entries carry the value's bytes).
pub fn values_in(raw: &str) -> Vec<String> {
    raw.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|t| t.matches('-').count() == 2 && due_of(t).is_some())
        .map(str::to_string)
        .collect()
}

/// `delayq-soak check-history --dir DIR`: the checker alone, on the histories and `faults.txt` a
/// kept run left in DIR (values still in Redis are not known there: none counts as stuck).
pub fn check_main(opts: Opts) -> AnyResult<bool> {
    let dir = std::path::PathBuf::from(opts.str("dir")?);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with("history-") && name.ends_with(".txt") {
            files.push(path);
        }
    }
    let events = read_events(&files)?;
    let faults = read_faults(&dir.join("faults.txt"))?;
    let v = check(&events, &faults, &[]);
    let unexplained: Vec<&(String, String)> =
        v.lost.iter().filter(|(_, k)| !fault_promotes(k)).collect();
    println!(
        "{} acknowledged offers, {} unknown, {} delivered; lost: {} in failovers, {} outside \
         them {:?}; delivered twice after an ack: {:?}; after an ack lost in a failover: {}; \
         early: {:?}",
        v.offered_ok,
        v.offered_unk,
        v.delivered,
        v.lost.len() - unexplained.len(),
        unexplained.len(),
        unexplained,
        v.duplicated,
        v.redelivered_after_lost_ack.len(),
        v.early
    );
    Ok(v.duplicated.is_empty() && v.early.is_empty() && unexplained.is_empty())
}
