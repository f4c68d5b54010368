//! The worker on a real redis-server: retries with observed delays, dead letters after the limit,
//! permanent failures and panics, bounded concurrency, graceful shutdown.

use super::eventually;
use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::time::now_ms;
use delayq::{DelayedQueue, Job, JobError, ReliableConfig, RetryPolicy};
use fred::interfaces::ListInterface;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

async fn setup(prefix: &str) -> (TestRedis, fred::clients::Client, DelayedQueue<StringCodec>) {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client.clone(), unique_name(prefix), StringCodec)
        .build()
        .await
        .unwrap();
    (redis, client, queue)
}

fn fast() -> ReliableConfig {
    ReliableConfig::default()
        .with_wait_slice(Duration::from_millis(100))
        .with_reap_interval(Duration::from_millis(100))
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_are_retried_after_the_policy_delay_then_dead_lettered() {
    let (_redis, _client, queue) = setup("work-retry").await;
    // attempt -> (value, when the handler saw it)
    let seen: Arc<Mutex<Vec<(String, u32, Instant)>>> = Arc::default();
    let stop = CancellationToken::new();
    let handle = {
        let seen = seen.clone();
        queue
            .worker(2, move |job: Job<String>| {
                let seen = seen.clone();
                async move {
                    seen.lock()
                        .unwrap()
                        .push((job.value().clone(), job.attempt(), Instant::now()));
                    match job.value().as_str() {
                        // Fails twice, then works.
                        "flaky" if job.attempt() < 3 => Err(JobError::new("503 from upstream")),
                        "flaky" => Ok(()),
                        _ => Err(JobError::new(format!("still broken ({})", job.attempt()))),
                    }
                }
            })
            .retry(RetryPolicy::fixed(3, Duration::from_millis(400)))
            .reliable_config(fast())
            .stop_on(stop.clone())
            .spawn()
            .unwrap()
    };
    queue
        .offer_all(&[
            ("flaky".into(), Duration::ZERO),
            ("broken".into(), Duration::ZERO),
        ])
        .await
        .unwrap();

    eventually("both values to settle", || {
        let stats = handle.stats();
        stats.acked == 1 && stats.dead == 1
    })
    .await;
    let stats = handle.shutdown().await.unwrap();
    assert_eq!(stats.retried, 4);
    assert_eq!(stats.taken, 6);
    assert_eq!((stats.lost, stats.errors), (0, 0));

    let seen = seen.lock().unwrap().clone();
    for value in ["flaky", "broken"] {
        let times: Vec<(u32, Instant)> = seen
            .iter()
            .filter(|(v, _, _)| v == value)
            .map(|(_, a, t)| (*a, *t))
            .collect();
        assert_eq!(times.iter().map(|(a, _)| *a).collect::<Vec<_>>(), [1, 2, 3]);
        for pair in times.windows(2) {
            let gap = pair[1].1 - pair[0].1;
            let late = gap.as_millis() as i64 - 400;
            eprintln!(
                "{value}: retry {} came {late} ms after its due time",
                pair[1].0
            );
            assert!(
                gap >= Duration::from_millis(395),
                "{value}: retried after {gap:?}"
            );
        }
    }
    let dead = queue.inspect().dead_letters(0).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].value.as_ref().unwrap(), "broken");
    assert_eq!(dead[0].attempts, 3);
    assert_eq!(dead[0].error, "still broken (3)");
    let stats = queue.inspect().reliable_stats().await.unwrap();
    assert_eq!((stats.in_flight, stats.counters), (0, 0));
    assert!(queue.is_empty().await.unwrap());
    queue.destroy().await.unwrap();
}

