//! offer / offer_all against a real redis-server: what lands in each of the four keys, the exact
//! entry bytes (current `Bc0Lc0` and legacy `dLc0`), and the channel messages.

use crate::common::queue::*;
use crate::common::{unique_name, TestRedis};
use delayq::codec::{ByteArrayCodec, StringCodec};
use delayq::{EntryFormat, Error};
use fred::interfaces::ClientLike;
use std::time::Duration;

#[tokio::test]
async fn offer_writes_zset_and_order_list_with_current_packing() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("offer-current");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();

    let before = now_ms();
    queue
        .offer("abc", Duration::from_millis(5_000))
        .await
        .unwrap();
    let after = now_ms();

    // Target list untouched, quarantine untouched.
    assert_eq!(int(&client, "EXISTS", keys.target()).await, 0);
    assert_eq!(int(&client, "EXISTS", keys.quarantine()).await, 0);
    assert_eq!(key_type(&client, keys.timeout()).await, "zset");
    assert_eq!(key_type(&client, keys.order()).await, "list");

    let order = list(&client, keys.order()).await;
    let zset = zset(&client, keys.timeout()).await;
    assert_eq!(order.len(), 1);
    assert_eq!(zset.len(), 1);
    // The same member in both keys.
    assert_eq!(zset[0].0, order[0]);
    // Score = offer time + delay, from this host's clock.
    assert!(
        (before + 5_000..=after + 5_000).contains(&zset[0].1),
        "score {} not in [{}, {}]",
        zset[0].1,
        before + 5_000,
        after + 5_000
    );

    // 0x08, 8-byte id, u64 LE length 3, "abc": 20 bytes exactly.
    let entry = &order[0];
    assert_eq!(entry.len(), 20);
    assert_eq!(entry[0], 0x08);
    assert_eq!(&entry[9..17], &[3, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&entry[17..], b"abc");
    // delayq's own reader agrees.
    let parsed = delayq::entry::unpack(entry, EntryFormat::Current).unwrap();
    assert_eq!(parsed.value, b"abc");
    assert_eq!(parsed.format, EntryFormat::Current);
}

#[tokio::test]
async fn equal_values_get_distinct_random_ids() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("offer-ids");
    let queue = manual_queue(&client, &name).await;
    for _ in 0..5 {
        queue.offer("same", Duration::from_secs(60)).await.unwrap();
    }
    let order = list(&client, queue.keys().order()).await;
    assert_eq!(order.len(), 5);
    let mut ids: Vec<Vec<u8>> = order.iter().map(|e| split_current(e).0.to_vec()).collect();
    for e in &order {
        assert_eq!(split_current(e).1, b"same");
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "ids must differ");
    assert_eq!(zset(&client, queue.keys().timeout()).await.len(), 5);
}

#[tokio::test]
async fn long_and_binary_values_have_exact_length_fields() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("offer-binary");
    let queue = manual_queue_with(&client, &name, ByteArrayCodec, EntryFormat::Current).await;
    // 300 bytes including NUL and 0xff: length field 0x2c 0x01.
    let value: Vec<u8> = (0..300u32).map(|i| (i * 7 % 256) as u8).collect();
    queue.offer(&value, Duration::from_secs(60)).await.unwrap();
    queue
        .offer(&Vec::new(), Duration::from_secs(60))
        .await
        .unwrap();
    let order = list(&client, queue.keys().order()).await;
    assert_eq!(order[0].len(), 17 + 300);
    assert_eq!(&order[0][9..17], &[0x2c, 0x01, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&order[0][17..], &value[..]);
    // The empty value: just the header.
    assert_eq!(order[1].len(), 17);
    assert_eq!(&order[1][9..17], &[0; 8]);
}

#[tokio::test]
async fn legacy_format_writes_dlc0_entries() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("offer-legacy");
    let queue = manual_queue_with(&client, &name, StringCodec, EntryFormat::Legacy).await;
    assert_eq!(queue.options().format, EntryFormat::Legacy);
    queue.offer("hello", Duration::from_secs(60)).await.unwrap();
    let order = list(&client, queue.keys().order()).await;
    let entry = &order[0];
    // 8-byte double + u64 LE length + value, no leading length byte.
    assert_eq!(entry.len(), 8 + 8 + 5);
    assert_eq!(&entry[8..16], &[5, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&entry[16..], b"hello");
    // The random part is a double holding an integer (a random Java long), as Redisson wrote it.
    let random = f64::from_le_bytes(entry[..8].try_into().unwrap());
    assert!(random.is_finite());
    assert_eq!(random, random.trunc(), "random {random} is not integral");
    let parsed = delayq::entry::unpack(entry, EntryFormat::Legacy).unwrap();
    assert_eq!(parsed.format, EntryFormat::Legacy);
    assert_eq!(parsed.value, b"hello");
    assert_eq!(zset(&client, queue.keys().timeout()).await[0].0, *entry);
    // And it reads back through the queue.
    assert_eq!(queue.read_all().await.unwrap(), vec!["hello".to_string()]);
}

