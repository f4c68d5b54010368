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

/// The counters leave the head entry (which may hold a value of many MiB) out of their script,
/// where copying it holds Redis several times longer than a `ZRANGE` of its own: no command a
/// script runs reads the timeout zset's members, as `MONITOR` shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_read_the_head_entry_outside_their_script() {
    use std::io::BufRead;
    let redis = TestRedis::start_with(&[]);
    let client = connect(&redis.url()).await;
    let name = unique_name("head");
    let queue = manual_queue(&client, &name).await;
    let timeout = queue.keys().timeout().to_owned();
    cmd(
        &client,
        "ZADD",
        vec![arg(&timeout), 1_764_221_000_123_i64.into(), arg("entry")],
    )
    .await;
    let mut monitor = std::process::Command::new("redis-cli")
        .args(["-u", &redis.url(), "MONITOR"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(monitor.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "OK");
    let stats = queue.inspect().stats().await.unwrap();
    let marker = unique_name("done");
    redis.cli(&["ECHO", &marker]);
    let seen: Vec<String> = lines
        .map(Result::unwrap)
        .take_while(|line| !line.contains(&marker))
        .collect();
    monitor.kill().unwrap();
    monitor.wait().unwrap();
    assert_eq!(stats.next_due_ms, Some(1_764_221_000_123));
    let in_script: Vec<&String> = seen
        .iter()
        .filter(|l| l.contains(" lua] ") && l.to_lowercase().contains("\"zrange\""))
        .collect();
    assert!(in_script.is_empty(), "{in_script:?} in {seen:?}");
    assert!(seen.iter().any(|l| l.contains("\"ZRANGE\"")), "{seen:?}");
}
