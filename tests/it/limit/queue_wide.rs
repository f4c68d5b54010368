//! Queue-wide limits: a concurrency cap and a rate across workers, slots of a killed worker
//! freed at their lease's end, limits changed and cleared while workers run.

use super::{eventually, push, setup, values, worker, Probe, Shared};
use delayq::limit::{Limits, Rate};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const LEASE: Duration = Duration::from_secs(5);

fn quick(_: &str) -> Duration {
    Duration::from_millis(20)
}

/// Cap 3 over three workers of concurrency 10: the handlers never see more than 3 running.
#[tokio::test(flavor = "multi_thread")]
async fn a_cap_holds_across_workers() {
    let (_redis, client, queue) = setup("limit-cap").await;
    queue
        .limits()
        .set(&Limits::default().with_concurrency(3))
        .await
        .unwrap();
    let probe = Shared::default();
    let workers: Vec<_> = (0..3)
        .map(|_| worker(&queue, 10, &probe, LEASE, quick))
        .collect();
    push(&client, &queue, &values("v", 60)).await;
    eventually("60 jobs done", || probe.lock().unwrap().done == 60).await;
    for w in workers {
        let stats = w.shutdown().await.unwrap();
        assert_eq!((stats.lost, stats.errors), (0, 0));
    }
    let most = probe.lock().unwrap().most;
    assert!(most <= 3, "{most} jobs ran at once under a cap of 3");
    assert_eq!(queue.limits().usage().await.unwrap().slots_held, 0);
}

/// A worker whose runtime is dropped (a killed process) never releases its slots; they free
/// at their lease's end and another worker takes over.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_workers_slots_free_within_one_lease() {
    let (redis, client, queue) = setup("limit-killed").await;
    let lease = Duration::from_secs(2);
    queue
        .limits()
        .set(&Limits::default().with_concurrency(2))
        .await
        .unwrap();
    push(&client, &queue, &values("v", 6)).await;
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
            let handle = worker(&queue, 10, &probe, lease, |_| Duration::from_secs(3600));
            std::future::pending::<()>().await;
            drop(handle);
        });
    }
    eventually("the doomed worker to hold both slots", || {
        doomed.lock().unwrap().running == 2
    })
    .await;
    assert_eq!(queue.limits().usage().await.unwrap().slots_held, 2);
    runtime.shutdown_background();
    let killed = Instant::now();

    let probe = Shared::default();
    let survivor = worker(&queue, 10, &probe, lease, quick);
    eventually("a job to start after the kill", || {
        !probe.lock().unwrap().starts.is_empty()
    })
    .await;
    let freed_after = killed.elapsed();
    eventually("every value done", || probe.lock().unwrap().done >= 6).await;
    survivor.shutdown().await.unwrap();
    assert!(probe.lock().unwrap().most <= 2);
    // One lease, plus a generous margin for a loaded machine (reap interval, polls).
    assert!(
        freed_after < lease + Duration::from_secs(10),
        "slots freed after {freed_after:?}, lease {lease:?}"
    );
    eprintln!("slots of the killed worker freed after {freed_after:?} (lease {lease:?})");
}

/// Rate 10/s across two workers: every job carries its grant time (the server's clock, within
/// the run), no one-second window of grant times holds more than 11 (N + 1, exact), and 30
/// grants span at least the time the rate allows. The handlers' own start times are only
/// printed: how late a handler starts after its grant depends on the machine's load, so a
/// window of them may hold one more.
#[tokio::test(flavor = "multi_thread")]
async fn a_rate_holds_across_workers() {
    let (_redis, client, queue) = setup("limit-rate").await;
    let rate = Rate::new(10, Duration::from_secs(1)).unwrap();
    queue
        .limits()
        .set(&Limits::default().with_rate(rate))
        .await
        .unwrap();
    // The test's Redis runs on this host: its TIME is this process's clock.
    let began_ms = epoch_ms();
    let probe = Shared::default();
    let workers: Vec<_> = (0..2)
        .map(|_| worker(&queue, 4, &probe, LEASE, quick))
        .collect();
    push(&client, &queue, &values("v", 30)).await;
    eventually("30 jobs done", || probe.lock().unwrap().done == 30).await;
    for w in workers {
        w.shutdown().await.unwrap();
    }
    let ended_ms = epoch_ms();
    let p = probe.lock().unwrap();
    let mut granted: Vec<i64> = p
        .admitted
        .iter()
        .map(|(value, ms)| ms.unwrap_or_else(|| panic!("{value} has no grant time")))
        .collect();
    granted.sort_unstable();
    assert!(
        began_ms <= granted[0] && granted[29] <= ended_ms,
        "grants {granted:?} outside the run [{began_ms}, {ended_ms}]"
    );
    let most = most_within(&granted, 1_000);
    assert!(
        most <= 11,
        "{most} grants within one second under 10/s: {granted:?}"
    );
    // Grants k apart are at least (k - 1)T - T/2 apart (T = 100 ms); a ms lost to rounding.
    let span_ms = granted[29] - granted[0];
    assert!(span_ms >= 2_749, "30 grants in {span_ms} ms under 10/s");
    let first = p.starts.iter().map(|s| s.1).min().unwrap();
    let mut starts: Vec<i64> = p
        .starts
        .iter()
        .map(|s| (s.1 - first).as_millis() as i64)
        .collect();
    starts.sort_unstable();
    let most_started = most_within(&starts, 1_000);
    eprintln!(
        "30 grants under 10/s spanned {span_ms} ms, at most {most} in one second; at most \
         {most_started} handler starts in one second"
    );
}