#[tokio::test]
async fn offer_all_writes_in_order_and_long_ones_in_bounded_calls() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("offer-all");
    let queue = manual_queue(&client, &name).await;
    let items: Vec<(String, Duration)> = vec![
        ("c".into(), Duration::from_millis(3_000)),
        ("a".into(), Duration::from_millis(1_000)),
        ("b".into(), Duration::from_millis(2_000)),
    ];
    let start = now_ms();
    queue.offer_all(&items).await.unwrap();
    // Order list: offer order. Zset: due order.
    let order: Vec<Vec<u8>> = list(&client, queue.keys().order())
        .await
        .iter()
        .map(|e| split_current(e).1.to_vec())
        .collect();
    assert_eq!(order, vec![b"c".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    let zset = zset(&client, queue.keys().timeout()).await;
    let due_order: Vec<&[u8]> = zset.iter().map(|(e, _)| split_current(e).1).collect();
    assert_eq!(due_order, vec![&b"a"[..], b"b", b"c"]);
    // One "now" for the whole call: scores are exactly 1000 ms apart.
    assert_eq!(zset[1].1 - zset[0].1, 1_000);
    assert_eq!(zset[2].1 - zset[1].1, 1_000);
    assert!(zset[0].1 >= start + 1_000);
    // An empty batch is a no-op.
    queue.offer_all(&[]).await.unwrap();
    assert_eq!(queue.size().await.unwrap(), 3);

    // A long one goes in calls of 1,000, by one "now": the due times keep the delays' order.
    redis.cli(&["CONFIG", "RESETSTAT"]);
    let many: Vec<(String, Duration)> = (0..2_500u64)
        .map(|i| {
            (
                format!("m{i:04}"),
                Duration::from_millis(10_000 + (i * 7) % 2_500),
            )
        })
        .collect();
    queue.offer_all(&many).await.unwrap();
    assert_eq!(queue.size().await.unwrap(), 2_503);
    let stats = redis.cli(&["INFO", "commandstats"]);
    let line = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_evalsha:"))
        .unwrap_or_default();
    assert!(line.starts_with("cmdstat_evalsha:calls=3,"), "{line}");
    let all = crate::common::queue::zset(&client, queue.keys().timeout()).await;
    let by_due: Vec<&[u8]> = all
        .iter()
        .skip(3)
        .map(|(e, _)| split_current(e).1)
        .collect();
    let mut expected: Vec<(u64, String)> = (0..2_500u64)
        .map(|i| ((i * 7) % 2_500, format!("m{i:04}")))
        .collect();
    expected.sort();
    let expected: Vec<&[u8]> = expected.iter().map(|(_, v)| v.as_bytes()).collect();
    assert_eq!(by_due, expected);
    assert!(
        all[3].1 >= all[2].1 + 7_000,
        "the long batch comes after the short one"
    );
    let spread = all.last().unwrap().1 - all[3].1;
    assert_eq!(spread, 2_499, "one now for every call");
}

#[tokio::test]
async fn channel_gets_the_due_time_only_when_the_head_changes() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("offer-channel");
    let queue = manual_queue(&client, &name).await;
    let mut spy = ChannelSpy::start(&client, queue.keys().channel()).await;

    // First entry: it is the head, so its due time is published.
    queue
        .offer("first", Duration::from_millis(10_000))
        .await
        .unwrap();
    let msgs = spy.settle(&client).await;
    let head_score = zset(&client, queue.keys().timeout()).await[0].1;
    assert_eq!(msgs, [head_score.to_string()], "decimal ASCII due time");
    assert!(msgs[0].bytes().all(|b| b.is_ascii_digit()));

    // A later entry does not become the head: no message.
    queue
        .offer("later", Duration::from_millis(20_000))
        .await
        .unwrap();
    assert_eq!(spy.settle(&client).await, Vec::<String>::new());

    // An earlier entry becomes the head: its due time is published.
    queue
        .offer("earlier", Duration::from_millis(5_000))
        .await
        .unwrap();
    let msgs = spy.settle(&client).await;
    let zset_now = zset(&client, queue.keys().timeout()).await;
    assert_eq!(split_current(&zset_now[0].0).1, b"earlier");
    assert_eq!(msgs, [zset_now[0].1.to_string()]);

    // offer_all with two new heads publishes once, the new head's time.
    queue
        .offer_all(&[
            ("x".to_string(), Duration::from_millis(4_000)),
            ("y".to_string(), Duration::from_millis(3_000)),
            ("z".to_string(), Duration::from_millis(30_000)),
        ])
        .await
        .unwrap();
    let msgs = spy.settle(&client).await;
    let zset_now = zset(&client, queue.keys().timeout()).await;
    assert_eq!(split_current(&zset_now[0].0).1, b"y");
    assert_eq!(msgs, vec![zset_now[0].1.to_string()]);

    // A batch whose entries are all later than the head: nothing.
    queue
        .offer_all(&[("late".to_string(), Duration::from_secs(50))])
        .await
        .unwrap();
    assert_eq!(spy.settle(&client).await, Vec::<String>::new());
    spy.stop().await;
}

#[tokio::test]
async fn overflowing_delay_is_refused_before_any_redis_call() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("offer-overflow");
    let queue = manual_queue(&client, &name).await;

    let err = queue.offer("x", Duration::MAX).await.unwrap_err();
    assert!(matches!(err, Error::InvalidDelay(_)), "{err:?}");
    // A batch with one bad delay writes nothing at all.
    let err = queue
        .offer_all(&[
            ("ok".to_string(), Duration::from_secs(1)),
            ("bad".to_string(), Duration::MAX),
        ])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidDelay(_)), "{err:?}");
    assert_eq!(int(&client, "EXISTS", queue.keys().order()).await, 0);
    assert_eq!(int(&client, "EXISTS", queue.keys().timeout()).await, 0);

    // Proof that no Redis call is made: the client is closed, yet the delay check answers.
    client.quit().await.unwrap();
    let err = queue
        .offer("x", Duration::from_secs(u64::MAX / 2))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidDelay(_)), "{err:?}");
}
