//! Redis Cluster (3 local masters) and Sentinel (master, replica, 3 sentinels), through fred.

mod common;

use common::{unique_name, TestCluster, TestSentinel};
use delayq::codec::StringCodec;
use delayq::DelayedQueue;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_queues_with_and_without_braces() {
    let cluster = TestCluster::start(3);
    let client = delayq::connect(&cluster.url()).await.unwrap();
    let plain = unique_name("cluster");
    // A third name on another master than the first (found by trying suffixes).
    let first_owner = cluster.slot_owner(cluster.key_slot(&plain));
    let elsewhere = (0..)
        .map(|k| format!("{plain}-{k}"))
        .find(|n| cluster.slot_owner(cluster.key_slot(n)) != first_owner)
        .unwrap();
    let names = [plain.clone(), format!("{{{plain}}}:eu"), elsewhere];
    let mut slots = Vec::new();
    for name in &names {
        let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
            .await
            .unwrap();
        let keys = queue.keys().clone();
        // Every key of a queue hashes to one slot.
        let slot = cluster.key_slot(keys.target());
        for key in [
            keys.timeout(),
            keys.order(),
            keys.channel(),
            keys.index(),
            keys.quarantine(),
        ] {
            assert_eq!(cluster.key_slot(key), slot, "{key}");
        }
        slots.push(cluster.slot_owner(slot));

        queue
            .offer(&"a".to_string(), Duration::from_millis(150))
            .await
            .unwrap();
        queue
            .offer(&"b".to_string(), Duration::from_secs(60))
            .await
            .unwrap();
        assert!(queue.contains(&"b".to_string()).await.unwrap());
        assert!(queue.remove(&"b".to_string()).await.unwrap());
        assert_eq!(queue.size().await.unwrap(), 1);
        let consumer = queue.consumer().await.unwrap();
        assert_eq!(
            consumer
                .poll(Duration::from_secs(5))
                .await
                .unwrap()
                .as_deref(),
            Some("a")
        );
        assert!(queue.is_empty().await.unwrap());
        queue.destroy().await.unwrap();
    }
    // The names land on more than one master.
    slots.sort();
    slots.dedup();
    assert!(slots.len() >= 2, "queues on masters {slots:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_offer_transfer_take() {
    let sentinel = TestSentinel::start();
    let client = delayq::connect(&sentinel.url()).await.unwrap();
    let name = unique_name("sentinel");
    let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    queue
        .offer(&"via-sentinel".to_string(), Duration::from_millis(200))
        .await
        .unwrap();
    let consumer = queue.consumer().await.unwrap();
    assert_eq!(
        consumer
            .poll(Duration::from_secs(5))
            .await
            .unwrap()
            .as_deref(),
        Some("via-sentinel")
    );
    // The scripts really ran on the master the sentinels name.
    let stats = sentinel.cli(sentinel.master_port(), &["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_evalsha"), "{stats}");
    queue.destroy().await.unwrap();
}
