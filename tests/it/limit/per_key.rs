//! Per-key limits: each key's cap holds and its values keep their order; a burst for one key
//! does not hold another key's values behind it; nothing is lost when a worker dies while values
//! are held back.

use super::{eventually, push, setup, values, worker, Shared};
use delayq::limit::{KeyRule, Limits};
use fred::interfaces::ListInterface;
use std::time::{Duration, Instant};

const LEASE: Duration = Duration::from_secs(5);

/// The values of each key start one at a time, in the order they were offered (one worker:
/// values two processes take at the same moment may start in either order, as without limits);
/// other keys run meanwhile.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_cap_holds_and_keeps_the_order_within_the_key() {
    let (_redis, client, queue) = setup("limit-key-cap").await;
    queue
        .limits()
        .set(&Limits::default().with_key_concurrency(1))
        .await
        .unwrap();
    let probe = Shared::default();
    let handle = worker(&queue, 8, &probe, LEASE, |_| Duration::from_millis(15));
    let mut offered = Vec::new();
    for i in 0..15 {
        for key in ["a", "b", "c"] {
            offered.push(format!("{key}:{i}"));
        }
    }
    push(&client, &queue, &offered).await;
    eventually("45 jobs done", || probe.lock().unwrap().done == 45).await;
    let stats = handle.shutdown().await.unwrap();
    assert_eq!((stats.lost, stats.errors), (0, 0));
    let usage = queue.limits().usage().await.unwrap();
    assert_eq!((usage.values_held, usage.keys_held), (0, 0));
    let probe = probe.lock().unwrap();
    for key in ["a", "b", "c"] {
        assert_eq!(probe.most_by_key[key], 1, "key {key} ran several at once");
        let order: Vec<usize> = probe
            .starts
            .iter()
            .filter(|(v, _)| v.starts_with(&format!("{key}:")))
            .map(|(v, _)| v[2..].parse().unwrap())
            .collect();
        assert_eq!(order, (0..15).collect::<Vec<_>>(), "key {key}'s order");
    }
    assert!(probe.most >= 2, "the keys never ran side by side");
    // Started through the per-key scripts (acquired, or taken back from a key held back).
    let missing: Vec<_> = probe
        .admitted
        .iter()
        .filter(|(_, ms)| ms.is_none())
        .collect();
    assert!(missing.is_empty(), "jobs without a grant time: {missing:?}");
}

/// 2,000 values of key A, then 10 of key B, key cap 1: B's values start once the workers have
/// held back what is ahead of them, long before A's values are done; A's cap holds.
#[tokio::test(flavor = "multi_thread")]
async fn a_burst_for_one_key_does_not_hold_another_key_behind_it() {
    let (_redis, client, queue) = setup("limit-key-fair").await;
    let burst = std::env::var("DELAYQ_TEST_BURST").map_or(2_000, |n| n.parse().unwrap());
    queue
        .limits()
        .set(&Limits::default().with_key_concurrency(1))
        .await
        .unwrap();
    let probe = Shared::default();
    let slow_a = |v: &str| match v.starts_with("A:") {
        true => Duration::from_millis(200),
        false => Duration::from_millis(5),
    };
    let workers: Vec<_> = (0..2)
        .map(|_| worker(&queue, 4, &probe, LEASE, slow_a))
        .collect();
    let mut offered = values("A", burst);
    offered.extend(values("B", 10));
    let pushed = Instant::now();
    push(&client, &queue, &offered).await;
    eventually("B's 10 values to start", || {
        let p = probe.lock().unwrap();
        p.starts.iter().filter(|(v, _)| v.starts_with("B:")).count() == 10
    })
    .await;
    let b_after = pushed.elapsed();
    let usage = queue.limits().usage().await.unwrap();
    for w in workers {
        w.shutdown().await.unwrap();
    }
    let p = probe.lock().unwrap();
    assert_eq!(p.most_by_key["A"], 1, "A's cap");
    let a_started = p.starts.iter().filter(|(v, _)| v.starts_with("A:")).count();
    assert!(
        a_started < burst / 2,
        "B waited for {a_started} of A's values"
    );
    // Generous for a loaded 2-core machine; the figure measured is printed.
    assert!(
        b_after < Duration::from_secs(30),
        "B started {b_after:?} after the burst"
    );
    assert!(
        usage.values_held > 0 && usage.top_held[0].0 == "A",
        "{usage:?}"
    );
    eprintln!(
        "B's 10 values started within {b_after:?} behind {burst} of A ({} of A held back then)",
        usage.values_held
    );
}

