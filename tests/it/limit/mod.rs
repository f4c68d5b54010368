//! Limits across processes: stored per queue, enforced by every worker (several workers in
//! one test process stand for several processes: they share nothing but Redis; a worker on a
//! runtime of its own that is dropped stands for a killed process).

mod batch;
mod config;
mod malformed;
mod per_key;
mod queue_wide;
mod sharded;

use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Job, JobError, ReliableConfig, WorkerHandle};
use fred::interfaces::ListInterface;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A redis-server, a client on it and a fresh queue named after `prefix`.
async fn setup(prefix: &str) -> (TestRedis, fred::clients::Client, DelayedQueue<StringCodec>) {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client.clone(), unique_name(prefix), StringCodec)
        .build()
        .await
        .unwrap();
    (redis, client, queue)
}

/// Waits (up to `PATIENCE`) until `done` holds.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Short waits, so that tests see reaps and takes quickly.
fn fast(visibility: Duration) -> ReliableConfig {
    ReliableConfig::default()
        .with_visibility(visibility)
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(100))
}

/// Puts `values` on the target list at once (ready to take, in that order).
async fn push(
    client: &fred::clients::Client,
    queue: &DelayedQueue<StringCodec>,
    values: &[String],
) {
    for chunk in values.chunks(500) {
        let _: () = client.rpush(queue.name(), chunk.to_vec()).await.unwrap();
    }
}

/// What the handlers saw: jobs running now (all, and per key: the part before ':'), the most
/// at once, every start with its time, and every job's grant time (`Job::admitted_ms`).
#[derive(Default)]
struct Probe {
    running: usize,
    most: usize,
    by_key: HashMap<String, usize>,
    most_by_key: HashMap<String, usize>,
    starts: Vec<(String, Instant)>,
    admitted: Vec<(String, Option<i64>)>,
    done: usize,
}

type Shared = Arc<Mutex<Probe>>;

fn key_of(value: &str) -> String {
    value.split(':').next().unwrap_or_default().to_owned()
}

impl Probe {
    fn start(shared: &Shared, job: &Job<String>) {
        let value = job.value().as_str();
        let mut p = shared.lock().unwrap();
        p.admitted.push((value.to_owned(), job.admitted_ms()));
        p.running += 1;
        p.most = p.most.max(p.running);
        let n = {
            let n = p.by_key.entry(key_of(value)).or_default();
            *n += 1;
            *n
        };
        let most = p.most_by_key.entry(key_of(value)).or_default();
        *most = (*most).max(n);
        p.starts.push((value.to_owned(), Instant::now()));
    }

    fn end(shared: &Shared, value: &str) {
        let mut p = shared.lock().unwrap();
        p.running -= 1;
        *p.by_key.get_mut(&key_of(value)).unwrap() -= 1;
        p.done += 1;
    }
}

/// A worker of `concurrency` on `queue` whose handler records in `probe` and takes
/// `work(value)` to run.
fn worker(
    queue: &DelayedQueue<StringCodec>,
    concurrency: usize,
    probe: &Shared,
    visibility: Duration,
    work: fn(&str) -> Duration,
) -> WorkerHandle {
    let probe = probe.clone();
    queue
        .worker(concurrency, move |job: Job<String>| {
            let probe = probe.clone();
            async move {
                Probe::start(&probe, &job);
                tokio::time::sleep(work(job.value())).await;
                Probe::end(&probe, job.value());
                Ok::<(), JobError>(())
            }
        })
        .reliable_config(fast(visibility))
        .limit_key(|value: &String| value.contains(':').then(|| key_of(value)))
        .spawn()
        .unwrap()
}

/// Values `PREFIX:0` .. `PREFIX:{n-1}`.
fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}
