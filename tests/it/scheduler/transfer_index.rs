//! The indexed transfer leaves exactly the state Redisson's transfer would, also when a Java
//! peer changes the order list behind the index's back.

use crate::common;

use bytes::Bytes;
use delayq::entry::{pack, unpack, EntryFormat};
use fred::prelude::*;
use std::time::Duration;

async fn zset_in_score_order(client: &Client, key: &str) -> Vec<Bytes> {
    client
        .zrange(key, 0, -1, None, false, None, false)
        .await
        .unwrap()
}

fn value_of(entry: &[u8]) -> String {
    String::from_utf8(unpack(entry, EntryFormat::Current).unwrap().value.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_transfer_matches_redisson_end_state_with_java_interference() {
    let redis = common::TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = common::unique_name("index");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    let keys = queue.keys().clone();

    // 3,000 values with random delays: due entries sit all over the order list.
    let mut items = Vec::new();
    for i in 0..3_000u32 {
        let delay = (i.wrapping_mul(7919) % 400) as u64;
        items.push((format!("v{i:05}"), Duration::from_millis(delay)));
    }
    for chunk in items.chunks(500) {
        queue.offer_all(chunk).await.unwrap();
    }
    // Plus 50 that stay pending, interleaved in offer order.
    let mut future = Vec::new();
    for i in 0..50u32 {
        let value = format!("later{i:03}");
        queue.offer(&value, Duration::from_secs(600)).await.unwrap();
        future.push(value);
    }
    tokio::time::sleep(Duration::from_millis(450)).await;

    // Redisson moves due entries lowest score first: that is the zset's order.
    let mut expected: Vec<String> = zset_in_score_order(&client, keys.timeout())
        .await
        .iter()
        .map(|e| value_of(e))
        .filter(|v| v.starts_with('v'))
        .collect();
    assert_eq!(expected.len(), 3_000);

    let mut found_by_index = 0;
    let mut moved = 0;
    for round in 0.. {
        match round {
            // Java poll(): LPOP the order list head and ZREM it.
            3 => {
                let head: Bytes = client.lpop(keys.order(), None).await.unwrap();
                let _: i64 = client.zrem(keys.timeout(), head.clone()).await.unwrap();
                let value = value_of(&head);
                expected.retain(|v| *v != value);
            }
            // Java remove(o): LREM an entry from the middle and ZREM it.
            6 => {
                let middle: Bytes = client.lindex(keys.order(), 700).await.unwrap();
                let _: i64 = client.lrem(keys.order(), 1, middle.clone()).await.unwrap();
                let _: i64 = client.zrem(keys.timeout(), middle.clone()).await.unwrap();
                let value = value_of(&middle);
                expected.retain(|v| *v != value);
            }
            // Java offer(): an entry due now, appended to the order list.
            9 => {
                let entry = pack(&rand::random::<[u8; 8]>(), b"java-late");
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as f64;
                let _: i64 = client
                    .zadd(
                        keys.timeout(),
                        None,
                        None,
                        false,
                        false,
                        (now, entry.clone()),
                    )
                    .await
                    .unwrap();
                let _: i64 = client.rpush(keys.order(), entry).await.unwrap();
                expected.push("java-late".into());
            }
            _ => {}
        }
        let outcome = queue.admin().transfer_due(97).await.unwrap();
        found_by_index += outcome.found_by_index + outcome.found_at_head;
        moved += outcome.moved;
        assert_eq!(outcome.quarantined, 0);
        if outcome.moved == 0 {
            break;
        }
    }

    let target: Vec<String> = client.lrange(keys.target(), 0, -1).await.unwrap();
    assert_eq!(target.len(), expected.len());
    assert_eq!(target, expected, "target list must be in due order");
    assert_eq!(moved as usize, expected.len());
    // Most entries were placed by the index (or found in the head window); the rest by LREM
    // after Java's changes.
    assert!(
        found_by_index > 2_000,
        "only {found_by_index} found by the index"
    );
    // What is left is exactly the future entries, in offer order, in both keys.
    assert_eq!(queue.read_all().await.unwrap(), future);
    let zcard: u64 = client.zcard(keys.timeout()).await.unwrap();
    assert_eq!(zcard, 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_follows_delayq_removals_and_polls() {
    let redis = common::TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = common::unique_name("index-ops");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    let items: Vec<(String, Duration)> = (0..1_500u32)
        .map(|i| {
            let delay = if i % 3 == 0 { 0 } else { 600_000 };
            (format!("x{i:05}"), Duration::from_millis(delay))
        })
        .collect();
    queue.offer_all(&items).await.unwrap();

    // Transfers build the index a slice per call (a few ms of each call's time, so a loaded
    // machine needs more calls) while moving up to 10 due ones each (the earliest by score,
    // anywhere in the list: those not in the head window are found through the index).
    let (mut moved_first, mut by_index) = (0, 0);
    let deadline = std::time::Instant::now() + crate::common::PATIENCE;
    loop {
        let step = queue.admin().transfer_due(10).await.unwrap();
        assert!((1..=10).contains(&step.moved), "moved {}", step.moved);
        // The rest of a call's batch is found by LREM scans while the index is incomplete.
        assert!(step.found_at_head + step.found_by_index <= step.moved);
        moved_first += step.moved;
        by_index += step.found_by_index;
        let indexed: u64 = client.zcard(keys.index()).await.unwrap();
        let length: u64 = client.llen(keys.order()).await.unwrap();
        if indexed >= length {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "index holds {indexed} of {length}"
        );
    }
    assert!(by_index > 0);

    // delayq's own operations keep the index in step, so later transfers still use it.
    let head_entry: Bytes = client.lindex(keys.order(), 0).await.unwrap();
    let head = value_of(&head_entry);
    let head_was_due = head[1..].parse::<u32>().unwrap() % 3 == 0;
    assert_eq!(queue.poll().await.unwrap(), Some(head.clone()));
    assert!(queue.remove("x00601").await.unwrap());
    assert!(queue.remove("x00602").await.unwrap());
    let (mut rest, mut rest_by_index) = (0, 0);
    while rest < 500 - moved_first - u64::from(head_was_due) {
        let step = queue.admin().transfer_due(1_000).await.unwrap();
        assert!(step.moved > 0, "a call moved nothing with {rest} moved");
        assert_eq!(step.found_by_index + step.found_at_head, step.moved);
        rest += step.moved;
        rest_by_index += step.found_by_index;
    }
    assert_eq!(rest, 500 - moved_first - u64::from(head_was_due));
    assert!(rest_by_index > rest / 2);

    let mut target: Vec<String> = client.lrange(keys.target(), 0, -1).await.unwrap();
    let mut due: Vec<String> = (0..1_500u32)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("x{i:05}"))
        .filter(|v| *v != head)
        .collect();
    // Equal due times order by member bytes, and the ids are random: compare as sets.
    due.sort();
    target.sort();
    assert_eq!(target, due);
    let left = queue.read_all().await.unwrap();
    let expected_left: Vec<String> = (0..1_500u32)
        .filter(|i| i % 3 != 0 && *i != 601 && *i != 602)
        .map(|i| format!("x{i:05}"))
        .filter(|v| *v != head)
        .collect();
    assert_eq!(left, expected_left);

    // clear() drops the indexes with the queue.
    assert!(queue.contains("x00004").await.unwrap());
    assert!(queue.clear().await.unwrap());
    let exists: u64 = client
        .exists(vec![keys.index(), keys.values()])
        .await
        .unwrap();
    assert_eq!(exists, 0);
}

/// On a long order list with due entries all over it, one call's single pass over the list
/// removes its whole batch: the call grows its batch past the one asked for (up to the largest
/// allowed) to amortise the pass, and the values still leave in due order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_list_grows_the_batch_to_amortise_the_pass() {
    use delayq::TransferConfig;
    let redis = common::TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let name = common::unique_name("grow");
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    // 60,000 entries, all due, in random due order along the list.
    let fill = r#"
        local batch, scores = {}, {}
        for i = 1, 60000 do
            local v = string.format('g%05d', i)
            local e = struct.pack('Bc0Lc0', 8, struct.pack('>I8', i), #v, v)
            batch[#batch + 1] = e
            scores[#scores + 1] = 1000000 + ((i * 7919) % 60000)
            scores[#scores + 1] = e
            if #batch == 500 then
                redis.call('rpush', KEYS[2], unpack(batch))
                redis.call('zadd', KEYS[1], unpack(scores))
                batch, scores = {}, {}
            end
        end
        return 1
    "#;
    let _: i64 = client
        .eval(
            fill,
            vec![keys.timeout(), keys.order()],
            Vec::<String>::new(),
        )
        .await
        .unwrap();
    let base = TransferConfig::default()
        .with_batch_size(10)
        .with_index_threshold(1_000);
    let roomy = base
        .with_adaptive_batch(5_000, Duration::from_millis(5))
        .with_max_call_time(Duration::from_millis(200));
    // Until a call grows its batch (stopping there: on a fast server 20 calls of up to 5,000
    // each emptied the list and left the capped call below nothing to move). The position
    // index is built a few ms of each call's time, and a batch grows once it covers the list:
    // more calls on a loaded machine.
    let mut grown = 0;
    for _ in 0..1_000 {
        let outcome = queue.admin().transfer_due_with(&roomy).await.unwrap();
        assert!(outcome.moved <= 5_000);
        grown = grown.max(outcome.moved);
        if grown > 10 {
            break;
        }
    }
    assert!(grown > 10, "no call grew its batch of 10: at most {grown}");
    let pending: u64 = client.zcard(keys.timeout()).await.unwrap();
    assert!(pending > 20, "left for the capped call: {pending}");
    // The largest batch caps the growth.
    let capped = base.with_adaptive_batch(20, Duration::from_millis(5));
    let outcome = queue.admin().transfer_due_with(&capped).await.unwrap();
    assert!((1..=20).contains(&outcome.moved), "moved {}", outcome.moved);
    // Due order, and the keys in step.
    let target: Vec<String> = client.lrange(keys.target(), 0, -1).await.unwrap();
    let rank = |v: &String| (v[1..].parse::<u64>().unwrap() * 7919) % 60_000;
    assert!(
        target.windows(2).all(|w| rank(&w[0]) < rank(&w[1])),
        "due order"
    );
    let left: u64 = client.llen(keys.order()).await.unwrap();
    let card: u64 = client.zcard(keys.timeout()).await.unwrap();
    assert_eq!(left, 60_000 - target.len() as u64);
    assert_eq!(card, left);
}