/// A worker dies (its runtime dropped) while values are held back: the other worker finishes
/// every value, each key's values in order, and nothing is left held back or in flight.
#[tokio::test(flavor = "multi_thread")]
async fn no_value_is_lost_when_a_worker_dies_with_values_held_back() {
    let (redis, client, queue) = setup("limit-key-kill").await;
    let lease = Duration::from_secs(2);
    queue
        .limits()
        .set(
            &Limits::default()
                .with_key(KeyRule::Regex("^(\\w+):".into()))
                .with_key_concurrency(1),
        )
        .await
        .unwrap();
    let offered: Vec<String> = (0..40).map(|i| format!("k{}:{i}", i % 4)).collect();
    push(&client, &queue, &offered).await;
    let doomed = Shared::default();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    {
        let (url, name, probe) = (redis.url(), queue.name().to_owned(), doomed.clone());
        runtime.spawn(async move {
            let client = delayq::connect(&url).await.unwrap();
            let queue = delayq::DelayedQueue::builder(client, name, delayq::codec::StringCodec)
                .build()
                .await
                .unwrap();
            let _handle = worker(&queue, 8, &probe, lease, |_| Duration::from_millis(40));
            std::future::pending::<()>().await;
        });
    }
    eventually("some values held back and some done", || {
        doomed.lock().unwrap().done >= 4
    })
    .await;
    assert!(queue.limits().usage().await.unwrap().values_held > 0);
    runtime.shutdown_background();

    let probe = Shared::default();
    let survivor = worker(&queue, 8, &probe, lease, |_| Duration::from_millis(5));
    let all_done = || {
        let (d, p) = (doomed.lock().unwrap(), probe.lock().unwrap());
        let mut seen: Vec<&String> = d.starts.iter().chain(&p.starts).map(|(v, _)| v).collect();
        seen.sort();
        seen.dedup();
        seen.len() == 40
    };
    eventually("every value started", all_done).await;
    // Counts alone can be met early: a value the killed worker finished but could not ack runs
    // again on the survivor, so the queue's own state says when everything is done.
    let settled = crate::common::queue::eventually(crate::common::PATIENCE, || async {
        let usage = queue.limits().usage().await.unwrap();
        let inflight: u64 =
            fred::interfaces::SortedSetsInterface::zcard(&client, queue.keys().inflight())
                .await
                .unwrap();
        let waiting: u64 = client.llen(queue.name()).await.unwrap();
        (usage.values_held, usage.keys_held, inflight, waiting) == (0, 0, 0, 0)
    })
    .await;
    assert!(settled, "values still held back, in flight or waiting");
    survivor.shutdown().await.unwrap();
    let usage = queue.limits().usage().await.unwrap();
    assert_eq!((usage.values_held, usage.keys_held), (0, 0));
    let inflight: u64 =
        fred::interfaces::SortedSetsInterface::zcard(&client, queue.keys().inflight())
            .await
            .unwrap();
    assert_eq!(inflight, 0);
    assert_eq!(client.llen::<u64, _>(queue.name()).await.unwrap(), 0);
    assert!(probe.lock().unwrap().most_by_key.values().all(|n| *n == 1));
}

