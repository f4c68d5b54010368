//! The consumer on the target list: empty waits, takes, batches, streams, codec mismatches and
//! values given back.

use crate::common;

use delayq::codec::{LongCodec, StringCodec};
use delayq::{Consumer, Error};
use fred::prelude::*;
use futures::StreamExt;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_waits_return_none_and_take_keeps_waiting() {
    let redis = common::TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = common::unique_name("consumer-empty");
    let consumer = Consumer::new(&client, name.as_str(), StringCodec)
        .await
        .unwrap();

    let started = Instant::now();
    assert_eq!(
        consumer.poll(Duration::from_millis(300)).await.unwrap(),
        None
    );
    assert!(started.elapsed() >= Duration::from_millis(290));
    assert_eq!(consumer.poll(Duration::ZERO).await.unwrap(), None);
    assert!(consumer.poll_many(5).await.unwrap().is_empty());

    // take() waits across several BLPOP slices until a value arrives.
    let pusher = {
        let client = client.clone();
        let name = name.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2_300)).await;
            let _: i64 = client.rpush(name.as_str(), "late").await.unwrap();
        })
    };
    let started = Instant::now();
    assert_eq!(consumer.take().await.unwrap(), "late");
    assert!(started.elapsed() >= Duration::from_millis(2_200));
    pusher.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_streams_and_codec_mismatch() {
    let redis = common::TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = common::unique_name("consumer-batch");
    let _: i64 = client
        .rpush(name.as_str(), vec!["1", "2", "3", "abc", "5"])
        .await
        .unwrap();
    let consumer = Consumer::new(&client, name.as_str(), LongCodec)
        .await
        .unwrap();
    assert_eq!(consumer.poll_many(2).await.unwrap(), vec![1, 2]);
    let raw = consumer.poll_many_raw(2).await.unwrap();
    assert_eq!(*raw[0].as_ref().unwrap(), 3);
    match &raw[1] {
        Err(Error::Decode { raw, codec, .. }) => {
            assert_eq!(&raw[..], b"abc");
            assert_eq!(*codec, "long");
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
    let mut stream = Box::pin(consumer.into_stream());
    assert_eq!(stream.next().await.unwrap().unwrap(), 5);
}

/// Values taken but not handed over go back to the head of the list, in their order, ahead of
/// what is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_given_back_are_taken_again_first_in_order() {
    let redis = common::TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = common::unique_name("consumer-give-back");
    let _: i64 = client
        .rpush(name.as_str(), vec!["a", "b", "c", "d"])
        .await
        .unwrap();
    let consumer = Consumer::new(&client, name.as_str(), StringCodec)
        .await
        .unwrap();
    let taken = consumer.poll_many(3).await.unwrap();
    assert_eq!(taken, ["a", "b", "c"]);
    consumer.give_back(&taken[1..]).await.unwrap();
    consumer.give_back(&[]).await.unwrap();
    let left: Vec<String> = client.lrange(name.as_str(), 0, -1).await.unwrap();
    assert_eq!(left, ["b", "c", "d"]);
}
