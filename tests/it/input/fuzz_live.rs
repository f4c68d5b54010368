//! Bad input injected into live queues on a real Redis: malformed entries, wrong-type keys, huge
//! values, overflowing delays and due times. Each must give a clear error or a quarantine: never
//! a panic, a stall, or a lost neighbour.

use crate::common::{unique_name, TestRedis, PATIENCE};
use bytes::Bytes;
use delayq::codec::{ByteArrayCodec, StringCodec};
use delayq::entry::{self, EntryFormat};
use delayq::time::now_ms;
use delayq::{DelayedQueue, Error, Scheduler, TransferConfig};
use fred::clients::Client;
use fred::interfaces::{
    ClientLike, HashesInterface, KeysInterface, ListInterface, PubsubInterface, SortedSetsInterface,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn seed() -> u64 {
    let seed = std::env::var("DELAYQ_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| now_ms() as u64);
    eprintln!("DELAYQ_FUZZ_SEED={seed}");
    seed
}

/// Writes a raw member the way a foreign writer would: order list first, then the zset.
async fn inject(client: &Client, queue: &DelayedQueue<StringCodec>, raw: &[u8], score: &str) {
    let keys = queue.keys();
    let raw = Bytes::copy_from_slice(raw);
    let _: i64 = client.rpush(keys.order(), raw.clone()).await.unwrap();
    inject_zset_only(client, queue, &raw, score).await;
}

async fn inject_zset_only(
    client: &Client,
    queue: &DelayedQueue<StringCodec>,
    raw: &[u8],
    score: &str,
) {
    let keys = queue.keys();
    let args: Vec<fred::types::Value> = vec![
        keys.timeout().into(),
        score.into(),
        Bytes::copy_from_slice(raw).into(),
    ];
    let _: i64 = client
        .custom(fred::cmd!("ZADD"), args)
        .await
        .unwrap_or_else(|e| panic!("ZADD {score}: {e}"));
}

/// Every raw value on the target list, oldest first.
async fn target_values(client: &Client, queue: &DelayedQueue<StringCodec>) -> Vec<Bytes> {
    client.lrange(queue.keys().target(), 0, -1).await.unwrap()
}

/// Random junk shaped like entries: random bytes, truncated or padded real entries, entries
/// whose length field lies, ids of the wrong length.
fn junk(rng: &mut StdRng, i: usize) -> Vec<u8> {
    let value = format!("junk-{i}");
    let good = entry::pack(&rng.random::<[u8; 8]>(), value.as_bytes());
    match rng.random_range(0..6) {
        0 => (0..rng.random_range(0..64)).map(|_| rng.random()).collect(),
        1 => good[..rng.random_range(0..good.len())].to_vec(),
        2 => {
            let mut g = good;
            g.extend((0..rng.random_range(1..8)).map(|_| rng.random::<u8>()));
            g
        }
        3 => {
            let mut g = good;
            let lie: u64 = match rng.random_range(0..3) {
                0 => u64::MAX,
                1 => rng.random(),
                _ => value.len() as u64 + rng.random_range(1..100),
            };
            g[9..17].copy_from_slice(&lie.to_le_bytes());
            g
        }
        4 => {
            let mut g = good;
            g[0] = rng.random_range(9..=255);
            g
        }
        _ => {
            let mut g = good;
            let at = rng.random_range(0..17);
            g[at] ^= rng.random_range(1..=255u8);
            g
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_entries_are_quarantined_and_every_neighbour_arrives_once() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("fuzz-junk");
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), StringCodec)
        .build()
        .await
        .unwrap();
    let mut rng = StdRng::seed_from_u64(seed());

    // 300 good values and 150 junk members, interleaved, due within the next 600 ms; some junk
    // only in the zset (a writer that died between its two writes).
    let mut good = Vec::new();
    let mut expected_values: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut expected_quarantine = 0usize;
    let mut injected = std::collections::HashSet::new();
    for i in 0..450 {
        if i % 3 == 2 {
            // Distinct members only: the zset would merge equal ones, the order list not.
            let mut raw = junk(&mut rng, i);
            while !injected.insert(raw.clone()) {
                raw = junk(&mut rng, i);
            }
            let score = (now_ms() + rng.random_range(-100..600)).to_string();
            if rng.random_range(0..4) == 0 {
                inject_zset_only(&client, &queue, &raw, &score).await;
            } else {
                inject(&client, &queue, &raw, &score).await;
            }
            // Junk that happens to be a well-formed entry is an ordinary value.
            match entry::unpack(&raw, EntryFormat::Current) {
                Ok(e) => *expected_values.entry(e.value.to_vec()).or_default() += 1,
                Err(_) => expected_quarantine += 1,
            }
        } else {
            let v = format!("good-{i}");
            queue
                .offer(&v, Duration::from_millis(rng.random_range(0..600)))
                .await
                .unwrap();
            *expected_values.entry(v.clone().into_bytes()).or_default() += 1;
            good.push(v);
        }
    }

    let deadline = Instant::now() + PATIENCE;
    let expected_total: usize = expected_values.values().sum();
    loop {
        let got = target_values(&client, &queue).await;
        let quarantined = queue.inspect().quarantined(0).await.unwrap();
        if got.len() >= expected_total && quarantined.len() >= expected_quarantine {
            let mut count: HashMap<Vec<u8>, usize> = HashMap::new();
            for v in got {
                *count.entry(v.to_vec()).or_default() += 1;
            }
            assert_eq!(count, expected_values, "every value exactly once");
            assert_eq!(quarantined.len(), expected_quarantine);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "stalled: {} of {expected_total} values, {} of {expected_quarantine} quarantined; {:?}",
            got.len(),
            quarantined.len(),
            queue.inspect().stats().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stats = queue.inspect().stats().await.unwrap();
    assert_eq!(stats.pending, 0, "{stats:?}");
    let order: i64 = client.llen(queue.keys().order()).await.unwrap();
    assert_eq!(order, 0, "nothing left in the order list");

    // A consumer takes the good values; the undecodable ones are clear errors, not panics,
    // and do not block the values behind them.
    let consumer = queue.consumer().await.unwrap();
    let mut taken = 0;
    let mut decode_errors = 0;
    for _ in 0..expected_total {
        match consumer.take().await {
            Ok(v) => {
                assert!(v.starts_with("good-") || v.starts_with("junk-"), "{v:?}");
                taken += 1;
            }
            Err(e) => {
                assert!(e.is_codec_error(), "{e}");
                assert!(!e.to_string().is_empty());
                decode_errors += 1;
            }
        }
    }
    assert_eq!(taken + decode_errors, expected_total);
    assert!(taken >= good.len());
    queue.destroy().await.unwrap();
}

/// Wrong-type keys: offers and takes fail with [`Error::WrongType`], the scheduler keeps
/// retrying without dying, and once the key is fixed every pending value arrives.
#[tokio::test(flavor = "multi_thread")]
async fn wrong_type_keys_are_clear_errors_and_the_queue_recovers() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("fuzz-type");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    let keys = queue.keys().clone();

    // The timeout zset is a hash: offers fail before writing anything.
    let _: i64 = client.hset(keys.timeout(), ("f", "v")).await.unwrap();
    let err = queue.offer("a", Duration::ZERO).await.unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err:?}");
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
    let order: i64 = client.llen(keys.order()).await.unwrap();
    assert_eq!(order, 0, "a failed offer wrote to the order list");
    let _: i64 = client.del(keys.timeout()).await.unwrap();

    // The target list is a string while values fall due: the scheduler's transfers fail and
    // are retried; nothing panics, nothing is lost.
    let _: () = client
        .set(keys.target(), "not a list", None, None, false)
        .await
        .unwrap();
    let values: Vec<String> = (0..50).map(|i| format!("v{i}")).collect();
    let offers: Vec<(String, Duration)> = values
        .iter()
        .map(|v| (v.clone(), Duration::from_millis(10)))
        .collect();
    queue.offer_all(&offers).await.unwrap();
    let handle = Scheduler::spawn(
        client.clone(),
        name.as_str(),
        TransferConfig::default().with_max_backoff(Duration::from_millis(300)),
    )
    .await
    .unwrap();
    assert!(
        crate::common::queue::eventually(PATIENCE, || async { handle.stats().errors > 0 }).await,
        "{:?}",
        handle.stats()
    );
    assert!(!handle.is_finished(), "the scheduler died");
    let err = queue.admin().transfer_due(100).await.unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err:?}");
    let consumer = queue.consumer().await.unwrap();
    let err = consumer.take().await.unwrap_err();
    assert!(matches!(err, Error::WrongType { .. }), "{err:?}");
    // Still in the timeout zset (the order list is another story: see
    // `a_failed_transfer_leaves_no_partial_writes`).
    let pending: i64 = client.zcard(keys.timeout()).await.unwrap();
    assert_eq!(pending, 50, "pending values kept");

    let _: i64 = client.del(keys.target()).await.unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while got.len() < values.len() {
        assert!(Instant::now() < deadline, "stalled at {got:?}");
        if let Some(v) = consumer.poll(Duration::from_millis(200)).await.unwrap() {
            got.push(v);
        }
    }
    got.sort();
    let mut want = values.clone();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(queue.size().await.unwrap(), 0);
    handle.shutdown().await;
}

/// A transfer that fails on a wrong-type target list must not have changed anything: Redis
/// does not roll a script back, so a write made before a failing RPUSH would stay (every retry
/// quarantining the same malformed entry again, the batch leaving the order list while staying
/// in the zset). `lua/transfer.lua` checks every key's type before its first write.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_transfer_leaves_no_partial_writes() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("fuzz-partial");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    queue.offer("a", Duration::ZERO).await.unwrap();
    inject(&client, &queue, b"\x08short", &(now_ms() - 5).to_string()).await;
    let _: () = client
        .set(keys.target(), "not a list", None, None, false)
        .await
        .unwrap();
    for _ in 0..3 {
        assert!(queue.admin().transfer_due(100).await.is_err());
    }
    let quarantined: i64 = client.llen(keys.quarantine()).await.unwrap();
    let order: i64 = client.llen(keys.order()).await.unwrap();
    assert_eq!(
        (quarantined, order),
        (0, 2),
        "failed transfers left writes behind"
    );
}

