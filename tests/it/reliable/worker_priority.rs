//! A worker over several queues by priority: weights 6:3:1 give each queue its share of 10,000
//! jobs within 10 % while all three hold values; strict order never takes from a queue while one
//! before it has ready values, values that arrive in a higher queue meanwhile included.

use super::eventually;
use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::worker::Priority;
use delayq::{DelayedQueue, Job, JobError, ReliableConfig};
use fred::clients::Client;
use fred::interfaces::ListInterface;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn fast() -> ReliableConfig {
    ReliableConfig::default()
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(200))
}

async fn three_queues(client: &Client, prefix: &str) -> Vec<DelayedQueue<StringCodec>> {
    let mut queues = Vec::new();
    for part in ["a", "b", "c"] {
        let name = unique_name(&format!("{prefix}-{part}"));
        queues.push(
            DelayedQueue::new(client.clone(), name, StringCodec)
                .await
                .unwrap(),
        );
    }
    queues
}

/// Puts `values` on the target list, ready, as a transfer leaves them.
async fn push_ready(client: &Client, queue: &DelayedQueue<StringCodec>, values: &[String]) {
    for chunk in values.chunks(1_000) {
        let _: () = client.rpush(queue.name(), chunk.to_vec()).await.unwrap();
    }
}

/// 10,000 values in each of three queues, weights 6:3:1: of the first 10,000 jobs (every queue
/// still holds values then: the first gives at most about 6,000 of its 10,000), each queue's
/// share is within 10 % of 60/30/10 %.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_six_three_one_share_ten_thousand_jobs_within_ten_percent() {
    const JOBS: usize = 10_000;
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queues = three_queues(&client, "weighted").await;
    for (q, queue) in queues.iter().enumerate() {
        let values: Vec<String> = (0..JOBS).map(|i| format!("{q}-{i}")).collect();
        push_ready(&client, queue, &values).await;
    }
    let handled: Arc<Mutex<Vec<usize>>> = Arc::default();
    let stop = CancellationToken::new();
    let names: Arc<Vec<String>> = Arc::new(queues.iter().map(|q| q.name().to_owned()).collect());
    let handler = {
        let (handled, stop, names) = (handled.clone(), stop.clone(), names.clone());
        move |job: Job<String>| {
            let index = names.iter().position(|n| n == job.queue()).unwrap();
            let mut handled = handled.lock().unwrap();
            handled.push(index);
            if handled.len() == JOBS {
                stop.cancel();
            }
            std::future::ready(Ok::<(), JobError>(()))
        }
    };
    let started = Instant::now();
    let stats = queues[0]
        .worker(8, handler)
        .with_queue(&queues[1])
        .with_queue(&queues[2])
        .priority(Priority::weighted([6, 3, 1]))
        .reliable_config(fast())
        .stop_on(stop)
        .run()
        .await
        .unwrap();
    let took = started.elapsed();
    let handled = handled.lock().unwrap().clone();
    assert!(handled.len() >= JOBS, "{stats:?}");
    let mut counts = [0usize; 3];
    for &q in &handled[..JOBS] {
        counts[q] += 1;
    }
    eprintln!(
        "weights 6:3:1: {counts:?} of the first {JOBS} jobs; {} jobs in {:.1} s",
        handled.len(),
        took.as_secs_f64()
    );
    for (q, want) in [0.6, 0.3, 0.1].into_iter().enumerate() {
        let share = counts[q] as f64 / JOBS as f64;
        assert!(
            (share - want).abs() <= want * 0.1,
            "queue {q}: share {share:.4}, want {want} within 10 % ({counts:?})"
        );
    }
    for (q, queue) in queues.iter().enumerate() {
        let left: u64 = client.llen(queue.name()).await.unwrap();
        assert!(left > 0, "queue {q} held values throughout");
    }
    assert_eq!((stats.retried, stats.dead, stats.lost), (0, 0, 0));
}

/// Strict order, one job at a time: every value of the first queue, then the second's, then
/// the third's; values pushed to the first two queues while the third is served are taken
/// next, before the third's others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_never_takes_from_a_queue_while_one_before_it_has_ready_values() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queues = three_queues(&client, "strict").await;
    for (q, queue) in queues.iter().enumerate() {
        let values: Vec<String> = (0..20).map(|i| format!("{q}-{i}")).collect();
        push_ready(&client, queue, &values).await;
    }
    let handled: Arc<Mutex<Vec<String>>> = Arc::default();
    let late = (queues[0].clone(), queues[1].clone());
    let handler = {
        let (handled, client) = (handled.clone(), client.clone());
        move |job: Job<String>| {
            let (handled, client, late) = (handled.clone(), client.clone(), late.clone());
            async move {
                handled.lock().unwrap().push(job.value().clone());
                if job.value() == "2-5" {
                    // Values arrive in the higher queues while the lowest is served.
                    let first: Vec<String> = (0..10).map(|i| format!("0-late-{i}")).collect();
                    let second: Vec<String> = (0..10).map(|i| format!("1-late-{i}")).collect();
                    push_ready(&client, &late.1, &second).await;
                    push_ready(&client, &late.0, &first).await;
                }
                Ok::<(), JobError>(())
            }
        }
    };
    let worker = queues[0]
        .worker(1, handler)
        .with_queue(&queues[1])
        .with_queue(&queues[2])
        .priority(Priority::Strict)
        .reliable_config(fast())
        .spawn()
        .unwrap();
    eventually("every value handled", || {
        handled.lock().unwrap().len() == 80
    })
    .await;
    let stats = worker.shutdown().await.unwrap();
    assert_eq!((stats.acked, stats.retried, stats.dead), (80, 0, 0));

    let handled = handled.lock().unwrap();
    let queue_of = |value: &str| value[..1].parse::<usize>().unwrap();
    let order: Vec<usize> = handled.iter().map(|v| queue_of(v)).collect();
    let runs = |q: usize, n: usize| std::iter::repeat_n(q, n);
    let want: Vec<usize> = runs(0, 20)
        .chain(runs(1, 20))
        .chain(runs(2, 6))
        .chain(runs(0, 10))
        .chain(runs(1, 10))
        .chain(runs(2, 14))
        .collect();
    assert_eq!(order, want, "{handled:?}");
    // Each queue's values in their list order.
    for q in 0..3 {
        let mine: Vec<&String> = handled.iter().filter(|v| queue_of(v) == q).collect();
        let mut want: Vec<String> = (0..20).map(|i| format!("{q}-{i}")).collect();
        if q < 2 {
            want.extend((0..10).map(|i| format!("{q}-late-{i}")));
        }
        assert_eq!(mine, want.iter().collect::<Vec<_>>(), "queue {q}");
    }
}

/// Weights that do not match the queues are refused before anything runs.
#[tokio::test]
async fn weights_must_match_the_queues() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queues = three_queues(&client, "weights-bad").await;
    let handler = |_job: Job<String>| std::future::ready(Ok::<(), JobError>(()));
    let refused = queues[0]
        .worker(1, handler)
        .with_queue(&queues[1])
        .with_queue(&queues[2])
        .priority(Priority::weighted([6, 3]))
        .run()
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("3 queue(s) and 2 weight(s)"),
        "{refused}"
    );
}