/// While a retry waits, the value is an ordinary pending entry (what a Java peer sees). The
/// retry is an hour away, so the entry is still waiting when looked at.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_retry_is_an_ordinary_pending_entry() {
    let (_redis, _client, queue) = setup("work-wait").await;
    let handle = queue
        .worker(1, |_job: Job<String>| async {
            Err::<(), _>(JobError::new("503 from upstream"))
        })
        .retry(RetryPolicy::fixed(3, Duration::from_secs(3_600)))
        .reliable_config(fast())
        .spawn()
        .unwrap();
    let before = now_ms();
    queue.offer("flaky", Duration::ZERO).await.unwrap();
    eventually("the retry to be planned", || handle.stats().retried == 1).await;
    let after = now_ms();
    let pending = queue.inspect().pending(0).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].value.as_deref().ok(), Some("flaky"));
    assert_eq!(pending[0].raw.as_ref(), b"flaky");
    let due = pending[0].due_ms.unwrap();
    assert!(
        (before + 3_600_000..=after + 3_600_000).contains(&due),
        "due {due}, failed between {before} and {after}"
    );
    let stats = handle.shutdown().await.unwrap();
    assert_eq!((stats.taken, stats.retried, stats.dead), (1, 1, 0));
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn permanent_errors_and_panics_and_concurrency_bound() {
    let (_redis, _client, queue) = setup("work-perm").await;
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let handle = {
        let (running, peak) = (running.clone(), peak.clone());
        queue
            .worker(3, move |job: Job<String>| {
                let (running, peak) = (running.clone(), peak.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    // Hold on until three run at once, so the bound is reached whatever the
                    // machine's speed (a worker that never runs three gives up after a while).
                    let deadline = Instant::now() + PATIENCE;
                    while peak.load(Ordering::SeqCst) < 3 && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    tokio::time::sleep(Duration::from_millis(60)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    match job.value().as_str() {
                        "permanent" => Err(JobError::permanent("no such order")),
                        "panics" => panic!("handler bug"),
                        _ => Ok(()),
                    }
                }
            })
            .retry(RetryPolicy::fixed(2, Duration::from_millis(50)))
            .reliable_config(fast())
            .spawn()
            .unwrap()
    };
    let mut items: Vec<(String, Duration)> = (0..12)
        .map(|i| (format!("ok-{i}"), Duration::ZERO))
        .collect();
    items.push(("permanent".into(), Duration::ZERO));
    items.push(("panics".into(), Duration::ZERO));
    queue.offer_all(&items).await.unwrap();
    eventually("all settled", || {
        let s = handle.stats();
        s.acked == 12 && s.dead == 2
    })
    .await;
    let stats = handle.shutdown().await.unwrap();
    assert_eq!(
        stats.retried, 1,
        "the panic is retried once, the permanent error never"
    );
    assert!(
        peak.load(Ordering::SeqCst) <= 3,
        "{}",
        peak.load(Ordering::SeqCst)
    );
    assert_eq!(peak.load(Ordering::SeqCst), 3, "the bound was used");
    let dead: HashMap<String, (u32, String)> = queue
        .inspect()
        .dead_letters(0)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.value.unwrap(), (d.attempts, d.error)))
        .collect();
    assert_eq!(dead["permanent"], (1, "no such order".to_string()));
    assert_eq!(dead["panics"].0, 2);
    assert!(
        dead["panics"].1.contains("handler bug"),
        "{:?}",
        dead["panics"]
    );
    queue.destroy().await.unwrap();
}

