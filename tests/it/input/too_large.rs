//! Values past the server's `proto-max-bulk-len`: refused before anything is sent, with an
//! error that says so, the connection still usable, nothing written.

use crate::common::queue::{connect, manual_queue};
use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::{Error, ShardedQueue};
use std::time::Duration;

/// Redis's lowest `proto-max-bulk-len`.
const LIMIT: usize = 1024 * 1024;

fn text(len: usize) -> String {
    "x".repeat(len)
}

#[tokio::test]
async fn a_value_past_the_servers_limit_is_refused_before_it_is_sent() {
    let redis = TestRedis::start_with(&["--proto-max-bulk-len", "1mb"]);
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("too-large")).await;
    let hour = Duration::from_secs(3600);
    let big = text(LIMIT + 1);

    let refused = |result: delayq::Result<()>| match result {
        Err(Error::ValueTooLarge { len, limit }) => {
            assert_eq!((len, limit), (LIMIT + 1, LIMIT as u64));
        }
        other => panic!("not refused as too large: {other:?}"),
    };
    refused(queue.offer(&big, hour).await);
    refused(
        queue
            .offer_all(&[(text(3), hour), (big.clone(), hour)])
            .await,
    );
    refused(queue.offer_with_handle(&big, hour).await.map(drop));
    refused(queue.offer_unique(&big, hour).await.map(drop));
    // Operations that look values up send them too: refused the same way, not a dropped
    // connection.
    refused(queue.remove(&big).await.map(drop));
    refused(queue.remove_all(&[text(3), big.clone()]).await.map(drop));
    refused(queue.retain_all(std::slice::from_ref(&big)).await.map(drop));
    refused(queue.contains(&big).await.map(drop));
    refused(
        queue
            .contains_all(std::slice::from_ref(&big))
            .await
            .map(drop),
    );
    refused(queue.reschedule(&big, hour).await.map(drop));
    let err = queue.offer(&big, hour).await.unwrap_err().to_string();
    assert!(err.contains("proto-max-bulk-len"), "{err}");
    assert_eq!(queue.size().await.unwrap(), 0, "something was written");

    // The connection is still usable, and a value of exactly the limit goes through.
    queue.offer(&text(LIMIT), hour).await.unwrap();
    queue.offer("small", hour).await.unwrap();
    assert_eq!(queue.size().await.unwrap(), 2);

    // A sharded offer_all checks every shard's values before any shard's call goes out.
    let sharded = ShardedQueue::builder(
        client.clone(),
        unique_name("too-large-sharded"),
        4,
        StringCodec,
    )
    .transfer(false)
    .build()
    .await
    .unwrap();
    let items: Vec<(String, Duration)> = (0..16)
        .map(|i| (format!("v{i}"), hour))
        .chain([(big.clone(), hour)])
        .collect();
    refused(sharded.offer_all(&items).await);
    assert_eq!(sharded.size().await.unwrap(), 0, "a shard was written");
}

/// A user who may not run CONFIG gets Redis's default limit (512 MB) assumed, not an error.
#[tokio::test]
async fn config_refused_by_an_acl_assumes_redis_default_limit() {
    let redis = TestRedis::start();
    redis.cli(&[
        "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-config",
    ]);
    let url = redis.url().replace("redis://", "redis://app:pw@");
    let client = connect(&url).await;
    let queue = manual_queue(&client, &unique_name("too-large-acl")).await;
    queue
        .offer(&text(2 * LIMIT), Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(queue.size().await.unwrap(), 1);
}
