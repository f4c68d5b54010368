//! `delayq work` and the queue commands over several queues and over the shards of a sharded
//! queue: every value handed to the command once, from the queue or shard it names.

use crate::common::{unique_name, wait_until, TestCluster, TestRedis};
use delayq::codec::StringCodec;
use delayq::{shard_of, DelayedQueue, ShardedQueue};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// The CLI with `--shards`: `offer`, `stats`, `remove`, `take`, on a Cluster, with
/// `delayq transfer --all` finding and transferring every shard on every master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_offers_removes_counts_and_takes_across_shards() {
    let cluster = TestCluster::start(3);
    let url = cluster.url();
    let name = unique_name("cli");
    let delayq = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["--url", &url])
            .args(args)
            .env_remove("REDIS_URL")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let values: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
    for v in &values {
        delayq(&["offer", &name, v, "--delay", "300ms", "--shards", "6"]);
    }
    assert_eq!(
        delayq(&["remove", &name, "c7", "--shards", "6"]).trim(),
        "true"
    );
    let stats = delayq(&["--json", "stats", &name, "--shards", "6"]);
    let stats: serde_json::Value = serde_json::from_str(stats.trim()).unwrap();
    assert_eq!(stats["pending"], 29, "{stats}");

    // Library view: each value sits in its shard.
    let client = delayq::connect(&url).await.unwrap();
    let queue = ShardedQueue::builder(client, &name, 6, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let per_shard = queue.shard_stats().await.unwrap();
    for (i, shard) in queue.shards().iter().enumerate() {
        let here = values
            .iter()
            .filter(|v| *v != "c7" && shard_of(v.as_bytes(), 6) == i)
            .count() as u64;
        assert_eq!(per_shard[i].pending, here, "{}", shard.name());
    }

    let sidecar = Command::new(BIN)
        .args([
            "--url",
            &url,
            "transfer",
            "--all",
            "--match",
            &format!("{name}:*"),
        ])
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let taken = delayq(&[
        "take",
        &name,
        "--shards",
        "6",
        "--count",
        "29",
        "--timeout",
        "15s",
    ]);
    let _ = Command::new("kill").arg(sidecar.id().to_string()).status();
    let stderr = String::from_utf8(sidecar.wait_with_output().unwrap().stderr).unwrap();
    assert!(stderr.contains("transferring 6 delayed queue"), "{stderr}");
    let mut taken: Vec<&str> = taken.lines().collect();
    taken.sort();
    let mut expected: Vec<&str> = values
        .iter()
        .map(String::as_str)
        .filter(|v| *v != "c7")
        .collect();
    expected.sort();
    assert_eq!(taken, expected);
    assert_eq!(queue.size().await.unwrap(), 0);
}

/// `delayq work --shards N`: one worker over every shard, each value handed to the command once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_worker_serves_every_shard() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("cliwork");
    let queue = ShardedQueue::builder(client, &name, 4, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let values: Vec<String> = (0..20).map(|i| format!("w{i}")).collect();
    for v in &values {
        queue.offer(v, Duration::from_millis(100)).await.unwrap();
    }
    let out = redis.dir().join("handled.txt");
    let script = format!("echo \"$DELAYQ_VALUE $DELAYQ_QUEUE\" >> {}", out.display());
    let worker = Command::new(BIN)
        .args(["--url", &redis.url(), "work", &name, "--shards", "4"])
        .args(["--concurrency", "2", "--", "sh", "-c", &script])
        .env_remove("REDIS_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let lines = loop {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.lines().count() >= values.len() || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = Command::new("kill").arg(worker.id().to_string()).status();
    let _ = worker.wait_with_output();
    let mut got: Vec<(String, String)> = lines
        .lines()
        .map(|l| {
            let (v, q) = l.split_once(' ').unwrap();
            (v.to_owned(), q.to_owned())
        })
        .collect();
    got.sort();
    let mut expected: Vec<(String, String)> = values
        .iter()
        .map(|v| {
            let shard = ShardedQueue::<StringCodec>::shard_name(&name, shard_of(v.as_bytes(), 4));
            (v.clone(), shard)
        })
        .collect();
    expected.sort();
    assert_eq!(got, expected);
}

/// `delayq work A B -- command`: one process serves both queues, the command learns which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_works_on_several_queues() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let mut qs = Vec::new();
    for _ in 0..2 {
        let name = unique_name("wq-cli");
        qs.push(
            DelayedQueue::new(client.clone(), name, StringCodec)
                .await
                .unwrap(),
        );
    }
    let out = redis.dir().join("handled.txt");
    let script = format!(
        "printf '%s %s\\n' \"$DELAYQ_QUEUE\" \"$DELAYQ_VALUE\" >> {}",
        out.display()
    );
    let child = Command::new(BIN)
        .args(["--url", &redis.url(), "work", qs[0].name(), qs[1].name()])
        .args(["--concurrency", "2", "--", "sh", "-c", &script])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for i in 0..5 {
        qs[0]
            .offer(&format!("a{i}"), Duration::from_millis(i * 50))
            .await
            .unwrap();
        qs[1]
            .offer(&format!("b{i}"), Duration::from_millis(i * 50))
            .await
            .unwrap();
    }
    let read = || std::fs::read_to_string(&out).unwrap_or_default();
    wait_until("ten values handled", Duration::from_secs(30), || {
        let handled = read().lines().count();
        if handled >= 10 {
            Ok(())
        } else {
            Err(format!("{handled} handled"))
        }
    });
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let exit = child.wait_with_output().unwrap();
    assert!(
        exit.status.success(),
        "{}",
        String::from_utf8_lossy(&exit.stderr)
    );
    let mut lines: Vec<String> = read().lines().map(str::to_owned).collect();
    lines.sort();
    let mut want: Vec<String> = (0..5)
        .flat_map(|i| {
            [
                format!("{} a{i}", qs[0].name()),
                format!("{} b{i}", qs[1].name()),
            ]
        })
        .collect();
    want.sort();
    assert_eq!(lines, want);
}
