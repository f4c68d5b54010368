//! Malformed entries, wrong-type keys and codec mismatches: clear errors or quarantine, and
//! nothing lost.

mod common;
mod coreutil;

use common::{unique_name, TestRedis};
use coreutil::*;
use delayq::codec::LongCodec;
use delayq::entry::pack;
use delayq::{EntryFormat, Error};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_entries_are_quarantined_and_neighbours_move() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("poison");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    let due = now_ms() - 1_000;
    let good = |v: &str| pack(&rand::random::<[u8; 8]>(), v.as_bytes());
    let mut truncated = good("truncated");
    truncated.truncate(20);
    let mut wrong_length = good("len");
    wrong_length[9] = 200;
    let poisons: Vec<Vec<u8>> = vec![b"garbage".to_vec(), truncated, wrong_length, vec![]];
    push_raw_entry(&client, keys.timeout(), keys.order(), &good("g1"), due).await;
    for (i, poison) in poisons.iter().enumerate() {
        push_raw_entry(
            &client,
            keys.timeout(),
            keys.order(),
            poison,
            due + 1 + i as i64,
        )
        .await;
    }
    push_raw_entry(&client, keys.timeout(), keys.order(), &good("g2"), due + 10).await;

    // Reads that must decode every entry say exactly what is wrong.
    match queue.read_all().await {
        Err(Error::MalformedEntry { key, .. }) => assert_eq!(key, keys.order()),
        other => panic!("expected MalformedEntry, got {other:?}"),
    }
    let pending = queue.pending(0).await.unwrap();
    assert_eq!(pending.len(), 6);
    assert!(pending[0].value.is_ok() && pending[1].value.is_err());

    // The transfer moves the good ones and takes the bad ones out, in one call.
    let outcome = queue.transfer_due(100).await.unwrap();
    assert_eq!(outcome.moved, 2);
    assert_eq!(outcome.quarantined, 4);
    assert_eq!(list_str(&client, keys.target()).await, ["g1", "g2"]);
    let mut quarantined = list(&client, keys.quarantine()).await;
    let mut expected: Vec<Vec<u8>> = poisons.clone();
    quarantined.sort();
    expected.sort();
    assert_eq!(
        quarantined.iter().map(|b| b.to_vec()).collect::<Vec<_>>(),
        expected
    );
    assert_eq!(int(&client, "LLEN", keys.order()).await, 0);
    assert_eq!(int(&client, "ZCARD", keys.timeout()).await, 0);
    assert_eq!(queue.stats().await.unwrap().quarantined, 4);

    // poll() skips (and quarantines) a malformed head instead of failing on it forever.
    push_raw_entry(&client, keys.timeout(), keys.order(), b"bad-head", due).await;
    queue.offer("next", Duration::from_secs(60)).await.unwrap();
    assert_eq!(queue.poll().await.unwrap().as_deref(), Some("next"));
    assert_eq!(int(&client, "LLEN", keys.quarantine()).await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_type_keys_give_a_clear_error_and_lose_nothing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("wrongtype");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    redis.cli(&["SET", keys.order(), "not a list"]);
    let err = queue.offer("x", Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err:?}");
    assert!(err.to_string().contains("wrong kind of value"), "{err}");
    assert!(matches!(queue.size().await, Err(Error::WrongType { .. })));
    assert!(matches!(
        queue.read_all().await,
        Err(Error::WrongType { .. })
    ));
    assert_eq!(redis.cli(&["GET", keys.order()]), "not a list");

    // A target list of the wrong type stops the transfer with an error; the entry stays pending.
    let other = unique_name("wrongtype-target");
    let queue = manual_queue(&client, &other).await;
    queue.offer("kept", Duration::ZERO).await.unwrap();
    redis.cli(&["SET", queue.keys().target(), "oops"]);
    let err = queue.transfer_due(100).await.unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err:?}");
    assert_eq!(queue.read_all().await.unwrap(), ["kept"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codec_mismatch_keeps_the_raw_bytes() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("mismatch");
    let strings = manual_queue(&client, &name).await;
    strings.offer("abc", Duration::from_secs(60)).await.unwrap();
    let longs = manual_queue_with(&client, &name, LongCodec, EntryFormat::Current).await;
    match longs.peek().await {
        Err(Error::Decode { raw, codec, .. }) => {
            assert_eq!(&raw[..], b"abc");
            assert_eq!(codec, "long");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
    // The value is still pending for a reader with the right codec.
    assert_eq!(strings.read_all().await.unwrap(), ["abc"]);
}
