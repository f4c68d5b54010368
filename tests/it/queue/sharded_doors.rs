//! The features of a plain queue through a sharded one (`ShardedQueue`), on a real 3-master
//! Cluster: durable offers confirmed on the master of every shard written (and on a master
//! with a replica), and recurring
//! schedules of the logical queue firing each occurrence once into the shard the schedule's id
//! picks, with two processes firing. Dedup is in `dedup.rs`.

use crate::common::queue::connect;
use crate::common::{unique_name, wait_until, TestCluster, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::time::now_ms;
use delayq::{
    shard_of, Durability, Error, FiringConfig, GroupConfig, Job, JobError, Recurrence,
    ReliableConfig, Schedule, ShardedQueue,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `WAIT` calls node `node` has served.
fn wait_calls(cluster: &TestCluster, node: usize) -> u64 {
    let stats = cluster.cli(node, &["INFO", "commandstats"]);
    stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_wait:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_sharded_offer_waits_on_each_master_written() {
    // The harness's Cluster has no replicas: every wait times out unconfirmed, which shows
    // where each wait went.
    let cluster = TestCluster::start(3);
    let client = connect(&cluster.url()).await;
    let durability = Durability::replicas(1).timeout(Duration::from_millis(100));
    let queue = ShardedQueue::builder(client, unique_name("durable-sharded"), 6, StringCodec)
        .transfer(false)
        .durability(durability)
        .build()
        .await
        .unwrap();
    assert_eq!(queue.durability(), durability);
    let owner = |shard: usize| {
        let key = queue.shards()[shard].keys().timeout().to_owned();
        cluster.slot_owner(cluster.key_slot(&key))
    };
    let masters: BTreeSet<usize> = (0..6).map(owner).collect();
    assert_eq!(masters.len(), 3, "the shards spread over every master");
    let before: Vec<u64> = (0..3).map(|n| wait_calls(&cluster, n)).collect();
    let values: Vec<(String, Duration)> = (0..60)
        .map(|i| (format!("v{i}"), Duration::from_secs(3_600)))
        .collect();
    match queue.offer_all(&values).await {
        Err(Error::NotConfirmed {
            wanted_replicas: 1,
            acked_replicas: 0,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    for (node, before) in before.iter().enumerate() {
        assert!(
            wait_calls(&cluster, node) > *before,
            "master {node} was asked to confirm the writes of its shards"
        );
    }
    assert_eq!(queue.size().await.unwrap(), 60, "unconfirmed, yet written");
    // One offer waits on its shard's master alone.
    let value = "one";
    let home = owner(queue.shard_for(value).unwrap());
    let before: Vec<u64> = (0..3).map(|n| wait_calls(&cluster, n)).collect();
    let err = queue
        .offer(value, Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotConfirmed { .. }), "{err}");
    for (node, before) in before.iter().enumerate() {
        let asked = wait_calls(&cluster, node) - before;
        assert_eq!(asked, u64::from(node == home), "master {node}");
    }
    // A handle without durability writes plainly.
    let plain = queue.with_durability(Durability::none());
    plain.offer("plain", Duration::from_secs(60)).await.unwrap();
    assert_eq!(queue.size().await.unwrap(), 62);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_sharded_offer_is_on_the_replica_when_it_returns() {
    let master = TestRedis::start();
    let port = master.port.to_string();
    let replica = TestRedis::start_with(&["--replicaof", "127.0.0.1", port.as_str()]);
    wait_until("the replica's link to the master", PATIENCE, || {
        let info = master.cli(&["INFO", "replication"]);
        match info.contains("connected_slaves:1") && info.contains("state=online") {
            true => Ok(()),
            false => Err(info),
        }
    });
    let client = connect(&master.url()).await;
    let queue = ShardedQueue::builder(client, unique_name("durable-replica"), 4, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap()
        .with_durability(Durability::replicas(1).timeout(PATIENCE));
    let values: Vec<(String, Duration)> = (0..40)
        .map(|i| (format!("v{i}"), Duration::from_secs(3_600)))
        .collect();
    queue.offer_all(&values).await.unwrap();
    queue
        .offer("one more", Duration::from_secs(60))
        .await
        .unwrap();
    let on_replica: u64 = queue
        .shards()
        .iter()
        .map(|shard| {
            replica
                .cli(&["ZCARD", shard.keys().timeout()])
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        on_replica, 41,
        "every shard's writes reached the replica before the return"
    );
}

const SCHEDULES: usize = 6;
const EVERY_MS: i64 = 200;
const OCCURRENCES: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_of_a_sharded_queue_fire_each_occurrence_once_into_one_shard() {
    let cluster = TestCluster::start(3);
    let name = unique_name("sharded-schedules");
    let firing = FiringConfig::default().with_tick(Duration::from_millis(50));
    // Two processes transfer and fire the shards: each occurrence is still offered once.
    let mut handles = Vec::new();
    for _ in 0..2 {
        let client = connect(&cluster.url()).await;
        let queue = ShardedQueue::builder(client, name.as_str(), 4, StringCodec)
            .group_config(GroupConfig::default().with_schedules(firing))
            .build()
            .await
            .unwrap();
        handles.push(queue);
    }
    let queue = &handles[0];
    let schedules = queue.schedules();
    let start = now_ms() + 500;
    let end = start + (OCCURRENCES as i64 - 1) * EVERY_MS;
    let mut homes = HashMap::new();
    for i in 0..SCHEDULES {
        let id = format!("s{i}");
        let every = Recurrence::every(Duration::from_millis(EVERY_MS as u64)).unwrap();
        let schedule = Schedule::new(id.as_str(), every, id.clone())
            .start_ms(start)
            .end_ms(end);
        schedules.set(schedule).await.unwrap();
        let home = shard_of(id.as_bytes(), 4);
        assert_eq!(schedules.shard_for(&id), home);
        // Stored in its shard's keys, in the shard's slot.
        let key = queue.shards()[home].keys().schedule(&id);
        assert_eq!(
            cluster.key_slot(&key),
            cluster.key_slot(&format!("{{{home}}}"))
        );
        assert_eq!(
            cluster.cli(
                cluster.slot_owner(cluster.key_slot(&key)),
                &["EXISTS", &key]
            ),
            "1"
        );
        homes.insert(id, ShardedQueue::<StringCodec>::shard_name(&name, home));
    }
    assert_eq!(schedules.list().await.unwrap().len(), SCHEDULES);
    assert!(schedules.get("s3").await.unwrap().is_some());

    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let record = seen.clone();
    let worker = queue
        .worker(4, move |job: Job<String>| {
            let shard = job.queue().to_owned();
            record.lock().unwrap().push((job.value().clone(), shard));
            std::future::ready(Ok::<(), JobError>(()))
        })
        .reliable_config(ReliableConfig::default().with_wait_slice(Duration::from_millis(100)))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while seen.lock().unwrap().len() < SCHEDULES * OCCURRENCES && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Every schedule has ended; a little longer shows no occurrence comes twice.
    let ended = schedules.list().await.unwrap();
    assert!(ended.iter().all(|info| info.next_ms.is_none()), "{ended:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    worker.shutdown().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (value, shard) in &seen {
        assert_eq!(
            &homes[value], shard,
            "{value} fired into its schedule's shard"
        );
        *counts.entry(value.clone()).or_default() += 1;
    }
    for i in 0..SCHEDULES {
        assert_eq!(
            counts.get(&format!("s{i}")),
            Some(&OCCURRENCES),
            "{counts:?}"
        );
    }

    // The other doors by id: pause, resume, trigger into its shard, remove.
    let paused = schedules.pause("s1").await.unwrap();
    assert!(paused.schedule.paused);
    let handle = schedules.trigger("s1").await.unwrap();
    assert_eq!(handle.shard(), shard_of(b"s1", 4));
    assert!(schedules.remove("s1").await.unwrap());
    assert!(!schedules.remove("s1").await.unwrap());
    assert!(matches!(
        schedules.pause("s1").await,
        Err(Error::NoSuchSchedule { .. })
    ));
    for handle in &handles {
        handle.destroy().await.unwrap();
    }
}