/// Clearing the per-key limits puts the values held back at the head of the target list, each
/// key's oldest first, for any consumer to take.
#[tokio::test(flavor = "multi_thread")]
async fn clearing_per_key_limits_gives_the_values_held_back_to_the_target_list() {
    let (_redis, client, queue) = setup("limit-key-clear").await;
    queue
        .limits()
        .set(&Limits::default().with_key_concurrency(1))
        .await
        .unwrap();
    let probe = Shared::default();
    let handle = worker(&queue, 4, &probe, LEASE, |_| Duration::from_millis(1_500));
    push(&client, &queue, &values("a", 5)).await;
    let mut usage = queue.limits().usage().await.unwrap();
    let deadline = Instant::now() + crate::common::PATIENCE;
    while usage.values_held < 4 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        usage = queue.limits().usage().await.unwrap();
    }
    assert_eq!(usage.top_held, vec![("a".to_owned(), 4)]);
    // Stopped, the worker takes nothing more; its running job ends within its 1.5 s.
    handle.shutdown().await.unwrap();
    assert!(queue.limits().clear().await.unwrap());
    let listed: Vec<String> = client.lrange(queue.name(), 0, -1).await.unwrap();
    assert_eq!(listed, values("a", 5)[1..].to_vec());
    assert_eq!(queue.limits().usage().await.unwrap().values_held, 0);
}

/// A worker on `queue` like [`worker`], whose values' limit key is what comes before `|`
/// (`a:b|0` has the key `a:b`).
fn piped_worker(
    queue: &delayq::DelayedQueue<delayq::codec::StringCodec>,
    probe: &Shared,
    work: Duration,
) -> delayq::WorkerHandle {
    let probe = probe.clone();
    queue
        .worker(4, move |job: delayq::Job<String>| {
            let probe = probe.clone();
            async move {
                super::Probe::start(&probe, &job);
                tokio::time::sleep(work).await;
                super::Probe::end(&probe, job.value());
                Ok::<(), delayq::JobError>(())
            }
        })
        .reliable_config(super::fast(LEASE))
        .limit_key(|value: &String| value.split_once('|').map(|(key, _)| key.to_owned()))
        .spawn()
        .unwrap()
}

/// Values held back under a limit key with `:` or `%` are listed under the key's escaped name
/// (`delayq_limit_parked:{NAME}:e%3Af%25g` for `e:f%g`), the name `QueueKeys::limit_parked`
/// gives: the scripts and the Rust side agree.
#[tokio::test(flavor = "multi_thread")]
async fn values_held_back_under_a_key_with_a_colon_are_listed_under_its_escaped_name() {
    let (redis, client, queue) = setup("limit-key-escaped").await;
    queue
        .limits()
        .set(&Limits::default().with_key_concurrency(1))
        .await
        .unwrap();
    let probe = Shared::default();
    let handle = piped_worker(&queue, &probe, Duration::from_millis(1_500));
    let offered: Vec<String> = (0..5).map(|i| format!("e:f%g|{i}")).collect();
    push(&client, &queue, &offered).await;
    let mut usage = queue.limits().usage().await.unwrap();
    let deadline = Instant::now() + crate::common::PATIENCE;
    while usage.values_held < 4 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        usage = queue.limits().usage().await.unwrap();
    }
    assert_eq!(usage.top_held, vec![("e:f%g".to_owned(), 4)]);
    let list = queue.keys().limit_parked("e:f%g");
    assert!(list.ends_with(":e%3Af%25g"), "{list}");
    assert_eq!(redis.cli(&["LLEN", &list]), "4");
    handle.shutdown().await.unwrap();
    assert!(queue.limits().clear().await.unwrap());
    let listed: Vec<String> = client.lrange(queue.name(), 0, -1).await.unwrap();
    assert_eq!(listed, offered[1..].to_vec());
}

