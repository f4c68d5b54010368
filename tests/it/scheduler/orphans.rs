//! Indexes a queue left behind while no delayq process watched it: another client deleted,
//! cleared or expired the queue, so it has no timeout zset for discovery to find, only delayq's
//! indexes of its order list. Discovery's scan finds them too and tidies them, for the queues
//! it takes, and never those of a queue that came back.

use super::discovery::{indexed_queue, indexes_dropped, java_ends};
use crate::common::queue::{build_index, connect, manual_queue};
use crate::common::{unique_name, TestRedis};
use delayq::fred::clients::Client;
use delayq::fred::interfaces::KeysInterface;
use delayq::{Discovery, GroupConfig, QueueKeys, SchedulerGroup};
use std::time::Duration;

/// How many of the queue's two indexes exist.
async fn indexes(client: &Client, name: &str) -> u64 {
    let keys = QueueKeys::new(name);
    client
        .exists(vec![keys.index(), keys.values()])
        .await
        .unwrap()
}

/// A queue with a value index only (a lookup built it; no transfer did), then deleted by a
/// Java client.
async fn values_only_left(client: &Client, name: &str) {
    let queue = manual_queue(client, name).await;
    queue
        .offer("far", Duration::from_secs(3_600))
        .await
        .unwrap();
    build_index(client, &queue).await;
    assert_eq!(indexes(client, name).await, 1, "the value index built");
    java_ends(client, queue.keys(), "delete").await;
}

/// Queues ended while nothing watched them, then a group starts discovering: its first scan
/// deletes the indexes they left (both kinds, and a value index alone), for the queues its
/// pattern takes only; a live queue keeps its indexes, and a key merely named like a timeout
/// zset is no queue.
#[tokio::test(flavor = "multi_thread")]
async fn indexes_left_while_nothing_watched_are_dropped_by_discovery() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let prefix = unique_name("left");
    let (gone, values_only, live) = (
        format!("{prefix}-gone"),
        format!("{prefix}-values"),
        format!("{prefix}-live"),
    );
    indexed_queue(&client, &gone).await;
    java_ends(&client, &QueueKeys::new(gone.as_str()), "clear").await;
    values_only_left(&client, &values_only).await;
    indexed_queue(&client, &live).await;
    let outside = unique_name("outside");
    indexed_queue(&client, &outside).await;
    java_ends(&client, &QueueKeys::new(outside.as_str()), "delete").await;
    let decoy = QueueKeys::new(format!("{prefix}-decoy"));
    let _: () = client
        .set(decoy.timeout(), "x", None, None, false)
        .await
        .unwrap();

    let discovery = Discovery::all()
        .matching(format!("{prefix}-*"))
        .rescan_every(Duration::from_secs(3_600));
    assert_eq!(
        discovery.orphaned(&client).await.unwrap(),
        [gone.clone(), values_only.clone()]
    );
    let unswept = GroupConfig::default().with_sweep_interval(None);
    let group = SchedulerGroup::spawn(client.clone(), unswept)
        .await
        .unwrap();
    group.discover(discovery.clone()).await.unwrap();
    assert_eq!(group.names(), std::slice::from_ref(&live));
    for name in [&gone, &values_only] {
        let keys = QueueKeys::new(name.as_str());
        assert!(indexes_dropped(&client, &keys).await, "{name}");
    }
    assert!(discovery.orphaned(&client).await.unwrap().is_empty());
    assert_eq!(
        indexes(&client, &live).await,
        2,
        "a live queue keeps its indexes"
    );
    assert_eq!(
        indexes(&client, &outside).await,
        2,
        "outside --match: left alone"
    );
    group.shutdown().await;
}

/// A queue offered to again between the scan that found its indexes left behind and their
/// tidying keeps its new index: the tidy script looks at the order list itself.
#[tokio::test(flavor = "multi_thread")]
async fn a_queue_that_came_back_keeps_its_index() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let prefix = unique_name("back");
    let (back, gone) = (format!("{prefix}-back"), format!("{prefix}-gone"));
    values_only_left(&client, &back).await;
    values_only_left(&client, &gone).await;
    let discovery = Discovery::all().matching(format!("{prefix}-*"));
    assert_eq!(
        discovery.orphaned(&client).await.unwrap(),
        [back.clone(), gone.clone()]
    );

    let queue = manual_queue(&client, &back).await;
    queue
        .offer("again", Duration::from_secs(3_600))
        .await
        .unwrap();
    build_index(&client, &queue).await;
    assert_eq!(discovery.tidy(&client, &back).await.unwrap(), 0);
    assert_eq!(indexes(&client, &back).await, 1, "the new index is kept");
    assert!(queue.contains("again").await.unwrap());
    assert_eq!(discovery.tidy(&client, &gone).await.unwrap(), 1);
    assert_eq!(indexes(&client, &gone).await, 0);
}