/// Epoch ms by this host's clock.
fn epoch_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The most of `times` (sorted) within any window of `width` (from one of them, end excluded).
fn most_within(times: &[i64], width: i64) -> usize {
    (0..times.len())
        .map(|i| times[i..].partition_point(|&t| t < times[i] + width))
        .max()
        .unwrap_or(0)
}

/// Limits set while workers run apply at their next take; cleared, the workers are
/// unlimited again.
#[tokio::test(flavor = "multi_thread")]
async fn limits_changed_or_cleared_at_run_time_take_effect() {
    let (_redis, client, queue) = setup("limit-change").await;
    queue
        .limits()
        .set(&Limits::default().with_concurrency(8))
        .await
        .unwrap();
    let slow = |_: &str| Duration::from_millis(300);
    let probe = Shared::default();
    let handle = worker(&queue, 8, &probe, LEASE, slow);
    let batch = |round: usize| values(&format!("r{round}"), 8);

    push(&client, &queue, &batch(1)).await;
    eventually("round 1 done", || probe.lock().unwrap().done == 8).await;
    let first = std::mem::take(&mut probe.lock().unwrap().most);
    assert!(first >= 2, "round 1 ran {first} at once, under a cap of 8");

    queue
        .limits()
        .set(&Limits::default().with_concurrency(1))
        .await
        .unwrap();
    push(&client, &queue, &batch(2)).await;
    eventually("round 2 done", || probe.lock().unwrap().done == 16).await;
    let second = std::mem::take(&mut probe.lock().unwrap().most);
    assert_eq!(second, 1, "round 2 ran {second} at once, under a cap of 1");

    assert!(queue.limits().clear().await.unwrap());
    push(&client, &queue, &batch(3)).await;
    eventually("round 3 done", || probe.lock().unwrap().done == 24).await;
    let third = probe.lock().unwrap().most;
    assert!(third >= 2, "round 3 ran {third} at once with no limits");
    handle.shutdown().await.unwrap();
}

/// One worker over two queues: the first queue's cap holds, the second (no limits) runs its
/// values side by side.
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_over_several_queues_limits_each_by_its_own() {
    let (_redis, client, capped) = setup("limit-many-a").await;
    let free = delayq::DelayedQueue::builder(
        client.clone(),
        crate::common::unique_name("limit-many-b"),
        delayq::codec::StringCodec,
    )
    .build()
    .await
    .unwrap();
    capped
        .limits()
        .set(&Limits::default().with_concurrency(1))
        .await
        .unwrap();
    let probe = Shared::default();
    let handle = {
        let probe = probe.clone();
        capped
            .worker(6, move |job: delayq::Job<String>| {
                let probe = probe.clone();
                async move {
                    // Values are `c:N` on the capped queue, `f:N` on the free one.
                    Probe::start(&probe, &job);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Probe::end(&probe, job.value());
                    Ok::<(), delayq::JobError>(())
                }
            })
            .with_queue(&free)
            .reliable_config(super::fast(LEASE))
            .spawn()
            .unwrap()
    };
    push(&client, &capped, &values("c", 6)).await;
    push(&client, &free, &values("f", 6)).await;
    eventually("12 jobs done", || probe.lock().unwrap().done == 12).await;
    handle.shutdown().await.unwrap();
    let p = probe.lock().unwrap();
    assert_eq!(p.most_by_key["c"], 1, "the capped queue");
    assert!(
        p.most_by_key["f"] >= 2,
        "the free queue never ran two at once"
    );
    // Only the capped queue's jobs were granted a slot, so only they carry a grant time.
    for (value, admitted) in &p.admitted {
        assert_eq!(
            admitted.is_some(),
            value.starts_with("c:"),
            "{value}: {admitted:?}"
        );
    }
}

/// Jobs that run for several leases keep their slots: their heartbeats renew the leases (the
/// queue's and the key's), so a second worker never starts a job beside them, and every slot
/// is free once they are done.
#[tokio::test(flavor = "multi_thread")]
async fn jobs_longer_than_their_lease_keep_their_slots() {
    let (_redis, client, queue) = setup("limit-long").await;
    let lease = Duration::from_millis(1_500);
    let limits = Limits::default()
        .with_concurrency(1)
        .with_key_concurrency(1);
    queue.limits().set(&limits).await.unwrap();
    let probe = Shared::default();
    let long = |_: &str| Duration::from_secs(4);
    let workers: Vec<_> = (0..2)
        .map(|_| worker(&queue, 4, &probe, lease, long))
        .collect();
    push(&client, &queue, &values("k", 2)).await;
    eventually("both jobs done", || probe.lock().unwrap().done == 2).await;
    for w in workers {
        let stats = w.shutdown().await.unwrap();
        assert_eq!((stats.lost, stats.errors), (0, 0));
    }
    let seen = {
        let p = probe.lock().unwrap();
        (p.most, p.most_by_key["k"], p.starts.len())
    };
    assert_eq!(seen, (1, 1, 2));
    let usage = queue.limits().usage().await.unwrap();
    assert_eq!((usage.slots_held, usage.keys_busy), (0, 0));
}
