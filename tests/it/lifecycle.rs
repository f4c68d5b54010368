//! delayq's own keys live and die with the queue: `expire` (from delayq or from a Java peer),
//! an emptied order list, `delete`.

use crate::common::queue::{connect, manual_queue};
use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::{DelayedQueue, QueueKeys, SchedulerConfig};
use std::time::Duration;

/// A queue whose order list has a position index (any length uses it with threshold 1) and a
/// value index, a value in flight and a dead letter.
async fn busy_queue(client: &delayq::fred::clients::Client) -> DelayedQueue<StringCodec> {
    let queue = manual_queue(client, &unique_name("life")).await;
    // The due entry sits past the head window of a one-entry batch: the index gets built.
    queue
        .offer_all(&[
            ("a".into(), Duration::from_secs(60)),
            ("b".into(), Duration::from_secs(61)),
            ("c".into(), Duration::from_secs(62)),
            ("d".into(), Duration::from_secs(63)),
            ("due".into(), Duration::ZERO),
        ])
        .await
        .unwrap();
    let indexed = SchedulerConfig::default()
        .with_batch_size(1)
        .with_index_threshold(1);
    assert_eq!(queue.transfer_due_with(&indexed).await.unwrap().moved, 1);
    assert!(queue.contains("b").await.unwrap(), "builds the value index");
    let consumer = queue.reliable_consumer().await.unwrap();
    let delivery = consumer.try_take(1).await.unwrap().pop().unwrap();
    std::mem::forget(delivery);
    crate::common::queue::cmd(
        client,
        "RPUSH",
        vec![
            crate::common::queue::arg(queue.keys().dead()),
            crate::common::queue::arg("a record"),
        ],
    )
    .await;
    queue
}

fn exists(redis: &TestRedis, key: &str) -> bool {
    redis.cli(&["EXISTS", key]) == "1"
}

fn ttl(redis: &TestRedis, key: &str) -> i64 {
    redis.cli(&["PTTL", key]).parse().unwrap()
}

fn own_keys(keys: &QueueKeys) -> Vec<String> {
    [
        keys.index(),
        keys.values(),
        keys.quarantine(),
        keys.inflight(),
        keys.inflight_data(),
        keys.attempts(),
        keys.attempts_seen(),
        keys.dead(),
        keys.claims(),
    ]
    .iter()
    .map(|k| (*k).to_owned())
    .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn expire_covers_delayqs_own_keys() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = busy_queue(&client).await;
    let keys = queue.keys().clone();
    for key in [
        keys.index(),
        keys.values(),
        keys.inflight(),
        keys.inflight_data(),
        keys.dead(),
    ] {
        assert!(exists(&redis, key), "{key}");
    }
    assert!(queue.expire(Duration::from_secs(100)).await.unwrap());
    for key in own_keys(&keys) {
        if redis.cli(&["EXISTS", &key]) == "1" {
            let left = ttl(&redis, &key);
            assert!(left > 90_000 && left <= 100_000, "{key}: {left}");
        }
    }
    assert!(queue.clear_expire().await.unwrap());
    for key in own_keys(&keys) {
        assert!(ttl(&redis, &key) < 0, "{key} kept its time to live");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_java_expire_reaches_the_indexes_and_an_emptied_queue_drops_them() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = busy_queue(&client).await;
    let keys = queue.keys().clone();
    // A Java peer's expire sets a time to live on the zset and the order list only.
    redis.cli(&["PEXPIRE", keys.timeout(), "100000"]);
    redis.cli(&["PEXPIRE", keys.order(), "100000"]);
    queue.transfer_due(10).await.unwrap();
    for key in [keys.index(), keys.values()] {
        let left = ttl(&redis, key);
        assert!(left > 90_000 && left <= 100_000, "{key}: ttl {left}");
    }

    // A Java peer polls every pending entry (LPOP + ZREM): the index is stale, then gone at
    // delayq's next call.
    let java_poll = "while true do local e = redis.call('lpop', KEYS[1]) \
        if not e then return 0 end redis.call('zrem', KEYS[2], e) end";
    let _: i64 = fred::interfaces::LuaInterface::eval(
        &client,
        java_poll,
        vec![keys.order(), keys.timeout()],
        Vec::<String>::new(),
    )
    .await
    .unwrap();
    assert!(exists(&redis, keys.index()));
    assert!(exists(&redis, keys.values()));
    queue.transfer_due(10).await.unwrap();
    assert!(!exists(&redis, keys.index()));
    assert!(!exists(&redis, keys.values()));
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_removes_every_key_but_the_target() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = busy_queue(&client).await;
    let keys = queue.keys().clone();
    let claim = keys.claim("gone");
    redis.cli(&["RPUSH", &claim, "claimed"]);
    redis.cli(&["ZADD", keys.claims(), "1", &claim]);
    redis.cli(&["RPUSH", "another-app", "x"]);
    redis.cli(&["ZADD", keys.claims(), "1", "another-app"]);
    redis.cli(&["RPUSH", keys.target(), "ready"]);
    assert!(queue.delete().await.unwrap());
    let pattern = format!("*{{{}}}*", queue.name());
    assert_eq!(redis.cli(&["KEYS", &pattern]), "", "keys left after delete");
    assert_eq!(redis.cli(&["LLEN", keys.target()]), "1");
    assert_eq!(redis.cli(&["LLEN", "another-app"]), "1");
}
