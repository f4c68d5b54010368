//! The limits of a sharded queue as a whole (`ShardedQueue::set_limits`): a cap and a rate
//! across every shard and every worker, on a standalone server and on a real 3-master Cluster
//! (the shards on every master, the limits in the slot of the logical name); per-key limits
//! refused with nothing stored. And a small run measuring their cost against one queue's.

use super::{Probe, Shared, PATIENCE};
use crate::common::{unique_name, TestCluster, TestRedis};
use delayq::codec::StringCodec;
use delayq::limit::{Limits, Rate};
use delayq::{DelayedQueue, Error, Job, JobError, ReliableConfig, ShardedQueue, WorkerHandle};
use std::time::{Duration, Instant};

fn fast() -> ReliableConfig {
    ReliableConfig::default()
        .with_visibility(Duration::from_secs(5))
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(100))
}

/// A worker of `concurrency` over every shard of `queue`, each job 20 ms, recorded in `probe`.
fn worker(queue: &ShardedQueue<StringCodec>, concurrency: usize, probe: &Shared) -> WorkerHandle {
    let probe = probe.clone();
    queue
        .worker(concurrency, move |job: Job<String>| {
            let probe = probe.clone();
            async move {
                Probe::start(&probe, &job);
                tokio::time::sleep(Duration::from_millis(20)).await;
                Probe::end(&probe, job.value());
                Ok::<(), JobError>(())
            }
        })
        .reliable_config(fast())
        .spawn()
        .unwrap()
}

async fn offer_now(queue: &ShardedQueue<StringCodec>, n: usize) {
    let values: Vec<(String, Duration)> =
        (0..n).map(|i| (format!("v{i}"), Duration::ZERO)).collect();
    queue.offer_all(&values).await.unwrap();
}

