//! The transfer scheduler on a real redis-server: backlogs, legacy entries, killed connections,
//! flushed scripts, shutdown.

use crate::common::queue::*;
use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::entry::{pack, pack_legacy};
use delayq::{DelayedQueue, EntryFormat, GroupConfig, Scheduler, TransferConfig};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_of_more_than_100_is_drained_in_due_order() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("backlog");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    // 1,050 entries already due, written with distinct scores in reverse offer order.
    let base = now_ms() - 10_000;
    for i in 0..1_050i64 {
        let entry = pack(&rand::random::<[u8; 8]>(), format!("b{i:04}").as_bytes());
        push_raw_entry(&client, keys.timeout(), keys.order(), &entry, base - i).await;
    }
    // Batches of exactly 100, as Redisson's (the default grows them when calls are fast).
    let fixed = TransferConfig::default().with_adaptive_batch(100, Duration::from_millis(5));
    let handle = Scheduler::spawn(client.clone(), name.as_str(), fixed)
        .await
        .unwrap();
    assert!(
        eventually(PATIENCE, || async {
            int(&client, "LLEN", keys.target()).await == 1_050
        })
        .await
    );
    let target = list_str(&client, keys.target()).await;
    let expected: Vec<String> = (0..1_050).rev().map(|i| format!("b{i:04}")).collect();
    assert_eq!(target, expected);
    assert_eq!(int(&client, "LLEN", keys.order()).await, 0);
    assert_eq!(int(&client, "ZCARD", keys.timeout()).await, 0);
    let stats = handle.stats();
    assert_eq!(stats.moved, 1_050);
    assert!(stats.transfers >= 11, "at most 100 per call: {stats:?}");
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_entries_written_by_old_java_are_moved() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("legacy");
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .options(delayq::QueueOptions::default().format(EntryFormat::Legacy))
        .build()
        .await
        .unwrap();
    let keys = queue.keys().clone();
    let due = now_ms() + 200;
    for (i, random) in [-4.0e18f64, 12345.0, 9.2e18].iter().enumerate() {
        let entry = pack_legacy(*random, format!("old{i}").as_bytes());
        push_raw_entry(
            &client,
            keys.timeout(),
            keys.order(),
            &entry,
            due + i as i64,
        )
        .await;
    }
    // A current entry in the same queue (a newer peer) moves too: detected per entry.
    queue
        .offer("mixed", Duration::from_millis(250))
        .await
        .unwrap();
    // Nothing has published for the raw ones; the sweep or the offer's message wakes the scheduler.
    let consumer = queue.consumer().await.unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(consumer.poll(PATIENCE).await.unwrap().unwrap());
    }
    assert!(now_ms() >= due);
    assert_eq!(got, vec!["old0", "old1", "old2", "mixed"]);
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_survives_client_kill_of_its_connections() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("kill");
    // No safety sweep: delivery after the kill must come from the re-subscription.
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .group_config(GroupConfig::default().with_sweep_interval(None))
        .build()
        .await
        .unwrap();
    let consumer = queue.consumer().await.unwrap();
    queue
        .offer("before", Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!(consumer.take().await.unwrap(), "before");

    for kind in ["pubsub", "normal"] {
        let killed = redis.cli(&["CLIENT", "KILL", "TYPE", kind]);
        assert_ne!(killed.trim(), "0", "killed {kind} connections");
        // Offered while fred may still be reconnecting: the message (or, when it was missed,
        // the catch-up transfer on re-subscribe) must still deliver it; with no sweep nothing
        // else would.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let value = format!("after-{kind}");
        let due = now_ms() + 300;
        queue
            .offer(&value, Duration::from_millis(300))
            .await
            .unwrap();
        let got = consumer.poll(PATIENCE).await.unwrap();
        assert_eq!(got.as_deref(), Some(value.as_str()));
        let late = now_ms() - due;
        assert!(late >= 0, "{kind}: {} ms early", -late);
    }
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_due_while_disconnected_are_caught_up_on_resubscribe() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("catchup");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    let handle = Scheduler::builder(client.clone(), name.as_str())
        .group_config(GroupConfig::default().with_sweep_interval(None))
        .spawn()
        .await
        .unwrap();
    // The scheduler's start-up transfer is done before the entry is written.
    assert!(eventually(PATIENCE, || async { handle.stats().transfers >= 1 }).await);
    // Written raw: no channel message, so only a transfer on (re)subscribe can move it.
    let entry = pack(&[7; 8], b"silent");
    push_raw_entry(&client, keys.timeout(), keys.order(), &entry, now_ms() - 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        int(&client, "LLEN", keys.target()).await,
        0,
        "nothing woke it yet"
    );
    redis.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    assert!(
        eventually(PATIENCE, || async {
            list_str(&client, keys.target()).await == ["silent"]
        })
        .await
    );
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noscript_after_script_flush_is_handled() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("noscript");
    let queue = manual_queue(&client, &name).await;
    queue.offer("a", Duration::ZERO).await.unwrap();
    for _ in 0..2 {
        assert_eq!(redis.cli(&["SCRIPT", "FLUSH"]), "OK");
        queue.offer("b", Duration::ZERO).await.unwrap();
        assert_eq!(redis.cli(&["SCRIPT", "FLUSH"]), "OK");
        assert!(queue.contains("b").await.unwrap());
        assert_eq!(redis.cli(&["SCRIPT", "FLUSH"]), "OK");
        assert!(queue.remove("b").await.unwrap());
    }
    assert_eq!(redis.cli(&["SCRIPT", "FLUSH"]), "OK");
    let outcome = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!(outcome.moved, 1);
    assert_eq!(list_str(&client, queue.keys().target()).await, ["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_scheduler_is_reference_counted() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("refcount");
    let first = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    let second = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    let pubsub_clients = || {
        redis
            .cli(&["CLIENT", "LIST", "TYPE", "pubsub"])
            .lines()
            .count()
    };
    assert_eq!(pubsub_clients(), 1, "one scheduler for one (client, queue)");
    first.destroy().await.unwrap();
    assert_eq!(pubsub_clients(), 1, "still used by the second handle");
    second.offer("x", Duration::from_millis(50)).await.unwrap();
    let consumer = second.consumer().await.unwrap();
    assert_eq!(consumer.take().await.unwrap(), "x");
    second.destroy().await.unwrap();
    assert!(
        eventually(PATIENCE, || async { pubsub_clients() == 0 }).await,
        "the last destroy stops the scheduler"
    );
}

/// A transfer that failed is retried after its backoff even while the safety sweep keeps
/// looking at the queue's head: the sweep used to reset the retry's start, so any backoff longer
/// than the sweep interval (every non-transient error waits the longest) postponed the retry for
/// ever and the queue never moved again, as the fault suite's Cluster slot migration showed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_transfer_is_retried_while_the_sweep_runs() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("retry-sweep");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    // The target list is a string: every transfer fails (WRONGTYPE, not transient).
    cmd(&client, "SET", vec![arg(keys.target()), arg("in the way")]).await;
    queue.offer("v", Duration::ZERO).await.unwrap();
    let handle = Scheduler::builder(client.clone(), name.as_str())
        .transfer_config(TransferConfig::default().with_max_backoff(Duration::from_secs(1)))
        .group_config(GroupConfig::default().with_sweep_interval(Duration::from_millis(200)))
        .spawn()
        .await
        .unwrap();
    assert!(
        eventually(PATIENCE, || async { handle.stats().errors >= 1 }).await,
        "the transfer fails while the target is in the way: {:?}",
        handle.stats()
    );
    cmd(&client, "DEL", vec![arg(keys.target())]).await;
    // The next retry (at most 1 s later) moves the value; left alone it never would.
    assert!(
        eventually(PATIENCE, || async {
            int(&client, "LLEN", keys.target()).await == 1
        })
        .await,
        "the value stayed pending after the target was fixed: {:?}",
        handle.stats()
    );
    assert_eq!(handle.stats().moved, 1);
    handle.shutdown().await;
}

/// Every command a server receives from its clients (scripts' own calls say `[0 lua]` and
/// are left out), as `redis-cli monitor` prints them, until dropped.
struct Monitor {
    child: std::process::Child,
    file: std::path::PathBuf,
}

impl Monitor {
    /// Starts `redis-cli monitor` and waits until it is attached (it prints `OK` then).
    fn start(port: u16) -> Monitor {
        let file = std::env::temp_dir().join(format!("{}.monitor", unique_name("m")));
        let out = std::fs::File::create(&file).unwrap();
        let child = std::process::Command::new("redis-cli")
            .args(["-p", &port.to_string(), "monitor"])
            .stdout(out)
            .spawn()
            .unwrap();
        let monitor = Monitor { child, file };
        crate::common::wait_until("redis-cli monitor to attach", PATIENCE, || {
            match std::fs::read_to_string(&monitor.file) {
                Ok(text) if text.starts_with("OK") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        });
        monitor
    }

    /// How many times clients sent `command` (lower case) so far.
    fn count(&self, command: &str) -> usize {
        let text = std::fs::read_to_string(&self.file).unwrap();
        let quoted = format!("\"{command}\"");
        text.lines()
            .map(str::to_ascii_lowercase)
            .filter(|l| !l.contains(" lua] ") && l.contains(&quoted))
            .count()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The pause flag is read inside the scheduler's transfer call (no EXISTS round trip before
/// every transfer, which delayed each due value by one more round trip); a transfer asked for
/// by hand still moves a paused queue, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_reads_the_pause_flag_in_its_transfer_call() {
    let redis = TestRedis::start_with(&[]);
    let client = connect(&redis.url()).await;
    let name = unique_name("pause-flag");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    cmd(&client, "SET", vec![arg(keys.paused()), arg("1")]).await;
    queue.offer("by-hand", Duration::ZERO).await.unwrap();
    let outcome = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!((outcome.moved, outcome.paused), (1, false));
    assert!(
        outcome.server_time_us.is_none(),
        "the client's clock was used"
    );

    let monitor = tokio::task::block_in_place(|| Monitor::start(redis.port));
    queue
        .offer("scheduled", Duration::from_millis(50))
        .await
        .unwrap();
    let handle = Scheduler::spawn(client.clone(), name.as_str(), TransferConfig::default())
        .await
        .unwrap();
    // The offer's script call and two of the scheduler's: the second one at the latest runs
    // once the value is due (the scheduler sleeps until then, or sweeps later).
    assert!(
        eventually(PATIENCE, || async { monitor.count("evalsha") >= 3 }).await,
        "the scheduler never looked"
    );
    assert_eq!(
        int(&client, "LLEN", keys.target()).await,
        1,
        "moved while paused"
    );
    cmd(&client, "DEL", vec![arg(keys.paused())]).await;
    assert!(
        eventually(PATIENCE, || async {
            int(&client, "LLEN", keys.target()).await == 2
        })
        .await,
        "not moved after the flag went"
    );
    assert_eq!(monitor.count("exists"), 0, "EXISTS sent by a client");
    handle.shutdown().await;
}

/// The last transfer of `name` by `group` that ended after `after` (epoch ms), waited for.
async fn transfer_ended_after(group: &delayq::SchedulerGroup, name: &str, after: i64) -> i64 {
    let mut ended = None;
    let found = eventually(Duration::from_secs(30), || {
        let last = group.queue_stats(name).and_then(|s| s.last_transfer_ms);
        ended = last.filter(|&ms| ms > after);
        async move { ended.is_some() }
    })
    .await;
    assert!(found, "no transfer of {name} ended after {after}");
    ended.unwrap()
}

/// While a queue is paused its scheduler looks at it and moves nothing, however long; after
/// `resume` the due value moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_queue_keeps_its_due_values_until_resumed() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("paused");
    let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    assert!(!queue.inspect().is_paused().await.unwrap());
    assert!(queue.admin().pause().await.unwrap());
    assert!(!queue.admin().pause().await.unwrap(), "already paused");
    assert!(queue.inspect().is_paused().await.unwrap());
    queue.offer("x", Duration::ZERO).await.unwrap();
    let offered = now_ms();
    let group = queue.inspect().scheduler_group().unwrap();
    // Two looks that ended after the offer: the second began after it, with the value due.
    let first = transfer_ended_after(&group, &name, offered).await;
    transfer_ended_after(&group, &name, first).await;
    assert_eq!(queue.size().await.unwrap(), 1, "moved while paused");
    assert_eq!(group.queue_stats(&name).unwrap().moved, 0);
    assert!(list_str(&client, &name).await.is_empty());

    assert!(queue.admin().resume().await.unwrap());
    assert!(
        !queue.admin().resume().await.unwrap(),
        "not paused any more"
    );
    assert!(!queue.inspect().is_paused().await.unwrap());
    assert!(
        eventually(Duration::from_secs(30), || async {
            list_str(&client, &name).await == ["x"]
        })
        .await,
        "not moved after resume"
    );
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_queue_pauses_every_shard() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("paused-shards");
    let queue = delayq::ShardedQueue::builder(client.clone(), name.as_str(), 3, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    assert!(queue.shards()[1].admin().pause().await.unwrap());
    assert!(queue.is_paused().await.unwrap(), "one shard is paused");
    assert!(queue.pause().await.unwrap(), "two were not");
    for shard in queue.shards() {
        assert!(
            shard.inspect().is_paused().await.unwrap(),
            "{}",
            shard.name()
        );
    }
    assert!(!queue.pause().await.unwrap());
    assert!(queue.resume().await.unwrap());
    for shard in queue.shards() {
        assert!(
            !shard.inspect().is_paused().await.unwrap(),
            "{}",
            shard.name()
        );
    }
    assert!(!queue.is_paused().await.unwrap());
    assert!(!queue.resume().await.unwrap());
}