/// A dead letter records why the job failed with every cause: an error's `source()` chain, and
/// the contexts an `anyhow::Error` added around a `JobError` (whose kind still decides: a
/// permanent one is not retried); an error of a megabyte is kept within the bound, its start and
/// its end.
#[tokio::test(flavor = "multi_thread")]
async fn a_dead_letter_keeps_the_error_s_whole_chain_within_the_bound() {
    let (_redis, _client, queue) = setup("work-chain").await;
    let handle = queue
        .worker(2, move |job: Job<String>| async move {
            match job.value().as_str() {
                "context" => Err(anyhow::Error::from(JobError::permanent("no such order"))
                    .context("loading order 7")
                    .context("cancelling order 7")),
                "source" => {
                    let io = std::io::Error::other("connection reset by peer");
                    Err(anyhow::Error::from(io).context("calling the payment API"))
                }
                _ => Err(anyhow::anyhow!(
                    "started{}ended with the root cause",
                    "x".repeat(1 << 20)
                )),
            }
        })
        .retry(RetryPolicy::fixed(1, Duration::from_millis(50)))
        .reliable_config(fast())
        .spawn()
        .unwrap();
    let values = ["context", "source", "huge"].map(|v| (v.to_owned(), Duration::ZERO));
    queue.offer_all(&values).await.unwrap();
    eventually("three dead letters", || handle.stats().dead == 3).await;
    let stats = handle.shutdown().await.unwrap();
    assert_eq!(stats.retried, 0);
    let dead: HashMap<String, String> = queue
        .inspect()
        .dead_letters(0)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.value.unwrap(), d.error))
        .collect();
    assert_eq!(
        dead["context"],
        "cancelling order 7: loading order 7: no such order"
    );
    assert_eq!(
        dead["source"],
        "calling the payment API: connection reset by peer"
    );
    let huge = &dead["huge"];
    assert!(
        huge.len() <= delayq::reliable::MAX_ERROR_BYTES,
        "{}",
        huge.len()
    );
    assert!(huge.starts_with("startedxxx") && huge.ends_with("xxxended with the root cause"));
    assert!(huge.contains("bytes left out"), "no mark of the cut");
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn graceful_shutdown_finishes_or_gives_back_and_loses_nothing() {
    let (_redis, client, queue) = setup("work-stop").await;
    let finished = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    // The short jobs end once released (as shutdown begins); the long ones never end.
    let released = Arc::new(AtomicBool::new(false));
    let handler = {
        let (started, finished, released) = (started.clone(), finished.clone(), released.clone());
        move |job: Job<String>| {
            let (started, finished, released) =
                (started.clone(), finished.clone(), released.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                if job.value().starts_with("long") {
                    std::future::pending::<()>().await;
                }
                while !released.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                finished.fetch_add(1, Ordering::SeqCst);
                Ok::<(), JobError>(())
            }
        }
    };
    // Two short jobs finish within the grace period; two long ones do not and are given back.
    let grace = Duration::from_secs(2);
    let handle = queue
        .worker(4, handler)
        .reliable_config(fast())
        .shutdown_grace(grace)
        .abort_grace(Duration::from_millis(100))
        .spawn()
        .unwrap();
    queue
        .offer_all(&[
            ("short-1".into(), Duration::ZERO),
            ("short-2".into(), Duration::ZERO),
            ("long-1".into(), Duration::ZERO),
            ("long-2".into(), Duration::ZERO),
        ])
        .await
        .unwrap();
    eventually("all four started", || started.load(Ordering::SeqCst) == 4).await;
    let asked = Instant::now();
    let shutdown = tokio::spawn(handle.shutdown());
    released.store(true, Ordering::SeqCst);
    // The long jobs never end: shutdown returns only because the grace period cut them off.
    let stats = tokio::time::timeout(PATIENCE, shutdown)
        .await
        .expect("shutdown waited for jobs that never end")
        .unwrap()
        .unwrap();
    let took = asked.elapsed();
    assert!(took >= grace, "shutdown took {took:?}, less than the grace");
    assert_eq!(finished.load(Ordering::SeqCst), 2);
    assert_eq!((stats.acked, stats.given_back), (2, 2));
    let mut back: Vec<String> = client.lrange(queue.name(), 0, -1).await.unwrap();
    back.sort();
    assert_eq!(back, ["long-1", "long-2"]);
    let rel = queue.inspect().reliable_stats().await.unwrap();
    assert_eq!(rel.in_flight, 0);
    assert_eq!(rel.counters, 0, "given-back attempts are not counted");

    // A new worker picks them up; an undecodable value never reaches a handler.
    let asked_ms = now_ms();
    client
        .rpush::<i64, _, _>(queue.name(), bytes::Bytes::from_static(&[0xff, 0xfe]))
        .await
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    let worker = {
        let calls = calls.clone();
        queue
            .worker(2, move |_job: Job<String>| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Ok::<(), JobError>(()) }
            })
            .reliable_config(fast())
            .stop_on(stop.clone())
            .spawn()
            .unwrap()
    };
    eventually("the rest settled", || {
        let s = worker.stats();
        s.acked == 2 && s.dead == 1
    })
    .await;
    stop.cancel();
    worker.shutdown().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let dead = queue.inspect().dead_letters(0).await.unwrap();
    assert!(
        dead[0].error.contains("does not decode"),
        "{}",
        dead[0].error
    );
    assert!((asked_ms..=now_ms()).contains(&dead[0].dead_at_ms));
    queue.destroy().await.unwrap();
}