async fn wait_done(probe: &Shared, n: usize) {
    let deadline = Instant::now() + PATIENCE;
    while probe.lock().unwrap().done < n {
        assert!(
            Instant::now() < deadline,
            "{} of {n} done",
            probe.lock().unwrap().done
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Cap 3 over three workers of concurrency 10, each over every shard: never more than 3 jobs
/// at once, whichever shards their values came from; every reservation released at the end.
async fn cap_round(queue: &ShardedQueue<StringCodec>) {
    queue
        .limits()
        .set(&Limits::default().with_concurrency(3))
        .await
        .unwrap();
    assert_eq!(
        queue.limits().get().await.unwrap(),
        Some(Limits::default().with_concurrency(3))
    );
    let probe = Shared::default();
    let workers: Vec<_> = (0..3).map(|_| worker(queue, 10, &probe)).collect();
    offer_now(queue, 60).await;
    wait_done(&probe, 60).await;
    for w in workers {
        let stats = w.shutdown().await.unwrap();
        assert_eq!((stats.lost, stats.errors), (0, 0));
    }
    let most = probe.lock().unwrap().most;
    assert_eq!(
        most, 3,
        "{most} jobs ran at once under a cap of 3 (of 30 permits)"
    );
    let deadline = Instant::now() + PATIENCE;
    while queue.limits().usage().await.unwrap().slots_held > 0 {
        assert!(
            Instant::now() < deadline,
            "reservations left after the stop"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(queue.limits().clear().await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cap_of_a_sharded_queue_holds_across_its_shards_and_workers() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = ShardedQueue::new(client, unique_name("limit-sharded"), 4, StringCodec)
        .await
        .unwrap();
    cap_round(&queue).await;
    // Per-key limits are each shard's own: refused for the whole, nothing stored.
    let per_key = Limits::default().with_key_concurrency(1);
    let err = queue.limits().set(&per_key).await.unwrap_err();
    assert!(matches!(err, Error::InvalidConfig(_)), "{err}");
    assert_eq!(queue.limits().get().await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_of_a_sharded_queue_hold_on_a_cluster() {
    let cluster = TestCluster::start(3);
    let client = delayq::connect(&cluster.url()).await.unwrap();
    let queue = ShardedQueue::new(client, unique_name("limit-cluster"), 6, StringCodec)
        .await
        .unwrap();
    cap_round(&queue).await;
    // A rate of 10/s across two workers and six shards on three masters: 30 starts take at
    // least 2.75 s of grants (k grants are at least (k - 1)T - T/2 apart).
    let rate = Rate::new(10, Duration::from_secs(1)).unwrap();
    queue
        .limits()
        .set(&Limits::default().with_rate(rate))
        .await
        .unwrap();
    let probe = Shared::default();
    let workers: Vec<_> = (0..2).map(|_| worker(&queue, 4, &probe)).collect();
    let began = Instant::now();
    offer_now(&queue, 30).await;
    wait_done(&probe, 30).await;
    let took = began.elapsed();
    for w in workers {
        w.shutdown().await.unwrap();
    }
    assert!(
        took >= Duration::from_millis(2_700),
        "30 jobs in {took:?} under 10/s"
    );
}

/// Values per second taken and acked by one worker of concurrency 16 with an empty handler,
/// from its start to the last of `n` values offered due before it (one queue's).
async fn one_queue(url: &str, limits: Option<&Limits>, n: usize) -> f64 {
    let client = delayq::connect(url).await.unwrap();
    let queue = DelayedQueue::new(client, unique_name("cost-one"), StringCodec)
        .await
        .unwrap();
    if let Some(limits) = limits {
        queue.limits().set(limits).await.unwrap();
    }
    let values: Vec<(String, Duration)> =
        (0..n).map(|i| (format!("v{i}"), Duration::ZERO)).collect();
    queue.offer_all(&values).await.unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = done.clone();
    let began = Instant::now();
    let worker = queue
        .worker(16, move |_: Job<String>| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::future::ready(Ok::<(), JobError>(()))
        })
        .reliable_config(fast())
        .spawn()
        .unwrap();
    while done.load(std::sync::atomic::Ordering::Relaxed) < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let rate = n as f64 / began.elapsed().as_secs_f64();
    worker.shutdown().await.unwrap();
    queue.destroy().await.unwrap();
    rate
}

/// The same over a sharded queue of 4 shards.
async fn sharded(url: &str, limits: Option<&Limits>, n: usize) -> f64 {
    let client = delayq::connect(url).await.unwrap();
    let queue = ShardedQueue::new(client, unique_name("cost-sharded"), 4, StringCodec)
        .await
        .unwrap();
    if let Some(limits) = limits {
        queue.limits().set(limits).await.unwrap();
    }
    let values: Vec<(String, Duration)> =
        (0..n).map(|i| (format!("v{i}"), Duration::ZERO)).collect();
    queue.offer_all(&values).await.unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = done.clone();
    let began = Instant::now();
    let worker = queue
        .worker(16, move |_: Job<String>| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::future::ready(Ok::<(), JobError>(()))
        })
        .reliable_config(fast())
        .spawn()
        .unwrap();
    while done.load(std::sync::atomic::Ordering::Relaxed) < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let rate = n as f64 / began.elapsed().as_secs_f64();
    worker.shutdown().await.unwrap();
    queue.destroy().await.unwrap();
    rate
}

/// The cost of limits that never bind (cap 1,000, 1,000,000/s), one queue against a sharded
/// queue of 4 shards, each against itself without limits: alternating rounds, medians printed.
/// A measurement, not a check: `cargo test --release ... -- --ignored --nocapture
/// limit::sharded::cost`.
#[tokio::test(flavor = "multi_thread")]
#[ignore]
async fn cost_of_sharded_limits_against_one_queues() {
    let redis = TestRedis::start();
    let url = redis.url();
    let limits = Limits::default()
        .with_concurrency(1_000)
        .with_rate(Rate::new(1_000_000, Duration::from_secs(1)).unwrap());
    let n = 3_000;
    let mut rounds: [Vec<f64>; 4] = Default::default();
    for _ in 0..5 {
        rounds[0].push(one_queue(&url, None, n).await);
        rounds[1].push(one_queue(&url, Some(&limits), n).await);
        rounds[2].push(sharded(&url, None, n).await);
        rounds[3].push(sharded(&url, Some(&limits), n).await);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let [a, b, c, d] = rounds.each_mut().map(median);
    eprintln!(
        "values/s, {n} values, worker of 16, empty handlers, medians of 5: one queue {a:.0} \
         unlimited, {b:.0} limited ({:.2}); 4 shards {c:.0} unlimited, {d:.0} limited ({:.2})",
        b / a,
        d / c
    );
}
