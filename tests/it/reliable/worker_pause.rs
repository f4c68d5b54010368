//! A paused queue's workers take none of its values: a job running when the pause comes
//! finishes and is acknowledged, the ready values stay ready (none taken, none handled) while
//! the worker keeps looking, and after the resume each is handled exactly once. Under
//! queue-wide limits (their own take script) as without, values held back by per-key limits
//! too (taken back by a script of their own), and over several queues, whose others are served
//! meanwhile.

use super::eventually;
use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::limit::Limits;
use delayq::worker::WorkerHandle;
use delayq::{DelayedQueue, Job, JobError, ReliableConfig};
use fred::clients::Client;
use fred::interfaces::{ListInterface, SortedSetsInterface};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Takes that must find the queue paused before the test looks (each about a second apart).
const LOOKS: u64 = 3;

fn fast() -> ReliableConfig {
    ReliableConfig::default()
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(200))
}

/// What the handlers ran: values in the order they started.
type Handled = Arc<Mutex<Vec<String>>>;

/// A worker of concurrency 4 over `queues` recording each value; a value named `long` waits
/// for a permit of `release` before it ends.
fn start(
    queues: &[&DelayedQueue<StringCodec>],
    handled: &Handled,
    release: &Arc<Semaphore>,
) -> WorkerHandle {
    let (handled, release) = (handled.clone(), release.clone());
    let handler = move |job: Job<String>| {
        let (handled, release) = (handled.clone(), release.clone());
        async move {
            handled.lock().unwrap().push(job.value().clone());
            if job.value() == "long" {
                let _permit = release.acquire().await.unwrap();
            }
            Ok::<(), JobError>(())
        }
    };
    let mut builder = queues[0].worker(4, handler);
    for queue in &queues[1..] {
        builder = builder.with_queue(queue);
    }
    builder.reliable_config(fast()).spawn().unwrap()
}

/// Offers `values` due now and moves them onto the target list with one-off transfers (the
/// schedulers of a paused queue move nothing; a transfer by hand does), until none is pending.
async fn make_ready(queue: &DelayedQueue<StringCodec>, values: &[String]) {
    for value in values {
        queue.offer(value, Duration::ZERO).await.unwrap();
    }
    while queue.size().await.unwrap() > 0 {
        queue.admin().transfer_due(1_000).await.unwrap();
    }
}

async fn ready_count(client: &Client, queue: &DelayedQueue<StringCodec>) -> u64 {
    client.llen(queue.name()).await.unwrap()
}

async fn in_flight(client: &Client, queue: &DelayedQueue<StringCodec>) -> u64 {
    client.zcard(queue.keys().inflight()).await.unwrap()
}

/// Every value in `handled` exactly once, and nothing else.
fn each_once(handled: &Handled, values: &[String]) {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for value in handled.lock().unwrap().iter() {
        *counts.entry(value.clone()).or_default() += 1;
    }
    assert_eq!(counts.len(), values.len(), "{counts:?}");
    for value in values {
        assert_eq!(
            counts.get(value),
            Some(&1),
            "{value} handled once: {counts:?}"
        );
    }
}