/// A 16 MiB value travels like any other, between its neighbours.
#[tokio::test(flavor = "multi_thread")]
async fn a_huge_value_and_its_neighbours_arrive() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("fuzz-huge");
    let queue = DelayedQueue::builder(client.clone(), name.as_str(), ByteArrayCodec)
        .build()
        .await
        .unwrap();
    let huge: Vec<u8> = (0..16 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    // Due in an hour, so still pending when looked up however long 16 MiB take to travel;
    // then brought forward one after the other, keeping their order.
    let hour = Duration::from_secs(3_600);
    queue
        .offer_all(&[
            (b"before".to_vec(), hour),
            (huge.clone(), hour + Duration::from_millis(50)),
            (b"after".to_vec(), hour + Duration::from_millis(100)),
        ])
        .await
        .unwrap();
    assert!(queue.contains(&huge).await.unwrap());
    for value in [&b"before"[..], &huge, b"after"] {
        assert!(queue.reschedule(value, Duration::ZERO).await.unwrap());
    }
    let consumer = queue.consumer().await.unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while got.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "stalled after {} values",
            got.len()
        );
        if let Some(v) = consumer.poll(Duration::from_millis(500)).await.unwrap() {
            got.push(v);
        }
    }
    assert_eq!(got[0], b"before");
    assert!(got[1] == huge, "the huge value came back changed");
    assert_eq!(got[2], b"after");
    queue.destroy().await.unwrap();
}

