//! Discovery under bad luck: queues that appear while a long scan runs are kept (SCAN may miss
//! them), and delayq's indexes of a queue that a Java peer deleted, cleared or let expire are
//! dropped by the group that transfers it.

use crate::common::queue::{arg, cmd, connect, eventually, manual_queue};
use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::fred::clients::Client;
use delayq::fred::interfaces::{KeysInterface, ListInterface, PubsubInterface};
use delayq::{Discovery, GroupConfig, QueueKeys, SchedulerGroup, TransferConfig};
use std::time::Duration;

/// SCAN calls the server has run so far.
fn scan_calls(redis: &TestRedis) -> u64 {
    redis.command_calls("scan")
}

/// `count` string keys that are no queue, made in one script call.
async fn decoys(client: &Client, count: u32) {
    let script = "for i = 1, tonumber(ARGV[1]) do redis.call('set', 'decoy:' .. i, 'x') end";
    cmd(
        client,
        "EVAL",
        vec![arg(script), arg("0"), arg(count.to_string())],
    )
    .await;
}

/// Twenty queues created half-way through a long scan (50,000 other keys, 10 a SCAN call): the
/// scan misses some of them (SCAN promises only keys that exist for all of it), but each was
/// heard from on its channel after the scan began, so none is dropped and every value moves
/// long before the next rescan (an hour away).
#[tokio::test(flavor = "multi_thread")]
async fn queues_created_while_a_scan_runs_are_kept() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    decoys(&client, 50_000).await;
    let prefix = unique_name("midscan");
    let discovery = Discovery::all()
        .matching(format!("{prefix}-*"))
        .scan_count(10)
        .rescan_every(Duration::from_secs(3_600));
    // How many calls one scan takes here.
    let before = scan_calls(&redis);
    assert!(discovery.scan(&client).await.unwrap().is_empty());
    let per_scan = scan_calls(&redis) - before;
    assert!(per_scan > 1_000, "{per_scan} SCAN calls");

    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default())
        .await
        .unwrap();
    let started = scan_calls(&redis);
    let discovering = tokio::spawn({
        let group = group.clone();
        async move { group.discover(discovery).await }
    });
    let halfway = eventually(PATIENCE, || async {
        scan_calls(&redis) - started >= per_scan / 2
    })
    .await;
    assert!(halfway);
    let names: Vec<String> = (0..20).map(|i| format!("{prefix}-{i}")).collect();
    for name in &names {
        manual_queue(&client, name)
            .await
            .offer("v", Duration::from_millis(300))
            .await
            .unwrap();
    }
    discovering.await.unwrap().unwrap();
    // Kept (also after their values moved and their keys went: the next scan is an hour
    // away), and moved.
    let kept_and_moved = eventually(PATIENCE, || async {
        let kept = group.names();
        for name in &names {
            let moved = client.llen::<u64, _>(name.as_str()).await.unwrap() == 1;
            if !moved || !kept.contains(name) {
                return false;
            }
        }
        true
    })
    .await;
    let mut kept = group.names();
    kept.retain(|n| n.starts_with(&prefix));
    assert!(kept_and_moved, "{} of 20 queues kept: {kept:?}", kept.len());
    group.shutdown().await;
}

/// A queue with delayq's value index and position index built.
pub(super) async fn indexed_queue(client: &Client, name: &str) {
    let queue = manual_queue(client, name).await;
    for i in 0..5 {
        queue
            .offer(&format!("far{i}"), Duration::from_secs(3_600))
            .await
            .unwrap();
    }
    queue.offer("now", Duration::ZERO).await.unwrap();
    // The due entry is past the head window: the transfer builds the position index.
    let config = TransferConfig::default().with_index_threshold(1);
    queue.admin().transfer_due_with(&config).await.unwrap();
    // A lookup by value builds the value index.
    assert!(queue.contains("far0").await.unwrap());
    let keys = QueueKeys::new(name);
    let exists: u64 = client
        .exists(vec![keys.index(), keys.values()])
        .await
        .unwrap();
    assert_eq!(exists, 2, "both indexes built");
}

/// Java's operations that end a queue, as Redisson 3.52/4.7 send them (they act on the timeout
/// zset and the order list only): `delete()` and `clear()` (DEL of both), `expire(Duration)` and
/// `expireAt` (PEXPIRE / PEXPIREAT of both, here a moment away).
pub(super) async fn java_ends(client: &Client, keys: &QueueKeys, how: &str) {
    let both = [arg(keys.order()), arg(keys.timeout())];
    match how {
        "delete" | "clear" => {
            cmd(client, "DEL", both.to_vec()).await;
        }
        "expire" => {
            for key in both {
                cmd(client, "PEXPIRE", vec![key, arg("200")]).await;
            }
        }
        "expireAt" => {
            let at = delayq::fred::types::Value::from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as i64
                    + 200,
            );
            for key in both {
                cmd(client, "PEXPIREAT", vec![key, at.clone()]).await;
            }
        }
        other => panic!("{other}"),
    }
}

/// Waits until delayq's indexes of the queue are gone.
pub(super) async fn indexes_dropped(client: &Client, keys: &QueueKeys) -> bool {
    eventually(PATIENCE, || async {
        let exists: u64 = client
            .exists(vec![keys.index(), keys.values()])
            .await
            .unwrap();
        exists == 0
    })
    .await
}

