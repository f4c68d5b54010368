//! kill -9 a worker process mid-job: the values it held are delivered again after the
//! visibility timeout, and only those. Also the `delayq dead` and `delayq quarantine` commands.

use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, Job, ReliableConfig, RetryPolicy};
use fred::interfaces::SortedSetsInterface;
use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_worker_loses_nothing_and_duplicates_only_its_in_flight_values() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("kill");
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .build()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("handled.log");

    // The worker process: appends "value attempt" to the log, then "slow" values hang.
    let script = format!(
        "echo \"$DELAYQ_VALUE $DELAYQ_ATTEMPT\" >> {}; case \"$DELAYQ_VALUE\" in slow*) sleep 30;; esac",
        log.display()
    );
    let mut child = Command::new(BIN)
        .args(["--url", &redis.url(), "work", &name, "--concurrency", "3"])
        .args(["--visibility", "1s", "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group, so the kill takes its `sh` children too.
        .process_group(0)
        .spawn()
        .unwrap();
    let fast: Vec<String> = (0..6).map(|i| format!("fast-{i}")).collect();
    let slow: Vec<String> = (0..3).map(|i| format!("slow-{i}")).collect();
    let mut offers: Vec<(String, Duration)> =
        fast.iter().map(|v| (v.clone(), Duration::ZERO)).collect();
    offers.extend(slow.iter().map(|v| (v.clone(), Duration::from_millis(300))));
    queue.offer_all(&offers).await.unwrap();

    // Wait until every fast value was handled and the three slow ones hang in flight.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let seen = lines(&log);
        let in_flight: i64 = client.zcard(queue.keys().inflight()).await.unwrap();
        if seen.len() == 9 && in_flight == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "worker never got there: {seen:?}, {in_flight} in flight"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let acked_fast = queue.inspect().reliable_stats().await.unwrap();
    assert_eq!(acked_fast.in_flight, 3);
    // The visibility deadlines of the three held values: none may come back before its own.
    let deadlines: Vec<(String, f64)> = client
        .zrange(queue.keys().inflight(), 0, -1, None, false, None, true)
        .await
        .unwrap();
    let earliest = deadlines.iter().map(|(_, d)| *d as i64).min().unwrap();

    // kill -9 the whole process group.
    let pgid = child.id();
    let status = Command::new("kill")
        .args(["-9", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(!exit.success());

    // Another worker (here, in-process) gets exactly the three in-flight values, once more.
    let got: Arc<Mutex<Vec<(String, u32, i64)>>> = Arc::default();
    let handle = {
        let got = got.clone();
        queue
            .worker(3, move |job: Job<String>| {
                let got = got.clone();
                async move {
                    got.lock().unwrap().push((
                        job.value().clone(),
                        job.attempt(),
                        delayq::time::now_ms(),
                    ));
                    Ok::<(), delayq::JobError>(())
                }
            })
            .reliable_config(
                ReliableConfig::default()
                    .with_wait_slice(Duration::from_millis(100))
                    .with_reap_interval(Duration::from_millis(100)),
            )
            .spawn()
            .unwrap()
    };
    let deadline = Instant::now() + PATIENCE;
    while got.lock().unwrap().len() < 3 {
        assert!(
            Instant::now() < deadline,
            "not redelivered: {:?}",
            got.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Give a wrong extra delivery the time to show up.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stats = handle.shutdown().await.unwrap();
    let got = got.lock().unwrap().clone();
    for (value, attempt, at) in &got {
        eprintln!(
            "{value}: attempt {attempt}, redelivered {} ms after the first deadline",
            at - earliest
        );
        assert_eq!(*attempt, 2);
        assert!(
            *at >= earliest,
            "{value} came back before its visibility deadline"
        );
    }
    let mut redelivered: Vec<String> = got.iter().map(|(v, _, _)| v.clone()).collect();
    redelivered.sort();
    assert_eq!(redelivered, slow, "only the in-flight values come again");
    assert_eq!(stats.acked, 3);

    // Across both processes: fast values once, slow values twice (in flight at the kill).
    let mut count: HashMap<String, usize> = HashMap::new();
    for line in lines(&log) {
        let value = line.split_whitespace().next().unwrap().to_owned();
        *count.entry(value).or_default() += 1;
    }
    for (value, _, _) in &got {
        *count.entry(value.clone()).or_default() += 1;
    }
    for v in &fast {
        assert_eq!(count[v], 1, "{v}");
    }
    for v in &slow {
        assert_eq!(count[v], 2, "{v}");
    }
    let rel = queue.inspect().reliable_stats().await.unwrap();
    assert_eq!((rel.in_flight, rel.dead, rel.counters), (0, 0, 0));
    assert!(queue.is_empty().await.unwrap());
    queue.destroy().await.unwrap();
}

fn cli(redis: &TestRedis, args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["--url", &redis.url()])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_manages_dead_letters_quarantine_and_reschedules() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("cli-dead");
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .build()
        .await
        .unwrap();
    // Two dead letters from a worker whose handler always fails.
    let handle = queue
        .worker(1, |_job: Job<String>| async {
            Err(delayq::JobError::new("card declined"))
        })
        .retry(RetryPolicy::fixed(2, Duration::from_millis(10)))
        .reliable_config(ReliableConfig::default().with_wait_slice(Duration::from_millis(100)))
        .spawn()
        .unwrap();
    queue
        .offer_all(&[("a".into(), Duration::ZERO), ("b".into(), Duration::ZERO)])
        .await
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while handle.stats().dead < 2 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.shutdown().await.unwrap();

    let (ok, out) = cli(&redis, &["dead", "list", &name]);
    assert!(ok, "{out}");
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split('\t').collect()).collect();
    // Position, id, attempts, time, error, value.
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!((rows[0][0], rows[1][0]), ("0", "1"));
    assert_eq!(rows[0][1].len(), 16, "{out}");
    assert_eq!(rows[0][2], "2");
    assert_eq!(rows[0][4], "card declined");
    let mut values: Vec<&str> = rows.iter().map(|r| r[5]).collect();
    values.sort();
    assert_eq!(values, ["a", "b"]);
    assert_eq!(
        cli(&redis, &["dead", "replay", &name, "--limit", "1"])
            .1
            .trim(),
        "1"
    );
    let stats = cli(&redis, &["stats", &name]).1;
    assert!(stats.contains("ready:       1"), "{stats}");
    assert_eq!(cli(&redis, &["dead", "purge", &name]).1.trim(), "1");
    assert_eq!(cli(&redis, &["dead", "list", &name]).1, "");

    // Quarantine: list shows length and hex; purge empties it; replay is refused.
    redis.cli(&["RPUSH", queue.keys().quarantine(), "junk"]);
    let (ok, out) = cli(&redis, &["quarantine", "list", &name]);
    assert!(ok);
    assert_eq!(out.trim(), "4\t6a756e6b");
    let (ok, out) = cli(&redis, &["quarantine", "replay", &name]);
    assert!(!ok, "{out}");
    assert_eq!(cli(&redis, &["quarantine", "purge", &name]).1.trim(), "1");

    // offer --unique and reschedule.
    assert_eq!(
        cli(
            &redis,
            &["offer", &name, "order-1", "--delay", "15m", "--unique"]
        )
        .1
        .trim(),
        "false"
    );
    assert_eq!(
        cli(
            &redis,
            &["offer", &name, "order-1", "--delay", "20m", "--unique"]
        )
        .1
        .trim(),
        "true"
    );
    assert_eq!(
        cli(&redis, &["reschedule", &name, "order-1", "--delay", "1h"])
            .1
            .trim(),
        "true"
    );
    assert_eq!(
        cli(&redis, &["reschedule", &name, "nope", "--delay", "1h"])
            .1
            .trim(),
        "false"
    );
    let pending = queue.inspect().pending(0).await.unwrap();
    assert_eq!(pending.len(), 1);
    queue.destroy().await.unwrap();
}