/// One queue, with or without queue-wide `limits` (whose takes run `limit_take.lua`).
async fn a_paused_queue_is_not_consumed(prefix: &str, limits: Option<Limits>) {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::new(client.clone(), unique_name(prefix), StringCodec)
        .await
        .unwrap();
    if let Some(limits) = &limits {
        queue.limits().set(limits).await.unwrap();
    }
    let handled: Handled = Arc::default();
    let release = Arc::new(Semaphore::new(0));
    let worker = start(&[&queue], &handled, &release);

    // A job runs when the pause comes.
    make_ready(&queue, &["long".to_owned()]).await;
    eventually("the long job to start", || {
        handled.lock().unwrap().len() == 1
    })
    .await;
    assert!(queue.admin().pause().await.unwrap());
    let values: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
    make_ready(&queue, &values).await;
    release.add_permits(1);
    eventually("the running job to be acknowledged", || {
        worker.stats().acked >= 1
    })
    .await;

    eventually("the worker to find the queue paused a few times", || {
        worker.stats().paused_takes >= LOOKS || handled.lock().unwrap().len() > 1
    })
    .await;
    assert_eq!(
        *handled.lock().unwrap(),
        ["long"],
        "nothing handled while paused"
    );
    assert_eq!(worker.stats().taken, 1, "nothing taken while paused");
    assert_eq!(
        ready_count(&client, &queue).await,
        20,
        "every value still ready"
    );
    assert_eq!(in_flight(&client, &queue).await, 0, "nothing in flight");

    assert!(queue.admin().resume().await.unwrap());
    eventually("every value handled after the resume", || {
        worker.stats().acked == 21
    })
    .await;
    let stats = worker.shutdown().await.unwrap();
    assert_eq!(
        (stats.taken, stats.acked, stats.retried, stats.dead),
        (21, 21, 0, 0)
    );
    let mut all = values.clone();
    all.push("long".to_owned());
    each_once(&handled, &all);
    assert_eq!(ready_count(&client, &queue).await, 0);
    assert_eq!(in_flight(&client, &queue).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_queues_worker_takes_none_of_its_ready_values_until_resumed() {
    a_paused_queue_is_not_consumed("pause-work", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_queue_under_queue_wide_limits_is_not_consumed_either() {
    let limits = Limits::default().with_concurrency(10);
    a_paused_queue_is_not_consumed("pause-limited", Some(limits)).await;
}

/// A worker over two queues: the paused one keeps its values, the other is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_over_several_queues_serves_the_others_while_one_is_paused() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let paused = DelayedQueue::new(client.clone(), unique_name("pause-a"), StringCodec)
        .await
        .unwrap();
    let open = DelayedQueue::new(client.clone(), unique_name("pause-b"), StringCodec)
        .await
        .unwrap();
    assert!(paused.admin().pause().await.unwrap());
    let held: Vec<String> = (0..10).map(|i| format!("held{i}")).collect();
    let served: Vec<String> = (0..10).map(|i| format!("served{i}")).collect();
    make_ready(&paused, &held).await;
    make_ready(&open, &served).await;

    let handled: Handled = Arc::default();
    let worker = start(&[&paused, &open], &handled, &Arc::new(Semaphore::new(0)));
    eventually("the open queue served and the paused one looked at", || {
        let stats = worker.stats();
        (stats.acked >= 10 && stats.paused_takes >= LOOKS) || stats.taken > 10
    })
    .await;
    assert_eq!(
        worker.stats().taken,
        10,
        "nothing taken from the paused queue"
    );
    each_once(&handled, &served);
    assert_eq!(ready_count(&client, &paused).await, 10);
    assert_eq!(in_flight(&client, &paused).await, 0);

    assert!(paused.admin().resume().await.unwrap());
    eventually("the resumed queue served", || worker.stats().acked == 20).await;
    let stats = worker.shutdown().await.unwrap();
    assert_eq!((stats.taken, stats.retried, stats.dead), (20, 0, 0));
    let all: Vec<String> = served.iter().chain(&held).cloned().collect();
    each_once(&handled, &all);
    assert_eq!(ready_count(&client, &paused).await, 0);
}

/// Per-key limits (one at a time per key): values held back behind a running job of their key
/// are not taken back while the queue is paused, once that job is done; after the resume they
/// run, once each. (Not necessarily in the order offered: the worker's four takers race, and
/// either may hold its value back first; the limits' own tests check the order held back.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_held_back_by_per_key_limits_stay_held_while_paused() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::new(client.clone(), unique_name("pause-held"), StringCodec)
        .await
        .unwrap();
    let limits = Limits::default().with_key_concurrency(1);
    queue.limits().set(&limits).await.unwrap();
    let handled: Handled = Arc::default();
    let release = Arc::new(Semaphore::new(0));
    let handler = {
        let (handled, release) = (handled.clone(), release.clone());
        move |job: Job<String>| {
            let (handled, release) = (handled.clone(), release.clone());
            async move {
                handled.lock().unwrap().push(job.value().clone());
                if job.value() == "k:0" {
                    let _permit = release.acquire().await.unwrap();
                }
                Ok::<(), JobError>(())
            }
        }
    };
    let worker = queue
        .worker(4, handler)
        .limit_key(|value: &String| value.split(':').next().map(str::to_owned))
        .reliable_config(fast())
        .spawn()
        .unwrap();
    let values: Vec<String> = (0..3).map(|i| format!("k:{i}")).collect();
    make_ready(&queue, &values).await;
    let held = || async { queue.limits().usage().await.unwrap().values_held };
    eventually("k:0 running", || handled.lock().unwrap().len() == 1).await;
    let deadline = std::time::Instant::now() + crate::common::PATIENCE;
    while held().await < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "k:1 and k:2 never held back"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    assert!(queue.admin().pause().await.unwrap());
    release.add_permits(1);
    eventually("k:0 acknowledged", || worker.stats().acked >= 1).await;
    eventually("the worker to find the queue paused a few times", || {
        worker.stats().paused_takes >= LOOKS || handled.lock().unwrap().len() > 1
    })
    .await;
    assert_eq!(
        *handled.lock().unwrap(),
        ["k:0"],
        "nothing taken back while paused"
    );
    assert_eq!(held().await, 2, "both still held back");

    assert!(queue.admin().resume().await.unwrap());
    eventually("every value handled after the resume", || {
        worker.stats().acked == 3
    })
    .await;
    let stats = worker.shutdown().await.unwrap();
    assert_eq!((stats.retried, stats.dead), (0, 0));
    let mut ran = handled.lock().unwrap().clone();
    assert_eq!(ran.first(), Some(&values[0]), "{ran:?}");
    ran.sort();
    assert_eq!(ran, values, "once each");
    assert_eq!(held().await, 0);
}
