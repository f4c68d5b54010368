//! Many queues in one process: a scheduler group on one pub/sub connection, discovery of every
//! Redisson delayed queue (on every master of a Cluster), nothing stranded when the shared
//! subscription is killed, vanished queues dropped.

use crate::common::queue::{connect, manual_queue};
use crate::common::{unique_name, TestCluster, TestRedis, PATIENCE};
use delayq::fred::clients::Client;
use delayq::fred::interfaces::{ClientLike, ListInterface, PubsubInterface};
use delayq::{Discovery, GroupConfig, SchedulerGroup};
use std::time::{Duration, Instant};

/// Offers one value per queue, due after `delay`, from a handle without a scheduler.
async fn offer_each(client: &Client, names: &[String], delay: Duration) {
    for name in names {
        manual_queue(client, name)
            .await
            .offer("v", delay)
            .await
            .unwrap();
    }
}

/// Waits until every queue's target list holds one value; returns those that do not.
async fn all_delivered(client: &Client, names: &[String]) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let mut missing = Vec::new();
        for name in names {
            let len: u64 = client.llen(name.as_str()).await.unwrap();
            if len != 1 {
                missing.push(name.clone());
            }
        }
        if missing.is_empty() || Instant::now() > deadline {
            return missing;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pubsub_connections(redis: &TestRedis) -> usize {
    redis
        .cli(&["CLIENT", "LIST", "TYPE", "pubsub"])
        .lines()
        .filter(|l| !l.is_empty())
        .count()
}

/// A thousand queues on one subscription: the subscription killed right after their values
/// were offered (their channel messages are lost), every value still arrives: the group
/// resubscribes and transfers every queue.
#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_queues_share_one_subscription_and_survive_its_loss() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let config = GroupConfig::default().with_sweep_interval(None);
    let group = SchedulerGroup::spawn(client.clone(), config).await.unwrap();
    let prefix = unique_name("group");
    let names: Vec<String> = (0..1_000).map(|i| format!("{prefix}:{i}")).collect();
    for name in &names {
        group.add(name.as_str()).await.unwrap();
    }
    assert_eq!(group.names().len(), 1_000);
    assert_eq!(pubsub_connections(&redis), 1);

    offer_each(&client, &names, Duration::from_millis(1_500)).await;
    redis.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    let missing = all_delivered(&client, &names).await;
    assert!(missing.is_empty(), "{} queues stranded", missing.len());
    assert_eq!(group.stats().moved, 1_000);
    assert!(group.remove(&names[0]).await);
    assert_eq!(group.names().len(), 999);
    group.shutdown().await;
    assert_eq!(pubsub_connections(&redis), 0);
}

/// Discovery finds the queues that exist at start and those created while it runs, leaves out
/// those its pattern does not take, and drops queues whose keys are gone.
#[tokio::test(flavor = "multi_thread")]
async fn discovery_finds_new_queues_and_drops_vanished_ones() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let tenant = unique_name("tenant");
    let before = format!("{tenant}-a");
    let other = unique_name("other");
    offer_each(
        &client,
        &[before.clone(), other.clone()],
        Duration::from_secs(3_600),
    )
    .await;

    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default())
        .await
        .unwrap();
    let discovery = Discovery::all()
        .matching(format!("{tenant}-*"))
        .rescan_every(Duration::from_millis(300));
    group.discover(discovery).await.unwrap();
    // The first scan is done when `discover` returns.
    assert_eq!(group.names(), std::slice::from_ref(&before));

    // Created while the group runs: found by its first channel message.
    let after = format!("{tenant}-b");
    offer_each(
        &client,
        std::slice::from_ref(&after),
        Duration::from_millis(300),
    )
    .await;
    let missing = all_delivered(&client, std::slice::from_ref(&after)).await;
    assert!(missing.is_empty());
    assert_eq!(client.llen::<u64, _>(other.as_str()).await.unwrap(), 0);

    // The first queue's keys are deleted: the next scan drops it.
    assert!(manual_queue(&client, &before).await.delete().await.unwrap());
    let deadline = Instant::now() + PATIENCE;
    while group.names().contains(&before) {
        assert!(Instant::now() < deadline, "still {:?}", group.names());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    group.shutdown().await;
}

/// On a Cluster of 3 masters, discovery finds queues on every master (and the group's one
/// subscription hears the channels of all of them).
#[tokio::test(flavor = "multi_thread")]
async fn discovery_covers_every_master_of_a_cluster() {
    let cluster = TestCluster::start(3);
    let client = connect(&cluster.url()).await;
    let prefix = unique_name("cq");
    // Names until every master owns one.
    let mut names = Vec::new();
    let mut owners = std::collections::BTreeSet::new();
    for i in 0.. {
        let name = format!("{prefix}-{i}");
        let keys = delayq::QueueKeys::new(name.as_str());
        if owners.insert(cluster.slot_owner(cluster.key_slot(keys.timeout()))) {
            names.push(name);
        }
        if owners.len() == 3 {
            break;
        }
    }
    offer_each(&client, &names, Duration::from_secs(1)).await;
    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default())
        .await
        .unwrap();
    group
        .discover(Discovery::all().matching(format!("{prefix}-*")))
        .await
        .unwrap();
    // Every master scanned when `discover` returns.
    let mut found = group.names();
    found.sort();
    names.sort();
    assert_eq!(found, names);
    let missing = all_delivered(&client, &names).await;
    assert!(missing.is_empty(), "{missing:?}");

    // A queue created on any master while it runs is found by its channel message.
    let later: Vec<String> = (0..6).map(|i| format!("{prefix}-later-{i}")).collect();
    offer_each(&client, &later, Duration::from_millis(200)).await;
    let missing = all_delivered(&client, &later).await;
    assert!(missing.is_empty(), "{missing:?}");
    group.shutdown().await;
}