/// Values held back before issue 38 under a key with `:` sit in a list of the key's name as it
/// was (`delayq_limit_parked:{NAME}:a:b`): after the upgrade they still start, first and in
/// their order, ahead of the key's values taken since. A list of that old name that a key of
/// the queue `{NAME}:a` holds now (its key `b`, held back) is left to it.
#[tokio::test(flavor = "multi_thread")]
async fn values_held_back_under_the_old_name_of_a_key_still_start() {
    let (redis, client, queue) = setup("limit-key-legacy").await;
    queue
        .limits()
        .set(&Limits::default().with_key_concurrency(1))
        .await
        .unwrap();
    let name = queue.name();
    let held = format!("delayq_limit_held:{{{name}}}");
    let legacy = format!("delayq_limit_parked:{{{name}}}:a:b");
    redis.cli(&["RPUSH", &legacy, "a:b|0", "a:b|1", "a:b|2"]);
    redis.cli(&["ZADD", &held, "0", "a:b"]);
    // Queue `{NAME}:x`'s key `y`, held back, and this queue's key `x:y` held back before.
    let claimed = format!("delayq_limit_parked:{{{name}}}:x:y");
    redis.cli(&["RPUSH", &claimed, "theirs 1", "theirs 2"]);
    redis.cli(&["ZADD", &format!("{held}:x"), "0", "y"]);
    redis.cli(&["ZADD", &held, "0", "x:y"]);
    let usage = queue.limits().usage().await.unwrap();
    assert_eq!(usage.values_held, 3, "{usage:?}");

    let later: Vec<String> = (3..6).map(|i| format!("a:b|{i}")).collect();
    push(&client, &queue, &later).await;
    let probe = Shared::default();
    let handle = piped_worker(&queue, &probe, Duration::from_millis(5));
    eventually("six values of a:b done", || probe.lock().unwrap().done == 6).await;
    let started: Vec<String> = probe
        .lock()
        .unwrap()
        .starts
        .iter()
        .map(|(value, _)| value.clone())
        .collect();
    let expected: Vec<String> = (0..6).map(|i| format!("a:b|{i}")).collect();
    assert_eq!(started, expected);
    handle.shutdown().await.unwrap();
    assert_eq!(redis.cli(&["EXISTS", &legacy]), "0");
    assert_eq!(
        redis.cli(&["LLEN", &claimed]),
        "2",
        "the other queue's values"
    );
}

/// A paused key starts none of its values (held back on its list) while other keys run; once
/// resumed they all start, its cap still held.
#[tokio::test(flavor = "multi_thread")]
async fn a_paused_key_starts_nothing_until_resumed() {
    let (_redis, client, queue) = setup("limit-key-pause").await;
    queue
        .limits()
        .set(&Limits::default().with_key_concurrency(2))
        .await
        .unwrap();
    assert!(queue.limits().pause_key("a").await.unwrap());
    assert!(!queue.limits().pause_key("a").await.unwrap());
    assert!(queue.limits().key_paused("a").await.unwrap());
    assert_eq!(queue.limits().paused_keys(10).await.unwrap(), ["a"]);
    let probe = Shared::default();
    let handle = worker(&queue, 4, &probe, LEASE, |_| Duration::from_millis(5));
    let mut offered = values("a", 4);
    offered.extend(values("b", 4));
    push(&client, &queue, &offered).await;
    // B's values all done while A's four are held back, none of them started.
    eventually("b done, a held back", || probe.lock().unwrap().done == 4).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let usage = queue.limits().usage().await.unwrap();
        if usage.values_held == 4 && usage.top_held == [("a".to_owned(), 4)] {
            break;
        }
        assert!(Instant::now() < deadline, "{usage:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(probe
        .lock()
        .unwrap()
        .starts
        .iter()
        .all(|(v, _)| v.starts_with("b:")));

    assert!(queue.limits().resume_key("a").await.unwrap());
    assert!(!queue.limits().key_paused("a").await.unwrap());
    eventually("a done after the resume", || {
        probe.lock().unwrap().done == 8
    })
    .await;
    assert!(probe.lock().unwrap().most_by_key["a"] <= 2);
    let stats = handle.shutdown().await.unwrap();
    assert_eq!((stats.lost, stats.errors), (0, 0));
}