/// An abandoned job's handler sees its abort token and stops cleanly before its value is given
/// back: what it does after the cancel happens while the value is still its own, and the value
/// is then given back, not acknowledged, though the handler returned `Ok`.
#[tokio::test(flavor = "multi_thread")]
async fn an_abandoned_handler_stops_cleanly_before_its_value_goes_back() {
    let (_redis, client, queue) = setup("work-abort").await;
    let started = Arc::new(AtomicBool::new(false));
    // The target list's length the handler saw once it had stopped.
    let seen_at_stop: Arc<Mutex<Option<i64>>> = Arc::default();
    let handler = {
        let (started, seen_at_stop) = (started.clone(), seen_at_stop.clone());
        let (client, name) = (client.clone(), queue.name().to_owned());
        move |job: Job<String>| {
            let (started, seen_at_stop) = (started.clone(), seen_at_stop.clone());
            let (client, name) = (client.clone(), name.clone());
            async move {
                started.store(true, Ordering::SeqCst);
                job.abort_token().cancelled().await;
                let ready: i64 = client.llen(&name).await.unwrap();
                *seen_at_stop.lock().unwrap() = Some(ready);
                Ok::<(), JobError>(())
            }
        }
    };
    let handle = queue
        .worker(1, handler)
        .reliable_config(fast())
        .shutdown_grace(Duration::from_millis(100))
        .abort_grace(PATIENCE)
        .spawn()
        .unwrap();
    queue.offer("v", Duration::ZERO).await.unwrap();
    eventually("the job started", || started.load(Ordering::SeqCst)).await;
    let stats = handle.shutdown().await.unwrap();
    assert_eq!(
        *seen_at_stop.lock().unwrap(),
        Some(0),
        "the handler stopped after its abort token, before its value went back"
    );
    assert_eq!((stats.acked, stats.given_back), (0, 1), "{stats:?}");
    let back: Vec<String> = client.lrange(queue.name(), 0, -1).await.unwrap();
    assert_eq!(back, ["v"]);
    assert_eq!(queue.inspect().reliable_stats().await.unwrap().in_flight, 0);
    queue.destroy().await.unwrap();
}

/// A handler that ignores its abort token is dropped after the abort grace; its value is given
/// back all the same.
#[tokio::test(flavor = "multi_thread")]
async fn a_handler_that_ignores_its_abort_token_is_dropped_after_the_abort_grace() {
    let (_redis, client, queue) = setup("work-abort-ignored").await;
    let started = Arc::new(AtomicBool::new(false));
    let handler = {
        let started = started.clone();
        move |_job: Job<String>| {
            let started = started.clone();
            async move {
                started.store(true, Ordering::SeqCst);
                std::future::pending::<()>().await;
                Ok::<(), JobError>(())
            }
        }
    };
    let abort_grace = Duration::from_millis(300);
    let handle = queue
        .worker(1, handler)
        .reliable_config(fast())
        .shutdown_grace(Duration::from_millis(100))
        .abort_grace(abort_grace)
        .spawn()
        .unwrap();
    queue.offer("v", Duration::ZERO).await.unwrap();
    eventually("the job started", || started.load(Ordering::SeqCst)).await;
    let asked = Instant::now();
    let stats = tokio::time::timeout(PATIENCE, handle.shutdown())
        .await
        .expect("the abandoned handler was never dropped")
        .unwrap();
    assert!(asked.elapsed() >= abort_grace, "{:?}", asked.elapsed());
    assert_eq!((stats.acked, stats.given_back), (0, 1), "{stats:?}");
    let back: Vec<String> = client.lrange(queue.name(), 0, -1).await.unwrap();
    assert_eq!(back, ["v"]);
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_workers_are_refused() {
    let (_redis, _client, queue) = setup("work-bad").await;
    let handler = |_job: Job<String>| async { Ok::<(), JobError>(()) };
    assert!(matches!(
        queue.worker(0, handler).spawn(),
        Err(delayq::Error::InvalidConfig(_))
    ));
    assert!(matches!(
        queue
            .worker(1, handler)
            .retry(RetryPolicy::fixed(0, Duration::ZERO))
            .run()
            .await,
        Err(delayq::Error::InvalidConfig(_))
    ));
    assert!(matches!(
        queue
            .worker(1, handler)
            .server_check(Duration::ZERO)
            .spawn(),
        Err(delayq::Error::InvalidConfig(_))
    ));
    queue.destroy().await.unwrap();
}
