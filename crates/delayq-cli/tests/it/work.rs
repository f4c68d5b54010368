//! `delayq work` and the queue commands over several queues and over the shards of a sharded
//! queue: every value handed to the command once, from the queue or shard it names.

use crate::common::{unique_name, wait_until, TestCluster, TestRedis, PATIENCE};
use crate::work_lifecycle::Worker;
use delayq::codec::StringCodec;
use delayq::{shard_of, DelayedQueue, ShardedQueue};
use fred::interfaces::SortedSetsInterface;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// A handle on the sharded queue `name` that runs no scheduler, to look at what the CLI did.
async fn without_scheduler(url: &str, name: &str, shards: usize) -> ShardedQueue<StringCodec> {
    let client = delayq::connect(url).await.unwrap();
    ShardedQueue::builder(client, name, shards, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap()
}

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
    let queue = without_scheduler(&url, &name, 6).await;
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
    let name = unique_name("cliwork");
    let queue = without_scheduler(&redis.url(), &name, 4).await;
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
    let deadline = Instant::now() + PATIENCE;
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

/// `reschedule` and `clear` with `--shards` act on every shard of the sharded queue; `peek`,
/// `check`, `dead` and `quarantine`, which read one queue's own keys, refuse `--shards` as a
/// usage error that names the shards to run them on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_reschedules_and_clears_across_shards_and_refuses_what_it_cannot() {
    use std::process::Output;
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("clishards");
    let delayq = |args: &[&str]| -> Output {
        Command::new(BIN)
            .args(["--url", &url])
            .args(args)
            .env_remove("REDIS_URL")
            .output()
            .unwrap()
    };
    let stdout = |out: Output| {
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    for i in 0..8 {
        let v = format!("r{i}");
        stdout(delayq(&[
            "offer", &name, &v, "--delay", "1h", "--shards", "4",
        ]));
    }
    let queue = without_scheduler(&url, &name, 4).await;
    assert_eq!(queue.size().await.unwrap(), 8);

    let args = ["reschedule", &name, "r3", "--delay", "0s", "--shards", "4"];
    assert_eq!(stdout(delayq(&args)), "true");
    let shard = &queue.shards()[shard_of(b"r3", 4)];
    let pending = shard.inspect().pending(0).await.unwrap();
    let r3 = pending.iter().find(|p| p.raw.as_ref() == b"r3").unwrap();
    assert!(r3.due_ms.unwrap() <= delayq::time::now_ms(), "r3 due now");
    let args = [
        "reschedule",
        &name,
        "absent",
        "--delay",
        "0s",
        "--shards",
        "4",
    ];
    assert_eq!(stdout(delayq(&args)), "false");

    for args in [
        vec!["peek"],
        vec!["check"],
        vec!["dead", "list"],
        vec!["dead", "replay"],
        vec!["dead", "purge"],
        vec!["quarantine", "list"],
        vec!["quarantine", "purge"],
    ] {
        let out = delayq(&[&args[..], &[name.as_str(), "--shards", "4"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("has no --shards")
                && stderr.contains(&format!("{name}:{{0}} .. {name}:{{3}}")),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(
        queue.size().await.unwrap(),
        8,
        "nothing was refused part-way"
    );

    assert_eq!(stdout(delayq(&["clear", &name, "--shards", "4"])), "true");
    assert_eq!(queue.size().await.unwrap(), 0);
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
    wait_until("ten values handled", PATIENCE, || {
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

/// The value comes on the command's stdin byte for byte, also past what an environment variable
/// holds and with a NUL byte (then without DELAYQ_VALUE); a command that reads no stdin acks,
/// at once, even while a process it left holds the pipe open unread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_worker_hands_every_value_on_stdin() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::new(client, unique_name("stdin"), StringCodec)
        .await
        .unwrap();
    let big: String = (0..1024 * 1024)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let values = [big, "nul\0byte".to_owned(), "small".to_owned()];
    let got = redis.dir().join("stdin");
    std::fs::create_dir(&got).unwrap();
    // Each value's stdin into a file, and beside it whether DELAYQ_VALUE came too; then the
    // command lingers a little, so that its files are there before it is acknowledged.
    let script = format!(
        "f=$(mktemp {}/vXXXXXX); cat > \"$f\"; \
         echo \"${{DELAYQ_VALUE_ON_STDIN_ONLY:-0}} ${{DELAYQ_VALUE-unset}}\" > \"$f.env\"; sleep 0.3",
        got.display()
    );
    let mut worker = Worker::start(
        &redis.url(),
        redis.dir(),
        &[queue.name(), "--", "sh", "-c", &script],
    );
    for v in &values {
        queue.offer(v, Duration::ZERO).await.unwrap();
    }
    let read = || -> Vec<(Vec<u8>, String)> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&got).unwrap() {
            let path = entry.unwrap().path();
            let Ok(env) = std::fs::read_to_string(path.with_extension("env")) else {
                continue;
            };
            if path.extension().is_none() {
                found.push((std::fs::read(&path).unwrap(), env.trim_end().to_owned()));
            }
        }
        found.sort();
        found
    };
    let found = wait_until("three values on stdin", PATIENCE, || {
        let found = read();
        if found.len() == 3 {
            Ok(found)
        } else {
            Err(format!("{} so far; {}", found.len(), worker.log()))
        }
    });
    let mut want: Vec<(Vec<u8>, String)> = vec![
        (values[0].clone().into_bytes(), "1 unset".to_owned()),
        (values[1].clone().into_bytes(), "1 unset".to_owned()),
        (values[2].clone().into_bytes(), "0 small".to_owned()),
    ];
    want.sort();
    assert!(
        found == want,
        "the values on stdin differ: {}",
        worker.log()
    );
    // The files are written before the command exits: stopping the worker now could leave the
    // last value unacknowledged, back after its 30 s visibility (seen on CI as "2 taken, 2
    // acked" below). Every value settled first, then a graceful stop.
    let deadline = Instant::now() + PATIENCE;
    while queue.inspect().reliable_stats().await.unwrap().in_flight > 0
        || queue.size().await.unwrap() > 0
    {
        assert!(Instant::now() < deadline, "not settled: {}", worker.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.signal("-TERM");
    assert!(worker.wait_exit().success());
    assert!(
        worker.log().contains("3 taken, 3 acked"),
        "{}",
        worker.log()
    );

    // A command that reads nothing of a 1 MiB stdin acks all the same, and at once although
    // the process it leaves behind holds the pipe open without reading (the worker's write of
    // the value is not waited for).
    let ran = redis.dir().join("ran");
    let holder = redis.dir().join("holder");
    let script = format!(
        "sleep 600 <&0 >/dev/null 2>&1 & echo $! > {}; touch {}",
        holder.display(),
        ran.display()
    );
    let mut worker = Worker::start(
        &redis.url(),
        redis.dir(),
        &[queue.name(), "--", "sh", "-c", &script],
    );
    let _holder = KillOnDrop(holder.clone());
    queue.offer(&values[0], Duration::ZERO).await.unwrap();
    let deadline = Instant::now() + PATIENCE;
    // In flight from before the command ran until it is settled.
    while !ran.exists() || queue.inspect().reliable_stats().await.unwrap().in_flight > 0 {
        assert!(Instant::now() < deadline, "not settled: {}", worker.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ran_at = std::fs::metadata(&ran).unwrap().modified().unwrap();
    eprintln!(
        "settled {} ms after the command ran",
        ran_at.elapsed().unwrap_or_default().as_millis()
    );
    worker.signal("-TERM");
    assert!(worker.wait_exit().success());
    assert!(
        worker.log().contains("1 taken, 1 acked"),
        "{}",
        worker.log()
    );
}

/// Kills the process whose pid is in a file, when dropped.
struct KillOnDrop(std::path::PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
        }
    }
}

/// `work` on a paused queue takes none of its ready values: its first take finds the pause
/// flag (and says so), the values stay ready and no command runs; after `delayq resume` each
/// value is handed to the command exactly once. (Before, `work` took them all at once.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_worker_takes_nothing_from_a_paused_queue_until_it_is_resumed() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client.clone(), unique_name("paused-ready"), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    assert!(queue.admin().pause().await.unwrap());
    let values: Vec<String> = (0..5).map(|i| format!("p{i}")).collect();
    for value in &values {
        queue.offer(value, Duration::ZERO).await.unwrap();
    }
    // The schedulers of a paused queue move nothing; a transfer by hand does.
    while queue.size().await.unwrap() > 0 {
        queue.admin().transfer_due(100).await.unwrap();
    }
    let ready = || async { queue.inspect().stats().await.unwrap().ready };
    assert_eq!(ready().await, 5);
    let out = redis.dir().join("paused-handled.txt");
    let script = format!("echo \"$DELAYQ_VALUE\" >> {}", out.display());
    let worker = Worker::start(
        &redis.url(),
        redis.dir(),
        &[
            queue.name(),
            "--concurrency",
            "2",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    worker.wait_for_log("the worker takes none of its values");
    assert!(!out.exists(), "no command ran while paused");
    assert_eq!(ready().await, 5, "every value still ready");
    let in_flight: u64 = client.zcard(queue.keys().inflight()).await.unwrap();
    assert_eq!(in_flight, 0, "nothing in flight");

    assert!(queue.admin().resume().await.unwrap());
    worker.wait_for_log("queue resumed");
    wait_until("every value handled", PATIENCE, || {
        let lines = std::fs::read_to_string(&out).unwrap_or_default();
        match lines.lines().count() >= 5 {
            true => Ok(()),
            false => Err(lines),
        }
    });
    worker.signal("-TERM");
    let mut handled: Vec<String> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    handled.sort();
    assert_eq!(handled, values, "each value handled exactly once");
    assert_eq!(ready().await, 0);
}

/// Values ready in three queues before `work` starts, handed to a command one at a time; the
/// command appends `$DELAYQ_QUEUE` to a file. Returns the queues' names and the file's lines
/// (the first `jobs`, once the command has run that often).
async fn serve_three(
    redis: &TestRedis,
    counts: [usize; 3],
    jobs: usize,
    order: &[&str],
) -> (Vec<String>, Vec<String>) {
    let client = delayq::connect(&redis.url()).await.unwrap();
    let mut names = Vec::new();
    for (q, count) in counts.into_iter().enumerate() {
        let queue = DelayedQueue::builder(
            client.clone(),
            unique_name(&format!("prio{q}")),
            StringCodec,
        )
        .transfer(false)
        .build()
        .await
        .unwrap();
        let values: Vec<String> = (0..count).map(|i| format!("{q}-{i}")).collect();
        let _: () = fred::interfaces::ListInterface::rpush(&client, queue.name(), values)
            .await
            .unwrap();
        names.push(queue.name().to_owned());
    }
    let out = redis
        .dir()
        .join(format!("{}.txt", unique_name("order").replace(':', "-")));
    let script = format!("echo \"$DELAYQ_QUEUE\" >> {}", out.display());
    let mut args: Vec<&str> = names.iter().map(String::as_str).collect();
    args.extend(order);
    args.extend(["--", "sh", "-c", &script]);
    let worker = Worker::start(&redis.url(), redis.dir(), &args);
    let lines = wait_until("the jobs run", PATIENCE, || {
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        match lines.len() >= jobs {
            true => Ok(lines),
            false => Err(text),
        }
    });
    worker.signal("-TERM");
    (names, lines[..jobs].to_vec())
}

/// `work A B C --strict`: every value of A, then B's, then C's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_worker_serves_queues_in_strict_order() {
    let redis = TestRedis::start();
    let (names, lines) = serve_three(&redis, [4, 4, 4], 12, &["--strict"]).await;
    let want: Vec<&String> = names.iter().flat_map(|n| [n; 4]).collect();
    assert_eq!(lines.iter().collect::<Vec<_>>(), want);
}

/// `work A B C --weights 3,2,1`: of the first 24 values, 12, 8 and 4 (while all have values).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_worker_serves_queues_by_weight() {
    let redis = TestRedis::start();
    let (names, lines) = serve_three(&redis, [30, 30, 30], 24, &["--weights", "3,2,1"]).await;
    let count = |name: &String| lines.iter().filter(|l| *l == name).count();
    let counts: Vec<usize> = names.iter().map(count).collect();
    assert_eq!(counts, [12, 8, 4], "{lines:?}");
}

/// Weights that do not match the queues, or given with --strict, are refused at start.
#[test]
fn the_cli_worker_refuses_weights_that_do_not_match_its_queues() {
    let redis = TestRedis::start();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(["--url", &redis.url(), "work", "a", "b", "c"])
            .args(args)
            .args(["--", "true"])
            .env_remove("REDIS_URL")
            .output()
            .unwrap()
    };
    let out = run(&["--weights", "6,3"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("3 queue(s) and 2 weight(s)"), "{stderr}");
    let out = run(&["--weights", "6,3,1", "--strict"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}

/// `work` says once when a queue it serves is paused, and once when it is resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_worker_says_when_its_queue_is_paused_and_resumed() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::new(client, unique_name("paused"), StringCodec)
        .await
        .unwrap();
    let worker = Worker::start(&redis.url(), redis.dir(), &[queue.name(), "--", "true"]);
    worker.wait_for_log("worker started");
    assert!(queue.admin().pause().await.unwrap());
    worker.wait_for_log("queue is paused");
    assert!(queue.admin().resume().await.unwrap());
    worker.wait_for_log("queue resumed");
    let log = worker.log();
    assert_eq!(log.matches("queue is paused").count(), 1, "{log}");
    assert_eq!(log.matches("queue resumed").count(), 1, "{log}");
}
