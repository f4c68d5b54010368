//! Every DelayedQueue operation and what it leaves in the queue's keys.

use crate::common::queue::*;
use crate::common::{unique_name, TestRedis};
use std::time::Duration;

fn values(entries: &[bytes::Bytes]) -> Vec<String> {
    entries
        .iter()
        .map(|e| String::from_utf8(split_current(e).1.to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_and_their_effect_on_the_keys() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("ops");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    let minute = Duration::from_secs(60);
    let items: Vec<(String, Duration)> = ["a", "b", "c", "a", "d", "e"]
        .iter()
        .enumerate()
        .map(|(i, v)| (s(v), minute + Duration::from_millis(i as u64)))
        .collect();
    queue.offer_all(&items).await.unwrap();

    assert_eq!(queue.size().await.unwrap(), 6);
    assert!(!queue.is_empty().await.unwrap());
    assert_eq!(queue.peek().await.unwrap(), Some(s("a")));
    assert!(queue.contains(&s("d")).await.unwrap());
    assert!(!queue.contains(&s("z")).await.unwrap());
    assert!(queue.contains_all(&[s("a"), s("e"), s("a")]).await.unwrap());
    assert!(!queue.contains_all(&[s("a"), s("z")]).await.unwrap());
    assert!(queue.contains_all(&[]).await.unwrap());

    // remove: the first equal entry only, from both keys.
    assert!(queue.remove(&s("a")).await.unwrap());
    assert_eq!(
        values(&list(&client, keys.order()).await),
        ["b", "c", "a", "d", "e"]
    );
    assert_eq!(int(&client, "ZCARD", keys.timeout()).await, 5);
    // remove_all: every equal entry.
    assert!(queue.remove_all(&[s("a"), s("c")]).await.unwrap());
    assert!(!queue.remove_all(&[s("zz")]).await.unwrap());
    assert_eq!(values(&list(&client, keys.order()).await), ["b", "d", "e"]);
    // retain_all: unlike Java, the zset loses the removed entries too.
    assert!(queue.retain_all(&[s("b"), s("e")]).await.unwrap());
    assert_eq!(queue.read_all().await.unwrap(), ["b", "e"]);
    let zset_values: Vec<String> = zset(&client, keys.timeout())
        .await
        .iter()
        .map(|(e, _)| String::from_utf8(split_current(e).1.to_vec()).unwrap())
        .collect();
    assert_eq!(zset_values, ["b", "e"]);

    // pending: offer order with due times; stats: one snapshot.
    let pending = queue.inspect().pending(0).await.unwrap();
    assert_eq!(pending.len(), 2);
    assert!(pending[0].due_ms.unwrap() < pending[1].due_ms.unwrap());
    let stats = queue.inspect().stats().await.unwrap();
    assert_eq!((stats.pending, stats.scheduled, stats.ready), (2, 2, 0));
    assert_eq!(stats.next_due_ms, pending[0].due_ms);

    // expire / clear_expire act on the zset and the order list.
    assert!(queue.expire(Duration::from_secs(100)).await.unwrap());
    for key in [keys.timeout(), keys.order()] {
        let ttl = int(&client, "PTTL", key).await;
        assert!((90_000..=100_000).contains(&ttl), "{key}: {ttl}");
    }
    assert!(queue.clear_expire().await.unwrap());
    assert_eq!(int(&client, "PTTL", keys.order()).await, -1);
    assert!(queue.expire(Duration::ZERO).await.is_err());
    assert!(queue.inspect().size_in_memory().await.unwrap() > 0);

    // poll_last_and_offer_first_to: the last entry's value onto another list's head.
    // Same hash tag as the target list, as a cluster would need.
    let dest = format!("{{{}}}:dest", keys.target());
    let _: i64 = fred::interfaces::ListInterface::rpush(&client, dest.as_str(), "old")
        .await
        .unwrap();
    assert_eq!(
        queue.poll_last_and_offer_first_to(&dest).await.unwrap(),
        Some(s("e"))
    );
    assert_eq!(list_str(&client, &dest).await, ["e", "old"]);
    assert_eq!(int(&client, "ZCARD", keys.timeout()).await, 1);

    // poll / poll_many take in offer order whatever the due time, from both keys.
    queue
        .offer_all(&[(s("f"), minute), (s("g"), minute)])
        .await
        .unwrap();
    assert_eq!(queue.poll().await.unwrap(), Some(s("b")));
    assert_eq!(queue.poll_many(5).await.unwrap(), ["f", "g"]);
    assert_eq!(queue.poll().await.unwrap(), None);
    assert_eq!(int(&client, "ZCARD", keys.timeout()).await, 0);

    // clear: the pending keys go, the target list stays.
    queue.offer(&s("h"), Duration::ZERO).await.unwrap();
    queue.admin().transfer_due(10).await.unwrap();
    queue.offer(&s("i"), minute).await.unwrap();
    assert!(queue.clear().await.unwrap());
    assert!(!queue.clear().await.unwrap());
    assert_eq!(int(&client, "EXISTS", keys.order()).await, 0);
    assert_eq!(int(&client, "EXISTS", keys.timeout()).await, 0);
    assert_eq!(list_str(&client, keys.target()).await, ["h"]);
}

/// `size_in_memory` is what Redisson's `sizeInMemory()` reports: `MEMORY USAGE` with Redis's
/// default sampling, which on a big queue is an estimate, not the exact `SAMPLES 0` figure.
#[tokio::test(flavor = "multi_thread")]
async fn size_in_memory_is_redissons_sampled_figure() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("memory")).await;
    let values: Vec<(String, std::time::Duration)> = (0..3_000)
        .map(|i| {
            (
                "x".repeat(i % 97 * 7),
                std::time::Duration::from_secs(60 + i as u64),
            )
        })
        .collect();
    queue.offer_all(&values).await.unwrap();
    let keys = queue.keys();
    let usage = |key: &str, exact: bool| -> u64 {
        let mut args = vec!["MEMORY", "USAGE", key];
        if exact {
            args.extend(["SAMPLES", "0"]);
        }
        redis.cli(&args).parse().unwrap()
    };
    let sampled = usage(keys.timeout(), false) + usage(keys.order(), false);
    let exact = usage(keys.timeout(), true) + usage(keys.order(), true);
    assert_ne!(
        sampled, exact,
        "the queue is too small to tell the two apart"
    );
    assert_eq!(queue.inspect().size_in_memory().await.unwrap(), sampled);
}

