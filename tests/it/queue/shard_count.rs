//! The shard count of a sharded queue: bounded (`1..=MAX_SHARDS`), recorded in Redis on first
//! use (`delayq_shards:{NAME}`), and every handle whose count disagrees refuses to be built,
//! naming both numbers. Changing the count (`previous_shards`) is covered by
//! `sharded::changing_the_number_of_shards_loses_nothing`.

use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::names::shard_count_key;
use delayq::{ShardedQueue, MAX_SHARDS};
use fred::clients::Client;
use fred::interfaces::KeysInterface;
use std::time::{Duration, Instant};

async fn build(
    client: &Client,
    name: &str,
    shards: usize,
    previous: Option<usize>,
) -> delayq::Result<ShardedQueue<StringCodec>> {
    let mut builder = ShardedQueue::builder(client.clone(), name, shards, StringCodec);
    if let Some(previous) = previous {
        builder = builder.previous_shards(previous);
    }
    builder.transfer(false).build().await
}

/// The message of a refusal to build, which must be `InvalidConfig`.
fn refusal(built: delayq::Result<ShardedQueue<StringCodec>>) -> String {
    match built {
        Err(delayq::Error::InvalidConfig(message)) => message,
        Err(other) => panic!("another error: {other}"),
        Ok(queue) => panic!("built with {} shards", queue.shards().len()),
    }
}

/// Counts past the bound are refused at once, before anything is allocated or sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_counts_out_of_range_are_refused() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("range");
    let started = Instant::now();
    for (shards, previous) in [
        (0, None),
        (MAX_SHARDS + 1, None),
        (usize::MAX, None),
        (4, Some(0)),
        (4, Some(MAX_SHARDS + 1)),
        (4, Some(usize::MAX)),
    ] {
        let message = refusal(build(&client, &name, shards, previous).await);
        assert!(
            message.contains(&format!("between 1 and {MAX_SHARDS}")),
            "{shards} {previous:?}: {message}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let key: Option<String> = client.get(shard_count_key(&name)).await.unwrap();
    assert_eq!(key, None, "a refused handle records nothing");
    let most = build(&client, &name, MAX_SHARDS, None).await.unwrap();
    assert_eq!(most.shards().len(), MAX_SHARDS);
}

/// The first handle records its count; a producer or worker with another count is refused,
/// naming both; one with the recorded count is built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_with_another_shard_count_is_refused() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("count");
    let first = build(&client, &name, 4, None).await.unwrap();
    first.offer("v", Duration::from_secs(3600)).await.unwrap();
    let key: Option<String> = client.get(shard_count_key(&name)).await.unwrap();
    assert_eq!(key.as_deref(), Some("4"));

    for other in [3, 5] {
        let message = refusal(build(&client, &name, other, None).await);
        assert!(
            message.contains("has 4 shards") && message.contains(&format!("has {other}")),
            "{message}"
        );
        assert!(message.contains("previous_shards(4)"), "{message}");
    }
    // The count before, when it is not the recorded one, is refused as well.
    let message = refusal(build(&client, &name, 6, Some(5)).await);
    assert!(
        message.contains("has 4 shards") && message.contains("from 5"),
        "{message}"
    );

    let again = build(&client, &name, 4, None).await.unwrap();
    assert_eq!(again.size().await.unwrap(), 1);
    let key: Option<String> = client.get(shard_count_key(&name)).await.unwrap();
    assert_eq!(key.as_deref(), Some("4"));
}
