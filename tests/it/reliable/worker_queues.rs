//! One worker over several queues: every value once, from the queue it names, on no connection
//! per queue; a flooded queue does not hold up a quiet one; a failing queue does not stall the
//! others; values moved by another process are found; `delayq work` over several queues.

use super::eventually;
use crate::common::queue::{arg, cmd};
use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Error, Job, JobError, ReliableConfig};
use fred::clients::Client;
use fred::interfaces::{KeysInterface, ListInterface, SortedSetsInterface};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn fast() -> ReliableConfig {
    ReliableConfig::default()
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(200))
}

async fn queues(client: &Client, prefix: &str, count: usize) -> Vec<DelayedQueue<StringCodec>> {
    let mut queues = Vec::new();
    for _ in 0..count {
        let name = unique_name(prefix);
        queues.push(
            DelayedQueue::new(client.clone(), name, StringCodec)
                .await
                .unwrap(),
        );
    }
    queues
}

/// Connections the server has open now.
async fn connections(client: &Client) -> usize {
    let list = cmd(client, "CLIENT", vec![arg("LIST")]).await;
    list.as_string().unwrap().lines().count()
}

type Seen = Arc<Mutex<Vec<(String, String, Instant)>>>;

/// A handler recording (queue, value, when) of every job, which fails the first attempt of
/// values starting with "flaky".
fn recorder(
    seen: &Seen,
) -> impl Fn(Job<String>) -> std::future::Ready<Result<(), JobError>> + Send + Sync + 'static {
    let seen = seen.clone();
    move |job: Job<String>| {
        seen.lock()
            .unwrap()
            .push((job.queue().to_owned(), job.value().clone(), Instant::now()));
        std::future::ready(
            match job.value().starts_with("flaky") && job.attempt() == 1 {
                true => {
                    Err(JobError::new("first try fails")
                        .with_retry_after(Duration::from_millis(50)))
                }
                false => Ok(()),
            },
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_over_twenty_queues_handles_every_value_once_on_no_extra_connection() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queues = queues(&client, "wq-many", 20).await;
    let seen: Seen = Arc::default();
    let before = connections(&client).await;
    let mut builder = queues[0].worker(4, recorder(&seen));
    for queue in &queues[1..] {
        builder = builder.with_queue(queue);
    }
    let worker = builder.reliable_config(fast()).spawn().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        connections(&client).await,
        before,
        "a worker over several queues opens no connection of its own"
    );

    let mut expected = HashMap::new();
    for (q, queue) in queues.iter().enumerate() {
        let values: Vec<(String, Duration)> = (0..25)
            .map(|i| {
                let value = match i % 5 {
                    0 => format!("flaky-{q}-{i}"),
                    _ => format!("v-{q}-{i}"),
                };
                (value, Duration::from_millis((i * 37 % 400) as u64))
            })
            .collect();
        for (value, _) in &values {
            expected.insert(value.clone(), queue.name().to_owned());
        }
        queue.offer_all(&values).await.unwrap();
    }
    // 500 values, the 100 flaky ones twice.
    eventually("every value handled", || seen.lock().unwrap().len() >= 600).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stats = worker.shutdown().await.unwrap();
    assert_eq!((stats.acked, stats.retried, stats.lost), (500, 100, 0));

    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        600,
        "nothing handled more often than its failures ask for"
    );
    let mut handled: HashMap<&str, usize> = HashMap::new();
    for (queue, value, _) in seen.iter() {
        assert_eq!(
            &expected[value], queue,
            "{value} names the queue it came from"
        );
        *handled.entry(value.as_str()).or_default() += 1;
    }
    for value in expected.keys() {
        let want = if value.starts_with("flaky") { 2 } else { 1 };
        assert_eq!(handled.get(value.as_str()), Some(&want), "{value}");
    }
    for queue in &queues {
        let pending: u64 = client.llen(queue.name()).await.unwrap();
        assert_eq!(pending, 0, "{}", queue.name());
        assert_eq!(queue.size().await.unwrap(), 0);
        let in_flight: u64 = client.zcard(queue.keys().inflight()).await.unwrap();
        assert_eq!(in_flight, 0, "{}", queue.name());
    }
}