/// Delays past what a score can hold are refused before anything is written; due times that
/// overflow (written by a foreign peer: ±inf, 1e300, i64::MAX) neither panic nor stall the
/// scheduler, and the neighbours that are due arrive.
#[tokio::test(flavor = "multi_thread")]
async fn overflowing_delays_and_due_times() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = unique_name("fuzz-overflow");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    for delay in [
        Duration::MAX,
        Duration::from_secs(u64::MAX / 1000),
        Duration::from_millis(1 << 53),
        Duration::from_millis(i64::MAX as u64),
    ] {
        let err = queue.offer("x", delay).await.unwrap_err();
        assert!(matches!(err, Error::InvalidDelay(_)), "{delay:?}: {err:?}");
        assert!(!err.to_string().is_empty());
        let err = queue
            .offer_all(&[("y".into(), Duration::ZERO), ("x".into(), delay)])
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidDelay(_)), "{delay:?}: {err:?}");
    }
    assert_eq!(
        queue.size().await.unwrap(),
        0,
        "a refused offer wrote something"
    );

    // Foreign due times, each in a well-formed entry. The far ones stay pending; the rest are
    // due now.
    let far = ["+inf", "1e300", "9223372036854775807", "9.3e18"];
    let past = ["-inf", "-1e300", "-9223372036854775808", "0"];
    for (i, score) in far.iter().chain(&past).enumerate() {
        let raw = entry::pack(&[i as u8; 8], format!("s{i}").as_bytes());
        inject(&client, &queue, &raw, score).await;
    }
    let handle = Scheduler::spawn(client.clone(), name.as_str(), TransferConfig::default())
        .await
        .unwrap();
    // The head is now +inf away; a neighbour offered later still arrives on time, and odd
    // channel messages (an overflowing number, a negative one, text) change nothing.
    for msg in ["99999999999999999999999", "-5", "not a number", "1e400"] {
        let _: i64 = client.publish(queue.keys().channel(), msg).await.unwrap();
    }
    queue
        .offer("neighbour", Duration::from_millis(200))
        .await
        .unwrap();
    let consumer = queue.consumer().await.unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while got.len() < past.len() + 1 {
        assert!(Instant::now() < deadline, "stalled at {got:?}");
        if let Some(v) = consumer.poll(Duration::from_millis(200)).await.unwrap() {
            got.push(v);
        }
    }
    got.sort();
    assert_eq!(got, ["neighbour", "s4", "s5", "s6", "s7"]);
    assert!(!handle.is_finished(), "the scheduler died");
    // The far entries are still there and readable, with their odd due times.
    assert_eq!(queue.size().await.unwrap(), far.len() as u64);
    let pending = queue.inspect().pending(10).await.unwrap();
    assert_eq!(pending.len(), far.len());
    let stats = queue.inspect().stats().await.unwrap();
    assert_eq!(stats.pending, far.len() as u64);
    // And the scheduler still works for the next value.
    queue
        .offer("later", Duration::from_millis(100))
        .await
        .unwrap();
    let v = consumer.poll(PATIENCE).await.unwrap();
    assert_eq!(v.as_deref(), Some("later"));
    assert!(!handle.is_finished());
    handle.shutdown().await;
}