/// The counters read the head's due time without copying the head entry (which may hold a value
/// of many MiB; a `ZRANGE` of a 16 MiB one held Redis 6-13 ms): reading them with a 4 MiB head
/// makes Redis send a few hundred bytes, counted by `INFO stats`. And the due time they read is
/// the lowest score, whatever it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_read_the_heads_due_time_without_copying_the_head() {
    let redis = TestRedis::start_with(&[]);
    let client = connect(&redis.url()).await;
    let name = unique_name("head");
    let queue = manual_queue(&client, &name).await;
    let timeout = queue.keys().timeout().to_owned();
    let big = "h".repeat(4 << 20);
    cmd(
        &client,
        "ZADD",
        vec![arg(&timeout), 1_764_221_000_123_i64.into(), arg(&big)],
    )
    .await;
    let sent = || {
        redis
            .cli(&["INFO", "stats"])
            .lines()
            .find_map(|l| l.strip_prefix("total_net_output_bytes:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap()
    };
    let before = sent();
    let stats = queue.inspect().stats().await.unwrap();
    let bytes = sent() - before;
    assert_eq!(stats.next_due_ms, Some(1_764_221_000_123));
    assert!(bytes < 64 << 10, "reading the counters sent {bytes} bytes");

    // The lowest score, whole or not, negative, infinite, or past what a double holds exactly
    // (stored as the nearest double: ...993,024).
    let cases: [(&[&str], Option<i64>); 8] = [
        (&[], None),
        (&["-5", "7"], Some(-5)),
        (&["0"], Some(0)),
        (&["2.5", "7"], Some(2)),
        (&["-inf", "3"], Some(i64::MIN)),
        (&["+inf"], Some(i64::MAX)),
        (
            &["9007199254740993000", "+inf"],
            Some(9_007_199_254_740_993_024),
        ),
        (
            &["-9007199254740993000", "1"],
            Some(-9_007_199_254_740_993_024),
        ),
    ];
    for (scores, expected) in cases {
        cmd(&client, "DEL", vec![arg(&timeout)]).await;
        for (i, score) in scores.iter().enumerate() {
            let member = format!("m{i}");
            cmd(
                &client,
                "ZADD",
                vec![arg(&timeout), arg(score), arg(&member)],
            )
            .await;
        }
        let stats = queue.inspect().stats().await.unwrap();
        assert_eq!(stats.next_due_ms, expected, "scores {scores:?}");
    }
}