/// A burst of channel messages (1,000 offers/s to 10,000 queues makes one per offer) does not
/// make the group fall behind its subscription: with fred's default backlog of 32 messages it
/// did, and a group that falls behind transfers every one of its queues at once (it cannot know
/// which messages it missed), which on a loaded 3-master Cluster held due values up to 1.8 s.
#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_channel_messages_does_not_make_the_group_transfer_every_queue() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default())
        .await
        .unwrap();
    let prefix = unique_name("burst");
    let names: Vec<String> = (0..300).map(|i| format!("{prefix}:{i}")).collect();
    offer_each(&client, &names, Duration::from_secs(3_600)).await;
    for name in &names {
        group.add(name.as_str()).await.unwrap();
    }
    // The queues' first looks (planned when added; a look may be a probe of the head rather
    // than a transfer) are over: the count has stopped growing.
    let deadline = Instant::now() + PATIENCE;
    let mut before = group.stats().transfers;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = group.stats().transfers;
        if now == before && now > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{:?}", group.stats());
        before = now;
    }
    // 12,000 messages announcing heads later than the ones the group knows: none needs a
    // transfer. Sent pipelined, so they arrive faster than one at a time. Fewer than the
    // subscriber keeps (16,384): with more, a group slowed by the other tests running beside it
    // could fall behind (443 transfers once, with 20,000); fred's default of 32 made 471.
    let later = (delayq::time::now_ms() + 7_200_000).to_string();
    let publisher = client.clone_new();
    publisher.init().await.unwrap();
    let pipeline = publisher.pipeline();
    for i in 0..12_000 {
        let channel = format!(
            "redisson_delay_queue_channel:{{{}}}",
            names[i % names.len()]
        );
        let _: () = pipeline.publish(channel, later.as_str()).await.unwrap();
    }
    let _: Vec<delayq::fred::prelude::Value> = pipeline.all().await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = group.stats().transfers - before;
    assert!(
        during < names.len() as u64 / 2,
        "{during} transfers after a burst of messages that needed none: the group fell behind \
         its subscription and transferred every queue"
    );
    publisher.quit().await.unwrap();
    group.shutdown().await;
}

/// Settings a handle asks for that the queue or group it joins does not take are warned about,
/// naming the queue and both values; a handle asking for the settings in force is not.
#[tokio::test(flavor = "current_thread")]
async fn settings_a_handle_cannot_get_are_warned_about() {
    use delayq::codec::StringCodec;
    use delayq::{Clock, DelayedQueue, QueueOptions, TransferConfig};
    let (captured, _guard) = crate::logs::Captured::start();
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("conflict");
    let seven = TransferConfig::default().with_batch_size(7);
    let first = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .transfer_config(seven)
        .build()
        .await
        .unwrap();
    let same = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .transfer_config(seven)
        .build()
        .await
        .unwrap();
    let group_in_force = "keeps the options and transfer settings it was added with";
    assert_eq!(captured.lines_with(group_in_force), Vec::<String>::new());

    let other = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .options(QueueOptions::default().clock(Clock::Server))
        .build()
        .await
        .unwrap();
    let warned = captured.lines_with(group_in_force);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains(&name), "{warned:?}");
    assert!(warned[0].contains("batch_size: 7"), "{warned:?}");
    assert!(warned[0].contains("batch_size: 100"), "{warned:?}");
    assert!(warned[0].contains("Server"), "{warned:?}");

    // The client's group runs with the default settings: another queue may not change them.
    let sweep = "keeps its sweep and concurrency settings";
    let default_group = DelayedQueue::builder(client.clone(), unique_name("g"), StringCodec)
        .group_config(GroupConfig::default())
        .build()
        .await
        .unwrap();
    assert_eq!(captured.lines_with(sweep), Vec::<String>::new());
    let narrow = unique_name("narrow");
    let slow = DelayedQueue::builder(client.clone(), narrow.as_str(), StringCodec)
        .group_config(GroupConfig::default().with_max_concurrent_transfers(1))
        .build()
        .await
        .unwrap();
    let warned = captured.lines_with(sweep);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains(&narrow), "{warned:?}");
    assert!(
        warned[0].contains("max_concurrent_transfers: 8")
            && warned[0].contains("max_concurrent_transfers: 1"),
        "{warned:?}"
    );
    for queue in [first, same, other, default_group, slow] {
        queue.destroy().await.unwrap();
    }
}
