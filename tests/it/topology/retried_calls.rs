//! A call whose script ran but whose reply was lost (a dropped connection) is sent again by
//! fred after it reconnects. These tests run the scripts twice with the same arguments, as that
//! retry does, and check that the second run neither duplicates anything nor reports failure.

use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::QueueKeys;
use delayq::{DelayedQueue, ReliableConfig};
use fred::clients::Client;
use fred::interfaces::{KeysInterface, ListInterface, LuaInterface, SortedSetsInterface};
use fred::types::Value;
use std::time::Duration;

/// The script `name` as delayq sends it, and its keys for `keys`.
fn script(name: &str, keys: &QueueKeys) -> (String, Vec<String>) {
    (
        delayq::__internal::script_source(name).unwrap(),
        delayq::__internal::script_keys(name, keys, &[]).unwrap(),
    )
}

/// ARGV[1] (now) and ARGV[2] (entry format) of every script, then `rest`.
fn args(rest: Vec<Value>) -> Vec<Value> {
    let mut args: Vec<Value> = vec![delayq::time::now_ms().into(), "0".into()];
    args.extend(rest);
    args
}

async fn eval_twice(
    client: &Client,
    script: &str,
    keys: Vec<String>,
    args: Vec<Value>,
) -> [i64; 2] {
    let first: i64 = client
        .eval(script, keys.clone(), args.clone())
        .await
        .unwrap();
    let second: i64 = client.eval(script, keys, args).await.unwrap();
    [first, second]
}

async fn setup(prefix: &str) -> (TestRedis, Client, DelayedQueue<StringCodec>) {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = crate::common::queue::manual_queue(&client, &unique_name(prefix)).await;
    (redis, client, queue)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_offer_leaves_one_entry() {
    let (_redis, client, queue) = setup("retry-offer").await;
    let keys = queue.keys().clone();
    let (offer, offer_keys) = script("offer.lua", &keys);
    let offer_args = args(vec![
        60_000.into(),
        Value::Bytes(vec![7u8; 8].into()),
        "once".into(),
    ]);
    let added = eval_twice(&client, &offer, offer_keys, offer_args).await;
    assert_eq!(added, [1, 0]);
    let pending: i64 = client.zcard(keys.timeout()).await.unwrap();
    let order: i64 = client.llen(keys.order()).await.unwrap();
    assert_eq!((pending, order), (1, 1), "a second copy in the order list");
    assert_eq!(queue.read_all().await.unwrap(), vec!["once".to_string()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn retried_acks_and_nacks_report_their_own_success() {
    let (_redis, client, queue) = setup("retry-settle").await;
    let keys = queue.keys().clone();
    queue
        .offer_all(&[
            ("acked".into(), Duration::ZERO),
            ("nacked".into(), Duration::from_millis(1)),
            ("dead".into(), Duration::from_millis(2)),
        ])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    queue.admin().transfer_due(10).await.unwrap();
    let consumer = queue
        .reliable_consumer_with(ReliableConfig::default().with_visibility(Duration::from_secs(30)))
        .await
        .unwrap();
    let take = || async {
        consumer
            .take_timeout(Duration::from_secs(3))
            .await
            .unwrap()
            .unwrap()
    };

    // ack.lua, run twice: both say done, nothing is left in flight.
    let acked = take().await;
    assert_eq!(acked.value().map(String::as_str), Some("acked"));
    let (ack, ack_keys) = script("ack.lua", &keys);
    let done = eval_twice(
        &client,
        &ack,
        ack_keys.clone(),
        args(vec![acked.id().into()]),
    )
    .await;
    assert_eq!(done, [1, 1]);
    // The record of settled deliveries forgets itself.
    let ttl: i64 = client.pttl(keys.settled()).await.unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "{ttl}");

    // nack.lua with a delay, run twice: the value is pending once.
    let nacked = take().await;
    assert_eq!(nacked.value().map(String::as_str), Some("nacked"));
    let (nack, nack_keys) = script("nack.lua", &keys);
    let nack_args = args(vec![
        60_000.into(),
        nacked.id().into(),
        Value::Bytes(vec![9u8; 8].into()),
        "0".into(),
    ]);
    let done = eval_twice(&client, &nack, nack_keys, nack_args).await;
    assert_eq!(done, [1, 1]);
    assert_eq!(queue.read_all().await.unwrap(), vec!["nacked".to_string()]);
    let pending: i64 = client.zcard(keys.timeout()).await.unwrap();
    assert_eq!(pending, 1);

    // dead.lua, run twice: one dead letter.
    let dead = take().await;
    assert_eq!(dead.value().map(String::as_str), Some("dead"));
    let (dead_script, dead_keys) = script("dead.lua", &keys);
    let dead_args = args(vec![dead.id().into(), "header|".into(), 0.into()]);
    let mut done = Vec::new();
    for _ in 0..2 {
        let reply: Vec<i64> = client
            .eval(dead_script.as_str(), dead_keys.clone(), dead_args.clone())
            .await
            .unwrap();
        done.push(reply[0]);
    }
    assert_eq!(done, [1, 1]);
    let dead_letters: i64 = client.llen(keys.dead()).await.unwrap();
    assert_eq!(dead_letters, 1);
    assert_eq!(queue.inspect().reliable_stats().await.unwrap().in_flight, 0);

    // A delivery id that was never settled is still "no longer ours".
    let never = eval_twice(
        &client,
        &ack,
        ack_keys,
        args(vec!["no-such-delivery".into()]),
    )
    .await;
    assert_eq!(never, [0, 0]);
    // The deliveries above were settled behind the API's back; drop them unsettled.
    drop((acked, nacked, dead));
    consumer.close().await;
}