/// Each Java operation that ends a queue, on a queue a group transfers (by name, with only the
/// sweep to notice; or found by discovery, with only the scan that drops it): delayq's indexes
/// of the queue are deleted, and a live queue's are kept.
#[tokio::test(flavor = "multi_thread")]
async fn indexes_of_a_queue_java_ended_are_dropped() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let swept = GroupConfig::default().with_sweep_interval(Duration::from_millis(100));
    let group = SchedulerGroup::spawn(client.clone(), swept).await.unwrap();
    let live = unique_name("live");
    indexed_queue(&client, &live).await;
    group.add(live.as_str()).await.unwrap();
    for how in ["delete", "clear", "expire", "expireAt"] {
        let name = unique_name(how);
        indexed_queue(&client, &name).await;
        group.add(name.as_str()).await.unwrap();
        let keys = QueueKeys::new(name.as_str());
        java_ends(&client, &keys, how).await;
        assert!(indexes_dropped(&client, &keys).await, "after Java {how}()");
    }
    group.shutdown().await;

    // Discovery alone (no sweep): the scan that drops the queue drops its indexes.
    let unswept = GroupConfig::default().with_sweep_interval(None);
    let group = SchedulerGroup::spawn(client.clone(), unswept)
        .await
        .unwrap();
    let prefix = unique_name("found");
    let name = format!("{prefix}-q");
    indexed_queue(&client, &name).await;
    let discovery = Discovery::all()
        .matching(format!("{prefix}-*"))
        .rescan_every(Duration::from_millis(100));
    group.discover(discovery).await.unwrap();
    assert_eq!(group.names(), std::slice::from_ref(&name));
    let keys = QueueKeys::new(name.as_str());
    java_ends(&client, &keys, "delete").await;
    assert!(indexes_dropped(&client, &keys).await, "after a scan");
    group.shutdown().await;

    let live_keys = QueueKeys::new(live.as_str());
    let exists: u64 = client
        .exists(vec![live_keys.index(), live_keys.values()])
        .await
        .unwrap();
    assert_eq!(exists, 2, "a live queue keeps its indexes");
}

/// Anyone may publish on any channel: a message on the channel of a queue that does not exist
/// adds nothing to a discovering group (each queue it holds has its own metric series), while
/// a message from a queue that was offered to is heard at once.
#[tokio::test(flavor = "multi_thread")]
async fn messages_on_channels_of_no_queue_add_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default())
        .await
        .unwrap();
    let prefix = unique_name("heard");
    let discovery = Discovery::all()
        .matching(format!("{prefix}-*"))
        .rescan_every(Duration::from_secs(3_600));
    group.discover(discovery).await.unwrap();
    assert!(group.names().is_empty());
    for i in 0..20 {
        let ghost = QueueKeys::new(format!("{prefix}-ghost-{i}"));
        let _: u64 = client.publish(ghost.channel(), "1").await.unwrap();
    }
    let real = format!("{prefix}-real");
    manual_queue(&client, &real)
        .await
        .offer("v", Duration::from_secs(3_600))
        .await
        .unwrap();
    let heard = eventually(PATIENCE, || async { group.names().contains(&real) }).await;
    assert!(heard, "the offered queue is heard: {:?}", group.names());
    assert_eq!(group.names(), vec![real]);
    group.shutdown().await;
}

/// Queue names holding a `}` (`a}b`: keys `redisson_delay_queue_timeout:{a}b}` by Redisson's
/// `prefixName`) are found under their own names, and `transfer --all`'s discovery moves their
/// values onto their own lists; a Java queue named `{j}k}` (same keys as `j}k`) whose list
/// exists while `j}k`'s does not keeps getting its values.
#[tokio::test(flavor = "multi_thread")]
async fn names_holding_a_closing_brace_get_their_own_values() {
    // A server of its own: these names cannot carry a unique prefix without changing them.
    let redis = TestRedis::start_with(&[]);
    let client = connect(&redis.url()).await;
    let names = ["a}b", "x}", "tenant}orders", "}"];
    for name in names {
        manual_queue(&client, name)
            .await
            .offer(&format!("to {name}"), Duration::from_millis(1))
            .await
            .unwrap();
    }
    let java = "{j}k}";
    let _: u64 = client.rpush(java, "earlier").await.unwrap();
    manual_queue(&client, java)
        .await
        .offer("to {j}k}", Duration::from_millis(1))
        .await
        .unwrap();
    let scanned = Discovery::all().scan(&client).await.unwrap();
    let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    expected.push(java.to_owned());
    expected.sort();
    assert_eq!(scanned, expected);

    let group = SchedulerGroup::spawn(client.clone(), GroupConfig::default())
        .await
        .unwrap();
    group
        .discover(Discovery::all().rescan_every(Duration::from_secs(3_600)))
        .await
        .unwrap();
    let moved = eventually(PATIENCE, || async {
        for name in names {
            if client.llen::<u64, _>(name).await.unwrap() != 1 {
                return false;
            }
        }
        client.llen::<u64, _>(java).await.unwrap() == 2
    })
    .await;
    assert!(moved, "each value on its own list");
    for name in names {
        let value: Option<String> = client.lpop(name, None).await.unwrap();
        assert_eq!(value.as_deref(), Some(format!("to {name}").as_str()));
        let wrong = format!("{{{name}}}");
        let misdelivered: u64 = client.exists(wrong.as_str()).await.unwrap();
        assert_eq!(misdelivered, 0, "nothing on {wrong}");
    }
    let misdelivered: u64 = client.exists("j}k").await.unwrap();
    assert_eq!(misdelivered, 0, "nothing on j}}k");
    group.shutdown().await;
}
