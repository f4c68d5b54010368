//! Redis Cluster (3 local masters) and Sentinel (master, replica, 3 sentinels), through fred.

use crate::common;

use crate::common::{unique_name, TestCluster, TestSentinel};
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

        // Both due in an hour, so still pending when counted; "a" then brought forward.
        queue.offer("a", Duration::from_secs(3_600)).await.unwrap();
        queue.offer("b", Duration::from_secs(3_600)).await.unwrap();
        assert!(queue.contains("b").await.unwrap());
        assert!(queue.remove("b").await.unwrap());
        assert_eq!(queue.size().await.unwrap(), 1);
        assert!(queue.reschedule("a", Duration::ZERO).await.unwrap());
        let consumer = queue.consumer().await.unwrap();
        assert_eq!(
            consumer.poll(common::PATIENCE).await.unwrap().as_deref(),
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
        .offer("via-sentinel", Duration::from_millis(200))
        .await
        .unwrap();
    let consumer = queue.consumer().await.unwrap();
    assert_eq!(
        consumer.poll(common::PATIENCE).await.unwrap().as_deref(),
        Some("via-sentinel")
    );
    // The scripts really ran on the master the sentinels name.
    let stats = sentinel.cli(sentinel.master_port(), &["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_evalsha"), "{stats}");
    queue.destroy().await.unwrap();
}

/// Which port the server behind `client` listens on (`INFO server`'s `tcp_port`).
pub(crate) async fn server_port(client: &fred::clients::Client) -> Option<u16> {
    use fred::interfaces::ClientLike;
    let info: String = client
        .info(Some(fred::types::InfoKind::Server))
        .await
        .ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("tcp_port:"))
        .and_then(|port| port.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_failover_moves_clients_when_announced() {
    let sentinel = TestSentinel::start();
    let client = delayq::connect(&sentinel.url()).await.unwrap();
    follows_failover_before_the_demotion(sentinel, client).await;
}

/// Forces a failover and checks that `client` (connected through `sentinel`) moves to the new
/// master when the sentinels name it, before Sentinel demotes the old master (~8 s later, when
/// it also cuts the old master's clients off: a client that waits for that follows late), and
/// that a queue then writes to the new master. Shared with the auth and TLS tests.
///
/// The order of the two events is what is checked, not the seconds between them, which a busy
/// machine stretches.
pub(crate) async fn follows_failover_before_the_demotion(
    mut sentinel: TestSentinel,
    client: fred::clients::Client,
) {
    let old_master = sentinel.master_port();
    let new_master = sentinel.replica_port();
    // What the sentinels name: the port clients use (the TLS port with TLS).
    let new_master_named = sentinel.replica_data_port().to_string();
    let sentinel_port = sentinel.sentinel_ports()[0];
    let old_master_conn = sentinel.cli_conn_to(old_master);
    assert_eq!(server_port(&client).await, Some(old_master));

    // The failover runs (and waits until it has fully settled, ~10 s) on its own thread.
    let asker = sentinel.cli_conn_to(sentinel_port);
    let failover = std::thread::spawn(move || {
        sentinel.failover();
        sentinel
    });
    let started = std::time::Instant::now();
    // Each event as (the round of looking that first saw it, the time).
    let mut announced_at = None;
    let mut demoted_at = None;
    let mut followed_at = None;
    let mut round = 0;
    while followed_at.is_none() && started.elapsed() < common::PATIENCE {
        round += 1;
        if announced_at.is_none() {
            let named =
                common::redis_cli(&asker, &["SENTINEL", "get-master-addr-by-name", "mymaster"]);
            if named.contains(&new_master_named) {
                announced_at = Some((round, started.elapsed()));
            }
        }
        if demoted_at.is_none() {
            let role = common::redis_cli(&old_master_conn, &["ROLE"]);
            if role.starts_with("slave") || role.starts_with("replica") {
                demoted_at = Some((round, started.elapsed()));
            }
        }
        if server_port(&client).await == Some(new_master) {
            followed_at = Some((round, started.elapsed()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sentinel = failover.join().unwrap();
    let timeline = format!(
        "sentinels named {new_master} at {announced_at:?}, the old master was demoted at \
         {demoted_at:?}, the client moved at {followed_at:?} (round, time)"
    );
    let (followed_round, _) = followed_at.unwrap_or_else(|| panic!("{timeline}"));
    // Seen in the same round, the two may have come in either order: not held against it.
    assert!(
        demoted_at.is_none_or(|(demoted_round, _)| demoted_round >= followed_round),
        "the client waited for the demotion: {timeline}"
    );

    // Offers now land on the new master.
    let name = unique_name("sentinel-switch");
    let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    queue
        .offer("after-switch", Duration::from_secs(60))
        .await
        .unwrap();
    let zcard = sentinel.cli(
        sentinel.master_port(),
        &["ZCARD", &format!("redisson_delay_queue_timeout:{{{name}}}")],
    );
    assert_eq!(zcard.trim(), "1");
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_and_transfers_ride_out_a_slot_migration() {
    let cluster = std::sync::Arc::new(TestCluster::start(3));
    let client = delayq::connect(&cluster.url()).await.unwrap();
    let name = unique_name("migrating");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    queue.offer("before", Duration::ZERO).await.unwrap();
    let slot = cluster.key_slot(&name);
    let from = cluster.slot_owner(slot);
    let to = (from + 1) % 3;

    // Mid-migration: the queue's keys already on the new owner, the slot not yet handed over,
    // so every call on them is answered with ASK (or TRYAGAIN) until the hand-over 600 ms later.
    cluster.begin_slot_migration(slot, to);
    cluster.move_slot_keys(slot, to);
    let finisher = {
        let cluster = cluster.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            cluster.finish_slot_migration(slot, to);
        })
    };
    let started = std::time::Instant::now();
    queue.offer("during", Duration::ZERO).await.unwrap();
    let waited = started.elapsed();
    finisher.join().unwrap();
    assert!(
        waited >= Duration::from_millis(300),
        "offer took {waited:?}"
    );

    // Both values move, from the new owner, and the client goes on working.
    let mut moved = 0;
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while std::time::Instant::now() < deadline {
        moved += queue.admin().transfer_due(10).await.unwrap().moved;
        if moved == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(moved, 2);
    let on_new_owner = cluster.cli(to, &["LLEN", &name]);
    assert_eq!(on_new_owner.trim(), "2");
    let consumer = queue.consumer().await.unwrap();
    let mut got = consumer.poll_many(10).await.unwrap();
    got.sort();
    assert_eq!(got, vec!["before".to_string(), "during".to_string()]);
}