/// 2,000 values wait on one queue, handled one at a time; a value offered to a second queue
/// then is handled next but a few, not after the flood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_queue_does_not_hold_up_a_quiet_one() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let qs = queues(&client, "wq-fair", 2).await;
    let (flooded, quiet) = (&qs[0], &qs[1]);
    let flood: Vec<(String, Duration)> = (0..2_000)
        .map(|i| (format!("f{i}"), Duration::ZERO))
        .collect();
    flooded.offer_all(&flood).await.unwrap();
    let seen: Seen = Arc::default();
    let worker = {
        let seen = seen.clone();
        flooded
            .worker(1, move |job: Job<String>| {
                let seen = seen.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    seen.lock().unwrap().push((
                        job.queue().to_owned(),
                        job.value().clone(),
                        Instant::now(),
                    ));
                    Ok::<(), JobError>(())
                }
            })
            .with_queue(quiet)
            .reliable_config(fast())
            .spawn()
            .unwrap()
    };
    eventually("the flood to be under way", || {
        seen.lock().unwrap().len() >= 200
    })
    .await;
    let handled_before = seen.lock().unwrap().len();
    quiet.offer("urgent", Duration::ZERO).await.unwrap();
    eventually("the quiet queue's value", || {
        seen.lock().unwrap().iter().any(|(_, v, _)| v == "urgent")
    })
    .await;
    let position = seen
        .lock()
        .unwrap()
        .iter()
        .position(|(_, v, _)| v == "urgent")
        .unwrap();
    let left: u64 = client.llen(flooded.name()).await.unwrap();
    worker.shutdown().await.unwrap();
    assert!(
        position - handled_before < 200,
        "handled {} flood values before the quiet queue's one",
        position - handled_before
    );
    assert!(left > 1_000, "the flood was nearly done ({left} left)");
}

/// One queue's target list is a string (someone's wrong key): its takes fail and back off,
/// the other queue's values are all handled, the string is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_queue_does_not_stall_the_others() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let broken = unique_name("wq-broken");
    let _: () = client
        .set(broken.as_str(), "not a list", None, None, false)
        .await
        .unwrap();
    let broken = DelayedQueue::builder(client.clone(), broken, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let fine = queues(&client, "wq-fine", 1).await.remove(0);
    let seen: Seen = Arc::default();
    let worker = broken
        .worker(2, recorder(&seen))
        .with_queue(&fine)
        .reliable_config(fast())
        .spawn()
        .unwrap();
    let values: Vec<(String, Duration)> = (0..100)
        .map(|i| (format!("v{i}"), Duration::from_millis(i * 5)))
        .collect();
    fine.offer_all(&values).await.unwrap();
    eventually("the fine queue's values", || {
        seen.lock().unwrap().len() >= 100
    })
    .await;
    let stats = worker.shutdown().await.unwrap();
    assert_eq!(stats.acked, 100);
    assert!(stats.errors >= 1, "the broken queue's errors are counted");
    let kept: String = client.get(broken.name()).await.unwrap();
    assert_eq!(kept, "not a list");
}

/// The worker's queues run no scheduler here; another client's scheduler moves the values, so
/// no notice reaches the worker: it finds them by looking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_moved_by_another_process_are_found() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let names = [unique_name("wq-far-a"), unique_name("wq-far-b")];
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    let other = delayq::connect(&redis.url()).await.unwrap();
    for name in &names {
        mine.push(
            DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
                .transfer(false)
                .build()
                .await
                .unwrap(),
        );
        theirs.push(
            DelayedQueue::new(other.clone(), name.as_str(), StringCodec)
                .await
                .unwrap(),
        );
    }
    let seen: Seen = Arc::default();
    let worker = mine[0]
        .worker(2, recorder(&seen))
        .with_queue(&mine[1])
        .reliable_config(fast())
        .spawn()
        .unwrap();
    // Long enough for the worker's idle wait to reach its cap.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let offered = Instant::now();
    theirs[0]
        .offer("a", Duration::from_millis(200))
        .await
        .unwrap();
    theirs[1]
        .offer("b", Duration::from_millis(400))
        .await
        .unwrap();
    eventually("both values", || seen.lock().unwrap().len() >= 2).await;
    worker.shutdown().await.unwrap();
    let seen = seen.lock().unwrap();
    // Found at all, since nothing announces them: the worker's idle wait ends and it looks
    // (that wait's bounds are the unit tests' to check); and not before they were due.
    for (queue, value, at) in seen.iter() {
        let due = Duration::from_millis(if value == "a" { 200 } else { 400 });
        let after = at.duration_since(offered);
        assert_eq!(queue, &names[usize::from(value == "b")]);
        assert!(after >= due, "{value} handled {after:?} after the offer");
        eprintln!("{value}: handled {:?} after it was due", after - due);
    }
}

#[tokio::test]
async fn a_queue_given_twice_is_refused() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = queues(&client, "wq-twice", 1).await.remove(0);
    let refused = queue
        .worker(1, |_job: Job<String>| async { Ok::<(), JobError>(()) })
        .with_queue(&queue.clone())
        .spawn()
        .unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidConfig(m) if m.contains("twice")),
        "{refused}"
    );
}
